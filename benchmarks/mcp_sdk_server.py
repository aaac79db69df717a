"""The reference for ``benchmarks/mcp_server.py``: the same ``add`` tool served by the
official MCP Python SDK (``pip install mcp``; its high-level ``MCPServer`` on stdio)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("reference")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
