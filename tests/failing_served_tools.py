"""A resource and a prompt that raise, and a resource template taking a number: the CLI's
exit codes for the same mistake, or the same failure, here and at a server's URL."""

from __future__ import annotations

from toolnexus import Toolkit
from toolnexus.mcp import prompt, resource


@resource("boom://now")
def boom() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


@resource("boom://items/{number}")
def item(number: int) -> str:
    """One item, by number."""
    return f"item {number}"


@prompt
def broken(topic: str) -> str:
    """Always fails."""
    raise RuntimeError(f"no words for {topic}")


toolkit = Toolkit([boom, item, broken])
