"""What resources and prompts share: a plain function run as a call, string arguments read
by their schema, and argument completion.

A :class:`~toolnexus.mcp.Resource` or :class:`~toolnexus.mcp.Prompt` is written like a
tool (keyword style, or the contract style ``fn(params, ctx=None)``) and runs like one: each
holds an inner :class:`~toolnexus.Tool` whose function calls the user's and turns what it
returned into the MCP result, so a host runs ``resources/read`` and ``prompts/get`` with the
deadlines, cancellation and questions of any tool call (:meth:`Toolkit.resolve
<toolnexus.Toolkit.resolve>` hands the host that inner tool). Completion for their
arguments (``completion/complete``) is an inner tool too, since a completer is user code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..._frozen import FrozenDict, FrozenList
from ..._result import ToolResult
from ..._schema import Signature, infer
from ..._tools import Tool, build_invoke, failure
from ...errors import (
    ConversionError,
    InvalidTypeError,
    InvalidValueError,
    NotFoundError,
    OperationCancelledError,
)

__all__ = [
    "COMPLETION_KEY",
    "MAX_COMPLETIONS",
    "NOT_FOUND_KEY",
    "Completer",
    "check_completers",
    "completion_tool",
    "enum_values",
    "inner_tool",
    "not_found",
    "read_strings",
]

COMPLETION_KEY = "completion"
"""The metadata key of a completion call's result: ``{"values", "total", "hasMore"}``."""

MAX_COMPLETIONS = 100
"""The most values one ``completion/complete`` answer carries (MCP's limit)."""

Completer = Callable[..., Iterable[str]] | Iterable[str]
"""How one argument is completed: a function ``(value)`` or ``(value, context)`` returning
candidate strings (``context``: the other arguments already given, as strings), or a fixed
list of candidates, offered when they start with what was typed."""


NOT_FOUND_KEY = "toolnexus.not_found"
"""The metadata key of a resource's or prompt's error result that says what was asked for
does not exist (its function raised :class:`~toolnexus.NotFoundError`): over MCP, a
``resources/read`` answers it ``-32602`` "Resource not found"."""


def not_found(message: str) -> ToolResult:
    """The error result saying what was asked for does not exist (see
    :data:`NOT_FOUND_KEY`)."""
    return ToolResult(message, True, {NOT_FOUND_KEY: True})


def inner_tool(
    fn: Callable[..., Any],
    *,
    name: str,
    description: str,
    schema: Mapping[str, Any] | None,
    contract_names: tuple[str, ...],
    finish: Callable[[Any], ToolResult],
    frame: Any,
    owner: str,
) -> tuple[Tool, Mapping[str, Any]]:
    """The inner tool that runs ``fn`` and ``finish``-es what it returns, and its input
    schema. ``schema`` (when given) is the schema of a contract-style function's
    ``params``; keyword style infers it from the annotations. What ``fn`` raises is logged
    as ``owner`` (``resource 'readme'``) raising it; a :class:`~toolnexus.NotFoundError`
    is the error result :func:`not_found` marks."""
    signature = infer(
        fn,
        schema=schema,
        localns=(lambda: frame.f_locals) if frame is not None else None,
        contract_names=contract_names,
    )
    invoke = build_invoke(signature)

    def _finished(value: Any) -> ToolResult:
        if isinstance(value, ToolResult) and (value.is_error or value.is_pending):
            return value  # a failure or a question passes through as it is
        return finish(value)

    def _raised(exc: Exception) -> ToolResult:
        if isinstance(exc, (ConversionError, OperationCancelledError)):
            raise exc  # the tool's own: a bad argument, a cancel
        if isinstance(exc, NotFoundError):
            return not_found(str(exc))
        return failure(exc, owner)

    run: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):

        async def run_async(args: Mapping[str, Any], ctx: Any = None) -> ToolResult:
            try:
                value = invoke(fn, args, ctx)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                return _raised(exc)
            return _finished(value)

        run = run_async
    else:

        def run_sync(args: Mapping[str, Any], ctx: Any = None) -> ToolResult:
            try:
                value = invoke(fn, args, ctx)
                if inspect.isawaitable(value):
                    from ..._aio import run_awaitable  # the one coroutine runner

                    value = run_awaitable(value)
            except Exception as exc:
                return _raised(exc)
            return _finished(value)

        run = run_sync
    # How the tool calls ``run``: the contract ``run(args, ctx)``. A schema inference wrote
    # is known to compile: the tool compiles its validator with the first call, as a tool's.
    outer = Signature(
        "contract",
        signature.schema,
        description,
        ctx_name="ctx",
        ctx_positional=True,
        ctx_has_default=True,
        inferred=signature.inferred,
    )
    return Tool(name, description, signature.schema, run, _signature=outer), signature.schema


