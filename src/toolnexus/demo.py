"""The bundled demo: the three scenarios of the ToolContext reference page, run live.

``python -m toolnexus demo`` prints each scenario and what the tool answered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cancellation import CancellationTokenSource
from .context import ToolContext
from .result import ToolResult
from .suspension import Answer, Request

__all__ = ["crunch", "deploy", "fetchish", "run"]


def crunch(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    """Count up to ``steps``, stopping early when the call is cancelled."""
    done = 0
    for _ in range(int(args["steps"])):
        if ctx is not None and ctx.is_cancelled:
            return ToolResult.error(f"cancelled after {done} step(s)")
        done += 1
    return ToolResult.ok(f"completed {done} step(s)")


def fetchish(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    """Pretend to fetch ``url`` within the caller's budget (30 s when unset)."""
    budget = ctx.timeout_ms if ctx is not None and ctx.timeout_ms is not None else 30_000
    if budget < 100:
        return ToolResult.error(f"budget {budget}ms is too small to try")
    return ToolResult.ok(f"fetched {args['url']} within {budget}ms")


def deploy(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    """Ask which environment to deploy to, then deploy there."""
    answer = ctx.answer if ctx is not None else None
    if answer is not None:
        if not answer.ok:
            return ToolResult.error(f"declined: {answer.reason or 'no reason'}")
        env = (answer.data or {}).get("env", "unknown")
        return ToolResult.ok(f"deployed to {env}")
    return ToolResult.pending(Request("input", "Which environment?"))


def run(write: Callable[[str], object] = print) -> int:
    """Run the three scenarios, writing one line per step; return 0 when all behave."""
    write("1. Respecting cancellation")
    write(f"   crunch(steps=3), no context     -> {crunch({'steps': 3})!r}")
    source = CancellationTokenSource()
    source.cancel()
    stopped = crunch({"steps": 3}, ToolContext(cancellation_token=source.token))
    write(f"   crunch(steps=3), cancelled      -> {stopped!r}")

    write("2. Honouring the caller's timeout")
    for label, ctx in (("5000 ms", ToolContext(5000)), ("10 ms", ToolContext(10)),
                       ("unset", ToolContext()), ("no context", None)):
        write(f"   fetchish('/a'), {label:<14} -> {fetchish({'url': '/a'}, ctx)!r}")

    write("3. A suspension, answered")
    first = deploy({})
    request = ToolResult.pending_of(first)
    assert request is not None
    write(f"   deploy() asks                   -> {first!r}")
    write(f"   the request, as plain JSON      -> {request.to_json()}")
    answered = deploy({}, ToolContext(answer=Answer.accept(request, {"env": "staging"})))
    write(f"   answered env=staging            -> {answered!r}")
    refused = deploy({}, ToolContext(answer=Answer.decline(request)))
    write(f"   declined                        -> {refused!r}")
    return 0
