"""The logging feature of a server session: ``logging/setLevel`` (legacy; a modern
request names its level in ``_meta``) and the ``notifications/message`` a call's log
channel sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._shared._protocol import level_rank
from ._context import LEGACY, Feature, Method, ServerContext
from ._types import Action, CallState, ClientView, Send, level_of, plain_result

__all__ = ["FEATURE", "log_message"]


def _declare(context: ServerContext, modern: bool) -> dict[str, Any]:
    return {"logging": {}}


def _set_level(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    context.legacy_log_level = level_of(params.get("level"), "level")
    return [plain_result(request_id, {})]


def log_message(call: CallState, level: str, data: Any, logger: str | None) -> list[Action]:
    """A ``notifications/message`` when ``call``'s client asked for messages at ``level``
    or above when the call started; otherwise nothing."""
    wanted = call.log_level
    rank = level_rank(level)
    if wanted is None or rank is None or rank < wanted:
        return []
    params: dict[str, Any] = {"level": level}
    if logger is not None:
        params["logger"] = logger
    params["data"] = data
    return [Send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})]


FEATURE = Feature("logging", _declare, {"logging/setLevel": Method(_set_level, LEGACY)})
"""Logging: declared to every client."""
