"""A remote MCP tool started where nobody waits on a thread is completed by its client's reader.

``Host.submit`` and every server's call bridge (so a gateway: ``toolnexus serve mcp.json``)
start a call and return; for a remote tool over stdio no host worker waits for it either:
the request is written on the starting thread and the client's reader thread, which reads
the server's answers, completes the call (``Call._start_io``, ``RemoteTool.start_io``).
The host's rules hold unchanged: the deadline and a cancel end the call with the same words
and tell the server; an upstream that dies ends its calls; a slow upstream holds no thread
another upstream's calls need.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from http_helpers import headers_for, modern_call
from timing import TIMEOUT, wait_until
from toolnexus import Host, Toolkit, ToolResult
from toolnexus.mcp import HttpServer, McpClient, ServerOptions

FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))
TIMEOUT_MS = int(TIMEOUT * 1000)
MODERN = "2026-07-28"


@pytest.fixture
def gather() -> Iterator[McpClient]:
    with McpClient(sys.executable, [FAKE, "gather"], name="fake") as client:
        yield client


def workers_started(host: Host) -> int:
    return len(host._pool.threads())


def seen(client: McpClient, method: str) -> int:
    counts = json.loads(client.call_tool("echo", {"text": "counts"}).output)
    return int(counts.get(method, 0))


def in_flight(client: McpClient) -> int:
    connection = client._connection
    return 0 if connection is None else len(connection.peer.waiting())


def test_two_hundred_submitted_remote_calls_wait_together_with_no_worker_and_no_thread_each(
    gather: McpClient,
) -> None:
    # The server answers only once all 200 wait at once: on workers, 4 would wait and
    # the rest would queue behind them until their deadline.
    before = seen(gather, "tools/call")
    threads_before = threading.active_count()
    with Host(Toolkit(gather.tools()), max_workers=4, timeout_ms=TIMEOUT_MS) as host:
        calls = [host.submit("fake_echo", {"text": "gather:200"}) for _ in range(200)]
        threads_during = threading.active_count()
        results = [call.result(TIMEOUT) for call in calls]
        assert workers_started(host) == 0
    assert [r.output for r in results] == ["200 waited together"] * 200
    assert threads_during <= threads_before + 2  # (the timer thread; never one per call)
    assert seen(gather, "tools/call") == before + 200 + 1  # each sent once (+ the count)


def test_the_host_deadline_ends_a_call_on_the_reader_and_reaches_the_server(
    gather: McpClient,
) -> None:
    before = seen(gather, "notifications/cancelled")
    with Host(Toolkit(gather.tools()), grace_ms=TIMEOUT_MS) as host:
        call = host.submit("fake_echo", {"text": "never"}, timeout_ms=200)
        result = call.result(TIMEOUT)
        assert workers_started(host) == 0
    assert result.output == "timed out after 200 ms: echo on MCP server fake did not answer in time"
    assert (call.outcome, call.reason) == ("timeout", "deadline")
    assert seen(gather, "notifications/cancelled") == before + 1  # told once


def test_a_cancel_ends_a_call_on_the_reader_and_reaches_the_server(gather: McpClient) -> None:
    before = seen(gather, "notifications/cancelled")
    with Host(Toolkit(gather.tools()), cancel_grace_ms=TIMEOUT_MS) as host:
        call = host.submit("fake_echo", {"text": "never"}, timeout_ms=TIMEOUT_MS)
        assert wait_until(lambda: in_flight(gather) == 1)  # written, nobody waits on it
        assert call.cancel()
        result = call.result(TIMEOUT)
        assert workers_started(host) == 0
    assert result.output == "cancelled by the caller"
    assert (call.outcome, call.reason) == ("cancelled", "caller")
    assert seen(gather, "notifications/cancelled") == before + 1
    assert in_flight(gather) == 0


def test_an_upstream_that_dies_mid_call_ends_its_calls_and_the_next_one_reconnects(
    gather: McpClient,
) -> None:
    with Host(Toolkit(gather.tools()), timeout_ms=TIMEOUT_MS) as host:
        calls = [host.submit("fake_echo", {"text": "never"}) for _ in range(3)]
        assert wait_until(lambda: in_flight(gather) == 3)
        pid = gather.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        results = [call.result(TIMEOUT) for call in calls]
        # The next call opens a new connection (a new child) and is answered.
        again = host.submit("fake_echo", {"text": "back"}).result(TIMEOUT)
        assert workers_started(host) <= 1  # (the reconnect runs where a thread can wait)
    for result in results:
        assert result.is_error
        assert "the connection to MCP server fake failed" in result.output
        assert "(the call may or may not have run)" in result.output
    assert again.output == "back"
    assert gather.pid != pid


def test_a_slow_upstream_holds_nothing_another_upstreams_calls_need() -> None:
    with (
        McpClient(sys.executable, [FAKE, "gather"], name="slow") as slow,
        McpClient(sys.executable, [FAKE, "fine"], name="quick") as quick,
        Host(Toolkit([*slow.tools(), *quick.tools()]), max_workers=2) as host,
    ):
        stuck = [host.submit("slow_echo", {"text": "never"}) for _ in range(50)]
        assert wait_until(lambda: in_flight(slow) == 50)
        answers = [host.submit("quick_echo", {"text": f"q{i}"}) for i in range(20)]
        outputs = [call.result(TIMEOUT).output for call in answers]
        assert not any(call.done() for call in stuck)  # still waiting for the slow one
        assert workers_started(host) == 0
        for call in stuck:
            call.cancel()
        assert all(call.result(TIMEOUT).output == "cancelled by the caller" for call in stuck)
    assert outputs == [f"q{i}" for i in range(20)]


def test_a_gateway_runs_remote_calls_on_the_clients_reader_not_on_host_workers(
    gather: McpClient,
) -> None:
    # The HTTP server's bridge starts each call and returns to watch its client; the
    # stdio client's reader completes it. 20 callers whose calls are answered only
    # together: none of them holds a host worker meanwhile.
    options = ServerOptions(timeout_ms=TIMEOUT_MS)
    with HttpServer(Toolkit(gather.tools(prefix="")), options, port=0) as server:
        server.start()
        results: list[ToolResult] = []
        lock = threading.Lock()

        def one() -> None:
            with McpClient(url=server.url, name="gw", protocol_version=MODERN) as client:
                result = client.call_tool("echo", {"text": "gather:20"}, timeout_ms=TIMEOUT_MS)
            with lock:
                results.append(result)

        callers = [threading.Thread(target=one) for _ in range(20)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(TIMEOUT)
        host = server.endpoint.host  # the gateway's own host
        assert workers_started(host) == 0
    assert [r.output for r in results] == ["20 waited together"] * 20


def test_a_gateway_call_past_its_deadline_answers_the_timeout_and_tells_the_upstream(
    gather: McpClient,
) -> None:
    before = seen(gather, "notifications/cancelled")
    options = ServerOptions(timeout_ms=300)
    with HttpServer(Toolkit(gather.tools(prefix="")), options, port=0) as server:
        server.start()
        connection = _post_call(server.address[1], "never")
        answer = json.loads(connection.getresponse().read())
        connection.close()
        assert workers_started(server.endpoint.host) == 0
    assert answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"] == (
        "timed out after 300 ms: echo on MCP server fake did not answer in time"
    )
    assert seen(gather, "notifications/cancelled") == before + 1


def _post_call(port: int, text: str) -> http.client.HTTPConnection:
    """A modern ``tools/call`` of ``echo`` sent on a connection of its own (not read)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    body = modern_call("echo", {"text": text})
    headers = headers_for(body, {"Accept": "application/json"})
    connection.request("POST", "/mcp", json.dumps(body), headers)
    return connection


