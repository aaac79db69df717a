"""What a server session and its feature handlers share: the actions a session returns
(:class:`Send`, :class:`StartCall`, :class:`CancelCall`), what one request's client
speaks (:class:`ClientView`), one call in flight (:class:`CallState`) and the refusal a
handler raises (:class:`Reject`).

Nothing here knows the session or a handler: they both import it (``mcp/_server/_session.py`` ←
``mcp/_server_*.py`` ← this), so no import runs back up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..._context import LOG_LEVELS
from ..._frozen import FrozenDict, freeze
from ..._log import LazyLogger
from ..._result import PENDING_KEY, ToolResult
from ...errors import InvalidTypeError
from .._shared import _codec as codec
from .._shared._codec import INTERNAL_ERROR, INVALID_PARAMS, error_message
from .._shared._protocol import at_least, describe, level_rank

if TYPE_CHECKING:
    import contextvars

    from ..._suspension import Answer, Request
    from ..._tracing import Incoming

__all__ = [
    "NO_MEMBERS",
    "Action",
    "Asking",
    "CallState",
    "Calls",
    "CancelCall",
    "ClientView",
    "Detached",
    "Reject",
    "Send",
    "StartCall",
    "check_result",
    "error",
    "handling_failed",
    "level_of",
    "object_param",
    "question_of",
    "plain_result",
    "waits_on",
    "who",
]

_log = LazyLogger()  # logging loads with the first record, not with the server

NO_MEMBERS: Mapping[str, Any] = FrozenDict()
"""A text answer's result with no members after its content (a legacy answer's)."""


class Send:
    """Write ``message`` (a JSON-RPC message as plain JSON data) to the peer.

    Example::

        for action in session.receive(message):
            if isinstance(action, Send):
                stream.write(action.to_bytes())
    """

    __slots__ = ("_line", "_message", "_reply")
    __match_args__ = ("message",)

    def __init__(self, message: Mapping[str, Any]) -> None:
        self._message: Mapping[str, Any] | None = message
        # A tool's text answer, kept as its parts (request id, text, is_error,
        # structured, the result's other members) until someone reads the message:
        # to_bytes writes it from a template.
        self._reply: tuple[Any, str, bool, Any, Mapping[str, Any]] | None = None
        # Package-internal: the line of a text answer or of a list's page, written from
        # the codec's template as the answer is made (None when the template cannot write
        # it): what to_bytes returns, and what a transport that writes lines may write as
        # it is.
        self._line: bytes | None = None

    @classmethod
    def _text_reply(
        cls,
        request_id: Any,
        text: str,
        is_error: bool,
        structured: Any,
        members: Mapping[str, Any] = NO_MEMBERS,
        encoded: str | None = "",
    ) -> Send:
        """A tool's text answer; ``members``: the result's members after its content
        (never changed: the message is built from them), ``encoded`` as
        :func:`codec.encode_shared <toolnexus.mcp._shared._codec.encode_shared>` wrote
        them (None: it could not; the message is encoded whole)."""
        send = cls.__new__(cls)
        send._message = None
        send._reply = (request_id, text, is_error, structured, members)
        try:
            send._line = (
                None
                if encoded is None
                else codec.text_reply(request_id, text, is_error, structured, encoded)
            )
        except Exception:  # NaN, a lone surrogate, ...: to_bytes writes the message instead
            send._line = None
        return send

    @property
    def message(self) -> Mapping[str, Any]:
        """The JSON-RPC message. A tool's text answer is built on first read, read-only
        (what :meth:`to_bytes` writes cannot drift from it)."""
        message = self._message
        if message is None:
            assert self._reply is not None
            request_id, text, is_error, structured, members = self._reply
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": text}],
                "isError": is_error,
            }
            if structured is not codec.ABSENT:
                result["structuredContent"] = structured
            result.update(members)
            message = self._message = freeze({"jsonrpc": "2.0", "id": request_id, "result": result})
        return message

    @property
    def is_response(self) -> bool:
        """True for a response (a result or an error), False for a request or a
        notification — read without building a text answer's message."""
        return self._reply is not None or "method" not in self.message

    @property
    def id(self) -> Any:
        """The message's ``id`` (the request a response answers), or None."""
        reply = self._reply
        return reply[0] if reply is not None else self.message.get("id")

    def to_bytes(self) -> bytes:
        """The message as one line of compact UTF-8 JSON ending in ``\\n``.

        JSON never needs a raw newline inside a message, so the line is the whole
        message. Text that is not valid Unicode (lone surrogates) is written escaped.
        A message it cannot encode does not raise: a response — whose result JSON cannot
        carry (NaN, an unknown type), or too big to encode (``MemoryError``) — becomes a
        ``-32603`` error response for the same id; a request or notification is logged
        and gives ``b""`` (there is no request to answer, so nothing is written).
        """
        line = self._line
        if line is not None:
            return line
        message = self.message
        try:
            return codec.encode(message)
        except (TypeError, ValueError, RecursionError) as exc:
            problem = f"result is not JSON: {exc}"
        except Exception as exc:  # MemoryError encoding a huge result: answer it anyway
            problem = f"internal error: cannot encode the answer ({type(exc).__name__}: {exc})"
        _log.error("cannot encode an MCP message as JSON: %s", problem)
        message_id = message.get("id")
        if "method" in message or message_id is None:
            return b""  # a notification or a request of ours: nobody waits on an answer
        return codec.encode(error_message(message_id, INTERNAL_ERROR, problem))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Send):
            return NotImplemented
        return self.message == other.message

    __hash__ = None  # type: ignore[assignment]  # a message is a dict: not hashable

    def __repr__(self) -> str:
        return f"Send({self.message!r})"


