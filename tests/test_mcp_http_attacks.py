"""The HTTP server on an open network: each attack of issue 23, against the embedded server
and, where it is the app's business and not the ASGI server's, against the ASGI app.

- idle sockets, silent sockets reopened, and clients that never read cannot keep a fresh
  client from being served;
- the bytes of requests in flight stay under the cap, and every client gets an HTTP answer;
- a network address without authentication refuses to start;
- a flood of ``initialize`` cannot lock a legacy client out, and one principal cannot use
  another's session;
- a head that is not clean HTTP/1.1 is refused; a token is compared as bytes;
- a half-closed client still gets its answer; a pipelined hang-up cancels the call; a
  cancelled legacy call's POST ends as the spec allows; running out of memory is a 503.

And the attacks of issue 36: request heads without a token that declare huge bodies, one-byte
connections filling the table, idle sockets from one address, and running out of file
descriptors (the server in a child process under a low ``RLIMIT_NOFILE``).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import queue
import random
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import child_env
from http_helpers import assert_ended_as_cancelled, headers_for, post, read_until_closed
from timing import TIMEOUT
from toolnexus import Principal, Toolkit, tool
from toolnexus._context import ToolContext
from toolnexus.mcp import AsgiApp, HttpServer, ProtectedResource, ServerOptions, asgi_app
from toolnexus.mcp._server import _http_server

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}

gate = threading.Event()  # what `held` waits for
arrived = threading.Semaphore(0)  # released by `held` as each call starts
cancelled = threading.Event()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def big(size: int) -> str:
    """Returns `size` characters."""
    return "x" * size


@tool
def held(data: str = "", ctx: ToolContext | None = None) -> int:
    """Waits for the test's gate (or a cancel); returns the size of what it was sent."""
    arrived.release()
    assert ctx is not None
    while not gate.wait(0.01):
        if ctx.is_cancelled:
            cancelled.set()
            break
    return len(data)


TOOLKIT = Toolkit([add, big, held])


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    gate.clear()
    cancelled.clear()
    while arrived.acquire(blocking=False):
        pass
    yield
    gate.set()  # nothing is left waiting


@contextlib.contextmanager
def serving(**options: Any) -> Iterator[HttpServer]:
    with HttpServer(TOOLKIT, ServerOptions(**options), port=0) as server:
        server.start()
        yield server


def call(name: str, arguments: dict[str, Any] | None = None, rid: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}, "_meta": META},
    }


def raw_request(message: dict[str, Any], extra: dict[str, str] | None = None) -> bytes:
    body = json.dumps(message).encode()
    fields = {"Host": "localhost", **headers_for(message, extra), "Content-Length": str(len(body))}
    head = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return b"POST /mcp HTTP/1.1\r\n" + head.encode() + b"\r\n" + body


def dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if not size:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return out


# --------------------------------------------------------------------------- starving


def test_idle_sockets_and_reopened_ones_leave_a_fresh_client_served() -> None:
    # 64 connections that send nothing, then 64 more in their place: before, each took
    # one of the 64 connection slots at accept and everyone else got 503 for 30 s.
    with serving() as server:
        host, port = server.address
        for _round in range(2):
            idle = [socket.create_connection((host, port), timeout=TIMEOUT) for _ in range(64)]
            try:
                status, _, body = post(server, call("add", {"a": 1, "b": 1}))
                assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "2"
            finally:
                for sock in idle:
                    sock.close()


def test_when_every_place_is_taken_the_oldest_idle_connection_makes_room() -> None:
    with serving(max_connections=8) as server:
        host, port = server.address
        idle = [socket.create_connection((host, port), timeout=TIMEOUT) for _ in range(8)]
        try:
            status, _, _ = post(server, call("add", {"a": 1, "b": 2}))
            assert status == 200
            assert read_until_closed(idle[0]) == b""  # the oldest made room: closed
        finally:
            for sock in idle:
                sock.close()


