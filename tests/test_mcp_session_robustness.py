"""Whatever a client sends, the session answers as JSON-RPC says (or ignores it) and keeps
serving."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolnexus import Part, Request, Toolkit, ToolResult, tool
from toolnexus._frozen import thaw
from toolnexus.mcp import Send, ServerOptions, ServerSession, StartCall
from toolnexus.mcp._server._feature_tools import call_tool_result

STRUCTURED_KEY = "structuredContent"  # the metadata key of a tool's JSON value (result.py)

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def new_session() -> ServerSession:
    return ServerSession(Toolkit([echo]))


def only_error(actions: list[Any]) -> dict[str, Any]:
    assert len(actions) == 1 and isinstance(actions[0], Send), actions
    message = dict(actions[0].message)
    assert set(message) == {"jsonrpc", "id", "error"}, message
    return message


def still_serves(session: ServerSession) -> None:
    pong = session.receive({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    assert pong[0].message == {"jsonrpc": "2.0", "id": "after", "result": {}}


@pytest.mark.parametrize(
    "line",
    [
        b"\xff\xfe{}",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        b"{'single': 1}",
        b"NaN",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}',
        b"[" * 100_000,
    ],
)
def test_a_line_that_is_not_utf8_json_is_a_parse_error_with_null_id(line: bytes) -> None:
    session = new_session()
    message = only_error(session.receive_line(line))
    assert message["id"] is None
    assert message["error"]["code"] == -32700
    still_serves(session)


@pytest.mark.parametrize("line", [b"", b"\n", b"   \r\n"])
def test_blank_lines_are_ignored(line: bytes) -> None:
    assert new_session().receive_line(line) == []


def test_a_line_may_be_text_or_bytes() -> None:
    session = new_session()
    for line in (
        '{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}\r\n',
    ):
        assert session.receive_line(line)[0].message["result"] == {}


@pytest.mark.parametrize("batch", [[], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]])
def test_a_batch_is_an_invalid_request_with_null_id(batch: list[Any]) -> None:
    session = new_session()
    message = only_error(session.receive_line(json.dumps(batch)))
    assert message["id"] is None
    assert message["error"]["code"] == -32600
    assert "batch" in message["error"]["message"]
    still_serves(session)


@pytest.mark.parametrize("value", [1, "ping", None, True])
def test_a_message_that_is_not_an_object_is_an_invalid_request(value: Any) -> None:
    message = only_error(new_session().receive(value))
    assert (message["id"], message["error"]["code"]) == (None, -32600)


@pytest.mark.parametrize("version", [None, "1.0", 2.0])
def test_a_request_without_jsonrpc_2_0_is_an_invalid_request_echoing_its_id(version: Any) -> None:
    request: dict[str, Any] = {"id": 5, "method": "ping"}
    if version is not None:
        request["jsonrpc"] = version
    message = only_error(new_session().receive(request))
    assert (message["id"], message["error"]["code"]) == (5, -32600)
    assert "jsonrpc" in message["error"]["message"]


@pytest.mark.parametrize("bad_id", [None, 1.5, True, {"n": 1}, [1]])
def test_a_request_id_that_is_not_a_string_or_integer_is_refused_with_null_id(bad_id: Any) -> None:
    session = new_session()
    message = only_error(session.receive({"jsonrpc": "2.0", "id": bad_id, "method": "ping"}))
    assert (message["id"], message["error"]["code"]) == (None, -32600)
    assert '"id"' in message["error"]["message"]
    still_serves(session)


@pytest.mark.parametrize("method", [None, 7, ["ping"]])
def test_a_method_that_is_not_a_string_is_an_invalid_request(method: Any) -> None:
    with_id = only_error(new_session().receive({"jsonrpc": "2.0", "id": 1, "method": method}))
    assert (with_id["id"], with_id["error"]["code"]) == (1, -32600)
    without_id = only_error(new_session().receive({"jsonrpc": "2.0", "method": method}))
    assert (without_id["id"], without_id["error"]["code"]) == (None, -32600)


def test_a_message_that_is_neither_request_nor_response_is_an_invalid_request() -> None:
    message = only_error(new_session().receive({"jsonrpc": "2.0", "id": 3}))
    assert (message["id"], message["error"]["code"]) == (3, -32600)


def test_a_duplicate_id_of_a_request_in_progress_is_refused_and_free_again_afterwards() -> None:
    session = new_session()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "a"}, "_meta": MODERN},
    }
    first = session.receive(call)[0]
    assert isinstance(first, StartCall)
    message = only_error(session.receive(call))
    assert (message["id"], message["error"]["code"]) == (1, -32600)
    assert "already in use" in message["error"]["message"]
    session.complete_call(first.call_id, ToolResult.ok("a"))
    assert isinstance(session.receive(call)[0], StartCall)


def test_ids_1_and_string_1_are_different_requests() -> None:
    session = new_session()
    params = {"name": "echo", "arguments": {"text": "a"}, "_meta": MODERN}
    assert isinstance(
        session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})[0],
        StartCall,
    )
    assert isinstance(
        session.receive({"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": params})[0],
        StartCall,
    )


@pytest.mark.parametrize(
    "response",
    [
        {"jsonrpc": "2.0", "id": 99, "result": {}},
        {"jsonrpc": "2.0", "id": "toolnexus-elicit-1", "result": {"action": "accept"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}},
        {"id": [1], "result": 3},
    ],
)
def test_responses_to_requests_never_sent_are_ignored(response: dict[str, Any]) -> None:
    session = new_session()
    assert session.receive(response) == []
    still_serves(session)


@pytest.mark.parametrize(
    "notification",
    [
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/whatever", "params": [1, 2]},
        {"jsonrpc": "2.0", "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized", "params": "x"},
    ],
)
def test_notifications_are_never_answered(notification: dict[str, Any]) -> None:
    session = new_session()
    assert session.receive(notification) == []
    still_serves(session)


def test_params_that_are_not_an_object_are_invalid_params() -> None:
    message = only_error(
        new_session().receive({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": "all"})
    )
    assert (message["id"], message["error"]["code"]) == (1, -32602)


def test_an_oversized_line_is_an_invalid_request_with_null_id() -> None:
    message = only_error(new_session().line_too_long(20_000_000, 16_777_216))
    assert (message["id"], message["error"]["code"]) == (None, -32600)
    assert "too large" in message["error"]["message"]


# --------------------------------------------------------------------------- encoding


def test_every_message_is_one_line_of_utf8_json() -> None:
    data = Send(
        {"jsonrpc": "2.0", "id": 1, "result": {"text": "line one\nline two ✓ \u2028"}}
    ).to_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert json.loads(data.decode("utf-8"))["result"]["text"] == "line one\nline two ✓ \u2028"


def test_text_with_lone_surrogates_is_written_escaped() -> None:
    data = Send({"jsonrpc": "2.0", "id": 1, "result": {"text": "bad \udcff byte"}}).to_bytes()
    assert data.count(b"\n") == 1
    assert b"\\udcff" in data
    data.decode("utf-8")


def test_a_result_json_cannot_carry_becomes_an_internal_error_for_its_id() -> None:
    data = Send({"jsonrpc": "2.0", "id": 4, "result": {"value": float("nan")}}).to_bytes()
    message = json.loads(data)
    assert message["id"] == 4
    assert message["error"]["code"] == -32603


def _answer(ident: Any, text: Any, error: Any = False, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": error}
    result.update(extra)
    return {"jsonrpc": "2.0", "id": ident, "result": result}


@pytest.mark.parametrize(
    "message",
    [
        _answer(7, "3"),
        _answer(7, "3", structuredContent={"result": 3}),
        _answer(-12345678901234567890, "x", True),
        _answer("req-1", "done"),
        _answer('a "quoted"\\ id\n', "ok"),
        _answer(1, 'line one\nline two ✓ \u2028 "q" \\ \t \x00 é 漢字 🎉'),
        _answer(1, "", structuredContent={"nested": {"list": [1, 2.5, None, True, "ü"]}}),
        _answer(1, "late", structuredContent={}),
        # near misses: each goes through the general encoder, and must read the same
        _answer(1, "x", structuredContent=[1, 2]),
        _answer(1, "x", resultType="complete", _meta={"k": "v"}),
        _answer(1, "x", structuredContent={"a": 1}, extra=2),
        _answer(1, "x", extra=2),
        _answer(True, "x"),
        _answer(2.0, "x"),
        _answer(1, 5),
        _answer(1, "x", 0),
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": False}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
                "isError": False,
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                "isError": False,
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": ({"type": "text", "text": "a"},), "isError": False},
        },
        {"jsonrpc": "2.0", "id": 1, "result": {"content": "text", "isError": False}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "content": [{"type": "text", "text": "a", "annotations": {}}],
                "isError": False,
            },
        },
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [["type", "text"]], "isError": False}},
        {
            "jsonrpc": "1.0",
            "id": 1,
            "result": {"content": [{"type": "text", "text": "a"}], "isError": False},
        },
        {
            "jsonrpc": "2.0",
            "id": 1,
            "extra": 0,
            "result": {"content": [{"type": "text", "text": "a"}], "isError": False},
        },
    ],
)
def test_a_text_answer_is_written_exactly_as_the_json_encoder_writes_it(
    message: dict[str, Any],
) -> None:
    # A tool's text answer is written from a template (the commonest message, one per
    # call): byte for byte what json.dumps writes, for it and for every near miss.
    expected = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    assert Send(message).to_bytes() == expected


def test_a_text_answer_that_json_cannot_carry_fails_as_any_message_does() -> None:
    surrogate = Send(_answer(3, "bad \udcff byte")).to_bytes()
    assert b"\\udcff" in surrogate and surrogate.count(b"\n") == 1
    assert json.loads(surrogate)["result"]["content"][0]["text"] == "bad \udcff byte"
    nan = json.loads(Send(_answer(4, "x", structuredContent={"v": float("nan")})).to_bytes())
    assert (nan["id"], nan["error"]["code"]) == (4, -32603)


def test_a_tool_output_with_newlines_and_unicode_survives_the_round_trip() -> None:
    session = new_session()
    start = session.receive(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": MODERN},
        }
    )[0]
    sent = session.complete_call(start.call_id, ToolResult.ok("a\nb\r\n\u00e9\U0001f600"))[0]
    line = sent.to_bytes()
    assert line.count(b"\n") == 1
    assert json.loads(line)["result"]["content"][0]["text"] == "a\nb\r\n\u00e9\U0001f600"


# --------------------------------------------------------------------------- answers as bytes


class _Bomb(dict):  # type: ignore[type-arg]
    """A JSON object whose encoding runs out of memory."""

    def items(self) -> Any:
        raise MemoryError("injected")


def test_a_response_too_big_to_encode_is_answered_and_a_notification_is_dropped() -> None:
    answer = json.loads(Send({"jsonrpc": "2.0", "id": 9, "result": _Bomb(a=1)}).to_bytes())
    assert answer["id"] == 9 and answer["error"]["code"] == -32603
    assert "MemoryError" in answer["error"]["message"]
    dropped = Send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": _Bomb(a=1)},
        }
    )
    assert dropped.to_bytes() == b""  # nobody waits on a notification: nothing to write


@tool
def asks(text: str) -> str:
    """Ask back."""
    return text


QUESTION = Request(
    "input", "Env?", data={"schema": {"type": "object", "properties": {"env": {"type": "string"}}}}
)
RESULTS = {
    "ok": ToolResult.ok("3"),
    "error": ToolResult.error("no such file"),
    "unicode": ToolResult.ok('line one\nline two ✓ \u2028 "q" \\ \t \x00 é 漢字 🎉'),
    "empty": ToolResult.ok(""),
    "surrogate": ToolResult.ok("bad \udcff byte"),
    "object": ToolResult("7", False, {STRUCTURED_KEY: {"result": 7, "nested": [1, None]}}),
    "error object": ToolResult("x", True, {STRUCTURED_KEY: {"why": "bad"}}),
    "list": ToolResult("[1]", False, {STRUCTURED_KEY: [1, 2]}),
    "scalar": ToolResult("1", False, {STRUCTURED_KEY: 1}),
    "nan": ToolResult("x", False, {STRUCTURED_KEY: {"v": float("nan")}}),
    "not json": ToolResult("x", False, {STRUCTURED_KEY: {"v": {1, 2}}}),
    "other metadata": ToolResult.error("x", {"trace": "t-1"}),
    "question": ToolResult.pending(QUESTION),
    "parts": ToolResult.ok("see", parts=[Part.image(b"\x89PNG", "image/png")]),
}
REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "modern"]


def _call(revision: str, request_id: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "asks", "arguments": {"text": "x"}}
    if revision == "modern":
        params["_meta"] = {
            **MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _in_flight(revision: str, request_id: Any) -> tuple[ServerSession, int]:
    """A session with one tools/call in flight."""
    session = ServerSession(Toolkit([asks]))
    if revision != "modern":
        session.receive(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": revision, "capabilities": {"elicitation": {}}},
            }
        )
        session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    (start,) = session.receive(_call(revision, request_id))
    assert isinstance(start, StartCall)
    return session, start.call_id


def _plain_bytes(message: Any) -> bytes:
    """What json.dumps writes for a message, as Send.to_bytes promises it (lone surrogates
    escaped; a result JSON cannot carry answered -32603 for its id)."""
    try:
        text = json.dumps(thaw(message), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(thaw(message), separators=(",", ":")).encode() + b"\n"
    except (TypeError, ValueError):
        return b""  # compared by meaning below


@pytest.mark.parametrize("request_id", [7, 'req "1" ✓', -12345678901234567890])
@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("kind", sorted(RESULTS))
def test_each_answer_is_written_exactly_as_the_plain_encoder_writes_its_message(
    kind: str, revision: str, request_id: Any
) -> None:
    # The commonest answer (a tool's text answer, in either era) is written from the
    # codec's template, without building its message: byte for byte what json.dumps writes
    # for the message the Send stands for, for every shape of result and client, and the
    # call is done.
    session, call_id = _in_flight(revision, request_id)
    (sent,) = session.complete_call(call_id, RESULTS[kind])
    assert isinstance(sent, Send)
    got = sent.to_bytes()
    assert got.endswith(b"\n") and got.count(b"\n") == 1
    expected = _plain_bytes(sent.message)
    if expected:
        assert got == expected
    else:  # NaN, a set: the answer is an internal error for the request's own id
        answer = json.loads(got)
        assert (answer["id"], answer["error"]["code"]) == (request_id, -32603)
    # Done once: completing it again sends nothing, and its id is free for a new request.
    assert session.complete_call(call_id, RESULTS[kind]) == []
    if kind != "question" or revision == "modern":
        (again,) = session.receive(_call(revision, request_id))
        assert isinstance(again, StartCall)


def test_a_text_answers_message_is_read_only_and_equal_to_the_plain_one() -> None:
    session, call_id = _in_flight("2025-11-25", 1)
    (sent,) = session.complete_call(call_id, ToolResult.ok("3"))
    plain = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": "3"}], "isError": False},
    }
    assert sent == Send(plain) and sent.message == plain
    with pytest.raises(TypeError):
        sent.message["id"] = 2  # type: ignore[index]
    assert json.loads(sent.to_bytes()) == plain


@pytest.mark.parametrize("revision", ["modern", "2025-11-25", "2024-11-05"])
@pytest.mark.parametrize("kind", sorted(set(RESULTS) - {"question"}))  # (it asks instead)
def test_a_text_answers_message_is_the_one_the_plain_path_builds(kind: str, revision: str) -> None:
    # The template keeps a text answer as its parts; the message they stand for is the one
    # the plain path makes of the result (call_tool_result, then reply: a modern answer's
    # resultType and _meta added by the one rule that adds them to every answer).
    session, call_id = _in_flight(revision, 5)
    context = session._ctx
    client = context.calls[call_id].client
    plain = context.reply(5, client, call_tool_result(client, RESULTS[kind])).message
    (sent,) = session.complete_call(call_id, RESULTS[kind])
    assert thaw(sent.message) == thaw(plain)
    if revision == "modern":
        assert list(sent.message["result"])[-2:] == ["resultType", "_meta"]
        assert sent.message["result"]["_meta"] == {
            "io.modelcontextprotocol/serverInfo": context.server_info
        }


REPLY_BODIES: dict[str, Any] = {
    "empty": {},
    "a task": {"resultType": "task", "taskId": "tsk-1", "status": "working", "ttlMs": 5},
    "its own _meta": {"x": 1, "_meta": {"k": "v"}},
    "text": {"text": 'é ✓ \\ "q"', "n": [1, 2.5, None, True]},
    "a lone surrogate": {"text": "lone \udc80"},
    "not JSON": {"n": float("nan")},
}


@pytest.mark.parametrize("name", ["toolnexus", "lone \udc80 name"])
@pytest.mark.parametrize("revision", ["modern", "2025-11-25"])
@pytest.mark.parametrize("kind", sorted(REPLY_BODIES))
def test_every_reply_is_written_exactly_as_the_plain_encoder_writes_its_message(
    kind: str, revision: str, name: str
) -> None:
    # ServerContext.reply writes a modern answer's members from their text, encoded once
    # per session: the line is what json.dumps writes for the message the Send stands for.
    session = ServerSession(Toolkit([asks]), ServerOptions(name=name))
    if revision != "modern":
        session.receive(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": revision, "capabilities": {}},
            }
        )
    (start,) = session.receive(_call(revision, 5))
    assert isinstance(start, StartCall)
    context = session._ctx
    client = context.calls[start.call_id].client
    sent = context.reply(5, client, thaw(REPLY_BODIES[kind]))
    expected = _plain_bytes(sent.message)
    if expected:
        assert sent.to_bytes() == expected
    else:  # NaN: the answer is an internal error for the request's own id
        answer = json.loads(sent.to_bytes())
        assert (answer["id"], answer["error"]["code"]) == (5, -32603)
    if revision == "modern":
        result = sent.message["result"]
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == name
        assert result["resultType"] == ("task" if kind == "a task" else "complete")


def test_a_modern_text_answer_names_the_server_that_session_serves() -> None:
    # The members a modern answer adds are worked out once per session: each session
    # names its own server, and a later answer of the same session the same. A name the
    # template cannot write (a lone surrogate) is written escaped, by the plain encoder.
    toolkit = Toolkit([asks])
    for name in ("first", 'sécond "q"', "lone \udc80 surrogate"):
        session = ServerSession(toolkit, ServerOptions(name=name, version="9"))
        for request_id in (1, 2):
            (start,) = session.receive(_call("modern", request_id))
            assert isinstance(start, StartCall)
            (sent,) = session.complete_call(start.call_id, ToolResult.ok("x"))
            line = json.loads(sent.to_bytes())
            assert line["result"]["_meta"]["io.modelcontextprotocol/serverInfo"] == {
                "name": name,
                "version": "9",
            }
            assert line["result"]["resultType"] == "complete"


def test_completing_an_unknown_or_cancelled_call_sends_nothing() -> None:
    session, call_id = _in_flight("2025-11-25", 1)
    assert session.complete_call(call_id + 100, ToolResult.ok("x")) == []
    session.receive(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    )
    assert session.complete_call(call_id, ToolResult.ok("x")) == []
    assert session.running_calls == 0


def test_reporting_something_else_than_a_tool_result_says_what_to_pass() -> None:
    session, call_id = _in_flight("2025-11-25", 1)
    with pytest.raises(
        TypeError,
        match=r"complete_call: result must be a ToolResult, got str; .*ToolResult\.ok\(text\)",
    ):
        session.complete_call(call_id, "3")  # type: ignore[arg-type]
    assert session.running_calls == 1  # nothing was lost: the call can still be reported
    assert json.loads(session.complete_call(call_id, ToolResult.ok("3"))[0].to_bytes())["id"] == 1
