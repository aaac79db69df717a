"""A remote MCP tool called through ``Host.call`` runs on the calling thread.

The caller would only block while a worker waited for the server: the host runs a remote
tool (its function says ``runs_on_caller``) on the caller's own thread instead — no worker
is taken, so a host with 4 workers has 200 remote calls in flight at once — while its
deadline and a caller's cancel still end the call on time and reach the server. A remote
tool behind middleware runs on a worker as before (the chain's code may not hear a token).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_client_tools
from timing import TIMEOUT, wait_until
from toolnexus import CancellationTokenSource, Host, Toolkit, ToolResult, tool
from toolnexus.mcp import HttpServer, McpClient, ServerOptions

FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
TIMEOUT_MS = int(TIMEOUT * 1000)


@pytest.fixture
def gather() -> Iterator[McpClient]:
    with McpClient(sys.executable, [FAKE, "gather"], name="fake") as client:
        yield client


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    options = ServerOptions(secret="remote-on-caller-tests-0123456789")
    with HttpServer(mcp_client_tools.toolkit, options, port=0) as server:
        server.start()
        yield server


def workers_started(host: Host) -> int:
    return len(host._pool.threads())


def cancels_seen(client: McpClient) -> int:
    counts = json.loads(client.call_tool("echo", {"text": "counts"}).output)
    return int(counts.get("notifications/cancelled", 0))


def test_a_remote_call_through_the_host_takes_no_worker(gather: McpClient) -> None:

    @tool
    def local() -> str:
        """A local tool."""
        return "local"

    with Host(Toolkit([*gather.tools(), local]), timeout_ms=TIMEOUT_MS) as host:
        result = host.call("fake_echo", {"text": "hi"})
        after_call = workers_started(host)
        # A submitted call has no caller waiting on a thread: it is written here and
        # completed by the client's reader, so no worker waits for it either.
        submitted = host.submit("fake_echo", {"text": "again"}).result(TIMEOUT)
        after_submit = workers_started(host)
        # (A local tool's submit does take one: the count sees workers.)
        assert host.submit("local").result(TIMEOUT).output == "local"
        after_local = workers_started(host)
    assert (result.output, submitted.output) == ("hi", "again")
    assert (after_call, after_submit, after_local) == (0, 0, 1)


def test_two_hundred_remote_calls_wait_together_on_a_host_of_four_workers(
    gather: McpClient,
) -> None:
    # The server answers only once all 200 wait at once: with each call on a worker, 4
    # would wait and the rest queue behind them until their deadline.
    results: list[ToolResult] = []
    with Host(Toolkit(gather.tools()), max_workers=4, timeout_ms=TIMEOUT_MS) as host:

        def one() -> None:
            results.append(host.call("fake_echo", {"text": "gather:200"}))

        callers = [threading.Thread(target=one) for _ in range(200)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(TIMEOUT)
        assert workers_started(host) == 0
    assert [r.output for r in results] == ["200 waited together"] * 200


def test_the_host_deadline_ends_a_remote_call_on_the_caller_and_reaches_the_server(
    gather: McpClient,
) -> None:
    before = cancels_seen(gather)
    with Host(Toolkit(gather.tools()), grace_ms=TIMEOUT_MS) as host:
        result = host.call("fake_echo", {"text": "never"}, timeout_ms=200)
        assert workers_started(host) == 0
    assert result.output == "timed out after 200 ms: echo on MCP server fake did not answer in time"
    assert cancels_seen(gather) == before + 1  # notifications/cancelled, sent once


def test_a_caller_cancel_ends_a_remote_call_on_the_caller_and_reaches_the_server(
    gather: McpClient,
) -> None:
    before = cancels_seen(gather)
    source = CancellationTokenSource()
    done: list[ToolResult] = []
    with Host(Toolkit(gather.tools()), cancel_grace_ms=TIMEOUT_MS) as host:
        caller = threading.Thread(
            target=lambda: done.append(
                host.call(
                    "fake_echo",
                    {"text": "never"},
                    timeout_ms=TIMEOUT_MS,
                    cancellation_token=source.token,
                )
            )
        )
        caller.start()
        # Sent once the client holds the call in flight; then cancelled from here.
        assert wait_until(lambda: _in_flight(gather) == 1)
        source.cancel()
        caller.join(TIMEOUT)
        assert workers_started(host) == 0
    assert [r.output for r in done] == ["cancelled by the caller"]
    assert cancels_seen(gather) == before + 1


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_deadline_and_cancel_reach_an_http_server_from_the_caller(
    http_server: HttpServer, version: str
) -> None:
    heard = mcp_client_tools.HEARD
    client = McpClient(url=http_server.url, name="srv", protocol_version=version)
    with client, Host(Toolkit(client.tools()), grace_ms=TIMEOUT_MS) as host:
        heard.clear()
        mcp_client_tools.STARTED.clear()
        result = host.call("srv_wait", {"seconds": TIMEOUT}, timeout_ms=300)
        assert result.output.startswith("timed out after 300 ms")
        assert heard.wait(TIMEOUT), "the server's tool never heard the deadline"

        heard.clear()
        mcp_client_tools.STARTED.clear()
        source = CancellationTokenSource()
        done: list[ToolResult] = []
        caller = threading.Thread(
            target=lambda: done.append(
                host.call("srv_wait", {"seconds": TIMEOUT}, cancellation_token=source.token)
            )
        )
        caller.start()
        assert mcp_client_tools.STARTED.wait(TIMEOUT)
        source.cancel()
        caller.join(TIMEOUT)
        assert heard.wait(TIMEOUT), "the server's tool never heard the cancel"
        assert workers_started(host) == 0
    assert done[0].is_error


def test_a_remote_tool_behind_middleware_still_runs_on_a_worker(gather: McpClient) -> None:
    seen: list[str] = []

    def note(call: object, call_next: object) -> ToolResult:
        seen.append(threading.current_thread().name)
        return call_next(call)  # type: ignore[operator, no-any-return]

    with Host(Toolkit(gather.tools()), middleware=[note]) as host:
        assert host.call("fake_echo", {"text": "hi"}).output == "hi"
    assert len(seen) == 1 and seen[0].startswith("toolnexus-host-worker")


def _in_flight(client: McpClient) -> int:
    connection = client._connection
    return 0 if connection is None else len(connection.peer.waiting())


def test_ctrl_c_in_a_remote_call_on_the_caller_cancels_it_and_goes_on(
    http_server: HttpServer,
) -> None:
    # The reporter runs on the thread reading the answer, the caller's: raising there is
    # what Ctrl-C does while the call waits. Host.call's promise: cancel, then re-raise.
    events: list[str] = []

    def interrupt(progress: float, total: float | None, message: str | None) -> None:
        raise KeyboardInterrupt

    client = McpClient(url=http_server.url, name="srv", protocol_version=MODERN)
    with (
        client,
        Host(Toolkit(client.tools()), on_event=lambda e: events.append(e.outcome)) as host,
        pytest.raises(KeyboardInterrupt),
    ):
        host.call("srv_steps", {"count": 3}, progress=interrupt)
    assert events == ["cancelled"]


def test_a_remote_call_under_the_host_deadline_arms_no_timer_of_the_clients(
    gather: McpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The context's token is cancelled at the call's deadline by the host's own timer:
    # the client, given that token and that deadline, keeps it with no second timer.
    from toolnexus import _timers

    armed: list[float] = []
    schedule = _timers._Wheel.schedule

    def counted(wheel: object, deadline: float, action: object, quick: bool) -> object:
        if threading.current_thread() is threading.main_thread():
            armed.append(deadline)
        return schedule(wheel, deadline, action, quick)  # type: ignore[arg-type]

    with Host(Toolkit(gather.tools()), timeout_ms=TIMEOUT_MS) as host:
        host.call("fake_echo", {"text": "warm"})
        monkeypatch.setattr(_timers._Wheel, "schedule", counted)
        assert host.call("fake_echo", {"text": "hi"}).output == "hi"
        monkeypatch.undo()
        assert gather.call_tool("echo", {"text": "x"}, timeout_ms=TIMEOUT_MS).output == "x"
    assert len(armed) == 1  # the host's deadline; a direct call_tool's own is not counted
