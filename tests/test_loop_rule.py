"""The loop rule, exactly: with wait_for the host asks once and retries once; without it the
pending result goes straight back to the caller."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from timing import STALL, TIMEOUT
from toolnexus import (
    Answer,
    CancellationTokenSource,
    Host,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)

ENV_SCHEMA = {
    "type": "object",
    "properties": {"env": {"type": "string", "enum": ["dev", "staging", "prod"]}},
    "required": ["env"],
}


class Deploy:
    """Asks which environment, then deploys there; records every run's context."""

    def __init__(
        self, *, ask_again: bool = False, expires_at: str | None = None, schema: dict | None = None
    ) -> None:
        self.answers: list[Answer | None] = []
        self.args: list[dict] = []

        @tool(name="deploy")
        def deploy(service: str, ctx: ToolContext) -> ToolResult:
            """Deploy a service, asking where first."""
            self.answers.append(ctx.answer)
            self.args.append({"service": service})
            if ctx.answer is None or ask_again:
                data = {"schema": schema} if schema is not None else None
                return ToolResult.pending(
                    Request("input", "Which environment?", data=data, expires_at=expires_at)
                )
            return ToolResult.ok(f"deployed {service} to {ctx.answer.data['env']}")

        self.tool = deploy

    @property
    def runs(self) -> int:
        return len(self.answers)


def test_an_ok_answer_reruns_the_same_tool_once_with_the_same_args_and_the_answer():
    deploy = Deploy()
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer.accept(request, {"env": "staging"})

    with Host(Toolkit([deploy.tool]), wait_for=wait_for) as host:
        result = host.call("deploy", {"service": "api"})
    assert result.output == "deployed api to staging"
    assert len(asked) == 1 and asked[0].prompt == "Which environment?"
    assert deploy.runs == 2
    assert deploy.args == [{"service": "api"}, {"service": "api"}]
    assert deploy.answers[0] is None
    assert deploy.answers[1] == Answer.accept(asked[0], {"env": "staging"})


def test_a_second_suspension_becomes_unresolved_and_never_loops():
    deploy = Deploy(ask_again=True)
    calls = []

    def wait_for(request: Request) -> Answer:
        calls.append(request)
        return Answer.accept(request, {"env": "dev"})

    with Host(Toolkit([deploy.tool]), wait_for=wait_for) as host:
        result = host.call("deploy", {"service": "api"})
    assert result.is_error and not result.is_pending
    assert result.output == "unresolved: Which environment?"
    assert len(calls) == 1 and deploy.runs == 2


def test_a_declined_answer_is_declined_expired_and_the_tool_is_not_rerun():
    deploy = Deploy()
    with Host(Toolkit([deploy.tool]), wait_for=Answer.decline) as host:
        result = host.call("deploy", {"service": "api"})
    assert result.is_error and not result.is_pending
    assert result.output == "declined/expired: Which environment?"
    assert deploy.runs == 1


def test_an_answer_that_does_not_echo_the_request_id_is_not_ok():
    deploy = Deploy()

    def forger(request: Request) -> Answer:
        return Answer("pnd-forged", True, {"env": "prod"})

    with Host(Toolkit([deploy.tool]), wait_for=forger) as host:
        result = host.call("deploy", {"service": "api"})
    assert result.output == "declined/expired: Which environment?"
    assert deploy.runs == 1


def test_a_request_already_past_expires_at_is_not_ok():
    deploy = Deploy(expires_at="2001-01-01T00:00:00Z")
    with Host(Toolkit([deploy.tool]), wait_for=lambda r: Answer.accept(r, {"env": "dev"})) as host:
        result = host.call("deploy", {"service": "api"})
    assert result.output == "declined/expired: Which environment?"
    assert deploy.runs == 1


def test_a_raising_wait_for_is_a_not_ok_answer_never_a_crash(caplog):
    deploy = Deploy()

    def broken(request: Request) -> Answer:
        raise ConnectionError("the approvals service is down")

    async def abroken(request: Request) -> Answer:
        raise ConnectionError("the approvals service is down")

    for wait_for in (broken, abroken):
        with Host(Toolkit([deploy.tool]), wait_for=wait_for) as host:
            assert host.call("deploy", {"service": "api"}).output == (
                "declined/expired: Which environment?"
            )
            assert asyncio.run(host.acall("deploy", {"service": "api"})).output == (
                "declined/expired: Which environment?"
            )
    assert "wait_for raised" in caplog.text


def test_a_wait_for_that_returns_no_answer_is_not_ok():
    deploy = Deploy()
    with Host(Toolkit([deploy.tool]), wait_for=lambda r: None) as host:  # type: ignore[arg-type,return-value]
        assert host.call("deploy", {"service": "api"}).output == (
            "declined/expired: Which environment?"
        )


