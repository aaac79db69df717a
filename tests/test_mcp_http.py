"""The embedded Streamable HTTP server (``toolnexus.mcp._server._http_server``): both eras
on ``/mcp``, the header rules, security, limits and a client that goes away."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from http_helpers import (
    exchange_raw,
    post,
    raw_request,
    read_until,
    read_until_closed,
    sse_events,
)
from toolnexus import Request, Toolkit, ToolResult, tool
from toolnexus._context import ToolContext
from toolnexus.mcp import HttpServer, ServerOptions

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
cancelled = threading.Event()
started = threading.Event()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def steps(ctx: ToolContext) -> str:
    """Reports progress twice and logs once."""
    ctx.report_progress(1, 2)
    ctx.report_log("info", "halfway")
    ctx.report_progress(2, 2)
    return "done"


@tool
def waits(ctx: ToolContext) -> str:
    """Waits until cancelled."""
    started.set()
    if ctx.cancellation_token.wait(30):
        cancelled.set()
        return "cancelled"
    return "never cancelled"


@tool
def asks(ctx: ToolContext) -> ToolResult:
    """Asks for an environment."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "Which env?",
                id="env",
                data={
                    "schema": {
                        "type": "object",
                        "properties": {"env": {"type": "string"}},
                        "required": ["env"],
                    }
                },
            )
        )
    return ToolResult.ok(f"deployed to {(ctx.answer.data or {}).get('env')}")


@tool
def big(size: int) -> str:
    """Returns `size` characters."""
    return "x" * size


@tool
def odd_log(ctx: ToolContext) -> str:
    """Logs a value JSON has no form for, then logs and answers as usual."""
    ctx.report_log("info", {"a", "set"})
    ctx.report_log("info", "after")
    return "done"


TOOLKIT = Toolkit([add, steps, waits, asks, big, odd_log])


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    # One server for the module: every test opens its own connections (and sessions).
    with HttpServer(
        TOOLKIT, ServerOptions(request_timeout_ms=500, grace_ms=500), port=0
    ) as running:
        running.start()
        yield running


def call(
    name: str, arguments: dict[str, Any] | None = None, rid: int = 1, **meta: Any
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}, "_meta": {**META, **meta}},
    }


def test_a_modern_call_is_answered_as_one_json_body(server: HttpServer) -> None:
    status, headers, body = post(server, call("add", {"a": 2, "b": 3}))
    assert status == 200
    assert headers["content-type"] == "application/json"
    result = json.loads(body)["result"]
    assert result["content"] == [{"type": "text", "text": "5"}]
    assert result["resultType"] == "complete"


def test_progress_and_asked_for_logs_turn_the_response_into_an_event_stream(
    server: HttpServer,
) -> None:
    message = call("steps", progressToken="p", **{"io.modelcontextprotocol/logLevel": "info"})
    status, headers, body = post(server, message)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    sent = sse_events(body)
    assert [m.get("method") for m in sent] == [
        "notifications/progress",
        "notifications/message",
        "notifications/progress",
        None,
    ]
    assert sent[1]["params"] == {"level": "info", "data": "halfway"}
    assert sent[-1]["result"]["content"][0]["text"] == "done"


def test_a_log_that_cannot_be_encoded_is_left_out_of_the_stream(server: HttpServer) -> None:
    # Send.to_bytes() gives b"" for it (logged): no empty event, no stray error.
    message = call("odd_log", **{"io.modelcontextprotocol/logLevel": "info"})
    status, headers, body = post(server, message)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert body.count(b"data: ") == 2
    sent = sse_events(body)
    assert [m.get("method") for m in sent] == ["notifications/message", None]
    assert sent[0]["params"]["data"] == "after"
    assert sent[1]["id"] == 1 and sent[1]["result"]["content"][0]["text"] == "done"


def test_logs_nobody_asked_for_are_not_sent(server: HttpServer) -> None:
    _, _, body = post(server, call("steps"))
    assert json.loads(body)["result"]["content"][0]["text"] == "done"


@pytest.mark.parametrize(
    "header, value",
    [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Method", "tools/list"),
        ("Mcp-Name", "steps"),
    ],
)
def test_a_routing_header_that_disagrees_with_the_body_is_400_header_mismatch(
    server: HttpServer, header: str, value: str
) -> None:
    status, _, body = post(server, call("add", {"a": 1, "b": 1}, rid=7), {header: value})
    error = json.loads(body)
    assert status == 400
    assert error["id"] == 7 and error["error"]["code"] == -32020
    assert header.split("-")[-1].lower() in error["error"]["message"].lower()


