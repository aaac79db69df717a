"""Host deadlines hold even for tools that ignore them; stuck workers are counted and bounded.

Timing is only ever an upper bound here (seconds of slack): a tool that ignores its token
blocks on a threading.Event the test releases at the end, so a host that waited for it
would blow far past the bound.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import types

import pytest

from timing import STALL, TIMEOUT
from toolnexus import Host, ToolContext, Toolkit, ToolResult, tool

BUDGET = 200  # ms: long enough for a warmed-up worker to pick the call up on a busy machine


def warm(host: Host) -> Host:
    """Start the host's workers, so a short budget is spent in the tool, not on startup."""
    host.call("echo", {"text": "warm"})
    return host


class LogWaiter(logging.Handler):
    """Sets an Event when the toolnexus logger emits a message containing ``needle``."""

    def __init__(self, needle: str) -> None:
        super().__init__(logging.DEBUG)
        self.needle = needle
        self.seen = threading.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        if self.needle in message:
            self.seen.set()


@pytest.fixture
def late_returns():
    """Wait for abandoned workers to come back (the host logs each one)."""
    waiter = LogWaiter("returned")
    logger = logging.getLogger("toolnexus")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(waiter)
    yield waiter
    logger.removeHandler(waiter)
    logger.setLevel(old_level)


class Stubborn:
    """A tool that ignores its token and blocks until the test releases it."""

    def __init__(self, text: str = "late result") -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.returned = threading.Event()
        self.runs = 0
        self.text = text

        @tool(name="stubborn")
        def stubborn() -> str:
            """Blocks until released, whatever its token says."""
            self.runs += 1
            self.started.set()
            self.release.wait(STALL)
            self.returned.set()
            return self.text

        self.tool = stubborn


@tool
def echo(text: str) -> str:
    """Return the text."""
    return text


def test_a_tool_that_ignores_its_token_times_out_within_deadline_plus_grace():
    stubborn = Stubborn()
    with Host(Toolkit([stubborn.tool, echo]), grace_ms=50) as host:
        warm(host)
        start = time.monotonic()
        result = host.call("stubborn", {}, timeout_ms=BUDGET)
        elapsed = time.monotonic() - start
        stubborn.release.set()
    assert result.is_error
    assert result.output.startswith(f"timed out after {BUDGET} ms")
    assert "abandoned" in result.output
    assert BUDGET / 1000 <= elapsed < (BUDGET + 50) / 1000 + TIMEOUT


def test_a_cooperative_tool_sees_its_token_cancelled_at_the_deadline_and_returns():
    seen: list[bool] = []

    @tool
    def polite(ctx: ToolContext) -> str:
        """Waits for cancellation, then stops."""
        seen.append(ctx.cancellation_token.wait(30))
        return "stopped after 3 steps"

    with Host(Toolkit([polite, echo])) as host:
        result = warm(host).call("polite", {}, timeout_ms=BUDGET)
    assert seen == [True]
    assert result.is_error
    assert result.output == f"timed out after {BUDGET} ms: stopped after 3 steps"
    assert host.stuck_workers == 0


def test_the_tool_gets_the_call_budget_as_its_timeout_ms():
    budgets: list[int | None] = []

    @tool
    def probe(ctx: ToolContext) -> str:
        """Records its budget."""
        budgets.append(ctx.timeout_ms)
        return "ok"

    with Host(Toolkit([probe]), timeout_ms=3000) as host:
        host.call("probe", {})
        host.call("probe", {}, timeout_ms=1234)
    with Host(Toolkit([probe])) as host:
        host.call("probe", {})
    assert budgets == [3000, 1234, None]


def test_a_fast_tool_with_a_deadline_returns_its_own_result():
    with Host(Toolkit([echo]), timeout_ms=5000) as host:
        assert host.call("echo", {"text": "hi"}).output == "hi"
        assert host.call("echo", '{"text": "json"}').output == "json"


