"""openai-agents ``FunctionTool`` s from a toolkit; a question to a human is an approval.

Each tool runs through a :class:`~toolnexus.Host`, so its deadline holds even when it ignores
its token. openai-agents decides whether a call needs approval before it runs the tool, so the
bridge runs the call's first pass there (``needs_approval``): a call that does not ask returns
its result when the SDK invokes the tool, without running twice; a call that asks becomes an
interruption (``result.interruptions``, a ``ToolApprovalItem``). ``RunState.approve(item)``
accepts — a question that needs data takes it from ``answers``, a mapping from the item's
``call_id`` to the answer's data (or a wire-shaped ``{"ok": ..., "data": ...}``), filled
before resuming — and ``RunState.reject(item)`` declines (the SDK tells the model; the tool
does not run). An accepted call runs again with the answer, bound to the request it asked.

A ``RunState`` may be resumed in another process: there the first pass runs again and the
answer goes to the request it issues (keep first passes free of side effects, as the contract
says). :func:`question_of` reads the pending request of an interruption.

Each tool is strict (``strict_json_schema=True``, the SDK's own default) when its schema
has a strict form — the one ``to_openai(strict=True)`` writes; an optional argument a strict
model sends as ``null`` reads as "not given" — and non-strict only when it has none (an
object with free-form keys). A result with parts (images, files) is the SDK's own
``ToolOutputText`` / ``ToolOutputImage`` / ``ToolOutputFileContent`` list, the items the
Responses API takes in a tool output (an audio part, which it takes none of, as its
placeholder text); a result without parts stays plain text.

Example::

    from agents import Agent, Runner
    from toolnexus.bridges.openai_agents import to_openai_agents

    bridge = to_openai_agents(toolkit, timeout_ms=5_000)
    agent = Agent(name="ops", tools=bridge.tools)
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._result import ToolResult
from .._suspension import Request
from .._turns import responses_output
from ..errors import StrictSchemaError
from ._common import answer_for, direct_tools, host_of, parameters, require

if TYPE_CHECKING:
    from .._host import Host
    from .._toolkit import Toolkit
    from .._tools import Tool

__all__ = ["AgentsBridge", "question_of", "to_openai_agents"]

# First passes waiting for the SDK to invoke (or never invoke: a rejected call) the tool.
_KEEP = 1024


@dataclass
class AgentsBridge:
    """The tools for an ``Agent``, and where answers to their questions go.

    Attributes:
        tools: the ``FunctionTool`` s, in the toolkit's order.
        answers: the answer's data for a question, keyed by the interruption's ``call_id``;
            read when the approved call runs.
    """

    tools: list[Any]
    answers: dict[str, object] = field(default_factory=dict)


def to_openai_agents(
    source: Toolkit | Host, *, timeout_ms: int | None = None, strict: bool | None = None
) -> AgentsBridge:
    """Every tool of ``source`` (a ``Toolkit``, or the ``Host`` to run them on) as an
    openai-agents ``FunctionTool``, in an :class:`AgentsBridge`.

    ``timeout_ms`` is each call's deadline (else the host's default). ``strict``: ``None``
    (the default) makes each tool strict where its schema has a strict form
    (``to_openai(strict=True)``) and non-strict where it has none; ``True`` requires it of
    every tool (raising :class:`~toolnexus.errors.StrictSchemaError` for one without);
    ``False`` advertises the plain schemas.

    Raises ``ImportError`` naming the packages to install when openai-agents is missing.

    Example::

        bridge = to_openai_agents(Toolkit([add]))
        agent = Agent(name="calc", tools=bridge.tools)
    """
    agents = require("agents", "openai-agents", "openai-agents")
    host = host_of(source)
    bridge = AgentsBridge(tools=[])
    first_passes: OrderedDict[str, tuple[dict[str, Any], ToolResult]] = OrderedDict()
    lock = threading.Lock()
    outputs = _OutputTypes(agents)
    for tool in direct_tools(host):
        schema, is_strict = _schema(tool, strict)
        bridge.tools.append(
            agents.FunctionTool(
                name=tool.name,
                description=tool.description,
                params_json_schema=schema,
                on_invoke_tool=_invoke(
                    host, tool.name, timeout_ms, bridge, first_passes, lock, outputs
                ),
                strict_json_schema=is_strict,
                needs_approval=_first_pass(host, tool.name, timeout_ms, first_passes, lock),
            )
        )
    return bridge


def _schema(tool: Tool, strict: bool | None) -> tuple[dict[str, Any], bool]:
    """The parameters schema a tool is offered with, and whether it is strict."""
    if strict is False:
        return parameters(tool), False
    try:
        definition = tool.to_openai(strict=True)
    except StrictSchemaError:
        if strict:
            raise
        return parameters(tool), False
    schema: dict[str, Any] = definition["function"]["parameters"]
    return schema, True


class _OutputTypes:
    """The SDK's tool output types, and a result in them."""

    def __init__(self, agents: Any) -> None:
        self.text = agents.ToolOutputText
        self.image = agents.ToolOutputImage
        self.file = agents.ToolOutputFileContent

    def of(self, result: ToolResult) -> str | list[Any]:
        """``result``'s text, or with parts the SDK's output items for what
        :func:`~toolnexus._turns.responses_output` writes (one rule for both)."""
        output = responses_output(result)
        if isinstance(output, str):
            return output
        items: list[Any] = []
        for item in output:
            if item["type"] == "input_image":
                items.append(self.image(image_url=item["image_url"]))
            elif item["type"] == "input_file":
                fields = {
                    key: item[key] for key in ("file_data", "file_url", "filename") if key in item
                }
                items.append(self.file(**fields))
            else:
                items.append(self.text(text=item["text"]))
        return items


