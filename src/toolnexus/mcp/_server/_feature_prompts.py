"""The prompts feature of a server session: ``prompts/list`` and ``prompts/get`` (run
on the host as a call, as a tool is)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._frozen import thaw
from .._shared._catalog import view
from .._shared._codec import INVALID_PARAMS
from .._shared._content import downgrade
from .._shared._protocol import describe
from ._context import BOTH, Feature, Method, ServerContext
from ._types import Action, CallState, ClientView, Reject, object_param, who

if TYPE_CHECKING:
    from ..._result import ToolResult

__all__ = ["FEATURE"]


def _declare(context: ServerContext, modern: bool) -> dict[str, Any] | None:
    return {"prompts": {"listChanged": True}} if context.toolkit.prompts() else None


def _list(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    def entries(page: list[Any]) -> list[Any]:
        return [_describe(item, client) for item in page]

    body = context.page("prompts", view(context.toolkit).prompts(), entries, params, client)
    return [context.reply(request_id, client, body)]


def _describe(item: Any, client: ClientView) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": item.name}
    if item.title and client.at_least("2025-06-18"):
        entry["title"] = item.title
    if item.description:
        entry["description"] = item.description
    arguments = []
    for argument in item.arguments:
        shown = dict(argument)
        if "title" in shown and not client.at_least("2025-06-18"):
            del shown["title"]
        arguments.append(shown)
    entry["arguments"] = arguments
    return entry


def _get(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    """A ``prompts/get``: checked (``-32602`` before anything runs), then run as a call of
    the prompt's inner tool."""
    name = params.get("name")
    if not isinstance(name, str):
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: name must be a string naming a prompt, got {describe(name)}",
        )
    try:
        item = view(context.toolkit).get_prompt(name)
    except LookupError as exc:
        raise Reject(INVALID_PARAMS, f"invalid params: {exc.args[0]}") from None
    arguments = object_param(params, "arguments", "an object of strings")
    problem = item.problem(arguments)
    if problem is not None:
        raise Reject(INVALID_PARAMS, f"invalid params: {problem}")
    checked = {"name": name, "arguments": arguments}
    return context.start(request_id, "prompts/get", "prompts/get", checked, params, meta, client)


def _get_finish(context: ServerContext, call: CallState, outcome: ToolResult) -> list[Action]:
    """The answer to a finished ``prompts/get``: the rendered prompt, or the error."""
    if outcome.is_error:
        return context.fail(call, f"{who(call)} failed: {outcome.output}")
    from ._prompts import PROMPT_KEY

    client = call.client
    rendered = thaw(outcome.metadata.get(PROMPT_KEY) or {})
    audio, links = client.at_least("2025-03-26"), client.at_least("2025-06-18")
    for message in rendered.get("messages", ()):
        message["content"] = downgrade(message["content"], audio=audio, resource_links=links)
    return context.finish(call, rendered)


FEATURE = Feature(
    "prompts",
    _declare,
    {"prompts/list": Method(_list), "prompts/get": Method(_get, BOTH, _get_finish)},
)
"""Prompts: declared when the toolkit has any."""
