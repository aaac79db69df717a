"""The command line's side of an OAuth sign-in: print the URL, wait for the redirect.

:class:`LoopbackReceiver` is what ``toolnexus list|call|serve mcp.json`` gives its
:class:`~toolnexus.mcp.OAuth` as ``ask``: it prints the authorization URL on the terminal
and receives the authorization server's redirect on ``http://127.0.0.1:PORT/callback``
(RFC 8252's loopback redirect for native apps), matching it to the sign-in by its
``state`` — several servers may ask at once. The browser gets a short page saying it may
be closed; the code in the redirect goes to the waiting sign-in and nowhere else (never
to the terminal or a log).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

from ..._suspension import Answer, Request

__all__ = ["LoopbackReceiver"]

_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>toolnexus</title>"
    b"<p>Signed in. You can close this tab and go back to the terminal.</p>"
)


class LoopbackReceiver:
    """Receives OAuth redirects on the loopback interface for a command-line app.

    ``redirect_uri`` is where it listens (a free port, chosen now); :meth:`ask` is an
    ``OAuth(ask=...)``: it prints the request's URL to ``out`` and waits up to
    ``timeout_s`` for the redirect carrying that sign-in's ``state`` (then declines as
    expired). A redirect URI on another loopback port (a pre-registered client's) is
    listened on when a sign-in names it.
    """

    def __init__(self, out: TextIO, *, path: str = "/callback", timeout_s: float = 300.0) -> None:
        self._out = out
        self._path = path
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._waiting: dict[str, tuple[threading.Event, list[str]]] = {}
        self._servers: dict[int, ThreadingHTTPServer] = {}
        port = self._listen(0)
        self.redirect_uri = f"http://127.0.0.1:{port}{path}"

    def _listen(self, port: int) -> int:
        receiver = self
        holder: list[int] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # the query holds the code: never printed

            def do_GET(self) -> None:
                delivered = receiver._deliver(f"http://127.0.0.1:{holder[0]}{self.path}")
                self.send_response(200 if delivered else 400)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                body = _PAGE if delivered else b"<p>No sign-in is waiting for this.</p>"
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        bound = int(server.server_address[1])
        holder.append(bound)
        with self._lock:
            self._servers[bound] = server
        threading.Thread(
            target=server.serve_forever, name="toolnexus-oauth-redirect", daemon=True
        ).start()
        return bound

    def _deliver(self, url: str) -> bool:
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        with self._lock:
            waiting = self._waiting.pop(state, None)
        if waiting is None:
            return False
        event, holder = waiting
        holder.append(url)
        event.set()
        return True

    def ask(self, request: Request) -> Answer:
        """Show the sign-in URL and wait for its redirect; the answer carries it."""
        url = request.url or ""
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        redirect = (request.data or {}).get("redirect_uri")
        if isinstance(redirect, str):
            parts = urlsplit(redirect)
            if parts.hostname in ("127.0.0.1", "localhost") and parts.port not in self._servers:
                try:
                    self._listen(parts.port or 80)
                except OSError as exc:
                    self._out.write(
                        f"toolnexus: cannot listen for the sign-in's redirect on {redirect} "
                        f"({exc.strerror or exc})\n"
                    )
                    return Answer(request.id, False, reason="declined")
        event = threading.Event()
        holder: list[str] = []
        with self._lock:
            self._waiting[state] = (event, holder)
        server = (request.data or {}).get("server", "an MCP server")
        self._out.write(
            f"toolnexus: {server} needs you to sign in. Open this URL in a browser:\n"
            f"  {url}\n"
            f"toolnexus: waiting for the sign-in (up to {self._timeout_s:g} s; Ctrl-C stops)\n"
        )
        self._out.flush()
        if not event.wait(self._timeout_s):
            with self._lock:
                self._waiting.pop(state, None)
            self._out.write("toolnexus: the sign-in did not come back in time\n")
            return Answer(request.id, False, reason="expired")
        return Answer(request.id, True, {"url": holder[0]})

    def close(self) -> None:
        """Stop listening."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.shutdown()
            server.server_close()
