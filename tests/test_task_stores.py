"""The task stores' contract, one suite every store passes: memory, SQLite, PostgreSQL and
Redis — create once, read until expiry, update by compare-and-set (of many writers of one
version, exactly one wins), purge — and one URL chooses them (``open_task_store``).

The PostgreSQL and Redis cases run against the servers tests/test_stores.py uses
(TOOLNEXUS_TEST_POSTGRES_URL, TOOLNEXUS_TEST_REDIS_URL); without them they skip, except
under TOOLNEXUS_REQUIRE_STORES=1. The restart test also needs TOOLNEXUS_TEST_*_RESTART:
run it serially, as .ci/run does.
"""

from __future__ import annotations

import multiprocessing
import os
import shlex
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from extras import server_url
from sqlite_counted import Counted
from store_faults import Lost
from store_workers import update_together
from timing import wait_until
from toolnexus import StoreUnavailableError
from toolnexus.stores import TaskRecord, TaskStore, open_task_store

REQUIRE = "TOOLNEXUS_REQUIRE_STORES"
SERVERS = {
    "postgres": ("TOOLNEXUS_TEST_POSTGRES_URL", "postgres", ("psycopg", "psycopg_pool")),
    "redis": ("TOOLNEXUS_TEST_REDIS_URL", "redis", ("redis",)),
}
KINDS = ["memory", "sqlite", "postgres", "redis"]
HOUR_MS = 3_600_000


def url_of(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory:"
    if kind == "sqlite":
        return f"sqlite:{tmp_path / 'tasks.db'}"
    env, extra, modules = SERVERS[kind]
    return server_url(env, REQUIRE, extra, *modules)


def close(store: object) -> None:
    closer = getattr(store, "close", None)
    if closer is not None:
        closer()


@pytest.fixture(params=KINDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return url_of(request.param, tmp_path)


@pytest.fixture
def store(url: str) -> Iterator[TaskStore]:
    opened = open_task_store(url)
    yield opened
    close(opened)


def new_task(ttl_ms: int = HOUR_MS, now: float | None = None) -> TaskRecord:
    """A record no earlier run used (the servers outlive a test run)."""
    moment = time.time() if now is None else now
    return TaskRecord(f"tsk-{uuid.uuid4().hex}", "owner-digest", "working", moment, moment, ttl_ms)


# --------------------------------------------------------------------------- the contract


def test_a_record_is_kept_once_and_read_back_as_it_was_written(store: TaskStore) -> None:
    record = new_task()
    full = record.evolve(
        status="input_required",
        status_message="Sure? — ja/nein",
        input_requests={"k": {"method": "elicitation/create", "params": {"message": "Sure?"}}},
        state={"name": "deploy", "arguments": {"env": "prod", "n": [1, 2.5, None]}},
    )
    store.create(full)
    assert store.get(full.task_id) == full
    with pytest.raises(ValueError, match="exists already"):
        store.create(record)
    assert store.get(full.task_id) == full
    assert store.get(f"tsk-{uuid.uuid4().hex}") is None


def test_an_update_wins_once_per_version(store: TaskStore) -> None:
    record = new_task()
    store.create(record)
    done = record.evolve(status="completed", result={"content": [], "isError": False})
    assert store.update(done) is True
    assert store.update(record.evolve(status="failed")) is False  # a stale version loses
    assert store.update(done) is False  # the same change twice: its version is taken
    assert store.get(record.task_id) == done
    gone = new_task()
    assert store.update(gone.evolve(status="cancelled")) is False  # nothing to update


def test_a_record_is_deleted_at_once_and_a_delete_of_nothing_is_quiet(store: TaskStore) -> None:
    # What a server evicts a finished task with, when it keeps too many.
    record, other = new_task(), new_task()
    store.create(record)
    store.create(other)
    store.delete(record.task_id)  # type: ignore[attr-defined]
    assert store.get(record.task_id) is None
    assert store.update(record.evolve(status="completed")) is False
    store.delete(record.task_id)  # type: ignore[attr-defined]
    assert store.get(other.task_id) == other


def test_a_record_is_forgotten_once_its_ttl_after_the_last_change_passed(url: str) -> None:
    if url.startswith("redis"):
        # Redis forgets by the key's time to live, on the server's clock: a real short one.
        store = open_task_store(url)
        record = new_task(ttl_ms=300)
        store.create(record)
        assert store.get(record.task_id) == record
        assert wait_until(lambda: store.get(record.task_id) is None)
        assert store.update(record.evolve(status="completed")) is False
    else:
        now = [1000.0]
        store = with_clock(url, lambda: now[0])
        record = new_task(ttl_ms=60_000, now=1000.0)
        store.create(record)
        later = record.evolve(updated_at=1030.0)  # a change moves its expiry
        assert store.update(later) is True
        now[0] = 1089.9
        assert store.get(record.task_id) == later
        now[0] = 1090.0
        assert store.get(record.task_id) is None
        assert store.purge() >= 1
        store.create(record.evolve(created_at=1090.0, updated_at=1090.0))  # its id is free
    close(store)


def with_clock(url: str, clock: Callable[[], float]) -> TaskStore:
    from toolnexus.stores import MemoryTaskStore, PostgresTaskStore, SqliteTaskStore

    if url == "memory:":
        return MemoryTaskStore(clock=clock)
    if url.startswith("sqlite:"):
        return SqliteTaskStore(url.removeprefix("sqlite:"), clock=clock)
    return PostgresTaskStore(url, clock=clock)


@pytest.mark.slow  # starts 8 interpreters
def test_of_eight_processes_updating_one_version_exactly_one_wins(url: str) -> None:
    store = open_task_store(url)
    record = new_task()
    store.create(record)
    if url == "memory:":
        # A memory store lives in one process: its contenders are threads.
        start = threading.Barrier(8)

        def contend(n: int) -> bool:
            start.wait()
            return store.update(record.evolve(status_message=f"writer {n}"))

        with ThreadPoolExecutor(8) as pool:
            assert sum(pool.map(contend, range(8))) == 1
        return
    context = multiprocessing.get_context("spawn")
    start_all = context.Barrier(8)
    results = context.Queue()
    processes = [
        context.Process(target=update_together, args=(url, record.to_dict(), n, start_all, results))
        for n in range(8)
    ]
    for process in processes:
        process.start()
    wins = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(60)
    assert sorted(wins) == [False] * 7 + [True]
    winner = store.get(record.task_id)
    assert winner is not None and winner.version == 1
    assert winner.status_message is not None and winner.status_message.startswith("writer ")
    close(store)


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "redis"])  # memory: its own process's
def test_two_stores_on_one_url_see_each_others_records(kind: str, tmp_path: Path) -> None:
    url = url_of(kind, tmp_path)
    one, two = open_task_store(url), open_task_store(url)
    try:
        record = new_task()
        one.create(record)
        assert two.get(record.task_id) == record
        assert two.update(record.evolve(status="completed")) is True
        assert one.update(record.evolve(status="failed")) is False
        got = one.get(record.task_id)
        assert got is not None and got.status == "completed"
    finally:
        close(one)
        close(two)


