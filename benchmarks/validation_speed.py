"""How fast the argument validator is, side by side with other validators in the same run.

Run it from a checkout (it measures the package in ``src/``, not an installed copy):

    pip install -e '.[bench]'                          # jsonschema, fastjsonschema, jsonschema-rs
    python benchmarks/validation_speed.py              # 7 repeats per figure
    python benchmarks/validation_speed.py --repeat 15

Three tables, every figure the median (and best) nanoseconds per call of several timed loops,
in CPU time of this process (``time.process_time``: the machine is shared, and wall time
counts the neighbours); ratios compare figures from this run only. Nothing here asserts.

1. A valid call per schema — two integers, a typical five-property tool schema, an order with
   ``$ref``/``pattern``/``anyOf``, 100 integers, and a 2020-12 schema (``if``/``then``,
   ``unevaluatedProperties``) — for ``Validator.is_valid``/``errors`` and, where installed,
   ``fastjsonschema`` (generated code, drafts 4-7), ``jsonschema`` and ``jsonschema-rs``
   (Rust). ``x fastjsonschema`` is toolnexus ``errors()`` over fastjsonschema: at most 1.0 is
   the target.
2. An invalid call per schema: ``errors()`` (every problem, in words) against the others'
   cheapest way to say "invalid".
3. Whole calls: ``Toolkit.execute`` of a validated two-integer tool (target: under 10 µs) and
   of ``total(items: list[int])`` with 1000 items against ``json.loads`` of the same
   payload (target: at most 1.2x), plus what compiling a schema costs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from toolnexus import Toolkit, tool
from toolnexus.validation import Validator

TWO_INTEGERS = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}

SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 200},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "language": {"enum": ["en", "de", "fr"]},
        "include_archived": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["query"],
    "additionalProperties": False,
}
GOOD_SEARCH = {
    "query": "tool schemas",
    "limit": 10,
    "language": "en",
    "include_archived": False,
    "tags": ["json", "schema"],
}
BAD_SEARCH = {"query": "", "limit": "10", "language": "es"}

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
BAD_ORDER = {**GOOD_ORDER, "lines": [{"sku": "abc", "quantity": 0}]}

INTEGERS = {"type": "array", "items": {"type": "integer"}}
HUNDRED = list(range(100))

# 2020-12 only: the condition and unevaluatedProperties (fastjsonschema has neither)
DELIVERY = {
    "type": "object",
    "properties": {"channel": {"enum": ["mail", "sms"]}, "to": {"type": "string"}},
    "required": ["channel", "to"],
    "if": {"properties": {"channel": {"const": "sms"}}},
    "then": {"properties": {"to": {"pattern": "^[+][0-9]+$"}}},
    "else": {"properties": {"subject": {"type": "string"}}},
    "unevaluatedProperties": False,
}
GOOD_DELIVERY = {"channel": "mail", "to": "ada@example.com", "subject": "hello"}
BAD_DELIVERY = {"channel": "sms", "to": "ada@example.com", "subject": "hello"}

CASES: list[tuple[str, dict[str, Any], Any, Any, bool]] = [
    # name, schema, valid value, invalid value, draft-07 (fastjsonschema can run it)
    ("two integers", TWO_INTEGERS, {"a": 1, "b": 2}, {"a": "1", "b": 2, "c": 3}, True),
    ("5-property tool schema", SEARCH, GOOD_SEARCH, BAD_SEARCH, True),
    ("order ($ref, pattern)", ORDER, GOOD_ORDER, BAD_ORDER, True),
    ("100 integers", INTEGERS, HUNDRED, [*HUNDRED[:50], "x", *HUNDRED[50:]], True),
    ("2020-12 if/unevaluated", DELIVERY, GOOD_DELIVERY, BAD_DELIVERY, False),
]


def timing_ns(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, best) nanoseconds per call over ``repeat`` timed loops."""
    timer = timeit.Timer(fn, timer=time.process_time)
    number, _ = timer.autorange()
    runs = [run / number * 1e9 for run in timer.repeat(repeat=repeat, number=number)]
    return statistics.median(runs), min(runs)


def others(schema: dict[str, Any], draft07: bool) -> dict[str, Callable[[Any], bool]]:
    """The other validators that are installed, each as value -> valid?"""
    found: dict[str, Callable[[Any], bool]] = {}
    if draft07:
        try:
            import fastjsonschema
        except ImportError:
            pass
        else:
            compiled = fastjsonschema.compile(schema)

            def fast(value: Any) -> bool:
                try:
                    compiled(value)
                except fastjsonschema.JsonSchemaException:
                    return False
                return True

            found["fastjsonschema"] = fast
    try:
        import jsonschema
    except ImportError:
        pass
    else:
        found["jsonschema"] = jsonschema.Draft202012Validator(schema).is_valid
    try:
        import jsonschema_rs
    except ImportError:
        pass
    else:
        found["jsonschema-rs"] = jsonschema_rs.Draft202012Validator(schema).is_valid
    return found


