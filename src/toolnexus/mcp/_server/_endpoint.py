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

import functools
import hashlib
import hmac
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..._context import PresentedToken, bound_principal, bound_token
from ..._log import LazyLogger
from .._shared._codec import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    decode,
    encode,
    error_message,
)
from .._shared._correlation import InFlight, Pending
from .._shared._protocol import (
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    NAMED_PARAM,
    authority,
    decode_header_value,
    header_text,
    host_name,
)
from ._bridge import CallBridge, InflightBytes, LazyHost
from ._exchange import JSON_TYPE, Exchange, Reply
from ._feature_tools import make_tasks
from ._options import ServerOptions, TokenVerifier
from ._session import Send, ServerSession

if TYPE_CHECKING:
    from ..._host import Host
    from ..._principal import Principal
    from ..._toolkit import Toolkit
    from ...stores import TaskRecord
    from ._auth import ResourceGuard
    from ._tasks import Tasks

__all__ = [
    "SINGLE_HEADERS",
    "Endpoint",
    "Exchange",
    "Reply",
    "TokenVerifier",
]

_log = LazyLogger()  # logging loads with the first record, not with the server

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

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_MAX_SPARE = 64


def _json_reply(status: int, message: Mapping[str, Any], extra: list[tuple[str, str]]) -> Reply:
    return Reply(status, [JSON_TYPE, *extra], Send(message).to_bytes())


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


# --------------------------------------------------------------------------- channels