def test_a_stuck_workers_late_result_never_appears_anywhere(late_returns):
    stubborn = Stubborn(text="LATE-SECRET")
    events = []
    progress_reports = []
    toolkit = Toolkit([stubborn.tool, echo])
    with Host(toolkit, grace_ms=10, on_event=events.append) as host:
        warm(host)
        first = host.call(
            "stubborn",
            {},
            timeout_ms=BUDGET,
            progress=lambda *report: progress_reports.append(report),
        )
        assert host.stuck_workers == 1
        stubborn.release.set()
        assert late_returns.seen.wait(TIMEOUT), late_returns.messages
        later = [host.call("echo", {"text": f"call {i}"}) for i in range(20)]
        assert host.stuck_workers == 0
    outputs = [first.output, *(result.output for result in later)]
    assert not any("LATE-SECRET" in output for output in outputs)
    assert [event.outcome for event in events] == ["ok", "timeout"] + ["ok"] * 20
    assert not any("LATE-SECRET" in repr(event) for event in events)
    assert progress_reports == []


def test_an_abandoned_worker_is_replaced_so_capacity_stays():
    stubborn = Stubborn()
    with Host(Toolkit([stubborn.tool, echo]), max_workers=1, grace_ms=10) as host:
        warm(host)
        assert "abandoned" in host.call("stubborn", {}, timeout_ms=BUDGET).output
        assert host.stuck_workers == 1
        # The only worker is stuck inside the tool, yet the next call runs at once.
        assert (
            host.call("echo", {"text": "still serving"}, timeout_ms=int(TIMEOUT * 1000)).output
            == "still serving"
        )
        stubborn.release.set()


def test_the_stuck_worker_bound_fails_fast_with_host_overloaded(late_returns):
    stubborn = Stubborn()
    with Host(Toolkit([stubborn.tool, echo]), max_stuck=2, grace_ms=10) as host:
        warm(host)
        for _ in range(2):
            assert "abandoned" in host.call("stubborn", {}, timeout_ms=BUDGET).output
        assert host.stuck_workers == 2
        runs_before = stubborn.runs
        start = time.monotonic()
        refused = host.call("stubborn", {}, timeout_ms=60_000)
        also_refused = host.call("echo", {"text": "x"})
        assert time.monotonic() - start < TIMEOUT
        assert refused.is_error and also_refused.is_error
        assert refused.output.startswith("host overloaded: 2 stuck workers")
        assert "max_stuck=2" in refused.output
        assert stubborn.runs == runs_before  # refused calls never reach a tool
        assert repr(host) == "<Host max_workers=64 busy=0 stuck=2>"
        stubborn.release.set()
        while host.stuck_workers:  # each late return is logged; wait for both
            assert late_returns.seen.wait(TIMEOUT)
            late_returns.seen.clear()
        assert host.call("echo", {"text": "back"}).output == "back"


def test_an_abandoned_worker_is_logged(caplog):
    stubborn = Stubborn()
    with (
        caplog.at_level(logging.WARNING, logger="toolnexus"),
        Host(Toolkit([stubborn.tool, echo]), grace_ms=10) as host,
    ):
        warm(host).call("stubborn", {}, timeout_ms=BUDGET)
        stubborn.release.set()
    assert any(
        "abandoned" in record.getMessage() and "stubborn" in record.getMessage()
        for record in caplog.records
    )


def test_a_tool_that_returns_within_the_grace_period_is_still_a_timeout_with_its_text():
    @tool
    def slowpoke(ctx: ToolContext) -> str:
        """Notices the cancel and reports how far it got."""
        ctx.cancellation_token.wait(30)
        return "got through 2 of 5 pages"

    with Host(Toolkit([slowpoke, echo]), grace_ms=5000) as host:
        result = warm(host).call("slowpoke", {}, timeout_ms=BUDGET)
    assert result.output == f"timed out after {BUDGET} ms: got through 2 of 5 pages"


