"""A modern client hears what the server tells unasked on its ``subscriptions/listen``
stream (the 2026-07-28 revision sends no notification on any other, and has no ``GET``
stream) — over HTTP a request read on a thread of its own, over stdio one sent on the
pipe: each list the server says changes, and the updates of the resources it subscribed
to. It opens the stream once something relies on notifications (a listener, a
subscription, a list kept until a change), so a client that only calls opens none. The
server is the embedded one, in this process, or ``toolnexus serve
tests/growing_tools.py:toolkit`` over stdio.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from timing import TIMEOUT, wait_until
from toolnexus import Toolkit, tool
from toolnexus.mcp import HttpServer, McpClient, resource

GROWING = str(Path(__file__).with_name("growing_tools.py"))


@tool
def first() -> str:
    """The tool the server starts with."""
    return "first"


@tool
def second() -> str:
    """A tool added while the client is connected."""
    return "second"


@resource("notes://today")
def today() -> str:
    """Today's notes."""
    return "nothing yet"


def honoured(client: McpClient) -> dict[str, Any] | None:
    connection = client._connection
    return connection.honoured if connection is not None else None


def test_a_modern_http_client_hears_a_tool_list_change() -> None:
    toolkit = Toolkit([first])
    with HttpServer(toolkit, port=0) as server:
        server.start()
        changed = threading.Event()
        with McpClient(url=server.url, name="live") as client:
            client.on_tools_changed(changed.set)
            assert [each["name"] for each in client.list_tools()] == ["first"]
            assert client.era == "modern"
            assert wait_until(lambda: honoured(client) is not None)
            assert honoured(client) == {"toolsListChanged": True}
            toolkit.register(second)
            assert changed.wait(TIMEOUT)
            # The cached list went with the notification: the next listing has the tool.
            assert [each["name"] for each in client.list_tools()] == ["first", "second"]


def test_a_modern_http_client_hears_a_subscribed_resource_update() -> None:
    toolkit = Toolkit([first, today])
    with HttpServer(toolkit, port=0) as server:
        server.start()
        heard: list[tuple[str, dict[str, Any]]] = []
        updated = threading.Event()

        def notice(method: str, params: dict[str, Any]) -> None:
            heard.append((method, params))
            if method == "notifications/resources/updated":
                updated.set()

        with McpClient(url=server.url, name="live") as client:
            client.on_notification(notice)
            client.connect()
            client.subscribe_resource("notes://today")
            assert wait_until(
                lambda: (honoured(client) or {}).get("resourceSubscriptions") == ["notes://today"]
            )
            toolkit.resource_changed("notes://today")
            assert updated.wait(TIMEOUT)
    assert ("notifications/resources/updated", {"uri": "notes://today"}) in [
        (method, {k: v for k, v in params.items() if k != "_meta"}) for method, params in heard
    ]


def test_a_client_that_only_calls_opens_no_listen_stream() -> None:
    with HttpServer(Toolkit([first]), port=0) as server:
        server.start()
        with McpClient(url=server.url, name="plain") as client:
            assert client.call_tool("first").output == "first"
            connection = client._connection
            assert connection is not None and client.era == "modern"
            assert not connection.subscribing and connection.listener is None
            # A listener is something that relies on them: the stream opens now.
            client.on_tools_changed(lambda: None)
            assert connection.subscribing
            assert wait_until(lambda: honoured(client) == {"toolsListChanged": True})


def test_a_modern_stdio_client_hears_list_changes_and_subscribed_updates() -> None:
    serve = [sys.executable, "-m", "toolnexus", "serve", f"{GROWING}:toolkit"]
    changed = threading.Event()
    updated = threading.Event()

    def notice(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated" and params.get("uri") == "notes://today":
            updated.set()

    with McpClient(serve[0], serve[1:], name="grow") as client:
        client.on_tools_changed(changed.set)
        client.on_notification(notice)
        client.connect()
        assert client.era == "modern"
        # Acknowledged before connect returned: what the stream will carry.
        assert honoured(client) == {"toolsListChanged": True, "resourcesListChanged": True}
        assert [each["name"] for each in client.list_tools()] == ["grow", "touch"]
        assert client.call_tool("grow").output == "grew"
        assert changed.wait(TIMEOUT)
        assert "grown" in [each["name"] for each in client.list_tools()]
        client.subscribe_resource("notes://today")  # the stream is sent again, with it
        assert (honoured(client) or {}).get("resourceSubscriptions") == ["notes://today"]
        assert client.call_tool("touch").output == "touched"
        assert updated.wait(TIMEOUT)
