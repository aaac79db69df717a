"""Structured output meets the official MCP SDK client (the ``interop`` extra).

The server is ``toolnexus serve tests/structured_tools.py:toolkit``. The SDK client checks
every successful result against the tool's listed ``outputSchema`` and raises when it is
missing or does not conform, so a call that returns at all was accepted. Skipped when
``mcp`` is not installed, unless TOOLNEXUS_REQUIRE_INTEROP=1 (CI sets it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from extras import require

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

import anyio
from mcp import Client, StdioServerParameters

from timing import TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
MODES = ["legacy", "2026-07-28"]

CALLS: dict[str, dict[str, Any]] = {
    "grep": {"pattern": "TODO"},
    "weather": {"city": "Oslo"},
    "count": {"text": "abc"},
    "evens": {"n": 5},
    "lookup": {"key": "k"},
    "tomorrow": {"day": "2026-05-01"},
    "total": {"a": 2, "b": 3},
    "raw": {},
    "miscount": {"text": "abc"},
    "bad_total": {"a": 1},
    "fetch": {"url": "https://example.com"},
}


def session(mode: str) -> tuple[Any, dict[str, Any]]:
    """List the tools and call each once, in one SDK client session."""
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", "tests/structured_tools.py:toolkit"],
        cwd=str(ROOT),
        env={"PYTHONPATH": path},
    )

    async def main() -> tuple[Any, dict[str, Any]]:
        with anyio.fail_after(6 * TIMEOUT):
            async with Client(parameters, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                listed = await client.list_tools()
                results = {name: await client.call_tool(name, args) for name, args in CALLS.items()}
                return listed, results

    return anyio.run(main)


@pytest.fixture(scope="module", params=MODES)
def seen(request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    return session(request.param)


def test_annotated_returns_list_an_output_schema(seen: tuple[Any, dict[str, Any]]) -> None:
    listed, _ = seen
    schemas = {t.name: t.output_schema for t in listed.tools}
    assert schemas["count"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert schemas["grep"]["type"] == "object"
    assert schemas["weather"]["required"] == ["city", "celsius"]
    assert schemas["tomorrow"]["properties"]["result"] == {"type": "string", "format": "date"}
    assert schemas["fetch"] is None  # -> str: the text is the content


def test_the_client_accepts_every_result_and_gets_the_structured_value(
    seen: tuple[Any, dict[str, Any]],
) -> None:
    _, results = seen
    expected = {
        "grep": {
            "hits": [{"path": "src/app.py", "line": 12}, {"path": "README.md", "line": 3}],
            "truncated": False,
        },
        "weather": {"city": "Oslo", "celsius": 21.5},
        "count": {"result": 3},
        "evens": {"result": [0, 2, 4]},
        "lookup": {"result": None},
        "tomorrow": {"result": "2026-05-02"},
        "total": {"sum": 5},
        "raw": {"n": 1},
    }
    for name, value in expected.items():
        result = results[name]
        assert result.is_error is False, (name, result)
        assert result.structured_content == value, name
    assert results["fetch"].content[0].text == "fetched https://example.com"


def test_a_tool_violating_its_output_schema_is_an_error_naming_the_path(
    seen: tuple[Any, dict[str, Any]],
) -> None:
    _, results = seen
    miscount = results["miscount"]
    assert miscount.is_error is True
    assert miscount.content[0].text == (
        "tool 'miscount' returned output that does not match its output schema: "
        'result: expected integer, got string "abc"; fix the tool\'s return value or its '
        "output_schema"
    )
    bad_total = results["bad_total"]
    assert bad_total.is_error is True
    assert 'sum: expected integer, got string "nope"' in bad_total.content[0].text
