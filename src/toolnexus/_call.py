"""The call state machine: everything that changes a tool call's state lives in this file.

A :class:`Call` is what a user holds for one tool call from submission to its settled
result: a future (``done``, ``result``, ``cancel``, ``cancelled``, ``add_done_callback``,
``await``). Its machine — the underscore methods below — is the package's own: the host
builds a call (:meth:`Call._create`, :meth:`Call._prepare`) and starts it
(:meth:`Call._start`); nothing a user can reach without an underscore drives it. Its life::

    QUEUED --worker takes it--> RUNNING --tool returns--> DONE
    QUEUED --deadline or cancel before a worker took it--> DONE (it never starts)
    RUNNING --deadline--> GRACE --tool returns, or the grace ends--> DONE (timeout)
    RUNNING --cancel--> CANCELLING --tool returns, or the cancel grace ends--> DONE (cancelled)
    RUNNING --tool suspends, wait_for set--> ASKING
    ASKING --ok answer--> QUEUED (the retry, with a fresh budget)
    ASKING --no usable answer, past its budget, or cancel--> DONE

Rules the code below keeps:

- **One lock per call.** Every transition is a method that takes ``self._lock``, checks the
  state, changes it and returns the *effects* to carry out (see ``SETTLE`` ... below);
  effects run after the lock is released. Lock order: a call's lock, then a pool's or the
  timer heap's; never the other way round.
- **Each effect says where it runs** (``_WHERE``): ``HERE``, on whichever thread made the
  transition (cancelling the tool's token, as a token's ``cancel()`` runs its callbacks on
  the cancelling thread), or ``OWNER``, on the call's owner when it has one — the thread
  blocked in ``Host.call``, or the event loop awaiting ``Host.acall`` — else here.
- **The reason is recorded when it happens**: ``"caller"``, ``"deadline"`` or
  ``"host closed"``, set by the transition that cancels, never guessed from a result's text.
- **Timers only change state.** A deadline, a grace period or a question budget is a
  ``quick`` action on the shared timer thread (:mod:`toolnexus._timers`): it moves the state
  and wakes waiters; the timer thread runs no effect (only a token's flag and Event are set
  there, on time): effects go to the owner or, for a call nobody owns, to the dispatcher.
- **A tool that returns within the grace keeps its own result**, whatever it says; only a
  tool still running when the grace ends gets the host's text, and its worker is abandoned
  (counted stuck by its pool until it returns; its late result is discarded). After a
  cancel the grace goes only to a tool that can listen (an async tool; a sync tool that
  takes a context): one that cannot is answered at once, and its worker counts stuck
  only if it is still inside the tool when the grace ends.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import queue
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Generator

from . import _loop_rule as loop_rule
from . import _timers
from ._cancellation import CancellationToken, CancellationTokenSource, StateLink, resolve_future
from ._context import ProgressReporter, ToolContext, bound_principal
from ._log import LazyLogger
from ._pool import Pool, Worker, current_worker
from ._result import ToolResult
from ._suspension import Answer, Request
from .errors import InvalidTypeError, InvalidValueError, WaitTimeoutError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing costs as much to import as Host
if TYPE_CHECKING:
    import asyncio
    from typing import Any, Literal, NoReturn

    from ._binding import Binder
    from ._principal import Principal
    from ._tools import Tool

__all__ = ["Call", "Outcome", "Progress", "Runtime"]

_log = LazyLogger()  # logging loads with the first record, not with Host

if TYPE_CHECKING:
    Outcome = Literal["ok", "error", "pending", "timeout", "cancelled"]
    Reason = Literal["caller", "deadline", "host closed"]
else:  # typing stays unloaded: at run time the aliases are str (get_type_hints resolves them)
    Outcome = Reason = str

QUEUED, RUNNING, GRACE, CANCELLING, ASKING, DONE = range(6)
_STATE_NAMES = ("queued", "running", "timing out", "cancelling", "asking", "done")

# How an attempt runs: on a pool worker, right here on the starting thread (a driver that
# knows the tool is quick, a tool that calls its own host), as a task on the owner's
# event loop (async tools in acall), or here on the thread of Host.call's caller (a tool
# that runs on its caller: INLINE, but Ctrl-C there cancels the call and goes on), or
# started on its own I/O with no thread waiting (a remote tool nobody waits for on a
# thread: it calls back when it ends, on its client's reader thread).
ON_POOL, INLINE, ON_LOOP, ON_CALLER, ON_IO = 0, 1, 2, 3, 4

# The effects a transition asks for, carried out once its lock is released (Call._EFFECTS
# maps each to its method), and where each runs:
SETTLE, START, ASK, CANCEL_TOOL, DROP_QUESTION, FORGET_TASK = range(6)
HERE, OWNER = 0, 1
_WHERE = (
    OWNER,  # SETTLE: on_event, done callbacks and the acall future belong to the caller
    OWNER,  # START: an async tool's task starts on its owner's loop
    OWNER,  # ASK: an async wait_for runs as a task on the owner's loop
    HERE,  # CANCEL_TOOL: the token's callbacks run on the cancelling thread, at once
    HERE,  # DROP_QUESTION: cancels the question's token (its task, thread-safely)
    OWNER,  # FORGET_TASK: cancels an abandoned task, on its loop
)

_CALLBACK_FAILED = "toolnexus host: a done callback of the call to %r failed"
_BLOCKED_LOOP_MS = 100  # a loop this late settling a timeout was blocked, not just busy
_NO_WORDS = object()  # an async tool ended by cancellation: it said nothing of its own


class Runtime:
    """What a host's calls share: its settings, threads and hooks (set by the host)."""

    __slots__ = (
        "__weakref__",
        "active",
        "async_on_loop",
        "binder",
        "cancel_grace",
        "closed",
        "emit",
        "grace",
        "grace_ms",
        "max_rounds",
        "pool",
        "question_ms",
        "questions",
        "wait_for",
        "wait_for_is_async",
    )

    def __init__(
        self,
        pool: Pool,
        questions: Pool,
        grace_ms: int,
        cancel_grace_ms: int,
        question_ms: int | None,
        wait_for: Callable[[Request], Any] | None,
        emit: Callable[[str, float, Outcome, str | None], None] | None,
        binder: Binder,
        max_rounds: int,
        async_on_loop: bool = True,
    ) -> None:
        self.pool = pool
        self.questions = questions
        self.grace_ms = grace_ms
        self.grace = grace_ms / 1000
        self.cancel_grace = min(grace_ms, cancel_grace_ms) / 1000
        self.question_ms = question_ms
        self.wait_for = wait_for
        self.wait_for_is_async = wait_for is not None and inspect.iscoroutinefunction(wait_for)
        self.emit = emit
        self.binder = binder
        self.max_rounds = max_rounds
        self.async_on_loop = async_on_loop  # acall runs async tools as tasks on its loop
        self.active: set[Call] = set()
        self.closed = False
        _runtimes.add(self)
        _register_exit_hook()


