"""A toolkit with resources, prompts, a sampling tool and a long tool, for the interop
tests (``python -m toolnexus serve tests/served_tools.py:toolkit``) and the CLI tests."""

from __future__ import annotations

from typing import Any, Literal

from toolnexus import Part, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.mcp import prompt, resource

GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"


@resource("notes://readme", mime_type="text/markdown")
def readme() -> str:
    """The readme."""
    return "# Notes\nRead me first."


@resource("notes://logo", mime_type="image/gif")
def logo() -> bytes:
    """A tiny logo."""
    return GIF


@resource(
    "notes://items/{item_id}", mime_type="application/json", complete={"item_id": ["17", "42"]}
)
def item(item_id: int) -> dict[str, Any]:
    """One item, by number."""
    return {"id": item_id, "name": f"item {item_id}"}


@prompt
def review(code: str, focus: Literal["bugs", "style"] = "bugs") -> list[Any]:
    """Ask for a code review.

    Args:
        code: the code to review.
        focus: what to look for.
    """
    return [
        f"Review this for {focus}:\n{code}",
        Part.image(GIF, "image/gif"),
        {"role": "assistant", "content": "Reading it now."},
    ]


@tool
def capital(country: str, ctx: ToolContext) -> ToolResult:
    """Asks the client's model for a capital."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "sampling",
                f"Ask the model for the capital of {country}",
                data={
                    "messages": [{"role": "user", "content": f"Capital of {country}?"}],
                    "maxTokens": 20,
                },
            )
        )
    content = (ctx.answer.data or {}).get("content") or {}
    return ToolResult.ok(f"the model says: {content.get('text')}")


@tool
def slow(ctx: ToolContext, seconds: float = 1.0) -> str:
    """Works `seconds`, then answers (a task, for a client that takes tasks)."""
    ctx.cancellation_token.wait(seconds)
    return f"slept {seconds}"


@tool
def verses() -> ToolResult:
    """Three lines, one text block each."""
    return ToolResult.ok("one", parts=[Part.from_text("two"), Part.from_text("three")])


toolkit = Toolkit([readme, logo, item, review, capital, slow, verses])