class StartCall(NamedTuple):
    """Run tool ``name`` with ``arguments`` on the host, then report the result with
    :meth:`ServerSession.complete_call` (``call_id``).

    When ``answer`` is set this is the retry after a suspension: run it as
    ``host.resume(name, arguments, action.resumes, answer)`` — :attr:`resumes` carries the
    host's binding of the question to the call, so the host can check it.
    ``wants_progress`` says whether the client listens for progress: only then pass a
    reporter that calls :meth:`ServerSession.report_progress`. ``wants_log`` says whether
    the client took log messages when the call started (legacy: a ``logging/setLevel``
    came before it; modern: the request's ``_meta`` names a level): only then give the
    tool a log channel that calls :meth:`ServerSession.report_log`. ``task_after_ms`` (a
    client that takes tasks): a driver that runs tasks makes the call a task when it
    still runs after that long; None: never. ``trace`` carries the
    request's W3C trace context (``_meta``'s ``traceparent``) for the driver's span; None
    when nothing in this process traces. ``task`` (a task answered by ``tasks/update``,
    run again): the task's id — the call's end goes to the task, not to
    :meth:`ServerSession.complete_call`. ``hand_over`` (a remote tool whose upstream runs
    the call as a task the caller takes as its own): ``(client, remote tool name)``, set
    as :data:`~toolnexus.mcp._shared._upstream_tasks.HAND_OVER` in the call's context.

    Example::

        if action.answer is None:
            result = host.call(action.name, action.arguments, cancellation_token=token)
        else:
            result = host.resume(action.name, action.arguments, action.resumes,
                                 action.answer, cancellation_token=token)
        session.complete_call(action.call_id, result)
    """

    call_id: int
    name: str
    arguments: Mapping[str, Any]
    request: Request | None = None
    answer: Answer | None = None
    wants_progress: bool = False
    binding: str | None = None
    trace: Incoming | None = None
    task_after_ms: int | None = None
    wants_log: bool = False
    task: str | None = None
    hand_over: tuple[object, str] | None = None

    @property
    def resumes(self) -> ToolResult | Request | None:
        """What to pass as ``request`` to ``host.resume``: the pending result with the
        host's binding when the session has it, else the bare request."""
        if self.request is None or self.binding is None:
            return self.request
        from ..._binding import BINDING_KEY

        return ToolResult(
            ToolResult.pending(self.request).output,
            True,
            {PENDING_KEY: self.request, BINDING_KEY: self.binding},
        )


class CancelCall(NamedTuple):
    """Cancel the running call ``call_id`` (cancel its token). Whatever it returns later
    is dropped: the session sends nothing more for a cancelled request."""

    call_id: int
    reason: str | None = None


