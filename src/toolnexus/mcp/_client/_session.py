"""The MCP client session without I/O: messages to send out, parsed messages in, events out.

:class:`ClientSession` is the protocol state of one connection to an MCP server, both eras:
it opens the connection (``server/discover`` for the stateless 2026-07-28 revision, falling
back to the ``initialize`` handshake of 2024-11-05 … 2025-11-25 when the server answers
that it is not modern), numbers requests, adds the modern ``_meta`` envelope to each,
correlates responses with the requests they answer and says what every message the server
sent means. It never reads or writes a stream: a transport (``_client_stdio``,
``_client_http``) writes what :meth:`ClientSession.request` returns and feeds what it
reads to :meth:`ClientSession.receive`. The rules both sides share (revisions, ``_meta``
keys, header values) come from :mod:`._protocol`; bytes from :mod:`._codec`.

Like the server session, it is not thread-safe: a driver serialises calls into it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from ..._tracing import inject as inject_trace
from .._shared import _codec as codec
from .._shared._correlation import Pending
from .._shared._protocol import (
    FIELD_NAME,
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_PROTOCOL_VERSIONS,
    NAMED_PARAM,
    TASKS_EXTENSION,
    describe,
    encode_header_value,
    header_text,
    is_request_id,
    level_rank,
)

__all__ = [
    "META_CLIENT_INFO",
    "ClientSession",
    "Failure",
    "Notification",
    "Opened",
    "Outgoing",
    "Response",
    "ServerRequest",
    "Stray",
    "header_params",
    "list_page",
    "listen_filter",
    "log_record",
    "progress_of",
    "prompt_result",
    "remote_tools",
    "resource_contents",
]

META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
"""The ``_meta`` key a modern client names itself with (a SHOULD on every request)."""


class Outgoing(NamedTuple):
    """A message to send: the JSON-RPC ``message`` and its ``id`` (``None`` for a
    notification or a response of ours). ``line``: its bytes, when the session wrote
    them from a template as it built the message (a value: change neither)."""

    message: dict[str, Any]
    id: int | None = None
    line: bytes | None = None

    def to_bytes(self) -> bytes:
        """The message as one line of compact UTF-8 JSON ending in ``\\n``."""
        if self.line is not None:
            return self.line
        return codec.encode(self.message)


class Opened(NamedTuple):
    """The connection is open: the era and revision are known (``session.era``)."""

    era: str
    protocol_version: str


class Response(NamedTuple):
    """The result of our request ``id`` (a request of ours the caller sent); ``waiter``:
    who waits for it (the ``waiter`` the request was made with, or ``None``)."""

    id: int
    method: str
    result: dict[str, Any]
    waiter: Any = None


class Failure(NamedTuple):
    """An error response to our request ``id`` (``code`` ``message`` ``data`` as sent),
    or a request that failed for a reason of ours (``code`` is then ``None``);
    ``waiter``: who waits for it, as in :class:`Response`."""

    id: int
    method: str
    code: int | None
    message: str
    data: Any = None
    waiter: Any = None


Asked = tuple[str, Any]
"""A request of ours awaiting its answer: its method, and who waits for the answer (the
``waiter`` it was made with: the I/O layer's, e.g. a client's ``Waiter``; or ``None``)."""


class ServerRequest(NamedTuple):
    """A request the server sent (``elicitation/create``, ``ping``, ...): answer it with
    :meth:`ClientSession.respond` or :meth:`ClientSession.respond_error`."""

    id: str | int
    method: str
    params: dict[str, Any]


class Notification(NamedTuple):
    """A notification the server sent (progress, a log message, a list change, ...)."""

    method: str
    params: dict[str, Any]


class Stray(NamedTuple):
    """A message that is not what the protocol allows here (not JSON-RPC, a response to
    no request of ours, ...): ``problem`` says what; it is logged and otherwise ignored."""

    problem: str


Event = Opened | Response | Failure | ServerRequest | Notification | Stray | Outgoing

_OUR_VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS + LEGACY_PROTOCOL_VERSIONS)
_UNSUPPORTED_PROTOCOL_VERSION = codec.UNSUPPORTED_PROTOCOL_VERSION

# What x-mcp-header names may be: an HTTP field name, so it fits after "Mcp-Param-".
_HEADER_NAME = re.compile(FIELD_NAME)
_HEADER_TYPES = ("string", "integer", "boolean")

LIST_PAGES = 100
"""The most pages a list method is followed for (a server that pages forever is cut off)."""

# MCP log levels (RFC 5424's) as the standard library's logging levels.
_LOG_LEVELS = {
    "debug": 10,
    "info": 20,
    "notice": 20,
    "warning": 30,
    "error": 40,
    "critical": 50,
    "alert": 50,
    "emergency": 50,
}


def header_params(schema: Mapping[str, Any]) -> dict[str, str] | str:
    """The arguments a tool's ``inputSchema`` asks to mirror as ``Mcp-Param-{Name}``
    headers (``{argument: Name}``), or why the tool must not be used (a string).

    An ``x-mcp-header`` must sit on a top-level property of type string, integer or
    boolean, name a non-empty HTTP token, and be unique (case-insensitively).
    """
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    found: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, prop in properties.items():
        if not isinstance(prop, Mapping) or "x-mcp-header" not in prop:
            continue
        name = prop["x-mcp-header"]
        where = f"inputSchema.properties.{key}.x-mcp-header"
        if not isinstance(name, str) or not name:
            return f"{where} must be a non-empty string, got {describe(name)}"
        if _HEADER_NAME.fullmatch(name) is None:
            return f"{where} {name!r} is not a valid header name (letters, digits, -_.!#$%&'*+^`|~)"
        if prop.get("type") not in _HEADER_TYPES:
            return (
                f"{where} sits on a property of type {describe(prop.get('type'))}; only "
                "string, integer and boolean parameters can travel as headers"
            )
        folded = name.lower()
        if folded in seen:
            return f"{where} {name!r} repeats the header of property {seen[folded]!r}"
        seen[folded] = key
        found[key] = name
    return found


def progress_of(params: Mapping[str, Any]) -> tuple[float, float | None, str | None] | None:
    """A ``notifications/progress``'s ``(progress, total, message)`` as a reporter takes
    them, or ``None`` when it carries no number."""
    value = params.get("progress")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    total = params.get("total")
    message = params.get("message")
    return (
        value,
        total if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
        message if isinstance(message, str) else None,
    )


def log_record(server: str, params: Mapping[str, Any]) -> tuple[int, str]:
    """A ``notifications/message`` from ``server`` as a :mod:`logging` level and a line."""
    level = params.get("level")
    logger = params.get("logger")
    data = params.get("data")
    if isinstance(data, str):
        text = data
    else:
        import json

        text = json.dumps(data, default=str)
    where = f" ({logger})" if isinstance(logger, str) else ""
    rank = _LOG_LEVELS.get(level, 20) if isinstance(level, str) else 20
    return rank, f"MCP server {server}{where}: {text}"


_HEARD = (("tools", "toolsListChanged"), ("resources", "resourcesListChanged"),
          ("prompts", "promptsListChanged"))  # fmt: skip


def listen_filter(capabilities: Mapping[str, Any], uris: Sequence[str] = ()) -> dict[str, Any]:
    """What a modern client asks its ``subscriptions/listen`` stream for: each list the
    server says changes (``listChanged``), and the updates of ``uris`` when it offers
    resource subscriptions — empty when there is nothing to hear.

    Example::

        listen_filter({"tools": {"listChanged": True}})  # {'toolsListChanged': True}
    """
    asked: dict[str, Any] = {}
    for capability, key in _HEARD:
        declared = capabilities.get(capability)
        if isinstance(declared, dict) and declared.get("listChanged") is True:
            asked[key] = True
    resources = capabilities.get("resources")
    if uris and isinstance(resources, dict) and resources.get("subscribe") is True:
        asked["resourceSubscriptions"] = list(uris)
    return asked


def list_page(
    server: str, method: str, key: str, result: Mapping[str, Any]
) -> tuple[list[Any], str | None]:
    """One page of a list method's answer from ``server``: its ``key`` entries (objects
    only) and the cursor of the next page (``None``: the last). Raises
    :class:`~toolnexus.errors.McpError` saying what the answer lacks."""
    page = result.get(key)
    if not isinstance(page, list):
        from ...errors import McpError

        raise McpError(server, f"{method} answered without a {key} array ({describe(page)})")
    cursor = result.get("nextCursor")
    entries = [entry for entry in page if isinstance(entry, dict)]
    return entries, cursor if isinstance(cursor, str) and cursor else None


def resource_contents(server: str, uri: str, result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The contents (objects only) of ``server``'s ``resources/read`` answer for ``uri``.
    Raises :class:`~toolnexus.errors.McpError` when the answer has no contents array."""
    contents = result.get("contents")
    if not isinstance(contents, list):
        from ...errors import McpError

        raise McpError(server, f"resources/read answered without contents for {uri!r}")
    return [entry for entry in contents if isinstance(entry, dict)]


