"""What a gateway hop costs: a call straight to an upstream vs the same call through
``toolnexus serve mcp.json``, in one run.

    python benchmarks/gateway.py            # 7 rounds of 200 calls; 5 s per throughput point
    python benchmarks/gateway.py --quick    # 3 rounds of 100 calls; 2 s per point
    python benchmarks/gateway.py --fastmcp-python /tmp/fastmcp-venv/bin/python
    python benchmarks/gateway.py --baseline /tmp/old/src --only latency

The upstream is ``toolnexus serve benchmarks/mcp_bench_tools.py:toolkit`` (its ``add``):

- ``direct``: that server over Streamable HTTP (the embedded server);
- ``gw/stdio``: a gateway (``toolnexus serve mcp.json --http``) in front of the same server
  run as its stdio child;
- ``gw/http``: a gateway in front of the ``direct`` server, over HTTP.

Each target is called by two clients: ``raw`` (``http.client`` keep-alive POSTs of the
modern era, what ``benchmarks/mcp_client.py`` calls the floor: what the gateway costs
with nothing of a client's own added) and ``sdk`` (the official SDK's ``mcp.Client``).
Latency: the median call per round, then the median over rounds; the hop is a gateway's
median minus the direct one, from the same run, interleaved round by round; beside it,
the context switches of the server's process per call (its threads' hand-offs, which a
busy machine does not change as it changes times). Throughput: 1, 16 and 64 concurrent
raw clients (in up to 4 processes), calls per second, with each gateway process — every
thread of it — pinned to one core (``os.sched_setaffinity``) for that part only; the
upstream is not pinned, nor is anything during the latency rounds.

``--baseline OLD/src`` adds an older checkout's gateways (``gw/stdio@base``,
``gw/http@base``) in front of the same upstreams, called in the same rounds: the hop
before and after a change, from one run. Every upstream runs this checkout's ``src`` (the
stdio child is given it on ``PYTHONPATH``), so only the gateways differ. ``--only
latency`` leaves out the throughput table.

FastMCP's proxy (``create_proxy``; ``FastMCP.as_proxy`` before fastmcp 3) joins as
``fastmcp`` when ``fastmcp`` imports (the ``client-bench`` extra, for benchmarks only) or
``--fastmcp-python`` names an interpreter that has it (its pins of ``mcp`` may not suit
this environment); otherwise the run says it was left out.

The machine this project runs on is shared and loaded: read the figures as same-run
ratios. Nothing asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOOLS = str(ROOT / "benchmarks" / "mcp_bench_tools.py") + ":toolkit"
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
}
ARGUMENTS = {"a": 1, "b": 2}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"a server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port} after 60 s")


class Raw:
    """``http.client`` keep-alive POSTs: the least a client adds."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port)
        self.connection.connect()
        assert self.connection.sock is not None
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id = 0

    def call(self) -> None:
        self.next_id += 1
        params = {"name": "add", "arguments": ARGUMENTS, "_meta": META}
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "add",
        }
        self.connection.request("POST", "/mcp", json.dumps(body), headers)
        answer = json.loads(self.connection.getresponse().read())
        assert answer["result"]["content"][0]["text"] == "3", answer

    def timed(self, calls: int) -> list[float]:
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            self.call()
            times.append(time.perf_counter() - start)
        return times

    def close(self) -> None:
        self.connection.close()


class Sdk:
    """The official SDK's ``mcp.Client``, on a loop thread of its own."""

    def __init__(self, port: int) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.ready = threading.Event()
        self.stop: asyncio.Event | None = None
        self.life = asyncio.run_coroutine_threadsafe(self._live(port), self.loop)
        if not self.ready.wait(60):
            raise SystemExit("the SDK client did not connect in 60 s")

    async def _live(self, port: int) -> None:
        from mcp import Client

        self.stop = asyncio.Event()
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            self.client = client
            self.ready.set()
            await self.stop.wait()

    async def _timed(self, calls: int) -> list[float]:
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            await self.client.call_tool("add", ARGUMENTS)
            times.append(time.perf_counter() - start)
        return times

    def timed(self, calls: int) -> list[float]:
        return asyncio.run_coroutine_threadsafe(self._timed(calls), self.loop).result()

    def close(self) -> None:
        assert self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.life.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


