"""OpenAPI import against documents and servers nobody here wrote.

- GitHub's REST description (npm ``@octokit/openapi``, ``api.github.com.json``): it imports
  with no problem into at least 1,000 tools, and every input schema is valid under the
  JSON Schema 2020-12 meta-schema. Set ``TOOLNEXUS_OCTOKIT_OPENAPI`` to the document and
  ``TOOLNEXUS_JSON_SCHEMA_METASCHEMAS`` to the ``draft202012`` meta-schemas folder.
- Round trips through ``@stoplight/prism-cli`` mocking a document (it checks each request
  against the document, so a parameter in the wrong place is a 422, not a pass): path,
  query, header and JSON-body parameters and an error status, through ``Host.call`` and
  through ``toolnexus serve`` with the official MCP SDK's client. Set ``TOOLNEXUS_PRISM``
  to prism's ``dist/index.js`` and ``TOOLNEXUS_NODE`` to node.

Each test skips when its variable is unset — and fails instead under
``TOOLNEXUS_REQUIRE_OPENAPI_INTEROP=1``, as ``.ci/run`` sets it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from timing import TIMEOUT
from toolnexus import Host, Toolkit, load_openapi

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parent.parent
REQUIRE = "TOOLNEXUS_REQUIRE_OPENAPI_INTEROP"


def needed(variable: str, what: str) -> str:
    value = os.environ.get(variable, "")
    if value and os.path.exists(value):
        return value
    message = f"{what} is not available: set {variable} (see this module's docstring)"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


# ----------------------------------------------------------------- GitHub's description


def metaschema_validator() -> Any:
    from toolnexus.validation import Validator

    folder = Path(needed("TOOLNEXUS_JSON_SCHEMA_METASCHEMAS", "the 2020-12 meta-schemas"))
    registry = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            schema = json.loads(path.read_text())
            if isinstance(schema, dict) and "$id" in schema:
                registry[schema["$id"].rstrip("#")] = schema
    return Validator(registry["https://json-schema.org/draft/2020-12/schema"], registry=registry)


def test_github_rest_description_imports_whole_and_every_schema_is_2020_12():
    document = needed("TOOLNEXUS_OCTOKIT_OPENAPI", "@octokit/openapi's api.github.com.json")
    meta = metaschema_validator()
    assert not meta.is_valid({"type": "object", "properties": {"a": {"minLength": -1}}})
    imported = load_openapi(document)
    assert imported.problems == ()
    assert len(imported.tools) >= 1000
    bad = {
        tool.name: meta.errors(dict(tool.input_schema))
        for tool in imported.tools
        if not meta.is_valid(dict(tool.input_schema))
    }
    assert bad == {}
    assert imported.defer is True  # far above 30 operations
    names = [tool.name for tool in imported.tools]
    assert len(set(names)) == len(names) and max(map(len, names)) <= 64


def mcp_listing(toolkit: Toolkit, search: bool) -> list[dict[str, Any]]:
    """Every page of an MCP server's ``tools/list`` (``toolnexus serve [--search]``)."""
    from toolnexus.mcp import Send, ServerOptions, ServerSession

    session = ServerSession(toolkit, ServerOptions(search=search))
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listed: list[dict[str, Any]] = []
    params: dict[str, Any] = {"_meta": meta}
    while True:
        (sent,) = session.receive(
            {"jsonrpc": "2.0", "id": len(listed), "method": "tools/list", "params": params}
        )
        assert isinstance(sent, Send)
        result = sent.message["result"]
        listed += result["tools"]
        if not result.get("nextCursor"):
            return listed
        params = {"_meta": meta, "cursor": result["nextCursor"]}


def test_github_deferred_sends_at_least_95_percent_fewer_definition_bytes():
    """The issue's "Done when": with deferral, GitHub's tool-definition bytes fall by
    at least 95% (what a model without native search, or an MCP client, is sent)."""
    document = needed("TOOLNEXUS_OCTOKIT_OPENAPI", "@octokit/openapi's api.github.com.json")
    deferred = Toolkit.from_openapi(document)  # deferred by default: ~1,200 operations
    listed = Toolkit.from_openapi(document, defer=False)
    assert len(deferred) == len(listed) >= 1000
    assert len(deferred.namespaces()) >= 30  # one per tag
    assert all(deferred.is_deferred(tool.name) for tool in deferred)

    def size(value: Any) -> int:
        return len(json.dumps(value).encode())

    cuts = {
        "to_openai": (deferred.to_openai(), listed.to_openai()),
        "to_anthropic": (deferred.to_anthropic(), listed.to_anthropic()),
        "mcp tools/list": (mcp_listing(deferred, True), mcp_listing(listed, False)),
    }
    for form, (held, whole) in cuts.items():
        assert [entry.get("name") or entry["function"]["name"] for entry in held] == [
            "search_tools",
            "call_tool",
        ], form
        assert len(whole) == len(listed), form
        assert size(held) <= 0.05 * size(whole), (form, size(held), size(whole))
    # and search still finds an operation of the deferred catalog
    assert "issues_create" in [tool.name for tool in deferred.search("open an issue", 5)]


# ----------------------------------------------------------------- prism


