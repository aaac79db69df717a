"""The attacks of issue 23 that are the app's business, against the ASGI app under uvicorn.

Connections, timeouts and HTTP parsing belong to the ASGI server there; what the app
keeps — the in-flight byte cap, legacy sessions bound to their principal and surviving a
flood of ``initialize``, a cancelled call's POST ending as the spec allows, tokens compared
as bytes — is checked here over real HTTP, as tests/test_mcp_http_attacks.py checks it on
the embedded server.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from extras import require
from http_helpers import assert_ended_as_cancelled, post, read_until
from timing import TIMEOUT

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "http", "uvicorn")

import uvicorn  # noqa: E402

from test_mcp_http_attacks import (  # noqa: E402
    INITIALIZED,
    TOKEN,
    TOOLKIT,
    arrived,
    call,
    cancelled,
    gate,
    huge_tokenless_heads,
    initialize,
    raw_request,
    served,
)
from toolnexus.mcp import AsgiApp, ServerOptions, asgi_app  # noqa: E402


class Running:
    """The ASGI app served by uvicorn on a thread (what the attack tests' helpers need)."""

    def __init__(self, app: AsgiApp, port: int) -> None:
        self.app = app
        self.endpoint = app.endpoint
        self.address = ("127.0.0.1", port)


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    gate.clear()
    cancelled.clear()
    while arrived.acquire(blocking=False):
        pass
    yield
    gate.set()


@contextlib.contextmanager
def under_uvicorn(**options: Any) -> Iterator[Running]:
    app = asgi_app(TOOLKIT, ServerOptions(**options))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    waited = 0.0
    while not server.started and thread.is_alive() and waited < TIMEOUT:
        threading.Event().wait(0.02)  # uvicorn has no event to await for "listening"
        waited += 0.02
    assert server.started, "uvicorn did not start"
    try:
        yield Running(app, port)
    finally:
        server.should_exit = True
        thread.join(TIMEOUT)


def test_under_uvicorn_concurrent_large_calls_stay_under_the_in_flight_cap() -> None:
    cap = 16 << 20
    message = call("held", {"data": "y" * (4 << 20)})
    fit = cap // len(json.dumps(message))
    with under_uvicorn(max_inflight_bytes=cap) as server:
        statuses: list[int] = []
        answered = threading.Condition()

        def client(n: int) -> None:
            status, _, _ = post(server, {**message, "id": n})
            with answered:
                statuses.append(status)
                answered.notify_all()

        clients = [threading.Thread(target=client, args=(n,)) for n in range(12)]
        for thread in clients:
            thread.start()
        for _ in range(fit):
            assert arrived.acquire(timeout=TIMEOUT)
        with answered:
            assert answered.wait_for(lambda: len(statuses) == 12 - fit, TIMEOUT)
            assert statuses == [503] * (12 - fit)
        gate.set()
        for thread in clients:
            thread.join(TIMEOUT)
        assert sorted(statuses) == [200] * fit + [503] * (12 - fit)
        used, peak = server.endpoint.inflight
        assert used == 0 and peak <= cap


def test_under_uvicorn_a_flood_of_initialize_does_not_lock_a_legacy_client_out() -> None:
    with under_uvicorn(max_sessions=30) as server:
        _, headers, _ = post(server, initialize())
        session = headers["mcp-session-id"]
        post(server, INITIALIZED, {"Mcp-Session-Id": session})
        use = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
        assert post(server, use, {"Mcp-Session-Id": session})[0] == 200
        for n in range(300):
            assert post(server, initialize(n))[0] == 200
        assert post(server, use, {"Mcp-Session-Id": session})[0] == 200
        assert server.endpoint.session_count <= 30


def test_under_uvicorn_one_principal_cannot_use_another_principals_session() -> None:
    tokens = {"alice-token-123", "bob-token-4567"}
    with under_uvicorn(verify_token=lambda token: token in tokens) as server:
        alice = {"Authorization": "Bearer alice-token-123"}
        _, headers, _ = post(server, initialize(), alice)
        session = headers["mcp-session-id"]
        post(server, INITIALIZED, {"Mcp-Session-Id": session, **alice})
        use = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
        bob = {"Authorization": "Bearer bob-token-4567"}
        assert post(server, use, {"Mcp-Session-Id": session, **bob})[0] == 404
        assert post(server, use, {"Mcp-Session-Id": session, **alice})[0] == 200


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "application/json"])
def test_under_uvicorn_a_cancelled_legacy_call_ends_its_post_as_the_spec_allows(
    accept: str,
) -> None:
    with under_uvicorn() as server:
        _, headers, _ = post(server, initialize())
        session = headers["mcp-session-id"]
        post(server, INITIALIZED, {"Mcp-Session-Id": session})
        answers: list[tuple[int, dict[str, str], bytes]] = []
        message = {
            "jsonrpc": "2.0",
            "id": "c-1",
            "method": "tools/call",
            "params": {"name": "held", "arguments": {}},
        }

        def caller() -> None:
            answers.append(post(server, message, {"Mcp-Session-Id": session, "Accept": accept}))

        thread = threading.Thread(target=caller)
        thread.start()
        assert arrived.acquire(timeout=TIMEOUT)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "c-1"},
        }
        assert post(server, cancel, {"Mcp-Session-Id": session})[0] == 202
        thread.join(TIMEOUT)
    (reply,) = answers
    assert_ended_as_cancelled(reply, accept, "c-1")


def test_under_uvicorn_a_token_is_compared_as_the_bytes_that_were_sent() -> None:
    with under_uvicorn(token="ascii-only-token") as server:
        message = call("add", {"a": 1, "b": 1})
        assert post(server, message, {"Authorization": "Bearer ascii-only-token"})[0] == 200
        with socket.create_connection(server.address, timeout=TIMEOUT) as sock:
            sock.sendall(
                raw_request(message, {"Authorization": "Bearer ascii-only-toke\xe9"}).replace(
                    "\xe9".encode(), b"\xe9"
                )
            )
            assert sock.recv(4096).startswith(b"HTTP/1.1 401 ")


# --------------------------------------------------------------------------- issue 36


def test_under_uvicorn_request_heads_without_a_token_cannot_take_the_in_flight_bytes() -> None:
    # Before, the app counted a declared 16 MiB body against the cap and waited for it
    # before the token was checked: four such sockets answered everyone 503 for as long as
    # they stayed open (the ASGI server has no body timeout of its own).
    with under_uvicorn(token=TOKEN) as server:
        attack = huge_tokenless_heads(server.address, 4)
        try:
            assert served(server)
            assert all(first.startswith(b"HTTP/1.1 401 ") for _, first in attack)
            assert server.endpoint.inflight[1] < 1 << 20
        finally:
            for sock, _ in attack:
                sock.close()


def test_under_uvicorn_a_body_that_does_not_come_in_time_is_408_and_gives_its_bytes_back() -> None:
    # An authenticated client that declares a body and sends one byte of it: before, its
    # bytes stayed counted (and the request open) for as long as the socket stayed open.
    with under_uvicorn(token=TOKEN, request_timeout_ms=300) as server:
        with socket.create_connection(server.address, timeout=TIMEOUT) as sock:
            sock.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
                b"Content-Length: 16777216\r\nExpect: 100-continue\r\n\r\n"
            )
            assert sock.recv(4096).startswith(b"HTTP/1.1 100 ")
            sock.sendall(b"{")
            assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 408 ")
        assert server.endpoint.inflight[0] == 0
        assert served(server)
