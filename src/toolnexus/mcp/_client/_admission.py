"""One server's bounded queue of calls: at most ``limit`` in flight, at most ``queued``
more waiting for a place; a call beyond both is refused at once.

A server that is slow (or stuck) holds only its own places: the calls waiting for it hold
no more than ``queued`` threads of the caller's, and every call beyond those ends at once
with an error naming the server — so a gateway's workers stay free for its other servers.
A waiting call leaves the queue as soon as its caller cancels it or its deadline passes.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..._cancellation import CancellationToken

__all__ = ["Admission"]


class Admission:
    """The calls in flight to one server, and those waiting for a place.

    Example::

        admission = Admission(limit=16, queued=16)
        refused = admission.enter(token)
        if refused is None:
            try:
                ...  # the call
            finally:
                admission.leave()
    """

    __slots__ = ("_cond", "in_flight", "limit", "queued", "waiting")

    def __init__(self, limit: int, queued: int) -> None:
        self.limit = limit
        self.queued = queued
        self.in_flight = 0
        self.waiting = 0
        self._cond = threading.Condition(threading.Lock())

    def enter(self, token: CancellationToken) -> str | None:
        """Take a place (waiting for one, while the queue has room): ``None`` once taken,
        else why not — the queue is full, or the caller gave up waiting."""
        with self._cond:
            if self.in_flight < self.limit:
                self.in_flight += 1
                return None
            if self.waiting >= self.queued:
                return (
                    f"busy: {self.in_flight} calls in flight and {self.waiting} waiting, "
                    f"the most it takes (maxInFlight {self.limit}, maxQueued {self.queued}); "
                    "try again later"
                )
            self.waiting += 1
        registration = token.register(self._wake)
        try:
            with self._cond:
                while self.in_flight >= self.limit:
                    if token.is_cancellation_requested:
                        return "the call was cancelled (or timed out) while it waited for a place"
                    self._cond.wait()
                self.in_flight += 1
                return None
        finally:
            registration.unregister()
            with self._cond:
                self.waiting -= 1

    def take(self) -> bool:
        """Take a place if one is free now (never waits): True once taken."""
        with self._cond:
            if self.in_flight < self.limit:
                self.in_flight += 1
                return True
            return False

    def leave(self) -> None:
        """Give a place back (a waiting call takes it)."""
        with self._cond:
            self.in_flight -= 1
            self._cond.notify()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()
