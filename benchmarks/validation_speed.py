"""How fast the argument validator is, side by side with other validators in the same run.

Run it from a checkout (it measures the package in ``src/``, not an installed copy):

    pip install -e '.[bench]'                          # jsonschema, fastjsonschema, jsonschema-rs
    python benchmarks/validation_speed.py              # 7 rounds per figure
    python benchmarks/validation_speed.py --repeat 15

Three tables. Every figure is the median (and best) nanoseconds per call of several timed
loops, in CPU time of this process (``time.process_time``: the machine is shared, and wall
time counts the neighbours). The figures compared in a row are timed side by side: each
round times every contender once, one after the other, and a ratio is the median over the
rounds of the two figures of the same round, so load that comes and goes weighs on both
sides. The load average is printed before and after. Nothing here asserts.

1. A valid call per schema — two integers, a typical five-property tool schema, an order with
   ``$ref``/``pattern``/``anyOf``, 100 integers, and a 2020-12 schema (``if``/``then``,
   ``unevaluatedProperties``) — for ``Validator.errors`` (what a tool call pays:
   ``Tool`` checks arguments with ``errors()``, which answers ``[]`` from the fast check
   and builds an explanation only for an invalid value), ``Validator.is_valid`` and, where
   installed, ``fastjsonschema`` (its generated function called directly, drafts 4-7),
   ``jsonschema`` and ``jsonschema-rs`` (Rust). ``x fastjsonschema`` is toolnexus time
   over fastjsonschema's: at most 1.0 is the target.
2. An invalid call per schema: ``errors()`` (every problem, in words) against the others'
   cheapest way to say "invalid".
3. Whole calls: ``Toolkit.execute`` of a validated two-integer tool (target: under 10 µs) and
   of ``total(items: list[int])`` with 1000 items against ``json.loads`` of the same
   payload (target: at most 1.2x), plus what compiling a schema costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if "toolnexus" not in sys.modules:
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


Figure = tuple[float, float]  # (median, best) nanoseconds per call
Check = Callable[[Any], object]


def loops_for(fn: Callable[[], object], budget_s: float) -> int:
    """A loop count whose timed run takes about ``budget_s`` of CPU time."""
    number = 1
    while True:
        start = time.process_time()
        for _ in range(number):
            fn()
        elapsed = time.process_time() - start
        if elapsed >= budget_s / 5 or number >= 1 << 24:
            return max(1, int(number * budget_s / max(elapsed, 1e-9)))
        number *= 4


def side_by_side(
    fns: dict[str, Callable[[], object]], repeat: int, budget_s: float = 0.04
) -> tuple[dict[str, Figure], dict[str, list[float]]]:
    """Time every function in ``fns`` in the same rounds, one after the other.

    Returns the (median, best) ns per call of each, and each one's ns per call round by
    round, so a ratio can be taken within a round (the neighbours' load, which moves
    within seconds on a shared machine, then weighs on both sides alike).
    """
    loops = {name: loops_for(fn, budget_s) for name, fn in fns.items()}
    rounds: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            number = loops[name]
            start = time.process_time_ns()
            for _ in range(number):
                fn()
            rounds[name].append((time.process_time_ns() - start) / number)
    figures = {name: (statistics.median(runs), min(runs)) for name, runs in rounds.items()}
    return figures, rounds


def ratio(rounds: dict[str, list[float]], ours: str, base: str) -> float:
    """The median over rounds of ``ours`` / ``base``, each pair timed in the same round."""
    return statistics.median(a / b for a, b in zip(rounds[ours], rounds[base], strict=True))


def others(schema: dict[str, Any], draft07: bool) -> dict[str, tuple[Check, Check]]:
    """The other validators that are installed, each as (valid call, invalid call).

    A valid call is each one's cheapest call on a valid value: fastjsonschema's generated
    function itself (it returns the value), ``is_valid`` for the others. An invalid call
    ends in each one's cheapest "invalid": fastjsonschema's exception, caught.
    """
    found: dict[str, tuple[Check, Check]] = {}
    if draft07:
        try:
            import fastjsonschema
        except ImportError:
            pass
        else:
            compiled = fastjsonschema.compile(schema)
            failure = fastjsonschema.JsonSchemaException

            def refuses(value: Any) -> bool:
                try:
                    compiled(value)
                except failure:
                    return False
                return True

            found["fastjsonschema"] = (compiled, refuses)
    try:
        import jsonschema
    except ImportError:
        pass
    else:
        check = jsonschema.Draft202012Validator(schema).is_valid
        found["jsonschema"] = (check, check)
    try:
        import jsonschema_rs
    except ImportError:
        pass
    else:
        check = jsonschema_rs.Draft202012Validator(schema).is_valid
        found["jsonschema-rs"] = (check, check)
    return found


Row = tuple[str, Figure, str]


def table(title: str, rows: list[Row]) -> None:
    print(f"\n{title}")
    print(f"{'what':<58} {'median ns':>10} {'best ns':>9}  ratio (median of same-round ratios)")
    for name, (median, best), note in rows:
        print(f"{name:<58} {median:>10.0f} {best:>9.0f}  {note}")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds per figure")
    repeat = parser.parse_args().repeat
    print(f"Python {sys.version.split()[0]}, CPU time, {repeat} rounds per figure; {load()}")

    valid_rows: list[Row] = []
    invalid_rows: list[Row] = []
    for name, schema, good, bad, draft07 in CASES:
        ours = Validator(schema)
        theirs = others(schema, draft07)
        assert ours.errors(good) == [] and ours.errors(bad), name
        assert ours.is_valid(good) and not ours.is_valid(bad), name
        for other, (valid_call, invalid_call) in theirs.items():
            valid_call(good)
            assert invalid_call(good) and not invalid_call(bad), (name, other)

        # a tool call pays errors(): [] at once when valid, the explanation only when not
        calls: dict[str, Callable[[], object]] = {
            "errors": lambda v=ours, g=good: v.errors(g),  # type: ignore[misc]
            "is_valid": lambda v=ours, g=good: v.is_valid(g),  # type: ignore[misc]
        }
        for other, (valid_call, _) in theirs.items():
            calls[other] = lambda c=valid_call, g=good: c(g)  # type: ignore[misc]
        figures, rounds = side_by_side(calls, repeat)
        fast = "fastjsonschema" in theirs
        valid_rows.append(
            (
                f"{name}: toolnexus errors() [a tool call]",
                figures["errors"],
                f"{ratio(rounds, 'errors', 'fastjsonschema'):.2f}x fastjsonschema" if fast else "",
            )
        )
        valid_rows.append(
            (
                f"{name}: toolnexus is_valid()",
                figures["is_valid"],
                f"{ratio(rounds, 'is_valid', 'fastjsonschema'):.2f}x fastjsonschema"
                if fast
                else "",
            )
        )
        for other in theirs:
            valid_rows.append(
                (
                    f"{name}: {other}",
                    figures[other],
                    f"{ratio(rounds, other, 'errors'):.2f}x toolnexus",
                )
            )

        calls = {
            "errors": lambda v=ours, b=bad: v.errors(b),  # type: ignore[misc]
            "is_valid": lambda v=ours, b=bad: v.is_valid(b),  # type: ignore[misc]
        }
        for other, (_, invalid_call) in theirs.items():
            calls[other] = lambda c=invalid_call, b=bad: c(b)  # type: ignore[misc]
        figures, rounds = side_by_side(calls, repeat)
        invalid_rows.append((f"{name}: toolnexus errors() (all problems)", figures["errors"], ""))
        invalid_rows.append((f"{name}: toolnexus is_valid()", figures["is_valid"], ""))
        for other in theirs:
            invalid_rows.append((
                f"{name}: {other}",
                figures[other],
                f"{ratio(rounds, other, 'errors'):.2f}x toolnexus errors()",
            ))  # fmt: skip

    table(
        "valid calls (x fastjsonschema: toolnexus time over fastjsonschema's; target <= 1.0)",
        valid_rows,
    )
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
    assert kit.execute("add", {"a": 1, "b": 2}).output == "3"
    figures, rounds = side_by_side(
        {
            "add": lambda: kit.execute("add", {"a": 1, "b": 2}),
            "loads": lambda: json.loads(payload),
            "total": lambda: kit.execute("total", arguments),
        },
        repeat,
    )
    compiles, _ = side_by_side(
        {"two": lambda: Validator(TWO_INTEGERS), "order": lambda: Validator(ORDER)}, repeat
    )
    table(
        "whole calls",
        [
            ("Toolkit.execute('add', two integers) (target < 10000 ns)", figures["add"], ""),
            ("json.loads of a 1000-integer payload (baseline)", figures["loads"], "1.00x"),
            (
                "Toolkit.execute('total', 1000 integers) (target <= 1.2x)",
                figures["total"],
                f"{ratio(rounds, 'total', 'loads'):.2f}x json.loads",
            ),
            ("Validator(two integers) (compile)", compiles["two"], ""),
            ("Validator(order) (compile)", compiles["order"], ""),
        ],
    )
    print(f"\nproblems for the bad order: {Validator(ORDER).errors(BAD_ORDER)}")
    print(f"problems for the bad delivery: {Validator(DELIVERY).errors(BAD_DELIVERY)}")
    print(f"\n{load()}")


if __name__ == "__main__":
    main()
