"""Instructions per call (callgrind), for this checkout and an older one: a figure a busy
machine does not move, where wall-clock ratios on a shared VM swing by 10% and more.

    python benchmarks/instructions.py --baseline /tmp/old/src        # every row, 3 repeats
    python benchmarks/instructions.py --rows stdio-timeout,host-timeout --repeat 5

Each row runs its workload twice under ``valgrind --tool=callgrind`` — with 100 and with
1,100 calls — and reads the difference over 1,000: what one call costs, without start-up.
The least of the repeats is shown (a run can only gain instructions from what else
happens, e.g. a thread woken by the clock), with the others beside it.

- ``stdio-legacy``, ``stdio-modern``, ``stdio-timeout``: ``toolnexus serve
  benchmarks/mcp_bench_tools.py:toolkit`` (``stdio-timeout`` with ``--timeout 30000``)
  counted alone, sequential ``tools/call`` of ``add`` sent from an uncounted driver, legacy
  after ``initialize`` or modern (2026-07-28). The spare reader's 5 ms poll and the
  serving thread's 0.1 s look for signals are set to 1,000 s in both checkouts (the same
  code in each; the end of input still wakes it): under callgrind a call takes
  milliseconds, and the polls' wake-ups would count wall time, not work.
- ``stdio-tasks-call``, ``stdio-task-create``, ``stdio-task``: a modern client that
  declared the tasks extension (as ``mcp_server.py``'s task rows): ``tools/call`` of
  ``add`` (the plain call by that client); the ``tools/call`` of ``add_task``
  (``task_support="required"``: answered with the task, already completed) alone; and
  that call followed by the ``tasks/get`` that fetches its result — a task's round
  trips, per task.
- ``host``, ``host-timeout``: ``Host.call("add", ...)`` in-process, without and with
  ``timeout_ms=5000`` (the shape of ``host_overhead.py`` table 1).
- ``host-pass-through``, ``host-cache-hit``: the same through one middleware: a function
  that passes the call on, or ``cache()`` answering every call (the same arguments to a
  read-only ``add``).
- ``host-memo-hit``: ``cache()``'s hand-written equivalent (``policies.py``'s memo in
  front of ``Host.call``, a dict keyed on the sorted JSON arguments), hitting.
- ``host-call-limit``, ``host-rate-limit``: ``Host.call`` through ``call_limit(10**9,
  per="tool")`` and ``rate_limit(1e9, burst=10**6)`` (never reached), against
  ``host-counter`` and ``host-bucket``, their hand-written equivalents as middleware
  (``policies.py``'s ``counter_of`` and ``bucket_of``).
- ``http-legacy``, ``http-modern``: the embedded Streamable HTTP server (``HttpServer``,
  ``mcp_bench_tools.py``'s toolkit) started in the counted process, driven by
  ``mcp_http.py``'s raw ``http.client`` connection from an uncounted child process (as
  the stdio rows' driver: the server's work alone): sequential ``tools/call`` of ``add``,
  legacy in an ``initialize`` session or modern (2026-07-28). The loop's 0.25 s look at
  its timeouts is set to 1,000 s in both checkouts, as the stdio poll.
- ``client``, ``client-http``: ``McpClient.call_tool`` over stdio, and over Streamable
  HTTP, against ``mcp_client_server.py`` (the server a child process, uncounted). The
  stdio transport's reader thread, which reads the pipe once no caller has for 50 ms, is
  set to 1,000 s in both checkouts: its wake-ups counted wall time too (runs of one
  checkout read 50k to 124k per call with it on, the 100-call run gaining as often as
  the 1,100-call one).
- ``client-host``: the same remote tool through ``Host.call`` (``Host(Toolkit(client.tools()))``,
  ``timeout_ms=5000``): what the host adds to a remote call, against ``client``.
- ``gw-stdio``, ``gw-http``: a gateway (the toolkit of an ``mcp.json`` naming one server,
  ``toolnexus serve benchmarks/mcp_bench_tools.py:toolkit`` as its stdio child, or the same
  served over HTTP by an uncounted child process) in an embedded ``HttpServer`` counted as
  ``http-modern`` is, driven as it is: what a gateway hop costs the gateway's process,
  against ``http-modern`` (the same request answered by a local ``add``). The stdio
  client's 50 ms look is off, as in the ``client`` rows.

Needs ``valgrind`` on the PATH; a row takes a minute or more. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROWS = (
    "stdio-legacy",
    "stdio-modern",
    "stdio-timeout",
    "stdio-tasks-call",
    "stdio-task-create",
    "stdio-task",
    "http-legacy",
    "http-modern",
    "host",
    "host-timeout",
    "host-pass-through",
    "host-cache-hit",
    "host-memo-hit",
    "host-call-limit",
    "host-counter",
    "host-rate-limit",
    "host-bucket",
    "client",
    "client-http",
    "client-host",
    "gw-stdio",
    "gw-http",
)
SMALL, LARGE = 100, 1_100
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
TASK_ROWS = ("stdio-tasks-call", "stdio-task-create", "stdio-task")


def callgrind(src: Path, argv: list[str], **popen: object) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode compiled once, up front
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    return subprocess.Popen(
        [*command, sys.executable, __file__, *argv],
        env=env,
        stderr=subprocess.PIPE,
        **popen,  # type: ignore[arg-type]
    )


def collected(process: subprocess.Popen[bytes]) -> int:
    assert process.stderr is not None
    err = process.stderr.read().decode()
    process.wait()
    found = re.findall(r"Collected : (\d+)", err)
    if process.returncode or not found:
        raise RuntimeError(f"the workload failed:\n{err[-2000:]}")
    return int(found[-1])


def line(message: dict[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def stdio_run(src: Path, row: str, calls: int) -> int:
    """Instructions of a served stdio session of ``calls`` tools/call (the server only)."""
    argv = ["--serve", "serve", str(HERE / "mcp_bench_tools.py") + ":toolkit"]
    if row == "stdio-timeout":
        argv += ["--timeout", "30000"]
    server = callgrind(src, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None

    def ask(message: dict[str, object]) -> dict[str, object]:
        server.stdin.write(line(message))  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        answer: dict[str, object] = json.loads(server.stdout.readline())  # type: ignore[union-attr]
        return answer

    modern = row == "stdio-modern" or row in TASK_ROWS
    if not modern:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b"}}
        ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        server.stdin.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    meta = TASKS_META if row in TASK_ROWS else MODERN_META
    name = "add_task" if row in ("stdio-task-create", "stdio-task") else "add"
    for rid in range(1, calls + 1):
        body: dict[str, object] = {"name": name, "arguments": {"a": rid, "b": 1}}
        if modern:
            body["_meta"] = meta
        answer = ask({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": body})
        assert "result" in answer, answer
        if row == "stdio-task":  # the task's result, as a client fetches it
            task_id = answer["result"]["taskId"]  # type: ignore[index]
            get = {"taskId": task_id, "_meta": meta}
            got = ask({"jsonrpc": "2.0", "id": -rid, "method": "tasks/get", "params": get})
            assert got["result"]["result"]["content"], got  # type: ignore[index]
    server.stdin.close()
    return collected(server)


def per_call(src: Path, row: str) -> int:
    if row.startswith("stdio-"):
        small, large = stdio_run(src, row, SMALL), stdio_run(src, row, LARGE)
    else:
        small = collected(callgrind(src, ["--workload", row, str(SMALL)]))
        large = collected(callgrind(src, ["--workload", row, str(LARGE)]))
    return (large - small) // (LARGE - SMALL)


def serve(argv: list[str]) -> None:
    """``toolnexus serve`` with the spare reader's poll off (see the module's text)."""
    for name in ("toolnexus.mcp._server._stdio", "toolnexus.mcp._stdio"):  # now, and before
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        module._RELIEF_S = 1000.0  # type: ignore[attr-defined]
        module._SIGNAL_POLL_S = 1000.0  # type: ignore[attr-defined]
        break
    sys.argv = ["toolnexus", *argv]
    runpy.run_module("toolnexus", run_name="__main__", alter_sys=True)


def gateway_toolkit(row: str) -> tuple[Any, subprocess.Popen[bytes] | None]:
    """The toolkit of a gateway in front of ``mcp_bench_tools.py`` (``gw-stdio``: its
    stdio child; ``gw-http``: an uncounted HTTP server process), and that process."""
    import tempfile

    from mcp_client import free_port, wait_for_port

    from toolnexus.mcp import McpSource

    for name in ("toolnexus.mcp._client._stdio", "toolnexus.mcp._client_stdio"):
        try:  # (now, and before) the reader thread's 50 ms look, off as in the client rows
            importlib.import_module(name)._IDLE_S = 1000.0
            break
        except ImportError:
            continue
    tools = str(HERE / "mcp_bench_tools.py") + ":toolkit"
    served = [sys.executable, "-m", "toolnexus", "serve", tools]
    process = None
    entry: dict[str, Any] = {"command": served[0], "args": served[1:], "prefix": ""}
    if row == "gw-http":
        port = free_port()
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        process = subprocess.Popen([*served, "--http", str(port)], env=env)
        wait_for_port(port)
        entry = {"url": f"http://127.0.0.1:{port}/mcp", "prefix": ""}
    folder = Path(tempfile.mkdtemp(prefix="toolnexus-instructions-"))
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"up": entry}}))
    return McpSource(str(folder / "mcp.json")).connect().toolkit, process


def http_workload(row: str, calls: int) -> None:
    """An in-process ``HttpServer`` answering ``calls`` sequential ``tools/call`` sent by
    :func:`http_drive` in a child process (valgrind counts this process only)."""
    sys.path.insert(0, str(HERE))
    from mcp_bench_tools import toolkit

    from toolnexus.mcp import HttpServer

    upstream = None
    if row.startswith("gw-"):
        toolkit, upstream = gateway_toolkit(row)

    for name in ("toolnexus.mcp._server._http_server", "toolnexus.mcp._http_server"):
        try:  # (now, and before) the loop's look at its timeouts, off as the stdio poll
            importlib.import_module(name)._TICK_S = 1000.0
            break
        except ImportError:
            continue
    server = HttpServer(toolkit, port=0)
    server.start()
    era = "modern" if row.startswith("gw-") else row.removeprefix("http-")
    argv = [sys.executable, __file__, "--drive-http", str(server.address[1]), era, str(calls)]
    subprocess.run(argv, check=True, env=dict(os.environ, PYTHONPATH=""))
    server.shutdown()
    if upstream is not None:
        upstream.terminate()
        upstream.wait()


def http_drive(port: int, era: str, calls: int) -> None:
    """The uncounted driver of the HTTP rows: ``mcp_http.py``'s raw client."""
    sys.path.insert(0, str(HERE))
    from mcp_http import Connection

    connection = Connection(port, era)
    connection.add()
    for _ in range(calls):
        connection.add()
    connection.close()


