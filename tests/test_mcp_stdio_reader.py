"""The stdio server's reader: quick tools run on it, and it is relieved when one runs long.

What the two reading threads (see ``toolnexus.mcp._server._stdio._StdioServer``) promise, each
pinned here over real pipes:

- a tool that was quick runs on the reading thread itself (no worker hand-off);
- reading never waits for an inline tool for long: while one blocks, the spare thread takes
  reading over, so a ping is answered and a deadline answered on time;
- at most one thread is held by an inline tool: while it is, other calls go to workers;
- a tool that ran long is no longer run inline;
- the answers to a burst of buffered requests are written together, in order;
- when stdin closes, ``serve_stdio`` returns even while an inline tool ignores its token,
  and the reading thread ends once that tool returns;
- a burst of calls, each cancelled on the very next line, answers every request at most
  once and every uncancelled one exactly once, and runs each tool once at most;
- through the server's internals (the windows are too narrow to hit over pipes): a cancel
  that arrives while its call is being made stops it before it starts, and only the thread
  that reads defers an answer (an inline answer ending after the spare took reading over is
  written at once).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from timing import TIMEOUT
from toolnexus import Toolkit, ToolResult, tool
from toolnexus.mcp import ServerOptions, serve_stdio
from toolnexus.mcp._server._bridge import LazyHost
from toolnexus.mcp._server._session import ServerSession
from toolnexus.mcp._server._stdio import _Input, _StdioCall, _StdioServer

READERS = ("toolnexus-mcp-reader", "toolnexus-mcp-spare")

_gate = threading.Event()  # what `blocked` waits for (set by the test that blocks it)
_entered: queue.Queue[str] = queue.Queue()  # `blocked` reports its thread when it starts


@tool
def where() -> str:
    """Say which thread runs the tool."""
    return threading.current_thread().name


@tool
def blocked() -> str:
    """Wait for the test's gate, ignoring the token; say which thread ran it."""
    name = threading.current_thread().name
    _entered.put(name)
    _gate.wait(TIMEOUT)
    return name


@tool
def slow(ms: int) -> str:
    """Take ms milliseconds (ignoring the token); say which thread ran it."""
    threading.Event().wait(ms / 1000)
    return threading.current_thread().name


_runs: list[int] = []  # `tally` appends its argument on every run


@tool
def tally(n: int, ms: int = 0) -> str:
    """Count a run, take ms milliseconds (ignoring the token); say which run it was."""
    _runs.append(n)
    threading.Event().wait(ms / 1000)
    return str(n)


toolkit = Toolkit([where, blocked, slow, tally])


class Served:
    """serve_stdio on a thread, over a pair of pipes; answers collected by id."""

    def __init__(self, **options: Any) -> None:
        read_in, write_in = os.pipe()
        read_out, write_out = os.pipe()
        self.codes: list[int] = []
        self.before = set(threading.enumerate())

        def serve() -> None:
            with open(read_in, "rb") as stdin, open(write_out, "wb") as stdout:
                self.codes.append(
                    serve_stdio(toolkit, ServerOptions(**options), stdin=stdin, stdout=stdout)
                )

        self.thread = threading.Thread(target=serve, name="test-serve")
        self.thread.start()
        self.to_server = open(write_in, "wb")  # noqa: SIM115 - closed by finish()
        self.from_server = open(read_out, "rb")  # noqa: SIM115 - closed by finish()
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.pending: dict[Any, dict[str, Any]] = {}
        self.times_answered: Counter[Any] = Counter()  # by request id
        self.collector = threading.Thread(target=self._collect, name="test-collect")
        self.collector.start()
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            }
        )
        assert self.answer("init")["result"]["protocolVersion"] == "2025-11-25"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _collect(self) -> None:
        for line in self.from_server:
            message = json.loads(line)
            self.times_answered[message.get("id")] += 1
            self.answers.put(message)

    def send(self, *messages: dict[str, Any]) -> None:
        self.to_server.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.to_server.flush()

    def call(self, rid: Any, name: str, arguments: dict[str, Any] | None = None) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments or {}},
            }
        )

    def answer(self, rid: Any) -> dict[str, Any]:
        """The answer to request ``rid`` (others that arrive first are kept)."""
        while rid not in self.pending:
            message = self.answers.get(timeout=TIMEOUT)
            self.pending[message.get("id")] = message
        return self.pending.pop(rid)

    def text(self, rid: Any) -> str:
        result = self.answer(rid)["result"]
        return str(result["content"][0]["text"])

    def finish(self) -> int:
        self.to_server.close()
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive()
        self.collector.join(TIMEOUT)
        self.from_server.close()
        return self.codes[0]


