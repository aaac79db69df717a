"""What the host costs and how well its deadlines hold — measured, not promised.

Run: ``python benchmarks/host_overhead.py [--quick] [--repeat N] [--only 1,3,4,4b,5,6,7,8]
[--baseline OLD_CHECKOUT/src]``. ``--repeat`` runs the chosen sections N times; with
``--baseline`` each section also runs, right after ours, in a child interpreter importing
toolnexus from the older ``src`` (its tables are printed with a ``|`` margin). A summary
table ends the run: each key figure's median over the repeats, ours and the baseline's.
Prints these tables:

1. per-call overhead of ``Host.call`` (sync) against ``Toolkit.execute`` called directly and
   against the *bare thread round trip* — hand a job to a waiting worker thread through a
   queue and wait on an Event for its answer, the floor for any deadline that holds against
   a tool that ignores it — all measured in the same run, in short interleaved rounds;
   ratios are medians of per-round ratios, so a busy neighbour slows both sides alike;
2. the same for ``await Host.acall`` against ``await Toolkit.aexecute`` and an asyncio round
   trip to a worker thread;
3. the latency from ``source.cancel()`` to the caller holding its ``cancelled`` result, for a
   tool that stops on its token, one that takes no context and ignores the cancel (answered
   at once), and one that takes a context but ignores it (answered after the cancel grace);
4. how late a timeout result arrives after the deadline (a tool that honours its token) and
   after deadline + grace (a tool that ignores it), next to two floors taken in the same
   trials (a thread's own ``time.sleep`` of the budget, and three bare threads in the
   host's shape: timer, worker, caller) — and 4b. the same while two busy-looping
   processes keep both cores of a 2-core machine busy;
5. ``await Host.acall`` of an async tool with a deadline against ``asyncio.wait_for`` of the
   same tool's coroutine;
6. 1000 concurrent 10 ms sleeping calls (``Host.submit`` all, then wait): calls/s and per-call
   p99, for the default host, the old 8-worker setting and a 40-thread
   ``ThreadPoolExecutor`` (the thread count of the anyio-based peers);
7. the cost of ``import toolnexus; from toolnexus import Host`` (``-X importtime``
   cumulative, fresh interpreters) against ``import dataclasses, threading, json``;
8. the memory a parked call holds (``tracemalloc``, a thousand at once, after a garbage
   collection) against a parked asyncio task: calls awaited with ``acall`` whose async
   tool waits, one suspended on a question (an async ``wait_for`` waiting for its
   answer), and calls queued for a busy worker (``Host.submit``; a worker's own thread
   stack is not counted).

Targets on the reference machine (2 cores): a sync host call at most 1.5x the bare round
trip; cancel-to-result under 5 ms for a tool that honours its token (one that ignores it is
answered after ``cancel_grace_ms``, 20 ms by default); timeout lateness at most 20 ms at p99
(with both cores busy, no better than the floors of table 4b: the OS scheduler's tail);
acall with a deadline at most 1.5x ``asyncio.wait_for``; at least 2,800 calls/s in table 6
with the default settings; importing ``Host`` at most 1.5x the baseline; a parked call at
most 3 KiB. Nothing here asserts: other engineers share the
machine, so read the numbers with the load they were taken under.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import json
import logging
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolnexus import (
    Answer,
    CancellationTokenSource,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)

try:
    from toolnexus._host import Host
except ModuleNotFoundError:  # a checkout from before the modules were private (--baseline)
    from toolnexus.host import Host  # type: ignore[no-redef]

logging.getLogger("toolnexus").setLevel(logging.ERROR)  # abandoned workers are expected here
QUICK = "--quick" in sys.argv
ROUNDS = 8 if QUICK else 40
CALLS = 300 if QUICK else 500
TRIALS = 40 if QUICK else 200


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def aadd(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    return a + b


ARGS = {"a": 1, "b": 2}
TOOLKIT = Toolkit([add, aadd])


# --------------------------------------------------------------------------- the floor


class BarePool:
    """The baseline: workers blocked on a queue; the caller waits on an Event."""

    def __init__(self, size: int = 8) -> None:
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(size):
            threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self.queue.get()
            job[1] = job[2]()
            job[0]()

    def run(self, fn: Callable[[], Any]) -> Any:
        done = threading.Event()
        job = [done.set, None, fn]
        self.queue.put(job)
        done.wait(5)
        return job[1]

    async def arun(self, fn: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def finish() -> None:
            loop.call_soon_threadsafe(future.set_result, None)

        job = [finish, None, fn]
        self.queue.put(job)
        await future
        return job[1]


def noop() -> None:
    return None


def per_call(variants: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    """Microseconds per call of each variant, one sample per round, rounds interleaved
    (short rounds, so a neighbour's burst of load hits every variant alike)."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():
        for _ in range(50):
            fn()
    for _ in range(ROUNDS):
        for name, fn in variants.items():
            start = time.perf_counter()
            for _ in range(CALLS):
                fn()
            samples[name].append((time.perf_counter() - start) / CALLS * 1e6)
    return samples


def aper_call(variants: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    async def main() -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for fn in variants.values():
            for _ in range(50):
                await fn()
        for _ in range(ROUNDS):
            for name, fn in variants.items():
                start = time.perf_counter()
                for _ in range(CALLS):
                    await fn()
                samples[name].append((time.perf_counter() - start) / CALLS * 1e6)
        return samples

    return asyncio.run(main())


def ratio(samples: dict[str, list[float]], name: str, base: str) -> float:
    """Median over rounds of the per-round ratio: both sides measured moments apart."""
    return statistics.median(a / b for a, b in zip(samples[name], samples[base], strict=True))


def table(title: str, rows: list[tuple[str, ...]]) -> None:
    print(f"\n{title}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
        if index == 0:
            print("  " + "  ".join("-" * width for width in widths))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- 1 + 2


def overhead() -> dict[str, float]:
    bare = BarePool()
    host = Host(TOOLKIT)
    raw = per_call(
        {
            "Toolkit.execute (no thread)": lambda: TOOLKIT.execute("add", ARGS),
            "bare round trip (no-op job)": lambda: bare.run(noop),
            "bare round trip running execute": lambda: bare.run(
                lambda: TOOLKIT.execute("add", ARGS)
            ),
            "Host.call": lambda: host.call("add", ARGS),
            "Host.call, timeout_ms=5000": lambda: host.call("add", ARGS, timeout_ms=5000),
        }
    )
    floor, floor_exec = "bare round trip (no-op job)", "bare round trip running execute"
    execute = "Toolkit.execute (no thread)"
    rows = [("variant", "us/call", "x execute", "x bare trip", "x bare trip+execute")]
    for name, values in raw.items():
        rows.append(
            (
                name,
                f"{statistics.median(values):.1f}",
                f"{ratio(raw, name, execute):.2f}",
                f"{ratio(raw, name, floor):.2f}",
                f"{ratio(raw, name, floor_exec):.2f}",
            )
        )
    table(
        "1. sync call overhead (us: median over rounds; ratios: median of per-round ratios)", rows
    )

    async def aexec() -> Any:
        return await TOOLKIT.aexecute("add", ARGS)

    async def aexec_async() -> Any:
        return await TOOLKIT.aexecute("aadd", ARGS)

    async def abare() -> Any:
        return await bare.arun(noop)

    async def abare_exec() -> Any:
        return await bare.arun(lambda: TOOLKIT.execute("add", ARGS))

    async def acall_sync() -> Any:
        return await host.acall("add", ARGS)

    async def acall_async() -> Any:
        return await host.acall("aadd", ARGS)

    async def acall_async_timeout() -> Any:
        return await host.acall("aadd", ARGS, timeout_ms=5000)

    araw = aper_call(
        {
            "await Toolkit.aexecute, sync tool": aexec,
            "await Toolkit.aexecute, async tool": aexec_async,
            "asyncio round trip to a worker (no-op)": abare,
            "asyncio round trip running execute": abare_exec,
            "await Host.acall, sync tool (worker)": acall_sync,
            "await Host.acall, async tool (task)": acall_async,
            "await Host.acall, async tool, timeout_ms": acall_async_timeout,
        }
    )
    rows = [("variant", "us/call", "x its aexecute", "x asyncio round trip")]
    for name, values in araw.items():
        base = (
            "await Toolkit.aexecute, async tool"
            if "async tool" in name
            else "await Toolkit.aexecute, sync tool"
        )
        rows.append(
            (
                name,
                f"{statistics.median(values):.1f}",
                f"{ratio(araw, name, base):.2f}",
                f"{ratio(araw, name, 'asyncio round trip to a worker (no-op)'):.2f}",
            )
        )
    table("2. async call overhead (as above)", rows)
    host.close()
    for variant in ("Host.call", "Host.call, timeout_ms=5000"):
        print(
            f"\n  {variant} / bare round trip = {ratio(raw, variant, floor):.2f} "
            f"(target <= 1.5); / bare round trip running execute = "
            f"{ratio(raw, variant, floor_exec):.2f}",
            end="",
        )
    print()
    return {
        "1. Host.call x bare round trip (<= 1.5)": ratio(raw, "Host.call", floor),
        "2. acall, sync tool x asyncio round trip": ratio(
            araw, "await Host.acall, sync tool (worker)", "asyncio round trip to a worker (no-op)"
        ),
    }


# --------------------------------------------------------------------------- 3


def cancel_latency() -> dict[str, float]:
    started = threading.Event()
    release = threading.Event()

    @tool
    def stubborn() -> str:
        """Ignores its token until released."""
        started.set()
        release.wait(10)
        return "late"

    @tool
    def cooperative(ctx: ToolContext) -> str:
        """Stops when cancelled."""
        started.set()
        ctx.cancellation_token.wait(10)
        return "cancelled after 1 step"

    @tool
    def deaf(ctx: ToolContext) -> str:
        """Takes a context (so it gets the cancel grace) but ignores it until released."""
        started.set()
        release.wait(10)
        return "late"

    rows = [("tool", "p50 ms", "p99 ms", "max ms")]
    figures: dict[str, float] = {}
    with Host(Toolkit([stubborn, cooperative, deaf]), max_stuck=10_000) as host:
        for name in ("cooperative", "stubborn", "deaf"):
            latencies = []
            for _ in range(TRIALS):
                started.clear()
                release.clear()
                source = CancellationTokenSource()
                box: list[float] = []

                def caller(
                    name: str = name,
                    source: CancellationTokenSource = source,
                    box: list[float] = box,
                ) -> None:
                    result = host.call(name, {}, cancellation_token=source.token)
                    box.append(time.perf_counter())
                    assert result.output.startswith("cancelled"), result

                thread = threading.Thread(target=caller)
                thread.start()
                started.wait(10)
                t0 = time.perf_counter()
                source.cancel()
                thread.join()
                latencies.append((box[0] - t0) * 1000)
                release.set()
            rows.append(
                (
                    name,
                    f"{percentile(latencies, 0.5):.3f}",
                    f"{percentile(latencies, 0.99):.3f}",
                    f"{max(latencies):.3f}",
                )
            )
            figures[f"3. cancel to result p99 ms, {name}"] = percentile(latencies, 0.99)
    table(
        "3. cancel() to the caller holding a 'cancelled' result (target < 5 ms; "
        "'stubborn' takes no context and ignores the cancel, 'deaf' takes one and ignores "
        "it: it gets the 20 ms cancel grace)",
        rows,
    )
    return figures


# --------------------------------------------------------------------------- 4


@contextmanager
def both_cores_busy() -> Iterator[None]:
    """Two busy-looping child processes for the duration (ended by their PIDs)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


class ThreeThreads:
    """The floor of a deadline that reaches a cooperative tool: bare threads in the host's
    shape — a timer thread sleeps until the deadline and sets the tool's token, a worker
    waiting on that token returns, and the caller waiting on the worker wakes."""

    def __init__(self) -> None:
        self.timers: queue.SimpleQueue[tuple[float, threading.Event]] = queue.SimpleQueue()
        self.jobs: queue.SimpleQueue[tuple[threading.Event, queue.SimpleQueue[None]]] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._timer, daemon=True).start()
        threading.Thread(target=self._worker, daemon=True).start()

    def _timer(self) -> None:
        while True:
            deadline, token = self.timers.get()
            time.sleep(max(0.0, deadline - time.monotonic()))
            token.set()

    def _worker(self) -> None:
        while True:
            token, done = self.jobs.get()
            token.wait(10)
            done.put(None)

    def run(self, seconds: float) -> None:
        token = threading.Event()
        done: queue.SimpleQueue[None] = queue.SimpleQueue()
        self.timers.put((time.monotonic() + seconds, token))
        self.jobs.put((token, done))
        done.get()


def deadline_accuracy(title: str = "4.") -> dict[str, float]:
    """Lateness of timeout results, next to two floors measured in the same trials: a
    thread's own ``time.sleep`` of the budget, and :class:`ThreeThreads` (what the OS
    scheduler alone costs a deadline that crosses three threads)."""
    release = threading.Event()

    @tool
    def stubborn() -> str:
        """Ignores its token until released."""
        release.wait(10)
        return "late"

    @tool
    def cooperative(ctx: ToolContext) -> str:
        """Stops when cancelled."""
        ctx.cancellation_token.wait(10)
        return "cancelled"

    @tool
    async def acooperative() -> str:
        """Awaits until the task is cancelled."""
        await asyncio.sleep(10)
        return "never"

    budget, grace = 20, 30
    three = ThreeThreads()
    loop = asyncio.new_event_loop()
    host = Host(Toolkit([stubborn, cooperative, acooperative]), grace_ms=grace, max_stuck=10_000)

    def call(name: str) -> None:
        release.clear()
        result = host.call(name, {}, timeout_ms=budget)
        assert result.output.startswith(f"timed out after {budget} ms"), result
        release.set()

    def acall() -> None:
        result = loop.run_until_complete(host.acall("acooperative", {}, timeout_ms=budget))
        assert result.output.startswith(f"timed out after {budget} ms"), result

    # (label, lateness measured after, in ms, and what to run): each trial runs each once.
    variants: list[tuple[str, int, Callable[[], object]]] = [
        ("floor: time.sleep(budget), one thread", budget, lambda: time.sleep(budget / 1000)),
        ("floor: three bare threads", budget, lambda: three.run(budget / 1000)),
        ("cooperative (call)", budget, lambda: call("cooperative")),
        ("stubborn (call)", budget + grace, lambda: call("stubborn")),
        ("acooperative (acall)", budget, acall),
    ]
    late: dict[str, list[float]] = {label: [] for label, _, _ in variants}
    try:
        loop.run_until_complete(host.acall("acooperative", {}, timeout_ms=budget))  # warm up
        for _ in range(TRIALS // 2):
            for label, after, run in variants:
                start = time.perf_counter()
                run()
                late[label].append((time.perf_counter() - start) * 1000 - after)
    finally:
        release.set()
        host.close()
        loop.close()
    figures: dict[str, float] = {}
    rows = [("tool", "lateness measured after", "p50 ms", "p99 ms", "max ms")]
    for label, after, _ in variants:
        values = late[label]
        rows.append(
            (
                label,
                "deadline" if after == budget else "deadline + grace",
                f"{percentile(values, 0.5):.2f}",
                f"{percentile(values, 0.99):.2f}",
                f"{max(values):.2f}",
            )
        )
        figures[f"{title} lateness p99 ms, {label}"] = percentile(values, 0.99)
    table(
        f"{title} timeout lateness, timeout_ms={budget}, grace_ms={grace}, trials interleaved "
        "(target p99 <= 20 ms; the floors are what the OS scheduler alone costs)",
        rows,
    )
    return figures


# --------------------------------------------------------------------------- 5


def acall_against_wait_for() -> dict[str, float]:
    host = Host(TOOLKIT)

    async def wait_for() -> Any:
        return await asyncio.wait_for(aadd.acall(ARGS), 5)

    async def acall_deadline() -> Any:
        return await host.acall("aadd", ARGS, timeout_ms=5000)

    async def acall_plain() -> Any:
        return await host.acall("aadd", ARGS)

    raw = aper_call(
        {
            "asyncio.wait_for(tool.acall(args), 5)": wait_for,
            "await Host.acall(async tool, timeout_ms=5000)": acall_deadline,
            "await Host.acall(async tool)": acall_plain,
        }
    )
    base = "asyncio.wait_for(tool.acall(args), 5)"
    rows = [("variant", "us/call", "x wait_for")]
    for name, values in raw.items():
        rows.append((name, f"{statistics.median(values):.1f}", f"{ratio(raw, name, base):.2f}"))
    table("5. acall of an async tool with a deadline vs asyncio.wait_for (target <= 1.5x)", rows)
    host.close()
    return {
        "5. acall(async tool, timeout_ms) x asyncio.wait_for (<= 1.5)": ratio(
            raw, "await Host.acall(async tool, timeout_ms=5000)", base
        )
    }


# --------------------------------------------------------------------------- 6


@tool
def nap10() -> str:
    """Sleeps 10 ms (an I/O-bound tool)."""
    time.sleep(0.01)
    return "ok"


def concurrency() -> dict[str, float]:
    count = 1000
    toolkit = Toolkit([nap10])

    def via_host(host: Host) -> tuple[float, list[float]]:
        began = time.perf_counter()
        submitted = []
        for _ in range(count):
            submitted.append((time.perf_counter(), host.submit("nap10", {})))
        latencies = []
        for at, call in submitted:
            call.result(timeout=60)
            latencies.append(time.perf_counter() - at)
        return count / (time.perf_counter() - began), latencies

    def via_executor(pool: concurrent.futures.ThreadPoolExecutor) -> tuple[float, list[float]]:
        began = time.perf_counter()
        submitted = [(time.perf_counter(), pool.submit(nap10, {})) for _ in range(count)]
        latencies = []
        for at, future in submitted:
            future.result(timeout=60)
            latencies.append(time.perf_counter() - at)
        return count / (time.perf_counter() - began), latencies

    default, old = Host(toolkit), Host(toolkit, max_workers=8)
    executor = concurrent.futures.ThreadPoolExecutor(40)
    variants: dict[str, Callable[[], tuple[float, list[float]]]] = {
        "Host() defaults (elastic, up to 64 workers)": lambda: via_host(default),
        "Host(max_workers=8) (the old default)": lambda: via_host(old),
        "ThreadPoolExecutor(40), tool called directly": lambda: via_executor(executor),
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    p99s: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():
        fn()  # warm-up: the elastic pool grows here
    for _ in range(3 if QUICK else 5):
        for name, fn in variants.items():
            rate, latencies = fn()
            rates[name].append(rate)
            p99s[name].append(percentile(latencies, 0.99) * 1000)
    base = "ThreadPoolExecutor(40), tool called directly"
    rows = [("variant", "calls/s", "p99 ms", "x executor(40) rate")]
    for name in variants:
        rows.append(
            (
                name,
                f"{statistics.median(rates[name]):.0f}",
                f"{statistics.median(p99s[name]):.0f}",
                f"{statistics.median(rates[name]) / statistics.median(rates[base]):.2f}",
            )
        )
    table(f"6. {count} concurrent 10 ms sleeping calls (target >= 2,800 calls/s, defaults)", rows)
    default.close()
    old.close()
    executor.shutdown()
    name = "Host() defaults (elastic, up to 64 workers)"
    return {
        "6. 1000 x 10 ms calls/s, defaults (>= 2800)": statistics.median(rates[name]),
        "6. ... x executor(40) rate": statistics.median(rates[name])
        / statistics.median(rates[base]),
    }


# --------------------------------------------------------------------------- 7


def import_cost() -> dict[str, float]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import import_cost as measure  # the same -X importtime reading as import_cost.py

    measure.ensure_bytecode()
    runs = 7 if QUICK else 15
    cases = {
        "import dataclasses, threading, json": "import dataclasses, threading, json",
        "import toolnexus": "import toolnexus",
        "import toolnexus; from toolnexus import Host": (
            "import toolnexus; from toolnexus import Host"
        ),
        "... and asyncio too (what Host imported before)": (
            "import toolnexus; from toolnexus import Host; import asyncio"
        ),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, statement in cases.items():
            samples[name].append(measure.importtime_us(statement))
    base = statistics.median(samples["import dataclasses, threading, json"])
    rows = [("statement", "us (median)", "x dataclasses+threading+json")]
    for name in cases:
        value = statistics.median(samples[name])
        rows.append((name, f"{value:.0f}", f"{value / base:.2f}"))
    asyncio_loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, toolnexus; from toolnexus import Host; print('asyncio' in sys.modules)",
        ],
        env=measure.child_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    table(
        f"7. importing Host, -X importtime cumulative, {runs} fresh interpreters "
        f"(target <= 1.5x; asyncio loaded by it: {asyncio_loaded})",
        rows,
    )
    host_import = statistics.median(samples["import toolnexus; from toolnexus import Host"])
    return {"7. import Host x dataclasses+threading+json (<= 1.5)": host_import / base}


# --------------------------------------------------------------------------- 8


def parked_memory() -> dict[str, float]:
    count = 500 if QUICK else 2000

    async def measure(start: Callable[[], Any], gate: asyncio.Event) -> float:
        """Bytes held per parked call: ``count`` of them started, then a collection."""
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tasks = [asyncio.ensure_future(start()) for _ in range(count)]
        for _ in range(5):  # every task reaches its first await
            await asyncio.sleep(0)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        gate.set()
        await asyncio.gather(*tasks)
        gate.clear()
        return held / count

    async def main() -> dict[str, list[float]]:
        gate = asyncio.Event()

        @tool
        async def park() -> str:
            """Waits for the gate."""
            await gate.wait()
            return "ok"

        @tool
        async def park_ctx(ctx: ToolContext) -> str:
            """Waits for the gate; takes a context."""
            await gate.wait()
            return "ok"

        @tool
        def asks(ctx: ToolContext) -> ToolResult:
            """Asks a question first."""
            if ctx.answer is None:
                return ToolResult.pending(Request("approval", "Go on?"))
            return ToolResult.ok("went on")

        async def answer(request: Request) -> Answer:
            await gate.wait()
            return Answer.accept(request)

        async def bare() -> None:
            await gate.wait()

        host = Host(Toolkit([park, park_ctx, asks]), wait_for=answer)
        source = CancellationTokenSource()

        def progress(done: float, total: float | None, message: str | None) -> None:
            return None

        shapes: dict[str, Callable[[], Any]] = {
            "a parked asyncio task (the baseline)": bare,
            "await acall(async tool)": lambda: host.acall("park", {}),
            "await acall(async tool, timeout_ms)": lambda: host.acall(
                "park", {}, timeout_ms=60_000
            ),
            "... a tool taking ctx; timeout_ms, token, progress": lambda: host.acall(
                "park_ctx",
                {},
                timeout_ms=60_000,
                cancellation_token=source.token,
                progress=progress,
            ),
            "suspended on a question (async wait_for waits)": lambda: host.acall("asks", {}),
        }
        await host.acall("park", {}, timeout_ms=60_000)  # warm up: lazy imports, the timer
        samples: dict[str, list[float]] = {name: [] for name in shapes}
        for _ in range(3):
            for name, start in shapes.items():
                samples[name].append(await measure(start, gate))
        host.close()
        return samples

    samples = asyncio.run(main())

    release = threading.Event()

    @tool
    def block() -> str:
        """Holds the only worker."""
        release.wait(60)
        return "done"

    with Host(Toolkit([block, add]), max_workers=1) as host:
        blocker = host.submit("block", {})
        queued: list[float] = []
        for _ in range(3):
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            calls = [host.submit("add", ARGS) for _ in range(count)]
            gc.collect()
            queued.append((tracemalloc.get_traced_memory()[0] - before) / count)
            tracemalloc.stop()
            for call in calls:
                call.cancel()
        release.set()
        blocker.result(timeout=10)
    samples["Host.submit, queued for a busy worker"] = queued

    base = statistics.median(samples["a parked asyncio task (the baseline)"])
    rows = [("parked call", "bytes", "x parked task", "bytes over the task")]
    for name, values in samples.items():
        value = statistics.median(values)
        rows.append((name, f"{value:.0f}", f"{value / base:.2f}", f"{value - base:.0f}"))
    table(f"8. memory held per parked call, {count} at once (target <= 3 KiB)", rows)
    figure = statistics.median
    return {
        "8. bytes, await acall(async tool) parked": figure(samples["await acall(async tool)"]),
        "8. bytes, acall suspended on a question": figure(
            samples["suspended on a question (async wait_for waits)"]
        ),
        "8. bytes, Host.submit queued": figure(samples["Host.submit, queued for a busy worker"]),
    }


# --------------------------------------------------------------------------- the run


def busy_deadlines() -> dict[str, float]:
    with both_cores_busy():
        return deadline_accuracy("4b. (both cores busy)")


SECTIONS: dict[str, Callable[[], dict[str, float]]] = {
    "1": overhead,
    "3": cancel_latency,
    "4": deadline_accuracy,
    "4b": busy_deadlines,
    "5": acall_against_wait_for,
    "6": concurrency,
    "7": import_cost,
    "8": parked_memory,
}


def option(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def baseline_figures(src: str, section: str) -> dict[str, float]:
    """Run one section in a child interpreter importing toolnexus from ``src`` (an older
    checkout's), interleaved with ours; its tables go to our output, labelled."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    args = [sys.executable, __file__, "--child", section] + (["--quick"] if QUICK else [])
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(f"\n(baseline section {section} failed: {done.stderr.strip()[-300:]})")
        return {}
    print(f"\n[baseline {src}]")
    print("\n".join("  | " + text for text in lines[:-1] if text))
    figures: dict[str, float] = json.loads(lines[-1])
    return figures


def main() -> None:
    if "--child" in sys.argv:
        print(json.dumps(SECTIONS[option("--child", "5")]()))
        return
    repeat = int(option("--repeat", "1"))
    baseline = option("--baseline", "")
    chosen = option("--only", ",".join(SECTIONS)).split(",")
    print(
        f"python {sys.version.split()[0]}, {ROUNDS} rounds x {CALLS} calls, "
        f"{TRIALS} trials, {os.cpu_count()} cores, {repeat} repeat(s)"
        + (f", baseline {baseline}" if baseline else "")
    )
    ours: dict[str, list[float]] = {}
    theirs: dict[str, list[float]] = {}
    for _ in range(repeat):
        for section in chosen:
            for key, value in SECTIONS[section]().items():
                ours.setdefault(key, []).append(value)
            if baseline:
                for key, value in baseline_figures(baseline, section).items():
                    theirs.setdefault(key, []).append(value)
    rows = [("figure (median of repeats)", "this checkout", "baseline" if baseline else "")]
    for key, values in ours.items():
        old = theirs.get(key)
        rows.append(
            (
                key,
                f"{statistics.median(values):.2f}",
                f"{statistics.median(old):.2f}" if old else "-",
            )
        )
    table(f"summary over {repeat} repeat(s) (sections interleaved with the baseline's)", rows)


if __name__ == "__main__":
    main()
