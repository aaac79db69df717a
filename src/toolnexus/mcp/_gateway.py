"""The gateway's federation: every upstream server's resources, resource templates,
prompts and completion, offered through one toolkit as its tools already are.

:func:`federate` takes a connected :class:`~toolnexus.mcp.McpSource` and registers, in its
toolkit, a :class:`~toolnexus.mcp.Resource` for each resource and template of each server
and a :class:`~toolnexus.mcp.Prompt` for each prompt, whose functions ask that server.
Names and URIs are prefixed as tools are (:meth:`McpSource.uri_prefix
<toolnexus.mcp.McpSource.uri_prefix>`: ``every+demo://resource/1``), so a read of a
federated URI reaches its server, and resource links in the servers' tool results are
rewritten to match. Subscriptions reach the server on a client's first
``resources/subscribe``; its ``notifications/resources/updated`` and every
``list_changed`` are passed on (the toolkit's watchers tell the clients).

This module sits above both sides of the MCP layer (it makes server objects of client
answers); nothing in ``_client/`` or ``_server/`` imports it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._log import LazyLogger
from .._result import ToolResult
from .._uri_template import UriTemplate, is_template
from ..errors import McpError, OAuthError
from ._client._source import has_scheme
from ._shared._catalog import gate

if TYPE_CHECKING:
    from ._client._mcp_client import McpClient
    from ._client._source import McpSource

__all__ = ["Federation", "federate"]

_log = LazyLogger("mcp.client")  # the package's: it never prints on its own

# The codes a server answers a read of a URI it does not serve with (SEP-2164's -32602,
# and the -32002 older servers send).
_NOT_FOUND_CODES = ("(-32602)", "(-32002)")
# The list methods of each kind of item (its capability's name).
_LISTS = {
    "resources": ("resources/list", "resources/templates/list"),
    "prompts": ("prompts/list",),
}
_RELIST_S = 1.0  # a list a read found stale is read again at most this often
_HINTS_KEPT = 256  # the cache hints kept per server (of its latest reads)


@dataclass
class _Upstream:
    """What one server contributes: its registered items, by kind, and its subscriptions."""

    name: str
    client: McpClient
    items: dict[str, list[Any]] = field(default_factory=lambda: {"resources": [], "prompts": []})
    subscribed: set[str] = field(default_factory=set)
    specs: dict[str, list[list[dict[str, Any]]]] = field(default_factory=dict)  # as listed
    timed: set[str] = field(default_factory=set)  # the kinds a ttlMs timer will look at again
    relisted: dict[str, float] = field(default_factory=dict)  # when a read found a list stale
    # each read's cache hints from the server (ttlMs, cacheScope), by its URI there
    hints: dict[str, dict[str, Any]] = field(default_factory=dict)


class Federation:
    """The resources and prompts of a source's servers in its toolkit (see :func:`federate`).

    ``problems`` holds, by server, each item that could not be offered and why (also
    logged as a warning): a URI or prompt name another server already offers, a
    template that cannot be prefixed reversibly, a list the server failed to give.

    Example::

        federation = federate(McpSource("mcp.json").connect())
        print(federation.problems)
    """

    def __init__(self, source: McpSource) -> None:
        self.source = source
        self.problems: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._owners: dict[tuple[str, str], str] = {}  # (kind, key) -> server

    def start(self) -> Federation:
        """Offer every connected server's resources and prompts; returns ``self``. An
        entry that is no MCP server (``"type": "openapi"``) offers tools only."""
        source = self.source
        for name, client in source.clients().items():
            upstream = _Upstream(name, client)
            self._load(upstream, "resources")
            self._load(upstream, "prompts")
            upstream.client.on_notification(functools.partial(self._noticed, upstream))
        source.rewrite_links()
        return self

    # ------------------------------------------------------------------ loading

    def _problem(self, upstream: _Upstream, text: str) -> None:
        _log.warning("MCP server %s: %s", upstream.name, text)
        self.problems.setdefault(upstream.name, []).append(text)

    def _load(self, upstream: _Upstream, kind: str, unless_same: bool = False) -> None:
        """(Re)load one kind of ``upstream``'s items into the toolkit; ``unless_same``:
        leave the toolkit alone when the server lists what it listed before (a list whose
        ``ttlMs`` ran out is looked at again, and most often has not changed)."""
        client = upstream.client
        if client.is_closed:
            return
        capabilities = client.server_capabilities
        methods = _LISTS[kind] if kind in capabilities else ()
        listers = {
            "resources/list": client.list_resources,
            "resources/templates/list": client.list_resource_templates,
            "prompts/list": client.list_prompts,
        }
        try:
            specs = [listers[method]() for method in methods]
        except McpError as exc:
            self._problem(upstream, f"listing its {kind} failed: {exc.problem}")
            return
        self._expire_later(upstream, kind, methods)
        if unless_same and specs == upstream.specs.get(kind):
            return
        upstream.specs[kind] = specs
        made: list[Any] = []
        if kind == "resources" and specs:
            made = [
                *self._resources(upstream, specs[0], template=False),
                *self._resources(upstream, specs[1], template=True),
            ]
        elif kind == "prompts" and specs:
            made = self._prompts(upstream, specs[0])
        toolkit = self.source.toolkit
        with self._lock, toolkit._told_once():
            for item in upstream.items[kind]:
                key = _key(item)
                self._owners.pop(key, None)
                toolkit.remove(item)
            kept: list[Any] = []
            for item in made:
                key = _key(item)
                owner = self._owners.get(key)
                if owner is not None:
                    self._problem(
                        upstream,
                        f"{key[0]} {key[1]!r} skipped: server {owner} already offers it (give "
                        "one of them a prefix in mcp.json)",
                    )
                    continue
                try:
                    toolkit.register(item)
                except ValueError as exc:
                    self._problem(upstream, f"{key[0]} {key[1]!r} skipped: {exc}")
                    continue
                self._owners[key] = upstream.name
                kept.append(item)
            upstream.items[kind] = kept

    def _expire_later(self, upstream: _Upstream, kind: str, methods: tuple[str, ...]) -> None:
        """When the server gave its lists a ``ttlMs``, look at them again once it runs
        out (at most once a second): a change it never announced is seen then."""
        times = [upstream.client.cached_until(method) for method in methods]
        finite = [until for until in times if until is not None and until != math.inf]
        with self._lock:
            if not finite or kind in upstream.timed:
                return  # (one timer per list: a list_changed reloads it meanwhile)
            upstream.timed.add(kind)
        from .._timers import schedule
        from ._client._source import relist_at

        def again() -> None:
            with self._lock:
                upstream.timed.discard(kind)
            self._load(upstream, kind, True)

        schedule(relist_at(min(finite)), again)

    def _still_listed(self, upstream: _Upstream, kind: str, listed: Callable[[], bool]) -> bool:
        """Whether ``listed()`` holds once ``upstream``'s ``kind`` list is read again: the
        server refused what it listed (a read, a prompt), so the list may have changed
        without a notification. Read again at most once a second (never in a loop); the
        toolkit, and so the gateway's clients, then hold the new list."""
        now = time.monotonic()
        with self._lock:
            fresh = now < upstream.relisted.get(kind, -math.inf) + _RELIST_S
            if not fresh:
                upstream.relisted[kind] = now
        if not fresh:
            upstream.client._forget_lists(*_LISTS[kind])
            self._load(upstream, kind, unless_same=True)
        return listed()

    def _resources(
        self, upstream: _Upstream, entries: list[dict[str, Any]], *, template: bool
    ) -> list[Any]:
        from ._server._resources import Resource

        made = []
        label = "resource template" if template else "resource"
        skill_files = _skill_files(self.source.toolkit)
        for entry in entries:
            remote = entry.get("uriTemplate" if template else "uri")
            if not isinstance(remote, str) or not remote:
                self._problem(upstream, f"a {label} without a URI skipped")
                continue
            uri = self.source.federated_uri(upstream.name, remote)
            if uri is not None and not template and skill_files(uri):
                continue  # a skill's file: the toolkit's skill serves it (verified)
            if uri is None or not has_scheme(remote):
                self._problem(
                    upstream,
                    f"{label} {remote!r} skipped: it does not begin with a literal scheme "
                    "(such as 'file:'), so a gateway cannot offer it: its URIs could not "
                    "carry the server's prefix and be read back, and without a prefix "
                    '("prefix": "") it is no resource URI a client may read (an MCP '
                    "resource's URI begins with its scheme); the server's other resources "
                    "are offered — read this one from the server itself "
                    "(McpClient.read_resource), or have the server list it under a scheme",
                )
                continue
            # A listed template without a variable reads as the fixed URI it is.
            variables = template and is_template(remote)
            reader = self._reader(upstream, remote, variables, uri)
            gate(reader, self.source.scopes_of(upstream.name))
            completers = self._completers(
                upstream, {"type": "ref/resource", "uri": remote}, _variables(remote)
            )
            try:
                made.append(
                    self._apart(
                        upstream,
                        Resource(
                            uri,
                            reader,
                            _text(entry.get("name")) or remote,
                            _text(entry.get("title")),
                            _text(entry.get("description")) or "",
                            _mime(entry.get("mimeType")),
                            entry.get("annotations")
                            if isinstance(entry.get("annotations"), dict)
                            else None,
                            completers if variables else None,
                            _on_subscribe=functools.partial(self._subscribe, upstream),
                        ),
                        "resources/read",
                    )
                )
            except (ValueError, TypeError) as exc:
                self._problem(upstream, f"{label} {remote!r} skipped: {exc}")
        return made

    def _apart(self, upstream: _Upstream, item: Any, method: str) -> Any:
        """``item`` (a federated resource or prompt), its reads or renders — and its
        completions — made through ``upstream``'s bounded queue of calls on its client's
        own threads when nobody waits for them on a thread (a gateway's clients): as
        its tools' calls are, so a slow server holds only its own places and none of
        the gateway's workers, and a call beyond them is refused at once as busy."""
        client = upstream.client
        for tool, label in ((item._tool, method), (item._completion, "completion/complete")):
            fn = tool.fn

            def start_io(
                args: Mapping[str, Any],
                ctx: Any,
                done: Callable[[ToolResult], object],
                fn: Callable[..., ToolResult] = fn,
                label: str = label,
            ) -> object:
                if ctx is None:
                    return None
                return client._run_apart(label, functools.partial(fn, args, ctx), done)

            # (what a host asks a tool's function that starts its own I/O: see Tool._start_io)
            fn.start_io = start_io
            fn.io_ready = client._apart_ready
        return item

    def _reader(
        self, upstream: _Upstream, remote: str, template: bool, uri: str
    ) -> Callable[..., Any]:
        """The function of a federated resource: read the server's URI (the template
        expanded with the variables the federated URI gave). Its ``cache_hints(uri)``
        gives the server's cache hints (``ttlMs``, ``cacheScope``) of its latest read of
        the federated ``uri``: the gateway's answer passes them on."""
        expand = UriTemplate(remote).expand if template else None
        name = upstream.name

        def read(params: Mapping[str, Any], ctx: Any = None) -> Any:
            target = expand(dict(params)) if expand is not None else remote
            try:
                token = ctx.cancellation_token if ctx is not None else None
                with self._as_caller(upstream):
                    contents, hints = upstream.client._read(target, token)
            except OAuthError as exc:
                return ToolResult.error(f"MCP server {name}: {exc}")
            except McpError as exc:
                late = _late(ctx, "resources/read", name)
                if late is not None:
                    return late
                if exc.problem.endswith(_NOT_FOUND_CODES):
                    from ._server._served import not_found

                    if not template and not self._still_listed(
                        upstream, "resources", lambda: self._owners.get(("resource", uri)) == name
                    ):
                        return not_found(
                            f"MCP server {name} no longer offers {remote!r} (its resource list "
                            "changed without notice); the gateway read its resources again: "
                            "list them again"
                        )
                    return not_found(f"MCP server {name}: {exc.problem}")
                return ToolResult.error(f"MCP server {name}: {exc.problem}")
            with self._lock:
                kept = upstream.hints
                kept.pop(target, None)
                kept[target] = hints
                while len(kept) > _HINTS_KEPT:
                    del kept[next(iter(kept))]
            return [self._content(upstream, each) for each in contents]

        def cache_hints(asked: str) -> dict[str, Any]:
            found = self.source.upstream_uri(asked)
            target = found[1] if found is not None and found[0] == name else asked
            with self._lock:
                return dict(upstream.hints.get(target) or {})

        read.cache_hints = cache_hints  # type: ignore[attr-defined]
        return read

    def _content(self, upstream: _Upstream, content: Mapping[str, Any]) -> Any:
        """One read content as a part named with its federated URI."""
        from .._parts import Part

        uri = content.get("uri")
        named = self.source.federated_uri(upstream.name, uri) if isinstance(uri, str) else None
        mime = _mime(content.get("mimeType"))
        text = content.get("text")
        if isinstance(text, str):
            return Part("text", text=text, name=named)
        blob = content.get("blob")
        mime = mime or "application/octet-stream"
        kind = mime.split("/", 1)[0]
        return Part(
            kind if kind in ("image", "audio") else "file", mime_type=mime, data=blob, name=named
        )

    def _prompts(self, upstream: _Upstream, entries: list[dict[str, Any]]) -> list[Any]:
        from .._schema import sanitize_name
        from ._server._prompts import Prompt

        prefix = self.source.tool_prefix(upstream.name)
        made = []
        for entry in entries:
            remote = entry.get("name")
            if not isinstance(remote, str) or not remote:
                self._problem(upstream, "a prompt without a name skipped")
                continue
            properties: dict[str, Any] = {}
            required: list[str] = []
            for argument in entry.get("arguments") or ():
                if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
                    continue
                prop: dict[str, Any] = {"type": "string"}
                for key in ("title", "description"):
                    if isinstance(argument.get(key), str):
                        prop[key] = argument[key]
                properties[argument["name"]] = prop
                if argument.get("required") is True:
                    required.append(argument["name"])
            schema = {"type": "object", "properties": properties, "required": required}
            completers = self._completers(
                upstream, {"type": "ref/prompt", "name": remote}, tuple(properties)
            )
            renderer = self._renderer(upstream, remote)
            gate(renderer, self.source.scopes_of(upstream.name))
            try:
                made.append(
                    self._apart(
                        upstream,
                        Prompt(
                            renderer,
                            sanitize_name(prefix + remote),
                            _text(entry.get("title")),
                            _text(entry.get("description")) or "",
                            completers,
                            _given_schema=schema,
                        ),
                        "prompts/get",
                    )
                )
            except (ValueError, TypeError) as exc:
                self._problem(upstream, f"prompt {remote!r} skipped: {exc}")
        return made

    def _as_caller(self, upstream: _Upstream) -> contextlib.AbstractContextManager[None]:
        """Within: requests to ``upstream`` go as the caller (its ``auth.exchange``)."""
        from ._client._oauth_exchange import as_caller

        return as_caller(self.source.exchange_of(upstream.name))

    def _renderer(self, upstream: _Upstream, remote: str) -> Callable[..., Any]:
        def render(args: Mapping[str, Any], ctx: Any = None) -> Any:
            given = {
                key: value if isinstance(value, str) else str(value) for key, value in args.items()
            }
            try:
                token = ctx.cancellation_token if ctx is not None else None
                with self._as_caller(upstream):
                    rendered = upstream.client.get_prompt(remote, given, token=token)
            except OAuthError as exc:
                return ToolResult.error(f"MCP server {upstream.name}: {exc}")
            except McpError as exc:
                late = _late(ctx, "prompts/get", upstream.name)
                if late is not None:
                    return late
                if exc.problem.endswith(_NOT_FOUND_CODES) and not self._still_listed(
                    upstream, "prompts", lambda: any(remote == each.get("name") for each in
                                                     _listed(upstream, "prompts"))
                ):  # fmt: skip
                    return ToolResult.error(
                        f"MCP server {upstream.name} no longer offers the prompt {remote!r} "
                        "(its prompt list changed without notice); the gateway read its "
                        "prompts again: list them again"
                    )
                return ToolResult.error(f"MCP server {upstream.name}: {exc.problem}")
            return [
                {
                    "role": message.get("role"),
                    "content": self._block(upstream, message.get("content")),
                }
                for message in rendered["messages"]
                if isinstance(message, dict)
            ]

        return render

    def _block(self, upstream: _Upstream, block: Any) -> Any:
        """A content block with the URI it names (a resource link's, an embedded
        resource's) federated."""
        if not isinstance(block, dict):
            return block
        federated = self.source.federated_uri
        if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
            return {**block, "uri": federated(upstream.name, block["uri"]) or block["uri"]}
        inner = block.get("resource")
        if block.get("type") == "resource" and isinstance(inner, dict):
            uri = inner.get("uri")
            if isinstance(uri, str):
                return {**block, "resource": {**inner, "uri": federated(upstream.name, uri) or uri}}
        return block

    def _completers(
        self, upstream: _Upstream, ref: Mapping[str, Any], names: tuple[str, ...]
    ) -> dict[str, Any] | None:
        """A completer for each argument that asks the server, when it offers completion."""
        if "completions" not in upstream.client.server_capabilities or not names:
            return None

        def completer(argument: str) -> Callable[[str, dict[str, Any]], list[str]]:
            def complete(value: str, context: dict[str, Any]) -> list[str]:
                given = {key: str(text) for key, text in context.items()}
                try:
                    with self._as_caller(upstream):
                        values = upstream.client.complete(ref, argument, value, given)["values"]
                except OAuthError as exc:
                    _log.info("MCP server %s: no completion: %s", upstream.name, exc)
                    return []
                return [str(each) for each in values]

            return complete

        return {name: completer(name) for name in names}

    # ------------------------------------------------------------------ notifications

    def _subscribe(self, upstream: _Upstream, uri: str) -> None:
        """A client subscribed to the federated ``uri``: subscribe upstream, once."""
        found = self.source.upstream_uri(uri)
        remote = found[1] if found is not None else uri
        resources = upstream.client.server_capabilities.get("resources")
        if not isinstance(resources, dict) or resources.get("subscribe") is not True:
            return
        with self._lock:
            if remote in upstream.subscribed:
                return
            upstream.subscribed.add(remote)

        def run() -> None:
            try:
                upstream.client.subscribe_resource(remote)
            except McpError as exc:
                with self._lock:
                    upstream.subscribed.discard(remote)
                _log.warning(
                    "MCP server %s: subscribing to %r failed: %s",
                    upstream.name,
                    remote,
                    exc.problem,
                )

        # Off the session's thread: the server answers the subscribe at its own pace.
        threading.Thread(
            target=run, name=f"toolnexus-mcp-{upstream.name}-subscribe", daemon=True
        ).start()

    def _noticed(self, upstream: _Upstream, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            federated = (
                self.source.federated_uri(upstream.name, uri) if isinstance(uri, str) else None
            )
            if federated is not None:
                self.source.toolkit.resource_changed(federated)
        elif method == "notifications/resources/list_changed":
            self._load(upstream, "resources")
        elif method == "notifications/prompts/list_changed":
            self._load(upstream, "prompts")


def federate(source: McpSource) -> Federation:
    """Offer the resources, resource templates and prompts (with completion) of every
    connected server of ``source`` in its toolkit, prefixed as its tools are, and keep
    them current; what cannot be offered is in the result's ``problems`` (and logged).

    Example::

        source = McpSource("mcp.json").connect()
        federate(source)
        print([r.uri for r in source.toolkit.resources()])
    """
    return Federation(source).start()


# ---------------------------------------------------------------------- helpers


def _skill_files(toolkit: Any) -> Callable[[str], bool]:
    """Whether a URI is a file of a re-exported skill in ``toolkit`` (one listed, or
    any under the folder of a skill whose files are ``dynamic``)."""
    listed: set[str] = set()
    roots: list[str] = []
    for skill in toolkit.skills():
        entry = skill._entry
        if entry is None:
            continue
        listed.add(entry["uri"])
        if entry["resources"] == "dynamic":
            roots.append(entry["uri"].rsplit("/", 1)[0] + "/")
        else:
            listed.update(each["uri"] for each in entry["resources"])
    return lambda uri: uri in listed or uri.startswith(tuple(roots))


def _listed(upstream: _Upstream, kind: str) -> list[dict[str, Any]]:
    """The entries of ``upstream``'s ``kind`` as it last listed them."""
    return [entry for page in upstream.specs.get(kind) or () for entry in page]


def _late(ctx: Any, method: str, server: str) -> ToolResult | None:
    """The words for a request whose caller's deadline passed (its token cancelled it):
    a timeout, never "cancelled"; None while the deadline has not passed."""
    deadline = getattr(ctx, "deadline", None)
    if deadline is None or time.monotonic() < deadline:
        return None
    return ToolResult.error(f"MCP server {server} did not answer {method} in time")


def _key(item: Any) -> tuple[str, str]:
    kind = type(item)._kit_kind
    return (kind, item.uri if kind == "resource" else item.name)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _mime(value: Any) -> str | None:
    return value if isinstance(value, str) and "/" in value else None


def _variables(uri: str) -> tuple[str, ...]:
    return UriTemplate(uri).variables if is_template(uri) else ()
