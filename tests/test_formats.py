"""Parameter types carried as strings (``_formats.py``): their schema, and the function
receiving the annotated type — or the model a clear refusal naming the argument."""

from __future__ import annotations

import datetime as dt
import decimal
import pathlib
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from toolnexus import ToolResult, tool
from toolnexus._formats import (
    FormatError,
    parse_base64,
    parse_datetime,
    parse_duration,
    parse_time,
    to_json,
)

UTC = dt.timezone.utc


def received(annotation: Any, value: Any) -> Any:
    """What a one-parameter tool annotated ``annotation`` receives for ``value``."""
    seen: list[Any] = []

    def probe(x):  # type: ignore[no-untyped-def]
        seen.append(x)
        return "ok"

    probe.__annotations__ = {"x": annotation, "return": str}
    result = tool(probe)({"x": value})
    assert result == ToolResult.ok("ok"), result
    return seen[0]


def refusal(annotation: Any, value: Any) -> str:
    def probe(x):  # type: ignore[no-untyped-def]
        raise AssertionError("a refused argument never reaches the function")

    probe.__annotations__ = {"x": annotation}
    result = tool(probe)({"x": value})
    assert result.is_error
    return result.output


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (dt.datetime, {"type": "string", "format": "date-time"}),
        (dt.date, {"type": "string", "format": "date"}),
        (dt.time, {"type": "string", "format": "time"}),
        (dt.timedelta, {"type": "string", "format": "duration"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (pathlib.Path, {"type": "string", "format": "path"}),
        (decimal.Decimal, {"type": "string", "format": "decimal"}),
        (bytes, {"type": "string", "contentEncoding": "base64"}),
    ],
)
def test_each_string_carried_type_has_a_string_schema_with_its_format(annotation, schema):
    def probe(x):  # type: ignore[no-untyped-def]
        return None

    probe.__annotations__ = {"x": annotation}
    assert tool(probe).input_schema["properties"]["x"] == schema


@pytest.mark.parametrize(
    ("annotation", "text", "expected"),
    [
        (dt.datetime, "2026-05-01T09:30:00Z", dt.datetime(2026, 5, 1, 9, 30, tzinfo=UTC)),
        (
            dt.datetime,
            "2026-05-01t09:30:00.25+02:00",
            dt.datetime(2026, 5, 1, 9, 30, 0, 250000, dt.timezone(dt.timedelta(hours=2))),
        ),
        (dt.datetime, "2026-05-01T09:30:00", dt.datetime(2026, 5, 1, 9, 30)),
        (dt.date, "2026-05-01", dt.date(2026, 5, 1)),
        (dt.time, "09:30", dt.time(9, 30)),
        (dt.time, "09:30:15.5Z", dt.time(9, 30, 15, 500000, UTC)),
        (dt.timedelta, "PT1H30M", dt.timedelta(hours=1, minutes=30)),
        (dt.timedelta, "P2DT0.5S", dt.timedelta(days=2, seconds=0.5)),
        (dt.timedelta, "P1W", dt.timedelta(weeks=1)),
        (dt.timedelta, "-PT5M", dt.timedelta(minutes=-5)),
        (
            uuid.UUID,
            "123e4567-e89b-12d3-a456-426614174000",
            uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
        ),
        (pathlib.Path, "/tmp/report.txt", pathlib.Path("/tmp/report.txt")),
        (decimal.Decimal, "12.50", decimal.Decimal("12.50")),
        (bytes, "aGVsbG8=", b"hello"),
        (bytes, "aGVsbG8", b"hello"),
        (bytes, "_-8=", b"\xff\xef"),
    ],
)
def test_the_function_receives_the_annotated_type(annotation, text, expected):
    value = received(annotation, text)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("annotation", "text", "message"),
    [
        (
            dt.datetime,
            "tomorrow",
            'x: expected a date-time (RFC 3339, e.g. "2026-05-01T09:30:00Z"), got "tomorrow"',
        ),
        (
            dt.datetime,
            "2026-02-30T10:00:00Z",
            'x: "2026-02-30T10:00:00Z" is not a valid date-time (day is out of range for month)',
        ),
        (
            dt.date,
            "05/01/2026",
            'x: expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got "05/01/2026"',
        ),
        (dt.time, "25:00", 'x: "25:00" is not a valid time (hour must be in 0..23)'),
        (
            dt.timedelta,
            "P1M",
            'x: the duration "P1M" counts years or months, which have no fixed length; give it '
            'in weeks, days, hours, minutes or seconds (e.g. "P30D")',
        ),
        (
            dt.timedelta,
            "90 minutes",
            'x: expected a duration (ISO 8601, e.g. "PT1H30M" or "P2D"), got "90 minutes"',
        ),
        (dt.timedelta, "PT", "x: expected a duration"),
        (uuid.UUID, "not-a-uuid", "x: expected a UUID"),
        (decimal.Decimal, "twelve", 'x: expected a decimal number as text (e.g. "12.50")'),
        (decimal.Decimal, "NaN", "x: expected a decimal number as text"),
        (bytes, "not base64!", 'x: expected bytes as base64 text (e.g. "aGVsbG8=")'),
    ],
)
def test_bad_text_is_refused_naming_the_argument_and_what_was_expected(annotation, text, message):
    output = refusal(annotation, text)
    assert output.startswith("invalid arguments for 'probe': " + message)


