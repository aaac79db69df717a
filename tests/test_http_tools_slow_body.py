"""A response body that arrives slowly (one byte at a time, on a kept-alive connection
with a ``Content-Length``) is cut at the call's deadline, or by a cancel, with a clean
error result naming the tool — never a crash of http.client's bookkeeping logged as the
tool raising (the deadline's or the cancel's thread used to close the response while the
call's thread was reading it)."""

from __future__ import annotations

import http.server
import logging
import threading
from collections.abc import Iterator

import pytest

from timing import TIMEOUT
from toolnexus import CancellationTokenSource, Host, ToolContext, Toolkit, http_tool

# A deadline these tests wait out on purpose: the body never completes.
DRIP_MS = 700


class DripServer:
    """Answers 200 with ``Content-Length: 1000000`` (HTTP/1.1, kept alive), then one byte
    of it every 20 ms until the client goes away. ``started`` is set once the first byte
    of the body is sent, ``closed`` once the client has gone."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.closed = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                pace = threading.Event()  # never set: the pace between bytes, not a sync
                try:
                    while True:
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        owner.started.set()
                        pace.wait(0.02)
                except OSError:
                    owner.closed.set()
                self.close_connection = True

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/drip"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def drip() -> Iterator[DripServer]:
    server = DripServer()
    try:
        yield server
    finally:
        server.stop()


def _crashes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Log records that report a tool raising (or any traceback)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.exc_info is not None or "raised" in record.getMessage()
    ]


def test_a_host_deadline_cuts_a_dripping_body_cleanly(drip, caplog):
    tool = http_tool(name="drip", method="GET", url=drip.url)
    with caplog.at_level(logging.DEBUG, logger="toolnexus"), Host(Toolkit([tool])) as host:
        result = host.call("drip", {}, timeout_ms=DRIP_MS)
    assert result.is_error
    assert "http tool 'drip'" in result.output
    assert "within the call's budget" in result.output
    assert "NoneType" not in result.output
    assert drip.closed.wait(TIMEOUT)
    assert _crashes(caplog) == []


def test_a_direct_call_with_a_deadline_cuts_a_dripping_body_cleanly(drip, caplog):
    tool = http_tool(name="drip", method="GET", url=drip.url)
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        result = tool({}, ToolContext(timeout_ms=DRIP_MS))
    assert result.is_error
    assert result.metadata["timedOut"] is True
    assert "http tool 'drip'" in result.output
    assert drip.closed.wait(TIMEOUT)
    assert _crashes(caplog) == []


def test_a_cancel_while_the_body_drips_is_a_clean_cancelled_result(drip, caplog):
    tool = http_tool(name="drip", method="GET", url=drip.url)
    source = CancellationTokenSource()
    results = []
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        worker = threading.Thread(
            target=lambda: results.append(tool({}, ToolContext(cancellation_token=source.token))),
            daemon=True,
        )
        worker.start()
        assert drip.started.wait(TIMEOUT)  # the body is being read
        source.cancel()
        worker.join(TIMEOUT)
    assert not worker.is_alive(), "the call outlived its cancel"
    (result,) = results
    assert result.is_error
    assert result.output == "http tool 'drip': cancelled; the connection was closed"
    assert drip.closed.wait(TIMEOUT)
    assert _crashes(caplog) == []


def test_a_call_stopped_from_another_thread_keeps_its_tls_state_and_sends_nothing_in_clear():
    # The deadline's or a cancel's thread wakes a blocked exchange by shutting its socket
    # down. SSLSocket.shutdown drops the TLS state first: a send in the exchange's thread
    # meanwhile would go out unencrypted. The plain socket's shutdown keeps it.
    import socket
    import ssl

    from toolnexus._http_tools import _Connection

    ours, theirs = socket.socketpair()
    wrapped = ssl.create_default_context().wrap_socket(
        ours, server_hostname="example.com", do_handshake_on_connect=False
    )
    try:
        _Connection._shut(wrapped)
        assert wrapped._sslobj is not None  # a later send still goes through TLS (or fails)
        assert theirs.recv(1) == b""  # and the peer sees the end at once
    finally:
        wrapped.close()
        theirs.close()
