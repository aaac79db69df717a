"""Policies around every tool call: middleware, and the built-in ones.

A :class:`~toolnexus.Host` runs each call through its middleware — ``Host(middleware=[...])``
for every tool, ``tool_middleware={"deploy": [...]}`` for some — the same way for local
tools, tools it serves over MCP (stdio and HTTP) and remote MCP tools. Each middleware sees
the :class:`ToolCall` (tool, arguments, context, call id, turn) and ``call_next``: it may
pass the call on, rewrite its arguments (checked against the schema again), answer without
running the tool, or transform the result. The chain runs inside the call's budget:
deadlines and cancellation hold through it. A middleware that raises, or returns anything
but a :class:`~toolnexus.ToolResult`, is an error result naming it.

The built-ins: :func:`retry`, :func:`rate_limit`, :func:`cache`, :func:`call_limit`,
:func:`require_approval`, :func:`redact`, and :func:`hooks` (the toolnexus family's
``beforeTool``/``afterTool``). ``docs/policies.md`` shows each, and the ordering rules.

Example::

    from toolnexus import Host, ToolResult
    from toolnexus.policies import Next, ToolCall, rate_limit, require_approval

    def audit(call: ToolCall, call_next: Next) -> ToolResult:
        result = call_next(call)
        print(call.name, "->", result.output)
        return result

    host = Host(toolkit, middleware=[audit, rate_limit(10, burst=20)],
                tool_middleware={"deploy": [require_approval()]})
"""

from __future__ import annotations

from ._chain import AsyncNext, Middleware, Next, ToolCall
from ._policies import cache, call_limit, hooks, rate_limit, redact, require_approval, retry

__all__ = [
    "AsyncNext",
    "Middleware",
    "Next",
    "ToolCall",
    "cache",
    "call_limit",
    "hooks",
    "rate_limit",
    "redact",
    "require_approval",
    "retry",
]

for _value in (
    Middleware,
    ToolCall,
    cache,
    call_limit,
    hooks,
    rate_limit,
    redact,
    require_approval,
    retry,
):
    _value.__module__ = __name__  # users import them from here: reprs and pickles say so
del _value