def test_when_every_place_is_mid_request_a_new_client_gets_503_with_retry_after() -> None:
    with serving(max_connections=2) as server:
        host, port = server.address
        sending = [socket.create_connection((host, port), timeout=TIMEOUT) for _ in range(2)]
        try:
            for sock in sending:  # a request under way: its head read, its body awaited
                sock.sendall(
                    b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json"
                    b"\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
                )
                assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
            with socket.create_connection((host, port), timeout=TIMEOUT) as late:
                reply = read_until_closed(late)
            assert reply.startswith(b"HTTP/1.1 503 ")
            assert b"retry-after: 1" in reply.lower()
        finally:
            for sock in sending:
                sock.close()


@pytest.mark.parametrize(("clients", "size", "workers"), [(64, 100, 64), (8, 8 << 20, 4)])
def test_clients_that_never_read_their_answers_leave_a_fresh_client_served(
    clients: int, size: int, workers: int
) -> None:
    # Clients each send one call and never read the answer — small ones (they used to hold
    # a connection slot each), and ones larger than the socket buffers, more of them than
    # there are workers: what does not fit is the loop's to write, so no worker is held,
    # until the send timeout drops the client.
    with serving(send_timeout_ms=60_000, max_requests=workers) as server:
        host, port = server.address
        readers_that_dont = []
        try:
            for n in range(clients):
                sock = socket.create_connection((host, port), timeout=TIMEOUT)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.sendall(raw_request(call("big", {"size": size}, rid=n)))
                readers_that_dont.append(sock)
            status, _, body = post(server, call("add", {"a": 2, "b": 2}))
            assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "4"
        finally:
            for sock in readers_that_dont:
                sock.close()


def test_a_client_that_does_not_read_is_dropped_at_the_send_timeout() -> None:
    with serving(send_timeout_ms=200) as server:
        host, port = server.address
        with socket.create_connection((host, port), timeout=TIMEOUT) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(raw_request(call("big", {"size": 16 << 20})))
            # Nothing read while the server waits: it drops the connection (it forgets
            # it), and reading now ends long before 16 MiB arrived.
            waited = 0.0
            while server._loop._conns and waited < TIMEOUT:
                threading.Event().wait(0.05)  # polling the server's table; no event to await
                waited += 0.05
            assert not server._loop._conns
            got = 0
            with contextlib.suppress(ConnectionResetError):
                while chunk := sock.recv(1 << 16):
                    got += len(chunk)
        assert got < 16 << 20


# --------------------------------------------------------------------------- memory


def test_concurrent_large_calls_stay_under_the_in_flight_cap_and_all_are_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 40 calls of 4 MiB each against a 64 MiB cap: before, the server held them all
    # (3.1 GB) and 13 clients got no answer. Now each body is counted before it is read:
    # the calls that fit run (and hold their bytes until they end), every other client is
    # told 503 "server overloaded" at once.
    # A refused client still sending its body is drained for _DISCARD_S (2 s) before the
    # close; on a starved machine a 4 MiB body can take longer to send, and the close then
    # resets the connection before the client reads its 503. The window is what this test
    # is not about: widen it.
    monkeypatch.setattr(_http_server, "_DISCARD_S", TIMEOUT)
    cap = 64 << 20
    message = call("held", {"data": "y" * (4 << 20)})
    fit = cap // len(json.dumps(message))  # 15 bodies of 4 MiB and a little
    with serving(max_inflight_bytes=cap) as server:
        statuses: list[int] = []
        answered = threading.Condition()

        def client(n: int) -> None:
            try:
                status, _, body = post(server, {**message, "id": n})
            except (OSError, http.client.HTTPException):
                status, body = -1, b""
            with answered:
                statuses.append(status)
                answered.notify_all()
            if status == 503:
                assert b"server overloaded" in body

        clients = [threading.Thread(target=client, args=(n,)) for n in range(40)]
        for thread in clients:
            thread.start()
        for _ in range(fit):  # the calls that fit started, and hold their bytes
            assert arrived.acquire(timeout=TIMEOUT)
        with answered:
            assert answered.wait_for(lambda: len(statuses) == 40 - fit, TIMEOUT)
            assert statuses == [503] * (40 - fit)
        assert server.endpoint.inflight[1] <= cap
        gate.set()
        for thread in clients:
            thread.join(TIMEOUT)
        assert sorted(statuses) == [200] * fit + [503] * (40 - fit)  # every client answered
        used, peak = server.endpoint.inflight
        assert peak <= cap and used == 0  # and every byte was given back


