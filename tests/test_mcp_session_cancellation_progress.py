"""notifications/cancelled stops a call and silences it; notifications/progress is sent
only when asked for, strictly increasing, and never after the response."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Request, Toolkit, ToolResult, tool
from toolnexus.mcp import CancelCall, Send, ServerSession, StartCall

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@tool
def crunch(steps: int) -> str:
    """Count to steps."""
    return f"completed {steps} step(s)"


def legacy() -> ServerSession:
    session = ServerSession(Toolkit([crunch]))
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        }
    )
    return session


def modern() -> ServerSession:
    return ServerSession(Toolkit([crunch]))


def start(session: ServerSession, rid: Any, token: Any = None) -> StartCall:
    meta: dict[str, Any] = {} if session.protocol_version else dict(MODERN)
    if token is not None:
        meta["progressToken"] = token
    params: dict[str, Any] = {"name": "crunch", "arguments": {"steps": 3}}
    if meta:
        params["_meta"] = meta
    actions = session.receive(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    )
    assert len(actions) == 1 and isinstance(actions[0], StartCall)
    return actions[0]


def cancel(session: ServerSession, params: Any) -> list[Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    if params is not ...:
        message["params"] = params
    return session.receive(message)


SESSIONS = pytest.mark.parametrize("make", [legacy, modern], ids=["legacy", "modern"])

# --------------------------------------------------------------------------- cancellation


@SESSIONS
def test_cancelling_a_running_call_cancels_it_and_its_response_is_never_sent(make: Any) -> None:
    session = make()
    call = start(session, 7)
    actions = cancel(session, {"requestId": 7, "reason": "user pressed stop"})
    assert actions == [CancelCall(call.call_id, "user pressed stop")]
    assert session.running_calls == 0
    assert session.complete_call(call.call_id, ToolResult.error("cancelled by the caller")) == []


@SESSIONS
def test_after_a_cancel_the_request_id_may_be_used_again(make: Any) -> None:
    session = make()
    start(session, "x")
    cancel(session, {"requestId": "x"})
    assert isinstance(start(session, "x"), StartCall)


@SESSIONS
def test_nothing_is_sent_for_a_cancelled_call_not_even_progress(make: Any) -> None:
    session = make()
    call = start(session, 1, token="tok")
    cancel(session, {"requestId": 1})
    assert session.report_progress(call.call_id, 1.0, 2.0, "half") == []


@pytest.mark.parametrize(
    "params",
    [
        ...,
        None,
        "7",
        [7],
        {},
        {"requestId": None},
        {"requestId": 7.0},
        {"requestId": True},
        {"requestId": "7"},
        {"requestId": 8},
        {"requestId": {"id": 7}},
    ],
)
def test_unknown_or_malformed_cancellations_are_ignored(params: Any) -> None:
    session = modern()
    call = start(session, 7)
    assert cancel(session, params) == []
    assert session.running_calls == 1
    assert len(session.complete_call(call.call_id, ToolResult.ok("done"))) == 1


def test_a_cancel_for_a_finished_call_is_ignored() -> None:
    session = modern()
    call = start(session, 7)
    session.complete_call(call.call_id, ToolResult.ok("done"))
    assert cancel(session, {"requestId": 7}) == []


def test_closing_cancels_every_running_call_and_silences_the_session() -> None:
    session = modern()
    first, second = start(session, 1), start(session, 2)
    actions = session.close()
    assert sorted(a.call_id for a in actions if isinstance(a, CancelCall)) == sorted(
        [first.call_id, second.call_id]
    )
    assert session.complete_call(first.call_id, ToolResult.ok("late")) == []
    assert session.receive({"jsonrpc": "2.0", "id": 3, "method": "ping"}) == []


# --------------------------------------------------------------------------- progress


@SESSIONS
def test_a_call_with_a_progress_token_wants_progress_and_gets_notifications(make: Any) -> None:
    session = make()
    call = start(session, 1, token="tok-1")
    assert call.wants_progress is True
    (sent,) = session.report_progress(call.call_id, 1, 4, "one of four")
    assert isinstance(sent, Send)
    assert sent.message == {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "tok-1", "progress": 1, "total": 4, "message": "one of four"},
    }


def test_an_integer_progress_token_is_echoed_as_is() -> None:
    session = modern()
    call = start(session, 1, token=42)
    (sent,) = session.report_progress(call.call_id, 0.5)
    assert sent.message["params"] == {"progressToken": 42, "progress": 0.5}


@pytest.mark.parametrize("token", [None, 1.5, True, {"t": 1}])
def test_without_a_usable_progress_token_no_progress_is_sent(token: Any) -> None:
    session = modern()
    call = start(session, 1, token=token)
    assert call.wants_progress is False
    assert session.report_progress(call.call_id, 1.0) == []


def test_progress_values_only_ever_increase() -> None:
    session = modern()
    call = start(session, 1, token="t")
    sent = []
    for value in (1, 1, 0.5, 2, 2.0, 3.5, 3):
        sent += session.report_progress(call.call_id, value)
    assert [s.message["params"]["progress"] for s in sent] == [1, 2, 3.5]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "50%", None, True])
def test_progress_that_is_not_a_finite_number_is_dropped(value: Any) -> None:
    session = modern()
    call = start(session, 1, token="t")
    assert session.report_progress(call.call_id, value) == []


def test_a_total_that_is_not_a_number_is_left_out_and_a_message_is_text() -> None:
    session = modern()
    call = start(session, 1, token="t")
    (sent,) = session.report_progress(call.call_id, 1, float("nan"), 42)  # type: ignore[arg-type]
    assert sent.message["params"] == {"progressToken": "t", "progress": 1, "message": "42"}


def test_no_progress_is_sent_after_the_response() -> None:
    session = modern()
    call = start(session, 1, token="t")
    session.complete_call(call.call_id, ToolResult.ok("done"))
    assert session.report_progress(call.call_id, 10) == []


def test_progress_of_a_resumed_call_continues_above_the_first_run() -> None:
    session = ServerSession(Toolkit([crunch]))
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}},
        }
    )
    session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = start(session, 1, token="t")
    session.report_progress(call.call_id, 5)
    (asked,) = session.complete_call(call.call_id, ToolResult.pending(Request("question", "Sure?")))
    assert session.report_progress(call.call_id, 6) == []  # waiting on the human: not running
    (again,) = session.receive(
        {
            "jsonrpc": "2.0",
            "id": asked.message["id"],
            "result": {"action": "accept", "content": {"answer": "yes"}},
        }
    )
    assert again.wants_progress is True
    assert session.report_progress(call.call_id, 3) == []
    assert len(session.report_progress(call.call_id, 7)) == 1
