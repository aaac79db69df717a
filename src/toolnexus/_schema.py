"""Schema inference: from a Python function's signature to a JSON Schema and a call plan.

Everything that reads type hints and signatures lives here (docstrings are read by
:mod:`toolnexus._docstrings`), and runs once, when a tool is defined. What it produces is
plain data for :mod:`toolnexus._tools`: the tool's input schema, its description, and how
to call the function with a model's arguments (which parameter receives the context, which
arguments are converted into ``Enum`` members, dataclass instances, tuples, sets,
datetimes, models, ...), and the output schema read from the return annotation.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from ._context import ToolContext
from ._conversion import (
    ClassDef,
    Converter,
    collection_converter,
    conversion_problems,
    convert_fields,
    dict_converter,
    dry_conversion,
    every_problem,
    int_from_float,
    is_dataclass_type,
    is_model_class,
    is_typeddict,
    list_converter,
    matcher,
    model_clean,
    model_converter,
    text_converter,
    union_converter,
)
from ._docstrings import parse_docstring
from .errors import ConversionError, SchemaInferenceError

__all__ = [
    "ConversionError",
    "Converter",
    "conversion_problems",
    "convert_fields",
    "dry_conversion",
    "Signature",
    "SchemaInferenceError",
    "describe_callable",
    "infer",
    "parse_docstring",
    "sanitize_name",
]

_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")

OUTPUT_WRAPPER = "result"
"""The one property an output schema wraps a non-object return value in (MCP requires an
object): ``-> int`` advertises ``{"type": "object", "properties": {"result": ...}}``."""


def sanitize_name(name: str) -> str:
    """Replace every character outside ``[a-zA-Z0-9_-]`` with ``_``.

    Example::

        >>> sanitize_name("weather.lookup v2")
        'weather_lookup_v2'
    """
    return _NAME_UNSAFE.sub("_", name)


class Signature(NamedTuple):
    """What inference learned about one function (internal to the tools layer).

    A named tuple, not a dataclass: a server defines it at start-up, and a tuple class is
    made without compiling generated methods (a quarter of a frozen dataclass's cost).

    Attributes:
        style: ``"contract"`` (``fn(args, ctx=None)``) or ``"keyword"`` (one parameter
            per argument).
        schema: the input schema (a plain dict; the Tool freezes it).
        description: the docstring's first paragraph.
        ctx_name: the parameter that receives the ToolContext, or None.
        ctx_positional: True when that parameter can be passed positionally.
        ctx_has_default: True when that parameter has a default (then it is left out
            when there is no context).
        converters: keyword style: ``(parameter, converter)`` pairs for arguments that
            need converting; contract style: at most one pair, for ``args`` itself.
        positional: keyword style: names of positional-only parameters, in order.
        accepts_any_keyword: the function takes ``**kwargs``.
        inferred: True when the schema was inferred (not given as ``input_schema=``).
        fixed: arguments a ``functools.partial`` binds: not in the schema, and refused
            when a caller sends them.
        output_schema: the schema inferred from the return annotation, or None.
        output_wrapped: True when that schema wraps the return value in an object with
            the one property :data:`OUTPUT_WRAPPER` (the value itself is not an object).

    Example::

        >>> def crunch(args: dict, ctx=None): ...
        >>> infer(crunch).style, infer(crunch).ctx_name
        ('contract', 'ctx')
    """

    style: Literal["contract", "keyword"]
    schema: dict[str, Any]
    description: str
    ctx_name: str | None = None
    ctx_positional: bool = False
    ctx_has_default: bool = False
    converters: tuple[tuple[str, Converter], ...] = ()
    positional: tuple[str, ...] = ()
    accepts_any_keyword: bool = False
    inferred: bool = True
    fixed: tuple[str, ...] = ()
    output_schema: dict[str, Any] | None = None
    output_wrapped: bool = False


# --------------------------------------------------------------------------- type rules

_NONE_TYPE = type(None)
_JSON_SCALARS = (str, int, float, bool, _NONE_TYPE)
_ARRAY_ORIGINS = {
    list,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Collection,
    collections.abc.Iterable,
}
_SET_ORIGINS = {set, frozenset, collections.abc.Set, collections.abc.MutableSet}
_MAPPING_ORIGINS = {dict, collections.abc.Mapping, collections.abc.MutableMapping}
_UNION_TYPES: tuple[Any, ...] = (typing.Union, types.UnionType)
_REQUIRED_NAMES = {"Required", "NotRequired", "ReadOnly"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _special_name(form: Any) -> str | None:
    """The name of a typing special form such as Required (from typing or typing_extensions)."""
    name = getattr(form, "_name", None) or getattr(form, "__name__", None)
    return name if isinstance(name, str) else None


def _json_default(value: Any) -> tuple[bool, Any]:
    """A default value as JSON, or (False, None) when JSON cannot carry it."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True, value
    if kind is float:
        return value == value and value not in (float("inf"), float("-inf")), value
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, tuple):
        value = list(value)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False, None
    return True, value


