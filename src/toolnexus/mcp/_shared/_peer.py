"""One MCP peer: who waits for which answer, whose question a server request is, and
writes that a peer who stops reading cannot turn into a stuck thread.

:class:`Waiter` holds the events that belong to one request of ours. :class:`Peer` is the
correlation table of one connection: the waiters by request id, the ``tools/call``\\ s in
flight, and — on legacy stdio, where a server's question names no call — which call each
question is bound to (:meth:`Peer.bind_question`). :class:`PipeWriter` writes to the
peer's input on a thread of its own with a bound: a peer that reads nothing for
``stall_s`` seconds (or lets more than ``max_bytes`` pile up) loses its own connection
with the status :data:`NOT_READING`; the thread that asked to write never waits.

The binding rule (legacy stdio). A server request carries no call id on stdio. In order:

1. ``_meta["progressToken"]`` or ``_meta["io.modelcontextprotocol/related-request-id"]``
   naming a call in flight binds the question to that call (our ``progressToken`` is the
   call's request id);
2. otherwise the question belongs to a call in flight that has no open question: the only
   one, or when several could have asked, the oldest of them (a guess the protocol leaves
   open: the answer reaches the server's request whichever call shows it);
3. a call whose question is open (handed back to the host, or being read) never inherits
   another: with no call left to bind to, the client answers ``cancel`` at once.

Not thread-safe by itself: the client holds its lock around a :class:`Peer`.

Both correlation rules of request ids live in ``_correlation.py`` (:class:`Pending`,
:class:`InFlight`); :attr:`Peer.waiters` is a :class:`Pending` — on a client the session's
own table of its requests (``ClientSession.requests``: one table per connection, each
request's method and its waiter), which the peer reads and withdraws from.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import McpError
from ._correlation import Pending

if TYPE_CHECKING:
    from typing import Protocol

    class Exchange(Protocol):
        """What a waiter holds of an HTTP request's answer (the client's ``HttpExchange``):
        the peer is shared, and knows no transport."""

        def abort(self) -> None: ...


__all__ = ["NOT_READING", "Peer", "PipeWriter", "Waiter"]

NOT_READING = "the server does not read its input"
"""The status of a connection whose peer stopped reading what we write."""

META_RELATED_REQUEST = "io.modelcontextprotocol/related-request-id"
"""A ``_meta`` key naming the request a server request belongs to, honoured when sent."""

_CAN_POLL = hasattr(select, "poll")  # not on Windows, where pipes cannot be polled


class Waiter:
    """The events that belong to one request of ours, in order.

    Over stdio the thread reading the pipe puts them here (the waiting thread itself,
    usually); over HTTP the request's own answer stream is pulled (on the waiting thread)
    until one arrives. Only its own thread waits on it, so a lock it sleeps on, made when
    it sleeps, is all the condition it needs: one made per request would cost more than
    the rest of a call's bookkeeping.

    A request nobody waits for on a thread (a call completed by whoever reads the
    connection) sets ``listener``: each event is handed to ``listener(event)`` as it is
    put, on the putting thread, and ``listener(None)`` says the waiter was closed.
    """

    __slots__ = (
        "closed",
        "events",
        "exchange",
        "failure",
        "guard",
        "listener",
        "messages",
        "request_id",
        "sleeper",
    )

    def __init__(self, request_id: int | None = None) -> None:
        self.request_id = request_id
        self.events: collections.deque[Any] = collections.deque()
        self.guard = threading.Lock()  # over sleeper
        self.sleeper: Any = None  # the lock the waiting thread sleeps on, while it does
        self.closed: str | None = None
        self.failure: Exception | None = None  # what ended it, to raise to the waiter
        self.exchange: Exchange | None = None
        self.messages: Any = None  # the exchange's message iterator (HTTP)
        self.listener: Callable[[Any], None] | None = None

    def put(self, event: Any) -> None:
        listener = self.listener
        if listener is not None:
            listener(event)
            return
        self.events.append(event)
        with self.guard:  # wake() written out: this runs for every message
            sleeper, self.sleeper = self.sleeper, None
        if sleeper is not None:
            sleeper.release()

    def close(self, reason: str, failure: Exception | None = None) -> None:
        with self.guard:
            if self.closed is None:
                self.failure = failure
                self.closed = reason
        listener = self.listener
        if listener is not None:
            listener(None)
            return
        self.wake()

    def wake(self) -> None:
        """Wake the waiting thread (it checks what changed)."""
        with self.guard:
            sleeper, self.sleeper = self.sleeper, None
        if sleeper is not None:
            sleeper.release()

    def sleep(self, ready: Callable[[], object], timeout: float | None) -> None:
        """Wait until :meth:`wake` (after ``put``, ``close`` or a cancel) or ``timeout``
        seconds; returns at once when ``ready()`` is already true."""
        sleeper = threading.Lock()
        sleeper.acquire()
        with self.guard:
            # Checked after the sleeper is in place: a wake from now on releases it.
            if ready():
                return
            self.sleeper = sleeper
        sleeper.acquire(timeout=-1 if timeout is None else timeout)
        with self.guard:
            self.sleeper = None


class Peer:
    """The correlation table of one connection (see the module's binding rule).

    ``waiters``: every request of ours still waiting for its answer, by id, as
    ``(method, waiter)`` (a :class:`Pending`: issue, answered, withdraw there; given, it
    is the client session's own table, never a copy); ``calls``: the
    ``tools/call``\\ s in flight, oldest first; ``asking``: the calls whose question is
    open, with the server request id of that question.

    Example::

        peer = Peer()
        peer.start_call(7, Waiter(7))
        owner = peer.bind_question("q1", {})
        assert owner is peer.calls[7] and peer.asking == {7: "q1"}
        assert peer.bind_question("q2", {}) is None   # 7 asks already: never inherited
    """

    __slots__ = ("asking", "calls", "pending", "waiters")

    def __init__(self, waiters: Pending[tuple[str, Any]] | None = None) -> None:
        self.waiters: Pending[tuple[str, Any]] = Pending() if waiters is None else waiters
        self.calls: dict[int, Waiter] = {}
        self.asking: dict[int, str | int] = {}
        # How many requests still wait for their answer (a reader asks it on every read).
        self.pending: Callable[[], int] = self.waiters.__len__

    def waiting(self) -> list[Waiter]:
        """Everyone still waiting for an answer."""
        return [waiter for _, waiter in self.waiters.values() if waiter is not None]

    def waiter_of(self, request_id: Any) -> Waiter | None:
        """Who waits for request ``request_id`` (a ``progressToken`` names its request);
        None when nobody does."""
        asked = self.waiters.waiting(request_id)
        return None if asked is None else asked[1]

    def start_call(self, request_id: int, waiter: Waiter) -> None:
        """Request ``request_id`` is a ``tools/call`` in flight (a question may name it),
        registered before it is sent: a question may come back before the send returns.
        ``waiter`` (the one the request was made with) learns its id."""
        waiter.request_id = request_id
        self.calls[request_id] = waiter

    def in_flight(self, request_id: int | None) -> bool:
        """True while ``request_id`` is a call in flight."""
        return request_id in self.calls

    def ask_on(self, call: int, question: str | int) -> None:
        """The server asked ``question`` on ``call``'s own answer stream (HTTP): it is
        that call's."""
        self.asking[call] = question

    def bind_question(self, question: str | int, params: Mapping[str, Any]) -> Waiter | None:
        """The call the server's question ``question`` (its request id) belongs to, now
        marked as asking; ``None`` when no call can own it (answer it ``cancel``)."""
        named = None
        meta = params.get("_meta")
        if isinstance(meta, Mapping):
            for key in ("progressToken", META_RELATED_REQUEST):
                value = meta.get(key)
                if value.__class__ is int and value in self.calls:
                    named = value
                    break
        if named is not None:
            owner: int | None = named if named not in self.asking else None
        else:
            owner = next((call for call in self.calls if call not in self.asking), None)
        if owner is None:
            return None
        self.asking[owner] = question
        return self.calls[owner]

    def question_of(self, call: int) -> str | int | None:
        """The server request id of ``call``'s open question, if it has one."""
        return self.asking.get(call)

    def question_answered(self, call: int) -> None:
        """``call``'s question was answered (or handed back unasked): it may ask again."""
        self.asking.pop(call, None)

    def finish(self, request_id: int) -> None:
        """Request ``request_id`` is over: forget it everywhere."""
        self.waiters.withdraw(request_id)
        self.calls.pop(request_id, None)
        self.asking.pop(request_id, None)


class _Stalled(Exception):
    """The peer read nothing within the stall bound."""


class PipeWriter:
    """Writes to a peer's input pipe on a thread of its own, bounded.

    :meth:`send` never blocks: what the pipe takes at once is written right there (the
    descriptor is non-blocking), the rest is queued, in order, for the writer thread. When
    the peer reads nothing for ``stall_s`` seconds while data waits, or more than
    ``max_bytes`` wait, ``on_stalled(reason)`` is called once (the owner then ends the
    connection, which ends the writer) and later sends raise :class:`McpError`. Without
    :func:`select.poll` (Windows) writes block the writer thread, and only ``max_bytes``
    bounds them.

    Example::

        read_end, write_end = os.pipe()
        writer = PipeWriter(write_end, stall_s=5, max_bytes=1 << 20, on_stalled=print,
                            label="demo")
        writer.send(b"hello\\n")
        assert os.read(read_end, 6) == b"hello\\n"
        writer.close()
    """

    def __init__(
        self,
        fd: int,
        *,
        stall_s: float,
        max_bytes: int,
        on_stalled: Callable[[str], object],
        label: str,
    ) -> None:
        self._fd = fd
        self._label = label
        self._stall_s = stall_s
        self._max_bytes = max_bytes
        self._on_stalled = on_stalled
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0  # bytes in _queue
        # The lock is taken directly where nobody waits (send: a Condition's own
        # __enter__/__exit__ are two Python calls per message); the writer waits on
        # the condition made over it.
        self._lock = threading.Lock()
        self._state = threading.Condition(self._lock)
        self._failed: str | None = None
        self._closing = False
        self._writing = False  # the writer thread holds data it took from the queue
        self._poller: Any = None
        if _CAN_POLL:
            os.set_blocking(fd, False)
            self._poller = select.poll()
            self._poller.register(fd, select.POLLOUT)
        self._thread = threading.Thread(
            target=self._run, name=f"toolnexus-mcp-{label}-writer", daemon=True
        )
        self._thread.start()

    @property
    def failed(self) -> str | None:
        """Why writing stopped for good, once it did."""
        return self._failed

    @property
    def is_writing(self) -> bool:
        """True while the writer thread runs (the pipe must stay open until it ends)."""
        return self._thread.is_alive()

    def send(self, data: bytes) -> None:
        """Write ``data`` as far as the pipe takes it now and queue the rest, without
        blocking; raises :class:`McpError` (naming ``label``) once writing failed or
        stalled."""
        stalled = None
        with self._lock:
            if self._failed is not None:
                raise McpError(self._label, self._failed)
            if self._closing:
                raise McpError(self._label, "the connection to the server is closed")
            if self._poller is not None and not self._queue and not self._writing:
                # Nothing waits before it: what the pipe takes now goes now (no hand-off
                # to the writer thread), and only the rest waits for it.
                try:
                    data = data[os.write(self._fd, data) :]
                except BlockingIOError:
                    pass
                except OSError as exc:  # the server is gone: as the writer thread says it
                    stalled = self._failed = str(exc)
                if not data and stalled is None:
                    return
            if stalled is None:
                if self._queued + len(data) > self._max_bytes and self._queued:
                    stalled = self._failed = (
                        f"{NOT_READING} ({self._queued} bytes wait to be written)"
                    )
                else:
                    self._queue.append(data)
                    self._queued += len(data)
                    self._state.notify()
        if stalled is not None:
            self._on_stalled(stalled)
            raise McpError(self._label, stalled)

    def close(self, timeout: float = 1.0) -> None:
        """Stop writing (what is queued is written first, for up to ``timeout`` seconds)
        and join the thread. Idempotent; the pipe itself is the owner's to close."""
        with self._state:
            self._closing = True
            self._state.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._state:
                while not self._queue and not self._closing:
                    self._state.wait()
                if not self._queue:
                    return
                data = self._queue.popleft()
                self._writing = True
            try:
                self._write(data)
            except (OSError, _Stalled) as exc:
                reason = str(exc) if self._failed is None else self._failed
                with self._state:
                    first = self._failed is None
                    if first:
                        self._failed = reason
                    self._queue.clear()
                    self._queued = 0
                    self._writing = False
                if first and not self._closing:
                    self._on_stalled(reason)
                return
            with self._state:
                self._queued -= len(data)
                self._writing = False

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        poller = self._poller
        since = time.monotonic()
        while view:
            if poller is None:
                view = view[os.write(self._fd, view) :]
                continue
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                written = 0
            if written:
                view = view[written:]
                since = time.monotonic()
                continue
            left = since + self._stall_s - time.monotonic()
            if self._closing:
                left = min(left, 0.0)
            if left <= 0:
                raise _Stalled(f"{NOT_READING} (it read nothing for {self._stall_s:g} s)")
            with contextlib.suppress(InterruptedError):
                poller.poll(min(left, 0.25) * 1000 + 1)
