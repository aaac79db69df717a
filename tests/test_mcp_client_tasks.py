"""The client side of tasks: a tool the server runs only as a task (the modern era's
tasks extension here; the legacy era's against server-everything in
``test_mcp_gateway_primitives_interop.py``) is one call to its caller — the client
creates the task, polls it, takes its result — and the caller's cancel cancels the
upstream task. Through the gateway it is an ordinary tool.

The server is ``toolnexus serve tests/replica_tools.py:toolkit``: ``long_job(label)``
runs only as a task and holds until the file ``go-<label>`` exists; cancelled, it writes
``cancelled-<label>-<pid>``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from timing import TIMEOUT, wait_until
from toolnexus import Host, Toolkit
from toolnexus.mcp import McpClient

TOOLS = str(Path(__file__).with_name("replica_tools.py"))
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
