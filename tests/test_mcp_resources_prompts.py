"""Resources, prompts and completion: the objects, the toolkit that holds them, and the
session's methods (list, read, get, complete, subscribe) in both eras, bad input included."""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterator
from typing import Any, Literal

import pytest

from toolnexus import (
    NotFoundError,
    Part,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    set_max_part_bytes,
    tool,
)
from toolnexus.mcp import (
    Prompt,
    Resource,
    Send,
    ServerOptions,
    ServerSession,
    StartCall,
    prompt,
    resource,
)

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


@resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A fixed text."""
    return "This is the content."


@resource("test://items/{id}", mime_type="application/json", complete={"id": ["12", "13", "99"]})
def item(id: int) -> dict[str, Any]:
    """One item, by number."""
    return {"id": id, "double": id * 2}


@resource("test://blob")
def blob() -> bytes:
    """Some bytes."""
    return b"\x00\x01\x02"


@resource("test://parts")
def several() -> list[Any]:
    """Text and an image."""
    return ["first", Part.image(b"GIF89a", "image/gif")]


@resource("file:///{+path}")
def files(params: dict[str, Any], ctx: ToolContext | None = None) -> str:
    """Any file (contract style)."""
    return "contents of " + params["path"]


@resource("test://broken")
def broken() -> str:
    """Always fails."""
    raise RuntimeError("the disk is on fire")


@resource("test://big")
def big() -> bytes:
    """Larger than the test's ceiling."""
    return b"x" * 4096


@resource("test://asks")
def asks(ctx: ToolContext) -> str:
    """Asks before it reads."""
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Which version?", id="which"))  # type: ignore[return-value]
    return f"version {(ctx.answer.data or {}).get('answer')}"


@prompt
def review(code: str, focus: Literal["bugs", "style"] = "bugs", rounds: int = 1) -> str:
    """Ask for a code review.

    Args:
        code: the code to review.
        focus: what to look for.
        rounds: how many passes.
    """
    return f"Review for {focus} ({rounds}x):\n{code}"


@prompt(
    title="Colours",
    complete={"shade": lambda value: [s for s in ("light", "dark") if s.startswith(value)]},
)
def paint(colour: Colour, shade: str = "light") -> list[Any]:
    """Paint something."""
    return [
        {"role": "assistant", "content": f"{shade} {colour.value}"},
        Part.file(b"notes", "text/plain", name="test://static-text"),
        Part.image(b"GIF89a", "image/gif"),
    ]


@prompt
def failing() -> str:
    """Always fails."""
    raise ValueError("no words left")


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def toolkit() -> Toolkit:
    return Toolkit(
        [add, static_text, item, blob, several, files, broken, big, asks, review, paint, failing]
    )


def legacy(kit: Toolkit | None = None, version: str = "2025-11-25") -> ServerSession:
    session = ServerSession(
        kit if kit is not None else toolkit(), ServerOptions(name="t", version="1")
    )
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {"elicitation": {}}},
        }
    )
    session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def modern(kit: Toolkit | None = None) -> ServerSession:
    return ServerSession(
        kit if kit is not None else toolkit(), ServerOptions(name="t", version="1")
    )


def drive(
    session: ServerSession, method: str, params: dict[str, Any] | None = None, *, rid: Any = 1
) -> dict[str, Any]:
    """Send one request; run every call it starts through the toolkit, as a host would;
    return the one message sent back."""
    body = dict(params or {})
    if session.protocol_version is None:
        body.setdefault("_meta", MODERN)
    kit = session._toolkit
    sent: list[dict[str, Any]] = []
    actions = list(session.receive({"jsonrpc": "2.0", "id": rid, "method": method, "params": body}))
    while actions:
        action = actions.pop(0)
        if isinstance(action, Send):
            sent.append(dict(action.message))
        elif isinstance(action, StartCall):
            result = kit.execute(action.name, action.arguments, ToolContext(answer=action.answer))
            actions += session.complete_call(action.call_id, result)
    assert len(sent) == 1, sent
    return sent[0]


def result_of(message: dict[str, Any]) -> dict[str, Any]:
    assert "result" in message, message
    return dict(message["result"])


def error_of(message: dict[str, Any]) -> dict[str, Any]:
    assert "error" in message, message
    return dict(message["error"])


@pytest.fixture
def small_parts() -> Iterator[None]:
    previous = set_max_part_bytes(1024)
    try:
        yield
    finally:
        set_max_part_bytes(previous)


