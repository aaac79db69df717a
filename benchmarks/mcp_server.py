"""How fast ``toolnexus serve`` starts and answers, against same-run baselines.

Run it from a checkout (the server runs from ``src/``):

    python benchmarks/mcp_server.py             # 15 spawns, 5 rounds of 1000 calls
    python benchmarks/mcp_server.py --quick     # 5 spawns, 5 rounds of 200 calls
    python benchmarks/mcp_server.py --baseline /tmp/old/src   # add an older checkout's server
    python benchmarks/mcp_server.py --pin 0     # every server pinned to CPU 0 (taskset)
    python benchmarks/mcp_server.py --pin 0 --pipelined-only --rounds 10 --calls 5000

Three servers offer the same ``add`` tool over stdio, each run by this interpreter:

- ``toolnexus``: ``python -m toolnexus serve benchmarks/mcp_bench_tools.py:toolkit``
  (the round-trip table adds it with ``--timeout 30000``: calls with a deadline);
- ``floor``: ``benchmarks/mcp_floor_server.py``, a stdlib JSON-RPC loop that answers inline
  on its reading thread — the least any stdio server can cost;
- ``sdk``: ``benchmarks/mcp_sdk_server.py``, the official MCP SDK's ``MCPServer`` (only when
  ``mcp`` is importable here, e.g. after ``pip install '.[interop]'``);
- ``baseline``: with ``--baseline SRC``, the toolnexus server run from another checkout's
  ``src`` folder, to compare a change with what it replaces under the same conditions.

Three tables, every figure a median, every ratio between figures of this run (spawns and call
rounds are interleaved, so a busy machine slows every server alike):

1. start-up: from spawning the process to holding the answer to its first request
   (``initialize``, written at once), and to holding its first ``tools/call`` result;
2. sequential ``tools/call`` round trips (send, wait for the answer, repeat) per second, on
   a legacy (``initialize``) connection, plus toolnexus on a modern (2026-07-28) one;
3. pipelined ``tools/call``: 64 requests kept in flight (a new one sent per answer read),
   calls per second against the floor's.

The issue's targets: start-up at most a quarter of the SDK's and at most 3x the floor's; a
call at least 5x faster than the SDK's and at most 2.5x the floor's; pinned to one core
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
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


def call_line(rid: int, modern: bool) -> bytes:
    params: dict[str, Any] = {"name": "add", "arguments": {"a": rid, "b": 1}}
    if modern:
        params["_meta"] = MODERN_META
    return line({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


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
    reply = server.answer(call_line(1, modern=False))
    tool = time.perf_counter() - began
    assert reply["result"]["content"][0]["text"] == "2", reply
    server.stop()
    return first * 1000, tool * 1000


def round_trips(server: Server, count: int, modern: bool, start: int) -> float:
    """Sequential tools/call round trips per second."""
    requests = [call_line(start + i, modern) for i in range(count)]
    answer = server.answer
    began = time.perf_counter()
    for request in requests:
        answer(request)
    return count / (time.perf_counter() - began)


def pipelined(server: Server, count: int, depth: int, start: int) -> float:
    """tools/call per second with ``depth`` requests in flight."""
    requests = [call_line(start + i, False) for i in range(count)]
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
    options = parser.parse_args()
    if options.pin is not None:
        PIN[:] = ["taskset", "-c", options.pin]
    spawns = 5 if options.quick else 15
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


def round_trip_table(servers: dict[str, tuple[list[str], Path]], rounds: int, calls: int) -> None:
    running = {name: Server(command, src) for name, (command, src) in servers.items()}
    running[DEADLINE] = Server([*SERVE, "--timeout", "30000"], ROOT / "src")
    variants = [(name, False) for name in running] + [("toolnexus", True)]
    rates: dict[tuple[str, bool], list[float]] = {variant: [] for variant in variants}
    for server in running.values():
        server.answer(INITIALIZE)
        server.send(INITIALIZED)
        round_trips(server, 50, False, 10_000_000)  # warm-up
    round_trips(running["toolnexus"], 50, True, 20_000_000)
    next_id = 1
    for _ in range(rounds):
        for name, modern in variants:
            rates[(name, modern)].append(round_trips(running[name], calls, modern, next_id))
            next_id += calls
    for server in running.values():
        server.stop()
    per_call = {v: 1e6 / statistics.median(r) for v, r in rates.items()}
    floor_us, sdk_us = per_call[("floor", False)], per_call.get(("sdk", False))
    print(f"\nsequential tools/call, median of {rounds} rounds of {calls} calls")
    print(f"{'server':<30}{'calls/s':>10}{'us/call':>10}{'vs floor':>10}{'sdk/this':>10}")
    for (name, modern), value in per_call.items():
        label = f"{name} ({'2026-07-28' if modern else 'legacy'})"
        speed = "-" if sdk_us is None else f"{sdk_us / value:.1f}x"
        print(
            f"{label:<30}{1e6 / value:>10.0f}{value:>10.1f}{ratio(value, floor_us):>10}{speed:>10}"
        )
    print("targets: toolnexus per call <= 2.5x floor, and sdk/this >= 5x")


if __name__ == "__main__":
    main()