MOCKED: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Pets", "version": "1.0.0"},
    "servers": [{"url": "http://127.0.0.1:4010"}],
    "paths": {
        "/pets/{petId}": {
            "get": {
                "operationId": "getPet",
                "parameters": [
                    {"name": "petId", "in": "path", "required": True,
                     "schema": {"type": "integer", "minimum": 1}},
                    {"name": "verbose", "in": "query", "required": True,
                     "schema": {"type": "boolean"}},
                    {"name": "X-Request-Id", "in": "header", "required": True,
                     "schema": {"type": "string", "minLength": 3}},
                ],
                "responses": {
                    "200": {
                        "description": "the pet",
                        "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Pet"},
                            "example": {"id": 7, "name": "rex", "tag": None},
                        }},
                    }
                },
            }
        },
        "/pets": {
            "post": {
                "operationId": "addPet",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/NewPet"}}}},
                "responses": {
                    "201": {
                        "description": "made",
                        "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Pet"},
                            "example": {"id": 8, "name": "tom", "tag": "cat"},
                        }},
                    }
                },
            }
        },
        "/broken": {
            "get": {
                "operationId": "broken",
                "responses": {
                    "503": {
                        "description": "down",
                        "content": {"application/json": {
                            "schema": {"type": "object",
                                       "properties": {"message": {"type": "string"}}},
                            "example": {"message": "maintenance"},
                        }},
                    }
                },
            }
        },
    },
    "components": {
        "schemas": {
            "NewPet": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {"name": {"type": "string"},
                               "tag": {"type": "string", "nullable": True}},
            },
            "Pet": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                               "tag": {"type": "string", "nullable": True}},
            },
        }
    },
}  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def prism(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Prism mocking MOCKED on a free port; yields the document, its server set to it."""
    script = needed("TOOLNEXUS_PRISM", "@stoplight/prism-cli's dist/index.js")
    node = os.environ.get("TOOLNEXUS_NODE") or shutil.which("node") or "node"
    port = free_port()
    folder = tmp_path_factory.mktemp("prism")
    document = folder / "openapi.json"
    served = {**MOCKED, "servers": [{"url": f"http://127.0.0.1:{port}"}]}
    document.write_text(json.dumps(served))
    log = (folder / "prism.log").open("wb")
    process = subprocess.Popen(
        [node, script, "mock", str(document), "-p", str(port), "-h", "127.0.0.1"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if process.poll() is not None:
                raise AssertionError(f"prism exited: {(folder / 'prism.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "prism did not start listening"
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(0.1)
        yield document
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(TIMEOUT)
        log.close()


PET_ARGS = {"petId": 7, "verbose": True, "X-Request-Id": "req-1"}
BODY_ARGS = {"body": {"name": "tom", "tag": "cat"}}


def test_prism_round_trips_through_host_call(prism):
    toolkit = Toolkit.from_openapi(str(prism), strict=True)
    with Host(toolkit) as host:
        pet = host.call("getPet", PET_ARGS, timeout_ms=int(TIMEOUT * 1000))
        made = host.call("addPet", BODY_ARGS, timeout_ms=int(TIMEOUT * 1000))
        broken = host.call("broken", {}, timeout_ms=int(TIMEOUT * 1000))
    # prism answers 422 to a request outside the document: a pass proves each parameter
    # (path, query, header, body) went where the document says
    assert not pet.is_error, pet.output
    assert pet.metadata["structuredContent"] == {"id": 7, "name": "rex", "tag": None}
    assert not made.is_error, made.output
    assert made.metadata["status"] == 201
    assert json.loads(made.output) == {"id": 8, "name": "tom", "tag": "cat"}
    assert broken.is_error
    assert broken.output.startswith("HTTP 503: ") and "maintenance" in broken.output


def test_prism_refuses_what_the_document_does_not_allow(prism):
    # The control: the same server answers 422 to a header that breaks the document
    # (minLength 3), so the pass above is prism checking, not prism accepting anything.
    tool = Toolkit.from_openapi(str(prism)).get("getPet")
    relaxed = {**tool.input_schema, "properties": {**tool.input_schema["properties"]}}
    relaxed["properties"]["X-Request-Id"] = {"type": "string"}
    from toolnexus import Tool

    loose = Tool(name="loose", description="", input_schema=relaxed, fn=tool.fn)
    result = loose({**PET_ARGS, "X-Request-Id": "r"})
    assert result.is_error and result.output.startswith("HTTP 422")


def test_prism_round_trips_through_serve_with_the_sdk_client(prism):
    from extras import require

    require(REQUIRE, "interop", "anyio", "mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", str(prism)],
        cwd=str(ROOT),
        env={"PYTHONPATH": path},
    )

    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            async with Client(parameters, read_timeout_seconds=TIMEOUT) as client:
                listed = await client.list_tools()
                pet = await client.call_tool("getPet", PET_ARGS)
                made = await client.call_tool("addPet", BODY_ARGS)
                broken = await client.call_tool("broken", {})
                return listed, pet, made, broken

    listed, pet, made, broken = anyio.run(main)
    assert sorted(tool.name for tool in listed.tools) == ["addPet", "broken", "getPet"]
    assert pet.is_error is False
    assert pet.structured_content == {"id": 7, "name": "rex", "tag": None}
    assert made.is_error is False
    assert broken.is_error is True
    assert "HTTP 503" in broken.content[0].text
