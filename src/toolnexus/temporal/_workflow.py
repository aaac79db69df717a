"""The Temporal side of a tool call: the workflow that holds one call, and the activities
that run a toolkit's tools on a worker. This module imports ``temporalio``; nothing else
in the package imports it until a runner or a worker is used.

One workflow per call (``toolnexus.ToolCall``, its id ``toolnexus-<32 hex>``) runs the
tool as an activity named like the tool, on the caller's task queue:

- the call's deadline is the activity's start-to-close timeout (and, for a tool that may
  be retried, its schedule-to-close timeout: no attempt starts after the deadline);
- the activity heartbeats every third of ``heartbeat_ms``: the heartbeats carry the tool's
  progress out, and a cancel in — cancelling the workflow cancels the activity, and the
  worker cancels the tool's token;
- a worker that stops answering (killed, its machine gone) is noticed when a heartbeat is
  missed: a tool marked idempotent (or read-only) is tried again, on whichever worker
  polls next; any other is answered with an error saying it was not run again;
- when the tool suspends, the workflow waits for the answer — for as long as the
  request's ``expiresAt`` allows, else ``ttl_s`` — in Temporal, not in any process: the
  caller's host and every worker may restart meanwhile. The question goes back to the
  caller with the id ``<workflow id>.<round>``, so an answer finds its way back from any
  process; the answer arrives as the ``answer`` update, is accepted once (a second one is
  refused, as everywhere), and the tool runs again with it on a worker;
- the ``settled`` update returns what the caller waits for: the result, or the pending
  question.

The workflow does no I/O and reads no clock but ``workflow.now()``: it runs outside
Temporal's sandbox, which would cost every call the sandbox's set-up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutError,
    TimeoutType,
)

from .._loop_rule import declined, may_ask_again
from .._result import PENDING_KEY
from .._suspension import Request, parse_rfc3339
from ._attempt import run_attempt

if TYPE_CHECKING:
    from .._host import Host
    from .._toolkit import Toolkit

__all__ = [
    "ANSWER",
    "SETTLED",
    "WORKFLOW",
    "WORKFLOW_ID_PREFIX",
    "ToolCall",
    "tool_activities",
]

WORKFLOW = "toolnexus.ToolCall"
SETTLED = "settled"
ANSWER = "answer"
WORKFLOW_ID_PREFIX = "toolnexus-"

# A call without a deadline: Temporal wants a bound on an activity all the same.
_NO_DEADLINE = timedelta(days=30)


@workflow.defn(name=WORKFLOW, sandboxed=False)
class ToolCall:
    """One tool call: attempts on the workers, and the questions between them.

    Its input (a JSON object): ``tool``, ``args``, ``timeout_ms`` (None: no deadline),
    ``retry`` (may the tool run again after its worker stopped), ``max_attempts``,
    ``heartbeat_ms``, ``max_rounds`` (answers one call may take) and ``ttl_s`` (how long a
    question without ``expiresAt`` waits).
    """

    def __init__(self) -> None:
        self._outcome: dict[str, Any] | None = None  # what `settled` answers
        self._asked: dict[str, Any] | None = None  # the tool's own request, while it waits
        self._question_id: str | None = None  # its id as the caller knows it
        self._answer: dict[str, Any] | None = None
        self._answer_timeout_ms: int | None = None
        self._round = 0

    @workflow.run
    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] | None = None
        answered: dict[str, Any] | None = None  # the request `answer` answers
        timeout_ms: int | None = call["timeout_ms"]
        try:
            while True:
                result = await self._attempt(call, answer, answered, timeout_ms)
                request = (result.get("metadata") or {}).get(PENDING_KEY)
                if request is None or not may_ask_again(self._round, call["max_rounds"]):
                    # Done — or a retry that asked again past the last round, handed back
                    # as it is: the caller's loop rule makes it `unresolved: <prompt>`.
                    self._outcome = result
                    break
                self._round += 1
                self._asked = request
                self._question_id = f"{workflow.info().workflow_id}.{self._round}"
                self._outcome = _with_request_id(result, self._question_id)
                try:
                    await workflow.wait_condition(
                        lambda: self._answer is not None, timeout=self._patience(request, call)
                    )
                except asyncio.TimeoutError:
                    self._outcome = declined(Request.from_dict(request), "expired").to_dict()
                    break
                answer, self._answer = self._answer, None
                answered, timeout_ms = request, self._answer_timeout_ms
                self._asked = self._question_id = None
        except asyncio.CancelledError:
            # The caller cancelled (its deadline passed, or it cancelled): the activity was
            # asked to stop. Whoever still waits learns it, then the workflow ends cancelled.
            self._outcome = {"output": "cancelled by the caller", "isError": True}
            self._asked = None
            await workflow.wait_condition(workflow.all_handlers_finished)
            raise
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._outcome

    async def _attempt(
        self,
        call: dict[str, Any],
        answer: dict[str, Any] | None,
        answered: dict[str, Any] | None,
        timeout_ms: int | None,
    ) -> dict[str, Any]:
        deadline = _NO_DEADLINE if timeout_ms is None else timedelta(milliseconds=timeout_ms)
        retry = call["retry"]
        attempt = {"args": call["args"], "timeout_ms": timeout_ms, "round": self._round}
        if answer is not None:
            attempt["answer"] = answer
            attempt["request"] = answered
        try:
            result: dict[str, Any] = await workflow.execute_activity(
                call["tool"],
                attempt,
                start_to_close_timeout=deadline,
                schedule_to_close_timeout=deadline if retry and timeout_ms is not None else None,
                heartbeat_timeout=timedelta(milliseconds=call["heartbeat_ms"]),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(milliseconds=200),
                    maximum_attempts=call["max_attempts"] if retry else 1,
                ),
            )
        except ActivityError as exc:
            if isinstance(exc.cause, CancelledError):
                raise asyncio.CancelledError() from exc
            return _interrupted(call, exc, timeout_ms)
        return result

    def _patience(self, request: dict[str, Any], call: dict[str, Any]) -> timedelta:
        """How long the question may wait: until its ``expiresAt``, else ``ttl_s``."""
        expires = request.get("expiresAt")
        if isinstance(expires, str):
            now: datetime = workflow.now()
            return max(parse_rfc3339(expires) - now, timedelta(milliseconds=1))
        return timedelta(seconds=call["ttl_s"])

    # ----------------------------------------------------------------- updates

    @workflow.update(name=SETTLED)
    async def settled(self) -> dict[str, Any]:
        """The call's result once it has one, or the question it waits on."""
        await workflow.wait_condition(lambda: self._outcome is not None)
        assert self._outcome is not None
        return self._outcome

    @workflow.update(name=ANSWER)
    async def answer(self, sent: dict[str, Any]) -> dict[str, Any]:
        """Take the answer to the question the call waits on (once), then return what the
        tool's next attempt settles on: its result, or its next question."""
        problem = self._refusal(sent)
        if problem is not None:  # another answer got here first, in this very activation
            raise ApplicationError(problem, type="ToolnexusAnswerRefused", non_retryable=True)
        assert self._asked is not None
        self._answer = {**sent["answer"], "id": self._asked["id"]}
        self._answer_timeout_ms = sent.get("timeout_ms")
        self._outcome = None
        await workflow.wait_condition(lambda: self._outcome is not None)
        assert self._outcome is not None
        return self._outcome

    @answer.validator
    def _check_answer(self, sent: dict[str, Any]) -> None:
        problem = self._refusal(sent)
        if problem is not None:
            raise ApplicationError(problem, type="ToolnexusAnswerRefused", non_retryable=True)

    def _refusal(self, sent: object) -> str | None:
        answer = sent.get("answer") if isinstance(sent, dict) else None
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
            return "the answer is not an Answer's wire object"
        if self._asked is None or self._answer is not None:
            return (
                f"request {answer['id']!r} was already answered, or the call no longer "
                "waits for it; an answer resumes a call once. Call the tool again to ask anew"
            )
        if answer["id"] != self._question_id:
            return (
                f"answer id {answer['id']!r} does not match request id "
                f"{self._question_id!r}; an answer must echo the id of the request it resolves"
            )
        return None


