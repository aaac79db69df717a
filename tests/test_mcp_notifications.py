"""List-changed and resource-updated notifications when the toolkit changes at run time:
the session's decisions (legacy clients, modern subscriptions/listen streams), and their
delivery over stdio, a legacy session's GET stream and a listen stream over HTTP."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from http_helpers import post, raw_request, sse_events
from toolnexus import Toolkit, tool
from toolnexus.mcp import (
    HttpServer,
    Send,
    ServerOptions,
    ServerSession,
    prompt,
    resource,
    serve_stdio,
)

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def extra() -> str:
    """Comes and goes."""
    return "extra"


@resource("test://notes", mime_type="text/plain")
def notes() -> str:
    """Notes."""
    return "notes"


@prompt
def hello() -> str:
    """Say hello."""
    return "hello"


def kit() -> Toolkit:
    return Toolkit([add, notes, hello])


def messages(actions: list[Any]) -> list[dict[str, Any]]:
    assert all(isinstance(a, Send) for a in actions), actions
    return [dict(a.message) for a in actions]


def legacy(toolkit: Toolkit, initialized: bool = True) -> ServerSession:
    session = ServerSession(toolkit)
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        }
    )
    if initialized:
        session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def listen(session: ServerSession, rid: Any = 5, **wanted: Any) -> dict[str, Any]:
    (ack,) = messages(
        session.receive(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "subscriptions/listen",
                "params": {"_meta": MODERN, "notifications": wanted},
            }
        )
    )
    return ack


# --------------------------------------------------------------------------- the session


def test_every_list_advertises_list_changed() -> None:
    (hello_reply,) = messages(
        ServerSession(kit()).receive(
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN}}
        )
    )
    capabilities = hello_reply["result"]["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["prompts"] == {"listChanged": True}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}


@pytest.mark.parametrize("kind", ["tools", "resources", "prompts"])
def test_a_legacy_client_hears_that_a_list_changed(kind: str) -> None:
    session = legacy(kit())
    assert messages(session.toolkit_changed(kind)) == [
        {"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed", "params": {}}
    ]


def test_nothing_is_told_before_initialized_nor_after_close() -> None:
    session = legacy(kit(), initialized=False)
    assert session.toolkit_changed("tools") == []
    session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    session.close()
    assert session.toolkit_changed("tools") == []
    assert ServerSession(kit()).toolkit_changed("tools") == []  # nobody listens


def test_a_legacy_client_hears_of_the_resources_it_subscribed_to_only() -> None:
    session = legacy(kit())
    assert session.toolkit_changed("resource", "test://notes") == []
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "resources/subscribe",
            "params": {"uri": "test://notes"},
        }
    )
    assert messages(session.toolkit_changed("resource", "test://notes")) == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "test://notes"},
        }
    ]
    assert session.toolkit_changed("resource", "test://other") == []


def test_a_listen_stream_is_acknowledged_with_what_the_server_honours() -> None:
    session = ServerSession(Toolkit([add]))  # no prompts, no resources
    ack = listen(
        session, toolsListChanged=True, promptsListChanged=True, resourceSubscriptions=["x://"]
    )
    assert ack == {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "notifications": {"toolsListChanged": True},
            "_meta": {"io.modelcontextprotocol/subscriptionId": 5},
        },
    }
    assert session.in_progress(5) and session.listening


def test_a_listen_stream_carries_only_what_it_asked_for_tagged_with_its_id() -> None:
    session = ServerSession(kit())
    listen(session, 7, promptsListChanged=True)
    listen(session, 8, resourceSubscriptions=["test://notes"])
    assert session.toolkit_changed("tools") == []
    (prompts,) = messages(session.toolkit_changed("prompts"))
    assert prompts == {
        "jsonrpc": "2.0",
        "method": "notifications/prompts/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 7}},
    }
    (updated,) = messages(session.toolkit_changed("resource", "test://notes"))
    assert updated["params"] == {
        "uri": "test://notes",
        "_meta": {"io.modelcontextprotocol/subscriptionId": 8},
    }


def test_cancelling_a_listen_ends_it_and_closing_the_session_answers_the_rest() -> None:
    session = ServerSession(kit())
    listen(session, 7, toolsListChanged=True)
    listen(session, 8, toolsListChanged=True)
    session.receive(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    )
    assert not session.in_progress(7)
    assert len(messages(session.toolkit_changed("tools"))) == 1
    (closed,) = messages(session.close())
    assert closed == {
        "jsonrpc": "2.0",
        "id": 8,
        "result": {"_meta": {"io.modelcontextprotocol/subscriptionId": 8}},
    }


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({}, "notifications must be an object"),
        ({"notifications": {"resourceSubscriptions": "test://notes"}}, "a list of URIs"),
    ],
)
def test_a_malformed_listen_is_invalid_params(params: dict[str, Any], words: str) -> None:
    (reply,) = messages(
        ServerSession(kit()).receive(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "subscriptions/listen",
                "params": {"_meta": MODERN, **params},
            }
        )
    )
    assert reply["error"]["code"] == -32602 and words in reply["error"]["message"]


def test_the_toolkit_tells_of_changes_to_each_list() -> None:
    toolkit = kit()
    session = legacy(toolkit)
    heard: list[str] = []
    stop = toolkit._watch(
        lambda kind, uri: heard.extend(
            m["method"] for m in messages(session.toolkit_changed(kind, uri))
        )
    )
    toolkit.register(extra)
    toolkit.remove(hello)
    stop()
    assert heard == ["notifications/tools/list_changed", "notifications/prompts/list_changed"]


# --------------------------------------------------------------------------- stdio


def test_over_stdio_a_tool_that_changes_the_toolkit_is_followed_by_list_changed() -> None:
    toolkit = kit()

    @tool
    def grow() -> str:
        """Adds a tool."""
        toolkit.register(extra)
        return "grown"

    toolkit.register(grow)
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "grow"}},
    ]
    stdin = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    stdout = io.StringIO()
    assert serve_stdio(toolkit, ServerOptions(), stdin=stdin, stdout=stdout) == 0
    written = [json.loads(line) for line in stdout.getvalue().splitlines()]
    methods = [m.get("method") for m in written]
    assert "notifications/tools/list_changed" in methods
    changed = methods.index("notifications/tools/list_changed")
    answered = next(i for i, m in enumerate(written) if m.get("id") == 1)
    assert changed < answered  # told while the call ran, before its answer
    assert not toolkit._watchers  # the server stopped watching when it ended


# --------------------------------------------------------------------------- HTTP


@pytest.fixture
def served() -> Iterator[tuple[HttpServer, Toolkit]]:
    toolkit = kit()
    with HttpServer(toolkit, ServerOptions(grace_ms=200, max_streams=2), port=0) as server:
        server.start()
        yield server, toolkit


def read_events(
    sock: socket.socket, until: str, seconds: float = 10
) -> tuple[bytes, list[dict[str, Any]]]:
    """Read a streamed response until an event whose method is ``until`` arrives."""
    data = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        found = sse_events(data)
        if any(event.get("method") == until for event in found):
            return data, found
    raise AssertionError(f"no {until!r} event in {data!r}")


def open_session(server: HttpServer) -> str:
    _, headers, _ = post(
        server,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        },
    )
    session = headers["mcp-session-id"]
    post(
        server,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"Mcp-Session-Id": session},
    )
    return session


def test_a_legacy_session_hears_of_changes_on_its_get_stream(
    served: tuple[HttpServer, Toolkit],
) -> None:
    server, toolkit = served
    session = open_session(server)
    stream = raw_request(server, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": session})
    head = stream.recv(4096)
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head  # open at once
    second = raw_request(server, "GET", {"Accept": "text/event-stream", "Mcp-Session-Id": session})
    assert second.recv(4096).startswith(b"HTTP/1.1 409")  # one stream per session
    second.close()
    toolkit.register(extra)
    _, events = read_events(stream, "notifications/tools/list_changed")
    assert events[0] == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {},
    }
    stream.close()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Accept": "text/event-stream", "Mcp-Session-Id": "nope"}, b"404"),
        ({"Accept": "application/json", "Mcp-Session-Id": "nope"}, b"406"),
    ],
)
def test_a_get_stream_needs_a_live_session_and_event_stream(
    served: tuple[HttpServer, Toolkit], headers: dict[str, str], status: bytes
) -> None:
    sock = raw_request(served[0], "GET", headers)
    assert sock.recv(4096).startswith(b"HTTP/1.1 " + status)
    sock.close()


def listen_request(rid: int = 9, **wanted: Any) -> tuple[bytes, dict[str, str]]:
    message = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "subscriptions/listen",
        "params": {"_meta": MODERN, "notifications": wanted},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "subscriptions/listen",
    }
    return json.dumps(message).encode(), headers


def test_a_modern_listen_stream_over_http_carries_the_changes_it_asked_for(
    served: tuple[HttpServer, Toolkit],
) -> None:
    server, toolkit = served
    body, headers = listen_request(promptsListChanged=True)
    stream = raw_request(server, "POST", headers, body)
    _, (ack,) = read_events(stream, "notifications/subscriptions/acknowledged")
    assert ack["params"]["notifications"] == {"promptsListChanged": True}
    toolkit.register(extra)  # a tool: not asked for
    toolkit.remove(hello)
    _, events = read_events(stream, "notifications/prompts/list_changed")
    assert [event["method"] for event in events] == ["notifications/prompts/list_changed"]
    assert events[0]["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 9}
    stream.close()


def test_notification_streams_are_capped_and_a_closed_one_frees_its_place(
    served: tuple[HttpServer, Toolkit],
) -> None:
    server, _ = served
    body, headers = listen_request(toolsListChanged=True)
    first = raw_request(server, "POST", headers, body)
    second = raw_request(server, "POST", headers, body)
    for stream in (first, second):
        read_events(stream, "notifications/subscriptions/acknowledged")
    third = raw_request(server, "POST", headers, body)
    refused = third.recv(4096)
    assert refused.startswith(b"HTTP/1.1 503") and b"max_streams" in refused
    third.close()
    first.close()
    endpoint = server.endpoint
    deadline = time.monotonic() + 10
    while endpoint._streams > 1:  # until the server notices the hang-up
        assert time.monotonic() < deadline, "the closed stream kept its place"
        threading.Event().wait(0.05)
    again = raw_request(server, "POST", headers, body)
    assert again.recv(4096).startswith(b"HTTP/1.1 200")
    again.close()
    second.close()


def test_the_asgi_app_keeps_a_listen_stream_open_and_carries_changes() -> None:
    import asyncio

    from toolnexus.mcp import asgi_app

    toolkit = kit()
    app = asgi_app(toolkit, ServerOptions())
    body, headers = listen_request(11, toolsListChanged=True)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"host", b"localhost")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }

    async def main() -> list[bytes]:
        gone = asyncio.Event()
        heard = asyncio.Event()
        chunks: list[bytes] = []
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.body":
                chunks.append(event.get("body", b""))
                if b"acknowledged" in chunks[-1]:
                    toolkit.register(extra)  # from the loop: the worker threads tell it
                if b"tools/list_changed" in chunks[-1]:
                    heard.set()

        serving = asyncio.ensure_future(app(scope, receive, send))
        await asyncio.wait_for(heard.wait(), 10)
        gone.set()
        await asyncio.wait_for(serving, 10)
        app.close()
        return chunks

    chunks = asyncio.run(main())
    assert b"notifications/subscriptions/acknowledged" in chunks[0]
    assert any(b'"io.modelcontextprotocol/subscriptionId":11' in chunk for chunk in chunks[1:])
