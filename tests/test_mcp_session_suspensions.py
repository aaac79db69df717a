"""A tool's suspension over MCP, by all three routes: legacy elicitation/create, modern
InputRequiredResult with signed requestState, and a plain isError prompt for clients that
cannot be asked."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Answer, Request, StoreUnavailableError, Toolkit, ToolResult, tool
from toolnexus.mcp import CancelCall, Send, ServerOptions, ServerSession, StartCall

ENV_SCHEMA = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}


def modern_meta(elicitation: Any = None) -> dict[str, Any]:
    caps: dict[str, Any] = {} if elicitation is None else {"elicitation": elicitation}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    }


@tool
def deploy() -> str:
    """Deploy (asks where)."""
    return "unused: the tests complete calls with the results they need"


TOOLKIT = Toolkit([deploy])


def asks_env() -> Request:
    return Request("input", "Which environment?", data={"schema": ENV_SCHEMA})


def legacy(
    version: str = "2025-11-25", elicitation: Any = None, initialized: bool = True
) -> ServerSession:
    session = ServerSession(TOOLKIT)
    caps = {} if elicitation is None else {"elicitation": elicitation}
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": caps},
        }
    )
    if initialized:
        session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def start(session: ServerSession, rid: Any = 1, meta: Any = None, **params: Any) -> StartCall:
    body: dict[str, Any] = {"name": "deploy", "arguments": {"force": True}, **params}
    if meta is not None:
        body["_meta"] = meta
    actions = session.receive({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": body})
    assert len(actions) == 1 and isinstance(actions[0], StartCall), actions
    return actions[0]


def only_send(actions: list[Any]) -> dict[str, Any]:
    assert len(actions) == 1 and isinstance(actions[0], Send), actions
    return dict(actions[0].message)


def respond(session: ServerSession, outgoing: dict[str, Any], result: Any) -> list[Any]:
    return session.receive({"jsonrpc": "2.0", "id": outgoing["id"], "result": result})


# --------------------------------------------------------------------------- legacy route


def test_a_legacy_suspension_becomes_elicitation_create_with_the_requested_schema() -> None:
    session = legacy(elicitation={})
    call = start(session)
    request = asks_env()
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(request)))
    assert sent["method"] == "elicitation/create"
    assert isinstance(sent["id"], str)
    assert sent["params"] == {
        "mode": "form",
        "message": "Which environment?",
        "requestedSchema": ENV_SCHEMA,
    }


def test_accepting_re_runs_the_tool_once_with_the_answer() -> None:
    session = legacy(elicitation={"form": {}})
    call = start(session, rid=9)
    request = asks_env()
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(request)))
    actions = respond(session, sent, {"action": "accept", "content": {"env": "staging"}})
    assert len(actions) == 1 and isinstance(actions[0], StartCall)
    retry = actions[0]
    assert (retry.call_id, retry.name, dict(retry.arguments)) == (
        call.call_id,
        "deploy",
        {"force": True},
    )
    assert retry.request == request
    assert retry.answer == Answer(request.id, True, {"env": "staging"})
    final = only_send(session.complete_call(retry.call_id, ToolResult.ok("deployed to staging")))
    assert final["id"] == 9
    assert final["result"] == {
        "content": [{"type": "text", "text": "deployed to staging"}],
        "isError": False,
    }


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_declining_or_cancelling_answers_declined_expired_without_re_running(action: str) -> None:
    session = legacy(elicitation={})
    call = start(session, rid=4)
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    final = only_send(respond(session, sent, {"action": action}))
    assert final["id"] == 4
    assert final["result"] == {
        "content": [{"type": "text", "text": "declined/expired: Which environment?"}],
        "isError": True,
    }
    assert session.running_calls == 0


def test_an_error_response_to_the_elicitation_counts_as_declined() -> None:
    session = legacy(elicitation={})
    call = start(session)
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    final = only_send(
        session.receive(
            {"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32601, "message": "no"}}
        )
    )
    assert final["result"]["content"][0]["text"] == "declined/expired: Which environment?"


@pytest.mark.parametrize(
    "result", [None, "accept", {"action": "maybe"}, {"action": "accept", "content": [1]}]
)
def test_a_malformed_elicitation_result_counts_as_cancelled(result: Any) -> None:
    session = legacy(elicitation={})
    call = start(session)
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    final = only_send(respond(session, sent, result))
    assert final["result"]["isError"] is True
    assert final["result"]["content"][0]["text"].startswith("declined/expired:")


def test_a_retry_that_suspends_again_is_unresolved_never_a_loop() -> None:
    session = legacy(elicitation={})
    call = start(session)
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    retry = respond(session, sent, {"action": "accept", "content": {"env": "prod"}})[0]
    again = Request("approval", "Really deploy to prod?")
    final = only_send(session.complete_call(retry.call_id, ToolResult.pending(again)))
    assert final["result"] == {
        "content": [{"type": "text", "text": "unresolved: Really deploy to prod?"}],
        "isError": True,
    }


def test_an_approval_is_asked_as_one_boolean_and_only_true_approves() -> None:
    session = legacy(elicitation={})
    call = start(session)
    request = Request("approval", "Deploy to production?")
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(request)))
    schema = sent["params"]["requestedSchema"]
    assert schema["type"] == "object"
    assert list(schema["properties"]) == ["approved"]
    assert schema["properties"]["approved"]["type"] == "boolean"
    assert schema["required"] == ["approved"]
    retry = respond(session, sent, {"action": "accept", "content": {"approved": True}})[0]
    assert isinstance(retry, StartCall) and retry.answer is not None and retry.answer.ok

    second = start(session, rid=2)
    sent = only_send(session.complete_call(second.call_id, ToolResult.pending(request)))
    final = only_send(respond(session, sent, {"action": "accept", "content": {"approved": False}}))
    assert final["result"]["content"][0]["text"] == "declined/expired: Deploy to production?"


def test_a_question_without_a_schema_is_asked_as_one_text_field() -> None:
    session = legacy(elicitation={})
    call = start(session)
    sent = only_send(
        session.complete_call(call.call_id, ToolResult.pending(Request("question", "Why?")))
    )
    assert list(sent["params"]["requestedSchema"]["properties"]) == ["answer"]
    retry = respond(session, sent, {"action": "accept", "content": {"answer": "because"}})[0]
    assert dict(retry.answer.data) == {"answer": "because"}


@pytest.mark.parametrize(
    ("request_", "content", "problem"),
    [
        (Request("question", "Why?"), {"answer": 42}, "answer: expected string"),
        (Request("question", "Why?"), {"answer": "x", "extra": [1, 2]}, "extra: not a field"),
        (Request("question", "Why?"), {}, "answer"),
        (Request("approval", "Go?"), {"approved": True, "also": "x"}, "also: not a field"),
    ],
)
def test_an_answer_off_the_form_it_was_asked_with_is_refused_and_the_tool_not_run(
    request_: Request, content: dict[str, Any], problem: str
) -> None:
    # A question without a schema is asked as a one-field form (an approval as one
    # boolean): the content that comes back is checked against that form, as a schema's.
    session = legacy(elicitation={})
    call = start(session)
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(request_)))
    final = only_send(respond(session, sent, {"action": "accept", "content": content}))
    assert final["result"]["isError"] is True
    assert problem in final["result"]["content"][0]["text"]


def test_a_modern_answer_off_its_one_field_form_is_refused_and_the_state_stays_usable() -> None:
    session = ServerSession(TOOLKIT)
    meta = modern_meta({"form": {}})
    call = start(session, meta=meta)
    (sent,) = session.complete_call(call.call_id, ToolResult.pending(Request("question", "Why?")))
    result = sent.message["result"]
    (key,) = result["inputRequests"]
    state = result["requestState"]
    bad = start_or_send(session, meta, state, {key: {"action": "accept", "content": {"answer": 4}}})
    assert "answer: expected string" in bad["result"]["content"][0]["text"]
    good = session.receive(
        retry_message(meta, state, {key: {"action": "accept", "content": {"answer": "so"}}}, 3)
    )
    assert isinstance(good[0], StartCall) and good[0].answer is not None


def retry_message(meta: Any, state: str, responses: Any, rid: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {
            "name": "deploy",
            "arguments": {"force": True},
            "_meta": meta,
            "requestState": state,
            "inputResponses": responses,
        },
    }


def start_or_send(session: ServerSession, meta: Any, state: str, responses: Any) -> dict[str, Any]:
    return only_send(session.receive(retry_message(meta, state, responses, 2)))


def test_2025_06_18_elicitations_have_no_mode_field() -> None:
    session = legacy("2025-06-18", elicitation={})
    call = start(session)
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    assert set(sent["params"]) == {"message", "requestedSchema"}


def test_authorization_uses_url_mode_with_an_elicitation_id_when_the_client_declared_it() -> None:
    session = legacy(elicitation={"form": {}, "url": {}})
    call = start(session)
    pending = ToolResult.auth_required("https://auth.example/login", "Sign in to GitHub")
    request = ToolResult.pending_of(pending)
    sent = only_send(session.complete_call(call.call_id, pending))
    assert sent["params"] == {
        "mode": "url",
        "message": "Sign in to GitHub",
        "url": "https://auth.example/login",
        "elicitationId": request.id,
    }
    retry = respond(session, sent, {"action": "accept"})[0]
    assert retry.answer == Answer(request.id, True)


def test_authorization_without_url_mode_comes_back_as_the_prompt_and_url() -> None:
    session = legacy(elicitation={"form": {}})
    call = start(session)
    pending = ToolResult.auth_required("https://auth.example/login", "Sign in to GitHub")
    final = only_send(session.complete_call(call.call_id, pending))
    (text,) = final["result"]["content"]
    assert final["result"]["isError"] is True
    assert text["text"].endswith("ask the user: Sign in to GitHub\nhttps://auth.example/login")


@pytest.mark.parametrize(
    "version, elicitation", [("2025-11-25", None), ("2025-03-26", {}), ("2024-11-05", {})]
)
def test_a_legacy_client_that_cannot_be_asked_gets_the_question_to_relay(
    version: str, elicitation: Any
) -> None:
    # Not the bare prompt as an error, which a model reads as a failure: it is told that
    # the tool waits for an answer, and what to ask the user.
    session = legacy(version, elicitation=elicitation)
    call = start(session, rid=3)
    final = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    assert final == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "content": [
                {
                    "type": "text",
                    "text": "tool 'deploy' is waiting for an answer this client cannot collect "
                    "(it has no elicitation support); ask the user: Which environment?",
                }
            ],
            "isError": True,
        },
    }


def test_no_question_is_sent_before_the_client_said_it_is_initialized() -> None:
    session = legacy(elicitation={}, initialized=False)
    call = start(session)
    final = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    assert final["result"]["isError"] is True
    assert final["result"]["content"][0]["text"] == (
        "tool 'deploy' is waiting for an answer this client cannot collect (it has not said "
        "it is initialized yet); ask the user: Which environment?"
    )


def test_cancelling_a_call_that_waits_on_its_question_withdraws_the_question() -> None:
    session = legacy(elicitation={})
    call = start(session, rid=5)
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    withdrawn = only_send(
        session.receive(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        )
    )
    assert withdrawn["method"] == "notifications/cancelled"
    assert withdrawn["params"]["requestId"] == sent["id"]
    assert respond(session, sent, {"action": "accept", "content": {"env": "x"}}) == []


def test_an_answer_after_the_request_expired_is_declined_expired() -> None:
    session = legacy(elicitation={})
    call = start(session)
    request = Request("input", "Which environment?", expires_at="2000-01-01T00:00:00Z")
    sent = only_send(session.complete_call(call.call_id, ToolResult.pending(request)))
    final = only_send(respond(session, sent, {"action": "accept", "content": {"answer": "x"}}))
    assert final["result"]["content"][0]["text"] == "declined/expired: Which environment?"


# --------------------------------------------------------------------------- modern route


def input_required(
    session: ServerSession, rid: Any = 1, elicitation: Any = None
) -> tuple[dict[str, Any], Request]:
    meta = modern_meta({} if elicitation is None else elicitation)
    call = start(session, rid=rid, meta=meta)
    request = asks_env()
    result = only_send(session.complete_call(call.call_id, ToolResult.pending(request)))["result"]
    return result, request


def retry(
    session: ServerSession, state: Any, responses: Any, rid: Any = 2, **changes: Any
) -> list[Any]:
    params: dict[str, Any] = {
        "name": "deploy",
        "arguments": {"force": True},
        "_meta": modern_meta({}),
        "requestState": state,
    }
    if responses is not None:
        params["inputResponses"] = responses
    params.update(changes)
    return session.receive({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def test_a_modern_suspension_is_an_input_required_result() -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        request.id: {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Which environment?",
                "requestedSchema": ENV_SCHEMA,
            },
        }
    }
    assert isinstance(result["requestState"], str) and result["requestState"]
    assert "ttlMs" not in result and "cacheScope" not in result
    assert session.running_calls == 0


def test_the_retry_with_an_accepted_answer_re_runs_the_tool_with_it() -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    actions = retry(
        session,
        result["requestState"],
        {request.id: {"action": "accept", "content": {"env": "dev"}}},
    )
    assert len(actions) == 1 and isinstance(actions[0], StartCall)
    again = actions[0]
    assert again.request == request
    assert again.answer == Answer(request.id, True, {"env": "dev"})
    final = only_send(session.complete_call(again.call_id, ToolResult.ok("deployed to dev")))
    assert final["id"] == 2
    assert final["result"]["content"] == [{"type": "text", "text": "deployed to dev"}]


def test_a_retry_in_another_session_of_the_same_process_is_honoured() -> None:
    first = ServerSession(TOOLKIT)
    result, request = input_required(first)
    second = ServerSession(TOOLKIT)
    actions = retry(
        second, result["requestState"], {request.id: {"action": "accept", "content": {"env": "qa"}}}
    )
    assert isinstance(actions[0], StartCall)


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_modern_refusal_answers_declined_expired(action: str) -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    final = only_send(retry(session, result["requestState"], {request.id: {"action": action}}))
    assert final["result"]["content"][0]["text"] == "declined/expired: Which environment?"
    assert final["result"]["isError"] is True


def test_a_modern_retry_that_suspends_again_is_unresolved() -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    again = retry(
        session, result["requestState"], {request.id: {"action": "accept", "content": {"env": "x"}}}
    )[0]
    final = only_send(
        session.complete_call(again.call_id, ToolResult.pending(Request("input", "And why?")))
    )
    assert final["result"]["content"][0]["text"] == "unresolved: And why?"


@pytest.mark.parametrize("responses", [None, {}, {"other": {"action": "accept"}}])
def test_a_retry_without_the_answer_asks_again(responses: Any) -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    asked = only_send(retry(session, result["requestState"], responses))["result"]
    assert asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == [request.id]


class DownStore:
    """An answer store whose server is down until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False
        self.used: set[str] = set()

    def consume(self, key: str, expires_at: float) -> bool:
        if not self.up:
            raise StoreUnavailableError("redis://cache:6379/0", "connection refused")
        if key in self.used:
            return False
        self.used.add(key)
        return True


