"""A tool's question answered at the prompt (answers piped into stdin, prompts on stderr),
and the scripted route: `call --no-input` prints the pending request, `resume` finishes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
DEMO = "toolnexus.demo:toolkit"
QUESTIONS = str(ROOT / "examples" / "questions.py")


# ------------------------------------------------------------------ answered at the prompt


def test_a_schema_question_asks_each_field_with_type_choices_and_default():
    out = run("call", DEMO, "deploy", stdin="production\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "deployed to production\n"
    assert out.stderr == (
        "? Which environment?\n"
        "  env — where to deploy (string; one of: staging, production) [staging]: production\n"
    )


def test_an_empty_line_takes_the_default():
    out = run("call", DEMO, "deploy", stdin="\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "deployed to staging\n"


def test_an_invalid_answer_is_explained_and_asked_again():
    out = run("call", QUESTIONS, "deploy", "service=api", stdin="qa\nProduction\n0\nx\n3\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "deployed api to production with 3 replica(s)\n"
    lines = out.stderr.splitlines()
    assert lines[1].endswith("[staging]: qa")
    assert (
        lines[2] == '  invalid: expected one of "staging", "production", got string "qa"; try again'
    )
    assert lines[4] == "  replicas (integer, 1 to 10) [1]: 0"
    assert lines[5] == "  invalid: expected at least 1, got 0; try again"
    assert lines[7] == '  invalid: expected integer, got string "x"; try again'


def test_end_of_input_declines_and_the_declined_result_exits_1():
    out = run("call", DEMO, "deploy", stdin="")
    assert out.returncode == 1
    assert out.stdout.startswith("declined")
    assert "(end of input: declined)" in out.stderr


def test_an_approval_asks_yes_or_no():
    yes = run("call", QUESTIONS, "delete", "path=/tmp/x", stdin="maybe\ny\n")
    assert yes.returncode == 0, yes.stderr
    assert yes.stdout == "deleted /tmp/x (pretend)\n"
    assert "  approve? [y/N] maybe\n  please answer y or n\n  approve? [y/N] y\n" in yes.stderr
    no = run("call", QUESTIONS, "delete", "path=/tmp/x", stdin="n\n")
    assert no.returncode == 1
    assert no.stdout.startswith("declined")


def test_an_authorization_shows_the_url_and_waits_for_enter_or_n():
    done = run("call", QUESTIONS, "inbox", stdin="\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "3 unread messages\n"
    assert "  https://mail.example.com/login?client=toolnexus-example\n" in done.stderr
    assert "press Enter (n to decline)" in done.stderr
    refused = run("call", QUESTIONS, "inbox", stdin="n\n")
    assert refused.returncode == 1
    assert refused.stdout.startswith("declined")


def test_a_question_without_a_schema_takes_one_line_as_the_answer():
    out = run("call", QUESTIONS, "greet", stdin="Ada Lovelace\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello, Ada Lovelace\n"
    assert "? What is your name?\n  > Ada Lovelace\n" in out.stderr


FORMS = """
from toolnexus import Request, ToolContext, ToolResult, tool

def ask(schema):
    def run(ctx: ToolContext) -> ToolResult:
        if ctx.answer is None:
            return ToolResult.pending(Request("input", "Details?", data={"schema": schema}))
        return ToolResult.ok(repr(dict(ctx.answer.data or {})))
    return run

# `ticket` is required but not described: it is asked too.
unlisted = tool(ask({"type": "object", "properties": {"title": {"type": "string"}},
                     "required": ["title", "ticket"]}), name="unlisted")
