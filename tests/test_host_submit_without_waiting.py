"""Host._submit (the MCP stdio driver's entry point) starts a call without blocking a thread:
the result reaches a callback, with call()'s deadlines, cancels, stuck-worker accounting,
events and loop rule. With here=True the call runs on the caller's thread.

Timing is only an upper bound: tools that ignore their token block on an Event the test
releases at the end.
"""

from __future__ import annotations

import queue
import threading

from toolnexus import Answer, Host, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.cancellation import CancellationTokenSource

SLACK = 5.0


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def careful(ctx: ToolContext) -> ToolResult:
    """Waits for its token, then says how it stopped."""
    ctx.cancellation_token.wait(SLACK)
    return ToolResult.error("cancelled after 1 step(s)")


@tool
def ask() -> ToolResult:
    """Always asks a question."""
    return ToolResult.pending(Request("approval", "Deploy?"))


class Stubborn:
    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()

        @tool(name="stubborn")
        def stubborn() -> str:
            """Ignores its token until released."""
            self.started.set()
            self.release.wait(30)
            return "late"

        self.tool = stubborn


def results() -> tuple[queue.SimpleQueue[ToolResult], object]:
    box: queue.SimpleQueue[ToolResult] = queue.SimpleQueue()
    return box, box.put


def test_a_submitted_call_hands_its_result_and_its_event_to_the_callbacks() -> None:
    events = []
    box, done = results()
    with Host(Toolkit([add]), on_event=events.append) as host:
        assert host._submit("add", {"a": 2, "b": 3}, done) is None
        assert box.get(timeout=SLACK).output == "5"
        host._submit("nope", {}, done)
        assert "nope" in box.get(timeout=SLACK).output
    assert [event.outcome for event in events] == ["ok", "error"]


def test_a_call_run_here_runs_on_the_calling_thread() -> None:
    seen = []

    @tool
    def where() -> str:
        """Says which thread runs it."""
        seen.append(threading.current_thread())
        return "here"

    box, done = results()
    with Host(Toolkit([where])) as host:
        run_here = host._submit("where", {}, done, here=True)
        assert run_here is not None
        assert box.empty()
        run_here()
        assert box.get(timeout=SLACK).output == "here"
    assert seen == [threading.current_thread()]


def test_a_submitted_call_that_ignores_its_deadline_times_out_and_its_worker_is_counted() -> None:
    stubborn = Stubborn()
    box, done = results()
    host = Host(Toolkit([stubborn.tool]), timeout_ms=100, grace_ms=50, max_stuck=1)
    try:
        host._submit("stubborn", {}, done)
        result = box.get(timeout=SLACK)
        assert result.is_error and result.output.startswith("timed out after 100 ms")
        assert host.stuck_workers == 1
        host._submit("stubborn", {}, done)
        assert box.get(timeout=SLACK).output.startswith("host overloaded")
    finally:
        stubborn.release.set()
        host.close()


def test_a_call_run_here_that_ignores_its_deadline_is_answered_while_its_thread_is_stuck() -> None:
    stubborn = Stubborn()
    box, done = results()
    host = Host(Toolkit([stubborn.tool]), timeout_ms=100, grace_ms=50)
    try:
        run_here = host._submit("stubborn", {}, done, here=True)
        assert run_here is not None
        runner = threading.Thread(target=run_here, daemon=True)
        runner.start()
        result = box.get(timeout=SLACK)
        assert result.output.startswith("timed out after 100 ms")
        assert host.stuck_workers == 1
        stubborn.release.set()
        runner.join(SLACK)
        assert host.stuck_workers == 0
        assert box.empty()  # the late result was discarded
    finally:
        stubborn.release.set()
        host.close()


def test_a_cancelled_submitted_call_keeps_the_tools_own_words() -> None:
    box, done = results()
    source = CancellationTokenSource()
    with Host(Toolkit([careful])) as host:
        host._submit("careful", {}, done, cancellation_token=source.token)
        source.cancel()
        assert box.get(timeout=SLACK).output == "cancelled after 1 step(s)"


def test_a_cancelled_call_that_ignores_its_token_is_answered_cancelled() -> None:
    stubborn = Stubborn()
    box, done = results()
    source = CancellationTokenSource()
    host = Host(Toolkit([stubborn.tool]))
    try:
        host._submit("stubborn", {}, done, cancellation_token=source.token)
        assert stubborn.started.wait(SLACK)
        source.cancel()
        assert box.get(timeout=SLACK).output == "cancelled by the caller"
    finally:
        stubborn.release.set()
        host.close()


def test_a_resumed_call_that_asks_again_is_unresolved() -> None:
    box, done = results()
    with Host(Toolkit([ask])) as host:
        first = host.call("ask", {})
        request = ToolResult.pending_of(first)
        assert request is not None
        host._submit("ask", {}, done, request=request, answer=Answer.accept(request))
        assert box.get(timeout=SLACK).output.startswith("unresolved")
