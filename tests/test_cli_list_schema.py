"""`toolnexus list` and `toolnexus schema`, and the help every subcommand carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolnexus
from cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
DEMO = "toolnexus.demo:toolkit"


def test_list_prints_each_tool_name_and_the_first_line_of_its_description():
    out = run("list", DEMO)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "crunch",
        "fetchish",
        "deploy",
        "nap",
        "stubborn",
    ]
    assert (
        lines[0] == "crunch    Count up to steps (a millisecond each), stopping early when "
        "cancelled."
    )
    assert out.stderr == ""


def test_list_takes_a_file_path(tmp_path):
    out = run("list", str(ROOT / "examples" / "weather.py"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [line.split()[0] for line in out.stdout.splitlines()] == ["forecast", "to_fahrenheit"]


@pytest.mark.parametrize(
    ("fmt", "check"),
    [
        (
            "openai",
            lambda doc: (
                doc[0]["type"] == "function"
                and doc[0]["function"]["name"] == "crunch"
                and "steps" in doc[0]["function"]["parameters"]["properties"]
            ),
        ),
        (
            "anthropic",
            lambda doc: (
                doc[0]["name"] == "crunch" and "steps" in doc[0]["input_schema"]["properties"]
            ),
        ),
        ("gemini", lambda doc: doc[0]["functionDeclarations"][0]["name"] == "crunch"),
        (
            "mcp",
            lambda doc: (
                doc[0]["name"] == "crunch" and "steps" in doc[0]["inputSchema"]["properties"]
            ),
        ),
    ],
)
def test_schema_prints_pretty_json_in_each_providers_shape(fmt, check):
    out = run("schema", DEMO, "--format", fmt)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert check(doc)
    assert out.stdout.startswith("[\n  "), "pretty-printed with an indent of 2"


def test_schema_defaults_to_openai_and_can_select_one_tool():
    out = run("schema", DEMO, "deploy")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [entry["function"]["name"] for entry in doc] == ["deploy"]


def test_schema_of_an_unknown_tool_suggests_the_close_name_and_exits_2():
    out = run("schema", DEMO, "crunh")
    assert out.returncode == 2
    assert "unknown tool 'crunh'" in out.stderr
    assert "'crunch'" in out.stderr
    assert out.stdout == ""


def test_schema_refuses_an_unknown_format_with_the_choices():
    out = run("schema", DEMO, "--format", "cohere")
    assert out.returncode == 2
    assert "choose from 'openai', 'anthropic', 'gemini', 'mcp'" in out.stderr


@pytest.mark.parametrize("command", ["list", "schema", "call", "resume", "serve", "demo"])
def test_every_subcommand_has_help_with_an_example(command):
    out = run(command, "--help")
    assert out.returncode == 0, out.stderr
    assert f"usage: toolnexus {command}" in out.stdout
    assert "example" in out.stdout
    assert "toolnexus " + command in out.stdout.split("example", 1)[1]


def test_the_top_level_help_documents_every_exit_code():
    out = run("--help")
    assert out.returncode == 0
    for code, meaning in [
        ("0", "ok"),
        ("1", "error"),
        ("2", "usage error"),
        ("3", "pending"),
        ("124", "timed out"),
        ("130", "cancelled"),
    ]:
        assert any(
            line.split()[:1] == [code] and meaning in line for line in out.stdout.splitlines()
        ), (code, out.stdout)


def test_call_help_documents_the_exit_codes_too():
    out = run("call", "--help")
    assert "124  timed out" in out.stdout
    assert "130  cancelled" in out.stdout
    assert "3    pending" in out.stdout


def test_no_command_is_a_usage_error():
    out = run()
    assert out.returncode == 2
    assert "usage: toolnexus" in out.stderr


def test_version_prints_the_package_version():
    out = run("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"toolnexus {toolnexus.__version__}"
