"""Pins errors.py: one root, every raise site in the package uses it, builtins still catch."""

from __future__ import annotations

import ast
import copy
import importlib
import pickle
import pkgutil
import re
from pathlib import Path

import pytest

import toolnexus
from toolnexus import errors

SRC = Path(toolnexus.__file__).parent

# Exceptions whose type is a protocol some other code relies on, so they stay what they are.
PROTOCOL_EXCEPTIONS = {
    # a module-level __getattr__ must raise AttributeError for hasattr()/getattr(default)
    ("__init__.py", "AttributeError"),
    ("_host.py", "AttributeError"),  # its lazy TurnCall/TurnResult re-exports
    # frozen dataclasses raise it from generated code; sealed classes raise the same one
    ("_frozen.py", "FrozenInstanceError"),
    # argparse turns it into "argument --timeout: <message>" and exit code 2
    ("_parser.py", "ArgumentTypeError"),
    # an internal invariant that cannot fail, like an assert that survives -O
    ("_ecma.py", "AssertionError"),
    # an optional extra that is not installed: what `except ImportError` around it expects
    ("_common.py", "ImportError"),
    ("_postgres.py", "ImportError"),
    ("_redis.py", "ImportError"),
    ("_verifiers.py", "ImportError"),
    ("_dpop.py", "ImportError"),  # mcp/_shared/: PyJWT (the jwt extra) is not installed
    ("_runner.py", "ImportError"),  # temporal/: the SDK is not installed
    # Temporal's protocol: an update handler refuses an answer by raising ApplicationError;
    # a workflow ends cancelled by raising asyncio's CancelledError
    ("_workflow.py", "ApplicationError"),
    ("_workflow.py", "CancelledError"),
    # the HTTP client's response head reader stands in for http.client's: the transport
    # catches http.client.HTTPException from it as from http.client itself
    ("_http.py", "UnknownProtocol"),
    # bridges speak their framework's protocol: its own exception types end a tool call
    ("langchain.py", "tool_exception"),
    ("pydantic_ai.py", "approval_required"),
    ("pydantic_ai.py", "tool_failed"),
}

# A package's own control flow: raised in its modules, caught by its __init__.py (the CLI's
# one-line error and exit code: the command line's mistakes never reach a Python caller).
PACKAGE_CONTROL_FLOW = {("_cli", "CliError"), ("_cli", "StdoutClosed")}

# Package-internal control flow that crosses modules: the class (the module that defines
# it), and the one module that catches every raise of it — it never leaves the package.
# The MCP server's handlers (mcp/_server/_feature_*.py, mcp/_server/_questions.py) refuse a
# request by raising Reject; the session answers it as the JSON-RPC error it carries.
INTERNAL_FLOW = {"Reject": ("toolnexus.mcp._server._types", "mcp/_server/_session.py")}

# Methods that build and return an exception for a `raise` site, and the class they build.
FACTORIES = {
    ("_compiler.py", "fail"): "SchemaError",
    ("_ecma.py", "fail"): "EcmaPatternError",
    ("_frontmatter.py", "fail"): "_YamlError",
    ("_frontmatter.py", "unsupported"): "_Unsupported",
    ("_toolkit.py", "_unknown"): "UnknownToolError",
    ("_toolkit.py", "_not_found"): "NotFoundError",
    ("_toolkit.py", "_duplicate"): "InvalidValueError",
    ("_answers.py", "unavailable"): "StoreUnavailableError",  # stores/_sqlite.py's
    ("_tasks.py", "unavailable"): "StoreUnavailableError",
    ("_source.py", "problem"): "InvalidValueError",  # an mcp.json auth block's
    ("_postgres.py", "unavailable"): "StoreUnavailableError",
    ("_redis.py", "unavailable"): "StoreUnavailableError",
}


def _source_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _raised_name(node: ast.Raise) -> str | None:
    """The class (or factory) a `raise` names, or None for a re-raise of a caught value."""
    exc = node.exc
    if exc is None:
        return None
    target = exc.func if isinstance(exc, ast.Call) else exc
    if isinstance(target, ast.Name):
        name = target.id
    elif isinstance(target, ast.Attribute):
        name = target.attr
    else:
        return None  # raise outcome["error"]: re-raising an exception caught elsewhere
    if isinstance(exc, ast.Call) or name[:1].isupper() or name.lstrip("_")[:1].isupper():
        return name
    return None  # raise value: re-raising a caught exception held in a variable


