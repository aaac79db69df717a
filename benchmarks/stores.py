"""What one consume costs in each answer store: memory, sqlite, Postgres and Redis, one run.

Run it from a checkout, with the stores' drivers installed (``pip install -e
'.[test,stores-test]'``) and real servers to talk to::

    python tests/store_servers.py start /tmp/servers && . /tmp/servers/env.sh
    python benchmarks/stores.py                       # 3000 consumes per store
    python benchmarks/stores.py --consumes 600 --postgres postgresql://... --redis redis://...

The servers' URLs come from ``--postgres`` / ``--redis``, else TOOLNEXUS_TEST_POSTGRES_URL /
TOOLNEXUS_TEST_REDIS_URL; a store without one is left out of the table (and says so).

One table: the latency of ``consume`` (one call, measured by ``perf_counter_ns``) for a new
key (the first use of an answer: a write) and for a used key (a replay: refused), as median
and 99th percentile, and each median's ratio to the memory store's, measured in the same
run. The stores take turns in small batches (interleaved, in rotating order), so a busy
machine shifts them alike. What the figures include: the driver, the pool, the round trip
to a server on 127.0.0.1, and the server's own durable write (PostgreSQL commits with
``synchronous_commit`` on; the test Redis appends every write with ``appendfsync always``,
as a store that must not forget should). Nothing here asserts: it prints numbers to read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from toolnexus.stores import AnswerStore, open_store

FAR = 4e9


def percentile(values: list[int], fraction: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--consumes", type=int, default=3000, help="per store and kind")
    parser.add_argument("--batch", type=int, default=50, help="consumes per turn")
    parser.add_argument("--postgres", default=os.environ.get("TOOLNEXUS_TEST_POSTGRES_URL"))
    parser.add_argument("--redis", default=os.environ.get("TOOLNEXUS_TEST_REDIS_URL"))
    options = parser.parse_args()
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
    for store in stores.values():
        closer = getattr(store, "close", None)
        if closer is not None:
            closer()

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
    for name in left_out:
        print(f"| {name} | (no URL: --{name} or TOOLNEXUS_TEST_{name.upper()}_URL) | | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
