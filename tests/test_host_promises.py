"""The host's promises under load and faults, one test per way they used to break: slow
callbacks, bursts, questions, re-entrancy, close(), fork and interpreter exit.

No test sleeps to let things settle: tools that ignore their token block on an Event the
test releases at the end, and "did not delay" is shown by an answer arriving while the
slow callback is still blocked. Bounds are generous; timings belong to benchmarks/.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest

from timing import TIMEOUT
from toolnexus import (
    Answer,
    CancellationTokenSource,
    Host,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)

PACKAGE_ROOT = str(Path(__import__("toolnexus").__file__).resolve().parent.parent)


class Stubborn:
    """A tool that ignores its token until the test releases it; counts its runs."""

    def __init__(self, name: str = "stubborn") -> None:
        self.release = threading.Event()
        self.started = threading.Semaphore(0)
        self.runs = 0
        self._lock = threading.Lock()

        @tool(name=name)
        def stubborn() -> str:
            """Ignores its token until released."""
            with self._lock:
                self.runs += 1
            self.started.release()
            self.release.wait(60)
            return "late"

        self.tool = stubborn


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def host_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("toolnexus-host")}


# --------------------------------------------------------------------------- slow callbacks


def test_a_slow_done_callback_delays_no_other_calls_deadline():
    slow, other = Stubborn("slow"), Stubborn("other")
    unblock = threading.Event()
    in_callback = threading.Event()

    def stall(call: object) -> None:
        in_callback.set()
        unblock.wait(TIMEOUT)

    host = Host(Toolkit([slow.tool, other.tool]), grace_ms=10)
    try:
        first = host.submit("slow", {}, timeout_ms=50)
        first.add_done_callback(stall)  # runs on the dispatcher when the deadline settles it
        assert in_callback.wait(TIMEOUT)
        second = host.submit("other", {}, timeout_ms=100)
        heard = threading.Event()
        second.add_done_callback(lambda call: heard.set())
        assert second.result(timeout=TIMEOUT).output.startswith("timed out after 100 ms")
        assert heard.wait(TIMEOUT)  # its own callback ran too, on another dispatcher thread
        assert not unblock.is_set()  # ... all while the first callback was still stuck
    finally:
        unblock.set()
        slow.release.set()
        other.release.set()
        host.close()


def test_a_slow_on_event_hook_delays_no_other_calls_deadline():
    slow, other = Stubborn("slow"), Stubborn("other")
    unblock = threading.Event()
    in_hook = threading.Event()

    def hook(event: object) -> None:
        if getattr(event, "name", None) == "slow":
            in_hook.set()
            unblock.wait(TIMEOUT)

    host = Host(Toolkit([slow.tool, other.tool]), grace_ms=10, on_event=hook)
    try:
        host.submit("slow", {}, timeout_ms=50)
        assert in_hook.wait(TIMEOUT)
        result = host.submit("other", {}, timeout_ms=100).result(timeout=TIMEOUT)
        assert result.output.startswith("timed out after 100 ms")
        assert not unblock.is_set()
    finally:
        unblock.set()
        slow.release.set()
        other.release.set()
        host.close()


class _Clinging:
    """One run of ``clingy``: the threads its body and its cancel callback ran on."""

    def __init__(self) -> None:
        self.in_callback = threading.Event()
        self.unblock = threading.Event()
        self.tool_thread: threading.Thread | None = None
        self.callback_thread: threading.Thread | None = None


def test_a_slow_cancel_callback_of_one_tool_does_not_let_another_call_overrun():
    runs: list[_Clinging] = []
    other = Stubborn("other")

    @tool
    def clingy(ctx: ToolContext) -> str:
        """Registers a cancel callback that takes its time, then ignores the token."""
        run = runs[-1]
        run.tool_thread = threading.current_thread()

        def stall() -> None:
            run.callback_thread = threading.current_thread()
            run.in_callback.set()
            run.unblock.wait(TIMEOUT)

        ctx.cancellation_token.register(stall)
        run.unblock.wait(TIMEOUT)
        return "late"

    host = Host(Toolkit([clingy, other.tool]), grace_ms=10)
    try:
        # What this shows needs the deadline itself to run the callback of a tool that is
        # running. On a loaded machine the worker may start after the 50 ms deadline: the
        # call then never starts, or registers its callback late (which runs it at once, on
        # the tool's own thread). Such a run shows nothing: run the call again.
        for _ in range(20):
            run = _Clinging()
            runs.append(run)
            first = host.submit("clingy", {}, timeout_ms=50)
            if "never started" in first.result(timeout=TIMEOUT).output:
                continue
            assert run.in_callback.wait(TIMEOUT)
            if run.callback_thread is not run.tool_thread:
                break  # the deadline ran the tool's callback, and it stalls there
            run.unblock.set()
        else:
            pytest.fail("in 20 runs, clingy never started before its 50 ms deadline")
        second = host.submit("other", {}, timeout_ms=100)
        assert second.result(timeout=TIMEOUT).output.startswith("timed out after 100 ms")
        assert second.outcome == "timeout"
        assert not run.unblock.is_set()  # the callback still stalls: it held no timer up
    finally:
        for each in runs:
            each.unblock.set()
        other.release.set()
        host.close()


# --------------------------------------------------------------------------- bursts


def test_a_burst_of_token_ignoring_calls_keeps_threads_bounded_and_late_calls_never_start():
    stubborn = Stubborn()
    before = threading.active_count()
    peak = [before]
    host = Host(Toolkit([stubborn.tool]), max_workers=8, max_stuck=4, grace_ms=10)
    try:
        calls = [host.submit("stubborn", {}, timeout_ms=200) for _ in range(1000)]
        for call in calls:
            call.result(timeout=TIMEOUT)
            peak.append(threading.active_count())
        outputs = [call.result().output for call in calls]
        assert all(output.startswith("timed out after 200 ms") for output in outputs)
        # At most max_workers tools started (their replacements found every queued call
        # past its deadline); the rest never started and say so.
        assert stubborn.runs <= 8 + 4
        never = [o for o in outputs if "never started" in o]
        assert len(never) >= 1000 - 12
        # Workers plus stuck ones, plus the shared timer and a few dispatcher threads.
        assert max(peak) - before <= 8 + 4 + 10
        assert len(host_threads()) <= 8 + 4
    finally:
        stubborn.release.set()
        host.close()


def test_the_default_pool_grows_with_demand_up_to_max_workers():
    release = threading.Event()
    arrived = threading.Semaphore(0)

    @tool
    def wait() -> str:
        """Waits for the test."""
        arrived.release()
        release.wait(TIMEOUT)
        return "done"

    host = Host(Toolkit([wait]), max_workers=16)
    try:
        calls = [host.submit("wait", {}) for _ in range(40)]
        for _ in range(16):
            assert arrived.acquire(timeout=TIMEOUT)  # 16 ran at once: the pool grew
        assert not arrived.acquire(timeout=0.05)  # ... and no more than max_workers
        assert len(host_threads()) == 16
        release.set()
        assert all(call.result(timeout=TIMEOUT).output == "done" for call in calls)
    finally:
        release.set()
        host.close()


def test_a_failed_thread_start_answers_the_call_with_an_error(monkeypatch):
    from toolnexus import _pool

    class NoThread(threading.Thread):
        def start(self) -> None:
            raise RuntimeError("can't start new thread")

    fake = types.SimpleNamespace(**{**vars(threading), "Thread": NoThread})
    monkeypatch.setattr(_pool, "threading", fake)
    with Host(Toolkit([add])) as host:
        result = host.call("add", {"a": 1, "b": 2})
    assert result.is_error
    assert result.output == (
        "'add' was not run: no worker thread could be started (can't start new thread)"
    )


# --------------------------------------------------------------------------- questions


def test_questions_wait_on_their_own_threads_not_the_tools_workers():
    asked = threading.Semaphore(0)
    answer = threading.Event()

    def wait_for(request: Request) -> Answer:
        asked.release()
        answer.wait(TIMEOUT)
        return Answer.accept(request)

    @tool
    def approve(ctx: ToolContext) -> ToolResult:
        """Asks first."""
        if ctx.answer is None:
            return ToolResult.pending(Request("approval", "Go?"))
        return ToolResult.ok("approved")

    host = Host(Toolkit([approve, add]), wait_for=wait_for, max_workers=1)
    try:
        questions = [host.submit("approve", {}) for _ in range(8)]
        for _ in range(8):
            assert asked.acquire(timeout=TIMEOUT)
        # Eight humans are being asked; the one tool worker is free for other calls.
        assert host.call("add", {"a": 1, "b": 2}, timeout_ms=5_000).output == "3"
        answer.set()
        assert [q.result(timeout=TIMEOUT).output for q in questions] == ["approved"] * 8
    finally:
        answer.set()
        host.close()


def test_a_question_past_its_budget_is_expired_and_the_retry_gets_a_fresh_budget():
    never = threading.Event()
    budgets: list[int | None] = []

    def wait_for(request: Request) -> Answer:
        never.wait(TIMEOUT)
        return Answer.accept(request)

    @tool
    def approve(ctx: ToolContext) -> ToolResult:
        """Asks first."""
        budgets.append(ctx.timeout_ms)
        if ctx.answer is None:
            return ToolResult.pending(Request("approval", "Go?"))
        return ToolResult.ok("approved")

    with Host(Toolkit([approve]), wait_for=wait_for, question_timeout_ms=50) as host:
        result = host.call("approve", {}, timeout_ms=5_000)
        assert result.output == "declined/expired: Go?"
        assert result.metadata is not None and result.metadata["reason"] == "expired"
        never.set()

    with pytest.warns(DeprecationWarning, match="use question_timeout_ms"):
        quick = Host(
            Toolkit([approve]), wait_for=lambda r: Answer.accept(r), wait_for_timeout_ms=5_000
        )  # the old name still works, and says so
    with quick:
        assert quick.call("approve", {}, timeout_ms=3_000).output == "approved"
    assert budgets[-2:] == [3_000, 3_000]  # the retry's budget is the tool's own again


def test_question_timeout_and_its_old_name_cannot_both_be_given():
    with pytest.raises(ValueError, match="not both"), pytest.warns(DeprecationWarning):
        Host(Toolkit([add]), question_timeout_ms=10, wait_for_timeout_ms=20)


# --------------------------------------------------------------------------- re-entrancy


def test_a_tool_calling_its_own_host_runs_inline_instead_of_deadlocking():
    holder: list[Host] = []

    @tool
    def outer(n: int) -> str:
        """Calls add through the host that runs it."""
        return holder[0].call("add", {"a": n, "b": 1}, timeout_ms=5_000).output

    host = Host(Toolkit([outer, add]), max_workers=1)  # one worker: no other to wait for
    holder.append(host)
    try:
        calls = [host.submit("outer", {"n": n}) for n in range(3)]
        assert [c.result(timeout=TIMEOUT).output for c in calls] == ["1", "2", "3"]
    finally:
        host.close()


def _openai_call(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    import json

    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def test_batches_from_a_tool_on_its_own_host_run_inline_in_order_never_deadlocking():
    """call_many, run_turn and resume_turn from a tool on a one-worker host, no timeout:
    the batch runs on the tool's own worker, one call after another, results in order."""
    holder: list[Host] = []
    order: list[str] = []

    @tool
    def step(tag: str) -> str:
        """Records the order it ran in."""
        order.append(tag)
        return tag.upper()

    @tool
    def ask(ctx: ToolContext) -> ToolResult:
        """Asks first."""
        if ctx.answer is None:
            return ToolResult.pending(Request("approval", "Go?"))
        return ToolResult.ok("approved")

    @tool
    def many() -> str:
        """call_many on the host that runs it."""
        results = holder[0].call_many([("step", {"tag": t}) for t in "abc"])
        return ",".join(r.output for r in results)

    @tool
    def turn() -> str:
        """run_turn, then resume_turn, on the host that runs it."""
        host = holder[0]
        first = host.run_turn(
            [_openai_call("c1", "step", {"tag": "d"}), _openai_call("c2", "ask", {})]
        )
        assert first.pending is not None
        done = host.resume_turn(first, Answer.accept(first.pending))
        return "|".join(str(m["content"]) for m in done.messages)

    host = Host(Toolkit([step, ask, many, turn]), max_workers=1)  # no other worker
    holder.append(host)
    try:
        assert host.submit("many", {}).result(timeout=TIMEOUT).output == "A,B,C"
        assert order == ["a", "b", "c"]
        assert host.submit("turn", {}).result(timeout=TIMEOUT).output == "D|approved"
    finally:
        host.close()