@contextlib.contextmanager
def serving(**options: Any) -> Iterator[Served]:
    """A served toolkit whose spare thread waits, free (the first call starts it: calls
    run on a worker until it is ready); the gate of `blocked` is closed until the test
    ends."""
    _gate.clear()
    served = Served(**options)
    try:
        for attempt in range(1000):
            served.call(f"warm-{attempt}", "where")
            if served.text(f"warm-{attempt}") in READERS:
                break
        yield served
    finally:
        _gate.set()
        assert served.finish() == 0


def test_a_quick_tool_runs_on_the_reading_thread() -> None:
    served = Served()
    try:
        names = []
        for rid in range(1, 1001):  # one at a time: the first starts the spare
            served.call(rid, "where")
            names.append(served.text(rid))
            if names[-1] in READERS:
                break
        assert names[0] not in READERS  # no spare yet: a worker
        assert names[-1] in READERS  # the spare is ready: on the reader itself
    finally:
        assert served.finish() == 0


def test_a_ping_is_answered_while_an_inline_tool_blocks_the_reader() -> None:
    with serving() as served:
        served.call(2, "blocked")
        ran_on = _entered.get(timeout=TIMEOUT)
        assert ran_on in READERS  # it holds a reading thread ...
        served.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert served.answer(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}  # ... not reading
        served.call(4, "where")  # the other reading thread is held: this one goes to a worker
        assert served.text(4) not in READERS
        _gate.set()
        assert served.text(2) == ran_on


def test_an_inline_tool_past_its_deadline_is_answered_on_time() -> None:
    with serving(timeout_ms=200) as served:
        served.call(2, "blocked")
        assert _entered.get(timeout=TIMEOUT) in READERS
        result = served.answer(2)["result"]  # while the tool still blocks its thread
        assert result["isError"] is True
        assert result["content"][0]["text"].startswith("timed out after 200 ms")
        assert not _gate.is_set()


def test_at_most_one_thread_is_held_by_inline_tools() -> None:
    with serving() as served:
        for rid in range(2, 6):
            served.call(rid, "blocked")
        threads = [_entered.get(timeout=TIMEOUT) for _ in range(4)]
        assert sum(name in READERS for name in threads) == 1, threads
        _gate.set()
        assert sorted(served.text(rid) for rid in range(2, 6)) == sorted(threads)


def test_a_tool_that_ran_long_goes_to_a_worker_next_time() -> None:
    with serving() as served:
        served.call(2, "slow", {"ms": 30})
        assert served.text(2) in READERS  # unknown: tried inline
        served.call(3, "slow", {"ms": 30})
        assert served.text(3) not in READERS  # it took long: a worker runs it
        for rid in range(4, 1004):  # other tools still run inline, once the old reader
            served.call(rid, "where")  # (back from the slow tool) waits as the spare
            if served.text(rid) in READERS:
                break
        else:
            raise AssertionError("no call ran inline after the slow one")


class CountingStdout(io.RawIOBase):
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.writes.append(bytes(data))
        return len(data)


def test_the_answers_to_a_burst_of_buffered_requests_are_written_together() -> None:
    pings = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % rid for rid in range(200))
    stdout = CountingStdout()
    assert serve_stdio(toolkit, stdin=io.BytesIO(pings), stdout=stdout) == 0
    answers = [json.loads(line) for line in b"".join(stdout.writes).splitlines()]
    assert [answer["id"] for answer in answers] == list(range(200))
    assert len(stdout.writes) < 10  # one write per burst, not one per answer


@pytest.mark.slow  # the server waits 1 s for the held reader
def test_stdin_closing_returns_while_an_inline_tool_ignores_its_token() -> None:
    with serving(grace_ms=100) as served:
        served.call(2, "blocked")
        held = _entered.get(timeout=TIMEOUT)
        assert held in READERS
        assert served.finish() == 0  # returned: the grace passed, the call was cancelled
        assert not _gate.is_set()
        left = [t for t in threading.enumerate() if t.name == held]
    for thread in left:  # the held thread ends once its tool returns
        thread.join(TIMEOUT)
        assert not thread.is_alive()


