"""An ``mcp.json`` entry of ``"type": "openapi"`` through every path an MCP server's entry
takes: the command line (``list``, ``call``, ``serve``, ``serve --search``), the gateway's
federation beside a real stdio server, and the one naming rule of the file's entries
(``<entry>_<tool>`` unless ``prefix`` says otherwise)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_helpers import child_env, run
from rest_server import RestServer
from test_openapi import petstore
from toolnexus.errors import McpError
from toolnexus.mcp import McpClient, McpSource, federate

FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))


@pytest.fixture
def server() -> Iterator[RestServer]:
    running = RestServer()
    try:
        yield running
    finally:
        running.stop()


def write_config(tmp_path: Path, server: RestServer, **pets: object) -> Path:
    """An mcp.json of the OpenAPI entry ``pets`` (``pets`` adds to it) and the stdio
    server ``fake`` (tools, resources and a prompt)."""
    (tmp_path / "openapi.json").write_text(json.dumps(petstore(server.url)))
    config = tmp_path / "mcp.json"
    entries = {
        "pets": {
            "type": "openapi",
            "document": "openapi.json",
            "credentials": {"key": "${PETS_KEY}"},
            **pets,
        },
        "fake": {"command": sys.executable, "args": [FAKE, "resources"]},
    }
    config.write_text(json.dumps({"mcpServers": entries}))
    return config


def test_cli_list_and_call_an_openapi_entry_beside_a_stdio_server(
    server: RestServer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, server)
    listed = run("list", str(config))
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    assert "pets_getPet" in names and "fake_echo" in names
    called = run("call", str(config), "pets_getPet", "petId=7", env={"PETS_KEY": "k-7"})
    assert called.returncode == 0, called.stderr
    assert "Traceback" not in called.stderr
    assert server.requests[-1]["path"] == "/echo/pets/7"
    assert server.requests[-1]["headers"]["x-api-key"] == "k-7"


def test_serve_gives_an_openapi_entrys_operations_with_the_servers_items(
    server: RestServer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, server)
    env = {**child_env(), "PETS_KEY": "k-serve"}
    with McpClient(sys.executable, ["-m", "toolnexus", "serve", str(config)], env=env) as client:
        names = [spec["name"] for spec in client.list_tools()]
        assert "pets_getPet" in names and "fake_echo" in names
        assert "fake+fake://doc" in [each["uri"] for each in client.list_resources()]
        result = client.call_tool("pets_getPet", {"petId": 3})
    assert not result.is_error, result.output
    assert server.requests[-1]["path"] == "/echo/pets/3"
    assert server.requests[-1]["headers"]["x-api-key"] == "k-serve"


def test_serve_search_finds_and_calls_an_openapi_entrys_operation(
    server: RestServer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, server)
    env = {**child_env(), "PETS_KEY": "k-search"}
    argv = ["-m", "toolnexus", "serve", str(config), "--search"]
    with McpClient(sys.executable, argv, env=env) as client:
        listed = [spec["name"] for spec in client.list_tools()]
        assert "search_tools" in listed and "call_tool" in listed
        found = client.call_tool("search_tools", {"query": "one pet"})
        assert "pets_getPet" in [each["name"] for each in json.loads(found.output)]
        result = client.call_tool(
            "call_tool", {"name": "pets_getPet", "arguments": json.dumps({"petId": 5})}
        )
    assert not result.is_error, result.output
    assert server.requests[-1]["path"] == "/echo/pets/5"


def test_federation_offers_the_servers_items_and_leaves_openapi_entries_to_their_tools(
    server: RestServer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, server)
    with McpSource(config).connect() as source:
        assert {name: s.status for name, s in source.status().items()} == {
            "pets": "connected",
            "fake": "connected",
        }
        federation = federate(source)
        assert "pets" not in federation.problems
        assert list(source.clients()) == ["fake"]
        uris = [each.uri for each in source.toolkit.resources()]
        assert "fake+fake://doc" in uris
        assert "fake_greet" in [each.name for each in source.toolkit.prompts()]
        assert "pets_getPet" in source.toolkit
        with pytest.raises(McpError, match=r"'pets': an openapi entry .*connected: fake"):
            source.client("pets")


def test_an_openapi_entrys_tools_are_named_after_it_unless_its_prefix_says_otherwise(
    server: RestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PETS_KEY", "k")
    config = write_config(tmp_path, server)
    with McpSource(config).connect() as source:
        toolkit = source.toolkit
        assert "pets_getPet" in toolkit and "getPet" not in toolkit
        assert not toolkit.execute("pets_getPet", {"petId": 1}).is_error
        assert toolkit.namespace_of("pets_getPet").name == "pets_pets"  # <entry>_<tag>
    with McpSource(config, prefix={"pets": "p_"}).connect() as source:
        assert "p_getPet" in source.toolkit and "pets_getPet" not in source.toolkit
    config = write_config(tmp_path, server, prefix="")  # as for a server: its own names
    with McpSource(config).connect() as source:
        assert "getPet" in source.toolkit and "fake_echo" in source.toolkit


def test_an_openapi_entry_whose_name_a_tool_name_cannot_hold_is_sanitised(
    server: RestServer, tmp_path: Path
) -> None:
    (tmp_path / "openapi.json").write_text(json.dumps(petstore(server.url)))
    config = tmp_path / "mcp.json"
    entry = {"type": "openapi", "document": "openapi.json"}
    config.write_text(json.dumps({"mcpServers": {"my pets": entry}}))
    with McpSource(config).connect() as source:
        assert source.status()["my pets"].status == "connected"
        assert "my_pets_getPet" in source.toolkit
