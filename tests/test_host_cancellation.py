"""A caller's cancellation reaches the tool at once and the caller gets 'cancelled' promptly;
close() cancels what is running; progress and context variables reach the tool safely."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from timing import STALL, TIMEOUT
from toolnexus import (
    CancellationToken,
    CancellationTokenSource,
    Host,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)


class Unwinding:
    """A tool that notices the cancel at once but takes until released to return."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.saw_cancel = threading.Event()
        self.release = threading.Event()

        @tool(name="unwinding")
        def unwinding(ctx: ToolContext) -> str:
            """Waits for cancellation, then unwinds slowly."""
            ctx.cancellation_token.register(self.saw_cancel.set)
            self.started.set()
            self.release.wait(30)
            return "finished unwinding"

        self.tool = unwinding


def call_in_thread(host: Host, *args, **kwargs):
    box: list[ToolResult] = []
    done = threading.Event()

    def run() -> None:
        box.append(host.call(*args, **kwargs))
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    return box, done, thread


def test_a_callers_cancel_reaches_the_tool_and_returns_cancelled_while_it_unwinds():
    unwinding = Unwinding()
    source = CancellationTokenSource()
    with Host(Toolkit([unwinding.tool])) as host:
        box, done, thread = call_in_thread(host, "unwinding", {}, cancellation_token=source.token)
        assert unwinding.started.wait(TIMEOUT)
        source.cancel()
        assert unwinding.saw_cancel.is_set()  # reached the tool's token inside cancel()
        assert done.wait(TIMEOUT)  # the caller got its answer while the tool still runs
        assert not unwinding.release.is_set()
        unwinding.release.set()
        thread.join(TIMEOUT)
    assert box[0].is_error
    assert box[0].output.startswith("cancelled")


def test_after_a_cancel_the_next_call_finds_a_worker_while_the_tool_unwinds():
    unwinding = Unwinding()

    @tool
    def quick() -> str:
        """Quick."""
        return "served"

    source = CancellationTokenSource()
    with Host(Toolkit([unwinding.tool, quick]), max_workers=1) as host:
        box, done, thread = call_in_thread(host, "unwinding", {}, cancellation_token=source.token)
        assert unwinding.started.wait(TIMEOUT)
        source.cancel()
        assert done.wait(TIMEOUT)
        # The only worker is still inside the unwinding tool; a replacement serves this.
        assert host.call("quick", {}, timeout_ms=int(TIMEOUT * 1000)).output == "served"
        unwinding.release.set()
        thread.join(TIMEOUT)
    assert box[0].output.startswith("cancelled")


def test_a_cancelled_call_is_never_reported_as_timed_out():
    unwinding = Unwinding()
    source = CancellationTokenSource()
    with Host(Toolkit([unwinding.tool]), timeout_ms=60_000) as host:
        box, done, thread = call_in_thread(host, "unwinding", {}, cancellation_token=source.token)
        assert unwinding.started.wait(TIMEOUT)
        source.cancel()
        assert done.wait(TIMEOUT)
        unwinding.release.set()
        thread.join(TIMEOUT)
    assert box[0].output.startswith("cancelled")
    assert "timed out" not in box[0].output


def test_an_already_cancelled_token_means_the_tool_never_runs():
    runs = []

    @tool
    def work() -> str:
        """Would do work."""
        runs.append(1)
        return "did work"

    source = CancellationTokenSource()
    source.cancel()
    with Host(Toolkit([work])) as host:
        result = host.call("work", {}, cancellation_token=source.token)
        aresult = asyncio.run(host.acall("work", {}, cancellation_token=source.token))
    assert result.output == "cancelled by the caller"
    assert aresult.output == "cancelled by the caller"
    assert runs == []


