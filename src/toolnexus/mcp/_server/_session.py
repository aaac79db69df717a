"""The MCP server session without I/O: parsed JSON-RPC messages in, actions out.

:class:`ServerSession` is the whole protocol state machine of a dual-era MCP server (the
modern stateless 2026-07-28 revision and the legacy ``initialize`` revisions 2024-11-05
… 2025-11-25). It never reads or writes a stream and never runs a tool: it returns
:class:`Send` (a message to write), :class:`StartCall` (run a tool on the host) and
:class:`CancelCall` (cancel a running one), and the driver that owns the streams and the
host reports back with :meth:`ServerSession.complete_call` and
:meth:`ServerSession.report_progress`. The stdio driver (``toolnexus.mcp._server._stdio``) is one
such driver; a web server or a socket loop can be another.

The session is not thread-safe: a driver serialises calls into it (one lock) and writes
the :class:`Send` actions it gets back, in order, before releasing that lock — that is
what keeps progress notifications ahead of the response they belong to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..._log import LazyLogger
from ..._result import ToolResult
from .._shared import _codec as codec
from .._shared._codec import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    TOO_DEEP,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .._shared._correlation import reused_id
from .._shared._protocol import (
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
    describe,
    is_request_id,
)
from . import (
    _feature_completion,
    _feature_discover,
    _feature_logging,
    _feature_prompts,
    _feature_resources,
    _feature_skills,
    _feature_tasks,
    _feature_tools,
)
from ._context import BOTH, MODERN, Feature, Method, ServerContext
from ._feature_discover import end_listens, initialize, list_changed, modern_client, task_changed
from ._feature_logging import log_message
from ._options import ServerOptions
from ._types import (
    Action,
    CancelCall,
    Detached,
    Reject,
    Send,
    StartCall,
    check_result,
    error,
    handling_failed,
    level_of,
    plain_result,
    question_of,
)

if TYPE_CHECKING:
    from ..._host import Call
    from ..._toolkit import Toolkit
    from ...stores import TaskRecord
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
    "Detached",
    "Send",
    "ServerSession",
    "StartCall",
]

_log = LazyLogger()  # logging loads with the first record, not with the server


_FEATURES: tuple[Feature, ...] = (
    _feature_discover.FEATURE,
    _feature_tools.FEATURE,
    _feature_resources.FEATURE,
    _feature_prompts.FEATURE,
    _feature_completion.FEATURE,
    _feature_logging.FEATURE,
    _feature_tasks.FEATURE,
    _feature_skills.FEATURE,
)
"""The server's features, in the order their capabilities are declared."""
_METHODS: dict[str, tuple[Feature, Method]] = {
    name: (feature, method) for feature in _FEATURES for name, method in feature.methods.items()
}
"""The method table: each method's feature (what must be declared) and its handler."""


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
        self._ctx = ServerContext(toolkit, options, clock, _tasks, _FEATURES)
        self._closed = False

    @property
    def owner(self) -> str | None:
        """Who sends the request being handled (the digest of its credential): a driver
        sets it before each request; a task made of a call belongs to it."""
        return self._ctx.owner

    @owner.setter
    def owner(self, owner: str | None) -> None:
        self._ctx.owner = owner

    @property
    def _toolkit(self) -> Toolkit:
        return self._ctx.toolkit

    # ------------------------------------------------------------------ state

    @property
    def protocol_version(self) -> str | None:
        """The revision negotiated by ``initialize``, or ``None`` before (and on a
        connection that only ever spoke the modern, stateless revision)."""
        return self._ctx.legacy.version if self._ctx.legacy is not None else None

    @property
    def initialized(self) -> bool:
        """True once a legacy client said ``notifications/initialized``."""
        return self._ctx.initialized

    @property
    def running_calls(self) -> int:
        """How many started calls have not been completed or cancelled yet."""
        return sum(1 for call in self._ctx.calls.values() if call.running)

    def __repr__(self) -> str:
        era = (
            f"legacy {self._ctx.legacy.version}"
            if self._ctx.legacy is not None
            else "not initialized"
        )
        return f"<ServerSession {era}, {len(self._ctx.calls)} call(s) in flight>"

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
                    return [error(None, PARSE_ERROR, f"parse error: the line is not UTF-8 ({exc})")]
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
                return [error(None, PARSE_ERROR, f"parse error: not valid JSON ({exc})")]
        except Exception as exc:  # MemoryError decoding or parsing: nothing names the request
            return [
                error(
                    None,
                    INTERNAL_ERROR,
                    f"internal error reading the line: {type(exc).__name__}: {exc}",
                )
            ]
        newest = self._ctx.next_call  # what receive() does, without its frame: once per line
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
            return [error(None, PARSE_ERROR, f"parse error: not valid JSON ({exc})")]
        if self._closed:
            return []
        if "method" not in stand_in:  # a response: to an elicitation of ours, or to nothing
            call = self._ctx.questions.take(ident)
            if call is None:
                return []
            self._ctx.questions.withdraw(
                call
            )  # as when its parsed result fails: the call is answered
            return self._failed({"id": ident}, self._ctx.next_call, exc)
        return self._failed(stand_in, self._ctx.next_call, exc)

    def _failed(self, message: Any, newest: int, exc: Exception) -> list[Action]:
        """Answer what :meth:`receive` was handling when it raised ``exc``: the request
        itself, and any call the message left neither running nor asking (a legacy
        elicitation response that failed while it was being read)."""
        code, text = handling_failed(exc)
        answered: list[str | int] = []
        if isinstance(message, dict) and "method" in message:
            request_id = message.get("id")
            if "id" in message and is_request_id(request_id):
                answered.append(request_id)
        # A call this message created, or one it took the answer of, is answered here.
        for call_request in self._ctx.unanswered(newest):
            if call_request not in answered:
                answered.append(call_request)
        return [error(request_id, code, text) for request_id in answered]

    def line_too_long(self, length: int, limit: int) -> list[Action]:
        """Answer a line the driver refused to read whole (``length`` bytes and more
        when over ``limit``): ``-32600`` with ``id: null``, as its id is unreadable."""
        return [
            error(
                None,
                INVALID_REQUEST,
                f"message too large: {length} bytes or more, the limit is {limit} bytes",
            )
        ]

    def line_failed(self, problem: str) -> list[Action]:
        """Answer a line the driver could not read or hand over (``problem`` says why, e.g.
        out of memory): ``-32603`` with ``id: null``, as its id is unknown."""
        return [error(None, INTERNAL_ERROR, f"internal error: {problem}")]

    def fail_call(self, call_id: int, code: int, message: str) -> list[Action]:
        """Answer the request of a :class:`StartCall` the driver will not carry out with
        the JSON-RPC error ``code`` and ``message`` (a driver over its capacity, say), and
        forget the call. Nothing when the call is no longer running.

        Example::

            for action in session.fail_call(start.call_id, -32603, "server overloaded"):
                stream.write(action.to_bytes())
        """
        call = self._ctx.calls.get(call_id)
        if call is None or not call.running:
            return []
        self._ctx.forget(call)
        return [error(call.request_id, code, message)]

    def receive(self, message: Any) -> list[Action]:
        """Handle one parsed JSON-RPC message (a request, notification or response).

        Returns the actions to carry out, in order. Never raises for anything a client
        can send: a malformed message is answered with the JSON-RPC error the
        specification names (or ignored, for notifications and stray responses), and a
        failure while handling it (data nested too deep, ``MemoryError``, a bug) answers
        the request ``-32602``/``-32603`` (see :meth:`receive_line`).
        """
        newest = self._ctx.next_call
        try:
            return self._receive(message)
        except Exception as exc:
            return self._failed(message, newest, exc)

    def _receive(self, message: Any) -> list[Action]:
        if self._closed:
            return []
        if isinstance(message, list):
            return [
                error(
                    None,
                    INVALID_REQUEST,
                    "invalid request: JSON-RPC batches (arrays) are not supported; "
                    "send one message per line",
                )
            ]
        if not isinstance(message, dict):
            return [
                error(
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
                error(
                    echo,
                    INVALID_REQUEST,
                    'invalid request: "jsonrpc" must be "2.0", got '
                    f"{describe(message.get('jsonrpc'))}",
                )
            ]
        method = message.get("method")
        if not isinstance(method, str):
            return [
                error(
                    echo,
                    INVALID_REQUEST,
                    f'invalid request: "method" must be a string, got {describe(method)}',
                )
            ]
        if not has_id:
            return self._on_notification(method, message.get("params"))
        if echo is None:
            return [
                error(
                    None,
                    INVALID_REQUEST,
                    'invalid request: "id" must be a string or an integer, got '
                    f"{describe(request_id)}",
                )
            ]
        try:
            return self._on_request(echo, method, message.get("params"))
        except Reject as exc:
            return [error(echo, exc.code, exc.message, exc.data)]

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
            check_result("complete_call", result)
        call = self._ctx.calls.get(call_id)
        if call is None or not call.running:
            return []
        call.running = False
        request = question_of(result)
        if request is not None:
            return self._ctx.questions.ask(self._ctx, call, result, request)
        finish = _METHODS[call.method][1].finish
        assert finish is not None  # only the methods that start calls have calls
        return finish(self._ctx, call, result)

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
        call = self._ctx.calls.get(call_id)
        if call is None or not call.running:
            return []
        return self._ctx.progress(call, progress, total, message)

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
        call = self._ctx.calls.get(call_id)
        if call is None or not call.running:
            return []
        return log_message(call, level, data, logger)

    def close(self) -> list[Action]:
        """End the session (the client went away): cancel every call still in flight.

        Returns a :class:`CancelCall` for each running call; afterwards the session
        sends nothing and ignores further input.
        """
        self._closed = True
        return self._ctx.cancel_all("the client closed the connection") + self._end_listens()

    def _end_listens(self) -> list[Action]:
        """End every open ``subscriptions/listen`` stream with its response (the stream
        closes gracefully); calls are left as they are."""
        return end_listens(self._ctx)

    def _runs_detached(self) -> None:
        """The driver (the package's call bridge) runs :class:`Detached` actions: the
        session returns one for a request that waits on another server."""
        self._ctx.detaches = True

    def _detached(self, request_id: str | int, actions: list[Action]) -> list[Action] | None:
        """The actions that answer the :class:`Detached` request ``request_id`` (its
        work's, run off the lock, or its refusal), to deliver: none once the session is
        closed (the client went away); None when the client cancelled it (no answer is
        sent; a transport ends what waits for it)."""
        if not self._ctx.detached_answered(request_id):
            return None
        return [] if self._closed else actions

    def in_progress(self, request_id: str | int) -> bool:
        """Whether the request ``request_id`` is still being answered (a call, an open
        ``subscriptions/listen`` stream, or a request answered off the lock)."""
        context = self._ctx
        return request_id in context.detaching or context.by_request.in_use(
            request_id, context.listens
        )

    @property
    def listening(self) -> bool:
        """Whether anyone hears of changes here: a legacy client past ``initialize``, or an
        open modern ``subscriptions/listen`` stream."""
        return bool(self._ctx.listens) or (self._ctx.legacy is not None and not self._closed)

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
        return [] if self._closed else list_changed(self._ctx, kind, uri)

    @property
    def listening_for_tasks(self) -> bool:
        """Whether a task's change may be told here: a ``subscriptions/listen`` stream is
        open (only those hear of tasks; :meth:`task_changed` says which)."""
        return bool(self._ctx.listens) and not self._closed

    def task_changed(self, record: TaskRecord) -> list[Action]:
        """A ``notifications/tasks`` (the task as ``tasks/get`` shows it) for each open
        ``subscriptions/listen`` stream that asked for tasks and whose client owns it."""
        return [] if self._closed else task_changed(self._ctx, record)

    @property
    def subscriptions(self) -> frozenset[str]:
        """The resource URIs a legacy client subscribed to (``resources/subscribe``)."""
        return frozenset(self._ctx.subscribed)

    def promote(self, call_id: int, running: Call) -> tuple[list[Action], str | None]:
        """Make the call ``call_id`` — still running on the host as ``running`` — a task:
        its request is answered with the new task (a ``CreateTaskResult``) and the
        session forgets the call, which goes on for the task; the driver then reports its
        end to :meth:`Tasks.settle <toolnexus.mcp._server._tasks.Tasks.settle>`, not to
        :meth:`complete_call`. ``([], None)`` when it is no longer a call of this
        session's that may become one."""
        from ._feature_tasks import promote

        return promote(self._ctx, call_id, running)

    # ------------------------------------------------------------------ dispatch

    def _on_request(self, request_id: str | int, method: str, params: Any) -> list[Action]:
        if self.in_progress(request_id):  # the one rule of an id in flight
            raise Reject(INVALID_REQUEST, reused_id(request_id))
        context = self._ctx
        entry = _METHODS.get(method)
        if entry is None and method != "initialize":
            raise Reject(METHOD_NOT_FOUND, f"method not found: {method!r}")
        if params is None:
            params = {}
        elif not isinstance(params, dict):
            raise Reject(
                INVALID_PARAMS, f"invalid params: expected an object, got {describe(params)}"
            )
        meta = params.get("_meta")
        if entry is None:  # initialize: it chooses the era
            return [initialize(context, request_id, params)]
        if meta is not None and not isinstance(meta, dict):
            raise Reject(
                INVALID_PARAMS, f"invalid params: _meta must be an object, got {describe(meta)}"
            )
        if meta is not None and META_PROTOCOL_VERSION in meta:
            client = modern_client(meta)
            if META_LOG_LEVEL in meta:  # checked on every request, not only on tools/call
                level_of(meta[META_LOG_LEVEL], f"_meta[{META_LOG_LEVEL!r}]")
        elif method == "ping":
            # Legacy ping is answered at any time, even before initialize.
            return [plain_result(request_id, {})]
        elif context.legacy is None:
            raise Reject(
                INVALID_PARAMS,
                f"invalid params: missing _meta[{META_PROTOCOL_VERSION!r}] and "
                f"_meta[{META_CLIENT_CAPABILITIES!r}]; a 2026-07-28 client sends them on "
                "every request, an earlier client sends initialize first",
            )
        else:
            client = context.legacy
        feature, handler = entry
        if not context.offers(feature, client.modern):
            raise Reject(
                METHOD_NOT_FOUND,
                f"method not found: {method!r}; this server offers no {feature.name} (its "
                "capabilities do not declare them)",
            )
        if handler.era != BOTH and (handler.era == MODERN) != client.modern:
            raise Reject(
                METHOD_NOT_FOUND,
                f"method not found: {method!r} is not part of protocol revision {client.version}",
            )
        return handler.handle(context, request_id, params, meta or {}, client)

    def _on_notification(self, method: str, params: Any) -> list[Action]:
        if method == "notifications/cancelled":
            return self._ctx.cancelled(params)
        if method == "notifications/initialized":
            self._ctx.initialized = True
        # Anything else (progress, roots/list_changed, unknown): nothing to do.
        return []

    def _on_response(self, message: Mapping[str, Any]) -> list[Action]:
        # A legacy client's answer to one of our questions (see mcp/_shared/_questions.py).
        answered = self._ctx.questions.answered(self._ctx, message)
        if answered is None:  # nested too deeply: answered as a message too deep to handle
            return self._failed(message, self._ctx.next_call, RecursionError(TOO_DEEP))
        return answered
