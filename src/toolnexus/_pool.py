"""The host's threads: an elastic pool that grows with demand, shrinks when idle, and
accounts for workers abandoned inside a tool that ignores its deadline.

A pool runs *jobs* (callables that take no argument and never raise). It starts a thread
when a job arrives and no idle thread is there to take it, up to ``limit`` threads running
jobs; an idle thread exits after ``idle_seconds``. A worker whose job was abandoned
(:meth:`Pool.abandon`: its call timed out, the tool still runs) stops counting against
``limit`` and counts as *stuck*; a replacement may start, but never more than
``limit + spare`` threads in all, so whatever arrives the pool's threads stay bounded. A
stuck worker that returns takes its place back when there is one, else exits.

Lock order: a call's lock may be held while the pool's is taken (``abandon``); the pool
never calls into a job while holding its own lock.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from collections.abc import Callable

    Job = Callable[[], None]
    """What a pool runs: called on a worker; it never raises."""


__all__ = ["Pool", "Worker", "current_worker"]  # and the type Job


class Worker:
    """One pool thread's bookkeeping (``stuck`` is guarded by the pool's lock)."""

    __slots__ = ("pool", "retire", "stuck")

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.stuck = False
        self.retire = False  # a replacement took this worker's place while it was stuck


class _Local(threading.local):
    # A class attribute as the default: a missing attribute would cost an AttributeError
    # on every call made outside the pool (the fast path of acall and Host.call).
    worker: Worker | None = None


_local = _Local()


def current_worker() -> Worker | None:
    """The :class:`Worker` record of the calling thread, or None outside every pool."""
    return _local.worker


_pools: weakref.WeakSet[Pool] = weakref.WeakSet()


class Pool:
    """Worker threads fed from one queue; see the module docstring."""

    def __init__(self, limit: int, spare: int, name: str, idle_seconds: float) -> None:
        self.limit = limit
        self.spare = spare
        self.name = name
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._threads: set[threading.Thread] = set()
        self.live = 0  # threads that are not stuck: running a job or idle
        self.idle = 0
        self.waiting = 0  # jobs in the queue no thread has taken yet
        self.stuck = 0
        self.closed = False
        self._serial = 0
        _pools.add(self)

    @property
    def busy(self) -> int:
        """Threads running a job they were not abandoned in."""
        return max(0, self.live - self.idle)

    def submit(self, job: Job) -> str | None:
        """Queue ``job``; start a thread for it when none is idle and the bounds allow.

        Returns None when the job is queued, or why it cannot run: the pool is closed, or
        no thread could be started and none is there to take it (then it is not queued).
        """
        with self._lock:
            if self.closed:
                return "the host is closed"
            self.waiting += 1
            serial = self._reserve_locked() if self.live < self.limit else 0
        if serial:
            problem = self._start(serial)
            if problem is not None:
                with self._lock:
                    if self.live == 0:  # nobody else will ever take it
                        self.waiting -= 1
                        return f"no worker thread could be started ({problem})"
        self._queue.put(job)
        return None

    def _reserve_locked(self) -> int:
        """Count a new thread in (the lock is held) when a job waits for one and the bound
        allows; its serial number, or 0."""
        if (
            self.waiting <= self.idle
            or self.closed
            or self.live + self.stuck >= self.limit + self.spare
        ):
            return 0
        self.live += 1
        self._serial += 1
        return self._serial

    def _start(self, serial: int) -> RuntimeError | None:
        """Start the thread :meth:`_reserve_locked` counted in; on failure give its place
        back and return why."""
        thread = threading.Thread(target=self._work, name=f"{self.name}-{serial}", daemon=True)
        with self._lock:
            self._threads.add(thread)
        try:
            thread.start()
        except RuntimeError as exc:  # out of threads (memory, ulimit)
            with self._lock:
                self._threads.discard(thread)
                self.live -= 1
            return exc
        return None

    def _work(self) -> None:
        me = Worker(self)
        _local.worker = me
        thread = threading.current_thread()
        lock = self._lock
        get = self._queue.get
        try:
            while True:
                with lock:
                    self.idle += 1
                try:
                    job = get(timeout=self.idle_seconds)
                except queue.Empty:
                    with lock:
                        self.idle -= 1
                        if self.waiting <= self.idle or self.closed:
                            self.live -= 1
                            return  # idle long enough, and nobody needs us
                    continue
                with lock:
                    self.idle -= 1
                    if job is None:
                        self.live -= 1
                        return
                    self.waiting -= 1
                job()
                if me.stuck:
                    self.release(me)
                if me.retire:
                    return
        finally:
            with lock:
                self._threads.discard(thread)

    def abandon(self, worker: Worker | None) -> int:
        """The job on ``worker`` was given up: count it stuck and let a replacement start.

        ``worker`` None (a job that ran on a caller's thread) changes nothing. Returns the
        number of stuck workers afterwards.
        """
        serial = 0
        with self._lock:
            if worker is not None and worker.pool is self and not worker.stuck:
                worker.stuck = True
                self.live -= 1
                self.stuck += 1
                serial = self._reserve_locked()
            stuck = self.stuck
        if serial:
            self._start(serial)  # calls are waiting for a worker: a replacement starts now
        return stuck

    def release(self, worker: Worker | None) -> None:
        """An abandoned job returned: its worker stops counting as stuck and takes its
        place back if there is one, else retires when the job's ``run()`` returns."""
        with self._lock:
            if worker is None or worker.pool is not self or not worker.stuck:
                return
            worker.stuck = False
            self.stuck -= 1
            if self.closed or self.live >= self.limit:
                worker.retire = True
            else:
                self.live += 1

    def threads(self) -> list[threading.Thread]:
        """The pool's threads that are alive now (stuck ones included)."""
        with self._lock:
            return [thread for thread in self._threads if thread.is_alive()]

    def close(self, timeout: float) -> None:
        """Stop taking jobs; idle threads exit now, busy ones after their job; wait up to
        ``timeout`` seconds for them (a stuck one exits when its tool returns)."""
        import time

        with self._lock:
            self.closed = True
            count = self.live
            threads = list(self._threads)
        for _ in range(count):
            self._queue.put(None)
        end = time.monotonic() + timeout
        me = threading.current_thread()
        for thread in threads:
            if thread is not me:
                thread.join(max(0.0, end - time.monotonic()))

    def _after_fork(self) -> None:
        # The child has none of our threads; jobs queued in the parent belong to callers
        # that live on there.
        self._lock = threading.Lock()
        self._queue = queue.SimpleQueue()
        self._threads = set()
        self.live = self.idle = self.waiting = self.stuck = 0


def _after_fork_in_child() -> None:
    for pool in list(_pools):
        pool._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
