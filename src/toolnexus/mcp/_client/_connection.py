"""One connection of an MCP client: its transport, its session, its peer, and the I/O.

:class:`Connection` sends what the :class:`~toolnexus.mcp.ClientSession` builds and feeds
what the transport reads back to it, hands each event to whoever waits for it (the
:class:`~._peer.Peer` says who), answers the server's own requests (the session decides
how), parks a legacy server's question on its call and resumes the call with the answer
(:meth:`Connection.ask`, :meth:`Connection.resume`), reads a legacy HTTP session's own
stream, and ends: a lost connection closes every waiter. :class:`~toolnexus.mcp.McpClient`
owns the lifetime (opening, re-opening, closing) and the calls; neither decides a protocol
rule — the session and :mod:`._questions` do.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..._cancellation import CancellationToken, CancellationTokenRegistration
from ..._log import LazyLogger
from ..._result import ToolResult
from ..._suspension import Answer, Request
from ...errors import McpError
from .._shared._peer import Peer, Waiter
from ._questions import ClientQuestions, Parked, call_result, refused, unsent
from ._session import (
    ClientSession,
    Failure,
    Notification,
    Opened,
    Outgoing,
    Response,
    ServerRequest,
    Stray,
    log_record,
    progress_of,
)

if TYPE_CHECKING:
    from ..._context import ProgressReporter
    from ._http import HttpExchange, HttpTransport
    from ._stdio import StdioTransport

__all__ = [
    "CANCELLED",
    "NOTICES",
    "RETRY",
    "SUBSCRIBED",
    "Connection",
    "IoCall",
    "auth_problem",
    "give_up",
]

_log = LazyLogger("mcp.client")

_ENDED = iter(())  # what an HTTP waiter reads once its answer was taken
_NEVER = CancellationToken.NONE
_TOO_DEEP = "more than 128 levels deep"
RETRY = object()  # the session was gone before the request reached the server: once more
# What a call its token ended answers; the client tells a deadline from a cancel by identity.
CANCELLED = ToolResult("cancelled by the caller", True)


class _Cancelled(Exception):
    pass


class _Lost(Exception):
    """The connection ended under a request. ``sent``: the request may have been run;
    ``auth``: OAuth got no token the server takes (a Request: a sign-in to hand back)."""

    def __init__(
        self,
        problem: str,
        *,
        sent: bool = True,
        session_lost: bool = False,
        auth: bool | Request = False,
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.sent = sent
        self.session_lost = session_lost
        self.auth = auth


class _Idle(Exception):
    pass


SUBSCRIBED = "notifications/subscriptions/acknowledged"
"""The first message of a modern ``subscriptions/listen`` stream: what it will carry."""

NOTICES = frozenset(
    {
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/prompts/list_changed",
    }
)
"""The server notifications a client's ``on_notification`` listeners hear."""


