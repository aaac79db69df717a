"""The bundled example toolkit and its scenarios: ``toolnexus demo``.

:data:`toolkit` holds the reference page's ``crunch``, ``fetchish`` and ``deploy``, plus an
``async`` tool (``nap``) and one that ignores its cancellation token (``stubborn``). It is
also a ready-made REF for the command line::

    toolnexus list toolnexus.demo:toolkit
    toolnexus call toolnexus.demo:toolkit crunch steps=3
    toolnexus call toolnexus.demo:toolkit deploy          # answers a question at the prompt
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from .context import ToolContext
from .result import ToolResult
from .suspension import Answer, Request
from .toolkit import Toolkit
from .tools import tool

__all__ = ["ENVIRONMENT_SCHEMA", "crunch", "deploy", "fetchish", "nap", "run", "stubborn",
           "toolkit"]

ENVIRONMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "env": {
            "type": "string",
            "enum": ["staging", "production"],
            "default": "staging",
            "description": "where to deploy",
        }
    },
    "required": ["env"],
}
"""The restricted JSON Schema ``deploy`` attaches to its question (``request.data["schema"]``)."""


@tool(read_only=True)
def crunch(steps: int, ctx: ToolContext | None = None) -> ToolResult:
    """Count up to steps (a millisecond each), stopping early when cancelled.

    Args:
        steps: how many steps to take.
    """
    done = 0
    for _ in range(steps):
        if ctx is not None and ctx.is_cancelled:
            return ToolResult.error(f"cancelled after {done} step(s)")
        if ctx is not None:
            # The step's "work" is a short wait on the token: cancellation cuts it short.
            ctx.cancellation_token.wait(0.001)
            ctx.report_progress(done + 1, steps)
        else:
            time.sleep(0.001)
        done += 1
    return ToolResult.ok(f"completed {done} step(s)")


@tool(read_only=True)
def fetchish(url: str, ctx: ToolContext | None = None) -> ToolResult:
    """Pretend to fetch a url within the caller's budget (30 s when unset).

    Args:
        url: what to fetch.
    """
    budget = ctx.timeout_ms if ctx is not None and ctx.timeout_ms is not None else 30_000
    if budget < 100:
        return ToolResult.error(f"budget {budget}ms is too small to try")
    return ToolResult.ok(f"fetched {url} within {budget}ms")


@tool(destructive=True)
def deploy(ctx: ToolContext | None = None) -> ToolResult:
    """Ask which environment to deploy to, then deploy there."""
    answer = ctx.answer if ctx is not None else None
    if answer is not None:
        if not answer.ok:
            return ToolResult.error(f"declined: {answer.reason or 'no reason'}")
        env = (answer.data or {}).get("env", "unknown")
        return ToolResult.ok(f"deployed to {env}")
    return ToolResult.pending(
        Request("input", "Which environment?", data={"schema": ENVIRONMENT_SCHEMA})
    )


@tool(read_only=True)
async def nap(seconds: float = 0.05) -> str:
    """Sleep asynchronously; a timeout or a cancellation stops it at once.

    Args:
        seconds: how long to nap.
    """
    await asyncio.sleep(seconds)
    return f"napped {seconds:g} s"


@tool(read_only=True)
def stubborn(seconds: float = 0.5) -> str:
    """Sleep, ignoring cancellation entirely: only the host's deadline stops the wait.

    Args:
        seconds: how long to sleep.
    """
    time.sleep(seconds)
    return f"slept {seconds:g} s"


toolkit = Toolkit([crunch, fetchish, deploy, nap, stubborn])
"""The demo's tools, in the order ``toolnexus list toolnexus.demo:toolkit`` shows them."""


def run(write: Callable[[str], object] = print) -> int:
    """Run the scenarios, writing one line per step; return 0 when all behave."""
    from .cancellation import CancellationTokenSource

    write("1. A plain call")
    write(f"   crunch(steps=3)                 -> {crunch({'steps': 3})!r}")
    write(f"   nap(seconds=0.05), async        -> {nap({'seconds': 0.05})!r}")
    write("2. A cancelled call")
    source = CancellationTokenSource()
    source.cancel_after(0.05)
    stopped = crunch({"steps": 100_000}, ToolContext(cancellation_token=source.token))
    write(f"   crunch(steps=100000), cancelled -> {stopped!r}")

    write("3. Honouring the caller's timeout")
    for label, ctx in (("5000 ms", ToolContext(5000)), ("10 ms", ToolContext(10)),
                       ("unset", ToolContext()), ("no context", None)):
        write(f"   fetchish('/a'), {label:<14} -> {fetchish({'url': '/a'}, ctx)!r}")

    write("4. A suspension, answered")
    first = deploy({})
    request = ToolResult.pending_of(first)
    assert request is not None
    write(f"   deploy() asks                   -> {first!r}")
    answered = deploy({}, ToolContext(answer=Answer.accept(request, {"env": "staging"})))
    write(f"   answered env=staging            -> {answered!r}")
    refused = deploy({}, ToolContext(answer=Answer.decline(request)))
    write(f"   declined                        -> {refused!r}")
    return 0