def _is_context_annotation(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if isinstance(annotation, str):
        return "ToolContext" in annotation
    if typing.get_origin(annotation) in _UNION_TYPES:
        return any(arg is ToolContext for arg in typing.get_args(annotation))
    return False


def _same(value: Any) -> Any:
    return value


class _Unsupported(Exception):
    """Internal: carries the reason an annotation cannot be expressed."""


class _Inferrer:
    """Walks annotations once, producing a schema and a converter for each."""

    def __init__(
        self,
        function: str,
        localns: Mapping[str, Any] | None,
        globalns: Mapping[str, Any] | None = None,
    ) -> None:
        self.function = function
        self.localns = dict(localns) if localns else None
        # The namespaces string annotations are read in: the function's module, then
        # the module of each class being read (pushed while its fields are inferred).
        self.scopes: list[tuple[Mapping[str, Any], dict[str, Any]]] = [
            (globalns or {}, dict(self.localns or {}))
        ]
        self.classes: dict[type, ClassDef] = {}
        self.def_names: set[str] = set()
        # Definitions models brought along ($defs of model_json_schema()), by final name.
        self.extra_defs: dict[str, Any] = {}
        # Which schema a model is asked for: what it accepts, or what it returns.
        self.mode = "validation"

    # Each rule returns (schema, converter or None when values pass through unchanged).
    def infer(self, tp: Any) -> tuple[dict[str, Any], Converter | None]:
        if tp is Any or tp is object:
            return {}, None
        if tp is _NONE_TYPE or tp is None:
            return {"type": "null"}, None
        if tp is bool:
            return {"type": "boolean"}, None
        if tp is int:
            return {"type": "integer"}, int_from_float
        if tp is float:
            return {"type": "number"}, None
        if tp is str:
            return {"type": "string"}, None
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return self._enum(tp)
        if isinstance(tp, type):  # one carried as text? (datetime loads with the first)
            from ._formats import text_type

            textual = text_type(tp)
            if textual is not None:
                schema, parse = textual
                return dict(schema), text_converter(parse)
        if is_model_class(tp):
            return self._model(tp)
        if is_typeddict(tp) or is_dataclass_type(tp):
            return self._class(tp)
        supertype = getattr(tp, "__supertype__", None)
        if supertype is not None:  # typing.NewType
            return self.infer(supertype)
        alias_value = getattr(tp, "__value__", None)
        if alias_value is not None and type(tp).__name__ == "TypeAliasType":
            return self.infer(alias_value)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            schema, convert = self.infer(args[0])
            notes = [meta for meta in args[1:] if isinstance(meta, str)]
            if notes:
                schema = {**schema, "description": " ".join(notes)}
            return schema, convert
        if origin in _UNION_TYPES:
            return self._union(args)
        if origin is Literal:
            return self._literal(args)
        if tp in _ARRAY_ORIGINS or origin in _ARRAY_ORIGINS:
            if not args:
                return {"type": "array"}, None
            items, convert = self.infer(args[0])
            return {"type": "array", "items": items}, list_converter(convert)
        if tp in _SET_ORIGINS or origin in _SET_ORIGINS:
            kind = frozenset if (tp is frozenset or origin is frozenset) else set
            if not args:
                return {"type": "array", "uniqueItems": True}, kind
            items, convert = self.infer(args[0])
            return (
                {"type": "array", "items": items, "uniqueItems": True},
                collection_converter(kind, convert),
            )
        if tp is tuple or origin is tuple:
            return self._tuple(args)
        if tp in _MAPPING_ORIGINS or origin in _MAPPING_ORIGINS:
            if not args:
                return {"type": "object"}, None
            key, value = args
            if key is not str and key is not Any:
                raise _Unsupported(
                    f"dict keys must be str (JSON object keys are strings), got {_show(key)}"
                )
            values, convert = self.infer(value)
            return {"type": "object", "additionalProperties": values}, dict_converter(convert)
        if isinstance(tp, (str, typing.ForwardRef)):
            # A forward reference typing left unevaluated (inside list["Node"] on 3.10).
            return self.infer(self._resolve_reference(tp))
        raise _Unsupported(f"{_show(tp)} has no JSON Schema equivalent")

    def _enum(self, cls: type[enum.Enum]) -> tuple[dict[str, Any], Converter | None]:
        values = [member.value for member in cls]
        for value in values:
            if not isinstance(value, _JSON_SCALARS):
                raise _Unsupported(
                    f"enum {cls.__name__} has a value {value!r} that JSON cannot carry "
                    "(use str or int values)"
                )
        types_ = _ordered_types(values)
        schema: dict[str, Any] = {"type": types_[0] if len(types_) == 1 else types_}
        schema["enum"] = values
        return schema, cls

    def _literal(self, values: tuple[Any, ...]) -> tuple[dict[str, Any], Converter | None]:
        plain: list[Any] = []
        members: dict[Any, Any] = {}
        for value in values:
            if isinstance(value, enum.Enum):
                members[value.value] = value
                value = value.value
            if not isinstance(value, _JSON_SCALARS):
                raise _Unsupported(f"Literal value {value!r} is not a JSON scalar")
            plain.append(value)
        types_ = _ordered_types(plain)
        schema = {"type": types_[0] if len(types_) == 1 else types_, "enum": plain}
        if not members:
            return schema, None
        return schema, lambda value: members.get(value, value)

    def _union(self, members: tuple[Any, ...]) -> tuple[dict[str, Any], Converter | None]:
        schemas: list[dict[str, Any]] = []
        branches: list[tuple[Callable[[Any], bool], Converter]] = []
        for member in members:
            schema, convert = self.infer(member)
            schemas.append(schema)
            if convert is not None:
                known = self.classes.get(member) if isinstance(member, type) else None
                branches.append((matcher(member, schema, known), convert))
        return {"anyOf": schemas}, union_converter(branches)

    def _tuple(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Converter | None]:
        if not args:
            return {"type": "array"}, tuple
        if len(args) == 2 and args[1] is Ellipsis:
            items, convert = self.infer(args[0])
            return {"type": "array", "items": items}, collection_converter(tuple, convert)
        if args == ((),):  # tuple[()]: the empty tuple
            return {"type": "array", "maxItems": 0}, tuple
        inferred = [self.infer(arg) for arg in args]
        schema = {
            "type": "array",
            "prefixItems": [item for item, _ in inferred],
            "minItems": len(args),
            "maxItems": len(args),
        }
        converters = [convert or _same for _, convert in inferred]
        if all(convert is None for _, convert in inferred):
            return schema, tuple

        def each(value: Any) -> Any:
            try:
                return tuple(convert(item) for convert, item in zip(converters, value, strict=True))
            except Exception as exc:
                if not isinstance(value, list) or len(value) != len(converters):
                    if dry_conversion.get():
                        return value  # not the shape the schema asks for: it says so
                    raise
                pairs = enumerate(zip(converters, value, strict=True))
                every_problem(exc, ((index, convert, item) for index, (convert, item) in pairs))
                return value

        return schema, each

    def _def_name(self, wanted: str) -> str:
        name = wanted
        suffix = 2
        while name in self.def_names:
            name = f"{wanted}_{suffix}"
            suffix += 1
        self.def_names.add(name)
        return name

    def _model(self, cls: type) -> tuple[dict[str, Any], Converter | None]:
        """A class offering ``model_json_schema()``/``model_validate()`` (pydantic's
        spelling): its own schema, its own validation; pydantic itself is never imported."""
        known = self.classes.get(cls)
        if known is None:
            schema = self._model_schema(cls)
            known = self.classes[cls] = ClassDef(self._def_name(cls.__name__))
            known.schema = schema
            known.converter = model_converter(cls)
            known.building = False
        known.uses += 1
        return {"$ref": f"#/$defs/{known.name}"}, known.converter

    def _model_schema(self, cls: type) -> dict[str, Any]:
        method: Any = cls.model_json_schema  # type: ignore[attr-defined]
        try:
            try:
                raw = method(mode=self.mode)
            except TypeError:
                raw = method()
            # A JSON round trip: a plain, private copy, and proof that JSON can carry it.
            schema = json.loads(json.dumps(raw, allow_nan=False))
        except Exception as exc:
            raise _Unsupported(
                f"{cls.__name__}.model_json_schema() failed ({type(exc).__name__}: {exc})"
            ) from None
        if not isinstance(schema, dict):
            raise _Unsupported(f"{cls.__name__}.model_json_schema() did not return an object")
        defs = schema.pop("$defs", None) or schema.pop("definitions", None) or {}
        renames: dict[str, str] = {}
        for name, sub in defs.items():
            if self.extra_defs.get(name) == sub:
                continue  # the same class, met through another model
            new = self._def_name(name)
            if new != name:
                renames[f"#/$defs/{name}"] = f"#/$defs/{new}"
                renames[f"#/definitions/{name}"] = f"#/$defs/{new}"
            else:
                renames[f"#/definitions/{name}"] = f"#/$defs/{name}"
        for name, sub in defs.items():
            new = renames.get(f"#/$defs/{name}", f"#/$defs/{name}").rsplit("/", 1)[-1]
            self.extra_defs[new] = model_clean(sub, renames)
        result: dict[str, Any] = model_clean(schema, renames)
        return result

    def _class(self, cls: type) -> tuple[dict[str, Any], Converter | None]:
        known = self.classes.get(cls)
        if known is None:
            known = self.classes[cls] = ClassDef(self._def_name(cls.__name__))
            if is_dataclass_type(cls):
                known.schema, known.converter = self._dataclass(cls)
            else:
                known.schema, known.converter = self._typeddict(cls)
            known.building = False
        elif known.building:
            known.recursive = True
        placeholder: dict[str, Any] = {"$ref": f"#/$defs/{known.name}"}
        known.uses += 1
        holder = known

        def convert(value: Any) -> Any:
            # Looked up at call time: a recursive class's converter is set after its uses.
            converter = holder.converter
            return value if converter is None else converter(value)

        needs_conversion = holder.building or holder.converter is not None
        return placeholder, (convert if needs_conversion else None)

    def _hints(self, owner: Any) -> dict[str, Any]:
        try:
            return typing.get_type_hints(owner, localns=self.localns, include_extras=True)
        except Exception as exc:
            name = getattr(owner, "__qualname__", repr(owner))
            raise _Unsupported(
                f"the annotations of {name} could not be resolved ({type(exc).__name__}: {exc});"
                " define the types it names at module level"
            ) from None

    def _fields(
        self,
        cls: type,
        entries: list[tuple[str, Any, bool, bool, Any, str | None]],
    ) -> tuple[dict[str, Any], dict[str, Converter]]:
        """entries: (name, annotation, required, has_default, default, description)."""
        _, documented = parse_docstring(cls.__doc__)
        module = sys.modules.get(cls.__module__)
        self.scopes.append(
            (
                vars(module) if module is not None else {},
                {**(self.localns or {}), cls.__name__: cls},
            )
        )
        try:
            return self._field_schemas(cls, entries, documented)
        finally:
            self.scopes.pop()

    def _resolve_reference(self, ref: str | typing.ForwardRef) -> Any:
        text = ref if isinstance(ref, str) else ref.__forward_arg__
        globalns, localns = self.scopes[-1]
        try:
            return eval(text, dict(globalns), localns)  # what typing.get_type_hints does
        except Exception:
            raise _Unsupported(f"the annotation {text!r} could not be resolved") from None

    def _field_schemas(
        self,
        cls: type,
        entries: list[tuple[str, Any, bool, bool, Any, str | None]],
        documented: Mapping[str, str],
    ) -> tuple[dict[str, Any], dict[str, Converter]]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        converters: dict[str, Converter] = {}
        for name, annotation, is_required, has_default, default, note in entries:
            try:
                schema, convert = self.infer(annotation)
            except _Unsupported as exc:
                raise _Unsupported(f"field {cls.__name__}.{name}: {exc}") from None
            schema = _with_extras(schema, note or documented.get(name), has_default, default)
            properties[name] = schema
            if is_required:
                required.append(name)
            if convert is not None:
                converters[name] = convert
        schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema, converters

    def _typeddict(self, cls: type) -> tuple[dict[str, Any], Converter | None]:
        hints = self._hints(cls)
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        entries = []
        for name, annotation in hints.items():
            # Requiredness from the evaluated hints: __required_keys__ misses
            # Required/NotRequired written as strings (postponed annotations, 3.11-3.13).
            is_required = name in required_keys
            note = None
            while True:
                origin = typing.get_origin(annotation)
                wrapper = _special_name(origin) if origin is not None else None
                if origin is typing.Annotated:
                    args = typing.get_args(annotation)
                    notes = [meta for meta in args[1:] if isinstance(meta, str)]
                    note = " ".join(notes) or note
                    annotation = args[0]
                elif wrapper in _REQUIRED_NAMES:
                    if wrapper == "Required":
                        is_required = True
                    elif wrapper == "NotRequired":
                        is_required = False
                    annotation = typing.get_args(annotation)[0]
                else:
                    break
            entries.append((name, annotation, is_required, False, None, note))
        schema, converters = self._fields(cls, entries)
        if not converters:
            return schema, None
        items = tuple(converters.items())
        return schema, lambda value: convert_fields(items, value)

    def _dataclass(self, cls: type) -> tuple[dict[str, Any], Converter | None]:
        hints = self._hints(cls)
        entries = []
        for each in dataclasses.fields(cls):
            if not each.init:
                continue
            has_default = each.default is not dataclasses.MISSING
            is_required = not has_default and each.default_factory is dataclasses.MISSING
            note = each.metadata.get("description") if each.metadata else None
            entries.append(
                (
                    each.name,
                    hints.get(each.name, Any),
                    is_required,
                    has_default,
                    each.default if has_default else None,
                    note if isinstance(note, str) else None,
                )
            )
        schema, converters = self._fields(cls, entries)
        items = tuple(converters.items())

        def build(value: Any) -> Any:
            if isinstance(value, cls):
                return value
            kwargs = convert_fields(items, value) if items else value
            if dry_conversion.get():
                return value  # a dry run checks the fields; it never builds the class
            return cls(**kwargs)

        return schema, build

    def finish(self, root: dict[str, Any]) -> dict[str, Any]:
        """Inline classes used once; keep shared and recursive ones under ``$defs``."""
        if not self.classes:
            return root
        inline: dict[str, dict[str, Any]] = {}
        defs: dict[str, Any] = {}
        for known in self.classes.values():
            if known.uses == 1 and not known.recursive:
                inline[f"#/$defs/{known.name}"] = known.schema
            else:
                defs[known.name] = known.schema

        def walk(node: Any) -> Any:
            if isinstance(node, dict):
                ref = node.get("$ref")
                if ref in inline:
                    # Keep what the use added beside the reference (a description, a default).
                    node = {**inline[ref], **{k: v for k, v in node.items() if k != "$ref"}}
                return {key: walk(value) for key, value in node.items()}
            if isinstance(node, list):
                return [walk(value) for value in node]
            return node

        root = walk(root)
        defs.update(self.extra_defs)
        if defs:
            root["$defs"] = {name: walk(schema) for name, schema in defs.items()}
        return root


def _show(tp: Any) -> str:
    if isinstance(tp, type):
        if tp.__module__ == "builtins":
            return tp.__qualname__
        return f"{tp.__module__}.{tp.__qualname__}"
    if isinstance(tp, typing.ForwardRef):
        return repr(tp.__forward_arg__)
    if isinstance(tp, str):
        return repr(tp)
    return repr(tp).replace("typing.", "")


def _ordered_types(values: list[Any]) -> list[str]:
    seen: list[str] = []
    for value in values:
        kind = _json_type(value)
        if kind not in seen:
            seen.append(kind)
    if "integer" in seen and "number" in seen:
        seen.remove("integer")
    return seen


def _with_extras(
    schema: dict[str, Any], note: str | None, has_default: bool, default: Any
) -> dict[str, Any]:
    if not note and not has_default:
        return schema
    out = dict(schema)
    if note and "description" not in out:
        out["description"] = note
    if has_default:
        representable, value = _json_default(default)
        if representable:
            out["default"] = value
    return out


# --------------------------------------------------------------------------- functions


def describe_callable(fn: Callable[..., Any]) -> str:
    """A readable name for error messages: ``module.qualname``.

    Example::

        >>> describe_callable(describe_callable)
        'toolnexus._schema.describe_callable'
    """
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if qualname is None:
        qualname = type(fn).__qualname__
    return f"{module}.{qualname}" if module and module != "builtins" else str(qualname)


def _signature(fn: Callable[..., Any], where: str) -> inspect.Signature:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise SchemaInferenceError(where, None, f"its signature cannot be read ({exc})") from None


_POSITIONAL_ONLY = inspect.Parameter.POSITIONAL_ONLY
_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD
_VAR_POSITIONAL = inspect.Parameter.VAR_POSITIONAL
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
_VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD
_EMPTY = inspect.Parameter.empty
_POSITIONAL = (_POSITIONAL_ONLY, _POSITIONAL_OR_KEYWORD)


class _Param:
    """One parameter: what inspect.Parameter says, in plain attributes (cheaper to read)."""

    __slots__ = ("default", "kind", "name")

    def __init__(self, name: str, kind: Any, default: Any) -> None:
        self.name = name
        self.kind = kind
        self.default = default


def _parameters(fn: Callable[..., Any], where: str) -> list[_Param]:
    """The parameters of ``fn``, read from its code object when it is a plain function
    or method (several times faster than inspect.signature), else from the signature."""
    function: Any = fn
    skip = 0
    if inspect.ismethod(fn):
        function, skip = fn.__func__, 1
    if (
        inspect.isfunction(function)
        and not hasattr(function, "__wrapped__")
        and not hasattr(function, "__signature__")
    ):
        code = function.__code__
        names = code.co_varnames
        count, keyword_only = code.co_argcount, code.co_kwonlyargcount
        defaults = function.__defaults__ or ()
        keyword_defaults = function.__kwdefaults__ or {}
        first_default = count - len(defaults)
        params = [
            _Param(
                names[index],
                _POSITIONAL_ONLY if index < code.co_posonlyargcount else _POSITIONAL_OR_KEYWORD,
                defaults[index - first_default] if index >= first_default else _EMPTY,
            )
            for index in range(count)
        ]
        index = count + keyword_only
        if code.co_flags & inspect.CO_VARARGS:
            params.append(_Param(names[index], _VAR_POSITIONAL, _EMPTY))
            index += 1
        params.extend(
            _Param(name, _KEYWORD_ONLY, keyword_defaults.get(name, _EMPTY))
            for name in names[count : count + keyword_only]
        )
        if code.co_flags & inspect.CO_VARKEYWORDS:
            params.append(_Param(names[index], _VAR_KEYWORD, _EMPTY))
        return params[skip:]
    signature = _signature(fn, where)
    return [_Param(p.name, p.kind, p.default) for p in signature.parameters.values()]


def infer(
    fn: Callable[..., Any],
    *,
    schema: Mapping[str, Any] | None = None,
    localns: Callable[[], Mapping[str, Any] | None] | None = None,
    contract_names: tuple[str, ...] = ("args",),
) -> Signature:
    """Read ``fn``'s signature: its calling style, context parameter, schema and converters.

    With ``schema`` given, no schema is inferred (annotations are read only to find the
    context parameter); the keyword-style parameters are checked against the schema's
    properties. ``localns`` supplies the defining scope's names, tried when an annotation
    does not resolve in the function's module (a tool defined inside a function).
    ``contract_names``: what the first parameter of a contract-style function may be
    called (a resource's is ``params``).

    Raises :class:`SchemaInferenceError` naming the function, the parameter and the fix.

    Example::

        >>> def add(a: int, b: int = 0) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> sig = infer(add)
        >>> sig.style, sig.schema["required"], sig.description
        ('keyword', ['a'], 'Add two integers.')
    """
    where = describe_callable(fn)
    params = _parameters(fn, where)
    target: Any = fn
    fixed: tuple[str, ...] = ()
    if isinstance(fn, functools.partial):
        target = fn.func
        # What the partial binds is the tool's own business: never shown to a model (a
        # bound api_key would leak as a "default") and never set by one — by keyword, or
        # positionally (a **kwargs function would otherwise take the name a second time).
        params = [param for param in params if param.name not in fn.keywords]
        left = {param.name for param in params}
        positional = [
            param.name
            for param in _parameters(fn.func, where)
            if param.name not in left
            and param.name not in fn.keywords
            and param.kind in _POSITIONAL
        ]
        fixed = (*fn.keywords, *positional)
    elif not (inspect.isfunction(fn) or inspect.ismethod(fn) or isinstance(fn, type)):
        target = type(fn).__call__  # a callable object: its annotations are on __call__
    hints = _function_hints(target, where, localns, need=schema is None)
    globalns = getattr(inspect.unwrap(target), "__globals__", None)
    if inspect.isfunction(fn):
        doc = fn.__doc__
    elif isinstance(fn, functools.partial):
        doc = inspect.getdoc(target)  # not the docstring of functools.partial itself
    else:
        doc = inspect.getdoc(fn)
    if not doc and target is not fn:
        doc = inspect.getdoc(target)  # a callable object documents its __call__
    description, documented = parse_docstring(doc)
    output, wrapped = _output_schema(hints.get("return"), where, localns, globalns)
    extra: dict[str, Any] = {"fixed": fixed, "output_schema": output, "output_wrapped": wrapped}

    ctx_param: _Param | None = None
    others: list[_Param] = []
    raw = getattr(target, "__annotations__", None) or {}
    for param in params:
        annotation = hints.get(param.name, raw.get(param.name))
        if param.kind is _VAR_POSITIONAL or param.kind is _VAR_KEYWORD:
            others.append(param)
        elif ctx_param is None and (param.name == "ctx" or _is_context_annotation(annotation)):
            ctx_param = param
        else:
            others.append(param)
    # What every Signature of this function carries besides its style and schema.
    ctx: dict[str, Any] = {
        "ctx_name": None,
        "ctx_positional": False,
        "ctx_has_default": False,
        **extra,
    }
    if ctx_param is not None:
        ctx["ctx_name"] = ctx_param.name
        ctx["ctx_positional"] = ctx_param.kind in _POSITIONAL
        ctx["ctx_has_default"] = ctx_param.default is not _EMPTY

    # Contract style: the first parameter is `args`, nothing else but the context, and
    # `args` is (or may be) an object. `def run(args: list[str])` stays keyword style.
    if (
        len(others) == 1
        and others[0].name in contract_names
        and others[0].kind in _POSITIONAL
        and params[0] is others[0]
        and (schema is not None or _is_object_annotation(hints.get(others[0].name, Any)))
    ):
        return _contract(others[0], hints, where, schema, description, localns, ctx, globalns)
    return _keyword(others, hints, documented, where, schema, description, localns, ctx, globalns)


def _mentions(annotation: Any, names: frozenset[str], depth: int = 0) -> bool:
    if depth > 16:
        return False
    if getattr(annotation, "__name__", None) in names:
        return True
    if isinstance(annotation, str):
        return any(name in annotation for name in names)
    return any(_mentions(arg, names, depth + 1) for arg in typing.get_args(annotation))


_SCALAR_OUTPUTS: dict[Any, str] = {int: "integer", float: "number", bool: "boolean"}

# A return annotation naming one of these says nothing about the structured output.
_NOT_OUTPUT = frozenset(
    {
        "ToolResult",
        "Awaitable",
        "Coroutine",
        "Iterator",
        "Generator",
        "AsyncIterator",
        "AsyncGenerator",
        "Iterable",
        "NoReturn",
        "Never",
    }
)


def _output_schema(
    annotation: Any,
    where: str,
    localns: Callable[[], Mapping[str, Any] | None] | None,
    globalns: Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, bool]:
    """The output schema a return annotation promises: ``(schema, wrapped)``, or
    ``(None, False)`` when it promises none (no annotation, ``None``, ``Any``, ``str``, a
    :class:`ToolResult`) or none can be inferred (the tool then simply has no output
    schema: a return annotation never stops a tool from being defined).

    A value that is not a JSON object is wrapped, as MCP requires an object:
    ``-> int`` gives ``{"type": "object", "properties": {"result": {"type": "integer"}},
    "required": ["result"]}``.
    """
    if annotation is None or annotation is Any or annotation is object or annotation is str:
        return None, False  # a str is the text content itself: nothing to structure
    scalar = _SCALAR_OUTPUTS.get(annotation) if isinstance(annotation, type) else None
    if scalar is not None:  # the commonest returns, without an inferrer
        return {
            "type": "object",
            "properties": {OUTPUT_WRAPPER: {"type": scalar}},
            "required": [OUTPUT_WRAPPER],
        }, True
    if annotation is _NONE_TYPE or _mentions(annotation, _NOT_OUTPUT):
        return None, False
    inferrer = _Inferrer(where, _scope(localns), globalns)
    inferrer.mode = "serialization"
    try:
        schema, _ = inferrer.infer(annotation)
        schema = inferrer.finish(schema)
    except Exception:  # _Unsupported, or a class whose schema cannot be read
        return None, False
    if "$ref" in schema and "$defs" in schema and len(schema) == 2:
        defs = schema["$defs"]
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1])
        if isinstance(target, dict) and target.get("type") == "object":
            schema = {**target, "$defs": defs}
    if schema.get("type") == "object":
        return schema, False
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {OUTPUT_WRAPPER: schema},
        "required": [OUTPUT_WRAPPER],
    }
    if defs:
        wrapped["$defs"] = defs
    return wrapped, True


