"""Streamable HTTP semantics shared by the embedded server and the ASGI app.

Everything that decides what an HTTP request to ``/mcp`` means lives here, with no socket
and no event loop: the security checks (``Host``/``Origin`` allow-lists against DNS
rebinding, the bearer token), the modern revision's header rules (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` must agree with the body, else ``-32020``),
the JSON-RPC error → HTTP status mapping, legacy sessions (``Mcp-Session-Id``, ``DELETE``,
idle expiry), and which response stream each message of a
:class:`~toolnexus.mcp.ServerSession` belongs to. A transport turns bytes into
:meth:`Endpoint.handle` and writes the :class:`Reply` it gets back; a reply that waits for
a tool carries an :class:`Exchange` the transport drains (as one JSON body, or as a
``text/event-stream`` once a notification or a question comes before the answer).

A modern (2026-07-28) request gets a fresh session of its own — nothing of it outlives
the request, so any replica can answer it given the shared ``requestState`` key. A legacy
``initialize`` creates a session that later requests name with ``Mcp-Session-Id``.
"""

from __future__ import annotations

import hmac
import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._cancellation import CancellationTokenSource
from .._context import bound_log
from .._result import ToolResult
from ..errors import InvalidTypeError, InvalidValueError
from ._protocol import (
    META_PROTOCOL_VERSION,
    NAMED_PARAM,
    decode_header_value,
    header_text,
)
from ._session import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    Action,
    CancelCall,
    Send,
    ServerSession,
    StartCall,
)

if TYPE_CHECKING:
    from .._host import Host
    from .._toolkit import Toolkit
    from ..stores import AnswerStore

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "SINGLE_HEADERS",
    "Endpoint",
    "Exchange",
    "Reply",
    "TokenVerifier",
]

