"""An OpenAPI document from the command line and from ``mcp.json``: ``toolnexus list|call
openapi.json``, ``toolnexus serve openapi.json`` to an MCP client, and an ``mcp.json``
entry of ``"type": "openapi"``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

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
