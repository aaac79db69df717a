"""Resources and prompts: what an MCP server offers besides tools.

A resource is data a client reads by URI (a fixed one, or every URI a template matches);
a prompt is a message template a user picks. Both are plain functions, like tools. Try it
from the folder above ``examples/``::

    toolnexus list examples/notes.py
    toolnexus read examples/notes.py notes://readme
    toolnexus read examples/notes.py notes://items/42
    toolnexus get examples/notes.py review code='x = 1' focus=style
    toolnexus serve examples/notes.py
"""

from __future__ import annotations

from typing import Any, Literal

from toolnexus import tool
from toolnexus.mcp import prompt, resource

_ITEMS = {17: "a teapot", 42: "a towel"}


@resource("notes://readme", mime_type="text/markdown")
def readme() -> str:
    """How these notes work."""
    return "# Notes\nRead me first."


@resource("notes://items/{item_id}", mime_type="application/json")
def item(item_id: int) -> dict[str, Any]:
    """One item, by number (17 or 42)."""
    if item_id not in _ITEMS:
        raise LookupError(f"no item {item_id}; there are {sorted(_ITEMS)}")
    return {"id": item_id, "name": _ITEMS[item_id]}


@prompt
def review(code: str, focus: Literal["bugs", "style"] = "bugs") -> list[Any]:
    """Ask for a code review.

    Args:
        code: the code to review.
        focus: what to look for.
    """
    return [
        f"Review this for {focus}:\n{code}",
        {"role": "assistant", "content": "Reading it now."},
    ]


@tool(read_only=True)
def count_items() -> int:
    """How many items there are."""
    return len(_ITEMS)
