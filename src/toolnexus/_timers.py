"""Every deadline in the process: one heap, one thread, and a dispatcher for other people's code.

Owns the clock-driven threads of the package (the contract's ``cancel_after`` and the host's
deadlines share them):

- one ``toolnexus-timer`` thread sleeps until the earliest :class:`Timer` in a heap is due
  (with none armed, until the latest deadline scheduled, while it is ahead: a timer armed
  after it is due later and needs no wake-up, so timers of one length cancelled at once
  wake the thread once per their length, not once each).
  It only *changes state*: an action marked ``quick`` runs on it and must be short, take no
  lock it could wait on for long, and never call user code. A token's cancellation (flag and
  Event) and a call's deadline transition are quick, so they happen on time whatever is
  queued; only the user code they set off — a token's callbacks, a completion callback,
  ``on_event`` — is posted to the dispatcher, so a slow callback can delay nobody's deadline;
- the dispatcher is a few ``toolnexus-dispatch`` threads: a new one starts when an action is
  posted and none is idle (up to :data:`DISPATCH_THREADS`), so one slow callback holds up one
  thread, not the others' actions;
- a cancelled timer leaves the heap: cancelled entries are counted and the heap is rebuilt
  without them once they are half of it, so cancelled long timers hold no memory;
- both kinds of thread exit after :data:`IDLE_SECONDS` with nothing to do and start again on
  demand (the timer thread wakes at least every :data:`IDLE_SECONDS`, so a cancelled far
  deadline at the head of the heap does not keep it alive); a timer thread that cannot be
  started raises :class:`TimerStartError` from :func:`schedule`, and that timer is not
  armed; after ``fork()`` the child gets fresh locks and restarts the timer thread when
  timers armed before the fork are still pending.

Importing this module starts no thread.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from collections import deque

from .errors import TimerStartError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DISPATCH_THREADS", "IDLE_SECONDS", "Timer", "TimerStartError", "dispatch", "schedule"]

DISPATCH_THREADS = 8
"""The most dispatcher threads that run posted actions at once."""

IDLE_SECONDS = 2.0
"""How long the timer thread and a dispatcher thread wait for work before they exit."""


def _report(action: object) -> None:
    # logging loads only when something fails: it costs as much as the whole contract.
    from ._log import get_logger

    get_logger().exception("toolnexus: timer action %r failed", action)


class Timer:
    """One armed deadline. :meth:`cancel` it to drop it; it fires at most once."""

    __slots__ = ("action", "deadline", "quick", "seq")

    def __init__(
        self, deadline: float, action: Callable[[], object], quick: bool, seq: int
    ) -> None:
        self.deadline = deadline
        self.action: Callable[[], object] | None = action
        self.quick = quick
        self.seq = seq

    @property
    def pending(self) -> bool:
        """True until the timer fired or was cancelled."""
        return self.action is not None

    def cancel(self) -> None:
        """Drop the timer (idempotent); it will not fire and leaves the heap soon."""
        _wheel.cancel(self)

    def __repr__(self) -> str:
        return f"<Timer {'pending' if self.action is not None else 'done'}>"


class _Dispatcher:
    """Runs posted actions on a few elastic threads, never on the timer thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queue: deque[Callable[[], object]] = deque()
        self._idle = 0
        self._threads = 0
        self._serial = 0

    def post(self, action: Callable[[], object]) -> None:
        with self._lock:
            self._queue.append(action)
            if self._idle > len(self._queue) - 1:
                self._ready.notify()
                return
            if self._threads >= DISPATCH_THREADS:
                return  # every thread is busy: the next free one takes it
            self._threads += 1
            self._serial += 1
            name = f"toolnexus-dispatch-{self._serial}"
        try:
            threading.Thread(target=self._run, name=name, daemon=True).start()
        except RuntimeError:  # cannot start a thread: run it here rather than lose it
            with self._lock:
                self._threads -= 1
            self._run_one()

    def _run_one(self) -> None:
        with self._lock:
            if not self._queue:
                return
            action = self._queue.popleft()
        _call(action)

    def _run(self) -> None:
        lock = self._lock
        while True:
            with lock:
                while not self._queue:
                    self._idle += 1
                    woken = self._ready.wait(IDLE_SECONDS)
                    self._idle -= 1
                    if not woken and not self._queue:
                        self._threads -= 1
                        return
                action = self._queue.popleft()
            _call(action)

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._idle = self._threads = 0
        if self._queue:
            pending = list(self._queue)
            self._queue.clear()
            for action in pending:
                self.post(action)


def _call(action: Callable[[], object]) -> None:
    try:
        action()
    except BaseException:  # one failing action must not stop the thread others share
        _report(action)


