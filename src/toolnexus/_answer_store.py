"""The :class:`~toolnexus.binding.AnswerStore` protocol, in a module of its own.

Defining a Protocol at run time needs :mod:`typing`, which costs about as much to import as
the whole host: :mod:`toolnexus.binding` (on the import path of ``Host``) loads this module
with the first use of the name ``AnswerStore``, not with ``from toolnexus import Host``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["AnswerStore"]


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


AnswerStore.__module__ = "toolnexus.binding"  # where users import it from, and its repr
