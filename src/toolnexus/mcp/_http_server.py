"""The embedded Streamable HTTP server: MCP on ``/mcp`` with the standard library only.

:func:`serve_http` is what ``toolnexus serve REF --http [HOST:]PORT`` runs; :class:`HttpServer`
is the same server for a program that starts and stops it itself. One thread per
connection (``socketserver``), HTTP/1.1 keep-alive with each response written in one
``sendall``, and the limits a server facing a network needs: a bound on connections (more
are answered 503 at once), a request-size and header limit, and a reaper that closes a
connection whose request does not arrive whole in time (a slow client cannot hold a
thread) or that sits idle too long between requests.
What a request means — sessions, header rules, security — is decided by
:class:`~toolnexus.mcp._endpoint.Endpoint`; this module only moves bytes.
"""

from __future__ import annotations

import contextlib
import http
import io
import logging
import select
import signal
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidValueError
from ._endpoint import (
    SINGLE_HEADERS,
    Endpoint,
    Exchange,
    Reply,
    sse_event,
)
from ._options import ServerOptions, resolve

if TYPE_CHECKING:
    from .._toolkit import Toolkit

__all__ = ["HttpServer", "serve_http"]

_log = logging.getLogger("toolnexus")

_MAX_HEADERS = 64
_MAX_LINE = 65536  # bytes in the request line or one header line
_WATCH_S = 0.25  # how often a waiting response checks that its client is still there
# A request refused before its body was read (413, 411, ...) is answered, the write side
# shut, and what the client still sends is read and discarded for at most this long and
# this many bytes before the close: closing with unread bytes would reset the connection
# and an ordinary client (http.client, urllib) would see a broken pipe instead of the status.
_LINGER_S = 2.0
_LINGER_BYTES = 8 << 20


