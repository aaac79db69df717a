"""The completion feature of a server session: ``completion/complete`` for a prompt's
or a resource template's argument (run on the host as a call of its completer)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._frozen import thaw
from .._shared._catalog import view
from .._shared._codec import INVALID_PARAMS
from .._shared._protocol import describe
from ._context import BOTH, Feature, Method, ServerContext
from ._types import Action, CallState, ClientView, Reject, who

if TYPE_CHECKING:
    from ..._result import ToolResult

__all__ = ["FEATURE"]


def _declare(context: ServerContext, modern: bool) -> dict[str, Any] | None:
    toolkit = context.toolkit
    if toolkit.prompts() or any(item.is_template for item in toolkit.resources()):
        return {"completions": {}}
    return None


def _complete(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    """A ``completion/complete``: checked (``-32602`` before anything runs), then run."""
    from ._served import completion_target

    ref = params.get("ref")
    target = completion_target(view(context.toolkit), ref)
    if isinstance(target, str) or not isinstance(ref, dict):
        raise Reject(INVALID_PARAMS, f"invalid params: {target}")
    argument = params.get("argument")
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: argument must be {{'name': ..., 'value': ...}}, got "
            f"{describe(argument)}",
        )
    known = target._schema.get("properties") or {}
    if argument["name"] not in known:
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: {argument['name']!r} is not an argument of "
            f"{'prompt' if ref.get('type') == 'ref/prompt' else 'resource'} "
            f"{getattr(target, 'name', '')!r} (it has: {', '.join(known) or 'none'})",
        )
    if not isinstance(argument.get("value", ""), str):
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: argument.value must be a string, got "
            f"{describe(argument.get('value'))}",
        )
    checked: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
    context_given = params.get("context")
    if isinstance(context_given, dict):
        checked["context"] = context_given
    method = "completion/complete"
    return context.start(request_id, method, method, checked, params, meta, client)


def _finish(context: ServerContext, call: CallState, outcome: ToolResult) -> list[Action]:
    """The answer to a finished ``completion/complete``: the values, or the error."""
    if outcome.is_error:
        return context.fail(call, f"{who(call)} failed: {outcome.output}")
    from ._served import COMPLETION_KEY

    values = thaw(outcome.metadata.get(COMPLETION_KEY) or {"values": []})
    return context.finish(call, {"completion": values})


FEATURE = Feature(
    "completions",
    _declare,
    {"completion/complete": Method(_complete, BOTH, _finish)},
)
"""Completion: declared when the toolkit has prompts or resource templates."""