# --------------------------------------------------------------------------- servers


@pytest.mark.parametrize("server", list(SERVERS))
def test_a_restart_of_the_server_keeps_the_records_and_later_calls_work(server: str) -> None:
    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    restart = server_url(env.replace("_URL", "_RESTART"), REQUIRE, extra)
    store = open_task_store(url)
    records = [new_task() for _ in range(5)]
    for record in records:
        store.create(record)
    subprocess.run(shlex.split(restart), check=True, timeout=120)

    def after(call: Callable[[], Any]) -> Any:
        # The first call may meet the broken connection and the server still starting:
        # it is refused clearly then, and works once the server is back.
        deadline = time.monotonic() + 60
        while True:
            try:
                return call()
            except StoreUnavailableError:
                assert time.monotonic() < deadline
                threading.Event().wait(0.05)

    assert [after(lambda r=r: store.get(r.task_id)) for r in records] == records
    assert after(lambda: store.update(records[0].evolve(status="completed"))) is True
    assert after(lambda: store.update(records[0].evolve(status="failed"))) is False
    fresh = new_task()
    after(lambda: store.create(fresh))
    assert store.get(fresh.task_id) == fresh
    close(store)


@pytest.mark.parametrize("server", list(SERVERS))
def test_a_task_store_whose_server_is_down_says_so_without_the_password(server: str) -> None:
    env, extra, modules = SERVERS[server]
    server_url(env, REQUIRE, extra, *modules)  # the driver is installed
    url = (
        "postgresql://toolnexus:s3cret@127.0.0.1:1/app"
        if server == "postgres"
        else "redis://:s3cret@127.0.0.1:1/0"
    )
    with pytest.raises(StoreUnavailableError) as caught:
        open_task_store(url)
    assert "s3cret" not in str(caught.value) and "127.0.0.1:1" in str(caught.value)


