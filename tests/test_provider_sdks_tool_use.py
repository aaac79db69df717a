"""The advanced tool use's shapes, offline, against the providers' own SDK types (the
``providers`` extra): every new tool definition (callers, examples, eager streaming, cache
control, custom grammar tools, hosted MCP, Gemini's parametersJsonSchema) and every new turn
shape (results for a programmatic caller, custom tool outputs, MCP approval responses) is
accepted by the request types with extra keys forbidden; the recorded responses in
tests/fixtures/providers are what the SDKs' response types read, and run as the SDKs' own
objects. Nothing is sent anywhere. Skipped without the SDKs unless
TOOLNEXUS_REQUIRE_PROVIDERS=1 (CI sets it), which makes that a failure.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from extras import require
from toolnexus import Answer, Grammar, Host, HostedMcp, Toolkit, ToolResult, tool
from toolnexus.policies import require_approval

pytestmark = pytest.mark.providers

require(
    "TOOLNEXUS_REQUIRE_PROVIDERS", "providers", "anthropic", "google.genai", "openai", "pydantic"
)

import anthropic.types.beta as anthropic_beta
import google.genai.types as genai
import openai.types.chat as chat
import openai.types.responses as responses
from anthropic.types.beta.beta_message import BetaMessage
from openai.types.beta.beta_response import BetaResponse
from openai.types.beta.beta_response_input_item_param import (
    BetaResponseInputItemParam,
)
from openai.types.beta.beta_tool_param import BetaToolParam
from openai.types.responses.response_input_item_param import McpApprovalResponse
from openai.types.responses.tool_param import Mcp
from pydantic import ConfigDict, TypeAdapter

FIXTURES = Path(__file__).parent / "fixtures" / "providers"
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
    adapter = TypeAdapter(list[kind], config=STRICT)
    validated = materialize(adapter.validate_python([value]))
    assert validated == [json.loads(json.dumps(value))]


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


@tool(
    allowed_callers=["direct", "programmatic"],
    input_examples=[{"a": 1, "b": 2}],
    eager_input_streaming=False,
)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(allowed_callers=["programmatic"])
def deploy(env: str) -> str:
    """Deploy."""
    return f"deployed to {env}"


@tool(grammar=Grammar("lark", 'start: "SELECT " NAME\n%import common.CNAME -> NAME'))
def sql(input: str) -> str:
    """Run a query."""
    return f"ran {input}"


toolkit = Toolkit([add, deploy, sql])
DOCS = HostedMcp(
    "docs",
    "https://mcp.example.com/mcp",
    allowed_tools=("search",),
    headers={"X-Team": "core"},
    authorization="tok",
    description="Docs",
)


# --------------------------------------------------------------------------- definitions


@pytest.mark.parametrize("version", ["code_execution_20250825", "code_execution_20260120"])
def test_anthropic_definitions_with_callers_examples_and_cache_are_beta_tools(
    version: str,
) -> None:
    tools = Toolkit([add, deploy]).to_anthropic(
        code_execution=version, cache_control={"type": "ephemeral", "ttl": "1h"}
    )
    for definition in tools:
        accepts(anthropic_beta.BetaToolParam, definition)
    assert tools[0]["input_examples"] == [{"a": 1, "b": 2}]


CODE_EXECUTION_PARAMS = {
    "code_execution_20250825": anthropic_beta.BetaCodeExecutionTool20250825Param,
    "code_execution_20260120": anthropic_beta.BetaCodeExecutionTool20260120Param,
    "code_execution_20260521": anthropic_beta.BetaCodeExecutionTool20260521Param,
}


@pytest.mark.parametrize("version", sorted(CODE_EXECUTION_PARAMS))
def test_anthropics_programmatic_tool_list_is_beta_tool_unions(version: str) -> None:
    tools = Toolkit([add, deploy]).to_anthropic(
        code_execution=version, cache_control={"type": "ephemeral"}, programmatic=True
    )
    # The code-execution tool of the version the tools' allowed_callers name, first.
    accepts(CODE_EXECUTION_PARAMS[version], tools[0])
    assert tools[1]["allowed_callers"] == ["direct", version]
    for definition in tools:
        accepts(anthropic_beta.BetaToolUnionParam, definition)
    for definition in tools[1:]:
        accepts(anthropic_beta.BetaToolParam, definition)


def test_openais_programmatic_tool_list_is_responses_tools() -> None:
    from openai.types.responses.tool_param import ProgrammaticToolCalling

    tools = toolkit.to_openai(api="responses", programmatic=True)
    accepts(ProgrammaticToolCalling, tools[0])
    for definition in tools:
        accepts(responses.ToolParam, definition)
        accepts(BetaToolParam, definition)
    assert [each.get("name") for each in tools] == [None, "add", "deploy", "sql"]


def test_anthropic_mcp_connector_entries_are_beta_types() -> None:
    accepts(anthropic_beta.BetaRequestMCPServerURLDefinitionParam, DOCS.to_anthropic_server())
    accepts(anthropic_beta.BetaMCPToolsetParam, DOCS.to_anthropic_toolset())
    accepts(anthropic_beta.BetaToolUnionParam, DOCS.to_anthropic_toolset())


def test_openai_responses_definitions_are_tools() -> None:
    for definition in toolkit.to_openai(api="responses"):
        accepts(responses.ToolParam, definition)
        accepts(BetaToolParam, definition)
    accepts(responses.FunctionToolParam, add.to_openai(api="responses"))
    accepts(responses.CustomToolParam, sql.to_openai(api="responses"))
    accepts(chat.ChatCompletionCustomToolParam, sql.to_openai())


def test_a_hosted_mcp_entry_is_an_openai_mcp_tool() -> None:
    accepts(Mcp, DOCS.to_openai())
    accepts(responses.ToolParam, DOCS.to_openai())
    accepts(BetaToolParam, DOCS.to_openai())


def test_gemini_declarations_take_the_full_json_schema() -> None:
    from dataclasses import dataclass

    @dataclass
    class Node:
        name: str
        children: list[Node]

    @tool
    def grow(tree: Node, label: str | int | None = None) -> str:
        """Grow."""
        return "ok"

    schema = json.loads(json.dumps(grow.input_schema))
    assert "$defs" in schema and '"$ref"' in json.dumps(schema) and '"anyOf"' in json.dumps(schema)
    declaration = genai.FunctionDeclaration.model_validate_json(json.dumps(grow.to_gemini()))
    assert declaration.parameters_json_schema == schema
    assert declaration.parameters is None
    # The SDK sends it on as it came: the whole tools entry, serialised back, is unchanged.
    (entry,) = Toolkit([grow]).to_gemini()
    sent = genai.Tool.model_validate(entry).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    assert sent["functionDeclarations"][0]["parametersJsonSchema"] == schema
    subset = genai.FunctionDeclaration.model_validate_json(
        json.dumps(grow.to_gemini(schema="subset"))
    )
    assert subset.parameters is not None and subset.parameters_json_schema is None


# --------------------------------------------------------------------------- recorded turns


def test_the_recorded_responses_are_what_the_sdks_read() -> None:
    message = BetaMessage.model_validate(fixture("anthropic_programmatic_turn.json"))
    assert [getattr(b, "caller", None) is not None for b in message.content] == [
        False,
        False,
        True,
        True,
    ]
    for name in ("openai_programmatic_response.json", "openai_mcp_approval_response.json"):
        data = fixture(name)
        response = BetaResponse.model_validate(data)
        dumped = response.model_dump(mode="json", exclude_unset=True)
        assert dumped["output"] == data["output"]  # every key of ours is one of theirs
    gemini = genai.GenerateContentResponse.model_validate(
        fixture("gemini_thought_signature_response.json")
    )
    assert gemini.candidates and gemini.candidates[0].content


def test_a_programmatic_anthropic_turn_from_the_sdk_object_answers_with_beta_blocks() -> None:
    message = BetaMessage.model_validate(fixture("anthropic_programmatic_turn.json"))
    with Host(Toolkit([add, deploy]), tool_middleware={"deploy": [require_approval()]}) as host:
        turn = host.run_turn(message, style="anthropic")  # the SDK's own object
        assert turn.waiting == ("toolu_01PtcDeploy",)
        turn = host.resume_turn(turn, Answer.accept(turn.pending))
    (reply,) = turn.messages
    accepts(anthropic_beta.BetaMessageParam, reply)
    assert [block["content"] for block in reply["content"]] == ["42", "deployed to staging"]


def test_a_programmatic_openai_turn_from_the_sdk_object_answers_with_input_items() -> None:
    response = BetaResponse.model_validate(fixture("openai_programmatic_response.json"))
    with Host(Toolkit([add, deploy])) as host:
        turn = host.run_turn(response, style="responses")
    assert [call.caller for call in turn.calls] == [
        {"type": "program", "caller_id": "call_prog_01"}
    ] * 2
    for item in turn.messages:
        accepts(responses.ResponseInputItemParam, item)
        accepts(BetaResponseInputItemParam, item)


def test_custom_tool_outputs_and_approval_responses_are_input_items() -> None:
    items = [
        {"type": "custom_tool_call", "call_id": "c1", "name": "sql", "input": "SELECT users"},
    ]
    with Host(toolkit) as host:
        (custom,) = host.run_turn(items, style="responses").messages
        approval = BetaResponse.model_validate(fixture("openai_mcp_approval_response.json"))
        turn = host.run_turn(approval, style="responses")
        (yes,) = host.resume_turn(turn, Answer.accept(turn.pending)).messages
        turn = host.run_turn(approval, style="responses")
        (no,) = host.resume_turn(turn, Answer.decline(turn.pending)).messages
    accepts(responses.ResponseInputItemParam, custom)
    accepts(responses.ResponseCustomToolCallOutputParam, custom)
    for response in (yes, no):
        accepts(McpApprovalResponse, response)
        accepts(responses.ResponseInputItemParam, response)
    assert (yes["approve"], no["approve"]) == (True, False)


def test_a_programmatic_custom_tool_calls_output_is_an_input_item_with_its_caller() -> None:
    @tool(grammar=Grammar("regex", r"^[a-z ]{1,40}$"), allowed_callers=["direct", "programmatic"])
    def words(input: str) -> str:
        """Count words."""
        return str(len(input.split()))

    program = {"type": "program", "caller_id": "call_prog_7"}
    call = responses.ResponseCustomToolCall(
        type="custom_tool_call", call_id="c7", name="words", input="two words", caller=program
    )
    with Host(Toolkit([words])) as host:
        (output,) = host.run_turn([call], style="responses").messages
    assert output == {
        "type": "custom_tool_call_output", "call_id": "c7", "output": "2", "caller": program
    }  # fmt: skip
    accepts(responses.ResponseCustomToolCallOutputParam, output)
    accepts(responses.ResponseInputItemParam, output)
    accepts(BetaResponseInputItemParam, output)


def test_gemini_thought_signatures_from_the_sdk_object_are_kept() -> None:
    response = genai.GenerateContentResponse.model_validate(
        fixture("gemini_thought_signature_response.json")
    )
    part = response.candidates[0].content.parts[1]  # type: ignore[index,union-attr]
    with Host(Toolkit([add])) as host:
        turn = host.run_turn(response, style="gemini")
    signature = turn.calls[0].signature
    assert signature is not None and base64.b64decode(signature) == part.thought_signature
    assert turn.calls[1].signature is None
    (message,) = turn.messages
    genai.Content.model_validate_json(json.dumps(message))


def test_a_refused_caller_still_balances_the_turn_in_the_sdks_shape() -> None:
    @tool
    def direct_only(x: int) -> int:
        """Direct only."""
        return x

    block = anthropic_beta.BetaToolUseBlock(
        type="tool_use",
        id="toolu_9",
        name="direct_only",
        input={"x": 1},
        caller=anthropic_beta.BetaServerToolCaller20260120(
            type="code_execution_20260120", tool_id="srvtoolu_9"
        ),
    )
    with Host(Toolkit([direct_only])) as host:
        turn = host.run_turn([block], style="anthropic")
    (reply,) = turn.messages
    accepts(anthropic_beta.BetaMessageParam, reply)
    assert reply["content"][0]["is_error"] is True
    assert isinstance(turn.results[0], ToolResult)


def test_a_chat_custom_tool_call_from_the_sdk_object_answers_with_a_tool_message() -> None:
    from openai.types.chat.chat_completion_message_custom_tool_call import (
        ChatCompletionMessageCustomToolCall,
        Custom,
    )

    call = ChatCompletionMessageCustomToolCall(
        id="call_c", type="custom", custom=Custom(name="sql", input="SELECT users")
    )
    with Host(toolkit) as host:
        (message,) = host.run_turn([call], style="openai").messages
    accepts(chat.ChatCompletionMessageParam, message)
    assert message["content"] == "ran SELECT users"