def prompt_result(server: str, name: str, result: dict[str, Any]) -> dict[str, Any]:
    """``server``'s ``prompts/get`` answer for the prompt ``name``, as sent. Raises
    :class:`~toolnexus.errors.McpError` when it has no messages array."""
    if not isinstance(result.get("messages"), list):
        from ...errors import McpError

        raise McpError(server, f"prompts/get answered without messages for {name!r}")
    return result


def remote_tools(
    specs: Sequence[Mapping[str, Any]],
    prefix: str,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
) -> Iterator[tuple[str, dict[str, Any] | str]]:
    """Each listed tool ``include``/``exclude`` keeps (server-side names), as
    ``(remote name, fields)``: the keywords of its :class:`~toolnexus.Tool` (named
    ``prefix + name``; ``headers``: its ``x-mcp-header`` arguments, see
    :func:`header_params`) — or, for a tool that cannot be used, why (a string; an unnamed
    tool comes as ``("", why)``)."""
    for spec in specs:
        remote = spec.get("name")
        if not isinstance(remote, str) or not remote:
            yield "", "a tool without a name"
            continue
        if (include is not None and remote not in include) or remote in exclude:
            continue
        schema = spec.get("inputSchema")
        if not isinstance(schema, dict):
            yield remote, f"inputSchema must be an object, got {describe(schema)}"
            continue
        headers = header_params(schema)
        if isinstance(headers, str):
            yield remote, headers
            continue
        description = spec.get("description")
        title = spec.get("title")
        output = spec.get("outputSchema")
        annotations = spec.get("annotations")
        yield (
            remote,
            {
                "name": prefix + remote,
                "description": description if isinstance(description, str) else "",
                "input_schema": schema,
                "title": title if isinstance(title, str) else None,
                "output_schema": output if isinstance(output, dict) else None,
                "annotations": annotations if isinstance(annotations, dict) else None,
                "headers": headers,
            },
        )


