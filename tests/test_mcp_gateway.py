"""``mcp.json`` on the command line, and ``toolnexus serve mcp.json``: a gateway.

The gateway serves the configured servers' tools to any MCP client; a remote server's
question reaches the gateway's client as that client's own question (an elicitation, or an
``input_required`` result), and its answer travels back to the server that asked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus import Answer, Host, Request, Toolkit, ToolResult
from toolnexus.mcp import McpClient

TOOLS = str(Path(__file__).with_name("mcp_client_tools.py"))


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gateway") / "mcp.json"
    servers = {
        "srv": {
            "command": sys.executable,
            "args": ["-m", "toolnexus", "serve", f"{TOOLS}:toolkit"],
        },
        "gone": {"command": "/no/such/mcp-server"},
    }
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolnexus", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_list_shows_the_remote_tools_and_names_the_server_that_failed(config: Path) -> None:
    done = run("list", str(config))
    assert done.returncode == 0, done.stderr
    assert "srv_echo" in done.stdout and "srv_ask" in done.stdout
    assert "MCP server 'gone' failed" in done.stderr


def test_call_runs_a_remote_tool(config: Path) -> None:
    done = run("call", str(config), "srv_add", "a=20", "b=22")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"


@pytest.fixture(scope="module", params=["2026-07-28", "2025-11-25"])
def gateway(request: pytest.FixtureRequest, config: Path) -> Iterator[McpClient]:
    command = [sys.executable, "-m", "toolnexus", "serve", str(config)]
    with McpClient(command[0], command[1:], name="gw", protocol_version=request.param) as made:
        yield made


def test_the_gateway_serves_the_remote_tools(gateway: McpClient) -> None:
    names = [tool["name"] for tool in gateway.list_tools()]
    assert "srv_echo" in names and "srv_picture" in names
    assert gateway.call_tool("srv_echo", {"text": "through two hops"}).output == "through two hops"
    picture = gateway.call_tool("srv_picture", {})
    assert [part.type for part in picture.parts] == ["image"]


def test_a_remote_question_reaches_the_gateways_client(gateway: McpClient) -> None:
    with Host(Toolkit(gateway.tools(prefix=""))) as host:
        first = host.call("srv_ask", {})
        request = ToolResult.pending_of(first)
        assert isinstance(request, Request) and request.prompt == "Your name?"
        assert request.data is not None and "name" in request.data["schema"]["properties"]
        done = host.resume("srv_ask", {}, first, Answer(request.id, True, {"name": "Ada"}))
    assert done.output == "hello Ada polite=True"


def test_a_remote_question_is_answered_inline_through_the_gateway(gateway: McpClient) -> None:
    def wait_for(request: Request) -> Answer:
        return Answer(request.id, True, {"name": "Bo", "polite": False})

    with Host(Toolkit(gateway.tools(prefix="")), wait_for=wait_for) as host:
        assert host.call("srv_ask", {}).output == "hello Bo polite=False"


def test_the_gateway_serves_local_tools_next_to_the_remote_ones(config: Path) -> None:
    command = [sys.executable, "-m", "toolnexus", "serve", str(config), f"{TOOLS}:add"]
    with McpClient(command[0], command[1:], name="gw") as gateway:
        names = [tool["name"] for tool in gateway.list_tools()]
        assert "add" in names and "srv_add" in names and "srv_ask" in names
        assert gateway.call_tool("add", {"a": 1, "b": 2}).output == "3"  # here
        assert gateway.call_tool("srv_add", {"a": 3, "b": 4}).output == "7"  # one hop on
        # A remote question still reaches the gateway's client.
        with Host(Toolkit(gateway.tools(prefix=""))) as host:
            request = ToolResult.pending_of(host.call("srv_ask", {}))
        assert isinstance(request, Request) and request.prompt == "Your name?"


def test_local_tools_alone_are_served_as_one() -> None:
    command = [sys.executable, "-m", "toolnexus", "serve", f"{TOOLS}:add", f"{TOOLS}:echo"]
    with McpClient(command[0], command[1:], name="two") as server:
        assert sorted(tool["name"] for tool in server.list_tools()) == ["add", "echo"]


def test_a_name_two_refs_offer_is_refused_naming_both() -> None:
    done = run("serve", f"{TOOLS}:add", f"{TOOLS}:toolkit")
    assert done.returncode != 0
    assert "both offer the tool 'add'" in done.stderr
    assert f"{TOOLS}:add" in done.stderr and f"{TOOLS}:toolkit" in done.stderr


def test_serve_takes_one_mcp_json(config: Path) -> None:
    done = run("serve", str(config), str(config))
    assert done.returncode != 0
    assert "serve takes one mcp.json" in done.stderr


def test_each_servers_tools_are_one_namespace_of_the_gateway(config: Path) -> None:
    from toolnexus.mcp import load_mcp_json

    with load_mcp_json(config) as source:
        toolkit = source.toolkit
        (space,) = toolkit.namespaces()
        assert space.name == "srv"
        assert [t.name for t in space.tools()] == [t.name for t in toolkit.tools()]
        assert toolkit.view(namespaces=["srv"]).search(toolkit.tools()[0].name)


def test_a_server_entry_may_defer_its_namespace(tmp_path: Path) -> None:
    from toolnexus.mcp import load_mcp_json

    entry = {
        "command": sys.executable,
        "args": ["-m", "toolnexus", "serve", f"{TOOLS}:toolkit"],
        "description": "Test tools",
        "defer": True,
    }
    with load_mcp_json({"mcpServers": {"srv": entry}}) as source:
        (space,) = source.toolkit.namespaces()
        assert space.description == "Test tools" and space.defer is True
        assert all(source.toolkit.is_deferred(t.name) for t in source.toolkit.tools())
        listed = [e["function"]["name"] for e in source.toolkit.to_openai()]
        assert listed == ["search_tools", "call_tool"]
    with pytest.raises(ValueError, match=r"srv\.defer: must be true or false"):
        load_mcp_json({"mcpServers": {"srv": {**entry, "defer": "yes"}}})