# --------------------------------------------------------------------------- the objects


def test_a_resource_reads_in_python_with_its_uri_and_a_part_per_content() -> None:
    result = item.read("test://items/7")
    assert result.metadata["contents"] == [
        {"uri": "test://items/7", "mimeType": "application/json", "text": '{"id":7,"double":14}'}
    ]
    assert result.parts[0].name == "test://items/7"
    assert item.uri_for(id=7) == "test://items/7"
    assert item.match("test://items/7") == {"id": "7"} and item.match("test://x") is None
    assert item.is_template and not static_text.is_template
    assert repr(static_text) == "<Resource 'static_text' test://static-text>"


def test_a_resource_can_be_embedded_in_a_tool_result_as_it_is() -> None:
    embedded = ToolResult.ok("see the notes", parts=static_text.read().parts)
    (part,) = embedded.parts
    assert (part.type, part.mime_type, part.name) == ("file", "text/plain", "test://static-text")
    assert part.to_bytes() == b"This is the content."


def test_a_prompt_lists_its_arguments_from_the_signature_and_docstring() -> None:
    assert review.arguments == [
        {"name": "code", "description": "the code to review.", "required": True},
        {"name": "focus", "description": "what to look for.", "required": False},
        {"name": "rounds", "description": "how many passes.", "required": False},
    ]
    assert review.render({"code": "x", "rounds": "2"}).output == "Review for bugs (2x):\nx"
    assert repr(review) == "<Prompt 'review'>"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: resource("not a uri")(lambda: "x"), "absolute URI"),
        (lambda: resource("x://{a*}")(lambda a: a), "level-4"),
        (lambda: resource("x://static")(lambda: "x"), "give it a name"),
        (lambda: resource("x://{a}", name="r")(lambda a, b: a), "parameter 'b' is not a variable"),
        (lambda: resource("x://{a}", name="r", complete={"z": []})(lambda a: a), "'z'"),
        (lambda: prompt(complete={"nope": ["x"]})(review.fn), "'nope'"),
        (lambda: prompt(lambda x: x), "give it a name"),
    ],
)
def test_a_programmers_mistake_raises_at_definition_naming_the_fix(make: Any, words: str) -> None:
    with pytest.raises((ValueError, TypeError), match=words):
        make()


def test_the_toolkit_keeps_resources_and_prompts_beside_its_tools() -> None:
    kit = toolkit()
    assert [t.name for t in kit.tools()] == ["add"]
    assert len(kit.resources()) == 8 and len(kit.prompts()) == 3
    assert kit.get_prompt("review") is review
    assert kit.find_resource("test://items/5") == (item, {"id": "5"})
    assert kit.find_resource("test://nothing") is None
    with pytest.raises(LookupError, match="unknown prompt 'reviw'; did you mean 'review'"):
        kit.get_prompt("reviw")
    with pytest.raises(ValueError, match="already registered"):
        kit.register(static_text)
    kit.remove(static_text)
    assert kit.find_resource("test://static-text") is None
    assert "tool" in repr(kit) and "resources" in repr(kit) and "prompts" in repr(kit)


def test_resource_and_prompt_calls_resolve_like_tools_so_a_host_runs_them() -> None:
    kit = toolkit()
    read = kit.execute("resources/read", {"uri": "test://items/3"})
    assert read.metadata["contents"][0]["text"] == '{"id":3,"double":6}'
    got = kit.execute("prompts/get", {"name": "review", "arguments": {"code": "y"}})
    assert got.metadata["prompt"]["messages"][0]["content"]["text"].endswith("y")
    assert kit.execute("resources/read", {"uri": "test://gone"}).output.startswith(
        "resource not found"
    )
    assert Toolkit([add]).execute("resources/read", {"uri": "x"}).output.startswith("unknown tool")


def test_a_change_to_the_lists_is_told_to_watchers() -> None:
    kit = Toolkit([add])
    heard: list[tuple[str, str | None]] = []
    stop = kit._watch(lambda kind, uri: heard.append((kind, uri)))
    kit.register(static_text, review)
    kit.remove("add")
    kit.resource_changed("test://static-text")
    stop()
    kit.remove(review)
    assert heard == [
        ("prompts", None),
        ("resources", None),
        ("tools", None),
        ("resource", "test://static-text"),
    ]


