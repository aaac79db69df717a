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

from ._context import ToolContext
from ._result import ToolResult
from ._suspension import Answer, Request
from ._toolkit import Toolkit
from ._tools import tool

__all__ = [
    "ENVIRONMENT_SCHEMA",
    "crunch",
    "deploy",
    "fetchish",
    "nap",
    "run",
    "stubborn",
    "toolkit",
]

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
        env = answer.value("env", str, "unknown")
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
    """Run the scenarios through a :class:`~toolnexus.Host`, one line per call.

    A plain call, a cancelled call, timeouts (one the tool honours, one it ignores) and a
    question answered three ways. Returns 0 when every call ended as the demo expects,
    1 (after saying which did not) otherwise. Takes about a second.

    Example::

        from toolnexus import _demo as demo
        assert demo.run(write=lambda line: None) == 0
    """
    from ._cancellation import CancellationTokenSource
    from ._host import Host, ToolEvent

    events: list[ToolEvent] = []
    surprises: list[str] = []

    def show(label: str, result: ToolResult, *expected: str) -> None:
        event = events[-1]
        text = result.output.replace("\n", " ")
        if len(text) > 60:
            text = text[:59] + "…"
        write(f"   {label:<32} {event.outcome:<9} {event.duration_ms:>4.0f} ms  {text}")
        if event.outcome not in expected:
            wanted = " or ".join(expected)
            surprises.append(f"{label}: expected {wanted}, got {event.outcome}")

    answers: list[Callable[[Request], Answer]] = [
        lambda request: Answer.accept(request, {"env": "production"}),
        Answer.decline,
    ]

    def wait_for(request: Request) -> Answer:
        # Stands in for a human: the first question gets an answer, the second a "no".
        return answers.pop(0)(request)

    write("toolnexus demo: the tools of toolnexus.demo:toolkit, run through a Host")
    write("")
    with (
        Host(toolkit, on_event=events.append) as host,
        Host(toolkit, wait_for=wait_for, on_event=events.append) as asking,
    ):
        write("1. A plain call")
        show('crunch {"steps": 3}', host.call("crunch", {"steps": 3}), "ok")
        show('nap {"seconds": 0.05} (async)', host.call("nap", {"seconds": 0.05}), "ok")

        write("2. A cancelled call: the caller cancels after 100 ms, as Ctrl-C does")
        with CancellationTokenSource() as source:
            source.cancel_after(0.1)
            result = host.call("crunch", {"steps": 100_000}, cancellation_token=source.token)
        show('crunch {"steps": 100000}', result, "cancelled")

        write("3. Timeouts: the tool sees its budget, and the host's deadline holds")
        show(
            'fetchish {"url": "/a"}, 5000 ms',
            host.call("fetchish", {"url": "/a"}, timeout_ms=5000),
            "ok",
        )
        show(
            'fetchish {"url": "/a"}, 10 ms',
            host.call("fetchish", {"url": "/a"}, timeout_ms=10),
            "error",  # the tool saw 10 ms and declined to try ...
            "timeout",  # ... or, on a machine too busy to start it in 10 ms, the host said so
        )
        show(
            'nap {"seconds": 10}, 200 ms',
            host.call("nap", {"seconds": 10}, timeout_ms=200),
            "timeout",
        )
        show(
            'stubborn {"seconds": 1}, 200 ms',
            host.call("stubborn", {"seconds": 1}, timeout_ms=200),
            "timeout",
        )
        write("   (stubborn ignores its token: after a short grace the host answered anyway)")

        write("4. A question, answered")
        pending = host.call("deploy", {})
        show("deploy {}", pending, "pending")
        request = ToolResult.pending_of(pending)
        if request is None:
            surprises.append("deploy did not ask")
        else:
            write("   (the question is plain JSON, request.to_json(): save it, resume anywhere)")
            resumed = host.resume(
                "deploy", {}, request.to_json(), Answer.accept(request, {"env": "staging"})
            )
            show("resumed later with env=staging", resumed, "ok")
        show("wait_for answers env=production", asking.call("deploy", {}), "ok")
        show("wait_for declines", asking.call("deploy", {}), "error")

    write("")
    write("Try it yourself (answer the question at the prompt; Ctrl-C cancels):")
    write("   toolnexus list toolnexus.demo:toolkit")
    write("   toolnexus call toolnexus.demo:toolkit deploy")
    write("   toolnexus call toolnexus.demo:toolkit crunch steps=100000")
    if surprises:
        write("")
        for surprise in surprises:
            write(f"unexpected: {surprise}")
        return 1
    return 0