class ClientSession:
    """One MCP client connection, both protocol eras, as a pure state machine.

    Send what :meth:`open` and :meth:`request` return; feed every message the server sends
    to :meth:`receive` and act on the events it returns, in order: :class:`Outgoing`
    (send it), :class:`Opened`, :class:`Response`/:class:`Failure` (the answer to a request
    of ours), :class:`ServerRequest` (answer it), :class:`Notification`, :class:`Stray`.

    Args:
        name, version: the client identity servers see (``clientInfo``).
        elicitation: which elicitation modes to declare: ``("form", "url")`` (the
            default), one of them, or ``()`` for none — then a compliant server never asks.
        protocol_version: ``None`` negotiates (the modern revision when the server speaks
            it, else the newest legacy one it accepts); a revision pins it.
        log_level: the least severe server log level to receive (``None``: the server's
            default; modern: per request in ``_meta``, legacy: ``logging/setLevel``).

    Example::

        session = ClientSession(name="demo")
        first = session.open()              # server/discover, with the modern _meta
        events = session.receive({"jsonrpc": "2.0", "id": first.id, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}})
        assert session.era == "modern"
    """

    def __init__(
        self,
        *,
        name: str = "toolnexus",
        version: str | None = None,
        elicitation: tuple[str, ...] = ("form", "url"),
        protocol_version: str | None = None,
        log_level: str | None = None,
    ) -> None:
        from ...errors import InvalidValueError

        if version is None:
            from ..._version import __version__ as version
        if protocol_version is not None and protocol_version not in _OUR_VERSIONS:
            raise InvalidValueError(
                f"protocol_version must be one of {', '.join(sorted(_OUR_VERSIONS))} or None "
                f"(negotiate), got {protocol_version!r}"
            )
        for mode in elicitation:
            if mode not in ("form", "url"):
                raise InvalidValueError(f"elicitation modes are 'form' and 'url', got {mode!r}")
        if log_level is not None and level_rank(log_level) is None:
            raise InvalidValueError(f"log_level must be an MCP log level, got {log_level!r}")
        self._client_info = {"name": name, "version": version}
        self._elicitation = tuple(elicitation)
        self._pinned = protocol_version
        self._log_level = log_level
        self._ids = itertools.count(1)
        # Each request awaiting its answer: its method and who waits (the shared rule of
        # our ids). The one table of them: a client's peer reads the same (``requests``).
        self._pending: Pending[Asked] = Pending()
        self.era: str | None = None
        """``"modern"``, ``"legacy"``, or ``None`` before the connection is open."""
        self.protocol_version: str | None = None
        """The revision spoken once open."""
        self.server_info: dict[str, Any] = {}
        """The server's ``serverInfo`` (name, version, ...), once open."""
        self.server_capabilities: dict[str, Any] = {}
        """The server's capabilities, once open."""
        self.instructions: str | None = None
        """The server's instructions for the model, if it sent any."""
        self._trying: str | None = None  # the modern revision a discover is trying
        self._retried = False  # a discover refused with -32022 is retried once
        # Every modern request's _meta entries, and their encoding ("": none).
        self._shared: tuple[dict[str, Any], str] | None = None

    # ------------------------------------------------------------------ state

    @property
    def is_open(self) -> bool:
        """True once the era is known (discover answered, or initialize done)."""
        return self.era is not None

    @property
    def modern(self) -> bool:
        """True on a modern (stateless) connection."""
        return self.era == "modern"

    @property
    def pending(self) -> int:
        """How many requests of ours await an answer."""
        return len(self._pending)

    @property
    def requests(self) -> Pending[Asked]:
        """Our requests awaiting their answer, by id: ``(method, waiter)`` each. The one
        table of them — the I/O layer reads it (who waits for an id, everyone waiting)
        and withdraws a request it gives up on; the session issues and answers.

        Example::

            session = ClientSession()
            outgoing = session.open()
            assert session.requests == {outgoing.id: ("server/discover", None)}
        """
        return self._pending

    def __repr__(self) -> str:
        state = f"{self.era} {self.protocol_version}" if self.era else "not open"
        return f"<ClientSession {state}, {len(self._pending)} request(s) pending>"

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities this session declares."""
        caps: dict[str, Any] = {}
        if self._elicitation:
            caps["elicitation"] = {mode: {} for mode in self._elicitation}
        return caps

    def elicitation_modes(self) -> tuple[str, ...]:
        """The elicitation modes this session declared, and the era allows."""
        if self.era == "legacy" and self.protocol_version is not None:
            if self.protocol_version < "2025-06-18":
                return ()
            if self.protocol_version == "2025-06-18":
                return tuple(mode for mode in self._elicitation if mode == "form")
        return self._elicitation

    # ------------------------------------------------------------------ opening

    def open(self) -> Outgoing:
        """The first request: ``server/discover`` (modern), or ``initialize`` when a legacy
        revision is pinned."""
        if self._pinned is not None and self._pinned in LEGACY_PROTOCOL_VERSIONS:
            return self._initialize(self._pinned)
        self._trying = self._pinned or MODERN_PROTOCOL_VERSIONS[-1]
        return self._discover()

    def probing(self, outgoing: Outgoing) -> bool:
        """True when ``outgoing`` is the probe of a negotiation (``server/discover`` with
        no revision pinned): a server that ends the connection on it, or refuses it with a
        bare HTTP error, is a legacy one — open with :meth:`legacy_fallback`."""
        return outgoing.message.get("method") == "server/discover" and self._pinned is None

    def _discover(self) -> Outgoing:
        request_id = next(self._ids)
        self._pending.issue(request_id, ("server/discover", None))
        params = {"_meta": self._meta(self._trying)}
        return Outgoing(
            {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": params},
            request_id,
        )

    def _initialize(self, version: str) -> Outgoing:
        request_id = next(self._ids)
        self._pending.issue(request_id, ("initialize", None))
        params = {
            "protocolVersion": version,
            "capabilities": self._legacy_capabilities(version),
            "clientInfo": dict(self._client_info),
        }
        return Outgoing(
            {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params},
            request_id,
        )

    def _legacy_capabilities(self, version: str) -> dict[str, Any]:
        if version < "2025-06-18" or not self._elicitation:
            return {}
        if version == "2025-06-18":
            return {"elicitation": {}} if "form" in self._elicitation else {}
        return self.capabilities()

    def legacy_fallback(self) -> Outgoing:
        """``initialize`` with the newest legacy revision (or the pinned one): for a
        transport that learned another way that the server is not modern (a stdio server
        that ended the connection on ``server/discover``)."""
        self._pending.clear()
        version = self._pinned if self._pinned in LEGACY_PROTOCOL_VERSIONS else None
        return self._initialize(version or LEGACY_PROTOCOL_VERSIONS[-1])

    def _meta(self, version: str | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: version or self.protocol_version,
            # the skills extension (SEP-2640): the client lists, gets and verifies skills
            META_CLIENT_CAPABILITIES: {
                **self.capabilities(),
                "extensions": {"io.modelcontextprotocol/skills": {}},
            },
            META_CLIENT_INFO: dict(self._client_info),
        }
        if self._log_level is not None:
            meta[META_LOG_LEVEL] = self._log_level
        return meta

    # ------------------------------------------------------------------ sending

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        progress: bool = False,
        tasks: bool = False,
        waiter: Any = None,
    ) -> Outgoing:
        """A request to send: a fresh id, and on a modern connection the ``_meta``
        envelope (merged over any ``_meta`` in ``params``, which is where a request's own
        ``_meta`` entries go). ``progress`` asks for progress notifications (the
        ``progressToken`` is the request id); ``tasks`` declares the tasks extension on
        this one request (modern: a tool that runs only as a task, and its ``tasks/*``).
        Its answer comes back from :meth:`receive` as a :class:`Response` or
        :class:`Failure` with the same id, carrying ``waiter`` (whoever waits for it: the
        I/O layer's, kept in :attr:`requests` meanwhile)."""
        request_id = next(self._ids)
        body = dict(params) if params else {}
        extra = body.pop("_meta", None)
        meta: dict[str, Any] = {}
        shared_text = ""
        if self.era == "modern" and tasks:
            meta.update(self._meta())
            extensions: dict[str, Any] = {TASKS_EXTENSION: {}}
            meta[META_CLIENT_CAPABILITIES] = {**self.capabilities(), "extensions": extensions}
        elif self.era == "modern":
            shared = self._shared
            if shared is None:
                # The same on every request of an open connection: built (and encoded) once.
                entries = self._meta()
                shared = self._shared = (entries, codec.encode_shared(entries) or "")
            meta.update(shared[0])
            shared_text = shared[1]
        own: dict[str, Any] | None = None
        if extra is not None and isinstance(extra, Mapping):
            own = {
                key: value
                for key, value in extra.items()
                if key not in meta and not (progress and key == "progressToken")
            }
            meta.update(own)
        if progress:
            meta["progressToken"] = request_id
        self._pending.issue(request_id, (method, waiter))
        line = (
            codec.request_line(request_id, method, body, shared_text, own, progress)
            if shared_text
            else None
        )
        if meta:
            body["_meta"] = meta  # last, as the line has it
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if body:
            message["params"] = body
        return Outgoing(message, request_id, line)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        retry: Mapping[str, Any] | None = None,
        waiter: Any = None,
    ) -> Outgoing:
        """A ``tools/call`` of the tool ``name`` with ``arguments`` (a :meth:`request`
        asking for progress; ``waiter`` as there). ``retry``: the params the answer to a
        modern question adds (``inputResponses``, ``requestState``). When tracing is on,
        the caller's trace context rides in ``_meta``, where the server's span becomes its
        child.

        Example::

            outgoing = session.call_tool("add", {"a": 1, "b": 2})
            assert outgoing.message["params"]["_meta"]["progressToken"] == outgoing.id
        """
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if retry is not None:
            params.update(retry)
        # Its own _meta entries go in params["_meta"]: request() writes the bytes.
        outgoing = self.request("tools/call", params, progress=True, waiter=waiter)
        assert outgoing.id is not None
        meta = outgoing.message["params"]["_meta"]
        entries = len(meta)
        inject_trace(meta, outgoing.id)
        if len(meta) != entries:
            # Trace context came in after the session wrote the line: encode anew.
            return outgoing._replace(line=None)
        return outgoing

    def notification(self, method: str, params: Mapping[str, Any] | None = None) -> Outgoing:
        """A notification to send."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        return Outgoing(message)

    def cancel(self, request_id: int, reason: str | None = None) -> Outgoing | None:
        """Give up on request ``request_id``: forget it (a late answer is ignored) and, on
        a legacy connection, the ``notifications/cancelled`` to send (a modern request is
        cancelled by closing its HTTP request; over stdio this notification is sent too)."""
        self._pending.withdraw(request_id)
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        return self.notification("notifications/cancelled", params)

    def forget(self, request_id: int) -> None:
        """Stop waiting for request ``request_id`` without telling the server."""
        self._pending.withdraw(request_id)

    def respond(self, request_id: str | int, result: Mapping[str, Any]) -> Outgoing:
        """Our answer to the server's request ``request_id``."""
        return Outgoing({"jsonrpc": "2.0", "id": request_id, "result": dict(result)})

    def respond_error(self, request_id: str | int, code: int, message: str) -> Outgoing:
        """Our error answer to the server's request ``request_id``."""
        return Outgoing(codec.error_message(request_id, code, message))

    def answer_request(self, event: ServerRequest) -> Outgoing | None:
        """Our answer to a server request that needs no caller: ``ping``, and ``-32601``
        for a method this client does not offer; ``None`` for ``elicitation/create`` —
        a question, for the call it belongs to (:mod:`._client_questions`)."""
        if event.method == "ping":
            return self.respond(event.id, {})
        if event.method == "elicitation/create":
            return None
        return self.respond_error(
            event.id, -32601, f"method not found: this client does not offer {event.method!r}"
        )

    def http_headers(
        self, outgoing: Outgoing, params_as_headers: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The MCP headers of ``outgoing`` sent as an HTTP POST: ``MCP-Protocol-Version``
        (once known), and on a modern connection ``Mcp-Method``, ``Mcp-Name`` and an
        ``Mcp-Param-{Name}`` per argument ``params_as_headers`` names (from
        :func:`header_params`; a null or absent argument sends none)."""
        headers: dict[str, str] = {}
        message = outgoing.message
        version = self.protocol_version
        method = message.get("method")
        if version is None and method == "server/discover":
            version = self._trying
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        if self.era == "legacy" or not isinstance(method, str):
            return headers
        if self.era is None and method != "server/discover":
            return headers
        headers["Mcp-Method"] = method
        params = message.get("params")
        key = NAMED_PARAM.get(method)
        if key is not None and isinstance(params, Mapping):
            name = params.get(key)
            if isinstance(name, str):
                headers["Mcp-Name"] = encode_header_value(name)
        if params_as_headers and isinstance(params, Mapping):
            arguments = params.get("arguments")
            if isinstance(arguments, Mapping):
                for argument, header in params_as_headers.items():
                    value = arguments.get(argument)
                    if value is None:
                        continue
                    headers["Mcp-Param-" + header] = encode_header_value(header_text(value))
        return headers

    # ------------------------------------------------------------------ receiving

    def receive(self, message: Any) -> list[Event]:
        """What one parsed message from the server means, as a list of events.

        Never raises for anything a server can send: what breaks the protocol comes back
        as a :class:`Stray` (or, for a malformed answer to a request of ours, a
        :class:`Failure` for that request).
        """
        if not isinstance(message, dict):
            if isinstance(message, list):
                return [Stray("a JSON-RPC batch (array); MCP sends one message at a time")]
            return [Stray(f"a message must be a JSON object, got {describe(message)}")]
        if "method" in message:
            method = message["method"]
            if not isinstance(method, str):
                return [Stray(f'"method" must be a string, got {describe(method)}')]
            params = message.get("params")
            if params is None or not isinstance(params, dict):
                params = {}
            if "id" in message:
                request_id = message["id"]
                if not is_request_id(request_id):
                    return [
                        Stray(
                            f"a request id must be a string or integer, got {describe(request_id)}"
                        )
                    ]
                return [ServerRequest(request_id, method, params)]
            return [Notification(method, params)]
        if "result" not in message and "error" not in message:
            return [Stray("a message with neither method, result nor error")]
        raw_id: Any = message.get("id")
        found = self._pending.answered(raw_id)
        if found is None:  # (a replay, an id never issued; true or 1.0 is no id of ours)
            return [Stray(f"a response to no request of ours (id {describe(raw_id)})")]
        asked, waiter = found
        answered: int = raw_id
        if "error" in message:
            error = message["error"]
            if not isinstance(error, dict):
                return self._answered(
                    Failure(
                        answered, asked, None, f"a malformed error: {describe(error)}", None, waiter
                    )
                )
            code = error.get("code")
            text = error.get("message")
            failure = Failure(
                answered,
                asked,
                code if isinstance(code, int) and not isinstance(code, bool) else None,
                text if isinstance(text, str) else f"error {describe(code)}",
                error.get("data"),
                waiter,
            )
            return self._answered(failure)
        result = message["result"]
        if not isinstance(result, dict):
            return self._answered(
                Failure(
                    answered,
                    asked,
                    None,
                    f"the result of {asked} must be an object, got {describe(result)}",
                    None,
                    waiter,
                )
            )
        if asked == "server/discover" or asked == "initialize":
            return self._answered(Response(answered, asked, result, waiter))
        return [Response(answered, asked, result, waiter)]

    def _answered(self, event: Response | Failure) -> list[Event]:
        if event.method == "server/discover":
            return self._on_discover(event)
        if event.method == "initialize":
            return self._on_initialize(event)
        return [event]

    def _on_discover(self, event: Response | Failure) -> list[Event]:
        if isinstance(event, Failure):
            data = event.data
            if event.code == _UNSUPPORTED_PROTOCOL_VERSION and isinstance(data, dict):
                # A modern server that does not speak this revision: try one it lists.
                supported = data.get("supported")
                if isinstance(supported, list):
                    ours = [v for v in supported if v in MODERN_PROTOCOL_VERSIONS]
                    if ours and (self._pinned is None or self._pinned in ours):
                        retry = self._pinned or ours[0]
                        if not self._retried:
                            self._retried = True
                            self._trying = retry
                            return [self._discover()]
            if self._pinned in MODERN_PROTOCOL_VERSIONS:
                return [event]
            # Any other error says "not a modern server": the legacy handshake.
            return [self._initialize(LEGACY_PROTOCOL_VERSIONS[-1])]
        result = event.result
        supported = result.get("supportedVersions")
        ours = (
            [v for v in supported if v in MODERN_PROTOCOL_VERSIONS]
            if isinstance(supported, list)
            else []
        )
        if not ours:
            if self._pinned in MODERN_PROTOCOL_VERSIONS:
                return [
                    Failure(
                        event.id,
                        event.method,
                        None,
                        f"the server supports {describe(supported)}, not {self._pinned}",
                        None,
                        event.waiter,
                    )
                ]
            return [self._initialize(LEGACY_PROTOCOL_VERSIONS[-1])]
        version: str = self._trying if self._trying in ours and self._trying else ours[-1]
        self.era = "modern"
        self.protocol_version = version
        caps = result.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        meta = result.get("_meta")
        if not isinstance(info, dict) and isinstance(meta, dict):
            info = meta.get(META_SERVER_INFO)
        self.server_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        return [Opened("modern", version)]

    def _on_initialize(self, event: Response | Failure) -> list[Event]:
        if isinstance(event, Failure):
            return [event]
        result = event.result
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in LEGACY_PROTOCOL_VERSIONS:
            return [
                Failure(
                    event.id,
                    event.method,
                    None,
                    f"the server answered initialize with protocol version {describe(version)}, "
                    f"which this client does not speak ({', '.join(LEGACY_PROTOCOL_VERSIONS)})",
                    None,
                    event.waiter,
                )
            ]
        self.era = "legacy"
        self.protocol_version = version
        caps = result.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        events: list[Event] = [self.notification("notifications/initialized")]
        if self._log_level is not None and "logging" in self.server_capabilities:
            events.append(self.request("logging/setLevel", {"level": self._log_level}))
        events.append(Opened("legacy", version))
        return events