@pytest.mark.parametrize("server", list(SERVERS))
def test_a_write_whose_reply_was_lost_is_retried_and_counts_once(server: str) -> None:
    # The write reached the server, then the connection broke before its reply came back:
    # the retry must see the record is its own — taken once, neither lost nor refused.
    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    record = new_task()
    done = record.evolve(status="completed")
    first, second = open_task_store(url), open_task_store(url)  # each with its pool intact
    lost = Lost(first)
    first.create(record)
    assert lost.times == 1 and first.get(record.task_id) == record
    lost = Lost(second)
    assert second.update(done) is True
    assert lost.times == 1 and second.get(record.task_id) == done
    assert second.update(done) is False  # and only once
    close(first)
    close(second)


def test_a_url_that_names_no_store_is_refused_naming_the_schemes() -> None:
    with pytest.raises(
        ValueError, match=r"unknown store scheme 'mysql' in 'mysql://app:\*\*\*@db/app'"
    ):
        open_task_store("mysql://app:s3cret@db/app")


# --------------------------------------------------------------------------- sqlite's connections


def test_a_sqlite_task_store_keeps_one_connection_per_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolnexus.stores import SqliteTaskStore

    counted = Counted(monkeypatch)
    store = SqliteTaskStore(tmp_path / "tasks.db")

    def round_trips(count: int) -> bool:
        for _ in range(count):
            record = new_task()
            store.create(record)
            if store.get(record.task_id) != record:
                return False
            if not store.update(record.evolve(status="completed")):
                return False
            store.delete(record.task_id)
        return True

    assert round_trips(20)
    assert counted.connections == 1  # the one that made the table, kept
    with ThreadPoolExecutor(1) as other:
        assert other.submit(round_trips, 20).result()
    assert counted.connections == 2  # the other thread's own
    store.close()
    assert round_trips(1) and counted.connections == 3  # closed: the next call opens one


def test_a_sqlite_task_store_read_leaves_no_lock_behind(tmp_path: Path) -> None:
    import sqlite3

    from toolnexus.stores import SqliteTaskStore

    store = SqliteTaskStore(tmp_path / "tasks.db")
    record = new_task()
    store.create(record)
    assert store.get(record.task_id) == record
    assert store.get("tsk-none") is None
    # Another process's writer gets the whole file at once: the kept connection holds no
    # statement open (a read lock would make this wait, then fail).
    writer = sqlite3.connect(tmp_path / "tasks.db", timeout=0, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("DELETE FROM toolnexus_tasks WHERE task_id = ?", (record.task_id,))
        writer.execute("COMMIT")
    finally:
        writer.close()
    assert store.get(record.task_id) is None  # and the store reads what it wrote
    store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_sqlite_task_store_used_before_a_fork_opens_its_own_connection_in_the_child(
    tmp_path: Path,
) -> None:
    from toolnexus.stores import SqliteTaskStore

    store = SqliteTaskStore(tmp_path / "tasks.db")
    before, made = new_task(), new_task()
    store.create(before)  # the parent's connection, in use
    inherited = store._connections._local.db
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, never return into pytest
        code = 1
        try:
            store.create(made)
            seen = (store.get(before.task_id) == before, store.get(made.task_id) == made)
            kept = store._connections
            fresh = kept._local.db is not inherited and kept._stale == [inherited]
            os.write(write, repr((seen, fresh)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    assert os.waitpid(pid, 0)[1] == 0
    assert answer == "((True, True), True)"
    assert store._connections._local.db is inherited  # the parent goes on with its own
    assert store.get(made.task_id) == made  # what the child wrote, read here
    assert store.update(made.evolve(status="completed")) is True
    store.close()


def test_a_task_store_that_cannot_be_used_says_it_is_the_task_store(tmp_path: Path) -> None:
    import pickle

    from toolnexus.stores import SqliteTaskStore

    with pytest.raises(StoreUnavailableError) as caught:
        SqliteTaskStore(tmp_path / "no" / "such" / "folder" / "tasks.db")
    assert str(caught.value).startswith(f"task store sqlite:{tmp_path}"), str(caught.value)
    assert str(pickle.loads(pickle.dumps(caught.value))) == str(caught.value)
