"""A served tool's task that is another server's: what the server side and the client side
of a gateway share so that a caller's task *is* the upstream's task.

A caller that declared the tasks extension calls a remote tool whose server runs it as a
task (``execution.taskSupport`` ``"optional"`` or ``"required"``, modern era): the server
sets :data:`HAND_OVER` around the call, so the remote tool's client creates the upstream
task and hands it back — a result carrying it under :data:`UPSTREAM_TASK_KEY` — instead of
following it itself. The caller's task id names the upstream and its task
(:func:`caller_task_id`: ``every+tsk-…``, reversed by :func:`upstream_task_id`), so a
``tasks/get``, ``tasks/update`` or ``tasks/cancel`` reaches that task — from any process
serving the same upstreams, after any restart.

:func:`task_upstream` is how the server side sees a tool whose calls' tasks are an
upstream's (duck-typed on the remote tool's function: the server imports nothing of the
client). Nothing here does I/O.
"""

from __future__ import annotations

import contextvars
from typing import Any, Protocol

__all__ = [
    "HAND_OVER",
    "UPSTREAM_TASK_KEY",
    "TaskUpstream",
    "caller_task_id",
    "task_upstream",
    "upstream_task_id",
]

HAND_OVER: contextvars.ContextVar[tuple[object, str] | None] = contextvars.ContextVar(
    "toolnexus_mcp_hand_over", default=None
)
"""Set (by the server, in the call's context) to ``(client, remote tool name)`` when the
caller takes that tool's upstream task as its own: that client, calling that tool, creates
the task and hands it back (a result with :data:`UPSTREAM_TASK_KEY`) instead of following
it. Any other call — another client, another tool — is untouched."""

UPSTREAM_TASK_KEY = "toolnexus.upstream_task"
"""The metadata key of a result that is an upstream's task handed over: the task as its
server created it (``taskId``, ``status``, ``pollIntervalMs``, ...) and ``upstream``, the
client's name."""


def caller_task_id(upstream: str, task_id: str) -> str:
    """The id a caller knows the task ``task_id`` of server ``upstream`` by: the server's
    name (percent-encoded, so it holds no ``+``), ``+``, its task id. A server's own task
    ids never hold a ``+``.

    Example::

        caller_task_id("every", "tsk-1f2e")  # 'every+tsk-1f2e'
    """
    from urllib.parse import quote  # here: a server that makes no such task never loads it

    return f"{quote(upstream, safe='')}+{task_id}"


def upstream_task_id(task_id: object) -> tuple[str, str] | None:
    """The server and its task id behind a caller's task id (the reverse of
    :func:`caller_task_id`), or None for an id that names no upstream's task.

    Example::

        upstream_task_id("every+tsk-1f2e")  # ('every', 'tsk-1f2e')
    """
    if not isinstance(task_id, str):
        return None
    head, plus, tail = task_id.partition("+")
    if not plus or not head or not tail:
        return None
    from urllib.parse import unquote

    return unquote(head), tail


class TaskUpstream(Protocol):
    """A remote tool's client as the server side uses it for an upstream's tasks."""

    name: str

    def _hands_over_tasks(self, remote: str) -> bool: ...

    def _forward_task(
        self, method: str, params: dict[str, Any], exchange: Any
    ) -> dict[str, Any]: ...

    def _task_result(self, remote: str, result: Any, links: Any) -> Any: ...


def task_upstream(fn: Any) -> TaskUpstream | None:
    """The client of the remote tool whose function is ``fn`` when that client can hand
    over its server's tasks, else None (a local tool, or a client of no tasks)."""
    client = getattr(fn, "client", None)
    if client is None or not callable(getattr(client, "_hands_over_tasks", None)):
        return None
    if not isinstance(getattr(fn, "remote", None), str):
        return None
    upstream: TaskUpstream = client
    return upstream
