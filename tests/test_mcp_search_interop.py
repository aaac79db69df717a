"""The official MCP SDK client against ``toolnexus serve --search`` over a 1,000-tool
toolkit: it is shown the core and the two meta-tools, finds a tool it was not shown with
``search_tools`` and calls it with ``call_tool``. Skipped when ``mcp`` is not installed,
unless TOOLNEXUS_REQUIRE_INTEROP=1 (CI sets it)."""

from __future__ import annotations

import json
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


def stdio(*flags: str) -> StdioServerParameters:
    path = os.pathsep.join(
        [str(ROOT / "src"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    )
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", *flags, "tests/search_catalog.py:toolkit"],
        cwd=str(ROOT),
        env={"PYTHONPATH": path},
    )


def run(mode: str, body: Any, *flags: str) -> Any:
    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            async with Client(stdio(*flags), mode=mode, read_timeout_seconds=TIMEOUT) as client:
                return await body(client)

    return anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_sdk_finds_and_calls_a_tool_it_was_not_shown(mode: str) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_tools()
        found = await client.call_tool("search_tools", {"query": "refund the last charge"})
        arguments = json.dumps({"charge_id": "ch_1", "amount_cents": 500})
        called = await client.call_tool(
            "call_tool", {"name": "refund_charge", "arguments": arguments}
        )
        return listed, found, called

    listed, found, called = run(mode, body, "--search")
    assert [t.name for t in listed.tools] == ["ping", "search_tools", "call_tool"]
    assert not found.is_error
    hits = json.loads(found.content[0].text)
    assert hits[0]["name"] == "refund_charge"
    assert hits[0]["parameters"]["required"] == ["charge_id", "amount_cents"]
    assert not called.is_error
    assert called.content[0].text == "refunded 500 of ch_1"


def test_without_search_every_tool_is_listed() -> None:
    async def body(client: Client) -> Any:
        names: list[str] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                return names

    names = run("legacy", body)
    assert len(names) == 1000 and "refund_charge" in names and "search_tools" not in names