class HttpServer:
    """An MCP Streamable HTTP server on ``host:port``, path ``path`` (``/mcp``).

    Both protocol eras are served: modern stateless POSTs and legacy ``initialize``
    sessions. Start it with :meth:`serve_forever` (blocking) or :meth:`start` (a
    background thread); :meth:`shutdown` stops accepting, gives running calls ``grace_ms``
    to answer, cancels the rest and closes the host.

    Args:
        toolkit: the tools to serve.
        options: a :class:`~toolnexus.mcp.ServerOptions` (identity, deadline, key, store,
            limits, security; for this server also ``max_connections``,
            ``request_timeout_ms``, ``keep_alive_ms`` and, at shutdown, ``grace_ms``). A body
            over ``max_message_bytes`` is answered 413; what the client still sends is
            discarded for up to 2 s and 8 MiB so it reads the status, then the close.
        host, port: where to listen (``127.0.0.1`` by default; port 0 picks a free one).
        path: the endpoint's path (``/mcp``).

    Example::

        server = HttpServer(toolkit, port=0)
        server.start()
        print(server.url)      # http://127.0.0.1:PORT/mcp
        server.shutdown()
    """

    def __init__(
        self,
        toolkit: Toolkit,
        options: ServerOptions | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidValueError(f"port must be an int in 0..65535, got {port!r}")
        if not isinstance(path, str) or not path.startswith("/"):
            raise InvalidValueError(f"path must be a str starting with '/', got {path!r}")
        options = resolve(options)
        self.options = options
        self.endpoint = Endpoint(toolkit, options)
        self.path = path
        self.request_timeout_s = options.request_timeout_ms / 1000
        self.keep_alive_s = options.keep_alive_ms / 1000
        self.grace_s = options.grace_ms / 1000
        self.max_connections = options.max_connections
        self._server = _Server((host, port), _Handler, self)
        self._thread: threading.Thread | None = None
        self._reaper = threading.Thread(
            target=self._reap, name="toolnexus-http-reaper", daemon=True
        )
        self._stopping = threading.Event()
        self._reaper.start()

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """The endpoint's URL, e.g. ``http://127.0.0.1:8000/mcp``."""
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}{self.path}"

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (from another thread or a signal handler)."""
        self._server.serve_forever(poll_interval=0.2)

    def start(self) -> None:
        """Serve on a background thread; returns at once."""
        self._thread = threading.Thread(
            target=self.serve_forever, name="toolnexus-http", daemon=True
        )
        self._thread.start()

    def shutdown(self) -> None:
        """Stop accepting, let running calls answer for ``grace_s``, cancel the rest, close
        the host and every connection. Safe to call more than once."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._server.shutdown()
        deadline = time.monotonic() + self.grace_s
        while self._server.active_responses() and time.monotonic() < deadline:
            self._server.responses_settled.wait(0.05)
        self.endpoint.close()  # cancels what still runs; their streams end unanswered
        deadline = time.monotonic() + 1.0
        while self._server.active_responses() and time.monotonic() < deadline:
            self._server.responses_settled.wait(0.05)
        self._server.close_all()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = "stopped" if self._stopping.is_set() else "serving"
        return f"<HttpServer {self.url} {state}>"

    def _reap(self) -> None:
        """Close connections whose request is late or whose keep-alive ran out; expire
        idle legacy sessions."""
        last_sweep = time.monotonic()
        while not self._stopping.wait(0.2):
            now = time.monotonic()
            self._server.reap(now)
            if now - last_sweep > 5:
                last_sweep = now
                self.endpoint.expire_idle()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: Any, owner: HttpServer) -> None:
        self.owner = owner
        self._conn_lock = threading.Lock()
        self._deadlines: dict[socket.socket, float | None] = {}
        self._responding = 0
        self.responses_settled = threading.Event()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            full = len(self._deadlines) >= self.owner.max_connections
            if not full:
                self._deadlines[request] = time.monotonic() + self.owner.request_timeout_s
        if full:
            with contextlib.suppress(OSError):
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                    b"Retry-After: 1\r\nConnection: close\r\n\r\n"
                )
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def set_deadline(self, conn: socket.socket, seconds: float | None) -> None:
        with self._conn_lock:
            if conn in self._deadlines:
                self._deadlines[conn] = None if seconds is None else time.monotonic() + seconds

    def responding(self, delta: int) -> None:
        with self._conn_lock:
            self._responding += delta
            if self._responding == 0:
                self.responses_settled.set()
            else:
                self.responses_settled.clear()

    def active_responses(self) -> int:
        with self._conn_lock:
            return self._responding

    def forget(self, conn: socket.socket) -> None:
        with self._conn_lock:
            self._deadlines.pop(conn, None)

    def reap(self, now: float) -> None:
        with self._conn_lock:
            late = [conn for conn, at in self._deadlines.items() if at is not None and at < now]
            for conn in late:
                self._deadlines[conn] = None
        for conn in late:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def close_all(self) -> None:
        with self._conn_lock:
            conns = list(self._deadlines)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        _log.debug("toolnexus mcp http: connection from %s failed", client_address, exc_info=True)


