"""One server's bounded queue of calls: at most ``limit`` in flight, at most ``queued``
more waiting for a place; a call beyond both is refused at once.

A server that is slow (or stuck) holds only its own places: every call beyond them ends at
once with an error naming the server. A call nobody waits on a thread for (a gateway's)
runs on its client's own threads, at most ``limit + queued`` of them, never on the host's
workers — so however many servers are slow at once, a gateway's workers stay free for its
other servers and its own tools.
A waiting call leaves the queue as soon as its caller cancels it or its deadline passes.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..._cancellation import CancellationToken

__all__ = ["Admission", "Booking"]


class Booking:
    """What :meth:`Admission.book` took for one call: a ``place``, or a turn to wait for
    one; ``used`` once the call went ahead with it (else it is given back)."""

    __slots__ = ("place", "used")

    def __init__(self, place: bool) -> None:
        self.place = place
        self.used = False


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
        booked = self.book()
        if isinstance(booked, str):
            return booked
        return None if booked.place else self.wait(token)

    def book(self) -> Booking | str:
        """Take a place or a turn to wait for one now, never waiting (a :class:`Booking`:
        then :meth:`wait` if it is a turn, or :meth:`give_back`); else why not: the queue
        is full. So a call handed to another thread is counted as it is handed over, not
        once it runs."""
        with self._cond:
            if self.in_flight < self.limit:
                self.in_flight += 1
                return Booking(True)
            if self.waiting >= self.queued:
                return self._busy_locked()
            self.waiting += 1
            return Booking(False)

    def wait(self, token: CancellationToken) -> str | None:
        """With a turn to wait :meth:`book` took: wait for a place; ``None`` once taken, else why
        not (the caller gave up waiting: its token was cancelled)."""
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

    def give_back(self, booking: Booking) -> None:
        """Give back what :meth:`book` took for a call that was not made."""
        if booking.place:
            self.leave()
            return
        with self._cond:
            self.waiting -= 1

    def _busy_locked(self) -> str:
        return (
            f"busy: {self.in_flight} calls in flight and {self.waiting} waiting, "
            f"the most it takes (maxInFlight {self.limit}, maxQueued {self.queued}); "
            "try again later"
        )

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
