"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): a call that outlives
its request.

For a client that declared the extension, a ``tools/call`` still running after
``task_after_ms`` becomes a task: its request is answered at once with the task's id (a
``CreateTaskResult``), and the call goes on on the host — the same call, with its
deadline, its cancellation and its questions. The client polls ``tasks/get`` (the status;
once done, the result inlined), answers a task that asks with ``tasks/update``, and stops
one with ``tasks/cancel``. A tool with ``task_support="required"`` is only ever answered
through a task; ``"forbidden"`` never becomes one.

:class:`Tasks` is one server's tasks, shared by all its sessions (a modern request's
session lives for that request only, so nothing of a task may live in it): the records, in
a :class:`~toolnexus.stores.TaskStore`, and the calls this process runs, by task id. A
task outlives the client that made it (its connection closing, a legacy session ending);
with a store other processes share, its record — its result, or the question it waits on —
outlives the process too, and any process with the same key resumes it.

Task ids are unguessable; a task belongs to the credential that created it (the digest of
its bearer token, or its OAuth subject) and is unknown to any other, as an expired one is:
``-32602``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from ..._binding import BINDING_KEY
from ..._frozen import thaw
from ..._result import ToolResult
from ..._timers import dispatch
from ...stores._common import STORE_ENV
from .._shared import _codec as codec
from .._shared._codec import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CLIENT_CAPABILITY
from .._shared._protocol import TASKS_EXTENSION, describe
from .._shared._questions import answer_from_response
from ._questions import (
    form_problem,
    input_requests,
    missing_capability,
    plan,
    shapes_of,
    whole_answer,
)

if TYPE_CHECKING:
    from ..._host import Call
    from ..._suspension import Answer, Request
    from ...stores._tasks import MemoryTaskStore, TaskRecord, TaskStore
    from ._options import TaskOptions

__all__ = ["TASKS_EXTENSION", "Refused", "Resume", "Tasks", "iso_time"]

_ATTEMPTS = 16  # compare-and-set retries before a change gives up (contention is rare)


class Refused(NamedTuple):
    """A ``tasks/*`` request (or a task's creation) refused: the JSON-RPC error to answer."""

    code: int
    message: str
    data: Any = None


class Resume(NamedTuple):
    """A task answered in full: run its call again — ``name`` with ``arguments``,
    resuming ``request`` with ``answer`` (``binding``: the host's binding of the question,
    when it made one). The session starts it as a :class:`~toolnexus.mcp._server._session.StartCall`
    whose ``task`` is ``task_id``, so it runs through the call bridge as every call does."""

    task_id: str
    name: str
    arguments: dict[str, Any]
    request: Request
    answer: Answer
    binding: str | None


@cache
def _record_types() -> tuple[type[TaskRecord], type[MemoryTaskStore]]:
    """The task record and the memory store, loaded with the first task (not at the top:
    their module's dataclass would cost every server's start-up), once: an import
    statement run per task costs more than a task's own bookkeeping."""
    from ...stores._tasks import MemoryTaskStore, TaskRecord

    return TaskRecord, MemoryTaskStore


def _new_task_id() -> str:
    """An unguessable task id: ``tsk-`` and 128 bits from the operating system's CSPRNG,
    in hex — what ``secrets.token_hex(16)`` returns, read without importing ``secrets``
    (its ``hashlib`` would cost the first task a few milliseconds) or its three calls."""
    return "tsk-" + os.urandom(16).hex()


@lru_cache(maxsize=256)
def iso_time(seconds: float) -> str:
    """``seconds`` since the epoch as an RFC 3339 UTC time, to the millisecond — what
    ``datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")``
    writes (with ``Z``), at a third of its cost (tests/test_mcp_tasks.py pins the two equal).

    Kept for the last times written: a task's two times are written in every answer that
    shows it (its creation, each ``tasks/get``, each notification), and change rarely.

    Example::

        >>> iso_time(1765065600.25)
        '2025-12-07T00:00:00.250Z'
    """
    fraction, whole = math.modf(seconds)
    micro = round(fraction * 1e6)  # to the microsecond, half to even: as datetime rounds
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    elif micro < 0:
        whole, micro = whole - 1, micro + 1_000_000
    return f"{_iso_second(whole)}.{micro // 1000:03d}Z"


@lru_cache(maxsize=4)
def _iso_second(whole: float) -> str:
    """The whole second ``whole`` as ``YYYY-MM-DDTHH:MM:SS`` (UTC): tasks made in the
    same second share it."""
    t = time.gmtime(whole)
    day = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
    return f"{day}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"