def _is_object_annotation(annotation: Any) -> bool:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return (
        annotation is Any
        or annotation in _MAPPING_ORIGINS
        or typing.get_origin(annotation) in _MAPPING_ORIGINS
        or is_typeddict(annotation)
        or is_dataclass_type(annotation)
        or is_model_class(annotation)
    )


_ANNOTATION_CODE: dict[str, types.CodeType] = {}


def _evaluate_annotations(target: Any, raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """A function's annotations, evaluated as ``get_type_hints(include_extras=True)`` would
    for a plain function; None when this simple path does not apply (the caller then
    asks typing, which also explains failures).

    Postponed annotations are compiled once per distinct string: typing compiles them
    again on every call, which was most of the cost of inferring a small tool.
    """
    if not inspect.isfunction(target) or hasattr(target, "__wrapped__"):
        return None
    globalns = target.__globals__
    hints: dict[str, Any] = {}
    try:
        for name, annotation in raw.items():
            if isinstance(annotation, str):
                code = _ANNOTATION_CODE.get(annotation)
                if code is None:
                    if len(_ANNOTATION_CODE) > 4096:
                        _ANNOTATION_CODE.clear()
                    code = _ANNOTATION_CODE[annotation] = compile(
                        annotation, "<annotation>", "eval"
                    )
                annotation = eval(code, globalns)  # what typing.get_type_hints does
            if annotation is None:
                annotation = _NONE_TYPE
            elif isinstance(annotation, (str, typing.ForwardRef)):
                return None
            hints[name] = annotation
    except Exception:
        return None
    return hints


def _function_hints(
    target: Any,
    where: str,
    localns: Callable[[], Mapping[str, Any] | None] | None,
    *,
    need: bool,
) -> dict[str, Any]:
    raw = getattr(target, "__annotations__", None)
    if not raw:
        return {}
    fast = _evaluate_annotations(target, raw)
    if fast is not None:
        return fast
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as first:
        scope = localns() if localns is not None else None
        if scope:
            try:
                return typing.get_type_hints(target, localns=dict(scope), include_extras=True)
            except Exception:
                pass
        if not need:
            return {}
        # Name the parameter at fault: evaluate the annotations one by one.
        globalns = dict(getattr(inspect.unwrap(target), "__globals__", {}))
        for parameter, annotation in raw.items():
            if not isinstance(annotation, str):
                continue
            try:
                eval(annotation, globalns, dict(scope or {}))  # what get_type_hints does
            except Exception as exc:
                raise SchemaInferenceError(
                    where,
                    None if parameter == "return" else parameter,
                    f"the annotation {annotation!r} could not be resolved "
                    f"({type(exc).__name__}: {exc})",
                ) from None
        raise SchemaInferenceError(
            where,
            None,
            f"its annotations could not be resolved ({type(first).__name__}: {first})",
        ) from None


def _contract(
    param: _Param,
    hints: Mapping[str, Any],
    where: str,
    schema: Mapping[str, Any] | None,
    description: str,
    localns: Callable[[], Mapping[str, Any] | None] | None,
    ctx: dict[str, Any],
    globalns: Mapping[str, Any] | None,
) -> Signature:
    if schema is not None:
        return Signature("contract", dict(schema), description, inferred=False, **ctx)
    annotation = hints.get(param.name, Any)
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if (
        annotation is Any
        or annotation in _MAPPING_ORIGINS
        or (origin in _MAPPING_ORIGINS and typing.get_args(annotation)[1:] in ((Any,), (object,)))
    ):
        return Signature("contract", {"type": "object"}, description, **ctx)
    inferrer = _Inferrer(where, _scope(localns), globalns)
    try:
        root, convert = inferrer.infer(annotation)
    except _Unsupported as exc:
        raise SchemaInferenceError(where, param.name, str(exc)) from None
    root = inferrer.finish(root)
    if "$ref" in root:  # the root class is recursive: its schema lives in $defs
        defs = root["$defs"]
        root = {**defs[root["$ref"].rsplit("/", 1)[-1]], "$defs": defs}
    converters = (("args", convert),) if convert is not None else ()
    return Signature("contract", root, description, converters=converters, **ctx)


def _scope(
    localns: Callable[[], Mapping[str, Any] | None] | None,
) -> Mapping[str, Any] | None:
    return localns() if localns is not None else None


def _keyword(
    params: list[_Param],
    hints: Mapping[str, Any],
    documented: Mapping[str, str],
    where: str,
    schema: Mapping[str, Any] | None,
    description: str,
    localns: Callable[[], Mapping[str, Any] | None] | None,
    ctx: dict[str, Any],
    globalns: Mapping[str, Any] | None,
) -> Signature:
    positional = tuple(p.name for p in params if p.kind is _POSITIONAL_ONLY)
    accepts_any = any(p.kind is _VAR_KEYWORD for p in params)
    for param in params:
        if param.kind is _VAR_POSITIONAL:
            raise SchemaInferenceError(
                where,
                param.name,
                "*args has no place in a JSON object of named arguments; take a list "
                "parameter instead",
            )
    if schema is not None:
        names = {p.name for p in params if p.kind is not _VAR_KEYWORD}
        declared = schema.get("properties")
        if isinstance(declared, Mapping) and not accepts_any:
            unknown = [key for key in declared if key not in names]
            if unknown:
                raise SchemaInferenceError(
                    where,
                    unknown[0],
                    f"input_schema has properties the function does not take "
                    f"({', '.join(unknown)}); rename them or add the parameters",
                )
        return Signature(
            "keyword",
            dict(schema),
            description,
            positional=positional,
            accepts_any_keyword=accepts_any,
            inferred=False,
            **ctx,
        )

    inferrer = _Inferrer(where, _scope(localns), globalns)
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: list[tuple[str, Converter]] = []
    extra: dict[str, Any] | bool = False
    for param in params:
        annotation = hints.get(param.name, Any)
        has_default = param.default is not _EMPTY
        try:
            prop, convert = inferrer.infer(annotation)
        except _Unsupported as exc:
            raise SchemaInferenceError(where, param.name, str(exc)) from None
        if param.kind is _VAR_KEYWORD:
            extra = prop if prop else True
            if convert is not None:
                converters.append(("**", convert))
            continue
        if has_default and param.default is None and not _admits_null(prop):
            # A None default is a value the function accepts, so the schema says so too.
            prop = {"anyOf": [prop, {"type": "null"}]}
        prop = _with_extras(prop, documented.get(param.name), has_default, param.default)
        properties[param.name] = prop
        if not has_default:
            required.append(param.name)
        if convert is not None:
            converters.append((param.name, convert))
    root: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        root["required"] = required
    root["additionalProperties"] = extra
    return Signature(
        "keyword",
        inferrer.finish(root),
        description,
        converters=tuple(converters),
        positional=positional,
        accepts_any_keyword=accepts_any,
        **ctx,
    )


def _admits_null(schema: Mapping[str, Any]) -> bool:
    if not schema:
        return True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "enum" in schema and None in schema["enum"]:
        return True
    return any(_admits_null(branch) for branch in schema.get("anyOf", ()))
