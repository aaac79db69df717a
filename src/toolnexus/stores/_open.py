"""One URL chooses an answer store (:func:`open_store`) or a task store
(:func:`open_task_store`), and what the stores share.

Everything that reads a store URL lives here: the schemes (``memory:``, ``sqlite:PATH``,
``postgresql://…``, ``redis://…``), and the stores a host or a server uses when it is
given none (:func:`process_store`, :func:`process_task_store`: the one ``TOOLNEXUS_STORE``
names, else this process's memory store). Each store's module loads with its first use.
"""

from __future__ import annotations

import os
import threading

from ..errors import InvalidTypeError, InvalidValueError
from ._common import STORE_ENV, redact

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: this module loads with every host
if TYPE_CHECKING:
    from ._protocol import AnswerStore
    from ._tasks import TaskStore

__all__ = [
    "SCHEMES",
    "open_named",
    "open_store",
    "open_task_store",
    "process_store",
    "process_task_store",
]

SCHEMES = "memory:, sqlite:PATH, postgresql://USER:PASSWORD@HOST/DB or redis://HOST:6379/0"


def open_store(url: str) -> AnswerStore:
    """The answer store a URL names.

    - ``memory:`` — :class:`~toolnexus.stores.MemoryAnswerStore` (this process only);
    - ``sqlite:PATH`` (also ``sqlite:///abs/path``) —
      :class:`~toolnexus.stores.SqliteAnswerStore` (processes on one machine);
    - ``postgresql://…`` (or ``postgres://…``, a libpq URL) —
      :class:`~toolnexus.stores.PostgresAnswerStore` (the ``postgres`` extra);
    - ``redis://…``, ``rediss://…`` or ``unix://…`` (a redis-py URL) —
      :class:`~toolnexus.stores.RedisAnswerStore` (the ``redis`` extra).

    A Postgres or Redis store connects at once, so a wrong URL or a server that is down
    shows here rather than at the first answer. Raises ``ValueError`` for a URL it cannot
    read (the message names the URL, never its password, and lists the schemes),
    ``ImportError`` naming the extra to install, and
    :class:`~toolnexus.StoreUnavailableError` when the store cannot be reached.

    Example::

        >>> open_store("memory:")
        <MemoryAnswerStore 0 used>
        >>> store = open_store("sqlite:used-answers.db")   # doctest: +SKIP
    """
    return open_named(url, "")


def open_named(url: object, where: str) -> AnswerStore:
    """:func:`open_store`, with ``where`` (``"--store"``, ``"TOOLNEXUS_STORE"``) named first
    in the messages when the URL came from there."""
    prefix = f"{where}: " if where else ""
    kind, target = _read(url, prefix)
    if kind == "memory":
        from ._answers import MemoryAnswerStore

        return MemoryAnswerStore()
    if kind == "sqlite":
        from ._answers import SqliteAnswerStore

        return SqliteAnswerStore(target)
    if kind == "postgres":
        from ._postgres import PostgresAnswerStore

        return PostgresAnswerStore(target)
    from ._redis import RedisAnswerStore

    return RedisAnswerStore(target)


def _read(url: object, prefix: str) -> tuple[str, str]:
    """(kind, target) of a store URL: ``memory``, ``sqlite`` (a file's path), ``postgres``
    or ``redis`` (the URL itself); ``ValueError``/``TypeError`` for one it cannot read."""
    if not isinstance(url, str):
        raise InvalidTypeError(f"{prefix}a store URL must be a str, got {type(url).__name__}")
    text = url.strip()
    scheme, colon, rest = text.partition(":")
    scheme = scheme.lower()
    if not colon or not scheme:
        raise InvalidValueError(
            f"{prefix}{redact(text)!r} is not a store URL; use one of {SCHEMES}"
        )
    if scheme == "memory":
        if rest not in ("", "//"):
            raise InvalidValueError(f"{prefix}{redact(text)!r}: write just 'memory:'")
        return "memory", ""
    if scheme == "sqlite":
        path = rest
        if path.startswith("//"):
            host, slash, tail = path[2:].partition("/")
            if host not in ("", "localhost"):
                raise InvalidValueError(
                    f"{prefix}{text!r}: an SQLite file is on this machine; write "
                    "sqlite:PATH (e.g. sqlite:/var/lib/app/used.db or sqlite:used.db)"
                )
            path = slash + tail
        if not path:
            raise InvalidValueError(
                f"{prefix}{text!r} names no file; write sqlite:PATH (e.g. sqlite:used.db)"
            )
        return "sqlite", os.path.expanduser(path)
    if scheme in ("postgresql", "postgres"):
        return "postgres", text
    if scheme in ("redis", "rediss", "unix"):
        return "redis", text
    raise InvalidValueError(
        f"{prefix}unknown store scheme {scheme!r} in {redact(text)!r}; use one of {SCHEMES}"
    )


def open_task_store(url: str) -> TaskStore:
    """The task store a URL names — the same URLs as :func:`open_store`, so one URL puts a
    server's used answers and its task records in one place:

    - ``memory:`` — :class:`~toolnexus.stores.MemoryTaskStore` (this process only);
    - ``sqlite:PATH`` — :class:`~toolnexus.stores.SqliteTaskStore` (processes on one
      machine);
    - ``postgresql://…`` — :class:`~toolnexus.stores.PostgresTaskStore`;
    - ``redis://…`` — :class:`~toolnexus.stores.RedisTaskStore`.

    Raises as :func:`open_store` does.

    Example::

        >>> open_task_store("memory:")
        <MemoryTaskStore 0 task(s)>
    """
    return open_task_named(url, "")


def open_task_named(url: object, where: str) -> TaskStore:
    """:func:`open_task_store`, with ``where`` named first in the messages."""
    prefix = f"{where}: " if where else ""
    kind, target = _read(url, prefix)
    if kind == "memory":
        from ._tasks import MemoryTaskStore

        return MemoryTaskStore()
    if kind == "sqlite":
        from ._tasks import SqliteTaskStore

        return SqliteTaskStore(target)
    if kind == "postgres":
        from ._postgres import PostgresTaskStore

        return PostgresTaskStore(target)
    from ._redis import RedisTaskStore

    return RedisTaskStore(target)


_named_task_stores: dict[str, TaskStore] = {}
_named_task_stores_lock = threading.Lock()


def process_task_store() -> TaskStore | None:
    """The task store ``TOOLNEXUS_STORE`` names (opened once per process and URL), or
    None when it names none: a server given no task store keeps its tasks there."""
    url = os.environ.get(STORE_ENV, "").strip()
    if not url:
        return None
    with _named_task_stores_lock:  # opening may wait on a network: one opener per URL
        store = _named_task_stores.get(url)
        if store is None:
            store = _named_task_stores[url] = open_task_named(url, STORE_ENV)
        return store


_default_store: AnswerStore | None = None
_named_stores: dict[str, AnswerStore] = {}
_named_stores_lock = threading.Lock()
_default_store_lock = threading.Lock()


def process_store() -> AnswerStore:
    """The store ``TOOLNEXUS_STORE`` names (opened once per process and URL), else this
    process's one :class:`MemoryAnswerStore`."""
    global _default_store
    url = os.environ.get(STORE_ENV, "").strip()
    if url:
        with _named_stores_lock:  # not the key lock: opening may wait on a network
            store = _named_stores.get(url)
            if store is None:
                store = _named_stores[url] = open_named(url, STORE_ENV)
            return store
    with _default_store_lock:
        if _default_store is None:
            from ._answers import MemoryAnswerStore

            _default_store = MemoryAnswerStore()
        return _default_store
