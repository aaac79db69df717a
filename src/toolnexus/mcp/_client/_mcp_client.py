"""A connected MCP client: one server's tools as ordinary :class:`~toolnexus.Tool`\\ s.

:class:`McpClient` is the lifetime of a client: it opens a connection (a child process on
stdio, or Streamable HTTP; :class:`~._connection.Connection` does one connection's I/O)
and re-opens it when lost, and runs ``tools/call`` with the caller's deadline and
cancellation token: a cancel or a deadline sends ``notifications/cancelled`` (stdio,
legacy HTTP) or closes the HTTP request (modern), and the call returns at once even if
the server never answers. It decides no protocol rule: the sans-IO
:class:`~toolnexus.mcp.ClientSession` says what each message means and what to send,
and :mod:`._questions` is the client's question flow.

A server's question is a suspension, as a local tool's is. A legacy server's
``elicitation/create`` parks its ``tools/call`` (still in flight) under the id of the
:class:`~toolnexus.Request` handed back; the retry with the answer replies to the server
and goes on reading the same call — while the session lives. A modern server's
``input_required`` result ends the request; everything the retry needs rides in the
:class:`~toolnexus.Request`'s id (``mcp1.…``), so an answer continues the call from any
process, after any restart.

Threads: a stdio connection has a reader and a stderr thread; HTTP uses the calling
thread. :meth:`McpClient.close` (also at interpreter exit) ends children, threads and
connections.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._cancellation import CancellationToken, CancellationTokenSource, cancelled_by
from ..._log import LazyLogger
from ..._result import ToolResult
from ..._suspension import Answer
from ..._tracing import client_span
from ...errors import InvalidTypeError, InvalidValueError, McpError
from .._shared._peer import Waiter
from .._shared._upstream_tasks import HAND_OVER, UPSTREAM_TASK_KEY
from ._admission import Admission, Booking
from ._connection import CANCELLED, RETRY, SUBSCRIBED, Connection, give_up
from ._questions import ClientQuestions, Parked, call_result, unsent
from ._remote import relink, remote_tool_list
from ._session import LIST_PAGES, list_page, listen_filter, prompt_result, resource_contents
from ._settings import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_QUESTION_TIMEOUT_MS,
    DEFAULT_TIMEOUT_MS,
    ClientSettings,
    check_call,
    default_name,
)
from ._skills import EXTENSION as SKILLS_EXTENSION
from ._skills import content_bytes, remote_skill, usable_entry

if TYPE_CHECKING:
    from ..._context import ProgressReporter
    from ..._pool import Pool
    from ..._skills import Skill
    from ..._tools import Tool
    from ._http import HttpTransport
    from ._oauth import OAuth
    from ._stdio import StdioTransport

__all__ = ["McpClient"]

_log = LazyLogger("mcp.client")  # the package's: it never prints on its own

# Which cached lists a notification makes stale (a new connection drops them all).
_LIST_CHANGES: dict[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools/list",),
    # a server's skills are resources: their change is announced as the resources'
    "notifications/resources/list_changed": (
        "resources/list",
        "resources/templates/list",
        "skills/list",
    ),
    "notifications/prompts/list_changed": ("prompts/list",),
}
_TASK_TTL_MS = 300_000  # how long an upstream keeps a task of ours after it ends
# The requestState a modern task's question is sealed with: the answer goes to the task.
_TASK_STATE = "toolnexus-task:"
_LISTS = tuple(method for methods in _LIST_CHANGES.values() for method in methods)


def _admission(max_in_flight: int | None, max_queued: int | None) -> Admission | None:
    """The bounded queue of one server's calls, or None (no bound)."""
    for label, value in (("max_in_flight", max_in_flight), ("max_queued", max_queued)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidTypeError(f"{label} must be an int or None, got {value!r}")
    if max_in_flight is None:
        if max_queued is not None:
            raise InvalidValueError("max_queued needs max_in_flight: give both, or neither")
        return None
    if max_in_flight < 1 or (max_queued is not None and max_queued < 0):
        raise InvalidValueError(
            f"max_in_flight must be >= 1 and max_queued >= 0, got {max_in_flight} and {max_queued}"
        )
    return Admission(max_in_flight, max_in_flight if max_queued is None else max_queued)


_live_clients: weakref.WeakSet[McpClient] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_installed = False


def _close_all_at_exit() -> None:
    for client in list(_live_clients):
        with contextlib.suppress(Exception):  # exiting: nothing left to tell
            client.close()


def _install_exit_hook() -> None:
    global _exit_hook_installed
    with _exit_hook_lock:
        if not _exit_hook_installed:
            import atexit

            atexit.register(_close_all_at_exit)
            _exit_hook_installed = True


class McpClient:
    """A client of one MCP server, over stdio (``command``) or Streamable HTTP (``url``).

    Connects on first use (or :meth:`connect`), speaks the modern stateless revision when
    the server does and the legacy ``initialize`` handshake otherwise, and re-opens a lost
    connection (a restarted server, a 404 on a legacy session, a broken pipe) on the next
    request. :meth:`tools` gives the server's tools as ordinary :class:`~toolnexus.Tool`\\ s
    for a :class:`~toolnexus.Toolkit` and :class:`~toolnexus.Host`; :meth:`call_tool` calls
    one directly. Usable from any thread; :meth:`acall_tool` is the asyncio twin. A client
    is a context manager; :meth:`close` (also at interpreter exit) ends the child process
    and its process group, or the HTTP session.

    Args:
        command, args: the server to run (stdio). ``env`` is merged over this process's
            environment; ``cwd`` is its working directory.
        url: the Streamable HTTP endpoint (instead of ``command``); ``headers`` are sent
            with every request (values are never logged).
        name: what messages and tool names call this server (default: the command's or
            host's name).
        timeout_ms: the bound on each phase of opening (start or connect, handshake,
            ``tools/list``) — a server that never answers ``initialize`` fails in this
            time, never hangs.
        idle_timeout_ms: a call that hears nothing from the server (no progress, no
            answer) for this long is cancelled and answered ``timed out`` — progress
            resets it; ``None``: no idle bound (the caller's deadline still holds).
        question_timeout_ms: how long a legacy server's question may wait for its answer
            before the parked call is cancelled on the server.
        elicitation: declare the elicitation capability (form and URL modes), so servers
            may ask questions (suspensions); ``False`` declares none — a compliant server
            then never asks.
        protocol_version: pin a revision (``"2026-07-28"``, ``"2025-11-25"``, ...);
            ``None`` negotiates.
        client_name: the ``clientInfo.name`` servers see.
        log_level: the least severe server log level to receive (``None``: the server's
            default).
        max_message_bytes: the largest message accepted from the server (64 MiB); a larger
            one ends the call (or the stdio connection) with an error saying so.
        auth: (HTTP) sign in with OAuth 2.1 when the server asks for it: an
            :class:`~toolnexus.mcp.OAuth` (discovery, registration, PKCE, refresh; the
            user's part through its ``ask``). See ``docs/auth.md``.
        max_in_flight: the most tool calls sent to this server at once (``None``: no
            bound); more wait in a queue of ``max_queued`` (default: as many), and a call
            beyond both is an error result at once ("busy"). A call a host starts for
            nobody waiting on a thread (``Host.submit``, a server's) runs on this
            client's own threads, at most these many: a slow server holds none of the
            host's workers.

    Example::

        from toolnexus import Host, Toolkit
        from toolnexus.mcp import McpClient

        with McpClient("python", ["-m", "toolnexus", "serve", "toolnexus.demo:toolkit"]) as mcp:
            with Host(Toolkit(mcp.tools()), timeout_ms=5_000) as host:
                print(host.call("demo_add", {"a": 1, "b": 2}).output)
    """

    def __init__(
        self,
        command: str | None = None,
        args: Sequence[str] = (),
        *,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        idle_timeout_ms: int | None = None,
        question_timeout_ms: int = DEFAULT_QUESTION_TIMEOUT_MS,
        elicitation: bool = True,
        protocol_version: str | None = None,
        client_name: str = "toolnexus",
        log_level: str | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        auth: OAuth | None = None,
        max_in_flight: int | None = None,
        max_queued: int | None = None,
    ) -> None:
        self._settings = settings = ClientSettings(
            command=command,
            args=args,
            url=url,
            headers=headers or {},
            env=env,
            cwd=cwd,
            timeout_ms=timeout_ms,
            idle_timeout_ms=idle_timeout_ms,
            question_timeout_ms=question_timeout_ms,
            max_message_bytes=max_message_bytes,
            auth=auth,
            elicitation=elicitation,
            protocol_version=protocol_version,
            client_name=client_name,
            log_level=log_level,
        )
        self._admission = _admission(max_in_flight, max_queued)
        self._idle_s = settings.idle_s  # (a property of the settings: read once, not per call)
        self.name = name or default_name(command, url)
        """What messages and default tool names call this server."""
        self._open_lock = threading.Lock()  # one opener at a time
        self._connection: Connection | None = None
        # The legacy questions parked on this client (their calls wait on the server).
        self._questions = ClientQuestions(settings.question_s, give_up)
        self._listeners: list[Callable[[], object]] = []
        self._notice_listeners: list[Callable[[str, dict[str, Any]], object]] = []
        # Lists as last fetched (see _list): method -> (items, fresh until, cacheScope).
        self._lists: dict[str, tuple[list[dict[str, Any]], float, str | None]] = {}
        self._lists_changed = 0  # bumped by each invalidation: a fetch it overtook is not kept
        self._lists_lock = threading.Lock()
        self._task_tools: frozenset[str] = frozenset()  # listed as run only as tasks
        self._task_optional: frozenset[str] = frozenset()  # listed as maybe run as tasks
        self._subscriptions: set[str] = set()  # modern: the URIs the listen stream asks for
        self._closed = False
        self._http: HttpTransport | None = None
        self._own: Pool | None = None  # the threads of calls nobody waits for (_start_apart)

    # ------------------------------------------------------------------ state

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed

    @property
    def is_connected(self) -> bool:
        """True while a connection is open (it may still be lost at the next request)."""
        connection = self._connection
        return connection is not None and connection.lost is None

    @property
    def era(self) -> str | None:
        """``"modern"`` or ``"legacy"`` once connected, else ``None``."""
        connection = self._connection
        return connection.session.era if connection is not None else None

    @property
    def protocol_version(self) -> str | None:
        """The revision spoken once connected."""
        connection = self._connection
        return connection.session.protocol_version if connection is not None else None

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's ``serverInfo`` once connected."""
        connection = self._connection
        return dict(connection.session.server_info) if connection is not None else {}

    @property
    def instructions(self) -> str | None:
        """The server's instructions for the model, if it sent any."""
        connection = self._connection
        return connection.session.instructions if connection is not None else None

    @property
    def pid(self) -> int | None:
        """The stdio server's process id while it runs."""
        connection = self._connection
        if connection is None or not connection.is_stdio:
            return None
        transport = connection.transport
        assert transport is not None
        return transport.pid  # type: ignore[union-attr]

    def __repr__(self) -> str:
        where = self._settings.url or " ".join([self._settings.command or "", *self._settings.args])
        if self._closed:
            state = "closed"
        elif self.is_connected:
            state = f"{self.era} {self.protocol_version}"
        else:
            state = "not connected"
        return f"<McpClient {self.name!r} {where} {state}>"

    def on_tools_changed(self, listener: Callable[[], object]) -> None:
        """Call ``listener()`` (on a helper thread) when the server says its tool list
        changed (``notifications/tools/list_changed``)."""
        if not callable(listener):
            raise InvalidTypeError(f"listener must be callable, got {type(listener).__name__}")
        self._listeners.append(listener)
        self._listen_if_wanted()

    # ------------------------------------------------------------------ opening

    def connect(self) -> McpClient:
        """Open the connection now (it opens on first use otherwise); returns ``self``.

        Raises :class:`~toolnexus.errors.McpError` naming the server when it cannot be
        started or reached, or does not answer the handshake within ``timeout_ms``.
        """
        self._open()
        return self

    def _open(self) -> Connection:
        connection = self._connection
        if connection is not None and connection.lost is None:
            return connection
        with self._open_lock:
            if self._closed:
                raise McpError(self.name, "the client is closed")
            connection = self._connection
            if connection is not None and connection.lost is None:
                return connection
            if connection is not None:
                connection.drop(connection.lost or "lost")
            # A new connection: maybe a new server. A fetch under way is on this connection.
            self._forget_lists(*_LISTS, overtaken=False)
            connection = self._start_connection()
            self._connection = connection
            _live_clients.add(self)
            _install_exit_hook()
            return connection

    def _start_connection(self, legacy: bool = False) -> Connection:
        settings = self._settings
        connection = Connection(
            settings.new_session(),
            label=self.name,
            timeout_s=settings.timeout_s,
            on_tools_changed=self._tools_changed,
            client_closed=lambda: self._closed,
            on_notice=self._noticed,
        )
        if settings.command is not None:
            self._spawn(connection)
        else:
            from ._http import HttpTransport

            if self._http is None:
                flow = None
                if settings.auth is not None:
                    from ._oauth import OAuthFlow

                    flow = OAuthFlow(settings.auth, settings.url or "", self.name)
                self._http = HttpTransport(
                    settings.url or "",
                    settings.headers,
                    connect_timeout=settings.timeout_s,
                    max_message_bytes=settings.max_message_bytes,
                    auth=flow,
                )
            self._http.session_id = None
            connection.transport = self._http
        try:
            fallback = connection.handshake(legacy)
        except McpError:
            connection.drop("the handshake failed")
            raise
        except BaseException:
            connection.drop("the handshake was interrupted")
            raise
        if fallback is not None:
            connection.drop(fallback)
            return self._start_connection(legacy=True)
        if not connection.is_stdio and connection.session.era == "legacy":
            connection.start_listening()  # the session's own stream (GET)
        elif self._wants_notices():
            self._listen(connection)  # the modern era's stream: nothing comes unasked
        return connection

    def _wants_notices(self) -> bool:
        """Whether anything here relies on the server's notifications: a listener, a
        subscribed resource, a list cached until the server says it changed."""
        if self._listeners or self._notice_listeners or self._subscriptions:
            return True
        with self._lists_lock:
            return any(until == math.inf for _, until, _ in self._lists.values())

    def _listen_if_wanted(self) -> None:
        """Now that something relies on notifications: hear them, if connected."""
        connection = self._connection
        if connection is not None and connection.lost is None and not connection.subscribing:
            self._listen(connection)

    def _listen(self, connection: Connection) -> None:
        """A modern connection's ``subscriptions/listen`` stream, opened (once) when there
        is something to ask for; not the legacy era's (its session or ``GET`` stream
        carries every notification)."""
        if connection.session.era != "modern" or connection.subscribing:
            return
        if not self._listen_filter(connection):
            return
        asked = functools.partial(self._listen_filter, connection)
        if connection.is_stdio:
            connection.subscribe_piped(asked)
        else:
            connection.start_subscribing(asked)

    def _listen_filter(self, connection: Connection) -> dict[str, Any]:
        """What this client's ``subscriptions/listen`` stream asks of ``connection``'s
        server now (see :func:`~._session.listen_filter`)."""
        with self._lists_lock:
            uris = sorted(self._subscriptions)
        return listen_filter(connection.session.server_capabilities, uris)

    def _spawn(self, connection: Connection) -> None:
        from ._stdio import StdioTransport

        settings = self._settings
        assert settings.command is not None
        try:
            connection.transport = StdioTransport(
                settings.command,
                settings.args,
                env=settings.env,
                cwd=settings.cwd,
                on_message=connection.route,
                on_problem=lambda kind, text, ident: connection.on_stdio_problem(kind, text, ident),
                on_closed=lambda reason: connection.on_lost(reason),
                max_message_bytes=settings.max_message_bytes,
                label=self.name,
                # Requests still waiting for their answer: their waiters (an answered
                # request's leaves when its answer is routed).
                pending=connection.peer.pending,
                write_timeout=settings.timeout_s,
            )
            connection.is_stdio = True
        except OSError as exc:
            raise McpError(
                self.name,
                f"cannot start {settings.command!r}: {exc.strerror or exc}; check the command "
                "and that it is installed (on the PATH of this process)",
            ) from None

    def _tools_changed(self) -> None:
        self._forget_lists("tools/list")
        listeners = list(self._listeners)
        if not listeners:
            return

        def run() -> None:
            for listener in listeners:
                try:
                    listener()
                except Exception:
                    _log.exception("MCP server %s: a tools-changed listener failed", self.name)

        threading.Thread(target=run, name=f"toolnexus-mcp-{self.name}-changed", daemon=True).start()

    # ------------------------------------------------------------------ requests

    def _request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        tasks: bool = False,
        token: CancellationToken | None = None,
    ) -> dict[str, Any]:
        """One request and its result (phase-bounded); ``tasks`` declares the tasks
        extension on it (modern); ``token`` cancels it. Raises McpError."""
        cancel = token if token is not None else _NEVER
        for attempt in (0, 1):
            connection = self._open()
            result = connection.request(
                method, params, may_retry=attempt == 0, tasks=tasks, token=cancel
            )
            if result is not None:
                return result
        raise McpError(self.name, f"{method} failed: the session was lost twice in a row")

    def list_tools(self) -> list[dict[str, Any]]:
        """The server's tools as it describes them (``tools/list``, every page): plain
        dicts with ``name``, ``inputSchema``, ... exactly as sent.

        Raises :class:`~toolnexus.errors.McpError` when the server cannot be reached or
        refuses the request.
        """
        tools = self._list("tools/list", "tools")
        support = {
            spec["name"]: spec["execution"].get("taskSupport")
            for spec in tools
            if isinstance(spec.get("execution"), dict)
        }
        self._task_tools = frozenset(name for name, says in support.items() if says == "required")
        self._task_optional = frozenset(
            name for name, says in support.items() if says == "optional"
        )
        return tools

    def _list(self, method: str, key: str) -> list[dict[str, Any]]:
        """Every page of a list method's ``key`` array — from the cache while it holds
        (see :meth:`cached_until`)."""
        with self._lists_lock:
            cached = self._lists.get(method)
            generation = self._lists_changed
        if cached is not None and time.monotonic() < cached[1]:
            return [dict(item) for item in cached[0]]
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        first: dict[str, Any] | None = None
        for _ in range(LIST_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            # Declaring the tasks extension, a modern server says which tools are tasks.
            result = self._request(method, params, tasks=method == "tools/list")
            first = first if first is not None else result
            page, cursor = list_page(self.name, method, key, result)
            items.extend(page)
            if cursor is None:
                self._keep_list(method, items, first, generation)
                return items
        raise McpError(self.name, f"{method} still had more pages after {LIST_PAGES}")

    def list_resources(self) -> list[dict[str, Any]]:
        """The server's resources (``resources/list``, every page), as sent: ``uri``,
        ``name``, ``mimeType``, ... Raises :class:`~toolnexus.errors.McpError` as
        :meth:`list_tools` does.

        Example::

            uris = [entry["uri"] for entry in client.list_resources()]
        """
        return self._list("resources/list", "resources")

    def list_resource_templates(self) -> list[dict[str, Any]]:
        """The server's resource templates (``resources/templates/list``), as sent."""
        return self._list("resources/templates/list", "resourceTemplates")

    def read_resource(
        self, uri: str, *, token: CancellationToken | None = None
    ) -> list[dict[str, Any]]:
        """The contents of the resource at ``uri`` (``resources/read``), as sent: each
        ``{"uri", "mimeType", "text" | "blob"}``. ``token``: cancelling it (a caller's
        cancel or deadline) ends the read and cancels it on the server. Raises
        :class:`~toolnexus.errors.McpError` when the server refuses (an unknown URI) or
        the read was cancelled.

        Example::

            (content,) = client.read_resource("notes://readme")
            print(content["text"])
        """
        return self._read(uri, token)[0]

    def _read(
        self, uri: str, token: CancellationToken | None
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """:meth:`read_resource`, and the cache hints the server gave the read (its
        ``ttlMs`` and ``cacheScope``, those it sent): a gateway passes them on."""
        with self._admitted("resources/read", token):
            result = self._request("resources/read", {"uri": uri}, token=token)
        hints: dict[str, Any] = {k: result[k] for k in ("ttlMs", "cacheScope") if k in result}
        return resource_contents(self.name, uri, result), hints

    def list_prompts(self) -> list[dict[str, Any]]:
        """The server's prompts (``prompts/list``, every page), as sent."""
        return self._list("prompts/list", "prompts")

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        token: CancellationToken | None = None,
    ) -> dict[str, Any]:
        """The prompt ``name`` rendered with ``arguments`` (``prompts/get``): the result
        as sent, ``{"description"?, "messages": [{"role", "content"}]}``; ``token``
        cancels it. Raises :class:`~toolnexus.errors.McpError` when the server refuses
        (an unknown prompt, missing arguments) or it was cancelled.

        Example::

            messages = client.get_prompt("review", {"code": "x = 1"})["messages"]
        """
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        with self._admitted("prompts/get", token):
            result = self._request("prompts/get", params, token=token)
        return prompt_result(self.name, name, result)

    def tools(
        self,
        *,
        prefix: str | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Tool]:
        """The server's tools as :class:`~toolnexus.Tool`\\ s (``source="mcp"``) whose
        calls go to this server, schemas kept exactly as the server sent them.

        Tools are named ``<prefix><tool>`` (sanitised to ``[a-zA-Z0-9_-]``); ``prefix``
        defaults to ``"<name>_"``, ``""`` keeps the server's names. ``include`` keeps only
        the named tools, ``exclude`` drops some (server-side names). A tool whose schema
        the validator refuses, or whose ``x-mcp-header`` is invalid, is skipped with a
        warning naming the server and the tool.

        Raises :class:`~toolnexus.errors.McpError` when the server cannot be reached.
        """
        if prefix is None:
            prefix = f"{self.name}_"
        return remote_tool_list(self, self.list_tools(), prefix, include, exclude)

    # ------------------------------------------------------------------ skills (SEP-2640)
    # The skills extension's client side; its rules live in _skills.py (sans-IO).

    @property
    def offers_skills(self) -> bool:
        """True when the server declared the skills extension (connects first).

        Example::

            if client.offers_skills:
                toolkit.register(*client.skills())
        """
        extensions = self._open().session.server_capabilities.get("extensions")
        return isinstance(extensions, dict) and SKILLS_EXTENSION in extensions

    def list_skills(self) -> list[dict[str, Any]]:
        """The server's skill entries (``skills/list``, every page), as sent: ``uri``,
        ``frontmatter``, ``resources``. Reads no file. Raises
        :class:`~toolnexus.errors.McpError` as :meth:`list_tools` does.

        Example::

            uris = [entry["uri"] for entry in client.list_skills()]
        """
        return self._list("skills/list", "skills")

    def get_skill(self, uri: str) -> dict[str, Any]:
        """The entry of the skill whose ``SKILL.md`` is at ``uri`` (``skills/get``), as
        sent. Raises :class:`~toolnexus.errors.McpError` when the server serves no skill
        there (or does not answer).

        Example::

            entry = client.get_skill("skill://pdf-processing/SKILL.md")
        """
        skill = self._request("skills/get", {"uri": uri}).get("skill")
        if not isinstance(skill, dict):
            raise McpError(self.name, f"skills/get answered without a skill for {uri!r}")
        return skill

    def skills(self, *, prefix: str | None = None) -> list[Skill]:
        """The server's skills as :class:`~toolnexus.Skill`\\ s (``source="mcp"``) that
        join a toolkit's ``skill`` tool beside local ones (``toolkit.register(*skills)``).
        Only the listing is read: a skill's ``SKILL.md`` is fetched when the skill is
        loaded, a file when it is read, each checked against the entry — size, digest,
        and the frontmatter — and never used when it differs (a
        :class:`~toolnexus.errors.SkillError` names the skill and the file; a kept
        listing is then dropped, so the next call lists the skills anew).

        Skills are named ``<prefix><name>``; ``prefix`` defaults to ``"<name>_"`` as for
        tools, so a served skill never shadows a local one of the same name. An entry the
        extension says a host must not load is skipped with a warning naming it. A
        server without the extension has no skills (``[]``).

        Example::

            toolkit.register(*client.skills())
            toolkit.execute("skill", {"name": "docs_pdf-processing"})
        """
        return self._remote_skills(f"{self.name}_" if prefix is None else prefix)

    def _remote_skills(
        self, prefix: str, rename: Callable[[str], str] | None = None
    ) -> list[Skill]:
        """:meth:`skills`, each URI offered as ``rename`` gives it (an McpSource's
        prefixed URIs: the gateway serves them so)."""
        if not self.offers_skills:
            return []
        found: list[Skill] = []
        for entry in self.list_skills():
            problem = usable_entry(self.name, entry)
            if problem is not None:
                _log.warning("MCP server %s: skill skipped: %s", self.name, problem)
                continue
            found.append(remote_skill(entry, prefix, self._skill_file, self._skills_stale, rename))
        return found

    def _skills_stale(self) -> None:
        """A skill file no longer matches its listed entry: a kept ``skills/list`` (its
        ``ttlMs``) is dropped, so listing the skills again takes the change."""
        self._forget_lists("skills/list", overtaken=False)

    def _skill_file(self, uri: str) -> bytes:
        """A skill file's raw bytes, as the server sends them now."""
        return content_bytes(self.name, uri, self.read_resource(uri))

    # ------------------------------------------------------------------ calls

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
        answer: Answer | None = None,
    ) -> ToolResult:
        """Call the server's tool ``name`` (its own name, not a prefixed one) and return
        its result; never raises for what the server or the connection does.

        The call ends when the server answers, at ``timeout_ms`` (``timed out after N
        ms``), or when ``cancellation_token`` is cancelled — then the server is told
        (``notifications/cancelled``, or the HTTP request is closed). ``progress``
        receives the server's progress notifications. A server's question comes back as
        a pending result (:meth:`ToolResult.pending <toolnexus.ToolResult.pending>`);
        call again with the same name and arguments and ``answer`` to continue.

        Example::

            result = client.call_tool("add", {"a": 1, "b": 2}, timeout_ms=5_000)
        """
        return self._call(
            name, dict(arguments or {}), timeout_ms, cancellation_token, progress, answer, None
        )

    async def acall_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
        answer: Answer | None = None,
    ) -> ToolResult:
        """The asyncio twin of :meth:`call_tool`: runs on a worker thread and never
        blocks the event loop; cancelling the awaiting task cancels the call.

        Example::

            result = await client.acall_tool("add", {"a": 1, "b": 2})
        """
        import asyncio

        source = CancellationTokenSource.linked(
            *([cancellation_token] if cancellation_token is not None else [])
        )
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(
            None,
            lambda: self._call(
                name, dict(arguments or {}), timeout_ms, source.token, progress, answer, None
            ),
        )
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            source.cancel()
            raise
        finally:
            if future.done():
                source.close()
            else:
                future.add_done_callback(lambda _: source.close())

    def _call(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout_ms: int | None,
        token: CancellationToken | None,
        progress: ProgressReporter | None,
        answer: Answer | None,
        headers: Mapping[str, str] | None,
        deadline: float | None = None,
        booked: Booking | None = None,
    ) -> ToolResult:
        """One ``tools/call``. ``timeout_ms``: the client's own budget (``call_tool``'s),
        counted from now; ``deadline``: the caller's (a host's, through its ToolContext),
        on the ``time.monotonic()`` clock — the caller reports its own passing.
        ``booked``: its place, or its turn to wait for one, in the queue is taken already
        (:meth:`_start_apart`)."""
        check_call(timeout_ms, answer)
        if deadline is None and timeout_ms is not None:
            end: float | None = time.monotonic() + timeout_ms / 1000
        else:
            end = deadline
        source: CancellationTokenSource | None = None
        if end is not None and (token is None or cancelled_by(token) > end):
            # (A token a timer cancels by then — a host call's, at its deadline — needs none.)
            source = CancellationTokenSource.linked(*([token] if token is not None else []))
            source.cancel_after(max(0.0, end - time.monotonic()))
            call_token = source.token
        else:
            call_token = token if token is not None else CancellationToken.NONE
        # The client's span of the request (a child of the caller's): its context goes to
        # the server in _meta, where the server's span becomes its child.
        span = client_span(
            name,
            "pipe" if self._settings.url is None else "tcp",
            self._http.session_id if self._http is not None else None,
            self.protocol_version,
        )
        entered = span.enter() if span is not None else None
        result: ToolResult | None = None
        admission = self._admission
        admitted = False
        try:
            if admission is None:
                refused = None
            elif booked is None:
                refused = admission.enter(call_token)
            else:
                booked.used = True
                refused = None if booked.place else admission.wait(call_token)
            admitted = admission is not None and refused is None
            if refused is not None:
                # Cancelled while it waited for a place: its cancel or deadline decides the
                # words, below; else the queue was full.
                busy = ToolResult(f"{name} on MCP server {self.name}: {refused}", True)
                result = CANCELLED if call_token.is_cancellation_requested else busy
            elif answer is not None:
                result = self._continue(name, arguments, call_token, progress, answer, headers)
            elif name in self._task_tools or (
                name in self._task_optional and self._handing_over(name)
            ):
                result = self._run_task(name, arguments, call_token, progress)
            else:
                result = self._start_call(name, arguments, call_token, progress, headers, None)
            if result is CANCELLED:
                result = self._timed_out(name, result, end, deadline, timeout_ms)
        finally:
            if admitted:
                assert admission is not None
                admission.leave()
            if source is not None:
                source.close()
            if span is not None:
                span.leave(entered)
                span.end(result)
        return result

    def _timed_out(
        self,
        name: str,
        result: ToolResult,
        end: float | None,
        deadline: float | None,
        timeout_ms: int | None,
    ) -> ToolResult:
        """``result``, or the timeout it is: the call's state decides, never its text —
        its token was cancelled and ``end`` has passed (a deadline's cancel comes at or
        after it); ``deadline``: the caller's, else the client's own ``timeout_ms``."""
        if result is not CANCELLED or end is None or time.monotonic() < end:
            return result
        where = f"{name} on MCP server {self.name}"
        if deadline is None:
            return ToolResult(f"timed out after {timeout_ms} ms: {where}", True)
        return ToolResult(f"{where} did not answer in time", True)

    def _io_ready(self) -> bool:
        """Whether :meth:`_start_io` may start calls now: an open stdio connection, no
        ``idle_timeout_ms`` to keep (the rest is the call's own: see there)."""
        connection = self._connection
        return (
            connection is not None
            and connection.is_stdio
            and connection.lost is None
            and self._idle_s is None
        )

    def _apart_ready(self) -> bool:
        """Whether :meth:`_start_apart` may run calls now: this client keeps a queue of
        its calls (``max_in_flight``) and is open."""
        return self._admission is not None and not self._closed

    def _start_io(
        self,
        name: str,
        arguments: dict[str, Any],
        token: CancellationToken,
        progress: ProgressReporter | None,
        deadline: float | None,
        done: Callable[[ToolResult], object],
    ) -> StdioTransport | None:
        """Start one ``tools/call`` that no thread waits for: it is written here, and
        ``done(result)`` is called once with what :meth:`_call` would have returned, on
        the thread that ends it (the one reading the pipe, with the answer; a
        canceller's; at ``deadline``, which ``token`` must keep: a host call's). Returns
        the transport whose pipe carries the answer: read it while waiting
        (``read_until``), or hand it to the reader thread (``read_for_others``) — one of
        the two, at once. None, having sent nothing, when the call cannot go this way —
        not an open stdio connection, an ``idle_timeout_ms`` to keep, a task, a deadline
        the token does not keep, or no free place in the ``max_in_flight`` queue — so the
        caller runs :meth:`_call`."""
        connection = self._connection
        if (
            not self._io_ready()
            or name in self._task_tools
            or (deadline is not None and cancelled_by(token) > deadline)
        ):
            return None
        assert connection is not None
        admission = self._admission
        if admission is not None and not admission.take():
            return None  # it would wait for a place: on a thread that can wait
        span = client_span(name, "pipe", None, self.protocol_version)

        def finish(result: ToolResult) -> None:
            if result is CANCELLED:
                result = self._timed_out(name, result, deadline, deadline, None)
            if admission is not None:
                admission.leave()
            if span is not None:
                span.end(result)
            done(result)

        transport: StdioTransport = connection.transport  # type: ignore[assignment]
        if token is not _NEVER and token.is_cancellation_requested:
            finish(CANCELLED)
            return transport
        entered = span.enter() if span is not None else None
        try:
            waiter = Waiter()
            with connection.lock:
                outgoing = connection.session.call_tool(name, arguments, None, waiter)
                assert outgoing.id is not None
                connection.peer.start_call(outgoing.id, waiter)
            started = connection.start_call(
                outgoing, waiter, name, token, progress, self._questions, finish
            )
        finally:
            if span is not None:
                span.leave(entered)
        if started is None:
            if admission is not None:
                admission.leave()
            if span is not None:
                span.end(None)
        return started

    def _start_apart(
        self,
        name: str,
        run: Callable[[Booking], ToolResult],
        done: Callable[[ToolResult], object],
    ) -> object:
        """Run ``run(booking)`` — a call of the tool ``name`` that no thread waits for and that
        cannot start on the pipe (:meth:`_start_io`: an HTTP server's, a task, one that must
        wait for a place, a resume, an exchanged token) — on this client's own threads,
        and hand its result to ``done``: at most ``max_in_flight + max_queued`` threads, a
        call beyond both ended at once as busy (True: ``done`` has it already). So calls
        to a slow server hold none of their caller's threads (a gateway's host workers),
        however many servers are slow at once. None, having run nothing, when this client
        keeps no queue (no ``max_in_flight``) or no thread could be started: the caller
        runs it on a thread of its own, as ever. ``booking`` is the call's place, or its
        turn to wait for one, taken here as it is handed over: a burst of calls is refused
        at once beyond the queue, never left waiting for a thread."""
        admission = self._admission
        if admission is None or not self._apart_ready():
            return None
        booking = admission.book()
        if isinstance(booking, str):
            done(ToolResult(f"{name} on MCP server {self.name}: {booking}", True))
            return True
        own = self._own
        if own is None:
            with self._open_lock:
                own = self._own
                if own is None:
                    from ..._pool import Pool

                    size = admission.limit + admission.queued
                    own = self._own = Pool(size, 0, f"toolnexus-mcp-call-{self.name}", _OWN_IDLE_S)
        context = contextvars.copy_context()  # the call's (its span, principal, hand-over)

        def job() -> None:
            try:
                result = context.run(run, booking)
            except Exception as exc:  # a remote tool answers; this is for safety
                from ..._tools import failure

                result = failure(exc, f"{name} on MCP server {self.name}")
            if not booking.used:  # (refused before it was made: a token not exchanged)
                admission.give_back(booking)
            try:
                # In the call's context too: its end is answered as its caller (a served
                # read's cache scope is the caller's: see _catalog.cache_scope).
                context.run(done, result)
            except Exception:  # (a host's done never raises; a job must not either)
                _log.exception("toolnexus mcp: the end of a call to %r raised", name)

        if own.submit(job) is not None:
            admission.give_back(booking)
            return None
        return _APART

    @contextlib.contextmanager
    def _admitted(self, method: str, token: CancellationToken | None) -> Iterator[None]:
        """Within: a place in this server's bounded queue (``max_in_flight``), as a tool
        call takes one — a read, a prompt, a completion, a subscription: one queue for
        every request a caller makes of the server. The place :meth:`_run_apart` booked
        for this request is used, else one is taken here (waiting while the queue has
        room). Raises McpError naming the server when the queue is full ("busy") or the
        caller gave up waiting."""
        admission = self._admission
        if admission is None:
            yield
            return
        cancel = token if token is not None else _NEVER
        booked = _BOOKED.get()
        if booked is not None and booked[0] is admission and not booked[1].used:
            booking = booked[1]
            booking.used = True
            refused = None if booking.place else admission.wait(cancel)
        else:
            refused = admission.enter(cancel)
        if refused is not None:
            raise McpError(self.name, f"{method}: {refused}")
        try:
            yield
        finally:
            admission.leave()

    def _run_apart(
        self, method: str, run: Callable[[], ToolResult], done: Callable[[ToolResult], object]
    ) -> object:
        """Run ``run()`` — a request of ``method`` (a read, a prompt, a completion) that no
        thread waits for — on this client's own threads, through its bounded queue, as
        :meth:`_start_apart` runs a tool call: its place is booked as it is handed over
        (a full queue ends it at once as busy) and used by the request it makes
        (:meth:`_admitted`). None, having run nothing, when this client keeps no queue."""

        def booked(booking: Booking) -> ToolResult:
            admission = self._admission
            assert admission is not None
            mark = _BOOKED.set((admission, booking))
            try:
                return run()
            finally:
                _BOOKED.reset(mark)

        return self._start_apart(method, booked, done)

    def _start_call(
        self,
        name: str,
        arguments: dict[str, Any],
        token: CancellationToken,
        progress: ProgressReporter | None,
        headers: Mapping[str, str] | None,
        retry: Mapping[str, Any] | None,
    ) -> ToolResult:
        if token is not _NEVER and token.is_cancellation_requested:
            return CANCELLED
        for attempt in (0, 1):
            try:
                connection = self._open()
            except McpError as exc:
                return unsent(ToolResult(f"{name}: {exc}", True), retry)
            waiter = Waiter()
            with connection.lock:
                outgoing = connection.session.call_tool(name, arguments, retry, waiter)
                assert outgoing.id is not None
                connection.peer.start_call(outgoing.id, waiter)
            result = connection.call(
                outgoing,
                waiter,
                name,
                token,
                progress,
                self._idle_s,
                self._questions,
                headers,
                may_retry=attempt == 0,
                answering=retry is not None,
            )
            if result is RETRY:
                continue
            assert isinstance(result, ToolResult)
            return result
        return ToolResult(f"{name}: MCP server {self.name} lost the session twice in a row", True)

    # ------------------------------------------------------------------ questions

    def _continue(
        self,
        name: str,
        arguments: dict[str, Any],
        token: CancellationToken,
        progress: ProgressReporter | None,
        answer: Answer,
        headers: Mapping[str, str] | None,
    ) -> ToolResult:
        flow = self._http.auth if self._http is not None else None
        if flow is not None and flow.owns(answer.id):  # the answer to a sign-in
            problem = flow.complete(answer)
            if problem is not None:
                return ToolResult(f"{name}: {problem}", True)
            return self._start_call(name, arguments, token, progress, headers, None)
        resumed = self._questions.resume(name, self.name, answer)
        if isinstance(resumed, ToolResult):  # nothing waits for this answer
            return resumed
        if isinstance(resumed, Parked):  # a legacy question, parked on its connection
            connection: Connection = resumed.connection
            return connection.resume(
                self._questions, resumed, answer, token, progress, self._idle_s
            )
        state = resumed.get("requestState")  # a modern question: the retry's params
        if isinstance(state, str) and state.startswith(_TASK_STATE):  # a task's question
            task_id = state[len(_TASK_STATE) :]
            responses = resumed.get("inputResponses")
            return self._answer_task(name, task_id, responses, token, progress)
        if name in self._task_tools or self._handing_over(name):
            # the retry of a task's creation asks for one again
            return self._run_task(name, arguments, token, progress, resumed)
        return self._start_call(name, arguments, token, progress, headers, resumed)

    # ------------------------------------------------------------------ upstream tasks
    # (a tool the server runs only as a task: the legacy era's tasks, 2025-11-25, and the
    # modern era's tasks extension)

    def _run_task(
        self,
        name: str,
        arguments: dict[str, Any],
        token: CancellationToken,
        progress: ProgressReporter | None,
        retry: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Call ``name`` as a task: create it (``tools/call``: legacy with ``task``,
        modern declaring the tasks extension; ``retry``: the answer to the question the
        server asked before it made the task) and follow it (:meth:`_follow_task`). To
        the caller it is one call, however long it runs."""
        legacy = self.era == "legacy"
        params: dict[str, Any] = {"name": name, "arguments": arguments, **(retry or {})}
        if legacy:
            params["task"] = {"ttl": _TASK_TTL_MS}
        try:
            created = self._request("tools/call", params, tasks=not legacy)
        except McpError as exc:
            return ToolResult(f"{name}: {exc.problem}", True)
        task = created.get("task") if legacy else created
        is_task = legacy or created.get("resultType") == "task"
        if not (is_task and isinstance(task, dict) and isinstance(task.get("taskId"), str)):
            return call_result(name, self.name, created)  # it answered as a plain call
        if not legacy and self._handing_over(name):  # the caller's task is this one
            handed = {key: value for key, value in task.items() if key != "resultType"}
            return ToolResult("", False, {UPSTREAM_TASK_KEY: {**handed, "upstream": self.name}})
        return self._follow_task(name, task, legacy, token, progress)

    def _follow_task(
        self,
        name: str,
        task: dict[str, Any],
        legacy: bool,
        token: CancellationToken,
        progress: ProgressReporter | None,
    ) -> ToolResult:
        """Poll the task ``task`` (as the server last showed it) at the server's poll
        interval — each new ``statusMessage`` as progress — to its end, and take its
        result (legacy ``tasks/result``; modern: the completed task's). A modern task's
        question is handed back as the call's (a pending result whose answer goes to
        ``tasks/update``); the caller's cancel or deadline sends ``tasks/cancel``."""
        where = f"{name}: MCP server {self.name}"
        task_id: str = task["taskId"]
        step = 0
        message: Any = None
        try:
            while True:
                status = task.get("status")
                if task.get("statusMessage") != message:
                    message = task.get("statusMessage")
                    step += 1
                    if progress is not None and isinstance(message, str):
                        progress(step, None, message)
                if status == "completed" or (legacy and status == "failed"):
                    break
                if status == "failed":  # modern: its error rides in the task
                    error = task.get("error")
                    text = error.get("message") if isinstance(error, dict) else message
                    return ToolResult(f"{where}: task {task_id} failed: {text}", True)
                if status == "cancelled":
                    return ToolResult(f"{where} cancelled task {task_id}: {message or ''}", True)
                if status == "input_required" and not legacy and "inputRequests" in task:
                    # Its question, as a call's: the answer's retry names the task.
                    asked = {"inputRequests": task["inputRequests"]}
                    return call_result(
                        name, self.name, {**asked, "resultType": "input_required",
                                          "requestState": _TASK_STATE + task_id}
                    )  # fmt: skip
                if status == "input_required" and not legacy:  # asked, no questions shown
                    task = self._request("tasks/get", {"taskId": task_id}, tasks=True)
                    continue
                if status == "input_required":  # legacy: asked on tasks/result's stream
                    return self._task_result_call(name, task_id, token, progress)
                if status != "working":
                    self._cancel_task(task_id, legacy)
                    return ToolResult(f"{where}: task {task_id} has status {status!r}", True)
                interval = task.get("pollInterval" if legacy else "pollIntervalMs")
                wait_s = interval / 1000 if isinstance(interval, int) and interval > 0 else 0.5
                if token.wait(min(max(wait_s, 0.05), 5.0)):
                    self._cancel_task(task_id, legacy)
                    return CANCELLED
                task = self._request("tasks/get", {"taskId": task_id}, tasks=not legacy)
            found: Any
            if legacy:
                found = self._request("tasks/result", {"taskId": task_id})
            elif "result" not in task:  # done at once: its creation shows only its summary
                task = self._request("tasks/get", {"taskId": task_id}, tasks=True)
                found = task.get("result")
            else:
                found = task.get("result")
            if not isinstance(found, dict):
                return ToolResult(f"{where}: task {task_id} completed without a result", True)
        except McpError as exc:
            return ToolResult(f"{name}: task {task_id}: {exc.problem}", True)
        return call_result(name, self.name, found)

    def _task_result_call(
        self,
        name: str,
        task_id: str,
        token: CancellationToken,
        progress: ProgressReporter | None,
    ) -> ToolResult:
        """A legacy task that asks: its ``tasks/result`` read as a call, so the server's
        ``elicitation/create`` for it parks this call as any legacy question does (the
        host's answer goes back on it) and the request's answer is the task's result. A
        cancel ends the request and cancels the task."""
        connection = self._open()
        waiter = Waiter()
        with connection.lock:
            outgoing = connection.session.request(
                "tasks/result", {"taskId": task_id}, progress=True, waiter=waiter
            )
            assert outgoing.id is not None
            connection.peer.start_call(outgoing.id, waiter)
        result = connection.call(
            outgoing,
            waiter,
            name,
            token,
            progress,
            self._idle_s,
            self._questions,
            None,
            may_retry=False,
            answering=False,
        )
        if result is CANCELLED:
            self._cancel_task(task_id, True)
        if not isinstance(result, ToolResult):  # RETRY: the session was lost first
            return ToolResult(f"{name}: task {task_id}: the session was lost", True)
        return result

    def _answer_task(
        self,
        name: str,
        task_id: str,
        responses: Any,
        token: CancellationToken,
        progress: ProgressReporter | None,
    ) -> ToolResult:
        """Give a modern task the answer to its question (``tasks/update``) and follow it
        on. A task this client did not create, or one that is gone, is the server's
        refusal, named."""
        try:
            self._request(
                "tasks/update", {"taskId": task_id, "inputResponses": responses}, tasks=True
            )
            task = self._request("tasks/get", {"taskId": task_id}, tasks=True)
        except McpError as exc:
            return ToolResult(f"{name}: task {task_id}: {exc.problem}", True)
        return self._follow_task(name, task, False, token, progress)

    # ------------------------------------------------------------------ a gateway's tasks
    # (a caller's task of a tool of this server is this server's task: see
    # mcp/_shared/_upstream_tasks.py; the server side calls these)

    def _hands_over_tasks(self, remote: str) -> bool:
        """Whether a call of this server's tool ``remote`` may be its task, handed to the
        caller (a modern server listed it ``optional`` or ``required``)."""
        if self.era != "modern":
            return False  # a legacy task is followed here: its shape is not the caller's
        return remote in self._task_tools or remote in self._task_optional

    def _handing_over(self, name: str) -> bool:
        """Whether this call of ``name`` hands its task over (the server set HAND_OVER)."""
        wanted = HAND_OVER.get()
        return wanted is not None and wanted[0] is self and wanted[1] == name

    def _forward_task(
        self, method: str, params: dict[str, Any], exchange: Any = None
    ) -> dict[str, Any]:
        """``method`` (``tasks/get``, ``tasks/update``, ``tasks/cancel``) for one of this
        server's tasks, with the caller's token when ``exchange`` (``auth.exchange``) says
        so; the answer as sent. Raises McpError (and OAuthError for an exchange)."""
        from ._oauth_exchange import as_caller

        with as_caller(exchange):
            return self._request(method, params, tasks=True)

    def _task_result(
        self, remote: str, result: Any, links: Callable[[str], str] | None
    ) -> ToolResult:
        """An upstream task's ``result`` (a ``CallToolResult``) as the tool's result, its
        resource links renamed by ``links`` (a gateway's prefixed URIs)."""
        if not isinstance(result, dict):
            return ToolResult(f"{remote}: MCP server {self.name}: the task has no result", True)
        found = call_result(remote, self.name, result)
        return relink(found, links) if links is not None and found.parts else found

    def _cancel_task(self, task_id: str, legacy: bool) -> None:
        try:
            self._request("tasks/cancel", {"taskId": task_id}, tasks=not legacy)
        except McpError as exc:
            _log.warning("MCP server %s: cancelling task %s failed: %s", self.name, task_id, exc)

    # ------------------------------------------------------------------ list caching

    def cached_until(self, method: str) -> float | None:
        """Until when (a ``time.monotonic()`` value) the cached answer of the list method
        ``method`` (``"tools/list"``, ``"resources/list"``, ...) holds: its ``ttlMs``
        from when it was fetched; ``math.inf`` when the server sent no ``ttlMs`` but
        declared ``listChanged`` for that list (it holds until the server says the list
        changed); ``None`` when nothing is cached (the next call asks the server).

        A list is cached as the server's hints say: a ``tools/list`` answer with
        ``ttlMs`` is reused for that long, a ``notifications/…/list_changed`` drops it at
        once, as does a new connection (the server may have restarted). ``cacheScope``
        (``"public"`` or ``"private"``) is kept beside it (:meth:`cache_scope`): one client
        is one user, so both are cached here; a gateway that serves several principals
        filters one upstream list per principal, never shares a principal's own answer.

        Example::

            client.list_tools()
            print(client.cached_until("tools/list"))  # e.g. 12345.6, or inf, or None
        """
        with self._lists_lock:
            cached = self._lists.get(method)
        if cached is None or time.monotonic() >= cached[1]:
            return None
        return cached[1]

    def cache_scope(self, method: str) -> str | None:
        """The ``cacheScope`` the server gave the cached answer of ``method``, or None."""
        with self._lists_lock:
            cached = self._lists.get(method)
        return cached[2] if cached is not None else None

    def _keep_list(
        self, method: str, items: list[dict[str, Any]], first: dict[str, Any], generation: int
    ) -> None:
        ttl = first.get("ttlMs")
        scope = first.get("cacheScope")
        if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
            until = time.monotonic() + ttl / 1000
        elif ttl is None and self._declares_list_changed(method):
            until = math.inf
        else:
            return  # no hint: asked anew each time
        with self._lists_lock:
            if self._lists_changed != generation:
                return  # a list_changed came while this was fetched: it may be stale
            kept = [dict(item) for item in items]
            self._lists[method] = (kept, until, scope if isinstance(scope, str) else None)
        if until == math.inf:
            self._listen_if_wanted()  # held until a notification: it must be heard

    def _declares_list_changed(self, method: str) -> bool:
        capability = self.server_capabilities.get(method.split("/", 1)[0])
        return isinstance(capability, dict) and capability.get("listChanged") is True

    def _forget_lists(self, *methods: str, overtaken: bool = True) -> None:
        """Drop the cached ``methods``; ``overtaken``: a fetch of them under way may have
        read the old list, so it is not kept either."""
        with self._lists_lock:
            if overtaken:
                self._lists_changed += 1
            for method in methods:
                self._lists.pop(method, None)

    # ------------------------------------------------------------------ resources, prompts,
    # completion and their notifications (what a gateway passes on)

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The capabilities the server declared (``{}`` until connected).

        Example::

            if "resources" in client.connect().server_capabilities:
                print(client.list_resources())
        """
        connection = self._connection
        return dict(connection.session.server_capabilities) if connection is not None else {}

    def on_notification(self, listener: Callable[[str, dict[str, Any]], object]) -> None:
        """Call ``listener(method, params)`` (on a helper thread) when the server sends
        ``notifications/resources/list_changed``, ``notifications/prompts/list_changed``
        or ``notifications/resources/updated`` (``params["uri"]``: the resource whose
        content changed; see :meth:`subscribe_resource`).

        Example::

            client.on_notification(lambda method, params: print(method, params))
        """
        if not callable(listener):
            raise InvalidTypeError(f"listener must be callable, got {type(listener).__name__}")
        self._notice_listeners.append(listener)
        self._listen_if_wanted()

    def _noticed(self, method: str, params: dict[str, Any]) -> None:
        if method == SUBSCRIBED:
            # The listen stream is open: a list kept until a notification, fetched
            # before it opened, may have changed unheard.
            with self._lists_lock:
                held = [key for key, (_, until, _) in self._lists.items() if until == math.inf]
            self._forget_lists(*held)
            return
        self._forget_lists(*_LIST_CHANGES.get(method, ()))
        listeners = list(self._notice_listeners)
        if not listeners:
            return

        def run() -> None:
            for listener in listeners:
                try:
                    listener(method, params)
                except Exception:
                    _log.exception("MCP server %s: a %s listener failed", self.name, method)

        threading.Thread(target=run, name=f"toolnexus-mcp-{self.name}-notice", daemon=True).start()

    def subscribe_resource(self, uri: str) -> None:
        """Ask the server to send ``notifications/resources/updated`` when the content
        at ``uri`` changes (``resources/subscribe``; :meth:`on_notification` hears it).
        Raises :class:`~toolnexus.errors.McpError` when the server refuses.

        Example::

            client.on_notification(lambda method, params: print(params["uri"]))
            client.subscribe_resource("demo://resource/static/document/architecture.md")
        """
        connection = self._open()
        if connection.session.era != "modern":
            with self._admitted("resources/subscribe", None):
                self._request("resources/subscribe", {"uri": uri})
            return
        # Modern: the subscriptions/listen stream asks for it (no resources/subscribe).
        with self._lists_lock:
            if uri in self._subscriptions:
                return
            self._subscriptions.add(uri)
        self._relisten(connection)

    def unsubscribe_resource(self, uri: str) -> None:
        """Stop the updates :meth:`subscribe_resource` asked for (``resources/unsubscribe``;
        modern: the listen stream no longer asks for them)."""
        connection = self._open()
        if connection.session.era != "modern":
            with self._admitted("resources/unsubscribe", None):
                self._request("resources/unsubscribe", {"uri": uri})
            return
        with self._lists_lock:
            if uri not in self._subscriptions:
                return
            self._subscriptions.discard(uri)
        self._relisten(connection)

    def _relisten(self, connection: Connection) -> None:
        """The listen stream's filter changed: open it again (or first) with it."""
        if not connection.subscribing:
            self._listen(connection)
        elif connection.is_stdio:
            connection.subscribe_piped(functools.partial(self._listen_filter, connection), True)
        else:
            connection.resubscribe()

    def complete(
        self,
        ref: Mapping[str, Any],
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Candidate values for one argument of a prompt or a resource template
        (``completion/complete``): ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": <template>}``, ``context`` the other arguments
        already given. Returns the ``completion`` object as sent, ``{"values": [...],
        "total"?, "hasMore"?}``; raises :class:`~toolnexus.errors.McpError` when the server
        refuses.

        Example::

            ref = {"type": "ref/prompt", "name": "completable-prompt"}
            print(client.complete(ref, "department", "E")["values"])  # ['Engineering']
        """
        params: dict[str, Any] = {
            "ref": dict(ref),
            "argument": {"name": argument, "value": value},
        }
        if context:
            params["context"] = {"arguments": dict(context)}
        with self._admitted("completion/complete", None):
            result = self._request("completion/complete", params)
        completion = result.get("completion")
        values = completion.get("values") if isinstance(completion, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise McpError(self.name, "completion/complete answered without completion.values")
        return dict(completion)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """End the connection: cancel parked questions, end the child process and its
        process group (stdio) or the session (HTTP ``DELETE``), join the threads.
        Idempotent; later calls are answered with an error."""
        with self._open_lock:
            if self._closed:
                return
            self._closed = True
            connection, self._connection = self._connection, None
        self._questions.clear()
        if connection is not None:
            if connection.is_stdio:
                connection.drop("the client was closed")
            else:
                connection.on_lost("the client was closed")
        if self._http is not None:
            self._http.close(min(self._settings.timeout_s, 2.0))
        if connection is not None:
            current = threading.current_thread()
            for thread in connection.threads:
                if thread is not current:
                    thread.join(timeout=2)
        if self._own is not None:  # their calls end now, the connection gone
            self._own.close(2.0)
        _live_clients.discard(self)

    def __enter__(self) -> McpClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> McpClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        import asyncio

        await asyncio.get_running_loop().run_in_executor(None, self.close)


_NEVER = CancellationToken.NONE
# The place in a client's queue booked for the request about to be made on this thread
# (_run_apart books it as the request is handed over; _admitted uses it).
_BOOKED: contextvars.ContextVar[tuple[Admission, Booking] | None] = contextvars.ContextVar(
    "toolnexus_mcp_booked", default=None
)
_OWN_IDLE_S = 10.0  # a thread of the client's own with no call this long exits


class _Apart:
    """What carries the answer of a call on the client's own threads: nothing to read
    (``read_until`` says another thread ends it; it hands the call its result)."""

    __slots__ = ()

    def read_until(self, done: Callable[[], object], timeout: float | None) -> bool | None:
        return None

    def read_for_others(self) -> None:
        return None


_APART = _Apart()
