"""The public surface, pinned: which modules are public and what each exports.

Growing it is a decision: a new public module or name fails here until it is added below
(and to CHANGELOG.md). Everything else lives in underscore modules, free to change.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types

import pytest

import toolnexus

PUBLIC: dict[str, list[str]] = {
    "toolnexus": [
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
    ],
    "toolnexus.bridges": [],
    "toolnexus.bridges.langchain": ["to_langchain"],
    "toolnexus.bridges.openai_agents": ["AgentsBridge", "question_of", "to_openai_agents"],
    "toolnexus.bridges.pydantic_ai": ["to_pydantic_ai"],
    "toolnexus.demo": ["toolkit"],
    "toolnexus.errors": [
        "ConversionError",
        "DuplicateToolError",
        "EcmaPatternError",
        "FormatError",
        "InputError",
        "InvalidTypeError",
        "InvalidValueError",
        "McpError",
        "NotFoundError",
        "OAuthError",
        "OpenApiError",
        "OperationCancelledError",
        "PartTooLargeError",
        "RefError",
        "SchemaError",
        "SchemaInferenceError",
        "SkillError",
        "StoreUnavailableError",
        "StrictSchemaError",
        "TemporalUnavailableError",
        "TimerStartError",
        "ToolnexusError",
        "UnknownToolError",
        "UsageError",
        "WaitTimeoutError",
        "WireFormatError",
    ],
    "toolnexus.mcp": [
        "LEGACY_PROTOCOL_VERSIONS",
        "MODERN_PROTOCOL_VERSIONS",
        "AccessOptions",
        "Action",
        "AsgiApp",
        "CancelCall",
        "ClientSession",
        "Federation",
        "FileTokenStore",
        "HostOptions",
        "HttpOptions",
        "HttpServer",
        "IntrospectionVerifier",
        "JwtVerifier",
        "McpClient",
        "McpServerStatus",
        "McpSource",
        "MemoryTokenStore",
        "OAuth",
        "OpenApiOAuth",
        "Prompt",
        "ProtectedResource",
        "Resource",
        "Send",
        "ServerOptions",
        "ServerSession",
        "StartCall",
        "TaskOptions",
        "TokenStore",
        "asgi_app",
        "federate",
        "load_mcp_json",
        "prompt",
        "resource",
        "result_from_mcp",
        "serve_http",
        "serve_stdio",
    ],
    "toolnexus.policies": [
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
    ],
    "toolnexus.stores": [
        "AnswerStore",
        "MemoryAnswerStore",
        "MemoryTaskStore",
        "PostgresAnswerStore",
        "PostgresTaskStore",
        "RedisAnswerStore",
        "RedisTaskStore",
        "SqliteAnswerStore",
        "SqliteTaskStore",
        "TaskRecord",
        "TaskStore",
        "open_store",
        "open_task_store",
    ],
    "toolnexus.temporal": ["TemporalRunner", "run_worker", "serve_worker"],
    "toolnexus.testing": ["Drive", "cancelled_context", "drive"],
    "toolnexus.validation": [
        "ANNOTATION_KEYWORDS",
        "SUPPORTED_KEYWORDS",
        "SchemaError",
        "Validator",
        "check_schema",
        "validate",
    ],
}


def _public_modules() -> list[str]:
    found = ["toolnexus"]
    for info in pkgutil.walk_packages(toolnexus.__path__, "toolnexus."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


def test_the_public_modules_are_the_ones_chosen():
    assert _public_modules() == sorted(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_each_public_module_exports_exactly_its_pinned_names(name):
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(PUBLIC[name])
    for exported in module.__all__:
        assert getattr(module, exported) is not None, f"{name}.{exported}"


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_exported_classes_and_functions_name_a_public_home(name):
    module = importlib.import_module(name)
    for exported in module.__all__:
        value = getattr(module, exported)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if isinstance(value, types.GenericAlias):
            continue  # an alias (ProgressReporter), a class to inspect only on Python 3.10
        home = value.__module__
        assert not any(part.startswith("_") for part in home.split(".")), (
            f"{name}.{exported} says it lives in {home}"
        )
        assert getattr(importlib.import_module(home), value.__qualname__) is value


def test_a_result_pickles_by_its_public_name():
    import pickle

    from toolnexus import ToolResult

    assert pickle.loads(pickle.dumps(ToolResult.ok("x"))) == ToolResult.ok("x")
    assert b"toolnexus._" not in pickle.dumps(ToolResult.ok("x"))


@pytest.mark.parametrize(
    ("name", "private"),
    [("toolnexus", "_host"), ("toolnexus.mcp", "_server._session"), ("toolnexus.stores", "_open")],
)
def test_dir_of_a_package_lists_its_public_names_only(name, private):
    package = importlib.import_module(name)
    importlib.import_module(f"{name}.{private}")  # a loaded private module is no public name
    listed = set(dir(package))
    assert listed - {"__version__"} == set(package.__all__)
    assert not listed & {"TYPE_CHECKING", "annotations", "importlib", "_LAZY", "_publish"}
