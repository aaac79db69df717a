"""The server ``benchmarks/mcp_client.py`` drives every client against: as cheap as MCP gets.

    python benchmarks/mcp_client_server.py              # stdio
    python benchmarks/mcp_client_server.py --http PORT  # Streamable HTTP on 127.0.0.1:PORT

A client benchmark measures what a client costs per call, so the server must cost as little
as possible: whatever the server spends is added to every client alike and shrinks every
ratio towards 1. This one speaks just enough of both protocol eras for every client there
(``server/discover`` for a modern client, ``initialize`` for a legacy one; ``tools/list``,
``tools/call`` of ``add``, ``ping``; notifications are read and dropped) and answers inline
on the thread that read the request: no validation, no tool host, no sessions. Over HTTP it
is a bare socket loop (a thread per connection, HTTP/1.1 keep-alive, one ``send`` per answer,
``TCP_NODELAY``), not ``http.server``, whose header parsing alone costs more than a client's
whole request. Requests without an ``id`` get ``202 Accepted``; ``GET`` and ``DELETE`` get
``405`` (no session stream, no session to end).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from typing import Any

MODERN = "2026-07-28"
LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
INFO = {"name": "floor", "version": "1"}
TOOLS = [
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
]


def answer(message: dict[str, Any]) -> dict[str, Any]:
    method = message.get("method")
    params = message.get("params") or {}
    if method == "tools/call":
        args = params["arguments"]
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}], "isError": False}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "server/discover":
        return {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "serverInfo": INFO}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in LEGACY else LEGACY[-1],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": INFO,
        }
    return {}


def reply(message: dict[str, Any]) -> bytes:
    body = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
    return json.dumps(body, separators=(",", ":")).encode()


def serve_stdio() -> None:
    out = sys.stdout.buffer
    for line in iter(sys.stdin.buffer.readline, b""):
        message = json.loads(line)
        if "id" in message and "method" in message:
            out.write(reply(message) + b"\n")
            out.flush()


_ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
_NOT_ALLOWED = b"HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n"


def serve_connection(connection: socket.socket) -> None:
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = connection.makefile("rb")
    try:
        while True:
            request_line = stream.readline()
            if not request_line:
                return
            length = 0
            while True:
                header = stream.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = stream.read(length) if length else b""
            if not request_line.startswith(b"POST"):
                connection.sendall(_NOT_ALLOWED)
                continue
            message = json.loads(body)
            if "id" not in message or "method" not in message:
                connection.sendall(_ACCEPTED)
                continue
            data = reply(message)
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % len(data)
            )
            connection.sendall(head + data)
    except (OSError, ValueError):
        return
    finally:
        stream.close()
        connection.close()


def serve_http(port: int) -> None:
    listener = socket.create_server(("127.0.0.1", port), backlog=128)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve_connection, args=(connection,), daemon=True).start()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        serve_http(int(sys.argv[2]))
    else:
        serve_stdio()
