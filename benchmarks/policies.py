"""What the policies cost per call, and what tracing costs — measured in the same run.

Run: ``python benchmarks/policies.py [--quick] [--baseline OLD_CHECKOUT/src] [--pin N]``.
Prints:

1. ``Host.call`` with no middleware, this checkout against ``--baseline`` (an older
   checkout's ``src``): each side in a child interpreter of its own, their rounds
   alternated (one round of ours, one of theirs), so a neighbour's load hits both alike;
   the ratio is the median of per-round ratios, of wall time and of the child's CPU time
   (its threads' — steadier on a busy machine). Both children are pinned to one CPU
   (``--pin N``, 0 by default): where a call's two threads land otherwise moves a
   ``Host.call`` between about 25 and 38 us on a 2-core machine, whatever the code. Target:
   at most 1.05.
2. ``Host.call`` through one policy (this process pinned as in 1.) — each built-in, a plain
   pass-through function and an async one — against no middleware, in short interleaved
   rounds: microseconds per call and the ratio. Each policy is set where it acts but lets
   the call through (a rate limit far above the call rate, a cache that hits, an approval
   rule that does not match ...).
3. Tracing: ``tracing=False``; the default with the OpenTelemetry API imported but no
   provider (tracing off); with the SDK's provider and a span processor that drops every
   span (tracing on: what the spans cost before any exporter); and the floor: the SDK's
   own span with the same attributes around the untraced call. The last line is what
   tracing adds over what that bare span adds (target: at most 1.5x). Needs
   ``opentelemetry-sdk`` (the ``otel-test`` extra) for the last rows.

Nothing here asserts: read the numbers with the load they were taken under.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolnexus import Host, Toolkit, ToolResult, tool
from toolnexus.policies import (
    AsyncNext,
    Next,
    ToolCall,
    cache,
    call_limit,
    hooks,
    rate_limit,
    redact,
    require_approval,
    retry,
)

QUICK = "--quick" in sys.argv
ROUNDS = 8 if QUICK else 30
CALLS = 300 if QUICK else 1_000
ARGS = {"a": 1, "b": 2}
PIN = int(sys.argv[sys.argv.index("--pin") + 1]) if "--pin" in sys.argv else 0


@tool(read_only=True, idempotent=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLKIT = Toolkit([add])


def pass_through(call: ToolCall, call_next: Next) -> ToolResult:
    return call_next(call)


async def async_pass_through(call: ToolCall, call_next: AsyncNext) -> ToolResult:
    return await call_next(call)


# Hand-written equivalents, the floor each built-in is read against (issue 37: a built-in
# costs at most 2x its equivalent plus a pass-through's cost).


def counter_of(limit: int) -> Callable[[ToolCall, Next], ToolResult]:
    """call_limit(per="tool") by hand: a dict of counts under a lock."""
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def counter(call: ToolCall, call_next: Next) -> ToolResult:
        with lock:
            used = counts.get(call.name, 0)
            if used >= limit:
                return ToolResult.error("call limit reached")
            counts[call.name] = used + 1
        return call_next(call)

    return counter


def bucket_of(per_second: float, burst: int) -> Callable[[ToolCall, Next], ToolResult]:
    """rate_limit(wait=False) by hand: one token bucket, refilled as time passes."""
    state = [float(burst), time.monotonic()]
    lock = threading.Lock()

    def bucket(call: ToolCall, call_next: Next) -> ToolResult:
        with lock:
            now = time.monotonic()
            tokens = min(float(burst), state[0] + (now - state[1]) * per_second)
            if tokens < 1:
                return ToolResult.error("rate limited")
            state[0], state[1] = tokens - 1, now
        return call_next(call)

    return bucket


def memo_of(host: Host) -> Callable[[], ToolResult]:
    """cache() by hand, in front of the host: a dict keyed on the sorted JSON arguments."""
    memo: dict[tuple[str, str], ToolResult] = {}

    def call() -> ToolResult:
        key = ("add", json.dumps(ARGS, sort_keys=True))
        found = memo.get(key)
        if found is None:
            found = memo[key] = host.call("add", ARGS)
        return found

    return call


def table(title: str, rows: list[tuple[str, ...]]) -> None:
    print(f"\n{title}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
        if index == 0:
            print("  " + "  ".join("-" * width for width in widths))


Samples = dict[str, list[float]]


def per_call(variants: dict[str, Callable[[], Any]]) -> tuple[Samples, Samples]:
    """Wall and CPU microseconds per call of each variant (CPU: every thread of the
    process, so a worker's share counts), one sample per round, rounds interleaved."""
    wall: Samples = {name: [] for name in variants}
    cpu: Samples = {name: [] for name in variants}
    for fn in variants.values():
        for _ in range(100):
            fn()
    for _ in range(ROUNDS):
        for name, fn in variants.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(CALLS):
                fn()
            cpu[name].append((time.process_time() - start_cpu) / CALLS * 1e6)
            wall[name].append((time.perf_counter() - start) / CALLS * 1e6)
    return wall, cpu


def ratio(samples: Samples, name: str, base: str) -> float:
    return statistics.median(a / b for a, b in zip(samples[name], samples[base], strict=True))


def report(title: str, samples: Samples, base: str, cpu: Samples | None = None) -> None:
    head = ("variant", "us/call", f"x {base}")
    rows = [(*head, "CPU us/call", "CPU x") if cpu is not None else head]
    for name, values in samples.items():
        row = (name, f"{statistics.median(values):.1f}", f"{ratio(samples, name, base):.2f}")
        if cpu is not None:
            row += (f"{statistics.median(cpu[name]):.1f}", f"{ratio(cpu, name, base):.2f}")
        rows.append(row)
    table(title, rows)


# --------------------------------------------------------------------------- 1


CHILD = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {int(sys.argv[3])})  # its threads too: no core-to-core wake-ups
from toolnexus import Host, Toolkit, tool

@tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

host = Host(Toolkit([add]))
args = {"a": 1, "b": 2}
calls = int(sys.argv[2])
for _ in range(200):
    host.call("add", args)
print("ready", flush=True)
for line in sys.stdin:
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        host.call("add", args)
    cpu = (time.process_time() - start_cpu) / calls * 1e6
    print((time.perf_counter() - start) / calls * 1e6, cpu, flush=True)
"""


def against_baseline(baseline: str) -> None:
    ours = str(Path(__file__).resolve().parent.parent / "src")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    children = {
        name: subprocess.Popen(
            [sys.executable, "-c", CHILD, src, str(CALLS), str(PIN)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name, src in (("this checkout", ours), ("baseline", baseline))
    }
    samples: Samples = {name: [] for name in children}
    cpu: Samples = {name: [] for name in children}
    try:
        for child in children.values():
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for _ in range(ROUNDS):
            for name, child in children.items():
                assert child.stdin is not None and child.stdout is not None
                child.stdin.write("go\n")
                child.stdin.flush()
                wall, used = child.stdout.readline().split()
                samples[name].append(float(wall))
                cpu[name].append(float(used))
    finally:
        for child in children.values():
            if child.stdin is not None:
                child.stdin.close()
            child.wait(30)
    report(
        f"1. Host.call, no middleware: this checkout against {baseline} (target <= 1.05)",
        samples,
        "baseline",
        cpu,
    )


# --------------------------------------------------------------------------- 2


def each_policy() -> None:
    plain = Host(TOOLKIT)
    hosts = {
        "no middleware": plain,
        "a pass-through function": Host(TOOLKIT, middleware=[pass_through]),
        "an async pass-through (on a private loop)": Host(TOOLKIT, middleware=[async_pass_through]),
        "retry (an idempotent tool that works)": Host(TOOLKIT, middleware=[retry()]),
        "rate_limit (far above the call rate)": Host(
            TOOLKIT, middleware=[rate_limit(1e9, burst=1_000_000)]
        ),
        "cache (a hit)": Host(TOOLKIT, middleware=[cache()]),
        "call_limit by hand (a counter)": Host(TOOLKIT, middleware=[counter_of(10**9)]),
        "rate_limit by hand (a token bucket)": Host(
            TOOLKIT, middleware=[bucket_of(1e9, 1_000_000)]
        ),
        "call_limit (per tool, never reached)": Host(
            TOOLKIT, middleware=[call_limit(10**9, per="tool")]
        ),
        "require_approval (a rule that does not match)": Host(
            TOOLKIT, middleware=[require_approval("deploy")]
        ),
        "redact (a field, in structured output)": Host(TOOLKIT, middleware=[redact(["token"])]),
        "hooks (before_tool and after_tool)": Host(
            TOOLKIT, middleware=[hooks(before_tool=lambda e: None, after_tool=lambda e: None)]
        ),
    }
    variants: dict[str, Callable[[], Any]] = {
        name: (lambda h=h: h.call("add", ARGS)) for name, h in hosts.items()
    }
    variants["cache by hand (a memo in front of the host, a hit)"] = memo_of(plain)
    wall, cpu = per_call(variants)
    report("2. Host.call through one policy (sync tool, on a worker)", wall, "no middleware", cpu)
    for host in hosts.values():
        host.close()

    @tool
    async def aadd(a: int, b: int) -> int:
        """Add two integers, asynchronously."""
        return a + b

    async def main() -> Samples:
        toolkit = Toolkit([aadd])
        variants = {
            "no middleware": Host(toolkit),
            "an async pass-through": Host(toolkit, middleware=[async_pass_through]),
            "rate_limit": Host(toolkit, middleware=[rate_limit(1e9, burst=1_000_000)]),
            "call_limit": Host(toolkit, middleware=[call_limit(10**9, per="tool")]),
        }
        found: Samples = {name: [] for name in variants}
        for host in variants.values():
            for _ in range(100):
                await host.acall("aadd", ARGS)
        for _ in range(ROUNDS):
            for name, host in variants.items():
                start = time.perf_counter()
                for _ in range(CALLS):
                    await host.acall("aadd", ARGS)
                found[name].append((time.perf_counter() - start) / CALLS * 1e6)
        for host in variants.values():
            host.close()
        return found

    report(
        "2b. await Host.acall of an async tool through one policy (on the caller's loop)",
        asyncio.run(main()),
        "no middleware",
    )


# --------------------------------------------------------------------------- 3


def tracing() -> None:
    import opentelemetry.trace  # noqa: F401 - the API in use, no provider yet

    off = Host(TOOLKIT, tracing=False)
    auto = Host(TOOLKIT)
    variants: dict[str, Callable[[], Any]] = {
        "tracing=False": lambda: off.call("add", ARGS),
        "API imported, no provider (off)": lambda: auto.call("add", ARGS),
    }
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
    except ImportError:
        print("\n(3. the 'tracing on' row needs opentelemetry-sdk: the otel-test extra)")
    else:

        class Drop(SpanExporter):
            def export(self, spans: Any) -> Any:
                from opentelemetry.sdk.trace.export import SpanExportResult

                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(Drop()))
        on = Host(TOOLKIT, tracing=True)
        tracer = provider.get_tracer("bench")

        def traced() -> Any:
            # The provider for this host only: the others stay untraced in the same run.
            trace._TRACER_PROVIDER = provider  # type: ignore[attr-defined]
            try:
                return on.call("add", ARGS)
            finally:
                trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]

        variants["tracing on (SDK provider, spans dropped)"] = traced
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "add",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": "Add two integers.",
        }

        def bare() -> Any:
            # The floor: the SDK's own span, the same attributes, around the untraced call.
            with tracer.start_as_current_span(
                "execute_tool add", kind=trace.SpanKind.INTERNAL, attributes=attributes
            ) as span:
                result = off.call("add", ARGS)
                span.set_attribute("toolnexus.outcome", "ok")
            return result

        variants["a bare SDK span, same attributes, around the untraced call"] = bare
    wall, cpu = per_call(variants)
    report("3. tracing (Host.call, no middleware)", wall, "tracing=False", cpu)
    on_name = "tracing on (SDK provider, spans dropped)"
    bare_name = "a bare SDK span, same attributes, around the untraced call"
    if on_name in cpu:
        ours = statistics.median(cpu[on_name]) - statistics.median(cpu["tracing=False"])
        floor = statistics.median(cpu[bare_name]) - statistics.median(cpu["tracing=False"])
        print(f"  tracing's CPU cost over a bare SDK span's: {ours / floor:.2f}x (target 1.5x)")


def main() -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()}")
    baseline = ""
    if "--baseline" in sys.argv:
        baseline = sys.argv[sys.argv.index("--baseline") + 1]
    if baseline:
        against_baseline(baseline)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {PIN})  # as the children are (see 1.)
    each_policy()
    tracing()


if __name__ == "__main__":
    main()
