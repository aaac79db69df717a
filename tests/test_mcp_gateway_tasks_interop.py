"""The official SDK client, with a tasks extension of its own (the SDK ships none: a
``ClientExtension`` claiming ``resultType: "task"`` that polls ``tasks/get``), runs an
upstream task to completion through the gateway — the gateway over stdio and over HTTP, in
front of an upstream over stdio and over HTTP — and the task it polls is the upstream's,
under the gateway's ``rt+…`` id.

server-everything runs its tasks in the legacy era only (2025-11-25), where the gateway
follows them itself (``test_mcp_gateway_primitives_interop.py``); the modern tasks
extension's upstream here is our own server (``tests/replica_tools.py``'s ``long_job``,
which runs only as a task). Needs the interop extra (``mcp``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict, Field, TypeAdapter

from test_mcp_client_interop import one_server_config, served_over_http
from timing import TIMEOUT

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parent.parent
TOOLS = str(Path(__file__).with_name("replica_tools.py"))
TASKS = "io.modelcontextprotocol/tasks"
ANY = TypeAdapter(dict)


class TaskCreated(types.Result):
    """A ``CreateTaskResult``: the task's id and status (its other fields kept as sent)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(default="task", alias="resultType")
    taskId: str
    status: str


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    """``tasks/get`` (the SDK's types have no tasks extension's requests)."""

    name_param: ClassVar[str | None] = "taskId"  # its Mcp-Name header, over HTTP
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams


class Tasks(ClientExtension):
    """Declares the tasks extension and polls a task the server makes to its end."""

    identifier = TASKS

    def __init__(self) -> None:
        self.polled: list[str] = []  # the task ids polled, in order

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.follow)]

    async def follow(self, created: TaskCreated, ctx: ClaimContext) -> types.CallToolResult:
        with anyio.fail_after(4 * TIMEOUT):
            while True:
                self.polled.append(created.taskId)
                request = GetTask(params=TaskParams(taskId=created.taskId))
                task = await ctx.session.send_request(request, ANY)
                if task["status"] == "completed":
                    return types.CallToolResult.model_validate(task["result"])
                assert task["status"] == "working", task
                await anyio.sleep(0.05)


@pytest.fixture(scope="module", params=["stdio upstream", "http upstream"])
def config(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("gateway-tasks")
    (folder / "go-sdk").touch()  # the job ends as soon as it starts
    env = {"TOOLNEXUS_TEST_RUNS": str(folder), "PYTHONPATH": str(ROOT / "src")}
    serve = [sys.executable, "-m", "toolnexus", "serve", f"{TOOLS}:toolkit"]
    stdio = None
    if request.param == "stdio upstream":
        stdio = {"command": serve[0], "args": serve[1:], "env": env}
    with one_server_config(
        folder / "mcp.json", "rt", stdio, lambda port: ([*serve, "--http", str(port)], env)
    ) as path:
        yield path


@pytest.fixture(scope="module")
def url(config: Path) -> Iterator[str]:
    with served_over_http(config) as served:
        yield served


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_sdk_runs_an_upstream_task_through_the_gateway_as_its_own(
    config: Path, url: str, transport: str
) -> None:
    extension = Tasks()

    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            server: Any = url
            if transport == "stdio":
                server = StdioServerParameters(
                    command=sys.executable,
                    args=["-m", "toolnexus", "serve", str(config)],
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                )
            options: Any = {"mode": "2026-07-28", "read_timeout_seconds": TIMEOUT}
            async with Client(server, extensions=[extension], **options) as client:
                return await client.call_tool("rt_long_job", {"label": "sdk"})

    result = anyio.run(main)
    assert not result.is_error, result
    assert result.content[0].text.startswith("sdk done by ")  # type: ignore[union-attr]
    # The task the SDK polled is the upstream's, under the gateway's id for it.
    assert extension.polled and extension.polled[0].startswith("rt+tsk-")