def test_the_asgi_app_counts_bodies_against_the_cap_before_reading_them() -> None:
    app = asgi_app(TOOLKIT, ServerOptions(max_inflight_bytes=1 << 20))
    message = call("held", {"data": "z" * (700 << 10)})

    async def run() -> list[int | None]:
        first = asyncio.ensure_future(asgi_post(app, message))
        await asyncio.get_running_loop().run_in_executor(None, arrived.acquire, True, TIMEOUT)
        second = await asgi_post(app, message)  # 2 x 700 KiB > 1 MiB
        gate.set()
        return [(await first)[0], second[0]]

    try:
        statuses = asyncio.run(run())
    finally:
        app.close()
    assert statuses == [200, 503]
    used, peak = app.endpoint.inflight
    assert used == 0 and peak <= 1 << 20


# --------------------------------------------------------------------------- exposure


def test_a_network_address_without_authentication_refuses_to_start() -> None:
    with pytest.raises(ValueError, match=r"refusing to serve '0\.0\.0\.0' without authentication"):
        HttpServer(TOOLKIT, port=0, host="0.0.0.0")
    # A token, a verifier or the explicit opt-out each let it start.
    for options in (
        ServerOptions(token="s3cret-token"),
        ServerOptions(verify_token=lambda token: False),
        ServerOptions(insecure_no_auth=True),
    ):
        HttpServer(TOOLKIT, options, port=0, host="0.0.0.0").shutdown()


def test_the_cli_refuses_a_network_address_without_a_token_and_says_how() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolnexus",
            "serve",
            "toolnexus.demo:toolkit",
            "--http",
            "0.0.0.0:0",
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert out.returncode == 2
    assert "--token-file" in out.stderr and "--insecure-no-auth" in out.stderr


@pytest.mark.parametrize("token", ["pässwort", "two words", "tab\there", "nul\x00"])
def test_a_token_no_header_can_carry_is_refused_when_the_options_are_built(token: str) -> None:
    with pytest.raises(ValueError, match="cannot be sent in an HTTP header"):
        ServerOptions(token=token)


# --------------------------------------------------------------------------- sessions


def initialize(rid: Any = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def legacy_client(server: HttpServer, token: str | None = None) -> str:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    status, headers, _ = post(server, initialize(), auth)
    assert status == 200
    session = headers["mcp-session-id"]
    assert post(server, INITIALIZED, {"Mcp-Session-Id": session, **auth})[0] == 202
    return session


def legacy_call(server: HttpServer, session: str, token: str | None = None) -> int:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
    }
    return post(server, message, {"Mcp-Session-Id": session, **auth})[0]


def test_a_flood_of_initialize_does_not_lock_a_legacy_client_out() -> None:
    # 1,000 initialize POSTs (never used) used to take every place for 30 minutes; ten
    # times the places shows the same (every place is taken over and over).
    places = 20
    with serving(max_sessions=places) as server:
        mine = legacy_client(server)
        assert legacy_call(server, mine) == 200
        for n in range(10 * places):
            assert post(server, initialize(n))[0] == 200
        assert legacy_call(server, mine) == 200  # the session in use survived
        fresh = legacy_client(server)  # and a new client is let in
        assert legacy_call(server, fresh) == 200
        assert server.endpoint.session_count <= places


def test_one_principal_cannot_use_another_principals_session() -> None:
    tokens = {"alice-token-123", "bob-token-4567"}
    with serving(verify_token=lambda token: token in tokens) as server:
        alices = legacy_client(server, "alice-token-123")
        assert legacy_call(server, alices, "bob-token-4567") == 404  # as if it did not exist
        assert legacy_call(server, alices, "alice-token-123") == 200
        host, port = server.address
        connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
        connection.request(
            "DELETE",
            "/mcp",
            headers={"Mcp-Session-Id": alices, "Authorization": "Bearer bob-token-4567"},
        )
        assert connection.getresponse().status == 404
        connection.close()
        assert legacy_call(server, alices, "alice-token-123") == 200


