"""How fast ``toolnexus serve --http`` starts and answers, against same-run baselines.

Run it from a checkout (the servers run from ``src/``):

    python benchmarks/mcp_http.py            # 7 spawns, 5 rounds of 1000 calls, 16 clients
    python benchmarks/mcp_http.py --quick    # 3 spawns, 3 rounds of 200 calls
    python benchmarks/mcp_http.py --repeat 3 --only sequential   # 3 runs, round trips only
    python benchmarks/mcp_http.py --baseline /tmp/old/src   # add an older checkout's server

Servers offering the same ``add`` tool, ``bench://note`` resource and ``greet`` prompt on
``http://127.0.0.1:PORT/mcp``, each a process of this interpreter:

- ``toolnexus``: ``python -m toolnexus serve benchmarks/mcp_bench_tools.py:toolkit --http
  PORT`` (the embedded stdlib server), measured on a modern (2026-07-28, stateless) and on a
  legacy (``initialize`` + ``Mcp-Session-Id``) connection;
- ``toolnexus asgi``: the same tools as an ASGI app under uvicorn (when uvicorn is importable);
- ``floor``: ``benchmarks/mcp_http_floor_server.py``, a raw ``http.server`` JSON-RPC server
  answering inline with keep-alive — the least a Python HTTP server costs per request;
- ``baseline``: with ``--baseline SRC``, the embedded server run from another checkout's
  ``src`` folder (modern and legacy), to compare a change with what it replaces in one run
  (a checkout without resources or prompts reads "n/a" in their rows);
- ``sdk``: ``benchmarks/mcp_http_sdk_server.py``, the official MCP SDK's ``MCPServer`` on
  Streamable HTTP, default settings (when ``mcp`` is importable, ``pip install '.[interop]'``).

Three tables, every figure a median, every ratio between figures of this run (servers are
measured in turn, round after round, so a busy machine slows each alike):

1. start-up: from spawning the process to holding the answer to its first ``tools/call``;
2. sequential round trips on one kept-alive connection (microseconds per request), of
   ``tools/call``, ``resources/read`` and ``prompts/get``, every server, every kind in every
   round (``x call``: times the same server's ``tools/call``); then a task against a plain
   call. **A task's round trip** (``toolnexus (tasks) task``) is the ``tools/call`` of
   ``add_task`` (``task_support="required"``, the body of ``add``: the server answers with
   the task, already completed) followed by the ``tasks/get`` that fetches its result — the
   least a client pays to get a result through a task, two requests; its ``x call`` is
   against ``toolnexus (tasks)``, ``add`` called by the same client (2026-07-28, the tasks
   extension declared). ``toolnexus (tasks) create`` is the first request alone: what
   making a task adds to one request, where the 1.5x target is read (a task's result never
   rides in the answer that makes it, SEP-2663: one more round trip fetches it). With
   ``--baseline``, ``baseline (tasks)`` rows measure the older checkout alike;
3. throughput: 16 client threads, each with its own kept-alive connection, calls per second
   (the clients are threads of this process: on a small machine they share its cores with the
   server, which compresses every ratio toward 1).

With ``--repeat N`` the whole comparison runs N times and a last set of tables gives, per
server, the median over the runs of its figure and of its ratio to each baseline (each
ratio taken within one run), with the ratios' range. The load average is printed first and
last: the machine is shared.

The issue's targets: a round trip (a tool call, a resource read, a prompt) at most 2x the
floor's and at least 5x faster than the SDK's; a task at most 1.5x a plain call. Nothing
here asserts.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
TASKS_META = {  # a modern client that declared the tasks extension
    **META,
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
}
KINDS = ("tools/call", "resources/read", "prompts/get")
"""The requests the round trips time, each against the same request to the baselines."""
TASK = "task"  # tools/call of add_task (answered with the task, completed), then tasks/get
CREATE = "create"  # that tools/call alone: making the task
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools/call": ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
    "resources/read": ("resources/read", {"uri": "bench://note"}),
    "prompts/get": ("prompts/get", {"name": "greet", "arguments": {"name": "bench"}}),
    TASK: ("tools/call", {"name": "add_task", "arguments": {"a": 1, "b": 2}}),
    CREATE: ("tools/call", {"name": "add_task", "arguments": {"a": 1, "b": 2}}),
}
NAMED = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
}
CLIENTS = 16
SOURCES: dict[str, Path] = {}  # the src folder a server runs from, when not this checkout's
TWO_ERAS = ("toolnexus", "baseline")  # servers measured on a modern and a legacy connection


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def servers() -> dict[str, list[str]]:
    """Each server's command line, with ``{port}`` for its port."""
    found = {
        "toolnexus": [
            sys.executable,
            "-m",
            "toolnexus",
            "serve",
            "benchmarks/mcp_bench_tools.py:toolkit",
            "--http",
            "{port}",
        ],
        "floor": [sys.executable, str(HERE / "mcp_http_floor_server.py"), "{port}"],
    }
    if importlib.util.find_spec("uvicorn") is not None:
        found["toolnexus asgi"] = [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "mcp_http:asgi_factory",
            "--app-dir",
            str(HERE),
            "--port",
            "{port}",
            "--log-level",
            "warning",
            "--no-access-log",
        ]
    if importlib.util.find_spec("mcp") is not None:
        found["sdk"] = [sys.executable, str(HERE / "mcp_http_sdk_server.py"), "{port}"]
    return found


