"""What shared state and durable execution cost: one consume in each answer store (memory,
sqlite, Postgres, Redis), one create, get and update in each task store, and a `Host` call
run on Temporal against a bare Temporal activity round trip, each in one run.

Run it from a checkout, with the drivers and the SDK installed (``pip install -e
'.[test,stores-test,temporal-test]'``) and real servers to talk to::

    python tests/store_servers.py start /tmp/servers && . /tmp/servers/env.sh
    python benchmarks/stores.py                       # 3000 consumes per store, 400 calls
    python benchmarks/stores.py --consumes 600 --postgres postgresql://... --redis redis://...
    python benchmarks/stores.py --consumes 0 --calls 1000 --temporal 127.0.0.1:7233
    python benchmarks/stores.py --consumes 0 --calls 0 --tasks 2000   # task stores alone

The servers come from ``--postgres`` / ``--redis`` / ``--temporal``, else
TOOLNEXUS_TEST_POSTGRES_URL / TOOLNEXUS_TEST_REDIS_URL / TOOLNEXUS_TEST_TEMPORAL_URL; one
without a server is left out of its table (and says so).

The first table: the latency of ``consume`` (one call, measured by ``perf_counter_ns``) for a new
key (the first use of an answer: a write) and for a used key (a replay: refused), as median
and 99th percentile, and each median's ratio to the memory store's, measured in the same
run. The stores take turns in small batches (interleaved, in rotating order), so a busy
machine shifts them alike. What the figures include: the driver, the pool, the round trip
to a server on 127.0.0.1, and the server's own durable write (PostgreSQL commits with
``synchronous_commit`` on; the test Redis appends every write with ``appendfsync always``,
as a store that must not forget should).

The second table: the latency of a task store's ``create`` (a new record), ``get`` (reading
it back) and ``update`` (its next version), median and 99th percentile, the stores taking
turns in batches as above. Beside the SQLite store runs the same store opening a connection
for each statement and closing it after (as it did before 2026-12-07): what keeping one
connection per thread saves, in the same run.

The third table: the wall time of one call of a one-line tool (``add``) through Temporal,
median and p99, three ways, taking turns in small batches:

- **bare**: ``client.execute_workflow`` of a workflow that runs one activity returning its
  argument — the least a Temporal round trip can be (its workflow runs outside the sandbox,
  as toolnexus's does);
- **Host.acall** and **Host.call**: the same tool run by a ``Host`` with a
  ``TemporalRunner``: the arguments checked on the host, a ``toolnexus.ToolCall`` workflow
  started with its first update, the tool run on the worker's own host (its deadline,
  heartbeats), the result checked and returned. ``Host.call`` from plain code also pays for
  the host's worker thread and event loop.

The workers run in this process, on a thread of their own, on fresh task queues, so the
CPU time per call (``time.process_time``, per batch) counts the client's and the worker's
work alike — what toolnexus adds shows there, where the wall time is mostly Temporal's.
The target is a wall-time ratio of at most 1.2 to bare. Nothing here asserts: it prints
numbers to read.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from toolnexus.stores import (
    AnswerStore,
    SqliteTaskStore,
    TaskRecord,
    TaskStore,
    open_store,
    open_task_store,
)

FAR = 4e9


class SqliteFloor:
    """The least a shared sqlite answer store can do: one kept connection, one statement
    (``INSERT OR IGNORE``; no expiry, no fork or thread care) — the floor the sqlite row is
    read against."""

    def __init__(self, path: str) -> None:
        import sqlite3

        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("CREATE TABLE IF NOT EXISTS used (key TEXT PRIMARY KEY, at REAL)")

    def consume(self, key: str, expires_at: float) -> bool:
        cursor = self.db.execute("INSERT OR IGNORE INTO used VALUES (?, ?)", (key, expires_at))
        return bool(cursor.rowcount == 1)

    def close(self) -> None:
        self.db.close()


def close_all(stores: Iterable[object]) -> None:
    """Close each store that can be closed (a pool, a kept connection)."""
    for store in stores:
        closer = getattr(store, "close", None)
        if closer is not None:
            closer()


def percentile(values: list[int], fraction: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--consumes", type=int, default=3000, help="per store and kind")
    parser.add_argument("--batch", type=int, default=50, help="consumes per turn")
    parser.add_argument("--postgres", default=os.environ.get("TOOLNEXUS_TEST_POSTGRES_URL"))
    parser.add_argument("--redis", default=os.environ.get("TOOLNEXUS_TEST_REDIS_URL"))
    parser.add_argument("--tasks", type=int, default=1000, help="per task store and operation")
    parser.add_argument("--calls", type=int, default=400, help="Temporal calls per way")
    parser.add_argument("--temporal", default=os.environ.get("TOOLNEXUS_TEST_TEMPORAL_URL"))
    options = parser.parse_args()
    if options.consumes > 0:
        consumes(options)
    if options.tasks > 0:
        print()
        task_stores(options)
    if options.calls > 0:
        print()
        if options.temporal:
            temporal_calls(options.temporal, options.calls, options.batch)
        else:
            print("Temporal calls: left out (no server: --temporal or TOOLNEXUS_TEST_TEMPORAL_URL)")
    return 0


def consumes(options: argparse.Namespace) -> None:
    folder = tempfile.mkdtemp(prefix="toolnexus-bench-")
    urls = {"memory": "memory:", "sqlite": f"sqlite:{folder}/used.db"}
    left_out = []
    for name in ("postgres", "redis"):
        url = getattr(options, name)
        if url:
            urls[name] = url
        else:
            left_out.append(name)
    stores: dict[str, AnswerStore] = {name: open_store(url) for name, url in urls.items()}
    stores["sqlite floor"] = SqliteFloor(f"{folder}/floor.db")
    run_id = uuid.uuid4().hex[:12]
    fresh: dict[str, list[int]] = {name: [] for name in stores}
    replay: dict[str, list[int]] = {name: [] for name in stores}
    for name, store in stores.items():  # warm each pool and prepared statement
        for i in range(20):
            store.consume(f"{run_id}-warm-{name}-{i}", FAR)
    order = list(stores)
    done = 0
    while done < options.consumes:
        batch = min(options.batch, options.consumes - done)
        for name in order:
            store = stores[name]
            keys = [f"{run_id}-{name}-{done + i}" for i in range(batch)]
            for key in keys:
                start = time.perf_counter_ns()
                won = store.consume(key, FAR)
                fresh[name].append(time.perf_counter_ns() - start)
                assert won
            for key in keys:
                start = time.perf_counter_ns()
                won = store.consume(key, FAR)
                replay[name].append(time.perf_counter_ns() - start)
                assert not won
        order = order[1:] + order[:1]
        done += batch
    close_all(stores.values())

    base_fresh = statistics.median(fresh["memory"])
    base_replay = statistics.median(replay["memory"])
    print(f"consume latency, {options.consumes} consumes per store and kind, interleaved")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| store | new key: median | p99 | x memory | used key: median | p99 | x memory |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in stores:
        f_med, r_med = statistics.median(fresh[name]), statistics.median(replay[name])
        print(
            f"| {name} | {f_med / 1000:.1f} µs | {percentile(fresh[name], 0.99) / 1000:.1f} µs "
            f"| {f_med / base_fresh:.0f} | {r_med / 1000:.1f} µs "
            f"| {percentile(replay[name], 0.99) / 1000:.1f} µs | {r_med / base_replay:.0f} |"
        )
    floor_fresh = statistics.median(fresh["sqlite floor"])
    floor_replay = statistics.median(replay["sqlite floor"])
    print(
        f"\nsqlite against its floor (same run): new key "
        f"{statistics.median(fresh['sqlite']) / floor_fresh:.2f}x, replay "
        f"{statistics.median(replay['sqlite']) / floor_replay:.2f}x (targets 1.1x and 1.5x)"
    )
    for name in left_out:
        print(f"| {name} | (no URL: --{name} or TOOLNEXUS_TEST_{name.upper()}_URL) | | | | | |")


# --------------------------------------------------------------------------- task stores


class ReopeningSqliteTaskStore(SqliteTaskStore):
    """The SQLite task store as it was before 2026-12-07: each statement on a connection
    opened for it and closed after (the reference the kept connections are read against)."""

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        try:
            return super()._run(sql, params)
        finally:
            self.close()


def task_stores(options: argparse.Namespace) -> None:
    folder = tempfile.mkdtemp(prefix="toolnexus-bench-tasks-")
    stores: dict[str, TaskStore] = {
        "memory": open_task_store("memory:"),
        "sqlite": open_task_store(f"sqlite:{folder}/tasks.db"),
        "sqlite, a connection per statement": ReopeningSqliteTaskStore(f"{folder}/reopen.db"),
    }
    left_out = []
    for name in ("postgres", "redis"):
        url = getattr(options, name)
        if url:
            stores[name] = open_task_store(url)
        else:
            left_out.append(name)
    operations = ("create", "get", "update")
    timings: dict[str, dict[str, list[int]]] = {
        name: {op: [] for op in operations} for name in stores
    }

    def rounds(store: TaskStore, count: int, into: dict[str, list[int]] | None) -> None:
        now = time.time()
        records = [
            TaskRecord(f"tsk-{uuid.uuid4().hex}", "owner", "working", now, now, 3_600_000)
            for _ in range(count)
        ]
        for op in operations:
            for record in records:
                start = time.perf_counter_ns()
                if op == "create":
                    store.create(record)
                elif op == "get":
                    assert store.get(record.task_id) == record
                else:
                    assert store.update(record.evolve(status="completed"))
                if into is not None:
                    into[op].append(time.perf_counter_ns() - start)

    for store in stores.values():  # warm each pool and prepared statement
        rounds(store, 20, None)
    order = list(stores)
    done = 0
    while done < options.tasks:
        batch = min(options.batch, options.tasks - done)
        for name in order:
            rounds(stores[name], batch, timings[name])
        order = order[1:] + order[:1]
        done += batch
    close_all(stores.values())

    print(f"task store latency, {options.tasks} records per store, interleaved")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| store | create: median | p99 | get: median | p99 | update: median | p99 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in stores:
        cells = []
        for op in operations:
            values = timings[name][op]
            median, p99 = statistics.median(values) / 1000, percentile(values, 0.99) / 1000
            cells.append(f"{median:.1f} µs | {p99:.1f} µs")
        print(f"| {name} | {' | '.join(cells)} |")
    kept, reopened = timings["sqlite"], timings["sqlite, a connection per statement"]
    ratios = ", ".join(
        f"{op} {statistics.median(kept[op]) / statistics.median(reopened[op]):.2f}x"
        for op in operations
    )
    for name in left_out:
        print(f"| {name} | (no URL: --{name} or TOOLNEXUS_TEST_{name.upper()}_URL) | | | | | |")
    print(f"\nsqlite, kept connections against a connection per statement (same run): {ratios}")


# --------------------------------------------------------------------------- Temporal


def temporal_calls(address: str, calls: int, batch: int) -> None:
    import asyncio
    import threading

    from temporal_bench import BareCall, bare_add, toolkit
    from temporalio.client import Client
    from temporalio.worker import Worker

    from toolnexus import Host
    from toolnexus.temporal import TemporalRunner, run_worker

    run_id = uuid.uuid4().hex[:12]
    ours, theirs = f"bench-tools-{run_id}", f"bench-bare-{run_id}"
    ready = threading.Barrier(2)
    loops: list[asyncio.AbstractEventLoop] = []
    serving: list[asyncio.Future[None]] = []

    def workers() -> None:
        async def serve() -> None:
            client = await Client.connect(address)
            bare = Worker(client, task_queue=theirs, workflows=[BareCall], activities=[bare_add])
            async with bare:
                await run_worker(toolkit, client, task_queue=ours, ready=ready.wait)

        loop = asyncio.new_event_loop()
        loops.append(loop)
        serving.append(loop.create_task(serve()))
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(serving[0])
        loop.close()

    worker_thread = threading.Thread(target=workers)
    worker_thread.start()
    client = asyncio.run(Client.connect(address))
    host = Host(toolkit, runner=TemporalRunner(client, task_queue=ours), timeout_ms=30_000)
    ready.wait()
    kinds = ("bare", "Host.acall", "Host.call")
    times: dict[str, list[int]] = {kind: [] for kind in kinds}
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}  # per call, per batch

    async def bare() -> None:
        await client.execute_workflow(
            BareCall.run, {"a": 1, "b": 2}, id=f"bare-{uuid.uuid4().hex}", task_queue=theirs
        )

    async def acall() -> None:
        result = await host.acall("add", {"a": 1, "b": 2})
        assert result.output == "3", result

    def call() -> None:
        result = host.call("add", {"a": 1, "b": 2})
        assert result.output == "3", result

    async def sync_call() -> None:
        await asyncio.to_thread(call)

    runs = {"bare": bare, "Host.acall": acall, "Host.call": sync_call}

    async def timed(kind: str, count: int) -> None:
        run = runs[kind]
        spent = time.process_time()
        for _ in range(count):
            start = time.perf_counter_ns()
            await run()
            times[kind].append(time.perf_counter_ns() - start)
        cpu[kind].append((time.process_time() - spent) / count)

    async def rounds() -> None:
        for kind in kinds:  # warm the workers, the client and the host
            await timed(kind, 10)
            times[kind].clear()
            cpu[kind].clear()
        order = list(kinds)
        done = 0
        while done < calls:
            count = min(batch, calls - done)
            for kind in order:
                await timed(kind, count)
            order = order[1:] + order[:1]
            done += count

    asyncio.run(rounds())
    host.close()
    loops[0].call_soon_threadsafe(serving[0].cancel)  # the workers stop polling, and end
    worker_thread.join(60)
    base = statistics.median(times["bare"])
    base_cpu = statistics.median(cpu["bare"])
    print(f"a call through Temporal, {calls} per way, interleaved in batches of {batch}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| way | median | p99 | x bare | CPU per call (client and worker) | x bare |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind in kinds:
        median = statistics.median(times[kind])
        spent = statistics.median(cpu[kind])
        print(
            f"| {kind} | {median / 1e6:.2f} ms | {percentile(times[kind], 0.99) / 1e6:.2f} ms "
            f"| {median / base:.2f} | {spent * 1e3:.2f} ms | {spent / base_cpu:.2f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