class Detached(NamedTuple):
    """Package-internal: a request whose answer waits on another server (a gateway's
    ``tasks/*`` of an upstream's task, a re-exported skill's file), answered off the
    session's lock so that nothing else of the session waits with it.

    ``work()`` (blocking; it may raise :class:`Reject`) returns the actions that answer
    request ``request_id``. The bridge runs it on a thread of its own in ``context`` (the
    context variables as the request came: its caller's principal and token), at most a
    few at once per ``key`` (the upstream, or the skill), and files the actions where the
    request's answer goes (``where``, set by the bridge, as ``weight`` is). Only a
    session whose driver runs them (the package's call bridge) returns one
    (:meth:`ServerContext.detached`): a session driven by hand never does."""

    request_id: str | int
    work: Callable[[], list[Action]]
    context: contextvars.Context
    key: str
    where: Any = None
    weight: int = 0  # the request's bytes, counted against the in-flight cap until answered

    def answer(self) -> list[Action]:
        """Run the work; a refusal or a failure answers the request as :meth:`receive
        <toolnexus.mcp.ServerSession.receive>` would answer it."""
        try:
            return self.context.run(self.work)
        except Reject as exc:
            return [error(self.request_id, exc.code, exc.message, exc.data)]
        except Exception as exc:
            return [error(self.request_id, *handling_failed(exc))]


Action = Send | StartCall | CancelCall | Detached
"""What :class:`~toolnexus.mcp._server._session.ServerSession` asks its driver to do
(:class:`Detached` only of a session the package's call bridge drives: a session driven
by hand gets the other three)."""


class ClientView:
    """What one request's client speaks: its era, revision, elicitation modes, and whether
    it takes sampling and roots requests."""

    __slots__ = (
        "any_structured",
        "form",
        "modern",
        "object_structured",
        "roots",
        "sampling",
        "tasks",
        "url",
        "version",
    )

    def __init__(
        self,
        version: str,
        modern: bool,
        form: bool,
        url: bool,
        sampling: bool = False,
        roots: bool = False,
        tasks: bool = False,
    ) -> None:
        self.version = version
        self.modern = modern
        self.form = form
        self.url = url
        self.sampling = sampling
        self.roots = roots
        self.tasks = tasks  # declared the tasks extension (modern only)
        # Which structuredContent results carry: any JSON value (modern), objects (legacy
        # from 2025-06-18), or none. Asked per call, so decided once.
        self.any_structured = modern
        self.object_structured = self.at_least("2025-06-18")

    def at_least(self, version: str) -> bool:
        return self.modern or at_least(self.version, version)

    def carries(self, structured: Any) -> bool:
        """Whether a result to this client carries ``structured`` as structuredContent."""
        return self.any_structured or (self.object_structured and isinstance(structured, dict))


class Asking:
    """A legacy call's question, while the server waits on its answers: the question (a
    plain or a several request), each answer's shape, each outgoing request's id ->
    (the plain request, its shape) still unanswered, and the answers collected so far."""

    __slots__ = ("asked", "collected", "question", "shapes")

    def __init__(self, question: Request, shapes: Mapping[str, str]) -> None:
        self.question = question
        self.shapes = shapes
        self.asked: dict[str, tuple[Request, str]] = {}
        self.collected: dict[str, Answer] = {}


class CallState:
    """One request in flight that runs user code on the host — a ``tools/call``, or a
    ``resources/read``, ``prompts/get`` or ``completion/complete`` (running, or waiting on
    a legacy question)."""

    __slots__ = (
        "arguments",
        "asking",
        "binding",
        "call_id",
        "client",
        "last_progress",
        "log_level",
        "method",
        "name",
        "owner",
        "progress_token",
        "request_id",
        "round",
        "running",
        "state_exp",
        "task_after",
        "task_required",
        "trace",
    )

    def __init__(
        self,
        call_id: int,
        request_id: str | int,
        name: str,
        arguments: dict[str, Any],
        client: ClientView,
        progress_token: str | int | None,
        method: str = "tools/call",
        owner: str | None = None,
        log_level: int | None = None,
        task_after: int | None = None,
        task_required: bool = False,
    ) -> None:
        self.call_id = call_id
        self.request_id = request_id
        self.method = method  # tools/call, or resources/read, prompts/get, completion/complete
        self.name = name  # the tool's name; for the other methods, the method itself
        self.arguments = arguments
        self.client = client
        self.progress_token = progress_token
        self.running = True
        self.round = 0  # answers taken so far
        self.binding: str | None = None  # the host's binding of the pending question
        self.state_exp: int | None = None  # a re-asked modern state keeps its expiry
        self.trace: Incoming | None = None  # its W3C trace context (_meta), when traced
        self.last_progress: float | None = None
        # the lowest level rank its client hears, as set when it started (None: no logs)
        self.log_level = log_level
        self.asking: Asking | None = None  # legacy: the question it waits on the answers of
        self.owner = owner  # who sent it: a task made of it is theirs
        self.task_after = task_after  # becomes a task after this long (ms)
        self.task_required = task_required  # answered only through a task (task_support)


