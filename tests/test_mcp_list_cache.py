"""Lists cached on the client side as the server's hints say (``ttlMs``, ``cacheScope``,
``list_changed``), and a gateway that answers ``tools/list`` from that cache: with twenty
upstreams, listing its tools touches none of them while their lists hold, and a list that
went stale without a notification is fetched again once its ``ttlMs`` runs out.

The upstreams are ``tests/fake_mcp_server.py`` (``ttl``, ``stale``, ``changes``), which
answer ``echo`` with the text ``counts`` by the requests they have seen.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from pathlib import Path

from timing import TIMEOUT, wait_until
from toolnexus.mcp import McpClient, McpSource

FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))


def counts(client: McpClient, tool: str = "echo") -> dict[str, int]:
    result = client.call_tool(tool, {"text": "counts"})
    assert not result.is_error, result.output
    return dict(json.loads(result.output))


def test_a_list_with_a_ttl_is_fetched_once_while_it_holds() -> None:
    with McpClient(sys.executable, [FAKE, "ttl"], name="ttl") as client:
        for _ in range(5):
            assert [tool["name"] for tool in client.list_tools()] == ["echo"]
        assert counts(client)["tools/list"] == 1
        until = client.cached_until("tools/list")
        assert until is not None and until != math.inf
        assert client.cache_scope("tools/list") == "public"


def test_list_changed_drops_the_cached_list() -> None:
    with McpClient(sys.executable, [FAKE, "changes"], name="changes") as client:
        heard = threading.Event()
        client.on_tools_changed(heard.set)
        assert [tool["name"] for tool in client.list_tools()] == ["echo"]
        # The server declares listChanged and sends no ttlMs: held until it says so.
        assert client.cached_until("tools/list") == math.inf
        assert [tool["name"] for tool in client.list_tools()] == ["echo"]
        client.call_tool("echo", {"text": "hi"})  # the server then says its list changed
        assert heard.wait(TIMEOUT)
        assert client.cached_until("tools/list") is None
        assert [tool["name"] for tool in client.list_tools()] == ["echo", "extra"]
        assert counts(client)["tools/list"] == 2


def test_a_gateway_with_twenty_upstreams_lists_its_tools_without_touching_them(
    tmp_path: Path,
) -> None:
    servers = {f"s{i}": {"command": sys.executable, "args": [FAKE, "ttl"]} for i in range(20)}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    command = [sys.executable, "-m", "toolnexus", "serve", str(config)]
    with McpClient(command[0], command[1:], name="gw", timeout_ms=120_000) as gateway:
        for _ in range(10):
            # Asked anew each time (past this client's own cache): the gateway answers.
            listed = gateway._request("tools/list")["tools"]
            assert len(listed) == 20
        seen = [counts(gateway, f"s{i}_echo")["tools/list"] for i in range(20)]
    assert seen == [1] * 20  # each listed once, when the gateway connected


def test_a_list_that_went_stale_without_a_notification_is_fetched_again(
    tmp_path: Path,
) -> None:
    config = {"mcpServers": {"st": {"command": sys.executable, "args": [FAKE, "stale"]}}}
    with McpSource(config).connect() as source:
        assert "st_extra" not in source.toolkit
        client = source.client("st")
        client.call_tool("echo", {"text": "hi"})  # its list grows, and it says nothing
        # Once the list's ttlMs runs out the source lists again, and offers the new tool.
        assert wait_until(lambda: "st_extra" in source.toolkit)
        assert source.status()["st"].tools == ("st_echo", "st_extra")