async def asgi_post(
    app: AsgiApp, message: dict[str, Any], extra: dict[str, str] | None = None
) -> tuple[int | None, dict[str, str], bytes]:
    body = json.dumps(message).encode()
    fields = {
        "host": "localhost",
        **{k.lower(): v for k, v in headers_for(message, extra).items()},
        "content-length": str(len(body)),
    }
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in fields.items()],
        "client": ("127.0.0.1", 50000),
    }
    delivered = False
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    await app(scope, receive, send)
    start = next(event for event in sent if event["type"] == "http.response.start")
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    payload = b"".join(e.get("body", b"") for e in sent if e["type"] == "http.response.body")
    return start["status"], headers, payload


def test_the_asgi_app_binds_sessions_to_their_principal_and_survives_a_flood() -> None:
    app = asgi_app(
        TOOLKIT,
        ServerOptions(verify_token=lambda t: t in ("alice-1234", "mallory-1"), max_sessions=20),
    )

    async def run() -> None:
        alice = {"Authorization": "Bearer alice-1234"}
        _, headers, _ = await asgi_post(app, initialize(), alice)
        session = headers["mcp-session-id"]
        await asgi_post(app, INITIALIZED, {"Mcp-Session-Id": session, **alice})
        use = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
        assert (await asgi_post(app, use, {"Mcp-Session-Id": session, **alice}))[0] == 200
        mallory = {"Authorization": "Bearer mallory-1"}
        assert (await asgi_post(app, use, {"Mcp-Session-Id": session, **mallory}))[0] == 404
        for n in range(300):
            assert (await asgi_post(app, initialize(n), mallory))[0] == 200
        assert (await asgi_post(app, use, {"Mcp-Session-Id": session, **alice}))[0] == 200

    try:
        asyncio.run(run())
    finally:
        app.close()


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "head",
    [
        b"GET /mcp HTTP/1.1\nHost: localhost\n\n",  # bare LF
        b"GET /mcp HTTP/1.1\r\nHost: localhost\nX: 1\r\n\r\n",  # one bare LF inside
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX Field: 1\r\n\r\n",  # space in a name
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX(y): 1\r\n\r\n",  # not a token
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX: a\x00b\r\n\r\n",  # NUL in a value
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX: a\rb\r\n\r\n",  # CR in a value
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX: a\x7fb\r\n\r\n",  # DEL in a value
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n folded\r\n\r\n",  # obsolete line folding
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n: no name\r\n\r\n",  # an empty field name
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX: 1\r\r\n\r\n",  # a CR before a CRLF
    ],
)
def test_a_head_that_is_not_strict_http_1_1_is_400_and_closed(head: bytes) -> None:
    with serving() as server, socket.create_connection(server.address, timeout=TIMEOUT) as sock:
        sock.sendall(head)
        reply = read_until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 400 ") or reply.startswith(b"HTTP/1.1 431 ")
    assert b"connection: close" in reply.lower()


def _fields_by_lines(data: bytes) -> dict[str, str] | None:
    """The fields of a head after its request line, read line by line as RFC 9110/9112
    word it (CRLF line ends, a token name and a colon, a value without control characters
    but HTAB), or None for a head to refuse: the rule the server's checks over the whole
    head must keep."""
    stripped = data.replace(b"\r\n", b"")
    if b"\r" in stripped or b"\n" in stripped:
        return None
    fields: dict[str, str] = {}
    for line in data.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or not set(name) <= _TCHAR:
            return None
        if any((c < 0x20 and c != 0x09) or c == 0x7F for c in value):
            return None
        key, text = name.decode().lower(), value.strip(b" \t").decode("latin-1")
        if key in fields:
            if key in _http_server.SINGLE_HEADERS:
                return None
            text = f"{fields[key]}, {text}"
        fields[key] = text
    return fields


