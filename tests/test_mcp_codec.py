"""The JSON-RPC codec (``toolnexus.mcp._shared._codec``): each byte-level shortcut gives
exactly what the plain ``json`` module gives, and nothing a peer sends makes it raise anything
but the two errors callers answer (``ValueError``, ``RecursionError``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolnexus.mcp._shared._codec as codec
from toolnexus._frozen import freeze

VALUES = [
    '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    '{"a": [1, 2.5, -3e10, true, false, null], "b": {"c": "\\u00e9\\ud83c\\udf89"}}',
    "[1, 2, 3]",
    '"just a string"',
    "42",
    '{"nested": ' + "[" * 100 + "]" * 100 + "}",
    '{"dup": 1, "dup": 2}',
    '{"long": "' + "x" * 100_000 + '"}',
]


@pytest.mark.parametrize("text", VALUES)
def test_decode_reads_what_json_loads_reads(text: str) -> None:
    assert codec.decode(text) == json.loads(text)


@pytest.mark.parametrize(
    "text", ["", "{", "{} {}", "nul", '{"a": NaN}', '{"a": Infinity}', "-Infinity", "[1,]"]
)
def test_decode_refuses_what_is_not_one_json_value(text: str) -> None:
    with pytest.raises(ValueError):
        codec.decode(text)


def test_a_value_too_deep_to_decode_raises_recursion_error_and_its_id_is_still_found() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    text = '{"jsonrpc":"2.0","id":"r-\\"}]{1","method":"tools/call","params":{"x":' + deep + "}}"
    with pytest.raises(RecursionError):
        codec.decode(text)
    assert codec.stand_in(text) == {"id": 'r-"}]{1', "method": "tools/call"}


@pytest.mark.parametrize(
    "text", ["[1, 2]", '{"id": 1', '{"id": 1} trailing', '{"id": tru}', '"s"', '{"a":1}}']
)
def test_stand_in_names_nothing_for_what_is_not_one_balanced_object(text: str) -> None:
    assert codec.stand_in(text) is None


def test_nested_too_deep_is_the_wire_depth_rule() -> None:
    shallow: Any = []
    for _ in range(100):
        shallow = [shallow]
    deep: Any = []
    for _ in range(1000):
        deep = [deep]
    assert not codec.nested_too_deep(shallow)
    assert codec.nested_too_deep(deep)


MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 0.5}},
    {"a": 'é 漢字 🎉 \u2028 "q" \\ \t \x00', "b": [1, -2.5e-7, None, True]},
    freeze({"frozen": {"list": [1, 2]}}),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_encode_writes_one_line_of_what_json_dumps_writes(message: Any) -> None:
    expected = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
    assert codec.encode(message) == expected.encode()


def test_encode_escapes_lone_surrogates_and_refuses_what_json_cannot_carry() -> None:
    line = codec.encode({"text": "bad \udcff"})
    assert line == b'{"text":"bad \\udcff"}\n'
    with pytest.raises(ValueError):
        codec.encode({"v": float("nan")})
    with pytest.raises(TypeError):
        codec.encode({"v": {1, 2}})


TEXTS = ["3", "", 'line one\nline two ✓ \u2028 "q" \\ \t \x00 é 漢字 🎉', "x" * 10_000]
STRUCTURED = [codec.ABSENT, {"result": 7, "nested": [1, None]}, freeze({"a": {"b": "é"}})]


MEMBERS = [
    {},
    {"resultType": "complete"},
    {
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": 'sé "rv" ✓', "version": "1"}},
    },
]


@pytest.mark.parametrize("request_id", [7, 0, -(2**70), 'req "1" ✓', ""])
@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("is_error", [False, True])
@pytest.mark.parametrize("structured", STRUCTURED)
@pytest.mark.parametrize("members", MEMBERS)
def test_the_text_reply_template_writes_exactly_what_encode_writes(
    request_id: Any, text: str, is_error: bool, structured: Any, members: dict[str, Any]
) -> None:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not codec.ABSENT:
        result["structuredContent"] = structured
    result.update(members)
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    encoded = codec.encode_shared(members) or ""
    line = codec.text_reply(request_id, text, is_error, structured, encoded)
    assert line == codec.encode(message)


LISTED = [[], [{"name": "add", "inputSchema": {"type": "object"}}], [{"n": "é ✓"}, {"n": 2}]]
RESTS = [{}, {"nextCursor": "c-100"}, {"nextCursor": "c", "ttlMs": 5, "_meta": {"k": ["v"]}}]


@pytest.mark.parametrize("request_id", [7, 'req "1" ✓'])
@pytest.mark.parametrize("entries", LISTED)
@pytest.mark.parametrize("rest", RESTS)
def test_a_listed_reply_from_kept_fragments_is_exactly_what_encode_writes(
    request_id: Any, entries: list[dict[str, Any]], rest: dict[str, Any]
) -> None:
    result = {"tools": entries, **rest}
    fragments: list[str | None] = [codec.fragment(entry) for entry in entries]
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    items = codec.listed_items(fragments)
    line = codec.reply_line(request_id, codec.listed_result(result, "tools", items))
    assert line == codec.encode(message)


def test_a_listed_reply_declines_what_its_template_cannot_write() -> None:
    assert codec.fragment({"x": float("nan")}) is None
    assert codec.listed_items([None]) is None  # an unencoded entry
    assert codec.listed_result({"tools": []}, "tools", None) is None
    assert codec.listed_result({"next": "c", "tools": []}, "tools", b"") is None  # not first
    assert codec.reply_line(1, None) is None
    assert codec.reply_line(None, b"{}") is None
    assert codec.reply_line("\udc80", b"{}") is None  # a lone surrogate: encode escapes it
    lone = codec.fragment({"n": "\udc80"})  # a lone surrogate: encode escapes it instead
    assert codec.listed_items([lone]) is None


KEPT = [{}, {"content": [{"type": "text", "text": 'é ✓ \\ "'}], "isError": False}]
AROUND = [
    ({}, {}),
    ({"taskId": "tsk-1", "status": "completed"}, {}),
    ({}, {"resultType": "complete", "_meta": {"k": ["v", None, 1.5]}}),
    ({"taskId": "t", "ttlMs": 5}, {"resultType": "complete", "_meta": {"n": {"m": True}}}),
]


@pytest.mark.parametrize("request_id", [7, 'req "1" ✓'])
@pytest.mark.parametrize("kept", KEPT)
@pytest.mark.parametrize("around", AROUND)
@pytest.mark.parametrize("members", MEMBERS)
def test_a_reply_around_a_kept_fragment_is_exactly_what_encode_writes(
    request_id: Any,
    kept: dict[str, Any],
    around: tuple[dict[str, Any], dict[str, Any]],
    members: dict[str, Any],
) -> None:
    before, after = around
    if set(after) & set(members):
        return  # a member the body has already is never added again (reply's rule)
    result = {**before, "result": freeze(kept), **after}  # a frozen member, written as text
    text = codec.fragment(kept)
    assert text is not None
    message = {"jsonrpc": "2.0", "id": request_id, "result": {**result, **members}}
    encoded = codec.encode_shared(members) or ""
    line = codec.result_reply(request_id, result, encoded, ("result", text))
    assert line == codec.encode(message)


@pytest.mark.parametrize("request_id", [7, 'req "1" ✓'])
@pytest.mark.parametrize("body", [{}, {"taskId": "t", "ttlMs": 5}, {"x": ["é ✓", None, 1.5]}])
@pytest.mark.parametrize("members", MEMBERS)
def test_a_reply_of_a_body_and_kept_members_is_exactly_what_encode_writes(
    request_id: Any, body: dict[str, Any], members: dict[str, Any]
) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "result": {**body, **members}}
    line = codec.result_reply(request_id, body, codec.encode_shared(members) or "")
    assert line == codec.encode(message)


def test_a_reply_from_the_template_declines_what_it_cannot_write() -> None:
    assert codec.result_reply(1, {"other": 1}, "", ("result", "{}")) is None  # no such member
    assert codec.result_reply(None, {"result": {}}, "", ("result", "{}")) is None
    assert codec.result_reply(1.0, {"result": {}}, "", ("result", "{}")) is None
    assert codec.result_reply(1, freeze({"a": 1}), '"b":2') is None  # not a plain dict
    lone = codec.fragment({"n": "\udc80"})  # a lone surrogate: encode escapes it instead
    assert lone is not None
    assert codec.result_reply(1, {"result": {}}, "", ("result", lone)) is None
    assert codec.result_reply(1, {"n": "\udc80"}, '"b":2') is None
    nan = {"x": float("nan")}
    assert codec.result_reply(1, {"result": {}, "bad": nan}, "", ("result", "{}")) is None
    assert codec.result_reply(1, {"bad": nan}, '"b":2') is None


@pytest.mark.parametrize("request_id", [True, 1.0, None, [1]])
def test_the_template_declines_ids_it_does_not_write(request_id: Any) -> None:
    assert codec.text_reply(request_id, "x", False) is None


def test_the_template_declines_structured_values_that_are_not_objects() -> None:
    assert codec.text_reply(1, "x", False, [1, 2]) is None


def test_the_template_raises_for_what_json_cannot_carry_so_the_caller_encodes_the_message() -> None:
    with pytest.raises(ValueError):
        codec.text_reply(1, "bad \udcff", False)
    with pytest.raises(ValueError):
        codec.text_reply(1, "x", False, {"v": float("nan")})


SHARED = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "tëst", "version": "1"},
}
ARGUMENTS = {"a": 1, "text": "é ✓", "deep": {"list": [1.5, None, True]}}


@pytest.mark.parametrize(
    "params",
    [{}, {"name": "add", "arguments": ARGUMENTS}, {"name": "ä", "requestState": "s", 7: "x"}],
)
@pytest.mark.parametrize("meta", [None, {}, {"traceparent": "00-a-b-01", "n": [1]}])
@pytest.mark.parametrize("progress", [False, True])
@pytest.mark.parametrize("request_id", [1, 2**70])
def test_the_request_template_writes_exactly_what_encode_writes(
    params: dict[Any, Any], meta: dict[str, Any] | None, progress: bool, request_id: int
) -> None:
    envelope = {**SHARED, **(meta or {})}
    if progress:
        envelope["progressToken"] = request_id
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {**params, "_meta": envelope},
    }
    shared_text = codec.encode_shared(SHARED)
    assert shared_text is not None
    line = codec.request_line(request_id, "tools/call", params, shared_text, meta, progress)
    assert line == codec.encode(message)


def test_the_request_template_declines_what_encode_must_word_or_escape() -> None:
    shared_text = codec.encode_shared(SHARED) or ""
    assert codec.request_line(1, "m", {"bad": "\udcff"}, shared_text) is None
    assert codec.request_line(1, "m", {"n": float("nan")}, shared_text) is None
    assert codec.request_line(1, "m", {"s": {1, 2}}, shared_text) is None
    assert codec.request_line(True, "m", {}, shared_text) is None
    assert codec.request_line(1, "m", {}, "") is None


def test_shared_entries_the_template_cannot_write_are_declined() -> None:
    assert codec.encode_shared({}) is None
    assert codec.encode_shared({"name": "\udcff"}) is None
    assert codec.encode_shared({"n": float("nan")}) is None


def test_error_message_is_a_json_rpc_error_response() -> None:
    assert codec.error_message(3, codec.INVALID_PARAMS, "bad") == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": "bad"},
    }
    assert codec.error_message(None, -1, "m", {"x": 1})["error"]["data"] == {"x": 1}