# --------------------------------------------------------------------------- lists


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_resources_templates_and_prompts_are_listed(era: str) -> None:
    session = legacy() if era == "legacy" else modern()
    listed = result_of(drive(session, "resources/list"))
    assert [r["uri"] for r in listed["resources"]][:3] == [
        "test://static-text",
        "test://blob",
        "test://parts",
    ]
    assert listed["resources"][0] == {
        "uri": "test://static-text",
        "name": "static_text",
        "description": "A fixed text.",
        "mimeType": "text/plain",
    }
    templates = result_of(drive(session, "resources/templates/list"))["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["test://items/{id}", "file:///{+path}"]
    prompts = result_of(drive(session, "prompts/list"))["prompts"]
    assert [p["name"] for p in prompts] == ["review", "paint", "failing"]
    assert prompts[1]["title"] == "Colours"
    cached = {"ttlMs", "cacheScope"} <= listed.keys()
    assert cached == (era == "modern")


def test_lists_are_paged_with_a_cursor() -> None:
    session = ServerSession(toolkit(), ServerOptions(page_size=2))
    first = result_of(drive(session, "resources/list"))
    second = result_of(drive(session, "resources/list", {"cursor": first["nextCursor"]}))
    assert len(first["resources"]) == 2 and second["resources"][0]["uri"] == "test://parts"
    bad = error_of(drive(session, "prompts/list", {"cursor": "forged"}))
    assert bad["code"] == -32602 and "cursor" in bad["message"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_capabilities_name_resources_prompts_and_completion_only_when_offered(era: str) -> None:
    def capabilities(kit: Toolkit) -> dict[str, Any]:
        if era == "legacy":
            session = ServerSession(kit)
            return result_of(drive_raw(session, "initialize", {"protocolVersion": "2025-11-25"}))[
                "capabilities"
            ]
        return result_of(drive(modern(kit), "server/discover"))["capabilities"]

    full = capabilities(toolkit())
    assert {"resources", "prompts", "completions"} <= full.keys()
    assert full["resources"] == {"subscribe": True, "listChanged": True}
    bare = capabilities(Toolkit([add]))
    assert not {"resources", "prompts", "completions"} & bare.keys()


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("prompts/list", {}),
        ("prompts/get", {"name": "greet"}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "test://static-text"}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}}),
    ],
)
def test_a_server_of_tools_alone_has_no_methods_for_what_it_does_not_declare(
    era: str, method: str, params: dict[str, Any]
) -> None:
    # What it answers and what it declares agree (conformance: server-stateless,
    # ServerDeclaresPromptsInDiscover): an undeclared feature's method is not found.
    kit = Toolkit([add])
    session = legacy(kit) if era == "legacy" else modern(kit)
    error = error_of(drive(session, method, params))
    assert error["code"] == -32601
    assert method in error["message"] and "capabilities do not declare" in error["message"]