def test_a_wrong_json_type_is_refused_by_the_schema_before_any_conversion():
    assert refusal(dt.date, 20260501) == (
        "invalid arguments for 'probe': x: expected string, got integer 20260501"
    )


def test_nested_values_are_converted_and_a_refusal_names_the_path():
    @dataclass
    class Meeting:
        title: str
        starts: dt.datetime
        attendees: list[uuid.UUID]

    @tool
    def book(meetings: list[Meeting], on: dict[str, dt.date] | None = None) -> str:
        return repr((meetings, on))

    good = book(
        {
            "meetings": [
                {
                    "title": "standup",
                    "starts": "2026-05-01T09:00:00Z",
                    "attendees": [str(uuid.UUID(int=1))],
                }
            ],
            "on": {"a": "2026-05-02"},
        }
    )
    assert not good.is_error
    assert "datetime.datetime(2026, 5, 1, 9, 0, tzinfo=datetime.timezone.utc)" in good.output
    assert "UUID('00000000-0000-0000-0000-000000000001')" in good.output
    assert "{'a': datetime.date(2026, 5, 2)}" in good.output

    bad = book(
        {
            "meetings": [
                {"title": "a", "starts": "2026-05-01T09:00:00Z", "attendees": []},
                {"title": "b", "starts": "2026-05-01T09:00:00Z", "attendees": ["x", "y"]},
            ]
        }
    )
    assert bad.output.startswith(
        "invalid arguments for 'book': meetings[1].attendees[0]: expected a UUID"
    )
    assert book({"meetings": [], "on": {"first day": "May 2"}}).output.startswith(
        "invalid arguments for 'book': on[\"first day\"]: expected a date"
    )


def test_a_union_of_string_carried_types_tries_each_in_order():
    seen = received(dt.date | dt.datetime, "2026-05-01T09:30:00Z")
    assert seen == dt.datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    assert received(dt.date | dt.datetime, "2026-05-01") == dt.date(2026, 5, 1)
    assert received(dt.date | None, None) is None


def test_a_contract_style_dataclass_converts_its_fields_too():
    @dataclass
    class Window:
        start: dt.date
        length: dt.timedelta

    @tool
    def plan(args: Window) -> str:
        return f"{args.start.isoformat()} +{args.length.days}d"

    assert plan({"start": "2026-05-01", "length": "P3D"}).output == "2026-05-01 +3d"
    assert plan({"start": "2026-05-01", "length": "3 days"}).output.startswith(
        "invalid arguments for 'plan': length: expected a duration"
    )


def test_the_callers_arguments_are_never_changed():
    args = {"x": "2026-05-01"}
    received(dt.date, args["x"])
    assert args == {"x": "2026-05-01"}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (dt.datetime(2026, 5, 1, 9, 30, tzinfo=UTC), "2026-05-01T09:30:00+00:00"),
        (dt.date(2026, 5, 1), "2026-05-01"),
        (dt.time(9, 30), "09:30:00"),
        (dt.timedelta(hours=1, minutes=30), "PT1H30M"),
        (dt.timedelta(days=2, microseconds=500000), "P2DT0.5S"),
        (dt.timedelta(0), "PT0S"),
        (-dt.timedelta(minutes=5), "-PT5M"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (pathlib.PurePosixPath("/a/b"), "/a/b"),
        (decimal.Decimal("12.50"), "12.50"),
        (b"hello", "aGVsbG8="),
    ],
)
def test_returned_values_of_these_types_become_the_same_text(value, text):
    assert to_json(value) == text


@pytest.mark.parametrize(
    "value",
    [
        dt.timedelta(hours=1, minutes=30),
        dt.timedelta(days=2, microseconds=500000),
        -dt.timedelta(minutes=5),
        dt.timedelta(weeks=3, seconds=59),
    ],
)
def test_a_duration_reads_back_as_what_was_written(value):
    assert parse_duration(to_json(value)) == value


