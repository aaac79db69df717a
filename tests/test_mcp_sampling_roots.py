"""Sampling and roots as questions, and several questions at once: the contract values,
a Host that answers them itself, and the MCP session in both eras (InputRequiredResult,
server-to-client requests, the -32021 capability check), bad answers included."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Answer, Host, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus._loop_rule import schema_problem
from toolnexus.mcp import Send, ServerSession, StartCall

MESSAGE = {
    "role": "assistant",
    "content": {"type": "text", "text": "Paris."},
    "model": "m-1",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///work", "name": "Work"}]}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def sampling(id: str = "capital") -> Request:
    return Request(
        "sampling",
        "What is the capital of France?",
        id=id,
        data={"messages": [{"role": "user", "content": "What is the capital of France?"}]},
    )


def roots(id: str = "roots") -> Request:
    return Request("roots", "Which folders may I read?", id=id)


def name(id: str = "name") -> Request:
    return Request("input", "Your name?", id=id, data={"schema": NAME_SCHEMA})


def everything() -> Request:
    return Request.several(name(), sampling(), roots())


@tool
def ask() -> str:
    """Asks (the tests complete it with the results they need)."""
    return "unused"


# --------------------------------------------------------------------------- the contract


def test_several_requests_travel_as_one_and_are_answered_as_one() -> None:
    asked = everything()
    assert asked.kind == "several"
    assert [each.id for each in asked.requests()] == ["name", "capital", "roots"]
    assert asked.prompt == "Your name?\nWhat is the capital of France?\nWhich folders may I read?"
    again = Request.from_json(asked.to_json())
    assert again.requests()[1] == sampling()
    answer = Answer.several(
        asked,
        [
            Answer.accept(name(), {"name": "Ada"}),
            Answer.accept(sampling(), MESSAGE),
            Answer.decline(roots()),
        ],
    )
    assert answer.ok and answer.id == asked.id
    assert answer.answer_to(sampling()) == Answer("capital", True, MESSAGE)
    assert answer.answer_to(roots()) == Answer("roots", False, None, "declined")
    assert answer.answer_to(Request("input", "?", id="other")) is None
    assert schema_problem(asked, answer) is None


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: Request.several(name()), "two requests or more"),
        (lambda: Request.several(name(), name()), "the id 'name'"),
        (lambda: Request.several(name(), everything()), "not several"),
        (lambda: Answer.several(name(), []), "Request.several"),
        (lambda: Answer.several(everything(), [Answer("x", True)]), "'x' is not one of"),
    ],
)
def test_several_is_refused_where_it_cannot_mean_anything(make: Any, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        make()


@pytest.mark.parametrize(
    ("request_", "data", "words"),
    [
        (sampling(), {"content": "Paris"}, "is not a message: role must be"),
        (sampling(), {"role": "assistant", "content": "Paris"}, "content must be a content block"),
        (sampling(), {"role": "assistant", "content": {"type": "text"}, "model": 3}, "model must"),
        (roots(), {"roots": "file:///work"}, "roots must be a list"),
        (roots(), {"roots": [{"name": "no uri"}]}, "roots[0] must be an object with a uri"),
    ],
)
def test_an_answer_of_the_wrong_shape_for_its_kind_is_named(
    request_: Request, data: dict[str, Any], words: str
) -> None:
    problem = schema_problem(request_, Answer(request_.id, True, data))
    assert problem is not None and words in problem


def test_a_several_answer_must_answer_every_request_and_each_soundly() -> None:
    asked = everything()
    short = Answer.several(asked, [Answer.accept(name(), {"name": "Ada"})])
    assert "has none for 'capital'" in (schema_problem(asked, short) or "")
    off_schema = Answer.several(
        asked,
        [Answer.accept(name(), {}), Answer.accept(sampling(), MESSAGE), Answer.decline(roots())],
    )
    assert "name: required property is missing" in (schema_problem(asked, off_schema) or "")


# --------------------------------------------------------------------------- a Host


@tool
def capital(ctx: ToolContext) -> ToolResult:
    """Asks the model."""
    if ctx.answer is None:
        return ToolResult.pending(sampling())
    content = (ctx.answer.data or {})["content"]
    return ToolResult.ok(f"the model says {content['text']}")


@tool
def plan(ctx: ToolContext) -> ToolResult:
    """Asks three things at once."""
    if ctx.answer is None:
        return ToolResult.pending(everything())
    who = (ctx.answer.answer_to(name()) or Answer("x", False)).data or {}
    folders = (ctx.answer.answer_to(roots()) or Answer("x", False)).data or {}
    return ToolResult.ok(f"{who.get('name')} may read {folders['roots'][0]['uri']}")


def own_model(request: Request) -> Answer:
    """A host's wait_for that answers sampling with its own model, and the rest too."""
    if request.kind == "sampling":
        return Answer.accept(request, MESSAGE)
    if request.kind == "roots":
        return Answer.accept(request, ROOTS)
    if request.kind == "several":
        return Answer.several(request, [own_model(each) for each in request.requests()])
    return Answer.accept(request, {"name": "Ada"})