def test_acall_cancels_an_async_tools_task_when_the_caller_cancels():
    saw = []

    @tool
    async def sleepy(ctx: ToolContext) -> str:
        """Sleeps until cancelled."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            saw.append(ctx.is_cancelled)
            raise
        return "woke"

    async def main() -> ToolResult:
        source = CancellationTokenSource()
        with Host(Toolkit([sleepy])) as host:
            asyncio.get_running_loop().call_later(0.05, source.cancel)
            result = await host.acall("sleepy", {}, cancellation_token=source.token)
            await asyncio.sleep(0)  # let the cancelled task run its except block
            return result

    result = asyncio.run(main())
    assert result.output.startswith("cancelled")
    assert saw == [True]


def test_cancel_from_another_thread_reaches_an_async_tool_on_the_loop():
    source = CancellationTokenSource()
    started = threading.Event()

    @tool
    async def sleepy() -> str:
        """Sleeps until cancelled."""
        started.set()
        await asyncio.sleep(STALL)
        return "woke"

    def cancel_when_started() -> None:
        started.wait(TIMEOUT)
        source.cancel()

    async def main() -> ToolResult:
        with Host(Toolkit([sleepy])) as host:
            threading.Thread(target=cancel_when_started).start()
            return await host.acall("sleepy", {}, cancellation_token=source.token)

    start = time.monotonic()
    result = asyncio.run(main())
    assert time.monotonic() - start < TIMEOUT
    assert result.output.startswith("cancelled")


def test_cancelling_the_task_awaiting_acall_cancels_the_tools_token_and_propagates():
    unwinding = Unwinding()

    async def main() -> None:
        with Host(Toolkit([unwinding.tool])) as host:
            task = asyncio.ensure_future(host.acall("unwinding", {}))
            while not unwinding.started.is_set():
                await asyncio.sleep(0.001)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert unwinding.saw_cancel.is_set()
            unwinding.release.set()

    asyncio.run(main())


def test_close_cancels_running_calls_and_later_calls_get_a_clear_error():
    unwinding = Unwinding()
    host = Host(Toolkit([unwinding.tool]))
    box, done, thread = call_in_thread(host, "unwinding", {})
    assert unwinding.started.wait(TIMEOUT)
    host.close()
    assert done.wait(TIMEOUT)
    assert unwinding.saw_cancel.is_set()
    assert box[0].output == "cancelled: the host was closed"
    after = host.call("unwinding", {})
    assert after.is_error and after.output.startswith("host is closed")
    assert repr(host).endswith("closed>")
    unwinding.release.set()
    thread.join(TIMEOUT)
    host.close()  # idempotent


def test_the_context_manager_closes_the_host_and_stops_its_workers():
    @tool
    def quick() -> str:
        """Quick."""
        return "ok"

    before = set(threading.enumerate())
    with Host(Toolkit([quick]), max_workers=3) as host:
        assert host.call("quick", {}).output == "ok"
        workers = [
            t for t in set(threading.enumerate()) - before if t.name.startswith("toolnexus-host")
        ]
        assert len(workers) == 1  # the pool starts threads as calls need them
    assert host.is_closed
    for worker in workers:
        assert not worker.is_alive()  # close() waited for them


def test_a_finished_call_lets_go_of_a_long_lived_caller_token():
    tokens: list[CancellationToken] = []

    @tool
    def probe(ctx: ToolContext) -> str:
        """Keeps its call's token."""
        tokens.append(ctx.cancellation_token)
        return "ok"

    run = CancellationTokenSource()  # e.g. one token for a whole agent run
    with Host(Toolkit([probe])) as host:
        for _ in range(50):
            host.call("probe", {}, cancellation_token=run.token)
        asyncio.run(host.acall("probe", {}, cancellation_token=run.token))
    run.cancel()
    # Had a finished call stayed linked to the run's token, cancelling it would reach it.
    assert len(tokens) == 51
    assert not any(token.is_cancellation_requested for token in tokens)


