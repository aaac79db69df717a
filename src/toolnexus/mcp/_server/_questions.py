"""The server's rules for a question over MCP — one rule for a plain call and a task:
which question a suspension becomes for this client (:func:`plan`: a legacy
``elicitation/create`` or ``sampling/createMessage`` request, a modern ``input_required``
result, or ``-32021`` when the client lacks the capability), the signed ``requestState``
issued and spent, and the answers read back (:class:`ServerQuestions`). The mapping of a
question to its MCP shape and back is :mod:`.._shared._questions`, which the client reads
too."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..._log import LazyLogger
from .._shared._codec import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_CLIENT_CAPABILITY,
    TOO_DEEP,
    nested_too_deep,
)
from .._shared._correlation import Pending
from .._shared._protocol import META_ANSWER_UNUSED, describe
from .._shared._questions import (
    ElicitationShape,
    Question,
    answer_from_response,
    arguments_digest,
    content_problem,
    form_of,
    open_state,
    question_params,
    question_problem,
    sign_state,
)
from ._types import (
    Action,
    Asking,
    Calls,
    CallState,
    ClientView,
    Reject,
    Send,
    StartCall,
    error,
    waits_on,
    who,
)

if TYPE_CHECKING:  # they load with the first question a server asks
    from ..._binding import Binder
    from ..._result import ToolResult
    from ..._suspension import Answer, Request

_log = LazyLogger()

__all__ = [
    "Planned",
    "ServerQuestions",
    "form_problem",
    "input_requests",
    "missing_capability",
    "plan",
    "shapes_of",
    "whole_answer",
]


# ---------------------------------------------------------------------- the server's rules
# One rule for a question a server asks — of a call's client (the session) and of a task's
# (``mcp/_server/_tasks.py``): how it is asked, what the client lacks, the answers read back.


class Planned(NamedTuple):
    """How a request (plain, or several) is asked of one client: each plain request's
    ``(method, params, shape)`` by its id — or what the client lacks (``missing``, the
    ``requiredCapabilities`` of a ``-32021``), or why MCP cannot ask it at all
    (``problem``)."""

    questions: dict[str, Question]
    missing: dict[str, Any]
    problem: str | None = None


def plan(request: Request, output: str, client: ClientView, *, can_ask: bool = True) -> Planned:
    """How to ask ``request`` of ``client``; ``output`` is the pending result's text (what a
    form shows for the request itself). The client's revision decides the fields: ``mode``
    from 2025-11-25 (every modern revision), ``elicitationId`` on legacy 2025-11-25 only —
    a task's client is a modern one, so a task asks as a modern call does. ``can_ask`` is
    False while a legacy client has not said it is initialized (nothing may be sent)."""
    from ..._result import ToolResult

    questions: dict[str, Question] = {}
    missing: dict[str, Any] = {}
    plain = request.requests()
    for each in plain:
        problem = question_problem(each)
        if problem is not None:
            return Planned({}, {}, problem)
    for each in plain:
        message = output if each is request else ToolResult.pending(each).output
        asked = question_params(
            each,
            message,
            form=client.form and can_ask,
            url=client.url and can_ask,
            sampling=client.sampling and can_ask,
            roots=client.roots and can_ask,
            with_mode=client.at_least("2025-11-25"),
            with_elicitation_id=not client.modern and client.version == "2025-11-25",
        )
        if isinstance(asked, dict):
            for key, value in asked.items():
                missing.setdefault(key, {}).update(value)
        else:
            questions[each.id] = asked
    return Planned(questions, missing)


def missing_capability(missing: Mapping[str, Any], asker: str, output: str) -> tuple[str, Any]:
    """The ``-32021`` error's message and data for a question ``asker`` (``tool 'x'``, ``the
    task``) asks a modern client that lacks the ``missing`` capabilities."""
    words = []
    for key, value in missing.items():
        modes = f" ({', '.join(value)} mode)" if key == "elicitation" and value else ""
        words.append(key + modes)
    return (
        f"Missing required client capability: {', '.join(words)}; {asker} asks: {output}",
        {"requiredCapabilities": dict(missing)},
    )


def input_requests(planned: Planned) -> dict[str, Any]:
    """The ``inputRequests`` of an ``InputRequiredResult`` (or a task that waits)."""
    return {
        key: {"method": method, "params": params}
        for key, (method, params, _) in planned.questions.items()
    }


def shapes_of(planned: Planned) -> dict[str, ElicitationShape]:
    """How each request was asked, by its id: what reading its answer needs."""
    return {key: shape for key, (_, _, shape) in planned.questions.items()}


def form_problem(request: Request, shape: ElicitationShape, answer: Answer | None) -> str | None:
    """Why an accepted ``answer`` to one plain request does not fit the form it was asked
    with (``shape``), or None (no form: URL mode, sampling, roots; or a refusal). An
    approval's ``approved`` must be a boolean as its form says, even when it says no."""
    form = form_of(request, shape)
    if form is None or answer is None or not answer.ok:
        return None
    return content_problem(request, form, answer.data or {})


