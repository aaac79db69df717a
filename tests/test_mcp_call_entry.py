"""The call bridge's table entry is also the call's done callback: one object per served
call, registered as the session starts the call, found where a cancel looks, started as it
is, and reporting the call's answer as the call settles."""

from __future__ import annotations

import json
import threading

from recording_bridge import initialized, started
from toolnexus import Toolkit, tool
from toolnexus.mcp._server._session import StartCall

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


def test_a_started_call_holds_its_table_entry_as_its_one_done_callback() -> None:
    bridge = initialized(TOOLKIT)
    release.clear()
    entered.clear()
    entry = started(bridge, 1, "held", {"n": 7})
    assert isinstance(entry.action, StartCall) and entry.action.name == "held"
    bridge.start(entry)  # on one of the host's workers
    try:
        assert entered.wait(30)
        call = entry.call
        assert call is not None and not call.done()
        assert call._callbacks == [entry]  # the entry itself, no wrapper around it
    finally:
        release.set()
    assert bridge.delivered.wait(30)
    [answer] = [json.loads(line) for line in bridge.lines]
    assert answer["id"] == 1 and answer["result"]["content"] == [{"type": "text", "text": "7"}]
    assert entry.call_id not in bridge.calls and bridge.inflight.used == 0


def test_a_cancel_before_the_call_is_made_marks_its_entry_and_the_call_never_runs() -> None:
    bridge = initialized(TOOLKIT)
    entered.clear()
    entry = started(bridge, 2, "held", {"n": 1})
    bridge.cancel(entry.call_id)  # the host has not made the call yet
    assert entry.cancelled
    bridge.start(entry, True)  # inline: it would block here if it ran
    assert not entered.is_set()
    assert entry.call_id not in bridge.calls and bridge.inflight.used == 0


def test_a_call_refused_as_it_is_made_reports_through_its_entry_and_leaves_the_table() -> None:
    bridge = initialized(TOOLKIT)
    entry = started(bridge, 3, "add", {"a": 2, "b": 3})
    bridge.host.get().close()  # the host refuses the call as it makes it: settled at once
    bridge.start(entry, True)
    assert entry.call is None  # settled before it could be stored: never started
    [answer] = [json.loads(line) for line in bridge.lines]
    assert answer["id"] == 3 and answer["result"]["isError"] is True
    assert "closed" in answer["result"]["content"][0]["text"]
    assert not bridge.busy and bridge.inflight.used == 0
