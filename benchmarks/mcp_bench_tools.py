"""The toolkit ``benchmarks/mcp_server.py`` serves with ``toolnexus serve``: one small tool."""

from __future__ import annotations

from toolnexus import Toolkit, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


toolkit = Toolkit([add])
