"""The loop rule: what a host does with a suspension, as plain functions.

One place for the rule every driver follows (the :class:`~toolnexus.host.Host`, the MCP
session): an ok answer runs the same tool with the same arguments once more with
``ctx.answer`` set; a retry that suspends again is the error ``unresolved: <prompt>``
(never a loop); an answer that is not ok (declined, cancelled, expired, for another
request) is the error ``declined/expired: <prompt>``. A resume from outside the process is
checked before the tool runs: the answer must echo the request's id, the request must not
have expired, and ``answer.data`` must fit ``request.data["schema"]`` when there is one.

No threads, no I/O, no clock but the request's own expiry check.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from .errors import WireFormatError
from .result import ToolResult
from .suspension import Answer, Request

__all__ = [
    "Refused",
    "answer_refusal",
    "check_answer",
    "check_resume",
    "coerce_answer",
    "coerce_request",
    "declined",
    "declined_text",
    "schema_problem",
    "settle_retry",
    "unresolved",
    "unresolved_text",
]

_log = logging.getLogger("toolnexus")


# --------------------------------------------------------------------------- the texts


def declined_text(request: Request) -> str:
    """``declined/expired: <prompt>``: the text of an answer that is not ok."""
    return f"declined/expired: {request.prompt}"


def unresolved_text(request: Request) -> str:
    """``unresolved: <prompt>``: the text of a retry that suspended again."""
    return f"unresolved: {request.prompt}"


def declined(request: Request) -> ToolResult:
    """The error result for an answer that is not ok (declined, cancelled, expired)."""
    return ToolResult.error(declined_text(request))


def unresolved(result: ToolResult) -> ToolResult:
    """The error result for a retry that suspended again on ``result``'s request."""
    request = ToolResult.pending_of(result)
    if request is None:
        return ToolResult.error(f"unresolved: {result.output}")
    return ToolResult.error(unresolved_text(request))


def settle_retry(result: ToolResult, answer: Answer | None) -> ToolResult:
    """What a run returns once the rule applies: a run given an ``answer`` (a retry) that
    suspends again becomes ``unresolved: <prompt>``; anything else stands."""
    if answer is not None and result.is_pending:
        return unresolved(result)
    return result


# --------------------------------------------------------------------------- the answer


class Refused:
    """Asking ``wait_for`` gave no usable answer: it raised, ran out of its budget, or the
    request had expired. ``reason`` says which (for logs)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<Refused {self.reason}>"


def answer_refusal(request: Request, answer: object) -> str | None:
    """Why an answer to ``request`` is not ok (loop rule 1), or None when it is.

    Not ok: a :class:`Refused`, something that is not an :class:`Answer`, an answer for
    another request, a declined/cancelled/expired answer, or a request past its
    ``expiresAt``.
    """
    if isinstance(answer, Refused):
        return answer.reason
    if not isinstance(answer, Answer):
        _log.warning(
            "toolnexus host: wait_for returned %s, not an Answer; treated as declined",
            type(answer).__name__,
        )
        return "not an Answer"
    if answer.id != request.id:
        return "id mismatch"
    if not answer.ok:
        return answer.reason or "declined"
    if request.is_expired():
        return "expired"
    return None


def schema_problem(request: Request, answer: Answer) -> str | None:
    """Check ``answer.data`` against ``request.data["schema"]``; the problem text or None."""
    schema = request.data.get("schema") if request.data is not None else None
    if schema is None:
        return None
    from .validation import Validator  # only hosts whose requests carry a schema pay

    try:
        validator = Validator(schema)
    except ValueError as exc:
        return f"the request's data.schema cannot be used to check the answer: {exc}"
    data = dict(answer.data) if answer.data is not None else {}
    problems = validator.errors(data)
    if not problems:
        return None
    return f"invalid answer to {request.prompt!r}: " + "; ".join(problems)


def check_answer(request: Request, answer: object) -> ToolResult | Answer:
    """Loop rule 1: the answer to retry with, or the error result to return instead."""
    if answer_refusal(request, answer) is not None:
        return declined(request)
    assert isinstance(answer, Answer)
    problem = schema_problem(request, answer)
    if problem is not None:
        return ToolResult.error(problem)
    return answer


# --------------------------------------------------------------------------- resume


def coerce_request(value: object) -> Request:
    """A :class:`Request`, its wire dict or its JSON -> the request.

    Raises :class:`~toolnexus.errors.WireFormatError` when malformed, ``TypeError`` for
    another type.
    """
    if isinstance(value, Request):
        return value
    if isinstance(value, Mapping):
        return Request.from_dict(value)
    if isinstance(value, (str, bytes, bytearray)):
        return Request.from_json(value)
    raise TypeError(
        f"request must be a Request, its wire dict or its JSON, got {type(value).__name__}"
    )


def coerce_answer(value: object) -> Answer:
    """An :class:`Answer`, its wire dict or its JSON -> the answer (as :func:`coerce_request`)."""
    if isinstance(value, Answer):
        return value
    if isinstance(value, Mapping):
        return Answer.from_dict(value)
    if isinstance(value, (str, bytes, bytearray)):
        return Answer.from_json(value)
    raise TypeError(
        f"answer must be an Answer, its wire dict or its JSON, got {type(value).__name__}"
    )


def check_resume(request: object, answer: object) -> ToolResult | tuple[Request, Answer]:
    """Loop rule 2, before the tool runs again: the checked pair, or the error result.

    The answer must echo the request's id, the request must not have expired, the answer
    must be ok (else ``declined/expired: <prompt>``) and fit ``data.schema``.
    """
    try:
        req = coerce_request(request)
        ans = coerce_answer(answer)
    except WireFormatError as exc:
        return ToolResult.error(f"cannot resume: {exc}")
    if ans.id != req.id:
        return ToolResult.error(
            f"answer id {ans.id!r} does not match request id {req.id!r}; an answer must "
            "echo the id of the request it resolves (the tool was not run)"
        )
    if req.is_expired():
        return ToolResult.error(
            f"request {req.id!r} expired at {req.expires_at}; the answer came too late "
            "(the tool was not run)"
        )
    if not ans.ok:
        return declined(req)
    problem = schema_problem(req, ans)
    if problem is not None:
        return ToolResult.error(problem)
    return req, ans
