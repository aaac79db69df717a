"""The tools the three-replica tests serve (tests/test_replicas.py): each replica is a
`toolnexus serve --http` process of its own, so whatever one tool run leaves behind goes to
files in the folder TOOLNEXUS_TEST_RUNS names, where the test reads it.

- ``deploy(release)`` asks which environment, then deploys: each run with an answer writes
  ``ran-<release>-<pid>-<nonce>``, so a test counts the runs an answer caused;
- ``deploy(release, hold=True)`` also writes ``started-<release>-<pid>`` once it has its
  answer and waits until ``go-<release>`` exists (or its call is cancelled): an answered
  call a test can kill its replica under;
- ``hold(label)`` does the same without a question: a plain call to kill a replica under;
- ``long_job(label)`` holds the same way, always as an MCP task; cancelled, it writes
  ``cancelled-<label>-<pid>``.
"""

from __future__ import annotations

import os
from pathlib import Path

from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool

ENV_SCHEMA = {
    "type": "object",
    "properties": {"env": {"type": "string"}},
    "required": ["env"],
}


def _runs() -> Path:
    return Path(os.environ["TOOLNEXUS_TEST_RUNS"])


@tool
def deploy(release: str, ctx: ToolContext, hold: bool = False) -> ToolResult:
    """Deploy a release to the environment the user names."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request("input", f"Where should {release} go?", data={"schema": ENV_SCHEMA})
        )
    env = (ctx.answer.data or {}).get("env")
    runs = _runs()
    if hold and not _held(release, ctx):
        return ToolResult.error("cancelled")
    (runs / f"ran-{release}-{os.getpid()}-{os.urandom(4).hex()}").touch()
    return ToolResult.ok(f"{release} deployed to {env} by {os.getpid()}")


def _held(label: str, ctx: ToolContext) -> bool:
    """Say this call started, then wait for ``go-<label>``; False if cancelled first."""
    runs = _runs()
    (runs / f"started-{label}-{os.getpid()}").touch()
    while not (runs / f"go-{label}").exists():
        if ctx.cancellation_token.wait(0.02):
            return False
    return True


@tool
def hold(label: str, ctx: ToolContext) -> ToolResult:
    """Start, then wait until the test says go."""
    if not _held(label, ctx):
        return ToolResult.error("cancelled")
    return ToolResult.ok(f"{label} held by {os.getpid()}")


@tool(task_support="required")
def long_job(label: str, ctx: ToolContext) -> ToolResult:
    """A long job, always run as a task: holds until the test says go."""
    if not _held(label, ctx):
        (_runs() / f"cancelled-{label}-{os.getpid()}").touch()
        return ToolResult.error("cancelled")
    return ToolResult.ok(f"{label} done by {os.getpid()}")


@tool(read_only=True)
def whoami() -> str:
    """The process id of the replica that answered."""
    return str(os.getpid())


toolkit = Toolkit([deploy, hold, long_job, whoami])
