"""The client's side of a question over MCP, both eras, without I/O.

A server's question becomes a :class:`~toolnexus.Request` handed back as a pending result,
and the host's :class:`~toolnexus.Answer` goes back to the server; the mapping both ways
(elicitation ↔ request, answer ↔ ``ElicitResult``) is :mod:`._questions`'s, shared with
the server. This module holds the client's flow around it:

- **Legacy** (a server request ``elicitation/create`` while a ``tools/call`` is in flight):
  :meth:`ClientQuestions.ask` reads the question, answers at once what the host cannot
  (a malformed question: ``-32602``; a mode this session did not declare: ``decline``)
  and otherwise parks the call under the id of the :class:`~toolnexus.Request` it hands
  back. The answer (:meth:`ClientQuestions.take`, :meth:`ClientQuestions.reply`) replies to
  the server's request; a question the host gives up — declined, expired, or not answered
  within ``question_timeout_ms`` — is answered ``decline``/``cancel``
  (:meth:`ClientQuestions.give_up`) and its call ended by the owner's ``on_give_up``.
- **Modern** (an ``input_required`` result ends the request): :func:`input_required` turns
  it into a pending :class:`~toolnexus.Request` whose id seals everything the retry needs
  (``mcp1.<base64url JSON>``: the tool, the input request's key, the form's defaults, then
  the server's ``requestState``), so any process can continue; :func:`retry_params` opens
  it again into the retry's ``inputResponses`` and ``requestState``.

How a call ends is read here too (:func:`call_result`, :func:`refused`): a result, or the
modern question it asks; and a result that did not use the answer it carried says so
(:func:`unsent`), so the host that checked the answer lets the same answer come again.

The parked table has a lock of its own: a question expires on a timer's dispatcher thread.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..._binding import ANSWER_UNUSED
from ..._cancellation import CancellationTokenSource
from ..._loop_rule import forget_declined, on_declined
from ..._result import ToolResult
from ..._suspension import Answer, Request
from ..._timers import dispatch
from ...errors import WireFormatError
from .._shared._content import result_from_mcp
from .._shared._protocol import META_ANSWER_UNUSED

if TYPE_CHECKING:
    from ._session import ClientSession, Failure, Outgoing, ServerRequest

__all__ = [
    "STATE_PREFIX",
    "ClientQuestions",
    "Parked",
    "call_result",
    "input_required",
    "refused",
    "retry_params",
    "unsent",
]

STATE_PREFIX = "mcp1."
"""How the id of a modern question's :class:`~toolnexus.Request` begins."""


class Parked:
    """A legacy ``tools/call`` waiting on the answer to the server's question.

    ``connection`` and ``call`` are the owner's (its connection and the call's waiter);
    this module only hands them back.
    """

    __slots__ = (
        "call",
        "connection",
        "expiry",
        "schema",
        "server_request",
        "session",
        "shape",
        "tool",
    )

    def __init__(
        self,
        connection: Any,
        call: Any,
        session: ClientSession,
        server_request: str | int,
        shape: str,
        schema: Mapping[str, Any] | None,
        tool: str,
    ) -> None:
        self.connection = connection
        self.call = call
        self.session = session
        self.server_request = server_request
        self.shape = shape  # how the question was asked (its ElicitationShape)
        self.schema = schema
        self.tool = tool
        self.expiry = CancellationTokenSource()


