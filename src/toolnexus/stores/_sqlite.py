"""The connections of the SQLite stores (:class:`~toolnexus.stores.SqliteAnswerStore`,
:class:`~toolnexus.stores.SqliteTaskStore`): one kept per thread, opened again after a
fork — and how their failures read.

Opening an SQLite connection costs more than the statement a store runs on it (a file
opened, its header read, the schema parsed on first use), so a store keeps one per
thread: SQLite connections may not be shared between threads without locking of their
own, and a connection made before ``fork`` must not be used, or closed, by the child
(https://www.sqlite.org/howtocorrupt.html, section 2.6). This module imports ``sqlite3``
only when a connection is opened.
"""

from __future__ import annotations

import os
import threading

from ..errors import StoreUnavailableError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Connections", "OnConnections", "unavailable"]


class Connections:
    """The connections to the SQLite file ``path``: each thread's own, opened on its
    first use in this process and kept (closed when its thread ends, or by
    :meth:`close`). A connection a thread made before ``fork`` is left alone in the
    child — kept, never used or closed — and the child opens its own.

    Example::

        >>> import tempfile
        >>> connections = Connections(tempfile.mkdtemp() + "/example.db")
        >>> connections.get().execute("SELECT 1").fetchone()
        (1,)
        >>> connections.get() is connections.get()
        True
        >>> connections.close()
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()  # .db: this thread's connection, .pid: its process
        self._stale: list[Any] = []  # connections inherited through fork: never closed here

    def get(self) -> Any:
        """The calling thread's connection (autocommit, a 30 s wait for a lock held by
        another process); ``sqlite3.Error`` when the file cannot be opened."""
        local = self._local
        db = getattr(local, "db", None)
        if db is not None and local.pid == os.getpid():
            return db
        if db is not None:  # made by the parent before a fork: kept, never used or closed
            self._stale.append(db)
        import sqlite3

        db = local.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        local.pid = os.getpid()
        return db

    def close(self) -> None:
        """Close the calling thread's connection (its next :meth:`get` opens another)."""
        local = self._local
        db = getattr(local, "db", None)
        if db is not None and local.pid == os.getpid():
            local.db = None
            db.close()


class OnConnections:
    """What an SQLite store on :class:`Connections` (its ``_connections``) offers: closing
    the calling thread's connection."""

    _connections: Connections

    def close(self) -> None:
        """Close the calling thread's connection (the next call opens another). A thread's
        connection closes by itself when the thread ends.

        Example::

            store.close()
        """
        self._connections.close()


def unavailable(path: str, exc: Exception, kind: str = "answer store") -> StoreUnavailableError:
    """The error an SQLite store (``kind``: ``"answer store"``, ``"task store"``) raises
    when its file cannot be used (``exc``, the driver's error: not a database, read-only,
    locked past the wait, no such folder).

    Example::

        >>> print(unavailable("/tmp/x.db", OSError("disk I/O error")))  # doctest: +ELLIPSIS
        answer store sqlite:/tmp/x.db: disk I/O error; check that the file is an SQLite ...
    """
    return StoreUnavailableError(
        f"sqlite:{path}",
        f"{exc}; check that the file is an SQLite database this process may write, in a "
        "folder that exists",
        kind,
    )
