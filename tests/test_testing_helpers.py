"""toolnexus.testing: drive a tool through its questions with scripted answers, in a few
lines and without a host."""

from __future__ import annotations

import pytest

from toolnexus import Answer, Request, ToolContext, ToolResult, tool
from toolnexus.testing import Drive, cancelled_context, drive

runs: list[Answer | None] = []


@tool
def deploy(service: str, ctx: ToolContext) -> ToolResult:
    """Asks where, then deploys."""
    runs.append(ctx.answer)
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Which environment?"))
    if not ctx.answer.ok:  # only a direct call reaches this: no host re-runs on a "no"
        return ToolResult.error(f"declined: {ctx.answer.reason}")
    return ToolResult.ok(f"deployed {service} to {(ctx.answer.data or {}).get('env', '?')}")


@tool
def release(ctx: ToolContext) -> ToolResult:
    """Asks for an approval with the form an MCP client fills in."""
    runs.append(ctx.answer)
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", "Release?"))
    return ToolResult.ok("released")


@pytest.fixture(autouse=True)
def fresh_runs():
    runs.clear()


def interview(args, ctx=None):
    """A plain contract callable asking two questions in a row."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return ToolResult.pending(Request("input", "Name?"))
    if "name" in answer.data and "age" not in answer.data:
        return ToolResult.pending(Request("input", f"Age of {answer.data['name']}?"))
    return ToolResult.ok(f"age {answer.data['age']}")


def test_a_human_in_the_loop_test_is_three_lines():
    run = drive(deploy, {"service": "api"}, [{"env": "staging"}])
    assert run.requests[0].prompt == "Which environment?"
    assert run.result.output == "deployed api to staging"


def test_answers_echo_the_request_id_and_the_tool_sees_them():
    run = drive(deploy, {"service": "api"}, [True])
    assert run.answers == (Answer.accept(run.requests[0]),)
    assert run.result.output == "deployed api to ?"


def test_a_decline_ends_as_on_a_host_and_the_tool_is_not_run_again():
    declined = drive(deploy, {"service": "api"}, [False])
    assert declined.result.output == "declined/expired: Which environment?"
    assert declined.result.metadata == {"reason": "declined"}
    assert runs == [None]
    custom = drive(
        deploy, {"service": "api"}, [lambda request: Answer(request.id, False, reason="expired")]
    )
    assert custom.result.output == "declined/expired: Which environment?"
    assert custom.result.metadata == {"reason": "expired"}


def test_an_approval_answered_approved_false_is_a_decline_too():
    run = drive(release, {}, [{"approved": False}])
    assert run.result.output == "declined/expired: Release?"
    assert runs == [None]
    assert drive(release, {}, [{"approved": True}]).result.output == "released"


def test_an_answer_for_another_request_is_declined_not_run():
    run = drive(deploy, {"service": "api"}, [Answer("pnd-other", True, {"env": "x"})])
    assert run.result.output == "declined/expired: Which environment?"
    assert runs == [None]


def test_a_tools_own_decline_branch_is_tested_by_calling_it_directly():
    request = ToolResult.pending_of(deploy({"service": "api"}))
    assert request is not None
    refused = deploy({"service": "api"}, ToolContext(answer=Answer.decline(request)))
    assert refused.output == "declined: declined"


def test_a_second_question_is_unresolved_unless_max_rounds_allows_it():
    once = drive(interview, {}, [{"name": "Ada"}, {"age": 36}])
    assert once.result.output == "unresolved: Age of Ada?"
    assert len(once.answers) == 1
    run = drive(interview, {}, [{"name": "Ada"}, {"age": 36}], max_rounds=2)
    assert [r.prompt for r in run.requests] == ["Name?", "Age of Ada?"]
    assert run.result.output == "age 36"
    with pytest.raises(ValueError, match="max_rounds must be an int >= 1"):
        drive(interview, {}, [], max_rounds=0)


def test_when_answers_run_out_the_pending_result_is_returned():
    run = drive(interview, {}, [{"name": "Ada"}], max_rounds=2)
    assert run.result.is_pending
    assert len(run.requests) == 2 and len(run.answers) == 1


def test_a_tool_that_never_asks_returns_no_requests():
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert drive(add, {"a": 1, "b": 2}) == Drive(add({"a": 1, "b": 2}), (), ())


def test_an_async_contract_callable_is_run_to_completion():
    async def ask(args, ctx=None):
        if ctx is None or ctx.answer is None:
            return ToolResult.pending(Request("approval", "Go?"))
        return ToolResult.ok("went")

    assert drive(ask, {}, [True]).result.output == "went"


def test_cancelled_context_lets_a_test_check_that_a_tool_stops():
    @tool
    def crunch(steps: int, ctx: ToolContext) -> ToolResult:
        """Counts, stopping when cancelled."""
        done = 0
        for _ in range(steps):
            if ctx.is_cancelled:
                return ToolResult.error(f"cancelled after {done} step(s)")
            done += 1
        return ToolResult.ok(f"completed {done} step(s)")

    assert crunch({"steps": 3}, cancelled_context()).output == "cancelled after 0 step(s)"
    assert cancelled_context(500).timeout_ms == 500


def test_a_tool_that_returns_no_tool_result_is_reported_clearly():
    with pytest.raises(TypeError, match="not a ToolResult"):
        drive(lambda args, ctx=None: "plain text", {})
    with pytest.raises(TypeError, match="answer 0 must be"):
        drive(deploy, {"service": "api"}, ["staging"])