def test_an_async_tool_called_synchronously_is_cancelled_at_the_deadline():
    cancelled = threading.Event()

    @tool
    async def sleepy() -> str:
        """Sleeps far past any deadline."""
        try:
            await asyncio.sleep(STALL)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "woke up"

    with Host(Toolkit([sleepy, echo])) as host:
        warm(host)
        start = time.monotonic()
        result = host.call("sleepy", {}, timeout_ms=BUDGET)
        assert time.monotonic() - start < TIMEOUT
    assert result.output.startswith(f"timed out after {BUDGET} ms")
    assert cancelled.is_set()


def test_acall_cancels_an_async_tools_task_at_the_deadline():
    cancelled = []

    @tool
    async def sleepy() -> str:
        """Sleeps far past any deadline."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "woke up"

    async def main() -> ToolResult:
        with Host(Toolkit([sleepy])) as host:
            return await host.acall("sleepy", {}, timeout_ms=50)

    result = asyncio.run(main())
    assert result.output.startswith("timed out after 50 ms")
    assert cancelled == [True]


def test_acall_bounds_a_stubborn_sync_tool_without_blocking_the_loop():
    stubborn = Stubborn()
    blocked_turns: list[bool] = []  # the loop's turns, each noting whether the tool blocked

    async def main() -> ToolResult:
        loop = asyncio.get_running_loop()
        turned = loop.create_future()

        def turn() -> None:  # run by the loop itself
            blocked_turns.append(stubborn.started.is_set() and not stubborn.returned.is_set())
            if not turned.done():
                turned.set_result(None)

        def ask_for_a_turn() -> None:  # once the tool blocks its worker
            if stubborn.started.wait(TIMEOUT):
                loop.call_soon_threadsafe(turn)

        with Host(Toolkit([stubborn.tool]), grace_ms=20) as host:
            threading.Thread(target=ask_for_a_turn, daemon=True).start()
            result = await host.acall("stubborn", {}, timeout_ms=100)
            await asyncio.wait_for(turned, TIMEOUT)  # the tool is still blocked: not released
            stubborn.release.set()
            return result

    start = time.monotonic()
    result = asyncio.run(main())
    assert time.monotonic() - start < TIMEOUT
    assert result.output.startswith("timed out after 100 ms")
    # The loop ran a turn asked for from another thread while the tool blocked its worker
    # (whichever order the machine's load gives that turn and the call's answer).
    assert blocked_turns == [True]


def test_a_bad_timeout_is_a_programmer_error_raised_at_once():
    with Host(Toolkit([echo])) as host:
        with pytest.raises(ValueError, match="timeout_ms must be None or an int >= 0"):
            host.call("echo", {"text": "x"}, timeout_ms=-1)
        with pytest.raises(TypeError, match="cancellation_token must be a CancellationToken"):
            host.call("echo", {"text": "x"}, cancellation_token=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_stuck must be an int >= 1"):
        Host(Toolkit([echo]), max_stuck=0)
    with pytest.raises(ValueError, match="grace_ms must be an int >= 0"):
        Host(Toolkit([echo]), grace_ms=-5)
    with pytest.raises(TypeError, match="Host\\(\\) takes a Toolkit"):
        Host([echo])  # type: ignore[arg-type]


def test_a_deadline_that_passes_before_the_first_worker_started_says_so_not_busy(monkeypatch):
    # A fresh host starts its first worker with the first call; a 1 ms deadline passes
    # before that worker takes the call. No worker was busy: the text must not say one was.
    from toolnexus._pool import Pool

    gate = threading.Event()
    work = Pool._work

    def held_work(pool: Pool) -> None:
        gate.wait(TIMEOUT)  # the new worker starts only once the test saw the answer
        work(pool)

    monkeypatch.setattr(Pool, "_work", held_work)
    with Host(Toolkit([echo]), grace_ms=10) as host:
        try:
            early = host.call("echo", {"text": "too soon"}, timeout_ms=1)
        finally:
            gate.set()
        assert early.output == (
            "timed out after 1 ms; 'echo' never started: the deadline passed before a "
            "worker could take it"
        )
        assert host.call("echo", {"text": "fine"}).output == "fine"


def test_calls_beyond_the_worker_count_queue_and_their_wait_counts_against_the_budget():
    stubborn = Stubborn()
    with Host(Toolkit([stubborn.tool, echo]), max_workers=1, grace_ms=10) as host:
        blocker = threading.Thread(target=host.call, args=("stubborn", {}))
        blocker.start()
        assert stubborn.started.wait(TIMEOUT)
        # The only worker is busy (no deadline on that call), so this one waits in the
        # queue until its own deadline and is dropped, never run.
        queued = host.call("echo", {"text": "never ran"}, timeout_ms=50)
        assert queued.output == "timed out after 50 ms; 'echo' never started: every worker was busy"
        stubborn.release.set()
        blocker.join(TIMEOUT)
        assert host.call("echo", {"text": "fine"}).output == "fine"


# --------------------------------------------------------------------------- the budget left


def test_a_tool_reads_what_is_left_of_its_budget_and_the_wait_for_a_worker_is_spent(
    monkeypatch,
):
    from toolnexus import _context

    # The context's clock, moved by hand from the real one (the call's deadline is its
    # context's, and the timer that keeps it runs on the real clock).
    start = time.monotonic()
    now = [start]
    monkeypatch.setattr(_context, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    release = threading.Event()
    seen: queue.SimpleQueue[tuple[int | None, float | None]] = queue.SimpleQueue()

    @tool
    def hold() -> str:
        """Holds the only worker until released."""
        release.wait(TIMEOUT)
        return "held"

    @tool
    def budget(ctx: ToolContext) -> str:
        """Reports what is left of its budget."""
        seen.put((ctx.remaining_ms(), ctx.deadline))
        return "ok"

    with Host(Toolkit([hold, budget]), max_workers=1) as host:
        blocker = host.submit("hold", {})
        queued = host.submit("budget", {}, timeout_ms=60_000)
        now[0] += 20.0  # 20 s pass while it waits for the worker
        release.set()
        assert queued.result(timeout=TIMEOUT).output == "ok"
        assert blocker.result(timeout=TIMEOUT).output == "held"
    assert seen.get_nowait() == (40_000, start + 60.0)


# --------------------------------------------------------------------------- async tools in acall


class LoopBlocker:
    """An async tool that blocks its event loop (a sync wait inside an async def)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.returned = threading.Event()

        @tool(name="blocks_its_loop")
        async def blocks_its_loop() -> str:
            """Blocks the loop it runs on until released."""
            self.release.wait(TIMEOUT)
            self.returned.set()
            return "late"

        self.tool = blocks_its_loop


