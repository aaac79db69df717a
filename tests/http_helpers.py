"""Helpers the HTTP server tests share."""

from __future__ import annotations

import contextlib
import socket


def read_until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (or resets it)."""
    reply = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            reply += chunk
    return reply
