"""Host.submit: the public seam every driver uses (the MCP server, the CLI, someone's web
server). A Call is a future: result(), cancel(), add_done_callback(), await; its outcome and
the reason it was cancelled are recorded when they happen.

Timing is only an upper bound: tools that ignore their token block on an Event the test
releases at the end.
"""

from __future__ import annotations

import asyncio
import queue
import threading

import pytest

from timing import TIMEOUT
from toolnexus import (
    Answer,
    Call,
    CancellationTokenSource,
    Host,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    WaitTimeoutError,
    tool,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


careful_started = threading.Semaphore(0)


@tool
def careful(ctx: ToolContext) -> ToolResult:
    """Waits for its token, then says how it stopped — in words that do not say 'cancelled'."""
    careful_started.release()
    ctx.cancellation_token.wait(TIMEOUT)
    return ToolResult.ok("stopped after 1 step(s)")


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


def collector() -> tuple[queue.SimpleQueue[Call], object]:
    box: queue.SimpleQueue[Call] = queue.SimpleQueue()
    return box, box.put


def test_a_submitted_call_is_a_future_for_what_call_would_return() -> None:
    events = []
    box, done = collector()
    with Host(Toolkit([add]), on_event=events.append) as host:
        call = host.submit("add", {"a": 2, "b": 3})
        assert call.name == "add"
        call.add_done_callback(done)
        assert box.get(timeout=TIMEOUT) is call
        assert call.done() and call.result().output == "5"
        assert call.outcome == "ok" and call.reason is None
        unknown = host.submit("nope", {})
        assert unknown.done() and "nope" in unknown.result().output
    assert [event.outcome for event in events] == ["ok", "error"]


def test_a_callback_added_after_the_end_runs_at_once_on_the_calling_thread() -> None:
    with Host(Toolkit([add])) as host:
        call = host.submit("add", {"a": 1, "b": 1})
        call.result(timeout=TIMEOUT)
        threads: list[threading.Thread] = []
        call.add_done_callback(lambda c: threads.append(threading.current_thread()))
        assert threads == [threading.current_thread()]


def test_a_wait_that_times_out_raises_and_the_call_goes_on() -> None:
    stubborn = Stubborn()
    host = Host(Toolkit([stubborn.tool]))
    try:
        call = host.submit("stubborn", {})
        with pytest.raises(WaitTimeoutError, match="still running") as caught:
            call.result(timeout=0.01)
        assert isinstance(caught.value, TimeoutError)
        assert not call.done() and call.outcome == "pending"
        stubborn.release.set()
        assert call.result(timeout=TIMEOUT).output == "late"
    finally:
        stubborn.release.set()
        host.close()


def test_a_submitted_call_that_ignores_its_deadline_times_out_and_its_worker_is_counted() -> None:
    stubborn = Stubborn()
    host = Host(Toolkit([stubborn.tool]), timeout_ms=100, grace_ms=50, max_stuck=1)
    try:
        call = host.submit("stubborn", {})
        result = call.result(timeout=TIMEOUT)
        assert result.is_error and result.output.startswith("timed out after 100 ms")
        assert call.outcome == "timeout" and call.reason == "deadline"
        assert host.stuck_workers == 1
        assert (
            host.submit("stubborn", {}).result(timeout=TIMEOUT).output.startswith("host overloaded")
        )
        assert not call.cancel()  # the timeout stands
    finally:
        stubborn.release.set()
        host.close()


def test_a_cancelled_call_keeps_the_tools_own_words_whatever_they_say() -> None:
    source = CancellationTokenSource()
    # A long cancel grace: the tool always returns within it, so the outcome is certain.
    with Host(Toolkit([careful]), cancel_grace_ms=2_000, grace_ms=2_000) as host:
        call = host.submit("careful", {}, cancellation_token=source.token)
        assert careful_started.acquire(timeout=TIMEOUT)
        source.cancel()
        assert call.result(timeout=TIMEOUT).output == "stopped after 1 step(s)"
        assert call.outcome == "cancelled" and call.reason == "caller"


def test_cancel_stops_a_call_and_says_why() -> None:
    with Host(Toolkit([careful]), cancel_grace_ms=2_000, grace_ms=2_000) as host:
        call = host.submit("careful", {})
        assert careful_started.acquire(timeout=TIMEOUT)
        assert call.cancel()
        assert call.result(timeout=TIMEOUT).output == "stopped after 1 step(s)"
        assert call.reason == "caller"
        assert not call.cancel()  # already done


def test_a_cancelled_call_that_ignores_its_token_is_answered_by_the_host() -> None:
    stubborn = Stubborn()
    host = Host(Toolkit([stubborn.tool]))
    try:
        call = host.submit("stubborn", {})
        assert stubborn.started.wait(TIMEOUT)
        call.cancel()
        assert call.result(timeout=TIMEOUT).output == "cancelled by the caller"
        assert call.outcome == "cancelled"
    finally:
        stubborn.release.set()
        host.close()


def test_closing_the_host_cancels_with_reason_host_closed() -> None:
    stubborn = Stubborn()
    host = Host(Toolkit([stubborn.tool]))
    try:
        call = host.submit("stubborn", {})
        assert stubborn.started.wait(TIMEOUT)
        host.close()
        assert call.result(timeout=TIMEOUT).output == "cancelled: the host was closed"
        assert call.reason == "host closed"
    finally:
        stubborn.release.set()


def test_a_call_cancelled_before_a_worker_took_it_never_starts() -> None:
    stubborn = Stubborn()
    host = Host(Toolkit([stubborn.tool, add]), max_workers=1)
    try:
        blocker = host.submit("stubborn", {})
        assert stubborn.started.wait(TIMEOUT)
        queued = host.submit("add", {"a": 1, "b": 2})
        assert queued.cancel()
        assert queued.result(timeout=TIMEOUT).output == "cancelled by the caller"
        stubborn.release.set()
        assert blocker.result(timeout=TIMEOUT).output == "late"
    finally:
        stubborn.release.set()
        host.close()


def test_a_resumed_call_that_asks_again_is_unresolved() -> None:
    with Host(Toolkit([ask])) as host:
        first = host.call("ask", {})
        request = ToolResult.pending_of(first)
        assert request is not None
        call = host.submit("ask", {}, request=request, answer=Answer.accept(request))
        assert call.result(timeout=TIMEOUT).output.startswith("unresolved")


def test_a_call_is_awaitable_without_blocking_the_loop() -> None:
    stubborn = Stubborn()

    async def main(host: Host) -> tuple[str, int]:
        call = host.submit("stubborn", {})
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while not call.done():
                ticks += 1
                await asyncio.sleep(0)
                if ticks == 10:
                    stubborn.release.set()

        ticker = asyncio.ensure_future(tick())
        result = await call
        await ticker
        return result.output, ticks

    with Host(Toolkit([stubborn.tool])) as host:
        output, ticks = asyncio.run(main(host))
    assert output == "late" and ticks >= 10


def test_the_call_repr_shows_its_state() -> None:
    with Host(Toolkit([add])) as host:
        call = host.submit("add", {"a": 1, "b": 2})
        call.result(timeout=TIMEOUT)
        assert repr(call) == "<Call 'add' done ok>"


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()])
def test_acall_turns_what_an_async_tool_raises_into_an_error_result_as_call_does(exc):
    @tool
    async def explode() -> str:
        """Raises something that is not an Exception."""
        raise exc

    async def main(host: Host) -> ToolResult:
        return await host.acall("explode", {}, timeout_ms=5_000)

    with Host(Toolkit([explode])) as host:
        via_acall = asyncio.run(main(host))
        via_call = host.call("explode", {})
    for result in (via_acall, via_call):
        assert result.is_error
        assert result.output.startswith("tool 'explode' failed: ")
        assert result.output != "tool 'explode' failed: "  # never empty: the type at least
    assert type(exc).__name__ in via_acall.output or str(exc) in via_acall.output