def asgi_factory() -> Any:
    """The ASGI app uvicorn serves for the ``toolnexus asgi`` row."""
    sys.path.insert(0, str(HERE))
    from mcp_bench_tools import toolkit

    from toolnexus.mcp import asgi_app

    return asgi_app(toolkit)


class Unserved(Exception):
    """The server answered with an error: it does not serve this (an older checkout)."""


class Connection:
    """One kept-alive client connection speaking one era (or plain JSON-RPC)."""

    def __init__(self, port: int, era: str) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.era = era
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        self.next_id = 0
        if era == "legacy":
            hello = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            }
            _, headers = self.post(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
            )
            self.headers["Mcp-Session-Id"] = headers["mcp-session-id"]
            self.headers["MCP-Protocol-Version"] = "2025-11-25"
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict[str, Any]) -> tuple[Any, dict[str, str]]:
        self.http.request("POST", "/mcp", json.dumps(message, separators=(",", ":")), self.headers)
        response = self.http.getresponse()
        body = response.read()
        headers = {name.lower(): value for name, value in response.getheaders()}
        if not body:
            return None, headers
        if headers.get("content-type", "").startswith("text/event-stream"):
            lines = [line for line in body.splitlines() if line.startswith(b"data:")]
            return json.loads(lines[-1][5:]), headers
        return json.loads(body), headers

    def send(self, method: str, params: dict[str, Any]) -> Any:
        """One request (with the era's ``_meta`` and headers); its answer's ``result``.
        Raises :class:`Unserved` for an error answer."""
        self.next_id += 1
        headers = self.headers
        if self.era in ("modern", "tasks"):
            params = {**params, "_meta": TASKS_META if self.era == "tasks" else META}
            headers = {
                **headers,
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": method,
                "Mcp-Name": params[NAMED[method]],
            }
        saved, self.headers = self.headers, headers
        try:
            reply, _ = self.post(
                {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
            )
        finally:
            self.headers = saved
        if not isinstance(reply, dict) or "result" not in reply:
            raise Unserved(f"{method}: {reply}")
        return reply["result"]

    def ask(self, kind: str = "tools/call") -> None:
        """One round trip of ``kind`` (a :data:`TASK`: two), its answer checked."""
        result = self.send(*REQUESTS[kind])
        if kind in (TASK, CREATE):  # the task, made completed
            if result.get("status") != "completed":
                raise SystemExit(f"bench: not a completed task: {result}")
            if kind == CREATE:
                return
            result = self.send("tasks/get", {"taskId": result["taskId"]}).get("result")
        if kind == "resources/read":
            right = result["contents"][0]["text"] == "a short note"
        elif kind == "prompts/get":
            right = result["messages"][0]["content"]["text"] == "Hello, bench!"
        else:
            right = result["content"][0]["text"] == "3"
        if not right:
            raise SystemExit(f"bench: a wrong answer to {kind}: {result}")

    def add(self) -> None:
        self.ask()

    def close(self) -> None:
        self.http.close()


class Server:
    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(SOURCES.get(name, ROOT / "src")), os.environ.get("PYTHONPATH", "")]
            ),
        }
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [part.format(port=self.port) for part in command],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def first_call(self, era: str) -> float:
        """Seconds from spawning to holding the first tools/call answer."""
        deadline = self.started + 60
        while True:
            try:
                connection = Connection(self.port, era)
                connection.add()
                connection.close()
                return time.perf_counter() - self.started
            except (ConnectionError, OSError, http.client.HTTPException):
                if time.perf_counter() > deadline or self.process.poll() is not None:
                    raise SystemExit(f"bench: {self.name} did not start") from None
                time.sleep(0.002)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def era_of(name: str) -> str:
    return "plain" if name == "floor" else "legacy" if name == "sdk" else "modern"


