"""The one place a server's options live: :class:`ServerOptions`, taken by every transport.

A server is configured once, by value: ``ServerSession``, ``serve_stdio``, ``HttpServer``,
``serve_http`` and ``asgi_app`` all take the same frozen object, so an option has one name,
one unit (milliseconds for every duration, bytes for every size), one default and one
check, whichever transport it reaches.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidTypeError, InvalidValueError

if TYPE_CHECKING:
    from .._principal import Principal
    from ..stores import AnswerStore, TaskStore
    from ._auth import ProtectedResource

__all__ = ["ServerOptions", "TokenVerifier", "resolve"]

TokenVerifier = Callable[[str], "bool | Principal | None"]
"""``verify(token) -> bool``: a caller's check of an HTTP bearer token (a
:class:`~toolnexus.Principal` instead of ``True`` also reaches the tools as
``ctx.principal``)."""

_MIB = 1024 * 1024


# Its own __init__, __eq__, __hash__ and __repr__ below: a dataclass compiles every method
# it writes when the class is made, and for 38 fields these were most of the class's cost,
# paid by every server's start-up.
@dataclass(frozen=True, slots=True, init=False, eq=False, repr=False)
class ServerOptions:
    """How an MCP server behaves, for every transport (stdio, HTTP, ASGI).

    Build one with keywords; change one with :func:`dataclasses.replace`. Every duration is
    in milliseconds, every size in bytes; a bad value raises ``ValueError``/``TypeError``
    naming the field at construction.

    Attributes:
        name: the server's name clients see (``serverInfo.name``).
        version: its version (``serverInfo.version``); None: toolnexus's version.
        instructions: guidance for the model, sent at ``initialize`` and
            ``server/discover``; None: none.
        timeout_ms: each call's deadline on the host; None: no deadline.
        secret: the key(s) that sign the modern ``requestState`` and bind each question to
            its call; None reads ``TOOLNEXUS_SECRET``, else a random per-process key. Give
            every process (replica, restart) the same key to resume what another asked.
        answer_store: where used answers are remembered so each counts once (see
            :mod:`toolnexus.stores`; give every replica the same one, e.g.
            ``open_store("postgresql://…")``); None: the store ``TOOLNEXUS_STORE`` names,
            else one in memory per process.
        max_rounds: how many answers one call may take: 1 (the loop rule) makes a retry
            that asks again ``unresolved: <prompt>``.
        page_size: tools per ``tools/list`` page (``nextCursor`` beyond it).
        list_ttl_ms: the ``ttlMs`` cache hint on modern list and discover results.
        state_ttl_ms: how long a modern ``requestState`` stays valid.
        grace_ms: when the input ends (stdio) or the server shuts down (HTTP), how long
            running calls get to answer before they are cancelled.
        max_message_bytes: the largest message read (a stdio line, an HTTP body); larger
            ones are refused without being kept.
        max_inflight_bytes: the most bytes of ``tools/call`` requests whose calls may run
            at once; a request beyond it is answered "server overloaded".
        allowed_hosts: (HTTP) ``Host`` names answered besides localhost's; ``("*",)``: any
            (behind a proxy that checks). Not access control: see ``token``.
        allowed_origins: (HTTP) ``Origin`` values accepted besides localhost's when a
            request carries one; ``("*",)``: any.
        token: (HTTP) the bearer token every request must carry; None: none needed. Visible
            ASCII only (what a header can carry), compared as bytes in constant time.
        verify_token: (HTTP) a check of the bearer token, instead of ``token``: true (or
            a :class:`~toolnexus.Principal`, which tools then see as ``ctx.principal``)
            accepts it.
        auth: (HTTP) OAuth 2.1: the server as a protected resource whose access tokens
            come from an authorization server (:class:`~toolnexus.mcp.ProtectedResource`:
            metadata, audience, scopes per tool), instead of ``token`` or
            ``verify_token``; see ``docs/auth.md``.
        insecure_no_auth: (HTTP, embedded server) allow listening on an address other than
            loopback without ``token``, ``verify_token`` or ``auth``; refused otherwise.
        max_connections: (HTTP, embedded server) connections open at once, kept below the
            process's file descriptor limit (``RLIMIT_NOFILE`` less an eighth, at least
            64); when full, the oldest idle one (else the oldest still sending its request
            head) is closed for a new one, or the new one gets 503 when none is.
        max_connections_per_peer: (HTTP, embedded server) requests in progress at once from
            one address (idle kept-alive connections do not count); more get 503.
        max_requests: (HTTP, embedded server) requests answered at once (threads); more wait
            their turn. A connection holds none while it is idle or still sending.
        first_byte_timeout_ms: (HTTP, embedded server) how long a new connection may take
            to send a whole request head (silent: closed; a head still coming: 408); on a
            kept-alive connection, from the request's first byte.
        request_timeout_ms: (HTTP) how long a request's body may take to arrive once its
            head is in (then 408; for the ASGI app too), and the most its head may take.
        keep_alive_ms: (HTTP, embedded server) how long an idle connection stays open
            between requests.
        send_timeout_ms: (HTTP, embedded server) how long one write may take: a client that
            does not read its answer is dropped, and its call cancelled.
        session_idle_ms: (HTTP) how long an idle legacy session lives.
        session_unused_ms: (HTTP) how long a legacy session lives that never completed its
            initialization or never made a call.
        max_sessions: (HTTP) how many legacy sessions may exist at once; a new one evicts
            the least useful idle one (never used first, then the longest idle).
        max_sessions_per_peer: (HTTP) legacy sessions one address may hold; a new one
            evicts that address's least useful idle one.
        max_streams: (HTTP) notification streams open at once — modern
            ``subscriptions/listen`` streams and legacy sessions' GET streams (each holds a
            worker of the embedded server); more are answered 503.
        task_after_ms: (the tasks extension) how long a call runs in its request before
            it becomes a task, for a client that takes tasks (a quicker call is answered
            as usual; a tool's ``task_support`` may forbid or require tasks).
        task_ttl_ms: how long a task is kept after its last change (its ``ttlMs``).
        task_poll_ms: how often a client should poll a task (its ``pollIntervalMs``).
        task_store: where task records live (see :mod:`toolnexus.stores`); None: in
            memory, per process — give an ``SqliteTaskStore`` for tasks that outlive it.
        max_tasks: how many tasks may run in this process at once; beyond it, calls are
            answered in their request (a tool that requires a task is refused).
        max_stored_tasks: how many task records this process keeps at once, running and
            finished (the tasks it made; with a shared store, each replica keeps its own
            bound). When full, the oldest finished task is evicted (its ``tasks/get``
            answers ``-32602`` saying so); a new task is refused only when unfinished ones
            alone fill it.
        max_stored_tasks_per_owner: the same bound per client (per credential; every
            client is one when the server asks for none).
        middleware: policies run around every served call (see :mod:`toolnexus.policies`),
            as ``Host(middleware=...)``.
        tool_middleware: more middleware for some tools (names or globs to lists), as
            ``Host(tool_middleware=...)``.

    Example::

        from toolnexus.mcp import ServerOptions, serve_stdio

        options = ServerOptions(name="calculator", timeout_ms=30_000)
        serve_stdio(toolkit, options)
    """

    name: str = "toolnexus"
    version: str | None = None
    instructions: str | None = None
    timeout_ms: int | None = None
    secret: bytes | str | Sequence[bytes | str] | None = None
    answer_store: AnswerStore | None = None
    max_rounds: int = 1
    page_size: int = 100
    list_ttl_ms: int = 60_000
    state_ttl_ms: int = 30 * 60_000
    grace_ms: int = 1_000
    max_message_bytes: int = 16 * _MIB
    max_inflight_bytes: int = 64 * _MIB
    allowed_hosts: Iterable[str] | None = None
    allowed_origins: Iterable[str] | None = None
    token: str | None = None
    verify_token: TokenVerifier | None = None
    auth: ProtectedResource | None = None
    insecure_no_auth: bool = False
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
    task_after_ms: int = 1_000
    task_ttl_ms: int = 60 * 60_000
    task_poll_ms: int = 1_000
    task_store: TaskStore | None = None
    max_tasks: int = 1_000
    max_stored_tasks: int = 2_000
    max_stored_tasks_per_owner: int = 500
    middleware: Sequence[Any] = ()
    tool_middleware: Mapping[str, Sequence[Any]] | None = None

    # Written out (see above the class): its parameters are the fields, in their order, with
    # their defaults (a test pins it).
    def __init__(
        self,
        name: str = "toolnexus",
        version: str | None = None,
        instructions: str | None = None,
        timeout_ms: int | None = None,
        secret: bytes | str | Sequence[bytes | str] | None = None,
        answer_store: AnswerStore | None = None,
        max_rounds: int = 1,
        page_size: int = 100,
        list_ttl_ms: int = 60_000,
        state_ttl_ms: int = 30 * 60_000,
        grace_ms: int = 1_000,
        max_message_bytes: int = 16 * _MIB,
        max_inflight_bytes: int = 64 * _MIB,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        token: str | None = None,
        verify_token: TokenVerifier | None = None,
        auth: ProtectedResource | None = None,
        insecure_no_auth: bool = False,
        max_connections: int = 1_024,
        max_connections_per_peer: int = 256,
        max_requests: int = 64,
        first_byte_timeout_ms: int = 3_000,
        request_timeout_ms: int = 10_000,
        keep_alive_ms: int = 30_000,
        send_timeout_ms: int = 10_000,
        session_idle_ms: int = 30 * 60_000,
        session_unused_ms: int = 60_000,
        max_sessions: int = 1_000,
        max_sessions_per_peer: int = 100,
        max_streams: int = 16,
        task_after_ms: int = 1_000,
        task_ttl_ms: int = 60 * 60_000,
        task_poll_ms: int = 1_000,
        task_store: TaskStore | None = None,
        max_tasks: int = 1_000,
        max_stored_tasks: int = 2_000,
        max_stored_tasks_per_owner: int = 500,
        middleware: Sequence[Any] = (),
        tool_middleware: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "version", version)
        set_(self, "instructions", instructions)
        set_(self, "timeout_ms", timeout_ms)
        set_(self, "secret", secret)
        set_(self, "answer_store", answer_store)
        set_(self, "max_rounds", max_rounds)
        set_(self, "page_size", page_size)
        set_(self, "list_ttl_ms", list_ttl_ms)
        set_(self, "state_ttl_ms", state_ttl_ms)
        set_(self, "grace_ms", grace_ms)
        set_(self, "max_message_bytes", max_message_bytes)
        set_(self, "max_inflight_bytes", max_inflight_bytes)
        set_(self, "allowed_hosts", allowed_hosts)
        set_(self, "allowed_origins", allowed_origins)
        set_(self, "token", token)
        set_(self, "verify_token", verify_token)
        set_(self, "auth", auth)
        set_(self, "insecure_no_auth", insecure_no_auth)
        set_(self, "max_connections", max_connections)
        set_(self, "max_connections_per_peer", max_connections_per_peer)
        set_(self, "max_requests", max_requests)
        set_(self, "first_byte_timeout_ms", first_byte_timeout_ms)
        set_(self, "request_timeout_ms", request_timeout_ms)
        set_(self, "keep_alive_ms", keep_alive_ms)
        set_(self, "send_timeout_ms", send_timeout_ms)
        set_(self, "session_idle_ms", session_idle_ms)
        set_(self, "session_unused_ms", session_unused_ms)
        set_(self, "max_sessions", max_sessions)
        set_(self, "max_sessions_per_peer", max_sessions_per_peer)
        set_(self, "max_streams", max_streams)
        set_(self, "task_after_ms", task_after_ms)
        set_(self, "task_ttl_ms", task_ttl_ms)
        set_(self, "task_poll_ms", task_poll_ms)
        set_(self, "task_store", task_store)
        set_(self, "max_tasks", max_tasks)
        set_(self, "max_stored_tasks", max_stored_tasks)
        set_(self, "max_stored_tasks_per_owner", max_stored_tasks_per_owner)
        set_(self, "middleware", middleware)
        set_(self, "tool_middleware", tool_middleware)
        self.__post_init__()

    def __post_init__(self) -> None:
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
        _number("timeout_ms", self.timeout_ms, minimum=0, optional=True)
        _number("max_rounds", self.max_rounds, minimum=1)
        _number("page_size", self.page_size, minimum=1)
        for label in (
            "list_ttl_ms",
            "state_ttl_ms",
            "grace_ms",
            "first_byte_timeout_ms",
            "request_timeout_ms",
            "keep_alive_ms",
            "send_timeout_ms",
            "session_idle_ms",
            "session_unused_ms",
        ):
            _number(label, getattr(self, label), minimum=0)
        _number("max_message_bytes", self.max_message_bytes, minimum=64)
        for label in (
            "max_inflight_bytes",
            "max_connections",
            "max_connections_per_peer",
            "max_requests",
            "max_sessions",
            "max_sessions_per_peer",
            "max_streams",
            "task_ttl_ms",
            "task_poll_ms",
            "max_tasks",
            "max_stored_tasks",
            "max_stored_tasks_per_owner",
        ):
            _number(label, getattr(self, label), minimum=1)
        _number("task_after_ms", self.task_after_ms, minimum=0)
        if self.task_store is not None and not callable(getattr(self.task_store, "update", None)):
            raise InvalidTypeError(
                "ServerOptions.task_store must be a TaskStore (create, get, update, purge), "
                f"got {_kind(self.task_store)}"
            )
        if not isinstance(self.insecure_no_auth, bool):
            raise InvalidTypeError(
                f"ServerOptions.insecure_no_auth must be a bool, got {_kind(self.insecure_no_auth)}"
            )
        token = self.token
        if token is not None:
            if not isinstance(token, str) or not token.strip():
                raise InvalidValueError("ServerOptions.token must be a non-empty str or None")
            token = token.strip()
            if not all("!" <= char <= "~" for char in token):
                raise InvalidValueError(
                    "ServerOptions.token cannot be sent in an HTTP header: it has a space, a "
                    "control character or a character outside ASCII; use visible ASCII "
                    "characters only, e.g. the output of "
                    "python -c 'import secrets; print(secrets.token_urlsafe())'"
                )
            object.__setattr__(self, "token", token)
        if self.verify_token is not None and not callable(self.verify_token):
            raise InvalidTypeError(
                "ServerOptions.verify_token must be callable or None, got "
                f"{_kind(self.verify_token)}"
            )
        if self.auth is not None:
            from ._auth import ProtectedResource

            if not isinstance(self.auth, ProtectedResource):
                raise InvalidTypeError(
                    "ServerOptions.auth must be a toolnexus.mcp.ProtectedResource or None, "
                    f"got {_kind(self.auth)}"
                )
            if self.token is not None or self.verify_token is not None:
                raise InvalidValueError(
                    "ServerOptions: give one of token, verify_token and auth: auth (OAuth) "
                    "verifies the bearer token itself"
                )
        if self.answer_store is not None and not callable(
            getattr(self.answer_store, "consume", None)
        ):
            raise InvalidTypeError(
                "ServerOptions.answer_store must have a consume(key, expires_at) method "
                f"(an AnswerStore), got {_kind(self.answer_store)}"
            )
        if self.middleware or self.tool_middleware is not None:
            from .._chain import Policies  # checks them now, at the line that gave them

            Policies(self.middleware, self.tool_middleware, False)
            object.__setattr__(self, "middleware", tuple(self.middleware))
        for label in ("allowed_hosts", "allowed_origins"):
            values = getattr(self, label)
            if values is None:
                continue
            if isinstance(values, str):
                raise InvalidTypeError(
                    f"ServerOptions.{label} must be a list of strings, not one string: [{values!r}]"
                )
            items = tuple(values)
            for item in items:
                if not isinstance(item, str) or not item.strip():
                    raise InvalidValueError(
                        f"ServerOptions.{label} must hold non-empty strings, got {item!r}"
                    )
            object.__setattr__(self, label, items)

    def replace(self, **changes: Any) -> ServerOptions:
        """A copy with ``changes`` applied (checked as at construction).

        Example::

            quick = options.replace(timeout_ms=5_000)
        """
        return dataclasses.replace(self, **changes)

    # What the dataclass would write: compare and hash the fields' values as one tuple,
    # show them in their order.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(_values(self) == _values(other))

    def __hash__(self) -> int:
        return hash(_values(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _NAMES)
        return f"{self.__class__.__qualname__}({shown})"


_NAMES = tuple(each.name for each in dataclasses.fields(ServerOptions))
_values = operator.attrgetter(*_NAMES)


def _kind(value: object) -> str:
    return type(value).__name__


def _number(label: str, value: Any, *, minimum: int, optional: bool = False) -> None:
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
            f"ServerOptions.{label} must be {none}an int >= {minimum}{unit}, got {value!r}"
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