@tool
def where() -> str:
    """Say which thread runs the tool."""
    return threading.current_thread().name


# --------------------------------------------------------------------------- the seam
# Drivers (the MCP transports) make a call unstarted with Host._prepare_call, keep it where
# a cancel finds it, then start it with call._start(inline): package-internal, but the
# seam the transports are written against, so it is pinned here.


def test_an_inline_call_runs_on_the_starting_thread_and_is_done_on_return() -> None:
    box, done = collector()
    with Host(Toolkit([where, add])) as host:
        call = host._prepare_call("where", {}, done_callback=done)
        call._start(inline=True)
        assert call.done() and call.result().output == threading.current_thread().name
        assert box.get_nowait() is call  # the callback ran before _start returned
        assert (
            host.submit("where", {}).result(timeout=TIMEOUT).output
            != threading.current_thread().name
        )  # without inline: a worker
        bad = host._prepare_call("add", {"a": "x"}, done_callback=done)
        bad._start(inline=True)
        assert bad.result().is_error and box.get_nowait() is bad  # bad arguments: called


def test_an_inline_call_past_its_deadline_is_answered_while_its_tool_still_runs() -> None:
    stubborn = Stubborn()
    box, done = collector()
    host = Host(Toolkit([stubborn.tool]), timeout_ms=100, grace_ms=50)
    finished = threading.Event()

    def start() -> None:
        host._prepare_call("stubborn", {}, done_callback=done)._start(inline=True)
        finished.set()

    runner = threading.Thread(target=start, name="test-inline")
    try:
        runner.start()
        call = box.get(timeout=TIMEOUT)  # the deadline answered it: the tool still blocks
        assert not finished.is_set() and not stubborn.release.is_set()
        assert call.outcome == "timeout" and call.reason == "deadline"
        assert call.result().output.startswith("timed out after 100 ms")
        stubborn.release.set()
        runner.join(TIMEOUT)
        assert finished.is_set() and call.result().output.startswith("timed out")
    finally:
        stubborn.release.set()
        runner.join(TIMEOUT)
        host.close()


