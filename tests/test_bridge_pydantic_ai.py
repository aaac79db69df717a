"""The pydantic-ai bridge: a toolkit's tools run through an Agent (a local FunctionModel
plays the model), a question is a deferred approval answered with DeferredToolResults, and the
host's deadline holds for a tool that ignores its token."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bridge_tools import Tools
from extras import require

require("TOOLNEXUS_REQUIRE_BRIDGES", "bridges", "pydantic_ai")

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolnexus import Host
from toolnexus.bridges.pydantic_ai import to_pydantic_ai


@pytest.fixture
def tools() -> Iterator[Tools]:
    made = Tools()
    yield made
    made.done()


def model_calling(name: str, args: dict[str, Any]) -> FunctionModel:
    """A model that calls one tool, then answers with what the tool returned."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [
            part
            for message in messages
            for part in message.parts
            if part.part_kind in ("tool-return", "retry-prompt")
        ]
        if not returned:
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id="call_1")])
        last = returned[-1]
        text = last.model_response_str() if isinstance(last, ToolReturnPart) else str(last.content)
        return ModelResponse(parts=[TextPart(f"tool said: {text}")])

    return FunctionModel(respond)


def test_tools_keep_names_and_the_schemas_the_openai_adapter_emits(tools: Tools) -> None:
    openai = {d["function"]["name"]: d["function"]["parameters"] for d in tools.toolkit.to_openai()}
    made = to_pydantic_ai(tools.toolkit)
    assert [t.name for t in made] == ["add", "deploy", "stubborn", "chart"]
    for each in made:
        assert each.function_schema.json_schema == openai[each.name]


def test_a_call_runs_through_the_agent(tools: Tools) -> None:
    agent = Agent(model_calling("add", {"a": 2, "b": 3}), tools=to_pydantic_ai(tools.toolkit))
    assert agent.run_sync("add please").output == "tool said: 5"


def test_a_question_is_a_deferred_request_and_the_answer_resumes_the_call_that_asked(
    tools: Tools,
) -> None:
    agent = Agent(
        model_calling("deploy", {"service": "api"}),
        tools=to_pydantic_ai(tools.toolkit),
        output_type=[str, DeferredToolRequests],
    )
    first = agent.run_sync("ship it")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    [approval] = requests.approvals
    asked = requests.metadata[approval.tool_call_id]
    assert asked["tool"] == "deploy" and asked["request"]["prompt"] == "Where should api go?"
    assert tools.deployed == []

    answered = DeferredToolResults(
        approvals={approval.tool_call_id: True},
        metadata={approval.tool_call_id: {"answer": {"env": "staging"}}},
    )
    second = agent.run_sync(message_history=first.all_messages(), deferred_tool_results=answered)
    assert second.output == "tool said: deployed api to staging"
    assert tools.deployed == [("api", "staging")]


def test_a_denied_question_never_runs_the_tool(tools: Tools) -> None:
    agent = Agent(
        model_calling("deploy", {"service": "api"}),
        tools=to_pydantic_ai(tools.toolkit),
        output_type=[str, DeferredToolRequests],
    )
    first = agent.run_sync("ship it")
    assert isinstance(first.output, DeferredToolRequests)
    [approval] = first.output.approvals
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={approval.tool_call_id: False}),
    )
    assert "denied" in str(second.output)
    assert tools.deployed == []


def test_an_error_result_reaches_the_model_as_a_failure(tools: Tools) -> None:
    agent = Agent(model_calling("add", {"a": 1, "b": "x"}), tools=to_pydantic_ai(tools.toolkit))
    output = agent.run_sync("add").output
    assert "invalid arguments for 'add': b: expected integer" in output


def test_the_hosts_deadline_holds_for_a_tool_that_ignores_its_token(tools: Tools) -> None:
    with Host(tools.toolkit, grace_ms=50) as host:
        agent = Agent(
            model_calling("stubborn", {"seconds": 60}), tools=to_pydantic_ai(host, timeout_ms=200)
        )
        output = agent.run_sync("wait").output
        assert "timed out after 200 ms" in output
        assert not tools.stubborn_returned.is_set()
        tools.done()


def recording_model(name: str, args: dict[str, Any], seen: list[Any]) -> FunctionModel:
    """model_calling, keeping every message part the model is shown."""
    inner = model_calling(name, args).function
    assert inner is not None

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen[:] = [part for message in messages for part in message.parts]
        return inner(messages, info)  # type: ignore[return-value]

    return FunctionModel(respond)


def test_parts_reach_the_tool_return_as_pydantic_ais_own_multimodal_content(tools: Tools) -> None:
    from pydantic_ai.messages import BinaryContent, ImageUrl

    from bridge_tools import PDF, PNG, WAV

    seen: list[Any] = []
    agent = Agent(
        recording_model("chart", {"points": 3}, seen), tools=to_pydantic_ai(tools.toolkit)
    )
    agent.run_sync("draw")
    [returned] = [part for part in seen if isinstance(part, ToolReturnPart)]
    assert returned.content == [
        "a chart of 3 points",
        BinaryContent(PNG, media_type="image/png"),
        BinaryContent(PDF, media_type="application/pdf"),
        BinaryContent(WAV, media_type="audio/wav"),
        ImageUrl("https://example.test/chart.png", media_type="image/png"),
    ]


def test_an_error_results_parts_are_named_in_its_failure(tools: Tools) -> None:
    agent = Agent(
        model_calling("chart", {"points": 3, "fail": True}), tools=to_pydantic_ai(tools.toolkit)
    )
    said = agent.run_sync("draw").output
    assert "could not draw 3 points" in said
    assert "[unsupported image part (image/png, 28 bytes)]" in said
