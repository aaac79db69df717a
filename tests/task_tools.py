"""A tool that runs only as a task and asks a question first, for the client's task tests
(``toolnexus serve tests/task_tools.py:toolkit``)."""

from __future__ import annotations

import threading

from toolnexus import Part, Request, ToolContext, Toolkit, ToolResult, tool

ENV_SCHEMA = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}


@tool(task_support="required")
def release(version: str, ctx: ToolContext) -> ToolResult:
    """Release a version to the environment the user names, as a task."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request("input", f"Where should {version} go?", data={"schema": ENV_SCHEMA})
        )
    env = (ctx.answer.data or {}).get("env")
    return ToolResult.ok(f"{version} released to {env}")


@tool(task_support="required")
def release_later(version: str, ctx: ToolContext) -> ToolResult:
    """As ``release``, but it asks only after LATER_S seconds: by then its server has made
    it a task (served with ``task_after_ms=0``), so the question is the task's."""
    if ctx.answer is None:
        if ctx.cancellation_token.wait(LATER_S):
            return ToolResult.error("cancelled")
        return ToolResult.pending(
            Request("input", f"Where should {version} go?", data={"schema": ENV_SCHEMA})
        )
    env = (ctx.answer.data or {}).get("env")
    return ToolResult.ok(f"{version} released to {env}")


LATER_S = 1.0  # far past task_after_ms=0: the promotion's timer has fired by then

BUILDS: list[str] = []  # each build started, in order (in-process servers)
CANCELLED: list[str] = []  # each build cancelled, in order
GATES: dict[str, threading.Event] = {}  # a build of target T ends once GATES[T] is set


@tool(task_support="optional")
def build(target: str, ctx: ToolContext, link: bool = False) -> ToolResult:
    """Build a target: a task when its caller takes tasks. It holds until the test sets
    ``GATES[target]`` (in-process servers), or is cancelled; ``link``: its result links
    to the build's log."""
    BUILDS.append(target)
    gate = GATES.setdefault(target, threading.Event())
    while not gate.is_set():
        if ctx.cancellation_token.wait(0.02):
            CANCELLED.append(target)
            return ToolResult.error(f"build of {target} cancelled")
    if link:
        log = Part.file(f"https://builds.example.test/{target}.pdf")
        return ToolResult(f"{target} built", parts=[Part.from_text(f"{target} built"), log])
    return ToolResult.ok(f"{target} built")


toolkit = Toolkit([release, release_later, build])
