"""How fast the argument validator is, against hand-written checks measured in the same run.

Run it from a checkout:

    python benchmarks/validation_speed.py             # 7 repeats per figure
    python benchmarks/validation_speed.py --repeat 15

Prints one table: median (and best) nanoseconds per call for ``Validator.errors`` / ``is_valid`` on
valid and invalid arguments for a few schema shapes, next to the cheapest honest baseline
(a hand-written ``type(x) is int`` check of the same rules, and a bare function call), plus
what compiling a schema costs. Times are CPU time of this process
(``time.process_time``), so other work on a shared machine disturbs them less; ratios
compare figures from this run only. Nothing here asserts: it prints numbers to read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from toolnexus.validation import Validator

TWO_INTEGERS = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}

ORDER = {
    "$defs": {
        "Line": {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
                "quantity": {"type": "integer", "minimum": 1},
                "note": {"anyOf": [{"type": "string", "maxLength": 200}, {"type": "null"}]},
            },
            "required": ["sku", "quantity"],
            "additionalProperties": False,
        }
    },
    "type": "object",
    "properties": {
        "customer": {"type": "string", "minLength": 1},
        "priority": {"enum": ["low", "normal", "high"]},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1},
    },
    "required": ["customer", "lines"],
    "additionalProperties": False,
}
GOOD_ORDER = {
    "customer": "ada",
    "priority": "high",
    "lines": [
        {"sku": "ABC-1", "quantity": 2},
        {"sku": "XYZ-42", "quantity": 1, "note": None},
        {"sku": "QQQ-7", "quantity": 5, "note": "gift wrap"},
    ],
}


def hand_written(args: Any) -> list[str]:
    """The fastest plain-Python check of TWO_INTEGERS a person would write."""
    if type(args) is not dict:
        return ["expected object"]
    if args.keys() != {"a", "b"}:
        return ["wrong keys"]
    if type(args["a"]) is not int or type(args["b"]) is not int:
        return ["expected integer"]
    return []


def bare(args: Any) -> list[str]:
    return []


def timing_ns(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, best) nanoseconds per call over ``repeat`` timed loops."""
    # CPU time of this process: the machine is shared, and wall time counts the neighbours
    timer = timeit.Timer(fn, timer=time.process_time)
    number, _ = timer.autorange()
    runs = [run / number * 1e9 for run in timer.repeat(repeat=repeat, number=number)]
    return statistics.median(runs), min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat

    two = Validator(TWO_INTEGERS)
    ints = Validator({"type": "array", "items": {"type": "integer"}})
    hundred = list(range(100))
    order = Validator(ORDER)
    good = {"a": 1, "b": 2}
    bad = {"a": "1", "b": 2, "c": 3}
    bad_order = {**GOOD_ORDER, "lines": [{"sku": "abc", "quantity": 0}]}
    assert two.errors(good) == [] and order.errors(GOOD_ORDER) == []
    assert two.errors(bad) and order.errors(bad_order)

    rows: list[tuple[str, tuple[float, float]]] = [
        ("bare function call (baseline)", timing_ns(lambda: bare(good), repeat)),
        ("hand-written check, two integers", timing_ns(lambda: hand_written(good), repeat)),
        ("errors(), two integers, valid", timing_ns(lambda: two.errors(good), repeat)),
        ("is_valid(), two integers, valid", timing_ns(lambda: two.is_valid(good), repeat)),
        ("errors(), two integers, 2 problems", timing_ns(lambda: two.errors(bad), repeat)),
        ("errors(), list of 100 integers, valid", timing_ns(lambda: ints.errors(hundred), repeat)),
        ("errors(), order with $ref, valid", timing_ns(lambda: order.errors(GOOD_ORDER), repeat)),
        ("errors(), order, 2 problems", timing_ns(lambda: order.errors(bad_order), repeat)),
        ("Validator(two integers) (compile)", timing_ns(lambda: Validator(TWO_INTEGERS), repeat)),
        ("Validator(order) (compile)", timing_ns(lambda: Validator(ORDER), repeat)),
    ]
    baseline = rows[0][1][0]
    print(f"Python {sys.version.split()[0]}, CPU time, {repeat} runs per figure")
    print(f"{'what':<40} {'median ns':>10} {'best ns':>9} {'x bare':>8}")
    for name, (median, best) in rows:
        print(f"{name:<40} {median:>10.0f} {best:>9.0f} {median / baseline:>8.1f}")
    print(f"problems reported for the bad two-integer call: {two.errors(bad)}")


if __name__ == "__main__":
    main()
