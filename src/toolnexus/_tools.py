"""Tools: :class:`Tool` (a function with a schema) and the :func:`tool` decorator.

A :class:`Tool` is itself a contract callable — ``tool(args, ctx=None) -> ToolResult`` —
that validates ``args`` against its schema, calls the function, and turns whatever it
returned (or raised) into a :class:`ToolResult`. All the work of reading the function
happens once, in :func:`tool`; a call only validates, calls and wraps.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, overload

from ._context import ToolContext
from ._conversion import conversion_problems, convert_fields, dry_conversion, int_from_float
from ._frozen import FrozenDict, FrozenList, freeze_schema, sealed, thaw
from ._log import LazyLogger
from ._result import STRUCTURED_KEY, ToolResult, success_result
from ._schema import (
    OUTPUT_WRAPPER,
    ConversionError,
    Signature,
    describe_callable,
    infer,
    sanitize_name,
)
from ._tool_use import Grammar, check_callers, check_examples, check_grammar_tool
from .errors import (
    InvalidTypeError,
    InvalidValueError,
    OperationCancelledError,
)

__all__ = ["Tool", "tool"]

if TYPE_CHECKING:
    # Defaults (PEP 696) let a bare ``Tool`` mean ``Tool[..., Any]`` for type checkers; at
    # run time the stdlib's ParamSpec/TypeVar are enough (only checkers read defaults).
    from typing_extensions import ParamSpec, TypeVar

    P = ParamSpec("P", default=...)
    R = TypeVar("R", default=Any)

    from .validation import Validator
else:
    from typing import ParamSpec, TypeVar

    P = ParamSpec("P")
    R = TypeVar("R")

_log = LazyLogger("tools")  # logging loads with the first record


def failure(exc: BaseException, who: str) -> ToolResult:
    """The error result of a function that raised ``exc``, logged as ``who`` raising it
    (``tool 'search'``, ``resource 'readme'``): the traceback is for the developer's logs,
    never for the model."""
    _log.error("%s raised %s", who, type(exc).__name__, exc_info=exc)
    return ToolResult(str(exc) or type(exc).__name__, True)


Invoke = Callable[[Callable[..., Any], Mapping[str, Any], "ToolContext | None"], Any]

# One encoder, built once: json.dumps would rebuild it on every call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _json_extra(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)  # a stable order: the same set gives the same text
        except TypeError:
            return list(value)
    from ._formats import to_json  # datetimes, UUIDs, paths, decimals, bytes, models

    return to_json(value)


encode_json = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_json_extra
).encode
"""Compact JSON of a value a function returned: enums, dataclasses, sets, datetimes, ...
written as tools write them (what a resource's JSON object becomes, too)."""

_EMPTY_OK = ToolResult("")
_TASK_SUPPORT = ("optional", "required", "forbidden")
_NONE: frozenset[str] = frozenset()  # the arguments a tool fixes, for most tools
_MISSING: Any = object()
_UNCOMPILED: Any = object()  # an inferred output schema's validator, not built yet
# what a sync function commonly returns, known not to be awaitable without asking
# inspect.isawaitable (an ABC check that cost a plain call ~5% of its time)
_NEVER_AWAITABLE = frozenset({str, int, float, bool, type(None), dict, list, tuple, ToolResult})


def _frozen_or_refused(tool: str, field_name: str, value: Any) -> Any:
    """``freeze_schema(value)``, or the error naming the tool, the field and the place."""
    frozen, refused = freeze_schema(value)
    if refused is not None:
        from .errors import SchemaError

        where, problem = refused
        keyword = next(
            (part for part in reversed(where.split("/")[1:]) if not part.isdigit()), None
        )
        raise SchemaError(
            where,
            keyword,
            f"{field_name} of tool {tool!r} is not JSON here: {problem}. A tool's schemas "
            "travel as JSON (to every provider, in MCP's tools/list): write JSON values only",
        )
    return frozen


def _freeze_json(value: Any) -> Any:
    """A read-only copy of a JSON value as JSON sees it: tuples become (frozen) lists."""
    kind = value.__class__
    if kind is int or kind is str or kind is float or kind is bool or value is None:
        return value  # the common leaves, before the slower isinstance checks below
    if kind is dict:
        return FrozenDict({key: _freeze_json(item) for key, item in value.items()})
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({key: _freeze_json(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList([_freeze_json(item) for item in value])
    return value


def _always_valid(wrapper: Mapping[str, Any]) -> tuple[type, ...]:
    """The exact classes of return value the wrapping output schema inference wrote for a
    scalar annotation (``-> int``: ``{"type": "integer"}``) accepts whatever their value,
    so checking them against it is skipped."""
    inner = wrapper.get("properties", {}).get(OUTPUT_WRAPPER)
    if not isinstance(inner, Mapping) or len(inner) != 1:
        return ()
    return {"integer": (int,), "number": (int, float), "boolean": (bool,)}.get(
        str(inner.get("type")), ()
    )


def _compile_validator(schema: Mapping[str, Any]) -> Validator:
    from .validation import Validator

    return Validator(schema)


_ANY_OBJECT = {"type": "object"}


@sealed
@dataclass(frozen=True, slots=True, eq=False, repr=False)  # its own __repr__ below
class Tool(Generic[P, R]):
    """A function a model can call: a name, a description, a JSON Schema, the function.

    A Tool is itself a contract callable: ``tool(args, ctx=None)`` validates ``args``,
    calls the function and returns a :class:`ToolResult` — it never raises for anything
    a model can cause. Build one with :func:`tool`; construct it directly only for a
    function that already follows the contract ``fn(args, ctx)``. Tools compare by
    identity.

    Attributes:
        name: the name models call it by (sanitized to ``[a-zA-Z0-9_-]``).
        description: what it does, for the model.
        input_schema: a read-only JSON Schema of the arguments object.
        fn: the function itself.
        source: where it comes from (``"native"``, ``"mcp"``, ...).
        title: a human-readable display name (MCP), or None.
        output_schema: a read-only JSON Schema of its structured output (MCP), or None.
        annotations: MCP hints (``readOnlyHint``, ``destructiveHint``,
            ``idempotentHint``, ``openWorldHint``), or None.
        task_support: whether an MCP server may run a call as a task (the tasks
            extension): ``"optional"`` (the default: a call still running after the
            server's ``task_after_ms`` becomes one, for a client that takes tasks),
            ``"required"`` (only as a task: a client without tasks is refused) or
            ``"forbidden"`` (always answered in its request).
        allowed_callers: who may call it: ``"direct"`` (the model; the default) and/or
            ``"programmatic"`` (code the model runs in the provider's code-execution tool).
            A turn's call from a caller not listed is refused before anything runs.
        input_examples: example argument objects shown to the model (Anthropic), each
            checked against ``input_schema`` when the tool is made.
        eager_input_streaming: Anthropic's per-tool eager input streaming, or None (the
            provider's default).
        grammar: a :class:`~toolnexus.Grammar` (Lark or regex): the tool is offered to the
            OpenAI Responses API as a custom tool taking free text in its one ``input: str``
            parameter. A grammar OpenAI would reject (Rust regex syntax without lookaround,
            lazy quantifiers or backreferences; Lark's supported subset) is refused here.
        defer: whether its definition is held back until a search finds it
            (docs/tool-search.md): True, False (always loaded, even in a deferred
            namespace or toolkit), or None (the default: as its namespace, else its
            toolkit, says).
        is_async: True when the function is ``async def``: hosts should prefer
            :meth:`acall` (read-only, worked out from ``fn``).
        takes_context: True when the function receives a :class:`ToolContext`; a host
            builds one per call only for such tools (read-only, worked out from ``fn``).

    With an ``output_schema`` (declared, or inferred by :func:`tool` from the return
    annotation), every successful result carries its JSON value as
    ``metadata["structuredContent"]`` and is checked against the schema: a value that
    does not match becomes an error result naming the path. An inferred schema for a
    value that is not an object wraps it: ``{"result": value}``.

    Example::

        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> add({"a": 2, "b": 3})
        <ToolResult ok '5'>
        >>> add({"a": 2, "b": "3"}).output
        'invalid arguments for \\'add\\': b: expected integer, got string "3"'
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    fn: Callable[P, R]
    source: str = "native"
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    task_support: str = "optional"
    # The providers' advanced tool use (checked in _tool_use.py; written by _adapters.py).
    allowed_callers: tuple[str, ...] = ("direct",)
    input_examples: tuple[Mapping[str, Any], ...] = ()
    eager_input_streaming: bool | None = None
    grammar: Grammar | None = None
    defer: bool | None = None
    _signature: Signature | None = field(default=None, repr=False, compare=False)
    _invoke: Invoke = field(init=False, repr=False, compare=False)
    _errors: Callable[..., list[str]] = field(init=False, repr=False, compare=False)
    _validator: Validator | None = field(init=False, repr=False, compare=False)
    _prepare: Callable[[Any], Any] | None = field(init=False, repr=False, compare=False)
    # Plain attributes, not properties: a host reads both on every call.
    is_async: bool = field(init=False, repr=False, compare=False)
    takes_context: bool = field(init=False, repr=False, compare=False)
    _fixed: frozenset[str] = field(init=False, repr=False, compare=False)
    _wrapped: bool = field(init=False, repr=False, compare=False)
    _output_check: Any = field(init=False, repr=False, compare=False)
    _trusted: tuple[type, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidValueError(f"Tool.name must be a non-empty str, got {self.name!r}")
        set_ = object.__setattr__
        set_(self, "name", sanitize_name(self.name))
        if self.task_support not in _TASK_SUPPORT:
            raise InvalidValueError(
                f"task_support of tool {self.name!r} must be one of "
                f"{', '.join(map(repr, _TASK_SUPPORT))}, got {self.task_support!r}"
            )
        if self.defer is not None and not isinstance(self.defer, bool):
            raise InvalidTypeError(
                f"defer of tool {self.name!r} must be True, False or None, got {self.defer!r}"
            )
        if not isinstance(self.description, str):
            raise InvalidTypeError(
                f"Tool.description must be a str, got {type(self.description).__name__}"
            )
        if not callable(self.fn):
            raise InvalidTypeError(f"Tool.fn must be callable, got {type(self.fn).__name__}")
        schema = self.input_schema
        if not isinstance(schema, Mapping):
            raise InvalidTypeError(
                f"input_schema of tool {self.name!r} must be a JSON Schema object (a dict), "
                f"got {type(schema).__name__}"
            )
        if schema.get("type") != "object":
            raise InvalidValueError(
                f"input_schema of tool {self.name!r} must describe an object "
                f'(\'"type": "object"\' at its root), got type {schema.get("type")!r}; '
                "tool arguments are always a JSON object"
            )
        set_(self, "input_schema", _frozen_or_refused(self.name, "input_schema", schema))
        signature = self._signature
        if (signature is not None and signature.inferred) or schema == _ANY_OBJECT:
            # A schema inference wrote is known to compile (so is the schema of any object):
            # defer the cost, and the import of the validator, to the first call.
            set_(self, "_errors", self._compile_on_first_use)
            set_(self, "_validator", None)
        else:
            validator = _compile_validator(self.input_schema)
            set_(self, "_errors", validator.errors)
            set_(self, "_validator", validator)
        output = self.output_schema
        set_(self, "_output_check", None)
        set_(self, "_wrapped", False)
        set_(self, "_trusted", ())
        inferred = False
        if output is not None:
            if not isinstance(output, Mapping):
                raise InvalidTypeError(
                    f"output_schema of tool {self.name!r} must be a JSON Schema object or None"
                )
            inferred = signature is not None and output == signature.output_schema
            set_(self, "_wrapped", inferred and signature is not None and signature.output_wrapped)
            if self._wrapped:
                set_(self, "_trusted", _always_valid(output))
            set_(self, "output_schema", _frozen_or_refused(self.name, "output_schema", output))
            if inferred:
                # A schema inference wrote is known to compile: defer it to the first result.
                set_(self, "_output_check", _UNCOMPILED)
            else:
                from .validation import Validator

                set_(self, "_output_check", Validator(output))
        if signature is not None:
            # The signature keeps the read-only copies, not the dicts inference built: a tool
            # held each schema twice (the weight of a small tool's definition, measured).
            shared: dict[str, Any] = {"schema": self.input_schema}
            if inferred:
                shared["output_schema"] = self.output_schema
            signature = signature._replace(**shared)
            set_(self, "_signature", signature)
        set_(self, "_fixed", frozenset(signature.fixed) if signature and signature.fixed else _NONE)
        if self.annotations is not None:
            if not isinstance(self.annotations, Mapping):
                raise InvalidTypeError(
                    f"annotations of tool {self.name!r} must be a mapping or None"
                )
            frozen, refused = freeze_schema(self.annotations)
            if refused is not None:
                where, problem = refused
                raise InvalidValueError(
                    f"annotations of tool {self.name!r} are not JSON at {where}: {problem}; "
                    "MCP's tools/list sends them as JSON: write JSON values only"
                )
            set_(self, "annotations", frozen)
        set_(
            self,
            "_invoke",
            _contract_invoke(self.fn) if signature is None else build_invoke(signature),
        )
        set_(self, "_prepare", _null_stripper(self.input_schema))
        self._check_tool_use()
        set_(self, "is_async", _is_async_callable(self.fn))
        set_(
            self,
            "takes_context",
            _contract_takes_ctx(self.fn) if signature is None else signature.ctx_name is not None,
        )

    def _check_tool_use(self) -> None:
        """The advanced-tool-use options, checked (see ``_tool_use.py``)."""
        set_ = object.__setattr__
        set_(self, "allowed_callers", check_callers(self.name, self.allowed_callers))
        if self.input_examples:
            examples = check_examples(self.name, self.input_examples, self._errors)
            set_(self, "input_examples", examples)
        else:
            set_(self, "input_examples", ())
        if self.eager_input_streaming is not None and not isinstance(
            self.eager_input_streaming, bool
        ):
            raise InvalidTypeError(
                f"eager_input_streaming of tool {self.name!r} must be a bool or None, "
                f"got {self.eager_input_streaming!r}"
            )
        if self.grammar is not None:
            check_grammar_tool(self.name, self.grammar, self.input_schema)

    @property
    def _prefix(self) -> str:
        # Only a refusal reads it: not worth a string per tool.
        return f"invalid arguments for {self.name!r}: "

    def _compile_on_first_use(self, instance: Any, token: Any = None) -> list[str]:
        return self._checker().errors(instance, token)

    def _checker(self) -> Validator:
        """The validator of the arguments, compiled now if it was deferred."""
        validator = self._validator
        if validator is None:
            validator = _compile_validator(self.input_schema)
            object.__setattr__(self, "_validator", validator)
            object.__setattr__(self, "_errors", validator.errors)
        return validator

    @property
    def hears_token(self) -> bool:
        """Whether checking this tool's arguments can hear a call's cancellation token
        (:attr:`Validator.hears_token <toolnexus.validation.Validator.hears_token>`: only
        a long check can — a ``pattern``, an array's items, a shared subschema). A host
        gives a call that can be stopped a token and a context when the check hears one
        or the function takes one; otherwise nobody would read them.

        Example::

            add.hears_token      # False: two integers are checked at once
        """
        validator = self._validator  # (a host asks on every call that can be stopped)
        return (validator if validator is not None else self._checker()).hears_token

    def __call__(
        self, args: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Validate ``args``, call the function, and return its normalised result.

        Invalid arguments never reach the function: the result is an error listing every
        problem. An ``async def`` function runs to completion on a private event loop (in
        a helper thread when this thread already runs one).

        Example::

            result = search({"query": "weather"})
        """
        args, refusal = self._admit(args, ctx)
        if refusal is not None:
            return refusal
        return self._run(args, ctx)

    def _run(
        self, args: Any, ctx: ToolContext | None, raised: list[BaseException] | None = None
    ) -> ToolResult:
        """:meth:`__call__` after :meth:`_admit`: call the function with the admitted
        ``args``. What the function raised becomes the error result, and is also appended
        to ``raised`` when given (a retry policy chooses by exception type)."""
        try:
            value = self._invoke(self.fn, args, ctx)
            if self.is_async or (
                value.__class__ not in _NEVER_AWAITABLE and inspect.isawaitable(value)
            ):
                from ._aio import run_awaitable  # the one coroutine runner

                value = run_awaitable(value)
        except ConversionError as exc:
            return self._unconvertible(exc)
        except OperationCancelledError as exc:
            return ToolResult(f"cancelled: {exc}", True)
        except Exception as exc:
            if raised is not None:
                raised.append(exc)
            return self._failed(exc)
        except BaseException as exc:
            if type(exc).__name__ == "CancelledError":  # the tool's own asyncio cancel
                return ToolResult(f"cancelled: {exc or 'the tool was cancelled'}", True)
            raise
        return self._normalise(value)

    def _start_io(
        self, args: Any, ctx: ToolContext | None, done: Callable[[ToolResult], object]
    ) -> object:
        """Package-internal: a call of a function that only starts I/O and returns (its
        ``fn.start_io(args, ctx, done)``: a remote MCP tool), checked as :meth:`__call__`
        checks it — ``args`` admitted first, the value it ends with normalised — with the
        result handed to ``done`` once, on whichever thread ends it. Returns what the
        function returned (what carries its answer), or True once ``done`` has the result
        already; None, having run nothing but the check, when the function must be
        called as usual instead."""
        args, refusal = self._admit(args, ctx)
        if refusal is not None:
            done(refusal)
            return True
        normalise = self._normalise
        start = self.fn.start_io  # type: ignore[attr-defined]
        try:
            return start(args, ctx, lambda value: done(normalise(value)))
        except Exception as exc:
            done(self._failed(exc))
            return True

    def _admit(
        self, args: Mapping[str, Any] | None, ctx: ToolContext | None = None
    ) -> tuple[Any, ToolResult | None]:
        """The arguments as the function will see them, or the error result refusing them.

        Validation hears the call's token: a check still running when the call is
        cancelled (or its deadline passes) stops, and the call ends cancelled."""
        if args is None:
            args = {}
        if self._fixed and not self._fixed.isdisjoint(args):
            names = ", ".join(sorted(self._fixed.intersection(args)))
            return args, ToolResult(
                f"{self._prefix}{names}: set by the tool itself and cannot be given; leave it out",
                True,
            )
        prepare = self._prepare
        if prepare is not None:
            args = prepare(args)
        try:
            problems = self._errors(args, ctx.cancellation_token if ctx else None)
        except OperationCancelledError as exc:
            return args, ToolResult(f"cancelled: {exc}", True)
        if problems:
            if self._signature is not None and self._signature.converters:
                problems = problems + self._conversion_problems(args)
            return args, ToolResult(self._prefix + "; ".join(problems), True)
        return args, None

    def _with_defaults(self, args: Mapping[str, Any]) -> Mapping[str, Any]:
        """``args`` as the tool will act on them: each top-level property the caller left
        out and the input schema gives a ``default`` for, filled in with it (a copy; the
        caller's mapping is never changed). Inference writes a parameter's default there
        (``def deploy(env: str = "prod")``), and a schema given by hand declares its own —
        it is the one record of what a left-out argument means.

        Example::

            deploy._with_defaults({})  # {'env': 'prod'}
        """
        properties = self.input_schema.get("properties")
        if not isinstance(properties, Mapping):
            return args
        missing = {
            name: thaw(prop["default"])
            for name, prop in properties.items()
            if name not in args and isinstance(prop, Mapping) and "default" in prop
        }
        return {**args, **missing} if missing else args

    def _conversion_problems(self, args: Any) -> list[str]:
        """What converting ``args`` (which the schema refused) finds wrong besides: a date
        that does not read as one, say — so a model learns every problem in one answer.
        A dry run: the function is not called, and no dataclass or model is built."""
        token = dry_conversion.set(True)
        try:
            self._invoke(_never_called, args, None)
        except ConversionError as exc:
            return _conversion_texts(exc)
        except Exception:  # the schema already explains what does not fit
            return []
        finally:
            dry_conversion.reset(token)
        return []

    async def acall(
        self, args: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """The async twin of calling the tool: awaits an ``async def`` function natively.

        A sync function is called inline (a host that must not block its loop runs sync
        tools in a worker thread itself).

        Example::

            result = await search.acall({"query": "weather"})
        """
        args, refusal = self._admit(args, ctx)
        if refusal is not None:
            return refusal
        return await self._arun(args, ctx)

    async def _arun(
        self, args: Any, ctx: ToolContext | None, raised: list[BaseException] | None = None
    ) -> ToolResult:
        """:meth:`acall` after :meth:`_admit` (see :meth:`_run`)."""
        try:
            value = self._invoke(self.fn, args, ctx)
            if inspect.isawaitable(value):
                value = await value
        except ConversionError as exc:
            return self._unconvertible(exc)
        except OperationCancelledError as exc:
            return ToolResult(f"cancelled: {exc}", True)
        except Exception as exc:
            if raised is not None:
                raised.append(exc)
            return self._failed(exc)
        return self._normalise(value)

    # ----------------------------------------------------------------- adapters

    def to_openai(self, *, strict: bool = False, api: str = "chat") -> dict[str, Any]:
        """This tool's definition for OpenAI (see :meth:`Toolkit.to_openai
        <toolnexus.Toolkit.to_openai>`): Chat Completions by default, the Responses API
        with ``api="responses"``.

        Example::

            >>> @tool
            ... def add(a: int, b: int) -> int:
            ...     '''Add two integers.'''
            ...     return a + b
            >>> add.to_openai(api="responses")["name"], add.to_openai()["function"]["name"]
            ('add', 'add')
        """
        from ._adapters import openai_tool

        return openai_tool(self, strict=strict, api=api)

    def to_anthropic(
        self,
        *,
        strict: bool = False,
        code_execution: str = "code_execution_20260120",
        cache_control: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """This tool's definition for Anthropic's Messages API (see
        :meth:`Toolkit.to_anthropic <toolnexus.Toolkit.to_anthropic>`), with
        ``"strict": true`` when ``strict``.

        Example::

            client.messages.create(model=..., messages=..., tools=[search.to_anthropic()])
        """
        from ._adapters import anthropic_tool

        return anthropic_tool(
            self, strict=strict, code_execution=code_execution, cache_control=cache_control
        )

    def to_gemini(self, *, schema: str = "json") -> dict[str, Any]:
        """This tool's Gemini function declaration, ``{name, description,
        parametersJsonSchema}`` (``{name, description, parameters}`` with
        ``schema="subset"``; see
        :meth:`Toolkit.to_gemini <toolnexus.Toolkit.to_gemini>`, which groups them as
        ``[{"functionDeclarations": [...]}]``).

        Example::

            config = {"tools": [{"functionDeclarations": [search.to_gemini()]}]}
        """
        from ._adapters import gemini_declaration

        return gemini_declaration(self, schema=schema)

    def to_mcp(self) -> dict[str, Any]:
        """This tool as an entry of an MCP ``tools/list`` reply (see :meth:`Toolkit.to_mcp
        <toolnexus.Toolkit.to_mcp>`).

        Example::

            reply = {"tools": [search.to_mcp()]}
        """
        from ._adapters import mcp_tool

        return mcp_tool(self)

    def _unconvertible(self, exc: ConversionError) -> ToolResult:
        return ToolResult(self._prefix + "; ".join(_conversion_texts(exc)), True)

    def _failed(self, exc: BaseException) -> ToolResult:
        return failure(exc, f"tool {self.name!r}")

    def _normalise(self, value: Any) -> ToolResult:
        kind = value.__class__
        if (
            kind is ToolResult
            or kind is str
            or value is None
            or isinstance(value, (ToolResult, str))
        ):
            if kind is ToolResult or isinstance(value, ToolResult):
                result: ToolResult = value
            elif value is None:
                result = _EMPTY_OK
            else:
                result = success_result(str(value))  # an exact str, whatever the tool returned
            if self._output_check is None or result.is_error:
                return result
            return self._checked(result, value)
        if kind is int:
            text = int.__repr__(value)
        else:
            try:
                text = _encode(value)
            except (TypeError, ValueError):
                try:
                    text = encode_json(value)
                    value = json.loads(text)
                except (TypeError, ValueError) as exc:
                    _log.warning("tool %r returned %s: %s", self.name, kind.__name__, exc)
                    detail = str(exc)
                    detail = "" if detail.startswith(f"{kind.__name__} is") else f" ({detail})"
                    return ToolResult(
                        f"tool {self.name!r} returned a {kind.__qualname__}, which is not "
                        f"JSON-serialisable{detail}; return a str, None, a ToolResult or a "
                        "JSON value (dict, list, number, bool)",
                        True,
                    )
        if self._output_check is None:
            return success_result(text, FrozenDict({STRUCTURED_KEY: _freeze_json(value)}))
        return self._structured(text, value, None)

    def _checked(self, result: ToolResult, value: Any) -> ToolResult:
        """A str, None or ToolResult the function returned, under an output schema."""
        metadata = result.metadata
        structured = metadata.get(STRUCTURED_KEY, _MISSING)
        if value is None or isinstance(value, str):
            structured = value
        elif structured is _MISSING:  # a ToolResult without it: read its text as JSON
            try:
                structured = json.loads(result.output)
            except ValueError:
                structured = result.output if self._wrapped else _MISSING
        if structured is _MISSING:
            return ToolResult(
                f"tool {self.name!r} declares an output schema but returned text that is not "
                "JSON; return the value itself, or a ToolResult with "
                "metadata={'structuredContent': ...}",
                True,
            )
        if not self._wrapped and metadata.get(STRUCTURED_KEY, _MISSING) is structured:
            refusal = self._refusal(structured)
            return result if refusal is None else refusal
        return self._structured(result.output, structured, metadata)

    def _structured(
        self, text: str, structured: Any, metadata: Mapping[str, Any] | None
    ) -> ToolResult:
        """The successful result: ``text``, and ``structured`` (wrapped when the schema
        wraps it) checked against the output schema — or the error naming the path."""
        if self._wrapped:
            value = structured
            if value.__class__ in self._trusted:  # a number or bool: nothing to freeze
                frozen: Any = FrozenDict({OUTPUT_WRAPPER: value})
            else:
                refusal = self._refusal({OUTPUT_WRAPPER: value})
                if refusal is not None:
                    return refusal
                frozen = FrozenDict({OUTPUT_WRAPPER: _freeze_json(value)})
        else:
            refusal = self._refusal(structured)
            if refusal is not None:
                return refusal
            frozen = _freeze_json(structured)
        if metadata is None:
            return success_result(text, FrozenDict({STRUCTURED_KEY: frozen}))
        return ToolResult(text, False, FrozenDict({**metadata, STRUCTURED_KEY: frozen}))

    def _refusal(self, structured: Any) -> ToolResult | None:
        check = self._output_check
        if check is _UNCOMPILED:
            from .validation import Validator

            check = Validator(self.output_schema or {})
            object.__setattr__(self, "_output_check", check)
        if check.is_valid(structured):
            return None
        problems = "; ".join(check.errors(structured))
        _log.warning("tool %r returned output outside its output schema: %s", self.name, problems)
        # A tool made from a description (an OpenAPI operation) says how to turn the check off.
        remedy = getattr(self.fn, "output_schema_remedy", None)
        if not isinstance(remedy, str):
            remedy = "fix the tool's return value or its output_schema"
        return ToolResult(
            f"tool {self.name!r} returned output that does not match its output schema: "
            f"{problems}; {remedy}",
            True,
        )

    def __repr__(self) -> str:
        extra = " async" if self.is_async else ""
        if self.source != "native":
            extra += f" source={self.source!r}"
        return f"<Tool {self.name!r}{extra}>"


# --------------------------------------------------------------------------- calling


def _never_called(*args: Any, **kwargs: Any) -> None:
    """The function a dry run of the arguments' conversion hands them to."""


def _conversion_texts(exc: ConversionError) -> list[str]:
    """``path: problem`` for each problem ``exc`` carries, as the validator words them."""
    from .validation._problems import format_path

    texts = []
    for each in conversion_problems(exc):
        where = format_path(tuple(each.path))
        texts.append(f"{where}: {each.problem}" if where else each.problem)
    return texts


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _contract_takes_ctx(fn: Callable[..., Any]) -> bool:
    """Whether a function given directly to Tool() takes the ``ctx`` of ``fn(args, ctx)``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _contract_invoke(fn: Callable[..., Any]) -> Invoke:
    """How to call a function given directly to Tool(): the contract ``fn(args, ctx)``."""
    if _contract_takes_ctx(fn):
        return lambda fn, args, ctx: fn(args, ctx)
    return lambda fn, args, ctx: fn(args)


def build_invoke(sig: Signature) -> Invoke:
    """The per-call adapter from (args, ctx) to the function's own parameters."""
    ctx_name = sig.ctx_name
    ctx_positional = sig.ctx_positional
    ctx_has_default = sig.ctx_has_default

    if sig.style == "contract":
        convert = sig.converters[0][1] if sig.converters else None
        if ctx_name is None:
            if convert is None:
                return lambda fn, args, ctx: fn(args)
            return lambda fn, args, ctx: fn(convert(args))

        def contract(
            fn: Callable[..., Any], args: Mapping[str, Any], ctx: ToolContext | None
        ) -> Any:
            if convert is not None:
                args = convert(args)
            if ctx is None:
                if ctx_has_default:
                    return fn(args)
                ctx = ToolContext()
            if ctx_positional:
                return fn(args, ctx)
            return fn(args, **{ctx_name: ctx})

        return contract

    # Keyword style. The int-from-float check is inlined: it is the commonest converter.
    float_keys = tuple(key for key, each in sig.converters if each is int_from_float)
    converters = tuple(
        (key, each) for key, each in sig.converters if each is not int_from_float and key != "**"
    )
    extra = next((each for key, each in sig.converters if key == "**"), None)
    positional = sig.positional
    if not float_keys and not converters and extra is None and not positional:
        if ctx_name is None:
            return lambda fn, args, ctx: fn(**args)
        if ctx_has_default:
            return lambda fn, args, ctx: (
                fn(**args) if ctx is None else fn(**args, **{ctx_name: ctx})
            )
        return lambda fn, args, ctx: fn(**args, **{ctx_name: ctx or ToolContext()})
    named = frozenset(key for key, _ in sig.converters) | frozenset(positional) if extra else _NONE

    def keyword(fn: Callable[..., Any], args: Mapping[str, Any], ctx: ToolContext | None) -> Any:
        kwargs: Any = args
        for key in float_keys:
            if args.get(key).__class__ is float:
                if kwargs is args:
                    kwargs = dict(args)
                kwargs[key] = int(args[key])
        if extra is not None:
            others = tuple((key, extra) for key in args if key not in named)
            kwargs = convert_fields(converters + others, kwargs)
        elif converters:
            kwargs = convert_fields(converters, kwargs)
        if ctx_name is not None and not (ctx is None and ctx_has_default):
            kwargs = {**kwargs, ctx_name: ctx or ToolContext()}
        if positional:
            return _call_positional(fn, positional, kwargs)
        return fn(**kwargs)

    return keyword


def _call_positional(fn: Callable[..., Any], positional: Any, kwargs: Mapping[str, Any]) -> Any:
    """``fn(**kwargs)``, the ``positional`` names passed by position (positional-only
    parameters). Apart from the invoker: its comprehension made a cell of every call's
    ``kwargs`` on 3.11."""
    rest = dict(kwargs)
    leading = [rest.pop(name) for name in positional if name in rest]
    return fn(*leading, **rest)


Strip = Callable[[Any], Any]
_PLANNING: Any = object()  # a $ref whose plan is being made (met again: it is recursive)


def _null_stripper(root: Mapping[str, Any]) -> Strip | None:
    """Read ``null`` for an optional property that does not accept null as 'not given'.

    OpenAI's strict mode makes every optional property required-but-nullable, at every
    depth, so a model sends ``null`` for what it leaves out; without this, the validator
    would refuse those nulls. Returns None when the schema has no such property (the
    common case, which then costs nothing per call).

    Follows every place a schema can nest an object: ``properties``,
    ``additionalProperties``, ``items`` and ``prefixItems`` (by position), ``$ref``,
    ``allOf`` (each in turn), and ``anyOf``/``oneOf`` — for those, the first branch whose
    shape fits the value (its type, its required keys, a closed object's known keys) is
    the one followed, so ``Optional[Point]``, ``Point | Line`` and a list of either read
    the same as a plain ``Point``. Returns values unchanged unless a null was dropped (a
    changed value is a copy: the caller's is never modified).
    """
    refs: dict[str, list[Any]] = {}

    def plan(node: Any, depth: int) -> Strip | None:
        if not isinstance(node, Mapping) or depth > 64:
            return None
        steps: list[Strip] = []
        ref = node.get("$ref")
        if isinstance(ref, str):
            cell = refs.get(ref)
            if cell is None:
                cell = refs[ref] = [_PLANNING]
                cell[0] = plan(_pointer(root, ref), depth + 1)
            if cell[0] is _PLANNING:
                # A recursive reference: its plan is finished later, so look it up per call.
                steps.append(lambda value: value if cell[0] is None else cell[0](value))
            elif cell[0] is not None:
                steps.append(cell[0])
        each = _object_plan(node, depth)
        if each is not None:
            steps.append(each)
        each = _array_plan(node, depth)
        if each is not None:
            steps.append(each)
        all_of = node.get("allOf")
        for branch in all_of if isinstance(all_of, list) else ():
            each = plan(branch, depth + 1)
            if each is not None:
                steps.append(each)
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                each = _union_plan(branches, depth)
                if each is not None:
                    steps.append(each)
        return _in_turn(steps)

    def _object_plan(node: Mapping[str, Any], depth: int) -> Strip | None:
        properties = node.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = node.get("required", ())
        drop = tuple(
            key
            for key, sub in properties.items()
            if key not in required and isinstance(sub, Mapping) and not _accepts_null(sub, root)
        )
        inner = tuple(
            (key, each)
            for key, each in ((key, plan(sub, depth + 1)) for key, sub in properties.items())
            if each is not None
        )
        extra = node.get("additionalProperties")
        other = plan(extra, depth + 1) if isinstance(extra, Mapping) else None
        if not drop and not inner and other is None:
            return None

        def strip(value: Any) -> Any:
            if not isinstance(value, Mapping):
                return value
            out: Any = value
            for key in drop:
                if key in value and value[key] is None:
                    if out is value:
                        out = dict(value)
                    del out[key]
            changes = [(key, each, out[key]) for key, each in inner if key in out]
            if other is not None:
                known = properties.keys()
                changes.extend((key, other, item) for key, item in out.items() if key not in known)
            for key, each, old in changes:
                new = each(old)
                if new is not old:
                    if out is value:
                        out = dict(value)
                    out[key] = new
            return out

        return strip

    def _array_plan(node: Mapping[str, Any], depth: int) -> Strip | None:
        prefix = node.get("prefixItems")
        leading = [plan(each, depth + 1) for each in prefix] if isinstance(prefix, list) else []
        items = node.get("items")
        rest = plan(items, depth + 1) if isinstance(items, Mapping) else None
        if rest is None and all(each is None for each in leading):
            return None
        plans = tuple(leading)

        def strip(value: Any) -> Any:
            if not isinstance(value, list):
                return value
            out = []
            for index, item in enumerate(value):
                each = plans[index] if index < len(plans) else rest
                out.append(item if each is None else each(item))
            return value if all(new is old for new, old in zip(out, value, strict=True)) else out

        return strip

    def _union_plan(branches: list[Any], depth: int) -> Strip | None:
        planned = [(branch, plan(branch, depth + 1)) for branch in branches]
        if all(each is None for _, each in planned):
            return None

        def strip(value: Any) -> Any:
            if value is None:
                return value
            for branch, each in planned:
                if _fits(branch, value, root):
                    return value if each is None else each(value)
            return value

        return strip

    return plan(root, 0)


def _in_turn(steps: list[Strip]) -> Strip | None:
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]

    def strip(value: Any) -> Any:
        for each in steps:
            value = each(value)
        return value

    return strip


def _fits(schema: Any, value: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether ``value`` has the shape of union branch ``schema``: its JSON type, and for an
    object its required keys and (when closed) no key it does not know. Cheap and
    structural: it only picks the branch whose nulls are read as 'not given'."""
    if not isinstance(schema, Mapping) or depth > 32:
        return isinstance(schema, bool) and schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and not _fits(_pointer(root, ref), value, root, depth + 1):
        return False
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else None
    if isinstance(value, Mapping):
        if kinds is not None and "object" not in kinds:
            return False
        properties = schema.get("properties")
        closed = schema.get("additionalProperties") is False
        if closed and isinstance(properties, Mapping) and not value.keys() <= properties.keys():
            return False
        required = schema.get("required")
        return not isinstance(required, list) or all(key in value for key in required)
    if isinstance(value, list):
        return kinds is None or "array" in kinds
    return True


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    from ._pointer import MISSING, resolve_reference

    target = resolve_reference(root, ref)
    return None if target is MISSING else target


def _accepts_null(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> bool:
    if depth > 32 or not schema:
        return True
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _pointer(root, ref)
        return not isinstance(target, Mapping) or _accepts_null(target, root, depth + 1)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and not all(
        not isinstance(branch, Mapping) or _accepts_null(branch, root, depth + 1)
        for branch in all_of
    ):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if kind is None and not any(key in schema for key in ("enum", "const", "anyOf", "oneOf")):
        return True
    if "enum" in schema and None in schema["enum"]:
        return True
    if "const" in schema and schema["const"] is None:
        return True
    return any(
        isinstance(branch, Mapping) and _accepts_null(branch, root, depth + 1)
        for branch in [*schema.get("anyOf", ()), *schema.get("oneOf", ())]
    )


# --------------------------------------------------------------------------- @tool


@overload
def tool(
    fn: Tool[P, R],
    /,
    *,
    name: str | None = ...,
    description: str | None = ...,
    input_schema: Mapping[str, Any] | None = ...,
    title: str | None = ...,
    read_only: bool | None = ...,
    destructive: bool | None = ...,
    idempotent: bool | None = ...,
    open_world: bool | None = ...,
    output_schema: Mapping[str, Any] | None = ...,
    task_support: str | None = ...,
    allowed_callers: Sequence[str] | None = ...,
    input_examples: Sequence[Mapping[str, Any]] | None = ...,
    eager_input_streaming: bool | None = ...,
    grammar: Grammar | None = ...,
    defer: bool | None = ...,
) -> Tool[P, R]: ...


@overload
def tool(
    fn: Callable[P, R],
    /,
    *,
    name: str | None = ...,
    description: str | None = ...,
    input_schema: Mapping[str, Any] | None = ...,
    title: str | None = ...,
    read_only: bool | None = ...,
    destructive: bool | None = ...,
    idempotent: bool | None = ...,
    open_world: bool | None = ...,
    output_schema: Mapping[str, Any] | None = ...,
    task_support: str | None = ...,
    allowed_callers: Sequence[str] | None = ...,
    input_examples: Sequence[Mapping[str, Any]] | None = ...,
    eager_input_streaming: bool | None = ...,
    grammar: Grammar | None = ...,
    defer: bool | None = ...,
) -> Tool[P, R]: ...


@overload
def tool(
    fn: None = ...,
    /,
    *,
    name: str | None = ...,
    description: str | None = ...,
    input_schema: Mapping[str, Any] | None = ...,
    title: str | None = ...,
    read_only: bool | None = ...,
    destructive: bool | None = ...,
    idempotent: bool | None = ...,
    open_world: bool | None = ...,
    output_schema: Mapping[str, Any] | None = ...,
    task_support: str | None = ...,
    allowed_callers: Sequence[str] | None = ...,
    input_examples: Sequence[Mapping[str, Any]] | None = ...,
    eager_input_streaming: bool | None = ...,
    grammar: Grammar | None = ...,
    defer: bool | None = ...,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    output_schema: Mapping[str, Any] | None = None,
    task_support: str | None = None,
    allowed_callers: Sequence[str] | None = None,
    input_examples: Sequence[Mapping[str, Any]] | None = None,
    eager_input_streaming: bool | None = None,
    grammar: Grammar | None = None,
    defer: bool | None = None,
) -> Tool[..., Any] | Callable[[Callable[..., Any]], Tool[..., Any]]:
    """Make a :class:`Tool` from a function: bare ``@tool``, ``@tool(...)`` or ``tool(fn)``.

    Two shapes of function are understood:

    * **keyword style** ``def f(a: int, b: int = 0, ctx: ToolContext | None = None)`` —
      one schema property per parameter, inferred from the annotations;
    * **contract style** ``def f(args, ctx=None)`` — the first parameter is named
      ``args`` and the only other one is the context. The schema comes from
      ``input_schema=``, or from ``args``'s annotation (a TypedDict, or a dataclass — the
      function then receives an instance); unannotated, any object is accepted.

    The context parameter is the one annotated ``ToolContext`` (or ``ToolContext |
    None``) or named ``ctx``; it never appears in the schema. The name defaults to the
    function's (sanitized to ``[a-zA-Z0-9_-]``), the description to the docstring's first
    paragraph. ``task_support`` says whether an MCP server may run a call as a task
    (:attr:`Tool.task_support`); ``defer=True`` holds its definition back until a search
    finds it (:attr:`Tool.defer`, docs/tool-search.md). ``title`` and the four hints
    become MCP metadata (``Tool.title``, ``Tool.annotations``). ``allowed_callers``,
    ``input_examples``, ``eager_input_streaming`` and ``grammar`` are the providers'
    advanced tool use (see :class:`Tool` and ``docs/adapters.md``).

    The Tool is typed after the function: ``@tool`` on ``def add(a: int, b: int) -> int``
    gives a ``Tool[[int, int], int]`` whose ``fn`` a type checker sees as
    ``(a: int, b: int) -> int``.

    Raises :class:`~toolnexus._schema.SchemaInferenceError` (a ``TypeError``) at once when
    an annotation has no JSON Schema equivalent, and
    :class:`~toolnexus.validation.SchemaError` (a ``ValueError``) when ``input_schema``
    uses a keyword the validator cannot honour.

    Example::

        >>> @tool(read_only=True)
        ... def greet(name: str, excited: bool = False) -> str:
        ...     '''Say hello.'''
        ...     return f"Hello, {name}{'!' if excited else '.'}"
        >>> greet({"name": "Ada"}).output
        'Hello, Ada.'
        >>> greet.annotations
        {'readOnlyHint': True}
    """
    options = {
        "name": name,
        "description": description,
        "input_schema": input_schema,
        "title": title,
        "output_schema": output_schema,
        "task_support": task_support,
        "allowed_callers": allowed_callers,
        "input_examples": input_examples,
        "eager_input_streaming": eager_input_streaming,
        "grammar": grammar,
        "defer": defer,
        "hints": {
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": idempotent,
            "openWorldHint": open_world,
        },
    }
    if fn is None:

        def decorate(function: Callable[..., Any]) -> Tool[..., Any]:
            return make_tool(function, options, sys._getframe(1))

        return decorate
    return make_tool(fn, options, sys._getframe(1))


def refuse_other_copy(value: object) -> None:
    """Raise ``TypeError`` when ``value`` is a ``Tool``, ``Toolkit`` or ``ToolView`` of
    another loaded copy of this package (say an installed ``toolnexus`` and a vendored
    ``_vendor.toolnexus``).

    Such an object is callable, so without this check it would be wrapped as a tool named
    ``Tool`` whose schema is the class's own; saying so at once, with both locations, is
    the only useful answer.
    """
    cls = type(value)
    # A copy names its package as the class's home (or, in older copies, its module).
    package = cls.__module__
    if package.rpartition(".")[2] in ("tools", "toolkit", "_tools", "_toolkit", "_views"):
        package = package.rpartition(".")[0]
    ours = __name__.rpartition(".")[0]
    if (
        cls.__name__ in ("Tool", "Toolkit", "ToolView")
        and package.rpartition(".")[2] == "toolnexus"
        and package != ours
    ):
        import os

        def where(name: str) -> str:
            file = getattr(sys.modules.get(name), "__file__", None)
            return os.path.dirname(file) if file else "an unknown location"

        raise InvalidTypeError(
            f"this {cls.__name__} comes from another copy of toolnexus: {package!r} at "
            f"{where(package)}, while this code is {ours!r} at {where(ours)}; two copies are "
            "loaded: import tool and Toolkit from the same one"
        )


_TOOL_USE = ("allowed_callers", "input_examples", "eager_input_streaming", "grammar")


def make_tool(fn: Any, options: dict[str, Any], frame: Any) -> Tool:
    """Package-internal: what ``@tool`` (with ``options``) does to ``fn``; ``Toolkit`` uses it
    to accept plain functions. ``frame`` is the caller's, for refs and error locations."""
    hints = {key: value for key, value in options["hints"].items() if value is not None}
    for key, value in hints.items():
        if not isinstance(value, bool):
            raise InvalidTypeError(f"@tool hint {key} must be a bool or None, got {value!r}")
    if isinstance(fn, Tool):
        changes: dict[str, Any] = {}
        for key in (
            "name",
            "description",
            "title",
            "output_schema",
            "task_support",
            "defer",
            *_TOOL_USE,
        ):
            if options.get(key) is not None:
                changes[key] = options[key]
        if hints:
            changes["annotations"] = {**(fn.annotations or {}), **hints}
        if options["input_schema"] is not None:
            raise InvalidTypeError(
                f"tool {fn.name!r} already has a schema; call tool() on its function instead"
            )
        return dataclasses.replace(fn, **changes) if changes else fn
    refuse_other_copy(fn)
    if not callable(fn):
        raise InvalidTypeError(f"tool() takes a function, got {type(fn).__name__}")
    explicit = options["input_schema"]
    if explicit is not None and not isinstance(explicit, Mapping):
        raise InvalidTypeError(
            f"input_schema must be a JSON Schema object (a dict), got {type(explicit).__name__}"
        )
    signature = infer(
        fn,
        schema=explicit,
        localns=(lambda: frame.f_locals) if frame is not None else None,
    )
    name = options["name"]
    if name is None:
        named = fn.func if isinstance(fn, functools.partial) else fn
        name = getattr(named, "__name__", None) or type(named).__name__
    description = options["description"]
    if description is None:
        description = signature.description
    if not isinstance(name, str) or name == "<lambda>" or not sanitize_name(name).strip("_"):
        raise InvalidValueError(
            f"cannot name a tool after {describe_callable(fn)}: give it a name with "
            "@tool(name='...')"
        )
    output_schema = options["output_schema"]
    if output_schema is None:
        output_schema = signature.output_schema
    return Tool(
        name,
        description,
        signature.schema,
        fn,
        title=options["title"],
        output_schema=output_schema,
        annotations=hints or None,
        task_support=options.get("task_support") or "optional",
        defer=options.get("defer"),
        _signature=signature,
        **{key: options[key] for key in _TOOL_USE if options.get(key) is not None},
    )
