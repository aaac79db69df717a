"""The openai-agents bridge: a toolkit's tools run through Runner (a local Model plays the
model), a question is an approval interruption answered through RunState, and the host's
deadline holds for a tool that ignores its token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from bridge_tools import Tools
from extras import require

require("TOOLNEXUS_REQUIRE_BRIDGES", "bridges", "agents")

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from toolnexus import Host
from toolnexus.bridges.openai_agents import question_of, to_openai_agents

set_tracing_disabled(True)  # offline: no trace export


@pytest.fixture
def tools() -> Iterator[Tools]:
    made = Tools()
    yield made
    made.done()


class OneCall(Model):
    """Calls one tool, then answers with what the tool returned."""

    def __init__(self, name: str, args: dict[str, Any]) -> None:
        self.name, self.args = name, args

    async def get_response(
        self, system_instructions: Any, input: Any, *rest: Any, **options: Any
    ) -> ModelResponse:
        outputs = [
            item
            for item in (input if isinstance(input, list) else [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if not outputs:
            call = ResponseFunctionToolCall(
                type="function_call",
                name=self.name,
                arguments=json.dumps(self.args),
                call_id="call_1",
                id="fc_1",
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        said = outputs[-1]["output"]
        text = said if isinstance(said, str) else json.dumps(said)
        message = ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[
                ResponseOutputText(type="output_text", text=f"tool said: {text}", annotations=[])
            ],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def run(agent: Agent[Any], start: Any) -> Any:
    return asyncio.run(Runner.run(agent, start))


def test_tools_keep_names_and_the_strict_schemas_the_openai_adapter_emits(tools: Tools) -> None:
    strict = tools.toolkit.to_openai(strict=True)
    openai = {d["function"]["name"]: d["function"]["parameters"] for d in strict}
    bridge = to_openai_agents(tools.toolkit)
    assert [t.name for t in bridge.tools] == ["add", "deploy", "stubborn", "chart"]
    for each in bridge.tools:
        assert each.params_json_schema == openai[each.name]
        assert each.strict_json_schema


def test_a_call_runs_through_the_runner_once(tools: Tools) -> None:
    agent = Agent(
        name="calc",
        model=OneCall("add", {"a": 2, "b": 3}),
        tools=to_openai_agents(tools.toolkit).tools,
    )
    assert run(agent, "add").final_output == "tool said: 5"


def test_a_question_is_an_interruption_and_approving_it_resumes_the_call_that_asked(
    tools: Tools,
) -> None:
    bridge = to_openai_agents(tools.toolkit)
    agent = Agent(name="ops", model=OneCall("deploy", {"service": "api"}), tools=bridge.tools)
    first = run(agent, "ship it")
    [item] = first.interruptions
    request = question_of(item)
    assert request is not None and request.prompt == "Where should api go?"
    assert tools.deployed == []

    state = first.to_state()
    bridge.answers[item.raw_item.call_id] = {"env": "staging"}
    state.approve(item)
    second = run(agent, state)
    assert second.final_output == "tool said: deployed api to staging"
    assert tools.deployed == [("api", "staging")]
    assert tools.asked == 1  # the first pass ran once; the answer resumed that request


def test_a_rejected_question_never_runs_the_tool(tools: Tools) -> None:
    bridge = to_openai_agents(tools.toolkit)
    agent = Agent(name="ops", model=OneCall("deploy", {"service": "api"}), tools=bridge.tools)
    first = run(agent, "ship it")
    [item] = first.interruptions
    state = first.to_state()
    state.reject(item, rejection_message="not today")
    second = run(agent, state)
    assert second.final_output == "tool said: not today"
    assert tools.deployed == []


def test_the_hosts_deadline_holds_for_a_tool_that_ignores_its_token(tools: Tools) -> None:
    with Host(tools.toolkit, grace_ms=50) as host:
        agent = Agent(
            name="slow",
            model=OneCall("stubborn", {"seconds": 60}),
            tools=to_openai_agents(host, timeout_ms=200).tools,
        )
        output = run(agent, "wait").final_output
        assert output.startswith("tool said: timed out after 200 ms")
        assert not tools.stubborn_returned.is_set()
        tools.done()


class Recording(OneCall):
    """OneCall that keeps what the SDK sent back as the tool's output."""

    def __init__(self, name: str, args: dict[str, Any]) -> None:
        super().__init__(name, args)
        self.outputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *rest: Any, **options: Any
    ) -> ModelResponse:
        self.outputs.extend(
            item["output"]
            for item in (input if isinstance(input, list) else [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        )
        return await super().get_response(system_instructions, input, *rest, **options)


def test_parts_reach_the_model_as_the_sdks_own_tool_output_items(tools: Tools) -> None:
    from base64 import b64encode

    from bridge_tools import PDF, PNG

    model = Recording("chart", {"points": 3})
    run(Agent(name="draw", model=model, tools=to_openai_agents(tools.toolkit).tools), "draw")
    [output] = model.outputs
    assert output == [
        {"type": "input_text", "text": "a chart of 3 points"},
        {"type": "input_image", "image_url": "data:image/png;base64," + b64encode(PNG).decode()},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64," + b64encode(PDF).decode(),
            "filename": "report.pdf",
        },
        # The Responses API takes no audio in a tool output: its placeholder says it was there.
        {"type": "input_text", "text": "[unsupported audio part (audio/wav, 16 bytes)]"},
        {"type": "input_image", "image_url": "https://example.test/chart.png"},
    ]


def test_each_tool_is_strict_where_its_schema_has_a_strict_form(tools: Tools) -> None:
    from toolnexus import Toolkit, tool

    @tool
    def tag(labels: dict[str, str]) -> str:
        """Free-form keys: no strict form."""
        return ",".join(labels)

    toolkit = Toolkit([*tools.toolkit, tag])
    bridge = to_openai_agents(toolkit)
    strictness = {each.name: each.strict_json_schema for each in bridge.tools}
    assert strictness == {
        "add": True,
        "deploy": True,
        "stubborn": True,
        "chart": True,
        "tag": False,
    }
    for each in bridge.tools[:4]:
        assert (
            each.params_json_schema
            == toolkit.get(each.name).to_openai(strict=True)["function"]["parameters"]
        )
    with pytest.raises(ValueError, match="'tag'"):
        to_openai_agents(toolkit, strict=True)
    assert not any(
        each.strict_json_schema for each in to_openai_agents(toolkit, strict=False).tools
    )


def test_a_strict_models_null_for_an_optional_argument_reads_as_not_given(tools: Tools) -> None:
    # Strict mode sends every property; `fail` (optional) comes as null.
    model = Recording("chart", {"points": 2, "fail": None})
    result = run(Agent(name="draw", model=model, tools=to_openai_agents(tools.toolkit).tools), "x")
    assert model.outputs[0][0] == {"type": "input_text", "text": "a chart of 2 points"}
    assert result.final_output.startswith("tool said: ")