def test_the_gateway_worker_that_writes_the_response_reads_the_upstream_answer_itself(
    gather: McpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The embedded server's worker waits for its call's messages anyway: it reads the
    # upstream's answer on its own thread, so the reader thread is never handed the call.
    from toolnexus.mcp._client._stdio import StdioTransport

    readers: list[str] = []
    handed: list[str] = []
    read_until = StdioTransport.read_until
    read_for_others = StdioTransport.read_for_others

    def counted_read(transport: StdioTransport, done: object, timeout: object) -> object:
        read = read_until(transport, done, timeout)  # type: ignore[arg-type]
        if read:
            readers.append(threading.current_thread().name)
        return read

    def counted_hand(transport: StdioTransport) -> None:
        handed.append(threading.current_thread().name)
        read_for_others(transport)

    with HttpServer(Toolkit(gather.tools(prefix="")), port=0) as server:
        server.start()
        monkeypatch.setattr(StdioTransport, "read_until", counted_read)
        monkeypatch.setattr(StdioTransport, "read_for_others", counted_hand)
        for index in range(5):
            connection = _post_call(server.address[1], f"hi {index}")
            answer = json.loads(connection.getresponse().read())
            connection.close()
            assert answer["result"]["content"][0]["text"] == f"hi {index}"
        monkeypatch.undo()
        assert workers_started(server.endpoint.host) == 0
    assert handed == []
    # (The reader thread may hold the pipe when a call comes: it watches it after 50 ms
    # without a call, and then hands that call its answer; the worker reads the rest.)
    assert readers and all(name == "toolnexus-http-worker" for name in readers)


def test_a_gateway_client_that_hangs_up_mid_call_cancels_it_upstream(gather: McpClient) -> None:
    before = seen(gather, "notifications/cancelled")
    with HttpServer(Toolkit(gather.tools(prefix="")), port=0) as server:
        server.start()
        connection = _post_call(server.address[1], "never")
        assert wait_until(lambda: in_flight(gather) == 1)  # the worker reads for it now
        connection.close()  # the client hangs up: the worker's watch sees it
        assert wait_until(lambda: in_flight(gather) == 0)
        assert workers_started(server.endpoint.host) == 0
    assert seen(gather, "notifications/cancelled") == before + 1


def test_a_done_callback_on_the_reader_may_call_the_same_server_and_wait(
    gather: McpClient,
) -> None:
    # The callback runs on the thread that read the answer (it ends the call): a
    # Host.call from there to the same server reads on, on that thread, for its answer.
    seen_by_callback: list[str] = []
    finished = threading.Event()
    with Host(Toolkit(gather.tools()), timeout_ms=TIMEOUT_MS) as host:

        def then(call: object) -> None:
            seen_by_callback.append(host.call("fake_echo", {"text": "nested"}).output)
            finished.set()

        # Answered only once both wait: the callback is registered before the answer.
        first = host.submit("fake_echo", {"text": "gather:2"})
        first.add_done_callback(then)  # type: ignore[arg-type]
        second = host.submit("fake_echo", {"text": "gather:2"})
        assert first.result(TIMEOUT).output == second.result(TIMEOUT).output
        assert finished.wait(TIMEOUT)
    assert seen_by_callback == ["nested"]


def test_a_legacy_question_parks_a_call_started_on_the_reader_and_its_answer_resumes_it() -> None:
    from toolnexus import Answer

    with (
        McpClient(sys.executable, [FAKE, "ask"], name="fake") as client,
        Host(Toolkit(client.tools()), timeout_ms=TIMEOUT_MS) as host,
    ):
        asked = host.submit("fake_echo", {"text": "ask"}).result(TIMEOUT)
        assert asked.is_pending and workers_started(host) == 0
        request = ToolResult.pending_of(asked)
        assert request is not None
        done = host.resume(
            "fake_echo", {"text": "ask"}, asked, Answer.accept(request, {"name": "Ada"})
        )
    assert done.output == "accept"  # the server heard the answer on the parked call


def test_progress_of_a_call_started_on_the_reader_reaches_its_reporter_in_order() -> None:
    tools = str(Path(__file__).with_name("mcp_client_tools.py")) + ":toolkit"
    seen: list[tuple[float, str | None]] = []
    with (
        McpClient(sys.executable, ["-m", "toolnexus", "serve", tools], name="srv") as client,
        Host(Toolkit(client.tools()), timeout_ms=TIMEOUT_MS) as host,
    ):
        result = host.submit(
            "srv_steps",
            {"count": 3},
            progress=lambda value, total, message: seen.append((value, message)),
        ).result(TIMEOUT)
        assert workers_started(host) == 0
    assert result.output == "3 steps"
    assert seen == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
