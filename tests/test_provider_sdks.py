"""Offline, against the providers' own SDK types (the ``providers`` extra: openai, anthropic,
google-genai): tool definitions and turn messages of every style, parts included, are what
each SDK's request types accept, and each SDK's own response objects are read as tool
calls. Nothing is sent anywhere.

Validation is strict: extra keys are refused (``extra="forbid"``), so a key the provider
does not define fails here instead of being dropped by the API. Skipped when an SDK is not
installed, unless TOOLNEXUS_REQUIRE_PROVIDERS=1 (CI sets it), which makes that a failure.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from extras import require
from parts_tools import PNG
from style_tools import PDF, toolkit
from toolnexus import Host, TurnResult

pytestmark = pytest.mark.providers

require(
    "TOOLNEXUS_REQUIRE_PROVIDERS", "providers", "anthropic", "google.genai", "openai", "pydantic"
)

import anthropic.types as anthropic_types
import google.genai.types as genai
import openai.types.chat as chat
import openai.types.responses as responses
from pydantic import ConfigDict, TypeAdapter

STRICT = ConfigDict(extra="forbid")


def materialize(value: Any) -> Any:
    """Walk a validated TypedDict value, running pydantic's lazy Iterable validators."""
    if isinstance(value, dict):
        return {key: materialize(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        return [materialize(item) for item in value]
    return value


def accepts(kind: Any, value: Any) -> None:
    """``value`` validates as the SDK type ``kind`` with nothing dropped or changed."""
    # A list around it: pydantic takes a config only for a type that has none of its own.
    adapter = TypeAdapter(list[kind], config=STRICT)  # alive while its lazy iterators run
    validated = materialize(adapter.validate_python([value]))
    assert validated == [json.loads(json.dumps(value))]


def run(calls: Any, style: str) -> TurnResult:
    with Host(toolkit) as host:
        turn = host.run_turn(calls, style=style)
    assert turn.is_complete
    return turn


# --------------------------------------------------------------------------- definitions


def test_openai_tool_definitions_are_chat_completion_tools() -> None:
    for definition in toolkit.to_openai():
        accepts(chat.ChatCompletionFunctionToolParam, definition)
    for definition in toolkit.to_openai(strict=True):
        accepts(chat.ChatCompletionFunctionToolParam, definition)


def test_openai_responses_tool_definitions_are_function_tools() -> None:
    for definition in toolkit.to_openai(api="responses"):
        accepts(responses.FunctionToolParam, definition)
    for definition in toolkit.to_openai(api="responses", strict=True):
        accepts(responses.FunctionToolParam, definition)


def test_anthropic_tool_definitions_are_tool_params() -> None:
    for definition in toolkit.to_anthropic():
        accepts(anthropic_types.ToolParam, definition)
    for definition in toolkit.to_anthropic(strict=True):
        accepts(anthropic_types.ToolParam, definition)


def test_per_tool_definitions_validate_too() -> None:
    for item in toolkit.tools():
        accepts(chat.ChatCompletionFunctionToolParam, item.to_openai())
        accepts(anthropic_types.ToolParam, item.to_anthropic())


def test_gemini_tool_definitions_are_gemini_tools() -> None:
    for definition in toolkit.to_gemini():
        tool = genai.Tool.model_validate_json(json.dumps(definition))
        names = [d.name for d in tool.function_declarations or ()]
        assert names == [t.name for t in toolkit.tools()]
    paint = next(t for t in toolkit.tools() if t.name == "paint")
    genai.FunctionDeclaration.model_validate_json(json.dumps(paint.to_gemini()))


# --------------------------------------------------------------------------- openai


def openai_message() -> Any:
    return chat.ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            chat.ChatCompletionMessageFunctionToolCall(
                id="call_1", type="function", function={"name": "media", "arguments": "{}"}
            ),
            chat.ChatCompletionMessageFunctionToolCall(
                id="call_2",
                type="function",
                function={"name": "weather", "arguments": '{"city": "Oslo"}'},
            ),
            chat.ChatCompletionMessageFunctionToolCall(
                id="call_3", type="function", function={"name": "broken", "arguments": ""}
            ),
        ],
    )


