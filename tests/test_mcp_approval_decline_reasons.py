"""A declined hosted-MCP approval tells the model why: the ``mcp_approval_response``'s
``reason`` says whether a person refused, nobody answered in time, or the question was
cancelled — not the same ``declined/expired: <prompt>`` text for all three."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Answer, Host, Toolkit, TurnResult, tool

REQUEST = {
    "output": [
        {
            "type": "mcp_approval_request",
            "id": "mcpr_1",
            "server_label": "deepwiki",
            "name": "ask_question",
            "arguments": '{"question": "Which transports?"}',
        }
    ]
}


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def answered(answer: Any) -> dict[str, Any]:
    with Host(Toolkit([ping])) as host:
        turn = host.run_turn(REQUEST, style="responses")
        assert turn.pending is not None
        resumed = host.resume_turn(turn, answer(turn.pending))
    assert resumed.error is None, resumed.error
    # The reason survives a completed turn written out and read back.
    (message,) = TurnResult.from_json(resumed.to_json()).messages
    assert message == resumed.messages[0]
    return dict(message)


def declining(reason: str) -> Any:
    return lambda pending: Answer.decline(pending, reason)


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("declined", "declined: the user refused this call"),
        ("expired", "expired: nobody answered the approval in time"),
        ("cancelled", "cancelled: the approval was cancelled before anyone decided"),
    ],
)
def test_each_decline_sends_its_own_reason(reason: str, said: str) -> None:
    message = answered(declining(reason))
    assert message == {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": False,
        "reason": said,
    }


def test_an_approval_answered_no_is_a_persons_refusal() -> None:
    message = answered(lambda pending: Answer.accept(pending, {"approved": False}))
    assert message["approve"] is False
    assert message["reason"] == "declined: the user refused this call"


def test_the_three_reasons_differ_and_none_is_the_prompt() -> None:
    reasons = {answered(declining(why))["reason"] for why in ("declined", "expired", "cancelled")}
    assert len(reasons) == 3
    assert not any("declined/expired" in each for each in reasons)


def test_an_approval_still_goes_back_approved() -> None:
    message = answered(Answer.accept)
    assert message == {
        "type": "mcp_approval_response",
        "approval_request_id": "mcpr_1",
        "approve": True,
    }