def _caught_names(tree: ast.AST) -> set[str]:
    caught: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            kinds = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            caught.update(kind.id for kind in kinds if isinstance(kind, ast.Name))
    return caught


def _imported_from(path: Path, node: ast.ImportFrom) -> Path | None:
    """The package file a relative ``from . import`` in ``path`` reads, if any."""
    if not node.level:
        return None
    base = path.parent
    for _ in range(node.level - 1):
        base = base.parent
    target = base.joinpath(*(node.module or "").split("."))
    for candidate in (target.with_suffix(".py"), target / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_every_raise_site_in_the_package_raises_a_toolnexus_error():
    offenders = []
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in _source_files()}
    # A private exception class is internal control flow. The modules that know one are the
    # module defining it and those importing it from there (a package's private modules
    # share them: validation/ raises _Stop in _problems.py and _nodes.py, and catches it in
    # __init__.py).
    defined = {
        path: {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and node.name.startswith("_")
        }
        for path, tree in trees.items()
    }
    knowing: dict[tuple[Path, str], set[Path]] = {
        (path, name): {path} for path, names in defined.items() for name in names
    }
    known_as: dict[Path, dict[str, tuple[Path, str]]] = {}
    for path, tree in trees.items():
        known_as[path] = {name: (path, name) for name in defined[path]}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _imported_from(path, node)
            for alias in node.names:
                key = (source, alias.name) if source is not None else None
                if key in knowing:
                    knowing[key].add(path)
                    known_as[path][alias.asname or alias.name] = key
    catching = {path: _caught_names(tree) for path, tree in trees.items()}
    for path, tree in trees.items():
        private = known_as[path]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise):
                continue
            name = _raised_name(node)
            if name is None:
                continue
            where = f"{path.relative_to(SRC)}:{node.lineno} raises {name}"
            name = FACTORIES.get((path.name, name), name)
            if name in INTERNAL_FLOW:
                catcher = next(SRC.rglob(INTERNAL_FLOW[name][1]))
                if name not in _caught_names(ast.parse(catcher.read_text(encoding="utf-8"))):
                    offenders.append(f"{where}, which {INTERNAL_FLOW[name][1]} does not catch")
                continue
            if name in private:
                # Internal control flow: fine only when a module that knows it catches it.
                key = private[name]
                if not any(key[1] in catching[other] for other in knowing[key]):
                    offenders.append(f"{where}, a private class no module that knows it catches")
                continue
            if (path.name, name) in PROTOCOL_EXCEPTIONS:
                continue
            package = path.relative_to(SRC).parts[0]
            if (package, name) in PACKAGE_CONTROL_FLOW:
                if name not in _caught_names(
                    ast.parse((SRC / package / "__init__.py").read_text())
                ):
                    offenders.append(f"{where}, which {package}/__init__.py does not catch")
                continue
            cls = getattr(errors, name, None)
            if not (isinstance(cls, type) and issubclass(cls, errors.ToolnexusError)):
                offenders.append(f"{where}, not a ToolnexusError from toolnexus.errors")
    assert offenders == []


def test_the_scan_sees_the_kinds_of_raise_it_judges():
    def first_raise(code: str) -> ast.Raise:
        return next(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Raise))

    assert _raised_name(first_raise("raise ValueError('x')")) == "ValueError"
    assert _raised_name(first_raise("raise errors.InputError('x')")) == "InputError"
    assert _raised_name(first_raise("raise _Stop")) == "_Stop"
    assert _raised_name(first_raise("raise self.fail(p, k, 'x')")) == "fail"
    assert _raised_name(first_raise("raise exc")) is None
    assert _raised_name(first_raise("raise outcome['error']")) is None


def _all_modules() -> list[object]:
    names = ["toolnexus"] + [
        info.name
        for info in pkgutil.walk_packages([str(SRC)], prefix="toolnexus.")
        if info.name != "toolnexus.__main__"
    ]
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            # A module that is an optional extra's own (it imports the SDK at its top):
            # without the extra installed (the README's test run) there is nothing to scan.
            if exc.name not in OPTIONAL_SDKS:
                raise
    return modules


OPTIONAL_SDKS = {"temporalio"}  # toolnexus.temporal._workflow imports it at its top