def sequential(port: int, era: str, calls: int, kind: str = "tools/call") -> float:
    """Microseconds per round trip of ``kind`` on one kept-alive connection."""
    connection = Connection(port, era)
    ask = connection.ask
    for _ in range(min(100, calls)):  # warm up
        ask(kind)
    start = time.perf_counter()
    for _ in range(calls):
        ask(kind)
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed / calls * 1e6


def serves(port: int, era: str, kind: str) -> bool:
    """Whether the server answers ``kind`` (an older checkout has no resources, prompts
    or tasks)."""
    connection = Connection(port, era)
    try:
        connection.ask(kind)
    except Unserved:
        return False
    finally:
        connection.close()
    return True


def concurrent(port: int, era: str, calls_each: int) -> float:
    """Calls per second with CLIENTS threads, each on its own connection."""
    connections = [Connection(port, era) for _ in range(CLIENTS)]
    gate = threading.Barrier(CLIENTS + 1)
    failures: list[BaseException] = []

    def client(connection: Connection) -> None:
        gate.wait()
        try:
            for _ in range(calls_each):
                connection.add()
        except (OSError, http.client.HTTPException) as exc:
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(c,)) for c in connections]
    for thread in threads:
        thread.start()
    gate.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    for connection in connections:
        connection.close()
    if failures:
        raise SystemExit(f"bench: {len(failures)} client(s) failed on port {port}: {failures[0]!r}")
    return CLIENTS * calls_each / elapsed


TABLES = {
    "startup": ("start-up: spawn to first tools/call answer (ms, median)", "ms", True),
    "sequential": (
        "sequential tools/call on a kept-alive connection (us per call, median)",
        "us",
        True,
    ),
    "throughput": (f"throughput, {CLIENTS} concurrent clients (calls/s, median)", "calls/s", False),
}


def cost(value: float, base: float | None, lower_is_better: bool) -> float | None:
    """How many times the baseline's cost this is (below 1: cheaper than the baseline)."""
    if base is None:
        return None
    return value / base if lower_is_better else base / value


def label(name: str, era: str, kind: str = "tools/call") -> str:
    """A row's name: the server (its era, when it has two), then the kind of request."""
    server = f"{name} ({era})" if name in TWO_ERAS or era == "tasks" else name
    return server if kind == "tools/call" else f"{server} {kind}"


def split(row: str) -> tuple[str, str]:
    """A row's server and kind of request (the inverse of :func:`label`)."""
    server, _, kind = row.rpartition(" ")
    return (server, kind) if kind in (*KINDS, TASK, CREATE) else (row, "tools/call")


def ratios(run: dict[str, float], name: str, lower_is_better: bool) -> list[float | None]:
    """[times the floor's cost, times faster than the SDK, times the same server's
    tools/call] for one row in one run, each against the same kind of request: the
    issue's targets, read directly (<= 2, >= 5; a task <= 1.5)."""
    server, kind = split(name)
    to_floor = cost(run[name], run.get(label("floor", "plain", kind)), lower_is_better)
    to_sdk = cost(run[name], run.get(label("sdk", "legacy", kind)), lower_is_better)
    to_call = None if kind == "tools/call" else cost(run[name], run.get(server), lower_is_better)
    return [to_floor, None if to_sdk is None else 1 / to_sdk, to_call]


def shown(number: float | None) -> str:
    return "-" if number is None else "n/a" if math.isnan(number) else f"{number:.2f}"


RATIOS = f"{'x floor':>10}{'sdk x':>10}{'x call':>10}"
LEGEND = (
    "  (x floor: times the floor's cost for the same request; sdk x: times faster than the\n"
    "  SDK; x call: times the same server's tools/call; n/a: not served by that server)"
)


def table(part: str, rows: dict[str, float], heading: str = "") -> None:
    title, unit, lower_is_better = TABLES[part]
    print(f"\n{title}{heading}")
    print(f"  {'server':<36}{unit:>14}{RATIOS}")
    for name, value in rows.items():
        cells = "".join(f"{shown(r):>10}" for r in ratios(rows, name, lower_is_better))
        print(f"  {name:<36}{shown(value):>14}{cells}")
    print(LEGEND)


