"""A catalog per principal: with ``auth``, each caller of the gateway sees the upstream
tools, resources and prompts its scopes allow (``scopes`` per upstream, ``toolScopes``
per tool, in ``mcp.json``), and a call outside its view is refused as unknown — the answer
a name that does not exist gets — never as forbidden.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus import Principal
from toolnexus.errors import McpError
from toolnexus.mcp import (
    AccessOptions,
    HttpServer,
    McpClient,
    McpSource,
    ServerOptions,
    federate,
)

FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))
PRINCIPALS = {
    "alice-token": Principal("alice", scopes="admin"),
    "bob-token": Principal("bob", scopes=""),
    "carol-token": Principal("carol", scopes="admin ops"),
}


def verify(token: str) -> Principal | None:
    return PRINCIPALS.get(token)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = {
        "mcpServers": {
            "pub": {"command": sys.executable, "args": [FAKE, "resources"]},
            "adm": {"command": sys.executable, "args": [FAKE, "resources"], "scopes": ["admin"]},
            "mix": {
                "command": sys.executable,
                "args": [FAKE, "fine"],
                "toolScopes": {"echo": "ops"},
            },
        }
    }
    with McpSource(config).connect() as source:
        federate(source)
        options = ServerOptions(access=AccessOptions(verify_token=verify))
        with HttpServer(source.toolkit, options, port=0) as server:
            server.start()
            yield server.url


def client(url: str, token: str) -> McpClient:
    return McpClient(url=url, headers={"Authorization": f"Bearer {token}"}, name=token)


def catalog(url: str, token: str) -> tuple[list[str], list[str], list[str]]:
    with client(url, token) as made:
        tools = sorted(tool["name"] for tool in made.list_tools())
        resources = sorted(r["uri"] for r in made.list_resources())
        prompts = sorted(p["name"] for p in made.list_prompts())
    return tools, resources, prompts


def test_two_principals_see_different_catalogs_of_the_same_upstreams(url: str) -> None:
    alice = catalog(url, "alice-token")
    bob = catalog(url, "bob-token")
    carol = catalog(url, "carol-token")
    assert alice[0] == ["adm_echo", "pub_echo"]  # mix_echo asks for ops
    assert bob[0] == ["pub_echo"]
    assert carol[0] == ["adm_echo", "mix_echo", "pub_echo"]
    assert alice[1] == ["adm+fake://doc", "adm+notes://same", "pub+fake://doc", "pub+notes://same"]
    assert bob[1] == ["pub+fake://doc", "pub+notes://same"]
    assert alice[2] == ["adm_greet", "pub_greet"] and bob[2] == ["pub_greet"]


def test_a_catalog_filtered_per_principal_is_marked_private_for_shared_caches(url: str) -> None:
    # cacheScope "public" lets a cache shared across principals (a proxy, a gateway in
    # front) hand alice's catalog to bob; what a caller sees depends on its scopes here.
    methods = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
    for token in ("alice-token", "bob-token"):
        with client(url, token) as made:
            made.list_tools()
            made.list_resources()
            made.list_resource_templates()
            made.list_prompts()
            assert [made.cache_scope(method) for method in methods] == ["private"] * 4, token


def test_a_read_of_a_resource_gated_per_principal_is_marked_private(url: str) -> None:
    # The read is answered on the upstream's own thread: still as its caller, so its
    # cache scope is the caller's, and the upstream's hints are found for it.
    with client(url, "alice-token") as made:
        contents, hints = made._read("adm+fake://doc", None)
    assert contents and hints.get("cacheScope") == "private"


def test_a_call_outside_the_callers_view_is_refused_as_unknown(url: str) -> None:
    with client(url, "bob-token") as bob:
        hidden = bob.call_tool("adm_echo", {"text": "hi"})
        missing = bob.call_tool("xyz_echo", {"text": "hi"})
        allowed = bob.call_tool("pub_echo", {"text": "hi"})
        with pytest.raises(McpError) as read:
            bob.read_resource("adm+fake://doc")
        with pytest.raises(McpError) as got:
            bob.get_prompt("adm_greet", {"who": "x"})
    assert allowed.output == "hi"
    assert hidden.is_error and missing.is_error
    # The same words as for a name that does not exist: it never says the tool is there.
    assert "unknown tool 'adm_echo'" in hidden.output
    assert hidden.output.replace("adm_echo", "NAME") == missing.output.replace("xyz_echo", "NAME")
    for text in (hidden.output, read.value.problem, got.value.problem):
        assert "forbidden" not in text.lower() and "scope" not in text.lower()
        assert "adm_" not in text.replace("adm_echo", "").replace("adm_greet", "")
    assert "Resource not found" in read.value.problem
    with client(url, "alice-token") as alice:
        assert alice.call_tool("adm_echo", {"text": "hi"}).output == "hi"


def test_scope_rules_that_are_not_scopes_are_refused_naming_the_place() -> None:
    entry = {"command": sys.executable, "args": [FAKE], "toolScopes": ["echo"]}
    with pytest.raises(TypeError, match=r"mcpServers\.x\.toolScopes: must map"):
        McpSource({"mcpServers": {"x": entry}})
    entry = {"command": sys.executable, "args": [FAKE], "scopes": [1]}
    with pytest.raises(TypeError, match=r"mcpServers\.x\.scopes: must be a list of strings"):
        McpSource({"mcpServers": {"x": entry}})


@pytest.fixture(scope="module")
def search_url() -> Iterator[str]:
    # The same upstreams, deferred, served as a small core plus the search meta-tools.
    entry: dict[str, object] = {"command": sys.executable, "defer": True}
    config = {
        "mcpServers": {
            "pub": {**entry, "args": [FAKE, "resources"]},
            "adm": {**entry, "args": [FAKE, "resources"], "scopes": ["admin"]},
            "mix": {**entry, "args": [FAKE, "fine"], "toolScopes": {"echo": "ops"}},
        }
    }
    with McpSource(config).connect() as source:
        federate(source)
        options = ServerOptions(access=AccessOptions(verify_token=verify), search=True)
        with HttpServer(source.toolkit, options, port=0) as server:
            server.start()
            yield server.url


def found(url: str, token: str, query: str) -> list[str]:
    with client(url, token) as made:
        result = made.call_tool("search_tools", {"query": query})
    assert not result.is_error, result.output
    return sorted(each["name"] for each in json.loads(result.output))


def test_the_search_meta_tools_search_and_call_only_what_the_caller_may_see(
    search_url: str,
) -> None:
    with client(search_url, "bob-token") as bob:
        assert sorted(t["name"] for t in bob.list_tools()) == ["call_tool", "search_tools"]
    assert found(search_url, "carol-token", "echo") == ["adm_echo", "mix_echo", "pub_echo"]
    assert found(search_url, "alice-token", "echo") == ["adm_echo", "pub_echo"]
    assert found(search_url, "bob-token", "echo") == ["pub_echo"]
    # An exact name and a regex-free name query show nothing hidden either.
    assert found(search_url, "bob-token", "adm_echo") == ["pub_echo"]
    arguments = json.dumps({"text": "hi"})
    with client(search_url, "bob-token") as bob:
        hidden = bob.call_tool("call_tool", {"name": "adm_echo", "arguments": arguments})
        missing = bob.call_tool("call_tool", {"name": "xyz_echo", "arguments": arguments})
        allowed = bob.call_tool("call_tool", {"name": "pub_echo", "arguments": arguments})
    assert allowed.output == "hi"
    assert hidden.is_error and missing.is_error
    # The answer for a hidden tool is the one for a name that does not exist.
    assert hidden.output.replace("adm_echo", "NAME") == missing.output.replace("xyz_echo", "NAME")
    with client(search_url, "carol-token") as carol:
        called = carol.call_tool("call_tool", {"name": "mix_echo", "arguments": arguments})
    assert called.output == "hi"
