"""How fast the MCP client connects and calls, against same-run baselines.

    python benchmarks/mcp_client.py                  # 7 connects, 9 rounds of 300 calls
    python benchmarks/mcp_client.py --quick          # 3 connects, 5 rounds of 100 calls
    python benchmarks/mcp_client.py --baseline /tmp/old/src   # add an older checkout's client

Every client drives the same server, ``benchmarks/mcp_client_server.py``, over stdio (a
server process per client) and over Streamable HTTP (one server process), in one run:

- ``floor``: the least a client can cost: a stdlib JSON-RPC loop sending the requests
  ``toolnexus`` sends (the same modern-era ``_meta``, so the server's work is the same)
  on the same wire (stdio: ``json.dumps`` a line, ``readline`` the answer; HTTP:
  ``http.client`` keep-alive POSTs with ``TCP_NODELAY``), without ids to match, results to
  map, deadlines or threads;
- ``socket`` (HTTP only): the same exchange written and read on the socket by hand (one
  ``sendall`` of head and body, the answer read by its ``Content-Length``): what a POST
  costs without ``http.client``, whose response parsing (the :mod:`email` parser) is most
  of the floor's cost — a reference, not a client anyone should use;
- ``toolnexus``: ``toolnexus.mcp.McpClient`` (``call_tool``; modern era, negotiated);
- ``baseline``: with ``--baseline SRC``, the same client from another checkout's ``src``;
- ``host`` (and ``host-base`` with ``--baseline``): the same remote tool called through
  ``Host.call`` with a deadline; the table's last lines give it over the direct call
  (issue 37's target: at most 1.3x, stdio and HTTP);
- ``sdk``: the official SDK's ``mcp.ClientSession`` (when ``mcp`` is importable);
- ``fastmcp``: ``fastmcp.Client`` (when ``fastmcp`` is importable;
  ``pip install '.[client-bench]'`` brings both).

Why that server: a client benchmark measures what a client costs per call, and whatever
the server spends is added to every client alike, shrinking every ratio towards 1 (with
``toolnexus serve`` behind it a call's floor was mostly the server's own validation and
host, and over HTTP ``http.server``'s header parsing alone cost more than a client's whole
request). ``mcp_client_server.py`` answers inline on the thread that read the request,
with no validation and a bare socket loop for HTTP, so the figures are the clients' own.
The MCP benchmarks of the server (``mcp_server.py``, ``mcp_http.py``) measure
``toolnexus serve`` itself.

Each client runs in a process of its own (so one client's threads and garbage never slow
another), and the parent interleaves them round by round: a busy machine slows them
alike. Each call is timed on its own: the tables give the median call (on a shared machine
a process that is descheduled adds milliseconds to a few calls, which the median leaves
out) and the mean (which keeps them), per round, then the median over the rounds.
Connect + ``tools/list`` is spawn or connect, handshake and list, timed whole. Then the
import of the client against ``import toolnexus.mcp``.

The issue's targets: a call at most 1.5x the floor's and at least 5x faster than the SDK's
(the median call); the import at most 1.5x ``import toolnexus.mcp``. Nothing asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, str(ROOT / "benchmarks" / "mcp_client_server.py")]
MODERN = "2026-07-28"
META = {  # what McpClient sends (elicitation declared, named): the server parses the same
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "toolnexus", "version": "0.1.0"},
}
ARGUMENTS = {"a": 1, "b": 2}


# ------------------------------------------------------------------ the floor


class FloorStdio:
    def __init__(self) -> None:
        self.process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0
        self.ask("server/discover", {})

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        message["params"] = {**params, "_meta": {**META, "progressToken": self.next_id}}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())["result"]

    def list(self) -> Any:
        return self.ask("tools/list", {})

    def call(self) -> Any:
        return self.ask("tools/call", {"name": "add", "arguments": ARGUMENTS})

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


class FloorHttp:
    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port)
        self.connection.connect()
        assert self.connection.sock is not None  # no Nagle wait between head and body
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id = 0
        self.ask("server/discover", {})

    def ask(self, method: str, params: dict[str, Any], name: str | None = None) -> Any:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        body["params"] = {**params, "_meta": {**META, "progressToken": self.next_id}}
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
        }
        if name is not None:
            headers["Mcp-Name"] = name
        self.connection.request("POST", "/mcp", json.dumps(body), headers)
        return json.loads(self.connection.getresponse().read())["result"]

    def list(self) -> Any:
        return self.ask("tools/list", {})

    def call(self) -> Any:
        return self.ask("tools/call", {"name": "add", "arguments": ARGUMENTS}, "add")

    def close(self) -> None:
        self.connection.close()


class FloorSocket:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        self.next_id = 0
        self.ask("server/discover", {})

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        body["params"] = {**params, "_meta": {**META, "progressToken": self.next_id}}
        data = json.dumps(body).encode()
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: {method}\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        self.sock.sendall(head.encode() + data)
        length = 0
        self.reader.readline()  # the status line
        for line in iter(self.reader.readline, b"\r\n"):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.reader.read(length))["result"]

    def list(self) -> Any:
        return self.ask("tools/list", {})

    def call(self) -> Any:
        return self.ask("tools/call", {"name": "add", "arguments": ARGUMENTS})

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


# ------------------------------------------------------------------ toolnexus


class Ours:
    def __init__(self, port: int | None) -> None:
        from toolnexus.mcp import McpClient

        if port is None:
            self.client = McpClient(SERVER[0], SERVER[1:], name="bench")
        else:
            self.client = McpClient(url=f"http://127.0.0.1:{port}/mcp", name="bench")

    def list(self) -> Any:
        return self.client.list_tools()

    def call(self) -> Any:
        result = self.client.call_tool("add", ARGUMENTS)
        assert result.output == "3", result.output
        return result

    def close(self) -> None:
        self.client.close()


class ThroughHost(Ours):
    """The same remote tool through ``Host.call`` (with a deadline, as an agent calls it):
    what the host adds to a remote call."""

    def __init__(self, port: int | None) -> None:
        from toolnexus import Host, Toolkit

        super().__init__(port)
        self.host = Host(Toolkit(self.client.tools()))

    def call(self) -> Any:
        result = self.host.call("bench_add", ARGUMENTS, timeout_ms=5_000)
        assert result.output == "3", result.output
        return result

    def close(self) -> None:
        self.host.close()
        super().close()


# ------------------------------------------------------------------ async clients


class AsyncClient:
    """An async client on its own loop thread: one task opens and closes it (anyio's cancel
    scopes must be left by the task that entered them); rounds of calls run on the loop,
    each call timed there, so the thread hop is paid once per round, not per call."""

    def __init__(self, kind: str, port: int | None) -> None:
        import threading

        self.kind = kind
        self.port = port
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._run(self._create_events())
        self.life = asyncio.run_coroutine_threadsafe(self._live(), self.loop)
        self._run(self.ready.wait())

    async def _create_events(self) -> None:
        self.ready = asyncio.Event()
        self.done = asyncio.Event()

    async def _live(self) -> None:
        from contextlib import AsyncExitStack

        self.transport: Any = None
        async with AsyncExitStack() as stack:
            if self.kind == "sdk":
                from mcp import ClientSession, StdioServerParameters
                from mcp.client.stdio import stdio_client
                from mcp.client.streamable_http import streamable_http_client

                if self.port is None:
                    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
                    read, write = await stack.enter_async_context(stdio_client(params))
                else:
                    streams = await stack.enter_async_context(
                        streamable_http_client(f"http://127.0.0.1:{self.port}/mcp")
                    )
                    read, write = streams[0], streams[1]
                self.session = await stack.enter_async_context(ClientSession(read, write))
                await self.session.initialize()
            else:
                from fastmcp import Client
                from fastmcp.client.transports import StdioTransport

                target: Any
                if self.port is None:
                    target = self.transport = StdioTransport(SERVER[0], SERVER[1:])
                else:
                    target = f"http://127.0.0.1:{self.port}/mcp"
                self.session = await stack.enter_async_context(Client(target))
            self.ready.set()
            await self.done.wait()
        if self.transport is not None:
            await self.transport.close()  # its __del__ would do it on a closed loop

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def list(self) -> Any:
        return self._run(self.session.list_tools())

    def call(self) -> Any:
        return self._run(self.session.call_tool("add", ARGUMENTS))

    def timed_calls(self, calls: int) -> list[float]:
        async def timed() -> list[float]:
            clock = time.perf_counter
            times = []
            for _ in range(calls):
                started = clock()
                await self.session.call_tool("add", ARGUMENTS)
                times.append(clock() - started)
            return times

        return list(self._run(timed()))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.done.set)
        self.life.result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


# ------------------------------------------------------------------ one client's process


def make(kind: str, port: int | None) -> Any:
    if kind == "floor":
        return FloorStdio() if port is None else FloorHttp(port)
    if kind == "socket":
        assert port is not None
        return FloorSocket(port)
    if kind in ("toolnexus", "baseline"):
        return Ours(port)
    if kind in ("host", "host-base"):
        return ThroughHost(port)
    return AsyncClient(kind, port)


def child(kind: str, port: int | None) -> None:
    """Answer the parent's commands, one line each: ``connect`` (time a connect + list),
    ``calls N`` (time N calls on the live client), ``end``."""
    live = make(kind, port)
    for _ in range(20):  # warm up
        live.call()
    for line in sys.stdin:
        command = line.split()
        if command[0] == "connect":
            started = time.perf_counter()
            client = make(kind, port)
            client.list()
            elapsed = time.perf_counter() - started
            client.close()
            print(json.dumps({"connect": elapsed}), flush=True)
        elif command[0] == "calls":
            count = int(command[1])
            if isinstance(live, AsyncClient):
                times = live.timed_calls(count)
            else:
                clock = time.perf_counter
                call = live.call
                times = []
                for _ in range(count):
                    started = clock()
                    call()
                    times.append(clock() - started)
            print(json.dumps({"median": statistics.median(times), "mean": sum(times) / count}))
            sys.stdout.flush()
        else:
            break
    live.close()


# ------------------------------------------------------------------ running


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def kinds(baseline: Path | None) -> dict[str, Path]:
    """Each client measured, and the ``src`` it imports toolnexus from."""
    src = ROOT / "src"
    found = {"floor": src, "socket": src, "toolnexus": src, "host": src}
    if baseline is not None:
        found["baseline"] = baseline.resolve()
        found["host-base"] = baseline.resolve()
    if importlib.util.find_spec("mcp") is not None:
        found["sdk"] = src
    if importlib.util.find_spec("fastmcp") is not None:
        found["fastmcp"] = src
    return found


def measure(
    port: int | None, clients: dict[str, Path], connects: int, rounds: int, calls: int
) -> dict[str, tuple[float, float, float]]:
    if port is None:
        clients = {kind: src for kind, src in clients.items() if kind != "socket"}
    processes: dict[str, subprocess.Popen[str]] = {}
    for kind, src in clients.items():
        command = [sys.executable, __file__, "--child", kind]
        if port is not None:
            command += ["--port", str(port)]
        environment = {**os.environ, "PYTHONPATH": str(src)}
        processes[kind] = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment
        )

    def ask(kind: str, command: str) -> dict[str, float]:
        process = processes[kind]
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(command + "\n")
        process.stdin.flush()
        answer: dict[str, float] = json.loads(process.stdout.readline())
        return answer

    opened: dict[str, list[float]] = {kind: [] for kind in clients}
    medians: dict[str, list[float]] = {kind: [] for kind in clients}
    means: dict[str, list[float]] = {kind: [] for kind in clients}
    try:
        for _ in range(connects):
            for kind in clients:  # interleaved
                opened[kind].append(ask(kind, "connect")["connect"])
        for _ in range(rounds):
            for kind in clients:
                figures = ask(kind, f"calls {calls}")
                medians[kind].append(figures["median"])
                means[kind].append(figures["mean"])
    finally:
        for process in processes.values():
            assert process.stdin is not None
            process.stdin.write("end\n")
            process.stdin.close()
        for process in processes.values():
            process.wait()
    return {
        kind: (
            statistics.median(opened[kind]),
            statistics.median(medians[kind]),
            statistics.median(means[kind]),
        )
        for kind in clients
    }


def table(title: str, figures: dict[str, tuple[float, float, float]]) -> None:
    floor_open, floor_call, floor_mean = figures["floor"]
    sdk_call = figures.get("sdk", (0.0, 0.0, 0.0))[1]
    print(f"\n{title}")
    print(
        f"{'client':<10} {'connect+list':>13} {'x floor':>8} {'per call':>10} {'x floor':>8}"
        f" {'SDK / this':>11} {'mean call':>10} {'x floor':>8}"
    )
    for name, (opened, call, mean) in figures.items():
        versus_sdk = f"{sdk_call / call:>10.1f}x" if sdk_call else f"{'-':>11}"
        print(
            f"{name:<10} {opened * 1000:>10.1f} ms {opened / floor_open:>7.2f}x "
            f"{call * 1e6:>7.0f} us {call / floor_call:>7.2f}x {versus_sdk}"
            f" {mean * 1e6:>7.0f} us {mean / floor_mean:>7.2f}x"
        )
    for host, direct in (("host", "toolnexus"), ("host-base", "baseline")):
        if host in figures and direct in figures:
            ratio = figures[host][1] / figures[direct][1]
            print(
                f"{host} / {direct} (a remote tool: through Host.call / called directly): "
                f"{ratio:.2f}x"
            )


def import_cost(samples: int) -> None:
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    def run(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=environment, check=True)
        return time.perf_counter() - started

    import compileall

    compileall.compile_dir(str(ROOT / "src"), quiet=1)  # the same .pyc state for both
    codes = {
        "bare": "pass",
        "mcp": "import toolnexus.mcp",
        "client": "from toolnexus.mcp import McpClient, McpSource",
    }
    times: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(samples):
        for name, code in codes.items():
            times[name].append(run(code))
    bare = statistics.median(times["bare"])
    mcp = statistics.median(times["mcp"]) - bare
    client = statistics.median(times["client"]) - bare
    print("\nimport (median over a bare interpreter)")
    print(f"import toolnexus.mcp            {mcp * 1000:6.1f} ms")
    print(f"+ McpClient, McpSource          {client * 1000:6.1f} ms  {client / mcp:.2f}x")


def wait_for_port(port: int) -> None:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder")
    parser.add_argument("--only", choices=["stdio", "http", "import"], action="append")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, options.port)
        return 0
    only = set(options.only or ["stdio", "http", "import"])
    connects, rounds, calls = (3, 5, 100) if options.quick else (7, 9, 300)
    clients = kinds(options.baseline)
    print(
        f"python {sys.version.split()[0]}; {connects} connects, {rounds} rounds of {calls} "
        f"calls; load average {os.getloadavg()[0]:.1f}"
    )
    if "stdio" in only:
        table(
            "stdio (a server process per client)",
            measure(None, clients, connects, rounds, calls),
        )
    if "http" in only:
        port = free_port()
        server = subprocess.Popen([*SERVER, "--http", str(port)])
        try:
            wait_for_port(port)
            table(
                "Streamable HTTP (one server process)",
                measure(port, clients, connects, rounds, calls),
            )
        finally:
            server.terminate()
            server.wait()
    if "import" in only:
        import_cost(9 if options.quick else 21)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
