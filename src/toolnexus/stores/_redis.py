"""Used answers as Redis keys, shared by every process and machine that opens the server.

Everything that speaks to Redis lives here, on redis-py (the ``redis`` extra), imported
when a store is made, never with this module.

A consume is one ``SET prefix+key owner NX PX ttl``: Redis runs commands one at a time, so
exactly one of any number of concurrent consumes sets the key, and the key's TTL (the
answer's expiry) makes Redis forget it — nothing to purge. ``owner`` is a nonce per consume:
when a connection breaks before its reply arrives, the retry reads whether the key the
first attempt may have set is its own, so a lost reply neither grants an answer twice nor
refuses the one that was granted.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

from .._extras import install_hint
from ..errors import InvalidTypeError, InvalidValueError, StoreUnavailableError
from ._open import check_key, first_line, redact

__all__ = ["RedisAnswerStore"]

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
        if not isinstance(url, str):
            raise InvalidTypeError(f"url must be a str, got {type(url).__name__}")
        if not isinstance(prefix, str):
            raise InvalidTypeError(f"prefix must be a str, got {type(prefix).__name__}")
        for name, value in (("pool_size", pool_size), ("timeout_ms", timeout_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidValueError(f"{name} must be an int >= 1, got {value!r}")
        redis = _redis()
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self._errors = redis.exceptions
        self._where = redact(url)
        self._prefix = prefix
        self._clock = clock
        timeout_s = timeout_ms / 1000
        try:
            pool = redis.BlockingConnectionPool.from_url(
                url,
                max_connections=pool_size,
                timeout=timeout_s,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                # Our own retry, once, knows whether a lost reply had set the key.
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as exc:  # redis-py's word for a URL it cannot read
            raise InvalidValueError(f"{self._where!r} is not a Redis URL: {exc}") from None
        self._pool = pool
        self._client = redis.Redis(connection_pool=pool)
        self._closed = False
        try:
            self._client.ping()
        except self._errors.RedisError as exc:
            pool.disconnect()
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: BaseException) -> StoreUnavailableError:
        reason = first_line(exc)
        if isinstance(exc, self._errors.AuthenticationError) or any(
            word in reason for word in ("NOAUTH", "WRONGPASS", "authenticated")
        ):
            reason += (
                "; the server wants another password (or user): put it in the URL, "
                "redis://[USER]:PASSWORD@HOST:6379/0"
            )
        else:
            reason += _CHECK_URL
        return StoreUnavailableError(self._where, reason)

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key`` until ``expires_at``; True the first time, False afterwards.

        Raises :class:`~toolnexus.StoreUnavailableError` when the server cannot be reached
        (a retry on a fresh connection failed too) or refuses the command."""
        name = self._prefix + check_key(key)
        if self._closed:
            raise StoreUnavailableError(self._where, "this store was closed; open a new one")
        owner = os.urandom(8).hex().encode("ascii")
        ttl_ms = max(1, math.ceil((expires_at - self._clock()) * 1000))
        errors = self._errors
        try:
            return self._client.set(name, owner, nx=True, px=ttl_ms) is not None
        except (errors.ConnectionError, errors.TimeoutError) as exc:
            if isinstance(exc, errors.AuthenticationError):
                raise self._unavailable(exc) from exc
            first_error = exc
        except errors.RedisError as exc:  # READONLY, OOM, NOAUTH: the server said no
            raise self._unavailable(exc) from exc
        # The connection broke (the server restarted): the pool checks the next one before
        # handing it out, and reconnects.
        try:
            if self._client.set(name, owner, nx=True, px=ttl_ms) is not None:
                return True
            return bool(self._client.get(name) == owner)
        except errors.RedisError as exc:
            raise self._unavailable(exc) from first_error

    def close(self) -> None:
        """Close the pool's connections; a later consume raises ``StoreUnavailableError``."""
        self._closed = True
        self._pool.disconnect()

    def __enter__(self) -> RedisAnswerStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RedisAnswerStore {self._where}>"


RedisAnswerStore.__module__ = "toolnexus.stores"