def test_every_public_exception_class_lives_in_errors_and_is_exported():
    seen = set()
    for module in _all_modules():
        for name, value in vars(module).items():
            if name.startswith("_") or not isinstance(value, type):
                continue
            if not issubclass(value, BaseException) or not value.__module__.startswith("toolnexus"):
                continue
            if (value.__module__.split(".")[1], name) in PACKAGE_CONTROL_FLOW:
                continue  # never leaves its package (the raise-site test checks it is caught)
            if INTERNAL_FLOW.get(value.__name__, ("",))[0] == value.__module__:
                continue  # caught inside the package, never raised to a caller
            seen.add(value)
            assert value.__module__ == "toolnexus.errors", f"{module.__name__}.{name}"
            assert issubclass(value, errors.ToolnexusError), name
            assert name in toolnexus.__all__, name
            assert getattr(toolnexus, name) is value
    assert set(errors.__all__) == {cls.__name__ for cls in seen}


def test_the_docstring_tree_draws_the_real_hierarchy():
    drawn: dict[str, str] = {}
    parents: list[str] = []
    for line in errors.__doc__.splitlines():
        match = re.match(r"^    ((?:[│ ] {3})*)(?:[├└]── )?([A-Z]\w+Error)\b", line)
        if not match:
            continue
        depth = len(match.group(1)) // 4 + (1 if "──" in line else 0)
        del parents[depth:]
        if parents:
            drawn[match.group(2)] = parents[-1]
        parents.append(match.group(2))
    real = {
        name: next(
            base.__name__
            for base in getattr(errors, name).__bases__
            if issubclass(base, errors.ToolnexusError)
        )
        for name in errors.__all__
        if name != "ToolnexusError"
    }
    assert drawn == real


@pytest.mark.parametrize(
    ("trigger", "ours", "builtin"),
    [
        (lambda: toolnexus.ToolContext(timeout_ms=-1), errors.InvalidValueError, ValueError),
        (lambda: toolnexus.ToolResult.pending("approve?"), errors.InvalidTypeError, TypeError),
        (lambda: toolnexus.Request.from_json("[]"), errors.WireFormatError, ValueError),
        (lambda: toolnexus.Toolkit().get("serch"), errors.UnknownToolError, LookupError),
        (
            lambda: toolnexus.Host(toolnexus.Toolkit(), max_workers=0),
            errors.InvalidValueError,
            ValueError,
        ),
        (
            lambda: toolnexus.CancellationTokenSource().cancel_after(-1),
            errors.InvalidValueError,
            ValueError,
        ),
    ],
    ids=["context", "pending", "wire", "unknown-tool", "host", "cancel-after"],
)
def test_callers_catching_the_builtin_still_catch_ours(trigger, ours, builtin):
    with pytest.raises(builtin) as caught:
        trigger()
    assert isinstance(caught.value, ours)
    assert isinstance(caught.value, errors.ToolnexusError)


def test_messages_say_what_and_how_to_fix():
    with pytest.raises(errors.UsageError, match=r"timeout_ms must be .*got -1"):
        toolnexus.ToolContext(timeout_ms=-1)
    with pytest.raises(errors.InputError, match=r"invalid Request: input must be a JSON object"):
        toolnexus.Request.from_json("[]")


@pytest.mark.parametrize(
    "error",
    [
        errors.DuplicateToolError("add"),
        errors.SchemaError("#/properties/n", "minimun", "unsupported keyword"),
        errors.StrictSchemaError("label", "names", "is an object that takes any keys"),
        errors.SchemaInferenceError("m.upload", "data", "bytes has no JSON Schema equivalent"),
        errors.WireFormatError("Answer", "ok", "is missing; expected a bool"),
        errors.RefError("nope:tools", "cannot import 'nope'"),
        errors.UnknownToolError("serch", ["search"], ["search", "fetch"]),
        errors.OperationCancelledError(),
        errors.TemporalUnavailableError("temporal.internal:7233", "connection refused"),
        errors.OAuthError("https://login.example.com/token", "answered 500"),
        errors.InvalidValueError("x must be >= 0, got -1"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_errors_survive_pickle_and_copy_with_their_fields(error):
    for clone in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert type(clone) is type(error)
        assert str(clone) == str(error)
        assert vars(clone) == vars(error)


def test_old_import_paths_still_work():
    from toolnexus._cli import RefError
    from toolnexus._schema import SchemaInferenceError
    from toolnexus._toolkit import DuplicateToolError, StrictSchemaError, UnknownToolError
    from toolnexus.validation import SchemaError

    assert RefError is errors.RefError
    assert SchemaInferenceError is errors.SchemaInferenceError
    assert (DuplicateToolError, StrictSchemaError, UnknownToolError) == (
        errors.DuplicateToolError,
        errors.StrictSchemaError,
        errors.UnknownToolError,
    )
    assert SchemaError is errors.SchemaError