def _count_down(counts: dict[str | None, int], owner: str | None) -> None:
    """One less for ``owner`` in ``counts`` (an owner at none leaves the table)."""
    left = counts[owner] - 1
    if left:
        counts[owner] = left
    else:
        del counts[owner]


class Tasks:
    """One server's tasks: records in a store, and the calls this process runs.

    Thread-safe. ``format_result(client, result)`` and ``client_of(state)`` come from the
    session module (how a result is written for a client); ``notify(record)`` is told of
    every change (for ``notifications/tasks`` on listen streams).
    """

    def __init__(
        self,
        settings: TaskOptions,
        *,
        format_result: Callable[[Any, ToolResult], dict[str, Any]],
        client_of: Callable[[Mapping[str, Any]], Any],
        clock: Callable[[], float] = time.time,
    ) -> None:
        store = settings.task_store
        if store is None and os.environ.get(STORE_ENV, "").strip():
            from ...stores._open import process_task_store

            store = process_task_store()  # opened now: one that cannot be fails the start
        # None: this process's memory, made with the first task (most clients never make
        # one, and the stores cost a tenth of a server's start-up to import).
        self._store: TaskStore | None = store
        self.after_ms = settings.task_after_ms
        self._ttl_ms = settings.task_ttl_ms
        self._poll_ms = settings.task_poll_ms
        self._max = settings.max_tasks
        self._max_running = settings.max_running_tasks_per_owner
        self._max_stored = settings.max_stored_tasks
        self._max_per_owner = settings.max_stored_tasks_per_owner
        self._max_bytes = settings.max_stored_result_bytes
        # The records this process made, oldest first: task id -> (owner, when it may be
        # forgotten once finished — None while it is not —, the bytes of its result's
        # JSON). Changed under _room (store calls
        # are made under it: never under _lock, which watchers and calls take).
        # OrderedDicts, not dicts: both are read oldest first as entries leave from the
        # front, and a dict walks over the holes its removed entries leave (until it
        # resizes) — a cost that grows with the bound, where a linked order's is constant.
        self._kept: OrderedDict[str, tuple[str | None, float | None, int]] = OrderedDict()
        self._per_owner: dict[str | None, int] = {}
        self._bytes = 0  # of the results counted in _kept (max_stored_result_bytes)
        self._evicted: OrderedDict[str, str | None] = OrderedDict()  # the last evicted's owners
        # The JSON text of a finished task's result, as it was written when the task ended:
        # task id -> (the record's frozen result, its text), for the tasks counted in _kept
        # whose records this process's memory keeps (the store hands back the very record,
        # so its result is known by identity). Each tasks/get of it is written around the
        # text (codec.result_reply): encoded once, not copied and encoded again each time.
        # Changed under _room, as _kept.
        self._texts: dict[str, tuple[Mapping[str, Any], str]] = {}
        self._room = threading.Lock()
        self._format = format_result
        self._client_of = client_of
        self._clock = clock
        self._live: dict[str, Call] = {}  # task id -> the call running it here
        # Who runs them (max_running_tasks_per_owner): task id -> owner, owner -> how many.
        self._live_owners: dict[str, str | None] = {}
        self._running: dict[str | None, int] = {}
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None  # see _watch_elsewhere
        self._closed = threading.Event()
        self._watchers: list[tuple[Callable[[TaskRecord], object], Callable[[], bool] | None]] = []
        self._outbox: deque[TaskRecord] = deque()  # changes not yet told, in order
        self._telling = False  # a dispatcher thread is telling them

    @property
    def store(self) -> TaskStore:
        """Where the task records live: the server's task store, the one
        ``TOOLNEXUS_STORE`` names, else a :class:`~toolnexus.stores.MemoryTaskStore`."""
        store = self._store
        if store is None:
            from ...stores._tasks import MemoryTaskStore

            with self._lock:
                store = self._store
                if store is None:
                    store = self._store = MemoryTaskStore(clock=self._clock)
        return store

    # ------------------------------------------------------------------ watching

    def watch(
        self, watcher: Callable[[TaskRecord], object], wants: Callable[[], bool] | None = None
    ) -> Callable[[], None]:
        """``watcher(record)`` hears of every change of a task; returns how to stop.

        ``wants()`` (quick, lock-free) says whether the watcher has anyone to tell just now
        (a client listening): a change nobody wants is not handed to another thread."""
        entry = (watcher, wants)
        self._watchers.append(entry)

        def stop() -> None:
            if entry in self._watchers:
                self._watchers.remove(entry)

        return stop

    def _told(self, record: TaskRecord) -> None:
        """Tell the watchers of a change — later, on a dispatcher thread, in the order the
        changes came: a change is often made under a transport's lock (a session's request
        handled, a call's end reported) that the watcher takes to send its notification."""
        for _, wants in self._watchers:  # a loop, not any() over a generator: a frame less
            if wants is None or wants():
                break
        else:
            return  # nobody to tell
        with self._lock:
            self._outbox.append(record)
            if self._telling:
                return  # the thread telling the others tells this one after them
            self._telling = True
        dispatch(self._tell)

    def _tell(self) -> None:
        while True:
            with self._lock:
                if not self._outbox:
                    self._telling = False
                    return
                record = self._outbox.popleft()
            for watcher, _ in list(self._watchers):
                try:
                    watcher(record)
                except Exception:  # a listener's failure is not the task's
                    from ..._log import get_logger

                    get_logger().exception("toolnexus mcp: a task watcher failed")

    # ------------------------------------------------------------------ creating

    @property
    def running(self) -> int:
        """How many tasks this process runs now."""
        return len(self._live)

    def has_room(self) -> bool:
        """Whether one more task may run here (``max_tasks``)."""
        return len(self._live) < self._max

    def _start_running(self, task_id: str, owner: str | None) -> Refused | None:
        """Count ``task_id`` as running for ``owner``, or :class:`Refused` when ``owner``
        runs ``max_running_tasks_per_owner`` tasks already (its call then stays in its
        request)."""
        with self._lock:
            running = self._running.get(owner, 0)
            if running >= self._max_running:
                return Refused(
                    INTERNAL_ERROR,
                    f"server busy: this client runs {running} tasks already, the most one "
                    "client may run at once (TaskOptions.max_running_tasks_per_owner); the "
                    "call is answered in its request",
                )
            self._running[owner] = running + 1
            self._live_owners[task_id] = owner
        return None

    def _stop_running(self, task_id: str) -> Call | None:
        """``task_id`` runs here no more: its call (None when it did not), no longer
        counted for its owner. The lock _lock is held."""
        call = self._live.pop(task_id, None)
        self._release_place(task_id)
        return call

    def _release_place(self, task_id: str) -> None:
        """``task_id`` holds no place among its owner's running tasks any more (it ended,
        or was forgotten). A task waiting on an answer keeps its place: its resume runs in
        it, so answering questions cannot run more than the bound. The lock _lock is held."""
        if task_id in self._live_owners:
            _count_down(self._running, self._live_owners.pop(task_id))

    def create(
        self,
        owner: str | None,
        state: Mapping[str, Any],
        *,
        call: Call | None = None,
        result: ToolResult | None = None,
        task_id: str | None = None,
        status: str = "working",
        client: Any = None,
    ) -> TaskRecord | Refused:
        """A new task for ``state`` (what resuming it needs), working on ``call`` — or,
        given ``result``, already settled with it; :class:`Refused` when its store fails.
        ``task_id`` and ``status``: an upstream's task a caller takes as its own (see
        :meth:`follow`), recorded under the id the caller knows it by. ``client``: the
        client ``state`` names, as the caller has it already — the result is written for
        it without reading it back from ``state``."""
        task_record = _record_types()[0]
        now = self._clock()
        fields: dict[str, Any]
        text = None
        size = 0
        if call is None and result is not None:
            # Made settled: built once, as it ends, and stored once (nobody saw it working).
            fields, text, size = self._ending(state, result, False, now, client)
        else:
            fields = {"status": status, "updated_at": now, "state": state}
        record = task_record(
            task_id or _new_task_id(), owner, created_at=now, ttl_ms=self._ttl_ms, **fields
        )
        if call is not None:
            refused = self._start_running(record.task_id, owner)
            if refused is not None:
                return refused
        try:
            refused = self._make_room(record, text, size)
            if refused is None:
                try:
                    self.store.create(record)
                except BaseException:
                    with self._room:
                        self._uncount(record.task_id)
                    raise
        except Exception as exc:
            refused = self._store_failed("create a task", exc)
        if refused is not None:
            if call is not None:
                with self._lock:
                    self._stop_running(record.task_id)
            return refused
        self._told(record)  # told before anything can settle it: "working" comes first
        if call is not None:  # its end is reported to settle() by whoever runs it
            with self._lock:
                self._live[record.task_id] = call
            self._watch_elsewhere()
            try:
                return self.store.get(record.task_id) or record
            except Exception:  # stored a moment ago: what it said then stands
                return record
        return record

    # ------------------------------------------------------------------ the bound

    def _make_room(
        self, record: TaskRecord, text: str | None = None, size: int = 0
    ) -> Refused | None:
        """Count ``record`` in (``max_stored_tasks`` in all, ``max_stored_tasks_per_owner``
        for its owner, ``max_stored_result_bytes`` of results), evicting the oldest
        finished tasks to make room; :class:`Refused` when unfinished tasks alone fill the
        bound. Store failures propagate. ``text``: its result's JSON, when it was made
        finished (see :meth:`result_text`); ``size``: that JSON's bytes."""
        owner = record.owner
        result = record.result
        kept = None
        if text is not None and result is not None and self._in_memory():
            kept = (result, text)
        with self._room:
            while True:
                owner_full = self._per_owner.get(owner, 0) >= self._max_per_owner
                if not owner_full and len(self._kept) < self._max_stored:
                    break
                if not self._evict_one(owner if owner_full else None, owner_full):
                    bound = self._max_per_owner if owner_full else self._max_stored
                    whose = "of this client's " if owner_full else ""
                    return Refused(
                        INTERNAL_ERROR,
                        f"server overloaded: {bound} {whose}tasks are unfinished (running, or "
                        "waiting on an answer), the most the server keeps; finish or cancel "
                        "one (tasks/cancel), or retry later",
                    )
            while self._bytes + size > self._max_bytes and self._evict_one(None, False):
                pass
            finished = record.expires_at if record.is_terminal else None
            self._kept[record.task_id] = (owner, finished, size)
            self._bytes += size
            self._per_owner[owner] = self._per_owner.get(owner, 0) + 1
            if kept is not None:
                self._texts[record.task_id] = kept
        return None

    def _evict_one(self, owner: str | None, of_owner: bool, spare: str | None = None) -> bool:
        """Forget the oldest finished task (``owner``'s, when ``of_owner``; never
        ``spare``); False when every one is unfinished (the lock _room is held)."""
        now = self._clock()
        unfinished: list[str] = []
        for task_id, (whose, expires_at, _) in self._kept.items():
            if (of_owner and whose != owner) or task_id == spare:
                continue
            if expires_at is not None:
                self._drop(task_id, evicted=expires_at > now)
                return True
            if task_id not in self._live:  # waits on an answer, or runs elsewhere
                unfinished.append(task_id)
        for task_id in unfinished:  # one may have ended elsewhere, or expired
            record = self.store.get(task_id)
            if record is None or record.is_terminal:
                self._drop(task_id, evicted=record is not None)
                return True
        return False

    def _drop(self, task_id: str, *, evicted: bool) -> None:
        """Forget ``task_id`` here and in the store (the lock _room is held); remember an
        evicted one's owner, so its ``tasks/get`` says it was evicted."""
        owner = self._uncount(task_id)
        delete = getattr(self.store, "delete", None)
        if delete is not None:
            delete(task_id)
        else:  # a store without delete: the record stays, emptied, until its TTL
            record = self.store.get(task_id)
            if record is not None:
                self.store.update(record.evolve(result=None, error=None, state=None))
        if evicted:
            self._evicted[task_id] = owner
            if len(self._evicted) > self._max_stored:
                self._evicted.popitem(last=False)

    def _uncount(self, task_id: str) -> str | None:
        """Stop counting ``task_id`` (the lock _room is held); its owner."""
        with self._lock:  # (a task forgotten while it asked holds no place any more)
            if task_id not in self._live:
                self._release_place(task_id)
        kept = self._kept.pop(task_id, None)
        self._texts.pop(task_id, None)
        if kept is None:  # evicted already (made finished, by another creation)
            return None
        owner = kept[0]
        self._bytes -= kept[2]
        _count_down(self._per_owner, owner)
        return owner

    def _finished(self, record: TaskRecord, text: str | None = None, size: int = 0) -> None:
        """``record`` ended: from now on, it may be evicted to make room. ``text``: its
        result's JSON (see :meth:`result_text`); ``size``: that JSON's bytes, counted
        against ``max_stored_result_bytes`` (older finished tasks are evicted for it)."""
        if not record.is_terminal:
            return
        result = record.result
        written = None
        if text is not None and result is not None and self._in_memory():
            written = (result, text)
        with self._room:
            task_id = record.task_id
            kept = self._kept.get(task_id)
            if kept is not None:
                self._kept[task_id] = (kept[0], record.expires_at, kept[2] + size)
                self._bytes += size
                if written is not None:
                    self._texts[task_id] = written
                while self._bytes > self._max_bytes and self._evict_one(None, False, task_id):
                    pass

    def _in_memory(self) -> bool:
        """Whether the records live in this process's memory (a
        :class:`~toolnexus.stores.MemoryTaskStore`: it hands back the very records it was
        given), not in a store other processes share."""
        return isinstance(self.store, _record_types()[1])

    def _store_failed(self, doing: str, exc: Exception) -> Refused:
        """The task store failed: the detail (its URL, the reason) goes to the server's
        log; the client reads only that it is unavailable."""
        from ..._log import get_logger

        get_logger().error("toolnexus mcp: cannot %s: the task store failed: %s", doing, exc)
        return Refused(INTERNAL_ERROR, "the task store is unavailable; try again")

    def created(self, record: TaskRecord) -> dict[str, Any]:
        """The ``CreateTaskResult`` fields for ``record`` (flat, ``resultType: "task"``)."""
        return self._summary(record, {"resultType": "task"})

    def _summary(self, record: TaskRecord, out: dict[str, Any] | None = None) -> dict[str, Any]:
        """The task's fields every answer that shows it writes (after ``out``'s)."""
        out = {} if out is None else out
        out["taskId"] = record.task_id
        out["status"] = record.status
        if record.status_message:
            out["statusMessage"] = record.status_message
        created = iso_time(record.created_at)
        out["createdAt"] = created
        # A task made already ended changed as it was made: the same time, written once.
        same = record.updated_at == record.created_at
        out["lastUpdatedAt"] = created if same else iso_time(record.updated_at)
        out["ttlMs"] = record.ttl_ms
        out["pollIntervalMs"] = self._poll_ms
        return out

    def written(self, client: Any, result: ToolResult) -> dict[str, Any]:
        """``result`` as ``client`` reads a tool's result (a ``CallToolResult``)."""
        return self._format(client, result)

    def detailed(self, record: TaskRecord) -> dict[str, Any]:
        """The ``tasks/get`` answer: the task, with its result, error or questions."""
        out = self._summary(record)
        if record.status == "completed" and record.result is not None:
            # Read-only as it is when its text is kept: the answer is written from the text.
            kept = self.result_text(record) is not None
            out["result"] = record.result if kept else thaw(record.result)
        elif record.status == "failed" and record.error is not None:
            out["error"] = thaw(record.error)
        elif record.status == "input_required" and record.input_requests is not None:
            out["inputRequests"] = thaw(record.input_requests)
        return out

    def result_text(self, record: TaskRecord) -> str | None:
        """The JSON text of ``record``'s result as :func:`codec.fragment
        <toolnexus.mcp._shared._codec.fragment>` wrote it when the task ended here — None
        when it was not (a record read back from a shared store, one not completed)."""
        kept = self._texts.get(record.task_id)
        return kept[1] if kept is not None and kept[0] is record.result else None

    # ------------------------------------------------------------------ settling

    def settle(self, task_id: str, result: ToolResult, call: Call | None = None) -> None:
        """The task's call ended with ``result``: record it — completed, failed, cancelled,
        or waiting on the question it asks."""
        with self._lock:
            if call is None or self._live.get(task_id) is call:
                self._live.pop(task_id, None)  # (its place: kept while it asks, below)
        cancelled = call is not None and call.cancelled()
        asking = False
        try:
            for _ in range(_ATTEMPTS):
                record = self.store.get(task_id)
                if record is None or record.is_terminal:
                    return  # expired, or cancelled meanwhile: its late result is dropped
                now = self._clock()
                ending, text, size = self._ending(record.state or {}, result, cancelled, now)
                changed = record.evolve(**ending)
                if self.store.update(changed):
                    asking = not changed.is_terminal
                    self._finished(changed, text, size)
                    self._told(changed)
                    return
        except Exception as exc:  # its record stays as it was, until its TTL
            self._store_failed("record a task's end", exc)
        finally:
            if not asking:
                with self._lock:
                    if task_id not in self._live:  # (not running again already)
                        self._release_place(task_id)

    def _ending(
        self,
        state: Mapping[str, Any],
        result: ToolResult,
        cancelled: bool,
        now: float,
        client: Any = None,
    ) -> tuple[dict[str, Any], str | None, int]:
        """The fields of a task whose call ended with ``result`` (``state``: the task's;
        ``client``: the one it names, when the caller has it): completed, failed, cancelled
        — then without its state, which nothing resumes — or waiting on the question it
        asks. A record is made or evolved with them once. With them, a completed task's
        result as JSON text (None without the C encoder), and its size in bytes: a result
        larger than ``max_stored_result_bytes`` is kept as an error result saying so."""
        if cancelled:
            cancel = {
                "status": "cancelled",
                "updated_at": now,
                "status_message": result.output,
                "input_requests": None,
                "state": None,
            }
            return cancel, None, 0
        request = ToolResult.pending_of(result) if result.is_error else None
        if request is not None:
            return self._asking(dict(state), request, result, now), None, 0
        if client is None:
            client = self._client_of(state.get("client") or {})
        written = self._format(client, result)
        try:  # encoded once: the text is what each tasks/get of it writes
            text = codec.fragment(written)
            if text is None:  # not JSON, or no C encoder: encode says which
                size = len(codec.encode(written)) - 1
            else:
                size = len(text) if text.isascii() else len(text.encode("utf-8", "replace"))
        except Exception as exc:  # not JSON (NaN, a set), or too big: the protocol failed
            message = f"internal error: the result is not JSON ({exc})"
            return self._failed(INTERNAL_ERROR, message, now), None, 0
        if size > self._max_bytes:
            written, text, size = self._too_large(client, state.get("name"), size)
        done = {
            "status": "completed",
            "updated_at": now,
            "result": written,
            "input_requests": None,
            "state": None,
        }
        return done, text, size

    def _too_large(
        self, client: Any, name: Any, size: int
    ) -> tuple[dict[str, Any], str | None, int]:
        """The error result kept in place of a result of ``size`` bytes, larger than
        ``max_stored_result_bytes``: written for ``client``, its text and its size."""
        tool = f"'{name}'" if isinstance(name, str) else "the tool"
        written = self._format(
            client,
            ToolResult.error(
                f"the result of {tool} was too large for the server to keep for its task: "
                f"{size} bytes of JSON, more than TaskOptions.max_stored_result_bytes "
                f"({self._max_bytes}); ask for less, or call it without a task"
            ),
        )
        text = codec.fragment(written)
        return written, text, len(codec.encode(written)) - 1

    @staticmethod
    def _failed(code: int, message: str, now: float, data: Any = None) -> dict[str, Any]:
        """The fields of a task that failed with the JSON-RPC error ``code``/``message``."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        return {
            "status": "failed",
            "updated_at": now,
            "error": error,
            "input_requests": None,
            "state": None,
        }

    def _asking(
        self, state: dict[str, Any], request: Request, result: ToolResult, now: float
    ) -> dict[str, Any]:
        # The rule a call's question follows (mcp/_shared/_questions.py), for the task's client —
        # a modern one, which may always be asked.
        client = self._client_of(state.get("client") or {})
        planned = plan(request, result.output, client)
        if planned.problem is not None:
            message = f"the task asked a question MCP cannot ask: {planned.problem}"
            return self._failed(INTERNAL_ERROR, message, now)
        if planned.missing:
            message, data = missing_capability(planned.missing, "the task", result.output)
            return self._failed(MISSING_CLIENT_CAPABILITY, message, now, data)
        binding = result.metadata.get(BINDING_KEY)
        state.update(
            request=request.to_dict(),
            shapes=shapes_of(planned),
            binding=binding if isinstance(binding, str) else None,
            answers={},
        )
        return {
            "status": "input_required",
            "updated_at": now,
            "status_message": request.prompt,
            "input_requests": input_requests(planned),
            "state": state,
        }

    # ------------------------------------------------------------------ the methods

    def find(self, task_id: Any, owner: str | None) -> TaskRecord | Refused:
        """The task ``task_id`` of ``owner``, or :class:`Refused` (``-32602``) when there
        is none — unknown, expired and another owner's read the same."""
        if not isinstance(task_id, str) or not task_id:
            return Refused(
                INVALID_PARAMS, f"invalid params: taskId must be a string, got {describe(task_id)}"
            )
        try:
            record = self.store.get(task_id)
        except Exception as exc:
            return self._store_failed("read a task", exc)
        if record is None and task_id in self._evicted and self._evicted[task_id] == owner:
            return Refused(
                INVALID_PARAMS,
                f"invalid params: task {task_id!r} was evicted: it had finished, and the "
                f"server keeps at most {self._max_per_owner} tasks per client, "
                f"{self._max_stored} in all and {self._max_bytes} bytes of results "
                "(TaskOptions.max_stored_tasks_per_owner, max_stored_tasks, "
                "max_stored_result_bytes); read a task's result as soon as it is done",
                {"taskId": task_id, "reason": "evicted"},
            )
        if record is None or record.owner != owner:
            return Refused(
                INVALID_PARAMS,
                f"invalid params: no task {task_id!r} (it never existed, expired after its "
                "ttlMs, or belongs to another client)",
                {"taskId": task_id},
            )
        return record

    def cancel(self, task_id: Any, owner: str | None) -> Refused | None:
        """``tasks/cancel``: stop a task that still runs or waits (idempotent for one that
        ended already); :class:`Refused` for a task ``owner`` does not have."""
        try:
            return self._cancel(task_id, owner)
        except Exception as exc:
            return self._store_failed("cancel a task", exc)

    def _cancel(self, task_id: Any, owner: str | None) -> Refused | None:
        for _ in range(_ATTEMPTS):
            record = self.find(task_id, owner)
            if isinstance(record, Refused):
                return record
            if record.is_terminal:
                return None
            changed = record.evolve(
                status="cancelled",
                updated_at=self._clock(),
                status_message="cancelled by the client",
                input_requests=None,
            )
            if self.store.update(changed):
                with self._lock:
                    call = self._stop_running(record.task_id)
                if call is not None:
                    call.cancel()
                self._finished(changed)
                self._told(changed)
                return None
        return Refused(INTERNAL_ERROR, "the task changed under every attempt to cancel it")

    def update(self, task_id: Any, owner: str | None, responses: Any) -> Refused | Resume | None:
        """``tasks/update``: take the answers to a task's questions. Keys it did not ask
        (or asked and has) are ignored; once every question is answered, the task runs
        again with the answers: the :class:`Resume` to start (through the call bridge).
        :class:`Refused` (``-32602``) for an answer that cannot be read or does not fit its
        form (nothing of it is kept), or a task ``owner`` does not have."""
        try:
            return self._update(task_id, owner, responses)
        except Exception as exc:
            return self._store_failed("answer a task", exc)

    def _update(self, task_id: Any, owner: str | None, responses: Any) -> Refused | Resume | None:
        if responses is not None and not isinstance(responses, dict):
            return Refused(
                INVALID_PARAMS,
                f"invalid params: inputResponses must be an object, got {describe(responses)}",
            )
        # Questions and answers load with the first a task asks: a server starts without.
        from ..._suspension import Answer, Request

        for _ in range(_ATTEMPTS):
            record = self.find(task_id, owner)
            if isinstance(record, Refused):
                return record
            if record.status != "input_required" or not responses:
                return None  # nothing asked now: answers for nothing are ignored
            state = dict(thaw(record.state or {}))
            request = Request.from_dict(state["request"])
            shapes = state.get("shapes") or {}
            answers: dict[str, Any] = dict(state.get("answers") or {})
            asked = dict(thaw(record.input_requests or {}))
            for each in request.requests():
                response = responses.get(each.id)
                if response is None or each.id not in asked:
                    continue
                answer = self._answer(each, str(shapes.get(each.id)), response)
                if isinstance(answer, Refused):
                    return answer
                answers[each.id] = answer.to_dict()
                del asked[each.id]
            if asked:  # more to come: keep what came, ask the rest
                state["answers"] = answers
                changed = record.evolve(updated_at=self._clock(), input_requests=asked, state=state)
                if self.store.update(changed):
                    self._told(changed)
                    return None
                continue
            collected = {key: Answer.from_dict(value) for key, value in answers.items()}
            whole = whole_answer(request, collected)
            state["answers"] = {}
            changed = record.evolve(
                status="working",
                updated_at=self._clock(),
                status_message=None,
                input_requests=None,
                state=state,
            )
            if self.store.update(changed):
                self._told(changed)
                return self._resume(changed, state, request, whole)
        return Refused(INTERNAL_ERROR, "the task changed under every attempt to answer it")

    def _answer(self, request: Request, shape: str, response: Any) -> Answer | Refused:
        """A response to one of the task's questions, read and checked against its form
        as a call's is (mcp/_shared/_questions.py) — refused here, as nothing of it is kept."""
        try:
            answer = answer_from_response(request, shape, response)
        except ValueError as exc:
            return Refused(INVALID_PARAMS, f"invalid params: inputResponses[{request.id!r}]: {exc}")
        problem = form_problem(request, shape, answer)
        if problem is not None:
            return Refused(INVALID_PARAMS, f"invalid params: {problem}")
        return answer

    def _resume(
        self, record: TaskRecord, state: Mapping[str, Any], request: Request, answer: Answer
    ) -> Resume | None:
        """What runs the task's call again with ``answer`` (the loop rule, on the host): a
        :class:`Resume` the session starts through the call bridge, as every call starts —
        or None when the answer declines and the task ends here."""
        from ..._loop_rule import declined_text
        from ..._suspension import decline_reason

        task_id = record.task_id
        if answer.id != request.id or decline_reason(request, answer) is not None:
            self.settle(task_id, ToolResult.error(declined_text(request)))
            return None
        binding = state.get("binding")
        return Resume(
            task_id,
            str(state.get("name")),
            dict(state.get("arguments") or {}),
            request,
            answer,
            binding if isinstance(binding, str) else None,
        )

    def follow(self, record: TaskRecord, status: Any, message: Any) -> None:
        """An upstream's task (recorded by :meth:`create` with its caller's id) has
        ``status`` there now: its record says so too, so it is bounded, evicted and
        expired as a task of this server is. Nothing else of it is kept here: its result
        and its questions are the upstream's."""
        from ...stores._tasks import TERMINAL

        known = (*TERMINAL, "working", "input_required")
        text = message if isinstance(message, str) else None
        if status not in known or (status, text) == (record.status, record.status_message):
            return
        changed = record.evolve(status=status, updated_at=self._clock(), status_message=text)
        try:
            if self.store.update(changed):
                self._finished(changed)
        except Exception as exc:  # it stays as it was: the upstream still says
            self._store_failed("record an upstream task's status", exc)

    def adopt(self, task_id: str, call: Call) -> None:
        """The call bridge made ``call`` to run the task ``task_id`` again (a
        :class:`Resume`): a ``tasks/cancel`` — here or in another process — now reaches
        it. A task cancelled meanwhile has its call cancelled at once."""
        with self._room:
            kept = self._kept.get(task_id)
        owner = kept[0] if kept is not None else None  # else read from its record below
        with self._lock:
            if call.done():
                return
            self._live.pop(task_id, None)
            if task_id not in self._live_owners:  # (one asking runs again in its own place)
                self._running[owner] = self._running.get(owner, 0) + 1
                self._live_owners[task_id] = owner
            self._live[task_id] = call
        self._watch_elsewhere()
        try:
            record = self.store.get(task_id)
        except Exception:  # the store is down: the watcher reads it again
            return
        if record is None or record.status == "cancelled":
            with self._lock:
                if self._live.get(task_id) is call:
                    self._stop_running(task_id)
            call.cancel()
        elif record.owner != owner:  # a task another process made: its owner runs it
            with self._lock:
                if self._live.get(task_id) is call:
                    self._stop_running(task_id)
                    self._running[record.owner] = self._running.get(record.owner, 0) + 1
                    self._live_owners[task_id] = record.owner
                    self._live[task_id] = call

    # ------------------------------------------------------------------ other processes

    def _watch_elsewhere(self) -> None:
        """With a store other processes share, a task this process runs may be cancelled
        in another (a replica the client's ``tasks/cancel`` reached): while it runs tasks,
        one thread reads their records every ``task_poll_ms`` and cancels the call of a
        task cancelled elsewhere. A memory store is this process's own: nothing to watch."""
        if self._in_memory():
            return
        with self._lock:
            if self._reader is not None or self._closed.is_set():
                return
            self._reader = threading.Thread(
                target=self._read_records, name="toolnexus-task-reader", daemon=True
            )
            self._reader.start()

    def _read_records(self) -> None:
        while not self._closed.wait(self._poll_ms / 1000):
            with self._lock:
                live = dict(self._live)
                if not live:
                    self._reader = None  # the next task starts another
                    return
            for task_id, call in live.items():
                try:
                    record = self.store.get(task_id)
                except Exception:  # the store is down: read again next time
                    continue
                if record is not None and record.status == "cancelled":
                    with self._lock:
                        if self._live.get(task_id) is call:
                            self._stop_running(task_id)
                    call.cancel()
        with self._lock:
            self._reader = None

    def close(self) -> None:
        """Stop watching (the server ends); running tasks end with the host."""
        self._watchers.clear()
        self._closed.set()
