"""Log messages from a tool to its MCP client: ``logging/setLevel`` (legacy) and the
per-request ``_meta`` ``logLevel`` (modern) decide what is sent; nothing is sent unasked."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Toolkit, ToolResult, tool
from toolnexus._context import LOG_LEVELS, ToolContext
from toolnexus.mcp import Send, ServerSession, StartCall

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@tool
def chatty() -> str:
    """Talks."""
    return "unused: the tests report the logs themselves"


def legacy() -> ServerSession:
    session = ServerSession(Toolkit([chatty]))
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        }
    )
    session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def call(session: ServerSession, meta: dict[str, Any] | None = None, rid: int = 5) -> StartCall:
    params: dict[str, Any] = {"name": "chatty", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    actions = session.receive(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    )
    assert isinstance(actions[0], StartCall), actions
    return actions[0]


def messages(actions: list[Any]) -> list[dict[str, Any]]:
    return [dict(action.message) for action in actions if isinstance(action, Send)]


def test_nothing_is_sent_when_a_legacy_client_did_not_set_a_level() -> None:
    session = legacy()
    started = call(session)
    assert session.report_log(started.call_id, "emergency", "unasked") == []


def test_set_level_answers_empty_and_filters_below_the_level() -> None:
    session = legacy()
    answer = messages(
        session.receive(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "logging/setLevel",
                "params": {"level": "warning"},
            }
        )
    )
    assert answer == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    started = call(session)
    assert session.report_log(started.call_id, "info", "too quiet") == []
    sent = messages(session.report_log(started.call_id, "error", {"disk": "full"}, "db"))
    assert sent == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "error", "logger": "db", "data": {"disk": "full"}},
        }
    ]


@pytest.mark.parametrize("level", ["loud", "INFO", 3, None])
def test_an_unknown_level_is_invalid_params(level: Any) -> None:
    session = legacy()
    error = messages(
        session.receive(
            {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": level}}
        )
    )[0]["error"]
    assert error["code"] == -32602
    assert "debug, info" in error["message"]


def test_a_modern_request_hears_logs_at_its_own_level_only() -> None:
    session = ServerSession(Toolkit([chatty]))
    quiet = call(session, MODERN)
    assert session.report_log(quiet.call_id, "critical", "unasked") == []
    session.complete_call(quiet.call_id, ToolResult.ok("done"))
    loud = call(session, {**MODERN, "io.modelcontextprotocol/logLevel": "notice"})
    assert session.report_log(loud.call_id, "info", "below") == []
    sent = messages(session.report_log(loud.call_id, "notice", "heard"))
    assert sent[0]["params"] == {"level": "notice", "data": "heard"}


def test_a_modern_unknown_log_level_is_invalid_params() -> None:
    session = ServerSession(Toolkit([chatty]))
    meta = {**MODERN, "io.modelcontextprotocol/logLevel": "verbose"}
    answer = messages(
        session.receive(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}
        )
    )[0]
    assert answer["error"]["code"] == -32602
    assert "logLevel" in answer["error"]["message"]


def test_logging_set_level_is_not_a_modern_method() -> None:
    session = ServerSession(Toolkit([chatty]))
    answer = messages(
        session.receive(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "logging/setLevel",
                "params": {"level": "info", "_meta": MODERN},
            }
        )
    )[0]
    assert answer["error"]["code"] == -32601


def test_a_finished_call_sends_no_more_logs() -> None:
    session = legacy()
    session.receive(
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}}
    )
    started = call(session)
    session.complete_call(started.call_id, ToolResult.ok("done"))
    assert session.report_log(started.call_id, "error", "late") == []


def test_a_tool_logs_through_its_context() -> None:
    heard: list[tuple[str, Any, str | None]] = []
    ctx = ToolContext(log=lambda level, data, logger: heard.append((level, data, logger)))
    ctx.report_log("warning", "careful", "fs")
    assert heard == [("warning", "careful", "fs")]
    with pytest.raises(ValueError, match="level must be one of debug, info"):
        ctx.report_log("loud", "x")
    assert LOG_LEVELS[0] == "debug" and LOG_LEVELS[-1] == "emergency"


def test_start_call_says_whether_the_client_takes_logs() -> None:
    session = legacy()
    assert call(session).wants_log is False
    session.receive(
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "error"}}
    )
    assert call(session, rid=6).wants_log is True
    modern = ServerSession(Toolkit([chatty]))
    assert call(modern, MODERN).wants_log is False
    loud = {**MODERN, "io.modelcontextprotocol/logLevel": "debug"}
    assert call(modern, loud, rid=6).wants_log is True


def test_a_legacy_call_logs_at_the_level_set_when_it_started() -> None:
    session = legacy()
    before = call(session)
    session.receive(
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}}
    )
    assert session.report_log(before.call_id, "emergency", "started unasked") == []
    session.complete_call(before.call_id, ToolResult.ok("done"))
    after = call(session, rid=6)
    session.receive(
        {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "error"}}
    )
    sent = messages(session.report_log(after.call_id, "info", "still heard"))
    assert sent[0]["params"] == {"level": "info", "data": "still heard"}
