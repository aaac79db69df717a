"""The host runtime: run a model's tool calls with deadlines that hold, cancellation,
async tools, the suspension loop rule, durable resume, provider-shaped turns and events.

Everything that owns a thread or touches an event loop lives here. A :class:`Host` wraps a
:class:`~toolnexus.toolkit.Toolkit`:

- synchronous tools run on the host's own worker threads, so a deadline holds even for a
  tool that ignores its token: at the deadline the host cancels the call's token, waits a
  short grace period, and answers ``timed out after N ms`` on time; a worker still running
  after that is *abandoned* (Python cannot kill a thread) — counted, logged, replaced, its
  late result discarded — and while ``max_stuck`` of them are still running, new calls are
  refused at once with a ``host overloaded`` error;
- ``async def`` tools are awaited on the caller's loop in :meth:`Host.acall` (the deadline and
  the caller's token cancel the task) and on a private loop in a worker from :meth:`Host.call`;
- a suspension follows the loop rule: with ``wait_for`` the host asks and retries once; without
  it the pending result goes back to the caller, who can :meth:`Host.resume` later — even in
  another process, since requests and answers are plain JSON;
- :meth:`Host.run_turn` runs a provider's tool calls concurrently and returns a
  :class:`TurnResult` whose messages are balanced — one per call, in call order — or empty
  while a call still waits on a question.

Inside, time is a ``time.monotonic()`` deadline computed once per call; ``timeout_ms`` exists
only at the edges (the arguments and the tool's :class:`~toolnexus.context.ToolContext`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from . import loop_rule
from ._frozen import sealed
from .binding import Accepted, AnswerStore, Binder, Refusal
from .cancellation import CancellationToken, CancellationTokenSource
from .context import ProgressReporter, ToolContext
from .errors import WireFormatError
from .result import ToolResult
from .suspension import Answer, Request
from .turns import Style, TurnCall, TurnResult, parse_calls

if TYPE_CHECKING:
    from .toolkit import Toolkit
    from .tools import Tool

__all__ = ["Host", "ToolEvent", "TurnCall", "TurnResult"]

_log = logging.getLogger("toolnexus")

Outcome = Literal["ok", "error", "pending", "timeout", "cancelled"]
WaitFor = Callable[[Request], Answer | Awaitable[Answer]]

_DEFAULT_GRACE_MS = 100
# How long a caller's cancel waits for the tool to return its own cancelled result: long
# enough for a tool that polls its token, short enough that a tool ignoring it still
# leaves the caller with a result within the 5 ms the host promises.
_DEFAULT_CANCEL_GRACE_MS = 3
_DEFAULT_WORKERS = 8
_DEFAULT_MAX_STUCK = 4


# --------------------------------------------------------------------------- events


@sealed
@dataclass(frozen=True, slots=True)
class ToolEvent:
    """What the ``on_event`` hook learns about one finished call.

    Attributes:
        name: the tool name the call asked for (as the model spelled it).
        duration_ms: wall time from the call's start to its result, in milliseconds
            (for the loop rule, including the wait for the answer).
        outcome: ``"ok"``, ``"error"``, ``"pending"`` (the call suspended on a question —
            never reported as an error), ``"timeout"`` (the deadline passed) or
            ``"cancelled"`` (the caller cancelled, or the host was closed).
        request_id: the id of the request the call last suspended on, else ``None``.

    Example::

        events = []
        host = Host(toolkit, on_event=events.append)
        host.call("search", {"q": "x"})
        assert events[0].outcome == "ok"
    """

    name: str
    duration_ms: float
    outcome: Outcome
    request_id: str | None = None


# --------------------------------------------------------------------------- worker pool


class _Signal:
    """A wake-up call for one waiting thread: cheaper than ``threading.Event`` (a bare lock,
    no Condition, no waiter list), which matters on the per-call fast path.

    ``set()`` wakes the current or next ``wait()``; several ``set()`` calls before a
    ``wait()`` wake it once. Waiters re-check their own state after waking.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        # try/except, not contextlib.suppress: this runs once per call on the fast path.
        try:  # noqa: SIM105
            self._lock.release()
        except RuntimeError:  # already set and not consumed yet
            pass

    def wait(self, timeout: float | None) -> bool:
        if timeout is None:
            return self._lock.acquire()
        return self._lock.acquire(timeout=min(max(timeout, 0.0), threading.TIMEOUT_MAX))


_QUEUED, _RUNNING, _DONE, _ABANDONED = 0, 1, 2, 3


def _nothing() -> None:
    """Stands in for a callback that must no longer run (and must not keep its owner)."""


class _Job:
    """One unit of work for a worker thread, with its own result slot.

    Each call gets a fresh job, so a late result lands in a slot nobody reads any more
    and can never leak into a later call.
    """

    __slots__ = ("abandoned_at", "context", "fn", "label", "notify", "params", "quietly",
                 "state", "value", "worker")

    def __init__(
        self, fn: Callable[..., Any], params: tuple[Any, ...], notify: Callable[[], object],
        label: str,
    ) -> None:
        self.fn = fn
        self.params = params
        self.notify = notify
        self.label = label
        self.context = contextvars.copy_context()
        self.state = _QUEUED
        self.value: Any = None
        self.worker: threading.Thread | None = None
        self.abandoned_at = 0.0
        self.quietly = False  # abandoned because the caller cancelled: unwinding is normal


class _Scope:
    """One call's cancellation: a fresh source whose token the tool sees.

    The host cancels it at the deadline; the caller's token and :meth:`Host.close` cancel it
    through :meth:`cancel`, which also wakes the waiting caller. Only a caller's token that
    can be cancelled costs a registration, and it is removed when the call ends, so a
    long-lived token does not pile up callbacks.
    """

    __slots__ = ("registration", "source", "token", "wake")

    def __init__(self, token: CancellationToken, wake: Callable[[], object]) -> None:
        self.source = CancellationTokenSource()
        self.token = self.source.token
        self.wake = wake
        self.registration = token.register(self.cancel) if token.can_be_cancelled else None

    def cancel(self) -> None:
        # Cancel first, then wake: the woken caller must already see the cancellation.
        self.source.cancel()
        self.wake()

    def close(self) -> None:
        if self.registration is not None:
            self.registration.unregister()
            # Unlink: the registration holds self.cancel, a reference cycle the garbage
            # collector would otherwise have to find (one per call on the fast path).
            self.registration = None
        self.source.close()
        self.wake = _nothing  # the waiter (a _Flight, for _submit) points back at us


