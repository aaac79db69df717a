"""What a server session's feature handlers get of it: :class:`ServerContext` — the
server's settings (read from :class:`~toolnexus.mcp.ServerOptions` here, once), the
era's state, the call table and the actions that end a call — and the shape of the method
table (:class:`Feature`, :class:`Method`).

A feature handler module (``mcp/_server/_feature_tools.py``, ``_feature_resources.py``, ...)
declares one :class:`Feature`: the capability it offers and the methods it answers. The
session (``mcp/_server/_session.py``) builds its method table from them and answers only what a
declared feature has, so what it declares and what it answers never disagree.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..._tracing import API_MODULE
from ..._tracing import incoming as incoming_trace
from .._shared import _codec as codec
from .._shared._catalog import cache_scope
from .._shared._codec import INTERNAL_ERROR, INVALID_PARAMS
from .._shared._correlation import InFlight
from .._shared._protocol import META_LOG_LEVEL, META_SERVER_INFO, describe, is_request_id
from .._shared._questions import is_finite_number
from ._options import ServerOptions, resolve
from ._questions import ServerQuestions
from ._types import (
    Action,
    CallState,
    CancelCall,
    ClientView,
    Detached,
    Reject,
    Send,
    StartCall,
    error,
    level_of,
    waits_on,
)

if TYPE_CHECKING:
    from ..._result import ToolResult
    from ..._toolkit import Toolkit
    from ._tasks import Tasks

__all__ = ["BOTH", "LEGACY", "MODERN", "Feature", "Method", "ServerContext"]

LEGACY = "legacy"
"""A method of the ``initialize`` revisions only (removed by 2026-07-28)."""
MODERN = "modern"
"""A method of the 2026-07-28 revision only."""
BOTH = "both"
"""A method of every revision."""

_CURSOR_PREFIX = "tnx1:"

Handler = Callable[
    ["ServerContext", "str | int", "dict[str, Any]", "Mapping[str, Any]", ClientView],
    "list[Action]",
]
Finisher = Callable[["ServerContext", CallState, "ToolResult"], "list[Action]"]


class Method(NamedTuple):
    """One method of the table: ``handle(context, request_id, params, meta, client)``
    answers a request; ``era`` is the revisions that have it (:data:`BOTH`,
    :data:`LEGACY`, :data:`MODERN`). A method that runs user code on the host starts a
    call (:meth:`ServerContext.start`), and ``finish(context, call, result)`` answers its
    request with what the call returned."""

    handle: Handler
    era: str = BOTH
    finish: Finisher | None = None


class Feature(NamedTuple):
    """One feature of the server: ``declare(context, modern)`` gives the capabilities it
    adds to ``initialize``/``server/discover`` (``{}`` when it adds none), or None when
    the server does not offer it; ``methods`` are the methods it answers (only while it
    is offered: ``-32601`` otherwise)."""

    name: str
    declare: Callable[[ServerContext, bool], dict[str, Any] | None]
    methods: Mapping[str, Method]


class Detaching:
    """A :class:`Detached` request in flight: whether its client cancelled it."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


