"""The one place a server's options live: :class:`ServerOptions`, taken by every transport.

A server is configured once, by value: ``ServerSession``, ``serve_stdio``, ``HttpServer``,
``serve_http`` and ``asgi_app`` all take the same frozen object, so an option has one name,
one unit (milliseconds for every duration, bytes for every size), one default and one
check, whichever transport it reaches.

Its settings come in small frozen groups, each read by the one part that uses it (as
httpx's ``Limits`` and ``Timeout``): :class:`HostOptions` by the host the calls run on,
:class:`TaskOptions` by the tasks, :class:`HttpOptions` by the HTTP server and endpoint,
:class:`AccessOptions` by the HTTP authentication. ``ServerOptions`` itself keeps what the
session and every transport read. Every group validates its own fields; mapping and list
fields are kept as read-only copies, so every value here is hashable and a caller's
later change to a dict it passed changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, InitVar, dataclass
from typing import TYPE_CHECKING, Any

from ..._frozen import FrozenDict, sealed
from ...errors import InvalidTypeError, InvalidValueError

if TYPE_CHECKING:
    from ..._principal import Principal
    from ...stores import AnswerStore, TaskStore
    from ._auth import ProtectedResource

__all__ = [
    "AccessOptions",
    "HostOptions",
    "HttpOptions",
    "ServerOptions",
    "TaskOptions",
    "TokenVerifier",
    "resolve",
]

TokenVerifier = Callable[[str], "bool | Principal | None"]
"""``verify(token) -> bool``: a caller's check of an HTTP bearer token (a
:class:`~toolnexus.Principal` instead of ``True`` also reaches the tools as
``ctx.principal``)."""

_MIB = 1024 * 1024


def _kind(value: object) -> str:
    return type(value).__name__


def _number(owner: str, label: str, value: Any, *, minimum: int, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        unit = (
            " (milliseconds)"
            if label.endswith("_ms")
            else (" (bytes)" if label.endswith("_bytes") else "")
        )
        none = "None or " if optional else ""
        raise InvalidValueError(
            f"{owner}.{label} must be {none}an int >= {minimum}{unit}, got {value!r}"
        )


def _frozen_secret(secret: Any) -> Any:
    if isinstance(secret, bytearray):
        return bytes(secret)
    if secret is None or isinstance(secret, (str, bytes)) or not isinstance(secret, Iterable):
        return secret
    return tuple(bytes(key) if isinstance(key, bytearray) else key for key in secret)


@sealed
@dataclass(frozen=True, slots=True)
class HostOptions:
    """How the host that runs a server's calls behaves: ``ServerOptions(host=...)``.

    The same settings as :class:`~toolnexus.Host`'s; the server's session reads ``secret``,
    ``answer_store`` and ``max_rounds`` too (to sign and check what it asks).

    Attributes:
        timeout_ms: each call's deadline on the host; None: no deadline.
        secret: the key(s) that sign the modern ``requestState`` and bind each question to
            its call; None reads ``TOOLNEXUS_SECRET``, else a random per-process key. Give
            every process (replica, restart) the same key to resume what another asked.
            A list of keys is kept as a tuple.
        answer_store: where used answers are remembered so each counts once (see
            :mod:`toolnexus.stores`; give every replica the same one, e.g.
            ``open_store("postgresql://…")``); None: the store ``TOOLNEXUS_STORE`` names,
            else one in memory per process.
        max_rounds: how many answers one call may take: 1 (the loop rule) makes a retry
            that asks again ``unresolved: <prompt>``.
        middleware: policies run around every served call (see :mod:`toolnexus.policies`),
            as ``Host(middleware=...)``; kept as a tuple.
        tool_middleware: more middleware for some tools (names or globs to lists), as
            ``Host(tool_middleware=...)``; kept as a read-only copy (a dict of tuples).

    Example::

        from toolnexus.mcp import HostOptions, ServerOptions
        from toolnexus.policies import retry

        options = ServerOptions(host=HostOptions(timeout_ms=30_000, middleware=[retry()]))
    """

    timeout_ms: int | None = None
    secret: bytes | str | Sequence[bytes | str] | None = None
    answer_store: AnswerStore | None = None
    max_rounds: int = 1
    middleware: Sequence[Any] = ()
    tool_middleware: Mapping[str, Sequence[Any]] | None = None

    def __post_init__(self) -> None:
        _number("HostOptions", "timeout_ms", self.timeout_ms, minimum=0, optional=True)
        _number("HostOptions", "max_rounds", self.max_rounds, minimum=1)
        # A read-only copy of the key(s): a list becomes a tuple, a bytearray bytes (the
        # Binder checks each key).
        object.__setattr__(self, "secret", _frozen_secret(self.secret))
        if self.answer_store is not None and not callable(
            getattr(self.answer_store, "consume", None)
        ):
            raise InvalidTypeError(
                "HostOptions.answer_store must have a consume(key, expires_at) method "
                f"(an AnswerStore), got {_kind(self.answer_store)}"
            )
        if self.middleware or self.tool_middleware is not None:
            from ..._chain import Policies  # checks them now, at the line that gave them

            Policies(self.middleware, self.tool_middleware, False)
            object.__setattr__(self, "middleware", tuple(self.middleware))
        if self.tool_middleware is not None:
            object.__setattr__(
                self,
                "tool_middleware",
                FrozenDict({name: tuple(each) for name, each in self.tool_middleware.items()}),
            )


@sealed
@dataclass(frozen=True, slots=True)
class TaskOptions:
    """How a server runs calls as tasks (the tasks extension): ``ServerOptions(tasks=...)``.

    Attributes:
        task_after_ms: how long a call runs in its request before it becomes a task, for a
            client that takes tasks (a quicker call is answered as usual; a tool's
            ``task_support`` may forbid or require tasks).
        task_ttl_ms: how long a task is kept after its last change (its ``ttlMs``).
        task_poll_ms: how often a client should poll a task (its ``pollIntervalMs``).
        task_store: where task records live (see :mod:`toolnexus.stores`); None: in
            memory, per process — give an ``SqliteTaskStore`` for tasks that outlive it.
        max_tasks: how many tasks may run in this process at once; beyond it, calls are
            answered in their request (a tool that requires a task is refused).
        max_running_tasks_per_owner: how many tasks one client (one credential) may have
            running at once — a quarter of the host's 64 workers by default, so one
            client's burst of tasks leaves workers to every other. Beyond it, a call of
            that client stays a plain call answered in its request (it holds its
            connection, so the HTTP server's per-client limits apply to it); a tool that
            requires a task is still answered through a task, made when the call ends.
        max_stored_tasks: how many task records this process keeps at once, running and
            finished (the tasks it made; with a shared store, each replica keeps its own
            bound). When full, the oldest finished task is evicted (its ``tasks/get``
            answers ``-32602`` saying so); a new task is refused only when unfinished ones
            alone fill it.
        max_stored_tasks_per_owner: the same bound per client (per credential; every
            client is one when the server asks for none).
        max_stored_result_bytes: the most bytes of finished tasks' results this process
            keeps at once (their JSON; in memory a result takes about twice that). When a
            result would pass it, the oldest finished tasks are evicted first; a result
            larger than the whole bound is kept as an error result saying so.

    Example::

        from toolnexus.mcp import ServerOptions, TaskOptions
        from toolnexus.stores import SqliteTaskStore

        tasks = TaskOptions(task_after_ms=500, task_store=SqliteTaskStore("tasks.db"))
        options = ServerOptions(tasks=tasks)
    """

    task_after_ms: int = 1_000
    task_ttl_ms: int = 60 * 60_000
    task_poll_ms: int = 1_000
    task_store: TaskStore | None = None
    max_tasks: int = 1_000
    max_stored_tasks: int = 2_000
    max_stored_tasks_per_owner: int = 500
    # (added later: after the others, so a positional TaskOptions(...) keeps its meaning)
    max_running_tasks_per_owner: int = 16
    max_stored_result_bytes: int = 64 * _MIB

    def __post_init__(self) -> None:
        _number("TaskOptions", "task_after_ms", self.task_after_ms, minimum=0)
        for label in (
            "task_ttl_ms",
            "task_poll_ms",
            "max_tasks",
            "max_running_tasks_per_owner",
            "max_stored_tasks",
            "max_stored_tasks_per_owner",
            "max_stored_result_bytes",
        ):
            _number("TaskOptions", label, getattr(self, label), minimum=1)
        if self.task_store is not None and not callable(getattr(self.task_store, "update", None)):
            raise InvalidTypeError(
                "TaskOptions.task_store must be a TaskStore (create, get, update, purge), "
                f"got {_kind(self.task_store)}"
            )


@sealed
@dataclass(frozen=True, slots=True)
class HttpOptions:
    """How an MCP HTTP server treats connections and requests: ``ServerOptions(http=...)``.

    Read by the embedded server (:class:`~toolnexus.mcp.HttpServer`) and the endpoint both
    HTTP transports share (the ASGI app reads ``request_timeout_ms`` and the session and
    stream limits). Sizes of messages and calls in flight are every transport's: see
    :class:`ServerOptions`.

    Attributes:
        allowed_hosts: ``Host`` names answered besides localhost's; ``("*",)``: any
            (behind a proxy that checks). Not access control: see :class:`AccessOptions`.
            Kept as a tuple.
        allowed_origins: ``Origin`` values accepted besides localhost's when a request
            carries one; ``("*",)``: any. Kept as a tuple.
        max_connections: (embedded server) connections open at once, kept below the
            process's file descriptor limit (``RLIMIT_NOFILE`` less an eighth, at least
            64); when full, the oldest idle one (else the oldest still sending its request
            head) is closed for a new one, or the new one gets 503 when none is.
        max_connections_per_peer: (embedded server) requests in progress at once from one
            address (idle kept-alive connections do not count); more get 503.
        max_requests: (embedded server) requests answered at once (threads); more wait
            their turn. A connection holds none while it is idle or still sending.
        first_byte_timeout_ms: (embedded server) how long a new connection may take to
            send a whole request head (silent: closed; a head still coming: 408); on a
            kept-alive connection, from the request's first byte.
        request_timeout_ms: how long a request's body may take to arrive once its head is
            in (then 408; for the ASGI app too), and the most its head may take.
        keep_alive_ms: (embedded server) how long an idle connection stays open between
            requests.
        send_timeout_ms: (embedded server) how long one write may take: a client that does
            not read its answer is dropped, and its call cancelled.
        session_idle_ms: how long an idle legacy session lives.
        session_unused_ms: how long a legacy session lives that never completed its
            initialization or never made a call.
        max_sessions: how many legacy sessions may exist at once; a new one evicts the
            least useful idle one (never used first, then the longest idle).
        max_sessions_per_peer: legacy sessions one address may hold; a new one evicts that
            address's least useful idle one.
        max_streams: notification streams open at once — modern ``subscriptions/listen``
            streams and legacy sessions' GET streams (each holds a worker of the embedded
            server); more are answered 503.

    Example::

        from toolnexus.mcp import HttpOptions, ServerOptions

        http = HttpOptions(allowed_hosts=["tools.example.com"], max_requests=128)
        options = ServerOptions(http=http)
    """

    allowed_hosts: Iterable[str] | None = None
    allowed_origins: Iterable[str] | None = None
    max_connections: int = 1_024
    max_connections_per_peer: int = 256
    max_requests: int = 64
    first_byte_timeout_ms: int = 3_000
    request_timeout_ms: int = 10_000
    keep_alive_ms: int = 30_000
    send_timeout_ms: int = 10_000
    session_idle_ms: int = 30 * 60_000
    session_unused_ms: int = 60_000
    max_sessions: int = 1_000
    max_sessions_per_peer: int = 100
    max_streams: int = 16

    def __post_init__(self) -> None:
        for label in (
            "first_byte_timeout_ms",
            "request_timeout_ms",
            "keep_alive_ms",
            "send_timeout_ms",
            "session_idle_ms",
            "session_unused_ms",
        ):
            _number("HttpOptions", label, getattr(self, label), minimum=0)
        for label in (
            "max_connections",
            "max_connections_per_peer",
            "max_requests",
            "max_sessions",
            "max_sessions_per_peer",
            "max_streams",
        ):
            _number("HttpOptions", label, getattr(self, label), minimum=1)
        for label in ("allowed_hosts", "allowed_origins"):
            values = getattr(self, label)
            if values is None:
                continue
            if isinstance(values, str):
                raise InvalidTypeError(
                    f"HttpOptions.{label} must be a list of strings, not one string: [{values!r}]"
                )
            items = tuple(values)
            for item in items:
                if not isinstance(item, str) or not item.strip():
                    raise InvalidValueError(
                        f"HttpOptions.{label} must hold non-empty strings, got {item!r}"
                    )
            object.__setattr__(self, label, items)


@sealed
@dataclass(frozen=True, slots=True)
class AccessOptions:
    """Who may call an MCP HTTP server: ``ServerOptions(access=...)``.

    Give at most one of ``token``, ``verify_token`` and ``auth``. Without any, the embedded
    server listens on loopback only, unless ``insecure_no_auth``.

    Attributes:
        token: the bearer token every request must carry; None: none needed. Visible ASCII
            only (what a header can carry), compared as bytes in constant time.
        verify_token: a check of the bearer token, instead of ``token``: true (or a
            :class:`~toolnexus.Principal`, which tools then see as ``ctx.principal``)
            accepts it.
        auth: OAuth 2.1: the server as a protected resource whose access tokens come from an
            authorization server (:class:`~toolnexus.mcp.ProtectedResource`: metadata,
            audience, scopes per tool); see ``docs/auth.md``.
        insecure_no_auth: (embedded server) allow listening on an address other than
            loopback without ``token``, ``verify_token`` or ``auth``; refused otherwise.

    Example::

        from toolnexus.mcp import AccessOptions, ServerOptions

        options = ServerOptions(access=AccessOptions(token="s3cr3t-t0ken"))
    """

    token: str | None = None
    verify_token: TokenVerifier | None = None
    auth: ProtectedResource | None = None
    insecure_no_auth: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.insecure_no_auth, bool):
            raise InvalidTypeError(
                f"AccessOptions.insecure_no_auth must be a bool, got {_kind(self.insecure_no_auth)}"
            )
        token = self.token
        if token is not None:
            if not isinstance(token, str) or not token.strip():
                raise InvalidValueError("AccessOptions.token must be a non-empty str or None")
            token = token.strip()
            if not all("!" <= char <= "~" for char in token):
                raise InvalidValueError(
                    "AccessOptions.token cannot be sent in an HTTP header: it has a space, a "
                    "control character or a character outside ASCII; use visible ASCII "
                    "characters only, e.g. the output of "
                    "python -c 'import secrets; print(secrets.token_urlsafe())'"
                )
            object.__setattr__(self, "token", token)
        if self.verify_token is not None and not callable(self.verify_token):
            raise InvalidTypeError(
                "AccessOptions.verify_token must be callable or None, got "
                f"{_kind(self.verify_token)}"
            )
        if self.auth is not None:
            from ._auth import ProtectedResource

            if not isinstance(self.auth, ProtectedResource):
                raise InvalidTypeError(
                    "AccessOptions.auth must be a toolnexus.mcp.ProtectedResource or None, "
                    f"got {_kind(self.auth)}"
                )
            if self.token is not None or self.verify_token is not None:
                raise InvalidValueError(
                    "AccessOptions: give one of token, verify_token and auth: auth (OAuth) "
                    "verifies the bearer token itself"
                )


@dataclass(frozen=True, slots=True)
class _Flat:
    """The default of a flat keyword of :class:`ServerOptions`: "not given here; the field
    ``name`` of the group ``group`` holds it"."""

    group: str
    name: str

    def __bool__(self) -> bool:
        # Reading a flat keyword back (options.token) finds this default: say where to read.
        raise InvalidTypeError(
            f"ServerOptions.{self.name} is a keyword only; read options.{self.group}.{self.name}"
        )


