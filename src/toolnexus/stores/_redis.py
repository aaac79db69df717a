"""Used answers and task records as Redis keys, shared by every process and machine that
opens the server.

Everything that speaks to Redis lives here, on redis-py (the ``redis`` extra), imported
when a store is made, never with this module: :class:`_Server` (the pool, one retry on a
fresh connection after a broken one) under :class:`RedisAnswerStore` and
:class:`RedisTaskStore`.

A consume is one ``SET prefix+key owner NX PX ttl``: Redis runs commands one at a time, so
exactly one of any number of concurrent consumes sets the key, and the key's TTL (the
answer's expiry) makes Redis forget it — nothing to purge. ``owner`` is a nonce per consume:
when a connection breaks before its reply arrives, the retry reads whether the key the
first attempt may have set is its own, so a lost reply neither grants an answer twice nor
refuses the one that was granted.

A task record is the hash ``prefix+task_id`` (its JSON, its version, and a nonce per write),
with a time to live that ends at the record's expiry. Creating and updating are small Lua
scripts Redis runs alone; an update is a compare-and-set on the version: of two processes
changing one task, one wins. After a lost reply, the retry reads whether the stored
record is the one it wrote (by its nonce).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .._extras import install_hint
from ..errors import InvalidTypeError, InvalidValueError, StoreUnavailableError
from ._common import check_key, first_line, redact
from ._tasks import TaskRecord, record_from_json, record_json

_T = TypeVar("_T")

__all__ = ["RedisAnswerStore", "RedisTaskStore"]

# After a lost reply, how many timeouts a retry waits for the server to answer again.
_IN_DOUBT = 2
_CHECK_URL = (
    " (is the server running and reachable, and are the host, port, password and database "
    "in the URL right?)"
)


def _redis() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ImportError(
            "RedisAnswerStore needs redis-py (redis is missing); install it with: "
            + install_hint("redis", "redis>=5.0")
        ) from exc
    return redis


class _Server:
    """A Redis server as the stores use it: a blocking pool, and :meth:`run` — one
    operation, tried once more when its connection broke (the server restarted), knowing
    that its first attempt's reply may have been lost.

    Connects when made (a ``PING``): a wrong URL or a server that is down raises
    :class:`~toolnexus.StoreUnavailableError` here.
    """

    def __init__(
        self, url: str, *, pool_size: int, timeout_ms: int, kind: str = "answer store"
    ) -> None:
        if not isinstance(url, str):
            raise InvalidTypeError(f"url must be a str, got {type(url).__name__}")
        for name, value in (("pool_size", pool_size), ("timeout_ms", timeout_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidValueError(f"{name} must be an int >= 1, got {value!r}")
        redis = _redis()
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.errors = redis.exceptions
        self.where = redact(url)
        self.kind = kind  # what its errors call it: "answer store", "task store"
        timeout_s = self._timeout_s = timeout_ms / 1000
        try:
            pool = redis.BlockingConnectionPool.from_url(
                url,
                max_connections=pool_size,
                timeout=timeout_s,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                # Our own retry, once, knows whether a lost reply had done its work.
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as exc:  # redis-py's word for a URL it cannot read
            raise InvalidValueError(f"{self.where!r} is not a Redis URL: {exc}") from None
        self._pool = pool
        self.client = redis.Redis(connection_pool=pool)
        self._closed = False
        try:
            self.client.ping()
        except self.errors.RedisError as exc:
            pool.disconnect()
            raise self.unavailable(exc) from exc

    def unavailable(self, exc: BaseException) -> StoreUnavailableError:
        reason = first_line(exc)
        if isinstance(exc, self.errors.AuthenticationError) or any(
            word in reason for word in ("NOAUTH", "WRONGPASS", "authenticated")
        ):
            reason += (
                "; the server wants another password (or user): put it in the URL, "
                "redis://[USER]:PASSWORD@HOST:6379/0"
            )
        else:
            reason += _CHECK_URL
        return StoreUnavailableError(self.where, reason, self.kind)

    def run(self, operation: Callable[[Any, bool], _T]) -> _T:
        """``operation(client, lost_reply)``; once more with ``lost_reply`` True when the
        connection broke (the pool checks the next one before handing it out, and
        reconnects). Raises :class:`~toolnexus.StoreUnavailableError` when the server
        cannot be reached (the retry failed too) or refuses the command."""
        if self._closed:
            raise StoreUnavailableError(
                self.where, "this store was closed; open a new one", self.kind
            )
        errors = self.errors
        try:
            return operation(self.client, False)
        except (errors.ConnectionError, errors.TimeoutError) as exc:
            if isinstance(exc, errors.AuthenticationError):
                raise self.unavailable(exc) from exc
            first_error = exc
        except errors.RedisError as exc:  # READONLY, OOM, NOAUTH: the server said no
            raise self.unavailable(exc) from exc
        # The command may have been done, its reply lost: only the server can say, so it is
        # asked again while it restarts, for up to twice the timeout, rather than refusing
        # an answer it may already have recorded.
        patience = time.monotonic() + _IN_DOUBT * self._timeout_s
        while True:
            try:
                return operation(self.client, True)
            except (errors.ConnectionError, errors.TimeoutError) as exc:
                if isinstance(exc, errors.AuthenticationError) or time.monotonic() >= patience:
                    raise self.unavailable(exc) from first_error
                threading.Event().wait(0.1)  # the server is starting: ask again shortly
            except errors.RedisError as exc:  # LOADING while it reads its log, READONLY, ...
                if "LOADING" not in str(exc) or time.monotonic() >= patience:
                    raise self.unavailable(exc) from first_error
                threading.Event().wait(0.1)

    def close(self) -> None:
        self._closed = True
        self._pool.disconnect()


class RedisAnswerStore:
    """Remembers used answers as Redis keys, so replicas on many machines share them.

    Args:
        url: a redis-py URL (``redis://:PASSWORD@HOST:6379/0``, ``rediss://…`` for TLS,
            ``unix:///run/redis.sock``); its password is never shown in a message or a repr.
        prefix: put before every key (``toolnexus:answer:``), so the keys are easy to find
            and cannot meet another program's.
        pool_size: the most connections this store opens.
        timeout_ms: how long a consume waits for a connection, a connect attempt and a
            reply before it gives up with :class:`~toolnexus.StoreUnavailableError`.
        clock: returns the time in seconds (``time.time``); a key lives from ``clock()``
            until its ``expires_at``.

    Connects when made (a ``PING``), so a wrong URL or a server that is down raises
    :class:`~toolnexus.StoreUnavailableError` here. Connections are pooled and checked
    before use; after the server restarts, the consume that met a broken one is retried
    once on a fresh one. Thread-safe and fork-safe (redis-py's pool starts anew in a child
    process). The server must keep what it is told: keep its eviction policy
    ``noeviction`` (the default) and its append-only file on (``appendonly yes``) — an
    evicted or lost key lets an answer be used again. Raises ``ImportError`` naming the
    extra when redis-py is missing.

    Example::

        from toolnexus.stores import RedisAnswerStore

        store = RedisAnswerStore("redis://:secret@cache.internal:6379/0")
        host = Host(toolkit, secret=key, answer_store=store)
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolnexus:answer:",
        pool_size: int = 8,
        timeout_ms: int = 5_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(prefix, str):
            raise InvalidTypeError(f"prefix must be a str, got {type(prefix).__name__}")
        self._prefix = prefix
        self._clock = clock
        self._server = _Server(url, pool_size=pool_size, timeout_ms=timeout_ms)

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key`` until ``expires_at``; True the first time, False afterwards.

        Raises :class:`~toolnexus.StoreUnavailableError` when the server cannot be reached
        (a retry on a fresh connection failed too) or refuses the command."""
        name = self._prefix + check_key(key)
        owner = os.urandom(8).hex().encode("ascii")
        ttl_ms = max(1, math.ceil((expires_at - self._clock()) * 1000))

        def consume(client: Any, lost_reply: bool) -> bool:
            if client.set(name, owner, nx=True, px=ttl_ms) is not None:
                return True
            # Taken — by this very consume, if its first attempt's reply was lost.
            return lost_reply and bool(client.get(name) == owner)

        return self._server.run(consume)

    def release(self, key: str) -> None:
        """Forget ``key``: the next ``consume`` of it is the first again. Raises
        :class:`~toolnexus.StoreUnavailableError` as :meth:`consume` does."""
        name = self._prefix + check_key(key)
        self._server.run(lambda client, lost_reply: client.delete(name))

    def close(self) -> None:
        """Close the pool's connections; a later consume raises ``StoreUnavailableError``."""
        self._server.close()

    def __enter__(self) -> RedisAnswerStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RedisAnswerStore {self._server.where}>"


# A task is a hash: its record's JSON, its version, its expiry and the nonce of the write
# that made it. KEYS[1]: the task's key. ARGV: the record, its version, the writer's nonce,
# its expiry (the stores' clock, seconds), now (the same clock) and its TTL (ms). A record
# past its expiry is gone, whether or not Redis has dropped its key yet.
_CREATE = """
local expires = redis.call('HGET', KEYS[1], 'expires')
if expires and tonumber(expires) > tonumber(ARGV[5]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'version', ARGV[2], 'writer', ARGV[3],
           'expires', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1
"""
# The same, if the stored version is the one before ARGV[2] (a compare-and-set).
_SWAP = """
local stored = redis.call('HMGET', KEYS[1], 'version', 'expires')
if not stored[1] or tonumber(stored[2]) <= tonumber(ARGV[5]) then return 0 end
if tonumber(stored[1]) ~= tonumber(ARGV[2]) - 1 then return 0 end
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'version', ARGV[2], 'writer', ARGV[3],
           'expires', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1
"""


class RedisTaskStore:
    """Keeps an MCP server's task records as Redis keys, so replicas on many machines
    share their tasks: a task created on one is polled, answered, fetched and cancelled on
    any other.

    Args:
        url: a redis-py URL (``redis://:PASSWORD@HOST:6379/0``, ``rediss://…``,
            ``unix://…``).
        prefix: put before every task id (``toolnexus:task:``).
        pool_size, timeout_ms: as for :class:`RedisAnswerStore`.
        clock: returns the time in seconds (``time.time``); a record lives from
            ``clock()`` until its ``expires_at``.

    A :class:`~toolnexus.stores.TaskStore`: an update is a compare-and-set on the
    record's version (a Lua script Redis runs alone); Redis forgets a record when its time
    to live ends, so :meth:`purge` has nothing to do. Connects when made; thread- and
    fork-safe; raises :class:`~toolnexus.StoreUnavailableError` when the server cannot be
    reached.

    Example::

        from toolnexus.mcp import ServerOptions
        from toolnexus.stores import RedisTaskStore

        options = ServerOptions(task_store=RedisTaskStore("redis://:secret@cache:6379/0"))
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolnexus:task:",
        pool_size: int = 8,
        timeout_ms: int = 5_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(prefix, str):
            raise InvalidTypeError(f"prefix must be a str, got {type(prefix).__name__}")
        self._prefix = prefix
        self._clock = clock
        self._server = _Server(url, pool_size=pool_size, timeout_ms=timeout_ms, kind="task store")
        self._create = self._server.client.register_script(_CREATE)
        self._swap = self._server.client.register_script(_SWAP)

    def _write(self, script: Any, record: TaskRecord) -> bool:
        """Run ``script`` (create or swap) for ``record``, once more after a lost reply."""
        name = self._prefix + record.task_id
        writer = os.urandom(8).hex().encode("ascii")

        def write(client: Any, lost_reply: bool) -> bool:
            now = self._clock()
            ttl_ms = max(1, math.ceil((record.expires_at - now) * 1000))
            expires = repr(record.expires_at)
            args = [record_json(record), record.version, writer, expires, repr(now), ttl_ms]
            if script(keys=[name], args=args, client=client) == 1:
                return True
            # Refused — unless this very write was done and its reply lost.
            return lost_reply and bool(client.hget(name, "writer") == writer)

        return self._server.run(write)

    def create(self, record: TaskRecord) -> None:
        """Keep a new record. Raises ``ValueError`` when its id is taken."""
        if not self._write(self._create, record):
            raise InvalidValueError(f"task {record.task_id!r} exists already")

    def get(self, task_id: str) -> TaskRecord | None:
        """The record, or None when there is none or it expired."""
        name = self._prefix + task_id
        text = self._server.run(lambda client, _: client.hget(name, "record"))
        if text is None:
            return None
        record = record_from_json(text)
        return record if record.expires_at > self._clock() else None

    def update(self, record: TaskRecord) -> bool:
        """Replace the stored record with ``record`` if the stored one's version is
        ``record.version - 1``; False (nothing changed) otherwise, or when it is gone."""
        return self._write(self._swap, record)

    def delete(self, task_id: str) -> None:
        """Forget the record ``task_id`` now (nothing when there is none)."""
        name = self._prefix + task_id
        self._server.run(lambda client, _: client.delete(name))

    def purge(self) -> int:
        """Nothing to do: Redis forgets each record when its time to live ends."""
        return 0

    def close(self) -> None:
        """Close the pool's connections; a later call raises ``StoreUnavailableError``."""
        self._server.close()

    def __enter__(self) -> RedisTaskStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RedisTaskStore {self._server.where}>"


RedisAnswerStore.__module__ = RedisTaskStore.__module__ = "toolnexus.stores"