class Connection:
    """One open connection to the server: its transport, session and peer, and the I/O
    of its requests. A lost connection is replaced by a new one on the next request
    (the client's part). ``lock`` serialises the session and the peer."""

    def __init__(
        self,
        session: ClientSession,
        *,
        label: str,
        timeout_s: float,
        on_tools_changed: Callable[[], object],
        client_closed: Callable[[], bool],
        on_notice: Callable[[str, dict[str, Any]], object] | None = None,
    ) -> None:
        self.session = session
        self.label = label  # the server's name, in messages
        self.timeout_s = timeout_s
        self.on_tools_changed = on_tools_changed
        self.on_notice = on_notice  # the other list changes, and resources/updated
        self.client_closed = client_closed
        self.lock = threading.RLock()
        self.transport: StdioTransport | HttpTransport | None = None
        # Who waits for which answer (the session's own table of its requests: one per
        # connection), and whose question is whose.
        self.peer = Peer(session.requests)
        self.opening = Waiter(None)
        self.lost: str | None = None
        # The stream of what the server sends unasked: a legacy session's GET, a modern
        # server's subscriptions/listen.
        self.listener: HttpExchange | None = None
        self.subscribing = False  # a subscriptions/listen stream is read (modern)
        self.honoured: dict[str, Any] | None = None  # what the server said it will send
        self.acknowledged = threading.Event()  # set by each acknowledgement of a listen
        self.listen_id: int | None = None  # stdio: the listen stream open now
        self.listen_ids: set[int] = set()  # stdio: every listen sent (never awaited)
        self.resubscribing = False  # the listen stream is closed to open it again
        self.stopped = threading.Event()  # set once the connection is lost or closed
        self.threads: list[threading.Thread] = []  # helper threads to join on close
        self.is_stdio = False

    def send_request(
        self,
        outgoing: Outgoing,
        headers_for: Mapping[str, str] | None,
        read_timeout: float | None,
        waiter: Waiter,
    ) -> Waiter:
        """Send ``outgoing`` (a request made with ``waiter``, which the session's table
        holds — or the handshake's, whose answer comes to :attr:`opening`); ``waiter``,
        which its events arrive at."""
        assert outgoing.id is not None
        transport = self.transport
        if self.is_stdio:
            try:
                transport.send(outgoing.to_bytes())  # type: ignore[union-attr]
            except (OSError, McpError) as exc:
                with self.lock:
                    self.peer.waiters.withdraw(outgoing.id)
                raise _Lost(f"cannot write to the server: {exc}", sent=False) from None
            return waiter
        http: HttpTransport = transport  # type: ignore[assignment]
        with self.lock:
            headers = self.session.http_headers(outgoing, headers_for)
        try:
            exchange = http.start(outgoing.to_bytes(), headers, read_timeout)
        except http.Failure as exc:  # (not imported here: this runs on every call)
            raise _Lost(
                exc.problem, sent=exc.sent, session_lost=exc.session_lost, auth=exc.auth
            ) from None
        waiter.exchange = exchange
        messages = exchange.messages(self._on_session_id)
        if self.session.era != "legacy":
            waiter.messages = messages  # read on the waiting thread
            return waiter
        # A legacy server may ask its question on the session's own stream, not on this
        # answer: read the answer on a helper thread, so either can wake the waiter.
        threading.Thread(
            target=self._pump,
            args=(waiter, messages),
            name=f"toolnexus-mcp-{self.label}-answer",
            daemon=True,
        ).start()
        return waiter

    def _pump(self, waiter: Waiter, messages: Any) -> None:
        """Read one answer stream into its waiter (legacy HTTP)."""
        from ._http import HttpTransport

        try:
            for message in messages:
                self.route(message, waiter)
        except HttpTransport.Failure as exc:
            failure: Exception
            if exc.problem == "aborted":
                failure = _Cancelled()
            elif exc.problem.startswith("no message from the server"):
                failure = _Idle()
            else:
                failure = _Lost(
                    exc.problem, sent=exc.sent, session_lost=exc.session_lost, auth=exc.auth
                )
            waiter.close(exc.problem, failure)
            return
        except Exception as exc:  # a bug must not leave the waiter waiting forever
            waiter.close(str(exc), _Lost(f"reading the answer failed: {exc}"))
            return
        waiter.close(
            "the server ended the answer without a response",
            _Lost("the server ended the answer without a response"),
        )

    def start_listening(self) -> None:
        """Read the legacy session's own event stream (:meth:`listen`) on a helper thread,
        joined on close."""
        listener = threading.Thread(
            target=self.listen, name=f"toolnexus-mcp-{self.label}-listen", daemon=True
        )
        self.threads.append(listener)
        listener.start()

    def listen(self) -> None:
        """Read the legacy session's own event stream (``GET``) while the connection
        lives: the server's requests and notifications outside any answer."""
        from ._http import HttpTransport

        transport = self.transport
        assert transport is not None and not self.is_stdio
        failures = 0
        retry_ms = 1000
        while self.lost is None and not self.client_closed():
            try:
                with self.lock:
                    headers = self.session.http_headers(
                        Outgoing({"jsonrpc": "2.0", "method": "GET"})
                    )
                exchange = transport.listen(headers)  # type: ignore[union-attr]
                self.listener = exchange
                opened = False
                for message in exchange.messages():
                    opened = True
                    self.route(message, None)
                retry_ms = exchange.retry_ms
                if not opened and exchange.last_event_id is None:
                    return  # 405: the server offers no stream of its own
                failures = 0
            except HttpTransport.Failure as exc:
                failures += 1
                if exc.problem == "aborted" or failures > 3:
                    return
            if self.client_closed() or self.lost is not None:
                return
            # The stream ended: open it again after the delay the server asked for.
            if self.stopped.wait(retry_ms / 1000):
                return

    def start_subscribing(self, notifications: Callable[[], dict[str, Any]]) -> None:
        """Hear the modern server's change notifications (HTTP): its
        ``subscriptions/listen`` stream (:meth:`subscribe`), read on a helper thread
        joined on close. Once per connection. Returns once the server acknowledged the
        stream (or refused it, or ``timeout_s`` passed): a change after that is heard."""
        with self.lock:
            if self.subscribing:
                return
            self.subscribing = True
        opened = threading.Event()
        listener = threading.Thread(
            target=self.subscribe,
            args=(notifications, opened),
            name=f"toolnexus-mcp-{self.label}-listen",
            daemon=True,
        )
        self.threads.append(listener)
        listener.start()
        opened.wait(self.timeout_s)

    def subscribe(
        self, notifications: Callable[[], dict[str, Any]], opened: threading.Event | None = None
    ) -> None:
        """Read a modern server's ``subscriptions/listen`` stream while the connection
        lives: the change notifications the filter ``notifications()`` asks for (the
        modern era sends none unasked, and has no ``GET`` stream). A stream the server
        ends is opened again after a second; one it refuses (a server without the
        method) is not, nor after three failures in a row. :meth:`resubscribe` opens it
        again at once with the filter as it is then."""
        try:
            self._subscribe(notifications, opened)
        finally:
            if opened is not None:
                opened.set()

    def _subscribe(
        self, notifications: Callable[[], dict[str, Any]], opened: threading.Event | None
    ) -> None:
        """The loop of :meth:`subscribe`; ``opened`` is set at the first message."""
        from ._http import HttpTransport

        failures = 0
        while self.lost is None and not self.client_closed():
            waiter = Waiter()
            with self.lock:
                outgoing = self.session.request(
                    "subscriptions/listen", {"notifications": notifications()}, waiter=waiter
                )
            waiter.request_id = outgoing.id
            try:
                self.send_request(outgoing, None, None, waiter)
                exchange = self.listener = waiter.exchange  # type: ignore[assignment]
                if self.resubscribing and exchange is not None:
                    exchange.abort()  # the filter changed as this one was sent
                for message in waiter.messages or ():
                    failures = 0
                    self.route(message, waiter)
                    if opened is not None:
                        opened.set()  # the first message: the acknowledgement
            except (_Lost, HttpTransport.Failure) as exc:
                if not self.resubscribing:
                    failures += 1
                    if isinstance(exc, HttpTransport.Failure) and exc.problem == "aborted":
                        return  # the connection is closing
            finally:
                self.finish(waiter)
            if any(isinstance(event, Failure) for event in waiter.events):
                return  # refused: the server offers no such stream
            if failures > 3 or self.client_closed() or self.lost is not None:
                return
            if self.resubscribing:
                self.resubscribing = False  # (cleared before the filter is read again)
            elif self.stopped.wait(1.0):
                return

    def subscribe_piped(
        self, notifications: Callable[[], dict[str, Any]], again: bool = False
    ) -> None:
        """Modern stdio: send a ``subscriptions/listen`` request; its notifications come
        on the pipe as any message does. Its answer (only at the server's end) is not
        awaited: the request leaves the table at once, so nothing counts as waiting and
        the pipe is read as before. ``again``: the filter changed — the stream open now is
        cancelled and another sent. Returns once the server acknowledged it (or
        ``timeout_s`` passed)."""
        with self.lock:
            if self.subscribing and not again:
                return
            self.subscribing = True
            sent = []
            if self.listen_id is not None:
                sent.append(self.session.cancel(self.listen_id, "the filter changed"))
            outgoing = self.session.request(
                "subscriptions/listen", {"notifications": notifications()}
            )
            assert isinstance(outgoing.id, int)
            self.session.forget(outgoing.id)
            self.listen_id = outgoing.id
            self.listen_ids.add(outgoing.id)
            sent.append(outgoing)
            self.acknowledged.clear()
        try:
            for each in sent:
                if each is not None:
                    self.transport.send(each.to_bytes())  # type: ignore[union-attr]
        except (OSError, McpError):
            return  # the connection is lost: the next request finds it so
        self.acknowledged.wait(self.timeout_s)

    def resubscribe(self) -> None:
        """Open the ``subscriptions/listen`` stream again, now, with its filter as it is
        (a resource subscribed to)."""
        self.resubscribing = True
        listener = self.listener
        if listener is not None:
            listener.abort()

    def _on_session_id(self, session_id: str) -> None:
        transport = self.transport
        if transport is not None and transport.session_id is None:  # type: ignore[union-attr]
            transport.session_id = session_id  # type: ignore[union-attr]

    def send_quietly(self, outgoing: Outgoing) -> None:
        """Send a notification or a response of ours; a failure is logged."""

        try:
            if self.is_stdio:
                self.transport.send(outgoing.to_bytes())  # type: ignore[union-attr]
                return
            with self.lock:
                headers = self.session.http_headers(outgoing)
            answer = self.transport.post(  # type: ignore[union-attr]
                outgoing.to_bytes(), headers, self.timeout_s
            )
            if isinstance(answer, dict) and "error" in answer:
                _log.debug("MCP server %s refused a message: %r", self.label, answer["error"])
        except (OSError, McpError) as exc:
            _log.debug("MCP server %s: cannot send %s: %s", self.label, outgoing.message, exc)

    # ------------------------------------------------------------------ receiving

    def next_event(
        self,
        waiter: Waiter,
        token: CancellationToken,
        timeout: float | None,
    ) -> Any:
        """The next event for ``waiter``'s request. Raises :class:`_Cancelled` once
        ``token`` is cancelled, :class:`_Idle` after ``timeout`` seconds without one,
        :class:`_Lost` when the connection ends."""
        if waiter.messages is not None:
            return self._pull(waiter, token)
        deadline = None if timeout is None else time.monotonic() + timeout
        events = waiter.events
        reader = self.transport if self.is_stdio else None
        # (A token that can never be cancelled is not asked, on every message, whether it is.)
        cancellable = token is not _NEVER and token.can_be_cancelled
        if cancellable:

            def done() -> object:
                return events or waiter.closed is not None or token.is_cancellation_requested

        else:

            def done() -> object:
                return events or waiter.closed is not None

        while True:
            if events:
                return events.popleft()
            if cancellable and token.is_cancellation_requested:
                raise _Cancelled()
            if waiter.closed is not None:
                raise waiter.failure or _Lost(waiter.closed)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise _Idle()
            if reader is not None:
                # Read the answer on this thread when no other thread reads the pipe.
                read = reader.read_until(done, left)  # type: ignore[union-attr]
                if read is not None:
                    continue
                if self.lost is not None and not events:
                    raise _Lost(self.lost)
            # Another thread reads: it puts this request's events here.
            waiter.sleep(
                lambda: (
                    events
                    or waiter.closed is not None
                    or token.is_cancellation_requested
                    or self.lost is not None
                ),
                left,
            )

    def _pull(self, waiter: Waiter, token: CancellationToken) -> Any:
        failure = self.transport.Failure  # type: ignore[union-attr]  # (HTTP's)
        while not waiter.events:
            if token.is_cancellation_requested:
                raise _Cancelled()
            try:
                message = next(waiter.messages)
            except StopIteration:
                raise _Lost("the server ended the answer without a response") from None
            except failure as exc:
                if token.is_cancellation_requested or exc.problem == "aborted":
                    raise _Cancelled() from None
                if exc.problem.startswith("no message from the server"):
                    raise _Idle() from None
                raise _Lost(
                    exc.problem, sent=exc.sent, session_lost=exc.session_lost, auth=exc.auth
                ) from None
            self.route(message, waiter)
        return waiter.events.popleft()

    def on_stdio_problem(self, kind: str, text: str, ident: Any) -> None:
        if kind == "garbage":
            _log.warning("MCP server %s printed a line that is not JSON-RPC: %r", self.label, text)
            return
        if kind == "too deep":
            with self.lock:
                asked = self.peer.waiters.answered(ident)
            if asked is not None:
                method, waiter = asked
                problem = f"the server's answer is nested {text}"
                (waiter or self.opening).put(Failure(ident, method, None, problem, None, waiter))
            else:
                _log.warning("MCP server %s sent a message nested %s", self.label, text)
            return
        _log.warning("MCP server %s: %s", self.label, text)

    def route(self, message: Any, home: Waiter | None = None) -> None:
        """Hand each event of one message to whoever waits for it."""
        if message.__class__ is dict and len(message) == 1:  # an event stream's stand-in
            if "__too_deep__" in message:
                if home is not None and home.request_id is not None:
                    home.put(
                        Failure(
                            home.request_id, "", None, f"the server's answer is nested {_TOO_DEEP}"
                        )
                    )
                return
            if "__garbage__" in message:
                _log.warning(
                    "MCP server %s sent an event that is not JSON: %r",
                    self.label,
                    message["__garbage__"],
                )
                return
        if (
            home is not None
            and home.request_id is not None
            and isinstance(message, dict)
            and "error" in message
            and message.get("id") is None
        ):
            # An error with a null id on a request's own answer (a server that could not
            # read the request, or refuses it before reading its id) answers that request.
            message = {**message, "id": home.request_id}
        with self.lock:
            events = self.session.receive(message)
        for event in events:
            if event.__class__ is Response or event.__class__ is Failure:
                # Answered (the session took it out of its table: it no longer counts as
                # waiting, see StdioTransport pending); the event names who waits.
                waiter = event.waiter
                if waiter is None and event.method in ("server/discover", "initialize"):
                    waiter = home or self.opening
                (waiter or home or self.opening).put(event)
            elif isinstance(event, (Opened, Outgoing)):
                (home or self.opening).put(event)
            elif isinstance(event, Notification):
                self._on_notification(event, home)
            elif isinstance(event, ServerRequest):
                self._on_server_request(event, home)
            elif isinstance(event, Stray):
                if isinstance(message, dict) and message.get("id") in self.listen_ids:
                    # A listen stream's end (stdio), or its refusal: nobody awaits it, but
                    # whoever waits for its acknowledgement waits no more.
                    self.acknowledged.set()
                    continue
                _log.warning("MCP server %s: ignoring %s", self.label, event.problem)

    def _on_notification(self, event: Notification, home: Waiter | None) -> None:
        method, params = event.method, event.params
        if method == "notifications/progress":
            token = params.get("progressToken")
            with self.lock:
                waiter = self.peer.waiter_of(token)
            if waiter is None and home is not None and token == home.request_id:
                waiter = home
            if waiter is not None:
                waiter.put(event)
        elif method == "notifications/message":
            level, line = log_record(self.label, params)
            _log.log(level, "%s", line)
        elif method == "notifications/tools/list_changed":
            self.on_tools_changed()
        elif method in NOTICES and self.on_notice is not None:
            self.on_notice(method, dict(params))
        elif method == SUBSCRIBED:
            honoured = params.get("notifications")
            self.honoured = dict(honoured) if isinstance(honoured, dict) else {}
            self.acknowledged.set()
            if self.on_notice is not None:
                self.on_notice(method, {"notifications": self.honoured})
        # Anything else (cancelled, unknown): nothing to do.

    def _on_server_request(self, event: ServerRequest, home: Waiter | None) -> None:
        waiter: Waiter | None = None
        with self.lock:
            reply = self.session.answer_request(event)
            if reply is None:  # elicitation/create: a question, for the call it belongs to
                if home is not None and home.request_id is not None:
                    # On a call's own answer stream (HTTP) the question is that call's.
                    waiter = home
                    self.peer.ask_on(home.request_id, event.id)
                else:
                    # Over stdio a question names no call: the peer binds it to one that
                    # is not asking already (never to a call whose question is open).
                    waiter = self.peer.bind_question(event.id, event.params)
                if waiter is None:
                    reply = ClientQuestions.unowned(self.session, event)
        if waiter is not None:
            waiter.put(event)
            return
        assert reply is not None
        self.send_quietly(reply)

    def on_lost(self, reason: str) -> None:
        with self.lock:
            first = self.lost is None
            if first:
                self.lost = reason
            waiters = self.peer.waiting()
        self.stopped.set()
        listener = self.listener
        if listener is not None:
            listener.abort()
        for waiter in [*waiters, self.opening]:
            waiter.close(reason)
        if first and reason and not self.client_closed():
            _log.info("MCP server %s: %s", self.label, reason)

    def finish(self, waiter: Waiter) -> None:
        with self.lock:
            if waiter.request_id is not None:
                self.peer.finish(waiter.request_id)
        messages = waiter.messages
        if messages is not None:
            waiter.messages = _ENDED
            with contextlib.suppress(ValueError):  # still being read on another thread
                messages.close()  # releases the HTTP connection for the next request

    def abandon(self, waiter: Waiter, reason: str | None) -> None:
        """Stop waiting for ``waiter``'s request and tell the server (cancel it)."""
        self.finish(waiter)
        request_id = waiter.request_id
        if request_id is None:
            return
        with self.lock:
            cancel = self.session.cancel(request_id, reason)
        exchange = waiter.exchange
        if exchange is not None:
            exchange.abort()  # closing the request is the modern era's cancel
        tell = self.is_stdio or self.session.era == "legacy"
        if cancel is not None and tell and self.lost is None:
            self.send_quietly(cancel)

    def drop(self, reason: str) -> None:
        """Close ``connection``: its requests end now — not once the child process has
        exited, which may take the transport's grace — then its transport."""
        self.on_lost(reason)
        transport = self.transport
        if transport is not None and self.is_stdio:
            transport.interrupt()  # type: ignore[union-attr]  # a call reading the pipe
            transport.close()  # type: ignore[call-arg]

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        may_retry: bool = False,
        tasks: bool = False,
        token: CancellationToken = _NEVER,
    ) -> dict[str, Any] | None:
        """One request and its result, within ``timeout_s``; ``None`` when the connection
        was lost before the server could run it and ``may_retry``: send it again on a new
        one (``tasks``: see :meth:`ClientSession.request`). ``token``: the caller's
        cancel (or deadline) ends the wait and cancels the request on the server. Raises
        :class:`McpError` (refused, no answer in time, cancelled, lost)."""
        waiter = Waiter()
        with self.lock:
            outgoing = self.session.request(method, params, tasks=tasks, waiter=waiter)
        waiter.request_id = outgoing.id
        try:
            self.send_request(outgoing, None, self.timeout_s, waiter)
            registration = self.wake_on(token, waiter)
            try:
                while True:
                    event = self.next_event(waiter, token, self.timeout_s)
                    if isinstance(event, Response):
                        self.finish(waiter)
                        return event.result
                    if isinstance(event, Failure):
                        self.finish(waiter)
                        code = f" ({event.code})" if event.code is not None else ""
                        raise McpError(self.label, f"{method} failed: {event.message}{code}")
            except _Idle:
                self.abandon(waiter, "timed out")
                raise McpError(
                    self.label, f"no answer to {method} within {self.timeout_s:g} s (timeout_ms)"
                ) from None
            except _Cancelled:
                self.abandon(waiter, "cancelled by the caller")
                raise McpError(self.label, f"{method} was cancelled by the caller") from None
            finally:
                if registration is not None:
                    registration.unregister()
        except _Lost as lost:
            self.lose(lost)
            if lost.auth:  # OAuth asked once already: never again for this request
                raise McpError(self.label, f"{method} failed: {auth_problem(lost)}") from None
            if may_retry and (lost.session_lost or not lost.sent):
                return None
            raise McpError(self.label, f"{method} failed: {lost.problem}") from None

    def call(
        self,
        outgoing: Outgoing,
        waiter: Waiter,
        name: str,
        token: CancellationToken,
        progress: ProgressReporter | None,
        idle_s: float | None,
        questions: ClientQuestions,
        headers: Mapping[str, str] | None,
        *,
        may_retry: bool,
        answering: bool,
    ) -> ToolResult | object:
        """Send the ``tools/call`` ``outgoing`` (its ``waiter`` is registered as a call in
        flight) and read it to its end (:meth:`drive`); :data:`RETRY` when the connection
        was lost before the server got it and ``may_retry``."""
        assert outgoing.id is not None
        try:
            self.send_request(outgoing, headers, idle_s, waiter)
        except _Lost as lost:
            with self.lock:
                self.peer.finish(outgoing.id)
            self.lose(lost)
            if may_retry and (lost.session_lost or not lost.sent) and not lost.auth:
                return RETRY
            failed = self.lost_result(name, lost)
            return failed if lost.sent else unsent(failed, answering)
        return self.drive(waiter, name, token, progress, idle_s, questions, answering=answering)

    def lose(self, lost: _Lost) -> None:
        """A request found the connection gone: forget it, so the next one re-opens."""
        if self.client_closed():  # close() ends the connection; its calls answer without waiting
            return
        if self.is_stdio:
            if self.transport is not None and not self.transport.is_alive:  # type: ignore[union-attr]
                self.drop(lost.problem)
        elif (lost.session_lost or not lost.sent) and not lost.auth:
            self.on_lost(lost.problem)

    def drive(
        self,
        waiter: Waiter,
        name: str,
        token: CancellationToken,
        progress: ProgressReporter | None,
        idle_s: float | None,
        questions: ClientQuestions,
        *,
        answering: bool = False,
    ) -> ToolResult | object:
        """Read the call ``name``'s events until its result (or :data:`RETRY`: the
        session was gone before the request reached the server). A legacy server's
        question parks the call with ``questions`` (:meth:`ask`). ``answering``: the request carries
        answers (a modern retry): a result that did not use them says so (see
        :func:`unsent`)."""
        registration = self.wake_on(token, waiter)
        parked = False
        try:
            while True:
                try:
                    event = self.next_event(waiter, token, idle_s)
                except (_Cancelled, _Idle, _Lost) as ended:
                    return self.call_ended(waiter, name, ended, token, idle_s, answering)
                result = self.call_event(waiter, name, event, progress, questions, answering)
                if result is not None:
                    parked = event.__class__ is ServerRequest
                    return result
        except BaseException:
            # Ctrl-C (or a reporter that raised) while the call runs: it is given up, and the
            # server told, as on a cancel; its waiter must not wait (and count) forever.
            if not parked and self.peer.in_flight(waiter.request_id):
                with contextlib.suppress(Exception):
                    self.abandon(waiter, "interrupted")
            raise
        finally:
            if registration is not None:
                registration.unregister()
            if not parked and waiter.exchange is not None and token.is_cancellation_requested:
                waiter.exchange.abort()

    def call_event(
        self,
        waiter: Waiter,
        name: str,
        event: Any,
        progress: ProgressReporter | None,
        questions: ClientQuestions,
        answering: bool,
    ) -> ToolResult | None:
        """What one event of the call ``name`` makes of it: its result — a legacy
        server's question parks the call with ``questions`` (:meth:`ask`) and is its
        pending result — or None: read on."""
        if isinstance(event, Response):
            self.finish(waiter)
            return call_result(name, self.label, event.result, answering)
        if isinstance(event, Failure):
            self.finish(waiter)
            return refused(name, self.label, event, answering)
        if isinstance(event, Notification):
            if progress is not None:
                _report(progress, event.params)
            return None
        if isinstance(event, ServerRequest) and event.method == "elicitation/create":
            return self.ask(questions, name, waiter, event)
        return None

    def call_ended(
        self,
        waiter: Waiter,
        name: str,
        ended: Exception,
        token: CancellationToken,
        idle_s: float | None,
        answering: bool,
    ) -> ToolResult | object:
        """What the call ``name`` answers when reading it ended with ``ended`` (a
        cancel, no message for ``idle_s``, a lost connection); :data:`RETRY` when the
        session was gone before the request reached the server."""
        if isinstance(ended, _Cancelled):
            if self.client_closed() and not token.is_cancellation_requested:
                # close() aborted the request (HTTP), not the caller.
                self.finish(waiter)
                return self.lost_result(name, _Lost("the client was closed"))
            self.abandon(waiter, "cancelled by the caller")
            return CANCELLED
        if isinstance(ended, _Idle):
            self.abandon(waiter, "no progress")
            idle = int((idle_s or 0) * 1000)
            return ToolResult(
                f"timed out: {name} on MCP server {self.label} sent nothing for "
                f"{idle} ms (idle_timeout_ms)",
                True,
            )
        lost = ended if isinstance(ended, _Lost) else _Lost(str(ended))
        self.finish(waiter)
        self.lose(lost)
        if lost.session_lost and not lost.sent:
            return RETRY
        result = self.lost_result(name, lost)
        return unsent(result, answering) if not lost.sent else result

    def start_call(
        self,
        outgoing: Outgoing,
        waiter: Waiter,
        name: str,
        token: CancellationToken,
        progress: ProgressReporter | None,
        questions: ClientQuestions,
        done: Callable[[ToolResult], object],
    ) -> StdioTransport | None:
        """Send the ``tools/call`` ``outgoing`` (stdio; its ``waiter`` registered as a call
        in flight) and return: whoever reads the pipe hands its events to an
        :class:`IoCall`, which calls ``done(result)`` once, on the thread that ends it —
        the reader's (its answer), a canceller's (``token``), the one that lost the
        connection. Returns the transport, whose pipe nobody reads for the call yet: the
        caller reads it (``read_until``, while it waits for what the call ends in) or
        lets the reader thread do so (``read_for_others``). None when the request could
        not be written (nothing was sent: the caller may send it again another way)."""
        call = IoCall(self, waiter, name, token, progress, questions, done)
        waiter.listener = call.event
        assert outgoing.id is not None
        try:
            self.send_request(outgoing, None, None, waiter)
        except _Lost as lost:
            waiter.listener = None
            with self.lock:
                self.peer.finish(outgoing.id)
            self.lose(lost)
            return None
        call.listen()
        return self.transport  # type: ignore[return-value]  # (stdio)

    def wake_on(
        self, token: CancellationToken, waiter: Waiter
    ) -> CancellationTokenRegistration | None:
        """Wake ``waiter``'s reader when ``token`` is cancelled (an HTTP request is
        aborted; a stdio reader is interrupted, as it may be the one reading the pipe);
        the registration to undo, or None for a token that cannot be cancelled."""
        if token is _NEVER or not token.can_be_cancelled:
            return None
        wake: Callable[[], object] = waiter.wake
        if waiter.exchange is not None:
            wake = waiter.exchange.abort
        elif self.is_stdio:
            transport = self.transport

            def wake() -> None:
                waiter.wake()
                transport.interrupt()  # type: ignore[union-attr]  # it may be reading

        return token.register(wake)

    # ------------------------------------------------------------------ questions

    def ask(
        self, questions: ClientQuestions, name: str, waiter: Waiter, event: ServerRequest
    ) -> ToolResult | None:
        """A legacy server asks during the call ``name``: park the call with
        ``questions`` and hand back the question (a pending result), or answer the server
        at once when the host cannot be asked (``None``: the call goes on)."""
        with self.lock:
            asked = questions.ask(self.session, event, tool=name, connection=self, call=waiter)
            if isinstance(asked, Request):
                return ToolResult.pending(asked)
            self._answered(waiter)
        if "error" in asked.message:
            _log.warning(
                "MCP server %s sent a malformed elicitation: %s",
                self.label,
                asked.message["error"].get("message"),
            )
        self.send_quietly(asked)
        return None

    def _answered(self, waiter: Waiter) -> None:
        """``waiter``'s question was answered: its call may ask again (under the lock)."""
        if waiter.request_id is not None:
            self.peer.question_answered(waiter.request_id)

    def resume(
        self,
        questions: ClientQuestions,
        parked: Parked,
        answer: Answer,
        token: CancellationToken,
        progress: ProgressReporter | None,
        idle_s: float | None,
    ) -> ToolResult:
        """Answer ``parked``'s question (the server's request) with ``answer`` and read
        its call on to its end, as :meth:`drive` does."""
        name = parked.tool
        if self.lost is not None:
            return ToolResult(
                f"{name}: the question this answers is gone: the session with MCP server "
                f"{self.label} ended ({self.lost}); call the tool again",
                True,
            )
        with self.lock:
            reply = questions.reply(parked, answer)
            self._answered(parked.call)
        self.send_quietly(reply)
        result = self.drive(parked.call, name, token, progress, idle_s, questions)
        if result is RETRY:
            return ToolResult(
                f"{name}: the session with MCP server {self.label} ended while it was "
                "answering; call the tool again",
                True,
            )
        assert isinstance(result, ToolResult)
        return result

    def lost_result(self, name: str, lost: _Lost) -> ToolResult:
        """What the call ``name`` answers when the connection ended under it."""
        if isinstance(lost.auth, Request):  # a sign-in: a question like any other
            return ToolResult.pending(lost.auth)
        if lost.auth:
            return ToolResult(f"{name}: MCP server {self.label}: {lost.problem}", True)
        ran = " (the call may or may not have run)" if lost.sent else ""
        if self.client_closed():  # close() ended it: no later call reconnects
            return ToolResult(
                f"{name}: the client of MCP server {self.label} was closed{ran}", True
            )
        return ToolResult(
            f"{name}: the connection to MCP server {self.label} failed: {lost.problem}{ran}; the "
            "next call reconnects",
            True,
        )

    def handshake(self, legacy: bool) -> str | None:
        """Open the connection (``initialize`` at once when ``legacy``): the session's
        handshake, each phase within ``timeout_s``. Raises :class:`McpError`. Returns
        ``None`` once open, or why a stdio server must be started again to be opened
        with ``initialize`` (it ended the connection on the probe)."""
        deadline = time.monotonic() + self.timeout_s
        with self.lock:
            session = self.session
            outgoing: Outgoing | None = session.legacy_fallback() if legacy else session.open()
        while outgoing is not None:
            try:
                events = self._exchange_for_handshake(outgoing, deadline)
            except _Lost as lost:
                probing = self.session.probing(outgoing)
                if probing and self.is_stdio:
                    # A legacy stdio server may end the connection on a method it does not
                    # know: start it again and say initialize.
                    return lost.problem
                if probing and lost.sent:
                    # A legacy HTTP server may refuse the probe with a bare HTTP error.
                    with self.lock:
                        outgoing = self.session.legacy_fallback()
                    continue
                if lost.auth:
                    raise McpError(self.label, auth_problem(lost)) from None
                raise McpError(
                    self.label, f"the connection failed while opening: {lost.problem}"
                ) from None
            outgoing = None
            for event in events:
                if isinstance(event, Outgoing):
                    if event.id is None:
                        self.send_quietly(event)
                    else:
                        outgoing = event
                elif isinstance(event, Failure):
                    raise McpError(
                        self.label,
                        f"{event.method} failed: {event.message}"
                        + (f" ({event.code})" if event.code is not None else ""),
                    )
                elif isinstance(event, Opened):
                    _log.debug(
                        "MCP server %s: %s protocol %s",
                        self.label,
                        event.era,
                        event.protocol_version,
                    )
                    if outgoing is not None:  # logging/setLevel: its answer is not awaited
                        with self.lock:
                            self.session.forget(outgoing.id or 0)
                        self.send_quietly(outgoing)
                    return None
        raise McpError(self.label, "the handshake ended without opening the connection")

    def _exchange_for_handshake(self, outgoing: Outgoing, deadline: float) -> list[Any]:
        """Send one handshake request; the session's events for its answer."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise McpError(self.label, f"no answer to the handshake within {self.timeout_s:g} s")
        waiter = self.send_request(outgoing, None, left, self.opening)
        events: list[Any] = []
        try:
            while True:
                left = deadline - time.monotonic()
                try:
                    event = self.next_event(waiter, CancellationToken.NONE, max(left, 0.001))
                except _Idle:
                    method = outgoing.message.get("method")
                    raise McpError(
                        self.label,
                        f"no answer to {method} within {self.timeout_s:g} s (timeout_ms); is "
                        "it an MCP server, and is it the right command or URL?",
                    ) from None
                events.append(event)
                if isinstance(event, (Opened, Failure)) or (
                    isinstance(event, Outgoing) and event.id is not None
                ):
                    # What the same answer produced after it comes along.
                    while waiter.events:
                        events.append(waiter.events.popleft())
                    return events
        finally:
            with self.lock:
                if outgoing.id is not None:
                    self.peer.waiters.withdraw(outgoing.id)
            if waiter.messages is not None:
                waiter.messages.close()


class IoCall:
    """One ``tools/call`` that no thread waits for (:meth:`Connection.start_call`): its
    events are handed here by the thread reading the connection, and its result goes to
    ``done`` once — an answer, a refusal, a question (the call is parked), the caller's
    cancel (the server is told), a lost connection — what :meth:`Connection.drive` would
    have returned, decided by the same :meth:`~Connection.call_event` and
    :meth:`~Connection.call_ended`."""

    __slots__ = (
        "connection",
        "done",
        "lock",
        "name",
        "over",
        "progress",
        "questions",
        "registration",
        "token",
        "waiter",
    )

    def __init__(
        self,
        connection: Connection,
        waiter: Waiter,
        name: str,
        token: CancellationToken,
        progress: ProgressReporter | None,
        questions: ClientQuestions,
        done: Callable[[ToolResult], object],
    ) -> None:
        self.connection = connection
        self.waiter = waiter
        self.name = name
        self.token = token
        self.progress = progress
        self.questions = questions
        self.done = done
        self.lock = threading.Lock()
        self.over = False
        self.registration: CancellationTokenRegistration | None = None

    def listen(self) -> None:
        """Hear the caller's cancel (at once, here, when it came already)."""
        token = self.token
        if token is _NEVER or not token.can_be_cancelled:
            return
        registration = token.register(self.cancelled)
        with self.lock:
            if not self.over:
                self.registration = registration
                return
        registration.unregister()

    def event(self, event: Any) -> None:
        """The waiter's listener: an event of the call, or None (its waiter closed)."""
        if self.over:
            return
        connection, waiter = self.connection, self.waiter
        if event is None:
            ended = waiter.failure or _Lost(waiter.closed or "lost")
            result = connection.call_ended(waiter, self.name, ended, self.token, None, False)
            if not isinstance(result, ToolResult):  # RETRY: HTTP only, never here
                result = connection.lost_result(self.name, _Lost(waiter.closed or "lost"))
            self.end(result)
            return
        result = connection.call_event(
            waiter, self.name, event, self.progress, self.questions, False
        )
        if result is not None:
            if event.__class__ is ServerRequest:  # parked: its resume reads on as a caller
                waiter.listener = None
            self.end(result)

    def cancelled(self) -> None:
        """The caller's token was cancelled (a cancel, the host's deadline)."""
        if self.over:
            return
        result = self.connection.call_ended(
            self.waiter, self.name, _Cancelled(), self.token, None, False
        )
        assert isinstance(result, ToolResult)
        self.end(result)

    def end(self, result: ToolResult) -> None:
        with self.lock:
            if self.over:
                return
            self.over = True
            registration, self.registration = self.registration, None
        if registration is not None:
            registration.unregister()
        self.done(result)


def give_up(parked: Parked, reply: Outgoing, why: str) -> None:
    """A parked question was given up (:meth:`ClientQuestions.give_up`, its ``on_give_up``):
    its connection tells the server ``reply`` and ends the call it belongs to."""
    connection: Connection = parked.connection
    with connection.lock:
        connection._answered(parked.call)
    connection.send_quietly(reply)
    connection.abandon(parked.call, why)


def auth_problem(lost: _Lost) -> str:
    """What a failed sign-in says at connect time (where nothing can be handed back)."""
    request = lost.auth
    if isinstance(request, Request):
        return (
            f"it needs a sign-in at {request.url}; give OAuth(ask=...) a function that shows "
            "the user that URL and returns the redirect (the command line does so)"
        )
    return lost.problem


def _report(progress: ProgressReporter, params: Mapping[str, Any]) -> None:
    """Hand a ``notifications/progress`` to the caller's reporter (one that fails is logged)."""
    reported = progress_of(params)
    if reported is None:
        return
    try:
        progress(*reported)
    except Exception:
        _log.exception("a progress reporter failed")