class _Channel(CallBridge):
    """One :class:`ServerSession`, its calls on the host, and the response streams its
    messages go to.

    Modern requests each get a channel of their own (reused once idle); a legacy session
    keeps one for its life. All input to the session and all routing happen under the
    bridge's lock, so a call's notifications reach its stream before its response.
    """

    transport = "tcp"

    def __init__(
        self,
        session: ServerSession,
        host: LazyHost,
        inflight: InflightBytes,
        tasks: Tasks | None = None,
        reads: bool = False,
    ) -> None:
        super().__init__(session, host, inflight, tasks)
        self.reads = reads  # a worker drains each response with Exchange.next (blocking)
        self._by_request: InFlight[Exchange] = InFlight()  # each request's answer stream
        self._asked: Pending[Exchange] = Pending()  # our elicitation/create id -> its stream
        self.last_used = time.monotonic()
        self.created = self.last_used
        self.closed = False
        self.principal: str | None = None  # who created a legacy session: only they use it
        self.peer: str | None = None
        # A legacy session's GET stream: where what no request carries goes (list changes)
        self.standalone: Exchange | None = None
        # Modern channels go back to the endpoint for reuse once nothing is in flight
        # (building a session costs more than answering a small request).
        self.on_idle: Callable[[_Channel], None] | None = None

    @property
    def busy(self) -> bool:
        return bool(self.calls) or bool(self._by_request)

    @property
    def used(self) -> bool:
        """Whether the session completed its initialization and made a call."""
        return self._newest > 0 and self.session.initialized

    def request(
        self,
        message: Mapping[str, Any],
        exchange: Exchange,
        weight: int,
        owner: str | None = None,
    ) -> int:
        """Feed a client request whose answer goes to ``exchange``. ``weight``: its size,
        taken from the in-flight cap already; ``owner``: who sent it (a task it makes is
        theirs); returns what a call it started kept."""
        with self.lock:
            self.last_used = time.monotonic()
            self.session.owner = owner
            request_id = message.get("id")
            self._by_request.begin(request_id, exchange)  # a reused id: the first keeps it
            self.kept = 0
            later = self.dispatch(self.session.receive(message), exchange, weight, prepaid=True)
            kept = self.kept
        if later:
            self.carry_out(later)
        return kept

    def other(self, message: Any) -> None:
        """Feed a notification or a response to one of our questions."""
        with self.lock:
            self.last_used = time.monotonic()
            target = None
            if isinstance(message, dict) and "method" not in message:
                target = self._asked.answered(message.get("id"))
            later = self.dispatch(self.session.receive(message), target)
        if later:
            self.carry_out(later)

    def cancel_request(self, request_id: Any, reason: str) -> None:
        self.other(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": reason},
            }
        )
        with self.lock:
            # A subscription (or an answered request) the session no longer holds: its
            # stream is over.
            exchange = self._by_request.get(request_id)
            if exchange is not None and not self.session.in_progress(request_id):
                del self._by_request[request_id]
                exchange._put(None, True)
            if self.on_idle is not None and not (self.calls or self._by_request or self._asked):
                self.on_idle(self)

    def close(self, reason: str = "the client closed the connection") -> None:
        with self.lock:
            self.closed = True
            later = self.dispatch(self.session.close())
            for exchange in self._by_request.values():
                exchange._put(None, True)
            self._by_request.clear()
            standalone, self.standalone = self.standalone, None
        if standalone is not None:
            standalone._put(None, True)
        self.carry_out(later)

    def end_streams(self) -> None:
        """End this session's notification streams gracefully — its ``GET`` stream, its
        ``subscriptions/listen`` streams with their responses — and leave its calls be."""
        with self.lock:
            later = self.dispatch(self.session._end_listens())
            standalone, self.standalone = self.standalone, None
        if standalone is not None:
            standalone._put(None, True)
        self.carry_out(later)

    def _task_ended(self) -> None:
        if self.on_idle is not None and not (self.calls or self._by_request or self._asked):
            self.on_idle(self)

    # Routing runs under the lock: it only files messages, never runs a tool.
    def _cancelled(self, where: Any) -> None:
        if where is not None:
            where._put(None, True)
            self._by_request.end(where.request_id, where)

    def _reads(self, where: Any) -> bool:
        return self.reads and where is not None

    def _read_by(self, where: Any, io: Any) -> None:
        where.read_by(io)

    def _deliver(self, action: Send, here: Any) -> None:
        if action.is_response:  # it ends its request's stream
            request_id = action.id
            if here is not None and here.request_id == request_id:
                target: Exchange | None = here
                self._by_request.end(request_id, here)
            else:
                target = self._by_request.pop(request_id, None)
            if target is None:
                target = here
            if target is not None:
                target._put(action.to_bytes(), True)
            if self.on_idle is not None and not (self.calls or self._by_request or self._asked):
                self.on_idle(self)
            return
        message = action.message
        if message.get("method") == "notifications/cancelled":
            params = message.get("params") or {}
            asked = self._asked.withdraw(params.get("requestId"))
            if asked is not None:
                asked._put(action.to_bytes(), False)
            return
        if "id" not in message:
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, Mapping) else None
            subscription = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, Mapping) else None
            if subscription is not None:  # a change told on a subscriptions/listen stream
                here = self._by_request.get(subscription)
            elif here is None:  # a change told to a legacy session: its GET stream
                here = self.standalone
        if here is None or not here.streams:
            return  # nobody listens for it (a client without text/event-stream)
        if "id" in message:  # our own request (elicitation/create): the answer comes back
            self._asked.issue(message["id"], here)
        here._put(action.to_bytes(), False)


# --------------------------------------------------------------------------- the endpoint


class Identity:
    """Who sent a request, as :meth:`Endpoint.authenticate` found: ``key`` owns legacy
    sessions (a digest; ``None`` when no authentication is asked for), ``principal`` is
    what tools see as ``ctx.principal`` (OAuth, or a verifier that returned one)."""

    __slots__ = ("key", "principal", "token")

    def __init__(
        self, key: str | None, principal: Principal | None = None, token: str | None = None
    ) -> None:
        self.key = key
        self.principal = principal
        self.token = token  # what the principal was verified from (a gateway exchanges it)


_NOBODY = Identity(None)


class _Caller:
    """Who sent a request, and the bytes of its body taken from the in-flight cap."""

    __slots__ = ("identity", "peer", "principal", "reserved", "scheme")

    def __init__(
        self, identity: Identity, peer: str | None, reserved: int, scheme: str = "http"
    ) -> None:
        self.identity = identity
        self.principal = identity.key
        self.peer = peer
        self.reserved = reserved
        self.scheme = scheme


