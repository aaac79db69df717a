"""What a validated tool call and schema inference cost, against same-run baselines.

Run it from a checkout (it measures the package in ``src/``, not an installed copy):

    python benchmarks/toolkit_speed.py            # 9 repeats per figure
    python benchmarks/toolkit_speed.py --repeats 21
    python benchmarks/toolkit_speed.py --memory-only --baseline /tmp/old/src

Two tables:

1. Per call: ``Toolkit.execute("add", {"a": 1, "b": 2})`` on the two-integer tool ``add``
   (arguments validated against its schema, the sum normalised into a ToolResult and checked
   against the output schema inferred from ``-> int``), against a bare function that builds
   the same ToolResult from the same dict. Targets: under 10 µs
   per call, and at most 10x the bare call. Variants show where the time goes. Then
   ``Toolkit.execute("total", ...)`` of ``total(items: list[int])`` with 1000 items against
   ``json.loads`` of the same payload, timed in the same rounds (target: at most 1.2x).
2. Definition time: schema inference (``toolnexus._schema.infer``) and the whole ``tool()``
   for ``add`` and for a ten-parameter function, plus the first call of a fresh tool (which
   compiles the validator: inferred schemas are compiled on first use). Target: inference
   for ``add`` under 40 µs.

4. Lists at scale (``--lists-only`` for this table alone): building a ``Toolkit`` of 1,000
   and of 10,000 tools (per tool: linear when the two agree), and a modern client's whole
   ``tools/list`` of 100, 1,000 and 10,000 tools (every page of 100, through a
   ``ServerSession``, each reply encoded as a driver does) against the floor: a server
   that only serves pre-encoded descriptions (``floor_server``: it reads the request's
   id and cursor and writes the same bytes — checked page by page — from descriptions
   encoded once, joined per page). Target: at most 1.5x the floor. The bare floor of
   rounds 1 and 2 (a shorter reply, as text, no request read) is shown beside it.

3. Memory per tool: what defining ``tool(add)`` and ``tool(forecast)`` keeps allocated per
   Tool (``tracemalloc``, 300 tools from one function, so code and annotations are shared),
   and after each tool's first call (which compiles its validator). With ``--baseline
   OLD/src`` the same figures for another checkout come in the same run (a child process
   each; allocation is deterministic, so the two need no interleaving).

Every figure is the median of several repeats of a timed loop; ratios compare figures from
this run only. The per-call rows are timed side by side in CPU time (each round times every
row once) and each ratio is the median of same-round ratios, so a busy machine shifts both
sides alike; the load average is printed. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from toolnexus import ToolContext, Toolkit, ToolResult, tool
from toolnexus._result import STRUCTURED_KEY
from toolnexus._schema import infer

EXECUTE_TARGET_US = 10.0
RATIO_TARGET = 10.0
INFERENCE_TARGET_US = 40.0
TOTAL_RATIO_TARGET = 1.2


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_text(a: int, b: int) -> ToolResult:
    """Add two integers, answering with a ToolResult."""
    return ToolResult.ok(str(a + b))


class Unit(Enum):
    METRIC = "metric"
    IMPERIAL = "imperial"


def forecast(
    city: str,
    days: int = 3,
    unit: Unit = Unit.METRIC,
    hourly: bool = False,
    language: Literal["en", "de", "fr"] = "en",
    latitude: float | None = None,
    longitude: float | None = None,
    fields: list[str] | None = None,
    max_results: Annotated[int, "at most this many rows"] = 10,
    tags: dict[str, str] | None = None,
    ctx: ToolContext | None = None,
) -> str:
    """Forecast the weather for a city.

    Args:
        city: the city's name.
        days: how many days ahead.
        unit: units for temperatures.
        hourly: hourly rows instead of daily ones.
        language: language of the summary.
    """
    return city


def total(items: list[int]) -> int:
    """Add up integers."""
    return sum(items)


def bare_add(args: dict[str, Any]) -> ToolResult:
    total = args["a"] + args["b"]
    return ToolResult.ok(str(total), {STRUCTURED_KEY: {"result": total}})


def bare_add_text(args: dict[str, Any]) -> ToolResult:
    return ToolResult.ok(str(args["a"] + args["b"]))


def median_us(fn: Callable[[], object], repeats: int, number: int) -> float:
    times = timeit.repeat(fn, number=number, repeat=repeats)
    return statistics.median(times) / number * 1e6


def loops_for(fn: Callable[[], object], budget_s: float = 0.05) -> int:
    """A loop count whose run takes about ``budget_s`` (so each repeat is long enough)."""
    number = 1
    while True:
        elapsed = timeit.timeit(fn, number=number)
        if elapsed >= budget_s / 4 or number >= 1 << 22:
            return max(1, int(number * budget_s / max(elapsed, 1e-9)))
        number *= 4


def side_by_side(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """µs per call of every function, round by round: each round times each one once, in
    CPU time (``time.process_time``), so load that comes and goes on a shared machine
    weighs on all rows of a round alike."""
    for fn in fns.values():
        fn()  # warm up (and compile a lazily compiled validator)
    loops = {name: loops_for(fn) for name, fn in fns.items()}
    rounds: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            number = loops[name]
            start = time.process_time()
            for _ in range(number):
                fn()
            rounds[name].append((time.process_time() - start) / number * 1e6)
    return rounds


def same_round_ratio(rounds: dict[str, list[float]], ours: str, base: str) -> float:
    """The median over rounds of ``ours`` / ``base`` timed in the same round."""
    return statistics.median(a / b for a, b in zip(rounds[ours], rounds[base], strict=True))


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def measure(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm up (and compile a lazily compiled validator)
    return median_us(fn, repeats, loops_for(fn))


MEMORY_PROBE = """
import gc, json, sys, tracemalloc
sys.path.insert(0, sys.argv[1])
import toolnexus  # the checkout under test, before toolkit_speed puts its own src first
assert toolnexus.__file__.startswith(sys.argv[1]), (toolnexus.__file__, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from toolkit_speed import add, forecast
from toolnexus import tool
out = {}
for fn, args in ((add, {"a": 1, "b": 2}), (forecast, {"city": "Oslo"})):
    tool(fn)(args)  # warm every cache a first tool fills
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    made = [tool(fn) for _ in range(300)]
    gc.collect()
    defined = tracemalloc.take_snapshot()
    for each in made:
        each(args)
    gc.collect()
    called = tracemalloc.take_snapshot()
    tracemalloc.stop()
    out[fn.__name__] = [
        sum(stat.size_diff for stat in snap.compare_to(start, "filename")) / len(made)
        for snap in (defined, called)
    ]
print(json.dumps(out))
"""


def tool_memory(src: Path) -> dict[str, list[float]]:
    """Bytes per Tool, ``{"add": [defined, after its first call], "forecast": [...]}``,
    for the package in ``src``, measured in a child interpreter."""
    import subprocess

    here = Path(__file__).resolve().parent
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(src.resolve()), str(here)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[float]] = json.loads(done.stdout)
    return result


def memory_table(baseline: Path | None) -> None:
    ours = tool_memory(Path(__file__).resolve().parent.parent / "src")
    old = tool_memory(baseline) if baseline is not None else None
    print("Memory per tool (tracemalloc, 300 tools from one function; bytes per Tool)")
    print(f"  {'what':58} {'bytes':>9}" + (f" {'baseline':>9} {'ratio':>7}" if old else ""))
    for name in ("add", "forecast"):
        for index, when in enumerate(("defined", "after its first call")):
            label = f"tool({name}), {when}"
            line = f"  {label:58} {ours[name][index]:9.0f}"
            if old is not None:
                line += f" {old[name][index]:9.0f} {ours[name][index] / old[name][index]:7.2f}"
            print(line)


def many_tools(count: int) -> list[Any]:
    """``count`` distinct tools, each with a small schema of its own."""
    from toolnexus import Tool

    def run(args: Any, ctx: Any = None) -> ToolResult:
        return ToolResult.ok("x")

    return [
        Tool(
            f"tool_{i}",
            f"Tool number {i}: does one thing.",
            {
                "type": "object",
                "properties": {"q": {"type": "string"}, "n": {"type": "integer", "minimum": i}},
                "required": ["q"],
            },
            run,
        )
        for i in range(count)
    ]


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def list_all(session: Any) -> int:
    """Every page of ``tools/list``, each reply encoded as a driver writes it; the count."""
    params: dict[str, Any] = {"_meta": MODERN_META}
    listed = 0
    while True:
        (sent,) = session.receive(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
        )
        sent.to_bytes()  # the line a driver writes
        result = sent.message["result"]
        listed += len(result["tools"])
        if "nextCursor" not in result:
            return listed
        params = {"_meta": MODERN_META, "cursor": result["nextCursor"]}


def list_floor_bare(encoded: list[str], page: int = 100) -> int:
    """The floor of rounds 1 and 2: the pages from descriptions encoded once, a slice
    joined into a shorter reply (no cursor, no ``_meta``, no hints), kept as text (no
    bytes), and no request read. Shown for comparison with earlier figures."""
    listed = 0
    for start in range(0, len(encoded), page):
        chunk = encoded[start : start + page]
        line = '{"jsonrpc":"2.0","id":1,"result":{"tools":[' + ",".join(chunk) + "]}}"
        listed += len(chunk) if line else 0
    return listed


def floor_server(encoded: list[str], tail: Callable[[int], str], page: int = 100) -> Any:
    """A server that does only what serving pre-encoded descriptions needs: it reads the
    request's id and cursor and writes the reply's bytes — the page's descriptions, encoded
    once, joined, with the members every reply carries (``tail(end)``: ``nextCursor``,
    ``resultType``, ``_meta``, the cache hints; written once per page, as the descriptions
    are) — the same bytes the session writes (``lists_table`` checks each page)."""
    tails = {end: tail(end) for end in range(page, len(encoded) + page, page)}

    def serve(message: dict[str, Any]) -> bytes:
        cursor = message["params"].get("cursor")
        start = 0 if cursor is None else int(cursor[5:])  # "tnx1:<offset>"
        end = start + page
        parts = (
            '{"jsonrpc":"2.0","id":',
            str(message["id"]),
            ',"result":{"tools":[',
            ",".join(encoded[start:end]),
            "]",
            tails[end],
            "}\n",
        )
        return "".join(parts).encode("utf-8")

    return serve


def list_floor(serve: Callable[[dict[str, Any]], bytes], count: int, page: int = 100) -> int:
    """Every page from ``floor_server``, asked for as ``list_all`` asks (the same requests)."""
    params: dict[str, Any] = {"_meta": MODERN_META}
    listed = 0
    for start in range(0, count, page):
        serve({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
        listed += min(page, count - start)
        params = {"_meta": MODERN_META, "cursor": f"tnx1:{start + page}"}
    return listed


def reply_tail(session: Any, count: int, page: int = 100) -> Callable[[int], str]:
    """What follows the tools in a reply of ``session`` for the page ending at ``end``,
    encoded (the floor writes it as it is)."""
    from toolnexus.mcp import Send

    def tail(end: int) -> str:
        params: dict[str, Any] = {"_meta": MODERN_META}
        if end > page:
            params["cursor"] = f"tnx1:{end - page}"
        (sent,) = session.receive(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
        )
        assert isinstance(sent, Send)
        rest = {k: v for k, v in sent.message["result"].items() if k != "tools"}
        return "," + json.dumps(rest, separators=(",", ":"), ensure_ascii=False)[1:]

    return tail


def lists_table(repeats: int) -> None:
    print("4. lists at scale")
    small, large = many_tools(1_000), many_tools(10_000)
    build_small = median_us(lambda: Toolkit(small), repeats, 1) / 1_000
    build_large = median_us(lambda: Toolkit(large), repeats, 1) / 10_000
    print(
        f"  Toolkit build, per tool: 1,000 tools {build_small:.2f} µs, 10,000 tools "
        f"{build_large:.2f} µs ({build_large / build_small:.2f}x: 1.0 is linear)"
    )
    for count, tools in ((100, large[:100]), (1_000, small), (10_000, large)):
        list_row(count, tools, repeats)
    print()


def list_row(count: int, tools: list[Any], repeats: int) -> None:
    """``tools/list`` of ``tools`` against the floors, timed side by side."""
    from toolnexus.mcp import ServerSession

    session = ServerSession(Toolkit(tools))
    assert list_all(session) == count  # the first list describes (and keeps) each page
    encoded = [json.dumps(t.to_mcp(), separators=(",", ":"), ensure_ascii=False) for t in tools]
    serve = floor_server(encoded, reply_tail(session, count))
    same_bytes(session, serve, count)
    rows = {
        "tools/list": lambda: list_all(session),
        "floor": lambda: list_floor(serve, count),
        "bare floor": lambda: list_floor_bare(encoded),
    }
    rounds = side_by_side(rows, repeats)
    ours, floor = statistics.median(rounds["tools/list"]), statistics.median(rounds["floor"])
    print(
        f"  tools/list of {count:,} tools, every page: {ours:.0f} µs; floor {floor:.0f} µs; "
        f"{same_round_ratio(rounds, 'tools/list', 'floor'):.2f}x the floor (target 1.5x); "
        f"{same_round_ratio(rounds, 'tools/list', 'bare floor'):.2f}x the bare floor"
    )


def same_bytes(session: Any, serve: Callable[[dict[str, Any]], bytes], count: int) -> None:
    """Every page the floor writes is the line the session writes for the same request."""
    params: dict[str, Any] = {"_meta": MODERN_META}
    for start in range(0, count, 100):
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
        (sent,) = session.receive(request)
        assert sent.to_bytes() == serve(request), start
        params = {"_meta": MODERN_META, "cursor": f"tnx1:{start + 100}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per figure")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout's src/, for the memory table"
    )
    parser.add_argument("--memory-only", action="store_true", help="only the memory table")
    parser.add_argument("--lists-only", action="store_true", help="only the lists table")
    options = parser.parse_args(argv)
    repeats = options.repeats
    if options.lists_only:
        lists_table(repeats)
        return 0
    if options.memory_only:
        memory_table(options.baseline)
        return 0

    add_tool = tool(add)
    unchecked_tool = dataclasses.replace(add_tool, output_schema=None)
    text_tool = tool(add_text)
    toolkit = Toolkit([add_tool, text_tool])
    args = {"a": 1, "b": 2}
    text_args = '{"a": 1, "b": 2}'
    assert toolkit.execute("add", args) == bare_add(args)
    assert toolkit.execute("add_text", args) == bare_add_text(args)

    per_call: dict[str, Callable[[], object]] = {
        "bare function building the same ToolResult": lambda: bare_add(args),
        "Toolkit.execute('add', dict)  [validated]": lambda: toolkit.execute("add", args),
        "Tool.__call__(dict)": lambda: add_tool(args),
        "Tool.__call__(dict)  [no output schema: not checked]": lambda: unchecked_tool(args),
        "Toolkit.execute('add', JSON text)": lambda: toolkit.execute("add", text_args),
        "bare function building ToolResult.ok(text)": lambda: bare_add_text(args),
        "Toolkit.execute('add_text', dict)  [returns a ToolResult]":
            lambda: toolkit.execute("add_text", args),
        "invalid call (b is a string): error result":
            lambda: toolkit.execute("add", {"a": 1, "b": "2"}),
    }  # fmt: skip
    rounds = side_by_side(per_call, repeats)
    labels = list(per_call)
    bare, execute_label, bare_text, text_label = labels[0], labels[1], labels[5], labels[6]
    print(
        f"Per call (CPU time, median of {repeats} rounds timing every row side by side; "
        f"Python {sys.version.split()[0]}; {load()})"
    )
    print(f"  {'what':58} {'µs/call':>9} {'x bare':>7}")
    for label in labels:
        print(
            f"  {label:58} {statistics.median(rounds[label]):9.2f} "
            f"{same_round_ratio(rounds, label, bare):7.2f}"
        )
    execute_us = statistics.median(rounds[execute_label])
    ratio = same_round_ratio(rounds, execute_label, bare)
    text_ratio = same_round_ratio(rounds, text_label, bare_text)
    print(
        f"  target: execute < {EXECUTE_TARGET_US:.0f} µs -> {execute_us:.2f} µs "
        f"{'MET' if execute_us < EXECUTE_TARGET_US else 'MISSED'}; "
        f"<= {RATIO_TARGET:.0f}x bare -> {ratio:.2f}x "
        f"{'MET' if ratio <= RATIO_TARGET else 'MISSED'} "
        f"(ToolResult-returning variant: {text_ratio:.2f}x)"
    )
    print()

    big = Toolkit([tool(total)])
    payload = json.dumps({"items": list(range(1000))})
    arguments = json.loads(payload)
    assert big.execute("total", arguments).output == str(sum(range(1000)))
    rounds = side_by_side(
        {"loads": lambda: json.loads(payload), "total": lambda: big.execute("total", arguments)},
        repeats,
    )
    total_ratio = same_round_ratio(rounds, "total", "loads")
    print(f"Large arrays (CPU time, median of {repeats} rounds side by side)")
    for label, key in (
        ("json.loads of a 1000-integer payload (baseline)", "loads"),
        ("Toolkit.execute('total', 1000 integers)", "total"),
    ):
        print(
            f"  {label:58} {statistics.median(rounds[key]):9.2f} "
            f"{same_round_ratio(rounds, key, 'loads'):7.2f}"
        )
    print(
        f"  target: execute(total) <= {TOTAL_RATIO_TARGET:.1f}x json.loads -> "
        f"{total_ratio:.2f}x {'MET' if total_ratio <= TOTAL_RATIO_TARGET else 'MISSED'}"
    )
    print()

    def first_call() -> None:
        tool(add)({"a": 1, "b": 2})

    definition = [
        ("infer(add)  [schema inference]", measure(lambda: infer(add), repeats)),
        ("tool(add)  [inference + Tool]", measure(lambda: tool(add), repeats)),
        ("tool(add) and its first call  [+ validator compile]", measure(first_call, repeats)),
        ("infer(forecast)  [ten parameters]", measure(lambda: infer(forecast), repeats)),
        ("tool(forecast)  [ten parameters]", measure(lambda: tool(forecast), repeats)),
    ]
    print(f"Definition time (median of {repeats} repeats)")
    print(f"  {'what':58} {'µs':>9}")
    for label, value in definition:
        print(f"  {label:58} {value:9.2f}")
    inference_us = definition[0][1]
    print(
        f"  target: inference for add < {INFERENCE_TARGET_US:.0f} µs -> {inference_us:.2f} µs "
        f"{'MET' if inference_us < INFERENCE_TARGET_US else 'MISSED'} "
        f"(whole tool(add): {definition[1][1]:.2f} µs)"
    )
    print()
    lists_table(repeats)
    memory_table(options.baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