def test_modern_errors_travel_with_their_http_status(server: HttpServer) -> None:
    unknown = {"jsonrpc": "2.0", "id": 2, "method": "nope/nope", "params": {"_meta": META}}
    status, _, body = post(server, unknown)
    assert status == 404 and json.loads(body)["error"]["code"] == -32601
    version = {**META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}
    old = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": version}}
    status, _, body = post(server, old, {"MCP-Protocol-Version": "1999-01-01"})
    assert status == 400 and json.loads(body)["error"]["code"] == -32022
    no_meta = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}
    status, _, body = post(
        server, no_meta, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
    )
    assert status == 400 and json.loads(body)["error"]["code"] == -32602


def test_a_modern_suspension_is_input_required_and_the_retry_completes(
    server: HttpServer,
) -> None:
    meta = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    _, _, body = post(server, call("asks", **meta))
    first = json.loads(body)["result"]
    assert first["resultType"] == "input_required"
    retry = call("asks", **meta)
    retry["params"]["requestState"] = first["requestState"]
    retry["params"]["inputResponses"] = {"env": {"action": "accept", "content": {"env": "dev"}}}
    _, _, body = post(server, retry)
    assert json.loads(body)["result"]["content"][0]["text"] == "deployed to dev"


def legacy_session(server: HttpServer) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    status, headers, body = post(server, init)
    assert status == 200 and json.loads(body)["result"]["protocolVersion"] == "2025-11-25"
    session = headers["mcp-session-id"]
    assert all(0x21 <= ord(char) <= 0x7E for char in session)
    status, _, _ = post(
        server,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"Mcp-Session-Id": session},
    )
    assert status == 202
    return session


def test_a_legacy_session_lives_until_delete(server: HttpServer) -> None:
    session = legacy_session(server)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
    status, _, body = post(server, message, {"Mcp-Session-Id": session})
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "3"
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session})
    assert connection.getresponse().status == 204
    connection.close()
    status, _, _ = post(server, message, {"Mcp-Session-Id": session})
    assert status == 404


def test_a_legacy_question_goes_out_on_the_post_stream_and_the_answer_comes_back(
    server: HttpServer,
) -> None:
    session = legacy_session(server)
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request(
        "POST",
        "/mcp",
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "asks"}}),
        {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": session,
        },
    )
    response = connection.getresponse()
    assert response.getheader("content-type") == "text/event-stream"
    received = b""
    while b"\n\n" not in received:  # the first event: the question
        received += response.read1(65536)
    question = sse_events(received)[0]
    assert question["method"] == "elicitation/create"
    answer = {
        "jsonrpc": "2.0",
        "id": question["id"],
        "result": {"action": "accept", "content": {"env": "prod"}},
    }
    status, _, _ = post(server, answer, {"Mcp-Session-Id": session})
    assert status == 202
    rest = sse_events(response.read())
    assert rest[-1]["id"] == 9
    assert rest[-1]["result"]["content"][0]["text"] == "deployed to prod"
    connection.close()


def test_get_without_a_session_has_no_stream(server: HttpServer) -> None:
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
    response = connection.getresponse()
    assert response.status == 405
    assert b"subscriptions/listen" in response.read()
    connection.close()


# --------------------------------------------------------------------------- security


@pytest.mark.parametrize("origin", ["http://evil.example.com", "null", "https://localhost.evil"])
def test_a_foreign_origin_is_forbidden(server: HttpServer, origin: str) -> None:
    status, _, _ = post(server, call("add", {"a": 1, "b": 1}), {"Origin": origin})
    assert status == 403


def test_a_localhost_origin_is_accepted(server: HttpServer) -> None:
    status, _, _ = post(server, call("add", {"a": 1, "b": 1}), {"Origin": "http://localhost:5173"})
    assert status == 200


def test_a_foreign_host_header_is_refused_against_dns_rebinding(server: HttpServer) -> None:
    status, _, _ = post(server, call("add", {"a": 1, "b": 1}), {"Host": "evil.example.com"})
    assert 400 <= status < 500