class _Pool:
    """Worker threads fed from one queue; abandoned workers are replaced and counted."""

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self.lock = threading.Lock()
        self.queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.threads: set[threading.Thread] = set()
        self.busy = 0
        self.stuck = 0
        self.missing = 0  # abandoned workers not replaced yet
        self.started = False
        self.closed = False
        self._serial = 0

    def submit(self, job: _Job) -> None:
        if not self.started or self.missing:
            self._start()
        self.queue.put(job)

    def _start(self) -> None:
        with self.lock:
            if self.closed:
                return
            if not self.started:
                self.started = True
                for _ in range(self.size):
                    self._spawn_locked()
            self._replenish_locked()

    def _replenish_locked(self) -> None:
        while self.missing and not self.closed:
            self.missing -= 1
            self._spawn_locked()

    def _spawn_locked(self) -> None:
        self._serial += 1
        thread = threading.Thread(
            target=self._work, name=f"{self.name}-worker-{self._serial}", daemon=True
        )
        self.threads.add(thread)
        thread.start()

    def _work(self) -> None:
        me = threading.current_thread()
        get = self.queue.get
        lock = self.lock
        while True:
            job = get()
            if job is None:
                return
            with lock:
                if job.state != _QUEUED:
                    continue  # its caller gave up while it was queued
                job.state = _RUNNING
                job.worker = me
                self.busy += 1
            try:
                value = job.context.run(job.fn, *job.params)
            except BaseException as exc:  # handed to the caller, who reports it as an error
                value = exc
            with lock:
                if job.state == _RUNNING:
                    job.state = _DONE
                    job.value = value
                    self.busy -= 1
                    late = rejoin = False
                else:
                    self.stuck -= 1
                    late = True
                    # Take back our own place if no replacement has taken it yet.
                    rejoin = self.missing > 0 and not self.closed
                    if rejoin:
                        self.missing -= 1
                        self.threads.add(me)
            if late:
                _log.log(
                    logging.DEBUG if job.quietly else logging.WARNING,
                    "toolnexus host: abandoned call %r returned %.0f ms after it was abandoned; "
                    "its result was discarded%s",
                    job.label, (time.monotonic() - job.abandoned_at) * 1000,
                    "" if rejoin else " and its worker retired",
                )
                if not rejoin:
                    return  # a replacement took this worker's place when it was abandoned
                continue
            job.notify()

    def claim(self, job: _Job) -> bool:
        """Reserve a worker's place for ``job`` to run on the calling thread (see
        :meth:`run_claimed`); False when every place is taken (then :meth:`submit` it)."""
        with self.lock:
            if self.closed or self.busy >= self.size or job.state != _QUEUED:
                return False
            job.state = _RUNNING
            job.worker = threading.current_thread()
            self.busy += 1
        return True

    def run_claimed(self, job: _Job) -> None:
        """Run a claimed job here, as a worker would. The calling thread is not one of
        ours: abandoning the job counts it stuck, but no replacement is needed."""
        lock = self.lock
        value: Any = None
        if job.state == _RUNNING:  # else abandoned before it could start
            try:
                value = job.context.run(job.fn, *job.params)
            except BaseException as exc:  # handed to the caller, who reports it as an error
                value = exc
        with lock:
            if job.state == _RUNNING:
                job.state = _DONE
                job.value = value
                self.busy -= 1
                late = False
            else:
                self.stuck -= 1
                late = True
        if late:
            _log.log(
                logging.DEBUG if job.quietly else logging.WARNING,
                "toolnexus host: abandoned call %r returned %.0f ms after it was abandoned; "
                "its result was discarded",
                job.label, (time.monotonic() - job.abandoned_at) * 1000,
            )
            return
        job.notify()

    def abandon(self, job: _Job, *, quietly: bool = False) -> int:
        """Give up on ``job``; return the state it was in (``_DONE``: use ``job.value``).

        A job still queued (``_QUEUED``) is dropped; a running one (``_RUNNING``) leaves its
        worker stuck: the worker is counted until the job returns, and a fresh worker takes
        its place — at once when calls are queued, else at the next submit, which keeps
        thread start-up off the path of the caller giving up. A worker whose place is still
        free when its job returns takes it back. ``quietly`` (the caller cancelled, so the
        tool is probably unwinding) logs its late return at debug level only.
        """
        with self.lock:
            previous = job.state
            if previous == _DONE:
                return previous
            running = previous == _RUNNING
            job.state = _ABANDONED
            job.quietly = quietly
            job.abandoned_at = time.monotonic()
            if running:
                self.busy -= 1
                self.stuck += 1
                if job.worker in self.threads:  # else a caller's thread ran it (run_claimed)
                    self.missing += 1
                    self.threads.discard(job.worker)
                    if self.queue.qsize():
                        self._replenish_locked()  # calls are waiting for a worker: now
        return previous

    def close(self, timeout: float) -> None:
        with self.lock:
            self.closed = True
            threads = list(self.threads)
            self.threads.clear()
        for _ in threads:
            self.queue.put(None)
        end = time.monotonic() + timeout
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, end - time.monotonic()))


_RUN, _GRACE, _CANCELLING = 0, 1, 2  # a started call's phase, as the watchdog sees it


class _Flight:
    """One call started with :meth:`Host._submit`: nobody blocks on it; its job settles it
    from the worker, or the watchdog does at its deadline or after a cancel."""

    __slots__ = ("answer", "args", "budget", "check_at", "deadline", "finished", "host", "job",
                 "name", "on_done", "phase", "reporter", "round", "scope", "start", "tool")

    def __init__(
        self, host: Host, name: str, start: float, tool: Tool, budget: int | None,
        answer: Answer | None, reporter: _Progress | None,
        on_done: Callable[[ToolResult], object],
    ) -> None:
        self.host = host
        self.name = name
        self.start = start
        self.tool = tool
        self.budget = budget
        self.answer = answer
        self.reporter = reporter
        self.on_done = on_done
        self.deadline = None if budget is None else start + budget / 1000
        self.check_at = 0.0
        self.phase = _RUN
        self.finished = False  # the worker returned and is settling the call
        self.job: _Job = _Job(tool, (), self.worker_done, tool.name)
        self.scope: _Scope | None = None
        self.args: Any = None
        self.round = 0  # the answer's round when this is a resume (0: a fresh call)

    def worker_done(self) -> None:
        """The job returned (on its worker, the pool saw it finish): settle the call."""
        host = self.host
        watchdog = host._watchdog
        with watchdog.lock:
            self.finished = True
            phase = self.phase
            watchdog.flights.pop(self, None)
        scope = self.scope
        assert scope is not None
        value = self.job.value
        if phase == _GRACE:
            self.settle(_timeout_result(self.budget, value, self.tool.name, host._grace_ms),
                        "timeout")
        elif scope.token.is_cancellation_requested:
            self.settle(_cancelled_result(value, host._cancel_reason()), "cancelled")
        else:
            if value.__class__ is not ToolResult:
                value = _as_result(self.tool, value)
            self.settle(value, _outcome_of(value))

    def cancelled(self) -> None:
        """The caller's token or :meth:`Host.close` cancelled the call (any thread)."""
        watchdog = self.host._watchdog
        with watchdog.lock:
            if self.finished or self.phase != _RUN:
                return  # already settling, or past its deadline: the timeout stands
            self.phase = _CANCELLING
            # A cooperative tool is usually returning already: a moment's wait lets its
            # own words ("cancelled after 3 step(s)") reach the caller.
            self.check_at = time.monotonic() + min(self.host._grace, self.host._cancel_grace)
            if self.scope is not None:  # else start() arms it once the call is set up
                watchdog.arm_locked(self, self.check_at)

    def settle(self, result: ToolResult, outcome: Outcome) -> None:
        """Close the call's scope, apply the loop rule's last step, report, hand back."""
        host = self.host
        if self.scope is not None:
            host._close(self.scope)
        if self.reporter is not None:
            self.reporter.live = False
        request_id = None
        if outcome == "pending":
            request = ToolResult.pending_of(result)
            assert request is not None
            request_id = request.id
            # Loop rule 2: hand the question back bound to this call (or unresolved).
            result = host._binder.hand_back(self.name, self.args, result, self.round,
                                            host._max_rounds)
            outcome = _outcome_of(result)
        if host._on_event is not None:
            host._emit(self.name, self.start, outcome, request_id)
        # The job no longer reports to us (settled, or abandoned: a late return does not
        # notify); dropping its bound worker_done breaks the flight <-> job cycle, so the
        # call's objects are freed at once instead of by the garbage collector.
        self.job.notify = _nothing
        try:
            self.on_done(result)
        except Exception:
            _log.exception("toolnexus host: the completion callback for %r failed", self.name)


