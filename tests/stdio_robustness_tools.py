"""The tools tests/test_mcp_stdio_robustness.py serves over stdio
(``python -m toolnexus serve tests/stdio_robustness_tools.py:toolkit``).

A module of its own, importing no pytest: every server that test starts imports it.
"""

from __future__ import annotations

import json
import threading

from timing import TIMEOUT
from toolnexus import Request, Toolkit, ToolResult, tool
from toolnexus._context import ToolContext

_stats_lock = threading.Lock()
_invocations = 0
_peak_threads = 0
_never = threading.Event()  # nothing sets it: waits on it are plain blocking work
_released = threading.Event()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def deploy(ctx: ToolContext) -> ToolResult:
    """Ask which environment, then deploy there."""
    if ctx.answer is not None:
        return ToolResult.ok(f"deployed to {ctx.answer.value('env', str)}")
    schema = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}
    return ToolResult.pending(Request("input", "Which environment?", data={"schema": schema}))


@tool
def sleepy(ms: int) -> str:
    """Work ms milliseconds, never looking at the token; counts itself and the threads."""
    global _invocations, _peak_threads
    with _stats_lock:
        _invocations += 1
        _peak_threads = max(_peak_threads, threading.active_count())
    _never.wait(ms / 1000)  # stands for ms of work that ignores cancellation
    return f"slept {ms} ms"


@tool
def stats() -> str:
    """How many sleepy calls started, and the most threads one of them saw."""
    with _stats_lock:
        return json.dumps({"invocations": _invocations, "peak_threads": _peak_threads})


@tool
def hold(pad: str) -> str:
    """Hold the call (and its arguments) until release is called."""
    _released.wait(TIMEOUT)
    return f"held {len(pad)} bytes"


@tool
def release() -> str:
    """Let the held calls finish."""
    _released.set()
    return "released"


@tool
def stubborn() -> str:
    """Ignore cancellation for an hour."""
    _never.wait(3600)
    return "never"


@tool
def unwritable(kind: str) -> ToolResult:
    """Answer with text JSON cannot carry as UTF-8, or a structured value it cannot carry."""
    if kind == "surrogate":
        return ToolResult.ok("bad \udcff byte")
    return ToolResult("x", False, {"structuredContent": {"v": float("nan")}})


toolkit = Toolkit([add, deploy, sleepy, stats, hold, release, stubborn, unwritable])
