"""A question over MCP keeps its kind, both ways: a tool's Request becomes an elicitation
(server side: ``question_params``, ``answer_from_response``), the elicitation becomes the
same kind of Request at a toolnexus client and the client's Answer goes back (client side:
``request_from_elicitation``, ``elicit_result``) — one module, ``mcp/_questions.py``, for
both sides, in both eras: 2025-11-25 (``elicitation/create`` server requests) and
2026-07-28 (``InputRequiredResult``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from toolnexus import Answer, Host, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.mcp import HttpServer, McpClient, ServerOptions
from toolnexus.mcp._questions import (
    answer_from_response,
    elicit_result,
    question_params,
    request_from_elicitation,
)

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ERAS = {
    # The flags each era's server asks with (mcp/_session.py's _suspend).
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