def whole_answer(request: Request, collected: Mapping[str, Answer]) -> Answer:
    """The one answer to ``request``: its own, or (several questions) all of them."""
    from ..._suspension import SEVERAL, Answer

    if request.kind != SEVERAL:
        return collected[request.id]
    return Answer.several(request, [collected[each.id] for each in request.requests()])


_OUTGOING = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}
"""How the id of each request the server sends begins (``toolnexus-elicit-3``)."""


class ServerQuestions:
    """One session's questions: a suspension asked of the client (as the server's own
    requests on the legacy era, in an ``InputRequiredResult`` on the modern one), the
    answers read back, and the modern era's signed ``requestState`` issued and spent.

    ``binder`` holds the keys that sign a state and the store that spends it once;
    ``state_ttl_s`` is how long a state stays valid, ``max_rounds`` how many answers a
    call may take; ``clock`` returns the time in seconds.
    """

    def __init__(
        self,
        binder: Binder,
        *,
        state_ttl_s: float,
        max_rounds: int,
        clock: Callable[[], float],
    ) -> None:
        self.binder = binder
        self._state_ttl_s = state_ttl_s
        self._max_rounds = max_rounds
        self._clock = clock
        # Each legacy request of ours -> the call that waits on its answer (the shared
        # rule of the ids we issue: a replayed response, or one to an id never issued,
        # finds no call).
        self._asked: Pending[CallState] = Pending()
        self._next_outgoing = 0

    def clear(self) -> None:
        """Forget every question asked (the session ended)."""
        self._asked.clear()

    def take(self, outgoing: Any) -> CallState | None:
        """The call that waits on the answer to our request ``outgoing``; None when
        nothing does. Its question then no longer waits on that answer's id."""
        call = self._asked.answered(outgoing)
        if call is None or not waits_on(call, outgoing):
            return None
        return call

    def ask(
        self, calls: Calls, call: CallState, result: ToolResult, request: Request
    ) -> list[Action]:
        """``call`` ended asking ``request`` (its ``result``): ask the client — unless the
        loop rule says the call took its answers already."""
        from ..._binding import BINDING_KEY
        from ..._loop_rule import may_ask_again, unresolved_text

        if not may_ask_again(call.round, self._max_rounds):
            # The loop rule: one retry per answer (per round), never a loop.
            return calls.fail(call, unresolved_text(request))
        metadata = result.metadata
        binding = metadata.get(BINDING_KEY) if metadata is not None else None
        call.binding = binding if isinstance(binding, str) else None
        call.state_exp = None  # a new question: a new expiry
        try:
            return self._suspend(calls, call, request, result.output)
        except Reject as exc:
            return [error(call.request_id, exc.code, exc.message, exc.data)]
        except Exception as exc:
            # Never a lost response (and an id "in use" forever) for a question we could not
            # put on the wire.
            _log.exception("cannot ask the question of tool %r", call.name)
            calls.forget(call)
            return [
                error(
                    call.request_id,
                    INTERNAL_ERROR,
                    f"internal error: cannot ask the tool's question ({exc})",
                )
            ]

    def _suspend(
        self, calls: Calls, call: CallState, request: Request, output: str
    ) -> list[Action]:
        """Ask ``request``: in an ``InputRequiredResult`` for a modern client, as requests
        of the server's own for a legacy one; ``-32021`` (modern) or a text to relay
        (legacy) when the client did not declare what it takes."""
        client = call.client
        # A legacy server sends no requests before the client said it is initialized.
        can_ask = client.modern or calls.initialized
        planned = plan(request, output, client, can_ask=can_ask)
        if planned.problem is not None:
            return calls.fail(
                call, f"{who(call)} asked a question MCP cannot ask: {planned.problem}"
            )
        if planned.missing:
            if client.modern:
                # The 2026-07-28 revision names this error; legacy clients get the text.
                calls.forget(call)
                text, data = missing_capability(planned.missing, who(call), output)
                raise Reject(MISSING_CLIENT_CAPABILITY, text, data)
            # Nobody can be asked: what the model should tell the user, never a hang —
            # phrased as a question to relay, not as a failure.
            declared = client.form or client.url or client.sampling or client.roots
            why = (
                "it has not said it is initialized yet"
                if declared and not can_ask
                else f"it has no {' or '.join(planned.missing)} support"
            )
            return calls.fail(
                call,
                f"{who(call)} is waiting for an answer this client cannot collect "
                f"({why}); ask the user: {output}",
            )
        shapes = shapes_of(planned)
        if client.modern:
            body = {
                "resultType": "input_required",
                "inputRequests": input_requests(planned),
                "requestState": self._issue_state(call, request, shapes),
            }
            return calls.finish(call, body)
        asking = call.asking = Asking(request, shapes)
        sends: list[Action] = []
        for each in request.requests():
            method, params, shape = planned.questions[each.id]
            self._next_outgoing += 1
            outgoing = f"toolnexus-{_OUTGOING[method]}-{self._next_outgoing}"
            asking.asked[outgoing] = (each, shape)
            self._asked.issue(outgoing, call)
            sends.append(
                Send({"jsonrpc": "2.0", "id": outgoing, "method": method, "params": params})
            )
        return sends

    def withdraw(self, call: CallState) -> list[Action]:
        """Stop waiting for the legacy answers ``call`` still waits for; the
        ``notifications/cancelled`` that tell the client, so it can close its dialogs."""
        withdrawn: list[Action] = []
        asking, call.asking = call.asking, None
        for outgoing in asking.asked if asking is not None else ():
            self._asked.withdraw(outgoing)
            withdrawn.append(
                Send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": outgoing, "reason": "the call no longer waits"},
                    }
                )
            )
        return withdrawn

    def answered(self, calls: Calls, message: Mapping[str, Any]) -> list[Action] | None:
        """A legacy client's response to one of our requests: the answer it carries, and —
        once every request of the question is answered — the call run again with them.
        None (the call withdrawn) for a result nested too deeply: the session answers the
        call ``-32602``, as for any message too deep to handle."""
        response_id = message.get("id")
        call = self._asked.answered(response_id)
        asking = call.asking if call is not None else None
        asked = asking.asked.pop(str(response_id), None) if asking is not None else None
        if call is None or asking is None or asked is None:
            _log.debug("ignoring a response to a request this server never sent: %r", response_id)
            return []
        request, shape = asked
        from ..._suspension import Answer

        answer: Answer
        if "error" in message or message.get("jsonrpc") != "2.0":
            # A client that refuses to sample says so with an error: a decline.
            reason = "declined" if shape in ("sampling", "roots") else "cancelled"
            answer = Answer(request.id, False, None, reason)
        elif nested_too_deep(message.get("result")):
            # The same answer on every Python, whatever its recursion limits: the call is
            # answered -32602, as data too deep for the recursive code after this would be.
            self.withdraw(call)
            return None
        else:
            try:
                answer = answer_from_response(request, shape, message.get("result"))
            except ValueError as exc:
                if shape in ("sampling", "roots"):
                    withdrawn = self.withdraw(call)
                    return withdrawn + calls.fail(
                        call, f"{who(call)} got an answer it cannot use: {exc}", INVALID_PARAMS
                    )
                _log.warning("treating a malformed elicitation result as cancelled: %s", exc)
                answer = Answer(request.id, False, None, "cancelled")
        asking.collected[request.id] = answer
        if asking.asked:
            return []  # more answers to come (several questions asked at once)
        call.asking = None
        question = asking.question
        whole = whole_answer(question, asking.collected)
        return self._resume(calls, call, question, whole, asking.shapes)

    # -------------------------------------------------------------- requestState

    def _issue_state(
        self, call: CallState, request: Request, shapes: Mapping[str, ElicitationShape]
    ) -> str:
        if call.state_exp is None:
            call.state_exp = int(self._clock() + self._state_ttl_s)
        payload = {
            "method": call.method,
            "tool": call.name,
            "args": arguments_digest(call.arguments),
            "request": request.to_dict(),
            "shapes": dict(shapes),
            "exp": call.state_exp,  # a re-asked question keeps the first expiry
            "round": call.round,
            "binding": call.binding,
            "nonce": os.urandom(8).hex(),
        }
        return sign_state(payload, self.binder.keys)

    def retry(self, calls: Calls, call: CallState, state: Any, responses: Any) -> list[Action]:
        """A modern retry of ``call`` carrying ``requestState`` (and ``inputResponses``):
        the call run again with the answers, asked again, or refused (:class:`Reject`)."""
        if not isinstance(state, str):
            raise Reject(
                INVALID_PARAMS,
                f"invalid params: requestState must be a string, got {describe(state)}",
            )
        payload = open_state(state, self.binder.keys)
        if payload is None:
            hint = (
                ""
                if self.binder.is_configured
                else " (this server has no configured key: give it one with --secret-file or "
                "TOOLNEXUS_SECRET so states survive a restart)"
            )
            raise Reject(
                INVALID_PARAMS,
                "invalid params: requestState was not issued by this server (or under another "
                f"key) or was modified{hint}; call the tool again without requestState",
            )
        if (
            payload.get("method") != call.method
            or payload.get("tool") != call.name
            or payload.get("args") != arguments_digest(call.arguments)
        ):
            raise Reject(
                INVALID_PARAMS,
                "invalid params: requestState belongs to another call; retry with the same "
                "tool name and arguments as the call that returned it",
            )
        from ..._result import ToolResult
        from ..._suspension import Answer, Request

        try:
            request = Request.from_dict(payload["request"])
            plain = request.requests()
        except (KeyError, ValueError, TypeError):
            raise Reject(INVALID_PARAMS, "invalid params: requestState is unreadable") from None
        shapes = payload.get("shapes")
        if not isinstance(shapes, dict):  # a state from before several questions
            shapes = {request.id: payload.get("shape")}
        exp = payload.get("exp")
        expired = not isinstance(exp, int) or exp <= self._clock()
        if responses is not None and not isinstance(responses, dict):
            raise Reject(
                INVALID_PARAMS,
                f"invalid params: inputResponses must be an object, got {describe(responses)}",
            )
        given = responses if responses is not None else {}
        binding = payload.get("binding")
        call.binding = binding if isinstance(binding, str) else None
        answered = payload.get("round")
        call.round = answered if isinstance(answered, int) and answered >= 0 else 0

        def spend() -> list[Action] | None:
            """Use the state up (once, whether it carries an answer or asks again: the
            spec's "consumed at most once", enforced in the store the host shares); the
            error to send when it was used before."""
            if expired:
                return None
            assert isinstance(exp, int)
            try:
                first = self.binder.store.consume(state.rpartition(".")[2], float(exp))
            except Exception as exc:  # the store failed: refuse, and use nothing up
                from ..._binding import store_failed

                refusal = store_failed(exc, f"the requestState for {request.prompt!r}")
                if call.method != "tools/call":  # an error response: nothing was used
                    return calls.fail(call, refusal.result.output)
                text = refusal.result.output
                refused = {
                    "content": [{"type": "text", "text": text}],
                    "isError": True,
                    "_meta": {META_ANSWER_UNUSED: True},  # the client may send it again
                }
                return calls.finish(call, refused)
            if first:
                call.state_exp = exp
                return None
            return calls.fail(
                call,
                f"already answered: this requestState for {request.prompt!r} was used "
                "before; call the tool again without requestState to ask anew",
                INVALID_PARAMS,
            )

        unanswered = [each for each in plain if given.get(each.id) is None]
        if unanswered and not expired:
            # A question went unanswered: ask again (a new state, the same expiry).
            return spend() or self._suspend(
                calls, call, request, ToolResult.pending(request).output
            )
        answer: Answer
        if expired:
            answer = Answer(request.id, False, None, "expired")
        else:
            # Built and checked before the state is used: an answer that cannot be read
            # (a bad response, data nested too deeply) uses nothing up, so the client can
            # send a correct one with the same requestState.
            collected: dict[str, Answer] = {}
            for each in plain:
                response = given[each.id]
                if nested_too_deep(response):
                    raise Reject(
                        INVALID_PARAMS,
                        f"invalid params: inputResponses[{each.id!r}] is nested too "
                        f"deeply ({TOO_DEEP}); send flatter data",
                    )
                try:
                    collected[each.id] = answer_from_response(
                        each, str(shapes.get(each.id)), response
                    )
                except ValueError as exc:
                    raise Reject(
                        INVALID_PARAMS, f"invalid params: inputResponses[{each.id!r}]: {exc}"
                    ) from None
            answer = whole_answer(request, collected)
        return self._resume(calls, call, request, answer, shapes, spend)

    def _resume(
        self,
        calls: Calls,
        call: CallState,
        request: Request,
        answer: Answer,
        shapes: Mapping[str, Any] | None = None,
        spend: Callable[[], list[Action] | None] | None = None,
    ) -> list[Action]:
        """Run the call again with ``answer``. ``spend`` (a modern retry) uses up its
        requestState once the answer passed its checks; a decline uses it up too."""
        from ..._loop_rule import declined_text
        from ..._suspension import decline_reason

        declined = answer.id != request.id or decline_reason(request, answer) is not None
        if not declined:
            for each in request.requests():
                shape = str((shapes or {}).get(each.id))
                problem = form_problem(each, shape, answer.answer_to(each))
                if problem is not None:
                    # A decline with the reason: the tool is not run with data it did not
                    # ask for, and the state stays usable for a corrected answer.
                    return calls.fail(call, problem, INVALID_PARAMS)
        if spend is not None:
            refused = spend()
            if refused is not None:
                return refused
        if declined:
            # The one meaning of "no" (also an approval's form with approved: false).
            return calls.fail(call, declined_text(request))
        call.running = True
        call.round += 1
        return [
            StartCall(
                call.call_id,
                call.name,
                call.arguments,
                request,
                answer,
                wants_progress=call.progress_token is not None,
                binding=call.binding,
                trace=call.trace,
                task_after_ms=call.task_after,
                wants_log=call.log_level is not None,
            )
        ]