def test_a_host_answers_a_sampling_question_with_its_own_model() -> None:
    with Host(Toolkit([capital, plan]), wait_for=own_model) as host:
        assert host.call("capital", {}).output == "the model says Paris."
        assert host.call("plan", {}).output == "Ada may read file:///work"


def test_a_host_refuses_a_sampling_answer_that_is_not_a_message() -> None:
    def wrong(request: Request) -> Answer:
        return Answer.accept(request, {"text": "Paris"})

    with Host(Toolkit([capital]), wait_for=wrong) as host:
        result = host.call("capital", {})
    assert result.is_error
    assert "is not a message" in result.output


def test_a_resumed_sampling_question_is_checked_and_bound_like_any_other() -> None:
    with Host(Toolkit([capital])) as host:
        parked = host.call("capital", {})
        request = ToolResult.pending_of(parked)
        assert request is not None and request.kind == "sampling"
        refused = host.resume("capital", {}, parked, Answer(request.id, True, {"role": "x"}))
        assert "is not a message" in refused.output
        done = host.resume("capital", {}, parked, Answer(request.id, True, MESSAGE))
        assert done.output == "the model says Paris."
        again = host.resume("capital", {}, parked, Answer(request.id, True, MESSAGE))
        assert "already answered" in again.output


# --------------------------------------------------------------------------- legacy era


def legacy(**capabilities: Any) -> ServerSession:
    session = ServerSession(Toolkit([ask]))
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities},
        }
    )
    session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def start(session: ServerSession, meta: Any = None, **params: Any) -> StartCall:
    body: dict[str, Any] = {"name": "ask", "arguments": {}, **params}
    if meta is not None:
        body["_meta"] = meta
    (action,) = session.receive({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": body})
    assert isinstance(action, StartCall), action
    return action


def sent(actions: list[Any]) -> list[dict[str, Any]]:
    assert all(isinstance(a, Send) for a in actions), actions
    return [dict(a.message) for a in actions]


def test_a_legacy_client_is_asked_to_sample_and_its_message_resumes_the_call() -> None:
    session = legacy(sampling={})
    call = start(session)
    (outgoing,) = sent(session.complete_call(call.call_id, ToolResult.pending(sampling())))
    assert outgoing["method"] == "sampling/createMessage"
    assert outgoing["id"].startswith("toolnexus-sample-")
    assert outgoing["params"] == {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}
        ],
        "maxTokens": 1024,
    }
    (retry,) = session.receive({"jsonrpc": "2.0", "id": outgoing["id"], "result": MESSAGE})
    assert isinstance(retry, StartCall) and retry.answer == Answer("capital", True, MESSAGE)


