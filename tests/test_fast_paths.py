"""Each fast path on the served call's way gives what the plain path it stands in for gives:
the same calls run both ways, and what the caller sees is the same.

- ``Call._returned``: a tool's answer with no deadline armed is settled at once, without
  the loop rule's ``_settle_attempt_locked`` (which, for an answer, only cancels the
  deadline's timer and settles it "ok");
- ``CallBridge.report``: the session's one answer is delivered directly, without
  ``dispatch``;
- ``success_result``: what a tool returns becomes its successful ``ToolResult`` without the
  checked constructor's checks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from recording_bridge import initialized, started
from toolnexus import Host, Toolkit, ToolResult, tool
from toolnexus._call import Call
from toolnexus._frozen import FrozenDict
from toolnexus._result import NO_METADATA
from toolnexus.mcp._server._bridge import InflightBytes


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def shape(n: int) -> dict[str, int]:
    """A structured answer."""
    return {"n": n, "twice": 2 * n}


@tool
def said() -> ToolResult:
    """A result the tool made itself, with metadata."""
    return ToolResult.ok("said", metadata={"source": "here"})


@tool
def broken() -> str:
    """Fails."""
    raise RuntimeError("disk full")


TOOLKIT = Toolkit([add, shape, said, broken])
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 2, "b": 3}),
    ("shape", {"n": 4}),
    ("said", {}),
    ("broken", {}),
    ("add", {"a": "two"}),  # bad arguments: settled before any tool runs
    ("nope", {}),  # an unknown tool
]


def _run(host: Host) -> list[tuple[Any, ...]]:
    seen: list[tuple[Any, ...]] = []
    for name, args in CALLS:
        callbacks: list[Call] = []
        call = host.submit(name, args)
        call.add_done_callback(callbacks.append)
        result = call.result(timeout=30)
        assert callbacks == [call]
        seen.append((result.to_dict(), call.outcome, call.reason, call.cancelled()))
        seen.append(("call", host.call(name, args).to_dict()))
    return seen


def test_an_answer_without_a_deadline_settles_as_the_loop_rule_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = Call._settle_attempt_locked
    through_rule: list[str] = []

    def counted(self: Call, result: ToolResult) -> list[int]:
        through_rule.append(self.name)
        return plain(self, result)

    monkeypatch.setattr(Call, "_settle_attempt_locked", counted)
    fast_events: list[Any] = []
    with Host(TOOLKIT, on_event=fast_events.append) as host:
        fast = _run(host)
    fast_rule = list(through_rule)
    through_rule.clear()
    plain_events: list[Any] = []
    with Host(TOOLKIT, timeout_ms=60_000, on_event=plain_events.append) as host:
        slow = _run(host)
    # Both ways were taken: without a deadline only the errors (the tool's raise, the bad
    # arguments its wrapper refused) went through the rule; with one, every call that
    # reached its tool did (not the unknown one).
    assert fast_rule == ["broken", "broken", "add", "add"]
    assert through_rule == ["add", "add", "shape", "shape", "said", "said", *fast_rule]
    assert fast == slow
    assert [(e.name, e.outcome, e.request_id) for e in fast_events] == [
        (e.name, e.outcome, e.request_id) for e in plain_events
    ]


RESULTS = [
    ToolResult.ok("5"),
    ToolResult.error("disk full"),
    ToolResult.ok("shaped", metadata={"structuredContent": {"n": 4}}),
]


def test_a_reported_answer_is_delivered_as_dispatch_delivers_it() -> None:
    fast, plain = initialized(TOOLKIT), initialized(TOOLKIT)
    for n, result in enumerate(RESULTS, 1):
        # The fast path: report() delivers the session's one answer itself.
        entry = started(fast, n, "add", {"a": n, "b": 1})
        fast.report(entry.call_id, result)
        # The plain path: the same answer through dispatch, with report's bookkeeping.
        entry = started(plain, n, "add", {"a": n, "b": 1})
        with plain.lock:
            assert plain.calls.pop(entry.call_id) is entry
            plain.inflight.give(entry.weight)
            assert plain.dispatch(plain.session.complete_call(entry.call_id, result)) == []
    assert fast.lines == plain.lines
    assert [json.loads(line)["id"] for line in fast.lines] == [1, 2, 3]
    assert fast.inflight.used == plain.inflight.used == 0
    assert not fast.busy and not plain.busy
    assert fast.session.running_calls == plain.session.running_calls == 0


def test_a_cancelled_calls_report_delivers_nothing_either_way() -> None:
    bridge = initialized(TOOLKIT)
    entry = started(bridge, 1, "add", {"a": 1, "b": 1})
    bridge.feed(
        bridge.session.receive_line,
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
    )
    bridge.report(entry.call_id, ToolResult.ok("late"))
    assert bridge.lines == []
    assert not bridge.busy and bridge.inflight.used == 0


def test_a_guarded_byte_cap_counts_and_refuses_as_a_locked_one() -> None:
    def run(cap: InflightBytes) -> list[Any]:
        seen: list[Any] = []
        for weight in (40, 50, 20, 10):
            seen.append((cap.take(weight), cap.used, cap.peak))
        cap.give(40)
        seen.append((cap.take(35), cap.used, cap.peak))
        cap.give(50)
        cap.give(10)
        cap.give(35)
        seen.append((cap.used, cap.peak))
        return seen

    guarded = run(InflightBytes(100, guarded=True))
    assert guarded == run(InflightBytes(100))
    assert guarded[2][0] is not None and "over the limit of 100" in guarded[2][0]
    assert guarded[-1] == (0, 100)


class Label(str):
    """A str subclass a tool may return: its answer is the plain text."""


RETURNED: list[Any] = [
    "plain",
    "",
    Label("labelled"),
    "naïve ✓ \u2028",
    7,
    -2.5,
    True,
    None,
    {"n": 1, "nested": {"list": [1, "x", None]}},
    [1, 2, 3],
]


@pytest.mark.parametrize("value", RETURNED, ids=lambda value: type(value).__name__)
def test_a_returned_value_becomes_the_result_the_checked_constructor_builds(value: Any) -> None:
    @tool
    def give() -> Any:
        """Returns the value under test."""
        return value

    result = give({})
    # The result the checked constructor builds from the same parts.
    checked = ToolResult(str(result.output), False, dict(result.metadata) or None)
    assert result == checked and hash(result) == hash(checked) and repr(result) == repr(checked)
    assert type(result.output) is str and result.is_error is False and result.parts == ()
    if isinstance(value, str):
        assert result.output == str(value) and result.metadata is NO_METADATA
    elif value is None:
        assert result.output == "" and result.metadata is NO_METADATA
    else:
        assert json.loads(result.output) == value
        assert type(result.metadata) is FrozenDict
        assert result.metadata["structuredContent"] == {"result": value} or (
            result.metadata["structuredContent"] == value
        )
    with pytest.raises(AttributeError):
        result.output = "changed"  # type: ignore[misc]
