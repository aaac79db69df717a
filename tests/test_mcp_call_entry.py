"""The call bridge's table entry is also the call's done callback: one object per served
call, found where a cancel looks, reporting the call's answer as the call settles."""

from __future__ import annotations

import json
import threading
from typing import Any

from toolnexus import Toolkit, tool
from toolnexus.mcp import ServerOptions
from toolnexus.mcp._bridge import CallBridge, CallEntry, InflightBytes, LazyHost
from toolnexus.mcp._session import Send, ServerSession, StartCall

release = threading.Event()
entered = threading.Event()


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def held(n: int) -> int:
    """Waits for the test to let it return."""
    entered.set()
    release.wait(30)
    return n


TOOLKIT = Toolkit([add, held])


class _Recording(CallBridge):
    """A bridge that keeps each delivered message."""

    def __init__(self) -> None:
        options = ServerOptions()
        super().__init__(
            ServerSession(TOOLKIT, options), LazyHost(TOOLKIT, options), InflightBytes(1 << 20)
        )
        self.sent: list[dict[str, Any]] = []
        self.delivered = threading.Event()

    def _deliver(self, send: Send, where: Any) -> None:
        self.sent.append(json.loads(send.to_bytes()))
        self.delivered.set()


def _bridge() -> _Recording:
    bridge = _Recording()
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    bridge.feed(
        bridge.session.receive_line,
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}),
    )
    bridge.sent.clear()
    bridge.delivered.clear()
    return bridge


def _dispatched(bridge: _Recording, request_id: int, name: str, args: dict[str, Any]) -> StartCall:
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": args},
        }
    )
    with bridge.lock:
        [start] = bridge.dispatch(bridge.session.receive_line(line), None, len(line))
    assert isinstance(start, StartCall)
    return start


def test_a_started_call_holds_its_table_entry_as_its_one_done_callback() -> None:
    bridge = _bridge()
    release.clear()
    entered.clear()
    start = _dispatched(bridge, 1, "held", {"n": 7})
    entry = bridge.entry(start.call_id)
    assert bridge.calls[start.call_id] is entry
    bridge.start(start)  # on one of the host's workers
    try:
        assert entered.wait(30)
        call = entry.call
        assert call is not None and not call.done()
        assert call._callbacks == [entry]  # the entry itself, no wrapper around it
    finally:
        release.set()
    assert bridge.delivered.wait(30)
    [answer] = bridge.sent
    assert answer["id"] == 1 and answer["result"]["content"] == [{"type": "text", "text": "7"}]
    assert start.call_id not in bridge.calls and bridge.inflight.used == 0


def test_a_cancel_before_the_call_is_made_marks_its_entry_and_the_call_never_runs() -> None:
    bridge = _bridge()
    entered.clear()
    start = _dispatched(bridge, 2, "held", {"n": 1})
    bridge.cancel(start.call_id)  # the host has not made the call yet
    assert bridge.calls[start.call_id].cancelled
    bridge.start(start, True)  # inline: it would block here if it ran
    assert not entered.is_set()
    assert start.call_id not in bridge.calls and bridge.inflight.used == 0


def test_an_entry_for_a_call_the_table_does_not_hold_reports_without_being_kept() -> None:
    bridge = _bridge()
    start = _dispatched(bridge, 3, "add", {"a": 2, "b": 3})
    kept = bridge.entry(start.call_id)
    stray = bridge.entry(start.call_id + 100)
    assert isinstance(stray, CallEntry) and stray is not kept
    assert start.call_id + 100 not in bridge.calls
    bridge.start(start, True, kept)
    assert [m["result"]["content"][0]["text"] for m in bridge.sent] == ["5"]
    assert not bridge.busy