def drive_raw(session: ServerSession, method: str, params: dict[str, Any]) -> dict[str, Any]:
    (sent,) = session.receive({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert isinstance(sent, Send)
    return dict(sent.message)


# --------------------------------------------------------------------------- reading


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_reading_gives_text_or_blob_contents_with_the_uri(era: str) -> None:
    session = legacy() if era == "legacy" else modern()
    text = result_of(drive(session, "resources/read", {"uri": "test://static-text"}))
    assert text["contents"] == [
        {"uri": "test://static-text", "mimeType": "text/plain", "text": "This is the content."}
    ]
    binary = result_of(drive(session, "resources/read", {"uri": "test://blob"}))
    assert binary["contents"] == [
        {"uri": "test://blob", "mimeType": "application/octet-stream", "blob": "AAEC"}
    ]
    both = result_of(drive(session, "resources/read", {"uri": "test://parts"}))["contents"]
    assert [("text" in c, c["mimeType"]) for c in both] == [
        (True, "text/plain"),
        (False, "image/gif"),
    ]
    templated = result_of(drive(session, "resources/read", {"uri": "file:///a/b.txt"}))
    assert templated["contents"][0]["text"] == "contents of a/b.txt"
    assert ("ttlMs" in templated) == (era == "modern")


def test_a_uri_no_resource_serves_is_invalid_params_with_the_uri_in_data() -> None:
    for session in (legacy(), modern()):
        error = error_of(drive(session, "resources/read", {"uri": "test://nothing/here"}))
        assert error["code"] == -32602
        assert error["data"] == {"uri": "test://nothing/here"}
        assert "Resource not found" in error["message"]


def test_a_template_variable_that_does_not_read_as_its_type_names_no_resource() -> None:
    error = error_of(drive(modern(), "resources/read", {"uri": "test://items/abc"}))
    assert error["code"] == -32602 and error["data"] == {"uri": "test://items/abc"}
    assert "id: expected integer" in error["message"]


def test_a_resource_that_raises_is_an_error_and_the_session_keeps_serving() -> None:
    session = modern()
    error = error_of(drive(session, "resources/read", {"uri": "test://broken"}))
    assert error["code"] == -32603
    assert "resource 'test://broken' failed: the disk is on fire" in error["message"]
    assert result_of(drive(session, "resources/read", {"uri": "test://static-text"}, rid=2))


def test_a_resource_that_raises_is_logged_as_the_resource_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # It used to read "tool 'broken' raised RuntimeError".
    with caplog.at_level(logging.ERROR, logger="toolnexus"):
        assert broken.read().is_error
        assert failing.render({}).is_error
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("toolnexus")]
    assert lines == ["resource 'broken' raised RuntimeError", "prompt 'failing' raised ValueError"]


opened: list[str] = []  # what `doc_file` was asked to open


@resource("docs://files/{name}")
def doc_file(name: str) -> str:
    """A file of the docs folder, by name."""
    opened.append(name)
    if name != "guide.md":
        raise NotFoundError("resource", name)
    return "the guide"


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("docs://files/..%2F..%2F..%2Fetc%2Fhostname", "one path segment"),
        ("docs://files/%2Fetc%2Fhostname", "one path segment"),
        ("docs://files/..", "one path segment"),
        ("docs://files/a%5Cb", "one path segment"),
        ("docs://files/guide.md%00.txt", "control character"),
        ("docs://files/a%0Ab", "control character"),
        ("file:////etc/hostname", "absolute path"),
        ("file:///notes/../../etc/hostname", "'..' segment"),
        ("file:///notes/%2E%2E/%2E%2E/etc", "'..' segment"),
        ("file:///C:/Windows/win.ini", "absolute path"),
    ],
)
def test_a_template_variable_that_could_leave_its_folder_never_reaches_the_function(
    uri: str, words: str
) -> None:
    # docs://files/{name} used to read /etc/hostname through ..%2F..%2F..%2Fetc%2Fhostname.
    opened.clear()
    kit = Toolkit([doc_file, files])
    for session in (legacy(kit), modern(kit)):
        error = error_of(drive(session, "resources/read", {"uri": uri}))
        assert error["code"] == -32602 and error["data"] == {"uri": uri}
        assert (
            error["message"].startswith(f"Resource not found: {uri!r}")
            and words in (error["message"])
        )
    assert kit.execute("resources/read", {"uri": uri}).output.startswith("resource not found")
    held = doc_file if uri.startswith("docs:") else files
    assert held.read(uri).is_error and words in held.read(uri).output
    assert opened == []


def test_a_reserved_variable_takes_a_path_and_a_simple_one_a_name_with_dots() -> None:
    opened.clear()
    kit = Toolkit([doc_file, files])
    read = result_of(drive(modern(kit), "resources/read", {"uri": "file:///notes/a..b/c.md"}))
    assert read["contents"][0]["text"] == "contents of notes/a..b/c.md"
    read = result_of(drive(modern(kit), "resources/read", {"uri": "docs://files/guide.md"}))
    assert read["contents"][0]["text"] == "the guide" and opened == ["guide.md"]


def test_a_template_function_that_says_not_found_is_resource_not_found() -> None:
    # SEP-2164 (the 2026-07-28 revision): -32602 with the URI in data, for every era.
    kit = Toolkit([doc_file])
    for session in (legacy(kit), modern(kit)):
        error = error_of(drive(session, "resources/read", {"uri": "docs://files/missing.md"}))
        assert error["code"] == -32602 and error["data"] == {"uri": "docs://files/missing.md"}
        assert error["message"].startswith("Resource not found: 'docs://files/missing.md'")


@pytest.mark.usefixtures("small_parts")
def test_a_body_over_the_part_ceiling_is_refused_naming_both_sizes() -> None:
    error = error_of(drive(modern(), "resources/read", {"uri": "test://big"}))
    assert "4096 bytes, over the limit of 1024 bytes" in error["message"]