def _with_request_id(result: dict[str, Any], request_id: str) -> dict[str, Any]:
    metadata = dict(result["metadata"])
    metadata[PENDING_KEY] = {**metadata[PENDING_KEY], "id": request_id}
    return {**result, "metadata": metadata}


def _interrupted(
    call: dict[str, Any], exc: ActivityError, timeout_ms: int | None
) -> dict[str, Any]:
    """The error result of an attempt Temporal ended: a deadline, or a worker gone."""
    name = call["tool"]
    cause = exc.cause
    if isinstance(cause, TimeoutError) and cause.type in (
        TimeoutType.START_TO_CLOSE,
        TimeoutType.SCHEDULE_TO_CLOSE,
    ):
        return {"output": f"timed out after {timeout_ms} ms", "isError": True}
    if isinstance(cause, TimeoutError) and cause.type == TimeoutType.HEARTBEAT:
        gone = (
            f"'{name}' was interrupted: the worker running it stopped answering (no "
            f"heartbeat within {call['heartbeat_ms']} ms)"
        )
        if call["retry"]:
            text = f"{gone}, and so did its {call['max_attempts']} attempts"
        else:
            text = (
                f"{gone}; it was not run again, because it is not marked idempotent "
                "(@tool(idempotent=True)): it may have done part of its work"
            )
        return {"output": text, "isError": True}
    detail = str(cause) if cause is not None else str(exc)
    return {"output": f"'{name}' failed on its worker: {detail}", "isError": True}