def test_a_retry_whose_store_is_down_is_refused_and_the_state_stays_usable() -> None:
    store = DownStore()
    session = ServerSession(
        TOOLKIT, ServerOptions(secret=b"a-key-of-at-least-16-bytes", answer_store=store)
    )
    result, request = input_required(session)
    answer = {request.id: {"action": "accept", "content": {"env": "dev"}}}
    refused = only_send(retry(session, result["requestState"], answer))
    assert refused["result"]["isError"] is True
    # Said in a way a client reads without parsing text: the answer was not used.
    assert refused["result"]["_meta"]["dev.toolnexus/answerUnused"] is True
    text = refused["result"]["content"][0]["text"]
    assert text.startswith("cannot resume: the answer store is unavailable")
    assert "cache" not in text  # where the store lives goes to the log, not to the client
    store.up = True
    actions = retry(session, result["requestState"], answer, rid=3)
    assert isinstance(actions[0], StartCall) and actions[0].answer == Answer(
        request.id, True, {"env": "dev"}
    )
    replay = only_send(retry(session, result["requestState"], answer, rid=4))
    assert "already answered" in replay["result"]["content"][0]["text"]


def test_a_tampered_request_state_is_refused() -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    state = result["requestState"]
    version, body, tag = state.split(".")
    forged = f"{version}.{body[:-2]}{'A' if body[-2] != 'A' else 'B'}{body[-1]}.{tag}"
    for bad in (forged, state[:-1], state + "x", "v1.e30.AAAA", "nonsense", "", "ünïcode"):
        error = only_send(
            retry(session, bad, {request.id: {"action": "accept", "content": {"env": "x"}}})
        )
        assert error["error"]["code"] == -32602, bad
        assert "requestState" in error["error"]["message"]