def test_openai_messages_with_parts_are_chat_completion_message_params() -> None:
    message = openai_message()
    turn = run(message, "openai")  # the SDK's own message object
    assert [call.id for call in turn.calls] == ["call_1", "call_2", "call_3"]
    history = [message.model_dump(exclude_none=True), *turn.messages]
    for entry in history:
        accepts(chat.ChatCompletionMessageParam, entry)
    assert [m["role"] for m in turn.messages] == ["tool", "tool", "tool", "user"]


# --------------------------------------------------------------------------- responses


def test_responses_items_with_parts_are_response_input_items() -> None:
    output = [
        responses.ResponseFunctionToolCall(
            type="function_call",
            id="fc_1",
            call_id="call_1",
            name="media",
            arguments="{}",
            status="completed",
        ),
        responses.ResponseFunctionToolCall(
            type="function_call",
            id="fc_2",
            call_id="call_2",
            name="weather",
            arguments='{"city": "Oslo"}',
            status="completed",
        ),
    ]
    turn = run(output, "responses")
    assert [call.id for call in turn.calls] == ["call_1", "call_2"]
    for item in turn.messages:
        accepts(responses.ResponseInputItemParam, item)
    for item in output:  # what goes back in the next request's input, beside our items
        accepts(responses.ResponseInputItemParam, item.model_dump(exclude_none=True))


# --------------------------------------------------------------------------- anthropic


def test_anthropic_messages_with_parts_are_message_params() -> None:
    content = [
        anthropic_types.TextBlock(type="text", text="Let me look."),
        anthropic_types.ToolUseBlock(type="tool_use", id="toolu_1", name="media", input={}),
        anthropic_types.ToolUseBlock(type="tool_use", id="toolu_2", name="snapshot", input={}),
        anthropic_types.ToolUseBlock(type="tool_use", id="toolu_3", name="broken", input={}),
    ]
    turn = run(content, "anthropic")
    assert [call.id for call in turn.calls] == ["toolu_1", "toolu_2", "toolu_3"]
    [message] = turn.messages
    accepts(anthropic_types.MessageParam, message)
    assert [block["is_error"] for block in message["content"]] == [False, False, True]


# --------------------------------------------------------------------------- gemini


def gemini_response(with_ids: bool) -> Any:
    def call(index: int, name: str, args: dict[str, Any]) -> Any:
        return genai.Part(
            function_call=genai.FunctionCall(
                id=f"fc-{index}" if with_ids else None, name=name, args=args
            )
        )

    return genai.GenerateContentResponse(
        candidates=[
            genai.Candidate(
                content=genai.Content(
                    role="model",
                    parts=[
                        genai.Part(text="Checking."),
                        call(1, "media", {}),
                        call(2, "weather", {"city": "Oslo"}),
                        call(3, "broken", {}),
                    ],
                )
            )
        ]
    )


@pytest.mark.parametrize("with_ids", [True, False])
def test_gemini_contents_with_parts_are_gemini_contents(with_ids: bool) -> None:
    response = gemini_response(with_ids)
    turn = run(response, "gemini")  # the SDK's own response object
    assert [call.name for call in turn.calls] == ["media", "weather", "broken"]
    assert run(response.function_calls, "gemini").messages == turn.messages
    [message] = turn.messages
    content = genai.Content.model_validate_json(json.dumps(message))
    assert content.role == "user"
    responses_ = [part.function_response for part in content.parts or ()]
    assert all(r is not None for r in responses_)
    media, weather, broken = responses_
    assert media is not None and weather is not None and broken is not None
    assert [media.id, weather.id, broken.id] == (
        ["fc-1", "fc-2", "fc-3"] if with_ids else [None, None, None]
    )
    assert weather.response == {"output": "sunny in Oslo"}
    assert broken.response == {"error": "sensor offline"}
    inline = [p.inline_data for p in media.parts or ()]
    assert [(b.mime_type, b.data) for b in inline if b is not None] == [
        ("image/png", PNG),
        ("application/pdf", PDF),
        ("text/plain", b"plain words"),
    ]


def test_gemini_sdk_serialises_our_inline_data_back_to_the_same_bytes() -> None:
    [message] = run(gemini_response(True), "gemini").messages
    content = genai.Content.model_validate_json(json.dumps(message))
    again = json.loads(content.model_dump_json(by_alias=True, exclude_none=True))
    blob = again["parts"][0]["functionResponse"]["parts"][0]["inlineData"]
    assert base64.urlsafe_b64decode(blob["data"]) == PNG
