"""The ASGI app (``toolnexus.mcp._server._asgi``), driven directly as ASGI 3 — no server needed:
two app instances (two workers) share the ``requestState`` key (and, for single use, an
SQLite answer store), a retry may ask again with ``max_rounds``, a disconnect cancels the
call, the lifespan closes the host."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from toolnexus import Request, Toolkit, ToolResult, tool
from toolnexus._context import ToolContext
from toolnexus.mcp import AsgiApp, ServerOptions, asgi_app
from toolnexus.stores import SqliteAnswerStore

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
cancelled = threading.Event()
started = threading.Event()


runs: list[tuple[str, str | None]] = []  # every run: the tool and its answer's id, if any
runs_lock = threading.Lock()


def count_run(name: str, ctx: ToolContext) -> None:
    with runs_lock:
        runs.append((name, None if ctx.answer is None else ctx.answer.id))


@tool
def deploy(ctx: ToolContext) -> ToolResult:
    """Asks where to deploy."""
    count_run("deploy", ctx)
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "Which environment?",
                id="env",
                data={
                    "schema": {
                        "type": "object",
                        "properties": {"env": {"type": "string"}},
                        "required": ["env"],
                    }
                },
            )
        )
    return ToolResult.ok(f"deployed to {(ctx.answer.data or {}).get('env')}")


@tool
def waits(ctx: ToolContext) -> str:
    """Waits until cancelled."""
    started.set()
    if ctx.cancellation_token.wait(30):
        cancelled.set()
        return "cancelled"
    return "never"


@tool
def release(ctx: ToolContext) -> ToolResult:
    """Asks for the version, then for the environment, then releases."""
    count_run("release", ctx)
    answer = ctx.answer
    if answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "Which version?",
                id="version",
                data={
                    "schema": {
                        "type": "object",
                        "properties": {"version": {"type": "string"}},
                        "required": ["version"],
                    }
                },
            )
        )
    if answer.id == "version":
        return ToolResult.pending(
            Request(
                "input",
                "Which environment?",
                id="env",
                data={
                    "schema": {
                        "type": "object",
                        "properties": {"env": {"type": "string"}},
                        "required": ["env"],
                    }
                },
            )
        )
    return ToolResult.ok(f"released to {(answer.data or {}).get('env')}")


TOOLKIT = Toolkit([deploy, waits, release])
KEY = b"shared-by-every-worker-0123456789"


def call_message(name: str, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": META, **params},
    }


async def request(
    app: AsgiApp,
    message: dict[str, Any],
    disconnect: asyncio.Event | None = None,
    accept: bytes = b"application/json, text/event-stream",
) -> tuple[int | None, bytes]:
    """POST ``message`` (modern: its routing headers from its method and params) to
    ``app``; the response's status and body."""
    body = json.dumps(message).encode()
    params = message["params"]
    headers = [
        (b"host", b"localhost:8000"),
        (b"content-type", b"application/json"),
        (b"accept", accept),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", message["method"].encode()),
        (b"mcp-name", str(params.get("name") or params.get("taskId")).encode()),
    ]
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
        (event["status"] for event in sent if event["type"] == "http.response.start"), None
    )
    return status, b"".join(
        event.get("body", b"") for event in sent if event["type"] == "http.response.body"
    )


def test_a_retry_is_answered_by_another_worker_holding_the_same_key() -> None:
    first_worker = asgi_app(TOOLKIT, ServerOptions(secret=KEY))
    second_worker = asgi_app(TOOLKIT, ServerOptions(secret=KEY))

    async def main() -> dict[str, Any]:
        _, body = await request(first_worker, call_message("deploy"))
        asked = json.loads(body)["result"]
        assert asked["resultType"] == "input_required"
        retry = call_message(
            "deploy",
            requestState=asked["requestState"],
            inputResponses={"env": {"action": "accept", "content": {"env": "prod"}}},
        )
        _, body = await request(second_worker, retry)
        return dict(json.loads(body)["result"])

    try:
        result = asyncio.run(main())
    finally:
        first_worker.close()
        second_worker.close()
    assert result["content"][0]["text"] == "deployed to prod"


def accept(name: str, state: str, question: str, **content: Any) -> dict[str, Any]:
    return call_message(
        name,
        requestState=state,
        inputResponses={question: {"action": "accept", "content": content}},
    )


def text_of(body: bytes) -> tuple[bool, str]:
    result = json.loads(body)["result"]
    return bool(result.get("isError")), str(result["content"][0]["text"])


