"""The revealed set is state: Host.run_turn refuses a deferred tool no search found, lets
through what a search of the conversation (ours or the provider's) revealed, runs
``call_tool``'s inner call, and a turn parked after a discovery resumes — in another
process too — with the same revealed set."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolnexus
from toolnexus import Answer, Host, Request, ToolContext, Toolkit, ToolResult, TurnResult, tool

runs: list[str] = []


@tool(defer=True)
def delete_repo(owner: str, repo: str) -> str:
    """Delete a repository."""
    runs.append("delete_repo")
    return f"deleted {owner}/{repo}"


@tool(defer=True)
def create_issue(title: str) -> str:
    """Open an issue in the tracker."""
    runs.append("create_issue")
    return f"opened {title}"


@tool
def ping() -> str:
    """Check the service answers."""
    return "pong"


@pytest.fixture
def host():
    runs.clear()
    with Host(Toolkit([delete_repo, create_issue, ping])) as host:
        yield host


def call(call_id: str, name: str, args: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def test_a_deferred_tool_never_revealed_is_refused_without_running(host):
    turn = host.run_turn([call("1", "create_issue", {"title": "x"}), call("2", "ping", {})])
    refused, pong = turn.results
    assert refused.is_error
    assert refused.output.startswith("tool 'create_issue' is not loaded: no search in this")
    assert "Call search_tools" in refused.output
    assert pong.output == "pong"
    assert runs == [] and turn.revealed == ()


def test_a_search_reveals_tools_for_the_next_turns(host):
    found = host.run_turn([call("1", "search_tools", {"query": "file a bug"})])
    assert found.revealed == ("create_issue",)
    assert json.loads(found.results[0].output)[0]["name"] == "create_issue"
    later = host.run_turn([call("2", "create_issue", {"title": "x"})], revealed=found.revealed)
    assert later.results[0].output == "opened x"
    assert later.revealed == ("create_issue",)  # handed on unchanged
    # a tool the search did not reveal is still refused
    other = host.run_turn(
        [call("3", "delete_repo", {"owner": "a", "repo": "b"})], revealed=later.revealed
    )
    assert other.results[0].is_error and runs == ["create_issue"]


def test_call_tool_runs_the_named_call_under_the_same_rule(host):
    via = {"name": "create_issue", "arguments": json.dumps({"title": "t"})}
    refused = host.run_turn([call("1", "call_tool", via)])
    assert refused.results[0].output.startswith("tool 'create_issue' is not loaded")
    done = host.run_turn([call("2", "call_tool", via)], revealed=["create_issue"])
    assert done.results[0].output == "opened t"
    assert done.calls[0].name == "call_tool"  # the model's call, answered under its id
    assert runs == ["create_issue"]


def test_revealed_must_be_names(host):
    with pytest.raises(TypeError, match="revealed takes a list of tool names, got one str"):
        host.run_turn([call("1", "ping", {})], revealed="create_issue")


def test_anthropic_server_search_results_reveal_within_the_same_response(host):
    response = {
        "content": [
            {
                "type": "server_tool_use",
                "id": "s1",
                "name": "tool_search_tool_bm25",
                "input": {"query": "repo"},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "s1",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": "delete_repo"}],
                },
            },
            {
                "type": "tool_use",
                "id": "u1",
                "name": "delete_repo",
                "input": {"owner": "a", "repo": "b"},
            },
        ]
    }
    turn = host.run_turn(response, style="anthropic")
    assert turn.results[0].output == "deleted a/b"
    assert turn.revealed == ("delete_repo",)


def test_anthropic_client_side_search_is_answered_with_tool_references(host):
    blocks = [
        {
            "type": "tool_use",
            "id": "t1",
            "name": "tool_search",
            "input": {"query": "remove a project"},
        }
    ]
    turn = host.run_turn(blocks, style="anthropic")
    assert turn.messages == [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "tool_reference", "tool_name": "delete_repo"}],
                }
            ],
        }
    ]
    assert turn.revealed == ("delete_repo",)


def test_responses_client_tool_search_is_answered_with_tool_search_output(host):
    response = {
        "output": [
            {
                "type": "tool_search_call",
                "id": "ts_1",
                "call_id": "call_s",
                "execution": "client",
                "status": "completed",
                "arguments": {"query": "open an issue"},
            }
        ]
    }
    turn = host.run_turn(response, style="responses")
    (item,) = turn.messages
    assert item["type"] == "tool_search_output" and item["call_id"] == "call_s"
    assert item["execution"] == "client" and item["status"] == "completed"
    assert item["tools"][0]["name"] == "create_issue"
    assert item["tools"][0]["parameters"]["required"] == ["title"]
    assert turn.revealed[0] == "create_issue"


def test_responses_hosted_search_output_reveals_the_tools_it_loaded(host):
    response = {
        "output": [
            {
                "type": "tool_search_call",
                "id": "ts",
                "execution": "server",
                "status": "completed",
                "arguments": {},
            },
            {
                "type": "tool_search_output",
                "id": "to",
                "execution": "server",
                "status": "completed",
                "tools": [
                    {
                        "type": "namespace",
                        "name": "gh",
                        "description": "d",
                        "tools": [{"type": "function", "name": "create_issue"}],
                    }
                ],
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "create_issue",
                "arguments": '{"title": "x"}',
            },
        ]
    }
    turn = host.run_turn(response, style="responses")
    assert [r.output for r in turn.results] == ["opened x"]
    assert turn.revealed == ("create_issue",)


def test_the_revealed_set_round_trips_through_json(host):
    turn = host.run_turn([call("1", "search_tools", {"query": "file a bug"})])
    back = TurnResult.from_json(turn.to_json())
    assert back.revealed == turn.revealed == ("create_issue",)
    assert "revealed" not in TurnResult("openai", ()).to_dict()  # the old wire form, unchanged
    with pytest.raises(ValueError, match="revealed\\[0\\]"):
        TurnResult.from_dict({"style": "openai", "calls": [], "revealed": [1]})


# --------------------------------------------------------------------------- across processes

TOOLS_MODULE = """
from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool

