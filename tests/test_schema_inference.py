"""Schema inference: every type rule, with the exact schema it produces.

This module uses postponed annotations on purpose: inference must read them as well as
eager ones (and read Required/NotRequired from them, which ``__required_keys__`` gets
wrong on 3.11-3.13).
"""

from __future__ import annotations

import collections.abc
import enum
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NewType, Optional, TypedDict, Union

import pytest

from toolnexus import SchemaInferenceError, Tool, ToolContext, tool
from toolnexus._schema import infer, parse_docstring, sanitize_name
from toolnexus.validation import check_schema

try:
    from typing import NotRequired, Required
except ImportError:  # Python 3.10: the backport pytest's own dependencies bring along
    from typing_extensions import NotRequired, Required


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Movie(TypedDict):
    title: str
    year: int


class Draft(TypedDict, total=False):
    title: str
    notes: str


class Mixed(TypedDict):
    title: Required[str]
    rating: NotRequired[float]


class Loose(TypedDict, total=False):
    title: Required[str]
    tags: list[str]


@dataclass
class Point:
    x: float
    y: float = 0.0


@dataclass
class Segment:
    start: Point
    end: Point


@dataclass
class Tree:
    label: str
    children: list[Tree] = field(default_factory=list)


@dataclass
class Described:
    count: Annotated[int, "how many"]
    unit: str = field(default="m", metadata={"description": "the unit"})


UserId = NewType("UserId", int)

OBJECT_POINT = {
    "type": "object",
    "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
    "required": ["x"],
    "additionalProperties": False,
}

