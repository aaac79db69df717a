"""OpenAI strict mode and validation agree on every nesting (issue 24, item 1).

Strict mode lists every property as required and makes an optional one nullable, at every
depth, so a model that leaves an optional value out sends ``null``. For every optional shape
schema inference writes, the round trip "strict schema -> what a model sends -> the tool"
must accept the call, the nulls reading as "not given" (the default applies).

``model_sends`` plays the model: it answers a strict schema the way strict decoding does
(every property present; ``null`` where it may leave something out), going inside an
optional object or array instead of leaving it out when ``deep`` is set, so nulls nested
inside optional objects, lists and unions are exercised too.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Literal, Optional, TypedDict, Union

import pytest

from toolnexus import Tool, tool
from toolnexus._pointer import MISSING, resolve_reference
from toolnexus.validation import Validator

SAMPLE_TEXT = {
    "date-time": "2026-05-01T09:30:00Z",
    "date": "2026-05-01",
    "time": "09:30:00",
    "duration": "PT1H",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "email": "ada@example.com",
}


def model_sends(schema: Any, root: dict[str, Any], *, deep: bool, depth: int = 0) -> Any:
    """A value for ``schema`` as a strict-mode model writes it."""
    if not isinstance(schema, dict):
        return "x"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = resolve_reference(root, ref)
        assert target is not MISSING, ref
        return model_sends(target, root, deep=deep, depth=depth + 1)
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        real = [each for each in branches if each != {"type": "null"}]
        if len(real) < len(branches) and (not deep or depth > 8 or not _nests(real[0], root)):
            return None  # what a model leaves out
        return model_sends(real[0], root, deep=deep, depth=depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        return {
            key: model_sends(sub, root, deep=deep, depth=depth + 1)
            for key, sub in schema.get("properties", {}).items()
        }
    if kind == "array":
        items = schema.get("items", {})
        count = max(schema.get("minItems", 1), 1)
        choices = items.get("anyOf") if isinstance(items, dict) else None
        if isinstance(choices, list) and count > 1:  # a tuple: strict lists its items in order
            return [model_sends(each, root, deep=deep, depth=depth + 1) for each in choices]
        return [model_sends(items, root, deep=deep, depth=depth + 1) for _ in range(count)]
    if kind == "string":
        return SAMPLE_TEXT.get(schema.get("format", ""), "text")
    return {"integer": 1, "number": 1.5, "boolean": True, "null": None}.get(kind, "x")


def _nests(schema: Any, root: dict[str, Any]) -> bool:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        schema = resolve_reference(root, schema["$ref"])
    return isinstance(schema, dict) and schema.get("type") in ("object", "array")


# ----------------------------------------------------------------- the shapes inference writes


class Unit(enum.Enum):
    METRIC = "metric"
    IMPERIAL = "imperial"


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0
    label: str = "origin"


@dataclasses.dataclass(frozen=True)
class Tag:
    name: str
    weight: int = 1


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)
    next: Node | None = None
    note: str = ""


class Window(TypedDict, total=False):
    start: str
    days: int


class _QueryText(TypedDict):
    text: str


class Query(_QueryText, total=False):  # NotRequired needs 3.11; this is the 3.10 spelling
    limit: int
    window: Window
    near: Point


@dataclasses.dataclass
class Line:
    start: Point
    end: Point
    width: int = 1


SEEN: dict[str, Any] = {}


def _record(name: str, **values: Any) -> str:
    SEEN[name] = values
    return "ok"


@tool
def keyword_defaults(
    text: str, count: int = 3, unit: Unit = Unit.METRIC, mode: Literal["a", "b"] = "a"
) -> str:
    """Scalars with defaults."""
    return _record("keyword_defaults", count=count, unit=unit, mode=mode)


@tool
def optional_dataclass(point: Optional[Point] = None, other: Point | None = None) -> str:  # noqa: UP045
    """An optional dataclass, two spellings."""
    return _record("optional_dataclass", point=point, other=other)


@tool
def optional_typeddict(query: Optional[Query] = None) -> str:  # noqa: UP045
    """An optional TypedDict holding optional objects."""
    return _record("optional_typeddict", query=query)


@tool
def lists_of_objects(points: list[Point], maybe: list[Point | None] | None = None) -> str:
    """Lists of dataclasses, with optional items."""
    return _record("lists_of_objects", points=points, maybe=maybe)


@tool
def tuples_and_sets(pair: tuple[Point, int], tags: frozenset[Tag] = frozenset()) -> str:
    """A fixed tuple of an object and a number; a set of frozen dataclasses."""
    return _record("tuples_and_sets", pair=pair, tags=tags)


@tool
def recursive(tree: Node) -> str:
    """A recursive dataclass (under $defs)."""
    return _record("recursive", tree=tree)


@tool
def unions(shape: Union[Point, Line], fallback: Point | Line | None = None) -> str:  # noqa: UP007
    """A union of two dataclasses, plain and optional."""
    return _record("unions", shape=shape, fallback=fallback)


@tool
def contract_style(args: Query) -> str:
    """The whole arguments object is a TypedDict."""
    return _record("contract_style", args=args)


@tool
def shared_definitions(first: Line, second: Line | None = None, many: list[Line] = []) -> str:  # noqa: B006
    """The same dataclass in several places: one definition under $defs."""
    return _record("shared_definitions", first=first, second=second, many=many)


SHAPES: list[Tool] = [
    keyword_defaults,
    optional_dataclass,
    optional_typeddict,
    lists_of_objects,
    tuples_and_sets,
    recursive,
    unions,
    contract_style,
    shared_definitions,
]


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.name)
def test_what_a_strict_model_sends_for_each_optional_shape_is_accepted(shape: Tool, deep: bool):
    strict = shape.to_openai(strict=True)["function"]["parameters"]
    sent = model_sends(strict, strict, deep=deep)
    # The stand-in model writes only what the strict schema allows ...
    assert Validator(strict).errors(sent) == []
    # ... and the tool takes it: every null it sent for an optional value is "not given".
    result = shape(sent)
    assert not result.is_error, (sent, result.output)


def test_nulls_inside_an_optional_dataclass_read_as_its_defaults():
    result = optional_dataclass(
        {"point": {"x": 2, "y": None, "label": None}, "other": {"x": 1, "y": 5, "label": None}}
    )
    assert result.output == "ok", result.output
    assert SEEN["optional_dataclass"] == {
        "point": Point(2, 0.0, "origin"),
        "other": Point(1, 5, "origin"),
    }


def test_nulls_inside_an_optional_typeddict_are_left_out_of_it():
    sent = {
        "query": {
            "text": "rain",
            "limit": None,
            "window": {"start": None, "days": 3},
            "near": {"x": 1, "y": None, "label": None},
        }
    }
    assert optional_typeddict(sent).output == "ok"
    assert SEEN["optional_typeddict"] == {
        "query": {"text": "rain", "window": {"days": 3}, "near": Point(1, 0.0, "origin")}
    }


def test_nulls_in_lists_tuples_and_recursive_objects_read_as_defaults():
    assert lists_of_objects(
        {"points": [{"x": 1, "y": None, "label": None}], "maybe": [None, {"x": 2, "y": None}]}
    ).output == ("ok")
    assert SEEN["lists_of_objects"] == {
        "points": [Point(1)],
        "maybe": [None, Point(2)],
    }
    assert tuples_and_sets(
        {"pair": [{"x": 1, "y": None, "label": None}, 7], "tags": [{"name": "a", "weight": None}]}
    ).output == ("ok")
    assert SEEN["tuples_and_sets"] == {"pair": (Point(1), 7), "tags": frozenset({Tag("a")})}
    tree = {"value": 1, "children": [{"value": 2, "children": None, "next": None, "note": None}]}
    assert recursive({"tree": {**tree, "next": None, "note": None}}).output == "ok"
    assert SEEN["recursive"] == {"tree": Node(1, [Node(2)])}


def test_a_union_reads_nulls_by_the_branch_the_value_has_the_shape_of():
    line = {"start": {"x": 0, "y": None, "label": None}, "end": {"x": 1}, "width": None}
    assert unions({"shape": line, "fallback": {"x": 3, "y": None, "label": None}}).output == "ok"
    assert SEEN["unions"] == {"shape": Line(Point(0), Point(1)), "fallback": Point(3)}


def test_a_null_the_schema_accepts_is_kept():
    @tool
    def limit(n: int | None = 5) -> str:
        return repr(n)

    assert limit({"n": None}).output == "None"
    assert limit({}).output == "5"


def test_the_callers_arguments_are_never_changed():
    sent = {"point": {"x": 2, "y": None, "label": None}, "other": None}
    optional_dataclass(sent)
    assert sent == {"point": {"x": 2, "y": None, "label": None}, "other": None}
