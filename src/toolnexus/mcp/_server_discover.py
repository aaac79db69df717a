"""What a server says of itself, and the lifecycle methods of a server session:
``initialize`` (legacy: the era, the client's capabilities, the server's), ``ping``,
``server/discover`` and ``subscriptions/listen`` (modern)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._codec import INVALID_PARAMS, INVALID_REQUEST
from ._protocol import (
    LEGACY_PROTOCOL_VERSIONS,
    META_SUBSCRIPTION_ID,
    MODERN_PROTOCOL_VERSIONS,
    at_least,
    describe,
    elicitation_modes,
)
from ._server_context import LEGACY, MODERN, Feature, Method, ServerContext
from ._server_types import Action, ClientView, Reject, Send, plain_result

__all__ = ["FEATURE", "initialize", "supported_versions"]


def supported_versions() -> list[str]:
    """What a modern request may name, newest first: ``server/discover`` and ``-32022``
    say the same, so a client never picks an advertised version only to be refused."""
    return list(reversed(MODERN_PROTOCOL_VERSIONS))


def initialize(context: ServerContext, request_id: str | int, params: Mapping[str, Any]) -> Send:
    """A legacy ``initialize``: the revision both speak, what the client takes, and what
    the server offers."""
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
    capabilities = params.get("capabilities")
    if capabilities is None:
        capabilities = {}
    elif not isinstance(capabilities, dict):
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: capabilities must be an object, got {describe(capabilities)}",
        )
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
    context.listens[request_id] = {**honoured, "owner": context.owner}
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
