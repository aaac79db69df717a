"""Long-running tools: progress, cancellation (Ctrl-C), and deadlines that hold.

Try them from the folder above ``examples/``::

    toolnexus call examples/slow.py count to=50             # Ctrl-C stops it (exit 130)
    toolnexus call examples/slow.py stubborn seconds=5 --timeout 300     # exit 124
    toolnexus call examples/slow.py nap seconds=0.5         # an async tool

``count`` writes ``count: started`` to stderr when it begins, so a script (or a test) can
wait for it before pressing Ctrl-C by signal.
"""

from __future__ import annotations

import asyncio
import sys
import time

from toolnexus import ToolContext, ToolResult, tool


@tool(read_only=True)
def count(to: int = 50, ctx: ToolContext | None = None) -> ToolResult:
    """Count to a number, one step every 100 ms, stopping when the call is cancelled.

    Args:
        to: the number to count to.
    """
    # Look at the token before saying "started": the host answers a tool that never looked
    # at it "cancelled by the caller" at once, instead of waiting for the tool's own words.
    if ctx is not None and ctx.cancellation_token.is_cancellation_requested:
        return ToolResult.error("cancelled after 0 step(s)")
    print("count: started", file=sys.stderr, flush=True)
    done = 0
    for step in range(to):
        if ctx is not None:
            ctx.report_progress(step, to)
            # Waiting on the token is the pause between steps and the cancellation check.
            if ctx.cancellation_token.wait(0.1):
                return ToolResult.error(f"cancelled after {done} step(s)")
        else:
            time.sleep(0.1)
        done += 1
    return ToolResult.ok(f"counted to {done}")


@tool(read_only=True)
def stubborn(seconds: float = 5.0) -> str:
    """Sleep, ignoring cancellation entirely: the host's deadline still holds.

    Args:
        seconds: how long to sleep.
    """
    print("stubborn: started", file=sys.stderr, flush=True)
    time.sleep(seconds)
    return f"slept {seconds:g} s"


@tool(read_only=True)
async def nap(seconds: float = 0.5) -> str:
    """Sleep asynchronously; a timeout or Ctrl-C cancels it at once.

    Args:
        seconds: how long to nap.
    """
    await asyncio.sleep(seconds)
    return f"napped {seconds:g} s"
