"""Isolation: each upstream has its own bounded queue of calls in flight (``maxInFlight``,
``maxQueued`` in ``mcp.json``), so a slow upstream holds no more than those of the
gateway's workers; its other calls are refused at once, naming it, and every other
upstream's calls go on.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from timing import STALL, TIMEOUT, wait_until
from toolnexus import Host, Toolkit
from toolnexus.mcp import McpClient, McpSource

TOOLS = str(Path(__file__).with_name("mcp_client_tools.py"))


def served(**entry: object) -> dict[str, object]:
    return {
        "command": sys.executable,
        "args": ["-m", "toolnexus", "serve", f"{TOOLS}:toolkit"],
    } | entry


def test_a_slow_upstream_never_delays_another_upstreams_calls() -> None:
    config = {
        "mcpServers": {
            "slow": served(maxInFlight=4, maxQueued=4),
            "fast": served(),
        }
    }
    with McpSource(config).connect() as source, Host(source.toolkit, max_workers=12) as host:
        slow = source.client("slow")
        admission = slow._admission
        assert admission is not None
        calls = [host.submit("slow_wait", {"seconds": STALL}) for _ in range(20)]
        try:
            # Four reach the server, four wait for a place, the twelve others end at once.
            assert wait_until(lambda: sum(call.done() for call in calls) == 12)
            busy = [call.result() for call in calls if call.done()]
            assert all(r.is_error and "MCP server slow: busy" in r.output for r in busy)
            assert "maxInFlight 4, maxQueued 4" in busy[0].output
            assert (admission.in_flight, admission.waiting) == (4, 4)
            # The other upstream answers every call meanwhile (8 of 12 workers are held).
            answers = [
                host.call("fast_add", {"a": i, "b": 1}, timeout_ms=int(TIMEOUT * 1000))
                for i in range(10)
            ]
            assert [r.output for r in answers] == [str(i + 1) for i in range(10)]
            assert sum(call.done() for call in calls) == 12  # the slow ones still wait
        finally:
            for call in calls:
                call.cancel()


def test_a_call_waiting_for_a_place_leaves_when_its_deadline_passes() -> None:
    command = [sys.executable, "-m", "toolnexus", "serve", f"{TOOLS}:toolkit"]
    client = McpClient(command[0], command[1:], name="one", max_in_flight=1, max_queued=1)
    # The host's grace after the deadline is generous: on a busy machine the waiting
    # call's own answer may take longer than the default 100 ms to come back, and it is
    # that answer (the call left the queue) this test reads, not the host's.
    grace_ms = int(TIMEOUT * 1000)
    with client, Host(Toolkit(client.tools()), grace_ms=grace_ms) as host:
        first = host.submit("one_wait", {"seconds": STALL})
        admission = client._admission
        assert admission is not None
        assert wait_until(lambda: admission.in_flight == 1)
        late = host.call("one_wait", {"seconds": STALL}, timeout_ms=300)  # a deadline to pass
        assert late.is_error and "did not answer in time" in late.output
        assert admission.waiting == 0  # it left the queue
        first.cancel()


def test_limits_that_are_not_counts_are_refused_naming_the_place() -> None:
    with pytest.raises(ValueError, match=r"mcpServers\.x\.maxInFlight: must be at least 1"):
        McpSource({"mcpServers": {"x": served(maxInFlight=0)}})
    with pytest.raises(ValueError, match=r"mcpServers\.x\.maxQueued: must be a count"):
        McpSource({"mcpServers": {"x": served(maxQueued="many")}})
