"""One attempt of a call as a Temporal worker runs it (``toolnexus.temporal._attempt``),
without Temporal: the worker's host keeps a local call's rules, an answered attempt gives
the tool its answer, and a question goes back without the worker's binding. Also the
host's seam: what ``Host(runner=...)`` accepts. (tests/test_temporal.py runs all of it on
a real Temporal server.)"""

from __future__ import annotations

import asyncio
import threading

import pytest

from toolnexus import Host, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.temporal._attempt import run_attempt, worker_host

started = threading.Event()
heard = threading.Event()
release = threading.Event()


@tool
def deploy(env: str, ctx: ToolContext) -> ToolResult:
    """Asks first; deploys with the answer."""
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", f"Deploy to {env}?", id="pnd-asked"))
    return ToolResult.ok(f"deployed to {env}; answer {ctx.answer.id} ok={ctx.answer.ok}")


@tool
def stubborn() -> str:
    """Ignores its token until the test releases it."""
    release.wait(30)
    return "late"


@tool
def listens(ctx: ToolContext) -> str:
    """Waits for its cancel."""
    started.set()
    if ctx.cancellation_token.wait(30):
        heard.set()
        return "cancelled"
    return "never"


TOOLKIT = Toolkit([deploy, stubborn, listens])


@pytest.fixture
def host():
    for event in (started, heard, release):
        event.clear()
    made = worker_host(TOOLKIT)
    yield made
    release.set()
    made.close()


def test_a_first_attempt_that_asks_hands_the_question_back_without_a_binding(host) -> None:
    result = asyncio.run(run_attempt(host, "deploy", {"env": "prod"}, timeout_ms=5000))
    assert result == {
        "output": "Deploy to prod?",
        "isError": True,
        "metadata": {
            "pending": {"id": "pnd-asked", "kind": "approval", "prompt": "Deploy to prod?"}
        },
    }


def test_an_answered_attempt_runs_the_tool_with_its_answer(host) -> None:
    asked = {"id": "pnd-asked", "kind": "approval", "prompt": "Deploy to prod?"}
    result = asyncio.run(
        run_attempt(
            host,
            "deploy",
            {"env": "prod"},
            timeout_ms=5000,
            request=asked,
            answer={"id": "pnd-asked", "ok": True},
            round=1,
        )
    )
    assert result == {"output": "deployed to prod; answer pnd-asked ok=True", "isError": False}


def test_a_question_asked_again_after_its_answer_still_comes_back(host) -> None:
    # How many rounds a call takes is the workflow's to decide, not the worker's.
    @tool
    def always(ctx: ToolContext) -> ToolResult:
        """Asks whatever it is told."""
        return ToolResult.pending(Request("input", "Again?", id="pnd-again"))

    again = worker_host(Toolkit([always]))
    try:
        result = asyncio.run(
            run_attempt(
                again,
                "always",
                {},
                timeout_ms=None,
                request={"id": "pnd-again", "kind": "input", "prompt": "Again?"},
                answer={"id": "pnd-again", "ok": True},
                round=5,
            )
        )
    finally:
        again.close()
    assert result["metadata"] == {
        "pending": {"id": "pnd-again", "kind": "input", "prompt": "Again?"}
    }


def test_the_deadline_holds_on_the_worker_for_a_tool_that_ignores_its_token(host) -> None:
    result = asyncio.run(run_attempt(host, "stubborn", {}, timeout_ms=50))
    assert result["isError"] is True
    assert result["output"].startswith("timed out after 50 ms")


def test_cancelling_the_attempt_cancels_the_tools_token(host) -> None:
    async def cancel_it() -> None:
        attempt = asyncio.ensure_future(run_attempt(host, "listens", {}, timeout_ms=None))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        attempt.cancel()
        with pytest.raises(asyncio.CancelledError):
            await attempt

    asyncio.run(cancel_it())
    assert heard.wait(30)


def test_bad_arguments_are_an_error_result_on_the_worker_too(host) -> None:
    result = asyncio.run(run_attempt(host, "deploy", {"env": 3}, timeout_ms=None))
    assert result == {
        "output": "invalid arguments for 'deploy': env: expected string, got integer 3",
        "isError": True,
    }


def test_a_host_takes_a_runner_or_none() -> None:
    with pytest.raises(TypeError, match=r"runner must be a toolnexus\.temporal\.TemporalRunner"):
        Host(TOOLKIT, runner="localhost:7233")  # type: ignore[arg-type]


def test_the_runner_loop_stops_with_no_task_left_pending() -> None:
    # What a call cancelled just before exit leaves on the runner's loop: a cancel on its
    # way (it finishes) and a request for a workflow that does not answer (it never would).
    # Dropped pending, asyncio reports each at exit: "Task was destroyed but it is pending!".
    from toolnexus.temporal._runner import _stop_loop

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    ended: list[str] = []

    async def cancel_on_its_way() -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        ended.append("cancel sent")

    async def request_never_answered() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.append("request let go")

    async def start() -> list[asyncio.Task[None]]:
        return [
            asyncio.ensure_future(cancel_on_its_way()),
            asyncio.ensure_future(request_never_answered()),
        ]

    tasks = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    _stop_loop(loop, thread)
    assert not thread.is_alive()
    assert all(task.done() for task in tasks)
    assert not tasks[0].cancelled() and tasks[1].cancelled()
    assert sorted(ended) == ["cancel sent", "request let go"]
    assert not asyncio.all_tasks(loop)
    loop.close()
