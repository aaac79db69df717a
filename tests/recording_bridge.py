"""A call bridge for tests that keeps each line it delivers, and the line that starts a
call through it (tests/test_fast_paths.py, tests/test_mcp_call_entry.py)."""

from __future__ import annotations

import json
import threading
from typing import Any

from toolnexus import Toolkit
from toolnexus.mcp import ServerOptions
from toolnexus.mcp._server._bridge import CallBridge, CallEntry, InflightBytes, LazyHost
from toolnexus.mcp._server._session import Send, ServerSession


class RecordingBridge(CallBridge):
    """A bridge over ``toolkit`` that keeps each delivered line; ``delivered`` is set by
    each delivery."""

    def __init__(self, toolkit: Toolkit) -> None:
        options = ServerOptions()
        super().__init__(
            ServerSession(toolkit, options), LazyHost(toolkit, options.host), InflightBytes(1 << 20)
        )
        self.lines: list[bytes] = []
        self.delivered = threading.Event()

    def _deliver(self, send: Send, where: Any) -> None:
        self.lines.append(send.to_bytes())
        self.delivered.set()


def initialized(toolkit: Toolkit) -> RecordingBridge:
    """A bridge whose legacy client said ``initialize`` and ``initialized`` (their lines
    are not kept)."""
    bridge = RecordingBridge(toolkit)
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    bridge.feed(
        bridge.session.receive_line,
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode(),
    )
    bridge.feed(
        bridge.session.receive_line, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    )
    bridge.lines.clear()
    bridge.delivered.clear()
    return bridge


def started(bridge: CallBridge, request_id: int, name: str, args: dict[str, Any]) -> CallEntry:
    """Feed a legacy ``tools/call`` line and return the entry of the call it registers (not
    started yet)."""
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": args},
        }
    ).encode()
    with bridge.lock:
        later = bridge.dispatch(bridge.session.receive_line(line), None, len(line))
    [entry] = later
    assert isinstance(entry, CallEntry) and bridge.calls[entry.call_id] is entry
    return entry