# --------------------------------------------------------------------------- strings


def read_strings(args: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` with each string read as the type its property asks for.

    Prompt arguments and URI template variables travel as strings; a parameter annotated
    ``int``, ``float`` or ``bool`` gets ``"3"`` as ``3``, ``"2.5"`` as ``2.5`` and
    ``"true"``/``"false"`` as booleans. A string that does not read as its type is left as
    it is, so validation names it (``expected integer, got string "x"``).
    """
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(args)
    out = dict(args)
    for key, value in args.items():
        prop = properties.get(key)
        if not isinstance(value, str) or not isinstance(prop, Mapping):
            continue
        types = _types(prop)
        if not types or "string" in types:
            continue
        out[key] = _read(value, types)
    return out


def _types(prop: Mapping[str, Any]) -> set[str]:
    kind = prop.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {each for each in kind if isinstance(each, str)}
    found: set[str] = set()
    for key in ("anyOf", "oneOf"):
        options = prop.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, Mapping):
                    found |= _types(option)
    return found


def _read(text: str, types: set[str]) -> Any:
    stripped = text.strip()
    if "boolean" in types and stripped in ("true", "false"):
        return stripped == "true"
    if "integer" in types:
        try:
            return int(stripped)
        except ValueError:
            pass
    if "number" in types:
        try:
            number = float(stripped)
        except ValueError:
            return text
        if number - number == 0.0:  # not NaN, not an infinity: JSON cannot carry those
            return number
    return text


# --------------------------------------------------------------------------- completion


def check_completers(owner: str, complete: Any, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``complete`` checked (a mapping of argument name to :data:`Completer`), read-only.
    Raises ``ValueError``/``TypeError`` naming ``owner`` and the argument."""
    if complete is None:
        return FrozenDict()
    if not isinstance(complete, Mapping):
        raise InvalidTypeError(
            f"{owner}: complete must map argument names to completers, got "
            f"{type(complete).__name__}"
        )
    properties = schema.get("properties")
    known = set(properties) if isinstance(properties, Mapping) else set()
    checked: dict[str, Any] = {}
    for key, completer in complete.items():
        if key not in known:
            raise InvalidValueError(
                f"{owner}: complete names {key!r}, which is not one of its arguments "
                f"({', '.join(sorted(known)) or 'none'})"
            )
        if isinstance(completer, (str, bytes)):
            raise InvalidTypeError(
                f"{owner}: the completer of {key!r} is a string; give a function or a list "
                "of candidate strings"
            )
        if callable(completer):
            checked[key] = completer
        elif isinstance(completer, Iterable):
            checked[key] = FrozenList(str(each) for each in completer)
        else:
            raise InvalidTypeError(
                f"{owner}: the completer of {key!r} must be a function or a list of "
                f"strings, got {type(completer).__name__}"
            )
    return FrozenDict(checked)


def enum_values(prop: Any) -> list[str] | None:
    """The values an ``enum`` (or a ``oneOf``/``anyOf`` of ``const``) property allows, as
    strings — what completes an argument annotated ``Literal[...]`` or an ``Enum`` — or
    ``None`` for any other property."""
    if not isinstance(prop, Mapping):
        return None
    values = prop.get("enum")
    if isinstance(values, list):
        return [_text(each) for each in values]
    for key in ("anyOf", "oneOf"):
        options = prop.get(key)
        if isinstance(options, list) and options:
            consts = [o.get("const") for o in options if isinstance(o, Mapping) and "const" in o]
            if len(consts) == len(options):
                return [_text(each) for each in consts]
    return None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def completion_tool(owner: str, completers: Mapping[str, Any], schema: Mapping[str, Any]) -> Tool:
    """The inner tool that answers ``completion/complete`` for one resource or prompt:
    arguments ``{"argument", "value", "context"}``; its result's
    ``metadata["completion"]`` is ``{"values", "total", "hasMore"}`` (at most
    :data:`MAX_COMPLETIONS` values)."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}

    def complete(args: Mapping[str, Any], ctx: Any = None) -> ToolResult:
        argument = str(args.get("argument", ""))
        value = args.get("value")
        typed = value if isinstance(value, str) else ""
        context = args.get("context")
        given = dict(context) if isinstance(context, Mapping) else {}
        completer = completers.get(argument)
        if completer is None:
            candidates: Iterable[Any] = enum_values(properties.get(argument)) or ()
            found = _starting_with(candidates, typed)
        elif callable(completer):
            try:
                produced = _call_completer(completer, typed, given)
                found = [_text(each) for each in produced]
            except Exception as exc:
                return failure(exc, f"the completer of {argument!r} for {owner!r}")
        else:
            found = _starting_with(completer, typed)
        page = found[:MAX_COMPLETIONS]
        completion = {"values": page, "total": len(found), "hasMore": len(found) > len(page)}
        return ToolResult("\n".join(page), False, {COMPLETION_KEY: completion})

    return Tool(
        f"{owner}-completion", f"Completes the arguments of {owner}.", {"type": "object"}, complete
    )


def _starting_with(candidates: Iterable[Any], typed: str) -> list[str]:
    folded = typed.casefold()
    return [text for text in map(_text, candidates) if text.casefold().startswith(folded)]


def _call_completer(completer: Callable[..., Any], typed: str, given: dict[str, Any]) -> Any:
    try:
        takes_context = len(inspect.signature(completer).parameters) >= 2
    except (TypeError, ValueError):
        takes_context = False
    produced = completer(typed, given) if takes_context else completer(typed)
    if inspect.isawaitable(produced):
        from ..._aio import run_awaitable  # the one coroutine runner

        produced = run_awaitable(produced)
    if isinstance(produced, (str, bytes)) or not isinstance(produced, Iterable):
        raise InvalidTypeError(
            f"a completer must return a list of strings, got {type(produced).__name__}"
        )
    return produced


# --------------------------------------------------------------------------- resolving


def resolve_served(
    toolkit: Any, method: str, args: Any
) -> tuple[Tool, dict[str, Any]] | ToolResult:
    """What :meth:`Toolkit.resolve <toolnexus.Toolkit.resolve>` gives for an MCP method
    that runs a resource's, a prompt's or a completer's function: the inner tool and its
    arguments, or the error result saying what is wrong with ``args`` (the method's
    params)."""
    if not isinstance(args, Mapping):
        return ToolResult.error(f"invalid params for {method}: expected an object")
    if method == "resources/read":
        uri = args.get("uri")
        found = toolkit.find_resource(uri) if isinstance(uri, str) else None
        if found is None:
            return ToolResult.error(f"resource not found: {uri!r}")
        resource, params = found
        unsafe = resource.refusal(params)
        if unsafe is not None:
            return ToolResult.error(f"resource not found: {uri!r} ({unsafe})")
        return resource._tool, resource._arguments(uri, params)
    if method == "prompts/get":
        name = args.get("name")
        try:
            item = toolkit.get_prompt(name)
        except LookupError as exc:
            return ToolResult.error(str(exc.args[0]))
        arguments = args.get("arguments")
        given = dict(arguments) if isinstance(arguments, Mapping) else {}
        return item._tool, read_strings(given, item._schema)
    found_item = completion_target(toolkit, args.get("ref"))
    if isinstance(found_item, str):
        return ToolResult.error(found_item)
    argument = args.get("argument")
    argument = argument if isinstance(argument, Mapping) else {}
    context = args.get("context")
    given_context = context.get("arguments") if isinstance(context, Mapping) else None
    return found_item._completion, {
        "argument": argument.get("name"),
        "value": argument.get("value"),
        "context": given_context if isinstance(given_context, Mapping) else {},
    }


SERVED_CALLS: Mapping[str, Callable[..., Any]] = dict.fromkeys(
    ("resources/read", "prompts/get", "completion/complete"), resolve_served
)
"""The MCP methods that run a resource's, a prompt's or a completer's function, each to its
resolver: a toolkit holding a resource or a prompt resolves these names too."""


def completion_target(toolkit: Any, ref: Any) -> Any:
    """The prompt or resource template a ``completion/complete`` ``ref`` names, or the text
    saying why none: ``{"type": "ref/prompt", "name"}`` or ``{"type": "ref/resource",
    "uri"}`` (the template itself, or a URI it matches)."""
    if not isinstance(ref, Mapping):
        return (
            "ref must be an object: {'type': 'ref/prompt', 'name': ...} or "
            "{'type': 'ref/resource', 'uri': ...}"
        )
    kind = ref.get("type")
    if kind == "ref/prompt":
        try:
            return toolkit.get_prompt(ref.get("name"))
        except LookupError as exc:
            return str(exc.args[0])
    if kind == "ref/resource":
        uri = ref.get("uri")
        for item in toolkit.resources():
            if item.uri == uri:
                return item
        found = toolkit.find_resource(uri) if isinstance(uri, str) else None
        if found is not None:
            return found[0]
        return f"unknown resource template {uri!r}"
    return f"ref.type must be 'ref/prompt' or 'ref/resource', got {kind!r}"
