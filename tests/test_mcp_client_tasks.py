"""The client side of tasks: a tool the server runs only as a task (the modern era's
tasks extension here; the legacy era's against server-everything in
``test_mcp_gateway_primitives_interop.py``) is one call to its caller — the client
creates the task, polls it, takes its result — and the caller's cancel cancels the
upstream task. Through the gateway it is an ordinary tool.

The server is ``toolnexus serve tests/replica_tools.py:toolkit``: ``long_job(label)``
runs only as a task and holds until the file ``go-<label>`` exists; cancelled, it writes
``cancelled-<label>-<pid>``. ``tests/task_tools.py``'s ``release`` runs only as a task
and asks a question first.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from timing import TIMEOUT, wait_until
from toolnexus import Answer, Host, Toolkit, ToolResult
from toolnexus.mcp import HttpServer, McpClient, ServerOptions

TOOLS = str(Path(__file__).with_name("replica_tools.py"))
ASKING = str(Path(__file__).with_name("task_tools.py"))
SERVE = [sys.executable, "-m", "toolnexus", "serve", f"{TOOLS}:toolkit"]


def test_a_tool_that_runs_only_as_a_task_is_one_call(tmp_path: Path) -> None:
    (tmp_path / "go-a").touch()
    env = {"TOOLNEXUS_TEST_RUNS": str(tmp_path)}
    with McpClient(SERVE[0], SERVE[1:], name="rt", env=env) as client:
        listed = {tool["name"]: tool.get("execution") for tool in client.list_tools()}
        assert listed["long_job"] == {"taskSupport": "required"}
        result = client.call_tool("long_job", {"label": "a"})
        assert client.era == "modern"
    assert not result.is_error, result.output
    assert result.output.startswith("a done by ")


def test_cancelling_the_call_cancels_the_upstream_task(tmp_path: Path) -> None:
    env = {"TOOLNEXUS_TEST_RUNS": str(tmp_path)}
    with McpClient(SERVE[0], SERVE[1:], name="rt", env=env) as client:
        with Host(Toolkit(client.tools())) as host:
            call = host.submit("rt_long_job", {"label": "b"})
            assert wait_until(lambda: any(tmp_path.glob("started-b-*")))
            call.cancel()
            result = call.result(TIMEOUT)
        # The server heard it: the task's tool saw its cancel (tasks/cancel).
        assert wait_until(lambda: any(tmp_path.glob("cancelled-b-*")))
    assert result.is_error and "cancelled" in result.output


def test_a_task_only_tool_through_the_gateway_is_an_ordinary_tool(tmp_path: Path) -> None:
    (tmp_path / "go-c").touch()
    entry = {"command": SERVE[0], "args": SERVE[1:], "env": {"TOOLNEXUS_TEST_RUNS": str(tmp_path)}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"rt": entry}}), encoding="utf-8")
    gateway = [sys.executable, "-m", "toolnexus", "serve", str(config)]
    # A legacy client of the gateway speaks no tasks at all, and still gets the result.
    client = McpClient(gateway[0], gateway[1:], name="gw", protocol_version="2025-11-25")
    with client:
        result = client.call_tool("rt_long_job", {"label": "c"})
    assert not result.is_error, result.output
    assert result.output.startswith("c done by ")


def test_a_tasks_question_is_the_calls_and_its_answer_reaches_the_task() -> None:
    serve = [sys.executable, "-m", "toolnexus", "serve", f"{ASKING}:toolkit"]
    client = McpClient(serve[0], serve[1:], name="tt")
    with client, Host(Toolkit(client.tools())) as host:
        first = host.call("tt_release", {"version": "1.2"})
        question = ToolResult.pending_of(first)
        assert question is not None and question.prompt == "Where should 1.2 go?"
        done = host.resume(
            "tt_release",
            {"version": "1.2"},
            first,
            Answer(question.id, True, {"env": "staging"}),
        )
    assert not done.is_error, done.output
    assert done.output == "1.2 released to staging"


def test_a_question_a_running_task_asks_is_answered_with_tasks_update(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from task_tools import toolkit

    sent: list[str] = []
    with HttpServer(toolkit, ServerOptions(task_after_ms=0), port=0) as server:
        server.start()
        client = McpClient(url=server.url, name="tt")
        original = client._request

        def counting(method: str, params: Any = None, **options: Any) -> Any:
            sent.append(method)
            return original(method, params, **options)

        monkeypatch.setattr(client, "_request", counting)
        with client, Host(Toolkit(client.tools())) as host:
            first = host.call("tt_release_later", {"version": "2.0"})
            question = ToolResult.pending_of(first)
            assert question is not None and question.prompt == "Where should 2.0 go?"
            answer = Answer(question.id, True, {"env": "prod"})
            done = host.resume("tt_release_later", {"version": "2.0"}, first, answer)
    assert not done.is_error, done.output
    assert done.output == "2.0 released to prod"
    assert "tasks/update" in sent and sent.count("tools/call") == 1  # the task's own


def test_an_upstream_tasks_question_reaches_the_gateways_client(tmp_path: Path) -> None:
    """The upstream makes the call a task and asks there; the gateway's client gets the
    question as its call's own, and its answer reaches the upstream task."""
    from task_tools import toolkit

    with HttpServer(toolkit, ServerOptions(task_after_ms=0), port=0) as server:
        server.start()
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"tt": {"url": server.url}}}))
        gateway = [sys.executable, "-m", "toolnexus", "serve", str(config)]
        client = McpClient(gateway[0], gateway[1:], name="gw")
        with client, Host(Toolkit(client.tools())) as host:
            first = host.call("gw_tt_release_later", {"version": "3.1"})
            question = ToolResult.pending_of(first)
            assert question is not None and question.prompt == "Where should 3.1 go?"
            answer = Answer(question.id, True, {"env": "eu"})
            done = host.resume("gw_tt_release_later", {"version": "3.1"}, first, answer)
    assert not done.is_error, done.output
    assert done.output == "3.1 released to eu"


def test_an_answer_for_a_task_the_server_does_not_know_is_a_named_error() -> None:
    """An answer whose question names a task this client did not create (or one gone): the
    server refuses ``tasks/update``, and the call's error names the task and why."""
    from toolnexus.mcp._client._questions import input_required

    asked = {
        "inputRequests": {
            "q": {
                "method": "elicitation/create",
                "params": {"message": "Env?", "requestedSchema": {"type": "object"}},
            }
        },
        "requestState": "toolnexus-task:tsk-not-mine",
    }
    question = ToolResult.pending_of(input_required("release", "tt", asked))
    assert question is not None
    serve = [sys.executable, "-m", "toolnexus", "serve", f"{ASKING}:toolkit"]
    with McpClient(serve[0], serve[1:], name="tt") as client:
        client.list_tools()
        result = client.call_tool("release", {"version": "1"}, answer=Answer(question.id, True, {}))
    assert result.is_error
    assert "task tsk-not-mine: tasks/update failed" in result.output
