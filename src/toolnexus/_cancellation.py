"""Cancellation: one-way, sticky, observable from threads and from asyncio.

A :class:`CancellationTokenSource` owns the right to cancel; the :class:`CancellationToken`
it hands out can only observe. ``cancel_after`` timers use the package's one timer
thread (``_timers.py``, shared with the host's deadlines), so importing this module starts
no thread and a thousand timers cost one thread, not a thousand.
"""

from __future__ import annotations

import contextlib
import threading
import time

from .errors import InvalidTypeError, InvalidValueError, OperationCancelledError

# Not `from typing import TYPE_CHECKING`: importing typing would double what
# `import toolnexus` costs, and annotations here are strings anyway.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from types import TracebackType
    from typing import ClassVar

    from . import _timers

__all__ = [
    "CancellationToken",
    "CancellationTokenRegistration",
    "CancellationTokenSource",
]


class _State:
    """The shared cancellation state behind one source and all of its tokens.

    ``cancelled`` is the flag every check reads; the ``threading.Event`` that ``wait()``
    blocks on is made on the first wait, since most tokens are only ever polled and an
    Event (a Condition and two locks) is the costliest part of a source.
    """

    __slots__ = (
        "callbacks",
        "can_be_cancelled",
        "cancelled",
        "due",
        "event",
        "lock",
        "next_key",
    )

    def __init__(self, can_be_cancelled: bool) -> None:
        self.cancelled = False
        # The time.monotonic() by which a timer armed for it cancels the state (its own
        # cancel_after, a host call's deadline, a linked parent's); inf: none promises it.
        self.due = _INF
        self.event: threading.Event | None = None
        self.lock = threading.Lock()
        self.callbacks: dict[int, Callable[[], object]] | None = {}
        self.next_key = 0
        self.can_be_cancelled = can_be_cancelled

    def waitable(self) -> threading.Event:
        """The Event that is set on cancellation, made on first use."""
        event = self.event
        if event is None:
            with self.lock:
                event = self.event
                if event is None:
                    event = threading.Event()
                    if self.cancelled:
                        event.set()
                    self.event = event
        return event

    def mark(self) -> list[Callable[[], object]] | None:
        """Set the flag and the Event (no user code runs); return the callbacks the caller
        must run, or None when the state was already cancelled."""
        with self.lock:
            callbacks = self.callbacks
            if callbacks is None:
                return None
            self.callbacks = None
            # Flag and Event are set inside the lock: a concurrent register() either
            # sees the callbacks (and is run by the canceller) or sees the flag (and runs
            # itself), and a concurrent waitable() either finds the Event or makes it set.
            self.cancelled = True
            if self.event is not None:
                self.event.set()
        return list(callbacks.values())

    def cancel(self) -> bool:
        """Cancel once; return True if this call did it."""
        callbacks = self.mark()
        if callbacks is None:
            return False
        # Callbacks run outside the lock: one may register or cancel again.
        _run_callbacks(callbacks)
        return True


_INF = float("inf")


def cancelled_by(token: CancellationToken) -> float:
    """Package-internal: the ``time.monotonic()`` by which a timer armed for ``token``
    cancels it — its source's ``cancel_after``, a linked parent's, or a host call's
    deadline (:meth:`CancellationTokenSource._due_at`) — so a caller given that token and
    a deadline no earlier needs no timer of its own; ``inf`` when nothing promises it."""
    return token._state.due


class StateLink:
    """Package-internal: a callback that only moves state along (a linked source, a host
    call listening to its caller's token), so the timer thread may run it.

    ``StateLink(run, quick)`` behaves as ``run`` when called; when a timer cancels the
    token, :meth:`CancellationTokenSource._cancel_state` calls ``quick()`` on the timer
    thread instead — it changes state without running user code and returns what is left
    to run later (or None) — so a parent's deadline reaches every linked token on time,
    however busy the dispatcher is with user callbacks.
    """

    __slots__ = ("quick", "run")

    def __init__(
        self, run: Callable[[], object], quick: Callable[[], Callable[[], object] | None]
    ) -> None:
        self.run = run
        self.quick = quick

    def __call__(self) -> object:
        return self.run()


def _run_callbacks(callbacks: list[Callable[[], object]]) -> None:
    for callback in callbacks:
        _run_callback(callback)