def question_of(item: Any) -> Request | None:
    """The request a ``ToolApprovalItem`` from this bridge stands for (its prompt, kind and
    ``data.schema``), or ``None`` for an approval the bridge did not ask for."""
    call_id = getattr(getattr(item, "raw_item", None), "call_id", None)
    with _asked_lock:
        return _asked.get(str(call_id)) if call_id is not None else None


# call_id -> the request its first pass issued, for question_of (bounded like first passes).
_asked: OrderedDict[str, Request] = OrderedDict()
_asked_lock = threading.Lock()


def _remember(store: OrderedDict[str, Any], lock: threading.Lock, key: str, value: Any) -> None:
    with lock:
        store[key] = value
        store.move_to_end(key)
        while len(store) > _KEEP:
            store.popitem(last=False)


def _first_pass(
    host: Host,
    name: str,
    timeout_ms: int | None,
    first_passes: OrderedDict[str, tuple[dict[str, Any], ToolResult]],
    lock: threading.Lock,
) -> Any:
    async def needs_approval(context: Any, arguments: dict[str, Any], call_id: str) -> bool:
        result = await host.acall(name, arguments, timeout_ms=timeout_ms)
        _remember(first_passes, lock, call_id, (dict(arguments), result))
        request = ToolResult.pending_of(result)
        if request is None:
            return False
        _remember(_asked, _asked_lock, call_id, request)
        return True

    return needs_approval


def _invoke(
    host: Host,
    name: str,
    timeout_ms: int | None,
    bridge: AgentsBridge,
    first_passes: OrderedDict[str, tuple[dict[str, Any], ToolResult]],
    lock: threading.Lock,
    outputs: _OutputTypes,
) -> Any:
    async def on_invoke_tool(context: Any, arguments_json: str) -> str | list[Any]:
        call_id = str(getattr(context, "tool_call_id", ""))
        arguments = json.loads(arguments_json) if arguments_json else {}
        with lock:
            earlier = first_passes.pop(call_id, None)
        if earlier is not None and earlier[0] == arguments:
            result = earlier[1]
        else:  # resumed elsewhere, or the SDK changed the arguments: ask again
            result = await host.acall(name, arguments, timeout_ms=timeout_ms)
        request = ToolResult.pending_of(result)
        if request is not None:
            # The SDK invokes a tool that asked only once the call is approved.
            reply = bridge.answers.pop(call_id, True)
            result = await host.aresume(
                name, arguments, request, answer_for(request, reply), timeout_ms=timeout_ms
            )
        return outputs.of(result)

    return on_invoke_tool
