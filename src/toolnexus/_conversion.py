"""Conversion: from a validated JSON value to what a function's annotation asks for (Enum
members, dataclass and TypedDict instances, tuples, sets, datetimes, models, ...), built
once per tool by :mod:`toolnexus._schema`'s inference and run with every call; and every
conversion problem of a call collected, so a model learns them all in one answer.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from .errors import ConversionError, FormatError

__all__ = [
    "ClassDef",
    "Converter",
    "collection_converter",
    "conversion_problems",
    "convert_fields",
    "dict_converter",
    "dry_conversion",
    "every_problem",
    "int_from_float",
    "is_dataclass_type",
    "is_model_class",
    "is_typeddict",
    "list_converter",
    "matcher",
    "model_clean",
    "model_converter",
    "text_converter",
    "union_converter",
]

Converter = Callable[[Any], Any]
"""Turns a validated JSON value into what the function's annotation asks for.

A converter returns its argument itself when nothing needs to change, so callers can
skip copying. Example: for a parameter annotated with an Enum, the Enum class itself."""


def is_typeddict(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and issubclass(tp, dict)
        and hasattr(tp, "__required_keys__")
        and hasattr(tp, "__total__")
    )


def is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def int_from_float(value: Any) -> Any:
    """Package-internal (the argument converter of ``int`` parameters, also used by
    tools.py): the validator accepts 3.0 as an integer (JSON has one number type), so the
    function gets the int its annotation promises."""
    return int(value) if value.__class__ is float else value


class ClassDef:
    """One TypedDict or dataclass seen while inferring: its schema and the places using it."""

    __slots__ = ("building", "converter", "name", "recursive", "schema", "uses")

    def __init__(self, name: str) -> None:
        self.name = name
        self.schema: dict[str, Any] = {}
        self.uses = 0
        self.building = True
        self.recursive = False
        self.converter: Converter | None = None


dry_conversion: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "toolnexus_dry_conversion", default=False
)
"""Set while a call the schema refused is converted only to find its conversion problems
too (every problem in one answer): converters then build no dataclass and call no model,
and a value that is not the shape the schema asks for is skipped (the schema reports it)."""
_dry = dry_conversion


class _Several(ConversionError):
    """Several conversion problems of one call, each with its own path."""

    def __init__(self, errors: list[ConversionError]) -> None:
        super().__init__("; ".join(error.problem for error in errors))
        self.errors = errors

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Several, (self.errors,))


def conversion_problems(exc: ConversionError) -> list[ConversionError]:
    """Each problem ``exc`` stands for (one, or all those a converter collected)."""
    return list(exc.errors) if isinstance(exc, _Several) else [exc]


def _placed(exc: ConversionError, where: str | int) -> list[ConversionError]:
    found = conversion_problems(exc)
    for each in found:
        each.path.insert(0, where)
    return found


def _raise_all(errors: list[ConversionError]) -> NoReturn:
    raise errors[0] if len(errors) == 1 else _Several(errors)


def convert_fields(items: tuple[tuple[str, Converter], ...], value: Any) -> Any:
    """The one converter loop over an object's fields (a keyword tool's arguments, a
    TypedDict, a dataclass): ``value`` with each ``(key, converter)`` applied to the keys
    it has, copied only when one changes. Every field is converted before anything is
    raised, so a :class:`ConversionError` carries all the object's problems, each with
    its path; another exception is raised as it is (in a dry run: skipped)."""
    if value.__class__ is not dict and not isinstance(value, Mapping):
        return value  # only a dry run gets here: the schema reports the shape
    out: Any = value
    errors: list[ConversionError] | None = None
    for key, each in items:
        if key in value:
            old = value[key]
            try:
                new = each(old)
            except ConversionError as exc:
                errors = (errors or []) + _placed(exc, key)
                continue
            except Exception:
                if not _dry.get():
                    raise
                continue
            if new is not old:
                if out is value:
                    out = dict(value)
                out[key] = new
    if errors:
        _raise_all(errors)
    return out


def _items_failed(
    exc: Exception,
    value: Any,
    shape: type | tuple[type, ...],
    convert: Converter,
    pairs: Callable[[], Iterable[tuple[str | int, Any]]],
) -> None:
    """A container's conversion raised ``exc``: raise every item's problem with its place."""
    if not isinstance(value, shape):
        if _dry.get():
            return  # not the shape the schema asks for: it says so
        raise exc
    every_problem(exc, ((where, convert, item) for where, item in pairs()))


def every_problem(exc: Exception, triples: Iterable[tuple[str | int, Converter, Any]]) -> None:
    """Re-run a failed conversion item by item — the failure path only, so the happy path
    keeps no bookkeeping — and raise every :class:`ConversionError`, each with its place.
    Another kind of exception is raised as it is; a dry run skips those and returns when
    nothing else went wrong."""
    dry = _dry.get()
    if not isinstance(exc, ConversionError) and not dry:
        raise exc
    errors: list[ConversionError] = []
    for where, convert, item in triples:
        try:
            convert(item)
        except ConversionError as problem:
            errors.extend(_placed(problem, where))
        except Exception:
            if not dry:
                raise
    if errors:
        _raise_all(errors)
    if not dry:
        raise exc


def text_converter(parse: Callable[[str], Any]) -> Converter:
    def convert(value: Any) -> Any:
        if value.__class__ is not str:
            return value  # already the annotated type (a default, or a caller's object)
        try:
            return parse(value)
        except FormatError as exc:
            raise ConversionError(str(exc)) from None

    return convert


def is_model_class(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and callable(getattr(tp, "model_json_schema", None))
        and callable(getattr(tp, "model_validate", None))
    )


def model_clean(node: Any, renames: Mapping[str, str]) -> Any:
    """A model's schema with its references renamed, minus what the validator refuses
    and what only OpenAPI reads (``discriminator``: the union's branches still decide)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "discriminator" and isinstance(value, dict):
                continue
            if key == "$ref" and isinstance(value, str):
                out[key] = renames.get(value, value)
            else:
                out[key] = model_clean(value, renames)
        return out
    if isinstance(node, list):
        return [model_clean(item, renames) for item in node]
    return node


def model_converter(cls: Any) -> Converter:
    def convert(value: Any) -> Any:
        if isinstance(value, cls) or _dry.get():
            # A dry run leaves models alone: their schema already checked the value, and
            # their own validators run once the rest of the call is valid.
            return value
        try:
            return cls.model_validate(value)
        except Exception as exc:
            raise ConversionError(_model_problem(cls, exc)) from None

    return convert


def _model_problem(cls: Any, exc: Exception) -> str:
    """A model's refusal in one line: pydantic's errors() when offered, else its text."""
    listed = getattr(exc, "errors", None)
    details: list[str] = []
    if callable(listed):
        try:
            for error in listed()[:5]:
                where = ".".join(str(part) for part in error.get("loc", ()))
                message = str(error.get("msg", "invalid"))
                details.append(f"{where}: {message}" if where else message)
        except Exception:
            details = []
    text = "; ".join(details) if details else (str(exc).splitlines() or [type(exc).__name__])[0]
    return f"not a valid {cls.__name__} ({text})"


def list_converter(convert: Converter | None) -> Converter | None:
    if convert is None:
        return None
    if convert is int_from_float:
        return _int_list

    def each(value: Any) -> Any:
        try:
            out = [convert(item) for item in value]
        except Exception as exc:
            _items_failed(exc, value, list, convert, lambda: enumerate(value))
            return value
        return value if all(new is old for new, old in zip(out, value, strict=True)) else out

    return each


def _int_list(value: Any) -> Any:
    """``list[int]`` arguments with any ``3.0`` made ``3``, the list itself when none is a float.

    ``sum`` walks the list in C and its total is a float exactly when an item is one, so a
    thousand ints cost one pass at C speed instead of a Python call per item.
    """
    try:
        if sum(value).__class__ is int:
            return value
    except TypeError:
        pass  # not all numbers: convert item by item, leaving the rest alone
    out = [int_from_float(item) for item in value]
    return value if all(new is old for new, old in zip(out, value, strict=True)) else out


def collection_converter(kind: Callable[[Any], Any], convert: Converter | None) -> Converter:
    if convert is None:
        return kind

    def each(value: Any) -> Any:
        try:
            return kind(convert(item) for item in value)
        except Exception as exc:
            _items_failed(exc, value, list, convert, lambda: enumerate(value))
            return value

    return each


def dict_converter(convert: Converter | None) -> Converter | None:
    if convert is None:
        return None

    def each(value: Any) -> Any:
        try:
            return {key: convert(item) for key, item in value.items()}
        except Exception as exc:
            _items_failed(exc, value, Mapping, convert, lambda: value.items())
            return value

    return each


def matcher(
    member: Any, schema: Mapping[str, Any], known: ClassDef | None = None
) -> Callable[[Any], bool]:
    """A cheap test of whether a JSON value belongs to one branch of a union.

    For a TypedDict or dataclass (``known``: what inference wrote for it), the keys are
    read from its inferred schema when the test runs — requiredness as inference read it
    (``__required_keys__`` misses ``NotRequired`` written as a string before 3.14), and a
    recursive class's schema is complete by then."""
    kind = schema.get("type")
    if "enum" in schema:
        allowed = list(schema["enum"])
        return lambda value: any(
            (value == option and type(value) is type(option))
            or (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and isinstance(option, (int, float))
                and value == option
            )
            for option in allowed
        )
    if kind == "integer":
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    if known is not None and (is_typeddict(member) or is_dataclass_type(member)):

        def fits(value: Any) -> bool:
            if not isinstance(value, Mapping):
                return False
            needed = known.schema.get("required", ())
            names = known.schema.get("properties", {})
            return all(key in value for key in needed) and all(key in names for key in value)

        return fits
    if kind == "object" or is_typeddict(member) or is_dataclass_type(member):
        return lambda value: isinstance(value, Mapping)
    if kind == "array":
        return lambda value: isinstance(value, list)
    if kind == "string":
        return lambda value: isinstance(value, str)
    return lambda value: True


def union_converter(
    branches: list[tuple[Callable[[Any], bool], Converter]],
) -> Converter | None:
    if not branches:
        return None

    def convert(value: Any) -> Any:
        if value is None:
            return None
        refused: ConversionError | None = None
        for matches, each in branches:
            if matches(value):
                try:
                    return each(value)
                except ConversionError as exc:  # e.g. date | datetime: the next may read it
                    refused = refused or exc
        if refused is not None:
            raise refused
        return value

    return convert