@sealed
@dataclass(frozen=True, slots=True)
class ServerOptions:
    """How an MCP server behaves, for every transport (stdio, HTTP, ASGI).

    Build one with keywords; change one with :meth:`replace`. Every duration is in
    milliseconds, every size in bytes; a bad value raises ``ValueError``/``TypeError``
    naming the field at construction.

    Most settings live in small groups, each read by the part that uses it:
    ``host`` (:class:`HostOptions`: deadline, key, answer store, middleware), ``tasks``
    (:class:`TaskOptions`), ``http`` (:class:`HttpOptions`: connections, timeouts, legacy
    sessions, streams) and ``access`` (:class:`AccessOptions`: token, verifier, OAuth).
    Every group field may also be given here as a flat keyword of the same name
    (``ServerOptions(timeout_ms=5_000)`` is ``ServerOptions(host=HostOptions(timeout_ms=5_000))``):
    it fills its group. Giving one both ways (flat, and non-default in the group) is an
    error naming both. Read a group's settings through the group (``options.host.timeout_ms``).

    Attributes:
        name: the server's name clients see (``serverInfo.name``).
        version: its version (``serverInfo.version``); None: toolnexus's version.
        instructions: guidance for the model, sent at ``initialize`` and
            ``server/discover``; None: none.
        page_size: tools per ``tools/list`` page (``nextCursor`` beyond it).
        list_ttl_ms: the ``ttlMs`` cache hint on modern list and discover results.
        state_ttl_ms: how long a modern ``requestState`` stays valid.
        grace_ms: when the input ends (stdio) or the server shuts down (HTTP), how long
            running calls get to answer before they are cancelled.
        max_message_bytes: the largest message read (a stdio line, an HTTP body); larger
            ones are refused without being kept.
        max_inflight_bytes: the most bytes of ``tools/call`` requests whose calls may run
            at once; a request beyond it is answered "server overloaded".
        search: offer a large toolkit as a small core plus search: ``tools/list`` lists
            only the tools marked ``defer=False`` (themselves or by their namespace) and
            the meta-tools ``search_tools`` and ``call_tool``; every other tool is found
            by search (docs/tool-search.md). ``tools/call`` still runs any tool by name.
        host: the host's settings (:class:`HostOptions`).
        tasks: the tasks' settings (:class:`TaskOptions`).
        http: the HTTP server's settings (:class:`HttpOptions`).
        access: who may call over HTTP (:class:`AccessOptions`).

    Example::

        from toolnexus.mcp import HostOptions, HttpOptions, ServerOptions, serve_stdio

        options = ServerOptions(
            name="calculator",
            host=HostOptions(timeout_ms=30_000),
            http=HttpOptions(max_requests=128),
        )
        same = ServerOptions(name="calculator", timeout_ms=30_000, max_requests=128)
        assert options == same
        serve_stdio(toolkit, options)
    """

    name: str = "toolnexus"
    version: str | None = None
    instructions: str | None = None
    _: KW_ONLY
    page_size: int = 100
    list_ttl_ms: int = 60_000
    state_ttl_ms: int = 30 * 60_000
    grace_ms: int = 1_000
    max_message_bytes: int = 16 * _MIB
    max_inflight_bytes: int = 64 * _MIB
    search: bool = False
    host: HostOptions = HostOptions()
    tasks: TaskOptions = TaskOptions()
    http: HttpOptions = HttpOptions()
    access: AccessOptions = AccessOptions()
    # The flat keywords: each fills the same-named field of its group (a test checks
    # that these are exactly the groups' fields).
    timeout_ms: InitVar[int | _Flat | None] = _Flat("host", "timeout_ms")
    secret: InitVar[bytes | str | Sequence[bytes | str] | _Flat | None] = _Flat("host", "secret")
    answer_store: InitVar[AnswerStore | _Flat | None] = _Flat("host", "answer_store")
    max_rounds: InitVar[int | _Flat] = _Flat("host", "max_rounds")
    middleware: InitVar[Sequence[Any] | _Flat] = _Flat("host", "middleware")
    tool_middleware: InitVar[Mapping[str, Sequence[Any]] | _Flat | None] = _Flat(
        "host", "tool_middleware"
    )
    task_after_ms: InitVar[int | _Flat] = _Flat("tasks", "task_after_ms")
    task_ttl_ms: InitVar[int | _Flat] = _Flat("tasks", "task_ttl_ms")
    task_poll_ms: InitVar[int | _Flat] = _Flat("tasks", "task_poll_ms")
    task_store: InitVar[TaskStore | _Flat | None] = _Flat("tasks", "task_store")
    max_tasks: InitVar[int | _Flat] = _Flat("tasks", "max_tasks")
    max_stored_tasks: InitVar[int | _Flat] = _Flat("tasks", "max_stored_tasks")
    max_running_tasks_per_owner: InitVar[int | _Flat] = _Flat(
        "tasks", "max_running_tasks_per_owner"
    )
    max_stored_tasks_per_owner: InitVar[int | _Flat] = _Flat("tasks", "max_stored_tasks_per_owner")
    max_stored_result_bytes: InitVar[int | _Flat] = _Flat("tasks", "max_stored_result_bytes")
    allowed_hosts: InitVar[Iterable[str] | _Flat | None] = _Flat("http", "allowed_hosts")
    allowed_origins: InitVar[Iterable[str] | _Flat | None] = _Flat("http", "allowed_origins")
    max_connections: InitVar[int | _Flat] = _Flat("http", "max_connections")
    max_connections_per_peer: InitVar[int | _Flat] = _Flat("http", "max_connections_per_peer")
    max_requests: InitVar[int | _Flat] = _Flat("http", "max_requests")
    first_byte_timeout_ms: InitVar[int | _Flat] = _Flat("http", "first_byte_timeout_ms")
    request_timeout_ms: InitVar[int | _Flat] = _Flat("http", "request_timeout_ms")
    keep_alive_ms: InitVar[int | _Flat] = _Flat("http", "keep_alive_ms")
    send_timeout_ms: InitVar[int | _Flat] = _Flat("http", "send_timeout_ms")
    session_idle_ms: InitVar[int | _Flat] = _Flat("http", "session_idle_ms")
    session_unused_ms: InitVar[int | _Flat] = _Flat("http", "session_unused_ms")
    max_sessions: InitVar[int | _Flat] = _Flat("http", "max_sessions")
    max_sessions_per_peer: InitVar[int | _Flat] = _Flat("http", "max_sessions_per_peer")
    max_streams: InitVar[int | _Flat] = _Flat("http", "max_streams")
    token: InitVar[str | _Flat | None] = _Flat("access", "token")
    verify_token: InitVar[TokenVerifier | _Flat | None] = _Flat("access", "verify_token")
    auth: InitVar[ProtectedResource | _Flat | None] = _Flat("access", "auth")
    insecure_no_auth: InitVar[bool | _Flat] = _Flat("access", "insecure_no_auth")

    def __post_init__(self, *flat: Any) -> None:
        for label in ("name", "version"):
            value = getattr(self, label)
            if (value is not None or label == "name") and (not isinstance(value, str) or not value):
                raise InvalidValueError(
                    f"ServerOptions.{label} must be a non-empty str, got {value!r}"
                )
        if self.instructions is not None and not isinstance(self.instructions, str):
            raise InvalidTypeError(
                f"ServerOptions.instructions must be a str or None, got {_kind(self.instructions)}"
            )
        _number("ServerOptions", "page_size", self.page_size, minimum=1)
        for label in ("list_ttl_ms", "state_ttl_ms", "grace_ms"):
            _number("ServerOptions", label, getattr(self, label), minimum=0)
        _number("ServerOptions", "max_message_bytes", self.max_message_bytes, minimum=64)
        _number("ServerOptions", "max_inflight_bytes", self.max_inflight_bytes, minimum=1)
        if not isinstance(self.search, bool):
            raise InvalidTypeError(
                f"ServerOptions.search must be True or False, got {_kind(self.search)}"
            )
        # The flat keywords given (a default is the _Flat naming its field), by group.
        given: dict[str, dict[str, Any]] = {}
        for (group, label), value in zip(_FLAT, flat, strict=True):
            if not isinstance(value, _Flat):
                given.setdefault(group, {})[label] = value
        for group, kind in _GROUPS.items():
            current = getattr(self, group)
            if not isinstance(current, kind):
                raise InvalidTypeError(
                    f"ServerOptions.{group} must be a toolnexus.mcp.{kind.__name__}, "
                    f"got {_kind(current)}"
                )
            changes = given.get(group)
            if not changes:
                continue
            default = _DEFAULTS[group]
            for label in changes:
                if getattr(current, label) != getattr(default, label):
                    raise InvalidValueError(
                        f"ServerOptions: {label} is given twice, as the keyword {label}=... "
                        f"and in {group}={kind.__name__}({label}=...); give it once (to "
                        f"change it in existing options: options.replace({label}=...))"
                    )
            object.__setattr__(self, group, dataclasses.replace(current, **changes))

    def replace(self, **changes: Any) -> ServerOptions:
        """A copy with ``changes`` applied (checked as at construction); a flat keyword
        changes that field of its group.

        Example::

            quick = options.replace(timeout_ms=5_000)
            wider = options.replace(http=HttpOptions(max_requests=256))
        """
        groups: dict[str, dict[str, Any]] = {}
        for group, label in _FLAT:
            if label in changes and group not in changes:
                groups.setdefault(group, {})[label] = changes.pop(label)
        for group, fields in groups.items():
            changes[group] = dataclasses.replace(getattr(self, group), **fields)
        return dataclasses.replace(self, **changes)


_GROUPS: dict[str, type[Any]] = {
    "host": HostOptions,
    "tasks": TaskOptions,
    "http": HttpOptions,
    "access": AccessOptions,
}
_DEFAULTS = {group: kind() for group, kind in _GROUPS.items()}
# (group, field) of each flat keyword, in the order __post_init__ receives them.
_FLAT = tuple(
    (each.default.group, each.name)
    for each in ServerOptions.__dataclass_fields__.values()
    if isinstance(each.default, _Flat)
)


def resolve(options: ServerOptions | None) -> ServerOptions:
    """``options``, or the defaults for None; ``TypeError`` for anything else."""
    if options is None:
        return ServerOptions()
    if not isinstance(options, ServerOptions):
        raise InvalidTypeError(
            "options must be a ServerOptions (toolnexus.mcp.ServerOptions(...)), got "
            f"{type(options).__name__}"
        )
    return options
