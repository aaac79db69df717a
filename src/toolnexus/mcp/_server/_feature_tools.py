"""The tools feature of a server session: ``tools/list`` and ``tools/call``, how a
tool's result is written for the client that called it (a ``CallToolResult``), and a
server's tasks (:func:`make_tasks`: each is a tool call, its result written so)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..._adapters import keep_listable
from ..._context import bound_principal
from ..._frozen import FrozenDict, FrozenList, freeze, thaw
from ..._result import STRUCTURED_KEY
from .._shared import _codec as codec
from .._shared._catalog import audience, view, visible
from .._shared._codec import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CLIENT_CAPABILITY
from .._shared._content import content_blocks
from .._shared._protocol import TASKS_EXTENSION, describe
from .._shared._upstream_tasks import UPSTREAM_TASK_KEY
from ._context import BOTH, Feature, Method, ServerContext
from ._feature_tasks import client_from_state, task_made
from ._types import (
    NO_MEMBERS,
    Action,
    CallState,
    ClientView,
    Reject,
    Send,
    object_param,
    plain_result,
)

if TYPE_CHECKING:
    from ..._result import ToolResult
    from ..._tools import Tool
    from ._options import TaskOptions
    from ._tasks import Tasks

__all__ = ["FEATURE", "call_tool_result", "make_tasks"]


def _declare(context: ServerContext, modern: bool) -> dict[str, Any]:
    return {"tools": {"listChanged": True}}


class _Page(NamedTuple):
    """One page of ``tools/list`` as a toolkit keeps it (``Toolkit._derived``): the
    response's result, read-only (every response shares it; its entries are the toolkit's
    kept ones, never changed by those who read them), and its encoding
    (``codec.listed_result``; None when it could not be written so)."""

    result: FrozenDict
    encoded: bytes | None


def _list(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    # What of an entry the client's revision reads: the entries are kept per shape.
    shape = (
        client.at_least("2025-06-18"),
        client.at_least("2025-03-26"),
        client.modern,
        bool(client.tasks),
    )
    offset = context.offset(params)
    if offset % context.page_size:  # not a cursor this server wrote: made, never kept
        page = _page(context, client, shape, offset)
    else:  # described once until the toolkit changes, per all that tells a page apart
        key = (
            "tools/list",
            shape,
            context.search_view is not None,
            audience(),
            context.page_size,
            offset,
            context.replies_alike(),
        )
        page = context.toolkit._derived(key, _page, context, client, shape, offset)
    send = plain_result(request_id, page.result)  # the page's result is the reply's already
    send._line = codec.reply_line(request_id, page.encoded)
    return [send]


def _page(context: ServerContext, client: ClientView, shape: Hashable, offset: int) -> _Page:
    """The page of ``tools/list`` at ``offset`` for ``client`` (of ``shape``), as the
    caller of the current request may see it."""
    toolkit = context.toolkit
    search = context.search_view
    if search is None:
        tools = view(toolkit).tools()
    else:  # the core and the meta-tools, of what this caller may see
        tools = [tool for tool in search.listed() if visible(tool, bound_principal.get())]

    def describe(tool: Tool) -> tuple[dict[str, Any], str | None] | None:
        # A tool whose entry JSON cannot carry is left out (and logged), never the list.
        # Kept with the entry: its encoding, which a page's line is written from.
        listable = keep_listable([_describe_tool(tool, client)])
        return (listable[0], codec.fragment(listable[0])) if listable else None

    fragments: list[str | None] = []

    def entries(page: list[Tool]) -> list[Any]:
        found = [toolkit._mcp_entry(tool, shape, describe) for tool in page]
        kept = [each for each in found if each is not None]
        fragments.extend(text for _, text in kept)
        return [entry for entry, _ in kept]

    body = context.page_at("tools", tools, entries, offset)
    result = context.reply(0, client, context.cache_hints(body, client)).message["result"]
    encoded = codec.listed_result(result, "tools", codec.listed_items(fragments))
    # Read-only where a response shares it; the entries are the toolkit's kept ones.
    shared = {name: freeze(value) for name, value in result.items() if name != "tools"}
    return _Page(FrozenDict({"tools": FrozenList(result["tools"]), **shared}), encoded)


def _describe_tool(tool: Tool, client: ClientView) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": tool.name}
    if tool.title and client.at_least("2025-06-18"):
        entry["title"] = tool.title
    entry["description"] = tool.description
    entry["inputSchema"] = thaw(tool.input_schema)  # a Tool's root is always an object
    output = tool.output_schema
    if output is not None and (
        client.modern or (client.at_least("2025-06-18") and output.get("type") == "object")
    ):
        entry["outputSchema"] = thaw(output)
    if tool.annotations and client.at_least("2025-03-26"):
        entry["annotations"] = thaw(tool.annotations)
    if client.tasks:  # a client of the tasks extension hears which tools run as tasks
        entry["execution"] = {"taskSupport": tool.task_support}
    return entry


def _call(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    name = params.get("name")
    if not isinstance(name, str):
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: name must be a string naming a tool, got {describe(name)}",
        )
    arguments = object_param(params, "arguments")
    try:
        tool = view(context.toolkit).get(name)
    except LookupError as exc:
        raise Reject(
            INVALID_PARAMS, f"invalid params: {exc.args[0] if exc.args else exc}"
        ) from None
    support = tool.task_support
    tasks = context.tasks if client.tasks else None
    if tasks is not None and tool.source == "mcp":
        from ._upstream_tasks import hand_over

        handing = hand_over(tool)
        if handing is not None:  # the upstream's task is the caller's: never one of ours
            return context.start(
                request_id, "tools/call", name, arguments, params, meta, client, hand_over=handing
            )
    required = support == "required"
    if required and tasks is None:
        raise Reject(
            MISSING_CLIENT_CAPABILITY,
            f"Missing required client capability: the tasks extension "
            f"({TASKS_EXTENSION}); tool {name!r} runs only as a task",
            {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )
    task_after: int | None = None
    if tasks is not None and support != "forbidden" and tasks.has_room():
        task_after = tasks.after_ms
    elif required:
        raise Reject(
            INTERNAL_ERROR,
            f"server overloaded: {tasks.running if tasks else 0} tasks run already, "
            f"the most it runs at once; tool {name!r} runs only as a task: retry later",
        )
    return context.start(
        request_id,
        "tools/call",
        name,
        arguments,
        params,
        meta,
        client,
        task_after=task_after,
        task_required=required,
    )


def _finish(context: ServerContext, call: CallState, result: ToolResult) -> list[Action]:
    """The answer to a finished ``tools/call`` (one that asks nothing)."""
    client = call.client
    metadata = result.metadata
    if metadata is not None and UPSTREAM_TASK_KEY in metadata and context.tasks is not None:
        from ._upstream_tasks import handed_over

        return handed_over(context, call, metadata[UPSTREAM_TASK_KEY])
    if call.task_required and context.tasks is not None:
        # A tool that answers only through a task: a task made already done.
        return task_made(context, call, result=result)[0]
    if result.parts:
        return context.finish(call, call_tool_result(client, result))
    # A text answer: kept as its parts, written from the codec's template.
    structured = codec.ABSENT if metadata is None else metadata.get(STRUCTURED_KEY, codec.ABSENT)
    if structured is not codec.ABSENT and not client.carries(structured):
        structured = codec.ABSENT
    context.forget(call)
    members, encoded = (
        (context.modern_members, context.modern_members_text) if client.modern else (NO_MEMBERS, "")
    )
    return [
        Send._text_reply(
            call.request_id, result.output, result.is_error, structured, members, encoded
        )
    ]


def call_tool_result(client: ClientView, result: ToolResult) -> dict[str, Any]:
    """A tool's result as the ``CallToolResult`` ``client`` reads. Its text content and
    its ``structuredContent`` are read-only (the latter is the result's own): a task's
    record keeps them as they are, not copied again to freeze them."""
    content: list[Any]
    if not result.parts:
        content = FrozenList([FrozenDict({"type": "text", "text": result.output})])
    else:
        content = content_blocks(
            result,
            audio=client.at_least("2025-03-26"),
            resource_links=client.at_least("2025-06-18"),
        )
    out: dict[str, Any] = {"content": content, "isError": result.is_error}
    metadata = result.metadata
    if metadata is not None and STRUCTURED_KEY in metadata:
        structured = metadata[STRUCTURED_KEY]
        if client.carries(structured):
            out["structuredContent"] = structured
    return out


def make_tasks(settings: TaskOptions) -> Tasks:
    """A server's tasks (one for all its sessions); their calls start through the server's
    call bridge, as every call does."""
    from ._tasks import Tasks

    return Tasks(settings, format_result=call_tool_result, client_of=client_from_state)


FEATURE = Feature(
    "tools",
    _declare,
    {
        "tools/list": Method(_list),
        "tools/call": Method(_call, BOTH, _finish),
    },
)
"""Tools: declared to every client."""
