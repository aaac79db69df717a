"""How fast ``toolnexus serve`` starts and answers, against same-run baselines.

Run it from a checkout (the server runs from ``src/``):

    python benchmarks/mcp_server.py             # 15 spawns, 5 rounds of 1000 calls
    python benchmarks/mcp_server.py --quick     # 5 spawns, 5 rounds of 200 calls
    python benchmarks/mcp_server.py --baseline /tmp/old/src   # add an older checkout's server
    python benchmarks/mcp_server.py --pin 0     # every server pinned to CPU 0 (taskset)
    python benchmarks/mcp_server.py --pin 0 --pipelined-only --rounds 10 --calls 5000
    python benchmarks/mcp_server.py --pin 0 --start-up-only --spawns 40

Three servers offer the same ``add`` tool, ``bench://note`` resource and ``greet`` prompt
over stdio, each run by this interpreter:

- ``toolnexus``: ``python -m toolnexus serve benchmarks/mcp_bench_tools.py:toolkit``
  (the round-trip table adds it with ``--timeout 30000``: calls with a deadline);
- ``floor``: ``benchmarks/mcp_floor_server.py``, a stdlib JSON-RPC loop that answers inline
  on its reading thread — the least any stdio server can cost;
- ``sdk``: ``benchmarks/mcp_sdk_server.py``, the official MCP SDK's ``MCPServer`` (only when
  ``mcp`` is importable here, e.g. after ``pip install '.[interop]'``);
- ``baseline``: with ``--baseline SRC``, the toolnexus server run from another checkout's
  ``src`` folder, to compare a change with what it replaces under the same conditions (a
  checkout without resources or prompts reads "n/a" in their rows).

Three tables, every figure a median, every ratio between figures of this run (spawns and call
rounds are interleaved, so a busy machine slows every server alike):

1. start-up: from spawning the process to holding the answer to its first request
   (``initialize``, written at once), and to holding its first ``tools/call`` result;
2. sequential round trips (send, wait for the answer, repeat) per second of ``tools/call``,
   ``resources/read`` and ``prompts/get``, each on a legacy (``initialize``) connection,
   plus toolnexus on a modern (2026-07-28) one, every kind in every round; the resource
   and prompt rows add ``vs call``: times the same server's ``tools/call``. Then a task
   against a plain call: **a task's round trip** is the ``tools/call`` of ``add_task``
   (``task_support="required"``, the body of ``add``: the server answers with the task,
   already completed) followed by the ``tasks/get`` that fetches its result — the least a
   client pays to get a result through a task (two requests); the plain call is ``add``
   by the same client (2026-07-28, the tasks extension declared). The create alone (one
   request, the server making the task) is shown too: what a task adds per request. The
   1.5x target is read on the create: a completed task's result cannot ride in the answer
   that makes it (SEP-2663: a ``CreateTaskResult`` carries no ``result``), so getting it
   takes one more round trip whatever the server does. Tasks are a modern-era feature
   here (a legacy 2025-11-25 client is never made one: its ``tools/call`` with ``task``
   is answered in its request, and ``add_task`` is refused ``-32021``), so there is no
   legacy task row. With ``--baseline``, the older checkout's server gets the same task
   rows (each against its own plain call);
3. pipelined ``tools/call``: 64 requests kept in flight (a new one sent per answer read),
   calls per second against the floor's.

The issue's targets: start-up at most a quarter of the SDK's and at most 3x the floor's; a
call at least 5x faster than the SDK's and at most 2.5x the floor's, and the same bounds for
a resource read and a prompt; a task at most 1.5x a plain call; pinned to one core
(``--pin 0``), 64 in flight at least 0.5x the floor's throughput. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
TASKS_META = {
    **MODERN_META,
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
}


SERVE = [sys.executable, "-m", "toolnexus", "serve", "benchmarks/mcp_bench_tools.py:toolkit"]
DEADLINE = "toolnexus --timeout"


PIN: list[str] = []  # ["taskset", "-c", "0"] with --pin 0
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def commands(baseline: Path | None) -> dict[str, tuple[list[str], Path]]:
    """Each server's command line and the ``src`` folder it runs from."""
    src = ROOT / "src"
    found = {
        "toolnexus": (SERVE, src),
        "floor": ([sys.executable, str(HERE / "mcp_floor_server.py")], src),
    }
    if baseline is not None:
        found["baseline"] = (SERVE, baseline.resolve())
    if importlib.util.find_spec("mcp") is not None:
        found["sdk"] = ([sys.executable, str(HERE / "mcp_sdk_server.py")], src)
    return found


