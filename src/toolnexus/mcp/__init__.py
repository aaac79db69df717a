"""Serve a toolkit over MCP (the Model Context Protocol).

:class:`ServerSession` is the protocol without I/O — JSON-RPC messages in, actions out —
for both eras: the modern stateless revision (2026-07-28: per-request ``_meta``,
``server/discover``, ``InputRequiredResult``) and the legacy ``initialize`` revisions
(2024-11-05 … 2025-11-25, server-sent ``elicitation/create``). :func:`serve_stdio` drives
it on stdin/stdout with the tools running on a :class:`~toolnexus.host.Host`; that is what
``toolnexus serve REF`` runs.

A tool that suspends (``ToolResult.pending(request)``) becomes an MCP elicitation, and the
client's answer re-runs it with ``ctx.answer``. A result's parts go out as content blocks
after its text (image, audio, an embedded resource for file bytes, a resource link for a
URL); :func:`result_from_mcp` reads an MCP ``CallToolResult`` back as a ``ToolResult``.

Example::

    from toolnexus import Toolkit, tool
    from toolnexus.mcp import serve_stdio

    @tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    if __name__ == "__main__":
        raise SystemExit(serve_stdio(Toolkit([add]), name="calculator"))
"""

from __future__ import annotations

from ._content import result_from_mcp
from .session import (
    LEGACY_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    Action,
    CancelCall,
    Send,
    ServerSession,
    StartCall,
)
from .stdio import serve_stdio

__all__ = [
    "LEGACY_PROTOCOL_VERSIONS",
    "MODERN_PROTOCOL_VERSIONS",
    "Action",
    "CancelCall",
    "Send",
    "ServerSession",
    "StartCall",
    "result_from_mcp",
    "serve_stdio",
]
