"""Used answers and task records in PostgreSQL tables, shared by every process and machine
that opens them.

Everything that speaks to PostgreSQL lives here, on psycopg 3 and its pool (the
``postgres`` extra): :class:`_Database` (the pool, reconnecting after a restart, one retry
on a fresh connection, fork safety) under :class:`PostgresAnswerStore` and
:class:`PostgresTaskStore`. psycopg is imported when a store is made, never with this
module.

The answers' table (created when missing)::

    key text PRIMARY KEY, expires_at double precision NOT NULL, owner text NOT NULL

A consume is one statement in autocommit: ``INSERT … ON CONFLICT (key) DO UPDATE … WHERE
the row has expired RETURNING owner`` — the row lock makes it atomic across connections,
and an expired row is taken over in the same statement. ``owner`` is a nonce per consume:
when a connection breaks before its reply arrives, the retry (on a fresh connection) reads
whether the first attempt's row is its own, so a lost reply neither grants an answer twice
nor refuses the one that was granted. Expired rows are deleted in small batches, one
consume in every :data:`PURGE_EVERY`.

The tasks' table::

    task_id text PRIMARY KEY, version bigint NOT NULL, expires_at double precision NOT NULL,
    record text NOT NULL, writer text NOT NULL

An update is one ``UPDATE … WHERE task_id = … AND version = …`` (a compare-and-set: of two
processes changing one task, one wins); ``writer`` is a nonce per write, so after a lost
reply the retry reads whether the stored record is the one it wrote.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .._extras import install_hint
from ..errors import InvalidTypeError, InvalidValueError, StoreUnavailableError
from ._common import check_key, first_line, redact
from ._tasks import TaskRecord, record_from_json, record_json

_T = TypeVar("_T")

__all__ = ["PURGE_EVERY", "PostgresAnswerStore", "PostgresTaskStore"]

PURGE_EVERY = 256
"""One consume in this many also deletes expired rows (at most :data:`PURGE_BATCH`)."""
PURGE_BATCH = 1000

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,54}\Z")
_CHECK_URL = (
    " (is the server running and reachable, and are the host, port, user, password and "
    "database in the URL right?)"
)
_LOCK_ID = 0x746E7573  # pg_advisory_xact_lock: one creator of the table at a time
# After a lost reply, how many timeouts a retry waits for the server to answer again.
_IN_DOUBT = 2


def _psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ImportError(
            f"PostgresAnswerStore needs psycopg 3 and its pool ({exc.name} is missing); "
            "install them with: " + install_hint("postgres", "psycopg[binary,pool]>=3.1")
        ) from exc
    return psycopg, psycopg_pool


class _Database:
    """A PostgreSQL database as the stores use it: a psycopg pool, a table made when
    missing, and :meth:`run` — one operation on a pooled connection, tried once more on a
    connection of its own when the first broke (the server restarted), knowing that its
    first attempt's reply may have been lost.

    Connects when made: a refused connection or a wrong password is reported now, with the
    server's own words, as :class:`~toolnexus.StoreUnavailableError`.
    """

    def __init__(
        self,
        url: str,
        create: list[Any],
        *,
        pool_size: int,
        timeout_ms: int,
        name: str,
        kind: str = "answer store",
    ) -> None:
        if not isinstance(url, str):
            raise InvalidTypeError(f"url must be a str, got {type(url).__name__}")
        for label, value in (("pool_size", pool_size), ("timeout_ms", timeout_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidValueError(f"{label} must be an int >= 1, got {value!r}")
        self._psycopg, self._pool_module = _psycopg()
        self.where = redact(url)
        self.kind = kind  # what its errors call it: "answer store", "task store"
        self._url = url
        self._timeout_s = timeout_ms / 1000
        self._pool_size = pool_size
        self._name = name
        try:
            with (
                self._psycopg.connect(url, connect_timeout=self._connect_timeout()) as db,
                db.transaction(),
            ):
                db.execute(
                    self._sql.SQL("SELECT pg_advisory_xact_lock({})").format(
                        self._sql.Literal(_LOCK_ID)
                    )
                )
                for statement in create:
                    db.execute(statement)
        except self._psycopg.Error as exc:
            raise self.unavailable(exc) from exc
        self._lock = threading.Lock()
        self._degraded = False  # a connection broke or none could be made: don't wait
        self._pid = os.getpid()
        self._stale: list[Any] = []  # pools inherited through fork: never closed here
        self._pool = self._open_pool()

    @property
    def _sql(self) -> Any:
        from psycopg import sql

        return sql

    def _connect_timeout(self) -> int:
        return max(2, round(self._timeout_s))  # libpq: whole seconds, and 1 means 2

    def _open_pool(self) -> Any:
        pool = self._pool_module.ConnectionPool(
            self._url,
            min_size=1,
            max_size=self._pool_size,
            kwargs={"autocommit": True, "connect_timeout": self._connect_timeout()},
            timeout=self._timeout_s,
            num_workers=2,
            name=f"{self._name}-{os.getpid()}",
            open=False,
        )
        pool.open(wait=False)
        return pool

    def unavailable(self, exc: BaseException) -> StoreUnavailableError:
        if isinstance(exc, self._pool_module.PoolClosed):
            return StoreUnavailableError(
                self.where, "this store was closed; open a new one", self.kind
            )
        return StoreUnavailableError(self.where, first_line(exc) + _CHECK_URL, self.kind)

    def run(self, operation: Callable[[Any, bool], _T]) -> _T:
        """``operation(connection, lost_reply)`` on a pooled connection (``lost_reply``
        False); if that connection broke, once more on a connection of its own
        (``lost_reply`` True: the first attempt may have been done, its reply lost).

        Raises :class:`~toolnexus.StoreUnavailableError` when the server cannot be reached
        (the pool had no working connection, and a connection of its own failed too)."""
        pool = self._pool if self._pid == os.getpid() else self._after_fork()
        # After a connection broke, the pool reconnects in the background, backing off
        # (1 s, 2 s, 4 s, ...): until it has a connection again, don't wait for one.
        wait = 0.0 if self._degraded else self._timeout_s
        try:
            with pool.connection(timeout=wait) as db:
                done = operation(db, False)
            self._degraded = False
            return done
        except self._pool_module.PoolClosed as exc:
            raise self.unavailable(exc) from exc
        except self._pool_module.PoolTimeout as exc:
            failure: BaseException = exc  # none came free: the pool is busy, or reconnecting
            in_doubt = False  # nothing was sent
        except self._psycopg.OperationalError as exc:
            # The server restarted (or the network broke): drop every broken connection,
            # and let the pool make new ones while a connection of our own serves.
            failure = exc
            in_doubt = True  # the statement may have been done, its reply lost
            self._degraded = True
            pool.check()
        except self._psycopg.Error as exc:
            raise self.unavailable(exc) from exc
        # A connection of our own: it works as soon as the server does, and when the
        # server is down it fails at once with the reason — unless the first attempt may
        # have been done: then only the server can say, so it is asked again while it
        # restarts, for up to twice the timeout, rather than refusing an answer it may
        # already have recorded.
        patience = time.monotonic() + (_IN_DOUBT * self._timeout_s if in_doubt else 0.0)
        while True:
            try:
                with self._psycopg.connect(
                    self._url, autocommit=True, connect_timeout=self._connect_timeout()
                ) as db:
                    return operation(db, True)
            except self._psycopg.OperationalError as exc:
                self._degraded = True
                if time.monotonic() >= patience:
                    raise self.unavailable(exc) from failure
                threading.Event().wait(0.1)  # the server is starting: ask again shortly
            except self._psycopg.Error as exc:
                self._degraded = True
                raise self.unavailable(exc) from failure

    def _after_fork(self) -> Any:
        with self._lock:
            if self._pid != os.getpid():
                # The parent's connections and workers are not ours to use or close.
                self._stale.append(self._pool)
                self._pool = self._open_pool()
                self._pid = os.getpid()
            return self._pool

    def close(self) -> None:
        self._pool.close()


def _checked_table(table: object) -> str:
    if not isinstance(table, str) or not _IDENTIFIER.match(table):
        raise InvalidValueError(
            f"table must be a plain SQL name (letters, digits, _; at most 55), got {table!r}"
        )
    return table


class PostgresAnswerStore:
    """Remembers used answers in a PostgreSQL table, so replicas on many machines share them.

    Args:
        url: a libpq URL or connection string (``postgresql://USER:PASSWORD@HOST/DB``);
            its password is never shown in a message or a repr.
        table: the table's name (created with its index when missing).
        pool_size: the most connections this store opens (one is kept open).
        timeout_ms: how long a consume waits for a connection (and a connect attempt
            lasts) before it gives up with :class:`~toolnexus.StoreUnavailableError`.
        clock: returns the time in seconds (``time.time``); tests inject one.

    Connects when made, so a wrong URL or a server that is down raises
    :class:`~toolnexus.StoreUnavailableError` here. Connections are pooled; after the
    server restarts, broken ones are replaced and the consume that met one is retried once.
    Thread-safe, and fork-safe (a child process opens a pool of its own). Raises
    ``ImportError`` naming the extra when psycopg is missing.

    Example::

        from toolnexus.stores import PostgresAnswerStore

        store = PostgresAnswerStore("postgresql://app:secret@db.internal/app")
        host = Host(toolkit, secret=key, answer_store=store)
    """

    def __init__(
        self,
        url: str,
        *,
        table: str = "toolnexus_used_answers",
        pool_size: int = 4,
        timeout_ms: int = 5_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        _checked_table(table)
        _psycopg()
        from psycopg import sql

        self._clock = clock
        self._count = 0
        ident = sql.Identifier(table)
        self._consume_sql = sql.SQL(
            "INSERT INTO {t} AS used (key, expires_at, owner) VALUES (%s, %s, %s) "
            "ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at, "
            "owner = EXCLUDED.owner WHERE used.expires_at <= %s RETURNING owner"
        ).format(t=ident)
        self._owner_sql = sql.SQL("SELECT owner FROM {t} WHERE key = %s").format(t=ident)
        self._release_sql = sql.SQL("DELETE FROM {t} WHERE key = %s").format(t=ident)
        self._purge_sql = sql.SQL(
            "DELETE FROM {t} WHERE key IN (SELECT key FROM {t} WHERE expires_at <= %s LIMIT {n})"
        ).format(t=ident, n=sql.Literal(PURGE_BATCH))
        create = [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {t} (key text PRIMARY KEY, "
                "expires_at double precision NOT NULL, owner text NOT NULL)"
            ).format(t=ident),
            sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (expires_at)").format(
                i=sql.Identifier(f"{table}_expires_at"), t=ident
            ),
        ]
        self._db = _Database(
            url, create, pool_size=pool_size, timeout_ms=timeout_ms, name="toolnexus-answers"
        )

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key`` until ``expires_at``; True the first time, False afterwards.

        Raises :class:`~toolnexus.StoreUnavailableError` when the server cannot be reached
        (the pool had no working connection, and a connection of its own failed too)."""
        check_key(key)
        now = self._clock()
        self._count += 1
        purge = self._count % PURGE_EVERY == 0
        args = (key, float(expires_at), os.urandom(8).hex(), now)
        return self._db.run(lambda db, lost: self._consume_on(db, args, purge, lost_reply=lost))

    def _consume_on(self, db: Any, args: tuple[Any, ...], purge: bool, *, lost_reply: bool) -> bool:
        if purge:
            db.execute(self._purge_sql, (args[3],))
        row = db.execute(self._consume_sql, args).fetchone()
        if row is None and lost_reply:
            # A first attempt may have written the row before its reply was lost: the
            # nonce tells whose it is.
            row = db.execute(self._owner_sql, (args[0],)).fetchone()
        return row is not None and bool(row[0] == args[2])

    def release(self, key: str) -> None:
        """Forget ``key``: the next ``consume`` of it is the first again. Raises
        :class:`~toolnexus.StoreUnavailableError` as :meth:`consume` does."""
        check_key(key)
        self._db.run(lambda db, lost: db.execute(self._release_sql, (key,)))

    def close(self) -> None:
        """Close the pool's connections; a later consume raises ``StoreUnavailableError``."""
        self._db.close()

    def __enter__(self) -> PostgresAnswerStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PostgresAnswerStore {self._db.where}>"


class PostgresTaskStore:
    """Keeps an MCP server's task records in a PostgreSQL table, so replicas on many
    machines share their tasks: a task created on one is polled, answered, fetched and
    cancelled on any other.

    Args:
        url: a libpq URL or connection string (``postgresql://USER:PASSWORD@HOST/DB``).
        table: the table's name (created with its index when missing).
        pool_size, timeout_ms: as for :class:`PostgresAnswerStore`.
        clock: returns the time in seconds (``time.time``); tests inject one.

    A :class:`~toolnexus.stores.TaskStore`: an update is a compare-and-set on the
    record's version, atomic across connections. Connects when made; pooled, reconnects
    after a restart, thread- and fork-safe; raises
    :class:`~toolnexus.StoreUnavailableError` when the server cannot be reached.

    Example::

        from toolnexus.mcp import ServerOptions
        from toolnexus.stores import PostgresTaskStore

        options = ServerOptions(task_store=PostgresTaskStore("postgresql://app@db/app"))
    """

    def __init__(
        self,
        url: str,
        *,
        table: str = "toolnexus_tasks",
        pool_size: int = 4,
        timeout_ms: int = 5_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        _checked_table(table)
        _psycopg()
        from psycopg import sql

        self._clock = clock
        self._created = 0
        t = sql.Identifier(table)
        self._insert = sql.SQL(
            "INSERT INTO {t} (task_id, version, expires_at, record, writer) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (task_id) DO UPDATE SET "
            "version = EXCLUDED.version, expires_at = EXCLUDED.expires_at, "
            "record = EXCLUDED.record, writer = EXCLUDED.writer "
            "WHERE {t}.expires_at <= %s RETURNING task_id"
        ).format(t=t)
        self._select = sql.SQL(
            "SELECT record FROM {t} WHERE task_id = %s AND expires_at > %s"
        ).format(t=t)
        self._writer = sql.SQL("SELECT writer FROM {t} WHERE task_id = %s").format(t=t)
        self._update = sql.SQL(
            "UPDATE {t} SET version = %s, expires_at = %s, record = %s, writer = %s "
            "WHERE task_id = %s AND version = %s"
        ).format(t=t)
        self._purge = sql.SQL("DELETE FROM {t} WHERE expires_at <= %s").format(t=t)
        self._delete = sql.SQL("DELETE FROM {t} WHERE task_id = %s").format(t=t)
        create = [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {t} (task_id text PRIMARY KEY, version bigint "
                "NOT NULL, expires_at double precision NOT NULL, record text NOT NULL, "
                "writer text NOT NULL)"
            ).format(t=t),
            sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (expires_at)").format(
                i=sql.Identifier(f"{table}_expires_at"), t=t
            ),
        ]
        self._db = _Database(
            url,
            create,
            pool_size=pool_size,
            timeout_ms=timeout_ms,
            name="toolnexus-tasks",
            kind="task store",
        )

    def create(self, record: TaskRecord) -> None:
        """Keep a new record. Raises ``ValueError`` when its id is taken (by a record that
        has not expired)."""
        self._created += 1
        if self._created % PURGE_EVERY == 0:
            self.purge()
        writer = os.urandom(8).hex()
        text = record_json(record)
        args = (record.task_id, record.version, record.expires_at, text, writer, self._clock())

        def insert(db: Any, lost_reply: bool) -> bool:
            if db.execute(self._insert, args).fetchone() is not None:
                return True
            # Taken — unless by this very call, whose reply was lost.
            return lost_reply and self._wrote(db, record.task_id, writer)

        if not self._db.run(insert):
            raise InvalidValueError(f"task {record.task_id!r} exists already")

    def get(self, task_id: str) -> TaskRecord | None:
        """The record, or None when there is none or it expired."""
        row = self._db.run(
            lambda db, _: db.execute(self._select, (task_id, self._clock())).fetchone()
        )
        return None if row is None else record_from_json(row[0])

    def update(self, record: TaskRecord) -> bool:
        """Replace the stored record with ``record`` if the stored one's version is
        ``record.version - 1``; False (nothing changed) otherwise, or when it is gone."""
        writer = os.urandom(8).hex()
        args = (
            record.version,
            record.expires_at,
            record_json(record),
            writer,
            record.task_id,
            record.version - 1,
        )

        def swap(db: Any, lost_reply: bool) -> bool:
            if db.execute(self._update, args).rowcount == 1:
                return True
            return lost_reply and self._wrote(db, record.task_id, writer)

        return self._db.run(swap)

    def _wrote(self, db: Any, task_id: str, writer: str) -> bool:
        """Whether the stored record is the one the call with nonce ``writer`` wrote."""
        row = db.execute(self._writer, (task_id,)).fetchone()
        return row is not None and row[0] == writer

    def delete(self, task_id: str) -> None:
        """Forget the record ``task_id`` now (nothing when there is none)."""
        self._db.run(lambda db, _: db.execute(self._delete, (task_id,)))

    def purge(self) -> int:
        """Forget expired records; how many were dropped."""
        return int(self._db.run(lambda db, _: db.execute(self._purge, (self._clock(),)).rowcount))

    def close(self) -> None:
        """Close the pool's connections; a later call raises ``StoreUnavailableError``."""
        self._db.close()

    def __enter__(self) -> PostgresTaskStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PostgresTaskStore {self._db.where}>"


PostgresAnswerStore.__module__ = PostgresTaskStore.__module__ = "toolnexus.stores"