def test_a_replayed_retry_is_refused_by_every_worker_sharing_the_sqlite_store(
    tmp_path: Path,
) -> None:
    # Two workers as two processes would be: the same key, each its own store object on
    # the same SQLite file (no memory shared between them but the file).
    used = tmp_path / "used-answers.db"
    worker_a = asgi_app(TOOLKIT, ServerOptions(secret=KEY, answer_store=SqliteAnswerStore(used)))
    worker_b = asgi_app(TOOLKIT, ServerOptions(secret=KEY, answer_store=SqliteAnswerStore(used)))
    runs.clear()

    async def main() -> list[tuple[int | None, bytes]]:
        _, body = await request(worker_a, call_message("deploy"))
        asked = json.loads(body)["result"]
        assert asked["resultType"] == "input_required"
        retry = accept("deploy", asked["requestState"], "env", env="prod")
        replies = [await request(worker_b, retry)]  # B takes the answer A asked for
        replies.append(await request(worker_a, retry))  # the same retry, replayed to A
        replies.append(await request(worker_b, retry))  # ... and to B
        return replies

    try:
        (status, accepted), *replays = asyncio.run(main())
    finally:
        worker_a.close()
        worker_b.close()
    assert status == 200
    assert text_of(accepted) == (False, "deployed to prod")  # B ran the tool with the answer
    for replay_status, body in replays:
        assert replay_status == 200
        is_error, text = text_of(body)
        assert is_error
        assert text.startswith("already answered: this requestState for 'Which environment?'")
    # Asked once (on A), run with the answer once (on B), never again.
    assert runs == [("deploy", None), ("deploy", "env")]


def test_without_a_shared_store_the_issuing_worker_cannot_know_the_answer_was_used(
    tmp_path: Path,
) -> None:
    # The control for the test above: what the shared file prevents. With a store each,
    # the replay to A is taken again, so the docs say to share one across workers.
    worker_a = asgi_app(
        TOOLKIT, ServerOptions(secret=KEY, answer_store=SqliteAnswerStore(tmp_path / "a.db"))
    )
    worker_b = asgi_app(
        TOOLKIT, ServerOptions(secret=KEY, answer_store=SqliteAnswerStore(tmp_path / "b.db"))
    )
    runs.clear()

    async def main() -> bytes:
        _, body = await request(worker_a, call_message("deploy"))
        retry = accept("deploy", json.loads(body)["result"]["requestState"], "env", env="prod")
        await request(worker_b, retry)
        _, replayed = await request(worker_a, retry)
        return replayed

    try:
        replayed = asyncio.run(main())
    finally:
        worker_a.close()
        worker_b.close()
    assert text_of(replayed) == (False, "deployed to prod")
    assert runs == [("deploy", None), ("deploy", "env"), ("deploy", "env")]


def test_with_max_rounds_a_retry_that_asks_again_gets_a_new_state_on_any_worker(
    tmp_path: Path,
) -> None:
    used = tmp_path / "used-answers.db"
    worker_a = asgi_app(
        TOOLKIT, ServerOptions(secret=KEY, max_rounds=2, answer_store=SqliteAnswerStore(used))
    )
    worker_b = asgi_app(
        TOOLKIT, ServerOptions(secret=KEY, max_rounds=2, answer_store=SqliteAnswerStore(used))
    )
    one_round = asgi_app(TOOLKIT, ServerOptions(secret=KEY, answer_store=SqliteAnswerStore(used)))
    runs.clear()

    async def main() -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
        _, body = await request(worker_a, call_message("release"))
        first = json.loads(body)["result"]
        _, body = await request(
            worker_b, accept("release", first["requestState"], "version", version="1.2")
        )
        second = json.loads(body)["result"]
        _, done = await request(
            worker_a, accept("release", second["requestState"], "env", env="prod")
        )
        # A server left at the default (one round) ends the same second question instead.
        _, body = await request(one_round, call_message("release"))
        state = json.loads(body)["result"]["requestState"]
        _, unresolved = await request(one_round, accept("release", state, "version", version="1.2"))
        return first, second, done, unresolved

    try:
        first, second, done, unresolved = asyncio.run(main())
    finally:
        worker_a.close()
        worker_b.close()
        one_round.close()
    assert second["resultType"] == "input_required"
    assert list(second["inputRequests"]) == ["env"]
    assert second["requestState"] != first["requestState"]
    assert text_of(done) == (False, "released to prod")
    assert text_of(unresolved) == (True, "unresolved: Which environment?")
    assert runs == [
        ("release", None),
        ("release", "version"),
        ("release", "env"),
        ("release", None),
        ("release", "version"),
    ]


def test_a_worker_with_another_key_refuses_the_state() -> None:
    issuer = asgi_app(TOOLKIT, ServerOptions(secret=KEY))
    stranger = asgi_app(TOOLKIT, ServerOptions(secret=b"another-key-entirely-0123456789ab"))

    async def main() -> tuple[int, dict[str, Any]]:
        _, body = await request(issuer, call_message("deploy"))
        state = json.loads(body)["result"]["requestState"]
        retry = call_message(
            "deploy",
            requestState=state,
            inputResponses={"env": {"action": "accept", "content": {"env": "prod"}}},
        )
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
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]
    assert host.is_closed