_TCHAR = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def test_the_head_is_refused_exactly_when_a_line_by_line_reading_refuses_it() -> None:
    """The server checks a head's field lines by a search or two over the whole head. On
    thousands of heads mixing CR, LF, colons, controls, obs-text and names, it refuses
    the same heads (400), and reads the same fields, as the line-by-line rule."""
    names = [b"Host", b"X-Y", b"a", b"Mcp-Name", b"X(", b"", b"X Y", b" X"]
    values = [b" v", b"\t", b"a b", b"\xff", b":", b"", b"\x00", b"\x7f", b"\x0b", b"\r", b"\n"]
    chooser = random.Random(20261207)
    refused = read = 0
    for _ in range(20_000):
        lines = [
            chooser.choice(names[:4] * 8 + names)
            + chooser.choice([b":"] * 20 + [b"", b";"])
            + b"".join(
                chooser.choice(values[:6] * 12 + values) for _ in range(chooser.randint(0, 3))
            )
            for _ in range(chooser.randint(1, 4))
        ]
        data = b"GET /mcp HTTP/1.1\r\n" + b"\r\n".join(lines)
        expected = _fields_by_lines(data)
        try:
            fields = _http_server._parse_head(data)[2]
        except _http_server._Refused as exc:
            assert expected is None and exc.reply.status == 400, data
            refused += 1
        else:
            assert fields == expected, data
            read += 1
    assert refused > 1_000 and read > 1_000  # both kinds were tried, many times


def _post_bytes(server: HttpServer, body: bytes) -> tuple[int, Any]:
    """``body`` posted as it is (with a modern call's headers): the status and the JSON."""
    connection = http.client.HTTPConnection(*server.address, timeout=TIMEOUT)
    try:
        connection.request("POST", "/mcp", body, headers_for(call("add")))
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{not json", "parse error: not valid JSON"),
        (b"\xff\xfe{}", "parse error: the body is not UTF-8"),
        (json.dumps(call("add", {"a": float("nan"), "b": 1})).encode(), "NaN"),
        (json.dumps(call("add", {"a": float("inf"), "b": 1})).encode(), "Infinity"),
    ],
)
def test_a_body_that_is_not_utf8_json_is_a_parse_error_as_on_stdio(body: bytes, words: str) -> None:
    """The body is read by the wire's one JSON rule (the stdio transport's): UTF-8, no
    NaN or Infinity (JSON has no such numbers); the server goes on serving."""
    with serving() as server:
        status, answer = _post_bytes(server, body)
        assert status == 400 and answer["id"] is None
        assert answer["error"]["code"] == -32700 and words in answer["error"]["message"]
        assert post(server, call("add", {"a": 1, "b": 1}))[0] == 200


def test_a_body_that_starts_with_a_byte_order_mark_is_read() -> None:
    body = b"\xef\xbb\xbf" + json.dumps(call("add", {"a": 2, "b": 3})).encode()
    with serving() as server:
        status, answer = _post_bytes(server, body)
    assert status == 200 and answer["result"]["structuredContent"] == {"result": 5}


def test_a_token_is_compared_as_the_bytes_that_were_sent() -> None:
    with serving(token="ascii-only-token") as server:
        message = call("add", {"a": 1, "b": 1})
        assert post(server, message, {"Authorization": "Bearer ascii-only-token"})[0] == 200
        with socket.create_connection(server.address, timeout=TIMEOUT) as sock:
            # Latin-1 bytes that decode to the token's text with a twist are not the token.
            sock.sendall(
                raw_request(message, {"Authorization": "Bearer ascii-only-toke\xe9"}).replace(
                    "\xe9".encode(), b"\xe9"
                )
            )
            assert sock.recv(4096).startswith(b"HTTP/1.1 401 ")


# --------------------------------------------------------------------------- hang-ups


def test_a_client_that_half_closes_after_sending_still_gets_its_answer() -> None:
    with serving() as server, socket.create_connection(server.address, timeout=TIMEOUT) as sock:
        sock.sendall(raw_request(call("held", {"data": "abc"}), {"Accept": "application/json"}))
        assert arrived.acquire(timeout=TIMEOUT)
        sock.shutdown(socket.SHUT_WR)  # legal in HTTP/1.1: "I am done sending"
        gate.set()
        reply = read_until_closed(sock)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    if b"transfer-encoding: chunked" in head.lower():
        body = dechunk(body)
    assert json.loads(body)["result"]["content"][0]["text"] == "3"
    assert not cancelled.is_set()