class _Watchdog:
    """Enforces the deadlines and cancel waits of :meth:`Host._submit` calls on one daemon
    thread per host, so no thread blocks per call.

    Calls that finish before their deadline cost a dict insertion and removal; the thread
    is only woken when a new check falls before its next planned wake-up (idle, it plans
    one ``period`` ahead, so calls with the host's default budget never wake it early).
    """

    def __init__(self, period: float) -> None:
        self.lock = threading.Lock()
        self._cond = threading.Condition(self.lock)
        self.flights: dict[_Flight, None] = {}
        self._thread: threading.Thread | None = None
        self._wake_at = 0.0
        self._period = period

    def arm_locked(self, flight: _Flight, at: float) -> None:
        """Check ``flight`` at ``at`` (the lock is held)."""
        flight.check_at = at
        self.flights[flight] = None
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="toolnexus-host-watchdog", daemon=True
            )
            self._thread.start()
        elif at < self._wake_at:
            self._cond.notify()

    def start(self, flight: _Flight, scope: _Scope) -> None:
        """The call is set up: arm its deadline, or the cancel that came meanwhile."""
        with self.lock:
            flight.scope = scope
            if flight.phase == _CANCELLING:
                self.arm_locked(flight, flight.check_at)
            elif flight.deadline is not None:
                self.arm_locked(flight, flight.deadline)

    def _run(self) -> None:
        while True:
            due: list[tuple[_Flight, int]] = []
            with self.lock:
                while not due:
                    now = time.monotonic()
                    wake_at = now + self._period
                    returned: list[_Flight] = []
                    for flight in self.flights:
                        if flight.check_at <= now:
                            if flight.phase == _RUN and flight.job.state == _DONE:
                                returned.append(flight)  # its worker is settling it
                            else:
                                due.append((flight, flight.phase))
                        elif flight.check_at < wake_at:
                            wake_at = flight.check_at
                    for flight in returned:
                        del self.flights[flight]
                    if due:
                        break
                    self._wake_at = wake_at
                    self._cond.wait(min(wake_at - now, threading.TIMEOUT_MAX))
                self._wake_at = 0.0  # busy: we rescan before waiting, so arms need not notify
                for flight, phase in due:
                    if phase == _RUN:  # the deadline: the grace period starts now
                        flight.phase = _GRACE
                        assert flight.deadline is not None
                        flight.check_at = flight.deadline + flight.host._grace
                    else:
                        del self.flights[flight]
            for flight, phase in due:
                try:
                    flight.host._expire(flight, phase)
                except Exception:
                    _log.exception("toolnexus host: the watchdog failed on %r", flight.name)


# --------------------------------------------------------------------------- async helpers


