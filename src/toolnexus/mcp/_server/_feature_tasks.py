"""The tasks feature of a server session (the ``io.modelcontextprotocol/tasks``
extension, for a modern client that declares it): ``tasks/get``, ``tasks/update`` and
``tasks/cancel``, and a call made a task. The tasks themselves — records, questions,
answers — are :class:`~toolnexus.mcp._server._tasks.Tasks`, one per server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._tracing import API_MODULE
from .._shared._codec import MISSING_CLIENT_CAPABILITY
from .._shared._protocol import META_CLIENT_CAPABILITIES, MODERN_PROTOCOL_VERSIONS, TASKS_EXTENSION
from .._shared._upstream_tasks import upstream_task_id
from ._context import MODERN, Feature, Method, ServerContext
from ._tasks import Refused, Resume
from ._types import Action, CallState, ClientView, Reject, StartCall, error

if TYPE_CHECKING:
    from ..._host import Call
    from ..._result import ToolResult

__all__ = ["FEATURE", "client_from_state", "promote", "task_made"]


def _declare(context: ServerContext, modern: bool) -> dict[str, Any] | None:
    if not modern or context.tasks is None:
        return None
    return {"extensions": {TASKS_EXTENSION: {}}}


def promote(context: ServerContext, call_id: int, running: Call) -> tuple[list[Action], str | None]:
    """Make the call ``call_id`` — still running on the host as ``running`` — a task (see
    :meth:`ServerSession.promote <toolnexus.mcp._server._session.ServerSession.promote>`)."""
    call = context.calls.get(call_id)
    if call is None or not call.running or context.tasks is None or call.task_after is None:
        return [], None
    return task_made(context, call, running=running)


def task_made(
    context: ServerContext,
    call: CallState,
    *,
    running: Call | None = None,
    result: ToolResult | None = None,
) -> tuple[list[Action], str | None]:
    """Make ``call`` a task — working on ``running``, or settled with ``result`` — and
    answer its request with it; the task's id (None when it could not be made: the call
    stays in its request if it still runs, else its request is answered the error)."""
    tasks = context.tasks
    assert tasks is not None
    state = {
        "method": call.method,
        "name": call.name,
        "arguments": call.arguments,
        "client": _client_state(call.client),
    }
    record = tasks.create(call.owner, state, call=running, result=result, client=call.client)
    if isinstance(record, Refused):
        if running is not None:
            return [], None  # the call stays in its request
        context.forget(call)
        return [error(call.request_id, record.code, record.message, record.data)], None
    context.forget(call)
    return [context.reply(call.request_id, call.client, tasks.created(record))], record.task_id


def _method(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
    method: str,
) -> list[Action]:
    """``tasks/get``, ``tasks/update`` or ``tasks/cancel`` (the client declared the
    extension, or is refused ``-32021``). A task answered in full runs again: a
    :class:`StartCall` for it follows the answer (through the call bridge, as every call
    runs)."""
    tasks = context.tasks
    assert tasks is not None
    if not client.tasks:
        raise Reject(
            MISSING_CLIENT_CAPABILITY,
            f"Missing required client capability: the tasks extension ({TASKS_EXTENSION}); "
            f"declare it in _meta[{META_CLIENT_CAPABILITIES!r}].extensions to use {method}",
            {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        )
    task_id = params.get("taskId")
    upstream = upstream_task_id(task_id)
    if upstream is not None:  # an upstream's task, the caller's through this server
        from ._upstream_tasks import upstream_method

        return upstream_method(context, request_id, params, client, method, *upstream)
    done: Any
    if method == "tasks/get":
        done = tasks.find(task_id, context.owner)
    elif method == "tasks/update":
        done = tasks.update(task_id, context.owner, params.get("inputResponses"))
    else:
        done = tasks.cancel(task_id, context.owner)
    if isinstance(done, Refused):
        raise Reject(done.code, done.message, done.data)
    body, written = {}, None
    if method == "tasks/get":
        body = tasks.detailed(done)
        text = tasks.result_text(done)
        if text is not None:  # its result as it was encoded when the task ended
            written = ("result", text)
    actions: list[Action] = [context.reply(request_id, client, body, written)]
    if isinstance(done, Resume):
        import sys

        trace = None
        if API_MODULE in sys.modules:
            from ..._tracing import incoming

            trace = incoming(meta, request_id, client.version)
        actions.append(
            StartCall(
                context.new_call_id(),
                done.name,
                done.arguments,
                done.request,
                done.answer,
                binding=done.binding,
                trace=trace,
                task=done.task_id,
            )
        )
    return actions


def _for(method: str) -> Method:
    def handle(
        context: ServerContext,
        request_id: str | int,
        params: dict[str, Any],
        meta: Mapping[str, Any],
        client: ClientView,
    ) -> list[Action]:
        return _method(context, request_id, params, meta, client, method)

    return Method(handle, MODERN)


def _client_state(client: ClientView) -> dict[str, Any]:
    """What a task keeps of the (modern) client that made it: how to write to it."""
    return {
        "version": client.version,
        "form": client.form,
        "url": client.url,
        "sampling": client.sampling,
        "roots": client.roots,
    }


def client_from_state(state: Mapping[str, Any]) -> ClientView:
    """The client a task's state says made it (to write its result, to ask its questions)."""
    return ClientView(
        str(state.get("version") or MODERN_PROTOCOL_VERSIONS[-1]),
        True,
        bool(state.get("form")),
        bool(state.get("url")),
        sampling=bool(state.get("sampling")),
        roots=bool(state.get("roots")),
        tasks=True,
    )


FEATURE = Feature(
    "tasks",
    _declare,
    {method: _for(method) for method in ("tasks/get", "tasks/update", "tasks/cancel")},
)
"""Tasks: declared (as an extension) to a modern client of a server that runs them."""
