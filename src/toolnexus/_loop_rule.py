"""The loop rule: what a host does with a suspension, as plain functions.

One place for the rule every driver follows (the :class:`~toolnexus.Host`, the MCP
session): an ok answer runs the same tool with the same arguments once more with
``ctx.answer`` set; a retry that suspends again is the error ``unresolved: <prompt>``
(never a loop); an answer that is not ok (declined, cancelled, expired, for another
request) is the error ``declined/expired: <prompt>``. A resume (loop rule 2) is checked by
:class:`~toolnexus._binding.Binder` before the tool runs: the answer must be bound to that
very call, echo the request's id, be in time, fit ``data["schema"]`` and be used once.

No threads, no I/O, no clock but the request's own expiry check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ._log import LazyLogger
from ._result import ToolResult
from ._suspension import REASONS, SEVERAL, Answer, Request, answer_problem, decline_reason
from .errors import InvalidTypeError

__all__ = [
    "Refused",
    "answer_refusal",
    "check_answer",
    "coerce_answer",
    "declined",
    "declined_text",
    "forget_declined",
    "may_ask_again",
    "on_declined",
    "schema_problem",
    "settle_retry",
    "unresolved",
    "unresolved_text",
]

_log = LazyLogger()  # logging loads with the first record, not with Host


# --------------------------------------------------------------------------- the texts


def declined_text(request: Request) -> str:
    """``declined/expired: <prompt>``: the text of an answer that is not ok."""
    return f"declined/expired: {request.prompt}"


def unresolved_text(request: Request) -> str:
    """``unresolved: <prompt>``: the text of a retry that suspended again."""
    return f"unresolved: {request.prompt}"


def declined(request: Request, reason: str = "declined") -> ToolResult:
    """The error result for an answer that is not ok: the text is always
    ``declined/expired: <prompt>``; ``metadata["reason"]`` says which it was
    (``"declined"``, ``"cancelled"`` or ``"expired"``).

    This is where a host gives a question up, so whoever asked it on the host's behalf and
    still holds it open (see :func:`on_declined`) hears it here, once."""
    if reason not in REASONS:
        reason = "declined"
    listener = _declined_listeners.pop(request.id, None)
    if listener is not None:
        try:
            listener(reason)
        except Exception:  # the listener's own failure never changes the call's result
            _log.exception("a listener of question %r failed", request.id)
    return ToolResult.error(declined_text(request), {"reason": reason})


# Who holds a question open outside the host, by the question's id (a plain dict: one
# set or pop is atomic, and most processes never hold one).
_declined_listeners: dict[str, Callable[[str], object]] = {}


def on_declined(request_id: str, listener: Callable[[str], object]) -> None:
    """Call ``listener(reason)`` when the host gives the question ``request_id`` up
    (:func:`declined`: a ``wait_for`` that declined or expired, a resume with an answer
    that is not ok). For a tool that asked on another's behalf and keeps that one waiting:
    an MCP client holding a legacy server's question answers the server at once, instead
    of when its own wait runs out. :func:`forget_declined` drops it once answered.

    Example::

        >>> heard = []
        >>> on_declined("q-1", heard.append)
        >>> from toolnexus import Request
        >>> declined(Request("approval", "Go?", id="q-1"), "expired").output, heard
        ('declined/expired: Go?', ['expired'])
    """
    _declined_listeners[request_id] = listener


def forget_declined(request_id: str) -> None:
    """Drop the listener of ``request_id`` (its question was answered, or it expired)."""
    _declined_listeners.pop(request_id, None)


def unresolved(result: ToolResult) -> ToolResult:
    """The error result for a retry that suspended again on ``result``'s request."""
    request = ToolResult.pending_of(result)
    if request is None:
        return ToolResult.error(f"unresolved: {result.output}")
    return ToolResult.error(unresolved_text(request))


def may_ask_again(answers: int, max_rounds: int) -> bool:
    """The one "how many rounds" decision: may a call that has taken ``answers`` answers
    and suspends again ask once more, when one call may take ``max_rounds`` answers?

    A fresh call (0 answers) always may; with the loop rule's ``max_rounds=1`` the retry
    after the first answer may not: it is ``unresolved: <prompt>``, never a loop.

    Example::

        >>> may_ask_again(0, 1), may_ask_again(1, 1), may_ask_again(1, 3)
        (True, False, True)
    """
    return answers < max_rounds


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
    return decline_reason(request, answer)  # the one meaning of "no"


def schema_problem(request: Request, answer: Answer) -> str | None:
    """Check an ok ``answer``: its shape for the request's kind (a ``"sampling"`` answer is
    a message, ``"roots"`` a list of roots, ``"several"`` one answer per request it asks,
    see :func:`~toolnexus._suspension.answer_problem`) and its data against
    ``request.data["schema"]``; the problem text or None."""
    shape = answer_problem(request, answer)
    if shape is not None:
        return shape
    if request.kind == SEVERAL:
        for each in request.requests():
            sub = answer.answer_to(each)
            problem = schema_problem(each, sub) if sub is not None and sub.ok else None
            if problem is not None:
                return problem
        return None
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
    refusal = answer_refusal(request, answer)
    if refusal is not None:
        return declined(request, "expired" if refusal in ("expired", "timed out") else refusal)
    assert isinstance(answer, Answer)
    problem = schema_problem(request, answer)
    if problem is not None:
        return ToolResult.error(problem)
    return answer


# --------------------------------------------------------------------------- resume


def coerce_answer(value: object) -> Answer:
    """An :class:`Answer`, its wire dict or its JSON -> the answer.

    Raises :class:`~toolnexus.errors.WireFormatError` when malformed, ``TypeError`` for
    another type.
    """
    if isinstance(value, Answer):
        return value
    if isinstance(value, Mapping):
        return Answer.from_dict(value)
    if isinstance(value, (str, bytes, bytearray)):
        return Answer.from_json(value)
    raise InvalidTypeError(
        f"answer must be an Answer, its wire dict or its JSON, got {type(value).__name__}"
    )