def test_a_wait_for_that_runs_out_of_its_budget_is_not_ok():
    deploy = Deploy()
    release = threading.Event()

    def slow_human(request: Request) -> Answer:
        release.wait(STALL)
        return Answer.accept(request, {"env": "dev"})

    async def aslow_human(request: Request) -> Answer:
        await asyncio.sleep(STALL)
        return Answer.accept(request, {"env": "dev"})

    for wait_for in (slow_human, aslow_human):
        with Host(
            Toolkit([deploy.tool]), wait_for=wait_for, question_timeout_ms=50, max_stuck=10
        ) as host:
            start = time.monotonic()
            result = host.call("deploy", {"service": "api"})
            aresult = asyncio.run(host.acall("deploy", {"service": "api"}))
            assert time.monotonic() - start < TIMEOUT
        assert result.output == "declined/expired: Which environment?"
        assert aresult.output == "declined/expired: Which environment?"
    release.set()


def test_an_async_wait_for_works_from_call_and_acall():
    deploy = Deploy()

    async def wait_for(request: Request) -> Answer:
        await asyncio.sleep(0)
        return Answer.accept(request, {"env": "prod"})

    with Host(Toolkit([deploy.tool]), wait_for=wait_for) as host:
        assert host.call("deploy", {"service": "api"}).output == "deployed api to prod"
        assert asyncio.run(host.acall("deploy", {"service": "web"})).output == (
            "deployed web to prod"
        )


def test_a_sync_wait_for_from_acall_does_not_block_the_loop():
    deploy = Deploy()
    asking, answered = threading.Event(), threading.Event()

    def human(request: Request) -> Answer:
        asking.set()
        # Answered by a coroutine on the caller's loop: only possible if the loop runs.
        if not answered.wait(TIMEOUT):
            return Answer.decline(request)
        return Answer.accept(request, {"env": "dev"})

    async def main() -> ToolResult:
        with Host(Toolkit([deploy.tool]), wait_for=human) as host:
            call = asyncio.ensure_future(host.acall("deploy", {"service": "api"}))
            while not asking.is_set():
                await asyncio.sleep(0.001)
            answered.set()
            return await call

    assert asyncio.run(main()).output == "deployed api to dev"


def test_an_answer_is_checked_against_the_requests_schema_before_the_rerun():
    deploy = Deploy(schema=ENV_SCHEMA)
    with Host(Toolkit([deploy.tool]), wait_for=lambda r: Answer.accept(r, {"env": "moon"})) as host:
        result = host.call("deploy", {"service": "api"})
    assert result.is_error
    assert "env" in result.output and "moon" in result.output
    assert deploy.runs == 1


def test_without_wait_for_the_pending_result_is_returned_at_once():
    deploy = Deploy()
    events = []
    with Host(Toolkit([deploy.tool]), on_event=events.append) as host:
        result = host.call("deploy", {"service": "api"})
        aresult = asyncio.run(host.acall("deploy", {"service": "api"}))
    for pending in (result, aresult):
        assert pending.is_pending and pending.is_error
        assert pending.output == "Which environment?"
    request = ToolResult.pending_of(result)
    assert events[0].outcome == "pending" and events[0].request_id == request.id
    assert deploy.runs == 2


def test_the_wait_for_host_reports_the_call_once_with_its_final_outcome():
    deploy = Deploy()
    events = []
    with Host(
        Toolkit([deploy.tool]),
        on_event=events.append,
        wait_for=lambda r: Answer.accept(r, {"env": "dev"}),
    ) as host:
        host.call("deploy", {"service": "api"})
    assert [event.outcome for event in events] == ["ok"]
    assert events[0].request_id is not None


def test_the_callers_cancel_during_wait_for_returns_cancelled():
    deploy = Deploy()
    source = CancellationTokenSource()
    asking = threading.Event()
    unblock = threading.Event()

    def human(request: Request) -> Answer:
        asking.set()
        unblock.wait(STALL)  # a human who never answers in time
        return Answer.accept(request, {"env": "dev"})

    def cancel_when_asking() -> None:
        asking.wait(TIMEOUT)
        source.cancel()

    with Host(Toolkit([deploy.tool]), wait_for=human) as host:
        threading.Thread(target=cancel_when_asking).start()
        start = time.monotonic()
        result = host.call("deploy", {"service": "api"}, cancellation_token=source.token)
        assert time.monotonic() - start < TIMEOUT
        unblock.set()
    assert result.output.startswith("cancelled")
    assert deploy.runs == 1


@pytest.mark.parametrize("bad", ["yes", 3])
def test_wait_for_must_be_callable(bad):
    with pytest.raises(TypeError, match="wait_for must be callable"):
        Host(Toolkit([Deploy().tool]), wait_for=bad)


# ----------------------------------------------------------------- the rule as plain functions


def test_the_rule_is_plain_functions_shared_by_every_driver():
    from toolnexus import _loop_rule as loop_rule

    request = Request("input", "Which environment?")
    pending = ToolResult.pending(request)
    assert loop_rule.settle_retry(pending, None) is pending  # first run: hand it back
    again = loop_rule.settle_retry(pending, Answer.accept(request, {"env": "dev"}))
    assert again.is_error and again.output == "unresolved: Which environment?"
    assert loop_rule.declined(request).output == "declined/expired: Which environment?"
    assert loop_rule.answer_refusal(request, Answer.decline(request)) == "declined"
    assert (
        loop_rule.answer_refusal(request, Answer.accept(Request("input", "other"))) == "id mismatch"
    )
    assert loop_rule.answer_refusal(request, Answer.accept(request)) is None
