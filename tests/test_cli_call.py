"""`toolnexus call`: arguments (key=value, --args JSON, --args @file), output (text or
--json), and the exit codes 0, 1, 2 and 124 — each run as a subprocess."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
DEMO = "toolnexus.demo:toolkit"
WEATHER = str(ROOT / "examples" / "weather.py")
SLOW = str(ROOT / "examples" / "slow.py")


ECHO = """
    from toolnexus import tool

    @tool
    def echo(args, ctx=None):
        '''Return the arguments it was given, as JSON.'''
        return dict(args)
"""


@pytest.fixture
def echo_ref(tmp_path: Path) -> str:
    path = tmp_path / "echo.py"
    path.write_text(textwrap.dedent(ECHO), encoding="utf-8")
    return str(path)


def echoed(ref: str, *args: str) -> object:
    out = run("call", ref, *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_plain_call_prints_the_result_text_and_exits_0():
    out = run("call", DEMO, "crunch", "steps=3")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "completed 3 step(s)\n"
    assert out.stderr == ""


def test_key_value_values_are_json_when_they_parse_else_text(echo_ref):
    assert echoed(
        echo_ref,
        "n=3",
        "flag=true",
        "name=Ada",
        "ratio=0.5",
        "tags=[1,2]",
        "nothing=null",
        'quoted="7"',
        "eq=a=b",
    ) == {
        "n": 3,
        "flag": True,
        "name": "Ada",
        "ratio": 0.5,
        "tags": [1, 2],
        "nothing": None,
        "quoted": "7",
        "eq": "a=b",
    }


def test_nan_and_infinity_stay_text_because_json_has_no_such_numbers(echo_ref):
    assert echoed(echo_ref, "a=NaN", "b=Infinity") == {"a": "NaN", "b": "Infinity"}


def test_a_single_tool_ref_needs_no_name(echo_ref):
    assert echoed(echo_ref, "x=1") == {"x": 1}


def test_args_json_inline_and_from_a_file_merge_with_key_values(echo_ref, tmp_path):
    assert echoed(echo_ref, "--args", '{"a": 1, "b": [true]}') == {"a": 1, "b": [True]}
    args_file = tmp_path / "args.json"
    args_file.write_text('{"a": 1, "b": 2}', encoding="utf-8")
    assert echoed(echo_ref, "--args", f"@{args_file}", "b=3") == {"a": 1, "b": 3}


def test_a_bare_word_for_a_string_property_stays_text():
    out = run("call", WEATHER, "forecast", "city=1234", "days=1")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["city"] == "1234"


def test_options_may_come_before_the_tool_name_and_arguments():
    out = run("call", DEMO, "--timeout", "5000", "fetchish", "url=/a")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("fetched /a within ")


def test_structured_results_print_as_json_text():
    out = run("call", WEATHER, "forecast", "city=Oslo", "days=2")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"city": "Oslo", "units": "celsius", "daily": [6.0, 6.5]}


def test_json_prints_the_whole_tool_result_wire_json():
    out = run("call", DEMO, "crunch", "steps=2", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"output": "completed 2 step(s)", "isError": False}


def test_a_tool_error_prints_its_text_and_exits_1():
    out = run("call", WEATHER, "forecast", "city=Oslo", "days=9")
    assert out.returncode == 1
    assert out.stdout == "days must be between 1 and 7, got 9\n"
    assert "Traceback" not in out.stderr


def test_a_tool_exception_traceback_shows_only_with_debug():
    out = run("call", WEATHER, "forecast", "city=Oslo", "days=9", "--debug")
    assert out.returncode == 1
    assert "Traceback (most recent call last)" in out.stderr
    assert "ValueError: days must be between 1 and 7" in out.stderr


def test_json_output_of_an_error_says_is_error():
    out = run("call", WEATHER, "forecast", "city=Oslo", "days=9", "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout) == {
        "output": "days must be between 1 and 7, got 9",
        "isError": True,
    }


def test_bad_json_args_are_a_usage_error_with_an_example_of_the_fix():
    out = run("call", DEMO, "crunch", "--args", "{steps: 3}")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.startswith("toolnexus call: error: --args: not valid JSON: ")
    assert "write e.g. --args '{\"steps\": 3}'" in out.stderr
    assert len(out.stderr.splitlines()) == 1


def test_args_that_are_json_but_not_an_object_are_refused():
    out = run("call", DEMO, "crunch", "--args", "[3]")
    assert out.returncode == 2
    # Named the way every other refusal of a non-object names it (Toolkit.resolve too).
    assert "--args must be a JSON object, got array" in out.stderr


def test_an_unreadable_args_file_is_named():
    out = run("call", DEMO, "crunch", "--args", "@/no/such/args.json")
    assert out.returncode == 2
    assert "--args: cannot read '/no/such/args.json'" in out.stderr


def test_invalid_args_list_every_problem_and_exit_2_without_running_the_tool():
    out = run("call", DEMO, "crunch", "steps=three", "colour=red")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == (
        "toolnexus call: error: invalid arguments for 'crunch': steps: expected integer, got "
        'string "three"; colour: unexpected property (allowed: steps) '
        "(see: toolnexus schema toolnexus.demo:toolkit crunch)\n"
    )


def test_a_missing_required_argument_is_named():
    out = run("call", DEMO, "crunch")
    assert out.returncode == 2
    assert "steps: required property is missing" in out.stderr


def test_an_unknown_tool_name_suggests_the_close_one():
    out = run("call", DEMO, "crunsh", "steps=3")
    assert out.returncode == 2
    assert "unknown tool 'crunsh'" in out.stderr
    assert "did you mean 'crunch'" in out.stderr


def test_a_many_tool_ref_without_a_name_lists_the_tools():
    out = run("call", DEMO)
    assert out.returncode == 2
    assert "has 5 tools (crunch, fetchish, deploy, nap, stubborn); name one" in out.stderr


def test_a_malformed_key_value_is_a_usage_error():
    out = run("call", DEMO, "crunch", "steps=3", "=4")
    assert out.returncode == 2
    assert "expected key=value, got '=4'" in out.stderr


def test_a_bad_timeout_is_a_usage_error():
    out = run("call", DEMO, "crunch", "steps=3", "--timeout", "soon")
    assert out.returncode == 2
    assert "expected whole milliseconds, got 'soon'" in out.stderr


def test_a_timeout_prints_the_timed_out_result_and_exits_124_even_if_the_tool_ignores_it():
    out = run("call", SLOW, "stubborn", "seconds=30", "--timeout", "200")
    assert out.returncode == 124, out.stderr
    assert out.stdout.startswith("timed out after 200 ms")


def test_an_async_tool_times_out_too():
    out = run("call", DEMO, "nap", "seconds=30", "--timeout", "100", "--json")
    assert out.returncode == 124, out.stderr
    result = json.loads(out.stdout)
    assert result["isError"] is True
    assert result["output"].startswith("timed out after 100 ms")


def test_an_async_tool_runs_to_its_result():
    out = run("call", DEMO, "nap", "seconds=0.01")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "napped 0.01 s\n"


def test_the_console_script_entry_point_is_the_same_main():
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("toolnexus") == "toolnexus._cli:main"


BOOKING = """
    from datetime import datetime, timedelta

    from toolnexus import tool

    @tool
    def book(when: datetime, length: timedelta, seats: int) -> str:
        '''Book a room.'''
        return "booked"
"""


def test_invalid_args_of_every_kind_are_reported_at_once_as_host_call_reports_them(tmp_path):
    # The schema's problem (seats) and the values that do not read as a date-time or a
    # duration in one line, as Host.call words them: not the schema's first, the rest later.
    path = tmp_path / "booking.py"
    path.write_text(textwrap.dedent(BOOKING), encoding="utf-8")
    out = run("call", str(path), "when=tomorrow", "length=long", "seats=many")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == (
        "toolnexus call: error: invalid arguments for 'book': seats: expected integer, got "
        'string "many"; when: expected a date-time (RFC 3339, e.g. "2026-05-01T09:30:00Z"), '
        'got "tomorrow"; length: expected a duration (ISO 8601, e.g. "PT1H30M" or "P2D"), '
        f'got "long" (see: toolnexus schema {path} book)\n'
    )
