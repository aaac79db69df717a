"""Where a host keeps what another process may need to see: used answers.

An :class:`AnswerStore` remembers which answers were used, so each one resumes a call at
most once — also across processes that share the store. Two stores are built in:
:class:`MemoryAnswerStore` (one per process, the default) and :class:`SqliteAnswerStore`
(processes on one machine). Anything with a ``consume(key, expires_at)`` method that is
atomic fits.

Example::

    from toolnexus import Host
    from toolnexus.stores import SqliteAnswerStore

    host = Host(toolkit, secret=key, answer_store=SqliteAnswerStore("/var/lib/app/used.db"))
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .._binding import MemoryAnswerStore, SqliteAnswerStore

__all__ = ["AnswerStore", "MemoryAnswerStore", "SqliteAnswerStore"]


@runtime_checkable
class AnswerStore(Protocol):
    """Where used answers are remembered, so each binding resumes a call at most once.

    One method: ``consume(key, expires_at)`` records ``key`` (an opaque ASCII string of at
    most 64 characters) and returns ``True`` the first time, ``False`` when it is recorded
    already. It must be atomic — two processes consuming the same key at once: exactly one
    gets ``True`` — and may forget a key once the time (``time.time()`` seconds) passes
    ``expires_at``: an answer is refused as expired after that anyway.

    Example (a shared store on Redis)::

        class RedisAnswerStore:
            def __init__(self, client):
                self.client = client

            def consume(self, key: str, expires_at: float) -> bool:
                ttl = max(1, int(expires_at - time.time()) + 1)
                return bool(self.client.set("toolnexus:" + key, 1, nx=True, ex=ttl))

        host = Host(toolkit, secret=key, answer_store=RedisAnswerStore(redis))
    """

    def consume(self, key: str, expires_at: float) -> bool:
        """Record ``key``; True the first time, False when it was recorded already."""
        ...


for _exported in (AnswerStore, MemoryAnswerStore, SqliteAnswerStore):
    _exported.__module__ = __name__  # where users import them from, and their repr
del _exported
