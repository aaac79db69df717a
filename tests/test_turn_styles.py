"""The four turn styles (``turns.STYLES``): each provider's tool calls in, its result
messages out, and parts per the §8A allowlist — a block the style defines, or the family's
placeholder text, never a silently dropped part. The providers' own SDK types check these
shapes in test_provider_sdks.py; here they are pinned as plain JSON."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from parts_tools import PNG, WAV
from style_tools import PDF, toolkit
from toolnexus import Host, TurnResult, WireFormatError

PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
PDF_B64 = base64.b64encode(PDF).decode()
WAV_B64 = base64.b64encode(WAV).decode()
PNG_B64 = base64.b64encode(PNG).decode()
UNSUPPORTED_WAV = f"[unsupported audio part (audio/wav, {len(WAV)} bytes)]"
UNSUPPORTED_MP3_URL = "[unsupported audio part (audio/mpeg, 0 bytes)]"


def turn(calls: Any, style: str) -> TurnResult:
    with Host(toolkit) as host:
        result = host.run_turn(calls, style=style)
    assert result.is_complete
    again = TurnResult.from_json(result.to_json())  # a parked turn renders the same
    assert again.messages == result.messages
    return result


# --------------------------------------------------------------------------- openai


def test_openai_text_results_are_one_tool_message_per_call_as_before():
    result = turn(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "broken", "arguments": ""}},
            ],
        },
        "openai",
    )
    assert result.messages == [
        {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"},
        {"role": "tool", "tool_call_id": "c2", "content": "sensor offline"},
    ]


def test_openai_media_follow_the_tool_messages_in_one_user_message():
    result = turn(
        [{"id": "c1", "type": "function", "function": {"name": "media", "arguments": "{}"}}],
        "openai",
    )
    tool_message, user_message = result.messages
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [
            {"type": "text", "text": "the media"},
            {"type": "text", "text": "[unsupported file part (application/pdf, 0 bytes)]"},
            {"type": "text", "text": UNSUPPORTED_MP3_URL},
            {"type": "text", "text": "a caption"},
        ],
    }
    assert user_message == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Parts of tool call c1 (media):"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
            {"type": "image_url", "image_url": {"url": "https://example.test/q3.png"}},
            {
                "type": "file",
                "file": {
                    "filename": "report.pdf",
                    "file_data": "data:application/pdf;base64," + PDF_B64,
                },
            },
            {
                "type": "file",
                "file": {
                    "filename": "notes.txt",
                    "file_data": "data:text/plain;base64,cGxhaW4gd29yZHM=",
                },
            },
            {
                "type": "file",
                "file": {"filename": "file", "file_data": "data:text/csv;base64,YSxiCjEsMgo="},
            },
            {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
        ],
    }


# --------------------------------------------------------------------------- responses


def test_responses_function_calls_become_function_call_outputs():
    result = turn(
        {
            "id": "resp_1",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "weather",
                    "arguments": '{"city": "Oslo"}',
                },
                {"type": "message", "role": "assistant", "content": []},
                {
                    "type": "function_call",
                    "id": "fc_2",
                    "call_id": "call_2",
                    "name": "broken",
                    "arguments": "{}",
                },
            ],
        },
        "responses",
    )
    assert [call.id for call in result.calls] == ["call_1", "call_2"]
    assert result.messages == [
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny in Oslo"},
        {"type": "function_call_output", "call_id": "call_2", "output": "sensor offline"},
    ]


def test_responses_parts_are_input_items_of_the_output():
    result = turn(
        [{"type": "function_call", "call_id": "c1", "name": "media", "arguments": "{}"}],
        "responses",
    )
    assert result.messages == [
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [
                {"type": "input_text", "text": "the media"},
                {"type": "input_image", "image_url": PNG_URL},
                {"type": "input_image", "image_url": "https://example.test/q3.png"},
                {
                    "type": "input_file",
                    "filename": "report.pdf",
                    "file_data": "data:application/pdf;base64," + PDF_B64,
                },
                {"type": "input_file", "file_url": "https://example.test/r.pdf"},
                {
                    "type": "input_file",
                    "filename": "notes.txt",
                    "file_data": "data:text/plain;base64,cGxhaW4gd29yZHM=",
                },
                {
                    "type": "input_file",
                    "filename": "file",
                    "file_data": "data:text/csv;base64,YSxiCjEsMgo=",
                },
                {"type": "input_text", "text": UNSUPPORTED_WAV},
                {"type": "input_text", "text": UNSUPPORTED_MP3_URL},
                {"type": "input_text", "text": "a caption"},
            ],
        }
    ]


def test_responses_call_without_call_id_is_refused_naming_it():
    with Host(toolkit) as host, pytest.raises(WireFormatError, match="'id' must be"):
        host.run_turn(
            [{"type": "function_call", "id": "fc_1", "name": "weather", "arguments": "{}"}],
            style="responses",
        )


# --------------------------------------------------------------------------- anthropic


def test_anthropic_parts_are_tool_result_content_blocks():
    result = turn(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "t1", "name": "media", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "snapshot", "input": {}},
            ],
        },
        "anthropic",
    )
    [message] = result.messages
    first, second = message["content"]
    assert first["content"] == [
        {"type": "text", "text": "the media"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        {"type": "image", "source": {"type": "url", "url": "https://example.test/q3.png"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.test/r.pdf"}},
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain words"},
        },
        {"type": "text", "text": "[unsupported file part (text/csv, 8 bytes)]"},
        {"type": "text", "text": UNSUPPORTED_WAV},
        {"type": "text", "text": UNSUPPORTED_MP3_URL},
        {"type": "text", "text": "a caption"},
    ]
    # An empty output is left out: Anthropic refuses empty text blocks.
    assert second == {
        "type": "tool_result",
        "tool_use_id": "t2",
        "is_error": False,
        "content": [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
            }
        ],
    }


# --------------------------------------------------------------------------- gemini


def test_gemini_function_calls_become_function_responses_paired_by_id_or_order():
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Checking."},
                        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
                        {"functionCall": {"id": "g2", "name": "broken", "args": {}}},
                        {"thoughtSignature": "c2ln"},
                    ],
                }
            }
        ]
    }
    result = turn(response, "gemini")
    assert [call.id for call in result.calls] == ["#1", "g2"]
    assert result.messages == [
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"output": "sunny in Oslo"}}},
                {
                    "functionResponse": {
                        "id": "g2",
                        "name": "broken",
                        "response": {"error": "sensor offline"},
                    }
                },
            ],
        }
    ]
    content = response["candidates"][0]["content"]
    assert turn(content, "gemini").messages == result.messages  # a Content
    assert turn(content["parts"], "gemini").messages == result.messages  # its parts
    bare = [{"name": "weather", "args": {"city": "Oslo"}}]  # response.function_calls
    assert turn(bare, "gemini").calls[0].arguments == {"city": "Oslo"}


def test_gemini_media_go_inline_in_the_function_response_and_the_rest_to_its_text():
    result = turn([{"functionCall": {"id": "m", "name": "media"}}], "gemini")
    [message] = result.messages
    [response] = message["parts"]
    assert response == {
        "functionResponse": {
            "id": "m",
            "name": "media",
            "response": {
                "output": "\n".join(
                    [
                        "the media",
                        "[unsupported image part (image/png, 0 bytes)]",
                        "[unsupported file part (application/pdf, 0 bytes)]",
                        "[unsupported file part (text/csv, 8 bytes)]",
                        UNSUPPORTED_WAV,
                        UNSUPPORTED_MP3_URL,
                        "a caption",
                    ]
                )
            },
            "parts": [
                {"inlineData": {"mimeType": "image/png", "data": PNG_B64}},
                {"inlineData": {"mimeType": "application/pdf", "data": PDF_B64}},
                {"inlineData": {"mimeType": "text/plain", "data": "cGxhaW4gd29yZHM="}},
            ],
        }
    }


# --------------------------------------------------------------------------- every style


@pytest.mark.parametrize("style", ["openai", "responses", "anthropic", "gemini"])
def test_every_part_reaches_the_messages_as_a_block_or_a_placeholder(style):
    calls = {
        "openai": [
            {"id": "c1", "type": "function", "function": {"name": "media", "arguments": "{}"}}
        ],
        "responses": [
            {"type": "function_call", "call_id": "c1", "name": "media", "arguments": "{}"}
        ],
        "anthropic": [{"type": "tool_use", "id": "c1", "name": "media", "input": {}}],
        "gemini": [{"functionCall": {"id": "c1", "name": "media", "args": {}}}],
    }[style]
    result = turn(calls, style)
    text = repr(result.messages)
    parts = result.calls[0].result.parts
    carried = 0
    for part in parts:
        if part.placeholder() in text:
            carried += 1
        elif part.type == "text":
            carried += part.text in text
        elif part.url is not None:
            carried += part.url in text
        else:  # base64, or (Anthropic's text document) the text itself
            assert part.data is not None
            carried += part.data[:40] in text or repr(part.to_bytes().decode())[1:-1] in text
    assert carried == len(parts)


# --------------------------------------------------------------------------- resume


@pytest.mark.parametrize("style", ["responses", "gemini"])
def test_a_halted_turn_of_the_new_styles_resumes_from_json(style):
    from toolnexus import Answer, Request, Toolkit, ToolResult, tool
    from toolnexus._context import ToolContext

    @tool
    def approve(ctx: ToolContext) -> ToolResult:
        """Asks first."""
        if ctx.answer is None:
            return ToolResult.pending(Request("approval", "Go?"))
        return ToolResult.ok("approved")

    calls = {
        "responses": [
            {"type": "function_call", "call_id": "c1", "name": "approve", "arguments": "{}"}
        ],
        "gemini": [{"functionCall": {"name": "approve", "args": {}}}],
    }[style]
    with Host(Toolkit([approve])) as host:
        halted = host.run_turn(calls, style=style)
        assert halted.pending is not None and halted.messages == []
        parked = TurnResult.from_json(halted.to_json())
        done = host.resume_turn(parked, Answer.accept(halted.pending))
    assert done.is_complete
    assert (
        done.messages
        == {
            "responses": [{"type": "function_call_output", "call_id": "c1", "output": "approved"}],
            "gemini": [
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "name": "approve",
                                "response": {"output": "approved"},
                            }
                        }
                    ],
                }
            ],
        }[style]
    )
