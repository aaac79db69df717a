"""The reference for ``benchmarks/mcp_server.py``: the same ``add`` tool, ``bench://note``
resource and ``greet`` prompt served by the official MCP Python SDK (``pip install mcp``;
its high-level ``MCPServer`` on stdio)."""

from __future__ import annotations

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
    server.run()
