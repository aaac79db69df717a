"""A worker of the fleet: a toolkit's tools as Temporal activities, beside the workflow
that holds each call (:func:`run_worker`, and :func:`serve_worker` for a process that
does nothing else, as ``toolnexus worker`` does). Imports ``temporalio`` when used."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..errors import InvalidTypeError, InvalidValueError, TemporalUnavailableError
from ._runner import import_temporalio

if TYPE_CHECKING:
    from temporalio.client import Client

    from .._toolkit import Toolkit

__all__ = ["run_worker", "serve_worker"]

# After a worker dies, a call's next workflow task waits this long on the dead worker's
# own ("sticky") queue before any worker may take it: Temporal's 10 s, shortened, so a
# call whose worker was killed is answered about as soon as the lost heartbeat is noticed.
_STICKY = timedelta(seconds=2)
_GRACEFUL = timedelta(seconds=10)  # on shutdown, running calls may finish within this


async def run_worker(
    toolkit: Toolkit,
    temporal: str | Client,
    *,
    task_queue: str,
    namespace: str = "default",
    max_concurrent: int | None = None,
    ready: Callable[[], object] | None = None,
) -> None:
    """Run ``toolkit``'s tools on Temporal's task queue ``task_queue`` until cancelled.

    Each tool becomes an activity named like the tool, run through a host of the worker's
    own (deadlines that hold, cancellation reaching the tool's token, progress sent out
    with the heartbeats); the worker also runs the ``toolnexus.ToolCall`` workflow that
    holds each call and its questions. Start as many workers as you like, on as many
    machines: a call runs on whichever polls first. ``temporal`` is ``HOST:PORT`` (with
    ``namespace``) or a connected ``temporalio.client.Client``. ``max_concurrent`` bounds
    the calls this worker runs at once (its host's threads too; default: Temporal's).
    ``ready()`` is called once the worker polls. Cancelling the task stops polling, lets
    running calls finish for up to 10 s, then cancels them.

    Raises :class:`~toolnexus.errors.TemporalUnavailableError` (a ``ConnectionError``) when
    Temporal cannot be reached, ``ImportError`` naming the extra when temporalio is missing.

    Example::

        import asyncio
        from toolnexus.temporal import run_worker

        asyncio.run(run_worker(toolkit, "temporal.internal:7233", task_queue="tools"))
    """
    worker = await _worker(toolkit, temporal, task_queue, namespace, max_concurrent)
    async with worker:
        if ready is not None:
            ready()
        await asyncio.Event().wait()  # until cancelled; leaving the block shuts down


def serve_worker(
    toolkit: Toolkit,
    temporal: str | Client,
    *,
    task_queue: str,
    namespace: str = "default",
    max_concurrent: int | None = None,
    ready: Callable[[], object] | None = None,
) -> int:
    """:func:`run_worker` in a process of its own: run until SIGINT or SIGTERM and return
    the exit code, 130 after SIGINT, 143 after SIGTERM (128 + the signal, as
    ``toolnexus serve`` does). What ``toolnexus worker`` runs.

    Example::

        from toolnexus.temporal import serve_worker

        if __name__ == "__main__":
            raise SystemExit(serve_worker(toolkit, "localhost:7233", task_queue="tools"))
    """
    import signal
    import threading

    from .._aio import run_blocking

    got: list[int] = []

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            got.append(signum)
            stop.set()

        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, on_signal, signum)
        worker = await _worker(toolkit, temporal, task_queue, namespace, max_concurrent)
        async with worker:
            if ready is not None:
                ready()
            await stop.wait()

    run_blocking(serve)
    return 128 + got[0] if got else 0


async def _worker(
    toolkit: Toolkit,
    temporal: str | Client,
    task_queue: str,
    namespace: str,
    max_concurrent: int | None,
) -> Any:
    import_temporalio()
    from temporalio.client import Client
    from temporalio.worker import Worker

    from ._attempt import worker_host
    from ._workflow import ToolCall, tool_activities

    if not callable(getattr(toolkit, "resolve", None)):
        raise InvalidTypeError(f"run_worker() takes a Toolkit, got {type(toolkit).__name__}")
    if not isinstance(task_queue, str) or not task_queue.strip():
        raise InvalidValueError(f"task_queue must be a non-empty str, got {task_queue!r}")
    if max_concurrent is not None and (
        isinstance(max_concurrent, bool)
        or not isinstance(max_concurrent, int)
        or max_concurrent < 1
    ):
        raise InvalidValueError(
            f"max_concurrent must be None or an int >= 1, got {max_concurrent!r}"
        )
    if isinstance(temporal, str):
        try:
            client = await Client.connect(temporal, namespace=namespace)
        except RuntimeError as exc:
            lines = str(exc).strip().splitlines()
            raise TemporalUnavailableError(
                temporal,
                f"{lines[0] if lines else exc} (is the server running, and is HOST:PORT its "
                "frontend's address?)",
            ) from None
    elif isinstance(temporal, Client):
        client = temporal
    else:
        raise InvalidTypeError(
            "temporal must be 'HOST:PORT' or a temporalio.client.Client, got "
            f"{type(temporal).__name__}"
        )
    host = worker_host(toolkit, max_workers=max_concurrent)
    extra: dict[str, Any] = {}
    if max_concurrent is not None:
        extra["max_concurrent_activities"] = max_concurrent
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[ToolCall],
        activities=tool_activities(toolkit, host),
        sticky_queue_schedule_to_start_timeout=_STICKY,
        graceful_shutdown_timeout=_GRACEFUL,
        **extra,
    )
    return _Closing(worker, host)


class _Closing:
    """The worker, closing its host when it is shut down."""

    def __init__(self, worker: Any, host: Any) -> None:
        self._worker = worker
        self._host = host

    async def __aenter__(self) -> _Closing:
        await self._worker.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker.__aexit__(*exc_info)
        finally:
            self._host.close()
