"""Observability: one ToolEvent per call with its outcome; a suspension is pending, never an
error; a failing hook is logged, never raised; reprs show state."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading

import pytest

from timing import TIMEOUT
from toolnexus import (
    CancellationTokenSource,
    Host,
    Request,
    ToolContext,
    ToolEvent,
    Toolkit,
    ToolResult,
    tool,
)


@tool
def fine() -> str:
    """Works."""
    return "fine"


@tool
def broken() -> str:
    """Fails."""
    raise RuntimeError("disk full")


@tool
def asks(ctx: ToolContext) -> ToolResult:
    """Suspends."""
    return ToolResult.pending(Request("approval", "Go?", id="pnd-fixed-id"))


@tool
def waits(ctx: ToolContext) -> str:
    """Waits for its token."""
    ctx.cancellation_token.wait(TIMEOUT)
    return "stopped"


TOOLKIT = Toolkit([fine, broken, asks, waits])


def test_each_call_reports_one_event_with_its_outcome():
    events: list[ToolEvent] = []
    source = CancellationTokenSource()
    source.cancel()
    with Host(TOOLKIT, on_event=events.append) as host:
        host.call("fine", {})
        host.call("broken", {})
        host.call("asks", {})
        host.call("waits", {}, timeout_ms=20)
        host.call("fine", {}, cancellation_token=source.token)
        host.call("nope", {})
    assert [(e.name, e.outcome) for e in events] == [
        ("fine", "ok"),
        ("broken", "error"),
        ("asks", "pending"),
        ("waits", "timeout"),
        ("fine", "cancelled"),
        ("nope", "error"),
    ]
    assert [e.request_id for e in events] == [None, None, "pnd-fixed-id", None, None, None]
    assert all(e.duration_ms >= 0 for e in events)
    assert events[3].duration_ms >= 20


def test_a_suspension_is_reported_as_pending_never_as_an_error():
    events: list[ToolEvent] = []
    with Host(TOOLKIT, on_event=events.append) as host:
        result = host.call("asks", {})
    assert result.is_error  # a suspension has no usable answer yet...
    assert events[0].outcome == "pending"  # ...but it is not a failure


def test_async_calls_and_batches_report_one_event_per_call():
    events: list[ToolEvent] = []
    with Host(TOOLKIT, on_event=events.append) as host:
        asyncio.run(host.acall("fine", {}))
        host.call_many([("fine", {}), ("broken", {}), ("asks", {})])
    assert events[0].outcome == "ok"
    # Concurrent calls report as they finish, so compare without order.
    assert sorted((e.name, e.outcome) for e in events[1:]) == [
        ("asks", "pending"),
        ("broken", "error"),
        ("fine", "ok"),
    ]


def test_a_failing_hook_is_logged_and_never_raised(caplog):
    def hook(event: ToolEvent) -> None:
        raise RuntimeError("metrics backend is down")

    with caplog.at_level(logging.ERROR, logger="toolnexus"), Host(TOOLKIT, on_event=hook) as host:
        assert host.call("fine", {}).output == "fine"
        assert asyncio.run(host.acall("fine", {})).output == "fine"
    assert "on_event hook failed" in caplog.text


def test_an_event_is_frozen_plain_data():
    event = ToolEvent("search", 1.5, "ok")
    assert event.request_id is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.outcome = "error"  # type: ignore[misc]


def test_the_host_repr_shows_its_state():
    with Host(TOOLKIT, max_workers=3) as host:
        assert repr(host) == "<Host max_workers=3 busy=0 stuck=0>"
        started = threading.Event()
        gate = threading.Event()

        @tool
        def busy() -> str:
            """Holds a worker."""
            started.set()
            gate.wait(TIMEOUT)
            return "done"

        host.toolkit.register(busy)
        thread = threading.Thread(target=host.call, args=("busy", {}))
        thread.start()
        assert started.wait(TIMEOUT)
        assert repr(host) == "<Host max_workers=3 busy=1 stuck=0>"
        gate.set()
        thread.join(TIMEOUT)
    assert repr(host) == "<Host max_workers=3 busy=0 stuck=0 closed>"


def test_on_event_must_be_callable():
    with pytest.raises(TypeError, match="on_event must be callable"):
        Host(TOOLKIT, on_event="print")  # type: ignore[arg-type]


def test_a_call_answered_at_once_is_answered_and_reported_as_a_kept_call_is():
    # Host.call (and acall, resume) make no Call for a call answered before anything
    # runs: refused, bad arguments, unknown, cancelled before it began, a cache hit, a
    # call limit reached. The result and the event must be what submit's kept call gives.
    from toolnexus.policies import cache, call_limit

    @tool(read_only=True)
    def double(n: int) -> int:
        """Twice n."""
        return 2 * n

    cancelled = CancellationTokenSource()
    cancelled.cancel()
    cases = [
        ("nope", {}, {}),
        ("double", {"n": "two"}, {}),
        ("double", {"n": 2}, {"cancellation_token": cancelled.token}),
        ("double", {"n": 2}, {}),  # the first ran: a cache hit from here on
        ("limited", {}, {}),  # the first ran: refused by the limit from here on
    ]

    @tool(name="limited")
    def limited() -> str:
        """Runs once."""
        return "ran"

    def run(way: str) -> tuple[list[tuple[str, bool, object]], list[tuple[str, str, object]]]:
        events: list[ToolEvent] = []
        answers: list[tuple[str, bool, object]] = []
        middleware = [cache(), call_limit(1, per="tool", tools=["limited"])]
        with Host(Toolkit([double, limited]), on_event=events.append, middleware=middleware) as h:
            h.call("double", {"n": 2})
            h.call("limited", {})
            del events[:]
            for name, args, options in cases:
                if way == "call":
                    result = h.call(name, args, **options)
                elif way == "acall":
                    result = asyncio.run(h.acall(name, args, **options))
                else:
                    result = h.submit(name, args, **options).result(TIMEOUT)
                answers.append((result.output, result.is_error, result.to_dict()))
            h.close()
            if way == "call":
                closed = h.call("double", {"n": 2})
            elif way == "acall":
                closed = asyncio.run(h.acall("double", {"n": 2}))
            else:
                closed = h.submit("double", {"n": 2}).result(TIMEOUT)
            answers.append((closed.output, closed.is_error, closed.to_dict()))
        return answers, [(e.name, e.outcome, e.request_id) for e in events]

    kept = run("submit")
    assert kept[1] == [
        ("nope", "error", None),
        ("double", "error", None),
        ("double", "cancelled", None),
        ("double", "ok", None),
        ("limited", "error", None),
        ("double", "error", None),
    ]
    assert kept[0][3][:2] == ("4", False) and "call limit reached" in kept[0][4][0]
    assert run("call") == kept
    assert run("acall") == kept
