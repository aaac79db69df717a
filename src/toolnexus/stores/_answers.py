"""The answer stores that need no server: :class:`MemoryAnswerStore` (one process) and
:class:`SqliteAnswerStore` (processes on one machine).

This module is loaded with every host, so it imports neither ``typing`` nor ``sqlite3``
until they are needed; the :class:`~toolnexus.stores.AnswerStore` protocol lives in
``_protocol.py``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from ..errors import StoreUnavailableError
from ._sqlite import Connections, OnConnections, unavailable

__all__ = ["MemoryAnswerStore", "SqliteAnswerStore"]


class MemoryAnswerStore:
    """Remembers used answers in this process; entries are dropped once they expire.

    The default: every host and MCP session in a process without a store of its own shares
    one, so an answer cannot be replayed through a second host either. Thread-safe.

    Example::

        >>> store = MemoryAnswerStore()
        >>> store.consume("k", time.time() + 60), store.consume("k", time.time() + 60)
        (True, False)
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        import heapq

        self._heap: list[tuple[float, str]] = []
        self._push = heapq.heappush
        self._pop = heapq.heappop
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key`` until ``expires_at``; True the first time, False afterwards."""
        now = self._clock()
        with self._lock:
            heap = self._heap
            while heap and heap[0][0] <= now:
                _, old = self._pop(heap)
                if self._used.get(old, now + 1) <= now:
                    del self._used[old]
            if key in self._used:
                return False
            self._used[key] = expires_at
            self._push(heap, (expires_at, key))
            return True

    def release(self, key: str) -> None:
        """Forget ``key``: the next ``consume`` of it is the first again."""
        with self._lock:
            self._used.pop(key, None)  # its heap entry finds nothing to drop when it expires

    def __len__(self) -> int:
        return len(self._used)

    def __repr__(self) -> str:
        return f"<MemoryAnswerStore {len(self._used)} used>"


class SqliteAnswerStore(OnConnections):
    """Remembers used answers in an SQLite file, so processes on one machine share them.

    Each :meth:`consume` is one conditional ``INSERT`` (an upsert that takes the key only
    when it is new or expired), atomic on its own: SQLite's file lock makes it so across
    processes, and a replay is refused by the same statement without a write. Expired rows
    are deleted now and then. The file and its table are created when missing.
    Thread- and fork-safe: each thread keeps a connection of its own (closed when the
    thread ends, or by :meth:`close`), and a process made by ``fork`` opens its own (the
    parent's is never used or closed in the child, as SQLite asks).

    Example::

        host = Host(toolkit, secret=key, answer_store=SqliteAnswerStore("/var/lib/app/used.db"))
    """

    def __init__(
        self, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> None:
        self._path = os.fspath(path)
        self._clock = clock
        self._count = 0
        self._connections = Connections(self._path)
        try:
            self._connections.get().execute(
                "CREATE TABLE IF NOT EXISTS toolnexus_used_answers "
                "(key TEXT PRIMARY KEY, expires_at REAL NOT NULL)"
            )
        except Exception as exc:  # sqlite3.Error: not a database, read-only, no such folder
            raise unavailable(self._path, exc) from exc

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key`` until ``expires_at``; True the first time, False afterwards.

        Raises :class:`~toolnexus.StoreUnavailableError` when the file cannot be used."""
        try:
            return self._consume(key, expires_at)
        except StoreUnavailableError:
            raise
        except Exception as exc:  # sqlite3.Error (locked past the timeout, disk I/O)
            raise unavailable(self._path, exc) from exc

    def _consume(self, key: str, expires_at: float) -> bool:
        now = self._clock()
        self._count += 1
        db = self._connections.get()
        if self._count % 64 == 1:
            db.execute("DELETE FROM toolnexus_used_answers WHERE expires_at <= ?", (now,))
        # One statement: a new key is inserted, an expired one taken anew, a live one left
        # as it is (no row changed: the replay is refused).
        changed = db.execute(
            "INSERT INTO toolnexus_used_answers (key, expires_at) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at "
            "WHERE toolnexus_used_answers.expires_at <= ?",
            (key, float(expires_at), now),
        ).rowcount
        return bool(changed == 1)

    def release(self, key: str) -> None:
        """Forget ``key``: the next ``consume`` of it is the first again.

        Raises :class:`~toolnexus.StoreUnavailableError` when the file cannot be used."""
        try:
            self._connections.get().execute(
                "DELETE FROM toolnexus_used_answers WHERE key = ?", (key,)
            )
        except StoreUnavailableError:
            raise
        except Exception as exc:  # sqlite3.Error (locked past the timeout, disk I/O)
            raise unavailable(self._path, exc) from exc

    def __repr__(self) -> str:
        return f"<SqliteAnswerStore {self._path!r}>"
