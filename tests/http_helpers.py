"""Helpers the HTTP server tests share."""

from __future__ import annotations

import contextlib
import socket
from typing import Any


def read_until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (or resets it)."""
    reply = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


def raw_request(
    server: Any, method: str, headers: dict[str, str], body: bytes = b""
) -> socket.socket:
    """Send one request to ``server``'s ``/mcp`` by hand and return the open socket (an
    ``HttpServer``: its ``address``), so a test reads the answer as it comes."""
    host, port = server.address
    sock = socket.create_connection((host, port), timeout=10)
    head = f"{method} /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock
