"""Tool search against the providers' own SDK types (the ``providers`` extra; offline): every
definition and turn shape tool search adds is what the SDK's request types accept, and a
client-side search round trip of each provider runs through ``Host.run_turn`` on the SDK's
own response objects, built from recorded responses. Nothing is sent anywhere."""

from __future__ import annotations

import json
from typing import Any

import pytest

from extras import require
from toolnexus import Host, Tool, Toolkit, ToolResult

pytestmark = pytest.mark.providers

require(
    "TOOLNEXUS_REQUIRE_PROVIDERS", "providers", "anthropic", "google.genai", "openai", "pydantic"
)

import anthropic.types as anthropic_types
import google.genai.types as genai
import openai.types.chat as chat
import openai.types.responses as responses
from pydantic import TypeAdapter

from test_provider_sdks import accepts


def make(name: str, description: str, defer: bool | None = None) -> Tool:
    schema = {
        "type": "object",
        "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}},
        "required": ["owner", "repo"],
    }
    return Tool(
        name,
        description,
        schema,
        lambda args, ctx=None: ToolResult.ok(f"{name} {args['owner']}/{args['repo']}"),
        defer=defer,
    )


def catalog() -> Toolkit:
    toolkit = Toolkit(defer=True)
    toolkit.register(make("ping_repo", "Check a repository answers", defer=False))
    github = toolkit.namespace("github", "GitHub's REST API")
    github.register(
        make("repos_delete", "Delete a repository"),
        make("repos_get", "Get a repository"),
        make("issues_list_for_repo", "List repository issues"),
    )
    return toolkit


# --------------------------------------------------------------------------- definitions


def test_anthropic_search_forms_are_tool_union_params() -> None:
    toolkit = catalog()
    for search in ("local", "bm25", "regex", "client"):
        for strict in (False, True):
            for definition in toolkit.to_anthropic(search=search, strict=strict):
                accepts(anthropic_types.ToolUnionParam, definition)


def test_openai_search_forms_are_tool_params() -> None:
    toolkit = catalog()
    for definition in toolkit.to_openai():
        accepts(chat.ChatCompletionFunctionToolParam, definition)
    for definition in toolkit.to_openai(strict=True):
        accepts(chat.ChatCompletionFunctionToolParam, definition)
    for search in ("local", "hosted", "client"):
        for definition in toolkit.to_openai(api="responses", search=search):
            accepts(responses.ToolParam, definition)


def test_gemini_local_form_is_a_gemini_tool() -> None:
    for definition in catalog().to_gemini():
        tool = genai.Tool.model_validate_json(json.dumps(definition))
        names = [d.name for d in tool.function_declarations or ()]
        assert names == ["ping_repo", "search_tools", "call_tool"]


# --------------------------------------------------------------------------- round trips


def recorded_anthropic(content: list[dict[str, Any]]) -> anthropic_types.Message:
    return anthropic_types.Message.model_validate(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use",
            "content": content,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def test_anthropic_client_side_search_round_trip() -> None:
    toolkit = catalog()
    with Host(toolkit) as host:
        searched = host.run_turn(
            recorded_anthropic(
                [
                    {"type": "text", "text": "Let me find the tool."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "tool_search",
                        "input": {"query": "remove a project"},
                    },
                ]
            ),
            style="anthropic",
        )
        (message,) = searched.messages
        accepts(anthropic_types.MessageParam, message)
        references = message["content"][0]["content"]
        assert references[0] == {"type": "tool_reference", "tool_name": "repos_delete"}
        called = host.run_turn(
            recorded_anthropic(
                [
                    {
                        "type": "tool_use",
                        "id": "toolu_02",
                        "name": "repos_delete",
                        "input": {"owner": "octo", "repo": "old"},
                    }
                ]
            ),
            style="anthropic",
            revealed=searched.revealed,
        )
    assert called.results[0].output == "repos_delete octo/old"
    accepts(anthropic_types.MessageParam, called.messages[0])


def test_anthropic_server_search_result_is_read_from_the_sdk_message() -> None:
    message = recorded_anthropic(
        [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "tool_search_tool_bm25",
                "input": {"query": "repository issues"},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [
                        {"type": "tool_reference", "tool_name": "issues_list_for_repo"}
                    ],
                },
            },
            {
                "type": "tool_use",
                "id": "toolu_03",
                "name": "issues_list_for_repo",
                "input": {"owner": "octo", "repo": "hello"},
            },
        ]
    )
    with Host(catalog()) as host:
        turn = host.run_turn(message, style="anthropic")
    assert turn.results[0].output == "issues_list_for_repo octo/hello"
    assert turn.revealed == ("issues_list_for_repo",)


def recorded_response(output: list[dict[str, Any]]) -> responses.Response:
    return responses.Response.model_validate(
        {
            "id": "resp_01",
            "object": "response",
            "created_at": 1765000000,
            "model": "gpt-5.4",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def test_openai_client_executed_tool_search_round_trip() -> None:
    toolkit = catalog()
    with Host(toolkit) as host:
        searched = host.run_turn(
            recorded_response(
                [
                    {
                        "type": "tool_search_call",
                        "id": "tsc_01",
                        "call_id": "call_search",
                        "execution": "client",
                        "status": "completed",
                        "arguments": {"query": "fetch a repository"},
                    }
                ]
            ),
            style="responses",
        )
        (item,) = searched.messages
        accepts(responses.ResponseInputItemParam, item)
        assert item["tools"][0]["type"] == "namespace"
        assert item["tools"][0]["tools"][0]["name"] == "repos_get"
        called = host.run_turn(
            recorded_response(
                [
                    {
                        "type": "function_call",
                        "id": "fc_01",
                        "call_id": "call_get",
                        "namespace": "github",
                        "name": "repos_get",
                        "arguments": '{"owner": "octo", "repo": "hello"}',
                        "status": "completed",
                    }
                ]
            ),
            style="responses",
            revealed=searched.revealed,
        )
    assert called.results[0].output == "repos_get octo/hello"
    for each in called.messages:
        accepts(responses.ResponseInputItemParam, each)


def test_openai_hosted_search_output_is_read_from_the_sdk_response() -> None:
    output = TypeAdapter(responses.ResponseOutputItem).validate_python(
        {
            "type": "tool_search_output",
            "id": "tso_01",
            "call_id": None,
            "execution": "server",
            "status": "completed",
            "tools": [
                {
                    "type": "namespace",
                    "name": "github",
                    "description": "GitHub's REST API",
                    "tools": [{"type": "function", "name": "repos_delete", "parameters": {}}],
                }
            ],
        }
    )
    call = {
        "type": "function_call",
        "id": "fc_02",
        "call_id": "call_del",
        "name": "repos_delete",
        "arguments": '{"owner": "octo", "repo": "old"}',
    }
    with Host(catalog()) as host:
        turn = host.run_turn(recorded_response([output.model_dump(), call]), style="responses")
    assert turn.results[0].output == "repos_delete octo/old"
    assert turn.revealed == ("repos_delete",)