class Reject(Exception):
    """A request answered with a JSON-RPC error (raised inside the handlers only)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def object_param(params: Mapping[str, Any], name: str, shape: str = "an object") -> dict[str, Any]:
    """``params[name]``, an object (``{}`` when absent or null), or the ``-32602`` refusal
    that names it: ``invalid params: arguments must be an object, got a string``.

    Example::

        >>> object_param({"arguments": {"a": 1}}, "arguments"), object_param({}, "arguments")
        ({'a': 1}, {})
    """
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Reject(
            INVALID_PARAMS, f"invalid params: {name} must be {shape}, got {describe(value)}"
        )
    return value


def check_result(where: str, result: Any) -> None:
    if not isinstance(result, ToolResult):
        raise InvalidTypeError(
            f"{where}: result must be a ToolResult, got {type(result).__name__}; report what "
            "the host returned for the call (wrap plain text with ToolResult.ok(text))"
        )


def question_of(result: ToolResult) -> Request | None:
    """The question a tool's result asks, or None. Only an error result can ask one
    (ToolResult refuses anything else), so most results are answered at a glance."""
    if result.metadata is None or not result.is_error:
        return None
    return ToolResult.pending_of(result)


def waits_on(call: CallState, outgoing: str | None = None) -> bool:
    """Whether a legacy call waits on answers to its question (to ``outgoing``, when
    given)."""
    asking = call.asking
    if asking is None:
        return False
    return outgoing in asking.asked if outgoing is not None else bool(asking.asked)


def who(call: CallState) -> str:
    """How an error names what asked: ``tool 'deploy'``, ``prompt 'review'``, ..."""
    if call.method == "tools/call":
        return f"tool {call.name!r}"
    if call.method == "resources/read":
        return f"resource {call.arguments.get('uri')!r}"
    if call.method == "prompts/get":
        return f"prompt {call.arguments.get('name')!r}"
    return "the completion"


def plain_result(request_id: str | int, body: dict[str, Any]) -> Send:
    """The response ``body`` to ``request_id``, as it is (no modern ``_meta``)."""
    return Send({"jsonrpc": "2.0", "id": request_id, "result": body})


def handling_failed(exc: Exception) -> tuple[int, str]:
    """The JSON-RPC error code and text that answer a request whose handling raised
    ``exc`` (logged here): ``-32602`` for data nested too deeply, else ``-32603``."""
    if isinstance(exc, RecursionError):
        code, text = (
            INVALID_PARAMS,
            f"invalid params: the message is nested too deeply to handle ({exc}); "
            "send flatter data",
        )
    else:
        code, text = INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"
    _log.warning("toolnexus mcp: handling a message failed: %s", text)
    return code, text


def error(request_id: Any, code: int, message: str, data: Any = None) -> Send:
    """The JSON-RPC error response to ``request_id``."""
    return Send(error_message(request_id, code, message, data))


class Calls(Protocol):
    """What the question rules (``mcp/_shared/_questions.py``) use of a session's call table."""

    @property
    def initialized(self) -> bool:
        """Whether a legacy client said ``notifications/initialized`` (it may be asked)."""

    def finish(self, call: CallState, body: dict[str, Any]) -> list[Action]:
        """Answer ``call``'s request with ``body`` and forget the call."""

    def fail(self, call: CallState, text: str, code: int = INTERNAL_ERROR) -> list[Action]:
        """End ``call`` with the failure ``text`` (an error result, or the error ``code``)."""

    def forget(self, call: CallState) -> None:
        """Drop ``call`` from the table (withdrawing a legacy question it waits on)."""


def level_of(value: Any, where: str) -> int:
    """The rank of the log level ``value`` names (``where`` says what held it); refused
    ``-32602`` when it names none."""
    rank = level_rank(value)
    if rank is None:
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: {where} must be one of {', '.join(LOG_LEVELS)}, "
            f"got {describe(value)}",
        )
    return rank