def test_async_batches_and_acall_from_a_tool_on_its_own_host_never_deadlock():
    """An async tool run by a one-worker host awaits acall_many, arun_turn and acall of a
    sync tool on that host: they run inline on its worker instead of waiting for another."""
    holder: list[Host] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool
    async def outer() -> str:
        """Awaits batches on the host that runs it."""
        host = holder[0]
        many = await host.acall_many([("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2})])
        turn = await host.arun_turn([_openai_call("c1", "add", {"a": 3, "b": 3})])
        one = await host.acall("add", {"a": 4, "b": 4})
        return ",".join([*(r.output for r in many), str(turn.messages[0]["content"]), one.output])

    host = Host(Toolkit([add, outer]), max_workers=1)
    holder.append(host)
    try:
        assert host.submit("outer", {}).result(timeout=TIMEOUT).output == "2,4,6,8"
    finally:
        host.close()


def test_an_async_tool_calling_its_own_host_synchronously_for_an_async_tool_gets_it_run():
    """Sync host.call from inside an async tool (whose loop runs on the worker) to another
    async tool: the nested call runs inline, its coroutine on a helper thread's loop (this
    thread's loop cannot be re-entered) — an answer, not 'Cannot run the event loop'."""
    holder: list[Host] = []

    @tool
    async def inner(n: int) -> str:
        """An async tool."""
        await asyncio.sleep(0)
        return f"inner {n}"

    @tool
    async def outer() -> str:
        """Calls the async inner tool through the blocking API of the host running it."""
        return holder[0].call("inner", {"n": 7}, timeout_ms=5_000).output

    host = Host(Toolkit([inner, outer]), max_workers=1)
    holder.append(host)
    try:
        assert host.submit("outer", {}).result(timeout=TIMEOUT).output == "inner 7"
        assert host.call("outer", {}).output == "inner 7"
    finally:
        host.close()


def test_an_inline_batch_gives_each_call_its_own_deadline():
    holder: list[Host] = []

    @tool
    def nap(ctx: ToolContext, wait: bool) -> str:
        """Waits for its token when told to."""
        if wait:
            ctx.cancellation_token.wait(TIMEOUT)
        return "woke"

    @tool
    def many() -> str:
        """call_many with a short budget on the host that runs it."""
        results = holder[0].call_many(
            [("nap", {"wait": True}), ("nap", {"wait": False})], timeout_ms=50
        )
        return "|".join(r.output for r in results)

    host = Host(Toolkit([nap, many]), max_workers=1)
    holder.append(host)
    try:
        out = host.submit("many", {}).result(timeout=TIMEOUT).output
        first, second = out.split("|")
        assert first.startswith("timed out after 50 ms")
        assert second == "woke"  # the second call's budget began when it began
    finally:
        host.close()


# --------------------------------------------------------------------------- lifecycle


def test_close_ends_every_thread_the_host_started():
    before = host_threads()
    hosts = []
    for _ in range(20):
        host = Host(Toolkit([add]), timeout_ms=1_000)
        calls = [host.submit("add", {"a": 1, "b": 2}) for _ in range(4)]
        assert all(call.result(timeout=TIMEOUT).output == "3" for call in calls)
        hosts.append(host)
    for host in hosts:
        host.close()
    assert host_threads() - before == set()


def test_a_forked_child_can_use_a_host_and_timers_armed_before_the_fork():
    if not hasattr(os, "fork"):
        pytest.skip("fork() is POSIX")
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {PACKAGE_ROOT!r})
        from toolnexus import CancellationTokenSource, Host, Toolkit, tool

        @tool
        def add(a: int, b: int) -> int:
            "Add."
            return a + b

        host = Host(Toolkit([add]), timeout_ms=5_000)
        assert host.call("add", {{"a": 1, "b": 2}}).output == "3"   # threads exist now
        source = CancellationTokenSource()
        source.cancel_after(0.2)
        pid = os.fork()
        if pid == 0:
            ok = host.call("add", {{"a": 2, "b": 2}}).output == "4"
            fired = source.token.wait(10)
            host.close()
            os._exit(0 if ok and fired else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "child 0", done.stderr


def test_interpreter_exit_does_not_wait_for_a_stuck_tool():
    script = textwrap.dedent(
        f"""
        import sys, threading
        sys.path.insert(0, {PACKAGE_ROOT!r})
        from toolnexus import Host, Toolkit, tool

        never = threading.Event()

        @tool
        def stuck() -> str:
            "Never returns on its own."
            never.wait()
            return "never"

        host = Host(Toolkit([stuck]))
        call = host.submit("stuck", {{}}, timeout_ms=50)
        print(call.result(timeout=10).output[:22])
        source_host = Host(Toolkit([stuck]))
        source_host.submit("stuck", {{}})   # still running at exit, never closed
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timed out after 50 ms;"
    assert "Fatal Python error" not in done.stderr


def test_at_interpreter_exit_running_calls_are_cancelled_and_a_listening_tool_hears_it():
    script = textwrap.dedent(
        f"""
        import sys, threading
        sys.path.insert(0, {PACKAGE_ROOT!r})
        from toolnexus import Host, ToolContext, Toolkit, tool

        started = threading.Event()

        @tool
        def patient(ctx: ToolContext) -> str:
            "Works until cancelled."
            started.set()
            if ctx.cancellation_token.wait(30):
                print("the tool saw its cancel", flush=True)
                return "stopped"
            return "never cancelled"

        host = Host(Toolkit([patient]), cancel_grace_ms=5000, grace_ms=5000)
        call = host.submit("patient", {{}})
        started.wait(10)
        print("main ends with the call running", flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "main ends with the call running",
        "the tool saw its cancel",
    ], done.stderr


def test_cancel_after_timers_share_the_one_timer_thread_with_host_deadlines():
    sources = [CancellationTokenSource() for _ in range(50)]
    for source in sources:
        source.cancel_after(0.01)
    stubborn = Stubborn()
    with Host(Toolkit([stubborn.tool]), grace_ms=10) as host:
        call = host.submit("stubborn", {}, timeout_ms=20)
        assert all(source.token.wait(TIMEOUT) for source in sources)
        assert call.result(timeout=TIMEOUT).output.startswith("timed out after 20 ms")
        stubborn.release.set()
    timers = [t for t in threading.enumerate() if t.name == "toolnexus-timer"]
    assert len(timers) <= 1


def test_the_default_pool_shrinks_when_idle_after_a_burst(monkeypatch):
    import toolnexus._host

    monkeypatch.setattr(toolnexus._host, "_IDLE_SECONDS", 0.05)  # the default is 10 s
    release = threading.Event()
    arrived = threading.Semaphore(0)

    @tool
    def wait() -> str:
        """Waits for the test."""
        arrived.release()
        release.wait(TIMEOUT)
        return "done"

    host = Host(Toolkit([wait]))  # the default, elastic pool
    try:
        calls = [host.submit("wait", {}) for _ in range(24)]
        for _ in range(24):
            assert arrived.acquire(timeout=TIMEOUT)  # the burst ran at once: the pool grew
        grown = host._pool.threads()
        assert len(grown) == 24
        release.set()
        assert all(call.result(timeout=TIMEOUT).output == "done" for call in calls)
        for thread in grown:  # each idle worker exits by itself; nothing closes the host
            thread.join(TIMEOUT)
        assert not any(thread.is_alive() for thread in grown)
        assert host._pool.threads() == []
        assert not host.is_closed
        assert host.call("wait", {}).output == "done"  # and grows again on demand
    finally:
        release.set()
        host.close()