def child_env(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode is compiled once, up front
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH")) if p)
    return env


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


INITIALIZE = line(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
)
INITIALIZED = line({"jsonrpc": "2.0", "method": "notifications/initialized"})


KINDS = ("tools/call", "resources/read", "prompts/get")
"""The requests the round-trip tables time, each against the same request to the baselines."""
TASK = "task"  # tools/call of add_task (answered with a completed task), then its tasks/get
CREATE = "create"  # that tools/call alone: making the task
ERAS: dict[str, dict[str, Any] | None] = {
    "legacy": None,  # an initialize handshake, no _meta
    "2026-07-28": MODERN_META,
    "2026-07-28 + tasks": TASKS_META,  # a client that declared the tasks extension
}


def request_line(rid: int, kind: str = "tools/call", era: str = "legacy") -> bytes:
    """A request of ``kind`` (one of :data:`KINDS`, or :data:`TASK`'s first half)."""
    method = "tools/call" if kind in (TASK, CREATE) else kind
    params: dict[str, Any]
    if kind == "resources/read":
        params = {"uri": "bench://note"}
    elif kind == "prompts/get":
        params = {"name": "greet", "arguments": {"name": "bench"}}
    else:
        tool = "add" if kind == "tools/call" else "add_task"
        params = {"name": tool, "arguments": {"a": rid, "b": 1}}
    meta = ERAS[era]
    if meta is not None:
        params["_meta"] = meta
    return line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


TASK_GET = (
    b'{"jsonrpc":"2.0","id":"get","method":"tasks/get","params":{"taskId":"%s","_meta":'
    + json.dumps(TASKS_META, separators=(",", ":")).encode()
    + b"}}\n"
)


def task_get(created: dict[str, Any]) -> bytes:
    """The ``tasks/get`` that fetches the result of the task ``created`` answers with —
    a task made already completed (``add_task`` runs only as a task and finishes at once)."""
    result = created.get("result") or {}
    if result.get("status") != "completed":
        raise RuntimeError(f"not a completed task: {created}")
    return TASK_GET % result["taskId"].encode()


class Server:
    def __init__(self, command: list[str], src: Path) -> None:
        self.process = subprocess.Popen(
            [*PIN, *command],
            cwd=ROOT,
            env=child_env(src),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.fd = self.process.stdin.fileno()
        self.readline = self.process.stdout.readline

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def answer(self, data: bytes) -> dict[str, Any]:
        os.write(self.fd, data)
        while True:
            reply = self.readline()
            if not reply:
                raise RuntimeError("the server exited")
            message: dict[str, Any] = json.loads(reply)
            if "id" in message:
                return message

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far (user + system, every thread; Linux)."""
        try:
            with open(f"/proc/{self.process.pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / TICKS

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_up(command: list[str], src: Path) -> tuple[float, float]:
    """Milliseconds from spawn to the first answer, and to the first tool result."""
    began = time.perf_counter()
    server = Server(command, src)
    server.answer(INITIALIZE)
    first = time.perf_counter() - began
    server.send(INITIALIZED)
    reply = server.answer(request_line(1))
    tool = time.perf_counter() - began
    assert reply["result"]["content"][0]["text"] == "2", reply
    server.stop()
    return first * 1000, tool * 1000


def round_trips(
    server: Server, count: int, start: int, kind: str = "tools/call", era: str = "legacy"
) -> float:
    """Sequential round trips of ``kind`` per second: each request sent once the answer
    to the one before is read. A :data:`TASK` is two: the ``tools/call`` answered with the
    task, then the ``tasks/get`` that fetches its result."""
    requests = [request_line(start + i, kind, era) for i in range(count)]
    answer = server.answer
    began = time.perf_counter()
    if kind == TASK:
        for request in requests:
            answer(task_get(answer(request)))
    else:
        for request in requests:
            answer(request)
    return count / (time.perf_counter() - began)


def serves(server: Server, kind: str, era: str) -> bool:
    """Whether ``server`` answers ``kind`` (an older checkout has no resources, prompts or
    tasks): one request, its answer checked."""
    reply = server.answer(request_line(9_999_999, kind, era))
    result = reply.get("result")
    if kind in (TASK, CREATE):  # a task, made completed; its result, as tasks/get inlines it
        if not isinstance(result, dict) or result.get("status") != "completed":
            return False
        if kind == CREATE:
            return True
        result = server.answer(task_get(reply)).get("result", {}).get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return False
    if kind == "resources/read":
        return bool(result.get("contents"))
    if kind == "prompts/get":
        return bool(result.get("messages"))
    return bool(result.get("content"))


def pipelined(server: Server, count: int, depth: int, start: int) -> float:
    """tools/call per second with ``depth`` requests in flight."""
    requests = [request_line(start + i) for i in range(count)]
    send, readline = server.send, server.readline
    began = time.perf_counter()
    sent = 0
    for request in requests[:depth]:
        send(request)
        sent += 1
    answered = 0
    while answered < count:
        reply = readline()
        if not reply:
            raise RuntimeError("the server exited")
        if b'"id"' not in reply:
            continue
        answered += 1
        if sent < count:
            send(requests[sent])
            sent += 1
    return count / (time.perf_counter() - began)


def pipelined_table(
    servers: dict[str, tuple[list[str], Path]], rounds: int, calls: int, depth: int = 64
) -> None:
    names = [name for name in servers if name != "sdk"]
    running = {name: Server(*servers[name]) for name in names}
    rates: dict[str, list[float]] = {name: [] for name in names}
    cpu = dict.fromkeys(names, 0.0)
    for server in running.values():
        server.answer(INITIALIZE)
        server.send(INITIALIZED)
        pipelined(server, 200, depth, 30_000_000)  # warm-up
    next_id = 40_000_000
    for _ in range(rounds):
        for name in names:
            before = running[name].cpu_seconds()
            rates[name].append(pipelined(running[name], calls, depth, next_id))
            cpu[name] += running[name].cpu_seconds() - before
            next_id += calls
    for server in running.values():
        server.stop()
    floor = statistics.median(rates["floor"])
    cpu_us = {name: cpu[name] / (rounds * calls) * 1e6 for name in names}
    # Each round's rate against the floor's round of the same pass: a machine that speeds up
    # or slows down between rounds moves both alike.
    paired = {
        name: statistics.median(r / f for r, f in zip(rates[name], rates["floor"], strict=True))
        for name in names
    }
    print(f"\npipelined tools/call, {depth} in flight, median of {rounds} rounds of {calls}")
    print(
        f"{'server':<30}{'calls/s':>10}{'us/call':>10}{'x floor rate':>14}"
        f"{'per round':>11}{'server CPU us/call':>20}{'x floor CPU':>13}"
    )
    for name in names:
        rate = statistics.median(rates[name])
        print(
            f"{name:<30}{rate:>10.0f}{1e6 / rate:>10.1f}{rate / floor:>14.2f}"
            f"{paired[name]:>11.2f}{cpu_us[name]:>20.1f}"
            f"{ratio(cpu_us[name], cpu_us['floor']):>13}"
        )
    print(
        "target (pinned to one core): toolnexus >= 0.5x the floor's rate ('per round': "
        "the median of each round's rate over the floor's in the same pass). Server CPU per "
        "call (all rounds, /proc, 1/CLK_TCK resolution) is what a core busy with others "
        "does not distort: on a free core the rate is about its inverse"
    )


def ratio(value: float, base: float | None) -> str:
    return "-" if base is None or base == 0 else f"{value / base:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer spawns and calls")
    parser.add_argument("--calls-only", action="store_true", help="skip the start-up table")
    parser.add_argument(
        "--baseline", type=Path, metavar="SRC", help="also run toolnexus from this src folder"
    )
    parser.add_argument("--rounds", type=int, default=5, help="call rounds per server")
    parser.add_argument("--pin", metavar="CPU", help="run every server under taskset -c CPU")
    parser.add_argument("--calls", type=int, metavar="N", help="calls per round (default 1000)")
    parser.add_argument(
        "--pipelined-only", action="store_true", help="only the pipelined table (64 in flight)"
    )
    parser.add_argument("--start-up-only", action="store_true", help="only the start-up table")
    parser.add_argument("--spawns", type=int, metavar="N", help="spawns per server (default 15)")
    options = parser.parse_args()
    if options.pin is not None:
        PIN[:] = ["taskset", "-c", options.pin]
    spawns = options.spawns or (5 if options.quick else 15)
    calls = options.calls or (200 if options.quick else 1000)
    servers = commands(options.baseline)
    # No spawn should pay for compiling: write the bytecode of everything imported by path.
    for folder in sorted({src for _, src in servers.values()} | {HERE}):
        compileall.compile_dir(str(folder), quiet=1)
    pinned = f"; pinned: {' '.join(PIN)}" if PIN else "; not pinned"
    print(f"python {sys.version.split()[0]}; servers: {', '.join(servers)}{pinned}")
    if "sdk" not in servers:
        print("(the MCP SDK is not importable here: no sdk row; pip install '.[interop]')")

    if not options.calls_only and not options.pipelined_only:
        start_up_table(servers, spawns)
    if options.start_up_only:
        return
    if not options.pipelined_only:
        round_trip_table(servers, options.rounds, calls)
    pipelined_table(servers, options.rounds, calls)


def start_up_table(servers: dict[str, tuple[list[str], Path]], spawns: int) -> None:
    first: dict[str, list[float]] = {name: [] for name in servers}
    tool: dict[str, list[float]] = {name: [] for name in servers}
    for command, src in servers.values():  # warm the OS caches and write bytecode
        start_up(command, src)
    for _ in range(spawns):
        for name, (command, src) in servers.items():
            answered, called = start_up(command, src)
            first[name].append(answered)
            tool[name].append(called)
    first_med = {name: statistics.median(v) for name, v in first.items()}
    tool_med = {name: statistics.median(v) for name, v in tool.items()}
    floor, sdk = first_med["floor"], first_med.get("sdk")
    print(f"\nstart-up, median of {spawns} spawns (ms)")
    print(
        f"{'server':<11}{'first answer':>14}{'first tool result':>19}{'vs floor':>10}{'vs sdk':>9}"
    )
    for name in servers:
        print(
            f"{name:<11}{first_med[name]:>14.1f}{tool_med[name]:>19.1f}"
            f"{ratio(first_med[name], floor):>10}{ratio(first_med[name], sdk):>9}"
        )
    print("targets: toolnexus first answer <= 3x floor and <= 0.25x sdk")


def answers_a_task(server: tuple[list[str], Path]) -> bool:
    """Whether a server of this command answers a task within 10 s (on a server of its
    own: one that hangs is killed; the round trips then leave the task rows out)."""
    trial = Server(*server)
    answered: list[bool] = []

    def attempt() -> None:
        try:
            trial.answer(INITIALIZE)
            trial.send(INITIALIZED)
            answered.append(serves(trial, TASK, "2026-07-28 + tasks"))
        except (RuntimeError, OSError, ValueError):
            pass  # killed while it waited

    waiter = threading.Thread(target=attempt, daemon=True)
    waiter.start()
    waiter.join(10)
    if waiter.is_alive():
        trial.process.kill()
        waiter.join()
        print("(a server did not answer a task within 10 s over stdio: no task rows for it)")
    trial.stop()
    return answered == [True]


def round_trip_table(servers: dict[str, tuple[list[str], Path]], rounds: int, calls: int) -> None:
    running = {name: Server(command, src) for name, (command, src) in servers.items()}
    running[DEADLINE] = Server([*SERVE, "--timeout", "30000"], ROOT / "src")
    # (server, era, kind): every server on a legacy connection, toolnexus on a modern one
    # too; each kind of request; a task against a plain call by the same (tasks) client.
    variants = [
        (name, era, kind)
        for kind in KINDS
        for name, era in [(name, "legacy") for name in running] + [("toolnexus", "2026-07-28")]
        if kind == "tools/call" or name != DEADLINE
    ]
    takers = [name for name in ("toolnexus", "baseline") if name in servers]  # tasks' servers
    variants += [
        (name, "2026-07-28 + tasks", kind)
        for name in takers
        for kind in ("tools/call", CREATE, TASK)
    ]
    for server in running.values():
        server.answer(INITIALIZE)
        server.send(INITIALIZED)
    hangs = {name for name in takers if not answers_a_task(servers[name])}
    missing = {
        v
        for v in variants
        if (v[0] in hangs and v[2] in (TASK, CREATE)) or not serves(running[v[0]], v[2], v[1])
    }
    measured = [v for v in variants if v not in missing]
    rates: dict[tuple[str, str, str], list[float]] = {v: [] for v in measured}
    for name, era, kind in measured:
        round_trips(running[name], 50, 10_000_000, kind, era)  # warm-up
    next_id = 1
    for _ in range(rounds):
        for name, era, kind in measured:
            rates[(name, era, kind)].append(round_trips(running[name], calls, next_id, kind, era))
            next_id += calls
    for server in running.values():
        server.stop()
    per_call = {v: 1e6 / statistics.median(r) for v, r in rates.items()}
    for kind in KINDS:
        floor_us = per_call.get(("floor", "legacy", kind))
        sdk_us = per_call.get(("sdk", "legacy", kind))
        print(f"\nsequential {kind}, median of {rounds} rounds of {calls} requests")
        print(
            f"{'server':<30}{'calls/s':>10}{'us/call':>10}{'vs floor':>10}{'sdk/this':>10}"
            + ("" if kind == "tools/call" else f"{'vs call':>10}")
        )
        for variant in variants:
            name, era, of = variant
            if of != kind or era.endswith("tasks"):
                continue
            label = f"{name} ({era})"
            if variant in missing:
                print(f"{label:<30}{'n/a':>10}   (not served by this server)")
                continue
            value = per_call[variant]
            speed = "-" if sdk_us is None else f"{sdk_us / value:.1f}x"
            call = per_call.get((name, era, "tools/call"))
            print(
                f"{label:<30}{1e6 / value:>10.0f}{value:>10.1f}{ratio(value, floor_us):>10}"
                f"{speed:>10}" + ("" if kind == "tools/call" else f"{ratio(value, call):>10}")
            )
        print("targets: toolnexus per call <= 2.5x floor, and sdk/this >= 5x")
    print(
        f"\na task against a plain call, median of {rounds} rounds of {calls}: a task is "
        "tools/call of add_task (answered with the task, completed) + tasks/get (its result)"
    )
    for name in takers:
        print(f"{name + ' (2026-07-28)':<40}{'us':>10}{'vs plain call':>15}")
        plain = per_call.get((name, "2026-07-28 + tasks", "tools/call"))
        rows = [
            ("plain tools/call, tasks extension", (name, "2026-07-28 + tasks", "tools/call")),
            ("task: create alone", (name, "2026-07-28 + tasks", CREATE)),
            ("task: create + tasks/get", (name, "2026-07-28 + tasks", TASK)),
        ]
        if name == "toolnexus":
            rows.insert(
                0, ("plain tools/call, no tasks extension", (name, "2026-07-28", "tools/call"))
            )
        for label, variant in rows:
            if variant not in per_call:
                print(f"{label:<40}{'n/a':>10}")
                continue
            print(f"{label:<40}{per_call[variant]:>10.1f}{ratio(per_call[variant], plain):>15}")
    print(
        "target: a task <= 1.5x a plain call — read on the create (the request that makes "
        "the task);\nits result takes one more round trip (tasks/get), whatever the server does"
    )


if __name__ == "__main__":
    main()
