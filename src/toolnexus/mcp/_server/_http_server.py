"""The embedded Streamable HTTP server: MCP on ``/mcp`` with the standard library only.

:func:`serve_http` is what ``toolnexus serve REF --http [HOST:]PORT`` runs; :class:`HttpServer`
is the same server for a program that starts and stops it itself. What a request means —
sessions, header rules, security — is decided by the transport-neutral
:class:`~toolnexus.mcp._server._endpoint.Endpoint`; this module only moves bytes, and
decides who gets a thread.

Two kinds of threads, so that no handful of sockets can take the server down:

- **one loop thread** owns every connection that is not being answered. It accepts, reads
  each request — head and body — without blocking, and enforces the head, request and
  keep-alive timeouts and the connection limits. A connection that is idle, or still
  sending its request, costs no thread: an attacker's idle or slow sockets hold nothing a
  client needs, and when the server is full the oldest idle one — else the oldest that has
  not sent a whole head — makes room. Per address, only requests in progress count: idle
  keep-alive sockets (many clients behind one NAT) do not;
- **up to** ``max_requests`` **workers** answer complete requests: run the endpoint, write the
  reply with a send timeout (a client that does not read is dropped and its call
  cancelled), watch the connection while a call runs (a client that hangs up cancels it; one
  that only half-closed still gets its answer), then serve a request the client already
  sent on the same connection, or hand the connection back to the loop.

A request's head is authenticated before anything of its body is counted or read (a
static token on the loop; a verifier or OAuth, which may wait, on a worker), then its body is
counted against the in-flight byte cap (``max_inflight_bytes``) before it is read: a peer
without a token holds no more than its head, and the bytes a server holds for requests stay
bounded however many clients send.

Out of file descriptors, the loop survives: it stops polling the listening socket for a
while (one warning a pause, written only through a :mod:`logging` already loaded: nothing
is imported then), and its connection cap stays below ``RLIMIT_NOFILE``.
"""

from __future__ import annotations

import contextlib
import errno
import http
import ipaddress
import os
import queue
import re
import select
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._log import LazyLogger
from ...errors import InvalidValueError
from .._shared._protocol import FIELD_NAME
from ._endpoint import SINGLE_HEADERS, Endpoint
from ._exchange import Exchange, Reply, sse_event
from ._options import AccessOptions, ServerOptions, resolve

if TYPE_CHECKING:
    from ..._toolkit import Toolkit
    from ._endpoint import Identity

__all__ = ["HttpServer", "serve_http"]

_log = LazyLogger()  # logging loads with the first record, not with the server

_MAX_HEADERS = 64
_MAX_LINE = 65536  # bytes in the request line or one header line
_MAX_HEAD = _MAX_LINE + _MAX_HEADERS * 1024  # bytes of a whole head
_CHUNK = 1 << 16
_WATCH_S = 0.25  # how often a waiting response looks at its client
_TICK_S = 0.25  # how often the loop looks at its timeouts
_LINGER_S = 0.25  # after an answer, how long a worker waits for the client's next request
# A request refused before its body was read (413, 411, ...) is answered, the write side
# shut, and what the client still sends is read and discarded for at most this long and
# this many bytes before the close: closing with unread bytes would reset the connection
# and an ordinary client (http.client, urllib) would see a broken pipe instead of the status.
_DISCARD_S = 2.0
_DISCARD_BYTES = 8 << 20
_WORKER_IDLE_S = 10.0  # a worker with nothing to do for this long exits
# accept() failed (out of file descriptors, mostly): the listening socket is not polled for
# this long (else the loop spins on it, a warning a turn), and one warning says so.
_ACCEPT_PAUSE_S = 0.5
# accept() errors that are one connection's, not the server's (Linux passes a pending
# network error of the new connection on as accept()'s): the next one is taken at once.
_PEER_ERRORS = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNABORTED",
        "EPROTO",
        "EPERM",
        "ENETDOWN",
        "ENOPROTOOPT",
        "EHOSTDOWN",
        "ENONET",
        "EHOSTUNREACH",
        "EOPNOTSUPP",
        "ENETUNREACH",
    )
    if hasattr(errno, name)
)
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets the connection


