"""A ``tools/list`` page is described once and kept by the toolkit until something it
shows changes — and never served stale: a tool registered, replaced or removed, a
namespace's ``defer`` set (search on), a gate set later, another caller's scopes, another
client revision, another server's identity, a cursor past the new end. Each test lists
once (so the page is kept), changes one thing, and lists again; each fails when that
change does not reach the kept page."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

import toolnexus._toolkit as toolkit_module
from toolnexus import Principal, Toolkit, tool
from toolnexus._context import bound_principal
from toolnexus._scopes import gate
from toolnexus.mcp import Send, ServerOptions, ServerSession
from toolnexus.mcp._shared import _codec as codec

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def numbered(count: int, start: int = 0) -> list[Any]:
    return [tool(name=f"t{n}", description=f"tool {n}")(lambda: "x") for n in range(start, count)]


def list_page(session: ServerSession, cursor: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"_meta": MODERN}
    if cursor is not None:
        params["cursor"] = cursor
    (sent,) = session.receive({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": params})
    assert isinstance(sent, Send)
    assert sent.to_bytes() == codec.encode(sent.message)  # the line says what the message does
    return dict(sent.message)


def listed(session: ServerSession) -> list[str]:
    """Every name on every page."""
    names: list[str] = []
    cursor = None
    while True:
        result = list_page(session, cursor)["result"]
        names += [entry["name"] for entry in result["tools"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            return names


@contextlib.contextmanager
def as_caller(principal: Principal | None) -> Iterator[None]:
    token = bound_principal.set(principal)  # what a serving driver binds per request
    try:
        yield
    finally:
        bound_principal.reset(token)


def test_a_second_list_reads_no_tool_of_the_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    kit = Toolkit(numbered(250))
    session = ServerSession(kit, ServerOptions(page_size=100))
    first = listed(session)
    reads: list[str] = []
    real = Toolkit.tools
    monkeypatch.setattr(Toolkit, "tools", lambda self: reads.append("tools") or real(self))
    monkeypatch.setattr(
        Toolkit, "_mcp_entry", lambda *args: reads.append("entry") or pytest.fail("described")
    )
    assert listed(session) == first
    assert reads == []  # three pages, each one lookup
    assert listed(ServerSession(kit, ServerOptions(page_size=100))) == first  # kept for all
    assert reads == []


def test_a_registered_tool_is_listed_at_once() -> None:
    kit = Toolkit(numbered(5))
    session = ServerSession(kit, ServerOptions(page_size=4))
    assert listed(session) == [f"t{n}" for n in range(5)]
    kit.register(*numbered(7, start=5))
    assert listed(session) == [f"t{n}" for n in range(7)]


def test_a_replaced_tool_is_listed_with_its_new_description() -> None:
    kit = Toolkit(numbered(3))
    session = ServerSession(kit)
    assert list_page(session)["result"]["tools"][1]["description"] == "tool 1"
    kit.register(tool(name="t1", description="a better tool")(lambda: "y"), replace=True)
    entries = list_page(session)["result"]["tools"]
    assert [entry["description"] for entry in entries] == ["tool 0", "a better tool", "tool 2"]


def test_a_removed_tool_is_gone_and_a_cursor_past_the_new_end_is_refused() -> None:
    kit = Toolkit(numbered(9))
    session = ServerSession(kit, ServerOptions(page_size=4))
    assert listed(session) == [f"t{n}" for n in range(9)]  # pages at 0, 4 and 8 kept
    for name in ("t8", "t7", "t6", "t5"):
        kit.remove(name)
    assert listed(session) == [f"t{n}" for n in range(5)]
    kit.remove("t4")
    (refused,) = session.receive(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {"_meta": MODERN, "cursor": "tnx1:8"},  # the third page, kept before
        }
    )
    assert refused.message["error"]["code"] == codec.INVALID_PARAMS
    assert "was not issued by this server" in refused.message["error"]["message"]
    # the second page of four tools, kept before with t4..t7, is empty now
    assert list_page(session, "tnx1:4")["result"]["tools"] == []


def test_a_namespace_loaded_later_joins_the_search_list() -> None:
    kit = Toolkit([*numbered(2)])
    github = kit.namespace("github", "GitHub")
    github.register(tool(name="issues", description="list issues")(lambda: "x"))
    session = ServerSession(kit, ServerOptions(search=True))  # every tool deferred...
    assert listed(session) == ["search_tools", "call_tool"]
    github.defer = False  # ...but those of a namespace that says otherwise
    assert listed(session) == ["issues", "search_tools", "call_tool"]
    github.defer = None
    assert listed(session) == ["search_tools", "call_tool"]


def test_each_caller_sees_its_own_page_and_a_gate_set_later_hides_a_tool() -> None:
    secret = tool(name="secret", description="admins only")(lambda: "x")
    later = tool(name="later", description="gated after the first list")(lambda: "x")
    kit = Toolkit([*numbered(2), secret, later])
    gate(secret.fn, {"admin"})
    session = ServerSession(kit)
    admin, guest = Principal("ann", scopes="admin"), Principal("bob", scopes="")
    with as_caller(admin):
        assert listed(session) == ["t0", "t1", "secret", "later"]
    with as_caller(guest):
        assert listed(session) == ["t0", "t1", "later"]
    with as_caller(None):  # no principal: no gated tool
        assert listed(session) == ["t0", "t1", "later"]
    with as_caller(admin):
        assert listed(session) == ["t0", "t1", "secret", "later"]
    gate(later.fn, {"ops"})  # after every page was kept: no register, no remove
    with as_caller(guest):
        assert listed(session) == ["t0", "t1"]
    with as_caller(admin):
        assert listed(session) == ["t0", "t1", "secret"]
    with as_caller(Principal("cy", scopes="admin ops")):
        assert listed(session) == ["t0", "t1", "secret", "later"]


def test_clients_of_other_revisions_get_their_own_entries() -> None:
    titled = tool(name="titled", title="A title", read_only=True)(lambda: "x")
    kit = Toolkit([titled])
    options = ServerOptions(name="s", version="1")  # the same server: only the client differs
    modern = ServerSession(kit, options)
    assert list_page(modern)["result"]["tools"][0]["title"] == "A title"
    old = ServerSession(kit, options)
    old.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {}},
        }
    )
    (sent,) = old.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert sent.message["result"] == {"tools": [{"name": "titled", "description": "", **_input()}]}
    assert sent.to_bytes() == codec.encode(sent.message)


def _input() -> dict[str, Any]:
    return {"inputSchema": {"type": "object", "properties": {}, "additionalProperties": False}}


def test_two_servers_on_one_toolkit_each_name_themselves() -> None:
    kit = Toolkit(numbered(3))
    one = ServerSession(kit, ServerOptions(name="one", version="1", list_ttl_ms=10))
    two = ServerSession(kit, ServerOptions(name="two", version="2", list_ttl_ms=20))
    first, second = list_page(one)["result"], list_page(two)["result"]
    assert first["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "one"
    assert second["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "two", "version": "2"}
    assert (first["ttlMs"], second["ttlMs"]) == (10, 20)


def test_a_listed_client_hears_of_a_change_and_then_lists_it() -> None:
    kit = Toolkit(numbered(2))
    session = ServerSession(kit)
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
        }
    )
    session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    (sent,) = session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert [entry["name"] for entry in sent.message["result"]["tools"]] == ["t0", "t1"]
    heard: list[Any] = []
    stop = kit._watch(lambda kind, uri: heard.extend(session.toolkit_changed(kind, uri)))
    try:
        kit.register(*numbered(3, start=2))
    finally:
        stop()
    assert [each.message["method"] for each in heard] == ["notifications/tools/list_changed"]
    (again,) = session.receive({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert [entry["name"] for entry in again.message["result"]["tools"]] == ["t0", "t1", "t2"]


def test_a_page_made_while_the_toolkit_changes_is_not_kept() -> None:
    kit = Toolkit(numbered(1))
    made: list[int] = []

    def make_while_registering() -> int:
        made.append(len(kit))
        if len(made) == 1:  # another thread registers while this page is being made
            kit.register(*numbered(2, start=1))
        return len(made)

    assert kit._derived("k", make_while_registering) == 1
    assert kit._derived("k", make_while_registering) == 2  # made again, from the new tools
    assert kit._derived("k", make_while_registering) == 2  # now kept
    assert made == [1, 2]


def test_what_is_kept_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolkit_module, "KEPT_VALUES", 8)
    kit = Toolkit(numbered(30))
    gate(numbered(1)[0].fn, {"anything"})  # so every caller's scopes tell pages apart
    session = ServerSession(kit, ServerOptions(page_size=10))
    for n in range(20):
        with as_caller(Principal(f"p{n}", scopes=f"scope{n}")):
            assert len(listed(session)) == 30
    assert len(kit._kept) == 8
    for offset in range(1, 10):  # cursors this server never wrote: answered, not kept
        assert len(list_page(session, f"tnx1:{offset}")["result"]["tools"]) == 10
    assert all(key[5] % 10 == 0 for key in kit._kept)
