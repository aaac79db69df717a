"""tools/list and tools/call through the session: shapes per era, pagination, errors."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Toolkit, ToolResult, tool
from toolnexus.mcp import Send, ServerOptions, ServerSession, StartCall

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@tool(title="Adder", read_only=True, idempotent=True)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(output_schema={"type": "object", "properties": {"hits": {"type": "array"}}})
def search(query: str) -> dict[str, Any]:
    """Search the index."""
    return {"hits": [query]}


@tool(output_schema={"type": "array", "items": {"type": "string"}})
def names() -> list[str]:
    """List names."""
    return ["ada", "grace"]


@tool
def fail() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


TOOLKIT = Toolkit([add, search, names, fail])


def send(session: ServerSession, message: dict[str, Any]) -> list[Any]:
    return session.receive(message)


def call_message(rid: Any, params: Any, meta: Any = MODERN) -> dict[str, Any]:
    if isinstance(params, dict) and meta is not None:
        params = {**params, "_meta": meta}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def legacy(
    version: str, toolkit: Toolkit = TOOLKIT, options: ServerOptions | None = None
) -> ServerSession:
    session = ServerSession(toolkit, options or ServerOptions(name="t", version="1"))
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}},
        }
    )
    return session


def list_tools(session: ServerSession, params: dict[str, Any] | None = None) -> dict[str, Any]:
    actions = session.receive(
        {"jsonrpc": "2.0", "id": "l", "method": "tools/list", "params": params or {}}
    )
    assert len(actions) == 1 and isinstance(actions[0], Send)
    return dict(actions[0].message)


def run(
    session: ServerSession, message: dict[str, Any], toolkit: Toolkit = TOOLKIT
) -> dict[str, Any]:
    """Start a call through the session and finish it with the toolkit, as a driver would."""
    actions = session.receive(message)
    assert len(actions) == 1 and isinstance(actions[0], StartCall), actions
    start = actions[0]
    done = session.complete_call(start.call_id, toolkit.execute(start.name, dict(start.arguments)))
    assert len(done) == 1 and isinstance(done[0], Send)
    return dict(done[0].message)


# --------------------------------------------------------------------------- tools/list


def test_tools_list_describes_every_tool_in_registration_order() -> None:
    session = ServerSession(TOOLKIT)
    tools = list_tools(session, {"_meta": MODERN})["result"]["tools"]
    assert [t["name"] for t in tools] == ["add", "search", "names", "fail"]
    for entry in tools:
        assert entry["inputSchema"]["type"] == "object"
        assert isinstance(entry["description"], str) and entry["description"]
    assert tools[0] == {
        "name": "add",
        "title": "Adder",
        "description": "Add two numbers.",
        "inputSchema": dict(add.input_schema),
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True},
    }


def test_tools_list_is_the_same_every_time() -> None:
    session = ServerSession(TOOLKIT)
    assert list_tools(session, {"_meta": MODERN}) == list_tools(session, {"_meta": MODERN})


def test_a_toolkit_describes_each_tool_once_until_that_tool_changes(monkeypatch) -> None:
    import toolnexus.mcp._server._feature_tools as feature

    described: list[str] = []
    describe = feature._describe_tool

    def counted(tool: Any, client: Any) -> dict[str, Any]:
        described.append(tool.name)
        return describe(tool, client)

    monkeypatch.setattr(feature, "_describe_tool", counted)
    toolkit = Toolkit([add, search])
    session = ServerSession(toolkit)
    other_kit = Toolkit([add])  # another toolkit keeps its own
    first = list_tools(session, {"_meta": MODERN})
    assert list_tools(ServerSession(toolkit), {"_meta": MODERN}) == first
    assert described == ["add", "search"]  # a second list, a second session: none again
    assert list_tools(ServerSession(other_kit), {"_meta": MODERN})["result"]["tools"] == [
        first["result"]["tools"][0]
    ]
    assert described == ["add", "search", "add"]

    @tool(name="search")
    def search_v2(query: str, limit: int = 5) -> str:
        """Search the index, a page at a time."""
        return query

    toolkit.register(search_v2, replace=True)
    tools = list_tools(session, {"_meta": MODERN})["result"]["tools"]
    assert tools[1]["description"] == "Search the index, a page at a time."
    assert described == ["add", "search", "add", "search"]  # only the changed entry


def test_a_removed_tool_leaves_no_kept_entry_behind() -> None:
    # A toolkit whose tools come and go (a gateway's upstream renaming its tools) must not
    # keep every entry it ever described: removing a tool drops its kept entry too.
    toolkit = Toolkit([add])
    session = ServerSession(toolkit)
    for round_ in range(50):

        @tool(name=f"passing_{round_}")
        def passing(query: str) -> str:
            """Here for one list."""
            return query

        toolkit.register(passing)
        names = [t["name"] for t in list_tools(session, {"_meta": MODERN})["result"]["tools"]]
        assert names == ["add", f"passing_{round_}"]
        toolkit.remove(f"passing_{round_}")
    assert set(toolkit._described) == {"add"}


@pytest.mark.parametrize("version", ["modern", "2025-06-18", "2024-11-05"])
def test_a_tools_list_page_is_written_from_kept_encodings_as_its_message_encodes(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    import toolnexus.mcp._shared._codec as codec

    many = Toolkit([tool(name=f"t{n}")(lambda: "x") for n in range(7)] + [add, search])
    options = ServerOptions(page_size=4)
    session = (
        ServerSession(many, options) if version == "modern" else legacy(version, many, options)
    )
    first: dict[str, Any] = {"_meta": MODERN} if version == "modern" else {}
    params = first
    pages = 0
    while True:
        (sent,) = session.receive(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}
        )
        assert isinstance(sent, Send) and sent._line is not None  # written from the template
        assert sent.to_bytes() == codec.encode(sent.message)
        pages += 1
        result = sent.message["result"]
        if "nextCursor" not in result:
            break
        params = {**params, "cursor": result["nextCursor"]}
    assert pages == 3
    # a second list writes every entry from its kept encoding: the encoder sees no entry
    encoded: list[Any] = []
    fast = codec._C_ENCODE
    assert fast is not None
    monkeypatch.setattr(
        codec, "_C_ENCODE", lambda value, level: encoded.append(value) or fast(value, level)
    )
    (again,) = session.receive({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": first})
    assert again.to_bytes() == codec.encode(again.message)
    assert not any("inputSchema" in value for value in encoded if isinstance(value, dict))


def test_modern_tools_list_carries_cache_hints_and_any_output_schema() -> None:
    session = ServerSession(TOOLKIT, ServerOptions(list_ttl_ms=1234))
    result = list_tools(session, {"_meta": MODERN})["result"]
    assert (result["ttlMs"], result["cacheScope"]) == (1234, "public")
    by_name = {t["name"]: t for t in result["tools"]}
    assert by_name["names"]["outputSchema"] == {"type": "array", "items": {"type": "string"}}
    assert by_name["search"]["outputSchema"]["type"] == "object"


def test_legacy_tools_list_offers_only_object_output_schemas() -> None:
    by_name = {t["name"]: t for t in list_tools(legacy("2025-11-25"))["result"]["tools"]}
    assert by_name["search"]["outputSchema"]["type"] == "object"
    assert "outputSchema" not in by_name["names"]
    assert by_name["add"]["title"] == "Adder"


def test_revisions_before_2025_06_18_get_no_title_or_output_schema() -> None:
    by_name = {t["name"]: t for t in list_tools(legacy("2025-03-26"))["result"]["tools"]}
    assert "title" not in by_name["add"] and "outputSchema" not in by_name["search"]
    assert by_name["add"]["annotations"] == {"readOnlyHint": True, "idempotentHint": True}


def test_revision_2024_11_05_gets_no_annotations_either() -> None:
    entry = list_tools(legacy("2024-11-05"))["result"]["tools"][0]
    assert set(entry) == {"name", "description", "inputSchema"}


def many_tools(count: int) -> Toolkit:
    return Toolkit(
        [tool(lambda args: "ok", name=f"t{i}", description=f"tool {i}") for i in range(count)]
    )


def test_pagination_walks_every_page_with_next_cursor() -> None:
    session = ServerSession(many_tools(5), ServerOptions(page_size=2))
    seen: list[str] = []
    params: dict[str, Any] = {"_meta": MODERN}
    pages = 0
    while True:
        result = list_tools(session, params)["result"]
        pages += 1
        seen += [t["name"] for t in result["tools"]]
        if "nextCursor" not in result:
            break
        params = {"_meta": MODERN, "cursor": result["nextCursor"]}
    assert seen == ["t0", "t1", "t2", "t3", "t4"]
    assert pages == 3


def test_a_list_that_fits_one_page_has_no_next_cursor() -> None:
    session = ServerSession(many_tools(2), ServerOptions(page_size=2))
    assert "nextCursor" not in list_tools(session, {"_meta": MODERN})["result"]


@pytest.mark.parametrize(
    "cursor", ["garbage", "", "tnx1:", "tnx1:-1", "tnx1:0", "tnx1:99", "tnx1:²", 5, ["x"]]
)
def test_a_cursor_this_server_did_not_issue_is_invalid_params(cursor: Any) -> None:
    session = ServerSession(many_tools(5), ServerOptions(page_size=2))
    error = list_tools(session, {"_meta": MODERN, "cursor": cursor})["error"]
    assert error["code"] == -32602
    assert "cursor" in error["message"]


def test_a_null_cursor_means_the_first_page() -> None:
    session = ServerSession(many_tools(3), ServerOptions(page_size=2))
    result = list_tools(session, {"_meta": MODERN, "cursor": None})["result"]
    assert [t["name"] for t in result["tools"]] == ["t0", "t1"]


# --------------------------------------------------------------------------- tools/call


def test_tools_call_starts_the_named_tool_with_its_arguments() -> None:
    session = ServerSession(TOOLKIT)
    actions = session.receive(call_message(3, {"name": "add", "arguments": {"a": 1, "b": 2}}))
    assert len(actions) == 1
    start = actions[0]
    assert isinstance(start, StartCall)
    assert (start.name, dict(start.arguments), start.answer, start.wants_progress) == (
        "add",
        {"a": 1, "b": 2},
        None,
        False,
    )


def test_absent_or_null_arguments_are_an_empty_object() -> None:
    session = ServerSession(TOOLKIT)
    for rid, params in ((1, {"name": "names"}), (2, {"name": "names", "arguments": None})):
        start = session.receive(call_message(rid, params))[0]
        assert isinstance(start, StartCall) and dict(start.arguments) == {}


def test_a_result_comes_back_as_a_text_block_with_is_error_false() -> None:
    answer = run(
        ServerSession(TOOLKIT), call_message(1, {"name": "add", "arguments": {"a": 2, "b": 3}})
    )
    result = answer["result"]
    assert answer["id"] == 1
    assert result["content"] == [{"type": "text", "text": "5"}]
    assert result["isError"] is False
    assert result["resultType"] == "complete"


def test_a_json_value_is_structured_content_on_modern_connections_whatever_its_type() -> None:
    session = ServerSession(TOOLKIT)
    listed = run(session, call_message(1, {"name": "names"}))["result"]
    assert listed["structuredContent"] == ["ada", "grace"]
    assert listed["content"] == [{"type": "text", "text": '["ada","grace"]'}]
    number = run(session, call_message(2, {"name": "add", "arguments": {"a": 1, "b": 1}}))["result"]
    assert number["structuredContent"] == {"result": 2}  # -> int: wrapped, as inferred


def test_legacy_connections_get_structured_content_only_for_objects() -> None:
    session = legacy("2025-06-18")
    hits = run(session, call_message(1, {"name": "search", "arguments": {"query": "q"}}, meta=None))
    assert hits["result"]["structuredContent"] == {"hits": ["q"]}
    listed = run(session, call_message(2, {"name": "names"}, meta=None))
    assert "structuredContent" not in listed["result"]
    assert "resultType" not in listed["result"]


def test_revisions_before_2025_06_18_never_get_structured_content() -> None:
    session = legacy("2025-03-26")
    hits = run(session, call_message(1, {"name": "search", "arguments": {"query": "q"}}, meta=None))
    assert "structuredContent" not in hits["result"]


def test_a_tool_failure_is_is_error_with_its_message() -> None:
    result = run(ServerSession(TOOLKIT), call_message(1, {"name": "fail"}))["result"]
    assert result["isError"] is True
    assert "disk on fire" in result["content"][0]["text"]


def test_invalid_arguments_are_is_error_with_the_validation_message() -> None:
    message = call_message(1, {"name": "add", "arguments": {"a": "one", "b": 2}})
    result = run(ServerSession(TOOLKIT), message)["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(
        "invalid arguments for 'add': a: expected integer"
    )


def test_an_unknown_tool_is_invalid_params_with_a_suggestion() -> None:
    actions = ServerSession(TOOLKIT).receive(call_message(1, {"name": "serch"}))
    error = actions[0].message["error"]
    assert error["code"] == -32602
    assert "unknown tool 'serch'" in error["message"] and "search" in error["message"]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"arguments": {}}, "name"),
        ({"name": 7}, "name"),
        ({"name": None}, "name"),
        ({"name": "add", "arguments": '{"a": 1}'}, "arguments"),
        ({"name": "add", "arguments": [1, 2]}, "arguments"),
    ],
)
def test_structurally_malformed_call_params_are_invalid_params(
    params: dict[str, Any], field: str
) -> None:
    error = ServerSession(TOOLKIT).receive(call_message(1, params))[0].message["error"]
    assert error["code"] == -32602
    assert field in error["message"]


def test_call_params_that_are_not_an_object_are_invalid_params() -> None:
    session = legacy("2025-11-25")
    error = session.receive(call_message(1, ["add", {}], meta=None))[0].message["error"]
    assert error["code"] == -32602


def test_results_of_one_call_never_answer_another() -> None:
    session = ServerSession(TOOLKIT)
    first = session.receive(call_message("a", {"name": "names"}))[0]
    second = session.receive(call_message("b", {"name": "names"}))[0]
    done = session.complete_call(second.call_id, ToolResult.ok("second"))
    assert done[0].message["id"] == "b"
    done = session.complete_call(first.call_id, ToolResult.ok("first"))
    assert done[0].message["id"] == "a"
    assert done[0].message["result"]["content"][0]["text"] == "first"


def test_completing_a_call_twice_or_an_unknown_call_sends_nothing() -> None:
    session = ServerSession(TOOLKIT)
    start = session.receive(call_message(1, {"name": "names"}))[0]
    assert len(session.complete_call(start.call_id, ToolResult.ok("x"))) == 1
    assert session.complete_call(start.call_id, ToolResult.ok("x")) == []
    assert session.complete_call(12345, ToolResult.ok("x")) == []


def test_a_tool_whose_entry_json_cannot_carry_is_left_out_of_the_list_and_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Tool() refuses such a schema when it is defined; this is what keeps one broken entry
    # (built around that check) from taking every other tool down with tools/list.
    from toolnexus import Tool, ToolResult

    good = Tool("good", "fine", {"type": "object"}, lambda args, ctx=None: ToolResult.ok("x"))
    bad = Tool("bad", "broken", {"type": "object"}, lambda args, ctx=None: ToolResult.ok("x"))
    object.__setattr__(bad, "input_schema", {"type": "object", "default": float("nan")})
    session = ServerSession(Toolkit([good, bad]))
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        }
    )
    with caplog.at_level("WARNING", logger="toolnexus"):
        (sent,) = session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert [tool["name"] for tool in sent.message["result"]["tools"]] == ["good"]
    assert any("bad" in record.getMessage() for record in caplog.records)


# --------------------------------------------------------------------------- search=True


def test_with_search_tools_list_is_the_core_and_the_meta_tools_and_calls_still_run() -> None:
    core = tool(add, defer=False)
    toolkit = Toolkit([core, search, names])
    session = ServerSession(toolkit, ServerOptions(search=True))
    listed = list_tools(session, {"_meta": MODERN})["result"]["tools"]
    assert [t["name"] for t in listed] == ["add", "search_tools", "call_tool"]
    assert [
        t["name"] for t in list_tools(ServerSession(toolkit), {"_meta": MODERN})["result"]["tools"]
    ] == ["add", "search", "names"]
    found = run(
        session,
        call_message("s", {"name": "search_tools", "arguments": {"query": "list the names"}}),
        toolkit,
    )
    assert '"name":"names"' in found["result"]["content"][0]["text"]
    called = run(
        session,
        call_message("c", {"name": "call_tool", "arguments": {"name": "names", "arguments": "{}"}}),
        toolkit,
    )
    assert not called["result"].get("isError")
    assert called["result"]["content"][0]["text"] == '["ada","grace"]'