def test_acall_keeps_its_deadline_for_an_async_tool_that_blocks_its_loop_when_run_on_workers():
    blocker = LoopBlocker()

    async def main(host: Host) -> ToolResult:
        return await host.acall("blocks_its_loop", {}, timeout_ms=BUDGET)

    host = Host(Toolkit([blocker.tool]), grace_ms=50, async_tools="workers")
    try:
        result = asyncio.run(main(host))
        assert not blocker.returned.is_set()  # answered while the tool still blocks
        assert result.output.startswith(f"timed out after {BUDGET} ms")
    finally:
        blocker.release.set()
        host.close()


def test_by_default_acall_runs_async_tools_on_its_loop_and_a_blocked_loop_is_reported(
    monkeypatch, late_returns
):
    from toolnexus import _call

    monkeypatch.setattr(_call, "_BLOCKED_LOOP_MS", 0)  # any lateness past the grace
    blocker = LoopBlocker()
    abandoned = LogWaiter("ignored its deadline")
    logging.getLogger("toolnexus").addHandler(abandoned)

    def release_once_abandoned() -> None:
        abandoned.seen.wait(TIMEOUT)  # the host gave up on the tool: its grace has ended
        blocker.release.set()

    async def main(host: Host) -> ToolResult:
        return await host.acall("blocks_its_loop", {}, timeout_ms=BUDGET)

    helper = threading.Thread(target=release_once_abandoned)
    host = Host(Toolkit([blocker.tool]), grace_ms=50)
    try:
        helper.start()
        result = asyncio.run(main(host))
        # The loop could not hand over the answer before the tool let go of it.
        assert blocker.returned.is_set()
        assert result.output.startswith(f"timed out after {BUDGET} ms")
        assert any('async_tools="workers"' in message for message in late_returns.messages)
    finally:
        blocker.release.set()
        helper.join(TIMEOUT)
        logging.getLogger("toolnexus").removeHandler(abandoned)
        host.close()


