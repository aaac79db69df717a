"""The tools the MCP client tests call on our own server: served by ``toolnexus serve
tests/mcp_client_tools.py:toolkit`` (stdio) and by ``HttpServer(toolkit)`` in-process.

Each does one thing a remote tool may do: answer, report progress, take its time (and hear
a cancel, or not), ask a question (a form, a login URL), return an image and structured
output, fail, and log.
"""

from __future__ import annotations

import threading

from toolnexus import Part, Request, Toolkit, ToolResult, tool
from toolnexus._context import ToolContext

_PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"
    b"\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef"
    b"\x00\x00\x00\x00IEND\xaeB`\x82"
)
_NEVER = threading.Event()
STARTED = threading.Event()
"""Set when ``wait`` starts (in-process servers only)."""
HEARD = threading.Event()
"""Set when ``wait`` heard a cancel (in-process servers only)."""


@tool
def echo(text: str) -> str:
    """Returns its text."""
    return text


@tool
def add(a: int, b: int) -> int:
    """Adds two integers (structured output)."""
    return a + b


@tool
def steps(count: int, ctx: ToolContext) -> str:
    """Reports progress count times, then answers."""
    for step in range(1, count + 1):
        ctx.report_progress(step, count, f"step {step}")
    return f"{count} steps"


@tool
def wait(seconds: float, ctx: ToolContext) -> str:
    """Waits, hearing a cancel."""
    STARTED.set()
    if ctx.cancellation_token.wait(seconds):
        HEARD.set()
        return "cancelled"
    return "waited"


@tool
def hang(seconds: float) -> str:
    """Waits, deaf to any cancel (until ``release``)."""
    _NEVER.wait(seconds)
    return "hung"


@tool
def release() -> str:
    """Lets every ``hang`` return: a test's clean-up, so that its server need not wait out
    its grace period for them when it closes (about a second each time)."""
    global _NEVER
    released, _NEVER = _NEVER, threading.Event()
    released.set()
    return "released"


@tool
def ask(ctx: ToolContext) -> ToolResult:
    """Asks for a name, then greets."""
    if ctx.answer is None:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "polite": {"type": "boolean", "default": True},
            },
            "required": ["name"],
        }
        return ToolResult.pending(Request("input", "Your name?", data={"schema": schema}))
    data = ctx.answer.data or {}
    return ToolResult.ok(f"hello {data.get('name')} polite={data.get('polite')}")


@tool
def login(ctx: ToolContext) -> ToolResult:
    """Asks for a login at a URL."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request("authorization", "Sign in", url="https://example.com/login")
        )
    return ToolResult.ok("signed in")


@tool
def picture() -> ToolResult:
    """Returns a caption and a 1x1 PNG."""
    return ToolResult.ok("a red pixel", parts=[Part.image(_PNG, "image/png")])


@tool
def fails() -> ToolResult:
    """Always fails."""
    return ToolResult.error("it failed on purpose")


@tool
def chatty(ctx: ToolContext) -> str:
    """Logs a warning to its client."""
    ctx.report_log("warning", "careful now")
    return "said it"


toolkit = Toolkit([echo, add, steps, wait, hang, release, ask, login, picture, fails, chatty])
