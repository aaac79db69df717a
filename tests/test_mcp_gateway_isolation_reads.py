"""Isolation of an upstream's reads, prompts and completions: they take places in the
same bounded queue as its tool calls (``maxInFlight``, ``maxQueued``), are refused at
once as busy, naming the server, beyond it, and never hold one of the gateway's workers
while they wait on that server — so a server that never answers a read delays no other
server's reads, prompts or tools, nor the gateway's own tools.

The upstreams are ``tests/fake_mcp_upstream.py``: a read of ``hang://…`` is never
answered.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from timing import TIMEOUT, wait_until
from toolnexus import Host
from toolnexus.mcp import McpSource, federate

UPSTREAM = str(Path(__file__).with_name("fake_mcp_upstream.py"))
OFFER = {
    "tools": [{"name": "ping"}],
    "resources": [{"uri": "hang://1", "name": "hangs"}, {"uri": "f://1", "name": "fine"}],
    "prompts": [{"name": "p"}],
}


def upstream(tmp_path: Path, name: str, **entry: object) -> dict[str, object]:
    state = tmp_path / f"{name}.json"
    state.write_text(json.dumps(OFFER), encoding="utf-8")
    return {"command": sys.executable, "args": [UPSTREAM, str(state)], **entry}


@pytest.fixture
def config(tmp_path: Path) -> dict[str, Any]:
    return {
        "mcpServers": {
            "slow": upstream(tmp_path, "slow", maxInFlight=1, maxQueued=1),
            "fast": upstream(tmp_path, "fast"),
        }
    }


def own_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"toolnexus-mcp-call-{name}-")]


def test_reads_of_a_hanging_upstream_take_its_places_and_no_host_worker(
    config: dict[str, Any],
) -> None:
    with McpSource(config).connect() as source, Host(source.toolkit, max_workers=2) as host:
        federate(source)
        admission = source.client("slow")._admission
        assert admission is not None
        reads = [host.submit("resources/read", {"uri": "slow+hang://1"}) for _ in range(6)]
        try:
            # One reaches the server, one waits for a place, the four others end at once.
            assert wait_until(lambda: sum(call.done() for call in reads) == 4)
            busy = [call.result() for call in reads if call.done()]
            assert all(r.is_error and "MCP server slow: busy" in r.output for r in busy), busy
            assert "maxInFlight 1, maxQueued 1" in busy[0].output
            assert (admission.in_flight, admission.waiting) == (1, 1)
            # They wait on the slow client's own threads (its queue's size), none of the
            # host's workers.
            assert len(own_threads("slow")) == 2
            assert host._pool.live == 0
            # One queue for everything asked of the server: its prompt is busy too.
            prompt = host.submit("prompts/get", {"name": "slow_p"}).result(timeout=TIMEOUT)
            assert prompt.is_error and "MCP server slow: busy" in prompt.output
            # The other upstream answers its reads, prompts and tools meanwhile.
            for _ in range(5):
                read = host.submit("resources/read", {"uri": "fast+f://1"})
                assert read.result(timeout=TIMEOUT).output == "read f://1"
                got = host.submit("prompts/get", {"name": "fast_p"})
                assert got.result(timeout=TIMEOUT).output == "prompt p"
                called = host.submit("fast_ping", {})
                assert called.result(timeout=TIMEOUT).output == "called ping"
            assert sum(call.done() for call in reads) == 4  # the slow ones still wait
        finally:
            for call in reads:
                call.cancel()
        ended = [call.result(timeout=TIMEOUT) for call in reads]
        assert all(r.is_error for r in ended)
        assert wait_until(lambda: (admission.in_flight, admission.waiting) == (0, 0))


class Gateway:
    """``toolnexus serve mcp.json tools.py`` over stdio, spoken to as a legacy client:
    each answer handed to the one waiting for its id (an event per request)."""

    def __init__(self, *refs: str) -> None:
        command = [sys.executable, "-m", "toolnexus", "serve", *refs]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.lock = threading.Lock()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "test", "version": "0"}})  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if "id" in message and ("result" in message or "error" in message):
                self._box(message["id"]).put(message)

    def _box(self, request_id: int) -> queue.Queue[dict[str, Any]]:
        with self.lock:
            return self.answers.setdefault(request_id, queue.Queue())

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def start(self, method: str, params: dict[str, Any]) -> int:
        with self.lock:
            self.next_id += 1
            request_id = self.next_id
        self._box(request_id)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def answer(self, request_id: int) -> dict[str, Any]:
        return self._box(request_id).get(timeout=TIMEOUT)

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.answer(self.start(method, params))

    def close(self) -> None:
        self.process.kill()
        self.process.wait(TIMEOUT)


@pytest.fixture
def gateway(config: dict[str, Any], tmp_path: Path) -> Iterator[Gateway]:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    local = tmp_path / "local_tools.py"
    local.write_text(
        "from toolnexus import tool\n\n\n@tool\ndef local_echo(text: str) -> str:\n"
        '    """Echoes."""\n    return text\n',
        encoding="utf-8",
    )
    served = Gateway(str(path), str(local))
    try:
        yield served
    finally:
        served.close()


def test_more_hanging_reads_than_the_gateway_has_workers_delay_nothing_else(
    gateway: Gateway,
) -> None:
    # Far more reads of the hanging server than a gateway has workers (64): two hold its
    # places, every other one is answered busy at once, and the gateway's own tools and
    # the other server's reads and prompts still answer.
    held = [gateway.start("resources/read", {"uri": "slow+hang://1"}) for _ in range(80)]
    # (which two take the places is the server's order, not the sending order)
    assert wait_until(lambda: sum(not gateway._box(each).empty() for each in held) >= 78)
    answered = [each for each in held if not gateway._box(each).empty()]
    assert len(answered) == 78  # two hold the places: unanswered while the server hangs
    refused = [gateway.answer(request_id) for request_id in answered]
    # Refused for want of room at once: by the slow server's queue ("busy"), or, when the
    # gateway's own bound on waiting requests came first, by it ("server overloaded").
    odd = [
        answer
        for answer in refused
        if not any(word in answer["error"]["message"] for word in ("busy", "overloaded"))
    ]
    assert not odd, odd[:3]
    answer = gateway.ask("tools/call", {"name": "local_echo", "arguments": {"text": "hi"}})
    assert answer["result"]["content"][0]["text"] == "hi"
    answer = gateway.ask("resources/read", {"uri": "fast+f://1"})
    assert answer["result"]["contents"][0]["text"] == "read f://1"
    answer = gateway.ask("prompts/get", {"name": "fast_p"})
    assert answer["result"]["messages"][0]["content"]["text"] == "prompt p"
    answer = gateway.ask("tools/call", {"name": "fast_ping", "arguments": {}})
    assert answer["result"]["content"][0]["text"] == "called ping"
