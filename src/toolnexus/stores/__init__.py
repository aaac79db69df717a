"""Where a host keeps what another process may need to see: used answers, and the tasks
an MCP server runs (:class:`TaskStore`: :class:`MemoryTaskStore`, :class:`SqliteTaskStore`,
:class:`PostgresTaskStore`, :class:`RedisTaskStore`; :func:`open_task_store` opens one by
URL, as :func:`open_store` does the answer stores).

An :class:`AnswerStore` remembers which answers were used, so each one resumes a call at
most once — also across processes and machines that share the store. Four are built in:

- :class:`MemoryAnswerStore` — one per process, the default;
- :class:`SqliteAnswerStore` — processes on one machine;
- :class:`PostgresAnswerStore` — any number of machines (``pip install
  'toolnexus-contract[postgres]'``, on psycopg 3);
- :class:`RedisAnswerStore` — any number of machines (``pip install
  'toolnexus-contract[redis]'``, on redis-py).

One URL chooses among them everywhere (:func:`open_store` in Python, ``--store URL`` on the
command line, the environment variable ``TOOLNEXUS_STORE`` for every host that is given no
store). Importing this module imports neither psycopg nor redis: each loads with the first
use of its store. Anything with a ``consume(key, expires_at)`` method that is atomic fits.

Example::

    from toolnexus import Host
    from toolnexus.stores import open_store

    host = Host(toolkit, secret=key, answer_store=open_store("postgresql://app@db/app"))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._binding import MemoryAnswerStore, SqliteAnswerStore
from ._open import open_store, open_task_store
from ._tasks import MemoryTaskStore, SqliteTaskStore, TaskRecord, TaskStore

if TYPE_CHECKING:
    from ._postgres import PostgresAnswerStore, PostgresTaskStore
    from ._redis import RedisAnswerStore, RedisTaskStore

__all__ = [
    "AnswerStore",
    "MemoryAnswerStore",
    "MemoryTaskStore",
    "PostgresAnswerStore",
    "PostgresTaskStore",
    "RedisAnswerStore",
    "RedisTaskStore",
    "SqliteAnswerStore",
    "SqliteTaskStore",
    "TaskRecord",
    "TaskStore",
    "open_store",
    "open_task_store",
]

# The stores on a server load with their first use: their modules are cheap, but a
# program that never names them should not even look for psycopg or redis.
_LAZY = {
    "PostgresAnswerStore": "._postgres",
    "PostgresTaskStore": "._postgres",
    "RedisAnswerStore": "._redis",
    "RedisTaskStore": "._redis",
}


@runtime_checkable
class AnswerStore(Protocol):
    """Where used answers are remembered, so each binding resumes a call at most once.

    One method: ``consume(key, expires_at)`` records ``key`` (an opaque ASCII string of at
    most 64 characters) and returns ``True`` the first time, ``False`` when it is recorded
    already. It must be atomic — two processes consuming the same key at once: exactly one
    gets ``True`` — and may forget a key once the time (``time.time()`` seconds) passes
    ``expires_at``: an answer is refused as expired after that anyway. When it cannot tell
    (its server is down), it raises (:class:`~toolnexus.StoreUnavailableError` by
    preference): the resume is then refused and nothing is used up. Optional:
    ``release(key)`` forgets a key, for a resumed tool that says it did not use its answer
    (``metadata["answer"] == "unused"``: a remote server refused it unused); without it
    such an answer stays used. The stores of this package all have it.

    Example (a store of your own)::

        class DictStore:
            def __init__(self) -> None:
                self.used: dict[str, float] = {}

            def consume(self, key: str, expires_at: float) -> bool:
                if key in self.used:  # atomic enough for one thread, not for a fleet
                    return False
                self.used[key] = expires_at
                return True

        host = Host(toolkit, secret=key, answer_store=DictStore())
    """

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key``; True the first time, False when it was recorded already."""
        ...


for _exported in (
    AnswerStore,
    MemoryAnswerStore,
    SqliteAnswerStore,
    open_store,
    open_task_store,
    MemoryTaskStore,
    SqliteTaskStore,
    TaskRecord,
    TaskStore,
):
    _exported.__module__ = __name__  # where users import them from, and their repr
del _exported


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus.stores' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