def test_a_client_that_pipelines_a_request_and_hangs_up_cancels_its_call() -> None:
    with serving() as server:
        sock = socket.create_connection(server.address, timeout=TIMEOUT)
        sock.sendall(raw_request(call("held")) + raw_request(call("add", {"a": 1, "b": 1}, 2)))
        assert arrived.acquire(timeout=TIMEOUT)
        sock.close()
        assert cancelled.wait(TIMEOUT)


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "application/json"])
def test_a_cancelled_legacy_call_ends_its_post_as_the_spec_allows(accept: str) -> None:
    with serving() as server:
        session = legacy_client(server)
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


def test_running_out_of_memory_in_a_request_is_a_503_logged_at_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import toolnexus.mcp._server._endpoint as endpoint_module

    def exhausted(text: str) -> Any:
        raise MemoryError

    with serving() as server:
        monkeypatch.setattr(endpoint_module, "decode", exhausted)
        with caplog.at_level(logging.WARNING, logger="toolnexus"):
            status, _, body = post(server, call("add", {"a": 1, "b": 1}))
        monkeypatch.undo()
        assert status == 503 and b"out of memory" in body
        assert any(
            "out of memory" in r.getMessage() and r.levelno == logging.WARNING
            for r in caplog.records
        )
        assert post(server, call("add", {"a": 1, "b": 1}))[0] == 200  # and serving goes on


# --------------------------------------------------------------------------- keep-alive


def test_a_client_that_sends_head_and_body_apart_keeps_its_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kept-alive client's next request is waited for by the worker that answered the
    last one, also when its body comes after its head (as http.client sends them): no
    hand-over through the loop per request."""
    import toolnexus.mcp._server._http_server as _http_server

    handed: list[object] = []
    give_back = _http_server._Loop.give_back

    def counting(self: Any, conn: Any) -> None:
        handed.append(conn)
        give_back(self, conn)

    head_only = threading.Event()  # the server has read a head and waits for its body
    take_request = _http_server._Loop.take_request

    def watching(self: Any, conn: Any, on_worker: bool = False) -> Any:
        request = take_request(self, conn, on_worker)
        if request is None and conn.head is not None:
            head_only.set()
        return request

    monkeypatch.setattr(_http_server._Loop, "give_back", counting)
    monkeypatch.setattr(_http_server._Loop, "take_request", watching)
    with serving() as server, socket.create_connection(server.address, TIMEOUT) as sock:
        for i in range(20):
            head, _, body = raw_request(call("add", {"a": i, "b": 1}, rid=i)).partition(b"\r\n\r\n")
            head_only.clear()
            sock.sendall(head + b"\r\n\r\n")
            assert head_only.wait(TIMEOUT)  # the body comes once the head was read alone
            sock.sendall(body)
            response = http.client.HTTPResponse(sock)
            response.begin()
            assert response.status == 200
            answer = json.loads(response.read())
            assert answer["id"] == i
            assert answer["result"]["structuredContent"] == {"result": i + 1}
    # Before, every request went back through the loop (20 hand-overs); a worker waits
    # at most a quarter of a second, which a very busy machine may rarely outlast.
    assert len(handed) <= 5, len(handed)


# --------------------------------------------------------------------------- issue 36
#
# Each attack below runs while a fresh authenticated client asks for an answer: the design
# goal is that it gets one within 2 s (benchmarks aside, the tests only wait generously
# and assert that it was served).

TOKEN = "fresh-client-token"
AUTHORIZED = {"Authorization": f"Bearer {TOKEN}"}


def served(server: Any, a: int = 1, b: int = 1) -> bool:
    """A fresh authenticated client's call, answered with its result."""
    status, _, body = post(server, call("add", {"a": a, "b": b}), AUTHORIZED)
    return status == 200 and json.loads(body)["result"]["content"][0]["text"] == str(a + b)