class ServerContext:
    """One session's state, as its feature handlers use it. Not thread-safe (the session
    is not): a driver serialises every call into the session."""

    def __init__(
        self,
        toolkit: Toolkit,
        options: ServerOptions | None,
        clock: Callable[[], float],
        tasks: Tasks | None,
        features: tuple[Feature, ...],
    ) -> None:
        options = resolve(options)
        version = options.version
        if version is None:
            from ..._version import __version__ as version
        from ..._binding import Binder

        self.toolkit = toolkit
        self.tasks = tasks  # the server's tasks (None: this session runs none)
        self.features = features
        self.server_info = {"name": options.name, "version": version}
        # What reply() adds to every modern result, and its text for the codec's template
        # (a tool's text answer is written without building its message; None: it cannot).
        # Never changed: every answer shares them.
        self.modern_members: Mapping[str, Any] = {
            "resultType": "complete",
            "_meta": {META_SERVER_INFO: self.server_info},
        }
        self.modern_members_text = codec.encode_shared(self.modern_members)
        # The same without resultType, for a result that says its own (a task's).
        self.modern_meta_text = codec.encode_shared({"_meta": self.modern_members["_meta"]})
        self.instructions = options.instructions
        self.page_size = options.page_size
        self.list_ttl_ms = options.list_ttl_ms
        # search=True: tools/list shows the core and the meta-tools, every other tool is
        # held back (a view that defers by default; a tool's own setting still wins)
        self.search_view = toolkit.view(defer=True) if options.search else None
        settings = options.host  # the host's key, store and rounds: the session asks for it
        self.questions = ServerQuestions(
            Binder(settings.secret, store=settings.answer_store),
            state_ttl_s=options.state_ttl_ms / 1000,
            max_rounds=settings.max_rounds,
            clock=clock,
        )
        self.legacy: ClientView | None = None  # set by initialize
        self.initialized = False  # a legacy client said notifications/initialized
        self.legacy_log_level: int | None = None  # set by logging/setLevel
        self.subscribed: set[str] = set()  # resources/subscribe (legacy)
        # modern subscriptions/listen streams still open: request id -> what each asked for
        # (and, under "owner", who opened it: they hear of their own tasks only)
        self.listens: InFlight[dict[str, Any]] = InFlight()
        # Who sends the request being handled (the digest of its credential): a task made
        # of a call belongs to it.
        self.owner: str | None = None
        self.calls: dict[int, CallState] = {}
        # The calls by the client's request id: in flight until answered (the shared rule
        # of the ids a peer sends us: one in flight is refused, a cancel finds it).
        self.by_request: InFlight[CallState] = InFlight()
        self.next_call = 0
        # Whether the driver answers a Detached action (the package's call bridge does):
        # else such a request is answered inline, as a driver of its own expects.
        self.detaches = False
        # The requests answered off the session's lock (Detached) until they are: their
        # ids are in flight too, and a cancel finds them.
        self.detaching: InFlight[Detaching] = InFlight()

    # ------------------------------------------------------------------ the table

    def capabilities(self, modern: bool) -> dict[str, Any]:
        """What the server declares to a client of that era: each offered feature's part."""
        declared: dict[str, Any] = {}
        for feature in self.features:
            part = feature.declare(self, modern)
            if part is None:
                continue
            # extensions (tasks, skills) share one "extensions" object
            extensions = {**declared.get("extensions", {}), **part.get("extensions", {})}
            declared.update(part)
            if extensions:
                declared["extensions"] = extensions
        return declared

    def offers(self, feature: Feature, modern: bool) -> bool:
        """Whether ``feature`` is declared to a client of that era."""
        return feature.declare(self, modern) is not None

    # ------------------------------------------------------------------ calls

    def new_call_id(self) -> int:
        self.next_call += 1
        return self.next_call

    def start(
        self,
        request_id: str | int,
        method: str,
        name: str,
        arguments: dict[str, Any],
        params: Mapping[str, Any],
        meta: Mapping[str, Any],
        client: ClientView,
        *,
        task_after: int | None = None,
        task_required: bool = False,
        hand_over: tuple[object, str] | None = None,
    ) -> list[Action]:
        """Start a call of ``name`` (a tool, or the method itself for the other methods
        that run on the host) — or, for a modern retry carrying ``requestState``, resume
        the one that asked. ``task_after``: the call becomes a task after that long (ms);
        ``task_required``: it is answered only through a task; ``hand_over``: its
        upstream's task is the caller's (see :class:`StartCall`)."""
        token = meta.get("progressToken")
        if token is not None and not is_request_id(token):
            token = None
        # The level of log messages the call sends, as its client set it when it started.
        if not client.modern:
            log_level = self.legacy_log_level
        elif META_LOG_LEVEL in meta:
            log_level = level_of(meta[META_LOG_LEVEL], f"_meta[{META_LOG_LEVEL!r}]")
        else:
            log_level = None
        call = CallState(
            self.new_call_id(),
            request_id,
            name,
            arguments,
            client,
            token,
            method,
            self.owner,
            log_level,
            task_after,
            task_required,
        )
        self.calls[call.call_id] = call
        self.by_request.begin(request_id, call)  # (_on_request refused an id in use)
        if method == "tools/call" and API_MODULE in sys.modules:  # else no trace: no call
            call.trace = incoming_trace(meta, request_id, client.version)
        state = params.get("requestState") if client.modern else None
        if state is not None:
            try:
                return self.questions.retry(self, call, state, params.get("inputResponses"))
            except Reject:
                self.forget(call)
                raise
        return [
            StartCall(
                call.call_id,
                name,
                arguments,
                wants_progress=token is not None,
                trace=call.trace,
                task_after_ms=task_after,
                wants_log=log_level is not None,
                hand_over=hand_over,
            )
        ]

    def forget(self, call: CallState) -> None:
        """Drop ``call`` from the table (withdrawing a legacy question it waits on)."""
        self.calls.pop(call.call_id, None)
        self.by_request.end(call.request_id, call)
        if call.asking is not None:
            self.questions.withdraw(call)

    def cancelled(self, params: Any) -> list[Action]:
        """A ``notifications/cancelled``: end the request it names — a call (cancelled
        on the host if it runs; a legacy question it waits on withdrawn) or an open
        ``subscriptions/listen`` stream. Malformed or unknown cancellations are ignored,
        as the specification says."""
        listen = self.listens.cancelled(params)
        if listen is not None:
            # The client closed its subscription: nothing more is sent on it.
            self.listens.end(params["requestId"], listen)
            return []
        detaching = self.detaching.cancelled(params)
        if detaching is not None:
            detaching.cancelled = True  # its answer is not sent (see detached_answered)
            return []
        call = self.by_request.cancelled(params)
        if call is None:
            return []
        reason = params.get("reason")
        reason = reason if isinstance(reason, str) else None
        actions: list[Action] = []
        if call.running:
            actions.append(CancelCall(call.call_id, reason))
        elif waits_on(call):
            # Legacy: withdraw the questions too, so the client can close its dialogs.
            actions += self.questions.withdraw(call)
        call.running = False
        self.forget(call)
        return actions

    def unanswered(self, newest: int) -> list[str | int]:
        """Forget each call a failed message left unanswered — one it created (its id
        above ``newest``) or one it took the answer of (neither running nor asking) — and
        give their request ids, to answer with the failure."""
        request_ids: list[str | int] = []
        for call in list(self.calls.values()):
            if call.call_id > newest or (not call.running and not waits_on(call)):
                self.forget(call)
                request_ids.append(call.request_id)
        return request_ids

    def cancel_all(self, reason: str) -> list[Action]:
        """Forget every call and question (the session ends): a :class:`CancelCall` for
        each call still running."""
        actions: list[Action] = [
            CancelCall(call.call_id, reason) for call in self.calls.values() if call.running
        ]
        self.calls.clear()
        self.by_request.clear()
        self.detaching.clear()
        self.questions.clear()
        return actions

    def progress(
        self, call: CallState, progress: float, total: float | None, message: str | None
    ) -> list[Action]:
        """A ``notifications/progress`` for ``call`` when its client asked for progress
        (``_meta.progressToken``) and ``progress`` is a finite number above the last one
        sent; otherwise nothing."""
        if call.progress_token is None or not is_finite_number(progress):
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

    def detached(
        self, request_id: str | int, work: Callable[[], list[Action]], key: str
    ) -> list[Action]:
        """Answer ``request_id`` with what ``work()`` says when it waits on another server
        (blocking; it may raise :class:`Reject`): a :class:`Detached` action, run by the
        driver off the thread that reads this session, at most a few at once per ``key``;
        answered here and now for a driver that runs none."""
        if not self.detaches:
            return work()
        import contextvars

        self.detaching.begin(request_id, Detaching())  # (_on_request refused an id in use)
        return [Detached(request_id, work, contextvars.copy_context(), key)]

    def detached_answered(self, request_id: str | int) -> bool:
        """The :class:`Detached` request ``request_id`` is answered (or failed): it leaves
        the requests in flight. False when its client cancelled it meanwhile: then no
        answer is sent, as a cancelled request gets none."""
        detaching = self.detaching.get(request_id)
        if detaching is None:
            return True  # (the session ended meanwhile: its close forgot it)
        self.detaching.end(request_id, detaching)
        return not detaching.cancelled

    def finish(self, call: CallState, body: dict[str, Any]) -> list[Action]:
        """Answer ``call``'s request with ``body`` and forget the call."""
        self.forget(call)
        return [self.reply(call.request_id, call.client, body)]

    def fail(self, call: CallState, text: str, code: int = INTERNAL_ERROR) -> list[Action]:
        """End ``call`` with the failure ``text``: a tool's as an error result the model
        reads, any other method's as the JSON-RPC error ``code``."""
        if call.method == "tools/call":
            return self.finish(call, {"content": [{"type": "text", "text": text}], "isError": True})
        self.forget(call)
        return [error(call.request_id, code, text)]

    # ------------------------------------------------------------------ replies

    def reply(
        self,
        request_id: str | int,
        client: ClientView,
        body: dict[str, Any],
        written: tuple[str, str] | None = None,
    ) -> Send:
        """The response ``body`` to ``request_id``; a modern one says it is complete
        (unless it says otherwise) and names the server in its ``_meta``. ``written``:
        ``(key, text)``, the member ``body[key]`` as it was encoded already (a task's
        result): the answer is written around the text.

        The answer's line is written from the codec's template
        (:func:`~toolnexus.mcp._shared._codec.result_reply`), the members a modern answer
        adds from their text (encoded once); a body with a ``_meta`` of its own is
        encoded whole."""
        members: str | None = ""
        if client.modern:
            members = (
                None
                if "_meta" in body
                else self.modern_meta_text
                if "resultType" in body
                else self.modern_members_text
            )
        line = None
        if members is not None and (members or written is not None):
            line = codec.result_reply(request_id, body, members, written)
        if client.modern:
            added = self.modern_members
            body.setdefault("resultType", added["resultType"])
            body["_meta"] = {**body.get("_meta", {}), **added["_meta"]}
        send = Send({"jsonrpc": "2.0", "id": request_id, "result": body})
        send._line = line
        return send

    def replies_alike(self) -> Hashable:
        """All that :meth:`reply` and :meth:`cache_hints` read of this session, as a key:
        sessions with equal keys answer alike (a page kept for one serves the others)."""
        return self.server_info["name"], self.server_info["version"], self.list_ttl_ms

    def cache_hints(self, body: dict[str, Any], client: ClientView) -> dict[str, Any]:
        """``body`` with the modern era's cache hints (a list, a resource's contents):
        ``cacheScope`` is ``"private"`` when what the caller sees depends on its scopes
        (:func:`~toolnexus.mcp._shared._catalog.cache_scope`)."""
        if client.modern:
            body["ttlMs"] = self.list_ttl_ms
            body["cacheScope"] = cache_scope()
        return body

    def page(
        self,
        key: str,
        items: list[Any],
        describe: Callable[[list[Any]], list[Any]],
        params: Mapping[str, Any],
        client: ClientView,
    ) -> dict[str, Any]:
        """One page of a list method's ``items`` from the ``cursor`` in ``params``, as
        ``describe`` writes them (only the page's), under ``key``; ``nextCursor`` when
        more follow."""
        return self.cache_hints(self.page_at(key, items, describe, self.offset(params)), client)

    def offset(self, params: Mapping[str, Any]) -> int:
        """Where the page the ``cursor`` in ``params`` asks for starts (0 without one);
        refused ``-32602`` for a cursor this server does not write. :meth:`page_at`
        checks it against the list."""
        cursor = params.get("cursor")
        if cursor is None:
            return 0
        if isinstance(cursor, str) and cursor.startswith(_CURSOR_PREFIX):
            digits = cursor[len(_CURSOR_PREFIX) :]
            offset = (
                int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 10 else 0
            )
            if offset > 0:
                return offset
        raise Reject(INVALID_PARAMS, _not_issued(cursor, "the list"))

    def page_at(
        self, key: str, items: list[Any], describe: Callable[[list[Any]], list[Any]], offset: int
    ) -> dict[str, Any]:
        """The page of ``items`` at ``offset`` (from :meth:`offset`; refused past the
        end), as ``describe`` writes them, under ``key``; ``nextCursor`` when more follow.
        Without the cache hints: :meth:`page` adds them."""
        if offset > len(items):
            raise Reject(
                INVALID_PARAMS, _not_issued(f"{_CURSOR_PREFIX}{offset}", f"the {key} list")
            )
        end = offset + self.page_size
        body: dict[str, Any] = {key: describe(items[offset:end])}
        if end < len(items):
            body["nextCursor"] = f"{_CURSOR_PREFIX}{end}"
        return body


def _not_issued(cursor: Any, changed: str) -> str:
    """A cursor this server did not write, or one past the end of ``changed`` (the list
    it pages, which may have shrunk since)."""
    return (
        f"invalid params: cursor {describe(cursor)} was not issued by this server (or "
        f"{changed} changed); list again without a cursor"
    )
