"""The tools the Temporal tests run (tests/test_temporal.py) on `toolnexus worker`
processes: what a run does is left as files in the folder TOOLNEXUS_TEST_RUNS names, where
the test reads it — ``started-<label>-<pid>`` when a tool starts; a tool that holds waits
for ``go-<label>``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool

WAIT_S = 60.0  # the longest any tool here waits for the test


def _runs() -> Path:
    return Path(os.environ["TOOLNEXUS_TEST_RUNS"])


def _started(label: str) -> None:
    (_runs() / f"started-{label}-{os.getpid()}").touch()


def _hold(label: str, ctx: ToolContext | None) -> bool:
    """Wait for ``go-<label>``: True when it came, False when the call was cancelled first
    (or, without a context, when ``WAIT_S`` passed)."""
    pause = ctx.cancellation_token if ctx is not None else None
    for _ in range(int(WAIT_S / 0.02)):
        if (_runs() / f"go-{label}").exists():
            return True
        if pause is not None:
            if pause.wait(0.02):
                return False
        else:
            threading.Event().wait(0.02)  # a tool that ignores its token
    return False


@tool(read_only=True)
def where(label: str) -> str:
    """The worker's process id, once two calls with this label run at once."""
    _started(label)
    for _ in range(int(WAIT_S / 0.02)):
        if len(list(_runs().glob(f"started-{label}-*"))) >= 2:
            break
        threading.Event().wait(0.02)
    return str(os.getpid())


@tool
def stubborn(label: str) -> str:
    """Ignores its token: holds until the test says go, whatever happens."""
    _started(label)
    _hold(label, None)
    (_runs() / f"finished-{label}").touch()
    return "late"


@tool
def listens(label: str, ctx: ToolContext) -> str:
    """Waits for its call to be cancelled, and says so in a file when it is."""
    _started(label)
    if ctx.cancellation_token.wait(WAIT_S):
        (_runs() / f"saw-cancel-{label}-{os.getpid()}").touch()
        return "cancelled"
    return "never cancelled"


@tool
def approve(env: str, ctx: ToolContext) -> ToolResult:
    """Deploys once someone approves."""
    if ctx.answer is None:
        _started(f"asked-{env}")
        return ToolResult.pending(Request("approval", f"Deploy to {env}?"))
    (_runs() / f"ran-{env}-{os.getpid()}-{os.urandom(4).hex()}").touch()
    return ToolResult.ok(f"deployed to {env} by {os.getpid()}")


@tool(idempotent=True)
def again(label: str, ctx: ToolContext) -> str:
    """Safe to run twice: holds until the test says go."""
    _started(label)
    return f"done by {os.getpid()}" if _hold(label, ctx) else "cancelled"


@tool
def once(label: str, ctx: ToolContext) -> str:
    """Not safe to run twice: holds until the test says go."""
    _started(label)
    return f"done by {os.getpid()}" if _hold(label, ctx) else "cancelled"


@tool
def steps(label: str, ctx: ToolContext) -> str:
    """Reports that it is halfway, then holds until the test says go."""
    _started(label)
    ctx.report_progress(1, 2, "halfway")
    return "all done" if _hold(label, ctx) else "cancelled"


toolkit = Toolkit([where, stubborn, listens, approve, again, once, steps])
