"""The tools tests/test_mcp_stdio.py and tests/test_mcp_interop.py serve over stdio
(``python -m toolnexus serve tests/stdio_tools.py:toolkit``).

A module of its own, importing no pytest: every server those tests start imports it.
"""

from __future__ import annotations

import os
import sys
import threading

from timing import TIMEOUT
from toolnexus import Request, Toolkit, ToolResult, tool
from toolnexus._context import ToolContext

_cancel_seen = threading.Event()
_cancel_outcome: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case the text (and print noise on stdout, both ways)."""
    print("noise from print()")
    sys.stdout.flush()
    os.write(1, b"noise written to fd 1\n")
    return text.upper()


@tool
def wait_for_cancel(ctx: ToolContext) -> str:
    """Report that it started, then wait for the call to be cancelled."""
    ctx.report_progress(1, None, "started")
    cancelled = ctx.cancellation_token.wait(TIMEOUT)
    _cancel_outcome.append("cancelled" if cancelled else "not cancelled")
    _cancel_seen.set()
    return "finished"


@tool
def last_cancel() -> str:
    """What the last wait_for_cancel call saw."""
    _cancel_seen.wait(TIMEOUT)
    return _cancel_outcome[-1] if _cancel_outcome else "nothing yet"


_never = threading.Event()  # nothing sets it: waits on it are plain blocking work


@tool
def stubborn(ctx: ToolContext) -> str:
    """Report that it started, then ignore cancellation for an hour."""
    ctx.report_progress(1, None, "started")
    _never.wait(3600)  # blocks like real work that never checks its token
    return "never"


@tool
def nap(ms: int) -> str:
    """Sleep ms milliseconds, then answer."""
    _never.wait(ms / 1000)  # stands for ms of work
    return f"slept {ms} ms"


@tool
def chatty(ctx: ToolContext) -> str:
    """Log once at each of two levels, then answer."""
    ctx.report_log("debug", "details")
    ctx.report_log("warning", {"disk": "nearly full"}, "fs")
    return "logged"


@tool
def steps(count: int, ctx: ToolContext) -> str:
    """Report progress count times, then answer."""
    for i in range(1, count + 1):
        ctx.report_progress(i, count, f"step {i}")
    return f"{count} steps"


@tool
def deploy(ctx: ToolContext) -> ToolResult:
    """Ask which environment, then deploy there."""
    if ctx.answer is not None:
        return ToolResult.ok(f"deployed to {ctx.answer.data['env']}")
    schema = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}
    return ToolResult.pending(Request("input", "Which environment?", data={"schema": schema}))


toolkit = Toolkit([add, shout, wait_for_cancel, last_cancel, stubborn, nap, steps, deploy, chatty])