def test_a_request_state_from_another_process_is_refused() -> None:
    other = ServerSession(TOOLKIT, ServerOptions(secret=b"another-process-secret"))
    result, request = input_required(other)
    error = only_send(
        retry(ServerSession(TOOLKIT), result["requestState"], {request.id: {"action": "accept"}})
    )
    assert error["error"]["code"] == -32602


@pytest.mark.parametrize("change", [{"arguments": {"force": False}}, {"arguments": {}}])
def test_a_request_state_replayed_on_another_call_is_refused(change: dict[str, Any]) -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    error = only_send(
        retry(session, result["requestState"], {request.id: {"action": "accept"}}, **change)
    )
    assert error["error"]["code"] == -32602
    assert "another call" in error["error"]["message"]


def test_a_mistyped_request_state_is_invalid_params() -> None:
    session = ServerSession(TOOLKIT)
    assert only_send(retry(session, 42, {}))["error"]["code"] == -32602


@pytest.mark.parametrize(
    "responses",
    [
        "accepted",
        {"KEY": "accept"},
        {"KEY": {"action": "maybe"}},
        {"KEY": {"action": "accept", "content": 3}},
    ],
)
def test_malformed_input_responses_are_invalid_params(responses: Any) -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    if isinstance(responses, dict):
        responses = {request.id: responses["KEY"]}
    error = only_send(retry(session, result["requestState"], responses))
    assert error["error"]["code"] == -32602