class HttpServer:
    """An MCP Streamable HTTP server on ``host:port``, path ``path`` (``/mcp``).

    Both protocol eras are served: modern stateless POSTs and legacy ``initialize``
    sessions. Start it with :meth:`serve_forever` (blocking) or :meth:`start` (a background
    thread); :meth:`shutdown` stops accepting, gives running calls ``grace_ms`` to answer,
    cancels the rest and closes the host.

    Args:
        toolkit: the tools to serve.
        options: a :class:`~toolnexus.mcp.ServerOptions`: identity, deadline, key, store,
            limits and security; for this server also ``max_connections``,
            ``max_connections_per_peer``, ``max_requests``, ``first_byte_timeout_ms``,
            ``request_timeout_ms``, ``keep_alive_ms`` and ``send_timeout_ms``. A body over
            ``max_message_bytes`` is answered 413; what the client still sends is discarded
            for up to 2 s and 8 MiB so it reads the status, then the connection is closed.
        host, port: where to listen (``127.0.0.1`` by default; port 0 picks a free one).
            An address other than loopback needs a ``token`` or ``verify_token`` (or
            ``insecure_no_auth=True``, said loudly): anyone who can reach it could call the
            tools otherwise.
        path: the endpoint's path (``/mcp``).

    Raises ``ValueError`` for a bad address or path, an unauthenticated network address, or
    a token that cannot be sent in a header; ``OSError`` when the address cannot be bound.

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
        _check_exposure(host, options.access)
        self.options = options
        self.endpoint = Endpoint(toolkit, options, path)
        self.endpoint.reads = True  # a worker drains each response (_Answer._stream)
        self.path = path
        self._loop = _Loop(self, host, port)
        try:  # the Host allow-list and the OAuth resource are this address's
            self.endpoint.listening(self.address)
        except ValueError:
            self._loop.listener.close()
            self._loop._release()
            self.endpoint.close()
            raise
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on."""
        host, port = self._loop.listener.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """The endpoint's URL, e.g. ``http://127.0.0.1:8000/mcp``."""
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}{self.path}"

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (from another thread or a signal handler)."""
        self._loop.run()

    def start(self) -> None:
        """Serve on a background thread; returns at once."""
        self._thread = threading.Thread(
            target=self.serve_forever, name="toolnexus-http", daemon=True
        )
        self._thread.start()

    def shutdown(self) -> None:
        """Stop accepting, end the open notification streams (a legacy ``GET`` stream, a
        ``subscriptions/listen`` stream) at once, let running calls answer for
        ``grace_ms``, cancel the rest, close the host and every connection. Returns as soon
        as no call runs. Safe to call more than once."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        loop = self._loop
        loop.stop_accepting()
        # A worker holding a notification stream counts as answering: ended first, so
        # that the grace waits for calls only.
        self.endpoint.end_streams()
        loop.wait_answered(self.options.grace_ms / 1000)
        self.endpoint.close()  # cancels what still runs; their streams end
        loop.wait_answered(1.0)
        loop.stop()
        if self._thread is not None:
            self._thread.join(5)
        elif not loop._running:
            loop._release()  # never served: no loop closes what it would have used

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = "stopped" if self._stopping.is_set() else "serving"
        return f"<HttpServer {self.url} {state}>"


def _check_exposure(host: str, access: AccessOptions) -> None:
    """Refuse to listen on a network address without authentication."""
    if (
        access.token is not None
        or access.verify_token is not None
        or access.auth is not None
        or _is_loopback(host)
    ):
        return
    if access.insecure_no_auth:
        _log.warning(
            "toolnexus mcp http: serving %s WITHOUT AUTHENTICATION: anyone who can reach it "
            "can call every tool",
            host,
        )
        return
    raise InvalidValueError(
        f"refusing to serve {host!r} without authentication: anyone who can reach that "
        "address could call every tool. Require a bearer token (ServerOptions(token=...), "
        "or toolnexus serve --http ... --token-file FILE), verify tokens yourself "
        "(ServerOptions(verify_token=...)) or take OAuth access tokens "
        "(ServerOptions(auth=ProtectedResource(...)), or --oauth-issuer); listen on "
        "127.0.0.1 behind a proxy that "
        "authenticates; or, on a network you trust, opt out explicitly with "
        "ServerOptions(insecure_no_auth=True) (--insecure-no-auth)"
    )


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- connections


class _Refused(Exception):
    """A request answered with ``status`` and the connection closed; ``discard`` bytes of
    the body the client may still send are read and dropped first (so it sees the status)."""

    def __init__(self, reply: Reply, discard: int = 0) -> None:
        super().__init__(reply.status)
        self.reply = reply
        self.discard = discard


class _Request:
    """A request read whole — or, with ``body`` None, only its head, for a worker to
    authenticate before its body is counted and read."""

    __slots__ = ("body", "close", "headers", "identity", "method", "reserved", "target")

    def __init__(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None, close: bool
    ) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.close = close
        self.reserved = 0
        self.identity: Identity | None = None  # who sent it, when checked from its head


class _Conn:
    """One client connection and what it has sent so far (never touched by two threads:
    the loop owns it while it is idle or sending, one worker while it is answered)."""

    __slots__ = (
        "buf",
        "busy",
        "checked",
        "close_after",
        "continued",
        "deadline",
        "discarding",
        "eof",
        "head",
        "length",
        "lingering",
        "out",
        "peer",
        "reserved",
        "sock",
        "started",
    )

    def __init__(self, sock: socket.socket, peer: str, now: float, first_byte_s: float) -> None:
        self.sock = sock
        self.peer = peer
        self.buf = bytearray()
        self.deadline = now + first_byte_s  # when the loop gives up on it
        self.started = False  # a request has begun (its first byte came)
        self.head: tuple[str, str, dict[str, str], bool] | None = None
        self.length = 0  # the body length of the request whose head is in
        # what authenticating that head found (the refusal, or who sent it); None: not yet
        self.checked: tuple[Reply | None, Identity] | None = None
        self.busy = False  # a request is in progress: counted against its address
        self.reserved = 0  # in-flight bytes taken for that body
        self.continued = False  # the interim 100 Continue was sent
        self.close_after = False
        self.eof = False  # the client shut its sending side
        self.discarding = 0  # > 0: reading and dropping this many bytes before the close
        self.lingering = False  # a worker waits for the client's next request
        self.out = b""  # the rest of an answer the loop writes as the client reads it

    @property
    def idle(self) -> bool:
        """Nothing of a request has come since the last answer (or the connect)."""
        return not self.started and not self.buf