_runtimes: weakref.WeakSet[Runtime] = weakref.WeakSet()


def _forget_calls_after_fork() -> None:
    # The calls in flight belong to the parent (their threads and waiters live there); the
    # child's host starts afresh, and must not touch a lock another thread held at fork().
    for rt in list(_runtimes):
        rt.active = set()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_calls_after_fork)


# --------------------------------------------------------------------------- interpreter exit

_exit_hook_registered = False


def _register_exit_hook() -> None:
    global _exit_hook_registered
    if _exit_hook_registered:
        return
    _exit_hook_registered = True
    # threading's own exit hooks run before the interpreter waits for non-daemon threads
    # (concurrent.futures registers its pools' the same way): a thread blocked in
    # Host.call gets its answer instead of holding the exit up.
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(_cancel_at_exit)
            return
    except RuntimeError:  # the interpreter is already shutting down
        return
    import atexit  # pragma: no cover - every supported Python has threading's hook

    atexit.register(_cancel_at_exit)  # pragma: no cover


def _cancel_at_exit() -> None:
    """Cancel every running call of every live host (reason ``"host closed"``) and wait,
    up to the longest cancel grace, for them to end: a tool that listens to its token sees
    the cancel and may return its own result before the interpreter goes away."""
    calls: list[Call] = []
    grace = 0.0
    for rt in list(_runtimes):
        rt.closed = True  # a call started from here on is answered "host closed"
        running = list(rt.active)
        if running:
            grace = max(grace, rt.cancel_grace)
            calls.extend(running)
    for call in calls:
        call._cancel("host closed")
    # Wait here for each call's answer and for its tool to leave: at exit no timer thread
    # may start (Python 3.12+ refuses new threads while finalizing), so the call may be
    # answered at once while its tool, which heard the cancel, is still finishing.
    end = time.monotonic() + grace
    for call in calls:
        while (not call.done() or call._inside) and time.monotonic() < end:
            time.sleep(0.005)


class _Rounds:
    """A call's loop-rule state, made only when it is needed (a resume, or the first
    suspension): most calls never ask, so they do not carry it."""

    __slots__ = ("answer", "asked", "question", "request", "round")

    def __init__(self) -> None:
        self.request: Request | None = None  # the request the call last suspended on
        self.answer: Answer | None = None  # the answer the next attempt gets in ctx.answer
        self.round: int | None = None  # a resume: the round of the answer it was given
        self.asked = 0  # answers taken through wait_for
        self.question: _Question | None = None  # the wait_for running now


class _OnAttempt:
    """A timer's action on one attempt of a call: ``method(call, attempt)``. A third the
    size of a closure or a ``functools.partial``, for every call with a deadline armed."""

    __slots__ = ("attempt", "call", "method")

    def __init__(self, method: Callable[[Call, int], None], call: Call, attempt: int) -> None:
        self.method = method
        self.call = call
        self.attempt = attempt

    def __call__(self) -> None:
        self.method(self.call, self.attempt)


class Progress:
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


class _NoPublicConstructor(type):
    """A class only the package makes (trio's ``NoPublicConstructor`` idea): calling it
    raises :class:`~toolnexus.errors.InvalidTypeError` (a ``TypeError``); the package calls
    its ``_create`` classmethod instead."""

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise InvalidTypeError(
            f"toolnexus.{cls.__name__} has no public constructor: Host.submit(name, args) "
            "starts a call and returns its Call"
        )