def _run_callback(callback: Callable[[], object]) -> None:
    try:
        callback()
    except BaseException:  # a failing callback must not stop the others
        # logging loads only when something fails: it costs as much as the whole contract.
        from ._log import get_logger

        get_logger().exception("cancellation callback %r failed", callback)


class CancellationTokenRegistration:
    """The handle :meth:`CancellationToken.register` returns.

    ``unregister()`` removes the callback if it has not run yet. Usable as a context
    manager, which unregisters on exit.

    Example::

        with token.register(lambda: print("stopping")):
            do_work()
    """

    __slots__ = ("_key", "_state")

    def __init__(self, state: _State | None, key: int) -> None:
        self._state = state
        self._key = key

    def unregister(self) -> bool:
        """Remove the callback; return True if it was removed before it ran.

        Returns False when the callback already ran (or is running) or was removed before.

        Example::

            >>> source = CancellationTokenSource()
            >>> registration = source.token.register(lambda: print("never printed"))
            >>> registration.unregister(), registration.unregister()
            (True, False)
            >>> source.cancel()
        """
        state = self._state
        if state is None:
            return False
        self._state = None
        with state.lock:
            if state.callbacks is None:
                return False
            return state.callbacks.pop(self._key, None) is not None

    def __enter__(self) -> CancellationTokenRegistration:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.unregister()

    def __repr__(self) -> str:
        return f"<CancellationTokenRegistration {'active' if self._state else 'inactive'}>"


