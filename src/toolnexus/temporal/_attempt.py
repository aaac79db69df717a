"""One attempt of a tool call on a worker, as a Temporal activity runs it: no Temporal here.

A worker runs every tool through a :class:`~toolnexus.Host` of its own, so the rules of a
local call hold on the worker too — the deadline (a tool that ignores its token is
answered on time and its thread abandoned and counted), cancellation reaching the tool's
token, progress, a tool's exception becoming an error result. This module is that
attempt, written without Temporal so the suite checks it everywhere:

- a first attempt is an ordinary call (:meth:`Host.acall`);
- an attempt with an answer runs the tool once more with ``ctx.answer`` set. The answer was
  checked already — bound to its call and used once — by the workflow that holds the
  question, so it goes in as an accepted answer, past the host's binding check;
- a pending result goes back without the worker host's binding (the workflow holds the
  question; the calling host binds what it hands out).

Wire forms are the contract's: arguments a JSON object, results and answers their wire
dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._binding import BINDING_KEY, Accepted
from .._result import ToolResult
from .._suspension import Answer, Request
from ..stores._answers import MemoryAnswerStore

if TYPE_CHECKING:
    from .._context import ProgressReporter
    from .._host import Host
    from .._toolkit import Toolkit

__all__ = ["ROUNDS_WITHOUT_LIMIT", "run_attempt", "worker_host"]

ROUNDS_WITHOUT_LIMIT = 1 << 30
"""A worker's host hands every question back: how many rounds a call takes is the
workflow's to decide (the calling host's ``max_rounds``)."""


def worker_host(toolkit: Toolkit, *, max_workers: int | None = None) -> Host:
    """The host a worker runs its tools on: a pending result always comes back (the
    workflow asks), and no answer store is opened (the workflow keeps answers single-use;
    a ``TOOLNEXUS_STORE`` set on a worker is not needed there)."""
    from .._host import Host

    extra: dict[str, Any] = {} if max_workers is None else {"max_workers": max_workers}
    return Host(toolkit, max_rounds=ROUNDS_WITHOUT_LIMIT, answer_store=MemoryAnswerStore(), **extra)


async def run_attempt(
    host: Host,
    name: str,
    args: Mapping[str, Any],
    *,
    timeout_ms: int | None,
    request: Mapping[str, Any] | None = None,
    answer: Mapping[str, Any] | None = None,
    round: int = 0,
    progress: ProgressReporter | None = None,
) -> dict[str, Any]:
    """Run ``name(args)`` once on ``host`` and return its result's wire dict.

    With ``answer`` (the wire dict of an answer to ``request``, the question the tool asked
    in the previous attempt, round ``round``) the tool runs again with ``ctx.answer`` set.
    Cancelling the awaiting task cancels the call (the tool's token) and re-raises, as
    :meth:`Host.acall` does.
    """
    if answer is None:
        result = await host.acall(name, dict(args), timeout_ms=timeout_ms, progress=progress)
    else:
        accepted = Accepted(Request.from_dict(request or {}), Answer.from_dict(answer), round)
        call = host._prepare_call(
            name,
            dict(args),
            timeout_ms,
            None,
            progress,
            None,
            None,
            resume=True,
            accepted=accepted,
        )
        result = await host._await(call)
    return _unbound(result).to_dict()


def _unbound(result: ToolResult) -> ToolResult:
    """``result`` without the worker host's binding: it binds nothing anyone can use."""
    if BINDING_KEY not in result.metadata:
        return result
    metadata = {k: v for k, v in result.metadata.items() if k != BINDING_KEY}
    return ToolResult(result.output, result.is_error, metadata, result.parts)
