"""The ASGI app (``toolnexus.mcp.asgi``), driven directly as ASGI 3 — no server needed:
two app instances (two workers) share the ``requestState`` key, a disconnect cancels the
call, the lifespan closes the host."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from toolnexus import Request, Toolkit, ToolResult, tool
from toolnexus.context import ToolContext
from toolnexus.mcp import AsgiApp, asgi_app

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
cancelled = threading.Event()
started = threading.Event()


@tool
def deploy(ctx: ToolContext) -> ToolResult:
    """Asks where to deploy."""
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Which environment?", id="env", data={
            "schema": {"type": "object", "properties": {"env": {"type": "string"}},
                       "required": ["env"]}}))
    return ToolResult.ok(f"deployed to {(ctx.answer.data or {}).get('env')}")


@tool
def waits(ctx: ToolContext) -> str:
    """Waits until cancelled."""
    started.set()
    if ctx.cancellation_token.wait(30):
        cancelled.set()
        return "cancelled"
    return "never"


TOOLKIT = Toolkit([deploy, waits])
KEY = b"shared-by-every-worker-0123456789"


def call_message(name: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": {}, "_meta": META, **params}}


async def request(app: AsgiApp, message: dict[str, Any],
                  disconnect: asyncio.Event | None = None) -> tuple[int | None, bytes]:
    body = json.dumps(message).encode()
    headers = [(b"host", b"localhost:8000"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"),
               (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/call"),
               (b"mcp-name", message["params"]["name"].encode())]
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    delivered = False
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        if disconnect is not None:
            await disconnect.wait()
        else:
            await asyncio.Event().wait()  # a client that stays
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    await app(scope, receive, send)
    status = next(
        (event["status"] for event in sent if event["type"] == "http.response.start"), None)
    return status, b"".join(event.get("body", b"") for event in sent
                            if event["type"] == "http.response.body")


def test_a_retry_is_answered_by_another_worker_holding_the_same_key() -> None:
    first_worker = asgi_app(TOOLKIT, secret=KEY)
    second_worker = asgi_app(TOOLKIT, secret=KEY)

    async def main() -> dict[str, Any]:
        _, body = await request(first_worker, call_message("deploy"))
        asked = json.loads(body)["result"]
        assert asked["resultType"] == "input_required"
        retry = call_message("deploy", requestState=asked["requestState"], inputResponses={
            "env": {"action": "accept", "content": {"env": "prod"}}})
        _, body = await request(second_worker, retry)
        return dict(json.loads(body)["result"])

    try:
        result = asyncio.run(main())
    finally:
        first_worker.close()
        second_worker.close()
    assert result["content"][0]["text"] == "deployed to prod"


def test_a_worker_with_another_key_refuses_the_state() -> None:
    issuer = asgi_app(TOOLKIT, secret=KEY)
    stranger = asgi_app(TOOLKIT, secret=b"another-key-entirely-0123456789ab")

    async def main() -> tuple[int, dict[str, Any]]:
        _, body = await request(issuer, call_message("deploy"))
        state = json.loads(body)["result"]["requestState"]
        retry = call_message("deploy", requestState=state, inputResponses={
            "env": {"action": "accept", "content": {"env": "prod"}}})
        status, body = await request(stranger, retry)
        return status, json.loads(body)

    try:
        status, answer = asyncio.run(main())
    finally:
        issuer.close()
        stranger.close()
    assert status == 400
    assert answer["error"]["code"] == -32602
    assert "requestState" in answer["error"]["message"]


def test_a_client_disconnect_cancels_its_call() -> None:
    app = asgi_app(TOOLKIT)
    started.clear()
    cancelled.clear()

    async def main() -> int | None:
        gone = asyncio.Event()
        pending = asyncio.ensure_future(request(app, call_message("waits"), disconnect=gone))
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, started.wait, 10)
        gone.set()
        status, _ = await pending
        return status

    try:
        status = asyncio.run(main())
    finally:
        app.close()
    assert cancelled.wait(10)
    assert status is None  # nothing was sent to a client that had gone


def test_the_lifespan_shutdown_closes_the_host() -> None:
    app = asgi_app(TOOLKIT)
    host = app.endpoint.host
    sent: list[dict[str, Any]] = []
    events = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> dict[str, Any]:
        return next(events)

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    asyncio.run(app({"type": "lifespan"}, receive, send))
    assert [event["type"] for event in sent] == [
        "lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert host.is_closed