class _AsyncSignal:
    """The asyncio twin of the thread signal: ``set()`` wakes the next or current ``wait``."""

    __slots__ = ("_flag", "_future", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._future: asyncio.Future[None] | None = None
        self._flag = False

    def set(self, *_: object) -> None:
        future = self._future
        if future is not None:
            if not future.done():
                future.set_result(None)
        else:
            self._flag = True

    def set_threadsafe(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self._loop.call_soon_threadsafe(self.set)

    async def wait(self, timeout: float | None) -> None:
        if self._flag:
            self._flag = False
            return
        future = self._loop.create_future()
        self._future = future
        timer = None if timeout is None else self._loop.call_later(
            max(0.0, timeout), _resolve, future
        )
        try:
            await future
        finally:
            self._future = None
            if timer is not None:
                timer.cancel()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _swallow(task: asyncio.Future[Any]) -> None:
    # Retrieve the outcome of an abandoned task so asyncio does not log it as lost.
    if not task.cancelled():
        task.exception()


async def _drive(awaitable: Awaitable[Any], token: CancellationToken) -> Any:
    """Await ``awaitable`` as a task that ``token`` cancels; ``None`` when cancelled."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)

    def cancel() -> None:
        with contextlib.suppress(RuntimeError):  # the loop already finished
            loop.call_soon_threadsafe(task.cancel)

    registration = token.register(cancel)
    try:
        return await task
    except asyncio.CancelledError:
        if token.is_cancellation_requested:
            return None
        raise
    finally:
        registration.unregister()


def _run_private(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on a fresh event loop in this thread, leaving the thread's loop policy
    alone (``asyncio.run`` would reset it), and clean up whatever the coroutine left."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _run_blocking(coro_fn: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine to completion from synchronous code.

    In a thread without a running loop it runs right here on a private loop; inside a
    running loop (a sync API called from async code) it runs on a helper thread so the
    caller's loop is not re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_private(coro_fn())
    box: list[Any] = []
    context = contextvars.copy_context()  # the caller's context variables come along

    def target() -> None:
        try:
            box.append((True, context.run(_run_private, coro_fn())))
        except BaseException as exc:
            box.append((False, exc))

    helper = threading.Thread(target=target, name="toolnexus-host-batch", daemon=True)
    helper.start()
    helper.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value


# --------------------------------------------------------------------------- small helpers


def _check_ms(name: str, value: object, *, allow_none: bool = True) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        expected = "None or an int >= 0" if allow_none else "an int >= 0"
        raise ValueError(f"{name} must be {expected} (milliseconds), got {value!r}")
    return value


def _check_token(token: object) -> CancellationToken:
    if token is None:
        return CancellationToken.NONE
    if not isinstance(token, CancellationToken):
        raise TypeError(
            "cancellation_token must be a CancellationToken (pass source.token, not the "
            f"source), got {type(token).__name__}"
        )
    return token


class _Progress:
    """Wraps a caller's progress reporter: a failing reporter never breaks the tool, and
    reports from a call that already returned (an abandoned tool) are dropped."""

    __slots__ = ("live", "name", "reporter")

    def __init__(self, reporter: ProgressReporter, name: str) -> None:
        self.reporter = reporter
        self.name = name
        self.live = True

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.live:
            return
        try:
            self.reporter(progress, total, message)
        except Exception:
            _log.exception("toolnexus host: progress reporter for %r failed", self.name)


def _as_result(tool: Tool, value: object) -> ToolResult:
    """What a job produced that is not a plain ToolResult: a subclass, or the exception
    that escaped the tool's own wrapper (a bug there must still not reach the caller)."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, BaseException):
        _log.error("toolnexus host: tool %r raised through its wrapper", tool.name,
                   exc_info=value)
        return ToolResult.error(f"tool '{tool.name}' failed: {value or type(value).__name__}")
    return ToolResult.error(f"tool '{tool.name}' returned {type(value).__name__}, not a ToolResult")


def _outcome_of(result: ToolResult) -> Outcome:
    if result.is_pending:
        return "pending"
    return "error" if result.is_error else "ok"


def _cancelled_result(value: object, reason: str) -> ToolResult:
    # The tool's own words are kept when they already say it stopped because of the cancel.
    if isinstance(value, ToolResult) and value.is_error and value.output.startswith("cancelled"):
        return value
    return ToolResult.error(reason)


def _timeout_result(budget_ms: int | None, value: object, name: str, grace_ms: int) -> ToolResult:
    head = f"timed out after {budget_ms} ms"
    if value is _ABANDONED_MARK:
        return ToolResult.error(
            f"{head}; '{name}' did not stop within the {grace_ms} ms grace period and was "
            "abandoned"
        )
    if value is _NEVER_STARTED_MARK:
        return ToolResult.error(f"{head}; '{name}' never started: every worker was busy")
    if isinstance(value, ToolResult) and value.output:
        return ToolResult.error(f"{head}: {value.output}")
    return ToolResult.error(head)


_ABANDONED_MARK = object()  # the tool was still running after the grace period
_NEVER_STARTED_MARK = object()  # the call was still queued for a worker at its deadline
_ASK_CANCELLED = object()  # the caller cancelled while wait_for was being asked


# --------------------------------------------------------------------------- the host


class Host:
    """Runs tool calls from a :class:`~toolnexus.toolkit.Toolkit` with real deadlines.

    Args:
        toolkit: the tools to run.
        wait_for: ``wait_for(request) -> Answer`` (sync or ``async``) answers suspensions
            in-process (loop rule 1). ``None``: pending results go back to the caller, who
            may :meth:`resume` later (loop rule 2).
        timeout_ms: the default budget per call; ``None`` for no deadline.
        on_event: receives one :class:`ToolEvent` per call; a hook that raises is logged.
        max_stuck: how many abandoned workers (still running a call nobody waits for) the
            host tolerates; at that many, new calls are refused with ``host overloaded``.
        max_workers: worker threads for synchronous tools (they mostly wait, so at least 8
            by default). Calls beyond that queue; the queue wait counts against their budget.
        grace_ms: after the deadline cancels a call's token, how long the tool may take to
            return on its own before its worker is abandoned.
        cancel_grace_ms: after a caller's cancel, how long the host waits for the tool to
            return its own cancelled result (``cancelled after 3 step(s)``) before it
            answers ``cancelled by the caller`` without it (never longer than ``grace_ms``).
            Small by default, so a cancel is answered within a few milliseconds even when
            the tool ignores its token.
        wait_for_timeout_ms: the budget for one ``wait_for`` call (a human's answer);
            ``None`` waits as long as it takes. Running out counts as a declined answer.
        secret: the key(s) that sign the binding of a pending result to its call (newest
            first: the first signs, all verify). ``None`` reads ``TOOLNEXUS_SECRET``;
            without it a random per-process key signs, so resumes work in this process
            only. See :mod:`toolnexus.binding`.
        answer_store: where used answers are remembered, so each is used once (default:
            one in-memory store per process; :class:`~toolnexus.binding.SqliteAnswerStore`
            shares them between processes).
        max_rounds: how many answers one call may take. 1 (the loop rule): a retry that
            suspends again is ``unresolved: <prompt>``. More: the retry's new question is
            asked (``wait_for``) or handed back, bound to the same call, until the rounds
            are used up.

    Raises ``TypeError``/``ValueError`` at once for a misconfigured host (a negative budget,
    a non-callable hook, ...).

    Workers start with the first call that needs one, not at construction. A host is a context
    manager; :meth:`close` cancels the calls still running and stops the workers.

    Example::

        with Host(toolkit, timeout_ms=5_000) as host:
            result = host.call("search", '{"query": "weather"}')
            print(result.output)
    """

    def __init__(
        self,
        toolkit: Toolkit,
        *,
        wait_for: WaitFor | None = None,
        timeout_ms: int | None = None,
        on_event: Callable[[ToolEvent], object] | None = None,
        max_stuck: int = _DEFAULT_MAX_STUCK,
        max_workers: int = _DEFAULT_WORKERS,
        grace_ms: int = _DEFAULT_GRACE_MS,
        cancel_grace_ms: int = _DEFAULT_CANCEL_GRACE_MS,
        wait_for_timeout_ms: int | None = None,
        secret: bytes | str | Sequence[bytes | str] | None = None,
        answer_store: AnswerStore | None = None,
        max_rounds: int = 1,
    ) -> None:
        if not callable(getattr(toolkit, "resolve", None)):
            raise TypeError(
                f"Host() takes a Toolkit, got {type(toolkit).__name__}; "
                "build one with Toolkit([tool_a, tool_b])"
            )
        if wait_for is not None and not callable(wait_for):
            raise TypeError(f"wait_for must be callable or None, got {type(wait_for).__name__}")
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable or None, got {type(on_event).__name__}")
        for label, number in (("max_stuck", max_stuck), ("max_workers", max_workers),
                              ("max_rounds", max_rounds)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ValueError(f"{label} must be an int >= 1, got {number!r}")
        self._toolkit = toolkit
        self._wait_for = wait_for
        self._wait_for_is_async = wait_for is not None and inspect.iscoroutinefunction(wait_for)
        self._timeout_ms = _check_ms("timeout_ms", timeout_ms)
        self._on_event = on_event
        self._max_stuck = max_stuck
        self._grace_ms = _check_ms("grace_ms", grace_ms, allow_none=False) or 0
        self._grace = self._grace_ms / 1000
        cancel_grace = _check_ms("cancel_grace_ms", cancel_grace_ms, allow_none=False) or 0
        self._cancel_grace = cancel_grace / 1000
        self._wait_for_timeout_ms = _check_ms("wait_for_timeout_ms", wait_for_timeout_ms)
        self._binder = Binder(secret, store=answer_store)
        self._max_rounds = max_rounds
        self._pool = _Pool(max_workers, "toolnexus-host")
        self._watchdog = _Watchdog(
            60.0 if self._timeout_ms is None else max(self._timeout_ms / 1000, 1.0)
        )
        self._active: set[_Scope] = set()
        self._closed = False

    # ----------------------------------------------------------------- properties

    @property
    def toolkit(self) -> Toolkit:
        """The toolkit this host runs."""
        return self._toolkit

    @property
    def stuck_workers(self) -> int:
        """How many abandoned workers are still running a call nobody waits for."""
        return self._pool.stuck

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._closed

    # ----------------------------------------------------------------- one call

    def call(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """Run one tool call and return its result; never raises for what a tool does.

        ``args`` is a dict or JSON text, as for ``Toolkit.execute``. The tool's context gets
        ``timeout_ms`` (else the host's default), a token linked to ``cancellation_token``
        and cancelled at the deadline, and ``progress``.

        Returns the tool's result; an error starting with ``timed out after N ms`` when the
        deadline passed (on time, even if the tool ignores its token); one starting with
        ``cancelled`` when the caller's token was cancelled (at once, even if the tool is
        still unwinding); ``host overloaded: ...`` while ``max_stuck`` workers are stuck. With
        ``wait_for`` a suspension is answered and retried once (the loop rule); without it the
        pending result is returned at once.

        Raises ``ValueError``/``TypeError`` only for a bad ``timeout_ms`` or token.

        Example::

            result = host.call("crunch", {"steps": 3}, timeout_ms=500)
            assert not result.is_error
        """
        start = time.monotonic()
        # The checks are inlined for the common case: this is the per-call fast path.
        budget = self._timeout_ms if timeout_ms is None else self._budget(timeout_ms)
        token = (CancellationToken.NONE if cancellation_token is None
                 else _check_token(cancellation_token))
        result, outcome, request_id = self._call_sync(name, args, budget, token, progress, None)
        if self._on_event is not None:
            self._emit(name, start, outcome, request_id)
        return result

    async def acall(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """The asyncio twin of :meth:`call`; never blocks the event loop.

        ``async def`` tools run as tasks on this loop (the deadline and the caller's token
        cancel the task); synchronous tools run on the worker threads. Cancelling the task
        that awaits ``acall`` cancels the call and re-raises ``CancelledError``, as asyncio
        code expects.

        Example::

            result = await host.acall("fetch", {"url": "https://example.com"}, timeout_ms=2000)
        """
        start = time.monotonic()
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        try:
            result, outcome, request_id = await self._call_async(
                name, args, budget, token, progress, None
            )
        except asyncio.CancelledError:
            self._emit(name, start, "cancelled", None)
            raise
        self._emit(name, start, outcome, request_id)
        return result

    def resume(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None,
        request: Request | ToolResult | Mapping[str, Any] | str,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """Run a suspended call again with the answer to its request (loop rule 2).

        ``request`` is the pending result this host handed out (its ``metadata["binding"]``
        binds the answer to the call), its wire dict or JSON — so the resume can happen in
        another process with the same key — or, in the process that asked, the bare
        :class:`Request`. ``answer`` is the value, its wire dict or its JSON. Before the tool
        runs, the host checks that the binding verifies and names this tool, these arguments
        and this very request; that ``answer.id`` echoes ``request.id``; that nothing has
        expired; that ``answer.data`` fits ``request.data["schema"]``; and that the answer
        was not used before (``already answered``). A "no" (``ok`` false, or an
        ``approval`` with ``approved: false``) is ``declined/expired: <prompt>``. A failed
        check is an error result and the tool is not run. A retry that suspends again
        becomes ``unresolved: <prompt>`` (or, with ``max_rounds`` left, the next bound
        question).

        Example::

            first = host.call("deploy", {})
            done = host.resume("deploy", {}, first, Answer.accept(
                ToolResult.pending_of(first), {"env": "dev"}))
        """
        start = time.monotonic()
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        checked = self._binder.check(name, args, request, answer)
        if isinstance(checked, Refusal):
            self._emit(name, start, "error", None)
            return checked.result
        result, outcome, request_id = self._call_sync(
            name, args, budget, token, progress, checked.answer, checked.round
        )
        self._emit(name, start, outcome, request_id)
        return result

    async def aresume(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None,
        request: Request | ToolResult | Mapping[str, Any] | str,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """The asyncio twin of :meth:`resume`.

        Example::

            done = await host.aresume("deploy", {}, request, answer)
        """
        checked = self._binder.check(name, args, request, answer)
        if isinstance(checked, Refusal):
            self._emit(name, time.monotonic(), "error", None)
            return checked.result
        return await self._aresume_checked(name, args, checked, timeout_ms, cancellation_token,
                                           progress)

    async def _aresume_checked(
        self, name: str, args: Any, checked: Accepted, timeout_ms: int | None,
        cancellation_token: CancellationToken | None, progress: ProgressReporter | None,
    ) -> ToolResult:
        start = time.monotonic()
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        try:
            result, outcome, request_id = await self._call_async(
                name, args, budget, token, progress, checked.answer, checked.round
            )
        except asyncio.CancelledError:
            self._emit(name, start, "cancelled", None)
            raise
        self._emit(name, start, outcome, request_id)
        return result

    def _submit(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None,
        on_done: Callable[[ToolResult], object],
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
        request: Request | ToolResult | Mapping[str, Any] | str | None = None,
        answer: Answer | Mapping[str, Any] | str | None = None,
        here: bool = False,
    ) -> Callable[[], None] | None:
        """Start :meth:`call` (or, with ``request`` and ``answer``, :meth:`resume`) without
        waiting: ``on_done(result)`` receives what that method would have returned.

        With ``here``, a worker's place may be lent to the calling thread instead: then the
        call is set up and the function returned runs it on the calling thread (the caller
        first hands off whatever else that thread was doing). Deadlines and cancels are
        enforced as on a worker (a tool that ignores them leaves the caller's thread stuck,
        and counted). Otherwise — every place taken, or the call settled already — returns
        ``None``.

        For drivers that must not block a thread per call (the MCP stdio server): the job
        runs on a worker, which also runs ``on_done`` when the tool returns; at a deadline,
        after a cancel's short wait, or on an abandoned worker, the host's watchdog thread
        runs it; a call refused or rejected before it starts runs it at once, on the calling
        thread. Deadlines, the grace period, stuck-worker accounting, events and the loop
        rule are those of :meth:`call`. ``on_done`` runs exactly once and should be quick; an
        exception from it is logged. With ``wait_for`` set, the call runs on a helper thread
        (the loop rule's wait needs one).

        Raises ``ValueError``/``TypeError`` only for a bad ``timeout_ms`` or token.

        Example::

            host._submit("add", {"a": 1, "b": 2}, results.put)
        """
        start = time.monotonic()
        budget = self._timeout_ms if timeout_ms is None else self._budget(timeout_ms)
        token = (CancellationToken.NONE if cancellation_token is None
                 else _check_token(cancellation_token))
        if self._wait_for is not None:
            self._submit_blocking(name, args, on_done, budget, token, progress, request, answer)
            return None
        checked: Answer | None = None
        round_ = 0
        if request is not None or answer is not None:
            verdict = self._binder.check(name, args, request, answer)
            if isinstance(verdict, Refusal):
                self._emit(name, start, "error", None)
                on_done(verdict.result)
                return None
            checked, round_ = verdict.answer, verdict.round
        refused = (self._refusal(name) if self._closed or self._pool.stuck >= self._max_stuck
                   else None)
        if refused is not None:
            self._emit(name, start, "error", None)
            on_done(refused)
            return None
        resolved = self._toolkit.resolve(name, args)
        if isinstance(resolved, ToolResult):
            self._emit(name, start, _outcome_of(resolved), None)
            on_done(resolved)
            return None
        if token.is_cancellation_requested:
            self._emit(name, start, "cancelled", None)
            on_done(ToolResult.error(self._cancel_reason()))
            return None
        tool, parsed = resolved
        reporter = _Progress(progress, name) if progress is not None else None
        flight = _Flight(self, name, start, tool, budget, checked, reporter, on_done)
        flight.args, flight.round = args, round_
        scope = self._open(token, flight.cancelled)
        ctx = ToolContext(budget, scope.token, checked, reporter)
        job = flight.job
        if tool.is_async:
            job.fn, job.params = self._invoke_async_tool, (tool, parsed, ctx)
        else:
            job.params = (parsed, ctx)  # a sync Tool is itself the job
        self._watchdog.start(flight, scope)
        pool = self._pool
        if here and pool.claim(job):
            return lambda: pool.run_claimed(job)
        pool.submit(job)
        return None

    def _submit_blocking(
        self,
        name: str,
        args: Any,
        on_done: Callable[[ToolResult], object],
        budget: int | None,
        token: CancellationToken,
        progress: ProgressReporter | None,
        request: Any,
        answer: Any,
    ) -> None:
        """:meth:`_submit` with ``wait_for``: the loop rule's wait blocks a helper thread."""

        def run() -> None:
            if request is not None or answer is not None:
                result = self.resume(name, args, request, answer, timeout_ms=budget,
                                     cancellation_token=token, progress=progress)
            else:
                result = self.call(name, args, timeout_ms=budget, cancellation_token=token,
                                   progress=progress)
            try:
                on_done(result)
            except Exception:
                _log.exception("toolnexus host: the completion callback for %r failed", name)

        threading.Thread(target=run, name="toolnexus-host-call", daemon=True).start()

    def _expire(self, flight: _Flight, phase: int) -> None:
        """The watchdog's turn on a :meth:`_submit` call whose check time came."""
        scope = flight.scope
        assert scope is not None
        if phase == _RUN:
            # The deadline: cancel the tool's token (the caller is not woken: nobody
            # waits) and give the tool the grace period, checked next.
            scope.source.cancel()
            return
        previous = self._pool.abandon(flight.job, quietly=phase == _CANCELLING)
        if previous == _DONE:
            return  # the worker is settling it
        if phase == _CANCELLING:
            flight.settle(_cancelled_result(None, self._cancel_reason()), "cancelled")
            return
        tool = flight.tool
        if previous == _RUNNING:
            _log.warning(
                "toolnexus host: %r ignored its deadline (%s ms) and the %s ms grace period; "
                "its worker was abandoned (%d stuck)",
                tool.name, flight.budget, self._grace_ms, self._pool.stuck,
            )
        mark = _ABANDONED_MARK if previous == _RUNNING else _NEVER_STARTED_MARK
        flight.settle(_timeout_result(flight.budget, mark, tool.name, self._grace_ms), "timeout")

    # ----------------------------------------------------------------- several calls

    def call_many(
        self,
        calls: Iterable[tuple[str, Mapping[str, Any] | str | bytes | None]],
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> list[ToolResult]:
        """Run independent ``(name, args)`` calls concurrently; results in the calls' order.

        Each call follows :meth:`call`'s rules (its own deadline, the loop rule, one event).

        Example::

            weather, news = host.call_many([("weather", {"city": "Oslo"}), ("news", {})])
        """
        pairs = _pairs(calls)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        result: list[ToolResult] = _run_blocking(
            lambda: self._gather([(n, a, None) for n, a in pairs], budget, token)
        )
        return result

    async def acall_many(
        self,
        calls: Iterable[tuple[str, Mapping[str, Any] | str | bytes | None]],
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> list[ToolResult]:
        """The asyncio twin of :meth:`call_many`.

        Example::

            weather, news = await host.acall_many([("weather", {"city": "Oslo"}), ("news", {})])
        """
        pairs = _pairs(calls)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        return await self._gather([(n, a, None) for n, a in pairs], budget, token)

    def run_turn(
        self,
        calls: Any,
        *,
        style: Style = "openai",
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> TurnResult:
        """Run the tool calls of one model turn concurrently.

        ``calls`` is what the provider returned, as plain dicts or the SDK's own objects:
        for ``style="openai"`` (Chat Completions) the message's ``tool_calls`` (or the whole
        message); for ``"responses"`` the Responses API ``output`` items (or the whole
        response; ``function_call`` items are run, others skipped); for ``"anthropic"`` the
        content blocks (or the whole message; ``tool_use`` blocks are run); for
        ``"gemini"`` the candidate's parts, its content or the whole response
        (``functionCall`` parts are run), or ``response.function_calls``.

        Returns a :class:`TurnResult`. When calls suspend (no ``wait_for``), its ``pending``
        is the first suspension in call order and its ``messages`` stay empty until
        :meth:`resume_turn` has produced one result per call.

        Raises :class:`~toolnexus.errors.WireFormatError` (a ``ValueError``) when a tool call
        lacks its id or name, and ``ValueError`` for an unknown ``style``.

        Example::

            turn = host.run_turn(message["tool_calls"], style="openai")
            if turn.is_complete:
                history.extend(turn.messages)
        """
        parsed = parse_calls(calls, style)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        turn: TurnResult = _run_blocking(lambda: self._arun_turn(parsed, style, budget, token))
        return turn

    async def arun_turn(
        self,
        calls: Any,
        *,
        style: Style = "openai",
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> TurnResult:
        """The asyncio twin of :meth:`run_turn`.

        Example::

            turn = await host.arun_turn(response.content, style="anthropic")
        """
        parsed = parse_calls(calls, style)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        return await self._arun_turn(parsed, style, budget, token)

    def resume_turn(
        self,
        turn: TurnResult,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> TurnResult:
        """Continue a halted turn with the answer to its ``pending`` request.

        The halted call runs again with the answer (as :meth:`resume`: expiry, decline and
        ``data.schema`` checks apply, and a second suspension becomes ``unresolved:
        <prompt>``); then the turn's other suspended calls run again concurrently (the
        answer may have changed the world for them — a login, say). Returns a new
        :class:`TurnResult`: complete with balanced ``messages``, or pending on the next
        request in call order.

        An answer whose id does not echo ``turn.pending.id`` changes nothing: the returned
        turn still waits on the same request and its ``error`` says why. A complete turn is
        returned unchanged with an ``error``.

        Example::

            turn = host.resume_turn(turn, Answer.accept(turn.pending, {"env": "staging"}))
        """
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        resumed: TurnResult = _run_blocking(
            lambda: self._aresume_turn(turn, answer, budget, token)
        )
        return resumed

    async def aresume_turn(
        self,
        turn: TurnResult,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> TurnResult:
        """The asyncio twin of :meth:`resume_turn`.

        Example::

            turn = await host.aresume_turn(turn, answer)
        """
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        return await self._aresume_turn(turn, answer, budget, token)

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Cancel the calls still running and stop the workers. Idempotent.

        Callers of running calls get a ``cancelled`` result at once. Idle workers exit
        (waited for up to the grace period); a worker still inside a tool exits when the
        tool returns. Calls made after ``close()`` return an error result saying the host
        is closed.

        Example::

            host = Host(toolkit)
            try:
                host.call("search", {"q": "x"})
            finally:
                host.close()
        """
        if self._closed:
            return
        self._closed = True
        for scope in list(self._active):
            scope.cancel()
        self._pool.close(self._grace)

    def __enter__(self) -> Host:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        pool = self._pool
        state = " closed" if self._closed else ""
        return f"<Host workers={pool.size} busy={pool.busy} stuck={pool.stuck}{state}>"

    # ----------------------------------------------------------------- internals: shared

    def _budget(self, timeout_ms: int | None) -> int | None:
        if timeout_ms is None:
            return self._timeout_ms
        return _check_ms("timeout_ms", timeout_ms)

    def _emit(self, name: str, start: float, outcome: Outcome, request_id: str | None) -> None:
        hook = self._on_event
        if hook is None:
            return
        try:
            hook(ToolEvent(name, (time.monotonic() - start) * 1000, outcome, request_id))
        except Exception:
            _log.exception("toolnexus host: on_event hook failed for %r", name)

    def _refusal(self, name: str) -> ToolResult | None:
        if self._closed:
            return ToolResult.error(
                f"host is closed; '{name}' was not run (create a new Host to run more calls)"
            )
        stuck = self._pool.stuck
        if stuck >= self._max_stuck:
            return ToolResult.error(
                f"host overloaded: {stuck} stuck workers are still running abandoned calls "
                f"(max_stuck={self._max_stuck}); '{name}' was not run. Tools that ignore "
                "their cancellation token hold workers past their deadline; retry later"
            )
        return None

    def _open(self, token: CancellationToken, wake: Callable[[], object]) -> _Scope:
        scope = _Scope(token, wake)
        self._active.add(scope)
        if self._closed:  # close() may have taken its snapshot before we were added
            scope.cancel()
        return scope

    def _close(self, scope: _Scope) -> None:
        scope.close()
        self._active.discard(scope)

    def _cancel_reason(self) -> str:
        return "cancelled: the host was closed" if self._closed else "cancelled by the caller"

    @staticmethod
    def _invoke_async_tool(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run an ``async def`` tool on a private loop in a worker; the token cancels it."""
        value = _run_private(_drive(tool.acall(args, ctx), ctx.cancellation_token))
        return ToolResult.error("cancelled") if value is None else value

    @staticmethod
    def _invoke_wait_for(wait_for: WaitFor, request: Request, token: CancellationToken) -> Any:
        """Run ``wait_for`` in a worker thread (an async one on a private loop)."""
        try:
            value = wait_for(request)
            if inspect.isawaitable(value):
                value = _run_private(_drive(value, token))
        except Exception:
            _log.exception("toolnexus host: wait_for raised; treated as declined")
            return loop_rule.Refused("raised")
        return value

    # ----------------------------------------------------------------- internals: sync

    def _call_sync(
        self,
        name: str,
        args: Any,
        budget: int | None,
        token: CancellationToken,
        progress: ProgressReporter | None,
        answer: Answer | None,
        round_: int = 0,
    ) -> tuple[ToolResult, Outcome, str | None]:
        if self._closed or self._pool.stuck >= self._max_stuck:
            refused = self._refusal(name)
            if refused is not None:
                return refused, "error", None
        resolved = self._toolkit.resolve(name, args)
        if isinstance(resolved, ToolResult):
            return resolved, _outcome_of(resolved), None
        tool, parsed = resolved
        reporter = _Progress(progress, name) if progress is not None else None
        try:
            result, outcome = self._run_sync(tool, parsed, budget, token, answer, reporter)
            if outcome != "pending":
                return result, outcome, None
            request = ToolResult.pending_of(result)
            assert request is not None
            if answer is not None or self._wait_for is None:
                # Loop rule 2: hand the question back bound to this call (or unresolved).
                result = self._binder.hand_back(name, args, result, round_, self._max_rounds)
                return result, _outcome_of(result), request.id
            for _ in range(self._max_rounds):  # loop rule 1, once per round
                got = self._ask_sync(request, token)
                if got is _ASK_CANCELLED:
                    return ToolResult.error(self._cancel_reason()), "cancelled", request.id
                checked = loop_rule.check_answer(request, got)
                if isinstance(checked, ToolResult):
                    return checked, "error", request.id
                result, outcome = self._run_sync(tool, parsed, budget, token, checked, reporter)
                if outcome != "pending":
                    return result, outcome, request.id
                request = ToolResult.pending_of(result) or request
            return loop_rule.unresolved(result), "error", request.id
        finally:
            if reporter is not None:
                reporter.live = False

    def _run_sync(
        self,
        tool: Tool,
        args: dict[str, Any],
        budget: int | None,
        token: CancellationToken,
        answer: Answer | None,
        progress: _Progress | None,
    ) -> tuple[ToolResult, Outcome]:
        if token.is_cancellation_requested:
            return ToolResult.error(self._cancel_reason()), "cancelled"
        deadline = None if budget is None else time.monotonic() + budget / 1000
        signal = _Signal()
        scope = self._open(token, signal.set)
        try:
            ctx = ToolContext(budget, scope.token, answer, progress)
            # A sync Tool is itself the job: one frame less on the per-call fast path.
            job = (_Job(tool, (args, ctx), signal.set, tool.name) if not tool.is_async else
                   _Job(self._invoke_async_tool, (tool, args, ctx), signal.set, tool.name))
            status, value = self._wait_job(job, signal, scope, deadline, self._grace)
        finally:
            self._close(scope)
        if status == "done":
            if value.__class__ is not ToolResult:
                value = _as_result(tool, value)
            return value, _outcome_of(value)
        if status == "cancelled":
            return _cancelled_result(value, self._cancel_reason()), "cancelled"
        if value is _ABANDONED_MARK:
            _log.warning(
                "toolnexus host: %r ignored its deadline (%s ms) and the %s ms grace period; "
                "its worker was abandoned (%d stuck)",
                tool.name, budget, self._grace_ms, self._pool.stuck,
            )
        return _timeout_result(budget, value, tool.name, self._grace_ms), "timeout"

    def _wait_job(
        self,
        job: _Job,
        signal: _Signal,
        scope: _Scope,
        deadline: float | None,
        grace: float,
    ) -> tuple[str, Any]:
        """Run ``job`` on the pool and wait for it, its cancellation or its deadline.

        Returns ``("done", value)``, ``("cancelled", value-or-None)`` or
        ``("timeout", value-or-a-mark)``, the mark saying whether the job was abandoned
        while running or never started.
        """
        pool = self._pool
        cancelled = scope.token
        pool.submit(job)
        while True:
            if job.state == _DONE:
                if cancelled.is_cancellation_requested:
                    return "cancelled", job.value
                return "done", job.value
            if cancelled.is_cancellation_requested:
                # A cooperative tool is usually returning already: a moment's wait lets
                # its own words ("cancelled after 3 step(s)") reach the caller.
                end = time.monotonic() + min(grace, self._cancel_grace)
                while job.state != _DONE and (left := end - time.monotonic()) > 0:
                    signal.wait(left)
                if pool.abandon(job, quietly=True) == _DONE:
                    return "cancelled", job.value
                return "cancelled", None
            if deadline is None:
                signal.wait(None)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            signal.wait(remaining)
        # The deadline passed: cancel the tool's token (this does not wake us: only the
        # caller's token and close() do) and give the tool the grace period.
        scope.source.cancel()
        end = deadline + grace
        while job.state != _DONE:
            remaining = end - time.monotonic()
            if remaining <= 0:
                break
            signal.wait(remaining)
        previous = pool.abandon(job)
        if previous == _DONE:
            return "timeout", job.value
        return "timeout", _ABANDONED_MARK if previous == _RUNNING else _NEVER_STARTED_MARK

    def _ask_sync(self, request: Request, token: CancellationToken) -> object:
        """Loop rule 1 from a thread: ask ``wait_for``; ``_ASK_CANCELLED`` if the caller cancels.

        Returns the answer, or a non-Answer (treated as declined) when ``wait_for``
        raised or ran out of its budget.
        """
        assert self._wait_for is not None
        if request.is_expired():
            return loop_rule.Refused("expired")
        if token.is_cancellation_requested:
            return _ASK_CANCELLED
        budget = self._wait_for_timeout_ms
        deadline = None if budget is None else time.monotonic() + budget / 1000
        signal = _Signal()
        scope = self._open(token, signal.set)
        try:
            job = _Job(
                self._invoke_wait_for, (self._wait_for, request, scope.token), signal.set,
                "wait_for",
            )
            status, value = self._wait_job(job, signal, scope, deadline, 0.0)
        finally:
            self._close(scope)
        if status == "cancelled":
            return _ASK_CANCELLED
        if status == "timeout":
            _log.warning(
                "toolnexus host: wait_for gave no answer to %r within %s ms; treated as declined",
                request.id, budget,
            )
            return loop_rule.Refused("timed out")
        return value

    # ----------------------------------------------------------------- internals: async

    async def _call_async(
        self,
        name: str,
        args: Any,
        budget: int | None,
        token: CancellationToken,
        progress: ProgressReporter | None,
        answer: Answer | None,
        round_: int = 0,
    ) -> tuple[ToolResult, Outcome, str | None]:
        refused = self._refusal(name)
        if refused is not None:
            return refused, "error", None
        resolved = self._toolkit.resolve(name, args)
        if isinstance(resolved, ToolResult):
            return resolved, _outcome_of(resolved), None
        tool, parsed = resolved
        reporter = _Progress(progress, name) if progress is not None else None
        try:
            result, outcome = await self._run_async(tool, parsed, budget, token, answer, reporter)
            if outcome != "pending":
                return result, outcome, None
            request = ToolResult.pending_of(result)
            assert request is not None
            if answer is not None or self._wait_for is None:
                # Loop rule 2: hand the question back bound to this call (or unresolved).
                result = self._binder.hand_back(name, args, result, round_, self._max_rounds)
                return result, _outcome_of(result), request.id
            for _ in range(self._max_rounds):  # loop rule 1, once per round
                got = await self._ask_async(request, token)
                if got is _ASK_CANCELLED:
                    return ToolResult.error(self._cancel_reason()), "cancelled", request.id
                checked = loop_rule.check_answer(request, got)
                if isinstance(checked, ToolResult):
                    return checked, "error", request.id
                result, outcome = await self._run_async(
                    tool, parsed, budget, token, checked, reporter
                )
                if outcome != "pending":
                    return result, outcome, request.id
                request = ToolResult.pending_of(result) or request
            return loop_rule.unresolved(result), "error", request.id
        finally:
            if reporter is not None:
                reporter.live = False

    async def _run_async(
        self,
        tool: Tool,
        args: dict[str, Any],
        budget: int | None,
        token: CancellationToken,
        answer: Answer | None,
        progress: _Progress | None,
    ) -> tuple[ToolResult, Outcome]:
        if token.is_cancellation_requested:
            return ToolResult.error(self._cancel_reason()), "cancelled"
        deadline = None if budget is None else time.monotonic() + budget / 1000
        signal = _AsyncSignal(asyncio.get_running_loop())
        scope = self._open(token, signal.set_threadsafe)
        try:
            ctx = ToolContext(budget, scope.token, answer, progress)
            if tool.is_async:
                status, value = await self._await_task(
                    tool.acall(args, ctx), signal, scope, deadline, self._grace
                )
            else:
                job = _Job(tool, (args, ctx), signal.set_threadsafe, tool.name)
                status, value = await self._await_job(job, signal, scope, deadline,
                                                      self._grace)
        finally:
            self._close(scope)
        if status == "done":
            if value.__class__ is not ToolResult:
                value = _as_result(tool, value)
            return value, _outcome_of(value)
        if status == "cancelled":
            return _cancelled_result(value, self._cancel_reason()), "cancelled"
        if value is _ABANDONED_MARK:
            _log.warning(
                "toolnexus host: %r ignored its deadline (%s ms) and the %s ms grace period; "
                "it was abandoned", tool.name, budget, self._grace_ms,
            )
        return _timeout_result(budget, value, tool.name, self._grace_ms), "timeout"

    async def _await_job(
        self,
        job: _Job,
        signal: _AsyncSignal,
        scope: _Scope,
        deadline: float | None,
        grace: float,
    ) -> tuple[str, Any]:
        """The asyncio twin of :meth:`_wait_job`: a worker runs the job, the loop waits."""
        pool = self._pool
        cancelled = scope.token
        pool.submit(job)
        try:
            while True:
                if job.state == _DONE:
                    if cancelled.is_cancellation_requested:
                        return "cancelled", job.value
                    return "done", job.value
                if cancelled.is_cancellation_requested:
                    end = time.monotonic() + min(grace, self._cancel_grace)
                    while job.state != _DONE and (left := end - time.monotonic()) > 0:
                        await signal.wait(left)
                    if pool.abandon(job, quietly=True) == _DONE:
                        return "cancelled", job.value
                    return "cancelled", None
                if deadline is None:
                    await signal.wait(None)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                await signal.wait(remaining)
            scope.source.cancel()
            end = deadline + grace
            while job.state != _DONE:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    break
                await signal.wait(remaining)
        except asyncio.CancelledError:
            # The task awaiting us was cancelled: stop the tool and let asyncio unwind.
            scope.source.cancel()
            pool.abandon(job, quietly=True)
            raise
        previous = pool.abandon(job)
        if previous == _DONE:
            return "timeout", job.value
        return "timeout", _ABANDONED_MARK if previous == _RUNNING else _NEVER_STARTED_MARK

    async def _await_task(
        self,
        awaitable: Awaitable[Any],
        signal: _AsyncSignal,
        scope: _Scope,
        deadline: float | None,
        grace: float,
    ) -> tuple[str, Any]:
        """Await ``awaitable`` as a task on this loop, bounded by ``deadline`` and the token.

        Same statuses as :meth:`_wait_job`; a task that ended by cancellation has value
        None, one that raised has the exception as its value.
        """
        task = asyncio.ensure_future(awaitable)
        task.add_done_callback(signal.set)
        cancelled = scope.token
        try:
            while True:
                if task.done():
                    status = "cancelled" if cancelled.is_cancellation_requested else "done"
                    return status, _task_value(task)
                if cancelled.is_cancellation_requested:
                    task.cancel()
                    task.add_done_callback(_swallow)
                    return "cancelled", None
                if deadline is None:
                    await signal.wait(None)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                await signal.wait(remaining)
            scope.source.cancel()
            task.cancel()
            end = deadline + grace
            while not task.done():
                remaining = end - time.monotonic()
                if remaining <= 0:
                    break
                await signal.wait(remaining)
        except asyncio.CancelledError:
            scope.source.cancel()
            task.cancel()
            task.add_done_callback(_swallow)
            raise
        if task.done():
            return "timeout", _task_value(task)
        task.add_done_callback(_swallow)
        return "timeout", _ABANDONED_MARK

    async def _ask_async(self, request: Request, token: CancellationToken) -> object:
        """Loop rule 1 on a loop: ask ``wait_for``; ``_ASK_CANCELLED`` if the caller cancels."""
        wait_for = self._wait_for
        assert wait_for is not None
        if request.is_expired():
            return loop_rule.Refused("expired")
        if token.is_cancellation_requested:
            return _ASK_CANCELLED
        budget = self._wait_for_timeout_ms
        deadline = None if budget is None else time.monotonic() + budget / 1000
        signal = _AsyncSignal(asyncio.get_running_loop())
        scope = self._open(token, signal.set_threadsafe)
        try:
            if self._wait_for_is_async:
                try:
                    awaitable: Any = wait_for(request)
                except Exception:
                    _log.exception("toolnexus host: wait_for raised; treated as declined")
                    return loop_rule.Refused("raised")
                status, value = await self._await_task(awaitable, signal, scope, deadline, 0.0)
                if status == "done" and isinstance(value, BaseException):
                    _log.error(
                        "toolnexus host: wait_for raised; treated as declined", exc_info=value
                    )
                    return loop_rule.Refused("raised")
            else:
                job = _Job(self._invoke_wait_for, (wait_for, request, scope.token),
                           signal.set_threadsafe, "wait_for")
                status, value = await self._await_job(job, signal, scope, deadline, 0.0)
        finally:
            self._close(scope)
        if status == "cancelled":
            return _ASK_CANCELLED
        if status == "timeout":
            _log.warning(
                "toolnexus host: wait_for gave no answer to %r within %s ms; treated as declined",
                request.id, budget,
            )
            return loop_rule.Refused("timed out")
        return value

    async def _gather(
        self,
        items: Sequence[tuple[str, Any, Accepted | None]],
        budget: int | None,
        token: CancellationToken,
    ) -> list[ToolResult]:
        """Run calls (or resumes, when a checked answer is given) concurrently."""

        async def one(name: str, args: Any, checked: Accepted | None) -> ToolResult:
            if checked is not None:
                return await self._aresume_checked(name, args, checked, budget, token, None)
            return await self.acall(name, args, timeout_ms=budget, cancellation_token=token)

        if not items:
            return []
        if len(items) == 1:
            return [await one(*items[0])]
        return list(await asyncio.gather(*(one(*item) for item in items)))

    async def _arun_turn(
        self, calls: list[tuple[str, str, Any]], style: Style, budget: int | None,
        token: CancellationToken,
    ) -> TurnResult:
        results = await self._gather([(n, a, None) for _, n, a in calls], budget, token)
        return TurnResult(
            style,
            tuple(TurnCall(cid, n, a, r) for (cid, n, a), r in zip(calls, results, strict=True)),
        )

    async def _aresume_turn(
        self, turn: TurnResult, answer: object, budget: int | None, token: CancellationToken
    ) -> TurnResult:
        if not isinstance(turn, TurnResult):
            raise TypeError(
                f"resume_turn() takes the TurnResult of run_turn (or TurnResult.from_json), "
                f"got {type(turn).__name__}"
            )
        halted = turn.pending_call
        if halted is None:
            return replace(turn, error="the turn is complete; there is nothing to resume")
        request = ToolResult.pending_of(halted.result)
        assert request is not None
        try:
            ans = loop_rule.coerce_answer(answer)
        except WireFormatError as exc:
            return replace(turn, error=f"cannot resume the turn: {exc}; it still waits on "
                           f"request {request.id!r}")
        if ans.id != request.id:
            return replace(
                turn,
                error=f"answer id {ans.id!r} does not echo the pending request's id "
                f"{request.id!r}; the turn still waits on {request.id!r}",
            )
        # The binding in the halted result names the tool, the arguments and the request:
        # a turn edited into another call (or replayed) is refused and keeps waiting.
        verdict = self._binder.check(halted.name, halted.arguments, halted.result, ans)
        if isinstance(verdict, Refusal):
            if not verdict.spent:
                return replace(turn, error=f"{verdict.result.output}; the turn still waits on "
                               f"request {request.id!r}")
            first = [verdict.result]
        else:
            first = await self._gather([(halted.name, halted.arguments, verdict)], budget, token)
        calls = [replace(c, result=first[0]) if c is halted else c for c in turn.calls]
        others = [i for i, c in enumerate(calls) if c.is_pending]
        if others:
            again = await self._gather(
                [(calls[i].name, calls[i].arguments, None) for i in others], budget, token
            )
            for i, result in zip(others, again, strict=True):
                calls[i] = replace(calls[i], result=result)
        return TurnResult(turn.style, tuple(calls))


def _task_value(task: asyncio.Future[Any]) -> Any:
    if task.cancelled():
        return None
    exc = task.exception()
    if exc is not None:
        if isinstance(exc, Exception):
            return exc
        return None
    return task.result()


def _pairs(calls: Iterable[Any]) -> list[tuple[str, Any]]:
    pairs = []
    for index, item in enumerate(calls):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise TypeError(
                f"call_many() takes (name, args) pairs; item {index} is {item!r}"
            )
        pairs.append((item[0], item[1]))
    return pairs
