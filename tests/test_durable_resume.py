"""Durable resume (loop rule 2): a pending request is plain JSON, answered later — even by
another process — and checked (id, expiry, decline, data.schema) before the tool runs."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolnexus
from toolnexus import Answer, Host, Request, ToolContext, Toolkit, ToolResult, tool

ENV_SCHEMA = {
    "type": "object",
    "properties": {
        "env": {"type": "string", "enum": ["dev", "staging", "prod"]},
        "replicas": {"type": "integer"},
    },
    "required": ["env"],
}

runs: list[Answer | None] = []


@tool
def deploy(service: str, ctx: ToolContext) -> ToolResult:
    """Deploy a service, asking where first."""
    runs.append(ctx.answer)
    if ctx.answer is None:
        return ToolResult.pending(
            Request("input", f"Where should {service} go?", data={"schema": ENV_SCHEMA})
        )
    return ToolResult.ok(f"deployed {service} to {ctx.answer.data['env']}")


@tool
def nagging(ctx: ToolContext) -> ToolResult:
    """Asks again even after an answer."""
    runs.append(ctx.answer)
    return ToolResult.pending(Request("approval", "Really?"))


@pytest.fixture(autouse=True)
def fresh_runs():
    runs.clear()


@pytest.fixture
def host():
    with Host(Toolkit([deploy, nagging])) as host:
        yield host


def suspend(host: Host) -> Request:
    result = host.call("deploy", {"service": "api"})
    request = ToolResult.pending_of(result)
    assert request is not None
    runs.clear()
    return request


def test_resume_reruns_the_tool_with_the_answer(host):
    request = suspend(host)
    answer = Answer.accept(request, {"env": "prod"})
    result = host.resume("deploy", {"service": "api"}, request, answer)
    assert result.output == "deployed api to prod"
    assert runs == [answer]


def test_resume_accepts_the_wire_forms_of_request_and_answer(host):
    request = suspend(host)
    answer = Answer.accept(request, {"env": "dev"})
    assert (
        host.resume("deploy", '{"service": "api"}', request.to_json(), answer.to_json()).output
        == "deployed api to dev"
    )
    request = suspend(host)  # each answer is used once: a new question for the next form
    answer = Answer.accept(request, {"env": "dev"})
    assert (
        host.resume("deploy", {"service": "api"}, request.to_dict(), answer.to_dict()).output
        == "deployed api to dev"
    )


def test_resume_accepts_the_pending_result_and_its_wire_forms(host):
    for form in (lambda r: r, ToolResult.to_dict, ToolResult.to_json):
        pending = host.call("deploy", {"service": "api"})
        answer = Answer.accept(ToolResult.pending_of(pending), {"env": "dev"})
        assert (
            host.resume("deploy", {"service": "api"}, form(pending), answer).output
            == "deployed api to dev"
        )


def test_an_answer_id_mismatch_is_a_clear_error_and_the_tool_is_not_run(host):
    request = suspend(host)
    result = host.resume(
        "deploy", {"service": "api"}, request, Answer("pnd-someone-else", True, {"env": "prod"})
    )
    assert result.is_error
    assert "does not match" in result.output
    assert "pnd-someone-else" in result.output and request.id in result.output
    assert runs == []


@tool
def stale(ctx: ToolContext) -> ToolResult:
    """Asks a question that has expired already."""
    runs.append(ctx.answer)
    return ToolResult.pending(Request("approval", "Too late?", expires_at="2001-01-01T00:00:00Z"))


def test_an_expired_request_is_an_error_and_the_tool_is_not_run():
    with Host(Toolkit([stale])) as host:
        pending = host.call("stale", {})
        runs.clear()
        request = ToolResult.pending_of(pending)
        result = host.resume("stale", {}, pending, Answer.accept(request))
    assert result.is_error and "expired at 2001-01-01T00:00:00Z" in result.output
    assert result.metadata == {"reason": "expired"}
    assert runs == []


def test_a_declined_answer_is_declined_expired_and_the_tool_is_not_run(host):
    request = suspend(host)
    result = host.resume("deploy", {"service": "api"}, request, Answer.decline(request))
    assert result.output == f"declined/expired: {request.prompt}"
    assert runs == []


def test_an_answer_that_breaks_the_requests_schema_names_the_field(host):
    request = suspend(host)
    bad_type = host.resume(
        "deploy",
        {"service": "api"},
        request,
        Answer.accept(request, {"env": "prod", "replicas": "three"}),
    )
    missing = host.resume("deploy", {"service": "api"}, request, Answer.accept(request, {}))
    assert bad_type.is_error and "replicas" in bad_type.output
    assert missing.is_error and "env" in missing.output
    assert runs == []


def test_a_second_suspension_on_resume_is_unresolved(host):
    first = host.call("nagging", {})
    request = ToolResult.pending_of(first)
    result = host.resume("nagging", {}, request, Answer.accept(request))
    assert result.output == "unresolved: Really?"


def test_malformed_wire_input_is_an_error_result_not_an_exception(host):
    request = suspend(host)
    result = host.resume("deploy", {"service": "api"}, request, '{"id": "x"}')
    assert result.is_error and "ok" in result.output
    assert runs == []


def test_aresume_is_the_async_twin(host):
    request = suspend(host)
    result = asyncio.run(
        host.aresume(
            "deploy", {"service": "api"}, request, Answer.accept(request, {"env": "staging"})
        )
    )
    assert result.output == "deployed api to staging"


TOOLS_MODULE = '''
from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool

@tool
def deploy(service: str, ctx: ToolContext) -> ToolResult:
    """Deploy a service, asking where first."""
    if ctx.answer is None:
        return ToolResult.pending(Request("input", f"Where should {service} go?"))
    return ToolResult.ok(f"deployed {service} to {ctx.answer.data['env']} (pid-checked)")

toolkit = Toolkit([deploy])
'''

RESUMER = """
import json, sys
from pathlib import Path
from toolnexus import Answer, Host, Request
from toolnexus.stores import SqliteAnswerStore
from durable_tools import toolkit

