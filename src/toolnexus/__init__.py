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

from ._cancellation import CancellationToken, CancellationTokenRegistration, CancellationTokenSource
from ._context import ProgressReporter, ToolContext
from ._result import ToolResult
from ._version import __version__ as __version__  # written in _version.py alone
from .errors import (
    ConversionError,
    DuplicateToolError,
    EcmaPatternError,
    FormatError,
    InputError,
    InvalidTypeError,
    InvalidValueError,
    McpError,
    NotFoundError,
    OAuthError,
    OpenApiError,
    OperationCancelledError,
    PartTooLargeError,
    RefError,
    SchemaError,
    SchemaInferenceError,
    SkillError,
    StoreUnavailableError,
    StrictSchemaError,
    TemporalUnavailableError,
    TimerStartError,
    ToolnexusError,
    UnknownToolError,
    UsageError,
    WaitTimeoutError,
    WireFormatError,
)

# Higher layers load on first use, so `import toolnexus` costs only the contract; so do
# content parts, which most results never carry, and the question and answer of a
# suspension, which a server needs only when a tool asks one.
_LAZY: dict[str, str] = {
    "Answer": "._suspension",
    "Call": "._host",
    "Grammar": "._tool_use",
    "Host": "._host",
    "HostedMcp": "._adapters",
    "OpenApiImport": "._openapi",
    "Namespace": "._views",
    "Part": "._parts",
    "Principal": "._principal",
    "Request": "._suspension",
    "Skill": "._skills",
    "SkillFile": "._skills",
    "Tool": "._tools",
    "ToolEvent": "._host",
    "ToolView": "._views",
    "Toolkit": "._toolkit",
    "TurnCall": "._turns",
    "TurnResult": "._turns",
    "decline_reason": "._suspension",
    "get_max_part_bytes": "._parts",
    "http_tool": "._http_tools",
    "load_openapi": "._openapi",
    "set_max_part_bytes": "._parts",
    "tool": "._tools",
}

# Not `from typing import TYPE_CHECKING`: typing would cost as much as the contract itself.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._adapters import HostedMcp
    from ._host import Call, Host, ToolEvent
    from ._http_tools import http_tool
    from ._openapi import OpenApiImport, load_openapi
    from ._parts import Part, get_max_part_bytes, set_max_part_bytes
    from ._principal import Principal
    from ._skills import Skill, SkillFile
    from ._suspension import Answer, Request, decline_reason
    from ._tool_use import Grammar
    from ._toolkit import Toolkit
    from ._tools import Tool, tool
    from ._turns import TurnCall, TurnResult
    from ._views import Namespace, ToolView

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
    "Grammar",
    "Host",
    "HostedMcp",
    "InputError",
    "InvalidTypeError",
    "InvalidValueError",
    "McpError",
    "Namespace",
    "NotFoundError",
    "OAuthError",
    "OpenApiError",
    "OpenApiImport",
    "OperationCancelledError",
    "Part",
    "PartTooLargeError",
    "Principal",
    "ProgressReporter",
    "RefError",
    "Request",
    "SchemaError",
    "SchemaInferenceError",
    "Skill",
    "SkillError",
    "SkillFile",
    "StoreUnavailableError",
    "StrictSchemaError",
    "TemporalUnavailableError",
    "TimerStartError",
    "Tool",
    "ToolContext",
    "ToolEvent",
    "ToolResult",
    "ToolView",
    "Toolkit",
    "ToolnexusError",
    "TurnCall",
    "TurnResult",
    "UnknownToolError",
    "UsageError",
    "WaitTimeoutError",
    "WireFormatError",
    "decline_reason",
    "get_max_part_bytes",
    "http_tool",
    "load_openapi",
    "set_max_part_bytes",
    "tool",
]


def _publish(value: object) -> object:
    """Name ``toolnexus`` as the home of a name defined in a private module: it is where
    users import it from, and what reprs and pickles say."""
    if getattr(value, "__module__", "").startswith("toolnexus._"):
        value.__module__ = "toolnexus"
    return value


for _name in __all__:
    if _name in globals():
        _publish(globals()[_name])
del _name


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus' has no attribute {name!r}")
    value = _publish(getattr(importlib.import_module(module, __name__), name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # The public names only: not the helpers of this module (importlib, the lazy table)
    # nor the private modules loaded so far.
    return sorted({*__all__, "__version__"})
