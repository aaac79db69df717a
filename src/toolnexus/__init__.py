"""toolnexus — the tool contract an LLM agent can stand on.

Tools are plain callables ``fn(args, ctx=None) -> ToolResult``. This package gives them
a context (cancellation, budget, answers), results that can suspend on a question to a
human, and — in lazily imported layers — schemas, a host runtime and an MCP server.

Example::

    from toolnexus import ToolContext, ToolResult

    def crunch(args, ctx=None):
        if ctx is not None and ctx.is_cancelled:
            return ToolResult.error("cancelled")
        return ToolResult.ok(f"completed {args['steps']} step(s)")
"""

from __future__ import annotations

import importlib

from .cancellation import CancellationToken, CancellationTokenRegistration, CancellationTokenSource
from .context import ProgressReporter, ToolContext
from .errors import (
    ConversionError,
    DuplicateToolError,
    EcmaPatternError,
    FormatError,
    InputError,
    InvalidTypeError,
    InvalidValueError,
    OperationCancelledError,
    PartTooLargeError,
    RefError,
    SchemaError,
    SchemaInferenceError,
    StrictSchemaError,
    TimerStartError,
    ToolnexusError,
    UnknownToolError,
    UsageError,
    WaitTimeoutError,
    WireFormatError,
)
from .result import ToolResult
from .suspension import Answer, Request

__version__ = "0.1.0"

# Higher layers load on first use, so `import toolnexus` costs only the contract; so do
# content parts, which most results never carry.
_LAZY: dict[str, str] = {
    "Call": ".host",
    "Host": ".host",
    "Part": ".parts",
    "Tool": ".tools",
    "ToolEvent": ".host",
    "Toolkit": ".toolkit",
    "TurnCall": ".turns",
    "TurnResult": ".turns",
    "tool": ".tools",
}

# Not `from typing import TYPE_CHECKING`: typing would cost as much as the contract itself.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .host import Call, Host, ToolEvent
    from .parts import Part
    from .toolkit import Toolkit
    from .tools import Tool, tool
    from .turns import TurnCall, TurnResult

__all__ = [
    "Answer",
    "Call",
    "CancellationToken",
    "CancellationTokenRegistration",
    "CancellationTokenSource",
    "ConversionError",
    "DuplicateToolError",
    "EcmaPatternError",
    "FormatError",
    "Host",
    "InputError",
    "InvalidTypeError",
    "InvalidValueError",
    "OperationCancelledError",
    "Part",
    "PartTooLargeError",
    "ProgressReporter",
    "RefError",
    "Request",
    "SchemaError",
    "SchemaInferenceError",
    "StrictSchemaError",
    "TimerStartError",
    "Tool",
    "ToolContext",
    "ToolEvent",
    "ToolResult",
    "Toolkit",
    "ToolnexusError",
    "TurnCall",
    "TurnResult",
    "UnknownToolError",
    "UsageError",
    "WaitTimeoutError",
    "WireFormatError",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