class Call(metaclass=_NoPublicConstructor):
    """A tool call started with :meth:`Host.submit`: a future for its :class:`ToolResult`.

    ``result()`` waits for it, ``cancel()`` stops it, ``add_done_callback()`` hears when it
    ends; ``await call`` waits without blocking an event loop. The result is what
    :meth:`Host.call` would have returned: never an exception for what the tool did.
    Only a host makes calls: ``Call(...)`` raises ``TypeError``.

    Example::

        call = host.submit("add", {"a": 1, "b": 2}, timeout_ms=500)
        call.add_done_callback(lambda c: print(c.result().output))
        assert call.result(timeout=5).output == "3"
    """

    __slots__ = (
        "_args",
        "_attempt",
        "_budget",
        "_callbacks",
        "_context",
        "_ctx",
        "_deadline",
        "_deferred",
        "_event",
        "_id",
        "_inside",
        "_io",
        "_launched",
        "_lock",
        "_loop",
        "_name",
        "_outcome",
        "_owner",
        "_owner_future",
        "_owner_thread",
        "_progress",
        "_raw_args",
        "_reason",
        "_registration",
        "_result",
        "_rounds",
        "_rt",
        "_runner",
        "_scope",
        "_settled",
        "_start_time",
        "_state",
        "_task",
        "_timer",
        "_tool",
        "_wakers",
        "_worker",
    )

    if TYPE_CHECKING:

        @classmethod
        def _create(
            cls,
            rt: Runtime,
            name: str,
            start_time: float,
            done_callback: Callable[[Call], object] | None = None,
        ) -> Call:
            """A new QUEUED call for ``rt``: the package's way in (``Call()`` is refused).
            ``done_callback``: its first done callback."""

    else:
        # type.__call__ itself, past the refusing metaclass: no Python frame of its own.
        _create = classmethod(type.__call__)

    def __init__(
        self,
        rt: Runtime,
        name: str,
        start_time: float,
        done_callback: Callable[[Call], object] | None = None,
    ) -> None:
        self._rt = rt
        self._name = name
        self._start_time = start_time  # for on_event's duration
        self._lock = threading.Lock()
        self._state = QUEUED
        self._reason: Reason | None = None
        self._result: ToolResult | None = None
        self._outcome: Outcome = "pending"
        self._settled = False
        self._callbacks: list[Callable[[Call], object]] | None = (
            None if done_callback is None else [done_callback]
        )
        self._wakers: list[Callable[[], object]] | None = None
        self._event: threading.Event | None = None
        self._owner: Callable[[], object] | None = None  # wakes the owner for deferred effects
        self._owner_thread = 0
        self._owner_future: asyncio.Future[None] | None = None
        self._deferred: list[Callable[[], object]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[Any] | None = None
        self._timer: _timers.Timer | None = None
        self._worker: Worker | None = None
        self._inside = False  # a worker is running the attempt's tool right now
        self._io: Any = None  # (ON_IO) what carries the answer: its starter may read it
        self._launched = False
        self._scope: CancellationTokenSource | None = None
        self._registration: Any = None
        self._rounds: _Rounds | None = None  # made by a resume or the first suspension
        self._raw_args: Any = None
        self._attempt = 0
        self._progress: Progress | None = None
        self._context: contextvars.Context | None = None
        self._ctx: ToolContext | None = None
        self._deadline: float | None = None
        self._runner = ON_POOL
        self._tool: Tool | None = None
        self._args: dict[str, Any] | None = None
        self._budget: int | None = None
        self._id: str | None = None

    # ------------------------------------------------------------------ the public face

    @property
    def name(self) -> str:
        """The tool name the call asked for (as the caller spelled it)."""
        return self._name

    @property
    def id(self) -> str:
        """The call's own id: unguessable, made on first use (``call-`` and 128 random
        bits in hex). :meth:`Host.find <toolnexus.Host.find>` looks a call kept by
        ``submit(..., keep_ms=...)`` up by it."""
        ident = self._id
        if ident is None:
            import secrets

            ident = self._id = "call-" + secrets.token_hex(16)
        return ident

    def done(self) -> bool:
        """True once the call has its result (even while its callbacks still run)."""
        return self._state == DONE

    def cancelled(self) -> bool:
        """True when the call ended cancelled (by the caller, or its host closing); False
        while it runs and for every other outcome."""
        return self._state == DONE and self._outcome == "cancelled"

    @property
    def reason(self) -> Reason | None:
        """Why the call was cancelled — ``"caller"``, ``"deadline"`` or ``"host closed"`` —
        recorded when it happened; None when nothing cancelled it."""
        return self._reason

    @property
    def outcome(self) -> Outcome:
        """``"ok"``, ``"error"``, ``"pending"`` (suspended on a question), ``"timeout"`` or
        ``"cancelled"`` once done; ``"pending"`` while it runs."""
        return self._outcome

    def result(self, timeout: float | None = None) -> ToolResult:
        """Wait for the call and return its result.

        Raises :class:`~toolnexus.errors.WaitTimeoutError` (a ``TimeoutError``) when
        ``timeout`` seconds pass first; the call goes on.

        Example::

            result = host.submit("add", {"a": 1, "b": 2}).result(timeout=5)
        """
        if self._state != DONE:
            with self._lock:
                if self._state != DONE and self._event is None:
                    self._event = threading.Event()
                event = self._event
            if event is not None and not event.wait(timeout):
                raise WaitTimeoutError(
                    f"call to {self._name!r} still running after {timeout} s; the call goes "
                    "on: wait again, or cancel() it"
                )
        result = self._result
        assert result is not None
        return result

    def cancel(self) -> bool:
        """Cancel the call (reason ``"caller"``).

        A call still queued never starts. A running tool's token is cancelled, and a tool
        that can hear it gets the host's short cancel grace to return its own result;
        after that (at once for a sync tool that takes no context) the call is
        answered ``cancelled by the caller`` and the tool abandoned. Returns True if the
        call is now cancelled; False if it had finished, or its deadline had already passed
        (the timeout stands).
        """
        return self._cancel("caller")

    def add_done_callback(self, fn: Callable[[Call], object]) -> None:
        """Run ``fn(call)`` once when the call is done — at once, here, if it already is.

        It never runs on the timer thread: it runs on the thread that finished the call
        (a worker, a canceller, the call's owner) or on the dispatcher. An exception from it
        is logged.
        """
        if not callable(fn):
            raise InvalidTypeError(f"add_done_callback() takes a callable, got {type(fn).__name__}")
        with self._lock:
            if not self._settled:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        self._run_callback(fn)

    def __await__(self) -> Generator[Any, None, ToolResult]:
        return self._wait_async().__await__()

    async def _wait_async(self) -> ToolResult:
        if self._state == DONE:
            return self.result()
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(resolve_future, future)

        self._add_waker(wake)
        try:
            await future
        except asyncio.CancelledError:
            self._cancel("caller")
            raise
        return self.result()

    def __repr__(self) -> str:
        state = _STATE_NAMES[self._state]
        if self._state == DONE:
            state = f"done {self._outcome}"
        reason = f" reason={self._reason!r}" if self._reason is not None else ""
        return f"<Call {self._name!r} {state}{reason}>"

    # ------------------------------------------------------------------ set-up (host side)

    def _prepare(
        self,
        tool: Tool,
        args: dict[str, Any],
        raw_args: Any,
        budget: int | None,
        token: CancellationToken | None,
        progress: ProgressReporter | None,
        answer: Answer | None,
        round: int | None,
        done_callback: Callable[[Call], object] | None = None,
    ) -> None:
        """Fill in what the tool needs; nothing runs yet (see :meth:`_start`). ``raw_args``
        are the arguments as the caller gave them (a binding names them); ``round`` is set
        for a resume: the round of its checked ``answer``. ``done_callback``, when given,
        takes the place of the first done callback (no other thread knows the call yet: no
        lock needed)."""
        if done_callback is not None:
            self._callbacks = [done_callback]
        self._tool = tool
        self._args = args
        self._raw_args = raw_args
        self._budget = budget
        if answer is not None:
            rounds = self._rounds = _Rounds()
            rounds.answer = answer
            rounds.round = round
        if progress is not None:
            self._progress = Progress(progress, self._name)
        self._context = contextvars.copy_context()
        if token is not None and token.can_be_cancelled:
            self._registration = token.register(
                StateLink(self._caller_cancelled, self._caller_cancelled_by_timer)
            )

    def _own(
        self,
        wake: Callable[[], object] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        settled: asyncio.Future[None] | None = None,
    ) -> None:
        """Make the caller the owner: ``OWNER`` effects are queued for it and ``wake()``
        tells it. ``Host.call`` blocks on them in :meth:`_wait_owned`; ``Host.acall``
        passes its running ``loop`` (the wake drains them there) and awaits ``settled``,
        resolved once the call is settled."""
        self._owner = wake if wake is not None else self._wake_loop
        self._owner_thread = threading.get_ident()
        self._loop = loop
        self._owner_future = settled

    def _wake_loop(self) -> None:
        """The wake of an owner that is an event loop: drain the queued effects there."""
        loop = self._loop
        assert loop is not None
        if threading.get_ident() == self._owner_thread:
            loop.call_soon(self._drain)
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(self._drain)

    def _start(self, inline: bool = False, reads: bool = False) -> None:
        """Start a call made with ``Host._prepare_call``: queued for a worker, or with
        ``inline=True`` run here, on the calling thread (an ``async def`` tool on a private
        loop), returning once the tool returned. A call already settled (refused, bad
        arguments, cancelled meanwhile) stays as it is.

        A tool that starts on its own I/O (nobody owns the call) leaves what carries its
        answer in ``_io``: with ``reads``, the starter will read it while it waits for
        the call's end (``_io.read_until``: a server's worker draining the call's
        response); else the client's reader thread is told to read it, at once.

        Raises :class:`~toolnexus.errors.InvalidValueError` (a ``ValueError``) when the
        call was started before.
        """
        # The first attempt: queued for a worker, run here, or on the owner's loop.
        runner = ON_POOL
        if inline:
            runner = INLINE
        else:
            worker = current_worker()
            if worker is not None and worker.pool is self._rt.pool and self._owner is None:
                runner = INLINE  # a tool calling its own host: no worker to wait for
            elif (
                self._loop is not None
                and self._tool is not None
                and self._tool.is_async
                and self._rt.async_on_loop
            ):
                runner = ON_LOOP
            elif self._owner is None and _starts_io(self._tool):
                runner = ON_IO  # nobody waits on a thread: no worker waits for it either
        self._start_attempt(runner, reads)  # checks, under its lock, that it starts once

    def _run_on_caller(self) -> ToolResult:
        """``Host.call`` of a tool that runs on its caller: start it here and return its
        result. Unowned: this thread is inside the tool, so what a deadline or a cancel
        does meanwhile (waking the tool's I/O) runs on the dispatcher, not here. Ctrl-C
        here cancels the call, then goes on, as in :meth:`_wait_owned`."""
        self._start_attempt(ON_CALLER)
        return self.result()

    def _finish_now(
        self, result: ToolResult, outcome: Outcome, reason: Reason | None = None
    ) -> None:
        """Settle a call that never reached a tool (refused, bad arguments, cancelled
        before it started) on the calling thread."""
        with self._lock:
            self._reason = reason
            effects = self._done_locked(result, outcome)
        self._carry_out(effects)

    def _wait_owned(self) -> ToolResult:
        """``Host.call``: own the call, start it and block until it is settled, running
        its ``OWNER`` effects on this thread.

        Whatever interrupts the wait — Ctrl-C's ``KeyboardInterrupt`` above all — cancels
        the call first (its tool's token is cancelled here), then lets the call go on
        without an owner and re-raises.
        """
        # The owner's wake-ups: a SimpleQueue waits and wakes in C. threading.Event, whose
        # Condition is Python code, cost 44k instructions more per Host.call (+48%).
        wakes: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._own(functools.partial(wakes.put, None))
        try:
            self._start()
            while not self._drain():
                wakes.get()
        except BaseException:
            self._cancel("caller")
            self._disown()
            raise
        result = self._result
        assert result is not None
        return result

    def _drain(self) -> bool:
        """Run the effects queued for the owner (on the owner's thread); True once the
        call is settled."""
        with self._lock:
            effects, self._deferred = self._deferred, None
        if effects:
            for effect in effects:
                effect()
        return self._settled

    def _disown(self) -> None:
        """The owner stops waiting: effects run where they are made from now on (the
        dispatcher for a timer's), and those already queued run here."""
        with self._lock:
            self._owner = None
            self._owner_thread = 0
            effects, self._deferred = self._deferred, None
        if effects:
            for effect in effects:
                effect()

    # ------------------------------------------------------------------ attempts

    def _start_attempt(self, first: int | None = None, reads: bool = False) -> None:
        """Arm the attempt's deadline (a fresh budget per attempt) and hand it to its runner.

        ``first`` is the first attempt's runner, from :meth:`_start`: under the attempt's
        own lock (one lock, not two, on every call's path) it checks that this is the
        call's only start, and registers the call with its host. ``reads``: see
        :meth:`_start`.
        """
        failed: list[int] | None = None
        with self._lock:
            if first is not None:
                if self._launched:
                    raise InvalidValueError(
                        f"call to {self._name!r} was already started; a call starts once"
                    )
                self._launched = True
                self._runner = first
                active = self._rt.active
                active.add(self)
                if self._state == DONE:  # the caller's token cancelled it while it was set up
                    active.discard(self)
                    return
                closed = self._rt.closed
            else:
                closed = False
            if closed or self._state != QUEUED:
                tool = None  # (a closed host's cancel takes this lock: below)
            else:
                tool, args, budget = self._tool, self._args, self._budget
                assert args is not None and tool is not None
                # A token and a context only for a tool that can see them (an async tool
                # run off its caller's loop is stopped through the token), or for a call
                # that can be stopped (a deadline, a caller's token) whose argument check
                # hears a token (a long check: Tool.hears_token), whatever the tool takes.
                # They cost as much as the rest of the set-up: nobody else would read
                # them. Made before the deadline is armed: the context's deadline is then
                # never later than the call's, so a tool that sees its token cancelled by
                # the deadline finds ctx.deadline passed.
                stoppable = budget is not None or self._registration is not None
                heard = tool.takes_context or (stoppable and tool.hears_token)
                if heard or (tool.is_async and self._runner != ON_LOOP):
                    scope = self._scope = CancellationTokenSource()
                    self._ctx = (
                        ToolContext(
                            budget,
                            scope.token,
                            None if self._rounds is None else self._rounds.answer,
                            self._progress,
                            principal=self._principal(),
                        )
                        if heard
                        else None
                    )
                else:
                    self._scope = self._ctx = None
                if budget is not None:
                    ctx = self._ctx  # (the context's deadline is the call's: one instant)
                    due = time.monotonic() if ctx is None else ctx._started
                    due = self._deadline = due + budget / 1000
                    try:
                        self._timer = _timers.schedule(
                            due,
                            _OnAttempt(Call._deadline_passed, self, self._attempt),
                            quick=True,
                        )
                    except _timers.TimerStartError:  # never raise through the host: answer
                        failed = self._done_locked(
                            ToolResult.error(
                                f"'{self._name}' was not run: no timer thread could be "
                                "started to enforce its deadline"
                            ),
                            "error",
                        )
                    else:
                        if self._scope is not None:  # its deadline cancels the token, on time
                            self._scope._due_at(due)
                runner = self._runner
                if failed is None and runner in (INLINE, ON_CALLER, ON_IO):  # RUNNING at once
                    self._state = RUNNING
                    self._inside = True
                    self._worker = None
        if tool is None:  # no longer queued (cancelled, past its deadline), or host closed
            if closed:
                self._cancel("host closed")
            return
        if failed is not None:
            self._carry_out(failed)
            return
        if runner in (INLINE, ON_CALLER):
            assert args is not None and self._context is not None
            self._run_tool(tool, args, self._ctx, self._context)
        elif runner == ON_IO:
            assert args is not None and self._context is not None
            self._start_io(tool, args, self._ctx, self._context, reads)
        elif runner == ON_LOOP:
            self._start_task()
        else:
            problem = self._rt.pool.submit(self._run)
            if problem is not None:
                self._finish_now(
                    ToolResult.error(f"'{self._name}' was not run: {problem}"), "error"
                )

    def _principal(self) -> Principal | None:
        """Who the serving driver verified made this call (``bound_principal`` in the
        context the call copied), or None."""
        context = self._context
        return None if context is None else context.get(bound_principal)

    def _run(self) -> None:
        """Run the attempt on this pool worker; never raises."""
        with self._lock:
            if self._state != QUEUED:
                return  # cancelled or past its deadline while queued: it never starts
            self._state = RUNNING
            self._inside = True
            self._worker = current_worker()
            tool, args, ctx, context = self._tool, self._args, self._ctx, self._context
        assert tool is not None and args is not None and context is not None
        self._run_tool(tool, args, ctx, context)

    def _run_tool(
        self,
        tool: Tool,
        args: dict[str, Any],
        ctx: ToolContext | None,
        context: contextvars.Context,
    ) -> None:
        """The attempt's tool, on this thread (the call is RUNNING); never raises."""
        # (No closure here, for the async tool's sake: its cells would cost every call.)
        try:
            if tool.is_async:
                value = context.run(self._run_async_tool, tool, args, ctx)
            else:
                value = context.run(tool, args, ctx)
        except BaseException as exc:  # the tool's wrapper let it through: still an answer
            if self._runner == ON_CALLER and isinstance(exc, KeyboardInterrupt):
                self._cancel("caller")  # Ctrl-C in Host.call: cancelled, and it goes on
                self._returned(_NO_WORDS)
                raise
            value = exc
        self._returned(value)

    def _start_io(
        self,
        tool: Tool,
        args: dict[str, Any],
        ctx: ToolContext | None,
        context: contextvars.Context,
        reads: bool,
    ) -> None:
        """Start the attempt's tool on its own I/O (the call is RUNNING): it returns at
        once, and its end comes to :meth:`_returned` from whichever thread ends it. Its
        answer is read by the starter (``reads``: it keeps what carries it in ``_io``)
        or by the client's reader thread. A tool that cannot start so (see
        ``Tool._start_io``) is queued for a worker instead; never raises."""
        try:
            started = context.run(tool._start_io, args, ctx, self._returned)
        except BaseException as exc:  # the wrapper let it through: still an answer
            self._returned(exc)
            return
        if started is not None:
            if started is not True:  # (True: the tool has answered already)
                if reads:
                    self._io = started
                else:
                    started.read_for_others()  # type: ignore[attr-defined]
            return
        with self._lock:
            queued = self._state == RUNNING
            if queued:  # nothing ran: the attempt waits for a worker as any other
                self._state = QUEUED
                self._inside = False
                self._runner = ON_POOL
        if not queued:  # a deadline or a cancel came meanwhile: the tool never ran
            self._returned(_NO_WORDS)
            return
        problem = self._rt.pool.submit(self._run)
        if problem is not None:
            self._finish_now(ToolResult.error(f"'{self._name}' was not run: {problem}"), "error")

    def _run_async_tool(self, tool: Tool, args: dict[str, Any], ctx: ToolContext | None) -> Any:
        """An ``async def`` tool, to completion on this thread: on a private loop — or, from
        inside a running loop (an async tool that called its own host synchronously), on a
        helper thread's loop. Stopped through the call's token."""
        from . import _aio

        scope = self._scope
        assert scope is not None
        value = _aio.run_blocking(lambda: _aio.drive(tool.acall(args, ctx), scope.token))
        return _NO_WORDS if value is _aio.CANCELLED else value

    def _start_task(self) -> None:
        loop = self._loop
        assert loop is not None and self._tool is not None
        with self._lock:
            if self._state != QUEUED:
                return
            self._state = RUNNING
            coro = _on_loop(self, self._tool.acall(self._args or {}, self._ctx))
        # Created on the owner's loop from the caller's task: it inherits the caller's context.
        self._task = loop.create_task(coro)

    def _returned(self, value: Any) -> None:
        """The attempt's tool returned ``value`` (a result, or what it raised)."""
        result = value if value.__class__ is ToolResult else _as_result(self._tool, value)
        with self._lock:
            self._inside = False
            state = self._state
            if state == RUNNING:
                if result.is_error or self._timer is not None:
                    effects = self._settle_attempt_locked(result)
                else:  # an answer, no deadline armed: what the loop rule says, one frame less
                    effects = self._done_locked(result, "ok")
            elif state == GRACE:
                words = None if value is _NO_WORDS else result
                effects = self._done_locked(
                    _timeout_result(self._budget, words, self._name), "timeout"
                )
            elif state == CANCELLING:
                if value is _NO_WORDS:
                    result = ToolResult.error(_cancel_text(self._reason))
                effects = self._done_locked(result, "cancelled")
            else:  # abandoned: the call was answered without us
                effects = None
        if effects is None:
            if self._runner == ON_POOL:
                self._rt.pool.release(self._worker)
            self._report_late()
            return
        if self._owner is None:  # what _carry_out does for a call nobody owns, inlined
            for effect in effects:
                getattr(self, _EFFECTS[effect])()
            return
        self._carry_out(effects)

    def _settle_attempt_locked(self, result: ToolResult) -> list[int]:
        """The tool returned in time: apply the loop rule."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # Only an error result can be pending (ToolResult refuses anything else).
        request = ToolResult.pending_of(result) if result.is_error else None
        if request is None:
            return self._done_locked(result, "error" if result.is_error else "ok")
        rounds = self._rounds
        if rounds is None:
            rounds = self._rounds = _Rounds()
        rounds.request = request
        rt = self._rt
        if rounds.round is not None or rt.wait_for is None:
            # Loop rule 2: hand the question back bound to this call (or unresolved).
            result = rt.binder.hand_back(
                self._name, self._raw_args, result, rounds.round or 0, rt.max_rounds
            )
            return self._done_locked(result, "pending" if result.is_pending else "error")
        if not loop_rule.may_ask_again(rounds.asked, rt.max_rounds):
            return self._done_locked(loop_rule.unresolved(result), "error")
        rounds.asked += 1
        self._state = ASKING
        # The attempt is over: its token and context go now, not when the call ends.
        scope, self._scope, self._ctx = self._scope, None, None
        if scope is not None:
            scope.close()
        return [ASK]

    # ------------------------------------------------------------------ timers (quick)

    # Timer actions (quick): each is given the attempt it was armed for, and does nothing
    # for another one (a retry started meanwhile).

    def _deadline_passed(self, attempt: int) -> None:
        """The attempt's deadline passed: a call still queued never starts; a running one
        has its tool's token cancelled and gets the grace period."""
        with self._lock:
            if self._attempt != attempt:
                return
            state = self._state
            if state == QUEUED:
                self._reason = "deadline"
                pool = self._rt.pool
                waited = _NEVER_STARTED if pool.busy >= pool.limit else _NO_WORKER_YET
                effects = self._done_locked(
                    _timeout_result(self._budget, waited, self._name), "timeout"
                )
            elif state == RUNNING:
                self._reason = "deadline"
                self._state = GRACE
                assert self._deadline is not None
                self._timer = _timers.schedule(
                    self._deadline + self._rt.grace,
                    _OnAttempt(Call._grace_ended, self, attempt),
                    quick=True,
                )
                effects = [CANCEL_TOOL]
            else:
                return
        self._carry_out(effects, from_timer=True)

    def _grace_ended(self, attempt: int) -> None:
        """The grace after a deadline or a cancel ended with the tool still running."""
        with self._lock:
            if self._attempt != attempt or self._state not in (GRACE, CANCELLING):
                return
            effects = self._abandon_locked()
        self._carry_out(effects, from_timer=True)

    def _abandon_locked(self) -> list[int]:
        """The tool is still running after its grace: answer without it."""
        stuck = self._rt.pool.abandon(self._worker) if self._runner == ON_POOL else 0
        if self._state == GRACE:
            _log.warning(
                "toolnexus host: %r ignored its deadline (%s ms) and the %s ms grace period; "
                "it was abandoned (%d stuck)",
                self._name,
                self._budget,
                self._rt.grace_ms,
                stuck,
            )
            effects = self._done_locked(
                _timeout_result(self._budget, _ABANDONED, self._name, self._rt.grace_ms),
                "timeout",
            )
        else:
            effects = self._done_locked(ToolResult.error(_cancel_text(self._reason)), "cancelled")
        if self._task is not None:
            effects.append(FORGET_TASK)
        return effects

    # ------------------------------------------------------------------ cancellation

    def _caller_cancelled(self) -> None:
        self._cancel("caller")

    def _caller_cancelled_by_timer(self) -> None:
        """The caller's token was cancelled by a timer (its ``cancel_after``, a linked
        parent's deadline): the state changes here, on the timer thread; the effects go to
        the owner or the dispatcher, as a deadline's do."""
        self._cancel("caller", from_timer=True)

    def _cancel(self, reason: Reason, *, from_timer: bool = False) -> bool:
        with self._lock:
            state = self._state
            if state in (DONE, GRACE):
                return False
            if state == CANCELLING:
                return True
            self._reason = reason
            if state == RUNNING:
                self._state = CANCELLING
                if self._timer is not None:
                    self._timer.cancel()
                grace = self._rt.cancel_grace
                if grace > 0 and self._listening():
                    try:
                        self._timer = _timers.schedule(
                            time.monotonic() + grace,
                            _OnAttempt(Call._grace_ended, self, self._attempt),
                            quick=True,
                        )
                    except _timers.TimerStartError:  # nothing could end the grace: none
                        grace = 0
                    else:
                        grace = -1  # the timer ends it
                if grace == 0:
                    effects = [CANCEL_TOOL, *self._abandon_locked()]
                elif grace > 0:
                    effects = [CANCEL_TOOL, *self._answer_unheard_locked(grace)]
                else:
                    effects = [CANCEL_TOOL]
            else:  # queued (never starts) or asking (the question is dropped)
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                effects = self._done_locked(ToolResult.error(_cancel_text(reason)), "cancelled")
                if state == ASKING:
                    effects.append(DROP_QUESTION)
        self._carry_out(effects, from_timer=from_timer)
        return True

    def _listening(self) -> bool:
        """Whether the running tool can hear a cancel, decided by the tool alone (never by
        timing): an async tool always can (its task is cancelled), a sync one only if it
        takes a context (its token is how it hears). A tool that cannot hear gets no grace."""
        tool = self._tool
        return tool is None or tool.is_async or tool.takes_context

    def _answer_unheard_locked(self, grace: float) -> list[int]:
        """Cancelled while running a tool that cannot hear it (takes no context): waiting for it
        to return its own words would only delay the answer, so the host answers now. Its
        worker counts as stuck only if the tool is still inside when the grace ends, as it
        would have after waiting."""
        if self._runner == ON_POOL and self._worker is not None:
            try:
                _timers.schedule(
                    time.monotonic() + grace,
                    functools.partial(Call._abandon_if_inside, self, self._attempt, self._worker),
                    quick=True,
                )
            except _timers.TimerStartError:  # no timer to look later: count it stuck now
                self._rt.pool.abandon(self._worker)
        return self._done_locked(ToolResult.error(_cancel_text(self._reason)), "cancelled")

    def _abandon_if_inside(self, attempt: int, worker: Worker) -> None:
        """A cancel's grace ended: a tool still inside holds its worker, counted stuck."""
        with self._lock:
            if self._inside and self._attempt == attempt:
                self._rt.pool.abandon(worker)

    def _cancel_tool(self) -> None:
        """Cancel the running attempt's token (its callbacks run here) and its task."""
        scope = self._scope
        if scope is not None:
            scope.cancel()
        self._cancel_task()

    def _cancel_tool_from_timer(self) -> Callable[[], object] | None:
        """The timer thread's part of :meth:`_cancel_tool`: the token is cancelled (flag and
        Event) now, so a tool polling it stops on time whatever else is queued; returns the
        rest — the token's callbacks and stopping the task — for the owner or dispatcher."""
        scope = self._scope
        run = scope._cancel_state() if scope is not None else None
        if self._task is None:
            return run

        def rest() -> None:
            if run is not None:
                run()
            self._cancel_task()

        return rest

    def _cancel_task(self) -> None:
        task, loop = self._task, self._loop
        if task is not None and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to stop
                loop.call_soon_threadsafe(task.cancel)

    def _forget_task(self) -> None:
        task = self._task
        if task is not None:
            task.cancel()  # its late return is reported and discarded (see _on_loop)

    # ------------------------------------------------------------------ questions

    def _ask(self) -> None:
        """Loop rule 1: ask ``wait_for`` off the tool workers, with its own budget."""
        rt = self._rt
        rounds = self._rounds
        assert rounds is not None and rounds.request is not None
        if rounds.request.is_expired():
            self._answered(loop_rule.Refused("expired"), None)
            return
        question = _Question(self, rounds.request)
        unbounded = False
        with self._lock:
            if self._state != ASKING:
                return
            rounds.question = question
            if rt.question_ms is not None:
                try:
                    self._timer = _timers.schedule(
                        time.monotonic() + rt.question_ms / 1000,
                        functools.partial(Call._question_expired, self, question),
                        quick=True,
                    )
                except _timers.TimerStartError:
                    unbounded = True
        if unbounded:  # never a question that nothing can end
            self._answered(
                loop_rule.Refused("no timer thread could be started to bound the question"),
                question,
            )
            return
        if self._loop is not None and rt.wait_for_is_async:
            question.start_task(self._loop)
            return
        problem = rt.questions.submit(question.run)
        if problem is not None:
            self._answered(loop_rule.Refused(problem), question)

    def _question_expired(self, question: _Question) -> None:
        """The question's budget passed (a quick timer action)."""
        rounds = self._rounds
        assert rounds is not None and rounds.request is not None
        with self._lock:
            if rounds.question is not question or self._state != ASKING:
                return
            self._rt.questions.abandon(question.worker)
            effects = self._done_locked(loop_rule.declined(rounds.request, "expired"), "error")
            effects.append(DROP_QUESTION)
        _log.warning(
            "toolnexus host: wait_for gave no answer to %r within %s ms; treated as declined",
            question.request.id,
            self._rt.question_ms,
        )
        self._carry_out(effects, from_timer=True)

    def _drop_question(self) -> None:
        question = self._rounds.question if self._rounds is not None else None
        if question is not None:
            question.drop()

    def _answered(self, answer: object, question: _Question | None) -> None:
        """``wait_for`` answered (or could not): retry with the answer, or settle."""
        rounds = self._rounds
        assert rounds is not None and rounds.request is not None
        checked = loop_rule.check_answer(rounds.request, answer)
        with self._lock:
            if self._state != ASKING or (question is not None and rounds.question is not question):
                return  # cancelled or expired meanwhile
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            rounds.question = None
            if isinstance(checked, ToolResult):
                effects = self._done_locked(checked, "error")
            else:
                # The retry: same tool, same arguments, the answer, a fresh tool budget.
                rounds.answer = checked
                self._attempt += 1
                self._state = QUEUED
                effects = [START]
        self._carry_out(effects)

    # ------------------------------------------------------------------ the end

    def _done_locked(self, result: ToolResult, outcome: Outcome) -> list[int]:
        """Enter DONE (the lock is held): record, wake waiters; settling is an effect."""
        self._state = DONE
        self._result = result
        self._outcome = outcome
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._event is not None:
            self._event.set()
        return [SETTLE]

    def _settle(self) -> None:
        """Let go of everything, report the event, run the callbacks (once)."""
        rt = self._rt
        rt.active.discard(self)
        registration, self._registration = self._registration, None
        if registration is not None:
            registration.unregister()
        scope = self._scope
        if scope is not None:
            scope.close()
        if self._progress is not None:
            self._progress.live = False
        if self._runner == ON_LOOP and self._outcome == "timeout":
            self._report_blocked_loop()
        if rt.emit is not None:
            request = self._rounds.request if self._rounds is not None else None
            rt.emit(
                self._name,
                self._start_time,
                self._outcome,
                request.id if request is not None else None,
            )
        with self._lock:
            self._settled = True
            callbacks, self._callbacks = self._callbacks, None
            wakers, self._wakers = self._wakers, None
        if callbacks:
            for fn in callbacks:
                try:
                    fn(self)
                except Exception:
                    _log.exception(_CALLBACK_FAILED, self._name)
        if self._owner_future is not None:  # settling runs on the owner's loop thread
            resolve_future(self._owner_future)
        if wakers:
            for wake in wakers:
                wake()

    def _run_callback(self, fn: Callable[[Call], object]) -> None:
        try:
            fn(self)
        except Exception:
            _log.exception(_CALLBACK_FAILED, self._name)

    def _add_waker(self, wake: Callable[[], object]) -> None:
        with self._lock:
            if not self._settled:
                if self._wakers is None:
                    self._wakers = []
                self._wakers.append(wake)
                return
        wake()

    def _report_blocked_loop(self) -> None:
        """A timeout settled on the owner's loop well after its deadline and grace: the
        loop was busy meanwhile, most likely in the tool itself. Say what would help."""
        assert self._deadline is not None
        late_ms = (time.monotonic() - self._deadline - self._rt.grace) * 1000
        if late_ms > _BLOCKED_LOOP_MS:
            _log.warning(
                "toolnexus host: the timeout of %r reached its caller %.0f ms after the "
                "deadline and grace: the event loop running it was busy, as it is while an "
                "async tool blocks it (time.sleep, a sync client, long CPU work). "
                'Host(..., async_tools="workers") runs async tools on worker threads, '
                "where their deadline holds",
                self._name,
                late_ms,
            )

    def _report_late(self) -> None:
        _log.log(
            10 if self._reason != "deadline" else 30,  # logging.DEBUG, logging.WARNING
            "toolnexus host: abandoned call %r returned after it was answered; its result "
            "was discarded",
            self._name,
        )

    # ------------------------------------------------------------------ effects

    def _carry_out(self, effects: list[int], *, from_timer: bool = False) -> None:
        """Run the effects of a transition once the lock is released, each where
        ``_WHERE`` says: ``HERE`` effects on this thread, ``OWNER`` effects on the owner
        (queued for it and woken) unless this is its thread or there is none.

        The timer thread runs none of them: it only sets the tool's token (flag and
        Event), so a tool polling it stops on time; the rest goes to the owner, or to the
        dispatcher for a call nobody owns.
        """
        if from_timer:
            later = []  # (a loop, not a comprehension: on 3.11 that makes self a cell)
            for effect in effects:
                if effect != CANCEL_TOOL:
                    later.append(getattr(self, _EFFECTS[effect]))
            if CANCEL_TOOL in effects:
                rest = self._cancel_tool_from_timer()
                if rest is not None:
                    later.insert(0, rest)
            self._hand_over(later, dispatch=True)
            return
        if self._owner is None or threading.get_ident() == self._owner_thread:
            for effect in effects:
                getattr(self, _EFFECTS[effect])()
            return
        owned = []
        for effect in effects:
            if _WHERE[effect] == HERE:
                getattr(self, _EFFECTS[effect])()
            else:
                owned.append(getattr(self, _EFFECTS[effect]))
        self._hand_over(owned, dispatch=False)

    def _hand_over(self, effects: list[Callable[[], object]], *, dispatch: bool) -> None:
        """Queue ``effects`` for the owner and wake it; with no owner (none, or it let go)
        run them here, or on the dispatcher when ``dispatch`` (this is the timer thread)."""
        if not effects:
            return
        with self._lock:
            owner = self._owner
            if owner is not None:
                if self._deferred is None:
                    self._deferred = effects
                else:
                    self._deferred.extend(effects)
        if owner is not None:
            owner()
        elif dispatch:
            for effect in effects:
                _timers.dispatch(effect)
        else:
            for effect in effects:
                effect()


_EFFECTS = ("_settle", "_start_attempt", "_ask", "_cancel_tool", "_drop_question", "_forget_task")
"""The method each effect code runs (indexed by ``SETTLE``, ``START``, ...)."""


class _Question:
    """One ``wait_for`` call for a suspended :class:`Call`: a job for the question pool, or
    a task on the caller's loop."""

    __slots__ = ("call", "loop", "request", "source", "task", "worker")

    def __init__(self, call: Call, request: Request) -> None:
        self.call = call
        self.request = request
        self.worker: Worker | None = None
        # Only an awaitable wait_for run on a question thread needs a token to stop it.
        self.source: CancellationTokenSource | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Future[Any] | None = None

    def run(self) -> None:
        call = self.call
        with call._lock:
            if call._rounds is None or call._rounds.question is not self:
                return  # dropped while queued
            self.worker = current_worker()
        wait_for = call._rt.wait_for
        assert wait_for is not None
        try:
            value: Any = wait_for(self.request)
            if inspect.isawaitable(value):
                from . import _aio

                awaitable = value
                with call._lock:
                    source = self.source = CancellationTokenSource()
                    if call._state != ASKING:  # dropped meanwhile
                        source.cancel()
                value = _aio.run_blocking(lambda: _aio.drive(awaitable, source.token))
                if value is _aio.CANCELLED:
                    value = loop_rule.Refused("cancelled")
        except BaseException:  # a question that fails is a declined answer, never a crash
            _log.exception("toolnexus host: wait_for raised; treated as declined")
            value = loop_rule.Refused("raised")
        call._answered(value, self)

    def start_task(self, loop: asyncio.AbstractEventLoop) -> None:
        wait_for = self.call._rt.wait_for
        assert wait_for is not None
        try:
            awaitable = wait_for(self.request)
        except Exception:
            _log.exception("toolnexus host: wait_for raised; treated as declined")
            self.call._answered(loop_rule.Refused("raised"), self)
            return
        import asyncio

        self.loop = loop
        self.task = task = asyncio.ensure_future(awaitable, loop=loop)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        if task.cancelled():
            return  # dropped: the call was cancelled or the question expired
        exc = task.exception()
        if exc is not None:
            _log.error("toolnexus host: wait_for raised; treated as declined", exc_info=exc)
            self.call._answered(loop_rule.Refused("raised"), self)
            return
        self.call._answered(task.result(), self)

    def drop(self) -> None:
        """Stop the question, from any thread: its token is cancelled here, its task (if
        any) on its loop."""
        if self.source is not None:
            self.source.cancel()
        if self.task is not None and self.loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to stop
                self.loop.call_soon_threadsafe(self.task.cancel)


async def _on_loop(call: Call, awaitable: Awaitable[Any]) -> None:
    """Run an async tool as a task on its caller's loop and report what it did to ``call``
    from inside the task (a done callback would cost the caller another loop turn).
    Whatever the tool raises — ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``
    included — becomes its value, an error result, and never escapes into the loop; its
    cancellation means it said nothing of its own."""
    try:
        value = await awaitable
    except BaseException as exc:  # a tool's failure is a result
        import asyncio

        value = _NO_WORDS if isinstance(exc, asyncio.CancelledError) else exc
    call._returned(value)


# --------------------------------------------------------------------------- texts


_ABANDONED = object()  # the tool was still running when the grace ended
_NEVER_STARTED = object()  # still queued for a worker at its deadline, every worker busy
_NO_WORKER_YET = object()  # still queued at its deadline, before a worker could take it


def _starts_io(tool: Tool | None) -> bool:
    """Whether ``tool``'s function starts its own I/O and calls back (``fn.start_io``: a
    remote MCP tool), and can now (``fn.io_ready()``), so a call nobody waits for on a
    thread needs no worker. A chain's stand-in (middleware, tracing) has no ``fn``: its
    code may not hear the token."""
    fn = getattr(tool, "fn", None)
    return getattr(fn, "start_io", None) is not None and bool(fn.io_ready())  # type: ignore[union-attr]


def _cancel_text(reason: Reason | None) -> str:
    if reason == "host closed":
        return "cancelled: the host was closed"
    return "cancelled by the caller"


def _timeout_result(
    budget_ms: int | None, value: object, name: str, grace_ms: int = 0
) -> ToolResult:
    head = f"timed out after {budget_ms} ms"
    if value is _ABANDONED:
        return ToolResult.error(
            f"{head}; '{name}' did not stop within the {grace_ms} ms grace period and was abandoned"
        )
    if value is _NEVER_STARTED:
        return ToolResult.error(f"{head}; '{name}' never started: every worker was busy")
    if value is _NO_WORKER_YET:
        return ToolResult.error(
            f"{head}; '{name}' never started: the deadline passed before a worker could take it"
        )
    if isinstance(value, ToolResult) and value.output:
        return ToolResult.error(f"{head}: {value.output}")
    return ToolResult.error(head)


def _as_result(tool: Tool | None, value: object) -> ToolResult:
    """What an attempt produced, as a result: a ToolResult stands; anything else — what
    escaped the tool's own wrapper (a bug there, a BaseException), a wrong return type —
    becomes an error result, never an empty error text."""
    if isinstance(value, ToolResult):
        return value
    name = tool.name if tool is not None else "?"
    if value is _NO_WORDS:
        return ToolResult.error("cancelled")
    if isinstance(value, BaseException):
        _log.error("toolnexus host: tool %r raised through its wrapper", name, exc_info=value)
        text = str(value) or type(value).__name__
        return ToolResult.error(f"tool '{name}' failed: {text}")
    return ToolResult.error(f"tool '{name}' returned {type(value).__name__}, not a ToolResult")
