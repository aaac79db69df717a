"""An OpenAPI document from the command line and from ``mcp.json``: ``toolnexus list|call
openapi.json``, ``toolnexus serve openapi.json`` to an MCP client, and an ``mcp.json``
entry of ``"type": "openapi"``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import child_env, run
from rest_server import RestServer
from test_openapi import petstore
from toolnexus.mcp import McpClient, McpSource


@pytest.fixture
def server() -> Iterator[RestServer]:
    running = RestServer()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def document(server: RestServer, tmp_path: Path) -> Path:
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(petstore(server.url)))
    return path


def test_list_shows_one_tool_per_operation(document):
    done = run("list", str(document))
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert names == ["getPet", "delete_pets_petId", "addPet", "listPets"]


def test_call_sends_key_value_arguments(document, server):
    done = run("call", str(document), "getPet", "petId=7", "X-Trace=abc")
    assert done.returncode == 0, done.stderr
    seen = server.requests[-1]
    assert seen["path"] == "/echo/pets/7"
    assert seen["headers"]["x-trace"] == "abc"


def test_call_of_an_error_status_exits_with_the_tool_error(document, server):
    broken = json.loads(document.read_text())
    # every path of this server answers 500: the path goes after a fragment mark
    broken["servers"] = [{"url": server.url + "/fail#"}]
    document.write_text(json.dumps(broken))
    done = run("call", str(document), "listPets")
    assert done.returncode != 0
    assert "HTTP 500" in done.stdout + done.stderr


def test_a_json_file_without_openapi_is_still_read_as_mcp_json(tmp_path):
    config = tmp_path / "mcp.json"
    # a server named "openapi" does not make the file an OpenAPI document
    server = {
        "command": sys.executable,
        "args": ["-m", "toolnexus", "serve", "toolnexus.demo:toolkit"],
    }
    config.write_text(json.dumps({"mcpServers": {"openapi": server}}))
    done = run("list", str(config))
    assert done.returncode == 0, done.stderr
    assert "openapi_" in done.stdout  # the demo's tools, with the server's prefix


def test_serve_gives_the_operations_to_an_mcp_client(document, server):
    with McpClient(
        sys.executable, ["-m", "toolnexus", "serve", str(document)], env=child_env()
    ) as client:
        names = [tool.name for tool in client.tools()]
        assert "getPet" in " ".join(names)
        result = client.call_tool("getPet", {"petId": 3})
    assert not result.is_error, result.output
    assert server.requests[-1]["path"] == "/echo/pets/3"


def test_an_mcp_json_entry_of_type_openapi(document, server, tmp_path, monkeypatch):
    monkeypatch.setenv("PETS_KEY", "k-from-env")
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "pets": {
                        "type": "openapi",
                        "document": document.name,  # relative to the file
                        "credentials": {"key": "${PETS_KEY}"},
                        "includeTools": ["getPet", "listPets"],
                        "prefix": "pets_",
                        "outputSchemas": False,
                    }
                }
            }
        )
    )
    with McpSource(config).connect() as source:
        assert source.status()["pets"].status == "connected"
        assert [tool.name for tool in source.toolkit] == ["pets_getPet", "pets_listPets"]
        assert source.toolkit.get("pets_getPet").output_schema is None
        result = source.toolkit.execute("pets_getPet", {"petId": 2})
    assert not result.is_error, result.output
    assert server.requests[-1]["headers"]["x-api-key"] == "k-from-env"


def test_an_openapi_entry_whose_document_fails_is_a_failed_status(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"bad": {"type": "openapi", "document": "missing.json"}}})
    )
    with McpSource(config).connect() as source:
        status = source.status()["bad"]
    assert status.status == "failed" and "cannot read it" in (status.reason or "")


def big_petstore(url: str) -> dict[str, Any]:
    """The petstore with 30 more operations (34): above the line where deferral starts."""
    doc = petstore(url)
    doc["tags"] = [{"name": "pets", "description": "Everything about your pets"}]
    doc["paths"].update(
        {
            f"/n{i}": {"get": {"tags": ["numbers"], "responses": {"200": {"description": "ok"}}}}
            for i in range(29)
        }
    )
    doc["paths"]["/untagged"] = {"get": {"responses": {"200": {"description": "ok"}}}}
    return doc


def test_an_openapi_ref_is_namespaced_by_tag_and_deferred_above_30(server, tmp_path):
    from toolnexus._cli._refs import load_toolkit

    path = tmp_path / "big.json"
    path.write_text(json.dumps(big_petstore(server.url)))
    toolkit = load_toolkit(str(path))
    assert [each.name for each in toolkit.namespaces()] == ["pets", "admin", "numbers"]
    assert all(toolkit.is_deferred(tool.name) for tool in toolkit)
    assert toolkit.namespace_of("getPet").description == "Everything about your pets"


def test_serve_search_over_an_openapi_document_finds_and_calls_an_operation(server, tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big_petstore(server.url)))
    with McpClient(
        sys.executable, ["-m", "toolnexus", "serve", str(path), "--search"], env=child_env()
    ) as client:
        assert [spec["name"] for spec in client.list_tools()] == ["search_tools", "call_tool"]
        found = client.call_tool("search_tools", {"query": "one pet"})
        assert "getPet" in [each["name"] for each in json.loads(found.output)]
        result = client.call_tool(
            "call_tool", {"name": "getPet", "arguments": json.dumps({"petId": 5})}
        )
    assert not result.is_error, result.output
    assert server.requests[-1]["path"] == "/echo/pets/5"


def test_an_mcp_json_openapi_entry_has_a_namespace_per_tag_and_defers(server, tmp_path):
    (tmp_path / "big.json").write_text(json.dumps(big_petstore(server.url)))
    (tmp_path / "small.json").write_text(json.dumps(petstore(server.url)))
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "big": {"type": "openapi", "document": "big.json"},
                    "small": {"type": "openapi", "document": "small.json", "prefix": "s_"},
                    "told": {
                        "type": "openapi",
                        "document": "big.json",
                        "prefix": "t_",
                        "defer": False,
                        "description": "The pets, loaded",
                    },
                }
            }
        )
    )
    with McpSource(config).connect() as source:
        toolkit = source.toolkit
        spaces = {each.name: each for each in toolkit.namespaces()}
        # a tag's namespace is named after the entry too: two documents share "pets"
        assert spaces["big_pets"].description == "Everything about your pets"
        assert spaces["big_pets"].defer is True and spaces["big_numbers"].defer is True
        assert toolkit.namespace_of("big_getPet") is spaces["big_pets"]
        assert toolkit.namespace_of("big_get_untagged") is spaces["big"]  # the entry's own
        assert spaces["big"].defer is True and spaces["big"].description == (
            "The operations of Pets."
        )
        assert toolkit.namespace_of("s_getPet") is spaces["small_pets"]
        assert spaces["small_pets"].defer is None  # 4 operations: as the gateway says
        assert "small" not in spaces  # every operation has a tag: no empty namespace
        assert spaces["told_pets"].defer is False and spaces["told"].description == (
            "The pets, loaded"
        )
        assert toolkit.is_deferred("big_get_n3") and not toolkit.is_deferred("t_get_n3")
        assert not toolkit.is_deferred("s_getPet")


def test_an_openapi_entrys_defer_must_be_a_boolean(tmp_path):
    config = tmp_path / "mcp.json"
    entry = {"type": "openapi", "document": "x.json", "defer": "yes"}
    config.write_text(json.dumps({"mcpServers": {"api": entry}}))
    with pytest.raises(ValueError, match=r"api\.defer: must be true or false"):
        McpSource(config)
