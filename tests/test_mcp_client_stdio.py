"""The stdio client transport (``mcp/_client/_stdio.py``): whichever thread reads the pipe
— a caller for its own answer, or the reader thread while calls overlap or none is in
flight — every answer reaches its caller, a cancel wakes a caller that is reading, and
the server's last words are read."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from toolnexus import CancellationTokenSource
from toolnexus.mcp import McpClient

TOOLS = str(Path(__file__).with_name("mcp_client_tools.py"))
FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))


def our_server() -> McpClient:
    return McpClient(sys.executable, ["-m", "toolnexus", "serve", f"{TOOLS}:toolkit"], name="srv")


def test_overlapping_calls_each_get_their_own_answer() -> None:
    with our_server() as client:
        client.connect()

        def calls(worker: int) -> list[str]:
            return [
                client.call_tool("echo", {"text": f"{worker}-{i}"}, timeout_ms=30_000).output
                for i in range(25)
            ]

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(calls, range(8)))
        assert answers == [[f"{worker}-{i}" for i in range(25)] for worker in range(8)]
        # And one caller alone afterwards reads its own answer again.
        assert client.call_tool("echo", {"text": "alone"}).output == "alone"


def test_a_cancel_wakes_a_caller_waiting_on_the_pipe() -> None:
    with our_server() as client:
        client.connect()
        source = CancellationTokenSource()
        # Whether the cancel comes before or during the call, the call ends cancelled.
        threading.Timer(0.2, source.cancel).start()
        result = client.call_tool("hang", {"seconds": 60}, cancellation_token=source.token)
        assert result.is_error and result.output == "cancelled by the caller"
        assert client.call_tool("echo", {"text": "next"}).output == "next"
        client.call_tool("release")  # the deaf tool returns: the server closes at once


def test_calls_from_many_threads_while_others_are_cancelled() -> None:
    with our_server() as client:
        client.connect()
        sources = [CancellationTokenSource() for _ in range(4)]

        def hang(source: CancellationTokenSource) -> str:
            return client.call_tool("hang", {"seconds": 60}, cancellation_token=source.token).output

        with ThreadPoolExecutor(8) as pool:
            hung = [pool.submit(hang, source) for source in sources]
            echoed = [pool.submit(client.call_tool, "echo", {"text": str(i)}) for i in range(20)]
            assert [future.result(30).output for future in echoed] == [str(i) for i in range(20)]
            for source in sources:
                source.cancel()
            assert [future.result(30) for future in hung] == ["cancelled by the caller"] * 4
        client.call_tool("release")  # the deaf tools return: the server closes at once


def test_an_answer_the_server_did_not_end_with_a_newline_is_still_read() -> None:
    with McpClient(sys.executable, [FAKE, "unterminated"], name="fake") as client:
        assert client.call_tool("echo", {"text": "last words"}).output == "last words"


def test_without_poll_the_reader_thread_reads_every_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows has no poll() for pipes: there the reader thread reads for every caller.
    import toolnexus.mcp._client._stdio as _client_stdio

    monkeypatch.setattr(_client_stdio, "_CAN_POLL", False)
    with our_server() as client:
        with ThreadPoolExecutor(4) as pool:
            texts = list(
                pool.map(lambda i: client.call_tool("echo", {"text": str(i)}).output, range(40))
            )
        assert texts == [str(i) for i in range(40)]
        source = CancellationTokenSource()
        threading.Timer(0.2, source.cancel).start()
        result = client.call_tool("hang", {"seconds": 60}, cancellation_token=source.token)
        assert result.output == "cancelled by the caller"
        client.call_tool("release")  # the deaf tool returns: the server closes at once


def test_a_call_interrupted_while_it_waits_is_given_up() -> None:
    def interrupt(progress: float, total: float | None, message: str | None) -> None:
        raise KeyboardInterrupt  # as Ctrl-C would, while the call waits

    with our_server() as client:
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("steps", {"count": 3}, progress=interrupt)
        # Nothing is left waiting for it (a waiter left behind would keep the reader thread
        # reading for every later call), and the next call is answered.
        connection = client._connection
        assert connection is not None and not connection.peer.calls
        assert client.call_tool("echo", {"text": "after"}).output == "after"
        assert not connection.peer.waiters


STUBBORN = '''
import signal
import threading

from toolnexus import ToolContext, Toolkit, tool

signal.signal(signal.SIGTERM, signal.SIG_IGN)  # close() must SIGKILL it, after its grace


@tool
def stall(ctx: ToolContext) -> str:
    """Says it started, then never answers and hears no cancel."""
    ctx.report_progress(1, None, "started")
    threading.Event().wait(120)
    return "late"


toolkit = Toolkit([stall])
'''


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_closing_the_client_ends_a_call_in_flight_at_once(tmp_path: Path, version: str) -> None:
    # The call's answer comes as close() begins, not after the child process has ended
    # (here: after the grace and a SIGKILL), and says that the client was closed; a second
    # close() running meanwhile (the call's own, when it found the pipe gone) used to wait
    # 5 s for the reading role the first one kept.
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    client = McpClient(
        sys.executable,
        ["-m", "toolnexus", "serve", f"{tmp_path / 'stubborn.py'}:toolkit"],
        name="srv",
        protocol_version=version,
    )
    started, answered = threading.Event(), threading.Event()
    results: list[str] = []

    def call() -> None:
        result = client.call_tool("stall", {}, progress=lambda *_: started.set())
        results.append(result.output)
        answered.set()

    caller = threading.Thread(target=call)
    caller.start()
    assert started.wait(30)
    client.close()
    assert answered.is_set()  # before close() returned: it did not wait for the child
    caller.join(30)
    assert results == [
        "stall: the client of MCP server srv was closed (the call may or may not have run)"
    ]
    assert not any(t.name.startswith("toolnexus-mcp-client-srv") for t in threading.enumerate())
