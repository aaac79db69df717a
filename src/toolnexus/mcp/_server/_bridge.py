"""The call bridge: between a :class:`ServerSession` and the host, for every server transport.

What each transport would otherwise do its own way lives here once — the role the official
SDK's ``jsonrpc_dispatcher`` plays:

- **the lazy host** (:class:`LazyHost`, in ``_lazy_host.py`` since the session and the
  tasks name it too): made with the first call, since importing it costs more than a
  server's start-up, and closed once; a host made after the close is closed at once;
- **the in-flight byte cap** (:class:`InflightBytes`): what the requests of running calls
  weigh, across the whole server; a call beyond it is answered "server overloaded";
- **the call table** (:class:`CallBridge`): each started call by the session's call id, so
  a cancel finds it — also one that arrives before the host made the call: it is marked,
  and the call is cancelled as it is registered (it never starts);
- **one way to start a call** (through the host's internal prepare/start seam, so the
  call can be registered before it runs, and run inline where a transport wants), its
  progress and log reports, its answer reported to the session, and one way to cancel it;
- **requests answered off the lock** (:class:`Detached`: a gateway's ``tasks/*`` of an
  upstream's task, a re-exported skill's file): each on a thread of its own, at most
  :data:`DETACHED_AT_ONCE` at once per upstream (or skill) and session, the rest waiting
  their turn in order, each weighing on the in-flight byte cap until answered — so a
  slow upstream delays only its own.

The bridge never touches a stream. A transport subclasses :class:`CallBridge` and says where
each message goes (:meth:`CallBridge._deliver`, called with the lock held, in the order the
session said them: a call's progress is always delivered before its answer).

One lock per bridge (``bridge.lock``) guards its session, its call table and its delivery;
a transport may use it to guard its own output too. Tools never run under it, and neither
do cancels (a tool's cancel callbacks may report progress).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..._context import LogReporter, ProgressReporter, bound_log
from ..._result import ToolResult
from ..._timers import Timer, schedule
from ..._tracing import server_span
from .._shared._codec import INTERNAL_ERROR
from .._shared._upstream_tasks import HAND_OVER
from ._lazy_host import LazyHost
from ._session import Action, CancelCall, Detached, Send, ServerSession, StartCall
from ._types import error

if TYPE_CHECKING:
    from ..._host import Call
    from ._tasks import Tasks

__all__ = ["DETACHED_AT_ONCE", "CallBridge", "CallEntry", "InflightBytes", "LazyHost", "Later"]

DETACHED_AT_ONCE = 4
"""How many :class:`Detached` requests of one session wait on one upstream (or one skill's
server) at once, each on a thread; more wait their turn. A client polls a task or two at
a time: this bounds the threads a burst of ``tasks/get`` could make."""


class InflightBytes:
    """The in-flight byte cap: the bytes of ``tools/call`` requests whose calls still run
    (and of requests answered off the lock, :class:`Detached`, until they are).

    Parsed arguments take several times their JSON size in memory (measured: 4.6x for a
    list of numbers, 10x for a list of short strings), so this bounds what clients can pin.
    Thread-safe: one is shared by every session of a server. ``guarded=True``: its one
    user holds a lock of its own around every :meth:`take` and :meth:`give` (the stdio
    bridge's), so it takes none: on stdio, two lock round trips fewer per call.
    """

    def __init__(self, cap: int, *, guarded: bool = False) -> None:
        self.cap = cap
        self.used = 0
        self.peak = 0  # the most ever used at once (for tests and operators)
        self._lock = None if guarded else threading.Lock()

    def take(self, weight: int) -> str | None:
        """Count ``weight`` bytes in; the refusal text when they would pass the cap."""
        lock = self._lock
        if lock is not None:
            lock.acquire()
        try:
            used = self.used
            if used + weight <= self.cap:
                used = self.used = used + weight
                if used > self.peak:
                    self.peak = used
                return None
        finally:
            if lock is not None:
                lock.release()
        return (
            f"server overloaded: {used} bytes of requests are in flight (tool calls' "
            f"arguments, and requests that wait on another server) and this "
            f"request adds {weight}, over the limit of {self.cap}; retry later, or raise the "
            "limit (toolnexus serve --max-inflight-bytes, or ServerOptions.max_inflight_bytes)"
        )

    def give(self, weight: int) -> None:
        lock = self._lock
        if lock is None:
            self.used -= weight
            return
        with lock:
            self.used -= weight


class CallEntry:
    """One started call in the table: the session's :class:`StartCall` of it, where its
    messages go, what it weighs, its call — and the call's done callback (one object per
    call, not an entry and a callback): the call calls its entry as it settles, and the
    entry reports it to the bridge."""

    __slots__ = (
        "action",
        "bridge",
        "call",
        "call_id",
        "cancelled",
        "task",
        "timer",
        "weight",
        "where",
    )

    def __init__(self, bridge: CallBridge, action: StartCall, where: Any, weight: int) -> None:
        self.bridge = bridge
        self.action = action
        self.call_id = action.call_id
        self.where = where
        self.weight = weight
        self.call: Call | None = None
        self.cancelled = False  # a cancel came before the host made the call
        self.task: str | None = None  # the task it became: its end goes to the task
        self.timer: Timer | None = None  # when it becomes a task, if it still runs

    def __call__(self, call: Call) -> None:
        """The call settled: the bridge reports its answer."""
        self.bridge.report(self.call_id, call.result())


Later = list[CallEntry | CancelCall | Detached]
"""What :meth:`CallBridge.dispatch` leaves to :meth:`CallBridge.carry_out`, in order: the
entry of each call it registered (to start), each cancel, and each request answered off
the lock (its ``where`` set)."""


class CallBridge(ABC):
    """One :class:`ServerSession`'s calls on the host: what a transport feeds, starts and
    cancels goes through here.

    ``where`` is the transport's own token for where a message belongs (the HTTP response
    stream of the request it came with); the bridge keeps each call's, and hands it back to
    :meth:`_deliver` with every message about that call.
    """

    transport = "pipe"
    """How clients reach this bridge's session, as a trace says it (``network.transport``):
    ``pipe`` (stdio) or ``tcp`` (HTTP)."""

    entry_type: type[CallEntry] = CallEntry
    """What the call table holds per call: a transport that keeps more per call, or
    hears of its calls' ends its own way, names its own subclass."""

    def __init__(
        self,
        session: ServerSession,
        host: LazyHost,
        inflight: InflightBytes,
        tasks: Tasks | None = None,
    ) -> None:
        self.session_id: str | None = None  # a legacy HTTP session's (for traces, hashed)
        self.session = session
        session._runs_detached()
        self.tasks = tasks
        self.host = host
        self.inflight = inflight
        self.lock = threading.Lock()
        # The call table: each started call's entry by the session's call id (changed under
        # the lock; a transport may look an entry up without it).
        self.calls: dict[int, CallEntry] = {}
        self._newest = 0  # the newest call id seen: a higher one is a new call
        self.kept = 0  # set by dispatch(prepaid=True): the bytes a new call kept
        # Run (outside the lock) after each reported call, when a transport sets it.
        self.on_reported: Callable[[], None] | None = None
        # Detached requests by upstream: those waiting their turn, and how many run.
        self._waiting: dict[str, deque[Detached]] = {}
        self._detaching: dict[str, int] = {}

    # ------------------------------------------------------------------ the transport's part

    @abstractmethod
    def _deliver(self, send: Send, where: Any) -> None:
        """Write or file one message (the lock is held). ``where``: the call's or request's."""

    def _cancelled(self, where: Any) -> None:  # noqa: B027 - most transports need nothing
        """A call, or a :class:`Detached` request, was cancelled: nothing more will be
        said about it (the lock is held)."""

    def _reads(self, where: Any) -> bool:
        """Whether the thread that drains ``where`` (a call's messages) blocks for them
        there, and so may read a remote call's answer itself while it waits (one thread
        hand-off less): then :meth:`_read_by` is given what carries that answer, and
        must have it read (or handed to its client's reader thread). Most transports
        do not: the client's reader thread reads it."""
        return False

    def _read_by(self, where: Any, io: Any) -> None:  # noqa: B027 - see _reads
        """``io`` (``read_until``, ``read_for_others``) carries the answer of the call
        whose messages go to ``where``: read it there while waiting for them."""

    # ------------------------------------------------------------------ feeding

    def feed(self, actions: Callable[..., list[Action]], *args: Any, where: Any = None) -> None:
        """Run ``actions(*args)`` on the session under the lock, deliver what it says, then
        start and cancel the calls it asks for."""
        with self.lock:
            later = self.dispatch(actions(*args), where)
        if later:
            self.carry_out(later)

    def dispatch(
        self, actions: Iterable[Action], where: Any = None, weight: int = 0, prepaid: bool = False
    ) -> Later:
        """Deliver the session's messages and register the calls it starts (the lock is
        held); return the registered calls' entries and the cancels, to :meth:`carry_out`
        once it is released.

        ``weight`` is the size of the request the actions answer: a call it starts counts
        that much against the in-flight cap until it is done, and is answered "server
        overloaded" instead when it would pass the cap. ``prepaid``: the transport took
        those bytes already (before it read the request); a call it starts keeps them
        (then :attr:`kept` is set) — else the transport gives them back.
        """
        later: Later = []
        for action in actions:
            kind = action.__class__
            if kind is Send:
                self._deliver(action, where)  # type: ignore[arg-type]
            elif kind is StartCall:
                start: StartCall = action  # type: ignore[assignment]
                call_id = start.call_id
                charged = 0
                if call_id > self._newest:  # a new call, its arguments in this request
                    self._newest = call_id
                    if weight and prepaid:
                        charged = weight
                        self.kept = weight
                    elif weight:  # (a resumed one is not charged again)
                        refused = self.inflight.take(weight)
                        if refused is not None:
                            self._refuse(start, refused, where)
                            continue
                        charged = weight
                entry = self.entry_type(self, start, where, charged)
                entry.task = start.task  # a task run again: its end goes to the task
                self.calls[call_id] = entry
                later.append(entry)
            elif kind is Detached:  # its request weighs as a call's does until answered
                detached: Detached = action  # type: ignore[assignment]
                charged = 0
                if weight and prepaid:
                    charged = self.kept = weight
                elif weight:
                    refused = self.inflight.take(weight)
                    if refused is not None:
                        refusal = error(detached.request_id, INTERNAL_ERROR, refused)
                        if self.session._detached(detached.request_id, [refusal]):
                            self._deliver(refusal, where)  # (it leaves the requests in flight)
                        continue
                    charged = weight
                later.append(detached._replace(where=where, weight=charged))
            else:
                cancel: CancelCall = action  # type: ignore[assignment]
                cancelled = self.calls.get(cancel.call_id)
                if cancelled is not None:
                    self._cancelled(cancelled.where)
                later.append(cancel)
        return later

    def _refuse(self, start: StartCall, refused: str, where: Any) -> None:
        """A call the in-flight cap refused (the lock is held): its request is answered
        with ``refused`` — or, for a task run again, the task ends with it."""
        if start.task is not None:
            if self.tasks is not None:
                self.tasks.settle(start.task, ToolResult.error(refused))
            return
        for reply in self.session.fail_call(start.call_id, INTERNAL_ERROR, refused):
            if reply.__class__ is Send:
                self._deliver(reply, where)

    def carry_out(self, later: Later) -> None:
        """Start and cancel calls, and start detached requests (the lock is not held)."""
        for item in later:
            if isinstance(item, CancelCall):
                self.cancel(item.call_id)
            elif isinstance(item, Detached):
                self.detach(item)
            else:
                self.start(item)

    # ------------------------------------------------------------------ detached requests

    def detach(self, item: Detached) -> None:
        """Answer ``item`` on a thread of its own, or after those of its upstream that run
        now (the lock is not held)."""
        key = item.key
        with self.lock:
            self._waiting.setdefault(key, deque()).append(item)
            if self._detaching.get(key, 0) >= DETACHED_AT_ONCE:
                return  # a thread that runs one of its upstream's takes it next
            self._detaching[key] = self._detaching.get(key, 0) + 1
        thread = threading.Thread(
            target=self._run_detached, args=(key,), name="toolnexus-mcp-detached", daemon=True
        )
        try:
            thread.start()
        except RuntimeError as exc:  # out of threads: answer what waits, as failed
            self._run_detached(key, f"no thread could be started to answer it ({exc})")

    def _run_detached(self, key: str, cannot: str | None = None) -> None:
        """Answer ``key``'s waiting requests, one after another, until none waits."""
        while True:
            with self.lock:
                waiting = self._waiting.get(key)
                if not waiting:
                    self._waiting.pop(key, None)
                    self._detaching[key] -= 1
                    if not self._detaching[key]:
                        del self._detaching[key]
                    reported = self.on_reported  # (a shut-down waits for busy to end)
                    break
                item = waiting.popleft()
            actions: list[Action] = []
            if cannot is not None:
                actions = [error(item.request_id, INTERNAL_ERROR, f"internal error: {cannot}")]
            elif not self.session._closed:  # (else nobody reads the answer)
                actions = item.answer()
            with self.lock:
                if item.weight:
                    self.inflight.give(item.weight)
                answer = self.session._detached(item.request_id, actions)
                if answer is None:  # cancelled meanwhile: no answer; what waits for it ends
                    self._cancelled(item.where)
                    later: Later = []
                else:
                    later = self.dispatch(answer, item.where)
            if later:  # (an answer only ever sends; kept for safety, as report does)
                self.carry_out(later)
        if reported is not None:
            reported()

    # ------------------------------------------------------------------ calls

    def start(self, entry: CallEntry, inline: bool = False) -> None:
        """Start the call of ``entry`` (as :meth:`dispatch` registered it) on the host;
        whoever settles it reports its answer.

        No thread waits per call: the thread that ran the tool (or the host, at a deadline
        or after a cancel) reports it, through the call's entry (its done callback).
        ``inline`` runs the tool here, on this thread.
        """
        # (No closure is made here but for a traced call: its cells would cost every call.)
        action = entry.action
        call_id = entry.call_id
        progress = self._progress_for(call_id) if action.wants_progress else None
        log = self._log_for(call_id) if action.wants_log else None
        # The server's span of the request (a child of the client's, from _meta): the host's
        # span of the call is its child; it ends before the answer is written.
        trace = action.trace
        span = (
            None
            if trace is None
            else server_span(action.name, trace, self.transport, self.session_id)
        )
        settled = entry if span is None else self._settled_for(span, entry)
        call: Call | None = None
        try:
            # The call copies this context: the tool's ctx.report_log finds its client here.
            bound = bound_log.set(log) if log is not None else None
            handing = HAND_OVER.set(action.hand_over) if action.hand_over is not None else None
            entered = span.enter() if span is not None else None
            try:
                # Made unstarted, registered where a cancel finds it, then started.
                host = self.host
                call = (host._host or host.get())._prepare_call(
                    action.name,
                    action.arguments,
                    progress=progress,
                    request=action.resumes if action.answer is not None else None,
                    answer=action.answer,
                    done_callback=settled,
                )
            finally:
                if span is not None:
                    span.leave(entered)
                if bound is not None:
                    bound_log.reset(bound)
                if handing is not None:
                    HAND_OVER.reset(handing)
            # Registered under the bridge's lock, which cancel() takes too: a cancel that
            # came first is seen here, one that comes later finds the call.
            cancelled = False
            with self.lock:
                registered = entry.call is None and self.calls.get(call_id) is entry
                if registered:
                    entry.call = call
                    cancelled = entry.cancelled
                    after = action.task_after_ms
                    if after is not None and self.tasks is not None and not call.done():
                        entry.timer = schedule(
                            time.monotonic() + after / 1000, partial(self._promote, call_id)
                        )
            if cancelled:
                call.cancel()  # a cancel that came first: it never starts
            if registered and entry.task is not None and self.tasks is not None:
                self.tasks.adopt(entry.task, call)  # where tasks/cancel finds it
            reads = not inline and self._reads(entry.where)
            call._start(inline, reads)
            if reads and call._io is not None:
                self._read_by(entry.where, call._io)
        except Exception as exc:  # the host promises not to raise; answer anyway if it does
            from ..._log import get_logger

            get_logger().exception("toolnexus mcp: the host raised for %r", action.name)
            failed = ToolResult.error(f"internal error running '{action.name}': {exc}")
            if span is not None and call is None:
                span.end(failed)
            self.report(call_id, failed)

    def _progress_for(self, call_id: int) -> ProgressReporter:
        """The progress reporter of a call whose client listens for progress."""

        def progress(value: float, total: float | None, message: str | None) -> None:
            self._tell(self.session.report_progress, call_id, value, total, message)

        return progress

    def _log_for(self, call_id: int) -> LogReporter:
        """The log channel of a call whose client takes log messages."""

        def log(level: str, data: Any, logger: str | None) -> None:
            self._tell(self.session.report_log, call_id, level, data, logger)

        return log

    @staticmethod
    def _settled_for(span: Any, entry: CallEntry) -> Callable[[Call], None]:
        """A traced call's done callback: its span ends, then its entry reports it."""

        def settled(finished: Call) -> None:
            span.end(finished.result())
            entry(finished)

        return settled

    def cancel(self, call_id: int) -> None:
        """Cancel the call (its token; it never starts if it has not yet)."""
        with self.lock:
            entry = self.calls.get(call_id)
            if entry is None:
                return
            call = entry.call
            if call is None:
                entry.cancelled = True  # start() cancels it as it registers it
        if call is not None:
            call.cancel()

    def report(
        self, call_id: int, result: ToolResult, then: Callable[[], None] | None = None
    ) -> None:
        """Report a settled call to the session and deliver what it answers. ``then``
        runs under the same lock, first."""
        task = None
        with self.lock:
            if then is not None:
                then()
            entry = self.calls.pop(call_id, None)
            where = None
            if entry is not None:
                where = entry.where
                if entry.weight:
                    self.inflight.give(entry.weight)
                if entry.timer is not None:
                    entry.timer.cancel()
                task = entry.task
            if task is None:
                actions = self.session.complete_call(call_id, result)
                if len(actions) == 1 and actions[0].__class__ is Send:
                    self._deliver(actions[0], where)  # the usual answer: dispatch's one send
                    later = []
                else:
                    later = self.dispatch(actions, where)
            else:
                later = []
                self._task_ended()
        if task is not None and self.tasks is not None and entry is not None:
            # Outside the lock: recording a task may wake listeners on other channels.
            self.tasks.settle(task, result, entry.call)
        if later:  # complete_call only ever sends; nothing to carry out, kept for safety
            self.carry_out(later)
        reported = self.on_reported
        if reported is not None:
            reported()

    def _promote(self, call_id: int) -> None:
        """The call still runs ``task_after_ms`` after it started: make it a task (the
        session answers its request with the task), and route its end to the task."""
        with self.lock:
            entry = self.calls.get(call_id)
            if entry is None or entry.call is None or entry.task is not None:
                return
            entry.timer = None
            actions, task = self.session.promote(call_id, entry.call)
            if task is not None:
                entry.task = task
            self.dispatch(actions, entry.where)
        io = entry.call._io
        if task is not None and io is not None:
            # Its response is over, perhaps before its drainer read anything for it: the
            # call's answer is its client's reader thread's to read now.
            io.read_for_others()

    def _task_ended(self) -> None:  # noqa: B027 - most transports need nothing
        """A call that became a task ended (the lock is held)."""

    def _tell(self, report: Callable[..., list[Action]], call_id: int, *args: Any) -> None:
        """Deliver what the session says of a running call (progress, a log message)."""
        with self.lock:
            entry = self.calls.get(call_id)
            where = entry.where if entry is not None else None
            for action in report(call_id, *args):
                if action.__class__ is Send:
                    self._deliver(action, where)

    # ------------------------------------------------------------------ the end

    def close(self, reason: str = "the client closed the connection") -> None:
        """End the session: cancel every call still in flight."""
        with self.lock:
            later = self.dispatch(self.session.close())
        self.carry_out(later)

    @property
    def busy(self) -> bool:
        """Whether any call is in the table, or a detached request is being answered."""
        return bool(self.calls) or bool(self._detaching)
