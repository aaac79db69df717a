"""Parts as MCP content blocks (``mcp/_shared/_content.py``) through the session, per revision, and
MCP content read back as a ToolResult with :func:`result_from_mcp`."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from parts_tools import PNG, REPORT, WAV, toolkit
from toolnexus import Part, ToolResult, WireFormatError
from toolnexus.mcp import Send, ServerSession, StartCall, result_from_mcp

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
PNG_B64 = base64.b64encode(PNG).decode()
WAV_B64 = base64.b64encode(WAV).decode()


def call(name: str, version: str | None = None) -> dict[str, Any]:
    session = ServerSession(toolkit)
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if version is None:
        params["_meta"] = MODERN
    else:
        session.receive(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}},
            }
        )
    actions = session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    assert len(actions) == 1 and isinstance(actions[0], StartCall), actions
    done = session.complete_call(actions[0].call_id, toolkit.execute(name, {}))
    assert len(done) == 1 and isinstance(done[0], Send)
    return dict(done[0].message["result"])


def test_an_image_only_result_is_just_an_image_block() -> None:
    assert call("image_content")["content"] == [
        {"type": "image", "data": PNG_B64, "mimeType": "image/png"}
    ]


def test_mixed_content_follows_the_text_block_in_part_order() -> None:
    content = call("mixed_content", "2025-06-18")["content"]
    assert content == [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
        {
            "type": "resource",
            "resource": {
                "uri": "attachment://report.json",
                "mimeType": "application/json",
                "blob": base64.b64encode(REPORT).decode(),
            },
        },
        {
            "type": "resource_link",
            "uri": "https://example.test/charts/q3.png",
            "name": "q3.png",
            "mimeType": "image/png",
        },
        {"type": "text", "text": "caption: one red pixel"},
    ]


def test_an_older_revision_gets_placeholder_text_for_blocks_it_does_not_know() -> None:
    audio = call("audio_content", "2024-11-05")["content"]
    assert audio == [
        {"type": "text", "text": "a 10 ms clip"},
        {"type": "text", "text": f"[unsupported audio part (audio/wav, {len(WAV)} bytes)]"},
    ]
    assert call("audio_content", "2025-03-26")["content"][1]["type"] == "audio"
    mixed = call("mixed_content", "2025-03-26")["content"]
    assert mixed[3] == {"type": "text", "text": "[unsupported image part (image/png, 0 bytes)]"}


def test_a_result_without_parts_is_the_single_text_block_as_before() -> None:
    from toolnexus.mcp._shared._content import content_blocks

    assert content_blocks(ToolResult.ok("")) == [{"type": "text", "text": ""}]
    assert content_blocks(ToolResult.ok("", parts=[Part.from_text("x")])) == [
        {"type": "text", "text": ""},
        {"type": "text", "text": "x"},
    ]


def test_result_from_mcp_maps_each_block_to_a_part() -> None:
    back = result_from_mcp(
        {
            "content": [
                {"type": "text", "text": "four blocks"},
                {"type": "audio", "data": WAV_B64, "mimeType": "audio/wav"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource.",
                    },
                },
                {
                    "type": "resource_link",
                    "uri": "https://example.test/a.pdf",
                    "name": "a.pdf",
                    "mimeType": "application/pdf",
                },
                {"type": "video", "uri": "https://example.test/v.mp4"},
            ],
            "isError": True,
            "structuredContent": {"n": 4},
        }
    )
    assert back.output == "four blocks" and back.is_error
    assert back.metadata == {"structuredContent": {"n": 4}}
    audio, text_file, link, unknown = back.parts
    assert audio == Part.audio(WAV, "audio/wav")
    assert (text_file.type, text_file.mime_type, text_file.name) == (
        "file",
        "text/plain",
        "embedded-resource",
    )
    assert text_file.to_bytes() == b"This is an embedded resource."
    assert link == Part(
        "file", mime_type="application/pdf", url="https://example.test/a.pdf", name="a.pdf"
    )
    assert unknown == Part.from_text("[unsupported MCP video block]")


def test_our_own_blocks_read_back_to_the_same_parts_but_for_names() -> None:
    # MCP image blocks carry no name; a resource link always has one.
    def unnamed(part: Part) -> dict[str, Any]:
        return {key: value for key, value in part.to_dict().items() if key != "name"}

    original = toolkit.execute("mixed_content", {})
    back = result_from_mcp(call("mixed_content"))
    assert back.output == original.output
    assert [unnamed(p) for p in back.parts] == [unnamed(p) for p in original.parts]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("nope", "content"),
        ([{"type": "text", "text": 5}], "content[0].text"),
        ([{"type": "text", "text": ""}, {"type": "image", "data": PNG_B64}], "content[1].mimeType"),
        ([{"type": "image", "mimeType": "image/png", "data": "???"}], "content[0].data"),
        (
            [{"type": "resource", "resource": {"uri": "x:y", "blob": "%%"}}],
            "content[0].resource.blob",
        ),
        ([{"type": "resource", "resource": "x"}], "content[0].resource"),
        ([{"type": "resource_link", "name": "a", "mimeType": "image/png"}], "content[0].uri"),
    ],
)
def test_result_from_mcp_refuses_malformed_blocks_naming_the_field(content: Any, field: str):
    with pytest.raises(WireFormatError) as caught:
        result_from_mcp({"content": content})
    assert caught.value.field == field, caught.value


@pytest.mark.parametrize(
    "result",
    [
        {"content": [{"type": "text", "text": "3"}], "isError": False},
        {"content": [{"type": "text", "text": "no"}], "isError": True},
        {"content": [{"type": "text", "text": "3"}]},
        {"content": [{"type": "text", "text": "3"}], "isError": None},
        {"content": [{"type": "text", "text": "3"}], "resultType": "complete", "_meta": {}},
        {"content": [{"type": "text", "text": "3"}], "structuredContent": {"a": 1}},
        {"content": [{"type": "text", "text": "3", "annotations": {}}], "isError": False},
    ],
)
def test_a_single_text_block_reads_back_as_the_general_path_reads_it(result: Any) -> None:
    from types import MappingProxyType

    # A MappingProxyType is not a dict: it takes the general path.
    assert result_from_mcp(result) == result_from_mcp(MappingProxyType(result))


@pytest.mark.parametrize(
    ("result", "field"),
    [
        ({"content": [{"type": "text", "text": 3}]}, "content[0].text"),
        ({"content": [{"type": "text", "text": "3"}], "isError": "yes"}, "isError"),
    ],
)
def test_a_single_malformed_text_block_is_refused_as_the_general_path_refuses_it(
    result: Any, field: str
) -> None:
    with pytest.raises(WireFormatError) as caught:
        result_from_mcp(result)
    assert caught.value.field == field
