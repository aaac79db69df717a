"""The reference for ``benchmarks/mcp_http.py``: the same ``add`` tool, ``bench://note``
resource and ``greet`` prompt served over Streamable HTTP by the official MCP Python SDK
(``pip install mcp``; ``MCPServer`` with its default settings: stateful sessions, responses
as event streams).

``python benchmarks/mcp_http_sdk_server.py PORT``
"""

from __future__ import annotations

import logging
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("reference")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.resource("bench://note", mime_type="text/plain")
def note() -> str:
    """A short note."""
    return "a short note"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