def test_a_legacy_client_is_asked_for_its_roots() -> None:
    session = legacy(roots={"listChanged": True})
    call = start(session)
    (outgoing,) = sent(session.complete_call(call.call_id, ToolResult.pending(roots())))
    assert (outgoing["method"], outgoing["params"]) == ("roots/list", {})
    (retry,) = session.receive({"jsonrpc": "2.0", "id": outgoing["id"], "result": ROOTS})
    assert isinstance(retry, StartCall) and retry.answer == Answer("roots", True, ROOTS)


def test_several_questions_go_out_at_once_and_resume_once_every_answer_is_in() -> None:
    session = legacy(sampling={}, roots={}, elicitation={})
    call = start(session)
    outgoing = sent(session.complete_call(call.call_id, ToolResult.pending(everything())))
    assert [m["method"] for m in outgoing] == [
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
    ]
    replies = [{"action": "accept", "content": {"name": "Ada"}}, MESSAGE, ROOTS]
    for message, result in list(zip(outgoing, replies, strict=True))[:2]:
        assert session.receive({"jsonrpc": "2.0", "id": message["id"], "result": result}) == []
    (retry,) = session.receive({"jsonrpc": "2.0", "id": outgoing[2]["id"], "result": ROOTS})
    assert isinstance(retry, StartCall) and retry.answer is not None
    assert retry.answer.answer_to(name()) == Answer("name", True, {"name": "Ada"})
    assert retry.answer.answer_to(roots()) == Answer("roots", True, ROOTS)
    assert retry.request == everything().__class__.from_dict(retry.request.to_dict())


def test_a_client_that_refuses_to_sample_declines_the_question() -> None:
    session = legacy(sampling={})
    call = start(session)
    (outgoing,) = sent(session.complete_call(call.call_id, ToolResult.pending(sampling())))
    error = {"code": -1, "message": "User rejected sampling request"}
    (final,) = sent(session.receive({"jsonrpc": "2.0", "id": outgoing["id"], "error": error}))
    assert final["result"]["isError"] is True
    assert final["result"]["content"][0]["text"].startswith("declined/expired: ")


def test_a_sampling_answer_that_is_not_a_message_ends_the_call_saying_so() -> None:
    session = legacy(sampling={}, roots={})
    call = start(session)
    outgoing = sent(
        session.complete_call(
            call.call_id, ToolResult.pending(Request.several(sampling(), roots()))
        )
    )
    messages = sent(
        session.receive({"jsonrpc": "2.0", "id": outgoing[0]["id"], "result": {"text": "Paris"}})
    )
    withdrawn, final = messages
    assert withdrawn["method"] == "notifications/cancelled"
    assert withdrawn["params"]["requestId"] == outgoing[1]["id"]
    text = final["result"]["content"][0]["text"]
    assert "got an answer it cannot use" in text and "is not a message" in text
    late = session.receive({"jsonrpc": "2.0", "id": outgoing[1]["id"], "result": ROOTS})
    assert late == []


@pytest.mark.parametrize(
    ("capabilities", "missing"),
    [
        ({}, "elicitation or sampling or roots"),
        ({"sampling": {}}, "elicitation or roots"),
        ({"sampling": {}, "roots": {}}, "elicitation"),
    ],
)
def test_a_legacy_client_without_the_capability_gets_the_question_to_relay(
    capabilities: dict[str, Any], missing: str
) -> None:
    session = legacy(**capabilities)
    call = start(session)
    (final,) = sent(session.complete_call(call.call_id, ToolResult.pending(everything())))
    text = final["result"]["content"][0]["text"]
    assert f"(it has no {missing} support)" in text and "ask the user: Your name?" in text


def test_cancelling_a_call_withdraws_every_question_it_asked() -> None:
    session = legacy(sampling={}, roots={})
    call = start(session)
    outgoing = sent(
        session.complete_call(
            call.call_id, ToolResult.pending(Request.several(sampling(), roots()))
        )
    )
    cancelled = sent(
        session.receive(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        )
    )
    assert sorted(m["params"]["requestId"] for m in cancelled) == sorted(m["id"] for m in outgoing)