def counting() -> tuple[list[int], Toolkit]:
    """A toolkit of one tool, ``count``, and the list it appends to on each run."""
    ran: list[int] = []

    @tool(name="count")
    def count() -> str:
        """Counts its runs."""
        ran.append(1)
        return "ran"

    return ran, Toolkit([count])


def test_an_unstarted_call_runs_nothing_until_started_and_starts_once() -> None:
    ran, kit = counting()
    box, done = collector()
    with Host(kit) as host:
        call = host._prepare_call("count", {}, done_callback=done)
        assert not call.done() and ran == [] and box.empty()
        call._start(inline=True)
        assert call.done() and call.result().output == "ran" and ran == [1]
        assert box.get_nowait() is call and box.empty()  # the callback ran once
        with pytest.raises(ValueError, match=r"call to 'count' was already started; a call"):
            call._start()
        later = host._prepare_call("count", {})
        later._start()  # on a worker
        assert later.result(timeout=TIMEOUT).output == "ran" and ran == [1, 1]


def test_two_threads_starting_one_call_at_once_run_it_once() -> None:
    ran, kit = counting()
    with Host(kit) as host:
        for _ in range(50):
            call = host._prepare_call("count", {})
            barrier = threading.Barrier(2)
            refused: list[BaseException] = []

            def start(
                call: Call = call,
                barrier: threading.Barrier = barrier,
                refused: list[BaseException] = refused,
            ) -> None:
                barrier.wait(TIMEOUT)
                try:
                    call._start(inline=True)
                except ValueError as exc:
                    refused.append(exc)

            threads = [threading.Thread(target=start) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(TIMEOUT)
            assert len(refused) == 1 and call.result(timeout=TIMEOUT).output == "ran"
        assert ran == [1] * 50


def test_an_unstarted_call_cancelled_before_its_start_never_runs() -> None:
    ran, kit = counting()
    box, done = collector()
    with Host(kit) as host:
        call = host._prepare_call("count", {}, done_callback=done)
        assert call.cancel() is True
        assert box.get_nowait() is call  # answered at the cancel, not at the start
        call._start(inline=True)  # a settled call stays as it is
        assert ran == [] and call.outcome == "cancelled" and call.reason == "caller"
        assert call.cancelled()
        assert call.result().output == "cancelled by the caller" and box.empty()


def test_an_unstarted_call_refused_at_once_is_already_done_and_called_back_once() -> None:
    box, done = collector()
    with Host(Toolkit([add])) as host:
        call = host._prepare_call("nope", {}, done_callback=done)
        assert call.done() and call.result().is_error
        assert box.get_nowait() is call
        call._start()
        assert box.empty() and call.result().is_error


def test_prepare_call_says_what_is_wrong_with_its_callback() -> None:
    with (
        Host(Toolkit([add])) as host,
        pytest.raises(TypeError, match=r"done_callback must be callable, got int"),
    ):
        host._prepare_call("add", {"a": 1, "b": 2}, done_callback=3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the handle


def test_a_call_cannot_be_made_by_hand() -> None:
    with pytest.raises(TypeError, match=r"Call has no public constructor: Host\.submit"):
        Call()
    with pytest.raises(TypeError, match=r"no public constructor"):
        Call(None, "add", 0.0)  # the machine's own arguments do not help


def test_a_call_shows_only_a_futures_face() -> None:
    with Host(Toolkit([add])) as host:
        call = host.submit("add", {"a": 1, "b": 2})
        call.result(timeout=TIMEOUT)
    public = {name for name in dir(call) if not name.startswith("_")}
    assert public == {
        "add_done_callback",
        "cancel",
        "cancelled",
        "done",
        "id",
        "name",
        "outcome",
        "reason",
        "result",
    }
    with pytest.raises(AttributeError):
        call.name = "other"  # type: ignore[misc]


def test_cancelled_says_whether_the_call_ended_cancelled() -> None:
    stubborn = Stubborn()
    host = Host(Toolkit([stubborn.tool, add]))
    try:
        running = host.submit("stubborn", {})
        assert stubborn.started.wait(TIMEOUT)
        assert not running.cancelled()  # still running
        running.cancel()
        running.result(timeout=TIMEOUT)
        assert running.cancelled()
        finished = host.submit("add", {"a": 1, "b": 2})
        finished.result(timeout=TIMEOUT)
        assert not finished.cancelled() and not finished.cancel()
    finally:
        stubborn.release.set()
        host.close()


def test_submit_keeps_only_what_a_user_needs() -> None:
    import inspect

    assert list(inspect.signature(Host.submit).parameters) == [
        "self",
        "name",
        "args",
        "timeout_ms",
        "cancellation_token",
        "progress",
        "request",
        "answer",
        "keep_ms",
    ]
