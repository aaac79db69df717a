"""The Streamable HTTP client transport, on :mod:`http.client`.

:class:`HttpTransport` POSTs each message to the server's endpoint over kept-alive
connections (one per request in flight, reused afterwards), and reads the answer as the
server chose to send it: one ``application/json`` body, or a ``text/event-stream`` whose
events carry the response and whatever comes before it (progress, log messages, a
legacy server's ``elicitation/create``). A legacy (2025-11-25) session's
``Mcp-Session-Id`` is kept and sent, an event stream that ends before its response is
resumed with ``GET`` and ``Last-Event-ID`` after the server's ``retry`` delay, and
:meth:`HttpTransport.close` ends the session with ``DELETE``. Header values given by the
caller are sent, never logged.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import re
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._shared import _codec as codec
from .._shared._oauth_common import parse_challenge
from .._shared._protocol import FIELD_NAME

if TYPE_CHECKING:
    from ..._suspension import Request
    from ._oauth import Attempt, OAuthFlow

__all__ = ["HttpExchange", "HttpTransport"]

_DEFAULT_RETRY_MS = 1000
_MAX_RESUMES = 5
_IDLE_CONNECTIONS = 8

# The Authorization a request carries for the caller it is made for (a gateway's call with
# the caller's exchanged token, _oauth_exchange.py): set around that call on its thread.
# It replaces the transport's own credentials, and a 401 to it is the caller's refusal:
# never answered by signing in as the transport's own client and sending the call again.
on_behalf: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "toolnexus_mcp_on_behalf", default=None
)


class _TransportError(Exception):
    """The HTTP exchange failed: ``problem`` says how; ``session_lost`` when the server
    no longer knows the session (404 on a session id), ``sent`` when the request may have
    reached the server; ``auth`` when OAuth cannot get a token the server takes (a
    :class:`~toolnexus.Request` when a sign-in is needed and nobody was there to ask). The
    client turns it into an error result or an :class:`McpError` that names the server."""

    def __init__(
        self,
        problem: str,
        *,
        session_lost: bool = False,
        sent: bool = True,
        auth: bool | Request = False,
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.session_lost = session_lost
        self.sent = sent
        self.auth = auth


_read_head_lines: Callable[[Any], list[bytes]] | None = getattr(http.client, "_read_headers", None)


class _Response(http.client.HTTPResponse):
    """A response whose head is read without the :mod:`email` parser ``http.client`` hands
    it to, which costs more than the rest of a JSON exchange together; a head that needs
    that parser (folded lines, a line without a colon) still gets it. The body is read by
    ``http.client`` as ever (a length, chunks, or until the connection closes)."""

    def begin(self) -> None:
        if self.headers is not None or _read_head_lines is None:
            super().begin()  # begun already (then a no-op), or a Python without the helper
            return
        while True:
            version, status, reason = self._read_status()
            lines = _read_head_lines(self.fp)  # with http.client's line and count limits
            if not 100 <= status < 200:
                break  # an interim (1xx) answer's head is skipped: the final one follows
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = _head(lines)
        encoding = self.headers.get("transfer-encoding")
        self.chunked = bool(encoding) and encoding.lower() == "chunked"
        self.chunk_left = None
        self.will_close = self._check_close()
        # The body's length (RFC 9112 6.3): none with chunks, none for these statuses.
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            with contextlib.suppress(ValueError):
                size = int(length)
                self.length = size if size >= 0 else None
        if status in (204, 304) or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # read until the server closes


def _head(lines: list[bytes]) -> _Fields | http.client.HTTPMessage:
    """The header fields of ``lines`` (as read, each ending in its newline, the empty line
    that ends the head last)."""
    fields = _Fields()
    for line in lines:
        if line in (b"\r\n", b"\n", b""):
            break  # the empty line that ends the head
        name, colon, value = line.decode("iso-8859-1").partition(":")
        if not colon or name[:1] in (" ", "\t"):
            # A folded or broken line: what the email parser makes of it, as before.
            import io

            parsed: http.client.HTTPMessage = http.client.parse_headers(io.BytesIO(b"".join(lines)))
            return parsed
        fields.add(name, value.lstrip(" \t").rstrip("\r\n"))  # as the email parser has it
    return fields


class _Fields:
    """A response head's fields, as ``http.client`` reads them (``get``, ``get_all``,
    ``items``): found by name, whatever its case, in a dict. ``email.message.Message``,
    which ``http.client`` would make, compares every field in Python on every lookup, and
    a response is looked up ten times."""

    __slots__ = ("_all", "_named")

    def __init__(self) -> None:
        self._all: list[tuple[str, str]] = []
        self._named: dict[str, list[str]] = {}

    def add(self, name: str, value: str) -> None:
        self._all.append((name, value))
        self._named.setdefault(name.lower(), []).append(value)

    def get(self, name: str, failobj: Any = None) -> Any:
        """The first value of the field ``name``, else ``failobj``."""
        values = self._named.get(name.lower())
        return failobj if values is None else values[0]

    def get_all(self, name: str, failobj: Any = None) -> Any:
        """Every value of the field ``name``, in order, else ``failobj``."""
        values = self._named.get(name.lower())
        return failobj if values is None else list(values)

    def items(self) -> list[tuple[str, str]]:
        return list(self._all)

    def keys(self) -> list[str]:
        return [name for name, _ in self._all]

    def values(self) -> list[str]:
        return [value for _, value in self._all]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._named

    def __getitem__(self, name: str) -> str | None:
        values = self._named.get(name.lower())  # (as a Message: None for a missing field)
        return None if values is None else values[0]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._all)

    def __repr__(self) -> str:
        return f"<response fields {self.keys()}>"


class _OneWrite:
    """An ``http.client`` connection that writes a request's head and body in one send:
    two small writes cost the server two wake-ups (and, without ``TCP_NODELAY``, a
    delayed-ACK wait between them); its responses are :class:`_Response`\\ s."""

    _batch: list[bytes] | None = None
    response_class: type[http.client.HTTPResponse] = _Response

    def send(self, data: Any) -> None:
        if self._batch is not None and isinstance(data, (bytes, bytearray)):
            self._batch.append(bytes(data))
            return
        super().send(data)  # type: ignore[misc]

    def request_at_once(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]
    ) -> None:
        """Send a request as ``request(method, url, body, headers)`` does, byte for byte,
        in one write. Its fields are checked together, by one expression over their
        lines: ``putheader`` checks and encodes each on its own, which costs more than the
        rest of the sending. Fields that expression does not pass (a control character
        in a value ...) go through ``putheader``, which sends or refuses them as ever."""
        named = {name.lower() for name in headers}
        fields = list(headers.items())
        if "content-length" not in named and "transfer-encoding" not in named:
            if body is not None:
                fields.insert(0, ("Content-Length", str(len(body))))
            elif method.upper() in ("PATCH", "POST", "PUT"):
                fields.insert(0, ("Content-Length", "0"))
        self._batch = []
        try:
            self.putrequest(  # type: ignore[attr-defined]
                method,
                url,
                skip_host="host" in named,
                skip_accept_encoding="accept-encoding" in named,
            )
            block = "\r\n".join(f"{name}: {value}" for name, value in fields)
            # (A line break inside a value would make two lines of one: counted out.)
            lines = block.count("\r\n") + 1
            head: list[bytes] | None = getattr(self, "_buffer", None)  # the head's lines
            if head is not None and lines == len(fields) and _SENDABLE.fullmatch(block):
                head.append(block.encode("latin-1"))
            else:  # (or a Python whose http.client keeps them elsewhere)
                for name, value in fields:
                    self.putheader(name, value)  # type: ignore[attr-defined]
            self.endheaders(body)  # type: ignore[attr-defined]
        finally:
            batch, self._batch = self._batch, None
        super().send(b"".join(batch))  # type: ignore[misc]


# Header lines http.client would send as they are: a token name, a colon and a space, and
# a value without control characters (HTAB aside) — so nothing can end a line early.
_FIELD_LINE = FIELD_NAME + ": [^\x00-\x08\x0a-\x1f\x7f]*"
_SENDABLE = re.compile(f"{_FIELD_LINE}(?:\r\n{_FIELD_LINE})*")


class _Http(_OneWrite, http.client.HTTPConnection):
    pass


class _Https(_OneWrite, http.client.HTTPSConnection):
    pass


_Connection = _Http | _Https


class HttpTransport:
    """One MCP server behind a Streamable HTTP endpoint (``url``).

    What fails raises :attr:`Failure` (saying whether the session was lost, and whether
    the request may have reached the server).
    """

    Failure = _TransportError

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        connect_timeout: float,
        max_message_bytes: int,
        auth: OAuthFlow | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            from ...errors import InvalidValueError

            raise InvalidValueError(
                f"url must be an http:// or https:// URL with a host, got {url!r}"
            )
        self.url = url
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = dict(headers)
        self._connect_timeout = connect_timeout
        self.max_message_bytes = max_message_bytes
        self.session_id: str | None = None
        self.auth = auth  # OAuth: a token on every request, a new one after a 401
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._live: set[HttpExchange] = set()
        self._closed = False
        self._closing = False  # close() began: no exchange starts

    # ------------------------------------------------------------------ connections

    def _connection(self) -> _Connection:
        with self._lock:
            if self._closed:
                raise _TransportError("the client is closed", sent=False)
            if self._idle:
                return self._idle.pop()
        return self._fresh()

    def _release(self, connection: _Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < _IDLE_CONNECTIONS:
                self._idle.append(connection)
                return
        connection.close()

    def _request_headers(self, extra: Mapping[str, str]) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **self._headers,
            **extra,
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        behalf = on_behalf.get()
        if behalf is not None:
            headers["Authorization"] = behalf
        elif self.auth is not None:
            authorization = self.auth.header()
            if authorization is not None:
                headers["Authorization"] = authorization
        return headers

    def _send(
        self,
        method: str,
        body: bytes | None,
        headers: Mapping[str, str],
        read_timeout: float | None,
        fresh: bool = False,
    ) -> tuple[_Connection, bool]:
        """Send one HTTP request (its response is read by :meth:`_receive`); the
        connection, and whether it was reused (so a "closed" answer may be retried)."""
        if self.auth is not None:  # a DPoP proof is made for each request as it is sent
            headers = self.auth.sign(method, self.url, headers)
        connection = self._fresh() if fresh else self._connection()
        reused = connection.sock is not None
        try:
            if connection.sock is None:
                connection.connect()
                # http.client writes the head and the body in two sends: without this,
                # Nagle holds the body until the head's ACK, which the server delays.
                assert connection.sock is not None
                with contextlib.suppress(OSError, AttributeError):
                    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.sock.settimeout(read_timeout)
            connection.request_at_once(method, self._path, body, headers)
        except (BrokenPipeError, ConnectionResetError):
            connection.close()
            if reused:
                return self._send(method, body, headers, read_timeout, fresh=True)
            raise _TransportError(f"the server at {self.url} closed the connection") from None
        except OSError as exc:
            connection.close()
            raise _TransportError(
                f"cannot reach {self.url}: {exc.strerror or exc}", sent=False
            ) from None
        return connection, reused

    def _fresh(self) -> _Connection:
        if self._https:
            return _Https(self._host, self._port, timeout=self._connect_timeout)
        return _Http(self._host, self._port, timeout=self._connect_timeout)

    def _open(
        self,
        method: str,
        body: bytes | None,
        headers: Mapping[str, str],
        read_timeout: float | None,
    ) -> tuple[_Connection, http.client.HTTPResponse]:
        """Send one HTTP request and read its response's head (with OAuth, the answer to
        the request sent again with a usable token, after a 401)."""
        connection, response = self._round_trip(method, body, headers, read_timeout)
        behalf = on_behalf.get() is not None
        if self.auth is not None and not behalf and response.status in (401, 403):
            return self._authorized(
                connection, response, method, body, dict(headers), read_timeout, None
            )
        return connection, response

    def _authorized(
        self,
        connection: _Connection,
        response: http.client.HTTPResponse,
        method: str,
        body: bytes | None,
        headers: dict[str, str],
        read_timeout: float | None,
        attempt: Attempt | None,
    ) -> tuple[_Connection, http.client.HTTPResponse]:
        """``response`` (a 401 or 403), or — when OAuth gets a token the server should
        take — the answer to the request sent again with it (``headers`` updated). Raises
        :class:`_TransportError` (``auth`` set) when no token will do."""
        from ._oauth import Attempt

        auth = self.auth
        attempt = attempt if attempt is not None else Attempt()
        if method != "POST":
            # The event stream's GET and the closing DELETE run where nobody expects the
            # user to be asked: a refresh, yes; a new sign-in, only for a request.
            attempt.authorized = attempt.stepped_up = True
        while auth is not None and response.status in (401, 403):
            outcome = auth.challenged(
                response.status,
                response.getheader("WWW-Authenticate"),
                headers.get("Authorization"),
                attempt,
                response.getheader("DPoP-Nonce"),
            )
            if outcome is False:
                break
            with contextlib.suppress(OSError, http.client.HTTPException):
                response.read(65536)
            if response.will_close or not response.isclosed():
                connection.close()
            else:
                self._release(connection)
            if outcome is True:
                authorization = auth.header()
                if authorization is not None:
                    headers["Authorization"] = authorization
                connection, response = self._round_trip(method, body, headers, read_timeout)
                continue
            if isinstance(outcome, str):
                raise _TransportError(outcome, sent=False, auth=True)
            raise _TransportError(outcome.prompt, sent=False, auth=outcome)
        return connection, response

    def _round_trip(
        self,
        method: str,
        body: bytes | None,
        headers: Mapping[str, str],
        read_timeout: float | None,
    ) -> tuple[_Connection, http.client.HTTPResponse]:
        connection, reused = self._send(method, body, headers, read_timeout)
        try:
            return connection, connection.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError):
            connection.close()
            if not reused:
                raise
            # The server closed an idle kept-alive connection: once more, on a new one.
            connection, _ = self._send(method, body, headers, read_timeout, fresh=True)
            return connection, connection.getresponse()

    # ------------------------------------------------------------------ messages

    def start(
        self, body: bytes, headers: Mapping[str, str], read_timeout: float | None
    ) -> HttpExchange:
        """POST a request; the exchange that reads its answer."""
        exchange = HttpExchange(
            self,
            body,
            self._request_headers(headers),
            read_timeout,
            behalf=on_behalf.get() is not None,
        )
        return exchange

    def listen(self, headers: Mapping[str, str]) -> HttpExchange:
        """Open the session's own event stream (``GET``), for what the server sends
        outside any request's answer; its messages end when the server ends the stream
        (a server that offers none answers 405: no messages)."""
        wanted = {
            key: value
            for key, value in self._request_headers(headers).items()
            if key.lower() != "content-type"
        }
        wanted["Accept"] = "text/event-stream"
        return HttpExchange(self, None, wanted, None, until_answer=False)

    def post(self, body: bytes, headers: Mapping[str, str], timeout: float | None) -> Any:
        """POST a notification or a response of ours; a JSON-RPC message the server
        answered with (an error, usually), or ``None`` (202 Accepted)."""
        try:
            connection, response = self._open("POST", body, self._request_headers(headers), timeout)
            data = response.read(self.max_message_bytes + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise _TransportError(f"the connection to {self.url} failed: {exc}") from None
        if response.will_close:
            connection.close()
        else:
            self._release(connection)
        if response.status == 404 and self.session_id is not None:
            raise _TransportError(
                "the server no longer knows this session (404)", session_lost=True
            )
        if response.status >= 400:
            refused = _refusal(response, "Authorization" in headers, on_behalf.get() is not None)
            if refused is not None:
                raise _TransportError(refused, sent=False, auth=True)
            message = _json_or_none(data)
            if message is not None:
                return message
            raise _TransportError(_status_problem(response, data))
        return _json_or_none(data)

    def close(self, timeout: float) -> None:
        """End the session (``DELETE``, legacy), abort exchanges still reading, close every
        connection. Idempotent."""
        with self._lock:
            if self._closing:
                return
            # From here no exchange starts (HttpExchange checks under this lock), so
            # every one that could still send is in live, and aborted.
            self._closing = True
            live = list(self._live)
        for exchange in live:
            exchange.abort()
        if self.session_id is not None:
            try:
                connection, response = self._open(
                    "DELETE", None, self._request_headers({}), timeout
                )
                response.read(65536)
                connection.close()
            except _TransportError:
                pass
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def __repr__(self) -> str:
        session = f" session {self.session_id[:8]}…" if self.session_id else ""
        return f"<HttpTransport {self.url}{session}>"


def _json_or_none(data: bytes) -> Any:
    if not data.strip():
        return None
    try:
        return codec.decode(data.decode("utf-8").strip())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _refusal(
    response: http.client.HTTPResponse, token_sent: bool, behalf: bool = False
) -> str | None:
    """What a ``401``/``403`` with a ``Bearer`` challenge means, said as what it is (an
    access matter, not a failed connection) with how to get access; ``None`` otherwise.
    (With OAuth the flow answers these first; this is what is left: a token of the
    user's own in an ``Authorization`` header, or none.)"""
    if response.status not in (401, 403):
        return None
    challenge = parse_challenge(response.getheader("WWW-Authenticate"))
    if challenge is None:
        return None
    error = challenge.get("error")
    described = challenge.get("error_description")
    detail = f"{response.status} {error}" if error else str(response.status)
    if described:
        detail += f": {described[:200]}"
    sign_in = 'let the client sign in: auth=OAuth() ("auth": "oauth" in mcp.json)'
    if behalf and (response.status == 401 or error == "insufficient_scope"):
        scope = challenge.get("scope")
        return (
            f"the server refuses the caller's exchanged token ({detail})"
            + (f"; it asks for: {scope}" if scope else "")
            + ": the caller's grant does not reach this server (not retried as the gateway; "
            "see auth.exchange in mcp.json)"
        )
    if response.status == 403:
        if error != "insufficient_scope":
            return None
        scope = challenge.get("scope")
        return (
            "the server refuses this request: the access token lacks the scope(s) it needs"
            + (f" — it asks for: {scope}" if scope else "")
            + f" ({detail}). Get a token with "
            + ("them" if scope else "the scopes the request needs")
            + ": "
            + (
                "ask whoever issued the token in your Authorization header, or "
                if token_sent
                else ""
            )
            + sign_in
            + ", which asks for them by itself"
        )
    if token_sent:
        return (
            f"the server refuses the access token ({detail}): it may have expired or be "
            f"for another server; give a new one, or {sign_in}"
        )
    return (
        f"the server needs an access token ({detail}): {sign_in}, or give an Authorization header"
    )


def _status_problem(response: http.client.HTTPResponse, data: bytes) -> str:
    text = data[:200].decode("utf-8", "replace").strip()
    return f"HTTP {response.status} {response.reason}" + (f": {text}" if text else "")


class HttpExchange:
    """One request's answer: the messages the server sends back for it, in order.

    Iterate it (blocking) for decoded messages; :meth:`abort` from another thread ends
    the read (the HTTP request is closed, which cancels it on a modern server).
    """

    def __init__(
        self,
        transport: HttpTransport,
        body: bytes | None,
        headers: dict[str, str],
        read_timeout: float | None,
        *,
        until_answer: bool = True,
        behalf: bool = False,
    ) -> None:
        self._transport = transport
        self._behalf = behalf  # sent with a caller's own credential (on_behalf)
        self._method = "POST" if body is not None else "GET"
        self._until_answer = until_answer
        self._headers = headers
        self._read_timeout = read_timeout
        self._aborted = False
        self._abort_event: threading.Event | None = None  # made when a resume waits
        self._connection: _Connection | None = None
        self._response: http.client.HTTPResponse | None = None
        self.last_event_id: str | None = None
        self.retry_ms = _DEFAULT_RETRY_MS
        self._body = body
        self._reused = False
        with transport._lock:
            if transport._closing:
                raise _TransportError("the client is closed", sent=False)
            transport._live.add(self)
        try:
            self._connection, self._reused = transport._send(
                self._method, body, headers, read_timeout
            )
        except BaseException:
            self._done()
            raise
        if self._aborted:  # aborted while it was sent (before abort could see its socket)
            self.abort()

    @property
    def aborted(self) -> bool:
        """True once :meth:`abort` ran."""
        return self._aborted

    def abort(self) -> None:
        """Close the request from any thread: a blocked read ends with an error."""
        self._aborted = True
        event = self._abort_event
        if event is not None:
            event.set()
        connection = self._connection
        if connection is not None and connection.sock is not None:
            from ..._http_tools import shut_socket

            shut_socket(connection.sock)

    def messages(self, on_session: Callable[[str], None] | None = None) -> Iterator[Any]:
        """The decoded messages of the answer. Raises :class:`_TransportError` when the
        exchange fails (or was aborted: then ``problem`` is ``"aborted"``)."""
        try:
            response = self._head()
            session = response.getheader("Mcp-Session-Id")
            if session and on_session is not None:
                on_session(session)
            status = response.status
            kind = (response.getheader("Content-Type") or "").split(";", 1)[0].strip().lower()
            if status == 404 and self._transport.session_id is not None:
                response.read(65536)
                raise _TransportError(
                    "the server no longer knows this session (404)", session_lost=True, sent=False
                )
            if status == 202 or (self._method == "GET" and status in (404, 405)):
                response.read(65536)
                return
            if kind == "text/event-stream" and status == 200:
                yield from self._events(response)
                return
            data = self._read_body(response)
            refused = _refusal(response, "Authorization" in self._headers, self._behalf)
            if refused is not None:
                raise _TransportError(refused, sent=False, auth=True)
            message = _json_or_none(data)
            if message is None or (status >= 400 and not isinstance(message, dict)):
                raise _TransportError(_status_problem(response, data), sent=status >= 500)
            if isinstance(message, dict) and "jsonrpc" not in message and status >= 400:
                raise _TransportError(_status_problem(response, data), sent=status >= 500)
            yield message
        except (OSError, http.client.HTTPException) as exc:
            if self._aborted:
                raise _TransportError("aborted") from None
            if isinstance(exc, socket.timeout):
                raise _TransportError(
                    f"no message from the server for {self._read_timeout} s"
                ) from None
            raise _TransportError(
                f"the connection to {self._transport.url} failed: {exc}"
            ) from None
        finally:
            self._done()

    def _head(self) -> http.client.HTTPResponse:
        """The response's head (waits for the server to start answering)."""
        connection = self._connection
        assert connection is not None
        try:
            self._response = connection.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError):
            if not self._reused or self._aborted:
                raise
            # The server closed an idle kept-alive connection: once more, on a new one.
            connection.close()
            self._connection, _ = self._transport._send(
                self._method, self._body, self._headers, self._read_timeout, fresh=True
            )
            self._response = self._connection.getresponse()
        transport = self._transport
        if transport.auth is not None and not self._behalf and self._response.status in (401, 403):
            assert self._connection is not None
            self._connection, self._response = transport._authorized(
                self._connection,
                self._response,
                self._method,
                self._body,
                self._headers,
                self._read_timeout,
                None,
            )
        return self._response

    def _read_body(self, response: http.client.HTTPResponse) -> bytes:
        limit = self._transport.max_message_bytes
        data = response.read(limit + 1)
        if len(data) > limit:
            raise _TransportError(
                f"the server sent a message over {limit} bytes (max_message_bytes)"
            )
        return data

    def _events(self, response: http.client.HTTPResponse) -> Iterator[Any]:
        resumes = 0
        while True:
            answered = False
            for message in _read_sse(self, response):
                if isinstance(message, dict) and ("result" in message or "error" in message):
                    answered = self._until_answer
                yield message
                if answered:
                    return
            if self._aborted:
                raise _TransportError("aborted")
            # The stream ended without the response: resume it where it stopped.
            if self.last_event_id is None:
                raise _TransportError(
                    "the server closed the event stream before it answered the request"
                )
            if resumes >= _MAX_RESUMES:
                raise _TransportError(
                    f"the event stream ended {resumes + 1} times before the answer came"
                )
            resumes += 1
            self._release_connection(response)
            event = self._abort_event
            if event is None:
                event = self._abort_event = threading.Event()
            # (abort() sets the flag before it looks for the event)
            if self._aborted or event.wait(self.retry_ms / 1000):
                raise _TransportError("aborted")
            headers = {
                key: value
                for key, value in self._headers.items()
                if key.lower() not in ("content-type", "mcp-method", "mcp-name")
                and not key.lower().startswith("mcp-param-")
            }
            headers["Accept"] = "text/event-stream"
            headers["Last-Event-ID"] = self.last_event_id
            self._connection, response = self._transport._open(
                "GET", None, headers, self._read_timeout
            )
            self._response = response
            if response.status != 200:
                data = response.read(65536)
                raise _TransportError(
                    f"resuming the event stream failed: {_status_problem(response, data)}"
                )

    def _release_connection(self, response: http.client.HTTPResponse) -> None:
        connection = self._connection
        self._connection = None
        if connection is not None:
            connection.close()

    def _done(self) -> None:
        transport = self._transport
        with transport._lock:
            transport._live.discard(self)
        connection, response = self._connection, self._response
        self._connection = None
        if connection is None:
            return
        reusable = (
            not self._aborted
            and response is not None
            and response.isclosed()
            and not response.will_close
        )
        if reusable:
            transport._release(connection)
        else:
            connection.close()


def _read_sse(exchange: HttpExchange, response: http.client.HTTPResponse) -> Iterator[Any]:
    """The JSON-RPC messages of one event stream, until it ends."""
    limit = exchange._transport.max_message_bytes
    data: list[str] = []
    size = 0
    kind = ""
    while True:
        raw = response.readline(limit + 2)
        if not raw:
            return
        if len(raw) > limit + 1:
            raise _TransportError(
                f"the server sent an event over {limit} bytes (max_message_bytes)"
            )
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data and kind in ("", "message"):
                text = "\n".join(data)
                try:
                    yield codec.decode(text.strip())
                except RecursionError:
                    yield {"__too_deep__": (codec.stand_in(text.strip()) or {}).get("id")}
                except ValueError:
                    yield {"__garbage__": text[:200]}
            data, size, kind = [], 0, ""
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            size += len(value)
            if size > limit:
                raise _TransportError(
                    f"the server sent an event over {limit} bytes (max_message_bytes)"
                )
            data.append(value)
        elif field == "id":
            if "\0" not in value:
                exchange.last_event_id = value
        elif field == "retry":
            if value.isdigit():
                exchange.retry_ms = int(value)
        elif field == "event":
            kind = value