_log = logging.getLogger("toolnexus")

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body accepted; a larger one is refused with HTTP 413."""

DEFAULT_SESSION_IDLE_S = 30 * 60.0
"""How long a legacy session may sit idle (no request, no call running) before it ends."""

SINGLE_HEADERS = frozenset(
    {
        "host",
        "origin",
        "authorization",
        "content-type",
        "content-length",
        "transfer-encoding",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
    }
)
"""Headers a request may carry once: a repeated one is refused with 400, since one copy
could pass a check the other would fail."""

TokenVerifier = Callable[[str], bool]
"""``verify(token) -> bool``: a caller-supplied check of the bearer token."""

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_JSON_TYPE = ("content-type", "application/json")
_SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
# JSON-RPC errors of the modern revision and the HTTP status each travels with.
_MODERN_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}
_MAX_SPARE = 64


class Reply:
    """What to answer one HTTP request: a status, headers and either a ``body`` or an
    :class:`Exchange` whose messages the transport streams."""

    __slots__ = ("body", "exchange", "headers", "status")

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]] | None = None,
        body: bytes = b"",
        exchange: Exchange | None = None,
    ) -> None:
        self.status = status
        self.headers = headers if headers is not None else []
        self.body = body
        self.exchange = exchange

    def __repr__(self) -> str:
        kind = "streaming" if self.exchange is not None else f"{len(self.body)} bytes"
        return f"<Reply {self.status} {kind}>"


def _json_reply(status: int, message: Mapping[str, Any], extra: list[tuple[str, str]]) -> Reply:
    return Reply(status, [_JSON_TYPE, *extra], Send(message).to_bytes())


def _error_reply(status: int, request_id: Any, code: int, message: str, data: Any = None) -> Reply:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _json_reply(status, {"jsonrpc": "2.0", "id": request_id, "error": error}, [])


def _plain(status: int, text: str, headers: list[tuple[str, str]] | None = None) -> Reply:
    return Reply(
        status,
        [("content-type", "text/plain; charset=utf-8"), *(headers or [])],
        text.encode("utf-8") + b"\n",
    )


def sse_event(data: bytes) -> bytes:
    """One ``text/event-stream`` event carrying one JSON-RPC message."""
    return b"event: message\ndata: " + data.rstrip(b"\n") + b"\n\n"


# --------------------------------------------------------------------------- exchanges


class Exchange:
    """The messages one POST's response carries, produced by tool threads and drained by
    the transport (a blocking :meth:`next` or a ``wake`` callback for an event loop).

    Items are ``(data, final)``: ``data`` a JSON-RPC message as bytes, ``final`` true for
    the response that ends the stream. ``(None, True)`` ends it without a response (the
    request was cancelled).
    """

    __slots__ = (
        "_held",
        "_lock",
        "_queue",
        "call_ids",
        "channel",
        "ended",
        "modern",
        "request_id",
        "streams",
        "wake",
    )

    def __init__(self, channel: _Channel, request_id: Any, modern: bool, streams: bool) -> None:
        self.channel = channel
        self.request_id = request_id
        self.modern = modern
        self.streams = streams  # the client accepts text/event-stream
        self.call_ids: set[int] = set()
        self.ended = False
        self.wake: Callable[[], object] | None = None
        self._lock = threading.Lock()  # `ended` against a racing client_gone
        # Producers put, the one consumer (the transport) gets: a C queue, no Condition.
        self._queue: queue.SimpleQueue[tuple[bytes | None, bool]] = queue.SimpleQueue()
        self._held: tuple[bytes | None, bool] | None = None  # given back by the consumer

    def _put(self, data: bytes | None, final: bool) -> None:
        if data == b"" and not final:
            return  # a notification Send.to_bytes could not encode (it logged why): no event
        with self._lock:
            if self.ended:
                return
            if final:
                self.ended = True
            self._queue.put((data, final))
        wake = self.wake
        if wake is not None:
            wake()

    # The consumer's side (one thread, or the event loop): next, poll and push_back.

    def next(self, timeout: float | None) -> tuple[bytes | None, bool] | None:
        """The next item, waiting up to ``timeout`` seconds; ``None`` if none came."""
        held = self._held
        if held is not None:
            self._held = None
            return held
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def poll(self) -> tuple[bytes | None, bool] | None:
        """The next item if one is ready, else ``None`` (for an event loop after a wake)."""
        held = self._held
        if held is not None:
            self._held = None
            return held
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None

    def push_back(self, item: tuple[bytes | None, bool]) -> None:
        """Return an item taken with :meth:`poll` to the front."""
        self._held = item

    def status_of(self, data: bytes) -> int:
        """The HTTP status for a response sent as plain JSON (modern errors map)."""
        if not self.modern or b'"error"' not in data:
            return 200
        try:
            code = json.loads(data)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return 200
        return _MODERN_STATUS.get(code, 200)

    def client_gone(self) -> None:
        """The response stream closed before the answer: cancel the request's call."""
        with self._lock:
            if self.ended:
                return
            self.ended = True
        self.channel.cancel_request(self.request_id, "the client closed the response stream")

    def __repr__(self) -> str:
        return f"<Exchange id={self.request_id!r} {'ended' if self.ended else 'open'}>"


# --------------------------------------------------------------------------- running calls


class _Runner:
    """Starts host calls: the one place the driver hands a call to the host, through the
    public ``Host.submit`` (no thread waits per call: the thread that finishes the call runs
    its completion)."""

    def __init__(self, make_host: Callable[[], Host]) -> None:
        self._make_host = make_host
        self._host: Host | None = None
        self._lock = threading.Lock()

    @property
    def host(self) -> Host:
        host = self._host
        if host is None:
            with self._lock:
                host = self._host
                if host is None:
                    host = self._host = self._make_host()
        return host

    def start(
        self,
        action: StartCall,
        source: CancellationTokenSource,
        progress: Callable[[float, float | None, str | None], None] | None,
        log: Callable[[str, Any, str | None], None],
        done: Callable[[ToolResult], None],
    ) -> None:
        host = self.host
        # The call copies this context: the tool's ctx.report_log finds its client here.
        bound = bound_log.set(log)
        try:
            call = host.submit(
                action.name,
                action.arguments,
                cancellation_token=source.token,
                progress=progress,
                request=action.resumes if action.answer is not None else None,
                answer=action.answer,
            )
        finally:
            bound_log.reset(bound)
        call.add_done_callback(lambda settled: done(settled.result(0)))

    def close(self) -> None:
        if self._host is not None:
            self._host.close()