def test_async_tools_says_which_values_it_takes():
    expected = r"async_tools must be \"loop\" or \"workers\", got 'threads'"
    with pytest.raises(ValueError, match=expected):
        Host(Toolkit([]), async_tools="threads")  # type: ignore[arg-type]


@pytest.mark.parametrize("takes_context", [False, True])
def test_the_check_of_a_huge_argument_stops_at_the_deadline_and_frees_its_worker(
    takes_context: bool,
) -> None:
    # The argument takes the pattern engine seconds to refuse (16 M characters through
    # an ambiguous pattern). The check must hear the call's token — also for a tool that
    # takes no context — so the deadline ends it within the grace: no worker is left
    # stuck, and with max_stuck=1 the next call is served, not refused "host overloaded".
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}

    def plain(args: dict[str, str]) -> str:
        return "checked"

    def listening(args: dict[str, str], ctx: ToolContext) -> str:
        return "checked"

    from toolnexus import Tool

    check = Tool("check", "Checks s.", schema, listening if takes_context else plain)
    with Host(Toolkit([check, echo]), max_stuck=1, grace_ms=1_000) as host:
        warm(host)
        result = host.call("check", {"s": "a" * 16_000_000 + "b"}, timeout_ms=150)
        assert result.output.startswith("timed out after 150 ms")
        assert "validation stopped" in result.output and "abandoned" not in result.output
        assert host.stuck_workers == 0
        assert host.call("echo", {"text": "next"}).output == "next"


@pytest.mark.parametrize(
    ("schema", "takes_context", "tokens"),
    [
        # A short check and a function without a context: nobody would read a token.
        ({"type": "object", "properties": {"s": {"type": "string"}}}, False, 0),
        # The check is long work (a pattern, an array's items): it hears the deadline.
        ({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$"}}}, False, 1),
        ({"type": "object", "properties": {"s": {"type": "array", "items": {}}}}, False, 1),
        # The function takes a context: it gets its token whatever its check does.
        ({"type": "object", "properties": {"s": {"type": "string"}}}, True, 1),
    ],
)
def test_a_call_with_a_deadline_makes_a_token_only_for_whoever_hears_it(
    monkeypatch: pytest.MonkeyPatch, schema: dict[str, object], takes_context: bool, tokens: int
) -> None:
    # A token and a context cost as much as the rest of a call's set-up: a call that can be
    # stopped makes them when its argument check (Tool.hears_token) or its tool hears them.
    import toolnexus._call as call_module
    from toolnexus import CancellationTokenSource, Tool

    made: list[object] = []

    class Counted(CancellationTokenSource):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(call_module, "CancellationTokenSource", Counted)

    def plain(args: dict[str, object]) -> str:
        return "ran"

    def listening(args: dict[str, object], ctx: ToolContext) -> str:
        return "ran"

    check = Tool("check", "Checks s.", schema, listening if takes_context else plain)
    assert check.hears_token == ("pattern" in str(schema) or "items" in str(schema))
    with Host(Toolkit([check])) as host:
        value = "aaa" if "items" not in str(schema) else ["a"]
        assert host.call("check", {"s": value}, timeout_ms=30_000).output == "ran"
        assert len(made) == tokens
        made.clear()
        assert host.call("check", {"s": value}).output == "ran"  # no deadline
        assert len(made) == (1 if takes_context else 0)  # only for a tool that takes one