parked = json.loads(Path(sys.argv[1]).read_text())
request = Request.from_dict(parked["pending"]["metadata"]["pending"])
answer = Answer.accept(request, {"env": "prod"})
# A fresh host in a fresh process: its key comes from TOOLNEXUS_SECRET, and the used answers
# are shared through an SQLite file.
with Host(toolkit, answer_store=SqliteAnswerStore(sys.argv[2])) as host:
    result = host.resume(parked["name"], parked["args"], parked["pending"], answer)
print(result.to_json())
"""

KEY = "durable-test-key-0123456789abcdef"


def test_a_request_persisted_to_a_file_is_resumed_by_a_fresh_host_in_another_process(
    tmp_path: Path, monkeypatch
):
    (tmp_path / "durable_tools.py").write_text(textwrap.dedent(TOOLS_MODULE))
    (tmp_path / "resumer.py").write_text(textwrap.dedent(RESUMER))
    monkeypatch.syspath_prepend(str(tmp_path))
    tools = importlib.import_module("durable_tools")

    with Host(tools.toolkit, secret=KEY) as host:
        pending = host.call("deploy", '{"service": "billing"}')
    parked = tmp_path / "parked.json"
    parked.write_text(
        json.dumps({"name": "deploy", "args": {"service": "billing"}, "pending": pending.to_dict()})
    )

    def resume_elsewhere(key: str) -> ToolResult:
        # Only the test folder and this toolnexus: the child must not inherit test-only paths.
        env_path = [str(tmp_path), str(Path(toolnexus.__file__).resolve().parent.parent)]
        out = subprocess.run(
            [sys.executable, str(tmp_path / "resumer.py"), str(parked), str(tmp_path / "used.db")],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PYTHONPATH": os.pathsep.join(env_path), "PATH": "", "TOOLNEXUS_SECRET": key},
        )
        assert out.returncode == 0, out.stderr
        return ToolResult.from_json(out.stdout.strip())

    foreign = resume_elsewhere("another-key-0123456789abcdef")
    assert foreign.is_error and "does not verify under this host's key(s)" in foreign.output
    result = resume_elsewhere(KEY)
    assert result.output == "deployed billing to prod (pid-checked)"
    assert not result.is_error
    replayed = resume_elsewhere(KEY)  # a third process, the same key, the same answer
    assert replayed.is_error and "already answered" in replayed.output
