"""Timers only change state: a token's flag and Event and a call's deadline transition
happen on the timer thread, on time, however many slow callbacks fill the dispatcher; a
failed timer-thread start answers the call; the timer thread leaves after its timers go.

No test sleeps: slow callbacks block on an Event the test releases at the end, and "on
time" is shown by the token flipping while those callbacks are still blocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from timing import STALL, TIMEOUT
from toolnexus import CancellationTokenSource, Host, ToolContext, Toolkit, _timers, tool

PACKAGE_ROOT = str(Path(__import__("toolnexus").__file__).resolve().parent.parent)
SLOW = 30  # more slow callbacks than the dispatcher has threads


class Saturation:
    """Slow callbacks that block until released; ``busy`` is set once the dispatcher's
    threads are all inside one."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.busy = threading.Event()
        self.finished = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._started = 0

    def callback(self) -> None:
        with self._lock:
            self._started += 1
            if self._started >= _timers.DISPATCH_THREADS:
                self.busy.set()
        self.release.wait(60)
        self.finished.release()

    def fill(self) -> list[CancellationTokenSource]:
        """Fill the dispatcher: SLOW sources whose timers fire at once into this callback;
        returns once every dispatcher thread is inside one."""
        sources = []
        for _ in range(SLOW):
            source = CancellationTokenSource()
            source.token.register(self.callback)
            source.cancel_after(0.01)
            sources.append(source)
        assert self.busy.wait(TIMEOUT), "the slow callbacks never started"
        return sources


@pytest.fixture
def slow() -> Iterator[Saturation]:
    saturation = Saturation()
    yield saturation
    saturation.release.set()  # let the dispatcher go before the next test


def test_cancel_after_flips_the_token_while_slow_callbacks_fill_the_dispatcher(
    slow: Saturation,
) -> None:
    sources = slow.fill()

    late = CancellationTokenSource()
    heard = threading.Event()
    late.token.register(heard.set)
    late.cancel_after(0.05)
    assert late.token.wait(TIMEOUT)  # cancelled on time, on the timer thread
    assert late.is_cancellation_requested
    assert not slow.release.is_set()  # ...while every dispatcher thread is still blocked
    assert all(source.is_cancellation_requested for source in sources)

    slow.release.set()
    assert heard.wait(TIMEOUT)  # its own callback still runs, once the dispatcher is free
    for _ in range(SLOW):
        assert slow.finished.acquire(timeout=TIMEOUT)


def test_a_deadline_flips_the_token_of_another_hosts_tool_while_callbacks_are_stuck(
    slow: Saturation,
) -> None:
    @tool
    def registers_slow(ctx: ToolContext) -> str:
        """Registers a slow cancel callback and waits for its token."""
        ctx.cancellation_token.register(slow.callback)
        ctx.cancellation_token.wait(STALL)
        return "stopped"

    @tool
    def polite(ctx: ToolContext) -> str:
        """Waits for its token and says so."""
        if ctx.cancellation_token.wait(STALL):
            return "stopped by myself"
        return "never cancelled"

    kit = Toolkit([registers_slow, polite])
    a = Host(kit, max_workers=SLOW + 2, max_stuck=SLOW + 2)
    b = Host(kit, grace_ms=int(STALL * 1000))  # a grace longer than the test would wait
    try:
        calls = [a.submit("registers_slow", {}, timeout_ms=10) for _ in range(SLOW)]
        assert slow.busy.wait(TIMEOUT), "the slow callbacks never started"

        # A deadline long enough that a busy machine starts the tool before it passes
        # (else it reads "never started"), far shorter than the grace the test never waits.
        blocking = b.call("polite", {}, timeout_ms=1000)
        assert blocking.output == "timed out after 1000 ms: stopped by myself"
        assert not slow.release.is_set()

        submitted = b.submit("polite", {}, timeout_ms=50)
        result = submitted.result(timeout=TIMEOUT)
        assert result.output == "timed out after 50 ms: stopped by myself"
        assert not slow.release.is_set()  # both answered while the dispatcher was stuck
        for call in calls:  # stopped, or abandoned inside a callback it ran itself
            assert call.result(timeout=TIMEOUT).output.startswith("timed out after 10 ms")
    finally:
        slow.release.set()
        a.close(timeout=TIMEOUT)
        b.close(timeout=TIMEOUT)


