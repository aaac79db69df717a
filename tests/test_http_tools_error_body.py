"""An error status is reported as ``HTTP <status>: <excerpt>`` however large its body:
only what the excerpt needs is read, so a 1 GiB error page neither costs 10 MiB of reading
nor turns into a size error that hides the status."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from timing import TIMEOUT
from toolnexus import http_tool

GIB = 1 << 30


class HugeErrorServer:
    """``/json``: 500 with ``Content-Length: 1 GiB`` of a JSON-ish text, written until the
    client goes away; ``/binary``: the same as ``application/octet-stream``. ``closed`` is
    set once the client has gone."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                binary = self.path == "/binary"
                self.send_response(500)
                kind = "application/octet-stream" if binary else "application/json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(GIB))
                self.end_headers()
                chunk = b'{"message": "database on fire", "trace": "' + b"a" * 65_000
                try:
                    for _ in range(GIB // len(chunk)):
                        self.wfile.write(chunk)
                except OSError:
                    owner.closed.set()
                self.close_connection = True

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def huge() -> Iterator[HugeErrorServer]:
    server = HugeErrorServer()
    try:
        yield server
    finally:
        server.stop()


def test_a_huge_error_body_keeps_its_status_and_is_an_excerpt(huge):
    result = http_tool(name="t", method="GET", url=huge.url + "/json")({})
    assert result.is_error
    assert result.metadata["status"] == 500
    assert result.output.startswith('HTTP 500: {"message": "database on fire", "trace": "aaa')
    assert result.output.endswith(f"… ({GIB} bytes in all)")
    assert "max_response_bytes" not in result.output
    # the reading stopped (the connection was closed) without waiting for the body
    assert huge.closed.wait(TIMEOUT)


def test_a_huge_binary_error_body_names_its_type_and_declared_size(huge):
    result = http_tool(name="t", method="GET", url=huge.url + "/binary")({})
    assert result.is_error
    assert result.output == f"HTTP 500: (application/octet-stream, {GIB} bytes in all)"


def test_an_error_body_past_max_response_bytes_still_reports_the_status(huge):
    small = http_tool(name="t", method="GET", url=huge.url + "/json", max_response_bytes=1000)
    result = small({})
    assert result.is_error
    assert result.metadata["status"] == 500
    assert result.output.startswith('HTTP 500: {"message": "database on fire"')
    assert result.output.endswith(f"… ({GIB} bytes in all)")
    assert "max_response_bytes" not in result.output