def client_workload(row: str, calls: int) -> None:
    """``calls`` ``McpClient.call_tool`` against ``mcp_client_server.py`` (stdio or HTTP)."""
    sys.path.insert(0, str(HERE))
    from mcp_client import free_port, wait_for_port

    from toolnexus.mcp import McpClient

    for name in ("toolnexus.mcp._client._stdio", "toolnexus.mcp._client_stdio"):
        try:  # (now, and before) the reader thread's 50 ms look, off as the server's polls
            importlib.import_module(name)._IDLE_S = 1000.0
            break
        except ImportError:
            continue
    server_script = str(HERE / "mcp_client_server.py")
    process = None
    if row == "client-http":
        port = free_port()
        process = subprocess.Popen([sys.executable, server_script, "--http", str(port)])
        wait_for_port(port)
        client = McpClient(url=f"http://127.0.0.1:{port}/mcp", name="bench")
    else:
        client = McpClient(sys.executable, [server_script], name="bench")
    if row == "client-host":  # the same remote tool through Host.call
        from toolnexus import Host, Toolkit

        with Host(Toolkit(client.tools())) as remote:
            for _ in range(calls):
                result = remote.call("bench_add", {"a": 1, "b": 2}, timeout_ms=5_000)
                assert result.output == "3"
    else:
        client.list_tools()
        for _ in range(calls):
            assert client.call_tool("add", {"a": 1, "b": 2}).output == "3"
    client.close()
    if process is not None:
        process.terminate()
        process.wait()