def huge_tokenless_heads(address: tuple[str, int], count: int) -> list[tuple[socket.socket, bytes]]:
    """``count`` requests that declare a 16 MiB body, carry no token and send one byte of
    it; each with what the server said first (``100 Continue`` once it took the body on)."""
    attack = []
    for _ in range(count):
        sock = socket.create_connection(address, timeout=TIMEOUT)
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 16777216\r\nExpect: 100-continue\r\n\r\n"
        )
        first = sock.recv(4096)
        with contextlib.suppress(OSError):
            sock.sendall(b"{")
        attack.append((sock, first))
    return attack


def oauth_for(token: str) -> ProtectedResource:
    """OAuth with a verifier that knows one token (for http://localhost/mcp)."""
    resource = "http://localhost/mcp"

    def verify(presented: str) -> Principal | None:
        if presented != token:
            return None
        return Principal("alice", client_id="app", audience=(resource,))

    return ProtectedResource(
        authorization_servers=["https://login.example.com"], verifier=verify, resource=resource
    )


@pytest.mark.parametrize("check", ["token", "verify_token", "oauth"])
def test_request_heads_without_a_token_cannot_take_the_in_flight_bytes(check: str) -> None:
    # Four heads declaring 16 MiB each, without a token: before, each body was counted
    # against the 64 MiB in-flight cap as its head was read, before the token was looked
    # at, and every authenticated client got 503 "server overloaded" for 10 s a wave.
    # Now the head is authenticated first: they are told 401, and hold nothing.
    options: dict[str, Any] = {
        "token": {"token": TOKEN},
        "verify_token": {"verify_token": lambda t: t == TOKEN},
        "oauth": {"auth": oauth_for(TOKEN)},
    }[check]
    with serving(**options) as server:
        attack = huge_tokenless_heads(server.address, 4)
        try:
            assert served(server)
            assert all(first.startswith(b"HTTP/1.1 401 ") for _, first in attack)
            assert server.endpoint.inflight[1] < 1 << 20  # never their 16 MiB
        finally:
            for sock, _ in attack:
                sock.close()


def test_a_head_without_a_token_is_refused_before_100_continue() -> None:
    # A client that waits for 100 Continue learns it may not send instead.
    with serving(token=TOKEN) as server:
        ((sock, first),) = huge_tokenless_heads(server.address, 1)
        with sock:
            assert first.startswith(b"HTTP/1.1 401 ") and b"100 Continue" not in first


def started_requests(server: HttpServer, count: int) -> bool:
    """Wait until the server has read the first bytes of ``count`` requests."""
    waited = 0.0
    while waited < TIMEOUT:
        with server._loop._lock:
            if sum(1 for c in server._loop._conns.values() if c.started) >= count:
                return True
        threading.Event().wait(0.02)  # polling the server's table; no event to await
        waited += 0.02
    return False


def test_one_byte_connections_filling_the_table_leave_a_fresh_client_served() -> None:
    # 4 addresses x 8 connections (the table's 32 places) that send one byte of a request
    # head and nothing more: before, they held every place until the request timeout (10 s)
    # and a new client got 503. A connection that has not finished its head makes room.
    with serving(token=TOKEN, max_connections=32, max_connections_per_peer=8) as server:
        host, port = server.address
        loris = []
        try:
            for n in range(32):
                sock = socket.socket()
                sock.settimeout(TIMEOUT)
                sock.bind((f"127.0.0.{2 + n % 4}", 0))
                sock.connect((host, port))
                sock.sendall(b"P")
                loris.append(sock)
            assert started_requests(server, 32)
            assert served(server)
        finally:
            for sock in loris:
                sock.close()


def test_a_request_head_must_arrive_within_the_first_byte_timeout() -> None:
    # A slow head is cut at the (shorter) first-byte timeout, not the request timeout.
    with serving(first_byte_timeout_ms=300, request_timeout_ms=60_000) as server:
        with socket.create_connection(server.address, timeout=TIMEOUT) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: loc")
            reply = read_until_closed(sock)  # far before 60 s (or our 30 s)
        assert reply.startswith(b"HTTP/1.1 408 ")


