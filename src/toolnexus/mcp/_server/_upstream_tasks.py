"""A caller's task that is an upstream server's task (a gateway's remote tool, see
``mcp/_shared/_upstream_tasks.py``): made when the remote tool's client hands the upstream
task over, and reached by the caller's ``tasks/get``, ``tasks/update`` and
``tasks/cancel``.

The caller knows the task as ``<upstream>+<upstream task id>``; this server keeps a record
of it under that id — who made it (the caller's credential) and its last status — in its
task store, so it is bounded, expired and owned as a task of this server is: another
caller's ``tasks/*`` of it reads "no task", as for a task that never existed. The task's
status, result and questions are the upstream's, asked on each request.

After a restart, an id whose record is gone (a memory task store) still reaches the
upstream when the server asks for no credentials (every caller is the same anonymous
one); with credentials, only a record kept in a shared task store proves whose it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import McpError, OAuthError
from .._shared._catalog import view
from .._shared._codec import INTERNAL_ERROR, INVALID_PARAMS
from .._shared._upstream_tasks import caller_task_id, task_upstream
from ._tasks import Refused
from ._types import Action, CallState, ClientView, Reject, error

if TYPE_CHECKING:
    from ._context import ServerContext

__all__ = ["hand_over", "handed_over", "upstream_method"]

# The codes an upstream refuses a task it does not know with (the extension's -32602).
_UNKNOWN = "(-32602)"


def hand_over(tool: Any) -> tuple[object, str] | None:
    """``(client, remote tool name)`` when a call of ``tool`` — from a caller that takes
    tasks — is to be its upstream's task (the upstream listed the tool as one it may run
    as a task, modern era), else None."""
    upstream = task_upstream(tool.fn)
    if upstream is None:
        return None
    remote: str = tool.fn.remote
    return (upstream, remote) if upstream._hands_over_tasks(remote) else None


def handed_over(context: ServerContext, call: CallState, task: Mapping[str, Any]) -> list[Action]:
    """The call's upstream created its task (``task``, as the upstream showed it, with
    ``upstream``): record it for the call's owner under the id the caller will know it by,
    and answer the request with it."""
    tasks = context.tasks
    assert tasks is not None
    upstream = str(task.get("upstream"))
    mapped = caller_task_id(upstream, str(task.get("taskId")))
    state = {"upstream": upstream, "name": call.name}
    status = task.get("status")
    record = tasks.create(
        call.owner,
        state,
        task_id=mapped,
        status=status if isinstance(status, str) else "working",
    )
    context.forget(call)
    if isinstance(record, Refused):  # no room, or no store: nobody could reach it
        _cancel_later(context, upstream, call.name, str(task.get("taskId")))
        return [error(call.request_id, record.code, record.message, record.data)]
    shown = {key: value for key, value in task.items() if key != "upstream"}
    body = {"resultType": "task", **shown, "taskId": mapped}
    return [context.reply(call.request_id, call.client, body)]


def upstream_method(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    client: ClientView,
    method: str,
    upstream: str,
    upstream_id: str,
) -> list[Action]:
    """``tasks/get``, ``tasks/update`` or ``tasks/cancel`` of the caller's task
    ``params["taskId"]``, which is ``upstream``'s task ``upstream_id``: asked of the
    upstream (its answer, the task id the caller's), or refused ``-32602`` naming why.
    The upstream answers at its own pace, and the task store may be a remote one: all
    of it runs detached (:meth:`ServerContext.detached`), never on the thread that
    reads this session."""

    owner = context.owner  # whose request this is (the session's changes per request)

    def work() -> list[Action]:
        body = _forward(context, owner, params, client, method, upstream, upstream_id)
        return [context.reply(request_id, client, body)]

    return context.detached(request_id, work, upstream)


def _forward(
    context: ServerContext,
    owner: str | None,
    params: dict[str, Any],
    client: ClientView,
    method: str,
    upstream: str,
    upstream_id: str,
) -> dict[str, Any]:
    """What :func:`upstream_method` answers (blocking: the task store and the upstream)."""
    tasks = context.tasks
    assert tasks is not None
    task_id: str = params["taskId"]
    record = _record(context, task_id, owner)  # None: made anew once the upstream knows it
    state = record.state if record is not None and record.state is not None else {}
    found = _tool_of(context, upstream, state.get("name"))
    if found is None:
        raise Reject(
            INVALID_PARAMS,
            f"invalid params: no task {task_id!r}: it is MCP server {upstream!r}'s, and no "
            "server of that name is served here now (not configured, not connected, or "
            "none of its tools is yours to see)",
            {"taskId": task_id},
        )
    fn = found
    upstream_client = task_upstream(fn)
    assert upstream_client is not None
    sent = {key: value for key, value in params.items() if key != "_meta"}
    sent["taskId"] = upstream_id
    try:
        answer = upstream_client._forward_task(method, sent, fn.exchange)
    except OAuthError as exc:
        raise Reject(INTERNAL_ERROR, f"MCP server {upstream}: {exc}") from None
    except McpError as exc:
        if exc.problem.endswith(_UNKNOWN):
            raise Reject(
                INVALID_PARAMS,
                f"invalid params: no task {task_id!r}: MCP server {upstream!r} does not know "
                f"it any more (it expired, or the server restarted without keeping its "
                f"tasks): {exc.problem}",
                {"taskId": task_id},
            ) from None
        raise Reject(INTERNAL_ERROR, f"MCP server {upstream}: {exc.problem}") from None
    body = dict(answer)
    body.pop("resultType", None)
    if "taskId" in body:
        body["taskId"] = task_id
    if method == "tasks/get" and "result" in body:
        result = upstream_client._task_result(fn.remote, body["result"], fn.links)
        body["result"] = tasks.written(client, result)
    status = "cancelled" if method == "tasks/cancel" else body.get("status")
    if record is None:  # anonymous, after a restart: the upstream knows it, keep it again
        made = tasks.create(
            None, {"upstream": upstream}, task_id=task_id, status=str(status or "working")
        )
        if isinstance(made, Refused):
            raise Reject(made.code, made.message, made.data)
        record = made
    tasks.follow(record, status, body.get("statusMessage"))
    return body


def _cancel_later(context: ServerContext, upstream: str, name: str, upstream_id: str) -> None:
    """Cancel an upstream's task its caller was refused (on a thread of its own: the
    upstream answers at its own pace); a failure is logged."""
    fn = _tool_of(context, upstream, name)
    if fn is None:
        return
    client = task_upstream(fn)
    assert client is not None

    def cancel() -> None:
        try:
            client._forward_task("tasks/cancel", {"taskId": upstream_id}, fn.exchange)
        except (McpError, OAuthError) as exc:
            from ..._log import get_logger

            get_logger().warning(
                "toolnexus mcp: cancelling MCP server %s's task %s failed: %s",
                upstream,
                upstream_id,
                exc,
            )

    import threading

    threading.Thread(target=cancel, name="toolnexus-mcp-cancel-task", daemon=True).start()


def _record(context: ServerContext, task_id: str, owner: str | None) -> Any:
    """The caller's record of the task ``task_id``; None when none is kept and the server
    asks for no credentials (a restart with a memory store: it is made anew once the
    upstream shows the task exists, so a forged id leaves nothing behind); refused as
    unknown when it is another caller's, or none is kept for a caller with credentials."""
    tasks = context.tasks
    assert tasks is not None
    found = tasks.find(task_id, owner)
    if not isinstance(found, Refused):
        return found
    if owner is None and found.code == INVALID_PARAMS and _unkept(tasks, task_id):
        return None
    raise Reject(found.code, found.message, found.data)


def _unkept(tasks: Any, task_id: str) -> bool:
    """Whether no record of ``task_id`` is kept at all (not: another caller's)."""
    try:
        return tasks.store.get(task_id) is None
    except Exception:  # the store is down: find said so already
        return False


def _tool_of(context: ServerContext, upstream: str, name: Any) -> Any:
    """The tool ``name`` when it is still ``upstream``'s and the caller may see it, else
    any such tool of ``upstream`` (its client and links serve each of its tasks)."""
    toolkit = view(context.toolkit)
    candidates = []
    if isinstance(name, str) and name in toolkit:
        candidates.append(toolkit.get(name))
    candidates.extend(toolkit.tools())
    for tool in candidates:
        client = task_upstream(tool.fn)
        if client is not None and client.name == upstream:
            return tool.fn
    return None
