"""Task records: what an MCP server remembers of a call that became a task.

A :class:`TaskRecord` is plain data — the task's status, its timestamps and TTL, its
result or error once it ended, the questions it waits on, and what resuming it needs — so a
record can live anywhere: in this process (:class:`MemoryTaskStore`), in an SQLite file
processes on one machine share (:class:`SqliteTaskStore`), or (a later release) in a
database a fleet shares. The :class:`TaskStore` protocol is small on purpose: create, get,
a compare-and-set update (so two processes answering the same task cannot both win) and a
purge of expired records.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._frozen import freeze, sealed, thaw
from ..errors import InvalidValueError
from ._sqlite import Connections, OnConnections, unavailable

__all__ = [
    "TERMINAL",
    "MemoryTaskStore",
    "SqliteTaskStore",
    "TaskRecord",
    "TaskStore",
    "record_from_json",
    "record_json",
]

STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""


@sealed
@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task, as a store keeps it.

    Attributes:
        task_id: its id (unguessable).
        owner: who may see it (the digest of the credential that created it), or None
            when the server asks for none.
        status: ``"working"``, ``"input_required"``, ``"completed"``, ``"failed"`` or
            ``"cancelled"``.
        created_at: when it was created (``time.time()`` seconds).
        updated_at: when its status last changed.
        ttl_ms: how long it is kept after its last change (while it is not running).
        version: bumped by each update (the compare-and-set of :meth:`TaskStore.update`).
        status_message: a line for humans, or None.
        result: once completed, the result as MCP writes it; else None.
        error: once failed, the JSON-RPC error (``{"code", "message"}``); else None.
        input_requests: while ``input_required``, the questions as MCP writes them
            (``{key: {"method", "params"}}``); else None.
        state: what resuming or answering it needs (the server's own JSON); else None.

    Example::

        >>> record = TaskRecord("tsk-1", None, "working", 100.0, 100.0, 60_000)
        >>> record.expires_at, record.is_terminal
        (160.0, False)
    """

    task_id: str
    owner: str | None
    status: str
    created_at: float
    updated_at: float
    ttl_ms: int
    version: int = 0
    status_message: str | None = None
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    input_requests: Mapping[str, Any] | None = None
    state: Mapping[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InvalidValueError(
                f"TaskRecord.status must be one of {', '.join(STATUSES)}, got {self.status!r}"
            )
        # Each field by name, not a loop of getattr: a record is made with every task.
        if self.result is not None:
            object.__setattr__(self, "result", freeze(self.result))
        if self.error is not None:
            object.__setattr__(self, "error", freeze(self.error))
        if self.input_requests is not None:
            object.__setattr__(self, "input_requests", freeze(self.input_requests))
        if self.state is not None:
            object.__setattr__(self, "state", freeze(self.state))

    @property
    def expires_at(self) -> float:
        """When a store may forget it: ``ttl_ms`` after its last change."""
        return self.updated_at + self.ttl_ms / 1000

    @property
    def is_terminal(self) -> bool:
        """True once it completed, failed or was cancelled."""
        return self.status in TERMINAL

    def evolve(self, **changes: Any) -> TaskRecord:
        """A copy with ``changes``, the next version (what :meth:`TaskStore.update` takes).

        Example::

            >>> TaskRecord("tsk-1", None, "working", 1.0, 1.0, 10).evolve(status="failed").version
            1
        """
        return dataclasses.replace(self, version=self.version + 1, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON data (what a database keeps)."""
        out: dict[str, Any] = {}
        for each in dataclasses.fields(self):
            out[each.name] = thaw(getattr(self, each.name))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskRecord:
        """Rebuild a record from :meth:`to_dict` (unknown keys are ignored)."""
        known = {each.name for each in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


@runtime_checkable
class TaskStore(Protocol):
    """Where task records live. Thread-safe; a store shared by processes must make
    :meth:`update` atomic (compare-and-set on ``version``).

    Example (the in-memory one)::

        store = MemoryTaskStore()
        store.create(TaskRecord("tsk-1", None, "working", time.time(), time.time(), 60_000))
        record = store.get("tsk-1")
        assert store.update(record.evolve(status="completed"))
    """

    def create(self, record: TaskRecord) -> None:
        """Keep a new record. Raises ``ValueError`` when its id is taken."""

    def get(self, task_id: str) -> TaskRecord | None:
        """The record, or None when there is none or it expired."""

    def update(self, record: TaskRecord) -> bool:
        """Replace the stored record with ``record`` if the stored one's version is
        ``record.version - 1``; False (nothing changed) otherwise, or when it is gone."""

    def purge(self) -> int:
        """Forget expired records; how many were dropped."""

    # Also ``delete(task_id) -> None`` — forget one record now (nothing when there is none),
    # which a server calls to evict a finished task when it keeps too many. Every built-in
    # store has it; it is not part of the protocol (a store written before it still fits),
    # and a store without it keeps an evicted task's record, emptied, until its TTL.


class MemoryTaskStore:
    """Task records in this process (the default): lost when it ends. Expired records are
    dropped as new ones come (after 64 creations, or as many as half the records kept if
    that is more: a creation's share of the sweep stays constant) and by :meth:`purge`.

    Example::

        >>> store = MemoryTaskStore()
        >>> store.create(TaskRecord("tsk-1", None, "working", time.time(), time.time(), 60_000))
        >>> store.get("tsk-1").status
        'working'
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._until_purge = 64  # creations before the next sweep of expired records

    def create(self, record: TaskRecord) -> None:
        with self._lock:
            if record.task_id in self._records:
                raise InvalidValueError(f"task {record.task_id!r} exists already")
            self._records[record.task_id] = record
            self._until_purge -= 1
            if self._until_purge <= 0:
                self._purge_locked()
                self._until_purge = max(64, len(self._records) // 2)

    def get(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is None or record.expires_at <= self._clock():
            return None
        return record

    def update(self, record: TaskRecord) -> bool:
        with self._lock:
            stored = self._records.get(record.task_id)
            if stored is None or stored.version != record.version - 1:
                return False
            self._records[record.task_id] = record
            return True

    def delete(self, task_id: str) -> None:
        """Forget the record ``task_id`` now (nothing when there is none)."""
        with self._lock:
            self._records.pop(task_id, None)

    def purge(self) -> int:
        with self._lock:
            return self._purge_locked()

    def _purge_locked(self) -> int:
        now = self._clock()
        gone = [key for key, record in self._records.items() if record.expires_at <= now]
        for key in gone:
            del self._records[key]
        return len(gone)

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"<MemoryTaskStore {len(self._records)} task(s)>"


class SqliteTaskStore(OnConnections):
    """Task records in an SQLite file, shared by the processes of one machine (a task
    outlives the process that ran it: its result, or the question it waits on, stays).

    An update is one ``UPDATE ... WHERE version = ?`` (atomic across processes). Expired
    rows are deleted as new ones come (every 64 creations) and by :meth:`purge`.
    Thread- and fork-safe: each thread keeps a connection of its own (closed when the
    thread ends, or by :meth:`close`), and a process made by ``fork`` opens its own (the
    parent's is never used or closed in the child, as SQLite asks).

    Example::

        store = SqliteTaskStore("/var/lib/app/tasks.db")
    """

    def __init__(
        self, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> None:
        self._path = os.fspath(path)
        self._clock = clock
        self._created = 0
        self._connections = Connections(self._path)
        self._run(
            "CREATE TABLE IF NOT EXISTS toolnexus_tasks (task_id TEXT PRIMARY KEY, "
            "version INTEGER NOT NULL, expires_at REAL NOT NULL, record TEXT NOT NULL)"
        )

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        import sqlite3

        try:
            cursor = self._connections.get().execute(sql, params)
            try:
                return cursor.fetchone() if sql.startswith("SELECT") else cursor.rowcount
            finally:
                cursor.close()  # the statement ends here: no read lock outlives the call
        except sqlite3.IntegrityError:
            raise
        except Exception as exc:  # sqlite3.Error: not a database, read-only, locked
            raise unavailable(self._path, exc, "task store") from exc

    def create(self, record: TaskRecord) -> None:
        import sqlite3

        self._created += 1
        if self._created % 64 == 0:
            self.purge()
        try:
            self._run(
                "INSERT INTO toolnexus_tasks (task_id, version, expires_at, record) "
                "VALUES (?, ?, ?, ?)",
                (record.task_id, record.version, record.expires_at, record_json(record)),
            )
        except sqlite3.IntegrityError:
            raise InvalidValueError(f"task {record.task_id!r} exists already") from None

    def get(self, task_id: str) -> TaskRecord | None:
        row = self._run(
            "SELECT record FROM toolnexus_tasks WHERE task_id = ? AND expires_at > ?",
            (task_id, self._clock()),
        )
        return None if row is None else record_from_json(row[0])

    def update(self, record: TaskRecord) -> bool:
        changed = self._run(
            "UPDATE toolnexus_tasks SET version = ?, expires_at = ?, record = ? "
            "WHERE task_id = ? AND version = ?",
            (
                record.version,
                record.expires_at,
                record_json(record),
                record.task_id,
                record.version - 1,
            ),
        )
        return bool(changed == 1)

    def delete(self, task_id: str) -> None:
        """Forget the record ``task_id`` now (nothing when there is none)."""
        self._run("DELETE FROM toolnexus_tasks WHERE task_id = ?", (task_id,))

    def purge(self) -> int:
        return int(self._run("DELETE FROM toolnexus_tasks WHERE expires_at <= ?", (self._clock(),)))

    def __repr__(self) -> str:
        return f"<SqliteTaskStore {self._path!r}>"


def record_json(record: TaskRecord) -> str:
    """``record`` as compact JSON text: what a database keeps (every store writes this)."""
    return json.dumps(record.to_dict(), separators=(",", ":"))


def record_from_json(text: str | bytes) -> TaskRecord:
    """The record :func:`record_json` wrote."""
    return TaskRecord.from_dict(json.loads(text))