class CancellationToken:
    """An observe-only view of a cancellation, backed by a ``threading.Event``.

    Get one from :attr:`CancellationTokenSource.token`; :attr:`CancellationToken.NONE`
    is the token that is never cancelled. A token cannot cancel itself. Two tokens are
    equal when they observe the same source.

    Example::

        source = CancellationTokenSource()
        token = source.token
        source.cancel()
        assert token.is_cancellation_requested and token.wait(0)
    """

    __slots__ = ("_state",)

    NONE: ClassVar[CancellationToken]
    """The never-cancelled token: the default of every :class:`ToolContext`."""

    def __init__(self, _state: _State | None = None) -> None:
        # Users get tokens from a source; CancellationToken() alone is the NONE token.
        self._state = _state if _state is not None else _NONE_STATE

    @property
    def is_cancellation_requested(self) -> bool:
        """True once the source has been cancelled (and forever after).

        Example::

            >>> CancellationToken.NONE.is_cancellation_requested
            False
        """
        return self._state.cancelled

    @property
    def can_be_cancelled(self) -> bool:
        """False only for tokens that can never be cancelled, such as ``NONE``.

        Example::

            >>> CancellationTokenSource().token.can_be_cancelled
            True
            >>> CancellationToken.NONE.can_be_cancelled
            False
        """
        return self._state.can_be_cancelled

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass.

        Returns True if the token is cancelled, False on timeout. A ``cancel()`` on any
        thread wakes every waiter. ``wait()`` without a timeout on a token that can never
        be cancelled blocks forever, as a plain ``Event.wait()`` would.

        Example::

            >>> source = CancellationTokenSource()
            >>> source.token.wait(0.01)
            False
            >>> source.cancel_after(0.01)
            >>> source.token.wait(10)
            True
        """
        return self._state.waitable().wait(timeout)

    def register(self, callback: Callable[[], object]) -> CancellationTokenRegistration:
        """Run ``callback()`` once when the token is cancelled.

        The callback runs on the thread that calls ``cancel()``, before ``cancel()``
        returns; if the token is already cancelled it runs at once, inside this call.
        Callbacks run in registration order. A callback that raises is logged to the
        ``toolnexus`` logger and never stops the others nor raises out of ``cancel()``.

        Raises ``TypeError`` when ``callback`` is not callable. On a token that can never
        be cancelled the callback is dropped and the registration is inactive.

        Example::

            >>> source = CancellationTokenSource()
            >>> registration = source.token.register(lambda: print("stopping"))
            >>> source.cancel()
            stopping
            >>> _ = source.token.register(lambda: print("already cancelled: runs at once"))
            already cancelled: runs at once
        """
        if not callable(callback):
            raise InvalidTypeError(f"callback must be callable, got {type(callback).__name__}")
        state = self._state
        if not state.can_be_cancelled:
            return CancellationTokenRegistration(None, 0)
        with state.lock:
            callbacks = state.callbacks
            if callbacks is not None:
                key = state.next_key
                state.next_key = key + 1
                callbacks[key] = callback
                return CancellationTokenRegistration(state, key)
        _run_callback(callback)
        return CancellationTokenRegistration(None, 0)

    def raise_if_cancellation_requested(self) -> None:
        """Raise :class:`OperationCancelledError` if the token is cancelled.

        Example::

            >>> source = CancellationTokenSource()
            >>> source.token.raise_if_cancellation_requested()   # live: nothing happens
            >>> source.cancel()
            >>> source.token.raise_if_cancellation_requested()
            Traceback (most recent call last):
              ...
            toolnexus.errors.OperationCancelledError: the operation was cancelled
        """
        if self._state.cancelled:
            raise OperationCancelledError()

    async def wait_async(self, timeout: float | None = None) -> bool:
        """Wait from asyncio without blocking the event loop.

        Returns True if the token is cancelled, False when ``timeout`` seconds pass
        first. Cancelling the awaiting task cancels the wait and nothing else.

        Example::

            if not await token.wait_async(timeout=1.0):
                print("still running")
        """
        if self._state.cancelled:
            return True
        if not self._state.can_be_cancelled and timeout is None:
            # Nothing can ever wake us: behave like an un-resolvable future.
            import asyncio

            await asyncio.get_running_loop().create_future()
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            # Runs on the cancelling thread: hand the result over to the loop's thread.
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits now
                loop.call_soon_threadsafe(resolve_future, future)

        registration = self.register(wake)
        try:
            if timeout is None:
                await future
                return True
            try:
                await asyncio.wait_for(future, timeout)
            except asyncio.TimeoutError:
                return self._state.cancelled
            return True
        finally:
            registration.unregister()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CancellationToken):
            return NotImplemented
        return self._state is other._state

    def __hash__(self) -> int:
        return id(self._state)

    def __repr__(self) -> str:
        if not self._state.can_be_cancelled:
            return "<CancellationToken none>"
        return f"<CancellationToken {'cancelled' if self.is_cancellation_requested else 'live'}>"


def resolve_future(future: asyncio.Future[None]) -> None:
    """Package-internal: mark ``future`` done (once; on its loop's thread), the wake-up of
    every waiter that hands a cancellation or a call's end over to asyncio."""
    if not future.done():
        future.set_result(None)


_NONE_STATE = _State(can_be_cancelled=False)
CancellationToken.NONE = CancellationToken(_NONE_STATE)


class CancellationTokenSource:
    """Owns a cancellation: ``cancel()`` it, or let ``cancel_after()`` do it later.

    A context manager: leaving the ``with`` block stops pending ``cancel_after`` timers
    and detaches a linked source from its parents (it does not cancel the token).

    Example::

        with CancellationTokenSource() as source:
            source.cancel_after(5.0)          # give up after five seconds
            result = crunch(args, ToolContext(cancellation_token=source.token))
    """

    __slots__ = ("_links", "_state", "_timer", "token")

    def __init__(self) -> None:
        self._state = _State(can_be_cancelled=True)
        self.token = CancellationToken(self._state)
        """The observe-only token to hand to tools."""
        self._timer: _timers.Timer | None = None
        self._links: list[CancellationTokenRegistration] = []

    @classmethod
    def linked(cls, *tokens: CancellationToken) -> CancellationTokenSource:
        """A source cancelled as soon as any of ``tokens`` is.

        Cancelling the linked source itself does not touch its parents. When a parent is
        already cancelled, the new source starts cancelled. Close the source (or use it
        as a context manager) to detach it from long-lived parents.

        Raises ``TypeError`` when an argument is not a :class:`CancellationToken`.

        Example::

            with CancellationTokenSource.linked(run_token, call_token) as call:
                tool(args, ToolContext(cancellation_token=call.token))
        """
        for index, token in enumerate(tokens):
            if not isinstance(token, CancellationToken):
                raise InvalidTypeError(
                    f"linked() takes CancellationToken arguments; argument {index} "
                    f"is {type(token).__name__} (pass source.token, not the source)"
                )
        source = cls()
        for token in tokens:
            if source._state.cancelled:
                break  # a parent was already cancelled: no need to listen to the rest
            if token._state.due < source._state.due:  # cancelled with it, at the latest
                source._state.due = token._state.due
            if token.can_be_cancelled:
                source._links.append(token.register(StateLink(source.cancel, source._cancel_state)))
        if source._state.cancelled:
            source.close()  # a parent cancelled while we were linking: drop what we added
        return source

    @property
    def is_cancellation_requested(self) -> bool:
        """True once :meth:`cancel` has run (or a timer or linked parent fired).

        Example::

            >>> CancellationTokenSource().is_cancellation_requested
            False
        """
        return self._state.cancelled

    def cancel(self) -> None:
        """Cancel the token: set the event and run every registered callback once.

        Idempotent: a second call does nothing. Never raises because of a callback.
        Also stops a pending timer and detaches a linked source from its parents.

        Example::

            >>> source = CancellationTokenSource()
            >>> source.cancel()
            >>> source.token
            <CancellationToken cancelled>
        """
        if self._state.cancel():
            # Nothing can change a cancelled source any more: let go of the timer and of
            # the callbacks a linked source left on its (possibly long-lived) parents.
            self.close()

    def _cancel_state(self) -> Callable[[], None] | None:
        """Cancel without running user code (for the timer thread): set the flag and the
        Event and let go of the timer and the links now; return what runs the callbacks,
        or None when there is nothing to run."""
        callbacks = self._state.mark()
        if callbacks is None:
            return None
        self.close()
        later: list[Callable[[], object]] = []
        for callback in callbacks:
            if isinstance(callback, StateLink):
                # A linked source or a listening call: its state moves here too; what it
                # leaves (its own callbacks) joins the rest.
                rest = callback.quick()
                if rest is not None:
                    later.append(rest)
            else:
                later.append(callback)
        if not later:
            return None
        return lambda: _run_callbacks(later)

    def _timer_fired(self) -> None:
        # A quick action on the timer thread: the token is cancelled right here, on time;
        # only its callbacks (user code) wait for a dispatcher thread.
        run = self._cancel_state()
        if run is not None:
            from . import _timers

            _timers.dispatch(run)

    def cancel_after(self, seconds: float) -> None:
        """Cancel after ``seconds`` (from now), replacing any earlier ``cancel_after``.

        ``cancel_after(0)`` cancels at once, on the calling thread; otherwise the package's
        one timer thread (started on first use) cancels the token when the time comes
        (``is_cancellation_requested`` and ``wait()`` see it at once) and hands only the
        registered callbacks to a ``toolnexus-dispatch`` thread, so slow callbacks never
        delay any token's cancellation. A closed or replaced timer leaves the timer heap
        (and holds no memory). Timers armed before ``fork()`` still fire in the child.
        Does nothing on a source that is already cancelled. Raises ``ValueError`` when
        ``seconds`` is not a non-negative number, and ``TimerStartError`` (a
        ``ToolnexusError`` and a ``RuntimeError``) when the timer thread cannot be started
        (the process is out of threads); the source is then left without a timer.

        Example::

            >>> source = CancellationTokenSource()
            >>> source.cancel_after(0.01)
            >>> source
            <CancellationTokenSource live timer pending>
            >>> source.token.wait(10)
            True
        """
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (seconds >= 0):
            raise InvalidValueError(f"seconds must be a number >= 0, got {seconds!r}")
        if self._state.cancelled:
            return
        self._stop_timer()
        if seconds == 0:
            self.cancel()
            return
        from . import _timers  # only programs that ask for a timer pay for it

        # Quick: the timer thread only changes the state; the callbacks are dispatched.
        due = time.monotonic() + min(seconds, 1e9)
        self._timer = _timers.schedule(due, self._timer_fired, quick=True)
        self._due_at(due)

    def _due_at(self, due: float) -> None:
        """Package-internal: a timer armed for this source cancels it at ``due`` (a
        ``time.monotonic()``), on time: see :func:`cancelled_by`."""
        state = self._state
        if due < state.due:
            state.due = due

    def close(self) -> None:
        """Stop a pending timer and detach from linked parents; the token keeps its state.

        Leaving a ``with`` block calls it.

        Example::

            >>> source = CancellationTokenSource()
            >>> source.cancel_after(3600)
            >>> source.close()
            >>> source
            <CancellationTokenSource live>
        """
        self._stop_timer()
        links, self._links = self._links, []
        if links:
            self._state.due = _INF  # detached: its parents' promise no longer holds
        for link in links:
            link.unregister()

    def _stop_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            self._state.due = _INF  # (a linked parent's promise is gone with its link)

    def __enter__(self) -> CancellationTokenSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "cancelled" if self.is_cancellation_requested else "live"
        timer = " timer pending" if self._timer is not None and self._timer.pending else ""
        return f"<CancellationTokenSource {state}{timer}>"