def test_idle_connections_from_one_address_do_not_count_against_it() -> None:
    # Many idle sockets from one address (a NAT, a pool of keep-alive connections): before,
    # each counted against max_connections_per_peer and the address got 503. Only requests
    # in progress count now.
    with serving(token=TOKEN, max_connections_per_peer=8) as server:
        idle = [socket.create_connection(server.address, timeout=TIMEOUT) for _ in range(20)]
        try:
            assert served(server)
        finally:
            for sock in idle:
                sock.close()


def test_requests_in_progress_from_one_address_are_capped() -> None:
    with serving(max_connections_per_peer=2) as server:
        busy = [socket.create_connection(server.address, timeout=TIMEOUT) for _ in range(2)]
        try:
            for n, sock in enumerate(busy):
                sock.sendall(raw_request(call("held", rid=n)))
                assert arrived.acquire(timeout=TIMEOUT)
            status, headers, body = post(server, call("add", {"a": 1, "b": 1}))
            assert status == 503 and headers["retry-after"] == "1"
            assert b"too many requests from your address" in body
        finally:
            gate.set()
            for sock in busy:
                sock.close()


class LimitedServer:
    """The embedded server in a child process under a low ``RLIMIT_NOFILE``
    (tests/fd_limit_server.py), driven line by line."""

    def __init__(self, limit: int, logs: bool) -> None:
        script = str(Path(__file__).with_name("fd_limit_server.py"))
        mode = "logging" if logs else "no-logging"
        self.process = subprocess.Popen(
            [sys.executable, script, str(limit), TOKEN, mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        word, port = self.answer().split()
        assert word == "port"
        self.address = ("127.0.0.1", int(port))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put("(exited)")

    def answer(self) -> str:
        return self.lines.get(timeout=TIMEOUT)

    def tell(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.answer()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait(TIMEOUT)


def test_the_connection_cap_stays_below_the_file_descriptor_limit() -> None:
    # 300 idle connections without a token, from 4 addresses, at RLIMIT_NOFILE=256: before,
    # the server took 256 per address and 1,024 in all, so accept() ran out of descriptors;
    # the warning's first `import logging` then failed and ended the loop (the server no
    # longer listened). Now the cap stays below the limit and the oldest idle connection
    # makes room: the fresh client is served, and the loop still runs.
    server = LimitedServer(256, logs=False)
    idle = []
    try:
        for n in range(300):
            sock = socket.socket()
            sock.settimeout(TIMEOUT)
            sock.bind((f"127.0.0.{2 + n % 4}", 0))
            sock.connect(server.address)
            idle.append(sock)
        assert served(server)
        assert server.tell("end") == "alive"
    finally:
        for sock in idle:
            sock.close()
        server.close()


@pytest.mark.parametrize("logs", [False, True], ids=["logging-not-loaded", "logging-loaded"])
def test_the_server_survives_running_out_of_file_descriptors(logs: bool) -> None:
    # The rest of the program holds every descriptor while a client connects: accept()
    # fails with EMFILE. Before, with logging not loaded yet, the warning's import failed
    # and ended the loop; with logging loaded, the loop spun and logged ~12,000 lines a
    # second. Now each failure pauses accepting (the listener leaves the selector; one
    # warning that says so), and the client is served once descriptors are free again.
    server = LimitedServer(256, logs=logs)
    try:
        assert server.tell("hog") == "hogged"
        with socket.create_connection(server.address, timeout=TIMEOUT) as sock:
            sock.sendall(raw_request(call("add", {"a": 2, "b": 3}), AUTHORIZED))
            word, failures, pauses = server.tell("hold 3").split()
            response = http.client.HTTPResponse(sock)
            response.begin()
            assert response.status == 200
            assert json.loads(response.read())["result"]["content"][0]["text"] == "5"
        assert word == "freed" and int(failures) >= 3
        # Every failed accept() paused accepting and said so (once), instead of spinning;
        # without logging loaded nothing was written (and nothing was imported to write).
        assert int(pauses) == (int(failures) if logs else 0)
        assert served(server)
        assert server.tell("end") == "alive"
    finally:
        server.close()