def test_progress_reaches_the_reporter_and_a_raising_reporter_never_breaks_the_tool():
    @tool
    def steps(ctx: ToolContext) -> str:
        """Reports three steps."""
        for i in range(3):
            ctx.report_progress(i + 1, 3, f"step {i + 1}")
        return "done"

    seen = []

    def broken(progress: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("reporter is down")

    with Host(Toolkit([steps])) as host:
        ok = host.call("steps", {}, progress=lambda *report: seen.append(report))
        survived = host.call("steps", {}, progress=broken)
        asurvived = asyncio.run(host.acall("steps", {}, progress=broken))
    assert ok.output == "done"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert survived.output == "done" and not survived.is_error
    assert asurvived.output == "done"


def test_context_variables_reach_the_worker_thread():
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")

    @tool
    def whoami() -> str:
        """Reads a context variable."""
        return request_id.get("unset")

    with Host(Toolkit([whoami])) as host:
        request_id.set("req-42")
        assert host.call("whoami", {}).output == "req-42"

        async def main() -> str:
            request_id.set("req-43")
            return (await host.acall("whoami", {})).output

        assert asyncio.run(main()) == "req-43"


def test_nothing_a_tool_does_raises_into_the_caller():
    @tool
    def explodes() -> str:
        """Raises."""
        raise KeyError("boom")

    @tool
    async def aexplodes() -> str:
        """Raises asynchronously."""
        raise ValueError("kaboom")

    with Host(Toolkit([explodes, aexplodes])) as host:
        assert host.call("explodes", {}).is_error
        assert host.call("aexplodes", {}).output == "kaboom"
        assert asyncio.run(host.acall("aexplodes", {})).output == "kaboom"
        assert asyncio.run(host.acall("explodes", {})).is_error
        unknown = host.call("explodez", {})
        assert unknown.is_error and "unknown tool" in unknown.output
        assert host.call("explodes", "{not json").is_error


def test_a_cooperative_tool_that_stops_on_cancel_has_its_own_words_returned():
    started = threading.Event()

    @tool
    def crunch(ctx: ToolContext) -> ToolResult:
        """Counts until cancelled."""
        done = 0
        started.set()
        while not ctx.cancellation_token.wait(0.001):
            done += 1
        return ToolResult.error(f"cancelled after {done} step(s)")

    source = CancellationTokenSource()
    # Generous graces: the tool returns at once, so they only keep a loaded machine honest.
    with Host(Toolkit([crunch]), grace_ms=10_000, cancel_grace_ms=10_000) as host:
        box, done, thread = call_in_thread(host, "crunch", {}, cancellation_token=source.token)
        assert started.wait(TIMEOUT)
        source.cancel()
        assert done.wait(TIMEOUT)
        thread.join(TIMEOUT)
    assert box[0].is_error
    assert box[0].output.startswith("cancelled after ")
    assert box[0].output.endswith(" step(s)")


def test_cancel_grace_ms_is_validated_like_every_other_budget():
    with pytest.raises(ValueError, match="cancel_grace_ms"):
        Host(Toolkit(), cancel_grace_ms=-1)


# --------------------------------------------------------------------------- who gets a grace


def test_a_tool_that_never_looked_at_its_token_is_answered_at_once_on_cancel():
    started = threading.Event()
    release = threading.Event()

    @tool
    def oblivious() -> str:
        """Never looks at its token."""
        started.set()
        release.wait(STALL)
        return "finished anyway"

    source = CancellationTokenSource()
    # A grace far longer than the test's patience: an answer before the release shows the
    # host did not wait for a tool that could not hear the cancel.
    with Host(Toolkit([oblivious]), grace_ms=600_000, cancel_grace_ms=600_000) as host:
        call = host.submit("oblivious", {}, cancellation_token=source.token)
        assert started.wait(TIMEOUT)
        source.cancel()
        result = call.result(timeout=TIMEOUT)
        assert not release.is_set()
        assert result.output == "cancelled by the caller"
        assert (call.outcome, call.reason) == ("cancelled", "caller")
        # Its worker is not counted stuck before the grace would have ended.
        assert host.stuck_workers == 0
        release.set()


def test_a_tool_that_waits_on_its_token_keeps_its_own_words_after_a_cancel():
    started = threading.Event()

    @tool
    def listener(ctx: ToolContext) -> str:
        """Waits for the cancel, then says so in its own words."""
        started.set()
        ctx.cancellation_token.wait(STALL)
        return "stopped cleanly"

    source = CancellationTokenSource()
    with Host(Toolkit([listener]), grace_ms=600_000, cancel_grace_ms=600_000) as host:
        call = host.submit("listener", {}, cancellation_token=source.token)
        assert started.wait(TIMEOUT)
        source.cancel()
        assert call.result(timeout=TIMEOUT).output == "stopped cleanly"
        assert (call.outcome, call.reason) == ("cancelled", "caller")


def test_a_tool_cancelled_before_it_first_looks_at_its_token_still_keeps_its_words():
    # The grace follows the tool's signature, not timing: a tool that takes a context but
    # is cancelled before its first look (still setting up) is not taken for a deaf one.
    started = threading.Event()
    go = threading.Event()

    @tool
    def late_listener(ctx: ToolContext) -> str:
        """Sets up first, then checks its token."""
        started.set()
        go.wait(STALL)
        return "stopped before step 1" if ctx.is_cancelled else "ran step 1"

    source = CancellationTokenSource()
    with Host(Toolkit([late_listener]), grace_ms=600_000, cancel_grace_ms=600_000) as host:
        call = host.submit("late_listener", {}, cancellation_token=source.token)
        assert started.wait(TIMEOUT)
        source.cancel()
        assert not call.done()  # waiting out the grace for a tool that can still hear it
        go.set()
        assert call.result(timeout=TIMEOUT).output == "stopped before step 1"
        assert (call.outcome, call.reason) == ("cancelled", "caller")


def test_a_tool_that_registered_a_cancel_callback_gets_the_grace():
    started = threading.Event()
    heard = threading.Event()

    @tool
    def registrant(ctx: ToolContext) -> ToolResult:
        """Registers a callback, then waits for it to run."""
        ctx.cancellation_token.register(heard.set)
        started.set()
        heard.wait(STALL)
        return ToolResult.error("rolled back")

    source = CancellationTokenSource()
    with Host(Toolkit([registrant]), grace_ms=600_000, cancel_grace_ms=600_000) as host:
        call = host.submit("registrant", {}, cancellation_token=source.token)
        assert started.wait(TIMEOUT)
        source.cancel()
        assert call.result(timeout=TIMEOUT).output == "rolled back"


def test_closing_the_host_answers_a_tool_that_never_looked_at_once():
    started = threading.Event()
    release = threading.Event()

    @tool
    def oblivious() -> str:
        """Never looks at its token."""
        started.set()
        release.wait(STALL)
        return "finished anyway"

    host = Host(Toolkit([oblivious]), grace_ms=600_000, cancel_grace_ms=600_000)
    try:
        call = host.submit("oblivious", {})
        assert started.wait(TIMEOUT)
        host.close(timeout=0)
        assert call.result(timeout=TIMEOUT).output == "cancelled: the host was closed"
        assert not release.is_set()
        assert call.reason == "host closed"
    finally:
        release.set()


def test_ctrl_c_while_host_call_waits_cancels_the_call_before_the_interrupt_propagates():
    package_root = str(Path(__import__("toolnexus").__file__).resolve().parent.parent)
    script = textwrap.dedent(
        f"""
        import signal, sys, threading
        sys.path.insert(0, {package_root!r})
        from toolnexus import Host, ToolContext, Toolkit, tool

        started = threading.Event()
        tokens = []

        @tool
        def patient(ctx: ToolContext) -> str:
            "Works until cancelled."
            tokens.append(ctx.cancellation_token)
            started.set()
            ctx.cancellation_token.wait(30)
            return "stopped"

        def press_ctrl_c() -> None:
            started.wait(10)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        host = Host(Toolkit([patient]))
        threading.Thread(target=press_ctrl_c).start()
        try:
            host.call("patient", {{}})
        except KeyboardInterrupt:
            print("interrupted; the tool's token cancelled:", tokens[0].is_cancellation_requested)
        host.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted; the tool's token cancelled: True", done.stderr