# (annotation, the property schema inference must produce). One row per rule.
RULES: list[tuple[Any, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (None, {"type": "null"}),
    (type(None), {"type": "null"}),
    (Any, {}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (list, {"type": "array"}),
    (collections.abc.Sequence[str], {"type": "array", "items": {"type": "string"}}),
    (
        tuple[int, str],
        {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
    ),
    (tuple[float, ...], {"type": "array", "items": {"type": "number"}}),
    (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    (frozenset[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (dict, {"type": "object"}),
    (
        collections.abc.Mapping[str, list[str]],
        {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    ),
    (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007
    (int | str | None, {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
    (Literal[True], {"type": "boolean", "enum": [True]}),
    (Literal["auto", 0], {"type": ["string", "integer"], "enum": ["auto", 0]}),
    (Literal["a", None], {"type": ["string", "null"], "enum": ["a", None]}),
    (Colour, {"type": "string", "enum": ["red", "green"]}),
    (Level, {"type": "integer", "enum": [1, 2]}),
    (
        Movie,
        {
            "type": "object",
            "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
            "required": ["title", "year"],
            "additionalProperties": False,
        },
    ),
    (
        Draft,
        {
            "type": "object",
            "properties": {"title": {"type": "string"}, "notes": {"type": "string"}},
            "additionalProperties": False,
        },
    ),
    (
        Mixed,
        {
            "type": "object",
            "properties": {"title": {"type": "string"}, "rating": {"type": "number"}},
            "required": ["title"],
            "additionalProperties": False,
        },
    ),
    (
        Loose,
        {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["title"],
            "additionalProperties": False,
        },
    ),
    (Point, OBJECT_POINT),
    (list[Point], {"type": "array", "items": OBJECT_POINT}),
    (Point | None, {"anyOf": [OBJECT_POINT, {"type": "null"}]}),
    (
        Described,
        {
            "type": "object",
            "properties": {
                "count": {"type": "integer", "description": "how many"},
                "unit": {"type": "string", "description": "the unit", "default": "m"},
            },
            "required": ["count"],
            "additionalProperties": False,
        },
    ),
    (Annotated[int, "a count"], {"type": "integer", "description": "a count"}),
    (
        Annotated[list[str], "tags", "to apply"],
        {"type": "array", "items": {"type": "string"}, "description": "tags to apply"},
    ),
    (UserId, {"type": "integer"}),
]


def property_schema(annotation: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema inferred for one parameter annotated ``annotation``, and the root."""

    def probe(value):  # type: ignore[no-untyped-def]
        return None

    probe.__annotations__ = {"value": annotation}
    root = tool(probe).input_schema
    return root["properties"]["value"], root


@pytest.mark.parametrize(
    ("annotation", "expected"), RULES, ids=[repr(row[0]).replace("typing.", "") for row in RULES]
)
def test_each_type_rule_produces_its_schema(annotation, expected):
    schema, root = property_schema(annotation)
    assert schema == expected
    assert "$defs" not in root
    check_schema(root)  # and the validator honours every keyword inference writes


def test_a_class_used_twice_is_shared_under_defs():
    schema, root = property_schema(Segment)
    check_schema(root)
    ref = {"$ref": "#/$defs/Point"}
    assert schema == {
        "type": "object",
        "properties": {"start": ref, "end": ref},
        "required": ["start", "end"],
        "additionalProperties": False,
    }
    assert root["$defs"] == {"Point": OBJECT_POINT}


def test_a_recursive_class_lives_under_defs_and_refers_to_itself():
    schema, root = property_schema(Tree)
    check_schema(root)
    assert schema == {"$ref": "#/$defs/Tree"}
    assert root["$defs"]["Tree"] == {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
        },
        "required": ["label"],
        "additionalProperties": False,
    }


def test_keyword_style_gives_one_property_per_parameter_with_defaults():
    def search(query: str, limit: int = 10, exact: bool = False, ctx: ToolContext | None = None):
        return query

    schema = tool(search).input_schema
    assert schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "exact": {"type": "boolean", "default": False},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_a_none_default_makes_the_property_nullable():
    def pick(colour: Colour | None = None, size: int = None):  # type: ignore[assignment]  # noqa: RUF013
        return None

    properties = tool(pick).input_schema["properties"]
    assert properties["colour"] == {
        "anyOf": [{"type": "string", "enum": ["red", "green"]}, {"type": "null"}],
        "default": None,
    }
    assert properties["size"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}],
        "default": None,
    }


def test_enum_and_tuple_defaults_are_written_as_json():
    def paint(colour: Colour = Colour.RED, at: tuple[int, int] = (0, 0)):
        return None

    properties = tool(paint).input_schema["properties"]
    assert properties["colour"]["default"] == "red"
    assert properties["at"]["default"] == [0, 0]


def test_a_default_json_cannot_carry_is_left_out_but_the_parameter_stays_optional():
    marker = object()

    def probe(value: Any = marker):
        return None

    schema = tool(probe).input_schema
    assert schema["properties"]["value"] == {}
    assert "required" not in schema


def test_the_context_parameter_is_found_by_annotation_or_by_name_and_left_out():
    def by_annotation(a: int, context: ToolContext):
        return a

    def by_name(a: int, ctx=None):  # type: ignore[no-untyped-def]
        return a

    def optional_annotation(a: int, c: Optional[ToolContext] = None):  # noqa: UP045
        return a

    for fn in (by_annotation, by_name, optional_annotation):
        assert list(tool(fn).input_schema["properties"]) == ["a"], fn.__name__


def test_contract_style_takes_its_schema_from_a_typeddict_annotation():
    class_schema, _ = property_schema(Mixed)

    def review(args: Mixed, ctx: ToolContext | None = None):
        return args["title"]

    assert infer(review).style == "contract"
    assert tool(review).input_schema == class_schema


def test_contract_style_takes_its_schema_from_a_dataclass_annotation():
    def plot(args: Point, ctx=None):  # type: ignore[no-untyped-def]
        return args

    assert tool(plot).input_schema == OBJECT_POINT


def test_contract_style_without_annotation_accepts_any_object():
    def echo(args, ctx=None):  # type: ignore[no-untyped-def]
        return args

    def echo_dict(args: dict[str, Any]):
        return args

    assert tool(echo).input_schema == {"type": "object"}
    assert tool(echo_dict).input_schema == {"type": "object"}


def test_a_lone_args_parameter_that_is_not_an_object_is_keyword_style():
    def run(args: list[str]):
        return " ".join(args)

    assert infer(run).style == "keyword"
    assert tool(run).input_schema["properties"] == {
        "args": {"type": "array", "items": {"type": "string"}}
    }


def test_dict_with_any_values_is_an_open_object_of_any_values():
    schema, _ = property_schema(dict[str, Any])
    assert schema == {"type": "object", "additionalProperties": {}}


def test_kwargs_opens_the_object_with_its_annotation():
    def tag(name: str, **labels: str):
        return name

    schema = tool(tag).input_schema
    assert schema["additionalProperties"] == {"type": "string"}


def test_unannotated_kwargs_accept_any_extra_property():
    def tag(name: str, **labels):  # type: ignore[no-untyped-def]
        return name

    assert tool(tag).input_schema["additionalProperties"] is True


# --------------------------------------------------------------------------------- descriptions


def test_description_is_the_first_paragraph_of_the_docstring():
    def lookup(city: str):
        """Look up the weather
        for a city.

        Uses the public API; results are cached.
        """

    assert tool(lookup).description == "Look up the weather for a city."


def test_google_style_parameter_descriptions():
    def lookup(city: str, days: int = 1):
        """Forecast the weather.

        Args:
            city (str): the city's name,
                in English.
            days: how many days ahead.

        Returns:
            the forecast.
        """

    properties = tool(lookup).input_schema["properties"]
    assert properties["city"]["description"] == "the city's name, in English."
    assert properties["days"] == {
        "type": "integer",
        "description": "how many days ahead.",
        "default": 1,
    }


def test_numpy_style_parameter_descriptions():
    def lookup(city: str, days: int = 1):
        """Forecast the weather.

        Parameters
        ----------
        city : str
            The city's name.
        days : int, optional
            How many days
            ahead.

        Returns
        -------
        str
        """

    assert tool(lookup).description == "Forecast the weather."
    properties = tool(lookup).input_schema["properties"]
    assert properties["city"]["description"] == "The city's name."
    assert properties["days"]["description"] == "How many days ahead."


def test_rest_style_parameter_descriptions():
    def lookup(city: str, days: int = 1):
        """Forecast the weather.

        :param city: the city's name.
        :param int days: how many days
            ahead.
        :returns: the forecast.
        """

    assert tool(lookup).description == "Forecast the weather."
    properties = tool(lookup).input_schema["properties"]
    assert properties["city"]["description"] == "the city's name."
    assert properties["days"]["description"] == "how many days ahead."


def test_annotated_text_wins_over_the_docstring():
    def lookup(city: Annotated[str, "from Annotated"]):
        """Forecast.

        Args:
            city: from the docstring.
        """

    properties = tool(lookup).input_schema["properties"]
    assert properties["city"]["description"] == "from Annotated"


def test_typeddict_field_descriptions_come_from_its_docstring():
    schema, _ = property_schema(Documented)
    assert schema["properties"]["n"]["description"] == "how many."


class Documented(TypedDict):
    """A documented shape.

    Attributes:
        n: how many.
    """

    n: int


def test_parse_docstring_without_sections():
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("One line.") == ("One line.", {})


def test_names_are_sanitized():
    assert sanitize_name("weather.lookup v2") == "weather_lookup_v2"

    def fn(a: int):
        return a

    assert tool(name="fetch.url").__call__(fn).name == "fetch_url"


# ------------------------------------------------------------------- what the function receives


def test_the_function_receives_enum_members_dataclasses_tuples_and_sets():
    seen: dict[str, Any] = {}

    @tool
    def record(
        colour: Colour,
        level: Level,
        at: Point,
        tags: set[str],
        pair: tuple[int, str],
        segment: Segment,
        trees: list[Tree],
        pick: Literal["a", "b"] = "a",
    ):
        seen.update(locals())
        return "ok"

    result = record(
        {
            "colour": "green",
            "level": 2,
            "at": {"x": 1.5},
            "tags": ["a", "b", "c"],
            "pair": [1, "x"],
            "segment": {"start": {"x": 0}, "end": {"x": 1, "y": 2}},
            "trees": [{"label": "root", "children": [{"label": "leaf"}]}],
        }
    )
    assert not result.is_error, result.output
    assert seen["colour"] is Colour.GREEN
    assert seen["level"] is Level.HIGH
    assert seen["at"] == Point(1.5, 0.0)
    assert seen["tags"] == {"a", "b", "c"}
    assert seen["pair"] == (1, "x")
    assert seen["segment"] == Segment(Point(0, 0.0), Point(1, 2))
    assert seen["trees"] == [Tree("root", [Tree("leaf")])]
    assert seen["pick"] == "a"


def test_a_contract_style_dataclass_args_is_built_into_an_instance():
    @tool
    def plot(args: Segment) -> str:
        assert isinstance(args, Segment) and isinstance(args.start, Point)
        return f"{args.start.x}->{args.end.x}"

    assert plot({"start": {"x": 1}, "end": {"x": 2}}).output == "1->2"


def test_typeddict_fields_holding_enums_are_converted_in_a_copy():
    class Paint(TypedDict):
        colour: Colour
        coats: int

    seen = {}

    @tool
    def paint(args: Paint):
        seen.update(args)
        return "ok"

    original = {"colour": "red", "coats": 2}
    assert paint(original).output == "ok"
    assert seen == {"colour": Colour.RED, "coats": 2}
    assert original == {"colour": "red", "coats": 2}


def test_an_integer_sent_as_a_whole_float_arrives_as_int():
    @tool
    def repeat(times: int, ratio: float) -> str:
        return f"{type(times).__name__} {type(ratio).__name__}"

    assert repeat({"times": 3.0, "ratio": 2}).output == "int int"


def test_a_list_of_integers_arrives_with_whole_floats_as_ints_and_untouched_otherwise():
    seen: list[list[int]] = []

    @tool
    def total(items: list[int]) -> int:
        seen.append(items)
        return sum(items)

    plain = [1, 2, 3]
    assert total({"items": plain}).output == "6"
    assert seen[-1] is plain
    assert total({"items": [1, 2.0, 3]}).output == "6"
    assert seen[-1] == [1, 2, 3] and [type(item) for item in seen[-1]] == [int, int, int]


def test_a_union_of_dataclasses_builds_the_one_that_fits():
    @dataclass
    class Circle:
        radius: float

    @dataclass
    class Square:
        side: float

    @tool
    def area(shape: Circle | Square) -> str:
        return type(shape).__name__

    assert area({"shape": {"radius": 1}}).output == "Circle"
    assert area({"shape": {"side": 2}}).output == "Square"


def test_a_tool_defined_inside_a_function_resolves_local_types():
    class Local(TypedDict):
        n: int

    @tool
    def count(args: Local) -> int:
        return args["n"]

    assert count.input_schema["required"] == ["n"]
    assert count({"n": 4}).output == "4"


# ----------------------------------------------------------------------- definition-time errors


class Opaque:
    pass


@pytest.mark.parametrize(
    ("annotation", "fragment"),
    [
        (complex, "complex has no JSON Schema equivalent"),
        (Opaque, "Opaque has no JSON Schema equivalent"),
        (dict[int, str], "dict keys must be str"),
        (typing.Callable[[int], int], "has no JSON Schema equivalent"),
        (list[complex], "complex has no JSON Schema equivalent"),
    ],
)
def test_an_annotation_without_a_schema_fails_at_definition_time(annotation, fragment):
    def upload(data):  # type: ignore[no-untyped-def]
        return None

    upload.__annotations__ = {"data": annotation}
    with pytest.raises(SchemaInferenceError) as caught:
        tool(upload)
    message = str(caught.value)
    assert "parameter 'data' of" in message and "upload()" in message
    assert fragment in message
    assert "input_schema=" in message
    assert caught.value.parameter == "data"
    assert isinstance(caught.value, TypeError)


def test_an_enum_with_values_json_cannot_carry_fails_at_definition_time():
    class Odd(enum.Enum):
        A = (1, 2)

    def pick(value: Odd):
        return None

    with pytest.raises(SchemaInferenceError, match=r"enum Odd has a value \(1, 2\)"):
        tool(pick)


def test_a_dataclass_field_without_a_schema_names_the_field():
    @dataclass
    class Blob:
        data: complex

    def store(blob: Blob):
        return None

    with pytest.raises(SchemaInferenceError, match=r"field Blob\.data: complex"):
        tool(store)


def test_star_args_fail_at_definition_time():
    def total(*numbers: int):
        return sum(numbers)

    with pytest.raises(SchemaInferenceError, match=r"parameter 'numbers'.*take a list"):
        tool(total)


def test_an_unresolvable_annotation_fails_at_definition_time():
    def broken(a: NoSuchType):  # type: ignore[name-defined]  # noqa: F821
        return a

    with pytest.raises(SchemaInferenceError) as caught:
        tool(broken)
    assert caught.value.parameter == "a"
    assert str(caught.value).startswith(
        "cannot infer a JSON Schema for parameter 'a' of test_schema_inference."
        "test_an_unresolvable_annotation_fails_at_definition_time.<locals>.broken(): "
        "the annotation 'NoSuchType' could not be resolved (NameError: "
    )
    assert str(caught.value).endswith(
        "pass the schema yourself with @tool(input_schema={...}), "
        "or annotate it with a supported type"
    )


def test_input_schema_skips_inference_entirely():
    def upload(data: bytes, ctx: ToolContext | None = None):
        return len(data)

    made = tool(
        upload,
        input_schema={
            "type": "object",
            "properties": {"data": {"type": "string"}},
            "required": ["data"],
        },
    )
    assert isinstance(made, Tool)
    assert made({"data": "abc"}).output == "3"


def test_input_schema_naming_a_parameter_the_function_lacks_fails_at_definition_time():
    def greet(name: str):
        return name

    with pytest.raises(SchemaInferenceError, match=r"properties the function does not take"):
        tool(greet, input_schema={"type": "object", "properties": {"nom": {"type": "string"}}})


# ------------------------------------------------------------------------ other callables


class Calculator:
    def multiply(self, a: int, b: int = 2) -> int:
        """Multiply two integers."""
        return a * b

    def __call__(self, text: str, ctx: ToolContext | None = None) -> str:
        """Echo the text."""
        return text


def test_a_bound_method_becomes_a_tool_without_self():
    made = tool(Calculator().multiply)
    assert made.name == "multiply"
    assert list(made.input_schema["properties"]) == ["a", "b"]
    assert made({"a": 3}).output == "6"


def test_a_callable_object_is_read_through_its_call_method():
    made = tool(Calculator(), name="echo")
    assert made.description == "Echo the text."
    assert made.input_schema["required"] == ["text"]
    assert made({"text": "hi"}).output == "hi"


def test_a_partial_hides_what_it_binds_and_the_caller_cannot_set_it():
    import functools

    def power(base: int, exp: int) -> int:
        return base**exp

    made = tool(functools.partial(power, exp=2), name="square")
    assert made.input_schema["properties"] == {"base": {"type": "integer"}}
    assert made({"base": 3}).output == "9"
    refused = made({"base": 3, "exp": 3})
    assert refused.is_error
    assert refused.output == (
        "invalid arguments for 'square': exp: set by the tool itself and cannot be given; "
        "leave it out"
    )


def test_positional_only_parameters_are_passed_positionally():
    def minus(a: int, /, b: int) -> int:
        return a - b

    assert tool(minus)({"a": 5, "b": 2}).output == "3"
