"""The official MCP Python SDK client (``mcp``, the ``interop`` extra) against our server.

Each test spawns ``python -m toolnexus serve tests/stdio_tools.py:toolkit`` through the
SDK's stdio client, in each era the SDK speaks: ``legacy`` (the ``initialize`` handshake),
``2026-07-28`` (modern, pinned) and ``auto`` (the SDK probes ``server/discover``, then
stays modern). Skipped when ``mcp`` is not installed, unless TOOLNEXUS_REQUIRE_INTEROP=1,
which makes its absence a failure (CI sets it).
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
import mcp.types as types
from mcp import Client, StdioServerParameters

from timing import TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
MODES = ["legacy", "2026-07-28", "auto"]
EXPECTED_VERSION = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28", "auto": "2026-07-28"}


def server_parameters(*extra: str) -> StdioServerParameters:
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", "tests/stdio_tools.py:toolkit", *extra],
        cwd=str(ROOT),
        env={"PYTHONPATH": path},
    )


async def accept_staging(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    assert params.message == "Which environment?"
    return types.ElicitResult(action="accept", content={"env": "staging"})


async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


def run(body: Any, mode: str, **options: Any) -> Any:
    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            async with Client(
                server_parameters(),
                mode=mode,
                read_timeout_seconds=TIMEOUT,
                **options,
            ) as client:
                return await body(client)

    return anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_connects_in_each_era_and_lists_the_tools(mode: str) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_tools()
        return client.protocol_version, client.server_info, listed

    version, info, listed = run(body, mode)
    assert version == EXPECTED_VERSION[mode]
    assert info is None or info.name == "toolnexus"
    names = [t.name for t in listed.tools]
    assert names[:3] == ["add", "shout", "wait_for_cancel"]
    add = listed.tools[0]
    assert add.description == "Add two numbers."
    assert add.input_schema["type"] == "object"
    assert set(add.input_schema["properties"]) == {"a", "b"}


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_calls_a_tool(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("add", {"a": 20, "b": 22})

    result = run(body, mode)
    assert result.is_error is False
    assert result.content[0].text == "42"


@pytest.mark.parametrize("mode", MODES)
def test_invalid_arguments_come_back_as_an_error_result_the_model_can_read(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("add", {"a": "twenty", "b": 22})

    result = run(body, mode)
    assert result.is_error is True
    assert result.content[0].text.startswith("invalid arguments for 'add'")


@pytest.mark.parametrize("mode", MODES)
def test_cancelling_a_call_in_the_sdk_cancels_the_tool_on_the_server(mode: str) -> None:
    async def body(client: Client) -> Any:
        started = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            started.set()

        async def long_call() -> None:
            await client.call_tool("wait_for_cancel", {}, progress_callback=on_progress)

        async with anyio.create_task_group() as group:
            group.start_soon(long_call)
            with anyio.fail_after(TIMEOUT):
                await started.wait()
            group.cancel_scope.cancel()
        return await client.call_tool("last_cancel", {})

    result = run(body, mode)
    assert result.content[0].text == "cancelled"


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_answers_an_elicitation_and_the_tool_re_runs_with_it(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("deploy", {})

    result = run(body, mode, elicitation_callback=accept_staging)
    assert result.is_error is False
    assert result.content[0].text == "deployed to staging"


@pytest.mark.parametrize("mode", MODES)
def test_a_declined_elicitation_is_declined_expired(mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("deploy", {})

    result = run(body, mode, elicitation_callback=decline)
    assert result.is_error is True
    assert result.content[0].text == "declined/expired: Which environment?"


def test_without_an_elicitation_callback_a_legacy_client_gets_the_question_to_relay() -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("deploy", {})

    result = run(body, "legacy")
    assert result.is_error is True
    assert result.content[0].text.endswith("ask the user: Which environment?")


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
def test_without_an_elicitation_callback_a_modern_client_gets_32021(mode: str) -> None:
    from mcp.shared.exceptions import MCPError

    async def body(client: Client) -> Any:
        try:
            await client.call_tool("deploy", {})
        except MCPError as exc:
            return exc
        return None

    caught = run(body, mode)
    assert isinstance(caught, MCPError)
    assert caught.error.code == -32021
    assert "Missing required client capability: elicitation" in caught.error.message


@pytest.mark.parametrize("mode", MODES)
def test_progress_reaches_the_sdk_callback_in_order(mode: str) -> None:
    seen: list[float] = []

    async def body(client: Client) -> Any:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        return await client.call_tool("steps", {"count": 4}, progress_callback=on_progress)

    result = run(body, mode)
    assert result.content[0].text == "4 steps"
    assert seen == [1, 2, 3, 4]
