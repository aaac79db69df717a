"""LangChain tools from a toolkit; a question to a human is a LangGraph ``interrupt``.

Each tool runs through a :class:`~toolnexus.Host`, so its deadline holds even when it ignores
its token. A call that asks a question, inside a LangGraph graph, interrupts the graph with
``{"tool": name, "request": <the Request as JSON>}``; resuming the graph with
``Command(resume=reply)`` answers it — ``reply`` is ``True``/``False``, the answer's data as a
dict, or a wire-shaped ``{"ok": ..., "data": ..., "reason": ...}`` — and the tool runs again
with that answer, bound to the request it asked. LangGraph re-runs an interrupted node from its
start, so the tool's first pass (the one that asks) runs again on resume and the answer goes to
the request that pass issues: keep a first pass free of side effects, as the contract says.
Outside a graph a question comes back as an error whose text is the prompt.

Errors reach the model through LangChain's own channel (``ToolException`` with
``handle_tool_error``: a ``ToolMessage`` with ``status="error"``).

A result with parts (images, files, audio) becomes LangChain content blocks — the
``ToolMessage`` content is ``[{"type": "text", "text": output}, {"type": "image", "base64":
..., "mime_type": ...}, ...]`` (``"url"`` for a part given by URL; a file's name in
``extras.filename``) — so every part reaches the model as LangChain's standard types. An
audio part travels as a ``file`` block with its audio mime type: LangChain takes no
``audio`` block from a tool. A result without parts stays plain text.

Example::

    from toolnexus.bridges.langchain import to_langchain

    tools = to_langchain(toolkit, timeout_ms=5_000)
    tools[0].invoke({"a": 2, "b": 3})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._result import ToolResult
from ._common import answer_for, direct_tools, host_of, parameters, question, require

if TYPE_CHECKING:
    from .._host import Host
    from .._toolkit import Toolkit

__all__ = ["to_langchain"]


def to_langchain(source: Toolkit | Host, *, timeout_ms: int | None = None) -> list[Any]:
    """Every tool of ``source`` (a ``Toolkit``, or the ``Host`` to run them on) as a LangChain
    ``StructuredTool``, in the toolkit's order.

    ``timeout_ms`` is each call's deadline (else the host's default). Sync ``invoke`` and
    async ``ainvoke`` both work; cancelling an ``ainvoke`` cancels the call.

    Raises ``ImportError`` naming the extra to install when langchain-core is missing.

    Example::

        tools = to_langchain(Toolkit([add]))
        assert tools[0].invoke({"a": 2, "b": 3}) == "5"
    """
    tools_module = require("langchain_core.tools", "LangChain", "langchain")
    host = host_of(source)
    return [
        _structured_tool(
            tools_module, host, tool.name, tool.description, parameters(tool), timeout_ms
        )
        for tool in direct_tools(host)
    ]


def _structured_tool(
    tools_module: Any,
    host: Host,
    name: str,
    description: str,
    schema: dict[str, Any],
    timeout_ms: int | None,
) -> Any:
    tool_exception = tools_module.ToolException

    def finish(result: ToolResult) -> str | list[dict[str, Any]]:
        content = _content_blocks(result)
        if result.is_error:
            # handle_tool_error=True makes args[0] the error ToolMessage's content, blocks too.
            raise tool_exception(content)
        return content

    def run(**arguments: Any) -> str | list[dict[str, Any]]:
        result = host.call(name, arguments, timeout_ms=timeout_ms)
        request = ToolResult.pending_of(result)
        if request is not None:
            reply = _interrupt(question(name, result))
            if reply is not _NOT_IN_A_GRAPH:
                result = host.resume(
                    name, arguments, request, answer_for(request, reply), timeout_ms=timeout_ms
                )
        return finish(result)

    async def arun(**arguments: Any) -> str | list[dict[str, Any]]:
        result = await host.acall(name, arguments, timeout_ms=timeout_ms)
        request = ToolResult.pending_of(result)
        if request is not None:
            reply = _interrupt(question(name, result))
            if reply is not _NOT_IN_A_GRAPH:
                result = await host.aresume(
                    name, arguments, request, answer_for(request, reply), timeout_ms=timeout_ms
                )
        return finish(result)

    return tools_module.StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=description or name,
        args_schema=schema,
        handle_tool_error=True,
        infer_schema=False,
    )


def _content_blocks(result: ToolResult) -> str | list[dict[str, Any]]:
    """The content LangChain gets for ``result``: its text, or with parts, LangChain's standard
    content blocks (text, then one block per part, in order).

    Example::

        >>> from toolnexus import Part, ToolResult
        >>> _content_blocks(ToolResult.ok("5"))
        '5'
        >>> chart = ToolResult.ok("a chart", parts=[Part.image(b"GIF89a", "image/gif")])
        >>> _content_blocks(chart)[1]
        {'type': 'image', 'mime_type': 'image/gif', 'base64': 'R0lGODlh'}
    """
    if not result.parts:
        return result.output
    blocks: list[dict[str, Any]] = [{"type": "text", "text": result.output}]
    for part in result.parts:
        if part.type == "text":
            blocks.append({"type": "text", "text": part.text or ""})
        elif part.type in ("image", "file", "audio"):
            block: dict[str, Any] = {
                "type": "image" if part.type == "image" else "file",
                "mime_type": part.mime_type,
            }
            if part.url is not None:
                block["url"] = part.url
            else:
                block["base64"] = part.data
            if part.name:
                block["extras"] = {"filename": part.name}
            blocks.append(block)
        else:
            blocks.append({"type": "text", "text": part.placeholder()})
    return blocks


_NOT_IN_A_GRAPH = object()


def _interrupt(value: dict[str, Any]) -> object:
    """LangGraph's ``interrupt(value)``: raises to pause the graph the first time, returns the
    resume value the second; ``_NOT_IN_A_GRAPH`` when there is no graph to pause."""
    import importlib

    try:
        interrupt = importlib.import_module("langgraph.types").interrupt
    except ImportError:
        return _NOT_IN_A_GRAPH
    try:
        return interrupt(value)
    except (RuntimeError, KeyError):
        # No runnable context (RuntimeError), or a LangChain one outside a graph (KeyError:
        # no graph scratchpad); GraphInterrupt, which pauses a graph, is neither.
        return _NOT_IN_A_GRAPH
