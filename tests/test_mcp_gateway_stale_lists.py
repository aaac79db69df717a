"""A list that went stale without a notification: an upstream that declares
``listChanged`` but changes its tools, resources or prompts without a word. A call (a
read, a prompt) of an item it listed and now refuses makes the gateway read that list
again — once, never in a loop — take the new list (its clients are told), and answer
with an error that names the staleness; the other upstreams keep working.

And each list that changed is told once: a change seen when a list's ``ttlMs`` runs out
is one ``list_changed`` of that list, however many items it swapped.

The upstreams are ``tests/fake_mcp_upstream.py`` (it reads its offer from a file at every
request, so the test changes it unannounced).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from timing import TIMEOUT, wait_until
from toolnexus import Host
from toolnexus.mcp import McpSource, federate

UPSTREAM = str(Path(__file__).with_name("fake_mcp_upstream.py"))
BEFORE = {
    "tools": [{"name": "hello"}, {"name": "gone"}],
    "resources": [{"uri": "r://1", "name": "one"}, {"uri": "r://gone", "name": "gone"}],
    "prompts": [{"name": "p1"}, {"name": "pgone"}],
}
AFTER = {
    "tools": [{"name": "hello"}, {"name": "new"}],
    "resources": [{"uri": "r://1", "name": "one"}, {"uri": "r://new", "name": "new"}],
    "prompts": [{"name": "p1"}, {"name": "pnew"}],
}


class Upstream:
    def __init__(self, folder: Path, name: str, offer: dict[str, Any]) -> None:
        self.state = folder / f"{name}.json"
        self.write(offer)

    def write(self, offer: dict[str, Any]) -> None:
        # Whole or not at all: the server reads the file with each request it answers.
        fresh = self.state.with_suffix(".new")
        fresh.write_text(json.dumps(offer), encoding="utf-8")
        os.replace(fresh, self.state)

    def lists(self, method: str) -> int:
        """How many ``method`` requests it answered."""
        log = Path(f"{self.state}.log")
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return lines.count(method)

    def entry(self, **options: object) -> dict[str, object]:
        return {"command": sys.executable, "args": [UPSTREAM, str(self.state)], **options}


@pytest.fixture
def stale(tmp_path: Path) -> Iterator[tuple[McpSource, Upstream, list[str]]]:
    upstream = Upstream(tmp_path, "s", BEFORE)
    other = Upstream(tmp_path, "o", {"tools": [{"name": "ping"}]})
    config = {"mcpServers": {"s": upstream.entry(), "o": other.entry()}}
    with McpSource(config).connect() as source:
        federate(source)
        told: list[str] = []
        source.toolkit._watch(lambda kind, uri: told.append(kind))
        yield source, upstream, told


def test_a_tool_gone_without_a_notification_is_named_and_the_new_list_is_taken(
    stale: tuple[McpSource, Upstream, list[str]],
) -> None:
    source, upstream, told = stale
    assert {"s_hello", "s_gone"} <= set(source.toolkit._tools)
    upstream.write(AFTER)
    with Host(source.toolkit, timeout_ms=int(TIMEOUT * 1000)) as host:
        result = host.call("s_gone", {})
        assert result.is_error
        assert "MCP server s no longer offers the tool 'gone'" in result.output
        assert "changed without notice" in result.output
        # The new list is the toolkit's (its clients were told, once), the new tool calls.
        assert "s_new" in source.toolkit._tools and "s_gone" not in source.toolkit._tools
        assert told == ["tools"]
        assert host.call("s_new", {}).output == "called new"
        assert host.call("o_ping", {}).output == "called ping"  # the other upstream too


def test_a_call_nobody_waits_for_finds_a_gone_tool_too(
    stale: tuple[McpSource, Upstream, list[str]],
) -> None:
    # (a gateway's call: started on the server's pipe, ended by the thread reading it)
    source, upstream, told = stale
    upstream.write(AFTER)
    with Host(source.toolkit, timeout_ms=int(TIMEOUT * 1000)) as host:
        answer = host.submit("s_gone", {}).result(timeout=TIMEOUT)
        assert "MCP server s no longer offers the tool 'gone'" in answer.output
        assert host.submit("s_new", {}).result(timeout=TIMEOUT).output == "called new"
    assert told == ["tools"]


def test_a_tool_the_server_refuses_but_still_lists_is_looked_at_once_not_in_a_loop(
    stale: tuple[McpSource, Upstream, list[str]],
) -> None:
    source, upstream, told = stale
    upstream.write({**BEFORE, "refuse": ["hello"]})
    listed = upstream.lists("tools/list")
    with Host(source.toolkit, timeout_ms=int(TIMEOUT * 1000)) as host:
        first = host.call("s_hello", {})
        # Still listed: the server's own refusal, after one look at its list.
        assert first.is_error and "refused the call: Unknown tool: hello" in first.output
        assert upstream.lists("tools/list") == listed + 1
        second = host.call("s_hello", {})
        assert second.output == first.output
        assert upstream.lists("tools/list") <= listed + 2  # at most once a second
    assert told == []  # nothing changed: nobody is told


def test_a_burst_of_calls_the_server_refuses_lists_its_tools_once_with_no_thread_each(
    stale: tuple[McpSource, Upstream, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (calls nobody waits for: each refusal used to start a thread of its own, every one
    # waiting on the listing's lock while it went over the network)
    source, upstream, told = stale
    upstream.write({**BEFORE, "refuse": ["hello"]})
    listed = upstream.lists("tools/list")
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    with Host(source.toolkit, timeout_ms=int(TIMEOUT * 1000)) as host:
        calls = [host.submit("s_hello", {}) for _ in range(40)]
        answers = [call.result(timeout=TIMEOUT) for call in calls]
    assert all("refused the call: Unknown tool: hello" in each.output for each in answers)
    assert upstream.lists("tools/list") <= listed + 2  # at most once a second
    stale_threads = [name for name in started if name.endswith("-stale")]
    assert 1 <= len(stale_threads) <= 4, stale_threads  # not one per refused call
    assert told == []


def test_a_resource_and_a_prompt_gone_without_a_notification_are_named(
    stale: tuple[McpSource, Upstream, list[str]],
) -> None:
    source, upstream, told = stale
    upstream.write(AFTER)
    with Host(source.toolkit, timeout_ms=int(TIMEOUT * 1000)) as host:
        read = host.call("resources/read", {"uri": "s+r://gone"})
        assert read.is_error
        assert "MCP server s no longer offers 'r://gone'" in read.output
        assert source.toolkit.find_resource("s+r://new") is not None
        assert host.call("resources/read", {"uri": "s+r://new"}).output == "read r://new"
        got = host.call("prompts/get", {"name": "s_pgone"})
        assert got.is_error
        assert "MCP server s no longer offers the prompt 'pgone'" in got.output
        assert host.call("prompts/get", {"name": "s_pnew"}).output == "prompt pnew"
    assert sorted(told) == ["prompts", "resources"]  # each list told once


def test_a_change_seen_when_a_ttl_runs_out_is_told_once_per_list(tmp_path: Path) -> None:
    ttl = {"tools": 50, "resources": 50, "prompts": 50}
    upstream = Upstream(tmp_path, "t", {**BEFORE, "ttl": ttl})
    with McpSource({"mcpServers": {"t": upstream.entry()}}).connect() as source:
        federate(source)
        told: list[str] = []
        source.toolkit._watch(lambda kind, uri: told.append(kind))
        # Only its resources change: one resources list_changed, nothing else.
        upstream.write({**BEFORE, "resources": AFTER["resources"], "ttl": ttl})
        assert wait_until(lambda: source.toolkit.find_resource("t+r://new") is not None)
        seen = upstream.lists("resources/list")
        assert wait_until(lambda: upstream.lists("resources/list") > seen)  # looked again
        assert told == ["resources"]
        # All three change at once: one list_changed of each.
        told.clear()
        upstream.write({**AFTER, "ttl": ttl})
        assert wait_until(lambda: "t_new" in source.toolkit._tools)
        assert wait_until(lambda: any(p.name == "t_pnew" for p in source.toolkit.prompts()))
        seen = upstream.lists("prompts/list")
        assert wait_until(lambda: upstream.lists("prompts/list") > seen)
        seen = upstream.lists("tools/list")
        assert wait_until(lambda: upstream.lists("tools/list") > seen)
        assert sorted(told) == ["prompts", "tools"]
