"""The client's question flow without I/O (``mcp/_client/_questions.py``): a legacy
server's question parked, answered and given up; a modern ``input_required`` sealed in
the ``mcp1.`` id and opened again for the retry; how a call's end reads."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Answer, Request, ToolResult
from toolnexus.mcp import ClientSession
from toolnexus.mcp._client._questions import (
    STATE_PREFIX,
    ClientQuestions,
    Parked,
    call_result,
    refused,
)
from toolnexus.mcp._client._session import Failure, Outgoing, ServerRequest
from toolnexus.mcp._shared._protocol import META_ANSWER_UNUSED

LEGACY = "2025-11-25"
FORM = {
    "message": "Which environment?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "env": {"type": "string"},
            "region": {"type": "string", "default": "eu"},
        },
    },
}


def legacy_session(elicitation: tuple[str, ...] = ("form", "url")) -> ClientSession:
    session = ClientSession(elicitation=elicitation, protocol_version=LEGACY)
    first = session.open()
    result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "s"}}
    session.receive({"jsonrpc": "2.0", "id": first.id, "result": result})
    return session


class GiveUps:
    def __init__(self) -> None:
        self.seen: list[tuple[Parked, dict[str, Any], str]] = []

    def __call__(self, parked: Parked, reply: Outgoing, why: str) -> None:
        self.seen.append((parked, reply.message, why))


def ask(
    questions: ClientQuestions, session: ClientSession, params: dict[str, Any]
) -> Request | Outgoing:
    event = ServerRequest("q-1", "elicitation/create", params)
    return questions.ask(session, event, tool="deploy", connection="conn", call="waiter")


def test_a_legacy_question_is_parked_and_its_answer_replies_with_the_defaults() -> None:
    questions = ClientQuestions(60.0, GiveUps())
    request = ask(questions, legacy_session(), FORM)
    assert isinstance(request, Request) and request.kind == "input"
    assert questions.resume("other", "srv", Answer(request.id, True, {})) == ToolResult(
        "other: the question this answers is no longer waiting on MCP server srv (its "
        "session ended, or it expired); call the tool again",
        True,
    )  # another tool's answer takes nothing: the question still waits
    parked = questions.resume("deploy", "srv", Answer(request.id, True, {"env": "prod"}))
    assert isinstance(parked, Parked) and (parked.connection, parked.call) == ("conn", "waiter")
    reply = questions.reply(parked, Answer(request.id, True, {"env": "prod"}))
    assert reply.message == {
        "jsonrpc": "2.0",
        "id": "q-1",
        "result": {"action": "accept", "content": {"region": "eu", "env": "prod"}},
    }
    again = questions.resume("deploy", "srv", Answer(request.id, True, {}))
    assert isinstance(again, ToolResult) and again.is_error  # single use
    questions.clear()


def test_a_question_the_host_cannot_be_asked_is_answered_at_once() -> None:
    questions = ClientQuestions(60.0, GiveUps())
    url = {"mode": "url", "message": "Sign in", "url": "https://example.com/x"}
    declined = ask(questions, legacy_session(elicitation=("form",)), url)
    assert isinstance(declined, Outgoing)
    assert declined.message["result"] == {"action": "decline"}
    malformed = ask(questions, legacy_session(), {"message": 3})
    assert isinstance(malformed, Outgoing)
    assert malformed.message["error"]["code"] == -32602
    owner_less = ClientQuestions.unowned(legacy_session(), ServerRequest(9, "x", {}))
    assert owner_less.message["result"] == {"action": "cancel"}


@pytest.mark.parametrize(("reason", "action"), [("declined", "decline"), ("expired", "cancel")])
def test_a_question_given_up_is_answered_to_the_server_and_its_call_ended(
    reason: str, action: str
) -> None:
    give_ups = GiveUps()
    questions = ClientQuestions(60.0, give_ups)
    request = ask(questions, legacy_session(), FORM)
    assert isinstance(request, Request)
    questions.give_up(request.id, reason)
    questions.give_up(request.id, reason)  # once only
    ((parked, reply, why),) = give_ups.seen
    assert parked.call == "waiter" and reply["result"] == {"action": action}
    said = "was declined" if reason == "declined" else "was not answered in time"
    assert why == f"the question {said}"
    assert isinstance(questions.resume("deploy", "srv", Answer(request.id, True, {})), ToolResult)


def test_a_modern_question_rides_in_its_id_and_opens_into_the_retry() -> None:
    questions = ClientQuestions(60.0, GiveUps())
    result = {
        "resultType": "input_required",
        "inputRequests": {"k1": {"method": "elicitation/create", "params": FORM}},
        "requestState": "opaque-state",
    }
    pending = ToolResult.pending_of(call_result("deploy", "srv", result))
    assert pending is not None and pending.id.startswith(STATE_PREFIX)
    assert pending.data is not None and pending.data["schema"] == FORM["requestedSchema"]
    retry = questions.resume("deploy", "srv", Answer(pending.id, True, {"env": "prod"}))
    assert retry == {
        "inputResponses": {"k1": {"action": "accept", "content": {"region": "eu", "env": "prod"}}},
        "requestState": "opaque-state",
    }
    stranger = questions.resume("other", "srv", Answer(pending.id, True, {}))
    assert isinstance(stranger, ToolResult) and "does not belong" in stranger.output


def test_a_result_or_refusal_that_did_not_use_its_answer_says_so() -> None:
    unused = {
        "content": [{"type": "text", "text": "again"}],
        "_meta": {META_ANSWER_UNUSED: True},
    }
    read = call_result("deploy", "srv", unused, answering=True)
    assert read.output == "again" and read.metadata["answer"] == "unused"
    assert "answer" not in call_result("deploy", "srv", unused, answering=False).metadata
    failure = Failure(3, "tools/call", -32602, "bad")
    refusal = refused("deploy", "srv", failure, answering=True)
    assert refusal.output == "deploy: MCP server srv refused the call: bad (-32602)"
    assert refusal.is_error and refusal.metadata["answer"] == "unused"
    odd = call_result("deploy", "srv", {"resultType": "task"})
    assert odd.is_error and "resultType 'task'" in odd.output