@tool(defer=True)
def deploy_service(service: str, ctx: ToolContext) -> ToolResult:
    '''Deploy a service, asking where first.'''
    if ctx.answer is None:
        return ToolResult.pending(Request("input", f"Where should {service} go?"))
    return ToolResult.ok(f"deployed {service} to {ctx.answer.data['env']}")

@tool(defer=True)
def service_status(service: str) -> str:
    '''Show the status of a service.'''
    return f"{service} is up"

toolkit = Toolkit([deploy_service, service_status])
"""

RESUMER = """
import json, sys
from toolnexus import Answer, Host, TurnResult
from search_tools_module import toolkit

parked = TurnResult.from_json(open(sys.argv[1]).read())
with Host(toolkit) as host:
    done = host.resume_turn(parked, Answer.accept(parked.pending, {"env": "prod"}))
    status = {"id": "s", "type": "function",
              "function": {"name": "service_status", "arguments": '{"service": "api"}'}}
    after = host.run_turn([status], revealed=done.revealed)
    without = host.run_turn([status])
print(json.dumps({
    "output": done.results[0].output,
    "revealed": list(done.revealed),
    "after": after.results[0].output,
    "without": without.results[0].output,
}))
"""


def test_a_turn_parked_after_a_discovery_resumes_in_another_process_with_its_revealed_set(
    tmp_path: Path, monkeypatch
):
    (tmp_path / "search_tools_module.py").write_text(textwrap.dedent(TOOLS_MODULE))
    (tmp_path / "resumer.py").write_text(textwrap.dedent(RESUMER))
    monkeypatch.syspath_prepend(str(tmp_path))
    import search_tools_module

    key = "search-test-key-0123456789abcdef"
    with Host(search_tools_module.toolkit, secret=key) as host:
        found = host.run_turn([call("1", "search_tools", {"query": "service"})])
        assert set(found.revealed) == {"deploy_service", "service_status"}
        parked = host.run_turn(
            [call("2", "deploy_service", {"service": "api"})], revealed=found.revealed
        )
    assert parked.pending is not None
    (tmp_path / "parked.json").write_text(parked.to_json())

    env_path = [str(tmp_path), str(Path(toolnexus.__file__).resolve().parent.parent)]
    out = subprocess.run(
        [sys.executable, str(tmp_path / "resumer.py"), str(tmp_path / "parked.json")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": os.pathsep.join(env_path), "PATH": "", "TOOLNEXUS_SECRET": key},
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["output"] == "deployed api to prod"
    assert set(seen["revealed"]) == {"deploy_service", "service_status"}
    assert seen["after"] == "api is up"
    assert seen["without"].startswith("tool 'service_status' is not loaded")


def test_a_resumed_call_tool_call_is_checked_against_its_inner_call(host):
    asked: list[object] = []

    @tool(defer=True)
    def approve(item: str, ctx: ToolContext) -> ToolResult:
        """Approve an item after asking."""
        asked.append(ctx.answer)
        if ctx.answer is None:
            return ToolResult.pending(Request("approval", f"Approve {item}?"))
        return ToolResult.ok(f"approved {item}")

    host.toolkit.register(approve)
    via = {"name": "approve", "arguments": json.dumps({"item": "x"})}
    parked = host.run_turn([call("1", "call_tool", via)], revealed=["approve"])
    assert parked.pending is not None
    done = host.resume_turn(parked, Answer.accept(parked.pending))
    assert done.results[0].output == "approved x"
    assert done.revealed == ("approve",)


def test_gemini_uses_the_local_fallback(host):
    found = host.run_turn(
        [{"functionCall": {"name": "search_tools", "args": {"query": "delete a repository"}}}],
        style="gemini",
    )
    assert found.revealed[0] == "delete_repo"
    called = host.run_turn(
        [{"functionCall": {"name": "delete_repo", "args": {"owner": "a", "repo": "b"}}}],
        style="gemini",
        revealed=found.revealed,
    )
    assert called.results[0].output == "deleted a/b"
    response = called.messages[0]["parts"][0]["functionResponse"]
    assert response == {"name": "delete_repo", "response": {"output": "deleted a/b"}}


def test_arun_turn_keeps_the_revealed_set_too(host):
    turn = asyncio.run(
        host.arun_turn([call("1", "create_issue", {"title": "x"})], revealed=["create_issue"])
    )
    assert turn.results[0].output == "opened x" and turn.revealed == ("create_issue",)
