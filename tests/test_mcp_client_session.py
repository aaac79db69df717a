"""The sans-IO client session (``mcp/_client/_session.py``): the requests it builds, and
the bytes it writes for them from a template, which are always those of the message."""

from __future__ import annotations

from typing import Any

import pytest

import toolnexus.mcp._shared._codec as codec
from toolnexus.errors import McpError
from toolnexus.mcp import ClientSession

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def opened(era: str) -> ClientSession:
    session = ClientSession(name="tëst", log_level="info")
    first = session.open()
    if era == "modern":
        result = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
        session.receive({"jsonrpc": "2.0", "id": first.id, "result": result})
    else:
        session.receive(
            {"jsonrpc": "2.0", "id": first.id, "error": {"code": -32601, "message": "?"}}
        )
        initialize = session.legacy_fallback()
        result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "s"}}
        session.receive({"jsonrpc": "2.0", "id": initialize.id, "result": result})
    assert session.era == era
    return session


PARAMS: list[dict[str, Any] | None] = [
    None,
    {"name": "add", "arguments": {"a": 1, "text": "é ✓"}},
    {"name": "add", "arguments": {}, "_meta": {"traceparent": "00-a-b-01"}},
    {"_meta": {"io.modelcontextprotocol/protocolVersion": "1999", "progressToken": "mine"}},
    {"name": "x", "requestState": {"s": [1, 2]}, "inputResponses": {"k": {"action": "accept"}}},
]


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("progress", [False, True])
def test_a_request_is_written_as_its_message_encodes(
    era: str, params: dict[str, Any] | None, progress: bool
) -> None:
    session = opened(era)
    outgoing = session.request("tools/call", params, progress=progress)
    assert outgoing.to_bytes() == codec.encode(outgoing.message)
    assert (outgoing.line is not None) == (era == "modern")


def test_the_modern_envelope_wins_over_a_request_s_own_meta_and_comes_first() -> None:
    session = opened("modern")
    params = PARAMS[3]
    meta = session.request("tools/call", params, progress=True).message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
    assert meta["progressToken"] == 2  # the request id: the discover request was 1
    assert list(meta)[-1] == "progressToken"
    assert meta["io.modelcontextprotocol/logLevel"] == "info"


def test_a_legacy_request_asks_for_progress_in_its_own_meta() -> None:
    session = opened("legacy")
    message = session.request("tools/call", {"name": "add"}, progress=True).message
    assert message["params"] == {"name": "add", "_meta": {"progressToken": message["id"]}}


def test_what_the_template_cannot_write_is_encoded_whole() -> None:
    session = opened("modern")
    surrogate = session.request("tools/call", {"name": "bad \udcff"})
    assert surrogate.line is None
    assert b"\\udcff" in surrogate.to_bytes()
    not_a_number = session.request("tools/call", {"n": float("nan")})
    assert not_a_number.line is None
    with pytest.raises(ValueError):
        not_a_number.to_bytes()


def test_the_session_answers_the_server_requests_that_need_no_caller() -> None:
    from toolnexus.mcp._client._session import ServerRequest

    session = opened("legacy")
    assert session.answer_request(ServerRequest(4, "ping", {})).message == {
        "jsonrpc": "2.0",
        "id": 4,
        "result": {},
    }
    unknown = session.answer_request(ServerRequest("r", "roots/list", {}))
    assert unknown is not None and unknown.message["error"]["code"] == -32601
    assert session.answer_request(ServerRequest(5, "elicitation/create", {})) is None


def test_only_an_unpinned_discover_is_the_probe() -> None:
    negotiating = ClientSession()
    assert negotiating.probing(negotiating.open())
    pinned = ClientSession(protocol_version=MODERN)
    assert not pinned.probing(pinned.open())
    assert not negotiating.probing(negotiating.legacy_fallback())


def test_list_pages_and_listed_tools_are_read_as_the_server_sent_them() -> None:
    from toolnexus.mcp._client._session import list_page, remote_tools

    page = {"tools": [{"name": "a"}, 3], "nextCursor": "c"}
    assert list_page("s", "tools/list", "tools", page) == ([{"name": "a"}], "c")
    assert list_page("s", "tools/list", "tools", {"tools": [], "nextCursor": ""}) == ([], None)
    with pytest.raises(McpError, match="tools/list answered without a tools array"):
        list_page("s", "tools/list", "tools", {})
    header = {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}
    specs = [
        {"name": "a", "inputSchema": header, "title": 3},
        {"inputSchema": {}},
        {"name": "b", "inputSchema": "no"},
        {"name": "c", "inputSchema": {}},
    ]
    listed = dict(remote_tools(specs, "p_", exclude=("c",)))
    assert listed[""] == "a tool without a name"
    assert listed["b"] == 'inputSchema must be an object, got string "no"'
    fields = listed["a"]
    assert isinstance(fields, dict) and fields["name"] == "p_a" and fields["title"] is None
    assert fields["headers"] == {"r": "Region"} and "c" not in listed


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_tool_call_asks_for_progress_and_carries_a_retry_s_params(era: str) -> None:
    session = opened(era)
    retry = {"inputResponses": {"k": {"action": "accept"}}, "requestState": "s"}
    outgoing = session.call_tool("add", {"a": 1}, retry)
    params = outgoing.message["params"]
    assert outgoing.message["method"] == "tools/call"
    assert {key: params[key] for key in ("name", "arguments", *retry)} == {
        "name": "add",
        "arguments": {"a": 1},
        **retry,
    }
    assert params["_meta"]["progressToken"] == outgoing.id
    assert outgoing.to_bytes() == codec.encode(outgoing.message)
    assert "requestState" not in session.call_tool("add", {})[0]["params"]


def test_resource_and_prompt_answers_without_their_arrays_are_refused() -> None:
    from toolnexus.mcp._client._session import prompt_result, resource_contents

    read = {"contents": [{"uri": "a://b", "text": "x"}, "junk"]}
    assert resource_contents("s", "a://b", read) == [{"uri": "a://b", "text": "x"}]
    with pytest.raises(McpError, match="resources/read answered without contents for 'a://b'"):
        resource_contents("s", "a://b", {})
    assert prompt_result("s", "p", {"messages": []}) == {"messages": []}
    with pytest.raises(McpError, match="prompts/get answered without messages for 'p'"):
        prompt_result("s", "p", {"messages": None})
