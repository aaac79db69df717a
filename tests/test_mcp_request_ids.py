"""Request ids, both sides: the two correlation rules live in one module
(``mcp/_shared/_correlation.py``), both the server and the client keep their ids in its
tables, and each attack on an id reads the same on either side.

- :class:`Pending`: a request id *we* issued and who waits for its answer (the client's
  requests; the server's legacy questions). A response finds its waiter once, by id and
  JSON type: a replayed response, one to an id never issued, or one whose id only equals
  ours in Python (``true``, ``1.0``) finds nobody.
- :class:`InFlight`: a request id the *peer* sent, in flight until answered (the server's
  calls, its open subscriptions, the HTTP endpoint's answer streams): a second request
  with that id is refused, ``notifications/cancelled`` finds it, it is answered once.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from test_mcp_session_suspensions import asks_env, deploy, legacy
from toolnexus import Toolkit, ToolResult
from toolnexus.mcp import CancelCall, ClientSession, Send, ServerSession, StartCall
from toolnexus.mcp._client._session import Response, Stray
from toolnexus.mcp._shared._correlation import InFlight, Pending, reused_id
from toolnexus.mcp._shared._peer import Peer

MCP = Path(toolnexus.__file__).parent / "mcp"
LEGACY = "2025-11-25"


# --------------------------------------------------------------------------- one place


def test_both_sides_keep_their_request_ids_in_the_shared_tables() -> None:
    server = ServerSession(Toolkit([deploy]))
    context = server._ctx
    assert isinstance(context.by_request, InFlight)  # the client's requests, in flight
    assert isinstance(context.listens, InFlight)  # its open subscriptions, too
    assert isinstance(context.questions._asked, Pending)  # the server's own requests
    assert isinstance(Peer().waiters, Pending)  # the client's requests: who waits
    assert isinstance(ClientSession().requests, Pending)  # ... and for what method


def test_the_client_keeps_its_requests_in_one_table_that_session_and_peer_share() -> None:
    # One table of the client's requests: the session issues and answers an id, the peer
    # finds who waits for it in the same table (never a second one to keep in step).
    from toolnexus.mcp._client._connection import Connection
    from toolnexus.mcp._shared._peer import Waiter

    session = legacy_client()
    connection = Connection(
        session, label="t", timeout_s=5, on_tools_changed=lambda: None, client_closed=bool
    )
    assert connection.peer.waiters is session.requests
    waiter = Waiter()
    outgoing = session.call_tool("deploy", {}, waiter=waiter)
    assert outgoing.id is not None
    connection.peer.start_call(outgoing.id, waiter)
    assert waiter.request_id == outgoing.id
    assert session.requests == {outgoing.id: ("tools/call", waiter)}  # one entry, both parts
    assert connection.peer.waiter_of(outgoing.id) is waiter  # progress names it
    assert connection.peer.waiting() == [waiter]
    connection.route({"jsonrpc": "2.0", "id": outgoing.id, "result": {"content": []}})
    assert session.pending == 0 and connection.peer.pending() == 0  # answered: gone from both
    event = waiter.events.popleft()
    assert isinstance(event, Response) and event.waiter is waiter
    connection.route({"jsonrpc": "2.0", "id": outgoing.id, "result": {"content": []}})
    assert not waiter.events  # a replayed answer finds nobody


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.rpartition(".")[2])
    return found


def test_the_correlation_rules_are_written_in_one_module_that_both_sides_import() -> None:
    # The refusal of a reused id is written once; the sides import the module that has it.
    writers = [
        path.relative_to(MCP).as_posix()
        for path in MCP.rglob("*.py")
        if "already in use by a request" in path.read_text(encoding="utf-8")
    ]
    assert writers == ["_shared/_correlation.py"]
    users = {
        path.relative_to(MCP).as_posix()
        for path in MCP.rglob("*.py")
        if "_correlation" in _imports(path)
    }
    assert {"_server/_context.py", "_server/_questions.py", "_server/_endpoint.py"} <= users
    assert {"_client/_session.py", "_shared/_peer.py"} <= users


# --------------------------------------------------------------------------- the rules


def test_pending_matches_a_response_by_id_and_json_type_and_only_once() -> None:
    pending: Pending[str] = Pending()
    pending.issue(1, "tools/call")
    pending.issue("q-1", "elicitation/create")
    assert pending.answered(True) is None and pending.answered(1.0) is None  # == 1, not 1
    assert pending.answered("1") is None and pending.answered([1]) is None
    assert pending.waiting(True) is None and pending.waiting(1) == "tools/call"
    assert pending.answered(1) == "tools/call"
    assert pending.answered(1) is None  # replayed
    assert pending.withdraw("q-1") == "elicitation/create"
    assert pending.answered("q-1") is None  # withdrawn: a late answer finds nobody
    assert not pending


def test_in_flight_refuses_a_taken_id_finds_a_cancel_and_ends_once() -> None:
    calls: InFlight[str] = InFlight()
    streams: InFlight[str] = InFlight()
    assert calls.begin(7, "first")
    assert not calls.begin(7, "second")  # the first keeps the id
    assert calls[7] == "first"
    assert streams.begin("s", "listen")
    assert calls.in_use(7) and calls.in_use("s", streams) and not calls.in_use("s")
    assert not calls.in_use("7", streams)  # 7 and "7" are different ids
    assert calls.cancelled({"requestId": 7}) == "first"
    for malformed in (None, [], {}, {"requestId": None}, {"requestId": 7.0}, {"requestId": 8}):
        assert calls.cancelled(malformed) is None
    assert not calls.end(7, "second")  # not the request under that id
    assert calls.end(7, "first")
    assert not calls.end(7, "first")  # answered once
    assert not calls.in_use(7)
    assert "7" in reused_id(7) and "use a new id" in reused_id(7)


# --------------------------------------------------------------------------- server side


def legacy_server() -> ServerSession:
    return legacy(LEGACY, elicitation={"form": {}})


def asking(session: ServerSession, rid: Any = 1) -> tuple[StartCall, dict[str, Any]]:
    """A call that asked its question: the call, and the server's elicitation/create."""
    body = {"name": "deploy", "arguments": {}}
    started = session.receive({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": body})
    assert len(started) == 1 and isinstance(started[0], StartCall)
    sent = session.complete_call(started[0].call_id, ToolResult.pending(asks_env()))
    assert len(sent) == 1 and isinstance(sent[0], Send)
    question = dict(sent[0].message)
    assert question["method"] == "elicitation/create"
    return started[0], question


ACCEPT = {"action": "accept", "content": {"env": "staging"}}


def test_server_a_replayed_answer_to_its_question_resumes_the_call_once() -> None:
    session = legacy_server()
    call, question = asking(session)
    response = {"jsonrpc": "2.0", "id": question["id"], "result": ACCEPT}
    resumed = session.receive(response)
    assert len(resumed) == 1 and isinstance(resumed[0], StartCall)
    assert resumed[0].answer is not None and resumed[0].answer.ok
    assert session.receive(response) == []  # the replay finds no call: nothing runs twice
    assert session.receive({**response, "result": {"action": "decline"}}) == []
    final = session.complete_call(call.call_id, ToolResult.ok("deployed"))
    assert [action.message["id"] for action in final] == [1]  # answered once
    assert session.complete_call(call.call_id, ToolResult.ok("again")) == []


@pytest.mark.parametrize("stray_id", ["toolnexus-elicit-99", 1, None, True, ["x"]])
def test_server_an_answer_to_a_question_it_never_asked_changes_nothing(stray_id: Any) -> None:
    session = legacy_server()
    call, question = asking(session)
    assert session.receive({"jsonrpc": "2.0", "id": stray_id, "result": ACCEPT}) == []
    # The question asked is still open, and its own answer still resumes the call.
    resumed = session.receive({"jsonrpc": "2.0", "id": question["id"], "result": ACCEPT})
    assert len(resumed) == 1 and isinstance(resumed[0], StartCall)
    assert resumed[0].call_id == call.call_id


def test_server_an_answer_after_the_call_was_cancelled_finds_nobody() -> None:
    session = legacy_server()
    _call, question = asking(session, rid="c1")
    withdrawn = session.receive(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c1"}}
    )
    assert [action.message["method"] for action in withdrawn] == ["notifications/cancelled"]
    assert withdrawn[0].message["params"]["requestId"] == question["id"]
    assert session.receive({"jsonrpc": "2.0", "id": question["id"], "result": ACCEPT}) == []
    assert not session.in_progress("c1")


@pytest.mark.parametrize("named", ["c2", 1, "1", None, True])
def test_server_a_cancel_for_an_id_not_in_flight_leaves_the_call_alone(named: Any) -> None:
    session = legacy_server()
    body = {"name": "deploy", "arguments": {}}
    started = session.receive(
        {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": body}
    )
    assert isinstance(started[0], StartCall)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": named}}
    assert session.receive(cancel) == []
    assert session.in_progress("c1")
    answer = session.complete_call(started[0].call_id, ToolResult.ok("done"))
    assert [action.message["id"] for action in answer] == ["c1"]
    # Once answered, its id is free: a late cancel of it finds nothing to cancel.
    late = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c1"}}
    assert session.receive(late) == []


def test_server_a_cancel_finds_the_call_and_its_answer_is_never_sent() -> None:
    session = legacy_server()
    body = {"name": "deploy", "arguments": {}}
    started = session.receive({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": body})
    assert isinstance(started[0], StartCall)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
    actions = session.receive(cancel)
    assert len(actions) == 1 and isinstance(actions[0], CancelCall)
    assert actions[0].call_id == started[0].call_id
    assert session.complete_call(started[0].call_id, ToolResult.ok("late")) == []
    assert session.receive(cancel) == []  # a second cancel: the call is gone


# --------------------------------------------------------------------------- client side


def legacy_client() -> ClientSession:
    session = ClientSession(name="t")
    first = session.open()
    session.receive({"jsonrpc": "2.0", "id": first.id, "error": {"code": -32601, "message": "?"}})
    initialize = session.legacy_fallback()
    result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "s"}}
    session.receive({"jsonrpc": "2.0", "id": initialize.id, "result": result})
    assert session.era == "legacy"
    return session


def test_client_a_replayed_response_answers_its_request_once() -> None:
    session = legacy_client()
    outgoing = session.call_tool("deploy", {})
    response = {"jsonrpc": "2.0", "id": outgoing.id, "result": {"content": []}}
    first = session.receive(response)
    assert len(first) == 1 and isinstance(first[0], Response) and first[0].id == outgoing.id
    again = session.receive(response)
    assert len(again) == 1 and isinstance(again[0], Stray)
    assert "no request of ours" in again[0].problem
    assert session.pending == 0


@pytest.mark.parametrize("kind", ["never issued", "float", "string", "true"])
def test_client_a_response_to_an_id_it_never_issued_changes_nothing(kind: str) -> None:
    if kind == "true":
        session = ClientSession(name="t")
        outgoing = session.open()
        assert outgoing.id == 1  # and True == 1 in Python: still no id of ours
    else:
        session = legacy_client()
        outgoing = session.call_tool("deploy", {})
    assert outgoing.id is not None
    stray_id = {
        "never issued": outgoing.id + 100,
        "float": float(outgoing.id),
        "string": str(outgoing.id),
        "true": True,
    }[kind]
    stray = session.receive({"jsonrpc": "2.0", "id": stray_id, "result": {}})
    assert len(stray) == 1 and isinstance(stray[0], Stray)
    assert session.pending == 1  # our request still waits, and its own answer is taken
    result = {"supportedVersions": ["2026-07-28"], "capabilities": {}} if kind == "true" else {}
    events = session.receive({"jsonrpc": "2.0", "id": outgoing.id, "result": result})
    assert not any(isinstance(event, Stray) for event in events)
    assert session.pending == 0


def test_client_a_cancelled_request_ignores_its_late_answer() -> None:
    session = legacy_client()
    outgoing = session.call_tool("deploy", {})
    assert outgoing.id is not None
    notice = session.cancel(outgoing.id, "gave up")
    assert notice is not None and notice.message["params"]["requestId"] == outgoing.id
    late = session.receive({"jsonrpc": "2.0", "id": outgoing.id, "result": {"content": []}})
    assert len(late) == 1 and isinstance(late[0], Stray)


def test_client_peer_a_waiter_is_found_once_by_its_response() -> None:
    from toolnexus.mcp._shared._peer import Waiter

    peer = Peer()
    waiter = Waiter()
    peer.waiters.issue(3, ("tools/call", waiter))
    peer.start_call(3, waiter)
    assert peer.waiter_of(3) is waiter  # progress names it
    assert peer.waiters.answered(True) is None and peer.waiters.answered(3.0) is None
    assert peer.waiters.answered(3) == ("tools/call", waiter)
    assert peer.waiters.answered(3) is None  # a replayed response
    assert peer.pending() == 0
    peer.finish(3)
    assert not peer.calls and not peer.in_flight(3)
