"""The call bridge's table entry is also the call's done callback: one object per served
call, found where a cancel looks, reporting the call's answer as the call settles."""

from __future__ import annotations

import json
import threading

from recording_bridge import initialized, started
from toolnexus import Toolkit, tool
from toolnexus.mcp._bridge import CallEntry

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
    start = started(bridge, 1, "held", {"n": 7})
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
    [answer] = [json.loads(line) for line in bridge.lines]
    assert answer["id"] == 1 and answer["result"]["content"] == [{"type": "text", "text": "7"}]
    assert start.call_id not in bridge.calls and bridge.inflight.used == 0


def test_a_cancel_before_the_call_is_made_marks_its_entry_and_the_call_never_runs() -> None:
    bridge = initialized(TOOLKIT)
    entered.clear()
    start = started(bridge, 2, "held", {"n": 1})
    bridge.cancel(start.call_id)  # the host has not made the call yet
    assert bridge.calls[start.call_id].cancelled
    bridge.start(start, True)  # inline: it would block here if it ran
    assert not entered.is_set()
    assert start.call_id not in bridge.calls and bridge.inflight.used == 0


def test_an_entry_for_a_call_the_table_does_not_hold_reports_without_being_kept() -> None:
    bridge = initialized(TOOLKIT)
    start = started(bridge, 3, "add", {"a": 2, "b": 3})
    kept = bridge.entry(start.call_id)
    stray = bridge.entry(start.call_id + 100)
    assert isinstance(stray, CallEntry) and stray is not kept
    assert start.call_id + 100 not in bridge.calls
    bridge.start(start, True, kept)
    assert [json.loads(line)["result"]["content"][0]["text"] for line in bridge.lines] == ["5"]
    assert not bridge.busy