def test_the_parsers_raise_format_error_a_value_error():
    for parse, text in [(parse_datetime, "x"), (parse_time, "x"), (parse_base64, "***")]:
        with pytest.raises(FormatError) as caught:
            parse(text)
        assert isinstance(caught.value, ValueError)


def test_a_tool_returning_these_types_gives_json_text():
    @tool
    def when() -> dict[str, Any]:
        return {"at": dt.date(2026, 5, 1), "id": uuid.UUID(int=2), "raw": b"\x00"}

    assert when({}).output == (
        '{"at":"2026-05-01","id":"00000000-0000-0000-0000-000000000002","raw":"AA=="}'
    )


# ----------------------------------------------------------- every problem in one answer


@tool
def remind(steps: int, at: dt.datetime, every: dt.timedelta, on: list[dt.date]) -> str:
    """Four arguments, three of them read from text."""
    return "ok"


def test_every_conversion_problem_of_a_call_is_in_one_answer():
    out = remind({"steps": 1, "at": "tomorrow", "every": "daily", "on": ["x", "2026-05-01", "y"]})
    assert out.output == (
        "invalid arguments for 'remind': "
        'at: expected a date-time (RFC 3339, e.g. "2026-05-01T09:30:00Z"), got "tomorrow"; '
        'every: expected a duration (ISO 8601, e.g. "PT1H30M" or "P2D"), got "daily"; '
        'on[0]: expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got "x"; '
        'on[2]: expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got "y"'
    )


def test_schema_and_conversion_problems_come_together():
    out = remind({"steps": "three", "at": "tomorrow", "every": 5, "on": ["x"]}).output
    assert out == (
        "invalid arguments for 'remind': "
        'steps: expected integer, got string "three"; '
        "every: expected string, got integer 5; "
        'at: expected a date-time (RFC 3339, e.g. "2026-05-01T09:30:00Z"), got "tomorrow"; '
        'on[0]: expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got "x"'
    )


def test_problems_inside_nested_objects_are_all_reported_with_their_paths():
    @dataclass
    class Slot:
        day: dt.date
        length: dt.timedelta
        count: int = 1

    @tool
    def book(slots: list[Slot], pair: tuple[dt.date, dt.time]) -> str:
        return "booked"

    out = book(
        {
            "slots": [{"day": "monday", "length": "1h", "count": "2"}, {"day": "2026-05-01"}],
            "pair": ["later", "noon"],
        }
    ).output
    assert out.startswith("invalid arguments for 'book': ")
    problems = out.removeprefix("invalid arguments for 'book': ").split("; ")
    assert [problem.split(":")[0] for problem in problems] == [
        "slots[0].count",  # the schema's
        "slots[1].length",  # the schema's: a required property is missing
        "slots[0].day",
        "slots[0].length",
        "pair[0]",
        "pair[1]",
    ]


def test_a_refused_call_builds_no_dataclass_and_calls_no_model_while_looking_for_problems():
    built: list[str] = []

    @dataclass
    class Noisy:
        day: dt.date

        def __post_init__(self) -> None:
            built.append("Noisy")

    class Model:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            return {"type": "object"}

        @classmethod
        def model_validate(cls, value: Any) -> Model:
            built.append("Model")
            return cls()

    @tool
    def probe(first: Noisy, second: Model, count: int) -> str:
        return "ran"

    out = probe({"first": {"day": "someday"}, "second": {}, "count": "x"}).output
    assert out == (
        "invalid arguments for 'probe': count: expected integer, got string \"x\"; "
        'first.day: expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got "someday"'
    )
    assert built == []
    assert probe({"first": {"day": "2026-05-01"}, "second": {}, "count": 1}).output == "ran"
    assert built == ["Noisy", "Model"]


def test_values_of_the_wrong_shape_leave_the_search_for_conversion_problems_to_the_schema():
    @tool
    def shapes(
        days: list[dt.date], pair: tuple[dt.date, int], by: dict[str, dt.date], at: dt.date
    ) -> str:
        return "ran"

    out = shapes({"days": "2026-05-01", "pair": ["x"], "by": ["x"], "at": "never"}).output
    assert out == (
        "invalid arguments for 'shapes': "
        'days: expected array, got string "2026-05-01"; '
        "pair: expected at least 2 items, got 1; "
        "by: expected object, got array; "
        'at: expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got "never"'
    )
