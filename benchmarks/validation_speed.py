"""How fast the argument validator is, side by side with other validators in the same run.

Run it from a checkout (it measures the package in ``src/``, not an installed copy):

    pip install -e '.[bench]'                          # jsonschema, fastjsonschema, jsonschema-rs
    python benchmarks/validation_speed.py              # 7 rounds per figure
    python benchmarks/validation_speed.py --repeat 15
    python benchmarks/validation_speed.py --baseline /tmp/old/src   # an older checkout too

Four tables. Every figure is the median (and best) nanoseconds per call of several timed
loops, in CPU time of this process (``time.process_time``: the machine is shared, and wall
time counts the neighbours). The figures compared in a row are timed side by side: each
round times every contender once, one after the other, and a ratio is the median over the
rounds of the two figures of the same round, so load that comes and goes weighs on both
sides. The load average is printed before and after. Nothing here asserts.

1. A valid call per schema — two integers, a typical five-property tool schema, an order with
   ``$ref``/``pattern``/``anyOf``, 100 integers, an object of ``format`` fields (``email``,
   ``date-time``, ``uuid``, asserted as fastjsonschema asserts them) and a ``pattern``
   field, each of those formats alone, and a 2020-12 schema (``if``/``then``,
   ``unevaluatedProperties``) — for ``Validator.errors`` (what a tool call pays:
   ``Tool`` checks arguments with ``errors()``, which answers ``[]`` from the fast check
   and builds an explanation only for an invalid value), ``Validator.is_valid`` and, where
   installed, ``fastjsonschema`` (its generated function called directly, drafts 4-7),
   ``jsonschema`` and ``jsonschema-rs`` (Rust). ``x fastjsonschema`` is toolnexus time
   over fastjsonschema's: at most 1.0 is the target for plain objects, 1.2 for the object
   of formats and pattern. With ``--baseline OLD/src`` the older checkout's
   ``Validator.errors`` is timed in the same rounds (``x baseline``: at most 1.0, "no
   slower than before"); its package is copied and imported as ``toolnexus_baseline``.
2. An invalid call per schema: ``errors()`` (every problem, in words) against the others'
   cheapest way to say "invalid".
3. Whole calls: ``Toolkit.execute`` of a validated two-integer tool (target: under 10 µs) and
   of ``total(items: list[int])`` with 1000 items against ``json.loads`` of the same
   payload (target: at most 1.2x), plus what compiling a schema costs.
4. Worst cases an instance can trigger (issue 24): a 20-level ``anyOf`` of two ``$ref``s
   refusing ``1`` (17.5 s before), a miss on an ``enum`` of 10^6 integers (2.2 s), 200
   ``patternProperties`` x 10^4 names (4.9 s), 200 linear-engine ``patternProperties``
   ``^k{i}(a|a)*$`` x 10^4 matching names (issue 36: ~0.5-2.5 s, each name asked of every
   pattern), and long ``pattern`` checks; milliseconds
   per check, CPU time, median of ``--repeat`` (target: at most 50 ms each).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
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

# formats asserted as fastjsonschema asserts them (format_assertion=True), and a pattern
FORMATS = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date-time"},
        "id": {"type": "string", "format": "uuid"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
    },
    "required": ["email", "when", "id", "code"],
    "additionalProperties": False,
}
GOOD_FORMATS = {
    "email": "ada.lovelace@example.com",
    "when": "2026-12-05T09:30:00Z",
    "id": "3f2b8a9c-1d4e-4f6a-9b7c-2e5d8f1a0b3c",
    "code": "ABC-1234",
}
BAD_FORMATS = {**GOOD_FORMATS, "when": "2026-02-30T09:30:00Z", "code": "abc"}


def one_format(name: str) -> dict[str, Any]:
    return {"type": "string", "format": name}


CASES: list[tuple[str, dict[str, Any], Any, Any, bool, bool]] = [
    # name, schema, valid value, invalid value, draft-07 (fastjsonschema can run it),
    # format assertion
    ("two integers", TWO_INTEGERS, {"a": 1, "b": 2}, {"a": "1", "b": 2, "c": 3}, True, False),
    ("5-property tool schema", SEARCH, GOOD_SEARCH, BAD_SEARCH, True, False),
    ("order ($ref, pattern)", ORDER, GOOD_ORDER, BAD_ORDER, True, False),
    ("100 integers", INTEGERS, HUNDRED, [*HUNDRED[:50], "x", *HUNDRED[50:]], True, False),
    ("formats and pattern", FORMATS, GOOD_FORMATS, BAD_FORMATS, True, True),
    ("email alone", one_format("email"), GOOD_FORMATS["email"], "ada@", True, True),
    ("date-time alone", one_format("date-time"), GOOD_FORMATS["when"], "2026-1-5", True, True),
    ("uuid alone", one_format("uuid"), GOOD_FORMATS["id"], "3f2b", True, True),
    ("2020-12 if/unevaluated", DELIVERY, GOOD_DELIVERY, BAD_DELIVERY, False, False),
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


def others(schema: dict[str, Any], draft07: bool, formats: bool) -> dict[str, tuple[Check, Check]]:
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
        checker = jsonschema.Draft202012Validator.FORMAT_CHECKER if formats else None
        check = jsonschema.Draft202012Validator(schema, format_checker=checker).is_valid
        found["jsonschema"] = (check, check)
    try:
        import jsonschema_rs
    except ImportError:
        pass
    else:
        check = jsonschema_rs.Draft202012Validator(schema, validate_formats=formats).is_valid
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
    parser.add_argument("--baseline", default="", help="an older checkout's src/ to time too")
    arguments = parser.parse_args()
    repeat = arguments.repeat
    old = baseline_validator(arguments.baseline) if arguments.baseline else None
    print(f"Python {sys.version.split()[0]}, CPU time, {repeat} rounds per figure; {load()}")
    if old is not None:
        print(f"baseline: {arguments.baseline} (imported as toolnexus_baseline)")

    valid_rows: list[Row] = []
    invalid_rows: list[Row] = []
    for name, schema, good, bad, draft07, formats in CASES:
        ours = Validator(schema, format_assertion=formats)
        before = old(schema, format_assertion=formats) if old is not None else None
        theirs = others(schema, draft07, formats)
        assert ours.errors(good) == [] and ours.errors(bad), name
        assert ours.is_valid(good) and not ours.is_valid(bad), name
        lenient: set[str] = set()  # those that let the bad value pass (a format unchecked)
        for other, (valid_call, invalid_call) in theirs.items():
            valid_call(good)
            assert invalid_call(good), (name, other)
            if invalid_call(bad):
                assert formats and other != "fastjsonschema", (name, other)
                lenient.add(other)

        # a tool call pays errors(): [] at once when valid, the explanation only when not
        calls: dict[str, Callable[[], object]] = {
            "errors": lambda v=ours, g=good: v.errors(g),  # type: ignore[misc]
            "is_valid": lambda v=ours, g=good: v.is_valid(g),  # type: ignore[misc]
        }
        if before is not None:
            assert before.errors(good) == [], name
            calls["baseline"] = lambda v=before, g=good: v.errors(g)  # type: ignore[misc]
        for other, (valid_call, _) in theirs.items():
            calls[other] = lambda c=valid_call, g=good: c(g)  # type: ignore[misc]
        figures, rounds = side_by_side(calls, repeat)
        fast = "fastjsonschema" in theirs
        notes = []
        if fast:
            notes.append(f"{ratio(rounds, 'errors', 'fastjsonschema'):.2f}x fastjsonschema")
        if before is not None:
            notes.append(f"{ratio(rounds, 'errors', 'baseline'):.2f}x baseline")
        valid_rows.append(
            (f"{name}: toolnexus errors() [a tool call]", figures["errors"], ", ".join(notes))
        )
        if before is not None:
            valid_rows.append((f"{name}: baseline errors()", figures["baseline"], ""))
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
            unchecked = " (lets the bad value pass)" if other in lenient else ""
            valid_rows.append(
                (
                    f"{name}: {other}{unchecked}",
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
    worst_cases(repeat)
    print(f"\nproblems for the bad order: {Validator(ORDER).errors(BAD_ORDER)}")
    print(f"problems for the bad delivery: {Validator(DELIVERY).errors(BAD_DELIVERY)}")
    bad_formats = Validator(FORMATS, format_assertion=True).errors(BAD_FORMATS)
    print(f"problems for the bad formats: {bad_formats}")
    print(f"\n{load()}")


def baseline_validator(src: str) -> Any:
    """``Validator`` of the checkout whose ``src/`` is ``src``, as ``toolnexus_baseline``."""
    folder = Path(tempfile.mkdtemp(prefix="validation-baseline-"))
    shutil.copytree(Path(src) / "toolnexus", folder / "toolnexus_baseline")
    sys.path.insert(0, str(folder))
    return importlib.import_module("toolnexus_baseline.validation").Validator


def anyof_chain(levels: int) -> dict[str, Any]:
    """Level i: anyOf of two $refs to level i-1; level 0: a string."""
    defs: dict[str, Any] = {"L0": {"type": "string"}}
    for i in range(1, levels + 1):
        defs[f"L{i}"] = {"anyOf": [{"$ref": f"#/$defs/L{i - 1}"}, {"$ref": f"#/$defs/L{i - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/L{levels}"}


def worst_cases(repeat: int) -> None:
    patterns = Validator(
        {
            "type": "object",
            "patternProperties": {f"^p{i}_": {"type": "integer"} for i in range(200)},
            "additionalProperties": {"type": "string"},
        }
    )
    names = {f"k{i}": "s" for i in range(5_000)} | {f"p{i % 200}_{i}": i for i in range(5_000)}
    bad_names = {**names, "p7_bad": "x"}
    linear = Validator(
        {
            "type": "object",
            "patternProperties": {f"^k{i}(a|a)*$": {"type": "integer"} for i in range(200)},
        }
    )
    linear_names = {f"k{i % 200}" + "a" * (i % 7): i for i in range(10_000)}
    chain = Validator(anyof_chain(20))
    start = time.process_time()
    enum = Validator({"enum": list(range(1_000_000))})
    enum_compile = time.process_time() - start
    lookaheads = Validator({"type": "string", "pattern": "^(?=.*a)(?=.*b)(?=.*c).*$"})
    letters = Validator({"type": "string", "pattern": "^[a-z]+$"})
    million = "x" * 1_000_000
    cases: list[tuple[str, Callable[[], object]]] = [
        ("20-level anyOf of two $refs: errors(1)", lambda: chain.errors(1)),
        ("20-level anyOf of two $refs: is_valid(1)", lambda: chain.is_valid(1)),
        ("enum of 10^6 integers: errors(-1) (a miss)", lambda: enum.errors(-1)),
        ("200 patternProperties x 10^4 names: is_valid", lambda: patterns.is_valid(names)),
        (
            "200 patternProperties x 10^4 names: errors (one bad)",
            lambda: patterns.errors(bad_names),
        ),
        (
            "200 patternProperties ^k{i}(a|a)*$ x 10^4 names: is_valid",
            lambda: linear.is_valid(linear_names),
        ),
        ("pattern ^[a-z]+$, 25,001 characters", lambda: letters.errors("a" * 25_001)),
        ("pattern ^[a-z]+$, 10^6 characters + '!'", lambda: letters.errors("a" * 1_000_000 + "!")),
        ("pattern ^(?=.*a)(?=.*b)(?=.*c).*$, 10^6 characters", lambda: lookaheads.errors(million)),
    ]
    print("\nworst cases an instance can trigger (CPU ms per check, median; target <= 50 ms)")
    print(f"{'what':<58} {'median ms':>10} {'best ms':>9}")
    for label, run in cases:
        times = []
        for _ in range(max(3, repeat)):
            begin = time.process_time()
            run()
            times.append(time.process_time() - begin)
        print(f"{label:<58} {statistics.median(times) * 1e3:>10.2f} {min(times) * 1e3:>9.2f}")
    print(f"{'(compiling the enum of 10^6 integers, once)':<58} {enum_compile * 1e3:>10.0f}")


if __name__ == "__main__":
    main()
