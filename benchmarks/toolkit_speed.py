"""What a validated tool call and schema inference cost, against same-run baselines.

Run it from a checkout (it measures the package in ``src/``, not an installed copy):

    python benchmarks/toolkit_speed.py            # 9 repeats per figure
    python benchmarks/toolkit_speed.py --repeats 21

Two tables:

1. Per call: ``Toolkit.execute("add", {"a": 1, "b": 2})`` on the two-integer tool ``add``
   (arguments validated against its schema, the sum normalised into a ToolResult and checked
   against the output schema inferred from ``-> int``), against a bare function that builds
   the same ToolResult from the same dict. Targets: under 10 µs
   per call, and at most 10x the bare call. Variants show where the time goes.
2. Definition time: schema inference (``toolnexus.schema.infer``) and the whole ``tool()``
   for ``add`` and for a ten-parameter function, plus the first call of a fresh tool (which
   compiles the validator: inferred schemas are compiled on first use). Target: inference
   for ``add`` under 40 µs.

Every figure is the median of several repeats of a timed loop; ratios compare figures from
this run only, so a busy machine shifts both sides alike. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import timeit
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from toolnexus import ToolContext, Toolkit, ToolResult, tool
from toolnexus.result import STRUCTURED_KEY
from toolnexus.schema import infer

EXECUTE_TARGET_US = 10.0
RATIO_TARGET = 10.0
INFERENCE_TARGET_US = 40.0


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


def measure(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm up (and compile a lazily compiled validator)
    return median_us(fn, repeats, loops_for(fn))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per figure")
    options = parser.parse_args(argv)
    repeats = options.repeats

    add_tool = tool(add)
    unchecked_tool = dataclasses.replace(add_tool, output_schema=None)
    text_tool = tool(add_text)
    toolkit = Toolkit([add_tool, text_tool])
    args = {"a": 1, "b": 2}
    text_args = '{"a": 1, "b": 2}'
    assert toolkit.execute("add", args) == bare_add(args)
    assert toolkit.execute("add_text", args) == bare_add_text(args)

    rows = [
        ("bare function building the same ToolResult", measure(lambda: bare_add(args), repeats)),
        ("Toolkit.execute('add', dict)  [validated]",
         measure(lambda: toolkit.execute("add", args), repeats)),
        ("Tool.__call__(dict)", measure(lambda: add_tool(args), repeats)),
        ("Tool.__call__(dict)  [no output schema: not checked]",
         measure(lambda: unchecked_tool(args), repeats)),
        ("Toolkit.execute('add', JSON text)",
         measure(lambda: toolkit.execute("add", text_args), repeats)),
        ("bare function building ToolResult.ok(text)",
         measure(lambda: bare_add_text(args), repeats)),
        ("Toolkit.execute('add_text', dict)  [returns a ToolResult]",
         measure(lambda: toolkit.execute("add_text", args), repeats)),
        ("invalid call (b is a string): error result",
         measure(lambda: toolkit.execute("add", {"a": 1, "b": "2"}), repeats)),
    ]
    baseline = rows[0][1]
    print(f"Per call (median of {repeats} repeats; Python {sys.version.split()[0]})")
    print(f"  {'what':58} {'µs/call':>9} {'x bare':>7}")
    for label, value in rows:
        print(f"  {label:58} {value:9.2f} {value / baseline:7.2f}")
    execute_us = rows[1][1]
    ratio = execute_us / baseline
    text_ratio = rows[6][1] / rows[5][1]
    print(f"  target: execute < {EXECUTE_TARGET_US:.0f} µs -> {execute_us:.2f} µs "
          f"{'MET' if execute_us < EXECUTE_TARGET_US else 'MISSED'}; "
          f"<= {RATIO_TARGET:.0f}x bare -> {ratio:.2f}x "
          f"{'MET' if ratio <= RATIO_TARGET else 'MISSED'} "
          f"(ToolResult-returning variant: {text_ratio:.2f}x)")
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
    print(f"  target: inference for add < {INFERENCE_TARGET_US:.0f} µs -> {inference_us:.2f} µs "
          f"{'MET' if inference_us < INFERENCE_TARGET_US else 'MISSED'} "
          f"(whole tool(add): {definition[1][1]:.2f} µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
