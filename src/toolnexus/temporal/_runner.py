"""The host's side of running calls on Temporal: :class:`TemporalRunner`.

A host given a runner (``Host(toolkit, runner=TemporalRunner(...))``) runs each call's
tool as a ``toolnexus.ToolCall`` workflow on a Temporal worker fleet instead of its own
threads. The host keeps every rule it keeps for a local call — arguments checked before
anything is sent, the deadline (on time, whatever the tool does), cancellation, the loop
rule, the binding of a question to its call and single use — because to the host each
tool is an ordinary async tool that happens to run elsewhere: starting the workflow, or,
with ``ctx.answer``, sending the answer to the workflow that waits for it, then waiting
for what it settles on. Imports ``temporalio`` when a runner is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._extras import install_hint
from .._result import ToolResult
from .._tools import Tool
from ..errors import InvalidTypeError, InvalidValueError

if TYPE_CHECKING:
    from temporalio.client import Client

    from .._context import ToolContext
    from .._toolkit import Toolkit

__all__ = ["TemporalRunner", "import_temporalio"]

_TTL_S = 7 * 24 * 3600  # a question without expiresAt waits as long as its binding lives
_CANCEL_WAIT_S = 10.0  # how long a cancelled call waits for Temporal to take the cancel
_PROGRESS_POLL_S = 0.5  # how often a call whose caller listens reads the tool's progress


def import_temporalio() -> None:
    """Import ``temporalio``, or raise ``ImportError`` saying how to install it; the first
    time, also arrange a quiet exit (:func:`_before_exit`)."""
    global _exit_hook
    try:
        import temporalio.client  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "running tools on Temporal needs the temporalio SDK (temporalio is missing); "
            "install it with: " + install_hint("temporal", "temporalio>=1.9")
        ) from exc
    with _runners_lock:
        if not _exit_hook:
            import atexit

            atexit.register(_before_exit)
            _exit_hook = True


_runners: weakref.WeakSet[TemporalRunner] = weakref.WeakSet()
_runners_lock = threading.Lock()
_exit_hook = False
_QUIET_S = 0.05


def _before_exit() -> None:
    """Let go of Temporal before the interpreter tears itself down: a temporalio client
    still alive then, or a reply its threads are still delivering, crashes the process
    (SIGSEGV or SIGABRT instead of its exit code; temporalio/sdk-python#300). So the
    runners drop their clients and stop their loops, the garbage is collected, and the
    SDK's threads get a moment to finish what they deliver."""
    import gc
    import time

    for runner in list(_runners):
        runner._let_go()
    gc.collect()
    time.sleep(_QUIET_S)  # nothing to wait on: the SDK's threads are not ours


class TemporalRunner:
    """Runs a :class:`~toolnexus.Host`'s calls on a Temporal worker fleet.

    Args:
        temporal: a connected ``temporalio.client.Client`` (for TLS, API keys, a cloud
            namespace), or the address ``HOST:PORT`` of a Temporal frontend, connected to
            with the first call.
        task_queue: the task queue the workers poll (``toolnexus worker REF --temporal
            HOST:PORT --task-queue Q``).
        namespace: the Temporal namespace, for an address (a client brings its own).
        heartbeat_ms: how often a running tool's worker must be heard from; a worker
            silent this long is taken for gone. A cancel reaches the tool with the next
            heartbeat (within this time), and so does its progress.
        max_attempts: how many times a tool marked idempotent (``@tool(idempotent=True)``
            or ``read_only=True``) may run when its workers keep stopping; any other tool
            runs once: a worker lost mid-call is an error result, never a second run.
        question_ttl_ms: how long a question that sets no ``expiresAt`` waits for its
            answer (7 days, as long as its binding is valid).

    Each call is a workflow; its deadline is its activity's start-to-close timeout; its
    questions wait in Temporal — surviving restarts of the host and of every worker —
    and are answered through the host as always (``wait_for``, or :meth:`Host.resume
    <toolnexus.Host.resume>` from any process with the same key and store). Raises
    ``ImportError`` naming the extra when temporalio is missing, ``ValueError``/
    ``TypeError`` for a bad setting; a Temporal that cannot be reached is an error result
    of the call, never an exception.

    Example::

        from toolnexus import Host
        from toolnexus.temporal import TemporalRunner

        runner = TemporalRunner("temporal.internal:7233", task_queue="tools")
        with Host(toolkit, runner=runner, timeout_ms=30_000) as host:
            print(host.call("deploy", {"env": "staging"}).output)
    """

    def __init__(
        self,
        temporal: str | Client,
        *,
        task_queue: str,
        namespace: str = "default",
        heartbeat_ms: int = 10_000,
        max_attempts: int = 5,
        question_ttl_ms: int = _TTL_S * 1000,
    ) -> None:
        import_temporalio()
        from temporalio.client import Client

        if isinstance(temporal, str):
            if not temporal.strip():
                raise InvalidValueError("temporal must name HOST:PORT, got an empty string")
            self._target = temporal.strip()
            self._client: Client | None = None
            self._target_owned = True  # the runner connects, and lets go at exit
        elif isinstance(temporal, Client):
            self._target = temporal.service_client.config.target_host
            self._client = temporal
            self._target_owned = False
        else:
            raise InvalidTypeError(
                "temporal must be 'HOST:PORT' or a temporalio.client.Client, got "
                f"{type(temporal).__name__}"
            )
        for label, text in (("task_queue", task_queue), ("namespace", namespace)):
            if not isinstance(text, str) or not text.strip():
                raise InvalidValueError(f"{label} must be a non-empty str, got {text!r}")
        for label, number in (
            ("heartbeat_ms", heartbeat_ms),
            ("max_attempts", max_attempts),
            ("question_ttl_ms", question_ttl_ms),
        ):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise InvalidValueError(f"{label} must be an int >= 1, got {number!r}")
        self._task_queue = task_queue
        self._namespace = namespace
        self._heartbeat_ms = heartbeat_ms
        self._max_attempts = max_attempts
        self._ttl_s = question_ttl_ms / 1000
        # The runner's own event loop and thread, started with the first call.
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._event_loop: asyncio.AbstractEventLoop | None = None
        _runners.add(self)

    @property
    def task_queue(self) -> str:
        """The task queue the workers poll."""
        return self._task_queue

    def __repr__(self) -> str:
        return f"<TemporalRunner {self._target} task_queue={self._task_queue!r}>"

    # ----------------------------------------------------------------- the host's seam

    def _toolkit_for(self, toolkit: Toolkit, max_rounds: int) -> Toolkit:
        """``toolkit``'s tools as the host runs them: each checks its arguments here, as
        the tool would, then runs as a workflow (see the module's docstring)."""
        from .._toolkit import Toolkit

        return Toolkit([self._remote(tool, max_rounds) for tool in toolkit])

    def _remote(self, tool: Tool, max_rounds: int) -> Tool:
        annotations = tool.annotations or {}
        call = {
            "tool": tool.name,
            "retry": annotations.get("idempotentHint") is True
            or annotations.get("readOnlyHint") is True,
            "max_attempts": self._max_attempts,
            "heartbeat_ms": self._heartbeat_ms,
            "max_rounds": max_rounds,
            "ttl_s": self._ttl_s,
        }

        async def run_on_temporal(
            args: Mapping[str, Any], ctx: ToolContext | None = None
        ) -> ToolResult:
            return await self._run(call, args, ctx)

        return Tool(
            tool.name,
            tool.description,
            tool.input_schema,
            run_on_temporal,
            source=tool.source,
            title=tool.title,
            annotations=tool.annotations,
        )

    # ----------------------------------------------------------------- one attempt

    async def _run(
        self, call: dict[str, Any], args: Mapping[str, Any], ctx: ToolContext | None
    ) -> ToolResult:
        """Run one attempt on the runner's own event loop (the Temporal client lives
        there, whatever loop or thread the host calls from) and wait for it. Cancelling
        the wait cancels the attempt there — and that cancels the workflow — without
        waiting for Temporal to take the cancel."""
        from .._context import ToolContext

        loop = self._loop()
        attempt = asyncio.run_coroutine_threadsafe(
            self._attempt(call, dict(args), ctx or ToolContext()), loop
        )
        return await asyncio.wrap_future(attempt)

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=loop.run_forever, name="toolnexus-temporal", daemon=True
                )
                self._thread.start()
                self._event_loop = loop
            assert self._event_loop is not None
            return self._event_loop

    async def _attempt(
        self, call: dict[str, Any], args: dict[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """Start the call's workflow — or, with ``ctx.answer``, answer the one that waits —
        and return what it settles on: the result, or the next question."""
        from temporalio.client import (
            WithStartWorkflowOperation,
            WorkflowUpdateFailedError,
            WorkflowUpdateRPCTimeoutOrCancelledError,
        )
        from temporalio.common import WorkflowIDConflictPolicy
        from temporalio.service import RPCError, RPCStatusCode

        from ._workflow import ANSWER, SETTLED, WORKFLOW, WORKFLOW_ID_PREFIX

        name = call["tool"]
        try:
            client = await self._connected()
        except RuntimeError as exc:
            return ToolResult.error(
                f"'{name}' was not run: cannot reach Temporal at {self._target} "
                f"({_first_line(exc)})"
            )
        answer = ctx.answer
        if answer is None:
            workflow_id = f"{WORKFLOW_ID_PREFIX}{uuid.uuid4().hex}"
            start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                WORKFLOW,
                {**call, "args": args, "timeout_ms": ctx.timeout_ms},
                id=workflow_id,
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
            # A request cancelled at exit (see _wind_down) also fails the operation's
            # handle, which nothing here awaits: read it, or asyncio reports "exception
            # never retrieved". (The SDK keeps the handle as a private future.)
            handle = getattr(start, "_workflow_handle", None)
            if isinstance(handle, asyncio.Future):
                handle.add_done_callback(_swallow)
            waiting: Any = client.execute_update_with_start_workflow(
                SETTLED, start_workflow_operation=start
            )
        else:
            workflow_id, dot, _ = answer.id.rpartition(".")
            if not dot or not workflow_id.startswith(WORKFLOW_ID_PREFIX):
                return ToolResult.error(
                    f"cannot resume: answer id {answer.id!r} names no question a call on "
                    "Temporal asked (the tool was not run)"
                )
            waiting = client.get_workflow_handle(workflow_id).execute_update(
                ANSWER, {"answer": answer.to_dict(), "timeout_ms": ctx.timeout_ms}
            )
        watching = None
        if ctx.progress is not None:
            watching = asyncio.ensure_future(self._watch_progress(client, workflow_id, ctx))
        # The request is never cancelled under way (the SDK would leave its reply behind,
        # unread): a cancel cancels the workflow, which then answers the request.
        request = asyncio.ensure_future(waiting)
        try:
            settled = await asyncio.shield(request)
        except asyncio.CancelledError:
            # The host's deadline passed or the caller cancelled: the workflow cancels its
            # activity, and the worker the tool's token, with the next heartbeat.
            request.add_done_callback(_swallow)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    client.get_workflow_handle(workflow_id).cancel(), _CANCEL_WAIT_S
                )
            raise
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            return ToolResult.error(f"'{name}' on Temporal at {self._target}: {exc}")
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            text = getattr(cause, "message", None) or _first_line(cause or exc)
            return ToolResult.error(f"cannot resume: {text} (the tool was not run)")
        except RPCError as exc:
            if answer is not None and exc.status == RPCStatusCode.NOT_FOUND:
                return ToolResult.error(
                    f"cannot resume: the call that asked {answer.id!r} no longer waits "
                    "(its question expired, or the call ended); call the tool again to ask "
                    "anew (the tool was not run)"
                )
            return ToolResult.error(f"'{name}' on Temporal at {self._target}: {exc.message}")
        finally:
            if watching is not None:
                watching.cancel()
        return ToolResult.from_dict(settled)

    def _let_go(self) -> None:
        """Stop the runner's loop and drop its client (at interpreter exit)."""
        with self._lock:
            loop, thread = self._event_loop, self._thread
            self._event_loop = self._thread = None
        if loop is not None and thread is not None:
            _stop_loop(loop, thread)
        if self._target_owned:
            self._client = None

    async def _connected(self) -> Client:
        """The client, connected by the first call that needs it (on the runner's loop)."""
        if self._client is None:
            from temporalio.client import Client

            self._client = await Client.connect(self._target, namespace=self._namespace)
        return self._client

    async def _watch_progress(self, client: Client, workflow_id: str, ctx: ToolContext) -> None:
        """Report the progress the tool's heartbeats carry to the caller, while it runs."""
        last: Any = None
        handle = client.get_workflow_handle(workflow_id)
        while True:
            await asyncio.sleep(_PROGRESS_POLL_S)
            with contextlib.suppress(Exception):  # progress is best effort: never fail a call
                described = await handle.describe()
                for pending in described.raw_description.pending_activities:
                    if not pending.heartbeat_details.payloads:
                        continue
                    details = await client.data_converter.decode(pending.heartbeat_details.payloads)
                    if details and details != last:
                        last = details
                        ctx.report_progress(*details)


_WIND_DOWN_S = 1.0
"""At exit: how long the runner loop's tasks (a cancel on its way to Temporal, a request
waiting for the workflow it cancelled) get to finish, then how long they get to end once
cancelled."""


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    """Stop the runner's loop, running in ``thread``, with no task left pending on it.

    A task still pending when its loop is dropped is destroyed pending, and asyncio says so
    on stderr at exit ("Task was destroyed but it is pending!"): a call cancelled or timed
    out just before the host exited leaves its cancel and its request there. They get
    :data:`_WIND_DOWN_S` to finish (the cancel reaching Temporal), then are cancelled and
    awaited; then the loop stops."""
    if thread.is_alive():
        with contextlib.suppress(RuntimeError):  # the loop is closed already
            wound = asyncio.run_coroutine_threadsafe(_wind_down(), loop)
            with contextlib.suppress(Exception):
                wound.result(3 * _WIND_DOWN_S)
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(loop.stop)
    thread.join(5.0)  # at once, but for a starved machine
    if not thread.is_alive():
        # Closed here: left to its __del__ at interpreter teardown, the loop may find its
        # self-pipe's socket finalized first and print "Exception ignored ... Invalid file
        # descriptor: -1" on stderr.
        with contextlib.suppress(RuntimeError):
            loop.close()


async def _wind_down() -> None:
    """On the runner's loop: let its other tasks finish, cancel those that do not in
    time, and await them."""
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=_WIND_DOWN_S)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=_WIND_DOWN_S)


def _swallow(future: asyncio.Future[Any]) -> None:
    """Read the outcome of a request nobody waits for any more."""
    if not future.cancelled():
        future.exception()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


TemporalRunner.__module__ = "toolnexus.temporal"
