"""How fast the MCP client connects and calls, against same-run baselines.

    python benchmarks/mcp_client.py            # 7 connects, 5 rounds of 300 calls per client
    python benchmarks/mcp_client.py --quick    # 3 connects, 3 rounds of 100 calls

Every client drives the same server, ``toolnexus serve benchmarks/mcp_bench_tools.py:toolkit``
(its ``add`` tool), over stdio (a new process per client) and over Streamable HTTP (one
server process, ``--http``), in one run:

- ``floor``: the least a client can cost: a stdlib JSON-RPC loop (newline-delimited JSON on
  the pipe; ``http.client`` keep-alive POSTs of modern-era requests);
- ``toolnexus``: ``toolnexus.mcp.McpClient`` (``call_tool``; modern era, negotiated);
- ``sdk``: the official SDK's ``mcp.ClientSession`` (when ``mcp`` is importable);
- ``fastmcp``: ``fastmcp.Client`` (when ``fastmcp`` is importable;
  ``pip install '.[client-bench]'`` brings both).

Tables (medians; ratios between figures of this run — clients are interleaved, so a busy
machine slows them alike): connect + ``tools/list`` (spawn or connect, handshake, list),
and one sequential ``tools/call`` round trip. Then the import of the client against
``import toolnexus.mcp``. The issue's targets: a call at most 1.5x the floor's and at least
5x faster than the SDK's; the import at most 1.5x ``import toolnexus.mcp``. Nothing asserts.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVE = [sys.executable, "-m", "toolnexus", "serve", "benchmarks/mcp_bench_tools.py:toolkit"]
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


# ------------------------------------------------------------------ the floor


class FloorStdio:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, env=ENV
        )
        self.next_id = 0
        self.ask("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        return json.loads(self.process.stdout.readline())["result"]

    def list(self) -> Any:
        return self.ask("tools/list", {})

    def call(self) -> Any:
        return self.ask("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})

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

    def ask(self, method: str, params: dict[str, Any], name: str | None = None) -> Any:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        body["params"] = {**params, "_meta": META}
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
        return self.ask("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, "add")

    def close(self) -> None:
        self.connection.close()


# ------------------------------------------------------------------ toolnexus


class Ours:
    def __init__(self, port: int | None) -> None:
        from toolnexus.mcp import McpClient

        if port is None:
            self.client = McpClient(SERVE[0], SERVE[1:], cwd=ROOT, env=ENV, name="bench")
        else:
            self.client = McpClient(url=f"http://127.0.0.1:{port}/mcp", name="bench")

    def list(self) -> Any:
        return self.client.list_tools()

    def call(self) -> Any:
        result = self.client.call_tool("add", {"a": 1, "b": 2})
        assert result.output == "3", result.output
        return result

    def close(self) -> None:
        self.client.close()


# ------------------------------------------------------------------ async clients


class AsyncClient:
    """An async client on its own loop thread: one task opens and closes it (anyio's cancel
    scopes must be left by the task that entered them); rounds of calls run on the loop,
    timed there, so the thread hop is paid once per round, not per call."""

    def __init__(self, kind: str, port: int | None) -> None:
        import threading

        self.kind = kind
        self.port = port
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.opened: asyncio.Future[Any] = asyncio.run_coroutine_threadsafe(
            self._create_events(), self.loop
        ).result()
        self.life = asyncio.run_coroutine_threadsafe(self._live(), self.loop)
        asyncio.run_coroutine_threadsafe(self._wait_opened(), self.loop).result()

    async def _create_events(self) -> Any:
        self.ready = asyncio.Event()
        self.done = asyncio.Event()
        return None

    async def _wait_opened(self) -> None:
        await self.ready.wait()

    async def _live(self) -> None:
        from contextlib import AsyncExitStack

        self.transport: Any = None
        async with AsyncExitStack() as stack:
            if self.kind == "sdk":
                from mcp import ClientSession, StdioServerParameters
                from mcp.client.stdio import stdio_client
                from mcp.client.streamable_http import streamable_http_client

                if self.port is None:
                    params = StdioServerParameters(
                        command=SERVE[0], args=SERVE[1:], cwd=str(ROOT), env=ENV
                    )
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
                    target = self.transport = StdioTransport(
                        SERVE[0], SERVE[1:], env=ENV, cwd=str(ROOT)
                    )
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
        return self._run(self.session.call_tool("add", {"a": 1, "b": 2}))

    def round(self, calls: int) -> float:
        async def timed() -> float:
            started = time.perf_counter()
            for _ in range(calls):
                await self.session.call_tool("add", {"a": 1, "b": 2})
            return time.perf_counter() - started

        return float(self._run(timed()))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.done.set)
        self.life.result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


# ------------------------------------------------------------------ running


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def makers(port: int | None) -> dict[str, Callable[[], Any]]:
    found: dict[str, Callable[[], Any]] = {
        "floor": (lambda: FloorStdio()) if port is None else (lambda: FloorHttp(port)),
        "toolnexus": lambda: Ours(port),
    }
    if importlib.util.find_spec("mcp") is not None:
        found["sdk"] = lambda: AsyncClient("sdk", port)
    if importlib.util.find_spec("fastmcp") is not None:
        found["fastmcp"] = lambda: AsyncClient("fastmcp", port)
    return found


def measure(port: int | None, connects: int, rounds: int, calls: int) -> dict[str, Any]:
    clients = makers(port)
    opened: dict[str, list[float]] = {name: [] for name in clients}
    per_call: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(connects):
        for name, make in clients.items():  # interleaved
            started = time.perf_counter()
            client = make()
            client.list()
            opened[name].append(time.perf_counter() - started)
            client.close()
    live = {name: make() for name, make in clients.items()}
    for client in live.values():
        for _ in range(20):  # warm up
            client.call()
    for _ in range(rounds):
        for name, client in live.items():
            if isinstance(client, AsyncClient):
                per_call[name].append(client.round(calls) / calls)
                continue
            started = time.perf_counter()
            for _ in range(calls):
                client.call()
            per_call[name].append((time.perf_counter() - started) / calls)
    for client in live.values():
        client.close()
    return {
        name: (statistics.median(opened[name]), statistics.median(per_call[name]))
        for name in clients
    }


def table(title: str, figures: dict[str, Any]) -> None:
    floor_open, floor_call = figures["floor"]
    sdk_call = figures.get("sdk", (None, None))[1]
    print(f"\n{title}")
    print(
        f"{'client':<10} {'connect+list':>13} {'x floor':>8} {'per call':>10} {'x floor':>8}"
        f" {'SDK / this':>11}"
    )
    for name, (opened, call) in figures.items():
        versus_sdk = f"{sdk_call / call:>10.1f}x" if sdk_call else f"{'-':>11}"
        print(
            f"{name:<10} {opened * 1000:>10.1f} ms {opened / floor_open:>7.2f}x "
            f"{call * 1e6:>7.0f} us {call / floor_call:>7.2f}x {versus_sdk}"
        )


def import_cost(samples: int) -> None:
    def run(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=ENV, check=True)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    connects, rounds, calls = (3, 3, 100) if options.quick else (7, 5, 300)
    print(f"python {sys.version.split()[0]}; {connects} connects, {rounds} rounds of {calls} calls")
    table("stdio (a server process per client)", measure(None, connects, rounds, calls))
    port = free_port()
    server = subprocess.Popen(
        [*SERVE, "--http", str(port)], cwd=ROOT, env=ENV, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        table("Streamable HTTP (one server process)", measure(port, connects, rounds, calls))
    finally:
        server.terminate()
        server.wait()
    import_cost(9 if options.quick else 21)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
