"""Programmatic tool calling through the host: a call the model's code made (Anthropic's
``caller: {"type": "code_execution_…"}``, OpenAI's ``caller: {"type": "program"}``) runs
with every host rule and policy, its result goes back in the shape that caller expects,
the caller is what middleware and hooks see, and a caller the tool did not allow is refused
before anything runs. The turns come from recorded provider responses (tests/fixtures/
providers, written from the SDK types)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from toolnexus import Answer, Host, Part, Toolkit, ToolResult, TurnResult, tool
from toolnexus.policies import Next, ToolCall, hooks, require_approval

FIXTURES = Path(__file__).parent / "fixtures" / "providers"
PACKAGE_ROOT = str(Path(__import__("toolnexus").__file__).resolve().parent.parent)
KEY = "programmatic-test-key-0123456789"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


TOOLS_MODULE = '''
from toolnexus import Toolkit, tool

deployed = []

@tool(allowed_callers=["direct", "programmatic"])
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@tool(allowed_callers=["programmatic"])
def deploy(env: str) -> str:
    """Deploy to an environment."""
    deployed.append(env)
    return f"deployed to {env}"

toolkit = Toolkit([add, deploy])
'''

RESUMER = """
import json, sys
from pathlib import Path
from toolnexus import Answer, Host, TurnResult
from toolnexus.policies import require_approval
from programmatic_tools import deployed, toolkit

turn = TurnResult.from_json(Path(sys.argv[1]).read_text())
with Host(toolkit, tool_middleware={"deploy": [require_approval()]}) as host:
    turn = host.resume_turn(turn, Answer.accept(turn.pending))
callers = [call.caller for call in turn.calls]
print(json.dumps({"messages": turn.messages, "error": turn.error, "deployed": deployed,
                  "callers": callers}))
