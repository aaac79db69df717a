"""Asyncio bridges for the host: private loops for async code run from threads, and the
one way to run a coroutine from synchronous code (:func:`run_blocking`). Imported only when
a call needs an event loop, so ``from toolnexus import Host`` does not load :mod:`asyncio`."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ._cancellation import CancellationToken

__all__ = ["CANCELLED", "drive", "run_awaitable", "run_blocking", "swallow"]

CANCELLED = object()
"""What :func:`drive` returns when the token cancelled the awaitable."""


def swallow(task: asyncio.Future[Any]) -> None:
    """Retrieve the outcome of an abandoned task so asyncio does not log it as lost."""
    if not task.cancelled():
        task.exception()


async def drive(awaitable: Awaitable[Any], token: CancellationToken) -> Any:
    """Await ``awaitable`` as a task that ``token`` cancels; :data:`CANCELLED` when it did."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)

    def cancel() -> None:
        with contextlib.suppress(RuntimeError):  # the loop already finished
            loop.call_soon_threadsafe(task.cancel)

    registration = token.register(cancel)
    try:
        return await task
    except asyncio.CancelledError:
        if token.is_cancellation_requested:
            return CANCELLED
        raise
    finally:
        registration.unregister()


def _run_private(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on a fresh event loop in this thread, leaving the thread's loop policy
    alone (``asyncio.run`` would reset it), and clean up whatever the coroutine left."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def run_blocking(coro_fn: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine to completion from synchronous code.

    In a thread without a running loop it runs right here on a private loop; inside a
    running loop (a sync API called from async code) it runs on a helper thread so the
    caller's loop is not re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_private(coro_fn())
    box: list[Any] = []
    context = contextvars.copy_context()  # the caller's context variables come along

    def target() -> None:
        try:
            box.append((True, context.run(_run_private, coro_fn())))
        except BaseException as exc:
            box.append((False, exc))

    helper = threading.Thread(target=target, name="toolnexus-async-helper", daemon=True)
    helper.start()
    helper.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value


def run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Await ``awaitable`` from synchronous code, as :func:`run_blocking` runs a coroutine
    (an async tool's result, a resource's or a prompt's awaitable)."""

    async def wait() -> Any:
        return await awaitable

    return run_blocking(wait)
