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
from ._common import answer_for, host_of, parameters, require

if TYPE_CHECKING:
    from .._host import Host
    from .._toolkit import Toolkit

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
    source: Toolkit | Host, *, timeout_ms: int | None = None, strict: bool = False
) -> AgentsBridge:
    """Every tool of ``source`` (a ``Toolkit``, or the ``Host`` to run them on) as an
    openai-agents ``FunctionTool``, in an :class:`AgentsBridge`.

    ``timeout_ms`` is each call's deadline (else the host's default); ``strict`` advertises
    OpenAI's strict schemas (``to_openai(strict=True)``).

    Raises ``ImportError`` naming the extra to install when openai-agents is missing.

    Example::

        bridge = to_openai_agents(Toolkit([add]))
        agent = Agent(name="calc", tools=bridge.tools)
    """
    agents = require("agents", "openai-agents", "openai-agents")
    host = host_of(source)
    bridge = AgentsBridge(tools=[])
    first_passes: OrderedDict[str, tuple[dict[str, Any], ToolResult]] = OrderedDict()
    lock = threading.Lock()
    for tool in host.toolkit.tools():
        schema = parameters(tool)
        if strict:
            from .._toolkit import Toolkit

            [definition] = Toolkit([tool]).to_openai(strict=True)
            schema = definition["function"]["parameters"]
        bridge.tools.append(
            agents.FunctionTool(
                name=tool.name,
                description=tool.description,
                params_json_schema=schema,
                on_invoke_tool=_invoke(host, tool.name, timeout_ms, bridge, first_passes, lock),
                strict_json_schema=strict,
                needs_approval=_first_pass(host, tool.name, timeout_ms, first_passes, lock),
            )
        )
    return bridge


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
) -> Any:
    async def on_invoke_tool(context: Any, arguments_json: str) -> str:
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
        return result.output

    return on_invoke_tool