def test_an_expired_request_state_answers_declined_expired() -> None:
    now = [1_000_000.0]
    session = ServerSession(TOOLKIT, ServerOptions(state_ttl_ms=60000), clock=lambda: now[0])
    result, request = input_required(session)
    now[0] += 61
    final = only_send(
        retry(
            session,
            result["requestState"],
            {request.id: {"action": "accept", "content": {"env": "x"}}},
        )
    )
    assert final["result"]["content"][0]["text"] == "declined/expired: Which environment?"


def test_a_modern_client_without_elicitation_gets_32021() -> None:
    session = ServerSession(TOOLKIT)
    call = start(session, rid=8, meta=modern_meta())
    final = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    assert final["id"] == 8
    assert final["error"]["code"] == -32021
    assert final["error"]["message"].startswith(
        "Missing required client capability: elicitation (form mode)"
    )
    assert final["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert session.running_calls == 0


def test_modern_url_mode_has_no_elicitation_id() -> None:
    session = ServerSession(TOOLKIT)
    call = start(session, meta=modern_meta({"url": {}}))
    pending = ToolResult.auth_required("https://auth.example/login", "Sign in")
    result = only_send(session.complete_call(call.call_id, pending))["result"]
    (asked,) = result["inputRequests"].values()
    assert asked["params"] == {
        "mode": "url",
        "message": "Sign in",
        "url": "https://auth.example/login",
    }


def test_a_url_only_client_cannot_be_asked_a_form_question() -> None:
    session = ServerSession(TOOLKIT)
    call = start(session, meta=modern_meta({"url": {}}))
    final = only_send(session.complete_call(call.call_id, ToolResult.pending(asks_env())))
    assert final["error"]["code"] == -32021


def test_cancelling_a_modern_retry_drops_its_result() -> None:
    session = ServerSession(TOOLKIT)
    result, request = input_required(session)
    again = retry(
        session,
        result["requestState"],
        {request.id: {"action": "accept", "content": {"env": "x"}}},
        rid="r",
    )[0]
    cancel = session.receive(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "r"}}
    )
    assert cancel == [CancelCall(again.call_id, None)]
    assert session.complete_call(again.call_id, ToolResult.ok("late")) == []
