"""What the store tests' child processes run: kept apart from pytest, which each spawned
process would otherwise import again just to find these functions."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from toolnexus.stores import open_store

FAR = 4e9  # an expiry in 2096


def consume_together(url: str, key: str, count: int, start: Any, results: Any) -> None:
    """One of the contending processes: open the store, wait for the others, consume
    ``key`` ``count`` times from 4 threads, and report how many consumes won."""
    store = open_store(url)
    start.wait()
    with ThreadPoolExecutor(4) as pool:
        wins = sum(pool.map(lambda _: store.consume(key, FAR), range(count)))
    closer = getattr(store, "close", None)
    if closer is not None:
        closer()
    results.put(wins)


def update_together(url: str, record: dict[str, Any], n: int, start: Any, results: Any) -> None:
    """One of the processes contending for one version of a task record: open the task
    store, wait for the others, update, and report whether this update won."""
    from toolnexus.stores import TaskRecord, open_task_store

    store = open_task_store(url)
    mine = TaskRecord.from_dict(record).evolve(status_message=f"writer {n}")
    start.wait()
    won = store.update(mine)
    closer = getattr(store, "close", None)
    if closer is not None:
        closer()
    results.put(won)