class ClientQuestions:
    """The legacy questions parked on one client, by the id of the Request handed back.

    ``on_give_up(parked, reply, why)`` is the owner's part when a question is given up
    (the host declined it, it expired): send ``reply`` and end the call, with ``why``.

    Example::

        questions = ClientQuestions(300.0, on_give_up=lambda parked, reply, why: None)
        asked = questions.ask(session, event, tool="deploy", connection=c, call=waiter)
        # a Request: hand it back as ToolResult.pending(asked); an Outgoing: send it
    """

    def __init__(
        self,
        timeout_s: float,
        on_give_up: Callable[[Parked, Outgoing, str], object],
    ) -> None:
        self._timeout_s = timeout_s
        self._on_give_up = on_give_up
        self._lock = threading.Lock()
        self._parked: dict[str, Parked] = {}

    def ask(
        self,
        session: ClientSession,
        event: ServerRequest,
        *,
        tool: str,
        connection: Any,
        call: Any,
    ) -> Request | Outgoing:
        """A legacy server's ``elicitation/create`` during ``tool``'s call: the
        :class:`~toolnexus.Request` to hand back (the call is parked under its id), or the
        reply to send the server at once (the question is malformed, or asks in a mode
        this session did not declare)."""
        from datetime import datetime, timedelta, timezone

        from .._shared._questions import elicitation_mode, request_from_elicitation

        request_id = "mcp-" + os.urandom(16).hex()
        expires = datetime.now(timezone.utc) + timedelta(seconds=self._timeout_s)
        try:
            request, shape = request_from_elicitation(
                event.params,
                request_id=request_id,
                expires_at=expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
        except ValueError as exc:
            return session.respond_error(event.id, -32602, f"invalid params: {exc}")
        if elicitation_mode(shape) not in session.elicitation_modes():
            return session.respond(event.id, {"action": "decline"})
        schema = request.data.get("schema") if request.data is not None else None
        parked = Parked(connection, call, session, event.id, shape, schema, tool)
        with self._lock:
            self._parked[request_id] = parked
        parked.expiry.token.register(lambda: self.give_up(request_id))
        parked.expiry.cancel_after(self._timeout_s)
        # A host that gives the question up (declined, expired) says so here: the server
        # hears it at once, rather than when this client's own wait runs out (on a
        # dispatcher thread: the host may hold a call's lock, and answering is I/O).
        on_declined(
            request_id, lambda reason: dispatch(functools.partial(self.give_up, request_id, reason))
        )
        return request

    @staticmethod
    def unowned(session: ClientSession, event: ServerRequest) -> Outgoing:
        """The reply to a question no call in flight can own: ``cancel``."""
        return session.respond(event.id, {"action": "cancel"})

    def resume(
        self, tool: str, server: str, answer: Answer
    ) -> dict[str, Any] | Parked | ToolResult:
        """What ``answer`` continues of ``tool``'s call on ``server``: a modern question's
        retry (the params it adds, :func:`retry_params`), the legacy call parked for it
        (now unparked; :meth:`reply` is its answer), or the error result when nothing of
        this tool waits for it."""
        if answer.id.startswith(STATE_PREFIX):
            return retry_params(tool, server, answer)
        parked = self.take(answer.id, tool)
        if parked is None:
            return ToolResult(
                f"{tool}: the question this answers is no longer waiting on MCP server "
                f"{server} (its session ended, or it expired); call the tool again",
                True,
            )
        return parked

    def take(self, answer_id: str, tool: str) -> Parked | None:
        """The call parked under ``answer_id`` for ``tool``, now unparked; ``None`` when
        no such question waits (its session ended, it expired, or it is another tool's)."""
        with self._lock:
            parked = self._parked.get(answer_id)
            if parked is None or parked.tool != tool:
                return None
            del self._parked[answer_id]
        parked.expiry.close()
        forget_declined(answer_id)
        return parked

    @staticmethod
    def reply(parked: Parked, answer: Answer) -> Outgoing:
        """The reply that tells the server ``answer`` to ``parked``'s question."""
        from .._shared._questions import elicit_result

        return parked.session.respond(
            parked.server_request, elicit_result(answer, parked.shape, parked.schema)
        )

    def give_up(self, request_id: str, reason: str = "expired") -> None:
        """Give the question ``request_id`` up: the server is answered ``decline`` when the
        host declined it, ``cancel`` when it expired (here or at the host), and its call
        ended (``on_give_up``). Nothing when it was answered already."""
        with self._lock:
            parked = self._parked.pop(request_id, None)
        forget_declined(request_id)
        if parked is None:
            return
        parked.expiry.close()
        action = "decline" if reason == "declined" else "cancel"
        reply = parked.session.respond(parked.server_request, {"action": action})
        why = "was declined" if reason == "declined" else "was not answered in time"
        self._on_give_up(parked, reply, f"the question {why}")

    def clear(self) -> None:
        """Forget every parked question (the client closed: its calls end with it)."""
        with self._lock:
            parked, self._parked = self._parked, {}
        for request_id, entry in parked.items():
            entry.expiry.close()
            forget_declined(request_id)


# ---------------------------------------------------------------------- a call's end


def call_result(
    tool: str, server: str, result: dict[str, Any], answering: object = False
) -> ToolResult:
    """The ``tools/call`` result ``result`` of ``tool`` on ``server`` as a
    :class:`~toolnexus.ToolResult`: content, parts and structured output, or the modern
    question it asks. ``answering``: the request carried an answer; a result whose
    ``_meta`` says the answer was not used says so (:func:`unsent`)."""
    kind = result.get("resultType")
    if kind == "input_required":
        read = input_required(tool, server, result)
    elif kind not in (None, "complete"):
        read = ToolResult(
            f"{tool}: MCP server {server} answered with resultType {kind!r}, which this "
            "client does not know",
            True,
        )
    else:
        try:
            read = result_from_mcp(result)
        except (WireFormatError, ValueError) as exc:
            read = ToolResult(f"{tool}: MCP server {server} sent a malformed result: {exc}", True)
    meta = result.get("_meta")
    if isinstance(meta, dict) and meta.get(META_ANSWER_UNUSED) is True:  # (parsed JSON)
        return unsent(read, answering)
    return read


def refused(tool: str, server: str, failure: Failure, answering: object = False) -> ToolResult:
    """An error response to ``tool``'s call: the server took neither the request nor the
    answers it carried."""
    code = f" ({failure.code})" if failure.code is not None else ""
    return unsent(
        ToolResult(f"{tool}: MCP server {server} refused the call: {failure.message}{code}", True),
        answering,
    )


# ---------------------------------------------------------------------- the modern era


def input_required(tool: str, server: str, result: Mapping[str, Any]) -> ToolResult:
    """A modern ``input_required`` result of ``tool`` on ``server`` as a pending result:
    its (first) elicitation as a :class:`~toolnexus.Request` whose id seals the retry."""
    from .._shared._questions import request_from_elicitation

    requests = result.get("inputRequests")
    if not isinstance(requests, dict) or not requests:
        return ToolResult(
            f"{tool}: MCP server {server} asked for input without inputRequests", True
        )
    for key, entry in requests.items():
        if not isinstance(entry, dict) or entry.get("method") != "elicitation/create":
            continue
        state: dict[str, Any] = {"t": tool, "k": key, "n": os.urandom(8).hex()}
        try:
            request, shape = request_from_elicitation(entry.get("params"), request_id="pnd-0")
        except ValueError as exc:
            return ToolResult(
                f"{tool}: MCP server {server} asked a malformed question: {exc}", True
            )
        state["m"] = shape
        if shape == "schema" and request.data is not None:
            defaults = _defaults(request.data.get("schema"))
            if defaults:
                state["d"] = defaults
        pending = Request(
            request.kind,
            request.prompt,
            id=_seal_state(state, result.get("requestState")),
            url=request.url,
            data=request.data,
        )
        return ToolResult.pending(pending)
    methods = sorted(
        {str(entry.get("method")) for entry in requests.values() if isinstance(entry, dict)}
    )
    return ToolResult(
        f"{tool}: MCP server {server} asked for {', '.join(methods)}, which this client "
        "does not offer",
        True,
    )


def retry_params(tool: str, server: str, answer: Answer) -> dict[str, Any] | ToolResult:
    """What the retry of ``tool`` with ``answer`` to a modern question (its id begins
    with :data:`STATE_PREFIX`) adds to ``tools/call``'s params (``inputResponses``,
    ``requestState``), or the error result when the id is not one of ``tool``'s."""
    from .._shared._questions import elicit_result

    state = _open_state(answer.id)
    if state is None or state.get("t") != tool:
        return ToolResult(
            f"{tool}: the answer {answer.id[:24]!r}… does not belong to a question of "
            f"this tool on MCP server {server}; call the tool again",
            True,
        )
    given = state.get("d")
    defaults: dict[str, Any] = given if isinstance(given, dict) else {}
    schema = {"properties": {key: {"default": value} for key, value in defaults.items()}}
    response = elicit_result(answer, str(state.get("m")), schema)
    retry: dict[str, Any] = {"inputResponses": {state["k"]: response}}
    if "s" in state:
        retry["requestState"] = state["s"]
    return retry


def unsent(result: ToolResult, answering: object) -> ToolResult:
    """``result``, saying (when ``answering``: the request carried an answer) that the
    answer was not used — the server never got it, refused the request, or said so — so
    the host that checked it lets the same answer come again."""
    if not answering:
        return result
    return ToolResult(
        result.output, result.is_error, {**result.metadata, "answer": ANSWER_UNUSED}, result.parts
    )


def _defaults(schema: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        for key, prop in properties.items():
            if isinstance(prop, Mapping) and "default" in prop:
                found[key] = prop["default"]
    return found


def _seal_state(state: Mapping[str, Any], request_state: Any) -> str:
    """A modern question's continuation as a Request id: ``mcp1.<base64url JSON>``, then
    ``.<requestState>`` as the server sent it (when it sent one)."""
    raw = json.dumps(dict(state), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    sealed = STATE_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    if request_state is None:
        return sealed
    text = request_state if isinstance(request_state, str) else json.dumps(request_state)
    return f"{sealed}.{'s' if isinstance(request_state, str) else 'j'}{text}"


def _open_state(text: str) -> dict[str, Any] | None:
    """The continuation :func:`_seal_state` put in ``text`` (``"s"``: the requestState),
    or ``None`` when ``text`` is not one."""
    body, _, rest = text[len(STATE_PREFIX) :].partition(".")
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        state = json.loads(raw.decode("utf-8"))
        if rest:
            state["s"] = rest[1:] if rest[0] == "s" else json.loads(rest[1:])
    except (binascii.Error, ValueError, UnicodeDecodeError, IndexError, TypeError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("k"), str):
        return None
    return state