def driven_by_hand(
    kit: Toolkit, name: str
) -> tuple[_StdioServer, ServerSession, list[bytes], _StdioCall]:
    """A stdio server with no threads, its session initialized, its output into a list, and
    the registered entry of a call of tool ``name`` (request id 7), not started yet: the
    tests below step through its internals where a window is too narrow to hit over pipes.
    Close its host (``server._host.close()``) when done."""
    options = ServerOptions(max_inflight_bytes=1 << 20, grace_ms=0)
    session = ServerSession(kit, options)
    written: list[bytes] = []
    server = _StdioServer(
        session, LazyHost(kit, options.host), _Input(None, 1 << 20), written.append, options
    )
    server._on_line(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{'
        b'"protocolVersion":"2025-11-25","capabilities":{},'
        b'"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    line = (
        json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name}}
        ).encode()
        + b"\n"
    )
    with server._lock:
        started = server._bridge.dispatch(session.receive_line(line), None, len(line))
    [entry] = started
    assert isinstance(entry, _StdioCall)
    return server, session, written, entry


def test_a_cancel_that_arrives_while_its_call_is_being_made_stops_it_before_it_starts() -> None:
    # The window: the session started the call (a StartCall) but the host has not made it
    # yet. A cancel handled then (SIGINT's shut-down, on another thread, can) is remembered
    # and applied once the call exists: the tool never runs and nothing answers the request.
    ran: list[str] = []

    @tool(name="count")
    def count() -> str:
        """Counts its runs."""
        ran.append("ran")
        return "ran"

    kit = Toolkit([count])
    server, session, written, start = driven_by_hand(kit, "count")
    try:
        with server._lock:
            cancels = server._bridge.dispatch(
                session.receive_line(
                    b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                    b'"params":{"requestId":7}}\n'
                )
            )
        assert cancels
        server._carry_out(cancels)  # the call is not made yet: the cancel is remembered
        server._start_call(start, reader=True)
        assert ran == []
        assert not any(b'"id":7' in data for data in written)  # a cancelled request: no answer
        assert not server._bridge.busy  # the call is out of the table
    finally:
        server._host.close()


def test_an_inline_answer_that_ends_after_the_spare_took_reading_over_is_written_at_once() -> None:
    # The old reader ran a tool inline; meanwhile the spare took reading over, read what was
    # buffered and blocks on stdin. The old reader's own view of the input ("another line
    # is buffered") is stale by then: deferring its answer on it would leave the answer
    # unwritten until the client sent something more. Only the thread that reads defers.
    server, _, written, start = driven_by_hand(toolkit, "where")
    try:
        written.clear()
        server._lines.more = True  # what the old reader saw when it read the call's line
        server._roles.reading = -1  # another thread reads now (the spare took over)
        server._roles.inline_since = 1.0
        server._bridge.report(start.call_id, ToolResult.ok("done"), server._inline_ended)
        assert len(written) == 1 and b'"id":7' in written[0] and b'"done"' in written[0]
        assert not server._output.pending and not server._output.deferring
        assert server._roles.inline_since is None  # the inline run ended with its answer
    finally:
        server._host.close()


def test_a_burst_of_calls_each_cancelled_at_once_answers_each_request_at_most_once() -> None:
    # Every other call is cancelled on the line right after it, all in one write. The tool
    # takes 2 ms, so after the first calls they go to workers: each cancel lands while its
    # call is queued, running, or already answered. A cancelled request gets at most one
    # answer (none when the cancel came first), every other one exactly one, and no tool
    # runs twice.
    count = 300
    _runs.clear()
    served = Served()
    lines: list[dict[str, Any]] = []
    for n in range(count):
        lines.append(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "tally", "arguments": {"n": n, "ms": 2}},
            }
        )
        if n % 2 == 0:
            lines.append(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n}}
            )
    lines.append({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
    served.send(*lines)
    assert served.answer("ping")["result"] == {}
    for n in range(1, count, 2):
        assert served.text(n) == str(n)
    assert served.finish() == 0
    assert max(served.times_answered.values()) == 1
    answered = [n for n in served.times_answered if isinstance(n, int)]
    cancelled_but_answered = [n for n in answered if n % 2 == 0]  # it ran before its cancel
    assert len(answered) == count // 2 + len(cancelled_but_answered)
    assert len(_runs) == len(set(_runs)) <= count  # no tool ran twice
    assert set(answered) <= set(_runs)
    # and the cancels did stop calls: some cancelled while queued never ran at all
    assert set(range(0, count, 2)) - set(_runs)