class Endpoint:
    """What ``/mcp`` answers, for any transport. Thread-safe.

    Args:
        toolkit: the tools to serve.
        options: a :class:`~toolnexus.mcp.ServerOptions`: its sessions take it whole;
            the endpoint reads its ``http`` (allowed hosts and origins, legacy session and
            stream limits), ``access`` (the bearer token, its verifier or OAuth), ``host``
            (for the host the calls run on), ``tasks`` and its message and in-flight
            sizes.
    """

    def __init__(self, toolkit: Toolkit, options: ServerOptions, path: str = "/mcp") -> None:
        self._toolkit = toolkit
        self._options = options
        self._http = http = options.http
        access = options.access
        self._guard: ResourceGuard | None = None
        if access.auth is not None:
            from ._auth import ResourceGuard

            self._guard = ResourceGuard(access.auth, path, options.name, http.max_requests)
        self._hosts = _allow_list(http.allowed_hosts)
        self._origins = _allow_list(http.allowed_origins)
        token = access.token
        self._token = token.strip().encode("utf-8") if token is not None else None
        self._verify = access.verify_token
        self.max_body_bytes = options.max_message_bytes
        self._idle_s = http.session_idle_ms / 1000
        self._max_sessions = http.max_sessions
        self._host = LazyHost(toolkit, options.host)
        self._tasks = make_tasks(options.tasks)
        self._inflight = InflightBytes(options.max_inflight_bytes)
        # Set by a transport whose workers drain each response with a blocking
        # Exchange.next (the embedded server's): they read a remote call's answer too.
        self.reads = False
        self._sessions: dict[str, _Channel] = {}
        self._sessions_lock = threading.Lock()
        self._spare: list[_Channel] = []  # idle modern channels (append/pop are atomic)
        self._closed = False
        self._streams_ended = False  # end_streams ran: no notification stream opens
        # Modern channels in use (a subscriptions/listen stream lives in one); the toolkit
        # tells each channel that listens of every change.
        self._modern_channels: weakref.WeakSet[_Channel] = weakref.WeakSet()
        self._streams = 0  # notification streams open now (listens, legacy GET streams)
        self._streams_lock = threading.Lock()
        self._unwatch = toolkit._watch(self._changed)
        self._unwatch_tasks = self._tasks.watch(self._task_changed, wants=self._task_listeners)

    # ------------------------------------------------------------------ checks

    def listening(self, address: tuple[str, int] | None) -> None:
        """Learn where this endpoint is served: the embedded server's ``(host, port)``, or
        ``None`` for an ASGI app (which cannot know). An OAuth resource that is not
        configured is this address's URL. Raises ``ValueError`` (naming
        ``ProtectedResource(resource=...)``) when OAuth needs a resource none can be
        derived for."""
        if self._guard is not None:
            self._guard.listening(address)

    def check_access(
        self, headers: Mapping[str, str], scheme: str = "http", method: str = "POST"
    ) -> Reply | None:
        """The refusal for a request that fails the Host/Origin/token checks, or ``None``."""
        return self.authenticate(headers, scheme, method)[0]

    @property
    def verifies_remotely(self) -> bool:
        """Whether checking a token may wait on the network (OAuth introspection, keys):
        an event loop should use :meth:`authenticate_nowait`."""
        return self._guard is not None

    def authenticate(
        self,
        headers: Mapping[str, str],
        scheme: str = "http",
        method: str = "POST",
        peer: str | None = None,
    ) -> tuple[Reply | None, Identity]:
        """The refusal for a request that fails the Host/Origin/token checks, or ``None``
        and who sent it; waits for an OAuth token's check (on the guard's own threads).
        ``scheme``: the request's (``http``/``https``); ``method``: its HTTP method (what
        a DPoP proof must have been made for); ``peer``: the client's address (how many
        of its requests may wait for token checks: ``max_checks_per_peer``)."""
        outcome = self._authenticate(headers, scheme, method, peer, wait=True)
        assert not isinstance(outcome, Future)  # it waited
        return outcome

    def authenticate_nowait(
        self,
        headers: Mapping[str, str],
        scheme: str = "http",
        method: str = "POST",
        peer: str | None = None,
    ) -> tuple[Reply | None, Identity] | Future[tuple[Reply | None, Identity]]:
        """:meth:`authenticate` without waiting: its answer when it is known now (no
        token, a token checked lately, any other kind of check), else a
        :class:`~concurrent.futures.Future` of it — an OAuth token being verified on the
        guard's threads (an event loop awaits it with ``asyncio.wrap_future``)."""
        return self._authenticate(headers, scheme, method, peer, wait=False)

    def _host_allowed(self, host: str | None, scheme: str) -> bool:
        """Whether ``Host`` names this server: a local name or a listed one (any port), or
        a listed ``name:port``."""
        hosts = self._hosts
        if hosts is None:
            return True
        if host is None:
            return False
        name = host_name(host)
        return name in _LOCAL_HOSTS or name in hosts or authority(host, scheme) in hosts

    def _authenticate(
        self,
        headers: Mapping[str, str],
        scheme: str,
        method: str,
        peer: str | None = None,
        *,
        wait: bool,
    ) -> tuple[Reply | None, Identity] | Future[tuple[Reply | None, Identity]]:
        if not self._host_allowed(headers.get("host"), scheme):
            return _plain(
                421,
                "misdirected request: this server does not answer for that "
                "Host (see allowed_hosts)",
            ), _NOBODY
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
            ), _NOBODY
        guard = self._guard
        if self._token is None and self._verify is None and guard is None:
            return None, _NOBODY
        authorization = headers.get("authorization", "")
        scheme_name, _, presented = authorization.strip().partition(" ")
        presented = presented.strip()
        kind = scheme_name.lower()
        usable = kind == "bearer" or (kind == "dpop" and guard is not None)  # RFC 9449
        if not usable or not presented:
            if guard is not None:
                return _identified(guard.judge(None, None, headers, scheme))
            return _plain(
                401,
                "unauthorized: send 'Authorization: Bearer <token>'",
                [("www-authenticate", 'Bearer realm="mcp"')],
            ), _NOBODY
        if guard is not None:
            checked = guard.check(
                presented,
                headers,
                scheme,
                wait=wait,
                method=method,
                dpop=kind == "dpop",
                peer=peer,
            )
            if isinstance(checked, Future):
                from ._auth import then

                return then(checked, functools.partial(_identified, token=presented))
            return _identified(checked, presented)
        # Headers arrive decoded as Latin-1: encoding back gives the bytes that were sent.
        raw = presented.encode("latin-1", "replace")
        principal = None
        if self._verify is not None:
            try:
                verdict = self._verify(presented)
            except Exception:
                _log.exception("toolnexus mcp http: the token verifier raised")
                verdict = False
            if verdict is not None and not isinstance(verdict, bool):
                from ..._principal import Principal

                if isinstance(verdict, Principal):
                    principal = verdict
                else:
                    verdict = bool(verdict)
            accepted = principal is not None or verdict is True
        else:
            assert self._token is not None
            accepted = hmac.compare_digest(raw, self._token)
        if not accepted:
            # Never echo what was presented: it may be someone's real secret.
            return _plain(
                401,
                "unauthorized: the bearer token was not accepted",
                [("www-authenticate", 'Bearer realm="mcp", error="invalid_token"')],
            ), _NOBODY
        token = presented if principal is not None else None
        return None, Identity(hashlib.sha256(raw).hexdigest(), principal, token)

    def is_metadata(self, path: str) -> bool:
        """Whether ``path`` is where this endpoint's OAuth protected-resource metadata
        lives (``/.well-known/oauth-protected-resource/mcp``); never without ``auth``."""
        return self._guard is not None and path in self._guard.metadata_paths

    def metadata(self, method: str, headers: Mapping[str, str], scheme: str = "http") -> Reply:
        """Answer a request for the protected-resource metadata (RFC 9728): anyone may
        read it (it is how a client learns where to get a token), from an allowed Host."""
        guard = self._guard
        if guard is None:
            return _plain(404, "not found")
        if method not in ("GET", "HEAD"):
            return _plain(405, f"method not allowed: {method}", [("allow", "GET, HEAD")])
        if not self._host_allowed(headers.get("host"), scheme):
            return _plain(
                421,
                "misdirected request: this server does not answer for that "
                "Host (see allowed_hosts)",
            )
        return guard.metadata(headers, scheme)

    # ------------------------------------------------------------------ the in-flight cap

    def reserve(self, length: int) -> Reply | None:
        """Count a request body of ``length`` bytes against the in-flight cap before it is
        read; the refusal (503) when it would pass it. :meth:`handle` gives it back, or
        keeps it for the call the request starts."""
        refused = self._inflight.take(length)
        if refused is None:
            return None
        return Reply(
            503,
            [JSON_TYPE, ("retry-after", "1")],
            encode(error_message(None, INTERNAL_ERROR, refused)),
        )

    def release(self, length: int) -> None:
        """Give back bytes :meth:`reserve` took for a request that is not answered."""
        self._inflight.give(length)

    @property
    def inflight(self) -> tuple[int, int]:
        """(bytes of requests held now, the most held at once so far): never above the
        ``max_inflight_bytes`` cap."""
        return self._inflight.used, self._inflight.peak

    # ------------------------------------------------------------------ requests

    def handle(
        self,
        method: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        reserved: int = 0,
        peer: str | None = None,
        scheme: str = "http",
        identity: Identity | None = None,
    ) -> Reply:
        """Answer one request to the endpoint. ``headers`` has lower-case names;
        ``reserved``: the bytes :meth:`reserve` took for its body (given back here, or
        kept by the call it starts); ``peer``: the client's address, for per-peer limits;
        ``scheme``: the request's; ``identity``: what :meth:`authenticate` found already
        (an event loop runs it off the loop), else it is run here."""
        kept = 0
        try:
            if identity is None:
                refused, identity = self.authenticate(headers, scheme, method, peer)
                if refused is not None:
                    return refused
            if method == "POST":
                caller = _Caller(identity, peer, reserved, scheme)
                reply, kept = self._post(headers, body, caller)
                return reply
            if method == "DELETE":
                return self._delete(headers, identity.key)
            if method == "GET":
                return self._get(headers, identity.key)
            return _plain(405, f"method not allowed: {method}", [("allow", "GET, POST, DELETE")])
        finally:
            if reserved > kept:
                self._inflight.give(reserved - kept)

    def _post(self, headers: Mapping[str, str], body: bytes, caller: _Caller) -> tuple[Reply, int]:
        content_type = headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return _plain(
                415,
                "unsupported media type: POST a JSON-RPC message with "
                "'Content-Type: application/json'",
            ), 0
        accept = headers.get("accept", "*/*").lower()
        streams = "text/event-stream" in accept or "*/*" in accept
        if not ("application/json" in accept or "*/*" in accept or "application/*" in accept):
            return _plain(
                406,
                "not acceptable: the client must accept application/json "
                "(and text/event-stream for notifications)",
            ), 0
        if len(body) > self.max_body_bytes:
            return self.too_large(len(body)), 0
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _error_reply(
                400, None, PARSE_ERROR, f"parse error: the body is not UTF-8 ({exc})"
            ), 0
        if text.startswith("\ufeff"):  # a byte order mark, which JSON's RFC lets a reader skip
            text = text[1:]
        try:
            message = decode(text.strip())  # the wire's one rule, as over stdio: no NaN
        except (ValueError, RecursionError) as exc:
            return _error_reply(400, None, PARSE_ERROR, f"parse error: not valid JSON ({exc})"), 0
        principal = caller.identity.principal
        if (
            principal is not None
            and self._guard is not None
            and isinstance(message, dict)
            and message.get("method") == "tools/call"
        ):
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str):
                refused = self._guard.check_tool(principal, name, headers, caller.scheme)
                if refused is not None:
                    return refused, 0
        session_id = headers.get("mcp-session-id")
        if session_id is not None:
            return self._legacy(session_id.strip(), message, streams, caller)
        if (
            isinstance(message, dict)
            and message.get("method") == "initialize"
            and not (_has_modern_meta(message))
        ):
            return self._initialize(message, streams, caller)
        return self._modern(headers, message, streams, caller)

    def too_large(self, length: int) -> Reply:
        return _error_reply(
            413,
            None,
            INVALID_REQUEST,
            f"message too large: {length} bytes or more, the limit is {self.max_body_bytes} bytes",
        )

    def _channel(self) -> _Channel:
        session = ServerSession(self._toolkit, self._options, _tasks=self._tasks)
        return _Channel(session, self._host, self._inflight, self._tasks, self.reads)

    def _modern(
        self, headers: Mapping[str, str], message: Any, streams: bool, caller: _Caller
    ) -> tuple[Reply, int]:
        request_id = message.get("id") if isinstance(message, dict) else None
        mismatch = self._header_mismatch(headers, message)
        if mismatch is not None:
            return _error_reply(400, request_id, HEADER_MISMATCH, mismatch), 0
        listens = isinstance(message, dict) and message.get("method") == "subscriptions/listen"
        if listens:
            refused = self._take_stream(request_id)
            if refused is not None:
                return refused, 0
        try:
            channel = self._spare.pop()
        except IndexError:
            channel = self._channel()
            channel.on_idle = self._reuse
        reply, kept = self._dispatch(channel, message, streams, caller, modern=True)
        if listens:
            if reply.exchange is not None and not reply.exchange.ended:
                reply.exchange.on_end = self._give_stream
                self._modern_channels.add(channel)  # (where end_streams finds it)
                if self._streams_ended:  # end_streams ran meanwhile and missed this one
                    channel.end_streams()
            else:  # refused (bad params) or ended at once: no stream is open
                self._give_stream()
        return reply, kept

    # ------------------------------------------------------------------ notification streams

    def _take_stream(self, request_id: Any) -> Reply | None:
        """Count one more open notification stream; else the refusal (at ``max_streams``,
        or once :meth:`end_streams` ran)."""
        if self._streams_ended:
            reply = _error_reply(
                503,
                request_id,
                INTERNAL_ERROR,
                "service unavailable: the server is shutting down and opens no "
                "notification stream; retry against the server that replaces it",
            )
            reply.headers.append(("retry-after", "1"))
            return reply
        with self._streams_lock:
            if self._streams >= self._http.max_streams:
                return self._too_many_streams(request_id)
            self._streams += 1
            return None

    def _give_stream(self) -> None:
        with self._streams_lock:
            self._streams -= 1

    def _too_many_streams(self, request_id: Any) -> Reply:
        limit = self._http.max_streams
        reply = _error_reply(
            503,
            request_id,
            INTERNAL_ERROR,
            f"server overloaded: {limit} notification streams are open, the most this server "
            "keeps (HttpOptions.max_streams); retry later",
        )
        reply.headers.append(("retry-after", "5"))
        return reply

    def _get(self, headers: Mapping[str, str], principal: str | None) -> Reply:
        """A legacy session's standalone event stream: the list changes and resource
        updates no request carries. One per session; modern clients listen with
        ``subscriptions/listen`` instead."""
        allow = [("allow", "GET, POST, DELETE")]
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return _plain(
                405,
                "method not allowed: GET opens a legacy session's event stream (send its "
                "Mcp-Session-Id); a 2026-07-28 client listens with subscriptions/listen",
                allow,
            )
        if "text/event-stream" not in headers.get("accept", "").lower():
            return _plain(406, "not acceptable: GET answers with text/event-stream; accept it")
        channel = self._session(session_id, principal)
        if channel is None:
            return _plain(404, "session not found: it ended or expired; initialize again")
        if headers.get("last-event-id") is not None:
            return _plain(400, "bad request: this server keeps no events to replay (Last-Event-ID)")
        with channel.lock:
            if channel.standalone is not None and not channel.standalone.ended:
                return _plain(409, "conflict: this session's event stream is open already")
            refused = self._take_stream(None)
            if refused is not None:
                return refused
            exchange = Exchange(channel, None, False, True)
            exchange.opens_at_once = True

            def ended() -> None:  # may run with the channel's lock held: takes none of it
                self._give_stream()
                if channel.standalone is exchange:
                    channel.standalone = None

            exchange.on_end = ended
            channel.standalone = exchange
        channel.last_used = time.monotonic()
        return Reply(200, [], exchange=exchange)

    def _task_listeners(self) -> bool:
        """Whether a modern subscription may listen for task changes just now."""
        return any(channel.session.listening_for_tasks for channel in list(self._modern_channels))

    def _task_changed(self, record: TaskRecord) -> None:
        """A task changed: tell the subscriptions that listen for tasks."""
        for channel in list(self._modern_channels):
            if channel.session.listening:
                channel.feed(channel.session.task_changed, record)

    def _changed(self, kind: str, uri: str | None) -> None:
        """The toolkit changed: tell every session that listens (legacy sessions, modern
        subscriptions)."""
        with self._sessions_lock:
            channels = list(self._sessions.values())
        channels += list(self._modern_channels)
        for channel in channels:
            if channel.session.listening:
                channel.feed(channel.session.toolkit_changed, kind, uri)

    def _reuse(self, channel: _Channel) -> None:
        self._modern_channels.discard(channel)
        if len(self._spare) < _MAX_SPARE:
            self._spare.append(channel)

    def _dispatch(
        self,
        channel: _Channel,
        message: Any,
        streams: bool,
        caller: _Caller,
        modern: bool,
        extra: list[tuple[str, str]] | None = None,
    ) -> tuple[Reply, int]:
        """The reply, and the bytes of the request's body a call it started keeps."""
        principal = caller.identity.principal
        # The calls this request starts copy the context: their tools see the principal.
        bound = bound_principal.set(principal) if principal is not None else None
        token = caller.identity.token
        held = bound_token.set(PresentedToken(token)) if token is not None else None
        try:
            if not (isinstance(message, dict) and "method" in message and "id" in message):
                # A notification, or an answer to one of our questions: nothing to wait for.
                channel.other(message)
                return Reply(202, list(extra or [])), 0
            exchange = Exchange(channel, message.get("id"), modern, streams)
            kept = channel.request(message, exchange, caller.reserved, caller.principal)
        finally:
            if bound is not None:
                bound_principal.reset(bound)
            if held is not None:
                bound_token.reset(held)
        first = exchange.poll()
        if first is not None and first[1] and first[0] is not None:
            # Answered at once (most requests but tools/call): one JSON body.
            reply = Reply(exchange.status_of(first[0]), [JSON_TYPE, *(extra or [])], first[0])
            return reply, kept
        if first is not None:
            exchange.push_back(first)
        return Reply(200, list(extra or []), exchange=exchange), kept

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
        # (a name that is not a string is the session's to refuse: -32602 naming it)
        if key is not None and isinstance(params, dict) and isinstance(params.get(key), str):
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

    def _initialize(
        self, message: Mapping[str, Any], streams: bool, caller: _Caller
    ) -> tuple[Reply, int]:
        self.expire_idle()
        with self._sessions_lock:
            refused = self._make_room(caller.peer)
            if refused is not None:
                return refused, 0
            session_id = secrets.token_urlsafe(24)
            channel = self._channel()
            channel.principal, channel.peer = caller.principal, caller.peer
            channel.session_id = session_id
            self._sessions[session_id] = channel
        reply, kept = self._dispatch(
            channel, message, streams, caller, modern=False, extra=[("mcp-session-id", session_id)]
        )
        if channel.session.protocol_version is None:  # initialize was refused
            with self._sessions_lock:
                self._sessions.pop(session_id, None)
            reply.headers = [h for h in reply.headers if h[0] != "mcp-session-id"]
        return reply, kept

    def _make_room(self, peer: str | None) -> Reply | None:
        """Room for one more legacy session from ``peer`` (the sessions lock is held): at
        a limit, the least useful idle session goes — one never used first, then the one
        idle longest — so a flood of ``initialize`` cannot lock anyone out for long."""
        http = self._http
        for limit, mine in (
            (http.max_sessions_per_peer, peer),
            (http.max_sessions, None),
        ):
            held = [
                (key, channel)
                for key, channel in self._sessions.items()
                if mine is None or channel.peer == mine
            ]
            if len(held) < limit:
                continue
            idle = [(key, channel) for key, channel in held if not channel.busy]
            if not idle:
                return _plain(
                    503,
                    "service unavailable: too many sessions are in use; retry later",
                    [("retry-after", "5")],
                )
            key, channel = min(idle, key=lambda item: (item[1].used, item[1].last_used))
            del self._sessions[key]
            threading.Thread(
                target=channel.close, args=("the session was evicted",), daemon=True
            ).start()
        return None

    def _session(self, session_id: str | None, principal: str | None) -> _Channel | None:
        """The legacy session ``session_id`` names, if the caller is the one who made it."""
        if session_id is None:
            return None
        with self._sessions_lock:
            channel = self._sessions.get(session_id.strip())
        if channel is None or channel.closed or channel.principal != principal:
            return None  # another principal's session is as unknown as a missing one
        return channel

    def _legacy(
        self, session_id: str, message: Any, streams: bool, caller: _Caller
    ) -> tuple[Reply, int]:
        channel = self._session(session_id, caller.principal)
        if channel is None:
            return _error_reply(
                404,
                None,
                INVALID_REQUEST,
                "session not found: it ended or expired; initialize again",
            ), 0
        return self._dispatch(channel, message, streams, caller, modern=False)

    def _delete(self, headers: Mapping[str, str], principal: str | None) -> Reply:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return _plain(400, "bad request: DELETE needs the Mcp-Session-Id to end")
        channel = self._session(session_id, principal)
        if channel is None:
            return _plain(404, "session not found: it ended or expired")
        with self._sessions_lock:
            self._sessions.pop(session_id.strip(), None)
        channel.close("the client ended the session")
        return Reply(204)

    def expire_idle(self) -> None:
        """End legacy sessions idle for longer than ``session_idle_ms``, and those never
        used (no completed initialization, or no call) older than ``session_unused_ms``."""
        now = time.monotonic()
        idle_cutoff = now - self._idle_s
        unused_cutoff = now - self._http.session_unused_ms / 1000
        with self._sessions_lock:
            stale = [
                key
                for key, channel in self._sessions.items()
                if not channel.busy
                and (
                    channel.last_used < idle_cutoff
                    or (not channel.used and channel.last_used < unused_cutoff)
                )
            ]
            channels = [self._sessions.pop(key) for key in stale]
        for channel in channels:
            channel.close("the session expired")

    @property
    def session_count(self) -> int:
        """How many legacy sessions are open."""
        with self._sessions_lock:
            return len(self._sessions)

    def end_streams(self) -> None:
        """End every open notification stream gracefully, and open no more: the first step
        of a shutdown. A legacy session's ``GET`` stream ends (its body closes), a
        ``subscriptions/listen`` stream with its response; what a client then asks for
        such a stream is refused (503). Calls keep running, their answers' streams open,
        until :meth:`close`. Those streams carry only notifications, so nothing is lost by
        ending them at once, and a shutdown's grace waits for calls only."""
        self._streams_ended = True
        for channel in list(self._modern_channels):
            channel.end_streams()
        with self._sessions_lock:
            channels = list(self._sessions.values())
        for channel in channels:
            channel.end_streams()

    def close(self) -> None:
        """End every session (cancelling their calls) and close the host."""
        self.end_streams()  # (and none opens while the rest closes)
        self._closed = True
        self._unwatch()
        self._unwatch_tasks()
        for channel in list(self._modern_channels):
            channel.close("the server is shutting down")
        with self._sessions_lock:
            channels = list(self._sessions.values())
            self._sessions.clear()
        for channel in channels:
            channel.close("the server is shutting down")
        self._host.close()
        if self._guard is not None:
            self._guard.close()

    @property
    def host(self) -> Host:
        """The host the calls run on (created with the first call)."""
        return self._host.get()


