"""pydantic-ai tools from a toolkit; a question to a human is a deferred approval request.

Each tool runs through a :class:`~toolnexus.Host`, so its deadline holds even when it ignores
its token. A call that asks a question raises pydantic-ai's ``ApprovalRequired`` with
``{"tool": name, "request": <the Request as JSON>}`` as its metadata, so a run whose
``output_type`` admits ``DeferredToolRequests`` ends with the question in
``DeferredToolRequests.approvals`` / ``.metadata``. The next run answers it with
``DeferredToolResults``: ``approvals={call_id: True}`` accepts (put the answer's data, or a
wire-shaped answer, in ``metadata={call_id: {"answer": {"env": "staging"}}}``), ``False`` or
``ToolDenied`` declines (pydantic-ai then tells the model, and the tool does not run). An
accepted call runs again, bound to the request its first pass issues (pydantic-ai re-invokes
the tool, so keep a first pass free of side effects, as the contract says).

A tool's error result reaches the model as a ``ToolFailed`` failure (no retry budget used).

A result with parts is returned as pydantic-ai's own multimodal content, so it goes in the
``ToolReturnPart`` natively: ``[output, BinaryContent(...), ImageUrl(...), ...]`` — bytes as
``BinaryContent`` with their media type, a part given by URL as ``ImageUrl``, ``AudioUrl``
or ``DocumentUrl`` (a file). A failure carries text only (``ToolFailed`` takes a message),
so an error result's parts are named there by their placeholders. A result without parts
stays plain text.

Example::

    from pydantic_ai import Agent
    from toolnexus.bridges.pydantic_ai import to_pydantic_ai

    agent = Agent(model, tools=to_pydantic_ai(toolkit, timeout_ms=5_000))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._result import ToolResult
from ._common import answer_for, direct_tools, host_of, parameters, question, require

if TYPE_CHECKING:
    from .._host import Host
    from .._toolkit import Toolkit

__all__ = ["to_pydantic_ai"]


def to_pydantic_ai(source: Toolkit | Host, *, timeout_ms: int | None = None) -> list[Any]:
    """Every tool of ``source`` (a ``Toolkit``, or the ``Host`` to run them on) as a
    pydantic-ai ``Tool``, in the toolkit's order; pass them as ``Agent(..., tools=...)``.

    ``timeout_ms`` is each call's deadline (else the host's default).

    Raises ``ImportError`` naming the extra to install when pydantic-ai is missing.

    Example::

        agent = Agent(model, tools=to_pydantic_ai(Toolkit([add])))
    """
    tools_module = require("pydantic_ai", "pydantic-ai", "pydantic-ai")
    host = host_of(source)
    return [
        tools_module.Tool.from_schema(
            _function(tools_module, host, tool.name, timeout_ms),
            name=tool.name,
            description=tool.description,
            json_schema=parameters(tool),
            takes_ctx=True,
        )
        for tool in direct_tools(host)
    ]


def _content(messages: Any, result: ToolResult) -> str | list[Any]:
    """``result``'s text, or with parts pydantic-ai's multimodal content (text first)."""
    if not result.parts:
        return result.output
    urls = {"image": messages.ImageUrl, "audio": messages.AudioUrl, "file": messages.DocumentUrl}
    content: list[Any] = [result.output]
    for part in result.parts:
        if part.type == "text":
            content.append(part.text or "")
        elif part.type in urls and part.url is not None:
            content.append(urls[part.type](part.url, media_type=part.mime_type))
        elif part.type in urls:
            content.append(messages.BinaryContent(part.to_bytes(), media_type=part.mime_type))
        else:
            content.append(part.placeholder())
    return content


def _failure_text(result: ToolResult) -> str:
    return "\n".join([result.output, *(part.placeholder() for part in result.parts)])


def _function(tools_module: Any, host: Host, name: str, timeout_ms: int | None) -> Any:
    approval_required = tools_module.ApprovalRequired
    tool_failed = tools_module.ToolFailed
    messages = require("pydantic_ai.messages", "pydantic-ai", "pydantic-ai")

    async def run(ctx: Any, **arguments: Any) -> str | list[Any]:
        result = await host.acall(name, arguments, timeout_ms=timeout_ms)
        request = ToolResult.pending_of(result)
        if request is not None:
            if not ctx.tool_call_approved:
                raise approval_required(metadata=question(name, result))
            metadata = ctx.tool_call_metadata
            reply = metadata.get("answer", True) if isinstance(metadata, dict) else True
            result = await host.aresume(
                name, arguments, request, answer_for(request, reply), timeout_ms=timeout_ms
            )
        if result.is_error:
            raise tool_failed(_failure_text(result))
        return _content(messages, result)

    return run
