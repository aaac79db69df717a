"""An MCP server written with the official Python SDK, for the client's interop tests.

``python tests/interop_sdk_server.py stdio`` or ``... http PORT``. Its tools: ``add``
(structured output), ``steps`` (progress), ``sleep`` (writes ``marker`` when it is
cancelled, so a test can see the cancel arrive), ``greet`` (asks a name: a form
elicitation on the legacy era, an ``input_required`` result on the modern one — the SDK's
``Resolve``/``Elicit`` picks) and ``picture`` (an image).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, Image, MCPServer, Resolve
from pydantic import BaseModel

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"
    b"\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef"
    b"\x00\x00\x00\x00IEND\xaeB`\x82"
)

server = MCPServer("sdk-interop")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Report progress count times."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step}")
    return f"{count} steps"


@server.tool()
async def sleep(seconds: float, marker: str = "") -> str:
    """Sleep; write marker when cancelled."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if marker:
            Path(marker).write_text("cancelled", encoding="utf-8")
        raise
    return "slept"


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


@server.tool()
async def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Ask a name, then greet."""
    return f"hello {who.name}"


@server.tool()
def picture() -> Image:
    """A 1x1 PNG."""
    return Image(data=PNG, format="png")


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    if sys.argv[1:2] == ["http"]:
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