def summary(part: str, repeats: list[dict[str, float]]) -> None:
    """The median over repeats of each server's median, and of its ratio to each baseline
    (each ratio taken within its repeat), with the ratios' range."""
    title, unit, lower_is_better = TABLES[part]
    print(f"\n{title}, over {len(repeats)} repeats")
    print(
        f"  {'server':<36}{unit:>14}{'x floor':>10}{'(range)':>14}{'sdk x':>10}{'(range)':>14}"
        f"{'x call':>10}{'(range)':>14}"
    )
    for name in repeats[0]:
        value = shown(statistics.median(run[name] for run in repeats))
        cells = [f"  {name:<36}{value:>14}"]
        for column in (0, 1, 2):
            found = [
                r
                for run in repeats
                if (r := ratios(run, name, lower_is_better)[column]) is not None
                and not math.isnan(r)
            ]
            if not found:
                cells.append(f"{'-':>10}{'':>14}")
                continue
            spread = f"{min(found):.2f}-{max(found):.2f}"
            cells.append(f"{statistics.median(found):>10.2f}{spread:>14}")
        print("".join(cells))
    print(LEGEND)


def measure(
    commands: dict[str, list[str]], parts: list[str], spawns: int, rounds: int, calls: int
) -> dict[str, dict[str, float]]:
    """One side-by-side run: each part's median per server."""
    rows = [
        (name, era)
        for name in commands
        for era in (("modern", "legacy") if name in TWO_ERAS else (era_of(name),))
    ]
    found: dict[str, dict[str, float]] = {}
    if "startup" in parts:
        startup: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(spawns):
            for name, command in commands.items():
                server = Server(name, command)
                try:
                    startup[name].append(server.first_call(era_of(name)))
                finally:
                    server.stop()
        found["startup"] = {
            name: statistics.median(values) * 1000 for name, values in startup.items()
        }
    if "sequential" not in parts and "throughput" not in parts:
        return found
    running = {name: Server(name, command) for name, command in commands.items()}
    # The round trips: every kind of request on every server and era, then a task against
    # a plain call by the same client (the embedded server, and the baseline's, for a client
    # of the tasks extension).
    trips = [(name, era, kind) for kind in KINDS for name, era in rows]
    trips += [
        (name, "tasks", kind)
        for name in TWO_ERAS
        if name in running
        for kind in ("tools/call", CREATE, TASK)
    ]
    round_trip: dict[str, list[float]] = {label(*trip): [] for trip in trips}
    throughput: dict[str, list[float]] = {}
    try:
        for name, server in running.items():
            server.first_call(era_of(name))
        if "sequential" in parts:
            unserved = [trip for trip in trips if not serves(running[trip[0]].port, *trip[1:])]
            trips = [trip for trip in trips if trip not in unserved]
            for trip in unserved:
                round_trip[label(*trip)] = [math.nan]
        for _ in range(rounds):
            if "sequential" in parts:
                for name, era, kind in trips:
                    round_trip[label(name, era, kind)].append(
                        sequential(running[name].port, era, calls, kind)
                    )
            if "throughput" in parts:
                for name, era in rows:
                    throughput.setdefault(label(name, era), []).append(
                        concurrent(running[name].port, era, max(calls // CLIENTS * 4, 10))
                    )
    finally:
        for server in running.values():
            server.stop()
    if "sequential" in parts:
        found["sequential"] = {name: statistics.median(v) for name, v in round_trip.items()}
    if throughput:
        found["throughput"] = {name: statistics.median(v) for name, v in throughput.items()}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer spawns and calls")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the whole comparison N times; then also print the median "
        "over the runs of each figure and of each ratio (default 1)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=list(TABLES),
        metavar="PART",
        help=f"measure only this part (repeatable): {', '.join(TABLES)}",
    )
    parser.add_argument(
        "--baseline", type=Path, metavar="SRC", help="also run toolnexus from this src folder"
    )
    options = parser.parse_args()
    if options.repeat < 1:
        parser.error("--repeat must be at least 1")
    parts = options.only or list(TABLES)
    spawns, rounds, calls = (3, 3, 200) if options.quick else (7, 5, 1000)
    commands = servers()
    if options.baseline is not None:
        SOURCES["baseline"] = options.baseline.resolve()
        commands["baseline"] = commands["toolnexus"]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpu(s); servers: "
        f"{', '.join(commands)}; {spawns} spawns, {rounds} rounds of {calls} calls, "
        f"{CLIENTS} concurrent clients; {options.repeat} repeat(s); load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    runs: list[dict[str, dict[str, float]]] = []
    for number in range(1, options.repeat + 1):
        found = measure(commands, parts, spawns, rounds, calls)
        runs.append(found)
        heading = f" [repeat {number} of {options.repeat}]" if options.repeat > 1 else ""
        for part, rows in found.items():
            table(part, rows, heading)
    if options.repeat > 1:
        print(f"\nload average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for part in runs[0]:
            summary(part, [run[part] for run in runs])


if __name__ == "__main__":
    main()
