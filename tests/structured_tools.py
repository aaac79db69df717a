"""Tools with output schemas, for the MCP tests: served by ``toolnexus serve
tests/structured_tools.py:toolkit`` in the interop suite.

Each well-behaved tool returns what its schema promises (inferred from the return annotation
or declared); ``miscount`` and ``bad_total`` break their promise, which the server must turn
into an ``isError`` result naming the path.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any, TypedDict

from toolnexus import Toolkit, ToolResult, tool


@dataclass
class Hit:
    path: str
    line: int


@dataclass
class GrepResult:
    hits: list[Hit]
    truncated: bool = False


class Weather(TypedDict):
    city: str
    celsius: float


@tool
def grep(pattern: str) -> GrepResult:
    """Find a pattern in the sources."""
    return GrepResult([Hit("src/app.py", 12), Hit("README.md", 3)])


@tool
def weather(city: str) -> Weather:
    """Current weather in a city."""
    return {"city": city, "celsius": 21.5}


@tool
def count(text: str) -> int:
    """Count characters."""
    return len(text)


@tool
def evens(n: int) -> list[int]:
    """Even numbers below n."""
    return list(range(0, n, 2))


@tool
def lookup(key: str) -> int | None:
    """Look a key up (nothing found)."""
    return None


@tool
def tomorrow(day: dt.date) -> dt.date:
    """The day after."""
    return day + dt.timedelta(days=1)


@tool(
    output_schema={
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
    }
)
def total(a: int, b: int) -> dict[str, Any]:
    """Add, declared."""
    return {"sum": a + b}


@tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
def raw() -> ToolResult:
    """A ToolResult whose text is the JSON value."""
    return ToolResult.ok('{"n": 1}')


@tool
def miscount(text: str) -> int:
    """Promises an integer, returns text."""
    return text  # type: ignore[return-value]  # the broken promise under test


@tool(
    output_schema={
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
    }
)
def bad_total(a: int) -> dict[str, Any]:
    """Promises an integer sum, returns text."""
    return {"sum": "nope"}


def _fetch(url: str, api_key: str) -> str:
    """Fetch a URL."""
    return f"fetched {url}"


toolkit = Toolkit(
    [
        grep,
        weather,
        count,
        evens,
        lookup,
        tomorrow,
        total,
        raw,
        miscount,
        bad_total,
        tool(functools.partial(_fetch, api_key="sk-live-0123456789"), name="fetch"),
    ]
)