# --------------------------------------------------------------------------- channels


class _Channel:
    """One :class:`ServerSession` and the response streams its messages go to.

    Modern requests each get a channel of their own; a legacy session keeps one for its
    life. All input to the session and all routing happen under one lock, so a call's
    notifications reach its stream before its response.
    """

    def __init__(self, session: ServerSession, runner: _Runner) -> None:
        self.session = session
        self._runner = runner
        self.lock = threading.Lock()
        self._by_request: dict[Any, Exchange] = {}
        self._by_call: dict[int, Exchange] = {}
        self._asked: dict[Any, Exchange] = {}  # our elicitation/create id -> its stream
        self._sources: dict[int, CancellationTokenSource] = {}
        self.last_used = time.monotonic()
        self.closed = False
        # Modern channels go back to the endpoint for reuse once nothing is in flight
        # (building a session costs more than answering a small request).
        self.on_idle: Callable[[_Channel], None] | None = None

    @property
    def busy(self) -> bool:
        return bool(self._sources) or bool(self._by_request)

    def request(self, message: Mapping[str, Any], exchange: Exchange) -> None:
        """Feed a client request whose answer goes to ``exchange``."""
        with self.lock:
            self.last_used = time.monotonic()
            request_id = message.get("id")
            if request_id not in self._by_request:
                self._by_request[request_id] = exchange
            later = self._route(self.session.receive(message), exchange)
        self._carry_out(later)

    def other(self, message: Any) -> None:
        """Feed a notification or a response to one of our questions."""
        with self.lock:
            self.last_used = time.monotonic()
            target = None
            if isinstance(message, dict) and "method" not in message:
                target = self._asked.pop(message.get("id"), None)
            later = self._route(self.session.receive(message), target)
        self._carry_out(later)

    def cancel_request(self, request_id: Any, reason: str) -> None:
        self.other(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": reason},
            }
        )

    def close(self, reason: str) -> None:
        with self.lock:
            self.closed = True
            later = self._route(self.session.close(), None)
            for exchange in [*self._by_request.values(), *self._by_call.values()]:
                exchange._put(None, True)
            self._by_request.clear()
            self._by_call.clear()
        self._carry_out(later)

    # Routing runs under the lock: it only files messages, never runs a tool.
    def _route(self, actions: Iterable[Action], here: Exchange | None) -> list[Action]:
        later: list[Action] = []
        for action in actions:
            if isinstance(action, Send):
                self._deliver(action, here)
            elif isinstance(action, StartCall):
                self._sources[action.call_id] = CancellationTokenSource()
                if here is not None:
                    self._by_call[action.call_id] = here
                    here.call_ids.add(action.call_id)
                later.append(action)
            else:
                later.append(action)
                target = self._by_call.pop(action.call_id, None)
                if target is not None:
                    target._put(None, True)
                    self._by_request.pop(target.request_id, None)
        return later

    def _deliver(self, action: Send, here: Exchange | None) -> None:
        message = action.message
        if "method" not in message:  # a response: it ends its request's stream
            request_id = message.get("id")
            if here is not None and here.request_id == request_id:
                target: Exchange | None = here
                if self._by_request.get(request_id) is here:
                    del self._by_request[request_id]
            else:
                target = self._by_request.pop(request_id, None)
            if target is None:
                target = here
            if target is not None:
                for call_id in target.call_ids:
                    self._by_call.pop(call_id, None)
                target._put(action.to_bytes(), True)
            if self.on_idle is not None and not (
                self._sources or self._by_request or self._by_call or self._asked
            ):
                self.on_idle(self)
            return
        if message.get("method") == "notifications/cancelled":
            params = message.get("params") or {}
            asked = self._asked.pop(params.get("requestId"), None)
            if asked is not None:
                asked._put(action.to_bytes(), False)
            return
        if here is None or not here.streams:
            return  # nobody listens for it (a client without text/event-stream)
        if "id" in message:  # our own request (elicitation/create): the answer comes back
            self._asked[message["id"]] = here
        here._put(action.to_bytes(), False)

    def _carry_out(self, later: list[Action]) -> None:
        for action in later:
            if isinstance(action, StartCall):
                self._start(action)
            elif isinstance(action, CancelCall):
                with self.lock:
                    source = self._sources.get(action.call_id)
                if source is not None:
                    source.cancel()

    def _start(self, action: StartCall) -> None:
        call_id = action.call_id
        with self.lock:
            source = self._sources[call_id]

        def feed(report: Callable[..., list[Action]], *args: Any) -> None:
            with self.lock:
                later = self._route(report(call_id, *args), self._by_call.get(call_id))
            self._carry_out(later)

        def progress(value: float, total: float | None, message: str | None) -> None:
            feed(self.session.report_progress, value, total, message)

        def log(level: str, data: Any, logger: str | None) -> None:
            feed(self.session.report_log, level, data, logger)

        def done(result: ToolResult) -> None:
            source.close()
            with self.lock:
                if self._sources.get(call_id) is source:
                    del self._sources[call_id]
                self.last_used = time.monotonic()
                later = self._route(
                    self.session.complete_call(call_id, result), self._by_call.get(call_id)
                )
            self._carry_out(later)

        try:
            self._runner.start(
                action, source, progress if action.wants_progress else None, log, done
            )
        except Exception as exc:  # the host promises not to raise; answer anyway if it does
            _log.exception("toolnexus mcp http: the host raised for %r", action.name)
            done(ToolResult.error(f"internal error running '{action.name}': {exc}"))