class _Refused(Exception):
    """A request that cannot be read as HTTP/1.1: answered with ``status`` and closed."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class _Gone(Exception):
    """The client closed the connection in the middle of a request head."""


class _Handler(socketserver.StreamRequestHandler):
    """One connection: HTTP/1.1 requests read and answered in turn (keep-alive).

    The request head is read here (the request line, at most ``_MAX_HEADERS`` fields of at
    most ``_MAX_LINE`` bytes, no obsolete line folding, the security headers once each) and
    every response goes out as one ``sendall``: status line, headers and body together.
    """

    server: _Server
    close_connection: bool

    def setup(self) -> None:
        super().setup()
        self.close_connection = False
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self) -> None:
        while not self.close_connection:
            self.handle_one_request()

    def finish(self) -> None:
        self.server.forget(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def handle_one_request(self) -> None:
        server = self.server
        conn = self.connection
        try:
            # Waiting for the next request is the keep-alive; once its first byte is in,
            # the whole request (head and body) must arrive within request_timeout_s.
            server.set_deadline(conn, server.owner.keep_alive_s)
            rfile = self.rfile
            if not (rfile.peek(1) if isinstance(rfile, io.BufferedReader) else True):
                self.close_connection = True
                return
            server.set_deadline(conn, server.owner.request_timeout_s)
            line = self.rfile.readline(_MAX_LINE + 1)
            if not line:
                self.close_connection = True
                return
            try:
                method, target, headers = self._read_head(line)
            except _Refused as refused:
                self.close_connection = True
                self._send(Reply(refused.status, _TEXT, refused.text.encode() + b"\n"))
                return
            self._serve(method, target, headers)
        except (_Gone, TimeoutError, OSError, ValueError):
            self.close_connection = True

    def _read_head(self, line: bytes) -> tuple[str, str, dict[str, str]]:
        if len(line) > _MAX_LINE:
            raise _Refused(414, "URI too long")
        parts = line.split()
        if len(parts) != 3:
            raise _Refused(400, "bad request line")
        method, target, version = parts
        if version != b"HTTP/1.1":
            if version != b"HTTP/1.0":
                raise _Refused(505, "HTTP version not supported: use HTTP/1.1")
            self.close_connection = True  # no keep-alive for HTTP/1.0
        headers: dict[str, str] = {}
        readline = self.rfile.readline
        count = 0
        while True:
            raw = readline(_MAX_LINE + 1)
            if raw == b"\r\n" or raw == b"\n":
                break
            if not raw:
                raise _Gone
            if len(raw) > _MAX_LINE:
                raise _Refused(431, "request header field too long")
            count += 1
            if count > _MAX_HEADERS:
                raise _Refused(431, "too many header fields")
            name, colon, value = raw.partition(b":")
            if not colon or not name or name[0] in b" \t" or name[-1] in b" \t":
                raise _Refused(400, "bad header line (or obsolete line folding)")
            key = name.decode("latin-1").lower()
            text = value.strip().decode("latin-1")
            if key in headers:
                if key in SINGLE_HEADERS:
                    raise _Refused(400, f"bad request: repeated {key} header")
                text = f"{headers[key]}, {text}"
            headers[key] = text
        if "close" in headers.get("connection", "").lower():
            self.close_connection = True
        return method.decode("latin-1"), target.decode("latin-1"), headers

    def _serve(self, method: str, target: str, headers: dict[str, str]) -> None:
        owner = self.server.owner
        if target.split("?", 1)[0] != owner.path:
            missing = Reply(404, _TEXT, b"not found; MCP is at " + owner.path.encode() + b"\n")
            if "content-length" in headers or "transfer-encoding" in headers:
                self._refuse_unread(missing, headers.get("content-length"))
            else:
                self._send(missing)
            return
        body = b""
        if "transfer-encoding" in headers:
            self._refuse_unread(Reply(411, _TEXT, b"length required: send a Content-Length\n"))
            return
        declared = headers.get("content-length")
        if declared is not None:
            if not (declared.isascii() and declared.isdigit()):
                self.close_connection = True
                self._send(Reply(400, _TEXT, b"bad Content-Length\n"))
                return
            length = int(declared)
            if length > owner.endpoint.max_body_bytes:
                refused = owner.endpoint.check_access(headers)
                self._refuse_unread(refused or owner.endpoint.too_large(length), declared)
                return
            if length:
                if headers.get("expect", "").lower() == "100-continue":
                    self.connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = self.rfile.read(length)
                if len(body) < length:
                    self.close_connection = True
                    return
        self.server.set_deadline(self.connection, None)  # the call may take its time
        reply = owner.endpoint.handle(method, headers, body)
        if reply.exchange is None:
            self._send(reply, method == "HEAD")
            return
        self.server.responding(1)
        try:
            self._stream(reply, reply.exchange)
        finally:
            self.server.responding(-1)

    def _head(self, status: int, headers: list[tuple[str, str]], extra: bytes) -> bytes:
        """The status line and header block of a response, ``extra`` the last fields."""
        lines = [_status_line(status), _date_and_server()]
        for name, value in headers:
            lines.append(f"{name}: {value}\r\n".encode("latin-1"))
        lines.append(extra)
        if self.close_connection:
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    def _send(self, reply: Reply, head_only: bool = False) -> None:
        body = reply.body
        head = self._head(reply.status, reply.headers, b"content-length: %d\r\n" % len(body))
        self.connection.sendall(head if head_only else head + body)

    def _refuse_unread(self, reply: Reply, declared: str | None = None) -> None:
        """Answer a request whose body is not read, then close the connection gracefully.

        The connection cannot be reused, so the reply says ``Connection: close``; then the
        write side is shut and the bytes the client still sends (at most the declared body,
        ``_LINGER_BYTES``, for at most ``_LINGER_S``) are read and discarded, so the close
        is not a reset that destroys the reply before the client reads it.
        """
        self.close_connection = True
        conn = self.connection
        # The linger has its own bound; the reaper stays as a backstop (a short request
        # timeout must not reset the connection while the client still writes its body).
        self.server.set_deadline(conn, _LINGER_S + 1.0)
        self._send(reply)
        left = _LINGER_BYTES
        if declared is not None and declared.isascii() and declared.isdigit():
            left = min(left, int(declared))
        deadline = time.monotonic() + _LINGER_S
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)
            while left > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                conn.settimeout(remaining)
                data = conn.recv(min(left, 1 << 16))
                if not data:
                    break
                left -= len(data)

    def _stream(self, reply: Reply, exchange: Exchange) -> None:
        """Send the exchange's messages: one JSON body when the answer comes first, else
        a chunked ``text/event-stream``; a client that hangs up cancels the call."""
        streaming = False
        sendall = self.connection.sendall
        while True:
            item = exchange.next(_WATCH_S)
            if item is None:
                if self._client_gone():
                    exchange.client_gone()
                    self.close_connection = True
                    return
                continue
            data, final = item
            if not streaming and final:
                if data is None:
                    self._send(Reply(204, list(reply.headers)))
                    return
                self._send(Reply(exchange.status_of(data), [_JSON, *reply.headers], data))
                return
            chunks = []
            if not streaming:
                streaming = True
                chunks.append(self._head(200, reply.headers, _SSE_FIELDS))
            if data is not None:
                event = sse_event(data)
                chunks.append(b"%x\r\n%b\r\n" % (len(event), event))
            if final:
                chunks.append(b"0\r\n\r\n")
            try:
                sendall(b"".join(chunks))
            except OSError:
                exchange.client_gone()
                self.close_connection = True
                return
            if final:
                return

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
            return peeked == b""
        except (OSError, ValueError):
            return True


_TEXT = [("content-type", "text/plain; charset=utf-8")]
_JSON = ("content-type", "application/json")
_SSE_FIELDS = (
    b"content-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n"
)
_STATUS_LINES: dict[int, bytes] = {}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_date_cache: tuple[int, bytes] = (0, b"")


def _status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    if line is None:
        try:
            phrase = http.HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        line = _STATUS_LINES[status] = f"HTTP/1.1 {status} {phrase}\r\n".encode("latin-1")
    return line


def _date_and_server() -> bytes:
    """The ``Date`` (IMF-fixdate, made once a second) and ``Server`` fields."""
    global _date_cache
    now = int(time.time())
    cached = _date_cache
    if cached[0] == now:
        return cached[1]
    t = time.gmtime(now)
    fields = (
        f"date: {_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT\r\nserver: toolnexus\r\n"
    ).encode("ascii")
    _date_cache = (now, fields)
    return fields


def serve_http(
    toolkit: Toolkit,
    options: ServerOptions | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    ready: Callable[[HttpServer], object] | None = None,
) -> int:
    """Serve ``toolkit`` over MCP Streamable HTTP at ``http://host:port/mcp`` until
    SIGINT or SIGTERM; return the exit code: 130 after SIGINT, 143 after SIGTERM (128 + the
    signal, as shells report it and as :func:`~toolnexus.mcp.serve_stdio` returns).

    On a signal the server stops accepting, lets running calls answer for ``grace_ms``,
    cancels the rest and returns. ``options`` is a :class:`~toolnexus.mcp.ServerOptions`:
    its ``token`` (or ``verify_token``) requires an ``Authorization: Bearer`` header; its
    ``allowed_hosts``/``allowed_origins`` widen the localhost-only defaults (see
    ``docs/mcp.md``). ``ready(server)``, if given, is called once the socket listens.

    Example::

        from toolnexus import Toolkit, tool
        from toolnexus.mcp import ServerOptions, serve_http

        @tool
        def add(a: int, b: int) -> int:
            "Add two numbers."
            return a + b

        if __name__ == "__main__":
            raise SystemExit(serve_http(Toolkit([add]), ServerOptions(name="calc"), port=8000))
    """
    server = HttpServer(toolkit, options, host=host, port=port, path=path)
    stop = threading.Event()
    got: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        got.append(signum)
        stop.set()

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        server.start()
        if ready is not None:
            ready(server)
        while not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 + got[0] if got else 0