def serve(args: list[str], port: int, src: Path = ROOT / "src") -> subprocess.Popen[bytes]:
    """``toolnexus serve ARGS --http PORT`` from the checkout whose ``src`` is ``src``."""
    command = [sys.executable, "-m", "toolnexus", "serve", *args, "--http", str(port)]
    env = dict(os.environ, PYTHONPATH=str(src))
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    wait_for_port(port, process)
    return process


def pin(pid: int) -> None:
    """Pin every thread of process ``pid`` to this machine's first core (a thread it
    starts later inherits its starter's); ``sched_setaffinity(pid)`` alone would pin the
    main thread only, not the server's threads already running."""
    if not hasattr(os, "sched_setaffinity"):
        return
    core = {sorted(os.sched_getaffinity(0))[0]}
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task), core)


def switches(pid: int) -> int:
    """How often the threads of process ``pid`` have given up their core so far
    (voluntary and forced context switches, Linux ``/proc``; 0 elsewhere): the thread
    hand-offs a call costs, which a busy machine does not change, unlike its time."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/status", encoding="ascii") as status:
                for line in status:  # voluntary_ctxt_switches, nonvoluntary_ctxt_switches
                    if line.split(":", 1)[0].endswith("ctxt_switches"):
                        total += int(line.split()[-1])
        except OSError:  # a thread that ended meanwhile
            continue
    return total


def fastmcp_proxy(upstream: str, port: int, python: str | None) -> subprocess.Popen[bytes] | None:
    """FastMCP's proxy in front of ``upstream``, run by ``python`` (one with ``fastmcp``:
    its pins may not suit this environment's ``mcp``), else by this interpreter when
    ``fastmcp`` imports here; None when neither."""
    if python is None:
        if importlib.util.find_spec("fastmcp") is None:
            return None
        python = sys.executable
    code = (
        "from fastmcp import FastMCP\n"
        "try:\n    from fastmcp.server.server import create_proxy\n"  # fastmcp 3 and later
        "except ImportError:\n    create_proxy = FastMCP.as_proxy\n"
        f"create_proxy({upstream!r}).run(transport='http', host='127.0.0.1', port={port},"
        " show_banner=False)\n"
    )
    process = subprocess.Popen([python, "-c", code], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    wait_for_port(port, process)
    return process


def load(port: int, threads: int, seconds: float) -> None:
    """(A child process) ``threads`` raw clients calling for ``seconds``; prints the count."""
    counts = [0] * threads
    end = time.monotonic() + seconds

    def run(index: int) -> None:
        client = Raw(port)
        while time.monotonic() < end:
            client.call()
            counts[index] += 1
        client.close()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(sum(counts))


def throughput(port: int, clients: int, seconds: float) -> float:
    processes = min(clients, 4)
    share = [clients // processes + (i < clients % processes) for i in range(processes)]
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--load", str(port), str(n), str(seconds)],
            stdout=subprocess.PIPE,
        )
        for n in share
    ]
    total = sum(int(child.communicate()[0]) for child in children)
    return total / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--load", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument(
        "--fastmcp-python", help="an interpreter with fastmcp, to run FastMCP's proxy"
    )
    parser.add_argument("--baseline", type=Path, metavar="SRC", help="an older checkout's src")
    parser.add_argument("--only", choices=("latency",), help="leave the throughput table out")
    options = parser.parse_args()
    if options.load:
        load(int(options.load[0]), int(options.load[1]), float(options.load[2]))
        return 0
    rounds, calls, seconds = (3, 100, 2.0) if options.quick else (7, 200, 5.0)
    folder = Path(tempfile.mkdtemp(prefix="toolnexus-gateway-bench-"))
    direct_port = free_port()
    processes = [serve([TOOLS], direct_port)]
    stdio_json = folder / "stdio.json"
    upstream = [sys.executable, "-m", "toolnexus", "serve", TOOLS]
    # (this checkout's upstream for every gateway: a baseline's would inherit its PYTHONPATH)
    entry = {"command": upstream[0], "args": upstream[1:], "prefix": "", "maxInFlight": 128,
             "maxQueued": 128, "env": {"PYTHONPATH": str(ROOT / "src")}}  # fmt: skip
    stdio_json.write_text(json.dumps({"mcpServers": {"up": entry}}))
    http_json = folder / "http.json"
    entry = {"url": f"http://127.0.0.1:{direct_port}/mcp", "prefix": "", "maxInFlight": 128,
             "maxQueued": 128}  # fmt: skip
    http_json.write_text(json.dumps({"mcpServers": {"up": entry}}))
    targets = {"direct": direct_port, "gw/stdio": free_port(), "gw/http": free_port()}
    processes.append(serve([str(stdio_json)], targets["gw/stdio"]))
    processes.append(serve([str(http_json)], targets["gw/http"]))
    if options.baseline is not None:
        base = options.baseline.resolve()
        for name, config in (("gw/stdio@base", stdio_json), ("gw/http@base", http_json)):
            targets[name] = free_port()
            processes.append(serve([str(config)], targets[name], src=base))
    pids = {name: process.pid for name, process in zip(targets, processes, strict=True)}
    proxy_port = free_port()
    upstream_url = f"http://127.0.0.1:{direct_port}/mcp"
    proxy = fastmcp_proxy(upstream_url, proxy_port, options.fastmcp_python)
    if proxy is not None:
        processes.append(proxy)
        targets["fastmcp"] = proxy_port
        pids["fastmcp"] = proxy.pid
    try:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)")
        if proxy is None:
            print("fastmcp is not installed: FastMCP's proxy left out (pip install fastmcp)")
        kinds: dict[str, Any] = {"raw": Raw}
        if importlib.util.find_spec("mcp") is not None:
            kinds["sdk"] = Sdk
        for kind, make in kinds.items():
            clients = {name: make(port) for name, port in targets.items()}
            medians: dict[str, list[float]] = {name: [] for name in targets}
            switched = dict.fromkeys(targets, 0)
            for client in clients.values():
                client.timed(20)  # warm up
            for _ in range(rounds):
                for name, client in clients.items():
                    before = switches(pids.get(name, 0))
                    medians[name].append(statistics.median(client.timed(calls)))
                    switched[name] += switches(pids.get(name, 0)) - before
            for client in clients.values():
                client.close()
            direct = statistics.median(medians["direct"])
            print(f"\n{kind} client: median call (us), the hop over direct, and the")
            print("context switches of the server's process per call (its threads' hand-offs)")
            for name in targets:
                value = statistics.median(medians[name])
                hop = "" if name == "direct" else f"  +{(value - direct) * 1e6:7.0f} us"
                per_call = switched[name] / (rounds * calls)
                print(
                    f"  {name:14} {value * 1e6:8.0f} us{hop:14}  ({value / direct:.2f}x)"
                    f"  {per_call:5.2f} switches"
                )
        print(f"\nload average {os.getloadavg()[0]:.1f} after the latency rounds")
        if options.only == "latency":
            return 0
        for name, pid in pids.items():
            if name != "direct":
                pin(pid)
        print(f"\nthroughput, raw clients, gateway on one core ({seconds:.0f} s per point)")
        print("  " + " ".join(f"{name:>12}" for name in targets))
        for count in (1, 16, 64):
            rates = [throughput(port, count, seconds) for port in targets.values()]
            shown = " ".join(f"{rate:9.0f}/s " for rate in rates)
            print(f"  {count:2} clients {shown}")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