# --------------------------------------------------------------------------- the endpoint


class Endpoint:
    """What ``/mcp`` answers, for any transport. Thread-safe.

    Args:
        toolkit: the tools to serve.
        name, version, instructions: the server identity (as for ``ServerSession``).
        timeout_ms: each call's deadline on the host (``None``: none).
        allowed_hosts: ``Host`` names answered besides localhost's (the port is ignored);
            ``("*",)``: any (behind a proxy that checks).
        allowed_origins: ``Origin`` values accepted besides ``http(s)://`` localhost ones
            when a request carries one, e.g. ``"https://app.example"``; ``("*",)``: any.
        token: the bearer token every request must carry (``None``: none needed).
        verify_token: a caller-supplied check of the bearer token, used instead of
            ``token``.
        secret: the key that signs modern ``requestState`` (give every replica the same
            one); ``None``: a random per-process key.
        answer_store: where used answers and states are remembered so each counts once
            (give every replica the same one: ``open_store("postgresql://…")`` or
            ``open_store("redis://…")``, :func:`~toolnexus.stores.open_store`); ``None``:
            the store ``TOOLNEXUS_STORE`` names, else one in memory per process.
        max_rounds: how many answers one call may take: 1 (the loop rule) makes a retry
            that asks again ``unresolved: <prompt>``; more let it ask again that many times.
        max_body_bytes: the largest request body accepted.
        session_idle_s: how long an idle legacy session lives.
        max_sessions: how many legacy sessions may exist at once.
    """

    def __init__(
        self,
        toolkit: Toolkit,
        *,
        name: str = "toolnexus",
        version: str | None = None,
        instructions: str | None = None,
        timeout_ms: int | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        token: str | None = None,
        verify_token: TokenVerifier | None = None,
        secret: bytes | str | Sequence[bytes | str] | None = None,
        answer_store: AnswerStore | None = None,
        max_rounds: int = 1,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        session_idle_s: float = DEFAULT_SESSION_IDLE_S,
        max_sessions: int = 1000,
        host_factory: Callable[[], Host] | None = None,
    ) -> None:
        if version is None:
            from .. import __version__ as version
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise InvalidValueError("token must be a non-empty str or None")
        if verify_token is not None and not callable(verify_token):
            raise InvalidTypeError(
                f"verify_token must be callable or None, got {type(verify_token).__name__}"
            )
        for label, number in (("max_body_bytes", max_body_bytes), ("max_sessions", max_sessions)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise InvalidValueError(f"{label} must be an int >= 1, got {number!r}")
        if timeout_ms is not None and (
            isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0
        ):
            raise InvalidValueError(
                f"timeout_ms must be None or an int >= 0 (milliseconds), got {timeout_ms!r}"
            )
        self._toolkit = toolkit
        self._session_options: dict[str, Any] = {
            "name": name,
            "version": version,
            "instructions": instructions,
            "secret": secret,
            "answer_store": answer_store,
            "max_rounds": max_rounds,
        }
        ServerSession(toolkit, **self._session_options)  # check the options once, here
        self._hosts = _allow_list(allowed_hosts, "allowed_hosts")
        self._origins = _allow_list(allowed_origins, "allowed_origins")
        self._token = token.strip().encode("utf-8") if token is not None else None
        self._verify = verify_token
        self.max_body_bytes = max_body_bytes
        self._idle_s = session_idle_s
        self._max_sessions = max_sessions
        if host_factory is None:

            def host_factory() -> Host:
                from .._host import Host

                # The sessions' key and used answers: bindings verify, answers count once.
                return Host(
                    toolkit,
                    timeout_ms=timeout_ms,
                    secret=secret,
                    answer_store=answer_store,
                    max_rounds=max_rounds,
                )

        self._runner = _Runner(host_factory)
        self._sessions: dict[str, _Channel] = {}
        self._sessions_lock = threading.Lock()
        self._spare: list[_Channel] = []  # idle modern channels (append/pop are atomic)
        self._closed = False

    # ------------------------------------------------------------------ checks

    def check_access(self, headers: Mapping[str, str]) -> Reply | None:
        """The refusal for a request that fails the Host/Origin/token checks, or ``None``."""
        host = headers.get("host")
        if self._hosts is not None and (host is None or _host_name(host) not in self._hosts):
            return _plain(
                421,
                "misdirected request: this server does not answer for that "
                "Host (see allowed_hosts)",
            )
        origin = headers.get("origin")
        if (
            origin is not None
            and self._origins is not None
            and (
                origin.strip().lower().rstrip("/") not in self._origins
                and not _is_local_origin(origin)
            )
        ):
            return _plain(
                403, "forbidden: requests from that Origin are not allowed (see allowed_origins)"
            )
        if self._token is None and self._verify is None:
            return None
        authorization = headers.get("authorization", "")
        scheme, _, presented = authorization.strip().partition(" ")
        presented = presented.strip()
        if scheme.lower() != "bearer" or not presented:
            return _plain(
                401,
                "unauthorized: send 'Authorization: Bearer <token>'",
                [("www-authenticate", 'Bearer realm="mcp"')],
            )
        if self._verify is not None:
            try:
                accepted = bool(self._verify(presented))
            except Exception:
                _log.exception("toolnexus mcp http: the token verifier raised")
                accepted = False
        else:
            assert self._token is not None
            accepted = hmac.compare_digest(presented.encode("utf-8"), self._token)
        if not accepted:
            # Never echo what was presented: it may be someone's real secret.
            return _plain(
                401,
                "unauthorized: the bearer token was not accepted",
                [("www-authenticate", 'Bearer realm="mcp", error="invalid_token"')],
            )
        return None

    # ------------------------------------------------------------------ requests

    def handle(self, method: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request to the endpoint. ``headers`` has lower-case names."""
        refused = self.check_access(headers)
        if refused is not None:
            return refused
        if method == "POST":
            return self._post(headers, body)
        if method == "DELETE":
            return self._delete(headers)
        if method == "GET":
            # No standalone stream: everything a call says goes on its POST's stream.
            return _plain(
                405,
                "method not allowed: this server sends no messages outside "
                "a POST's response stream",
                [("allow", "POST, DELETE")],
            )
        return _plain(405, f"method not allowed: {method}", [("allow", "POST, DELETE")])

    def _post(self, headers: Mapping[str, str], body: bytes) -> Reply:
        content_type = headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return _plain(
                415,
                "unsupported media type: POST a JSON-RPC message with "
                "'Content-Type: application/json'",
            )
        accept = headers.get("accept", "*/*").lower()
        streams = "text/event-stream" in accept or "*/*" in accept
        if not ("application/json" in accept or "*/*" in accept or "application/*" in accept):
            return _plain(
                406,
                "not acceptable: the client must accept application/json "
                "(and text/event-stream for notifications)",
            )
        if len(body) > self.max_body_bytes:
            return self.too_large(len(body))
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as exc:
            return _error_reply(400, None, PARSE_ERROR, f"parse error: not valid JSON ({exc})")
        session_id = headers.get("mcp-session-id")
        if session_id is not None:
            return self._legacy(session_id.strip(), message, streams)
        if (
            isinstance(message, dict)
            and message.get("method") == "initialize"
            and not (_has_modern_meta(message))
        ):
            return self._initialize(message, streams)
        return self._modern(headers, message, streams)

    def too_large(self, length: int) -> Reply:
        return _error_reply(
            413,
            None,
            INVALID_REQUEST,
            f"message too large: {length} bytes or more, the limit is {self.max_body_bytes} bytes",
        )

    def _new_session(self) -> ServerSession:
        return ServerSession(self._toolkit, **self._session_options)

    def _modern(self, headers: Mapping[str, str], message: Any, streams: bool) -> Reply:
        request_id = message.get("id") if isinstance(message, dict) else None
        mismatch = self._header_mismatch(headers, message)
        if mismatch is not None:
            return _error_reply(400, request_id, HEADER_MISMATCH, mismatch)
        try:
            channel = self._spare.pop()
        except IndexError:
            channel = _Channel(self._new_session(), self._runner)
            channel.on_idle = self._reuse
        return self._dispatch(channel, message, streams, modern=True)

    def _reuse(self, channel: _Channel) -> None:
        if len(self._spare) < _MAX_SPARE:
            self._spare.append(channel)

    def _dispatch(
        self,
        channel: _Channel,
        message: Any,
        streams: bool,
        modern: bool,
        extra: list[tuple[str, str]] | None = None,
    ) -> Reply:
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            # A notification, or an answer to one of our questions: nothing to wait for.
            channel.other(message)
            return Reply(202, list(extra or []))
        exchange = Exchange(channel, message.get("id"), modern, streams)
        channel.request(message, exchange)
        first = exchange.poll()
        if first is not None and first[1] and first[0] is not None:
            # Answered at once (most requests but tools/call): one JSON body.
            return Reply(exchange.status_of(first[0]), [_JSON_TYPE, *(extra or [])], first[0])
        if first is not None:
            exchange.push_back(first)
        return Reply(200, list(extra or []), exchange=exchange)

    def _header_mismatch(self, headers: Mapping[str, str], message: Any) -> str | None:
        """Why the modern routing headers disagree with the body, or ``None``."""
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return None
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict) or META_PROTOCOL_VERSION not in meta:
            return None  # not a modern request: the session words what is missing
        method = message["method"]
        version = headers.get("mcp-protocol-version")
        if version is None or version.strip() != meta[META_PROTOCOL_VERSION]:
            return (
                f"header mismatch: MCP-Protocol-Version {_shown(version)} does not match "
                f"_meta[{META_PROTOCOL_VERSION!r}] {_shown(meta[META_PROTOCOL_VERSION])}"
            )
        stated = headers.get("mcp-method")
        if stated is None or stated.strip() != method:
            return f"header mismatch: Mcp-Method {_shown(stated)} does not match method {method!r}"
        key = NAMED_PARAM.get(method)
        if key is not None and isinstance(params, dict) and key in params:
            named = headers.get("mcp-name")
            if named is None or named.strip() != params[key]:
                return (
                    f"header mismatch: Mcp-Name {_shown(named)} does not match "
                    f"params.{key} {_shown(params[key])}"
                )
        if method == "tools/call" and isinstance(params, dict):
            return self._param_headers(headers, params)
        return None

    def _param_headers(self, headers: Mapping[str, str], params: Mapping[str, Any]) -> str | None:
        name = params.get("name")
        if not isinstance(name, str) or name not in self._toolkit:
            return None
        properties = self._toolkit.get(name).input_schema.get("properties")
        if not isinstance(properties, Mapping):
            return None
        arguments = params.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        for field, schema in properties.items():
            label = schema.get("x-mcp-header") if isinstance(schema, Mapping) else None
            if not isinstance(label, str) or not label:
                continue
            header = f"mcp-param-{label.lower()}"
            raw = headers.get(header)
            if field not in arguments or arguments[field] is None:
                continue
            if raw is None:
                return (
                    f"header mismatch: Mcp-Param-{label} is missing but arguments.{field} "
                    "is set; send the header with the same value"
                )
            decoded = decode_header_value(raw.strip())
            if decoded is None:
                return f"header mismatch: Mcp-Param-{label} is not valid =?base64?...?= text"
            if decoded != header_text(arguments[field]):
                return f"header mismatch: Mcp-Param-{label} does not match arguments.{field}"
        return None

    # ------------------------------------------------------------------ legacy sessions

    def _initialize(self, message: Mapping[str, Any], streams: bool) -> Reply:
        self.expire_idle()
        with self._sessions_lock:
            if len(self._sessions) >= self._max_sessions:
                return _plain(503, "service unavailable: too many sessions; try again later")
            session_id = secrets.token_urlsafe(24)
            channel = _Channel(self._new_session(), self._runner)
            self._sessions[session_id] = channel
        reply = self._dispatch(
            channel, message, streams, modern=False, extra=[("mcp-session-id", session_id)]
        )
        if channel.session.protocol_version is None:  # initialize was refused
            with self._sessions_lock:
                self._sessions.pop(session_id, None)
            reply.headers = [h for h in reply.headers if h[0] != "mcp-session-id"]
        return reply

    def _legacy(self, session_id: str, message: Any, streams: bool) -> Reply:
        with self._sessions_lock:
            channel = self._sessions.get(session_id)
        if channel is None or channel.closed:
            return _error_reply(
                404,
                None,
                INVALID_REQUEST,
                "session not found: it ended or expired; initialize again",
            )
        return self._dispatch(channel, message, streams, modern=False)

    def _delete(self, headers: Mapping[str, str]) -> Reply:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return _plain(400, "bad request: DELETE needs the Mcp-Session-Id to end")
        with self._sessions_lock:
            channel = self._sessions.pop(session_id.strip(), None)
        if channel is None:
            return _plain(404, "session not found: it ended or expired")
        channel.close("the client ended the session")
        return Reply(204)

    def expire_idle(self) -> None:
        """End legacy sessions idle for longer than ``session_idle_s``."""
        cutoff = time.monotonic() - self._idle_s
        with self._sessions_lock:
            stale = [
                key
                for key, channel in self._sessions.items()
                if channel.last_used < cutoff and not channel.busy
            ]
            channels = [self._sessions.pop(key) for key in stale]
        for channel in channels:
            channel.close("the session expired")

    @property
    def session_count(self) -> int:
        """How many legacy sessions are open."""
        with self._sessions_lock:
            return len(self._sessions)

    def close(self) -> None:
        """End every session (cancelling their calls) and close the host."""
        self._closed = True
        with self._sessions_lock:
            channels = list(self._sessions.values())
            self._sessions.clear()
        for channel in channels:
            channel.close("the server is shutting down")
        self._runner.close()

    @property
    def host(self) -> Host:
        """The host the calls run on (created with the first call)."""
        return self._runner.host


# --------------------------------------------------------------------------- helpers


def _allow_list(values: Iterable[str] | None, label: str) -> frozenset[str] | None:
    """The accepted values besides localhost's (which are always accepted); ``None``: any."""
    if values is None:
        return _LOCAL_HOSTS if label == "allowed_hosts" else frozenset()
    if isinstance(values, str):
        raise InvalidTypeError(f"{label} must be a list of strings, not one string: [{values!r}]")
    items = frozenset(value.strip().lower().rstrip("/") for value in values)
    if "*" in items:
        return None
    for item in items:
        if not item:
            raise InvalidValueError(f"{label} must not contain an empty string")
    if label == "allowed_hosts":
        return _LOCAL_HOSTS | {_host_name(item) for item in items}
    return items


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end > 0 else host
    name, _, port = host.rpartition(":")
    return name if name and port.isdigit() else host


def _is_local_origin(origin: str) -> bool:
    origin = origin.strip().lower()
    for scheme in ("http://", "https://"):
        if origin.startswith(scheme):
            return _host_name(origin[len(scheme) :].split("/")[0]) in _LOCAL_HOSTS
    return False


def _has_modern_meta(message: Mapping[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def _shown(value: Any) -> str:
    return "(missing)" if value is None else repr(value)[:80]