# --------------------------------------------------------------------------- activities


def tool_activities(toolkit: Toolkit, host: Host) -> list[Callable[..., Any]]:
    """One activity per tool of ``toolkit``, named like the tool, run on ``host``."""
    return [_activity(tool.name, host) for tool in toolkit]


def _activity(name: str, host: Host) -> Callable[..., Any]:
    async def run_tool(attempt: dict[str, Any]) -> dict[str, Any]:
        beats = _Heartbeats()
        beating = asyncio.ensure_future(beats.run())
        try:
            return await run_attempt(
                host,
                name,
                attempt.get("args") or {},
                timeout_ms=attempt.get("timeout_ms"),
                request=attempt.get("request"),
                answer=attempt.get("answer"),
                round=attempt.get("round", 0),
                progress=beats.report,
            )
        finally:
            beating.cancel()

    run_tool.__name__ = run_tool.__qualname__ = f"toolnexus_{name}"
    defined: Callable[..., Any] = activity.defn(name=name)(run_tool)
    return defined


class _Heartbeats:
    """An activity's heartbeats: one every third of its heartbeat timeout, and one with
    each progress report (Temporal throttles them); the latest progress rides on each."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._latest: Sequence[Any] = ()
        self._news = asyncio.Event()
        timeout = activity.info().heartbeat_timeout
        self._every = timeout.total_seconds() / 3 if timeout else 10.0

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        """The tool's progress reporter: called on the tool's thread."""
        self._loop.call_soon_threadsafe(self._arrived, (progress, total, message))

    def _arrived(self, details: tuple[float, float | None, str | None]) -> None:
        self._latest = details
        self._news.set()

    async def run(self) -> None:
        while True:
            activity.heartbeat(*self._latest)
            with contextlib.suppress(asyncio.TimeoutError):  # no news: beat all the same
                await asyncio.wait_for(self._news.wait(), self._every)
            self._news.clear()
