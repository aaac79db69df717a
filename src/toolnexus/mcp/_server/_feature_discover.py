"""What a server says of itself, and the lifecycle of a server session: ``initialize``
(legacy: the era, the client's capabilities, the server's) and a modern request's
``_meta`` (its client), ``ping``, ``server/discover``, and ``subscriptions/listen`` with the
change notifications its streams (and a legacy client) hear."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._shared._codec import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .._shared._protocol import (
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    MODERN_PROTOCOL_VERSIONS,
    TASKS_EXTENSION,
    at_least,
    describe,
    elicitation_modes,
)
from ._context import LEGACY, MODERN, Feature, Method, ServerContext
from ._types import Action, ClientView, Reject, Send, object_param, plain_result

if TYPE_CHECKING:
    from ...stores import TaskRecord

__all__ = [
    "FEATURE",
    "end_listens",
    "initialize",
    "list_changed",
    "modern_client",
    "supported_versions",
    "task_changed",
]


def supported_versions() -> list[str]:
    """What a modern request may name, newest first: ``server/discover`` and ``-32022``
    say the same, so a client never picks an advertised version only to be refused."""
    return list(reversed(MODERN_PROTOCOL_VERSIONS))


def initialize(context: ServerContext, request_id: str | int, params: Mapping[str, Any]) -> Send:
    """A legacy ``initialize``: the revision both speak, what the client takes, and what
    the server offers. A modern request (its ``_meta`` names a revision) is refused:
    ``initialize`` is not part of that revision."""
    meta = params.get("_meta")
    if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
        raise Reject(
            METHOD_NOT_FOUND,
            "method not found: 'initialize' is not part of protocol revision "
            f"{meta[META_PROTOCOL_VERSION]}; a 2026-07-28 client sends _meta on every "
            "request instead",
        )
    if context.legacy is not None:
        raise Reject(
            INVALID_REQUEST,
            f"invalid request: initialize was already received (protocol revision "
            f"{context.legacy.version}); start a new server process for a new session",
        )
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: protocolVersion must be a string, got {describe(requested)}",
        )
    capabilities = object_param(params, "capabilities")
    client_info = params.get("clientInfo")
    if client_info is not None and not isinstance(client_info, dict):
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: clientInfo must be an object, got {describe(client_info)}",
        )
    # Echo a version we speak; otherwise offer our newest legacy one.
    version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[-1]
    form, url = elicitation_modes(capabilities.get("elicitation"))
    if not at_least(version, "2025-06-18"):
        form = url = False  # elicitation did not exist yet
    elif version == "2025-06-18":
        url = False
    context.legacy = ClientView(
        version,
        False,
        form,
        url,
        sampling=isinstance(capabilities.get("sampling"), dict),
        roots=isinstance(capabilities.get("roots"), dict),
    )
    body: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": context.capabilities(False),
        "serverInfo": dict(context.server_info),
    }
    if context.instructions is not None:
        body["instructions"] = context.instructions
    return plain_result(request_id, body)


_ASKING = frozenset({"elicitation", "sampling", "roots", "extensions"})
"""Client capabilities that let a server ask it something."""
_TASKS_ONLY: dict[str, Any] = {TASKS_EXTENSION: {}}
"""The extensions of a client that declares the tasks extension, and no other."""
# The client of a plain modern request (no elicitation), built once: a ClientView is never
# changed after construction, so every such request can share it ...
_PLAIN_MODERN = ClientView(MODERN_PROTOCOL_VERSIONS[-1], True, False, False)
# ... and one that takes tasks, and nothing else it could be asked.
_TASKS_MODERN = ClientView(MODERN_PROTOCOL_VERSIONS[-1], True, False, False, tasks=True)


def modern_client(meta: Mapping[str, Any]) -> ClientView:
    """The client a modern request's ``_meta`` says sent it (its revision and what it
    takes); refused ``-32602``, or ``-32022`` for a revision this server does not speak."""
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise Reject(
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
        raise Reject(
            INVALID_PARAMS, f"invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] {problem}"
        )
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise Reject(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {version!r}; this server speaks "
            f"{', '.join(supported_versions())} per request, and "
            f"{', '.join(LEGACY_PROTOCOL_VERSIONS)} through initialize",
            {"supported": supported_versions(), "requested": version},
        )
    if version == MODERN_PROTOCOL_VERSIONS[-1]:
        asking = capabilities.keys() & _ASKING
        if not asking:
            return _PLAIN_MODERN  # the common request: no per-message client to build
        if asking == {"extensions"} and capabilities["extensions"] == _TASKS_ONLY:
            return _TASKS_MODERN  # the common request of a client that takes tasks
    form, url = elicitation_modes(capabilities.get("elicitation"))
    extensions = capabilities.get("extensions")
    return ClientView(
        version,
        True,
        form,
        url,
        sampling=isinstance(capabilities.get("sampling"), dict),
        roots=isinstance(capabilities.get("roots"), dict),
        tasks=isinstance(extensions, dict) and TASKS_EXTENSION in extensions,
    )


# ---------------------------------------------------------------------- notifications

_CHANGED = {
    "tools": "toolsListChanged",
    "resources": "resourcesListChanged",
    "prompts": "promptsListChanged",
}
"""The lists whose changes are told, and the subscriptions/listen filter key of each."""


def list_changed(context: ServerContext, kind: str, uri: str | None) -> list[Action]:
    """The notifications of a change of the toolkit: ``kind`` is a list that changed, or
    ``"resource"`` (the content at ``uri``); see ``ServerSession.toolkit_changed``."""
    if kind == "skills":
        # The skills extension defines no notification of its own: a skill's SKILL.md
        # is a listed resource, so the resource list changed (clients list skills again).
        kind = "resources"
    if kind == "resource":
        method, params, wanted = "notifications/resources/updated", {"uri": uri}, None
    elif kind in _CHANGED:
        method, params, wanted = f"notifications/{kind}/list_changed", {}, _CHANGED[kind]
    else:
        return []
    actions: list[Action] = []
    legacy = context.legacy is not None and context.initialized
    if legacy and (kind != "resource" or uri in context.subscribed):
        actions.append(Send({"jsonrpc": "2.0", "method": method, "params": dict(params)}))
    for request_id, asked in context.listens.items():
        if wanted is None:
            if uri not in (asked.get("resourceSubscriptions") or ()):
                continue
        elif not asked.get(wanted):
            continue
        tagged = {**params, "_meta": {META_SUBSCRIPTION_ID: request_id}}
        actions.append(Send({"jsonrpc": "2.0", "method": method, "params": tagged}))
    return actions


def task_changed(context: ServerContext, record: TaskRecord) -> list[Action]:
    """A ``notifications/tasks`` (the task as ``tasks/get`` shows it) for each open listen
    stream that asked for tasks and whose client owns the task."""
    tasks = context.tasks
    if tasks is None:
        return []
    actions: list[Action] = []
    for request_id, asked in context.listens.items():
        if asked.get("tasks") and asked.get("owner") == record.owner:
            params = {**tasks.detailed(record), "_meta": {META_SUBSCRIPTION_ID: request_id}}
            actions.append(
                Send({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params})
            )
    return actions


def end_listens(context: ServerContext) -> list[Action]:
    """End every open ``subscriptions/listen`` stream with its response (the stream closes
    gracefully)."""
    actions: list[Action] = [
        plain_result(request_id, {"_meta": {META_SUBSCRIPTION_ID: request_id}})
        for request_id in context.listens
    ]
    context.listens.clear()
    return actions


def _declare(context: ServerContext, modern: bool) -> dict[str, Any]:
    return {}  # always offered; it adds no capability of its own


def _ping(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    return [plain_result(request_id, {})]


def _discover(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    body: dict[str, Any] = {
        "supportedVersions": supported_versions(),
        "capabilities": context.capabilities(True),
    }
    if context.instructions is not None:
        body["instructions"] = context.instructions
    body["ttlMs"] = context.list_ttl_ms
    body["cacheScope"] = "public"
    return [context.reply(request_id, client, body)]


_HEARD = (
    ("toolsListChanged", "tools"),
    ("promptsListChanged", "prompts"),
    ("resourcesListChanged", "resources"),
)
"""The list changes a listen may ask to hear of, and the capability each needs."""


def _listen(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    """Open a ``subscriptions/listen`` stream: acknowledge what of the filter this server
    honours (its first message); the request stays open, carrying the change
    notifications it asked for, until the client cancels it or the server ends."""
    asked = params.get("notifications")
    if not isinstance(asked, dict):
        raise Reject(
            INVALID_PARAMS,
            "invalid params: notifications must be an object naming what to hear, e.g. "
            f"{{'toolsListChanged': true}}, got {describe(asked)}",
        )
    offered = context.capabilities(True)
    honoured: dict[str, Any] = {}
    for key, capability in _HEARD:
        if asked.get(key) is True and capability in offered:
            honoured[key] = True
    uris = asked.get("resourceSubscriptions")
    if asked.get("tasks") is True and context.tasks is not None:
        honoured["tasks"] = True  # notifications/tasks (the tasks extension)
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise Reject(
                INVALID_PARAMS,
                "invalid params: notifications.resourceSubscriptions must be a list of "
                f"URIs, got {describe(uris)}",
            )
        if "resources" in offered:
            honoured["resourceSubscriptions"] = list(uris)
            from .._shared._catalog import view
            from ._feature_resources import subscribed

            for uri in uris:
                found = view(context.toolkit).find_resource(uri)
                if found is not None:
                    subscribed(found[0], uri)
    context.listens.begin(request_id, {**honoured, "owner": context.owner})
    params_out = {"notifications": honoured, "_meta": {META_SUBSCRIPTION_ID: request_id}}
    return [
        Send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": params_out,
            }
        )
    ]


FEATURE = Feature(
    "discovery",
    _declare,
    {
        "ping": Method(_ping, LEGACY),
        "server/discover": Method(_discover, MODERN),
        "subscriptions/listen": Method(_listen, MODERN),
    },
)
"""The lifecycle methods besides ``initialize`` (which the session handles itself)."""
