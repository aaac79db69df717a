"""The raw HTTP client the MCP server tests share: requests by ``http.client`` or by hand on
a socket, and the reading of what comes back (bodies, event streams, closed connections).

``server`` is anything with an ``address`` (``HttpServer``, a server under uvicorn, a proxy).
Every connection is bounded by ``TIMEOUT``, so a server that hangs fails the test.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
from typing import Any

from timing import TIMEOUT

MODERN_VERSION = "2026-07-28"  # the protocol version the routing headers name


def headers_for(message: dict[str, Any], extra: dict[str, str] | None = None) -> dict[str, str]:
    """What a client sends with ``message``: JSON in, JSON or an event stream out; for a
    modern message (``_meta`` in its params) the routing headers too (``MCP-Protocol-Version``,
    ``Mcp-Method``, ``Mcp-Name`` from its ``name`` or ``taskId``); ``extra`` last."""
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    params = message.get("params") or {}
    if "_meta" in params:
        sent["MCP-Protocol-Version"] = MODERN_VERSION
        sent["Mcp-Method"] = message["method"]
        for key in ("name", "taskId"):
            if key in params:
                sent["Mcp-Name"] = str(params[key])
    sent.update(extra or {})
    return sent


def modern_call(name: str, arguments: dict[str, Any], rid: Any = 1) -> dict[str, Any]:
    """A modern (2026-07-28) ``tools/call`` of ``name``, its ``_meta`` a plain client's."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    }
    params = {"name": name, "arguments": arguments, "_meta": meta}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def send(
    server: Any,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One request on a connection of its own: ``body`` (a JSON value, or None for none)
    sent as JSON; the status, the headers (names in lower case) and the body."""
    connection = http.client.HTTPConnection(*server.address, timeout=TIMEOUT)
    try:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json", "Accept": "application/json"}
        connection.request(method, path, data, {**sent, **(headers or {})})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def post(
    server: Any, message: dict[str, Any], extra: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """``message`` posted to ``/mcp`` with :func:`headers_for` it; as :func:`send`."""
    return send(server, "POST", "/mcp", message, headers_for(message, extra))


def sse_events(data: bytes) -> list[dict[str, Any]]:
    """The JSON messages of the ``data:`` lines of an event stream, in order."""
    return [
        json.loads(line[len(b"data: ") :])
        for line in data.splitlines()
        if line.startswith(b"data: ")
    ]


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    """What the server sends until ``marker`` arrived (the connection must stay open)."""
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before {marker!r}: {data!r}"
        data += chunk
    return data


def read_until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (or resets it)."""
    reply = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


def exchange_raw(server: Any, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection and read until the server closes it."""
    with socket.create_connection(server.address, timeout=TIMEOUT) as sock:
        sock.sendall(data)
        return read_until_closed(sock)


def raw_request(
    server: Any, method: str, headers: dict[str, str], body: bytes = b""
) -> socket.socket:
    """Send one request to ``server``'s ``/mcp`` by hand and return the open socket, so a
    test reads the answer as it comes."""
    sock = socket.create_connection(server.address, timeout=TIMEOUT)
    head = f"{method} /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def assert_ended_as_cancelled(
    reply: tuple[int, dict[str, str], bytes], accept: str, request_id: Any
) -> None:
    """``reply`` (a POST's status, headers and body) is how a request cancelled meanwhile
    ends: 200 (never the 204 an SDK client logs as an error), with an event stream that
    carries no message when the client accepts one, else the JSON-RPC ``-32800`` error
    naming ``request_id``."""
    status, headers, body = reply
    assert status == 200
    if "text/event-stream" in accept:
        assert headers["content-type"] == "text/event-stream" and b"data:" not in body
    else:
        answer = json.loads(body)
        assert (answer["id"], answer["error"]["code"]) == (request_id, -32800)
