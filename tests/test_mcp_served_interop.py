"""The official MCP Python SDK client against our server's resources, prompts, completion,
sampling and tasks: both eras (``legacy`` and ``2026-07-28``), over stdio (``toolnexus
serve tests/served_tools.py:toolkit``) and Streamable HTTP (the embedded server). Skipped
when ``mcp`` is not installed, unless TOOLNEXUS_REQUIRE_INTEROP=1 (CI sets it)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from extras import require
from toolnexus.mcp import HttpServer, ServerOptions

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters

from served_tools import GIF, toolkit
from timing import TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("stdio", "legacy"),
    ("stdio", "2026-07-28"),
    ("http", "legacy"),
    ("http", "2026-07-28"),
]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with HttpServer(toolkit, ServerOptions(task_after_ms=100), port=0) as server:
        server.start()
        yield server.url


def stdio() -> StdioServerParameters:
    path = os.pathsep.join(
        [str(ROOT / "src"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    )
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", "tests/served_tools.py:toolkit"],
        cwd=str(ROOT),
        env={"PYTHONPATH": path},
    )


def run(url: str, transport: str, mode: str, body: Any, **options: Any) -> Any:
    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            server: Any = url if transport == "http" else stdio()
            async with Client(server, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
                return await body(client)

    return anyio.run(main)


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_lists_and_reads_resources(url: str, transport: str, mode: str) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_resources()
        templates = await client.list_resource_templates()
        text = await client.read_resource("notes://readme")
        blob = await client.read_resource("notes://logo")
        templated = await client.read_resource("notes://items/42")
        return listed, templates, text, blob, templated

    listed, templates, text, blob, templated = run(url, transport, mode, body)
    assert [str(r.uri) for r in listed.resources] == ["notes://readme", "notes://logo"]
    assert [t.uri_template for t in templates.resource_templates] == ["notes://items/{item_id}"]
    (content,) = text.contents
    assert content.text == "# Notes\nRead me first." and content.mime_type == "text/markdown"
    assert blob.contents[0].mime_type == "image/gif"
    import base64

    assert base64.b64decode(blob.contents[0].blob) == GIF
    assert templated.contents[0].text == '{"id":42,"name":"item 42"}'


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_gets_a_prompt_and_completes_its_arguments(
    url: str, transport: str, mode: str
) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_prompts()
        got = await client.get_prompt("review", {"code": "x = 1", "focus": "style"})
        focus = await client.complete(
            types.PromptReference(type="ref/prompt", name="review"), {"name": "focus", "value": "s"}
        )
        item_id = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="notes://items/{item_id}"),
            {"name": "item_id", "value": "4"},
        )
        return listed, got, focus, item_id

    listed, got, focus, item_id = run(url, transport, mode, body)
    (review,) = listed.prompts
    assert review.name == "review"
    assert [(a.name, a.required) for a in review.arguments] == [("code", True), ("focus", False)]
    roles = [m.role for m in got.messages]
    assert roles == ["user", "user", "assistant"]
    assert got.messages[0].content.text == "Review this for style:\nx = 1"
    assert got.messages[1].content.type == "image"
    assert focus.completion.values == ["style"]
    assert item_id.completion.values == ["42"]


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_answers_a_sampling_question_with_its_model(
    url: str, transport: str, mode: str
) -> None:
    asked: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Lima"),
            model="a-model",
            stop_reason="endTurn",
        )

    async def body(client: Client) -> Any:
        return await client.call_tool("capital", {"country": "Peru"})

    result = run(url, transport, mode, body, sampling_callback=sampling)
    assert asked == ["Capital of Peru?"]
    assert result.content[0].text == "the model says: Lima"
    assert result.is_error is False


# --------------------------------------------------------------------------- tasks

TASKS = "io.modelcontextprotocol/tasks"


def test_the_sdk_runs_a_tool_as_a_task_and_fetches_its_result_after_reconnecting(
    url: str,
) -> None:
    from mcp.client.extension import advertise
    from pydantic import ConfigDict

    class CreatedTask(types.Result):
        model_config = ConfigDict(extra="allow")
        result_type: Literal["task"] = "task"
        task_id: str
        status: str

    class TaskStatus(types.Result):
        model_config = ConfigDict(extra="allow")
        task_id: str
        status: str

    from mcp.client.extension import ClientExtension, ResultClaim

    async def unresolved(result: CreatedTask, context: Any) -> types.CallToolResult:
        raise AssertionError("the test reads the task itself")

    class Tasks(ClientExtension):
        identifier = TASKS

        def claims(self) -> Any:
            return [ResultClaim(result_type="task", model=CreatedTask, resolve=unresolved)]

    async def create(client: Client) -> str:
        created = await client.session.call_tool("slow", {"seconds": 0.5}, allow_claimed=True)
        assert isinstance(created, CreatedTask) and created.status == "working"
        return created.task_id

    from typing import ClassVar

    from mcp.types import Request as SdkRequest

    class TasksGet(SdkRequest[Any, Any]):
        name_param: ClassVar[str | None] = "taskId"  # SEP-2663: Mcp-Name is the task's id

    async def fetch(task_id: str, client: Client) -> Any:
        request = TasksGet(method="tasks/get", params={"taskId": task_id})
        while True:
            got = await client.session.send_request(request, TaskStatus)
            if got.status in ("completed", "failed", "cancelled"):
                return got
            await anyio.sleep(0.05)  # the task's own poll interval would be longer

    task_id = run(url, "http", "2026-07-28", create, extensions=[Tasks()])
    # A new client, a new connection: the task was the server's, not the first client's.
    got = run(url, "http", "2026-07-28", lambda c: fetch(task_id, c), extensions=[advertise(TASKS)])
    assert got.status == "completed"
    extra = got.model_extra or {}
    assert extra["result"]["content"] == [{"type": "text", "text": "slept 0.5"}]
