"""Structured output: output schemas inferred from return annotations or declared, and
enforced on every successful result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest

from toolnexus import Request, ToolResult, tool
from toolnexus._result import STRUCTURED_KEY


@dataclass
class GrepHit:
    path: str
    line: int


@dataclass
class GrepResult:
    """What grep found."""

    hits: list[GrepHit]
    truncated: bool = False


class Weather(TypedDict):
    city: str
    celsius: float


def wrapped(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (int, wrapped({"type": "integer"})),
        (float, wrapped({"type": "number"})),
        (bool, wrapped({"type": "boolean"})),
        (list[str], wrapped({"type": "array", "items": {"type": "string"}})),
        (int | None, wrapped({"anyOf": [{"type": "integer"}, {"type": "null"}]})),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            Weather,
            {
                "type": "object",
                "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
                "required": ["city", "celsius"],
                "additionalProperties": False,
            },
        ),
    ],
)
def test_the_output_schema_is_inferred_from_the_return_annotation(annotation, schema):
    def probe():  # type: ignore[no-untyped-def]
        return None

    probe.__annotations__ = {"return": annotation}
    assert tool(probe).output_schema == schema


def test_a_dataclass_return_is_an_object_schema_and_its_value_the_structured_content():
    @tool
    def grep(pattern: str) -> GrepResult:
        return GrepResult([GrepHit("a.py", 3)])

    assert grep.output_schema is not None
    assert grep.output_schema["type"] == "object"
    assert grep.output_schema["required"] == ["hits"]
    assert grep.output_schema["properties"]["hits"]["items"]["required"] == ["path", "line"]
    result = grep({"pattern": "x"})
    assert result.output == '{"hits":[{"path":"a.py","line":3}],"truncated":false}'
    assert result.metadata == {
        STRUCTURED_KEY: {"hits": [{"path": "a.py", "line": 3}], "truncated": False}
    }


@pytest.mark.parametrize(
    "annotation",
    [None, type(None), Any, object, str, ToolResult, ToolResult | None, "ToolResult"],
    ids=[
        "no annotation",
        "NoneType",
        "Any",
        "object",
        "str",
        "ToolResult",
        "ToolResult|None",
        "string ToolResult",
    ],
)
def test_annotations_that_promise_no_structure_give_no_output_schema(annotation):
    def probe():  # type: ignore[no-untyped-def]
        return None

    probe.__annotations__ = {} if annotation is None else {"return": annotation}
    assert tool(probe).output_schema is None


def test_a_return_annotation_without_a_schema_never_stops_the_tool_from_being_defined():
    class Opaque:
        pass

    def make() -> Opaque:
        return Opaque()

    made = tool(make)
    assert made.output_schema is None


def test_a_scalar_is_wrapped_in_an_object_with_one_property():
    @tool
    def count(text: str) -> int:
        return len(text)

    result = count({"text": "abc"})
    assert result == ToolResult.ok("3", {STRUCTURED_KEY: {"result": 3}})


def test_a_value_outside_the_inferred_schema_is_an_error_naming_the_path():
    @tool
    def count(text: str) -> int:
        return text  # type: ignore[return-value]  # the bug under test

    result = count({"text": "abc"})
    assert result.is_error
    assert result.output == (
        "tool 'count' returned output that does not match its output schema: "
        'result: expected integer, got string "abc"; fix the tool\'s return value or its '
        "output_schema"
    )
    assert result.metadata == {} and "metadata" not in result.to_dict()


def test_a_declared_schema_is_enforced_and_names_the_path():
    @tool(
        output_schema={
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"],
        }
    )
    def total(a: int) -> dict[str, Any]:
        return {"sum": "nope"} if a < 0 else {"sum": a}

    assert total({"a": 2}).metadata == {STRUCTURED_KEY: {"sum": 2}}
    refused = total({"a": -1})
    assert refused.is_error
    assert 'sum: expected integer, got string "nope"' in refused.output


def test_a_declared_schema_wins_over_the_annotation_and_is_not_wrapped():
    @tool(output_schema={"type": "array", "items": {"type": "integer"}})
    def evens(n: int) -> list[int]:
        return list(range(0, n, 2))

    assert evens.output_schema == {"type": "array", "items": {"type": "integer"}}
    assert evens({"n": 5}).metadata == {STRUCTURED_KEY: [0, 2, 4]}


def test_a_tool_result_returned_under_an_output_schema_gets_its_json_text_as_structured():
    @tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    def raw() -> ToolResult:
        return ToolResult.ok('{"n": 1}')

    assert raw({}).metadata == {STRUCTURED_KEY: {"n": 1}}


def test_a_tool_result_with_plain_text_under_an_object_schema_is_an_error():
    @tool(output_schema={"type": "object"})
    def chatty() -> ToolResult:
        return ToolResult.ok("all good")

    result = chatty({})
    assert result.is_error
    assert result.output.startswith(
        "tool 'chatty' declares an output schema but returned text that is not JSON"
    )


def test_a_tool_result_carrying_structured_content_is_checked_and_kept():
    @tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    def explicit(n: Any) -> ToolResult:
        return ToolResult.ok("done", {STRUCTURED_KEY: {"n": n}, "trace": "t1"})

    good = explicit({"n": 1})
    assert good.metadata == {STRUCTURED_KEY: {"n": 1}, "trace": "t1"}
    assert explicit({"n": "x"}).is_error


def test_errors_and_suspensions_are_not_checked_against_the_output_schema():
    request = Request("approval", "Deploy?")

    @tool
    def deploy(fail: bool) -> int:
        if fail:
            raise RuntimeError("broken")
        return ToolResult.pending(request)  # type: ignore[return-value]

    assert deploy({"fail": True}).output == "broken"
    assert ToolResult.pending_of(deploy({"fail": False})) is request


def test_an_optional_scalar_returning_none_is_structured_as_null():
    @tool
    def find(key: str) -> int | None:
        return None

    assert find({"key": "k"}).metadata == {STRUCTURED_KEY: {"result": None}}


def test_the_structured_value_is_json_and_read_only():
    @tool
    def grep(pattern: str) -> GrepResult:
        return GrepResult([GrepHit("a.py", 3)])

    structured = grep({"pattern": "x"}).metadata[STRUCTURED_KEY]  # type: ignore[index]
    assert json.loads(json.dumps(structured)) == structured
    with pytest.raises(TypeError):
        structured["hits"] = []


def test_an_async_tool_is_checked_the_same_way():
    import asyncio

    @tool
    async def count(text: str) -> int:
        return text  # type: ignore[return-value]

    assert count({"text": "a"}).is_error
    assert asyncio.run(count.acall({"text": "a"})).output.startswith(
        "tool 'count' returned output that does not match its output schema: result:"
    )


@pytest.mark.parametrize(
    ("annotation", "value", "ok"),
    [
        (int, 7, True),
        (int, True, False),  # a bool is not an integer, though bool subclasses int
        (int, 2.5, False),
        (float, 3, True),
        (float, 2.5, True),
        (float, False, False),
        (bool, True, True),
        (bool, 1, False),
    ],
)
def test_a_scalar_return_is_checked_against_its_inferred_schema(annotation, value, ok):
    # The exact types a scalar schema always accepts skip the check; the rest are checked.
    def answer() -> Any:
        return value

    answer.__annotations__["return"] = annotation
    checked = tool(answer, description="Answer.")
    result = checked({})
    assert result.is_error is not ok, result.output
    if ok:
        assert result.metadata["structuredContent"] == {"result": value}
    else:
        assert "does not match its output schema: result:" in result.output