@pytest.mark.parametrize("params", [{}, {"uri": 5}])
def test_a_read_without_a_uri_string_is_invalid_params(params: dict[str, Any]) -> None:
    error = error_of(drive(modern(), "resources/read", params))
    assert error["code"] == -32602 and "uri must be a string" in error["message"]


def test_a_resource_that_asks_is_answered_before_the_read_completes() -> None:
    session = modern()
    asked = result_of(drive(session, "resources/read", {"uri": "test://asks"}))
    assert asked["resultType"] == "input_required"
    (key,) = asked["inputRequests"]
    done = result_of(
        drive(
            session,
            "resources/read",
            {
                "uri": "test://asks",
                "requestState": asked["requestState"],
                "inputResponses": {key: {"action": "accept", "content": {"answer": "v2"}}},
            },
            rid=2,
        )
    )
    assert done["contents"][0]["text"] == "version v2"


# --------------------------------------------------------------------------- subscriptions


def test_a_legacy_client_subscribes_and_unsubscribes() -> None:
    session = legacy()
    assert result_of(drive(session, "resources/subscribe", {"uri": "test://static-text"})) == {}
    assert session.subscriptions == {"test://static-text"}
    assert result_of(drive(session, "resources/unsubscribe", {"uri": "test://static-text"})) == {}
    assert session.subscriptions == frozenset()
    missing = error_of(drive(session, "resources/subscribe", {"uri": "test://none"}))
    assert missing["code"] == -32602 and missing["data"] == {"uri": "test://none"}


def test_subscribe_is_not_part_of_the_modern_revision() -> None:
    error = error_of(drive(modern(), "resources/subscribe", {"uri": "test://static-text"}))
    assert error["code"] == -32601


# --------------------------------------------------------------------------- prompts


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_getting_a_prompt_renders_its_messages(era: str) -> None:
    session = legacy() if era == "legacy" else modern()
    got = result_of(
        drive(session, "prompts/get", {"name": "review", "arguments": {"code": "x = 1"}})
    )
    assert got["description"] == "Ask for a code review."
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Review for bugs (1x):\nx = 1"}}
    ]


def test_a_prompt_message_may_be_an_assistants_an_embedded_resource_or_an_image() -> None:
    got = result_of(
        drive(modern(), "prompts/get", {"name": "paint", "arguments": {"colour": "red"}})
    )
    messages = got["messages"]
    assert messages[0] == {"role": "assistant", "content": {"type": "text", "text": "light red"}}
    assert messages[1]["content"]["type"] == "resource"
    assert messages[1]["content"]["resource"]["uri"] == "test://static-text"
    assert messages[2]["content"] == {"type": "image", "data": "R0lGODlh", "mimeType": "image/gif"}


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "code: required property is missing"),
        ({"code": "x", "rounds": "many"}, 'rounds: expected integer, got string "many"'),
        ({"code": "x", "focus": "speed"}, "focus"),
        ({"code": "x", "extra": "y"}, "extra"),
    ],
)
def test_missing_or_wrong_prompt_arguments_are_invalid_params(
    arguments: dict[str, Any], words: str
) -> None:
    error = error_of(drive(modern(), "prompts/get", {"name": "review", "arguments": arguments}))
    assert error["code"] == -32602
    assert words in error["message"]


def test_an_unknown_prompt_or_malformed_params_are_invalid_params() -> None:
    session = modern()
    unknown = error_of(drive(session, "prompts/get", {"name": "reveiw"}))
    assert unknown["code"] == -32602 and "did you mean 'review'" in unknown["message"]
    nameless = error_of(drive(session, "prompts/get", {"arguments": {}}))
    assert "name must be a string" in nameless["message"]
    listed = error_of(drive(session, "prompts/get", {"name": "review", "arguments": ["x"]}))
    assert "arguments must be an object" in listed["message"]


def test_a_prompt_that_raises_is_an_error_and_the_session_keeps_serving() -> None:
    session = legacy()
    error = error_of(drive(session, "prompts/get", {"name": "failing"}))
    assert error["code"] == -32603 and "no words left" in error["message"]
    assert result_of(drive(session, "prompts/list", rid=2))


