"""The MCP server session without I/O: parsed JSON-RPC messages in, actions out.

:class:`ServerSession` is the whole protocol state machine of a dual-era MCP server (the
modern stateless 2026-07-28 revision and the legacy ``initialize`` revisions 2024-11-05
… 2025-11-25). It never reads or writes a stream and never runs a tool: it returns
:class:`Send` (a message to write), :class:`StartCall` (run a tool on the host) and
:class:`CancelCall` (cancel a running one), and the driver that owns the streams and the
host reports back with :meth:`ServerSession.complete_call` and
:meth:`ServerSession.report_progress`. The stdio driver (``toolnexus.mcp._stdio``) is one
such driver; a web server or a socket loop can be another.

The session is not thread-safe: a driver serialises calls into it (one lock) and writes
the :class:`Send` actions it gets back, in order, before releasing that lock — that is
what keeps progress notifications ahead of the response they belong to.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .._adapters import keep_listable
from .._context import LOG_LEVELS
from .._frozen import freeze, thaw
from .._log import LazyLogger
from .._result import PENDING_KEY, STRUCTURED_KEY, ToolResult
from .._tracing import API_MODULE, Incoming
from .._tracing import incoming as incoming_trace
from ..errors import InvalidTypeError
from . import _codec as codec
from ._codec import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    TOO_DEEP,
    UNSUPPORTED_PROTOCOL_VERSION,
    error_message,
    nested_too_deep,
)
from ._content import content_blocks, downgrade
from ._options import ServerOptions, resolve
from ._protocol import (
    LEGACY_PROTOCOL_VERSIONS,
    META_ANSWER_UNUSED,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MODERN_PROTOCOL_VERSIONS,
    TASKS_EXTENSION,
    at_least,
    describe,
    elicitation_modes,
    is_request_id,
    level_rank,
)
from ._questions import (
    ElicitationShape,
    Question,
    answer_from_response,
    arguments_digest,
    content_problem,
    form_of,
    is_finite_number,
    open_state,
    question_params,
    question_problem,
    sign_state,
)

if TYPE_CHECKING:
    from .._host import Call
    from .._suspension import Answer, Request
    from .._toolkit import Toolkit
    from .._tools import Tool
    from ..stores import TaskRecord
    from ._lazy_host import LazyHost
    from ._tasks import Tasks

__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LEGACY_PROTOCOL_VERSIONS",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "MODERN_PROTOCOL_VERSIONS",
    "PARSE_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Action",
    "CancelCall",
    "Send",
    "ServerSession",
    "StartCall",
]

_log = LazyLogger()  # logging loads with the first record, not with the server

_KNOWN_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "logging/setLevel",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "subscriptions/listen",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
    }
)
# Methods that run user code on the host, as calls (the tools/call of their kind).
_CALL_METHODS = frozenset({"resources/read", "prompts/get", "completion/complete"})
# Methods the modern revision removed (notifications travel on subscriptions/listen).
_LEGACY_ONLY = frozenset({"resources/subscribe", "resources/unsubscribe", "logging/setLevel"})
# The capability each feature's methods need: a server that does not declare it (see
# _capabilities) does not have the method either, so the two never disagree.
_FEATURE_OF = {
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "resources/subscribe": "resources",
    "resources/unsubscribe": "resources",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "completion/complete": "completions",
}

_CURSOR_PREFIX = "tnx1:"
_ASKING = frozenset({"elicitation", "sampling", "roots", "extensions"})
"""Client capabilities that let a server ask it something."""
_TASKS_ONLY: dict[str, Any] = {TASKS_EXTENSION: {}}
"""The extensions of a client that declares the tasks extension, and no other."""


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
        # structured) until someone reads the message: to_bytes writes it from a template.
        self._reply: tuple[Any, str, bool, Any] | None = None
        # Package-internal: a text answer's line, written from the codec's template as the
        # answer is made (None when the template cannot write it): what to_bytes returns,
        # and what a transport that writes lines may write as it is.
        self._line: bytes | None = None

    @classmethod
    def _text_reply(cls, request_id: Any, text: str, is_error: bool, structured: Any) -> Send:
        send = cls.__new__(cls)
        send._message = None
        send._reply = (request_id, text, is_error, structured)
        try:
            send._line = codec.text_reply(request_id, text, is_error, structured)
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
            request_id, text, is_error, structured = self._reply
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": text}],
                "isError": is_error,
            }
            if structured is not codec.ABSENT:
                result["structuredContent"] = structured
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
    :meth:`ServerSession.complete_call`.

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

    @property
    def resumes(self) -> ToolResult | Request | None:
        """What to pass as ``request`` to ``host.resume``: the pending result with the
        host's binding when the session has it, else the bare request."""
        if self.request is None or self.binding is None:
            return self.request
        from .._binding import BINDING_KEY

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


Action = Send | StartCall | CancelCall
"""What :class:`ServerSession` asks its driver to do."""


class _Client:
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


_new_tuple = tuple.__new__


def _waits_on(call: _Call, outgoing: str | None = None) -> bool:
    """Whether a legacy call waits on answers to its question (to ``outgoing``, when
    given)."""
    asking = call.asking
    if asking is None:
        return False
    return outgoing in asking.asked if outgoing is not None else bool(asking.asked)


_START_FIELDS = (
    "call_id",
    "name",
    "arguments",
    "request",
    "answer",
    "wants_progress",
    "binding",
    "trace",
    "task_after_ms",
    "wants_log",
    "task",
)
assert StartCall._fields == _START_FIELDS, "ServerSession._start makes StartCall in this order"


class _Asking:
    """A legacy call's question, while the server waits on its answers: the question (a
    plain or a several request), each answer's shape, each outgoing request's id ->
    (the plain request, its shape) still unanswered, and the answers collected so far."""

    __slots__ = ("asked", "collected", "question", "shapes")

    def __init__(self, question: Request, shapes: Mapping[str, ElicitationShape]) -> None:
        self.question = question
        self.shapes = shapes
        self.asked: dict[str, tuple[Request, ElicitationShape]] = {}
        self.collected: dict[str, Answer] = {}


class _Call:
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
        client: _Client,
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
        self.asking: _Asking | None = None  # legacy: the question it waits on the answers of
        self.owner = owner  # who sent it: a task made of it is theirs
        self.task_after = task_after  # becomes a task after this long (ms)
        self.task_required = task_required  # answered only through a task (task_support)