"""


def park_and_resume_elsewhere(tmp_path: Path, monkeypatch: Any, response: Any, style: str) -> Any:
    """Run the recorded turn here with require_approval on deploy, park it as JSON, and
    resume it in a fresh process; returns (the halted turn, what the child printed)."""
    (tmp_path / "programmatic_tools.py").write_text(textwrap.dedent(TOOLS_MODULE))
    (tmp_path / "resumer.py").write_text(textwrap.dedent(RESUMER))
    monkeypatch.syspath_prepend(str(tmp_path))
    import programmatic_tools  # type: ignore[import-not-found]

    programmatic_tools.deployed.clear()
    host = Host(
        programmatic_tools.toolkit, secret=KEY, tool_middleware={"deploy": [require_approval()]}
    )
    with host:
        turn = host.run_turn(response, style=style)
    assert programmatic_tools.deployed == []  # the policy held the programmatic call
    parked = tmp_path / "turn.json"
    parked.write_text(turn.to_json())
    out = subprocess.run(
        [sys.executable, str(tmp_path / "resumer.py"), str(parked)],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PYTHONPATH": os.pathsep.join([str(tmp_path), PACKAGE_ROOT]),
            "PATH": "",
            "TOOLNEXUS_SECRET": KEY,
        },
    )
    assert out.returncode == 0, out.stderr
    return turn, json.loads(out.stdout)


def test_an_anthropic_programmatic_turn_suspends_on_approval_and_resumes_in_another_process(
    tmp_path: Path, monkeypatch: Any
) -> None:
    turn, child = park_and_resume_elsewhere(
        tmp_path, monkeypatch, fixture("anthropic_programmatic_turn.json"), "anthropic"
    )
    assert turn.waiting == ("toolu_01PtcDeploy",)
    assert turn.pending is not None and turn.pending.kind == "approval"
    caller = {"type": "code_execution_20260120", "tool_id": "srvtoolu_01PtcCodeExec"}
    assert [c.caller for c in turn.calls] == [caller, caller]
    assert child["error"] is None and child["deployed"] == ["staging"]
    assert child["callers"] == [caller, caller]  # the other process read who made each call
    (message,) = child["messages"]
    # Results for code: only tool_result blocks, each content a string the code reads.
    assert message == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01PtcAdd", "content": "42",
             "is_error": False},
            {"type": "tool_result", "tool_use_id": "toolu_01PtcDeploy",
             "content": "deployed to staging", "is_error": False},
        ],
    }  # fmt: skip


def test_an_openai_programmatic_call_suspends_on_approval_and_goes_back_with_its_caller(
    tmp_path: Path, monkeypatch: Any
) -> None:
    turn, child = park_and_resume_elsewhere(
        tmp_path, monkeypatch, fixture("openai_programmatic_response.json"), "responses"
    )
    assert turn.waiting == ("call_deploy_01",)
    assert child["error"] is None and child["deployed"] == ["staging"]
    caller = {"type": "program", "caller_id": "call_prog_01"}
    assert [c.caller for c in turn.calls] == [caller, caller]
    assert child["callers"] == [caller, caller]
    assert child["messages"] == [
        {"type": "function_call_output", "call_id": "call_add_01", "output": "42",
         "caller": caller},
        {"type": "function_call_output", "call_id": "call_deploy_01",
         "output": "deployed to staging", "caller": caller},
    ]  # fmt: skip


def test_a_caller_the_tool_did_not_allow_is_refused_before_anything_runs() -> None:
    runs: list[str] = []
    seen: list[str] = []

    @tool  # direct only: the default
    def transfer(amount: int) -> str:
        """Move money."""
        runs.append("transfer")
        return "moved"

    def spy(call: ToolCall, call_next: Next) -> ToolResult:
        seen.append(call.name)
        return call_next(call)

    blocks = [
        {"type": "tool_use", "id": "toolu_1", "name": "transfer", "input": {"amount": 5},
         "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_1"}},
    ]  # fmt: skip
    with Host(Toolkit([transfer]), middleware=[spy]) as host:
        turn = host.run_turn(blocks, style="anthropic")
    (result,) = turn.results
    assert result.is_error
    assert "cannot be called programmatically" in result.output
    assert "allowed_callers" in result.output
    assert runs == [] and seen == []  # no tool, no policy: refused before the chain


def test_a_direct_call_to_a_programmatic_only_tool_is_refused() -> None:
    @tool(allowed_callers=["programmatic"])
    def bulk(n: int) -> int:
        """Only for code."""
        return n

    with Host(Toolkit([bulk])) as host:
        turn = host.run_turn(
            [{"type": "tool_use", "id": "t", "name": "bulk", "input": {"n": 1}}],
            style="anthropic",
        )
        assert "cannot be called directly" in turn.results[0].output
        assert host.call("bulk", {"n": 3}).output == "3"  # the application itself may


def test_middleware_and_hooks_see_the_caller_and_policies_apply_alike() -> None:
    seen: list[tuple[str, str | None]] = []
    events: list[Any] = []

    @tool(allowed_callers=["direct", "programmatic"])
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def spy(call: ToolCall, call_next: Next) -> ToolResult:
        seen.append((call.call_id or "", call.caller))
        return call_next(call)

    response = {
        "output": [
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1,"b":2}'},
            {"type": "function_call", "call_id": "c2", "name": "add", "arguments": '{"a":3,"b":4}',
             "caller": {"type": "program", "caller_id": "p1"}},
        ]
    }  # fmt: skip
    with Host(Toolkit([add]), middleware=[spy, hooks(before_tool=events.append)]) as host:
        turn = host.run_turn(response, style="responses")
        assert host.call("add", {"a": 0, "b": 0}).output == "0"
    assert sorted(seen) == [("", None), ("c1", "direct"), ("c2", "programmatic")]
    assert sorted((e["id"] or "", e["caller"]) for e in events) == sorted(seen)
    # No caller on the direct call: its output carries none; the program's call echoes it.
    assert turn.messages == [
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
        {"type": "function_call_output", "call_id": "c2", "output": "7",
         "caller": {"type": "program", "caller_id": "p1"}},
    ]  # fmt: skip


def test_a_programmatic_callers_result_is_text_even_with_parts() -> None:
    @tool(allowed_callers=["programmatic"])
    def chart(q: str) -> ToolResult:
        """Draw a chart."""
        return ToolResult.ok(f"chart {q}", parts=[Part.image(b"GIF89a", "image/gif")])

    block = {"type": "tool_use", "id": "t", "name": "chart", "input": {"q": "Q3"},
             "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_9"}}  # fmt: skip
    with Host(Toolkit([chart])) as host:
        (message,) = host.run_turn([block], style="anthropic").messages
    assert message["content"][0]["content"] == (
        "chart Q3\n[unsupported image part (image/gif, 6 bytes)]"
    )


def test_the_caller_survives_a_parked_turn() -> None:
    @tool(allowed_callers=["programmatic"])
    def ask(q: str) -> ToolResult:
        """Asks."""
        from toolnexus import Request

        return ToolResult.pending(Request("input", q))

    block = {"type": "tool_use", "id": "t", "name": "ask", "input": {"q": "?"},
             "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_2"}}  # fmt: skip
    with Host(Toolkit([ask])) as host:
        turn = host.run_turn([block], style="anthropic")
        back = TurnResult.from_json(turn.to_json())
        assert back.calls[0].caller == block["caller"]
        # The resumed call runs as the same caller: allowed, since the tool allows it.
        resumed = host.resume_turn(back, Answer.accept(back.pending, {"x": 1}))
    assert resumed.error is None