def workload(row: str, calls: int) -> None:
    from toolnexus import Host, Toolkit, tool

    if row.startswith("client"):
        client_workload(row, calls)
        return
    if row.startswith(("http-", "gw-")):
        http_workload(row, calls)
        return

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    # cache() keeps the answers of read-only tools only
    made = tool(read_only=True)(add) if row == "host-cache-hit" else tool(add)

    def pass_through(call: Any, call_next: Any) -> Any:
        return call_next(call)

    deadline = 5_000 if row == "host-timeout" else None
    middleware: list[Any] = []
    if row == "host-pass-through":
        middleware = [pass_through]
    elif row == "host-cache-hit":
        from toolnexus.policies import cache

        middleware = [cache()]
    elif row in ("host-call-limit", "host-rate-limit"):
        from toolnexus.policies import call_limit, rate_limit

        limit = call_limit(10**9, per="tool") if row == "host-call-limit" else None
        middleware = [limit or rate_limit(1e9, burst=1_000_000)]
    elif row in ("host-counter", "host-bucket"):
        sys.path.insert(0, str(HERE))
        from policies import bucket_of, counter_of

        hand = counter_of(10**9) if row == "host-counter" else bucket_of(1e9, 1_000_000)
        middleware = [hand]
    with Host(Toolkit([made]), middleware=middleware) as host:
        host.call("add", {"a": 0, "b": 1})
        if row == "host-memo-hit":
            memo: dict[tuple[str, str], Any] = {}
            for _ in range(calls):
                key = ("add", json.dumps({"a": 0, "b": 1}, sort_keys=True))
                found = memo.get(key)
                if found is None:
                    found = memo[key] = host.call("add", {"a": 0, "b": 1})
                assert not found.is_error
            return
        for index in range(calls):
            args = {"a": 0, "b": 1} if row == "host-cache-hit" else {"a": index, "b": 2}
            assert not host.call("add", args, timeout_ms=deadline).is_error


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2:])
        return
    if sys.argv[1:2] == ["--drive-http"]:
        http_drive(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    if sys.argv[1:2] == ["--workload"]:
        workload(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, metavar="SRC", help="an older checkout's src")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"of {', '.join(ROWS)}")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    trees = {"this checkout": ROOT / "src"}
    if options.baseline is not None:
        trees["baseline"] = options.baseline
    # Bytecode compiled once, up front — the workloads' own modules here too: the first
    # run would count compiling them, and its per-call figure would read low.
    for src in [*trees.values(), HERE]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    print(f"{'row':<16}{'tree':<16}{'per call (least)':>18}  all   {'x baseline':>10}")
    for row in options.rows.split(","):
        least: dict[str, int] = {}
        for label, src in trees.items():
            runs = [per_call(src, row) for _ in range(options.repeat)]
            least[label] = min(runs)
            ratio = ""
            if label == "baseline":
                ratio = f"{least['this checkout'] / least['baseline']:.3f}"
            print(f"{row:<16}{label:<16}{least[label]:>18,}  {runs}  {ratio:>10}", flush=True)


if __name__ == "__main__":
    main()