def test_a_callers_cancel_after_reaches_linked_tokens_and_its_call_while_callbacks_are_stuck(
    slow: Saturation,
) -> None:
    # The caller's own timer (cancel_after on the token it passes) moves a linked source
    # and the host call listening to it on the timer thread too: neither waits for a
    # dispatcher thread stuck in somebody else's callback.
    @tool
    def polite(ctx: ToolContext) -> str:
        """Waits for its token and says so."""
        if ctx.cancellation_token.wait(STALL):
            return "stopped by myself"
        return "never cancelled"

    _held = slow.fill()  # the sources stay referenced while the test runs

    parent = CancellationTokenSource()
    child = CancellationTokenSource.linked(parent.token)
    grandchild = CancellationTokenSource.linked(child.token)
    parent.cancel_after(0.05)
    assert grandchild.token.wait(TIMEOUT)
    assert child.is_cancellation_requested and not slow.release.is_set()

    caller = CancellationTokenSource()
    with Host(
        Toolkit([polite]), grace_ms=int(STALL * 1000), cancel_grace_ms=int(STALL * 1000)
    ) as host:
        call = host.submit("polite", {}, cancellation_token=caller.token)
        caller.cancel_after(0.05)
        result = call.result(timeout=TIMEOUT)
        assert result.output == "stopped by myself"
        assert (call.outcome, call.reason) == ("cancelled", "caller")
        assert not slow.release.is_set()  # answered while the dispatcher was stuck
    slow.release.set()


_TIMER_START_FAILS = """
import threading
from toolnexus import CancellationTokenSource, Host, Toolkit, tool
from toolnexus.errors import ToolnexusError

@tool
def add(a: int, b: int) -> int:
    \"""Adds.\"""
    return a + b

real = threading.Thread.start
def failing(self):
    if self.name == "toolnexus-timer":
        raise RuntimeError("can't start new thread")
    real(self)

host = Host(Toolkit([add]))
threading.Thread.start = failing
called = host.call("add", {"a": 1, "b": 2}, timeout_ms=2000)
submitted = host.submit("add", {"a": 1, "b": 2}, timeout_ms=2000).result(10)
source = CancellationTokenSource()
try:
    source.cancel_after(30)
except ToolnexusError as exc:
    print("cancel_after:", type(exc).__name__, isinstance(exc, RuntimeError), exc)
threading.Thread.start = real
print("call:", called.is_error, called.output)
print("submit:", submitted.is_error, submitted.output)
print("source:", source.is_cancellation_requested, source)
print("after:", host.call("add", {"a": 1, "b": 2}, timeout_ms=2000).output)
host.close(timeout=10)
"""


def test_a_failed_timer_start_answers_the_call_and_cancel_after_raises_clearly() -> None:
    # A fresh interpreter: no timer thread runs yet, so the call must start one.
    done = subprocess.run(
        [sys.executable, "-c", _TIMER_START_FAILS],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
    )
    assert done.returncode == 0, done.stderr
    never = "'add' was not run: no timer thread could be started to enforce its deadline"
    assert done.stdout.splitlines() == [
        "cancel_after: TimerStartError True toolnexus: the timer thread could not be started "
        "(can't start new thread); no deadline can be enforced until a thread can start",
        f"call: True {never}",
        f"submit: True {never}",
        "source: False <CancellationTokenSource live>",
        "after: 3",
    ]


