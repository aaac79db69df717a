"""The keywords: which ones the validator knows, and the checks of those that assert
something of the value itself — ``type``, the number and string bounds (fused into one
closure for the commonest leaves), ``pattern`` (compiled once, answering a repeat from
memory), ``format`` when asserted, ``uniqueItems`` and ``dependentRequired``.

The keywords that apply subschemas are in :mod:`._applicators`; reading a schema's keyword
values, and choosing the checks, is the compiler's (:mod:`._compiler`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Set
from typing import TYPE_CHECKING, Any

from ._nodes import Explain, make_leaf, stopper
from ._problems import Path, Problems, alternatives, describe
from ._values import (
    EXACT_TYPES,
    INFINITY,
    TYPE_CHECKS,
    Ok,
    _TooDeep,
    canon,
    is_json_integer,
    is_json_number,
)

if TYPE_CHECKING:
    from fractions import Fraction

    from .._ecma import SearchParts
    from .._json_formats import FormatParts


#: Keywords the validator checks.
SUPPORTED_KEYWORDS: frozenset[str] = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "prefixItems",
        "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "multipleOf", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
        "uniqueItems", "minProperties", "maxProperties", "anyOf", "oneOf", "allOf", "not",
        "$ref", "$defs", "definitions", "if", "then", "else", "patternProperties",
        "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "contains",
        "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems",
        "additionalItems", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor",
    }
)  # fmt: skip

#: Keywords that describe a value without constraining it; accepted and ignored.
ANNOTATION_KEYWORDS: frozenset[str] = frozenset(
    {
        "title", "description", "default", "examples", "$schema", "$comment",
        "$vocabulary", "deprecated", "readOnly", "writeOnly", "contentMediaType",
        "contentEncoding", "contentSchema",
    }
)  # fmt: skip

KNOWN_KEYWORDS = SUPPORTED_KEYWORDS | ANNOTATION_KEYWORDS
# the supported keywords that constrain a value by themselves (format is an annotation unless
# asked; $defs a container; then/else/minContains/maxContains act through if and contains)
CHECKING_KEYWORDS = SUPPORTED_KEYWORDS - {
    "format",
    "$defs",
    "definitions",
    "then",
    "else",
    "minContains",
    "maxContains",
    "$id",
    "$anchor",
    "$dynamicAnchor",
}
NUMBER_KEYWORDS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
STRING_KEYWORDS = frozenset({"minLength", "maxLength", "pattern"})
_FUSED_STRING = frozenset({"type", "minLength", "maxLength", "pattern"})
_FUSED_NUMBER = frozenset({"type", *NUMBER_KEYWORDS})
COUNT_KEYWORDS = frozenset(
    {"minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties"}
)
OBJECT_KEYWORDS = ("properties", "patternProperties", "required", "additionalProperties")
# keywords a bare {"type": ...} node may carry that still need a look when compiled
QUIET_KEYWORDS = frozenset(
    {
        "$defs",
        "definitions",
        "format",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "then",
        "else",
        "minContains",
        "maxContains",
    }
)


def type_check(names: tuple[str, ...]) -> Ok:
    if len(names) == 1:
        return TYPE_CHECKS[names[0]]
    exact = frozenset(t for name in names for t in EXACT_TYPES[name])
    checks = tuple(TYPE_CHECKS[name] for name in names)

    def ok(x: Any, d: int) -> bool:
        if type(x) in exact:
            return True
        for check in checks:  # noqa: SIM110 (faster than any() over a generator)
            if check(x, d):
                return True
        return False

    return ok


_TYPE_LEAVES: dict[tuple[str, ...], tuple[Ok, Explain, Callable[[Any, int], list[str] | None]]] = {}


def type_leaf(
    names: tuple[str, ...],
) -> tuple[Ok, Explain, Callable[[Any, int], list[str] | None]]:
    """The three functions of a node that only checks ``type``, shared by all such nodes."""
    leaf = _TYPE_LEAVES.get(names)
    if leaf is None:
        ok = type_check(names)
        expected = list(names)
        explain = node_explain(ok, names, [])

        def reject(x: Any, d: int) -> list[str] | None:
            return None if ok(x, d) else expected

        leaf = _TYPE_LEAVES[names] = (ok, explain, reject)
    return leaf


def node_explain(
    type_ok: Ok | None, type_names: tuple[str, ...] | None, explains: list[Explain]
) -> Explain:
    checks = tuple(explains)

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if type_ok is not None and not type_ok(x, d):
            expected = alternatives(list(type_names or ()))
            problems.add(path, f"expected {expected}, got {describe(x)}")
            return
        for check in checks:
            check(x, path, problems, d)

    return explain


def format_leaf(name: str, parts: FormatParts) -> tuple[Ok, Explain]:
    shown = json.dumps(name)
    quick, thorough = parts
    return make_leaf(
        lambda x, d: not isinstance(x, str) or quick(x) is not None or thorough(x),
        lambda x, d: f"expected a {shown} string, got {describe(x)}",
    )


def fused_scalar(
    schema: Mapping[str, Any],
    type_names: tuple[str, ...] | None,
    checking: Set[str],
    pattern: Pattern | None,
    format_test: FormatParts | None,
) -> Ok | None:
    """One closure for a typed string or number with bounds — the commonest constrained
    leaf in a tool schema — instead of a chain of one call per keyword.

    Only the yes/no path is fused; problems still come from the per-keyword checks, which
    have already validated the keyword values. Returns None for any other node. (An
    asserted ``format`` checks strings only, so a number leaf leaves it out.)
    """
    if type_names == ("string",) and checking <= _FUSED_STRING:
        fused = _fused_string(schema.get("minLength", 0), schema.get("maxLength"), pattern)
        if format_test is None:
            return fused
        quick, thorough = format_test
        if pattern is None and "minLength" not in schema and "maxLength" not in schema:

            def format_ok(x: Any, d: int) -> bool:
                if type(x) is not str and not isinstance(x, str):
                    return False
                return quick(x) is not None or thorough(x)

            return format_ok

        def fused_format_ok(x: Any, d: int) -> bool:
            return fused(x, d) and (quick(x) is not None or thorough(x))

        return fused_format_ok
    if (type_names == ("integer",) or type_names == ("number",)) and checking <= _FUSED_NUMBER:
        is_type = is_json_integer if type_names == ("integer",) else is_json_number
        low = schema.get("minimum")
        high = schema.get("maximum")
        above = schema.get("exclusiveMinimum")
        below = schema.get("exclusiveMaximum")
        step = schema.get("multipleOf")

        def number_ok(x: Any, d: int) -> bool:
            if not is_type(x, d):
                return False
            if low is not None and not x >= low:
                return False
            if high is not None and not x <= high:
                return False
            if above is not None and not x > above:
                return False
            if below is not None and not x < below:
                return False
            return step is None or is_multiple(x, step)

        return number_ok
    return None


def _fused_string(shortest: int, longest: int | None, pattern: Pattern | None) -> Ok:
    """The yes/no check of ``{"type": "string"}`` with minLength/maxLength/pattern."""
    most = sys.maxsize if longest is None else longest
    if pattern is None:

        def string_ok(x: Any, d: int) -> bool:
            if type(x) is not str and not isinstance(x, str):
                return False
            return shortest <= len(x) <= most

        return string_ok
    search = pattern.search
    if search is None:  # only the linear engine runs this pattern
        test = pattern.test

        def string_test_ok(x: Any, d: int) -> bool:
            if type(x) is not str and not isinstance(x, str):
                return False
            return shortest <= len(x) <= most and test(x)

        return string_test_ok
    # re runs it directly (no wrapper call per value) on strings within its bound, and the
    # linear engine beyond; the memo is written here so errors() does not run it again
    on_re = sys.maxsize if pattern.longest is None else pattern.longest
    beyond = pattern.test
    memo = pattern

    def string_search_ok(x: Any, d: int) -> bool:
        if type(x) is not str and not isinstance(x, str):
            return False
        size = len(x)
        if size < shortest or size > most:
            return False
        if size > on_re:
            return beyond(x)
        if search(x) is None:
            memo.failed = x
            return False
        memo.passed = x
        return True

    return string_search_ok


def is_multiple(x: int | float, step: int | float) -> bool:
    if type(x) is int and type(step) is int:
        return x % step == 0
    if x != x or x in (INFINITY, -INFINITY):
        return False
    return (_exact(x) / _exact(step)).denominator == 1


def _exact(number: int | float) -> Fraction:
    """The number as the decimal a person wrote: 0.1 is 1/10 here, not the float nearest it."""
    from decimal import Decimal
    from fractions import Fraction

    if isinstance(number, int):
        return Fraction(int(number))
    return Fraction(Decimal(repr(float(number))))


def _first_duplicate(x: Any, budget: int) -> tuple[int, int] | None:
    seen: dict[Any, int] = {}
    for index, item in enumerate(x):
        key = canon(item, budget)
        first = seen.setdefault(key, index)
        if first != index:
            return first, index
    return None


def unique_check(max_depth: int) -> tuple[Ok, Explain]:
    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, (list, tuple)):
            return True
        try:
            return _first_duplicate(x, max_depth - d) is None
        except _TooDeep:
            return True  # the node's depth limit refuses this value and says where

    def message(x: Any, d: int) -> str:
        first, second = _first_duplicate(x, max_depth - d) or (0, 0)
        return f"expected unique items, got duplicates at index {first} and {second}"

    return make_leaf(ok, message)


class Pattern:
    """A compiled ``pattern`` that answers a repeat question about the same string from
    memory.

    :meth:`Validator.errors` asks the fast check first and the explaining one after it;
    with the memo, a pattern runs once per value, not twice. ``passed`` and ``failed`` are
    the last string that matched and the last that did not, each written in one
    assignment: threads sharing a validator may overwrite each other's, but a string is
    immutable, so whatever object is found there has that answer. The fast check of a
    typed string (``fused_scalar``) runs ``search`` inline and writes the memo itself.
    """

    __slots__ = ("failed", "longest", "passed", "predicate", "search")

    def __init__(self, parts: SearchParts) -> None:
        self.search, self.longest, self.predicate = parts
        self.passed: str | None = None
        self.failed: str | None = None

    def test(self, text: str) -> bool:
        if text is self.passed:
            return True
        if text is self.failed:
            return False
        search = self.search
        longest = self.longest
        if search is not None and (longest is None or len(text) <= longest):
            answer = search(text) is not None
        else:
            answer = self.predicate(text, stopper())
        if answer:
            self.passed = text
        else:
            self.failed = text
        return answer


def dependent_required_check(rules: list[tuple[str, tuple[str, ...]]]) -> tuple[Ok, Explain]:
    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping):
            return True
        for name, needs in rules:
            if name in x:
                for need in needs:
                    if need not in x:
                        return False
        return True

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name, needs in rules:
            if name in x:
                for need in needs:
                    if need not in x:
                        because = json.dumps(name, ensure_ascii=False)
                        problems.add(
                            (*path, need), f"required property is missing ({because} is present)"
                        )

    return ok, explain