# --------------------------------------------------------------------------- modern era


def meta(**capabilities: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


def asked_modern(session: ServerSession, request: Request, **capabilities: Any) -> dict[str, Any]:
    call = start(session, meta(**capabilities))
    (reply,) = sent(session.complete_call(call.call_id, ToolResult.pending(request)))
    return dict(reply)


def test_a_modern_client_gets_every_question_in_one_input_required_result() -> None:
    session = ServerSession(Toolkit([ask]))
    reply = asked_modern(session, everything(), elicitation={}, sampling={}, roots={})
    result = reply["result"]
    assert result["resultType"] == "input_required"
    assert {key: value["method"] for key, value in result["inputRequests"].items()} == {
        "name": "elicitation/create",
        "capital": "sampling/createMessage",
        "roots": "roots/list",
    }
    responses = {
        "name": {"action": "accept", "content": {"name": "Ada"}},
        "capital": MESSAGE,
        "roots": ROOTS,
    }
    (retry,) = session.receive(
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {
                "name": "ask",
                "arguments": {},
                "_meta": meta(elicitation={}, sampling={}, roots={}),
                "requestState": result["requestState"],
                "inputResponses": responses,
            },
        }
    )
    assert isinstance(retry, StartCall) and retry.answer is not None
    assert retry.answer.answer_to(sampling()) == Answer("capital", True, MESSAGE)


def retry_modern(
    session: ServerSession, state: str, responses: dict[str, Any], **capabilities: Any
) -> list[Any]:
    return session.receive(
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {
                "name": "ask",
                "arguments": {},
                "_meta": meta(**capabilities),
                "requestState": state,
                "inputResponses": responses,
            },
        }
    )


def test_an_unanswered_question_of_several_is_asked_again() -> None:
    session = ServerSession(Toolkit([ask]))
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    state = asked_modern(session, everything(), **caps)["result"]["requestState"]
    (again,) = sent(retry_modern(session, state, {"capital": MESSAGE}, **caps))
    assert again["result"]["resultType"] == "input_required"
    assert set(again["result"]["inputRequests"]) == {"name", "capital", "roots"}


def test_a_modern_sampling_response_that_is_not_a_message_is_invalid_params() -> None:
    session = ServerSession(Toolkit([ask]))
    state = asked_modern(session, sampling(), sampling={})["result"]["requestState"]
    (error,) = sent(retry_modern(session, state, {"capital": {"text": "Paris"}}, sampling={}))
    assert error["error"]["code"] == -32602
    assert "inputResponses['capital']" in error["error"]["message"]
    assert "is not a message" in error["error"]["message"]
    (retry,) = retry_modern(session, state, {"capital": MESSAGE}, sampling={})
    assert isinstance(retry, StartCall)  # nothing was used up by the bad answer


@pytest.mark.parametrize(
    ("capabilities", "required"),
    [
        ({}, {"sampling": {}}),
        ({"sampling": {}}, {"roots": {}, "elicitation": {"form": {}}}),
    ],
)
def test_a_modern_client_without_the_capability_gets_minus_32021_naming_it(
    capabilities: dict[str, Any], required: dict[str, Any]
) -> None:
    session = ServerSession(Toolkit([ask]))
    request = sampling() if not capabilities else everything()
    reply = asked_modern(session, request, **capabilities)
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": required}
    assert reply["error"]["message"].startswith("Missing required client capability: ")


def test_a_sampling_request_mcp_cannot_ask_is_refused_naming_the_field() -> None:
    session = legacy(sampling={})
    call = start(session)
    bad = Request("sampling", "?", data={"messages": [{"role": "robot", "content": "hi"}]})
    (final,) = sent(session.complete_call(call.call_id, ToolResult.pending(bad)))
    assert (
        "asked a question MCP cannot ask: data.messages[0]" in final["result"]["content"][0]["text"]
    )
