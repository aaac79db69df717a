"""The three examples of the C# ToolContext reference page, in Python, asserting what it asserts.

Each runs twice: against `toolnexus._demo` (what `python -m toolnexus demo` shows) and against
the copies below, which are the code the docs pages show (a test checks they still match).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Answer, CancellationTokenSource, Request, ToolContext, ToolResult
from toolnexus import _demo as demo

DOCS = Path(__file__).resolve().parent.parent / "docs"


# --- the code as docs/context-and-cancellation.md and docs/results-and-suspension.md show it ---


def crunch(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    done = 0
    for _ in range(args["steps"]):
        if ctx is not None and ctx.is_cancelled:
            return ToolResult.error(f"cancelled after {done} step(s)")
        done += 1
    return ToolResult.ok(f"completed {done} step(s)")


def fetchish(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    # None means unset: use your own default.
    budget = ctx.timeout_ms if ctx is not None and ctx.timeout_ms is not None else 30_000
    if budget < 100:
        return ToolResult.error(f"budget {budget}ms is too small to try")
    return ToolResult.ok(f"fetched {args['url']} within {budget}ms")


def deploy(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    # Second pass: the question was resolved and the answer handed back.
    answer = ctx.answer if ctx is not None else None
    if answer is not None:
        if not answer.ok:
            return ToolResult.error(f"declined: {answer.reason or 'no reason'}")
        env = answer.value("env", str, "unknown")  # the answer's data, typed and checked
        return ToolResult.ok(f"deployed to {env}")
    # First pass: park the run and ask.
    return ToolResult.pending(Request("input", "Which environment?"))


@pytest.mark.parametrize(
    ("function", "page"),
    [
        (crunch, "context-and-cancellation.md"),
        (fetchish, "context-and-cancellation.md"),
        (deploy, "results-and-suspension.md"),
    ],
)
def test_the_local_copies_are_the_code_the_docs_show(function, page):
    assert inspect.getsource(function) in (DOCS / page).read_text(encoding="utf-8")


IMPLEMENTATIONS = pytest.mark.parametrize(
    "tools",
    [
        pytest.param((demo.crunch, demo.fetchish, demo.deploy), id="demo"),
        pytest.param((crunch, fetchish, deploy), id="docs"),
    ],
)


# --- 1. Respecting cancellation -------------------------------------------------------------


@IMPLEMENTATIONS
def test_seed_1_a_tool_runs_without_any_context(tools):
    crunch, _, _ = tools
    plain = crunch({"steps": 3}, None)
    assert plain.output == "completed 3 step(s)"
    assert not plain.is_error


@IMPLEMENTATIONS
def test_seed_1_a_call_cancelled_before_it_starts_returns_an_error_promptly(tools):
    crunch, _, _ = tools
    with CancellationTokenSource() as cts:
        cts.cancel()
        stopped = crunch({"steps": 3}, ToolContext(cancellation_token=cts.token))
    assert stopped.is_error
    assert stopped.output == "cancelled after 0 step(s)"
    plain = crunch({"steps": 3}, None)
    assert f"ok: {plain.output} | {stopped.output}" == (
        "ok: completed 3 step(s) | cancelled after 0 step(s)"
    )


@IMPLEMENTATIONS
def test_seed_1_a_live_token_reads_as_not_cancelled(tools):
    crunch, _, _ = tools
    with CancellationTokenSource() as live:
        ctx = ToolContext(cancellation_token=live.token)
        assert not ctx.is_cancelled
        assert crunch({"steps": 3}, ctx).output == "completed 3 step(s)"


# --- 2. Honouring the caller's timeout -------------------------------------------------------


@IMPLEMENTATIONS
def test_seed_2_a_generous_budget_is_used(tools):
    _, fetchish, _ = tools
    generous = fetchish({"url": "/a"}, ToolContext(5000))
    assert generous.output == "fetched /a within 5000ms"
    assert not generous.is_error


@IMPLEMENTATIONS
def test_seed_2_a_tiny_budget_is_refused(tools):
    _, fetchish, _ = tools
    stingy = fetchish({"url": "/a"}, ToolContext(10))
    assert stingy.is_error, "expected the tiny budget to be refused"
    assert stingy.output == "budget 10ms is too small to try"
    generous = fetchish({"url": "/a"}, ToolContext(5000))
    assert f"ok: {generous.output} | {stingy.output}" == (
        "ok: fetched /a within 5000ms | budget 10ms is too small to try"
    )


@IMPLEMENTATIONS
def test_seed_2_an_unset_budget_falls_back_to_the_tools_default(tools):
    _, fetchish, _ = tools
    defaulted = fetchish({"url": "/a"}, ToolContext())
    assert "30000ms" in defaulted.output
    no_ctx = fetchish({"url": "/a"}, None)
    assert "30000ms" in no_ctx.output


@IMPLEMENTATIONS
def test_seed_2_a_zero_budget_is_a_budget_not_unset(tools):
    _, fetchish, _ = tools
    assert fetchish({"url": "/a"}, ToolContext(0)).output == "budget 0ms is too small to try"
    assert fetchish({"url": "/a"}, ToolContext(100)).output == "fetched /a within 100ms"


# --- 3. Answer: the second half of a suspension ----------------------------------------------


@IMPLEMENTATIONS
def test_seed_3_the_first_pass_is_a_suspension_not_an_answer(tools):
    _, _, deploy = tools
    first = deploy({}, None)
    req = ToolResult.pending_of(first)
    assert req is not None, "expected a suspension"
    assert req.kind == "input"
    assert first.is_pending and first.is_error
    assert first.output == "Which environment?"


@IMPLEMENTATIONS
def test_seed_3_the_second_pass_uses_the_answer_that_echoes_the_request_id(tools):
    _, _, deploy = tools
    req = ToolResult.pending_of(deploy({}, None))
    assert req is not None
    resumed = ToolContext(answer=Answer(id=req.id, ok=True, data={"env": "staging"}))
    second = deploy({}, resumed)
    assert not second.is_error
    assert second.output == "deployed to staging"


@IMPLEMENTATIONS
def test_seed_3_a_refusal_is_a_normal_outcome_not_a_crash(tools):
    _, _, deploy = tools
    req = ToolResult.pending_of(deploy({}, None))
    assert req is not None
    declined = ToolContext(answer=Answer(id=req.id, ok=False, reason="declined"))
    refused = deploy({}, declined)
    assert refused.is_error
    assert refused.output == "declined: declined"
    second = deploy({}, ToolContext(answer=Answer.accept(req, {"env": "staging"})))
    assert f"ok: {second.output} | {refused.output}" == (
        "ok: deployed to staging | declined: declined"
    )


@IMPLEMENTATIONS
def test_seed_3_missing_reason_and_missing_env_have_readable_fallbacks(tools):
    _, _, deploy = tools
    req = ToolResult.pending_of(deploy({}, None))
    assert req is not None
    assert deploy({}, ToolContext(answer=Answer(req.id, False))).output == "declined: no reason"
    assert deploy({}, ToolContext(answer=Answer.accept(req))).output == "deployed to unknown"


@IMPLEMENTATIONS
def test_seed_3_survives_a_trip_through_json_between_the_passes(tools):
    _, _, deploy = tools
    parked = deploy({}, None).to_json()  # e.g. stored while a human decides
    req = ToolResult.pending_of(ToolResult.from_json(parked))
    assert req is not None and req.kind == "input"
    answer = Answer.from_json(Answer.accept(req, {"env": "staging"}).to_json())
    assert answer.id == req.id
    assert deploy({}, ToolContext(answer=answer)).output == "deployed to staging"
