"""Helpers for tool authors' unit tests — no host, no threads, no event loop needed.

:func:`drive` runs a tool, answers each question it asks with the next scripted answer and
hands back the final result and the requests it saw, so a test of a human-in-the-loop tool
is three lines. It follows the host's loop rule: a "no" ends the call with
``declined/expired: <prompt>`` without running the tool again, as in production.
:func:`cancelled_context` builds the context a "does my tool stop when
cancelled?" test needs.

Example::

    from toolnexus.testing import drive

    def test_deploy_asks_for_the_environment():
        run = drive(deploy, {}, [{"env": "staging"}])
        assert run.requests[0].prompt == "Which environment?"
        assert run.result.output == "deployed to staging"
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ._cancellation import CancellationTokenSource
from ._context import ToolContext
from ._frozen import sealed
from ._result import ToolResult
from ._suspension import Answer, Request
from .errors import InvalidTypeError, InvalidValueError

__all__ = ["Drive", "cancelled_context", "drive"]

ScriptedAnswer = Answer | Mapping[str, Any] | bool | Callable[[Request], Any]
"""What :func:`drive` accepts as an answer: an :class:`Answer` (used as is), a mapping (an
ok answer carrying that data), ``True`` (ok, no data), ``False`` (declined), or a function
of the request returning one of those."""

_loop_rule: Any = None


def _rule() -> Any:
    global _loop_rule
    if _loop_rule is None:
        from . import _loop_rule as loop_rule  # lazily: a test that never answers does not pay

        _loop_rule = loop_rule
    return _loop_rule


@sealed
@dataclass(frozen=True, slots=True)
class Drive:
    """What :func:`drive` saw: the final result and every question on the way.

    Attributes:
        result: the tool's last result — still a pending one when the scripted answers ran
            out before the tool stopped asking.
        requests: every request the tool suspended on, in order.
        answers: the answers :func:`drive` gave, in order (one per request answered).

    Example::

        run = drive(deploy, {}, [True])
        assert len(run.requests) == 1 and run.answers[0].ok
    """

    result: ToolResult
    requests: tuple[Request, ...]
    answers: tuple[Answer, ...]


def drive(
    tool: Callable[..., Any],
    args: Mapping[str, Any] | None = None,
    answers: Iterable[ScriptedAnswer] = (),
    *,
    ctx: ToolContext | None = None,
    max_rounds: int = 1,
) -> Drive:
    """Run ``tool`` and answer each suspension with the next scripted answer, following the
    host's loop rule.

    ``tool`` is a :class:`~toolnexus.Tool` (arguments are validated as a host would)
    or any contract callable ``fn(args, ctx)`` returning a :class:`ToolResult` (an
    ``async def`` one is run to completion). Each run after an answer gets ``ctx`` (default:
    an empty :class:`ToolContext`) with ``answer`` set; answers echo the request's id unless
    you pass an :class:`Answer` yourself.

    As a host does: a "no" (``False``, a declined/cancelled/expired answer, an ``approval``
    with ``approved: false``, an answer for another request) ends the run with
    ``declined/expired: <prompt>`` — ``metadata["reason"]`` says which — and the tool is
    not run again; an answer that breaks the request's ``data["schema"]`` ends it with the
    host's ``invalid answer ...`` error. A tool may take ``max_rounds`` answers (the host
    option; default: as many as there are scripted answers, so a tool that asks several
    questions can be tested end to end); a retry that still asks after the last round is
    ``unresolved: <prompt>``. When the scripted answers run out first, the last result is
    the pending one. To test what a tool itself does with a refusal — no host ever hands it
    one — call it directly: ``tool(args, ToolContext(answer=Answer.decline(request)))``.

    Returns a :class:`Drive`. Raises ``TypeError`` when the tool returns something other
    than a :class:`ToolResult` (decorate it with ``@tool`` to get return normalisation) or
    an answer has an unsupported type.

    Example::

        run = drive(deploy, {}, [{"env": "staging"}])
        assert run.result.output == "deployed to staging"
        assert run.requests[0].kind == "input"
    """
    if not callable(tool):
        raise InvalidTypeError(f"drive() takes a tool or a callable, got {type(tool).__name__}")
    base = ctx if ctx is not None else ToolContext()
    if not isinstance(base, ToolContext):
        raise InvalidTypeError(f"ctx must be a ToolContext or None, got {type(base).__name__}")
    call_args = dict(args) if args is not None else {}
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise InvalidValueError(f"max_rounds must be an int >= 1, got {max_rounds!r}")
    script = iter(answers)
    requests: list[Request] = []
    given: list[Answer] = []
    result = _run(tool, call_args, base)
    while True:
        request = ToolResult.pending_of(result)
        if request is None:
            break
        requests.append(request)
        try:
            scripted = next(script)
        except StopIteration:
            break
        if len(given) >= max_rounds:
            result = _rule().unresolved(result)
            break
        answer = _as_answer(scripted, request, len(given))
        given.append(answer)
        checked = _rule().check_answer(request, answer)
        if isinstance(checked, ToolResult):  # a "no", or data the question did not ask for
            result = checked
            break
        result = _run(tool, call_args, base.with_answer(checked))
    return Drive(result, tuple(requests), tuple(given))


def cancelled_context(timeout_ms: int | None = None) -> ToolContext:
    """A :class:`ToolContext` whose token is already cancelled.

    Example::

        result = crunch({"steps": 3}, cancelled_context())
        assert result.output == "cancelled after 0 step(s)"
    """
    source = CancellationTokenSource()
    source.cancel()
    return ToolContext(timeout_ms, source.token)


def _run(tool: Callable[..., Any], args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    value = tool(args, ctx)
    if inspect.isawaitable(value):
        from ._aio import run_blocking as _run_blocking

        async def wait() -> Any:
            return await value

        value = _run_blocking(wait)
    if not isinstance(value, ToolResult):
        raise InvalidTypeError(
            f"drive(): the tool returned {type(value).__name__}, not a ToolResult; return "
            "ToolResult.ok(...)/error(...)/pending(...) or decorate the function with @tool"
        )
    return value


def _as_answer(scripted: Any, request: Request, index: int) -> Answer:
    if callable(scripted) and not isinstance(scripted, (Answer, Mapping)):
        scripted = scripted(request)
    if isinstance(scripted, Answer):
        return scripted
    if isinstance(scripted, bool):
        return Answer.accept(request) if scripted else Answer.decline(request)
    if isinstance(scripted, Mapping):
        return Answer.accept(request, scripted)
    raise InvalidTypeError(
        f"answer {index} must be an Answer, a mapping (ok with that data), a bool or a "
        f"function of the request; got {type(scripted).__name__}"
    )