class _Wheel:
    """The heap of timers and the thread that fires them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        # Entries are (deadline, seq, timer): tuples compare in C, so a push into a heap of
        # thousands of deadlines costs no Python-level comparison.
        self._heap: list[tuple[float, int, Timer]] = []
        self._cancelled = 0
        self._seq = 0
        self._running = False
        self._wake_at = 0.0  # when the sleeping thread wakes by itself (0: it is awake)
        self._latest = 0.0  # the latest deadline ever scheduled

    def schedule(self, deadline: float, action: Callable[[], object], quick: bool) -> Timer:
        with self._lock:
            self._seq += 1
            timer = Timer(deadline, action, quick, self._seq)
            heapq.heappush(self._heap, (deadline, self._seq, timer))
            if deadline > self._latest:
                self._latest = deadline
            if not self._running:
                try:
                    self._start_locked()
                except TimerStartError:
                    # Nothing would fire it: drop it (the caller hears why); timers armed
                    # earlier stay armed and the next schedule() tries again.
                    timer.action = None
                    self._cancelled += 1
                    raise
            elif self._wake_at and deadline < self._wake_at:
                self._wake.notify()
        return timer

    def cancel(self, timer: Timer) -> None:
        with self._lock:
            if timer.action is None:
                return
            timer.action = None
            self._cancelled += 1
            # Rebuild once half the heap is dead: amortised O(1) per cancel, and a
            # cancelled hour-long timer does not keep its action (and what it holds) alive.
            if self._cancelled > 32 and self._cancelled * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if entry[2].action is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _start_locked(self) -> None:
        self._running = True
        try:
            threading.Thread(target=self._run, name="toolnexus-timer", daemon=True).start()
        except RuntimeError as exc:
            self._running = False
            raise TimerStartError(
                f"toolnexus: the timer thread could not be started ({exc}); "
                "no deadline can be enforced until a thread can start"
            ) from exc

    def _run(self) -> None:
        lock = self._lock
        heap = self._heap
        while True:
            with lock:
                heap = self._heap
                while True:
                    while heap and heap[0][2].action is None:
                        heapq.heappop(heap)
                        self._cancelled -= 1
                    now = time.monotonic()
                    if heap and heap[0][0] <= now:
                        timer = heapq.heappop(heap)[2]
                        action, timer.action = timer.action, None
                        break
                    if heap:
                        # Capped: a head cancelled meanwhile (cancel() does not wake us, which
                        # keeps cancelling free) is pruned within IDLE_SECONDS, so a cancelled
                        # hour-long deadline does not keep the thread alive.
                        delay = min(heap[0][0] - now, IDLE_SECONDS)
                        self._wake_at = now + delay
                        if not self._wake.wait(delay) and delay == IDLE_SECONDS:
                            heap = self._heap
                            while heap and heap[0][2].action is None:
                                heapq.heappop(heap)
                                self._cancelled -= 1
                            if not heap:  # every timer went while we slept a full idle wait
                                self._running = False
                                self._wake_at = 0.0
                                return
                    else:
                        # No live timer: sleep until the latest deadline scheduled, while it
                        # is ahead. A timer scheduled after it is due later and needs no
                        # wake-up, so timers of one length cancelled before this thread
                        # ran (a task's promotion, on every call that ends at once) wake it
                        # once per their length, not once each.
                        delay = self._latest - now
                        if not 0 < delay < IDLE_SECONDS:
                            delay = IDLE_SECONDS
                        self._wake_at = now + delay
                        self._wake.wait(delay)
                        if not self._heap and delay == IDLE_SECONDS:
                            self._running = False
                            self._wake_at = 0.0
                            return
                    self._wake_at = 0.0
                    heap = self._heap
            assert action is not None
            if timer.quick:
                _call(action)
            else:
                _dispatcher.post(action)

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._running = False
        self._wake_at = 0.0
        # Timers armed before the fork are still due in the child.
        self._heap = [entry for entry in self._heap if entry[2].action is not None]
        heapq.heapify(self._heap)
        self._cancelled = 0
        if self._heap:
            with self._lock:
                self._start_locked()


_wheel = _Wheel()
_dispatcher = _Dispatcher()


def schedule(deadline: float, action: Callable[[], object], *, quick: bool = False) -> Timer:
    """Run ``action`` at ``deadline`` (a ``time.monotonic()`` value).

    ``quick`` actions run on the timer thread itself: only state changes of the package's
    own objects (no user code, no I/O, no waiting). Others are posted to the dispatcher.
    Raises :class:`TimerStartError` (a ``RuntimeError``) when the timer thread cannot be
    started; that timer is not armed, and the next call tries to start the thread again.
    """
    return _wheel.schedule(deadline, action, quick)


def dispatch(action: Callable[[], object]) -> None:
    """Run ``action`` soon on a dispatcher thread (for work a timer's state change set off)."""
    _dispatcher.post(action)


def _before_fork() -> None:
    # Hold both locks across fork(), so the child's copies of the heap and the queue are
    # never caught half-changed.
    _wheel._lock.acquire()
    _dispatcher._lock.acquire()


def _after_fork_in_parent() -> None:
    _dispatcher._lock.release()
    _wheel._lock.release()


def _after_fork_in_child() -> None:
    _dispatcher.after_fork()
    _wheel.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