# --------------------------------------------------------------------------- helpers


def _allow_list(values: Iterable[str] | None) -> frozenset[str] | None:
    """The accepted values besides localhost's (which are always accepted); ``None``: any.
    A host is kept as written: ``name`` (any port) or ``name:port``. (:class:`ServerOptions`
    checked them: strings, none empty.)"""
    if values is None:
        return frozenset()
    items = frozenset(value.strip().lower().rstrip("/") for value in values)
    if "*" in items:
        return None
    return items


def _identified(
    checked: tuple[Reply | None, Principal | None], token: str | None = None
) -> tuple[Reply | None, Identity]:
    """What :meth:`ResourceGuard.check` found (for ``token``, the one presented), as
    :meth:`Endpoint.authenticate` answers."""
    refused, principal = checked
    if refused is not None or principal is None:
        return refused, _NOBODY
    from ._auth import ResourceGuard

    return None, Identity(ResourceGuard.key(principal), principal, token)


def _is_local_origin(origin: str) -> bool:
    origin = origin.strip().lower()
    for scheme in ("http://", "https://"):
        if origin.startswith(scheme):
            return host_name(origin[len(scheme) :].split("/")[0]) in _LOCAL_HOSTS
    return False


def _has_modern_meta(message: Mapping[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def _shown(value: Any) -> str:
    return "(missing)" if value is None else repr(value)[:80]
