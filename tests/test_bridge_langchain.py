"""The LangChain bridge: a toolkit's tools run through LangChain's and LangGraph's own
invocation paths, a question is a LangGraph interrupt answered with Command(resume=...), and
the host's deadline holds for a tool that ignores its token."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from bridge_tools import Tools
from extras import require

require("TOOLNEXUS_REQUIRE_BRIDGES", "bridges", "langgraph")

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from toolnexus import Host
from toolnexus.bridges.langchain import to_langchain


@pytest.fixture
def tools() -> Iterator[Tools]:
    made = Tools()
    yield made
    made.done()


def graph_of(lc_tools: list[object]) -> object:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(lc_tools))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(checkpointer=InMemorySaver())


def calls(*items: tuple[str, dict[str, object], str]) -> dict[str, object]:
    return {
        "messages": [
            AIMessage(
                content="",
                tool_calls=[
                    {"name": name, "args": args, "id": call_id} for name, args, call_id in items
                ],
            )
        ]
    }


def test_tools_keep_names_and_the_schemas_the_openai_adapter_emits(tools: Tools) -> None:
    lc_tools = to_langchain(tools.toolkit)
    assert [t.name for t in lc_tools] == ["add", "deploy", "stubborn", "chart"]
    openai = {d["function"]["name"]: d["function"]["parameters"] for d in tools.toolkit.to_openai()}
    for lc_tool in lc_tools:
        assert lc_tool.args_schema == openai[lc_tool.name]
        assert lc_tool.description == tools.toolkit.get(lc_tool.name).description


def test_a_call_runs_through_invoke_and_ainvoke(tools: Tools) -> None:
    add = to_langchain(tools.toolkit)[0]
    assert add.invoke({"a": 2, "b": 3}) == "5"
    assert asyncio.run(add.ainvoke({"a": 4, "b": 5})) == "9"


def test_a_bad_argument_is_an_error_tool_message_the_model_can_read(tools: Tools) -> None:
    app = graph_of(to_langchain(tools.toolkit))
    out = app.invoke(
        calls(("add", {"a": 1, "b": "x"}, "c1")), {"configurable": {"thread_id": "bad"}}
    )
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert message.content == "invalid arguments for 'add': b: expected integer, got string \"x\""


def test_a_question_interrupts_the_graph_and_the_resume_value_answers_the_call_that_asked(
    tools: Tools,
) -> None:
    app = graph_of(to_langchain(tools.toolkit))
    config = {"configurable": {"thread_id": "deploy"}}
    paused = app.invoke(calls(("deploy", {"service": "api"}, "c1")), config)
    [interruption] = paused["__interrupt__"]
    assert interruption.value["tool"] == "deploy"
    request = interruption.value["request"]
    assert request["prompt"] == "Where should api go?" and request["kind"] == "input"
    assert request["data"]["schema"]["properties"]["env"]["enum"] == ["staging", "production"]
    assert tools.deployed == []

    done = app.invoke(Command(resume={"env": "staging"}), config)
    message = done["messages"][-1]
    assert isinstance(message, ToolMessage) and message.tool_call_id == "c1"
    assert message.content == "deployed api to staging"
    assert tools.deployed == [("api", "staging")]  # the answer ran the call once


def test_a_declined_question_is_an_error_message_and_nothing_runs(tools: Tools) -> None:
    app = graph_of(to_langchain(tools.toolkit))
    config = {"configurable": {"thread_id": "declined"}}
    app.invoke(calls(("deploy", {"service": "api"}, "c1")), config)
    done = app.invoke(Command(resume=False), config)
    message = done["messages"][-1]
    assert message.status == "error"
    assert message.content == "declined/expired: Where should api go?"
    assert tools.deployed == []


def test_an_answer_failing_the_requests_schema_never_deploys(tools: Tools) -> None:
    app = graph_of(to_langchain(tools.toolkit))
    config = {"configurable": {"thread_id": "moon"}}
    app.invoke(calls(("deploy", {"service": "api"}, "c1")), config)
    done = app.invoke(Command(resume={"env": "moon"}), config)
    assert done["messages"][-1].status == "error"
    assert "moon" in done["messages"][-1].content
    assert tools.deployed == []


def test_outside_a_graph_a_question_comes_back_as_its_prompt(tools: Tools) -> None:
    deploy = to_langchain(tools.toolkit)[1]
    assert deploy.invoke({"service": "api"}) == "Where should api go?"


def test_the_hosts_deadline_holds_for_a_tool_that_ignores_its_token(tools: Tools) -> None:
    with Host(tools.toolkit, grace_ms=50) as host:
        app = graph_of(to_langchain(host, timeout_ms=200))
        out = app.invoke(
            calls(("stubborn", {"seconds": 60}, "c1")), {"configurable": {"thread_id": "slow"}}
        )
        message = out["messages"][-1]
        assert message.status == "error"
        assert message.content.startswith("timed out after 200 ms")
        assert not tools.stubborn_returned.is_set()  # answered while the tool still ran
        tools.done()


def test_parts_reach_the_tool_message_as_langchains_own_content_blocks(tools: Tools) -> None:
    from base64 import b64encode

    from bridge_tools import PDF, PNG, WAV

    app = graph_of(to_langchain(tools.toolkit))
    out = app.invoke(calls(("chart", {"points": 3}, "c1")), {"configurable": {"thread_id": "p"}})
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage) and message.status == "success"
    assert message.content == [
        {"type": "text", "text": "a chart of 3 points"},
        {"type": "image", "mime_type": "image/png", "base64": b64encode(PNG).decode()},
        {
            "type": "file",
            "mime_type": "application/pdf",
            "base64": b64encode(PDF).decode(),
            "extras": {"filename": "report.pdf"},
        },
        # LangChain takes no "audio" block from a tool: a file block with its audio type.
        {"type": "file", "mime_type": "audio/wav", "base64": b64encode(WAV).decode()},
        {"type": "image", "mime_type": "image/png", "url": "https://example.test/chart.png"},
    ]
    # LangChain reads them as its standard blocks, none dropped.
    assert [block["type"] for block in message.content_blocks] == [
        "text",
        "image",
        "file",
        "file",
        "image",
    ]


def test_an_error_results_parts_reach_the_error_tool_message_too(tools: Tools) -> None:
    app = graph_of(to_langchain(tools.toolkit))
    out = app.invoke(
        calls(("chart", {"points": 3, "fail": True}, "c1")), {"configurable": {"thread_id": "f"}}
    )
    message = out["messages"][-1]
    assert message.status == "error"
    assert [block["type"] for block in message.content] == ["text", "image"]
    assert message.content[0] == {"type": "text", "text": "could not draw 3 points"}


def test_a_result_without_parts_stays_plain_text(tools: Tools) -> None:
    add = to_langchain(tools.toolkit)[0]
    assert add.invoke(
        {"type": "tool_call", "id": "c1", "name": "add", "args": {"a": 1, "b": 2}}
    ) == (ToolMessage(content="3", tool_call_id="c1", name="add"))