def _parse_head(data: bytes) -> tuple[str, str, dict[str, str], bool]:
    """The method, target, headers (lower-case names) and HTTP/1.0-ness of a request head
    (without its blank line). Strict: CRLF line ends only, token field names, no control
    characters in values, no obsolete line folding, the security headers once each."""
    lines = data.split(b"\r\n")
    request_line = lines[0]
    if len(request_line) > _MAX_LINE:
        raise _Refused(_text(414, "URI too long"))
    line_ends = len(lines) - 1  # a CR or an LF outside a CRLF adds to a count, not to this
    if data.count(b"\r") != line_ends or data.count(b"\n") != line_ends:
        raise _Refused(_text(400, "bad request: lines must end in CRLF"))
    parts = _REQUEST_LINE.fullmatch(request_line)
    if parts is None:
        if request_line.rpartition(b" ")[2].startswith(b"HTTP/"):
            raise _Refused(_text(505, "HTTP version not supported: use HTTP/1.1"))
        raise _Refused(_text(400, "bad request line"))
    if line_ends > _MAX_HEADERS:
        raise _Refused(_text(431, "too many header fields"))
    # The field lines checked together, over the whole head (the request line has passed,
    # and every CR and LF is in a CRLF): no byte left once those a head may hold are
    # deleted, no line without a name; the first bad line then named.
    checked = not data.translate(None, _HEAD_BYTES) and _BAD_FIELD_NAME.search(data) is None
    headers: dict[str, str] = {}
    for raw in lines[1:]:
        if len(raw) > _MAX_LINE:
            raise _Refused(_text(431, "request header field too long"))
        name, colon, value = raw.partition(b":")
        if not checked:
            _check_field_line(name, colon, value)
        key = name.decode("ascii").lower()
        text = value.strip(b" \t").decode("latin-1")
        if key in headers:
            if key in SINGLE_HEADERS:
                raise _Refused(_text(400, f"bad request: repeated {key} header"))
            text = f"{headers[key]}, {text}"
        headers[key] = text
    close = parts[3] == b"HTTP/1.0" or "close" in headers.get("connection", "").lower()
    return parts[1].decode("ascii"), parts[2].decode("latin-1"), headers, close


def _check_field_line(name: bytes, colon: bytes, value: bytes) -> None:
    """Refuse a header line that is not a token field name, a colon, and a value without
    control characters."""
    if not colon or _FIELD_NAME.fullmatch(name) is None:
        raise _Refused(
            _text(
                400,
                "bad header line (a field name of token characters, "
                "then a colon; no obsolete line folding)",
            )
        )
    if _CONTROL.search(value) is not None:
        raise _Refused(_text(400, "bad header value: control characters are not allowed"))


# RFC 9110/9112 by regular expressions (a C call a line or a head, not a Python loop a
# byte): a token method or field name; no control character but HTAB in a value (no NUL,
# CR or LF); a request line of a method, a target and the version. Over a whole head whose
# CRs and LFs are all CRLFs: the bytes it may hold (no control character but HTAB, CR and
# LF), and a line that does not start with a token name and a colon.
_TOKEN = FIELD_NAME.encode("ascii")
_FIELD_NAME = re.compile(_TOKEN)
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([^\x00-\x20\x7f]+) (HTTP/1\.[01])")
_HEAD_BYTES = bytes(b for b in range(256) if b in b"\t\r\n" or 0x20 <= b != 0x7F)
_BAD_FIELD_NAME = re.compile(rb"\r\n(?!" + _TOKEN + rb":)")


def _text(status: int, text: str, headers: list[tuple[str, str]] | None = None) -> Reply:
    return Reply(
        status,
        [("content-type", "text/plain; charset=utf-8"), *(headers or [])],
        text.encode("utf-8") + b"\n",
    )


# --------------------------------------------------------------------------- the loop


