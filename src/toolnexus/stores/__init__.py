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

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any

    from ._answers import MemoryAnswerStore, SqliteAnswerStore
    from ._open import open_store, open_task_store
    from ._postgres import PostgresAnswerStore, PostgresTaskStore
    from ._protocol import AnswerStore
    from ._redis import RedisAnswerStore, RedisTaskStore
    from ._tasks import MemoryTaskStore, SqliteTaskStore, TaskRecord, TaskStore

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

# Every name loads with its first use: a host loads ``_answers`` alone (its default store),
# and a program that never names a server's store does not even look for psycopg or redis.
_LAZY = {
    "AnswerStore": "._protocol",
    "MemoryAnswerStore": "._answers",
    "SqliteAnswerStore": "._answers",
    "open_store": "._open",
    "open_task_store": "._open",
    "MemoryTaskStore": "._tasks",
    "SqliteTaskStore": "._tasks",
    "TaskRecord": "._tasks",
    "TaskStore": "._tasks",
    "PostgresAnswerStore": "._postgres",
    "PostgresTaskStore": "._postgres",
    "RedisAnswerStore": "._redis",
    "RedisTaskStore": "._redis",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus.stores' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    if value.__module__.startswith(__name__ + "."):
        value.__module__ = __name__  # where users import it from, and its repr
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)  # the public names, not this module's helpers