# No answer can fit (three keys at least, two to give): asked three times, then declined.
impossible = tool(ask({"type": "object", "minProperties": 3,
                       "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
                  name="impossible")
# Titled choices, as MCP's elicitation forms give them (legacy enumNames arrive so too).
titled = tool(ask({"type": "object", "properties": {"env": {"type": "string", "oneOf": [
    {"const": "stg", "title": "Staging"}, {"const": "prd", "title": "Production"}]}},
    "required": ["env"]}), name="titled")
"""


def test_a_required_key_the_schema_does_not_describe_is_asked_too(tmp_path):
    (tmp_path / "forms.py").write_text(FORMS)
    out = run("call", "forms.py:unlisted", stdin="Broken login\n1234\n", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "{'title': 'Broken login', 'ticket': 1234}\n"
    assert out.stderr == "? Details?\n  title (string): Broken login\n  ticket: 1234\n"


def test_a_form_no_answer_can_fit_is_declined_after_three_rounds_not_asked_forever(tmp_path):
    (tmp_path / "forms.py").write_text(FORMS)
    out = run("call", "forms.py:impossible", stdin="x\n" * 1000, cwd=tmp_path)
    assert out.returncode == 1
    assert out.stdout == "declined/expired: Details?\n"
    lines = out.stderr.splitlines()
    assert len(lines) == 1 + 3 * 3  # the prompt, then per round: a, b and the verdict
    assert lines[3].endswith("; once more from the start")
    assert lines[-1].startswith("  invalid: expected at least 3 ")
    assert lines[-1].endswith("; no answer fitted the question's schema in 3 tries: declined")


def test_titled_choices_are_listed_with_their_titles_and_a_title_answers(tmp_path):
    (tmp_path / "forms.py").write_text(FORMS)
    out = run("call", "forms.py:titled", stdin="qa\nproduction\n", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "{'env': 'prd'}\n"
    label = "  env (string; one of: stg (Staging), prd (Production)): "
    assert out.stderr.splitlines()[1:] == [
        f"{label}qa",
        '  invalid: expected "stg" or "prd", got string "qa"; try again',
        f"{label}production",
    ]


# ------------------------------------------------------------------ --no-input, then resume


@pytest.fixture(autouse=True)
def keyed(tmp_path, monkeypatch):
    """Every process of a test shares one key (the children inherit this environment) and
    one file of used answers."""
    monkeypatch.setenv("TOOLNEXUS_SECRET", "cli-test-key-0123456789abcdef")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_no_input_prints_the_pending_result_with_its_binding_and_exits_3():
    out = run("call", DEMO, "deploy", "--no-input", stdin="production\n")
    assert out.returncode == 3, out.stderr
    parked = json.loads(out.stdout)
    assert parked["isError"] is True and parked["output"] == "Which environment?"
    assert parked["metadata"]["binding"].startswith("tnb1.")
    request = parked["metadata"]["pending"]
    assert request["kind"] == "input"
    assert request["prompt"] == "Which environment?"
    assert request["id"].startswith("pnd-")
    assert request["data"]["schema"]["properties"]["env"]["enum"] == ["staging", "production"]
    assert "toolnexus resume toolnexus.demo:toolkit deploy" in out.stderr


def test_a_pending_request_saved_to_a_file_is_resumed_with_an_answer_file(tmp_path):
    first = run("call", DEMO, "deploy", "--no-input")
    assert first.returncode == 3
    (tmp_path / "req.json").write_text(first.stdout, encoding="utf-8")
    request_id = json.loads(first.stdout)["metadata"]["pending"]["id"]
    (tmp_path / "ans.json").write_text(
        json.dumps({"id": request_id, "ok": True, "data": {"env": "production"}}),
        encoding="utf-8",
    )
    done = run(
        "resume", DEMO, "deploy", "--request", "@req.json", "--answer", "@ans.json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "deployed to production\n"


def test_resume_takes_inline_json_and_an_answer_without_id_echoes_the_request():
    first = run("call", DEMO, "deploy", "--no-input")
    done = run(
        "resume",
        DEMO,
        "deploy",
        "--request",
        first.stdout,
        "--answer",
        '{"ok": true, "data": {"env": "staging"}}',
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "deployed to staging\n"


def test_resume_with_an_answer_failing_the_requests_schema_is_a_usage_error_and_runs_nothing():
    first = run("call", DEMO, "deploy", "--no-input")
    done = run(
        "resume",
        DEMO,
        "deploy",
        "--request",
        first.stdout,
        "--answer",
        '{"ok": true, "data": {"env": "moon"}}',
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "toolnexus resume: error: --answer: invalid answer to 'Which environment?': env: "
        'expected one of "staging", "production", got string "moon"; give data that matches '
        "the request's data.schema\n"
    )


def test_resume_accepts_the_whole_pending_result_that_json_printed():
    first = run("call", DEMO, "deploy", "--no-input", "--json")
    assert first.returncode == 3
    assert json.loads(first.stdout)["metadata"]["pending"]["kind"] == "input"
    done = run(
        "resume",
        DEMO,
        "deploy",
        "--request",
        first.stdout,
        "--answer",
        '{"ok": true, "data": {"env": "production"}}',
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"output": "deployed to production", "isError": False}


def test_resume_without_an_answer_asks_at_the_prompt():
    first = run("call", DEMO, "deploy", "--no-input")
    done = run("resume", DEMO, "deploy", "--request", first.stdout, stdin="production\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "deployed to production\n"
    assert "? Which environment?" in done.stderr


def test_an_answer_for_another_request_is_refused_not_run():
    first = run("call", DEMO, "deploy", "--no-input")
    done = run(
        "resume",
        DEMO,
        "deploy",
        "--request",
        first.stdout,
        "--answer",
        '{"id": "pnd-someone-else", "ok": true, "data": {"env": "staging"}}',
    )
    assert done.returncode == 1
    assert "deployed" not in done.stdout


def test_a_declining_answer_file_gives_the_declined_result():
    first = run("call", DEMO, "deploy", "--no-input")
    done = run(
        "resume",
        DEMO,
        "deploy",
        "--request",
        first.stdout,
        "--answer",
        '{"ok": false, "reason": "declined"}',
    )
    assert done.returncode == 1
    assert done.stdout == "declined/expired: Which environment?\n"


def test_a_malformed_request_or_answer_is_a_usage_error():
    bad_request = run(
        "resume", DEMO, "deploy", "--request", '{"id": "pnd-1"}', "--answer", '{"ok": true}'
    )
    assert bad_request.returncode == 2
    assert "--request: invalid Request: field 'kind'" in bad_request.stderr
    first = run("call", DEMO, "deploy", "--no-input")
    bad_answer = run("resume", DEMO, "deploy", "--request", first.stdout, "--answer", '{"ok": 1}')
    assert bad_answer.returncode == 2
    assert "--answer: invalid Answer: field 'ok'" in bad_answer.stderr


def test_resume_with_no_input_needs_an_answer():
    first = run("call", DEMO, "deploy", "--no-input")
    out = run("resume", DEMO, "deploy", "--request", first.stdout, "--no-input")
    assert out.returncode == 2
    assert "--answer is required with --no-input" in out.stderr
