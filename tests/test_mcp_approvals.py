"""Hosted-MCP approvals as suspensions: an OpenAI ``mcp_approval_request`` becomes a
``Request("approval")`` bound to its item (signed, single use), its Answer becomes the
``mcp_approval_response``; a replayed answer, or one for another item, is refused. The
response is a recorded one (tests/fixtures/providers, written from the SDK types)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Answer, Host, Toolkit, TurnResult, tool

FIXTURES = Path(__file__).parent / "fixtures" / "providers"
KEY = "approvals-test-key-0123456789ab"


def recorded() -> Any:
    return json.loads((FIXTURES / "openai_mcp_approval_response.json").read_text())


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def host():
    with Host(Toolkit([add]), secret=KEY) as host:
        yield host


def test_an_approval_request_suspends_bound_to_its_item(host: Host) -> None:
    turn = host.run_turn(recorded(), style="responses")
    assert turn.waiting == ("mcpr_68mcp01",)
    assert turn.messages == []  # nothing to send until a human answered
    request = turn.pending
    assert request is not None and request.kind == "approval"
    assert "'deepwiki'" in request.prompt and "'ask_question'" in request.prompt
    assert request.data["mcpApprovalRequest"]["approval_request_id"] == "mcpr_68mcp01"
    (call,) = turn.calls
    assert call.kind == "mcp_approval"
    assert call.result.metadata["binding"].startswith("tnb1.")  # signed, like every question


def test_an_accepted_answer_becomes_the_approval_response_once(host: Host) -> None:
    turn = host.run_turn(recorded(), style="responses")
    parked = TurnResult.from_json(turn.to_json())
    answer = Answer.accept(parked.pending)
    done = host.resume_turn(parked, answer)
    assert done.error is None
    assert done.messages == [
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_68mcp01", "approve": True}
    ]
    replay = host.resume_turn(parked, answer)
    assert replay.messages == []
    assert replay.error is not None and "already answered" in replay.error


def test_a_declined_answer_says_no_with_its_reason(host: Host) -> None:
    turn = host.run_turn(recorded(), style="responses")
    done = host.resume_turn(turn, Answer.decline(turn.pending))
    (response,) = done.messages
    assert response["type"] == "mcp_approval_response"
    assert response["approve"] is False
    assert response["reason"].startswith("declined")


def test_an_answer_for_another_item_is_refused(host: Host) -> None:
    first = host.run_turn(recorded(), style="responses")
    other = recorded()
    other["output"][1]["id"] = "mcpr_other"
    second = host.run_turn(other, style="responses")
    # The other item's answer, its id swapped onto this turn's request: refused.
    wrong = Answer.accept(second.pending)
    refused = host.resume_turn(first, wrong)
    assert refused.messages == [] and refused.error is not None
    assert "does not echo the pending request's id" in refused.error
    assert refused.waiting == first.waiting  # still asking, nothing sent
    # A turn whose approval item was edited (another tool) does not verify either.
    edited = first.to_dict()
    edited["calls"][0]["arguments"]["name"] = "delete_repo"
    forged = host.resume_turn(TurnResult.from_dict(edited), Answer.accept(first.pending))
    assert forged.messages == [] and "arguments differ" in (forged.error or "")
    # The right answer still works: nothing was used up.
    assert host.resume_turn(first, Answer.accept(first.pending)).messages[0]["approve"] is True


def test_approvals_and_function_calls_share_a_turn(host: Host) -> None:
    response = recorded()
    response["output"].append(
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1,"b":2}'}
    )
    turn = host.run_turn(response, style="responses")
    assert [c.result.output for c in turn.calls if c.kind == "function"] == ["3"]
    done = host.resume_turn(turn, Answer.accept(turn.pending))
    assert done.messages == [
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_68mcp01", "approve": True},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
    ]


def test_two_approvals_in_a_turn_are_asked_one_after_the_other(host: Host) -> None:
    response = recorded()
    second = dict(response["output"][1], id="mcpr_68mcp02", name="read_wiki_structure")
    response["output"].append(second)
    turn = host.run_turn(response, style="responses")
    assert turn.waiting == ("mcpr_68mcp01", "mcpr_68mcp02")
    first_request = turn.pending
    assert first_request is not None
    later_request = turn.calls[1].result.metadata  # the second keeps its own question
    turn = host.resume_turn(turn, Answer.accept(first_request))
    assert turn.error is None and turn.waiting == ("mcpr_68mcp02",)
    assert turn.calls[1].result.metadata == later_request
    assert turn.pending is not None and "'read_wiki_structure'" in turn.pending.prompt
    turn = host.resume_turn(turn, Answer.decline(turn.pending))
    assert [(m["approval_request_id"], m["approve"]) for m in turn.messages] == [
        ("mcpr_68mcp01", True),
        ("mcpr_68mcp02", False),
    ]


def test_the_async_twins_ask_and_answer_approvals_alike(host: Host) -> None:
    import asyncio

    async def main() -> list[dict[str, Any]]:
        turn = await host.arun_turn(recorded(), style="responses")
        assert turn.pending is not None
        done = await host.aresume_turn(turn, Answer.accept(turn.pending))
        return done.messages

    assert asyncio.run(main())[0]["approve"] is True


def test_a_parked_turn_with_an_unknown_kind_is_refused_naming_the_field(host: Host) -> None:
    from toolnexus.errors import WireFormatError

    data = host.run_turn(recorded(), style="responses").to_dict()
    data["calls"][0]["kind"] = "shell"
    with pytest.raises(WireFormatError, match=r"calls\[0\]\.kind"):
        TurnResult.from_dict(data)
