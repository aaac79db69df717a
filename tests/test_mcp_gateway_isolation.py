"""Isolation: each upstream has its own bounded queue of calls in flight (``maxInFlight``,
``maxQueued`` in ``mcp.json``), so a slow upstream holds no more than those of the
gateway's workers; its other calls are refused at once, naming it, and every other
upstream's calls go on.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

import mcp_client_tools as tools
from timing import STALL, TIMEOUT, wait_until
from toolnexus import Host, Toolkit
from toolnexus.mcp import HttpServer, McpClient, McpSource

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
            # The other upstream answers every call meanwhile: the slow one's calls hold
            # none of the host's workers (four are written to its pipe, four wait for a
            # place on its client's own threads).
            assert host._pool.live == 0
            answers = [
                host.call("fast_add", {"a": i, "b": 1}, timeout_ms=int(TIMEOUT * 1000))
                for i in range(10)
            ]
            assert [r.output for r in answers] == [str(i + 1) for i in range(10)]
            assert sum(call.done() for call in calls) == 12  # the slow ones still wait
        finally:
            for call in calls:
                call.cancel()


def test_however_many_upstreams_are_slow_no_host_worker_is_held_for_them() -> None:
    # Two slow HTTP upstreams hold more calls between them than the host has workers: the
    # calls started for nobody waiting (as a gateway's server starts them) run on their
    # clients' own threads, so the host's workers stay free for the fast upstream.
    servers = [HttpServer(tools.toolkit, port=0) for _ in range(3)]
    for server in servers:
        server.start()
    config = {
        "mcpServers": {
            "slowa": {"url": servers[0].url, "maxInFlight": 4, "maxQueued": 2},
            "slowb": {"url": servers[1].url, "maxInFlight": 4, "maxQueued": 2},
            "fast": {"url": servers[2].url},
        }
    }
    try:
        with McpSource(config).connect() as source, Host(source.toolkit, max_workers=4) as host:
            calls = [
                host.submit(f"{name}_wait", {"seconds": STALL})
                for name in ("slowa", "slowb")
                for _ in range(8)
            ]
            try:
                # Per upstream: four reach it, two wait for a place, two end at once.
                assert wait_until(lambda: sum(call.done() for call in calls) == 4)
                busy = [call.result() for call in calls if call.done()]
                assert all(r.is_error and ": busy: " in r.output for r in busy)
                for name in ("slowa", "slowb"):
                    admission = source.client(name)._admission
                    assert admission is not None
                    assert wait_until(lambda a=admission: (a.in_flight, a.waiting) == (4, 2))
                    own = [
                        thread
                        for thread in threading.enumerate()
                        if thread.name.startswith(f"toolnexus-mcp-call-{name}-")
                    ]
                    assert len(own) == 6  # its calls' threads: maxInFlight + maxQueued
                assert host._pool.live == 0  # none of the host's four workers is held
                answers = [host.submit("fast_add", {"a": i, "b": 1}) for i in range(10)]
                outputs = [answer.result(timeout=TIMEOUT).output for answer in answers]
                assert outputs == [str(i + 1) for i in range(10)]
                assert sum(call.done() for call in calls) == 4  # the slow ones still wait
            finally:
                for call in calls:
                    call.cancel()
            ended = [call.result(timeout=TIMEOUT) for call in calls]
            assert all(r.is_error for r in ended)
    finally:
        for server in servers:
            server.shutdown()


def test_closing_a_source_ends_the_calls_on_its_clients_threads_and_the_threads() -> None:
    server = HttpServer(tools.toolkit, port=0)
    server.start()
    config = {"mcpServers": {"slow": {"url": server.url, "maxInFlight": 3, "maxQueued": 2}}}
    try:
        source = McpSource(config).connect()
        with source, Host(source.toolkit, max_workers=2) as host:
            calls = [host.submit("slow_wait", {"seconds": STALL}) for _ in range(5)]
            admission = source.client("slow")._admission
            assert admission is not None
            assert wait_until(lambda: (admission.in_flight, admission.waiting) == (3, 2))
            source.close()
            ended = [call.result(timeout=TIMEOUT) for call in calls]
            assert all(r.is_error and "closed" in r.output for r in ended), ended
            assert (admission.in_flight, admission.waiting) == (0, 0)
            assert not [
                thread
                for thread in threading.enumerate()
                if thread.name.startswith("toolnexus-mcp-call-slow-")
            ]
    finally:
        server.shutdown()


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