def test_an_older_client_gets_the_placeholder_for_blocks_it_does_not_know() -> None:
    @prompt
    def voice() -> Any:
        """Speaks."""
        return Part.audio(b"RIFF", "audio/wav")

    session = legacy(Toolkit([voice]), version="2024-11-05")
    got = result_of(drive(session, "prompts/get", {"name": "voice"}))
    assert got["messages"][0]["content"] == {
        "type": "text",
        "text": "[unsupported audio part (audio/wav, 4 bytes)]",
    }


# --------------------------------------------------------------------------- completion


def complete(session: ServerSession, ref: dict[str, Any], name: str, value: str) -> dict[str, Any]:
    return drive(
        session, "completion/complete", {"ref": ref, "argument": {"name": name, "value": value}}
    )


@pytest.mark.parametrize(
    ("ref", "argument", "value", "values"),
    [
        ({"type": "ref/prompt", "name": "review"}, "focus", "st", ["style"]),
        ({"type": "ref/prompt", "name": "review"}, "focus", "", ["bugs", "style"]),
        ({"type": "ref/prompt", "name": "paint"}, "colour", "G", ["green"]),
        ({"type": "ref/prompt", "name": "paint"}, "shade", "d", ["dark"]),
        ({"type": "ref/prompt", "name": "review"}, "code", "x", []),
        ({"type": "ref/resource", "uri": "test://items/{id}"}, "id", "1", ["12", "13"]),
    ],
)
def test_completion_uses_the_completer_or_the_enum_values(
    ref: dict[str, Any], argument: str, value: str, values: list[str]
) -> None:
    got = result_of(complete(modern(), ref, argument, value))["completion"]
    assert got == {"values": values, "total": len(values), "hasMore": False}


def test_completion_returns_at_most_a_hundred_values_and_says_there_are_more() -> None:
    @prompt(complete={"word": [f"w{n}" for n in range(150)]})
    def words(word: str) -> str:
        """Words."""
        return word

    got = result_of(
        complete(modern(Toolkit([words])), {"type": "ref/prompt", "name": "words"}, "word", "w")
    )
    assert len(got["completion"]["values"]) == 100
    assert got["completion"]["total"] == 150 and got["completion"]["hasMore"] is True


@pytest.mark.parametrize(
    ("ref", "argument", "words"),
    [
        ({"type": "ref/prompt", "name": "review"}, "colour", "'colour' is not an argument"),
        ({"type": "ref/prompt", "name": "nope"}, "x", "unknown prompt 'nope'"),
        ({"type": "ref/resource", "uri": "test://none/{x}"}, "x", "unknown resource template"),
        ({"type": "ref/tool", "name": "add"}, "a", "ref.type must be"),
    ],
)
def test_completing_an_unknown_argument_or_ref_is_invalid_params(
    ref: dict[str, Any], argument: str, words: str
) -> None:
    error = error_of(complete(modern(), ref, argument, ""))
    assert error["code"] == -32602 and words in error["message"]


def test_a_completer_that_raises_is_an_error() -> None:
    def explode(value: str) -> list[str]:
        raise RuntimeError("index offline")

    @prompt(complete={"q": explode})
    def search(q: str) -> str:
        """Search."""
        return q

    error = error_of(
        complete(modern(Toolkit([search])), {"type": "ref/prompt", "name": "search"}, "q", "a")
    )
    assert error["code"] == -32603 and "index offline" in error["message"]


def test_resource_and_prompt_classes_are_public_under_toolnexus_mcp() -> None:
    assert isinstance(static_text, Resource) and isinstance(review, Prompt)
    assert Resource.__module__ == Prompt.__module__ == "toolnexus.mcp"


@pytest.mark.parametrize("name", ["_server._resources", "_server._prompts"])
def test_the_docstring_examples_run_in_order_in_one_namespace(name: str) -> None:
    import doctest
    import importlib

    module = importlib.import_module(f"toolnexus.mcp.{name}")
    finder = doctest.DocTestFinder()
    namespace = dict(module.__dict__)
    tests = sorted(
        (t for t in finder.find(module, globs=namespace) if t.examples),
        key=lambda t: t.lineno or 0,
    )
    for public in (module.__dict__[n] for n in module.__all__ if n[0].isupper() or n.islower()):
        if getattr(public, "__module__", None) == "toolnexus.mcp":
            found = finder.find(public, public.__name__, module=False, globs=namespace)
            tests += sorted((t for t in found if t.examples), key=lambda t: t.lineno or 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        test.globs = namespace  # one namespace: a method's example uses its class's names
        runner.run(test, clear_globs=False)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted >= 5
