"""A question over MCP keeps its kind, both ways: a tool's Request becomes an elicitation
(server side: ``question_params``, ``answer_from_response``), the elicitation becomes the
same kind of Request at a toolnexus client and the client's Answer goes back (client side:
``request_from_elicitation``, ``elicit_result``) — one module, ``mcp/_shared/_questions.py``, for
both sides, in both eras: 2025-11-25 (``elicitation/create`` server requests) and
2026-07-28 (``InputRequiredResult``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from toolnexus import Answer, Host, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.mcp import HttpServer, McpClient, ServerOptions
from toolnexus.mcp._server._feature_tools import make_tasks
from toolnexus.mcp._server._session import ServerSession, StartCall
from toolnexus.mcp._shared._questions import (
    answer_from_response,
    elicit_result,
    question_params,
    request_from_elicitation,
)

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ERAS = {
    # The flags each era's server asks with (mcp/_shared/_questions.py's plan, from the client's
    # revision; a task's client is a modern one).
    LEGACY: {"with_mode": True, "with_elicitation_id": True},
    MODERN: {"with_mode": True, "with_elicitation_id": False},
}
NAME_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}

# kind: (the tool's Request, the client's answer data, what the tool reads as the answer)
KINDS: dict[str, tuple[Request, dict[str, Any] | None, tuple[bool, dict[str, Any] | None]]] = {
    "approval": (Request("approval", "Deploy to production?"), None, (True, {"approved": True})),
    "input": (
        Request("input", "Your name?", data={"schema": NAME_FORM}),
        {"name": "Ada"},
        (True, {"name": "Ada"}),
    ),
    "question": (
        Request("question", "Favourite colour?"),
        {"answer": "blue"},
        (True, {"answer": "blue"}),
    ),
    "authorization": (
        Request("authorization", "Sign in", url="https://example.com/login"),
        None,
        (True, None),
    ),
}


@pytest.mark.parametrize("era", [LEGACY, MODERN])
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_maps_to_an_elicitation_and_back_to_the_same_kind(era: str, kind: str) -> None:
    asked, data, (ok, read) = KINDS[kind]
    # Server side: the tool's Request as the question it sends.
    method, params, shape = question_params(
        asked, asked.prompt, form=True, url=True, sampling=False, roots=False, **ERAS[era]
    )
    assert method == "elicitation/create"
    # Client side: the question as a Request of the same kind, answered as documented.
    seen, seen_shape = request_from_elicitation(params, request_id="pnd-1")
    assert seen_shape == shape
    assert (seen.kind, seen.prompt, seen.url) == (asked.kind, asked.prompt, asked.url)
    response = elicit_result(Answer.accept(seen, data), seen_shape)
    # Server side again: the response as the tool's answer.
    answer = answer_from_response(asked, shape, response)
    assert (answer.ok, answer.data) == (ok, read)
    # A refusal travels as a refusal, for every kind.
    refused = answer_from_response(asked, shape, elicit_result(Answer.decline(seen), seen_shape))
    assert (refused.ok, refused.reason) == (False, "declined")


@tool
def asks(kind: str, ctx: ToolContext) -> ToolResult:
    """Asks the question of ``kind``; says how it was answered."""
    if ctx.answer is None:
        return ToolResult.pending(KINDS[kind][0])
    return ToolResult.ok(f"{ctx.answer.ok} {ctx.answer.data}")


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    options = ServerOptions(secret="mcp-questions-tests-secret-0123456789")
    with HttpServer(Toolkit([asks]), options, port=0) as server:
        server.start()
        yield server.url


@pytest.mark.parametrize("era", [LEGACY, MODERN])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_toolnexus_served_question_reaches_a_toolnexus_client_as_its_kind(
    http_url: str, era: str, kind: str
) -> None:
    asked, data, (ok, read) = KINDS[kind]
    client = McpClient(url=http_url, name="srv", protocol_version=era)
    with client, Host(Toolkit(client.tools()), timeout_ms=30_000) as host:
        first = host.call("srv_asks", {"kind": kind})
        request = ToolResult.pending_of(first)
        assert request is not None, first.output
        assert (request.kind, request.prompt, request.url) == (asked.kind, asked.prompt, asked.url)
        # The documented answer works for every kind: Answer.accept(q) for an approval.
        done = host.resume("srv_asks", {"kind": kind}, first, Answer.accept(request, data))
    assert done.output == f"{ok} {read}"


def task_session(capabilities: dict[str, Any]) -> tuple[ServerSession, Any, dict[str, Any]]:
    """A session of a server that runs tasks, its tasks, and the _meta of a modern client
    that takes them and declares ``capabilities``."""
    options = ServerOptions(secret="mcp-questions-tests-secret-0123456789")
    toolkit = Toolkit([asks])
    tasks = make_tasks(options.tasks)
    session = ServerSession(toolkit, options, _tasks=tasks)
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {
            **capabilities,
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
    }
    return session, tasks, meta


def served(session: ServerSession, method: str, params: dict[str, Any]) -> list[Any]:
    return session.receive({"jsonrpc": "2.0", "id": method, "method": method, "params": params})


def call_asks(session: ServerSession, meta: dict[str, Any], kind: str) -> Any:
    """What a modern call that asks the question of ``kind`` answers."""
    params = {"name": "asks", "arguments": {"kind": kind}, "_meta": meta}
    start = served(session, "tools/call", params)[0]
    return session.complete_call(start.call_id, ToolResult.pending(KINDS[kind][0]))[0].message


def task_asks(session: ServerSession, tasks: Any, meta: dict[str, Any], kind: str) -> Any:
    """A task (of the same client) whose call asked the question of ``kind``, as
    ``tasks/get`` shows it."""
    client = meta["io.modelcontextprotocol/clientCapabilities"]
    elicitation = client.get("elicitation") or {}
    state = {
        "method": "tools/call",
        "name": "asks",
        "arguments": {"kind": kind},
        "client": {"version": MODERN, "form": "form" in elicitation, "url": "url" in elicitation},
    }
    record = tasks.create(None, state, result=ToolResult.pending(KINDS[kind][0]))
    shown = served(session, "tasks/get", {"taskId": record.task_id, "_meta": meta})
    return shown[0].message["result"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_question_asked_inside_a_task_is_a_modern_call_s_and_its_answer_comes_back(
    kind: str,
) -> None:
    asked, data, (ok, read) = KINDS[kind]
    session, tasks, meta = task_session({"elicitation": {"form": {}, "url": {}}})
    # A plain modern call's question, and the same question asked inside a task.
    asked_by_call = call_asks(session, meta, kind)["result"]["inputRequests"]
    task = task_asks(session, tasks, meta, kind)
    assert task["status"] == "input_required"
    assert task["inputRequests"] == asked_by_call  # one rule: the same method and params
    # Client side: the task's question is a Request of the same kind; its answer goes back
    # through tasks/update and the task's call runs again with it.
    (key, question), *_ = task["inputRequests"].items()
    seen, shape = request_from_elicitation(question["params"], request_id="pnd-1")
    assert (seen.kind, seen.prompt, seen.url) == (asked.kind, asked.prompt, asked.url)
    response = elicit_result(Answer.accept(seen, data), shape)
    update = {"taskId": task["taskId"], "inputResponses": {key: response}, "_meta": meta}
    again = served(session, "tasks/update", update)[-1]
    assert isinstance(again, StartCall) and again.task == task["taskId"]
    assert again.answer is not None and (again.answer.ok, again.answer.data) == (ok, read)


def test_a_task_asks_a_client_without_elicitation_as_a_call_does_missing_capability() -> None:
    session, tasks, meta = task_session({})
    call = call_asks(session, meta, "input")["error"]
    task = task_asks(session, tasks, meta, "input")
    assert task["status"] == "failed"
    assert task["error"]["code"] == call["code"] == -32021
    assert task["error"]["data"] == call["data"]
    # The same words name what is missing; only who asks differs.
    assert task["error"]["message"] == call["message"].replace("tool 'asks'", "the task")
