"""A small REST API on the standard library's HTTP server, for the HTTP tool and OpenAPI
tests: it records every request it gets and answers each path as the route table says.

Routes (any method):

- ``/echo...``: 200 with a JSON object of what it got: method, path, query (a dict of
  lists), headers (names in lower case), body text, and ``json`` (the body parsed, or None);
- ``/fail``: 500 with a JSON error body; ``/html``: 502 with an HTML page;
- ``/missing``: 404 with the text ``nope``;
- ``/png``: 200 with a few bytes of ``image/png``; ``/text``: 200 ``text/plain``;
- ``/huge``: 200 and bytes without end (in chunks, until the client goes away);
- ``/hang``: reads the request, then waits until the client closes the connection, and
  records that it saw the close in ``closed`` (an Event);
- ``/trickle``: 200 and then one byte every 50 ms, without end (until the client goes
  away, which it records in ``closed``);
- ``/redirect/N``: 302 to ``/redirect/N-1``, and ``/redirect/0`` to ``/echo``;
- ``/elsewhere``: 302 to the ``other`` server's ``/echo`` (another origin);
- any path in ``documents``: 200 with those bytes (an OpenAPI document to read by URL).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.parse
from typing import Any

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))


class RestServer:
    """The server on a free port of 127.0.0.1, in a thread; ``stop()`` ends it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.arrived = threading.Event()  # a /hang request was read
        self.closed = threading.Event()  # ...and its client closed the connection
        self.other: RestServer | None = None
        self.documents: dict[str, bytes] = {}
        handler = type("Handler", (_Handler,), {"owner": self})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    owner: RestServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, content_type: str, **extra: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        parts = urllib.parse.urlsplit(self.path)
        seen = {
            "method": self.command,
            "path": parts.path,
            "raw_path": self.path,
            "query": urllib.parse.parse_qs(parts.query),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
        }
        try:
            seen["json"] = json.loads(body) if body else None
        except ValueError:
            seen["json"] = None
        self.owner.requests.append(seen)
        path = parts.path
        if path in self.owner.documents:
            self._answer(200, self.owner.documents[path], "application/json")
        elif path.startswith("/echo"):
            self._answer(200, json.dumps(seen).encode(), "application/json")
        elif path == "/fail":
            self._answer(500, b'{"message": "database on fire"}', "application/json")
        elif path == "/html":
            page = b"<html><head><style>p{}</style></head><body><h1>Bad Gateway</h1></body></html>"
            self._answer(502, page, "text/html; charset=utf-8")
        elif path == "/missing":
            self._answer(404, b"nope", "text/plain")
        elif path == "/png":
            self._answer(200, PNG, "image/png")
        elif path == "/text":
            self._answer(200, "héllo".encode(), "text/plain; charset=utf-8")
        elif path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                while True:
                    self.wfile.write(chunk)
            except OSError:
                return
        elif path == "/hang":
            self.owner.arrived.set()
            # A read returns b"" (or fails) only once the client has closed its end.
            with contextlib.suppress(OSError):
                self.rfile.read(1)
            self.owner.closed.set()
            self.close_connection = True
        elif path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            pause = threading.Event()  # never set: a pause between bytes, not a sync
            try:
                while True:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    pause.wait(0.05)
            except OSError:
                self.owner.closed.set()
        elif path.startswith("/redirect/"):
            left = int(path.rsplit("/", 1)[1])
            target = "/echo" if left == 0 else f"/redirect/{left - 1}"
            self._answer(302, b"", "text/plain", Location=target)
        elif path == "/elsewhere":
            assert self.owner.other is not None
            self._answer(302, b"", "text/plain", Location=self.owner.other.url + "/echo")
        else:
            self._answer(404, b"no route", "text/plain")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any