def test_an_allowed_host_and_origin_are_accepted() -> None:
    with HttpServer(
        TOOLKIT,
        ServerOptions(
            allowed_hosts=["tools.example.com"], allowed_origins=["https://app.example.com"]
        ),
        port=0,
    ) as server:
        server.start()
        status, _, _ = post(
            server,
            call("add", {"a": 1, "b": 1}),
            {"Host": "tools.example.com:443", "Origin": "https://app.example.com"},
        )
        assert status == 200


def test_a_missing_or_wrong_token_is_401_and_never_echoed() -> None:
    secret_token = "s3cr3t-t0ken-value"
    with HttpServer(TOOLKIT, ServerOptions(token=secret_token), port=0) as server:
        server.start()
        status, headers, _ = post(server, call("add", {"a": 1, "b": 1}))
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        wrong = "Bearer wrong-" + secret_token
        status, _, body = post(server, call("add", {"a": 1, "b": 1}), {"Authorization": wrong})
        assert status == 401
        assert secret_token.encode() not in body and b"wrong-" not in body
        status, _, _ = post(
            server, call("add", {"a": 1, "b": 1}), {"Authorization": f"Bearer {secret_token}"}
        )
        assert status == 200


def test_a_caller_supplied_verifier_decides() -> None:
    seen: list[str] = []

    def verify(token: str) -> bool:
        seen.append(token)
        return token == "from-my-idp"

    with HttpServer(TOOLKIT, ServerOptions(verify_token=verify), port=0) as server:
        server.start()
        assert (
            post(server, call("add", {"a": 1, "b": 1}), {"Authorization": "Bearer nope"})[0] == 401
        )
        assert (
            post(server, call("add", {"a": 1, "b": 1}), {"Authorization": "Bearer from-my-idp"})[0]
            == 200
        )
    assert seen == ["nope", "from-my-idp"]


# --------------------------------------------------------------------------- limits


def test_an_oversized_body_is_413_without_being_read() -> None:
    with HttpServer(TOOLKIT, ServerOptions(max_message_bytes=1024), port=0) as server:
        server.start()
        host, port = server.address
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"
            )
            reply = b""
            while chunk := sock.recv(4096):  # the server answers, then closes
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 413")
        assert b"the limit is 1024 bytes" in reply


def test_an_oversized_body_sent_by_an_ordinary_client_gets_its_413() -> None:
    # http.client writes the whole body before it reads the answer: the server must read
    # and discard it (not close on it, which resets the connection) so the 413 arrives.
    # A short request timeout: the reaper must not cut the discarding of the body either.
    with HttpServer(
        TOOLKIT, ServerOptions(max_message_bytes=1024, request_timeout_ms=200), port=0
    ) as server:
        server.start()
        host, port = server.address
        connection = http.client.HTTPConnection(host, port, timeout=30)
        connection.request(
            "POST",
            "/mcp",
            body=b"x" * (5 << 20),
            headers={"Content-Type": "application/json", "MCP-Protocol-Version": MODERN},
        )
        response = connection.getresponse()
        assert response.status == 413
        assert response.getheader("connection") == "close"
        assert b"the limit is 1024 bytes" in response.read()
        connection.close()


