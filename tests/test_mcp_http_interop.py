"""The official MCP Python SDK client over Streamable HTTP against our embedded server.

Both eras the SDK speaks over HTTP: ``legacy`` (``initialize`` and ``Mcp-Session-Id``) and
``2026-07-28`` (stateless requests). List, call, cancel, elicitation accept/decline,
progress and logging. Skipped when ``mcp`` is not installed, unless
TOOLNEXUS_REQUIRE_INTEROP=1 (CI sets it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from extras import require
from toolnexus import Request, Toolkit, ToolResult, tool
from toolnexus._context import ToolContext
from toolnexus.mcp import HttpServer

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

import anyio
import mcp.types as types
from mcp import Client

from timing import TIMEOUT

MODES = ["legacy", "2026-07-28"]
EXPECTED_VERSION = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
cancelled = threading.Event()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def steps(count: int, ctx: ToolContext) -> str:
    """Counts, reporting progress and logging each step."""
    for step in range(1, count + 1):
        ctx.report_progress(step, count)
        ctx.report_log("info", f"step {step}")
    ctx.report_log("debug", "only for the curious")
    return f"{count} steps"


@tool
def wait_for_cancel(ctx: ToolContext) -> str:
    """Reports progress once, then waits to be cancelled."""
    ctx.report_progress(0, 1)
    if ctx.cancellation_token.wait(30):
        cancelled.set()
        return "cancelled"
    return "not cancelled"


@tool
def deploy(ctx: ToolContext) -> ToolResult:
    """Asks where to deploy."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "Which environment?",
                data={
                    "schema": {
                        "type": "object",
                        "properties": {"env": {"type": "string"}},
                        "required": ["env"],
                    }
                },
            )
        )
    return ToolResult.ok(f"deployed to {(ctx.answer.data or {}).get('env')}")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with HttpServer(Toolkit([add, steps, wait_for_cancel, deploy]), port=0) as server:
        server.start()
        yield server.url


def run(url: str, body: Any, mode: str, **options: Any) -> Any:
    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            async with Client(url, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
                return await body(client)

    return anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_connects_over_http_and_lists_the_tools(url: str, mode: str) -> None:
    async def body(client: Client) -> Any:
        return client.protocol_version, await client.list_tools()

    version, listed = run(url, body, mode)
    assert version == EXPECTED_VERSION[mode]
    assert [t.name for t in listed.tools] == ["add", "steps", "wait_for_cancel", "deploy"]


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_calls_a_tool_over_http(url: str, mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("add", {"a": 20, "b": 22})

    result = run(url, body, mode)
    assert result.is_error is False
    assert result.content[0].text == "42"


@pytest.mark.parametrize("mode", MODES)
def test_cancelling_in_the_sdk_cancels_the_tool_over_http(url: str, mode: str) -> None:
    cancelled.clear()

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

    run(url, body, mode)
    assert cancelled.wait(TIMEOUT)


async def accept_staging(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    assert params.message == "Which environment?"
    return types.ElicitResult(action="accept", content={"env": "staging"})


async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


@pytest.mark.parametrize("mode", MODES)
def test_an_accepted_elicitation_re_runs_the_tool_over_http(url: str, mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("deploy", {})

    result = run(url, body, mode, elicitation_callback=accept_staging)
    assert result.is_error is False
    assert result.content[0].text == "deployed to staging"


@pytest.mark.parametrize("mode", MODES)
def test_a_declined_elicitation_is_declined_over_http(url: str, mode: str) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("deploy", {})

    result = run(url, body, mode, elicitation_callback=decline)
    assert result.is_error is True
    assert result.content[0].text == "declined/expired: Which environment?"


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
@pytest.mark.parametrize("mode", MODES)
def test_progress_and_logs_reach_the_sdk_callbacks_over_http(url: str, mode: str) -> None:
    progress: list[float] = []
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async def body(client: Client) -> Any:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        if mode == "legacy":
            await client.set_logging_level("info")
        return await client.call_tool("steps", {"count": 3}, progress_callback=on_progress)

    result = run(url, body, mode, logging_callback=on_log, log_level="info")
    assert result.content[0].text == "3 steps"
    assert progress == [1, 2, 3]
    assert logs == [("info", "step 1"), ("info", "step 2"), ("info", "step 3")]