class _Reject(Exception):
    """A request answered with a JSON-RPC error (raised inside the handlers only)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _check_result(where: str, result: Any) -> None:
    if not isinstance(result, ToolResult):
        raise InvalidTypeError(
            f"{where}: result must be a ToolResult, got {type(result).__name__}; report what "
            "the host returned for the call (wrap plain text with ToolResult.ok(text))"
        )


def _question_of(result: ToolResult) -> Request | None:
    """The question a tool's result asks, or None. Only an error result can ask one
    (ToolResult refuses anything else), so most results are answered at a glance."""
    if result.metadata is None or not result.is_error:
        return None
    return ToolResult.pending_of(result)


class ServerSession:
    """One MCP server connection, both protocol eras, as a pure state machine.

    Feed it every message the client sends (:meth:`receive` for parsed JSON,
    :meth:`receive_line` for raw lines) and carry out the actions it returns, in order.

    Args:
        toolkit: the tools to offer (listed in registration order).
        options: a :class:`~toolnexus.mcp.ServerOptions`: the identity clients see, the
            list page size and cache hints, how long a modern ``requestState`` stays valid
            (a state re-issued for a question left unanswered keeps the first expiry), the
            key that signs it and binds each question to its call, the answer store, and
            how many answers one call may take. Give the host that runs the calls the same
            key and store: then a restarted server resumes a state it issued before.
        clock: returns the current time in seconds (``time.time``); tests inject one.

    Example::

        session = ServerSession(toolkit, ServerOptions(name="demo", version="1.0"))
        actions = session.receive_line(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        assert actions[0].message == {"jsonrpc": "2.0", "id": 1, "result": {}}
    """

    def __init__(
        self,
        toolkit: Toolkit,
        options: ServerOptions | None = None,
        *,
        clock: Callable[[], float] = time.time,
        _tasks: Tasks | None = None,
    ) -> None:
        options = resolve(options)
        version = options.version
        if version is None:
            from .._version import __version__ as version
        from .._binding import Binder

        self._binder = Binder(options.secret, store=options.answer_store)
        self._max_rounds = options.max_rounds
        self._toolkit = toolkit
        self._server_info = {"name": options.name, "version": version}
        # The client of a plain modern request (no elicitation), built once: _Client is
        # never changed after construction, so every such request can share it.
        self._plain_modern = _Client(MODERN_PROTOCOL_VERSIONS[-1], True, False, False)
        # ... and one that takes tasks, and nothing else it could be asked
        self._tasks_modern = _Client(MODERN_PROTOCOL_VERSIONS[-1], True, False, False, tasks=True)
        self._instructions = options.instructions
        self._page_size = options.page_size
        self._list_ttl_ms = options.list_ttl_ms
        self._state_ttl_s = options.state_ttl_ms / 1000
        self._clock = clock
        self._legacy: _Client | None = None
        self._legacy_log_level: int | None = None  # set by logging/setLevel
        self._subscribed: set[str] = set()  # resources/subscribe (legacy)
        self._tasks = _tasks  # the server's tasks (None: this session runs none)
        self._task_id: str | None = None  # the task promote() made last
        # Who sends the request being handled (the digest of its credential): a driver
        # sets it before each request; a task made of a call belongs to it.
        self.owner: str | None = None
        # modern subscriptions/listen streams still open: request id -> what each asked for
        # (and, under "owner", who opened it: they hear of their own tasks only)
        self._listens: dict[str | int, dict[str, Any]] = {}
        self._initialized_notified = False
        self._calls: dict[int, _Call] = {}
        self._by_request: dict[str | int, _Call] = {}
        self._asked: dict[str, _Call] = {}
        self._next_call = 0
        self._next_outgoing = 0
        self._closed = False

    # ------------------------------------------------------------------ state

    @property
    def protocol_version(self) -> str | None:
        """The revision negotiated by ``initialize``, or ``None`` before (and on a
        connection that only ever spoke the modern, stateless revision)."""
        return self._legacy.version if self._legacy is not None else None

    @property
    def initialized(self) -> bool:
        """True once a legacy client said ``notifications/initialized``."""
        return self._initialized_notified

    @property
    def running_calls(self) -> int:
        """How many started calls have not been completed or cancelled yet."""
        return sum(1 for call in self._calls.values() if call.running)

    def __repr__(self) -> str:
        era = f"legacy {self._legacy.version}" if self._legacy is not None else "not initialized"
        return f"<ServerSession {era}, {len(self._calls)} call(s) in flight>"

    # ------------------------------------------------------------------ input

    def receive_line(self, line: bytes | bytearray | str) -> list[Action]:
        """Handle one line of the wire (one JSON-RPC message).

        A line that is not UTF-8 or not JSON is answered with ``-32700`` and ``id:
        null``; a blank line is ignored. A line nested too deeply for the JSON decoder is
        still the message its top-level ``id`` and ``method`` name (``-32602``, see
        :meth:`_too_deep`). Never raises, so a driver never goes deaf: whatever
        goes wrong while reading or handling the message (a ``RecursionError`` from data
        nested too deep, a ``MemoryError``, a bug) answers the request it came in —
        ``-32602`` for nesting, else ``-32603`` — and the requests it was answering (a
        legacy elicitation response), or is dropped when it was a notification.

        Example::

            session.receive_line(b"not json")[0].message["error"]["code"]   # -32700
        """
        try:
            if isinstance(line, (bytes, bytearray)):
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return [
                        self._error(
                            None, PARSE_ERROR, f"parse error: the line is not UTF-8 ({exc})"
                        )
                    ]
            else:
                text = line
            text = text.strip()
            if not text:
                return []
            try:
                message = codec.decode(text)
            except RecursionError as exc:
                return self._too_deep(text, exc)
            except ValueError as exc:
                return [self._error(None, PARSE_ERROR, f"parse error: not valid JSON ({exc})")]
        except Exception as exc:  # MemoryError decoding or parsing: nothing names the request
            return [
                self._error(
                    None,
                    INTERNAL_ERROR,
                    f"internal error reading the line: {type(exc).__name__}: {exc}",
                )
            ]
        newest = self._next_call  # what receive() does, without its frame: once per line
        try:
            return self._receive(message)
        except Exception as exc:
            return self._failed(message, newest, exc)

    def _too_deep(self, text: str, exc: RecursionError) -> list[Action]:
        """A line nested too deeply for the decoder: it is still the message its top-level
        ``id`` and ``method`` say (read by a scan without recursion), failing as one nested
        too deeply does once parsed — a request is answered ``-32602``, a notification
        dropped, and a response to an elicitation answers the ``tools/call`` waiting on it
        ``-32602``. Only when nothing names it is it ``-32700`` with ``id: null``."""
        stand_in = codec.stand_in(text) or {}
        ident = stand_in.get("id")
        named = "id" not in stand_in or is_request_id(ident)
        if not named or not stand_in.keys() & {"method", "result", "error"}:
            return [self._error(None, PARSE_ERROR, f"parse error: not valid JSON ({exc})")]
        if self._closed:
            return []
        if "method" not in stand_in:  # a response: to an elicitation of ours, or to nothing
            call = self._asked.pop(ident, None) if isinstance(ident, str) else None
            if call is None or not _waits_on(call, ident):
                return []
            self._withdraw(call)  # as when its parsed result fails: the call is answered
            return self._failed({"id": ident}, self._next_call, exc)
        return self._failed(stand_in, self._next_call, exc)

    def _failed(self, message: Any, newest: int, exc: Exception) -> list[Action]:
        """Answer what :meth:`receive` was handling when it raised ``exc``: the request
        itself, and any call the message left neither running nor asking (a legacy
        elicitation response that failed while it was being read)."""
        if isinstance(exc, RecursionError):
            code, text = (
                INVALID_PARAMS,
                (
                    f"invalid params: the message is nested too deeply "
                    f"to handle ({exc}); send flatter data"
                ),
            )
        else:
            code, text = INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"
        _log.warning("toolnexus mcp: handling a message failed: %s", text)
        answered: list[str | int] = []
        if isinstance(message, dict) and "method" in message:
            request_id = message.get("id")
            if "id" in message and is_request_id(request_id):
                answered.append(request_id)
        for call in list(self._calls.values()):
            # A call this message created, or one it took the answer of, is answered here.
            if call.call_id > newest or (not call.running and not _waits_on(call)):
                self._forget(call)
                if call.request_id not in answered:
                    answered.append(call.request_id)
        return [self._error(request_id, code, text) for request_id in answered]

    def line_too_long(self, length: int, limit: int) -> list[Action]:
        """Answer a line the driver refused to read whole (``length`` bytes and more
        when over ``limit``): ``-32600`` with ``id: null``, as its id is unreadable."""
        return [
            self._error(
                None,
                INVALID_REQUEST,
                f"message too large: {length} bytes or more, the limit is {limit} bytes",
            )
        ]

    def line_failed(self, problem: str) -> list[Action]:
        """Answer a line the driver could not read or hand over (``problem`` says why, e.g.
        out of memory): ``-32603`` with ``id: null``, as its id is unknown."""
        return [self._error(None, INTERNAL_ERROR, f"internal error: {problem}")]

    def fail_call(self, call_id: int, code: int, message: str) -> list[Action]:
        """Answer the request of a :class:`StartCall` the driver will not carry out with
        the JSON-RPC error ``code`` and ``message`` (a driver over its capacity, say), and
        forget the call. Nothing when the call is no longer running.

        Example::

            for action in session.fail_call(start.call_id, -32603, "server overloaded"):
                stream.write(action.to_bytes())
        """
        call = self._calls.get(call_id)
        if call is None or not call.running:
            return []
        self._forget(call)
        return [self._error(call.request_id, code, message)]

    def receive(self, message: Any) -> list[Action]:
        """Handle one parsed JSON-RPC message (a request, notification or response).

        Returns the actions to carry out, in order. Never raises for anything a client
        can send: a malformed message is answered with the JSON-RPC error the
        specification names (or ignored, for notifications and stray responses), and a
        failure while handling it (data nested too deep, ``MemoryError``, a bug) answers
        the request ``-32602``/``-32603`` (see :meth:`receive_line`).
        """
        newest = self._next_call
        try:
            return self._receive(message)
        except Exception as exc:
            return self._failed(message, newest, exc)

    def _receive(self, message: Any) -> list[Action]:
        if self._closed:
            return []
        if isinstance(message, list):
            return [
                self._error(
                    None,
                    INVALID_REQUEST,
                    "invalid request: JSON-RPC batches (arrays) are not supported; "
                    "send one message per line",
                )
            ]
        if not isinstance(message, dict):
            return [
                self._error(
                    None,
                    INVALID_REQUEST,
                    f"invalid request: a message must be a JSON object, got {describe(message)}",
                )
            ]
        has_id = "id" in message
        request_id = message.get("id")
        kind = request_id.__class__
        echo = (
            request_id
            if has_id and (kind is int or kind is str or is_request_id(request_id))
            else None
        )
        if "method" not in message and ("result" in message or "error" in message):
            return self._on_response(message)
        if message.get("jsonrpc") != "2.0":
            return [
                self._error(
                    echo,
                    INVALID_REQUEST,
                    'invalid request: "jsonrpc" must be "2.0", got '
                    f"{describe(message.get('jsonrpc'))}",
                )
            ]
        method = message.get("method")
        if not isinstance(method, str):
            return [
                self._error(
                    echo,
                    INVALID_REQUEST,
                    f'invalid request: "method" must be a string, got {describe(method)}',
                )
            ]
        if not has_id:
            return self._on_notification(method, message.get("params"))
        if echo is None:
            return [
                self._error(
                    None,
                    INVALID_REQUEST,
                    'invalid request: "id" must be a string or an integer, got '
                    f"{describe(request_id)}",
                )
            ]
        try:
            return self._on_request(echo, method, message.get("params"))
        except _Reject as exc:
            return [self._error(echo, exc.code, exc.message, exc.data)]

    # ------------------------------------------------------------------ driver reports

    def complete_call(self, call_id: int, result: ToolResult) -> list[Action]:
        """Report what the call ``call_id`` (from a :class:`StartCall`) returned.

        Returns the response to send — or an ``elicitation/create`` request when the
        tool suspended and a legacy client can be asked — or nothing when the request
        was cancelled meanwhile. Raises ``TypeError`` (an
        :class:`~toolnexus.errors.InvalidTypeError`) when ``result`` is not a
        :class:`ToolResult`.
        """
        if result.__class__ is not ToolResult:
            _check_result("complete_call", result)
        call = self._calls.get(call_id)
        if call is None or not call.running:
            return []
        call.running = False
        metadata = result.metadata
        request = _question_of(result)
        if request is None:
            client = call.client
            if call.method != "tools/call":
                return self._served_result(call, result)
            if call.task_required and self._tasks is not None:
                # A tool that answers only through a task: a task made already done.
                return self._task_made(call, result=result)
            if client.modern or result.parts:
                return self._finish(call, self._tool_result(client, result))
            # A legacy text answer: kept as its parts, written from the codec's template.
            structured = (
                codec.ABSENT if metadata is None else metadata.get(STRUCTURED_KEY, codec.ABSENT)
            )
            if structured is not codec.ABSENT and not client.carries(structured):
                structured = codec.ABSENT
            self._forget(call)
            return [Send._text_reply(call.request_id, result.output, result.is_error, structured)]
        # What a question needs loads with the first one a tool asks: a server starts
        # without it.
        from .._binding import BINDING_KEY
        from .._loop_rule import may_ask_again, unresolved_text

        if not may_ask_again(call.round, self._max_rounds):
            # The loop rule: one retry per answer (per round), never a loop.
            return self._fail(call, unresolved_text(request))
        binding = metadata.get(BINDING_KEY) if metadata is not None else None
        call.binding = binding if isinstance(binding, str) else None
        call.state_exp = None  # a new question: a new expiry
        try:
            return self._suspend(call, request, result.output)
        except _Reject as exc:
            return [self._error(call.request_id, exc.code, exc.message, exc.data)]
        except Exception as exc:
            # Never a lost response (and an id "in use" forever) for a question we could not
            # put on the wire.
            _log.exception("cannot ask the question of tool %r", call.name)
            self._forget(call)
            return [
                self._error(
                    call.request_id,
                    INTERNAL_ERROR,
                    f"internal error: cannot ask the tool's question ({exc})",
                )
            ]

    def report_progress(
        self,
        call_id: int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> list[Action]:
        """A ``notifications/progress`` for the call ``call_id``, when its client asked
        for progress (``_meta.progressToken``), the call still runs, and ``progress``
        is a finite number above the last one sent; otherwise nothing.
        """
        call = self._calls.get(call_id)
        if call is None or not call.running or call.progress_token is None:
            return []
        if not is_finite_number(progress):
            return []
        if call.last_progress is not None and progress <= call.last_progress:
            return []
        call.last_progress = progress
        params: dict[str, Any] = {"progressToken": call.progress_token, "progress": progress}
        if total is not None and is_finite_number(total):
            params["total"] = total
        if message is not None:
            params["message"] = message if isinstance(message, str) else str(message)
        return [Send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})]

    def report_log(
        self, call_id: int, level: str, data: Any, logger: str | None = None
    ) -> list[Action]:
        """A ``notifications/message`` for the call ``call_id`` when its client asked for
        log messages at ``level`` or above when the call started (legacy: the last
        ``logging/setLevel`` before it; modern: ``_meta["io.modelcontextprotocol/logLevel"]``
        on the request) and the call still runs; otherwise nothing. ``level`` is one of
        :data:`~toolnexus._context.LOG_LEVELS`.

        Example::

            session.report_log(call_id, "info", "fetched 3 pages")
        """
        call = self._calls.get(call_id)
        if call is None or not call.running:
            return []
        wanted = call.log_level
        rank = level_rank(level)
        if wanted is None or rank is None or rank < wanted:
            return []
        params: dict[str, Any] = {"level": level}
        if logger is not None:
            params["logger"] = logger
        params["data"] = data
        return [Send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})]

    def close(self) -> list[Action]:
        """End the session (the client went away): cancel every call still in flight.

        Returns a :class:`CancelCall` for each running call; afterwards the session
        sends nothing and ignores further input.
        """
        self._closed = True
        actions: list[Action] = [
            CancelCall(call.call_id, "the client closed the connection")
            for call in self._calls.values()
            if call.running
        ]
        actions += self._end_listens()
        self._calls.clear()
        self._by_request.clear()
        self._asked.clear()
        return actions

    def _end_listens(self) -> list[Action]:
        """End every open ``subscriptions/listen`` stream with its response (the stream
        closes gracefully); calls are left as they are."""
        actions: list[Action] = [
            self._result(request_id, {"_meta": {META_SUBSCRIPTION_ID: request_id}})
            for request_id in self._listens
        ]
        self._listens.clear()
        return actions

    def in_progress(self, request_id: str | int) -> bool:
        """Whether the request ``request_id`` is still being answered (a call, or an open
        ``subscriptions/listen`` stream)."""
        return request_id in self._by_request or request_id in self._listens

    @property
    def listening(self) -> bool:
        """Whether anyone hears of changes here: a legacy client past ``initialize``, or an
        open modern ``subscriptions/listen`` stream."""
        return bool(self._listens) or (self._legacy is not None and not self._closed)

    def toolkit_changed(self, kind: str, uri: str | None = None) -> list[Action]:
        """What to tell the client about a change of the toolkit: ``kind`` is ``"tools"``,
        ``"resources"`` or ``"prompts"`` (that list changed) or ``"resource"`` (the content
        at ``uri`` changed). A legacy client (initialized) hears of every list change and of
        the resources it subscribed to; a modern one only on a ``subscriptions/listen``
        stream that asked for it, each notification tagged with that stream's id.

        Example::

            toolkit.register(new_tool)   # a server's toolkit watcher then does:
            for action in session.toolkit_changed("tools"):
                stream.write(action.to_bytes())
        """
        if self._closed:
            return []
        if kind == "resource":
            method, params, wanted = "notifications/resources/updated", {"uri": uri}, None
        elif kind in _CHANGED:
            method, params, wanted = f"notifications/{kind}/list_changed", {}, _CHANGED[kind]
        else:
            return []
        actions: list[Action] = []
        legacy = self._legacy is not None and self._initialized_notified
        if legacy and (kind != "resource" or uri in self._subscribed):
            actions.append(Send({"jsonrpc": "2.0", "method": method, "params": dict(params)}))
        for request_id, asked in self._listens.items():
            if wanted is None:
                if uri not in (asked.get("resourceSubscriptions") or ()):
                    continue
            elif not asked.get(wanted):
                continue
            tagged = {**params, "_meta": {META_SUBSCRIPTION_ID: request_id}}
            actions.append(Send({"jsonrpc": "2.0", "method": method, "params": tagged}))
        return actions

    @property
    def listening_for_tasks(self) -> bool:
        """Whether a task's change may be told here: a ``subscriptions/listen`` stream is
        open (only those hear of tasks; :meth:`task_changed` says which)."""
        return bool(self._listens) and not self._closed

    def task_changed(self, record: TaskRecord) -> list[Action]:
        """A ``notifications/tasks`` (the task as ``tasks/get`` shows it) for each open
        ``subscriptions/listen`` stream that asked for tasks and whose client owns it."""
        if self._closed or self._tasks is None or not self._listens:
            return []
        actions: list[Action] = []
        for request_id, asked in self._listens.items():
            if asked.get("tasks") and asked.get("owner") == record.owner:
                params = {
                    **self._tasks.detailed(record),
                    "_meta": {META_SUBSCRIPTION_ID: request_id},
                }
                actions.append(
                    Send({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params})
                )
        return actions

    # ------------------------------------------------------------------ dispatch

    def _on_request(self, request_id: str | int, method: str, params: Any) -> list[Action]:
        if request_id in self._by_request or request_id in self._listens:
            raise _Reject(
                INVALID_REQUEST,
                f"invalid request: id {request_id!r} is already in use by a request in "
                "progress; use a new id for each request",
            )
        if method not in _KNOWN_METHODS:
            raise _Reject(METHOD_NOT_FOUND, f"method not found: {method!r}")
        if params is None:
            params = {}
        elif not isinstance(params, dict):
            raise _Reject(
                INVALID_PARAMS, f"invalid params: expected an object, got {describe(params)}"
            )
        meta = params.get("_meta")
        if method == "initialize":
            if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
                raise _Reject(
                    METHOD_NOT_FOUND,
                    "method not found: 'initialize' is not part of protocol revision "
                    f"{meta[META_PROTOCOL_VERSION]}; a 2026-07-28 client sends _meta on every "
                    "request instead",
                )
            return self._initialize(request_id, params)
        if meta is not None and not isinstance(meta, dict):
            raise _Reject(
                INVALID_PARAMS, f"invalid params: _meta must be an object, got {describe(meta)}"
            )
        if meta is not None and META_PROTOCOL_VERSION in meta:
            client = self._modern_client(meta)
            if META_LOG_LEVEL in meta:  # checked on every request, not only on tools/call
                _log_level(meta[META_LOG_LEVEL], f"_meta[{META_LOG_LEVEL!r}]")
        elif method == "ping":
            # Legacy ping is answered at any time, even before initialize.
            return [self._result(request_id, {})]
        elif self._legacy is None:
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: missing _meta[{META_PROTOCOL_VERSION!r}] and "
                f"_meta[{META_CLIENT_CAPABILITIES!r}]; a 2026-07-28 client sends them on "
                "every request, an earlier client sends initialize first",
            )
        else:
            client = self._legacy
        feature = _FEATURE_OF.get(method)
        if feature is not None and feature not in _capabilities(self._toolkit, client.modern):
            raise _Reject(
                METHOD_NOT_FOUND,
                f"method not found: {method!r}; this server offers no {feature} (its "
                "capabilities do not declare them)",
            )
        if method == "tools/call":
            return self._call_tool(request_id, params, meta or {}, client)
        if method in _CALL_METHODS:
            arguments = self._served_arguments(method, params)
            return self._start(request_id, method, method, arguments, params, meta or {}, client)
        if method in _LEGACY_ONLY and not client.modern:
            if method == "logging/setLevel":
                self._legacy_log_level = _log_level(params.get("level"), "level")
            else:
                self._subscribe(method, params)
            return [self._result(request_id, {})]
        if method == "tools/list":
            return [self._reply(request_id, client, self._list_tools(params, client))]
        if method in _LISTS:
            return [self._reply(request_id, client, self._list(method, params, client))]
        if method == "server/discover" and client.modern:
            return [self._reply(request_id, client, self._discover())]
        if method == "subscriptions/listen" and client.modern:
            return self._listen(request_id, params)
        if method.startswith("tasks/") and client.modern and self._tasks is not None:
            return self._task_method(request_id, method, params, meta or {}, client)
        raise _Reject(
            METHOD_NOT_FOUND,
            f"method not found: {method!r} is not part of protocol revision {client.version}",
        )

    def _on_notification(self, method: str, params: Any) -> list[Action]:
        if method == "notifications/cancelled":
            return self._cancel_from(params)
        if method == "notifications/initialized":
            self._initialized_notified = True
        # Anything else (progress, roots/list_changed, unknown): nothing to do.
        return []

    def _on_response(self, message: Mapping[str, Any]) -> list[Action]:
        response_id = message.get("id")
        call = self._asked.pop(response_id, None) if isinstance(response_id, str) else None
        asking = call.asking if call is not None else None
        asked = asking.asked.pop(str(response_id), None) if asking is not None else None
        if call is None or asking is None or asked is None:
            _log.debug("ignoring a response to a request this server never sent: %r", response_id)
            return []
        request, shape = asked
        from .._suspension import Answer

        answer: Answer
        if "error" in message or message.get("jsonrpc") != "2.0":
            # A client that refuses to sample says so with an error: a decline.
            reason = "declined" if shape in ("sampling", "roots") else "cancelled"
            answer = Answer(request.id, False, None, reason)
        elif nested_too_deep(message.get("result")):
            # The same answer on every Python, whatever its recursion limits: the call is
            # answered -32602, as data too deep for the recursive code after this would be.
            self._withdraw(call)
            return self._failed(message, self._next_call, RecursionError(TOO_DEEP))
        else:
            try:
                answer = answer_from_response(request, shape, message.get("result"))
            except ValueError as exc:
                if shape in ("sampling", "roots"):
                    withdrawn = self._withdraw(call)
                    return withdrawn + self._fail(
                        call, f"{_who(call)} got an answer it cannot use: {exc}", INVALID_PARAMS
                    )
                _log.warning("treating a malformed elicitation result as cancelled: %s", exc)
                answer = Answer(request.id, False, None, "cancelled")
        asking.collected[request.id] = answer
        if asking.asked:
            return []  # more answers to come (several questions asked at once)
        call.asking = None
        question = asking.question
        whole = _whole_answer(question, asking.collected)
        return self._resume(call, question, whole, asking.shapes)

    # ------------------------------------------------------------------ eras

    def _initialize(self, request_id: str | int, params: Mapping[str, Any]) -> list[Action]:
        if self._legacy is not None:
            raise _Reject(
                INVALID_REQUEST,
                f"invalid request: initialize was already received (protocol revision "
                f"{self._legacy.version}); start a new server process for a new session",
            )
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: protocolVersion must be a string, got {describe(requested)}",
            )
        capabilities = params.get("capabilities")
        if capabilities is None:
            capabilities = {}
        elif not isinstance(capabilities, dict):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: capabilities must be an object, got {describe(capabilities)}",
            )
        client_info = params.get("clientInfo")
        if client_info is not None and not isinstance(client_info, dict):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: clientInfo must be an object, got {describe(client_info)}",
            )
        # Echo a version we speak; otherwise offer our newest legacy one.
        version = (
            requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[-1]
        )
        form, url = elicitation_modes(capabilities.get("elicitation"))
        if not at_least(version, "2025-06-18"):
            form = url = False  # elicitation did not exist yet
        elif version == "2025-06-18":
            url = False
        self._legacy = _Client(
            version,
            False,
            form,
            url,
            sampling=isinstance(capabilities.get("sampling"), dict),
            roots=isinstance(capabilities.get("roots"), dict),
        )
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": _capabilities(self._toolkit, False),
            "serverInfo": dict(self._server_info),
        }
        if self._instructions is not None:
            result["instructions"] = self._instructions
        return [self._result(request_id, result)]

    def _modern_client(self, meta: Mapping[str, Any]) -> _Client:
        version = meta.get(META_PROTOCOL_VERSION)
        if not isinstance(version, str):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: _meta[{META_PROTOCOL_VERSION!r}] must be a string, "
                f"got {describe(version)}",
            )
        capabilities = meta.get(META_CLIENT_CAPABILITIES)
        if not isinstance(capabilities, dict):
            problem = (
                "is missing"
                if capabilities is None
                else f"must be an object, got {describe(capabilities)}"
            )
            raise _Reject(
                INVALID_PARAMS, f"invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] {problem}"
            )
        if version not in MODERN_PROTOCOL_VERSIONS:
            raise _Reject(
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version {version!r}; this server speaks "
                f"{', '.join(self._supported_versions())} per request, and "
                f"{', '.join(LEGACY_PROTOCOL_VERSIONS)} through initialize",
                {"supported": self._supported_versions(), "requested": version},
            )
        if version == MODERN_PROTOCOL_VERSIONS[-1]:
            asking = capabilities.keys() & _ASKING
            if not asking:
                return self._plain_modern  # the common request: no per-message client to build
            if asking == {"extensions"} and capabilities["extensions"] == _TASKS_ONLY:
                return self._tasks_modern  # the common request of a client that takes tasks
        form, url = elicitation_modes(capabilities.get("elicitation"))
        extensions = capabilities.get("extensions")
        return _Client(
            version,
            True,
            form,
            url,
            sampling=isinstance(capabilities.get("sampling"), dict),
            roots=isinstance(capabilities.get("roots"), dict),
            tasks=isinstance(extensions, dict) and TASKS_EXTENSION in extensions,
        )

    @staticmethod
    def _supported_versions() -> list[str]:
        # What a modern request may name, newest first: server/discover and -32022 say the
        # same, so a client never picks an advertised version only to be refused.
        return list(reversed(MODERN_PROTOCOL_VERSIONS))

    def _modern_capabilities(self) -> dict[str, Any]:
        capabilities = _capabilities(self._toolkit, True)
        if self._tasks is not None:
            capabilities["extensions"] = {TASKS_EXTENSION: {}}
        return capabilities

    def _discover(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": self._supported_versions(),
            "capabilities": self._modern_capabilities(),
        }
        if self._instructions is not None:
            result["instructions"] = self._instructions
        result["ttlMs"] = self._list_ttl_ms
        result["cacheScope"] = "public"
        return result

    # ------------------------------------------------------------------ tools/list

    def _list_tools(self, params: Mapping[str, Any], client: _Client) -> dict[str, Any]:
        tools = self._toolkit.tools()
        cursor = params.get("cursor")
        offset = 0
        if cursor is not None:
            offset = self._read_cursor(cursor, len(tools))
        page = tools[offset : offset + self._page_size]
        # A tool whose entry JSON cannot carry is left out (and logged), never the list.
        entries = keep_listable([self._describe_tool(tool, client) for tool in page])
        result: dict[str, Any] = {"tools": entries}
        if offset + self._page_size < len(tools):
            result["nextCursor"] = f"{_CURSOR_PREFIX}{offset + self._page_size}"
        if client.modern:
            result["ttlMs"] = self._list_ttl_ms
            result["cacheScope"] = "public"
        return result

    @staticmethod
    def _read_cursor(cursor: Any, count: int) -> int:
        if isinstance(cursor, str) and cursor.startswith(_CURSOR_PREFIX):
            digits = cursor[len(_CURSOR_PREFIX) :]
            if digits.isascii() and digits.isdigit() and len(digits) < 10:
                offset = int(digits)
                if 0 < offset <= count:
                    return offset
        raise _Reject(
            INVALID_PARAMS,
            f"invalid params: cursor {describe(cursor)} was not issued by this server (or the "
            "tool list changed); list again without a cursor",
        )

    @staticmethod
    def _describe_tool(tool: Tool, client: _Client) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": tool.name}
        if tool.title and client.at_least("2025-06-18"):
            entry["title"] = tool.title
        entry["description"] = tool.description
        entry["inputSchema"] = thaw(tool.input_schema)  # a Tool's root is always an object
        output = tool.output_schema
        if output is not None and (
            client.modern or (client.at_least("2025-06-18") and output.get("type") == "object")
        ):
            entry["outputSchema"] = thaw(output)
        if tool.annotations and client.at_least("2025-03-26"):
            entry["annotations"] = thaw(tool.annotations)
        if client.tasks:  # a client of the tasks extension hears which tools run as tasks
            entry["execution"] = {"taskSupport": tool.task_support}
        return entry

    # ------------------------------------------------------------------ resources, prompts

    def _list(self, method: str, params: Mapping[str, Any], client: _Client) -> dict[str, Any]:
        """One page of ``resources/list``, ``resources/templates/list`` or ``prompts/list``."""
        key = _LISTS[method]
        if method == "prompts/list":
            described = [_describe_prompt(item, client) for item in self._toolkit.prompts()]
        else:
            templates = method == "resources/templates/list"
            described = [
                _describe_resource(item, client)
                for item in self._toolkit.resources()
                if item.is_template == templates
            ]
        cursor = params.get("cursor")
        offset = 0 if cursor is None else self._read_cursor(cursor, len(described))
        result: dict[str, Any] = {key: described[offset : offset + self._page_size]}
        if offset + self._page_size < len(described):
            result["nextCursor"] = f"{_CURSOR_PREFIX}{offset + self._page_size}"
        if client.modern:
            result["ttlMs"] = self._list_ttl_ms
            result["cacheScope"] = "public"
        return result

    def _listen(self, request_id: str | int, params: Mapping[str, Any]) -> list[Action]:
        """Open a ``subscriptions/listen`` stream: acknowledge what of the filter this
        server honours (its first message); the request stays open, carrying the change
        notifications it asked for, until the client cancels it or the server ends."""
        asked = params.get("notifications")
        if not isinstance(asked, dict):
            raise _Reject(
                INVALID_PARAMS,
                "invalid params: notifications must be an object naming what to hear, e.g. "
                f"{{'toolsListChanged': true}}, got {describe(asked)}",
            )
        offered = _capabilities(self._toolkit, True)
        honoured: dict[str, Any] = {}
        for key, capability in (
            ("toolsListChanged", "tools"),
            ("promptsListChanged", "prompts"),
            ("resourcesListChanged", "resources"),
        ):
            if asked.get(key) is True and capability in offered:
                honoured[key] = True
        uris = asked.get("resourceSubscriptions")
        if asked.get("tasks") is True and self._tasks is not None:
            honoured["tasks"] = True  # notifications/tasks (the tasks extension)
        if uris is not None:
            if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
                raise _Reject(
                    INVALID_PARAMS,
                    "invalid params: notifications.resourceSubscriptions must be a list of "
                    f"URIs, got {describe(uris)}",
                )
            if "resources" in offered:
                honoured["resourceSubscriptions"] = list(uris)
        self._listens[request_id] = {**honoured, "owner": self.owner}
        return [
            Send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": {
                        "notifications": honoured,
                        "_meta": {META_SUBSCRIPTION_ID: request_id},
                    },
                }
            )
        ]

    def _served_arguments(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments of a ``resources/read``, ``prompts/get`` or ``completion/complete``
        call (what ``Toolkit.resolve`` reads), checked so that a bad request is refused
        with ``-32602`` before anything runs."""
        toolkit = self._toolkit
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise _Reject(
                    INVALID_PARAMS, f"invalid params: uri must be a string, got {describe(uri)}"
                )
            found = toolkit.find_resource(uri)
            if found is None:
                # SEP-2164: never an empty contents list; the URI rides in the error's data.
                raise _Reject(
                    INVALID_PARAMS,
                    f"Resource not found: {uri!r}; resources/list and "
                    "resources/templates/list say what this server offers",
                    {"uri": uri},
                )
            problem = found[0].problem(uri)
            if problem is not None:  # a template variable that does not read as its type
                raise _Reject(
                    INVALID_PARAMS, f"Resource not found: {uri!r} ({problem})", {"uri": uri}
                )
            return {"uri": uri}
        if method == "prompts/get":
            name = params.get("name")
            if not isinstance(name, str):
                raise _Reject(
                    INVALID_PARAMS,
                    f"invalid params: name must be a string naming a prompt, got {describe(name)}",
                )
            try:
                item = toolkit.get_prompt(name)
            except LookupError as exc:
                raise _Reject(INVALID_PARAMS, f"invalid params: {exc.args[0]}") from None
            arguments = params.get("arguments")
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                raise _Reject(
                    INVALID_PARAMS,
                    f"invalid params: arguments must be an object of strings, got "
                    f"{describe(arguments)}",
                )
            problem = item.problem(arguments)
            if problem is not None:
                raise _Reject(INVALID_PARAMS, f"invalid params: {problem}")
            return {"name": name, "arguments": arguments}
        from ._served import completion_target

        ref = params.get("ref")
        target = completion_target(toolkit, ref)
        if isinstance(target, str) or not isinstance(ref, dict):
            raise _Reject(INVALID_PARAMS, f"invalid params: {target}")
        argument = params.get("argument")
        if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: argument must be {{'name': ..., 'value': ...}}, got "
                f"{describe(argument)}",
            )
        known = target._schema.get("properties") or {}
        if argument["name"] not in known:
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: {argument['name']!r} is not an argument of "
                f"{'prompt' if ref.get('type') == 'ref/prompt' else 'resource'} "
                f"{getattr(target, 'name', '')!r} (it has: {', '.join(known) or 'none'})",
            )
        if not isinstance(argument.get("value", ""), str):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: argument.value must be a string, got "
                f"{describe(argument.get('value'))}",
            )
        checked: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        context = params.get("context")
        if isinstance(context, dict):
            checked["context"] = context
        return checked

    def _served_result(self, call: _Call, result: ToolResult) -> list[Action]:
        """The answer to a finished ``resources/read``, ``prompts/get`` or
        ``completion/complete``: its MCP result, or the JSON-RPC error its failure is."""
        if result.is_error:
            from ._served import NOT_FOUND_KEY

            if call.method == "resources/read" and result.metadata.get(NOT_FOUND_KEY):
                # Its function says the URI names nothing: SEP-2164, as no match at all.
                uri = call.arguments.get("uri")
                self._forget(call)
                text = f"Resource not found: {uri!r} ({result.output})"
                return [self._error(call.request_id, INVALID_PARAMS, text, {"uri": uri})]
            return self._fail(call, f"{_who(call)} failed: {result.output}")
        from ._prompts import PROMPT_KEY
        from ._resources import CONTENTS_KEY
        from ._served import COMPLETION_KEY

        metadata = result.metadata
        client = call.client
        out: dict[str, Any]
        if call.method == "resources/read":
            uri = call.arguments["uri"]
            contents = [
                {**thaw(each), "uri": each.get("uri") or uri}
                for each in metadata.get(CONTENTS_KEY) or ()
            ]
            if not contents:
                return self._fail(call, f"{_who(call)} failed: it returned no contents")
            out = {"contents": contents}
            if client.modern:
                out["ttlMs"] = self._list_ttl_ms
                out["cacheScope"] = "public"
        elif call.method == "prompts/get":
            rendered = thaw(metadata.get(PROMPT_KEY) or {})
            audio, links = client.at_least("2025-03-26"), client.at_least("2025-06-18")
            for message in rendered.get("messages", ()):
                message["content"] = downgrade(
                    message["content"], audio=audio, resource_links=links
                )
            out = rendered
        else:
            out = {"completion": thaw(metadata.get(COMPLETION_KEY) or {"values": []})}
        return self._finish(call, out)

    def _subscribe(self, method: str, params: Mapping[str, Any]) -> None:
        """A legacy client's ``resources/subscribe`` or ``resources/unsubscribe``."""
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise _Reject(
                INVALID_PARAMS, f"invalid params: uri must be a string, got {describe(uri)}"
            )
        if method == "resources/subscribe":
            if self._toolkit.find_resource(uri) is None:
                raise _Reject(
                    INVALID_PARAMS,
                    f"Resource not found: {uri!r}; subscribe to a URI this server serves",
                    {"uri": uri},
                )
            self._subscribed.add(uri)
        else:
            self._subscribed.discard(uri)

    @property
    def subscriptions(self) -> frozenset[str]:
        """The resource URIs a legacy client subscribed to (``resources/subscribe``)."""
        return frozenset(self._subscribed)

    # ------------------------------------------------------------------ tools/call

    def _call_tool(
        self,
        request_id: str | int,
        params: Mapping[str, Any],
        meta: Mapping[str, Any],
        client: _Client,
    ) -> list[Action]:
        name = params.get("name")
        if not isinstance(name, str):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: name must be a string naming a tool, got {describe(name)}",
            )
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: arguments must be an object, got {describe(arguments)}",
            )
        try:
            support = self._toolkit.get(name).task_support
        except LookupError as exc:
            raise _Reject(
                INVALID_PARAMS, f"invalid params: {exc.args[0] if exc.args else exc}"
            ) from None
        return self._start(request_id, "tools/call", name, arguments, params, meta, client, support)

    def _start(
        self,
        request_id: str | int,
        method: str,
        name: str,
        arguments: dict[str, Any],
        params: Mapping[str, Any],
        meta: Mapping[str, Any],
        client: _Client,
        support: str = "forbidden",
    ) -> list[Action]:
        """Start a call of ``name`` (a tool, or a method in ``_CALL_METHODS``) — or, for a
        modern retry carrying ``requestState``, resume the one that asked. ``support`` is
        a tool's ``task_support``."""
        token = meta.get("progressToken")
        if token is not None and not is_request_id(token):
            token = None
        task_after: int | None = None
        required = False
        if method == "tools/call":
            tasks = self._tasks if client.tasks else None
            required = support == "required"
            if required and tasks is None:
                raise _Reject(
                    MISSING_CLIENT_CAPABILITY,
                    f"Missing required client capability: the tasks extension "
                    f"({TASKS_EXTENSION}); tool {name!r} runs only as a task",
                    {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
                )
            if tasks is not None and support != "forbidden" and tasks.has_room():
                task_after = tasks.after_ms
            elif required:
                raise _Reject(
                    INTERNAL_ERROR,
                    f"server overloaded: {tasks.running if tasks else 0} tasks run already, "
                    f"the most it runs at once; tool {name!r} runs only as a task: retry later",
                )
        # The level of log messages the call sends, as its client set it when it started.
        if not client.modern:
            log_level = self._legacy_log_level
        elif META_LOG_LEVEL in meta:
            log_level = _log_level(meta[META_LOG_LEVEL], f"_meta[{META_LOG_LEVEL!r}]")
        else:
            log_level = None
        self._next_call += 1
        call = _Call(
            self._next_call,
            request_id,
            name,
            arguments,
            client,
            token,
            method,
            self.owner,
            log_level,
            task_after,
            required,
        )
        self._calls[call.call_id] = call
        self._by_request[request_id] = call
        if method == "tools/call" and API_MODULE in sys.modules:  # else no trace: no call
            call.trace = incoming_trace(meta, request_id, client.version)
        state = params.get("requestState") if client.modern else None
        if state is not None:
            try:
                return self._retry(call, state, params.get("inputResponses"))
            except _Reject:
                self._forget(call)
                raise
        # StartCall(call.call_id, name, arguments, wants_progress=..., trace=...,
        # task_after_ms=..., wants_log=...), made as its _make makes it: no frame of the
        # named tuple's generated __new__ (every field, in _START_FIELDS' order).
        progress = token is not None
        trace = call.trace
        logs = call.log_level is not None
        fields = (
            call.call_id,
            name,
            arguments,
            None,
            None,
            progress,
            None,
            trace,
            task_after,
            logs,
            None,
        )
        return [_new_tuple(StartCall, fields)]

    def _forget(self, call: _Call) -> None:
        self._calls.pop(call.call_id, None)
        if self._by_request.get(call.request_id) is call:
            del self._by_request[call.request_id]
        if call.asking is not None:
            self._withdraw(call)

    def _finish(self, call: _Call, result: dict[str, Any]) -> list[Action]:
        self._forget(call)
        return [self._reply(call.request_id, call.client, result)]

    def _tool_result(self, client: _Client, result: ToolResult) -> dict[str, Any]:
        return _call_tool_result(client, result)

    # ------------------------------------------------------------------ tasks

    def promote(self, call_id: int, running: Call) -> tuple[list[Action], str | None]:
        """Make the call ``call_id`` — still running on the host as ``running`` — a task:
        its request is answered with the new task (a ``CreateTaskResult``) and the
        session forgets the call, which goes on for the task; the driver then reports its
        end to :meth:`Tasks.settle <toolnexus.mcp._tasks.Tasks.settle>`, not to
        :meth:`complete_call`. ``([], None)`` when it is no longer a call of this
        session's that may become one."""
        call = self._calls.get(call_id)
        if call is None or not call.running or self._tasks is None or call.task_after is None:
            return [], None
        actions = self._task_made(call, running=running)
        if call.call_id in self._calls:  # the task could not be made: it was answered
            return actions, None
        return actions, self._task_id

    def _task_made(
        self, call: _Call, *, running: Call | None = None, result: ToolResult | None = None
    ) -> list[Action]:
        from ._tasks import Refused

        assert self._tasks is not None
        state = {
            "method": call.method,
            "name": call.name,
            "arguments": call.arguments,
            "client": _client_state(call.client),
        }
        record = self._tasks.create(call.owner, state, call=running, result=result)
        if isinstance(record, Refused):
            if running is not None:
                return []  # the call stays in its request
            self._forget(call)
            return [self._error(call.request_id, record.code, record.message, record.data)]
        self._task_id = record.task_id
        self._forget(call)
        return [self._reply(call.request_id, call.client, self._tasks.created(record))]

    def _task_method(
        self,
        request_id: str | int,
        method: str,
        params: Mapping[str, Any],
        meta: Mapping[str, Any],
        client: _Client,
    ) -> list[Action]:
        """``tasks/get``, ``tasks/update`` or ``tasks/cancel`` (the client declared the
        extension, or is refused ``-32021``). A task answered in full runs again: a
        :class:`StartCall` for it follows the answer (through the call bridge, as every
        call runs)."""
        from ._tasks import Refused, Resume

        tasks = self._tasks
        assert tasks is not None
        if not client.tasks:
            raise _Reject(
                MISSING_CLIENT_CAPABILITY,
                f"Missing required client capability: the tasks extension ({TASKS_EXTENSION}); "
                f"declare it in _meta[{META_CLIENT_CAPABILITIES!r}].extensions to use {method}",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )
        task_id = params.get("taskId")
        done: Any
        if method == "tasks/get":
            done = tasks.find(task_id, self.owner)
        elif method == "tasks/update":
            done = tasks.update(task_id, self.owner, params.get("inputResponses"))
        elif method == "tasks/cancel":
            done = tasks.cancel(task_id, self.owner)
        else:
            done = Refused(
                METHOD_NOT_FOUND,
                f"method not found: {method!r} (the tasks extension has tasks/get, "
                "tasks/update and tasks/cancel)",
            )
        if isinstance(done, Refused):
            raise _Reject(done.code, done.message, done.data)
        result = tasks.detailed(done) if method == "tasks/get" else {}
        actions: list[Action] = [self._reply(request_id, client, result)]
        if isinstance(done, Resume):
            self._next_call += 1
            trace = None
            if API_MODULE in sys.modules:
                trace = incoming_trace(meta, request_id, client.version)
            actions.append(
                StartCall(
                    self._next_call,
                    done.name,
                    done.arguments,
                    done.request,
                    done.answer,
                    binding=done.binding,
                    trace=trace,
                    task=done.task_id,
                )
            )
        return actions

    @staticmethod
    def _error_result(client: _Client, text: str) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": text}], "isError": True}

    def _fail(self, call: _Call, text: str, code: int = INTERNAL_ERROR) -> list[Action]:
        """End ``call`` with the failure ``text``: a tool's as an error result the model
        reads, any other method's as the JSON-RPC error ``code``."""
        if call.method == "tools/call":
            return self._finish(call, self._error_result(call.client, text))
        self._forget(call)
        return [self._error(call.request_id, code, text)]

    # ------------------------------------------------------------------ suspensions

    def _suspend(self, call: _Call, request: Request, output: str) -> list[Action]:
        """Ask the question ``request`` (plain, or several at once): in an
        ``InputRequiredResult`` for a modern client, as requests of the server's own for a
        legacy one; ``-32021`` (modern) or a text to relay (legacy) when the client did
        not declare what it takes."""
        client = call.client
        plain = request.requests()
        for each in plain:
            problem = question_problem(each)
            if problem is not None:
                return self._fail(call, f"{_who(call)} asked a question MCP cannot ask: {problem}")
        # A legacy server sends no requests before the client said it is initialized.
        can_ask = client.modern or self._initialized_notified
        questions: dict[str, Question] = {}
        missing: dict[str, Any] = {}
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
        if missing:
            needed = ", ".join(_capability_words(key, value) for key, value in missing.items())
            if client.modern:
                # The 2026-07-28 revision names this error; legacy clients get the text.
                self._forget(call)
                raise _Reject(
                    MISSING_CLIENT_CAPABILITY,
                    f"Missing required client capability: {needed}; {_who(call)} asks: {output}",
                    {"requiredCapabilities": missing},
                )
            # Nobody can be asked: what the model should tell the user, never a hang —
            # phrased as a question to relay, not as a failure.
            declared = client.form or client.url or client.sampling or client.roots
            why = (
                "it has not said it is initialized yet"
                if declared and not can_ask
                else f"it has no {' or '.join(missing)} support"
            )
            return self._fail(
                call,
                f"{_who(call)} is waiting for an answer this client cannot collect "
                f"({why}); ask the user: {output}",
            )
        shapes = {key: shape for key, (_, _, shape) in questions.items()}
        if client.modern:
            state = self._issue_state(call, request, shapes)
            result = {
                "inputRequests": {
                    key: {"method": method, "params": params}
                    for key, (method, params, _) in questions.items()
                },
                "requestState": state,
            }
            return self._finish(call, {"resultType": "input_required", **result})
        asking = call.asking = _Asking(request, shapes)
        sends: list[Action] = []
        for each in plain:
            method, params, shape = questions[each.id]
            self._next_outgoing += 1
            outgoing = f"toolnexus-{_OUTGOING[method]}-{self._next_outgoing}"
            asking.asked[outgoing] = (each, shape)
            self._asked[outgoing] = call
            sends.append(
                Send({"jsonrpc": "2.0", "id": outgoing, "method": method, "params": params})
            )
        return sends

    def _withdraw(self, call: _Call) -> list[Action]:
        """Stop waiting for the legacy answers ``call`` still waits for; the
        ``notifications/cancelled`` that tell the client, so it can close its dialogs."""
        withdrawn: list[Action] = []
        asking, call.asking = call.asking, None
        for outgoing in asking.asked if asking is not None else ():
            self._asked.pop(outgoing, None)
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

    def _issue_state(
        self, call: _Call, request: Request, shapes: Mapping[str, ElicitationShape]
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
        return sign_state(payload, self._binder.keys)

    def _retry(self, call: _Call, state: Any, responses: Any) -> list[Action]:
        if not isinstance(state, str):
            raise _Reject(
                INVALID_PARAMS,
                f"invalid params: requestState must be a string, got {describe(state)}",
            )
        payload = open_state(state, self._binder.keys)
        if payload is None:
            hint = (
                ""
                if self._binder.is_configured
                else " (this server has no configured key: give it one with --secret-file or "
                "TOOLNEXUS_SECRET so states survive a restart)"
            )
            raise _Reject(
                INVALID_PARAMS,
                "invalid params: requestState was not issued by this server (or under another "
                f"key) or was modified{hint}; call the tool again without requestState",
            )
        if (
            payload.get("method") != call.method
            or payload.get("tool") != call.name
            or payload.get("args") != arguments_digest(call.arguments)
        ):
            raise _Reject(
                INVALID_PARAMS,
                "invalid params: requestState belongs to another call; retry with the same "
                "tool name and arguments as the call that returned it",
            )
        from .._suspension import Request

        try:
            request = Request.from_dict(payload["request"])
            plain = request.requests()
        except (KeyError, ValueError, TypeError):
            raise _Reject(INVALID_PARAMS, "invalid params: requestState is unreadable") from None
        shapes = payload.get("shapes")
        if not isinstance(shapes, dict):  # a state from before several questions
            shapes = {request.id: payload.get("shape")}
        exp = payload.get("exp")
        expired = not isinstance(exp, int) or exp <= self._clock()
        if responses is not None and not isinstance(responses, dict):
            raise _Reject(
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
                first = self._binder.store.consume(state.rpartition(".")[2], float(exp))
            except Exception as exc:  # the store failed: refuse, and use nothing up
                from .._binding import store_failed

                refusal = store_failed(exc, f"the requestState for {request.prompt!r}")
                if call.method != "tools/call":  # an error response: nothing was used
                    return self._fail(call, refusal.result.output)
                refused = self._error_result(call.client, refusal.result.output)
                refused["_meta"] = {META_ANSWER_UNUSED: True}  # the client may send it again
                return self._finish(call, refused)
            if first:
                call.state_exp = exp
                return None
            return self._fail(
                call,
                f"already answered: this requestState for {request.prompt!r} was used "
                "before; call the tool again without requestState to ask anew",
                INVALID_PARAMS,
            )

        unanswered = [each for each in plain if given.get(each.id) is None]
        if unanswered and not expired:
            # A question went unanswered: ask again (a new state, the same expiry).
            return spend() or self._suspend(call, request, ToolResult.pending(request).output)
        from .._suspension import Answer

        answer: Answer
        if expired:
            answer = Answer(request.id, False, None, "expired")
        else:
            # Built and checked before the state is used: an answer that fails (a bad
            # response, data nested too deeply, content off the schema) uses nothing up,
            # so the client can send a correct one with the same requestState.
            collected: dict[str, Answer] = {}
            for each in plain:
                response = given[each.id]
                if nested_too_deep(response):
                    raise _Reject(
                        INVALID_PARAMS,
                        f"invalid params: inputResponses[{each.id!r}] is nested too "
                        f"deeply ({TOO_DEEP}); send flatter data",
                    )
                try:
                    collected[each.id] = answer_from_response(
                        each, str(shapes.get(each.id)), response
                    )
                except ValueError as exc:
                    raise _Reject(
                        INVALID_PARAMS, f"invalid params: inputResponses[{each.id!r}]: {exc}"
                    ) from None
            answer = _whole_answer(request, collected)
        return self._resume(call, request, answer, shapes, spend)

    def _resume(
        self,
        call: _Call,
        request: Request,
        answer: Answer,
        shapes: Mapping[str, Any] | None = None,
        spend: Callable[[], list[Action] | None] | None = None,
    ) -> list[Action]:
        """Run the call again with ``answer``. ``spend`` (a modern retry) uses up its
        requestState once the answer passed its checks; a decline uses it up too."""
        from .._loop_rule import declined_text
        from .._suspension import decline_reason

        declined = answer.id != request.id or decline_reason(request, answer) is not None
        if not declined:
            for each in request.requests():
                sub = answer.answer_to(each)
                form = form_of(each, str((shapes or {}).get(each.id)))
                if form is None or sub is None or not sub.ok:
                    continue
                problem = content_problem(each, form, sub.data or {})
                if problem is not None:
                    # A decline with the reason: the tool is not run with data it did not
                    # ask for, and the state stays usable for a corrected answer.
                    return self._fail(call, problem, INVALID_PARAMS)
        if spend is not None:
            refused = spend()
            if refused is not None:
                return refused
        if declined:
            # The one meaning of "no" (also an approval's form with approved: false).
            return self._fail(call, declined_text(request))
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

    # ------------------------------------------------------------------ cancellation

    def _cancel_from(self, params: Any) -> list[Action]:
        # Malformed or unknown cancellations are ignored, as the specification says.
        if not isinstance(params, dict):
            return []
        request_id = params.get("requestId")
        if not is_request_id(request_id):
            return []
        if self._listens.pop(request_id, None) is not None:
            return []  # the client closed its subscription: nothing more is sent on it
        call = self._by_request.get(request_id)
        if call is None:
            return []
        reason = params.get("reason")
        reason = reason if isinstance(reason, str) else None
        actions: list[Action] = []
        if call.running:
            actions.append(CancelCall(call.call_id, reason))
        elif _waits_on(call):
            # Legacy: withdraw the questions too, so the client can close its dialogs.
            actions += self._withdraw(call)
        call.running = False
        self._forget(call)
        return actions

    # ------------------------------------------------------------------ replies

    def _reply(self, request_id: str | int, client: _Client, result: dict[str, Any]) -> Send:
        if client.modern:
            result.setdefault("resultType", "complete")
            result["_meta"] = {**result.get("_meta", {}), META_SERVER_INFO: self._server_info}
        return Send({"jsonrpc": "2.0", "id": request_id, "result": result})

    @staticmethod
    def _result(request_id: str | int, result: dict[str, Any]) -> Send:
        return Send({"jsonrpc": "2.0", "id": request_id, "result": result})

    @staticmethod
    def _error(request_id: Any, code: int, message: str, data: Any = None) -> Send:
        return Send(error_message(request_id, code, message, data))


_CHANGED = {
    "tools": "toolsListChanged",
    "resources": "resourcesListChanged",
    "prompts": "promptsListChanged",
}
"""The lists whose changes are told, and the subscriptions/listen filter key of each."""

_LISTS = {
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}
"""The list methods besides tools/list, and the key of each one's result."""


def _describe_resource(item: Any, client: _Client) -> dict[str, Any]:
    entry: dict[str, Any] = {"uriTemplate" if item.is_template else "uri": item.uri}
    entry["name"] = item.name
    if item.title and client.at_least("2025-06-18"):
        entry["title"] = item.title
    if item.description:
        entry["description"] = item.description
    if item.mime_type:
        entry["mimeType"] = item.mime_type
    if item.annotations:
        entry["annotations"] = thaw(item.annotations)
    return entry


def _describe_prompt(item: Any, client: _Client) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": item.name}
    if item.title and client.at_least("2025-06-18"):
        entry["title"] = item.title
    if item.description:
        entry["description"] = item.description
    arguments = []
    for argument in item.arguments:
        shown = dict(argument)
        if "title" in shown and not client.at_least("2025-06-18"):
            del shown["title"]
        arguments.append(shown)
    entry["arguments"] = arguments
    return entry


_OUTGOING = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}
"""How the id of each request the server sends begins (``toolnexus-elicit-3``)."""


def _whole_answer(request: Request, collected: Mapping[str, Answer]) -> Answer:
    """The one answer to ``request``: its own, or (several questions) all of them."""
    from .._suspension import SEVERAL, Answer

    if request.kind != SEVERAL:
        return collected[request.id]
    return Answer.several(request, [collected[each.id] for each in request.requests()])


def _capability_words(key: str, value: Any) -> str:
    """``sampling``, ``elicitation (form mode)``, ...: a missing capability, for a message."""
    if key == "elicitation" and isinstance(value, Mapping) and value:
        return f"elicitation ({', '.join(value)} mode)"
    return key


def _call_tool_result(client: _Client, result: ToolResult) -> dict[str, Any]:
    """A tool's result as the ``CallToolResult`` ``client`` reads."""
    if not result.parts:
        content = [{"type": "text", "text": result.output}]
    else:
        content = content_blocks(
            result,
            audio=client.at_least("2025-03-26"),
            resource_links=client.at_least("2025-06-18"),
        )
    out: dict[str, Any] = {"content": content, "isError": result.is_error}
    metadata = result.metadata
    if metadata is not None and STRUCTURED_KEY in metadata:
        structured = metadata[STRUCTURED_KEY]
        if client.carries(structured):
            out["structuredContent"] = thaw(structured)
    return out


def _client_state(client: _Client) -> dict[str, Any]:
    """What a task keeps of the (modern) client that made it: how to write to it."""
    return {
        "version": client.version,
        "form": client.form,
        "url": client.url,
        "sampling": client.sampling,
        "roots": client.roots,
    }


def _client_from_state(state: Mapping[str, Any]) -> _Client:
    return _Client(
        str(state.get("version") or MODERN_PROTOCOL_VERSIONS[-1]),
        True,
        bool(state.get("form")),
        bool(state.get("url")),
        sampling=bool(state.get("sampling")),
        roots=bool(state.get("roots")),
        tasks=True,
    )


def make_tasks(host: LazyHost, options: ServerOptions) -> Tasks:
    """The tasks of a server that runs its calls on ``host`` (one for all its sessions)."""
    from ._tasks import Tasks

    return Tasks(host, options, format_result=_call_tool_result, client_of=_client_from_state)


def _who(call: _Call) -> str:
    """How an error names what asked: ``tool 'deploy'``, ``prompt 'review'``, ..."""
    if call.method == "tools/call":
        return f"tool {call.name!r}"
    if call.method == "resources/read":
        return f"resource {call.arguments.get('uri')!r}"
    if call.method == "prompts/get":
        return f"prompt {call.arguments.get('name')!r}"
    return "the completion"


def _capabilities(toolkit: Toolkit, modern: bool) -> dict[str, Any]:
    """What the server offers: resources, prompts and completion only when the toolkit
    has resources or prompts (a server of tools alone says so)."""
    capabilities: dict[str, Any] = {"tools": {"listChanged": True}}
    resources = toolkit.resources()
    prompts = toolkit.prompts()
    if resources:
        # modern clients subscribe to a resource on subscriptions/listen
        capabilities["resources"] = {"subscribe": True, "listChanged": True}
    if prompts:
        capabilities["prompts"] = {"listChanged": True}
    if prompts or any(item.is_template for item in resources):
        capabilities["completions"] = {}
    capabilities["logging"] = {}
    return capabilities


def _log_level(value: Any, where: str) -> int:
    rank = level_rank(value)
    if rank is None:
        raise _Reject(
            INVALID_PARAMS,
            f"invalid params: {where} must be one of {', '.join(LOG_LEVELS)}, "
            f"got {describe(value)}",
        )
    return rank