def table(title: str, rows: list[tuple[str, tuple[float, float], str]]) -> None:
    print(f"\n{title}")
    print(f"{'what':<58} {'median ns':>10} {'best ns':>9}  ratio")
    for name, (median, best), ratio in rows:
        print(f"{name:<58} {median:>10.0f} {best:>9.0f}  {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    print(f"Python {sys.version.split()[0]}, CPU time, {repeat} runs per figure")

    valid_rows: list[tuple[str, tuple[float, float], str]] = []
    invalid_rows: list[tuple[str, tuple[float, float], str]] = []
    for name, schema, good, bad, draft07 in CASES:
        ours = Validator(schema)
        theirs = others(schema, draft07)
        assert ours.errors(good) == [] and ours.errors(bad), name
        for other, check in theirs.items():
            assert check(good) and not check(bad), (name, other)

        errors = timing_ns(lambda v=ours, g=good: v.errors(g), repeat)  # type: ignore[misc]
        fast = None
        if "fastjsonschema" in theirs:
            fast = timing_ns(lambda c=theirs["fastjsonschema"], g=good: c(g), repeat)  # type: ignore[misc]
        ratio = f"{errors[0] / fast[0]:.2f}x fastjsonschema" if fast else ""
        valid_rows.append((f"{name}: toolnexus errors()", errors, ratio))
        valid_rows.append(
            (
                f"{name}: toolnexus is_valid()",
                timing_ns(lambda v=ours, g=good: v.is_valid(g), repeat),  # type: ignore[misc]
                "",
            )
        )
        for other, check in theirs.items():
            figure = fast if other == "fastjsonschema" and fast else timing_ns(
                lambda c=check, g=good: c(g), repeat  # type: ignore[misc]
            )
            valid_rows.append(
                (f"{name}: {other}", figure, f"{figure[0] / errors[0]:.2f}x toolnexus")
            )

        bad_errors = timing_ns(lambda v=ours, b=bad: v.errors(b), repeat)  # type: ignore[misc]
        invalid_rows.append((f"{name}: toolnexus errors() (all problems)", bad_errors, ""))
        invalid_rows.append(
            (
                f"{name}: toolnexus is_valid()",
                timing_ns(lambda v=ours, b=bad: v.is_valid(b), repeat),  # type: ignore[misc]
                "",
            )
        )
        for other, check in theirs.items():
            figure = timing_ns(lambda c=check, b=bad: c(b), repeat)  # type: ignore[misc]
            invalid_rows.append(
                (f"{name}: {other}", figure, f"{figure[0] / bad_errors[0]:.2f}x toolnexus")
            )

    table("valid calls (x fastjsonschema: toolnexus time over fastjsonschema's; target <= 1.0)",
          valid_rows)
    table("invalid calls", invalid_rows)

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def total(items: list[int]) -> int:
        """Add up integers."""
        return sum(items)

    kit = Toolkit([add, total])
    payload = json.dumps({"items": list(range(1000))})
    arguments = json.loads(payload)
    assert kit.execute("total", arguments).output == str(sum(range(1000)))
    loads = timing_ns(lambda: json.loads(payload), repeat)
    execute_total = timing_ns(lambda: kit.execute("total", arguments), repeat)
    execute_add = timing_ns(lambda: kit.execute("add", {"a": 1, "b": 2}), repeat)
    table(
        "whole calls",
        [
            ("Toolkit.execute('add', two integers) (target < 10000 ns)", execute_add, ""),
            ("json.loads of a 1000-integer payload (baseline)", loads, "1.00x"),
            (
                "Toolkit.execute('total', 1000 integers) (target <= 1.2x)",
                execute_total,
                f"{execute_total[0] / loads[0]:.2f}x json.loads",
            ),
            ("Validator(two integers) (compile)", timing_ns(lambda: Validator(TWO_INTEGERS),
                                                           repeat), ""),
            ("Validator(order) (compile)", timing_ns(lambda: Validator(ORDER), repeat), ""),
        ],
    )
    print(f"\nproblems for the bad order: {Validator(ORDER).errors(BAD_ORDER)}")
    print(f"problems for the bad delivery: {Validator(DELIVERY).errors(BAD_DELIVERY)}")


if __name__ == "__main__":
    main()