def test_an_oversized_body_sent_through_urllib_gets_its_413() -> None:
    with HttpServer(TOOLKIT, ServerOptions(max_message_bytes=1024), port=0) as server:
        server.start()
        request = urllib.request.Request(
            server.url,
            data=b"x" * (5 << 20),
            headers={"Content-Type": "application/json", "MCP-Protocol-Version": MODERN},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 413
        refused.value.close()


def raw_call(rid: int, close: bool = False, version: bytes = b"HTTP/1.1") -> bytes:
    body = json.dumps(call("add", {"a": rid, "b": 1}, rid=rid)).encode()
    return (
        b"POST /mcp %b\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: add\r\n"
        b"%bContent-Length: %d\r\n\r\n%b"
        % (version, b"Connection: close\r\n" if close else b"", len(body), body)
    )


MANY_FIELDS = b"".join(b"X-Field-%d: %d\r\n" % (n, n) for n in range(65))


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"POST /mcp\r\n\r\n", b"400"),
        (b"POST /mcp HTTP/2.0\r\nHost: localhost\r\n\r\n", b"505"),
        (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", b"414"),
        (b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n" + MANY_FIELDS + b"\r\n", b"431"),
        (b"GET /mcp HTTP/1.1\r\nX-Long: " + b"a" * 70000 + b"\r\n\r\n", b"431"),
        (b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX-Folded: a\r\n b\r\n\r\n", b"400"),
        (b"GET /mcp HTTP/1.1\r\nHost : localhost\r\n\r\n", b"400"),
        (b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nHost: evil.example.com\r\n\r\n", b"400"),
        (
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n"
            b"Content-Length: 50\r\n\r\n",
            b"400",
        ),
        (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: +5\r\n\r\nhello", b"400"),
        (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n", b"411"),
    ],
)
def test_a_request_that_is_not_clean_http_1_1_is_refused_and_closed(
    server: HttpServer, head: bytes, status: bytes
) -> None:
    reply = exchange_raw(server, head)  # returns once the server has closed the connection
    assert reply.startswith(b"HTTP/1.1 " + status)
    assert b"connection: close" in reply.lower()


def test_requests_on_a_kept_alive_connection_are_answered_in_turn(server: HttpServer) -> None:
    # Three requests sent at once (pipelined); the last asks to close.
    reply = exchange_raw(server, raw_call(1) + raw_call(2) + raw_call(3, close=True))
    texts = []
    while reply:
        head, _, rest = reply.partition(b"\r\n\r\n")
        fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"date" in fields
        length = int(fields[b"content-length"])
        texts.append(json.loads(rest[:length])["result"]["content"][0]["text"])
        reply = rest[length:]
    assert texts == ["2", "3", "4"]


def test_a_large_answer_arrives_whole_and_the_connection_serves_the_next_request(
    server: HttpServer,
) -> None:
    # Larger than a socket's send buffer: sent in parts, all before the next request is read.
    size = 8 * 1024 * 1024
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=30)
    headers = {
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
    }
    connection.request(
        "POST", "/mcp", json.dumps(call("big", {"size": size})), {**headers, "Mcp-Name": "big"}
    )
    answer = json.loads(connection.getresponse().read())
    assert answer["result"]["content"][0]["text"] == "x" * size
    connection.request(
        "POST", "/mcp", json.dumps(call("add", {"a": 1, "b": 2})), {**headers, "Mcp-Name": "add"}
    )
    assert json.loads(connection.getresponse().read())["result"]["content"][0]["text"] == "3"
    connection.close()


def test_an_http_1_0_request_is_answered_and_the_connection_closed(server: HttpServer) -> None:
    reply = exchange_raw(server, raw_call(1, version=b"HTTP/1.0"))
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"connection: close" in reply.lower()


def test_expect_100_continue_gets_the_interim_response_before_the_body(
    server: HttpServer,
) -> None:
    host, port = server.address
    body = json.dumps(call("add", {"a": 2, "b": 2})).encode()
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
            b"Mcp-Name: add\r\nExpect: 100-continue\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):
            interim += sock.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["result"]["content"][0]["text"] == "4"


def test_a_slow_loris_client_is_disconnected() -> None:
    with HttpServer(TOOLKIT, ServerOptions(request_timeout_ms=200), port=0) as server:
        server.start()
        host, port = server.address
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localh")  # ... and never the rest
            reply = read_until_closed(sock)
        # Told why (408), then closed; our 10 s timeout did not fire.
        assert reply.startswith(b"HTTP/1.1 408 ")
        # and the server still serves others
        assert post(server, call("add", {"a": 1, "b": 1}))[0] == 200


def test_a_request_line_trickled_forever_is_cut_at_the_request_timeout() -> None:
    # The request timeout runs from the request's first byte, not from the end of its
    # first line: a line that never ends cannot hold the connection for the keep-alive.
    with HttpServer(
        TOOLKIT, ServerOptions(request_timeout_ms=500, keep_alive_ms=60000), port=0
    ) as server:
        server.start()
        host, port = server.address
        with socket.create_connection((host, port), timeout=10) as sock:
            stop = threading.Event()

            def trickle() -> None:
                sock.sendall(b"POST /")
                with contextlib.suppress(OSError):
                    while not stop.wait(0.05):
                        sock.sendall(b"a")

            trickler = threading.Thread(target=trickle)
            trickler.start()
            try:
                reply = read_until_closed(sock)  # far before the 60 s keep-alive (or our 10 s)
            finally:
                stop.set()
                trickler.join()
        assert reply.startswith(b"HTTP/1.1 408 ")
        assert post(server, call("add", {"a": 1, "b": 1}))[0] == 200


def test_an_idle_connection_is_closed_after_the_keep_alive() -> None:
    options = ServerOptions(first_byte_timeout_ms=300, keep_alive_ms=300)
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        # Silent from the start: closed after first_byte_timeout_ms (3 s by default).
        assert exchange_raw(server, b"") == b""
        # Idle after an answer: the answer arrives whole, then the keep-alive closes it.
        reply = exchange_raw(server, raw_call(1))
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert json.loads(body)["result"]["content"][0]["text"] == "2"


def test_a_closed_response_stream_cancels_its_call(server: HttpServer) -> None:
    started.clear()
    cancelled.clear()
    host, port = server.address
    sock = socket.create_connection((host, port), timeout=10)
    body = json.dumps(call("waits")).encode()
    sock.sendall(
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
        b"Mcp-Name: waits\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
    )
    assert started.wait(10)
    sock.close()
    assert cancelled.wait(10)


def test_shutdown_cancels_a_running_call() -> None:
    started.clear()
    cancelled.clear()
    server = HttpServer(TOOLKIT, ServerOptions(grace_ms=100), port=0)
    server.start()
    answers: list[object] = []

    def client() -> None:
        try:
            status, _, body = post(server, call("waits"))
            answers.append((status, json.loads(body)["result"]["content"][0]["text"]))
        except (OSError, http.client.HTTPException) as exc:  # the server may just close
            answers.append(exc)

    runner = threading.Thread(target=client)
    runner.start()
    assert started.wait(10)
    server.shutdown()
    assert cancelled.wait(10)
    runner.join(10)
    assert not runner.is_alive()
    # The client is answered (here: with what the cancelled tool said), never left hanging.
    assert answers == [(200, "cancelled")]


released = threading.Event()
entered = threading.Event()


@tool
def gated() -> str:
    """Returns once the test releases it."""
    entered.set()
    return "released" if released.wait(30) else "never released"


def open_get_stream(server: HttpServer) -> tuple[socket.socket, bytes]:
    """A legacy session's open GET stream, and what came after its head."""
    session = legacy_session(server)
    stream = raw_request(server, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": session})
    head, _, rest = read_until(stream, b"\r\n\r\n").partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    return stream, rest


LISTEN_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "subscriptions/listen",
}


def listen_body(rid: int) -> bytes:
    params = {"_meta": META, "notifications": {"toolsListChanged": True}}
    message = {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}
    return json.dumps(message).encode()


def shutting_down(server: HttpServer) -> threading.Thread:
    stopper = threading.Thread(target=server.shutdown, daemon=True)
    stopper.start()
    return stopper


def test_shutdown_ends_an_open_get_stream_at_once_instead_of_waiting_the_grace() -> None:
    # A grace far longer than the test's bound: waiting it would fail the test.
    server = HttpServer(TOOLKIT, ServerOptions(grace_ms=30_000), port=0)
    server.start()
    stream, rest = open_get_stream(server)
    stopper = shutting_down(server)
    # The stream ends cleanly (the last chunk), then the connection closes.
    assert rest + read_until_closed(stream) == b"0\r\n\r\n"
    stream.close()
    stopper.join(10)
    assert not stopper.is_alive()  # no call ran: nothing to give the grace to


def test_shutdown_ends_an_open_listen_stream_with_its_response_at_once() -> None:
    server = HttpServer(TOOLKIT, ServerOptions(grace_ms=30_000), port=0)
    server.start()
    stream = raw_request(server, "POST", LISTEN_HEADERS, listen_body(9))
    opened = read_until(stream, b"notifications/subscriptions/acknowledged")
    stopper = shutting_down(server)
    data = opened + read_until_closed(stream)
    stream.close()
    stopper.join(10)
    assert not stopper.is_alive()
    assert data.endswith(b"\r\n0\r\n\r\n")  # the chunked stream ended cleanly
    last = sse_events(data)[-1]
    assert last == {
        "jsonrpc": "2.0",
        "id": 9,
        "result": {"_meta": {"io.modelcontextprotocol/subscriptionId": 9}},
    }


def test_a_running_call_keeps_its_grace_while_notification_streams_end_at_once() -> None:
    released.clear()
    entered.clear()
    server = HttpServer(Toolkit([gated]), ServerOptions(grace_ms=30_000), port=0)
    server.start()
    stream, rest = open_get_stream(server)
    listen = raw_request(server, "POST", LISTEN_HEADERS, listen_body(3))
    read_until(listen, b"notifications/subscriptions/acknowledged")
    answers: list[object] = []

    def client() -> None:
        status, _, body = post(server, call("gated"))
        answers.append((status, json.loads(body)["result"]["content"][0]["text"]))

    runner = threading.Thread(target=client, daemon=True)
    runner.start()
    assert entered.wait(10)
    stopper = shutting_down(server)
    # Both streams end while the call still runs: only the call holds the shutdown.
    assert rest + read_until_closed(stream) == b"0\r\n\r\n"
    assert read_until_closed(listen).endswith(b"\r\n0\r\n\r\n")
    stream.close()
    listen.close()
    assert answers == []
    assert runner.is_alive() and stopper.is_alive()
    released.set()  # after shutdown began: the call answers within its grace
    runner.join(10)
    stopper.join(10)
    assert not runner.is_alive() and not stopper.is_alive()
    assert answers == [(200, "released")]


def test_shutdown_does_not_wait_for_a_kept_alive_clients_next_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolnexus.mcp._server._http_server as _http_server

    # A worker waits this long for a kept-alive client's next request: far past the bound.
    monkeypatch.setattr(_http_server, "_LINGER_S", 30.0)
    server = HttpServer(TOOLKIT, ServerOptions(grace_ms=30_000), port=0)
    server.start()
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "add"})
    connection.request("POST", "/mcp", json.dumps(call("add", {"a": 1, "b": 2})), headers)
    response = connection.getresponse()
    assert response.status == 200 and not response.will_close
    response.read()
    stopper = shutting_down(server)
    stopper.join(10)
    assert not stopper.is_alive()
    connection.close()


def test_no_notification_stream_opens_once_they_were_ended_for_a_shutdown() -> None:
    with HttpServer(TOOLKIT, port=0) as server:
        server.start()
        session = legacy_session(server)
        server.endpoint.end_streams()
        for sock in (
            raw_request(server, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": session}),
            raw_request(server, "POST", LISTEN_HEADERS, listen_body(4)),
        ):
            refused = sock.recv(4096)
            sock.close()
            assert refused.startswith(b"HTTP/1.1 503") and b"shutting down" in refused
        # Calls are still answered until the shutdown's grace ends.
        status, _, body = post(server, call("add", {"a": 1, "b": 2}))
        assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "3"


def test_an_idle_legacy_session_expires() -> None:
    with HttpServer(TOOLKIT, ServerOptions(session_idle_ms=0), port=0) as server:
        server.start()
        session = legacy_session(server)
        server.endpoint.expire_idle()
        assert server.endpoint.session_count == 0
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert post(server, message, {"Mcp-Session-Id": session})[0] == 404


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"))


def test_a_server_shut_down_leaves_no_descriptor_open() -> None:
    # Its selector and its wake pipe are closed with it (three descriptors a server).
    @tool
    def quick() -> str:
        """Answers at once."""
        return "done"

    toolkit = Toolkit([quick])
    for _ in range(2):  # the first round's one-time opens (imports, threads) come and stay
        with HttpServer(toolkit, ServerOptions(), port=0) as served:
            served.start()
        HttpServer(toolkit, ServerOptions(), port=0).shutdown()  # never served
    before = _open_descriptors()
    for _ in range(20):
        with HttpServer(toolkit, ServerOptions(), port=0) as served:
            served.start()
            status, _, _ = post(served, call("quick"))  # a request served, then closed
            assert status == 200
        HttpServer(toolkit, ServerOptions(), port=0).shutdown()
    assert _open_descriptors() - before < 10  # 40 servers: 120 before the fix


def test_a_wake_after_shutdown_writes_to_no_descriptor_the_process_reuses(
    tmp_path: Path,
) -> None:
    # A worker that finishes late wakes the loop after the loop closed its wake pipe: the
    # pipe's numbers may belong to new files by then, and must not be written to.
    server = HttpServer(Toolkit([]), ServerOptions(), port=0)
    old = server._loop._wake_w
    server.shutdown()  # never served: its pipe is closed now
    opened: list[int] = []
    try:
        while old not in opened and len(opened) < 16:  # new files take the lowest numbers
            opened.append(os.open(tmp_path / f"f{len(opened)}", os.O_RDWR | os.O_CREAT))
        assert old in opened, "the old write end's number was not reused"
        server._loop.wake()
        assert os.fstat(old).st_size == 0  # nothing was written into the new file
    finally:
        for descriptor in opened:
            os.close(descriptor)