_TIMER_LEAVES = """
import threading
from toolnexus import CancellationTokenSource, Host, Toolkit, _timers, tool

# Idle threads leave after IDLE_SECONDS (2 s); a shorter wait keeps this test quick and
# changes nothing it shows: a cancelled hour-long deadline must not hold the thread.
_timers.IDLE_SECONDS = 0.2

@tool
def add(a: int, b: int) -> int:
    \"""Adds.\"""
    return a + b

host = Host(Toolkit([add]), timeout_ms=3_600_000)  # an hour-long deadline per call
print(host.call("add", {"a": 1, "b": 2}).output)
with CancellationTokenSource() as source:
    source.cancel_after(3600)  # closed at once: a cancelled hour-long timer
host.close(timeout=10)
timer = next(t for t in threading.enumerate() if t.name == "toolnexus-timer")
timer.join(30)  # it leaves one idle wait (0.2 s here) after its last timer went
print("timer alive:", timer.is_alive())
"""


def test_the_timer_thread_leaves_soon_after_close_despite_cancelled_hour_long_deadlines() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _TIMER_LEAVES],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["3", "timer alive: False"]


_LATER_TIMERS_FAIL = """
import threading
from toolnexus import Host, Request, Toolkit, ToolContext, ToolResult, tool

started = threading.Event()
release = threading.Event()

@tool
def polite(ctx: ToolContext) -> str:
    \"""Waits for its token (or the test), then says so.\"""
    started.set()
    release.wait(30)
    return "stopped by myself"

@tool
def deaf() -> str:
    \"""Waits for the test, taking no context.\"""
    started.set()
    release.wait(30)
    return "late"

@tool
def ask(ctx: ToolContext) -> ToolResult:
    \"""Asks first.\"""
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", "Go?"))
    return ToolResult.ok("went")

real = threading.Thread.start
def failing(self):
    if self.name == "toolnexus-timer":
        raise RuntimeError("can't start new thread")
    real(self)

threading.Thread.start = failing  # no timer thread runs in this fresh interpreter
host = Host(Toolkit([polite, deaf, ask]), wait_for=lambda request: {"id": request.id, "ok": True},
            question_timeout_ms=60_000)
for name in ("polite", "deaf"):
    started.clear()
    call = host.submit(name, {})
    started.wait(30)
    print(name, call.cancel(), call.result(10).output, host.stuck_workers)
print("ask", host.call("ask", {}).output)
threading.Thread.start = real
release.set()
host.close(timeout=10)
"""


def test_timers_that_cannot_start_later_in_a_call_never_raise_through_the_host() -> None:
    """The cancel grace, the check that counts a deaf tool's worker stuck and a question's
    budget each need the timer thread: when it cannot start, cancel() still answers at once
    (the worker counted stuck) and the question is refused instead of left unbounded."""
    done = subprocess.run(
        [sys.executable, "-c", _LATER_TIMERS_FAIL],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "polite True cancelled by the caller 1",
        "deaf True cancelled by the caller 2",
        "ask declined/expired: Go?",
    ]


class _CountingWake(threading.Condition):
    """The wheel's condition, counting the wake-ups it is sent; ``waiting`` is set while
    the timer thread sleeps in it."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.notified = 0
        self.waiting = threading.Event()

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        super().notify(n)

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        try:
            return super().wait(timeout)
        finally:
            self.waiting.clear()


def test_timers_of_one_length_cancelled_at_once_do_not_wake_the_timer_thread_each() -> None:
    # A task's promotion timer on every call that ends at once: armed, then cancelled
    # before it is due. The timer thread sleeps until the latest deadline, so the next
    # one (later) needs no wake-up. A deadline earlier than its sleep still wakes it.
    wheel = _timers._Wheel()
    wake = wheel._wake = _CountingWake(wheel._lock)
    length = _timers.IDLE_SECONDS * 0.9  # under the idle sleep: else no sleep till it
    for _ in range(50):
        timer = wheel.schedule(time.monotonic() + length, lambda: None, True)
        wheel.cancel(timer)
        assert wake.waiting.wait(TIMEOUT), "the timer thread never went to sleep"
    assert wake.notified <= 2  # (the first timers may find it awake, or asleep for longer)
    assert wake.waiting.wait(TIMEOUT)
    before = wake.notified
    fired = threading.Event()
    wheel.schedule(time.monotonic() + length / 100, fired.set, True)
    assert wake.notified == before + 1  # due before its sleep ends: woken for it
    assert fired.wait(TIMEOUT)