class _Loop:
    """The thread that owns idle and arriving connections (see the module docstring)."""

    def __init__(self, server: HttpServer, host: str, port: int) -> None:
        self.server = server
        self.endpoint = server.endpoint
        self.http = http = server.options.http
        access = server.options.access
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host.strip("[]"), port))
            listener.listen(256)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        self.listener = listener
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        # wake() against _release(): a late wake never writes to a closed pipe's number
        # (which the process may have reused for another file).
        self._wake_lock = threading.Lock()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._conns: dict[socket.socket, _Conn] = {}  # every open connection, idle or not
        self._lock = threading.Lock()  # _conns and _per_peer (workers close connections too)
        self._per_peer: dict[str, int] = {}  # requests in progress per address (busy conns)
        self.max_connections = _connection_cap(http.max_connections)
        self._paused_until = 0.0  # accept() failed: the listener is not polled until then
        # A static token (or none) is checked on the loop as a head comes; a verifier or
        # OAuth may wait (on a user's function, an authorization server): on a worker.
        self._check_inline = access.verify_token is None and access.auth is None
        self._returned: queue.SimpleQueue[_Conn] = queue.SimpleQueue()
        self._workers = _Workers(self, http.max_requests)
        self._answering = 0
        self._answered = threading.Condition(self._lock)
        self._accepting = True
        self._stopped = False
        self._running = False
        self._done = threading.Event()
        self.first_byte_s = http.first_byte_timeout_ms / 1000
        self.request_s = http.request_timeout_ms / 1000
        self.keep_alive_s = http.keep_alive_ms / 1000
        self.send_s = http.send_timeout_ms / 1000

    # ------------------------------------------------------------------ running

    def run(self) -> None:
        self._running = True
        try:
            while not self._stopped:
                events = self._selector.select(_TICK_S)
                for key, mask in events:
                    target = key.fileobj
                    if target is self.listener:
                        self._accept()
                    elif target == self._wake_r:
                        with contextlib.suppress(OSError):
                            os.read(self._wake_r, 4096)
                    else:
                        conn = key.data
                        if conn is None:
                            continue
                        if mask & selectors.EVENT_WRITE:
                            self._writable(conn)
                        else:
                            self._readable(conn)
                self._take_back()
                now = time.monotonic()
                self._expire(now)
                if self._paused_until and now >= self._paused_until:
                    self._resume_accepting()
        finally:
            self._close_everything()
            self._release()
            self._done.set()

    def wake(self) -> None:
        with self._wake_lock:
            if self._wake_w < 0:
                return  # the loop is over: nothing to wake
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"!")

    def _release(self) -> None:
        """Close the selector and the wake pipe, once the loop no longer runs."""
        with self._wake_lock:
            if self._wake_w < 0:
                return
            os.close(self._wake_w)
            self._wake_w = -1
            with contextlib.suppress(OSError):
                self._selector.close()
            with contextlib.suppress(OSError):
                os.close(self._wake_r)

    def stop_accepting(self) -> None:
        self._accepting = False
        with self._lock:
            lingering = [conn for conn in self._conns.values() if conn.lingering]
        for conn in lingering:
            # Its worker waits for a next request it will not serve now: shutting the
            # reading side wakes it (it reads the end) and it closes the connection.
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RD)
        self.wake()

    def stop(self) -> None:
        self._stopped = True
        self.wake()
        if not self._running or not self._done.wait(5):  # never served, or stuck
            self._close_everything()

    def wait_answered(self, seconds: float) -> None:
        """Wait (up to ``seconds``) until no worker answers a request."""
        deadline = time.monotonic() + seconds
        with self._lock:
            while self._answering:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._answered.wait(left)

    def _close_everything(self) -> None:
        with self._lock:
            conns = list(self._conns.values())
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
            if self._idle_owned(conn):
                self._close(conn)
        with contextlib.suppress(OSError, KeyError, ValueError):
            self._selector.unregister(self.listener)
        self.listener.close()
        self._workers.stop()

    def _idle_owned(self, conn: _Conn) -> bool:
        try:
            return self._selector.get_key(conn.sock).data is conn
        except (KeyError, ValueError):
            return False

    # ------------------------------------------------------------------ accepting

    def _accept(self) -> None:
        while True:
            try:
                sock, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _PEER_ERRORS:
                    continue  # that connection failed before it was taken: the next one
                self._pause_accepting(exc)  # EMFILE, ENFILE (out of descriptors), ENOBUFS...
                return
            if not self._accepting:
                sock.close()
                continue
            if not self._admit():
                _refuse_now(sock, _SERVICE_UNAVAILABLE)
                continue
            sock.settimeout(None)  # blocking for good: the loop reads with _recv_now
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock, str(address[0]), time.monotonic(), self.first_byte_s)
            with self._lock:
                self._conns[sock] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _pause_accepting(self, exc: OSError) -> None:
        """accept() failed: leave the listening socket alone for a while (the connections
        wait in its backlog) rather than spin on it, and say so once for the pause."""
        self._paused_until = time.monotonic() + _ACCEPT_PAUSE_S
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(self.listener)
        hint = (
            " (out of file descriptors: raise the limit, ulimit -n, or lower max_connections)"
            if exc.errno in (errno.EMFILE, errno.ENFILE)
            else ""
        )
        _warn(
            "toolnexus mcp http: cannot accept a connection (%s); not accepting for %.1f s%s",
            exc,
            _ACCEPT_PAUSE_S,
            hint,
        )

    def _resume_accepting(self) -> None:
        self._paused_until = 0.0
        if self._accepting and not self._stopped:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.register(self.listener, selectors.EVENT_READ, None)

    def _admit(self) -> bool:
        """Room for one more connection — made, when the server is full, by closing one
        that holds its place for the least: one refused and draining, else the oldest idle
        one, else the oldest that has not sent a whole request head (a slow loris). False:
        every place holds a request (its head whole) or an answer."""
        with self._lock:
            if len(self._conns) < self.max_connections:
                return True
            spare = [c for c in self._conns.values() if _spare_rank(c) and self._idle_owned(c)]
        if not spare:
            return False
        self._close(min(spare, key=lambda c: (-_spare_rank(c), c.deadline)))
        return True

    # ------------------------------------------------------------------ reading

    def _readable(self, conn: _Conn) -> None:
        try:
            data = _recv_now(conn.sock)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        except MemoryError:
            self._refuse(conn, _Refused(_OUT_OF_MEMORY))
            return
        if conn.discarding:
            conn.discarding = max(0, conn.discarding - len(data)) if data else 0
            if not conn.discarding:
                self._close(conn)
            return
        if not data:
            self._close(conn)  # the client went away (or shut its side) between requests
            return
        if not conn.started:
            conn.started = True
            # The head within the first-byte timeout of the connect (or of this first byte
            # on a kept-alive connection), and the request timeout's bound as before.
            now = time.monotonic()
            conn.deadline = min(conn.deadline, now + min(self.first_byte_s, self.request_s))
            if not self._begin(conn):
                self._refuse(conn, _Refused(_TOO_MANY_FROM_PEER))
                return
        try:
            conn.buf += data
            request = self.take_request(conn)
        except _Refused as refused:
            self._refuse(conn, refused)
            return
        except MemoryError:
            self._refuse(conn, _Refused(_OUT_OF_MEMORY))
            return
        if request is not None:
            self._selector.unregister(conn.sock)
            self._workers.submit(conn, request)

    def _begin(self, conn: _Conn) -> bool:
        """A request starts on ``conn``: count it against its address (False: that address
        has ``max_connections_per_peer`` requests in progress already)."""
        if conn.busy:
            return True
        with self._lock:
            held = self._per_peer.get(conn.peer, 0)
            if held >= self.http.max_connections_per_peer:
                return False
            self._per_peer[conn.peer] = held + 1
            conn.busy = True
        return True

    def _rest(self, conn: _Conn) -> None:
        """``conn`` is idle again (or closed): its request no longer counts."""
        with self._lock:
            if not conn.busy:
                return
            conn.busy = False
            left = self._per_peer.get(conn.peer, 1) - 1
            if left > 0:
                self._per_peer[conn.peer] = left
            else:
                self._per_peer.pop(conn.peer, None)

    def take_request(self, conn: _Conn, on_worker: bool = False) -> _Request | None:
        """The request ``conn`` has sent whole, or None while more must come. Raises
        :class:`_Refused` for one that will not be served. A request with a body is
        authenticated from its head first (the loop hands a check that may wait to a worker
        as a head-only request, ``body`` None, unless ``on_worker``); then its body is
        counted against the in-flight cap before it is read (it stays counted with the
        request)."""
        if conn.head is None:
            end = conn.buf.find(b"\r\n\r\n")
            head_part = conn.buf if end < 0 else conn.buf[:end]
            if head_part.count(b"\n") != head_part.count(b"\r\n"):
                raise _Refused(_text(400, "bad request: lines must end in CRLF"))
            if end < 0:
                if len(conn.buf) > _MAX_HEAD:
                    raise _Refused(_text(431, "request header fields too large"))
                if conn.buf.find(b"\n") < 0 and len(conn.buf) > _MAX_LINE:
                    raise _Refused(_text(414, "URI too long"))
                return None
            # Parsed and checked before anything changes: a refusal leaves the connection
            # as it was, so whoever looks again (the loop, after a worker) sees the same.
            parsed = _parse_head(bytes(conn.buf[:end]))
            length = self._body_length(parsed)
            del conn.buf[: end + 4]
            conn.head, conn.length = parsed, length
            if length and len(conn.buf) < length:
                conn.deadline = time.monotonic() + self.request_s  # now for the body
        method, target, headers, close = conn.head
        if conn.length:
            if conn.checked is None:
                if not (self._check_inline or on_worker):
                    return _Request(method, target, headers, None, close)
                conn.checked = self.endpoint.authenticate(headers, method=method, peer=conn.peer)
            refused = conn.checked[0]
            if refused is not None:
                raise _Refused(refused, conn.length)
            if conn.length > self.endpoint.max_body_bytes:
                raise _Refused(self.endpoint.too_large(conn.length), conn.length)
        if conn.length and len(conn.buf) < conn.length:
            if not conn.reserved:
                refused = self.endpoint.reserve(conn.length)
                if refused is not None:
                    raise _Refused(refused, conn.length)
                conn.reserved = conn.length
            if not conn.continued and headers.get("expect", "").lower() == "100-continue":
                conn.continued = True
                _send_now(conn.sock, b"HTTP/1.1 100 Continue\r\n\r\n")
            return None
        body = bytes(conn.buf[: conn.length])
        del conn.buf[: conn.length]
        request = _Request(method, target, headers, body, close)
        if conn.length and not conn.reserved:
            refused = self.endpoint.reserve(conn.length)
            if refused is not None:
                raise _Refused(refused)
            conn.reserved = conn.length
        request.reserved = conn.reserved
        if conn.checked is not None:
            request.identity = conn.checked[1]
        conn.head, conn.length, conn.reserved, conn.continued = None, 0, 0, False
        conn.checked = None
        conn.started = bool(conn.buf)
        return request

    def check_head(self, conn: _Conn) -> None:
        """Authenticate the head ``conn`` has sent (a worker, for a check that may wait)."""
        assert conn.head is not None
        conn.checked = self.endpoint.authenticate(conn.head[2], method=conn.head[0], peer=conn.peer)

    def _body_length(self, head: tuple[str, str, dict[str, str], bool]) -> int:
        method, target, headers, _ = head
        declared = headers.get("content-length")
        if "transfer-encoding" in headers:
            raise _Refused(_text(411, "length required: send a Content-Length"), _DISCARD_BYTES)
        if declared is not None:
            if not (declared.isascii() and declared.isdigit()) or len(declared) > 18:
                raise _Refused(_text(400, "bad Content-Length"))
            length = int(declared)
        else:
            length = 0
        path = target.split("?", 1)[0]
        if path != self.server.path:
            if not self.endpoint.is_metadata(path):
                raise _Refused(_text(404, f"not found; MCP is at {self.server.path}"), length)
            if length:  # read by anyone: no body is taken on before a token is seen
                refused = (
                    _text(400, "bad request: a metadata request has no body")
                    if method in ("GET", "HEAD")
                    else self.endpoint.metadata(method, headers)  # 405
                )
                raise _Refused(refused, length)
        return length

    def _writable(self, conn: _Conn) -> None:
        """Write more of an answer a slow reader left (a worker handed it over)."""
        try:
            sent = _send_some(conn.sock, conn.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        conn.out = conn.out[sent:]
        if conn.out:
            return
        if conn.close_after:
            self._close(conn)
            return
        self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
        self._await_request(conn)

    def _await_request(self, conn: _Conn) -> None:
        """``conn`` is the loop's again, ready to read (registered): take a request it sent
        already, else wait for one (the head, request or keep-alive timeout)."""
        try:
            request = self.take_request(conn) if conn.buf or conn.head else None
        except _Refused as refused:
            self._refuse(conn, refused)
            return
        if request is not None:
            self._selector.unregister(conn.sock)
            self._workers.submit(conn, request)
            return
        now = time.monotonic()
        if conn.head is not None:
            conn.deadline = now + self.request_s
        elif conn.started:
            conn.deadline = now + min(self.first_byte_s, self.request_s)
        else:
            self._rest(conn)
            conn.deadline = now + self.keep_alive_s

    # ------------------------------------------------------------------ timeouts

    def _expire(self, now: float) -> None:
        with self._lock:
            late = [
                conn
                for conn in self._conns.values()
                if conn.deadline < now and self._idle_owned(conn)
            ]
        for conn in late:
            if conn.out:  # the client did not read its answer in time: reset, so the
                with contextlib.suppress(OSError):  # kernel does not keep sending it either
                    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                self._close(conn)
                continue
            if conn.started and not conn.discarding:
                self._refuse(
                    conn,
                    _Refused(
                        _text(408, "request timeout: the request did not arrive whole in time")
                    ),
                )
                continue
            self._close(conn)

    # ------------------------------------------------------------------ hand-overs

    def give_back(self, conn: _Conn) -> None:
        """A worker is done with ``conn`` and it stays open (any thread)."""
        self._returned.put(conn)
        self.wake()

    def _take_back(self) -> None:
        while True:
            try:
                conn = self._returned.get_nowait()
            except queue.Empty:
                return
            if self._stopped or (not self._accepting and not conn.out):
                self._close(conn)
                continue
            try:
                if conn.out:
                    conn.deadline = time.monotonic() + self.send_s
                    self._selector.register(conn.sock, selectors.EVENT_WRITE, conn)
                    continue
                self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            except (ValueError, OSError):
                self._close(conn)
                continue
            self._await_request(conn)

    def workers_to_spare(self) -> bool:
        """Whether fewer than half the workers are answering (a worker may linger)."""
        return self._answering * 2 < self.http.max_requests

    def answering(self, delta: int) -> None:
        with self._lock:
            self._answering += delta
            if not self._answering:
                self._answered.notify_all()

    # ------------------------------------------------------------------ ending

    def _refuse(self, conn: _Conn, refused: _Refused) -> None:
        """Answer and close (the loop owns ``conn``): gracefully, discarding what the
        client still sends for a short while."""
        if conn.reserved:
            self.endpoint.release(conn.reserved)
            conn.reserved = 0
        reply = refused.reply
        data = _response_head(reply.status, reply.headers, len(reply.body), close=True)
        if not _send_now(conn.sock, data + reply.body) or not refused.discard:
            self._close(conn)
            return
        with contextlib.suppress(OSError):
            conn.sock.shutdown(socket.SHUT_WR)
        conn.discarding = min(refused.discard, _DISCARD_BYTES)
        conn.deadline = time.monotonic() + _DISCARD_S
        if not self._idle_owned(conn):
            try:
                self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            except (ValueError, OSError):
                self._close(conn)

    def _close(self, conn: _Conn) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        self.close(conn)

    def close(self, conn: _Conn) -> None:
        """Close ``conn`` and forget it (any thread that owns it)."""
        if conn.reserved:
            self.endpoint.release(conn.reserved)
            conn.reserved = 0
        self._rest(conn)
        with self._lock:
            self._conns.pop(conn.sock, None)
        with contextlib.suppress(OSError):
            conn.sock.close()


def _spare_rank(conn: _Conn) -> int:
    """How readily ``conn`` gives its place up when the server is full: 3 refused and
    draining, 2 idle, 1 still sending its request head; 0 never (a request whose head is in,
    or an answer being written)."""
    if conn.discarding:
        return 3
    if conn.out:
        return 0
    if conn.idle:
        return 2
    return 1 if conn.head is None else 0


def _connection_cap(configured: int) -> int:
    """``max_connections``, kept below the process's file descriptor limit
    (``RLIMIT_NOFILE``) with room for the rest of the program: its soft limit less an
    eighth (at least 64). A full table then makes room by closing an idle connection,
    instead of accept() failing for everyone."""
    try:
        import resource  # Unix only
    except ImportError:
        return configured
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return configured
    return max(1, min(configured, soft - max(64, soft // 8)))


def _warn(message: str, *args: object) -> None:
    """A warning that imports nothing: without :mod:`logging` loaded, no handler was ever
    set up to take it (the package's logger would drop it in its ``NullHandler``), so it is
    not made — importing then could fail for lack of a file descriptor, and end the loop."""
    if "logging" in sys.modules:
        with contextlib.suppress(Exception):  # never lose the loop to a log line
            _log.warning(message, *args)


_SERVICE_UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 53\r\nConnection: close\r\n\r\n"
    b"service unavailable: every connection is busy; retry\n"
)
_TOO_MANY_FROM_PEER = _text(
    503,
    "service unavailable: too many requests from your address are in progress; retry",
    [("retry-after", "1")],
)
_OUT_OF_MEMORY = _text(
    503,
    "service unavailable: the server ran out of memory reading the request; retry later",
    [("retry-after", "1")],
)


# Sockets stay in blocking mode for their whole life (no mode switch a request); what must
# not wait — the loop's reads and writes, a worker's first try at an answer — asks the
# kernel not to wait, call by call.
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


def _recv_now(sock: socket.socket) -> bytes:
    """What the client has sent that is here now (``b""`` at its end); raises
    ``BlockingIOError`` when nothing is."""
    if _DONTWAIT:
        return sock.recv(_CHUNK, _DONTWAIT)
    sock.setblocking(False)  # a platform without MSG_DONTWAIT
    try:
        return sock.recv(_CHUNK)
    finally:
        sock.setblocking(True)


def _send_some(sock: socket.socket, data: bytes | memoryview) -> int:
    """Send what the socket takes at once; raises ``BlockingIOError`` when it takes none."""
    if _DONTWAIT:
        return sock.send(data, _DONTWAIT)
    sock.setblocking(False)  # a platform without MSG_DONTWAIT
    try:
        return sock.send(data)
    finally:
        sock.setblocking(True)


def _send_now(sock: socket.socket, data: bytes) -> bool:
    """Send a short message, as far as it goes at once; True when all of it went."""
    try:
        sent = _send_some(sock, data)
    except OSError:
        return False
    return sent == len(data)


def _refuse_now(sock: socket.socket, data: bytes) -> None:
    _send_now(sock, data)
    with contextlib.suppress(OSError):
        sock.close()


# --------------------------------------------------------------------------- workers


class _Workers:
    """Up to ``size`` threads answering complete requests: a thread starts when a request
    comes and none is idle; one with nothing to do for ``_WORKER_IDLE_S`` exits."""

    def __init__(self, loop: _Loop, size: int) -> None:
        self._loop = loop
        self._size = size
        self._jobs: queue.SimpleQueue[tuple[_Conn, _Request] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # threads waiting for a job that no submit has counted on yet

    def submit(self, conn: _Conn, request: _Request) -> None:
        self._jobs.put((conn, request))
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle thread takes it
                return
            if self._threads >= self._size:
                return  # queued for the next thread that is done
            self._threads += 1
        thread = threading.Thread(target=self._work, name="toolnexus-http-worker", daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # out of threads: the queued job waits for a running one
            with self._lock:
                self._threads -= 1
            _log.warning("toolnexus mcp http: cannot start a worker (%s)", exc)

    def stop(self) -> None:
        with self._lock:
            count = self._threads
        for _ in range(count):
            self._jobs.put(None)

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_WORKER_IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # nobody counted on this thread: it may leave
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue  # a job was promised to an idle thread: wait for it
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            try:
                _Answer(self._loop, *job).run()
            except BaseException:  # never lose a worker to a bug: the connection is closed
                _log.exception("toolnexus mcp http: answering a request failed")
                with contextlib.suppress(Exception):
                    self._loop.close(job[0])
            with self._lock:
                self._idle += 1


class _Answer:
    """One worker's turn with a connection: answer its request (and any it sent after)."""

    def __init__(self, loop: _Loop, conn: _Conn, request: _Request) -> None:
        self.loop = loop
        self.conn = conn
        self.request = request
        self.close = request.close

    def run(self) -> None:
        loop, conn = self.loop, self.conn
        loop.answering(1)
        try:
            if self.request.body is None:  # only a head came: authenticate it
                request = self._check()
                if request is None:
                    return
                self.request = request
            while True:
                done = self._answer(self.request)
                if done is _CLOSE:
                    loop.close(conn)
                    return
                if done is _HANDED:
                    return  # the loop writes the rest of the answer
                request = self._next()
                if request is None:
                    return
                self.request = request
                self.close = request.close
        finally:
            loop.answering(-1)

    def _check(self) -> _Request | None:
        """Authenticate the head the loop handed over; then the request, when its body comes
        at once (as :meth:`_next` waits for one), else the connection goes back to the loop
        (which refuses it, or counts and reads its body)."""
        self.loop.check_head(self.conn)
        return self._next(head_in=True)

    def _next(self, head_in: bool = False) -> _Request | None:
        """The client's next request (or, ``head_in``, the body of the one whose head was
        checked), when it comes at once (or was already sent); else the connection goes
        back to the loop (or is closed)."""
        conn = self.conn
        conn.lingering = True  # before the look at _accepting: stop_accepting wakes it
        try:
            return self._linger(head_in)
        finally:
            conn.lingering = False

    def _linger(self, head_in: bool) -> _Request | None:
        loop, conn = self.loop, self.conn
        if (self.close and not head_in) or conn.eof or not loop._accepting:
            loop.close(conn)
            return None
        # A kept-alive client's next request comes soon: waiting for it here saves two
        # hand-overs through the loop — but only while workers are to spare, so lingering
        # can never keep a waiting request from a worker.
        linger = _LINGER_S if loop.workers_to_spare() else 0.0
        deadline = time.monotonic() + linger
        while True:
            try:
                request = loop.take_request(conn, on_worker=True) if conn.buf or conn.head else None
            except _Refused:
                break  # the loop refuses it (and discards what follows) as it would anyway
            if request is not None:
                return request
            if len(conn.buf) >= _CHUNK or conn.length > _CHUNK:
                break  # a large request: the loop reads it (a small body still coming is
                # waited for here: many clients send a request's head and body apart)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                if not select.select([conn.sock], [], [], left)[0]:
                    break
                data = _recv_now(conn.sock)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                loop.close(conn)
                return None
            if not data:
                loop.close(conn)
                return None
            conn.started = True
            conn.buf += data
        loop.give_back(conn)
        return None

    # ------------------------------------------------------------------ one request

    def _answer(self, request: _Request) -> object:
        """Answer one request: ``_KEEP`` (the connection may serve another), ``_CLOSE``, or
        ``_HANDED`` (the client reads slowly: the loop writes the rest)."""
        endpoint = self.loop.endpoint
        try:
            if request.target.split("?", 1)[0] != self.loop.server.path:
                endpoint.release(request.reserved)  # a metadata request: no call to keep it
                reply = endpoint.metadata(request.method, request.headers)
                return self._send(reply, head_only=request.method == "HEAD")
            assert request.body is not None
            reply = endpoint.handle(
                request.method,
                request.headers,
                request.body,
                reserved=request.reserved,
                peer=self.conn.peer,
                identity=request.identity,
            )
        except MemoryError:
            _log.warning(
                "toolnexus mcp http: out of memory answering a request from %s", self.conn.peer
            )
            self.close = True
            return self._send(_OUT_OF_MEMORY)
        except Exception:
            _log.exception("toolnexus mcp http: answering a request failed")
            self.close = True
            return self._send(_text(500, "internal error"))
        if reply.exchange is None:
            return self._send(reply, head_only=request.method == "HEAD")
        return self._stream(reply, reply.exchange)

    def _send(self, reply: Reply, head_only: bool = False) -> object:
        body = reply.body
        head = _response_head(reply.status, reply.headers, len(body), close=self.close)
        return self._finish(head if head_only else head + body)

    def _finish(self, data: bytes) -> object:
        """Write the last bytes of an answer: as far as the client takes them at once, and
        the rest by the loop — a client that does not read holds no worker."""
        sock = self.conn.sock
        view = memoryview(data)
        try:
            while view:
                view = view[_send_some(sock, view) :]
        except (BlockingIOError, InterruptedError):
            self.conn.out = bytes(view)
            self.conn.close_after = self.close
            self.loop.give_back(self.conn)
            return _HANDED
        except OSError:
            return _CLOSE
        return _CLOSE if self.close else _KEEP

    def _write(self, data: bytes) -> bool:
        """Write all of ``data`` (a part of a streamed answer) within the send timeout;
        False when the client is gone or does not read."""
        sock = self.conn.sock
        try:
            sock.settimeout(self.loop.send_s)
            sock.sendall(data)
        except (OSError, ValueError):
            return False
        finally:
            with contextlib.suppress(OSError):
                sock.settimeout(None)
        return True

    def _stream(self, reply: Reply, exchange: Exchange) -> object:
        """Send the exchange's messages: one JSON body when the answer comes first, else a
        chunked ``text/event-stream``. While waiting, watch the client: one that hangs up
        cancels the call; one that only shut its sending side still gets its answer."""
        streaming = False  # the head is out: chunks follow
        probing = False  # the client shut its side: probe that it still reads
        if exchange.opens_at_once:  # nothing to wait for first: the stream is open now
            streaming = True
            if not self._write(self._stream_head(reply, exchange)):
                exchange.client_gone()
                return _CLOSE
        while True:
            item = exchange.next(_WATCH_S)
            if item is None:
                if not probing and not self._watch():
                    probing = True  # end of input seen: from now on, write to find out
                if probing:
                    if not streaming:
                        streaming = True
                        if not self._write(self._stream_head(reply, exchange)):
                            exchange.client_gone()
                            return _CLOSE
                    probe = b": still working\n\n" if exchange.streams else b" "
                    if not self._write(b"%x\r\n%b\r\n" % (len(probe), probe)):
                        exchange.client_gone()
                        return _CLOSE
                continue
            data, final = item
            if not streaming and final:
                if data is None:  # cancelled: ended as the spec allows, never a bare 204
                    return self._send(exchange.cancelled_reply(reply.headers))
                status = exchange.status_of(data)
                return self._send(Reply(status, [_JSON, *reply.headers], data))
            chunks = []
            if not streaming:
                streaming = True
                chunks.append(self._stream_head(reply, exchange))
            if data is not None:
                payload = sse_event(data) if exchange.streams else data
                chunks.append(b"%x\r\n%b\r\n" % (len(payload), payload))
            if final:
                chunks.append(b"0\r\n\r\n")
                return self._finish(b"".join(chunks))
            if not self._write(b"".join(chunks)):
                exchange.client_gone()
                return _CLOSE

    def _stream_head(self, reply: Reply, exchange: Exchange) -> bytes:
        fields = _SSE_FIELDS if exchange.streams else _JSON_CHUNKED_FIELDS
        return _response_head(200, reply.headers, None, close=self.close, extra=fields)

    def _watch(self) -> bool:
        """Read what the client sent meanwhile (a pipelined request is kept); False once it
        shut its sending side (it may still read: only a write can tell)."""
        conn = self.conn
        if conn.eof:
            return False
        try:
            while len(conn.buf) < _MAX_HEAD:
                data = _recv_now(conn.sock)
                if not data:
                    conn.eof = True
                    return False
                conn.buf += data
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            conn.eof = True
            return False
        return True


_JSON = ("content-type", "application/json")
_KEEP, _CLOSE, _HANDED = object(), object(), object()  # how a worker's answer ended
_SSE_FIELDS = (
    b"content-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n"
)
_JSON_CHUNKED_FIELDS = b"content-type: application/json\r\ntransfer-encoding: chunked\r\n"
_STATUS_LINES: dict[int, bytes] = {}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_date_cache: tuple[int, bytes] = (0, b"")


def _response_head(
    status: int,
    headers: list[tuple[str, str]],
    length: int | None,
    *,
    close: bool,
    extra: bytes = b"",
) -> bytes:
    """The status line and header block of a response."""
    lines = [_status_line(status), _date_and_server()]
    for name, value in headers:
        lines.append(f"{name}: {value}\r\n".encode("latin-1"))
    if length is not None:
        lines.append(b"content-length: %d\r\n" % length)
    lines.append(extra)
    if close:
        lines.append(b"connection: close\r\n")
    lines.append(b"\r\n")
    return b"".join(lines)


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
    Raises as :class:`HttpServer` does.

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
