"""ECMA-262 regular expressions for JSON Schema ``pattern``, on the stdlib, that cannot stall.

This module owns what a schema ``pattern`` means and how it is run. :func:`compile_pattern`
parses the pattern as ECMA-262 with the ``u`` flag (what JSON Schema prescribes), refuses
an ECMA syntax error at once (:class:`EcmaPatternError`, with the pattern, the position
and a fix), and returns a predicate with JSON Schema semantics: an unanchored search.

Semantics (ECMA, not Python ``re``): ``^``/``$`` only at the very start/end of the string
(never multiline, ``$`` never before a trailing newline); ``\\d`` is ``[0-9]``, ``\\w`` is
``[A-Za-z0-9_]`` and ``\\b``/``\\B`` use it; ``\\s`` is ECMA's WhiteSpace and
LineTerminator set; ``.`` matches any code point but ``\\n \\r \\u2028 \\u2029``;
``\\p{…}``/``\\P{…}`` take General_Category values by short or long name (``L``,
``Letter``, ``Nd``, ``digit``, ``gc=Lu``, ``General_Category=Letter``) and the binary
properties ``Any``, ``ASCII`` and ``Assigned``. Script, Script_Extensions and the other
binary properties need Unicode data that :mod:`unicodedata` lacks and are refused with a
message saying so. Python-only syntax (``(?P<…>)``, ``\\A``, ``\\Z``, inline flags) is an
ECMA syntax error under the ``u`` flag and is refused, never reinterpreted.

No stall — the design. A check on caller input must not hold the interpreter past a bound,
and Python's ``re`` holds the GIL for as long as it runs. So every pattern gets, when it
is compiled, a static bound on what ``re`` may cost on an input of n characters, and each
input runs on ``re`` only while that bound stays under :data:`_BACKTRACKING_BUDGET`
(about 10 ms of C); anything else runs on the linear engine:

* The bound. A choice point (an alternation, or a quantifier that may repeat or stop) is
  *deterministic* when the sets of characters its options can start with — plus, for an
  option that can match empty, what may follow it — are pairwise disjoint. If all are,
  the characters consumed from a start position fix the path through the pattern, every
  rejected option fails on its first character, and ``re`` does O(n·m) work per start
  position (m: the pattern's size). An ambiguous choice point outside every loop and
  lookaround multiplies the paths by its number of options, or by n for a quantifier
  without an upper bound (``^.*bar$``: O(n²·m)); one inside a loop or a lookaround can
  multiply them exponentially (``^(a+)+$``), so such a pattern never runs on ``re``.
  Lookaround bodies must also be free of unbounded quantifiers, lookbehinds of fixed
  width. An unanchored search (no leading ``^``) with an unbounded quantifier tries up
  to n start positions: one more factor n (``[a-z]+1`` against 40 000 letters: seconds).
* The linear engine: a Thompson NFA simulated in pure Python (every start position at
  once, a set of states per character), O(n·m) steps, lookarounds included (each is
  swept over the text once per call). It memoizes its steps as a lazy DFA. Being Python
  bytecode, it lets the interpreter switch threads every few milliseconds, so other
  calls' deadlines, pings and timers keep their times while it runs, and the host's
  deadline for the call itself still holds. ``^(a+)+$`` against ``"a"*28 + "!"`` is
  decided in a few hundred steps, well under a millisecond.

So common patterns (``^[a-z0-9_]+$``, ``^\\d{4}-\\d{2}$``) run on ``re``, compiled once,
on any realistic input; a hostile pattern or a huge input costs the linear engine's time,
never a stall. Backreferences need backtracking: they are accepted only in patterns whose
bound is O(n·m) (deterministic, anchored or without unbounded quantifiers), and refused
otherwise with a message that says why. A pattern whose counted repeats would expand the
linear engine past :data:`_MAX_STATES` states is refused too. Both refusals happen when
the schema is built, never while validating.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeAlias

from .errors import EcmaPatternError, OperationCancelledError

__all__ = ["EcmaPatternError", "compile_pattern", "compile_pattern_set", "compile_search"]

_MAX_CODE_POINT = 0x10FFFF
# Pseudo characters for the determinism analysis: the end of the input, and "this option
# can match empty" (two options that both can are never disjoint).
_END = 0x110000
_EMPTY = 0x110001
# Parsing, the analysis and the engines recurse once per group level.
_MAX_NESTING = 100
# The linear engine refuses a pattern that would need more states than this.
_MAX_STATES = 20_000
# re holds the interpreter while it runs, so it takes an input only while the bound on its
# work stays under this many units (n*m for a deterministic pattern, n*n*m for an
# unanchored [a-z]+1, ...): 1-50 ns a unit in C, so about 10 ms at most
# (benchmarks/pattern_speed.py). Longer inputs go to the linear engine.
_BACKTRACKING_BUDGET = 125_000
# ...unless that leaves re so few characters that it is not worth compiling for.
_SHORTEST_FOR_RE = 16


# --- character sets: sorted, disjoint, non-adjacent inclusive ranges ------------------

_Ranges = tuple[tuple[int, int], ...]


def _normalize(ranges: Sequence[tuple[int, int]]) -> _Ranges:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            if high > merged[-1][1]:
                merged[-1] = (merged[-1][0], high)
        else:
            merged.append((low, high))
    return tuple(merged)


def _complement(ranges: _Ranges) -> _Ranges:
    out: list[tuple[int, int]] = []
    next_low = 0
    for low, high in ranges:
        if low > next_low:
            out.append((next_low, low - 1))
        next_low = high + 1
    if next_low <= _MAX_CODE_POINT:
        out.append((next_low, _MAX_CODE_POINT))
    return tuple(out)


def _intersects(a: _Ranges, b: _Ranges) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


def _union(a: _Ranges, b: _Ranges) -> _Ranges:
    return _normalize(a + b) if a and b else (a or b)


_DIGIT: _Ranges = ((0x30, 0x39),)
_WORD: _Ranges = _normalize([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
# ECMA WhiteSpace (TAB VT FF SP NBSP ZWNBSP and Space_Separator) plus LineTerminator.
# Space_Separator has been this set since Unicode 6.3.
_SPACE: _Ranges = _normalize(
    [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
     (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
     (0xFEFF, 0xFEFF)]
)  # fmt: skip
_LINE_TERMINATORS: _Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_DOT: _Ranges = _complement(_LINE_TERMINATORS)
_ANY: _Ranges = ((0, _MAX_CODE_POINT),)


# --- Unicode properties (tables built on first use) ------------------------------------

_GENERAL_CATEGORIES: dict[str, tuple[str, ...]] = {
    "C": ("Cc", "Cf", "Cs", "Co", "Cn"), "Cc": ("Cc",), "Cf": ("Cf",), "Cn": ("Cn",),
    "Co": ("Co",), "Cs": ("Cs",),
    "L": ("Lu", "Ll", "Lt", "Lm", "Lo"), "LC": ("Lu", "Ll", "Lt"), "Ll": ("Ll",),
    "Lm": ("Lm",), "Lo": ("Lo",), "Lt": ("Lt",), "Lu": ("Lu",),
    "M": ("Mn", "Mc", "Me"), "Mc": ("Mc",), "Me": ("Me",), "Mn": ("Mn",),
    "N": ("Nd", "Nl", "No"), "Nd": ("Nd",), "Nl": ("Nl",), "No": ("No",),
    "P": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"), "Pc": ("Pc",), "Pd": ("Pd",),
    "Pe": ("Pe",), "Pf": ("Pf",), "Pi": ("Pi",), "Po": ("Po",), "Ps": ("Ps",),
    "S": ("Sm", "Sc", "Sk", "So"), "Sc": ("Sc",), "Sk": ("Sk",), "Sm": ("Sm",),
    "So": ("So",),
    "Z": ("Zs", "Zl", "Zp"), "Zl": ("Zl",), "Zp": ("Zp",), "Zs": ("Zs",),
}  # fmt: skip
# Long names and other aliases of General_Category values (Unicode PropertyValueAliases).
_CATEGORY_ALIASES: dict[str, str] = {
    "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Unassigned": "Cn",
    "Private_Use": "Co", "Surrogate": "Cs", "Letter": "L", "Cased_Letter": "LC",
    "Lowercase_Letter": "Ll", "Modifier_Letter": "Lm", "Other_Letter": "Lo",
    "Titlecase_Letter": "Lt", "Uppercase_Letter": "Lu", "Mark": "M", "Combining_Mark": "M",
    "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Nonspacing_Mark": "Mn", "Number": "N",
    "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
    "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc",
    "Dash_Punctuation": "Pd", "Close_Punctuation": "Pe", "Final_Punctuation": "Pf",
    "Initial_Punctuation": "Pi", "Other_Punctuation": "Po", "Open_Punctuation": "Ps",
    "Symbol": "S", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Math_Symbol": "Sm",
    "Other_Symbol": "So", "Separator": "Z", "Line_Separator": "Zl",
    "Paragraph_Separator": "Zp", "Space_Separator": "Zs",
}  # fmt: skip
_SCRIPT_NAMES = frozenset({"Script", "sc", "Script_Extensions", "scx"})
_CATEGORY_NAMES = frozenset({"General_Category", "gc"})
_category_table: dict[str, _Ranges] | None = None
_property_cache: dict[str, _Ranges] = {}


def _categories() -> dict[str, _Ranges]:
    """Ranges of every two-letter General_Category, from one pass over all code points."""
    global _category_table
    if _category_table is None:
        import unicodedata

        category = unicodedata.category
        table: dict[str, list[tuple[int, int]]] = {}
        start, current = 0, category("\x00")
        for code in range(1, _MAX_CODE_POINT + 2):
            name = category(chr(code)) if code <= _MAX_CODE_POINT else ""
            if name != current:
                table.setdefault(current, []).append((start, code - 1))
                start, current = code, name
        _category_table = {name: tuple(ranges) for name, ranges in table.items()}
    return _category_table


def _property(name: str, value: str | None) -> _Ranges | str:
    """The ranges of ``\\p{name}`` / ``\\p{name=value}``, or a reason it is refused."""
    key = name if value is None else f"{name}={value}"
    if key in _property_cache:
        return _property_cache[key]
    if value is not None:
        if name in _SCRIPT_NAMES:
            return (
                f"\\p{{{key}}} needs Unicode script data, which Python's unicodedata does "
                "not have; list the characters in a class instead, e.g. [\\u0370-\\u03ff]"
            )
        if name not in _CATEGORY_NAMES:
            return f"unknown Unicode property {name!r}; use General_Category (gc)"
        short = _CATEGORY_ALIASES.get(value, value)
        if short not in _GENERAL_CATEGORIES:
            return f"unknown General_Category value {value!r}; e.g. L, Letter, Nd, Lu"
    elif name in ("Any", "ASCII", "Assigned"):
        if name == "Any":
            ranges = _ANY
        elif name == "ASCII":
            ranges = ((0, 0x7F),)
        else:
            ranges = _complement(_categories().get("Cn", ()))
        _property_cache[key] = ranges
        return ranges
    else:
        short = _CATEGORY_ALIASES.get(name, name)
        if short not in _GENERAL_CATEGORIES:
            if name in _SCRIPT_NAMES or name in _CATEGORY_NAMES:
                return f"\\p{{{name}}} needs a value, e.g. \\p{{{name}=...}}"
            return (
                f"\\p{{{name}}} is not a General_Category value this validator supports "
                "(binary properties other than Any, ASCII and Assigned need Unicode data "
                "Python's unicodedata does not have); use e.g. \\p{L}, \\p{Nd} or a class"
            )
    table = _categories()
    parts: list[tuple[int, int]] = []
    for two in _GENERAL_CATEGORIES[short]:
        parts.extend(table.get(two, ()))
    ranges = _normalize(parts)
    _property_cache[key] = ranges
    return ranges


# --- the syntax tree -------------------------------------------------------------------


class _Chars:
    """One code point from a set."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: _Ranges) -> None:
        self.ranges = ranges


class _Seq:
    __slots__ = ("items",)

    def __init__(self, items: list[_Node]) -> None:
        self.items = items


class _Alt:
    __slots__ = ("options",)

    def __init__(self, options: list[_Node]) -> None:
        self.options = options


class _Repeat:
    __slots__ = ("body", "greedy", "high", "low")

    def __init__(self, body: _Node, low: int, high: int | None, greedy: bool) -> None:
        self.body = body
        self.low = low
        self.high = high
        self.greedy = greedy


class _Group:
    """A capturing group (``index`` from 1) or, with ``index`` None, a plain group."""

    __slots__ = ("body", "index")

    def __init__(self, body: _Node, index: int | None) -> None:
        self.body = body
        self.index = index


class _Assert:
    """``^``, ``$``, ``b`` (word boundary) or ``B``."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind


class _Look:
    __slots__ = ("ahead", "body", "negative")

    def __init__(self, body: _Node, ahead: bool, negative: bool) -> None:
        self.body = body
        self.ahead = ahead
        self.negative = negative


class _Backref:
    """``\\N`` or ``\\k<name>``; ``forward`` when ECMA makes it always match empty."""

    __slots__ = ("forward", "index")

    def __init__(self, index: int, forward: bool) -> None:
        self.index = index
        self.forward = forward


_Node: TypeAlias = "_Chars | _Seq | _Alt | _Repeat | _Group | _Assert | _Look | _Backref"


# --- the parser (ECMA-262 Pattern grammar, u flag) -------------------------------------

_SYNTAX_CHARACTERS = frozenset("^$\\.*+?()[]{}|/")
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_CLASS_ESCAPES: dict[str, _Ranges] = {
    "d": _DIGIT, "D": _complement(_DIGIT), "w": _WORD, "W": _complement(_WORD),
    "s": _SPACE, "S": _complement(_SPACE),
}  # fmt: skip
_HEX = frozenset("0123456789abcdefABCDEF")
_PYTHON_ONLY_ESCAPES = {
    "A": "use ^ (a pattern is never multiline)",
    "Z": "use $ (it matches only at the very end)",
    "z": "use $ (it matches only at the very end)",
    "a": "write \\x07",
    "N": "write the character or a \\u{...} escape",
    "U": "use \\u{...}",
    "e": "write \\x1b",
}


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.pos = 0
        self.group_count, self.names = self._scan_groups()
        self.opened = 0
        self.open_groups: list[int] = []
        self.depth = 0

    def fail(self, reason: str, position: int | None = None) -> EcmaPatternError:
        return EcmaPatternError(self.src, self.pos if position is None else position, reason)

    def _scan_groups(self) -> tuple[int, dict[str, int]]:
        """Count capturing groups and find their names before parsing: ``\\2`` and
        ``\\k<name>`` may refer to a group that opens later."""
        src, count, names, i, in_class = self.src, 0, {}, 0, False
        while i < len(src):
            char = src[i]
            if char == "\\":
                i += 2
                continue
            if in_class:
                in_class = char != "]"
            elif char == "[":
                in_class = True
            elif char == "(":
                if not src.startswith("?", i + 1):
                    count += 1
                elif src.startswith("?<", i + 1) and src[i + 3 : i + 4] not in ("=", "!"):
                    count += 1
                    end = src.find(">", i + 3)
                    if end > 0:
                        name = src[i + 3 : end]
                        if name in names:
                            raise EcmaPatternError(
                                src, i + 3, f"duplicate group name {name!r}; rename one"
                            )
                        names[name] = count
            i += 1
        return count, names

    def peek(self, text: str) -> bool:
        return self.src.startswith(text, self.pos)

    def parse(self) -> _Node:
        node = self.disjunction()
        if self.pos < len(self.src):
            # only an unbalanced ')' stops a disjunction early
            raise self.fail("unmatched ')'; remove it or escape it as \\)")
        return node

    def disjunction(self) -> _Node:
        options = [self.alternative()]
        while self.peek("|"):
            self.pos += 1
            options.append(self.alternative())
        return options[0] if len(options) == 1 else _Alt(options)

    def alternative(self) -> _Node:
        items: list[_Node] = []
        src = self.src
        while self.pos < len(src) and src[self.pos] not in "|)":
            items.append(self.term())
        return items[0] if len(items) == 1 else _Seq(items)

    def term(self) -> _Node:
        start = self.pos
        char = self.src[self.pos]
        atom: _Node
        if char == "^" or char == "$":
            self.pos += 1
            return self.unquantifiable(_Assert(char))
        if char == "\\" and self.src[self.pos + 1 : self.pos + 2] in ("b", "B"):
            self.pos += 2
            return self.unquantifiable(_Assert(self.src[self.pos - 1]))
        if char == "(":
            atom = self.group()
            if isinstance(atom, _Look):
                return self.unquantifiable(atom)
        elif char == ".":
            self.pos += 1
            atom = _Chars(_DOT)
        elif char == "[":
            atom = _Chars(self.character_class())
        elif char == "\\":
            atom = self.atom_escape()
        elif char in "*+?":
            raise self.fail(f"nothing to repeat before {char!r}; escape it as \\{char}")
        elif char == "{":
            if self.quantifier_ahead():
                raise self.fail("nothing to repeat before '{'; escape it as \\{")
            raise self.fail("a lone '{' is a syntax error; escape it as \\{")
        elif char in "]}":
            raise self.fail(f"a lone {char!r} is a syntax error; escape it as \\{char}")
        else:
            self.pos += 1
            atom = _Chars(((ord(char), ord(char)),))
        return self.quantified(atom, start)

    def unquantifiable(self, node: _Node) -> _Node:
        if self.pos < len(self.src) and (self.src[self.pos] in "*+?" or self.quantifier_ahead()):
            raise self.fail("an assertion cannot be repeated; remove the quantifier")
        return node

    def quantifier_ahead(self) -> bool:
        return re.match(r"\{[0-9]+(?:,[0-9]*)?\}", self.src[self.pos :]) is not None

    def quantified(self, atom: _Node, start: int) -> _Node:
        if self.pos >= len(self.src):
            return atom
        char = self.src[self.pos]
        high: int | None
        if char == "*":
            low, high = 0, None
            self.pos += 1
        elif char == "+":
            low, high = 1, None
            self.pos += 1
        elif char == "?":
            low, high = 0, 1
            self.pos += 1
        elif char == "{":
            found = re.match(r"\{([0-9]+)(,([0-9]*))?\}", self.src[self.pos :])
            if found is None:
                raise self.fail("a lone '{' is a syntax error; escape it as \\{")
            low = int(found.group(1))
            high = (
                low if found.group(2) is None else (int(found.group(3)) if found.group(3) else None)
            )
            if high is not None and high < low:
                raise self.fail(f"numbers out of order in {found.group(0)}; write {{{high},{low}}}")
            self.pos += found.end()
        else:
            return atom
        greedy = True
        if self.peek("?"):
            greedy = False
            self.pos += 1
        return _Repeat(atom, low, high, greedy)

    def group(self) -> _Node:
        start = self.pos
        self.pos += 1
        look: tuple[bool, bool] | None = None
        index: int | None = None
        if self.peek("?"):
            for prefix, ahead, negative in (
                ("?=", True, False), ("?!", True, True), ("?<=", False, False),
                ("?<!", False, True),
            ):  # fmt: skip
                if self.peek(prefix):
                    look = (ahead, negative)
                    self.pos += len(prefix)
                    break
            else:
                if self.peek("?:"):
                    self.pos += 2
                elif self.peek("?<"):
                    end = self.src.find(">", self.pos)
                    name = self.src[self.pos + 2 : end] if end > 0 else ""
                    if not _is_group_name(name):
                        raise self.fail(
                            f"invalid group name {name!r}; a name is an identifier "
                            "such as (?<year>...)",
                            self.pos + 2,
                        )
                    self.pos = end + 1
                    self.opened += 1
                    index = self.opened
                elif self.peek("?P"):
                    raise self.fail(
                        "(?P...) is Python syntax; ECMA-262 names a group (?<name>...) "
                        "and refers to it with \\k<name>",
                        start + 1,
                    )
                else:
                    raise self.fail(
                        "invalid group: ECMA-262 has no inline flags or other (?...) "
                        "groups here; use (?:...), (?<name>...), (?=...), (?!...), "
                        "(?<=...) or (?<!...)",
                        start + 1,
                    )
        else:
            self.opened += 1
            index = self.opened
        if index is not None:
            self.open_groups.append(index)
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise self.fail(
                f"groups nest deeper than {_MAX_NESTING} levels; flatten the pattern", start
            )
        body = self.disjunction()
        self.depth -= 1
        if index is not None:
            self.open_groups.pop()
        if not self.peek(")"):
            raise self.fail("unterminated group; add ')'", start)
        self.pos += 1
        if look is not None:
            return _Look(body, look[0], look[1])
        return _Group(body, index)

    def backref(self, index: int) -> _Backref:
        # A group that has not closed yet (it opens later, or encloses the reference)
        # has no value here, and ECMA matches the empty string.
        forward = index > self.opened or index in self.open_groups
        return _Backref(index, forward)

    def atom_escape(self) -> _Node:
        start = self.pos
        self.pos += 1
        if self.pos >= len(self.src):
            raise self.fail("the pattern ends with a lone '\\'; escape it as \\\\", start)
        char = self.src[self.pos]
        if char in "123456789":
            found = re.match(r"[0-9]+", self.src[self.pos :])
            assert found is not None
            index = int(found.group(0))
            if index > self.group_count:
                raise self.fail(
                    f"\\{index} refers to group {index}, but the pattern has "
                    f"{self.group_count}; for the character use \\x or \\u escapes",
                    start,
                )
            self.pos += found.end()
            return self.backref(index)
        if char == "k":
            if not self.peek("k<"):
                raise self.fail("\\k must be followed by <name>", start)
            end = self.src.find(">", self.pos)
            name = self.src[self.pos + 2 : end] if end > 0 else ""
            if name not in self.names:
                raise self.fail(f"\\k<{name}> names no group; define (?<{name}>...)", start)
            self.pos = end + 1
            return self.backref(self.names[name])
        return _Chars(self.class_or_char_escape(start, in_class=False))

    def class_or_char_escape(self, start: int, in_class: bool) -> _Ranges:
        """After a backslash at ``start``: a class escape's set or one character."""
        src = self.src
        char = src[self.pos]
        if char in _CLASS_ESCAPES:
            self.pos += 1
            return _CLASS_ESCAPES[char]
        if char in "pP":
            return self.property_escape(start)
        code = self.character_escape(start, in_class)
        return ((code, code),)

    def character_escape(self, start: int, in_class: bool) -> int:
        src = self.src
        char = src[self.pos]
        self.pos += 1
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char == "c":
            letter = src[self.pos : self.pos + 1]
            if letter.isascii() and letter.isalpha():
                self.pos += 1
                return ord(letter) % 32
            raise self.fail("\\c must be followed by a letter A-Z or a-z", start)
        if char == "0":
            if src[self.pos : self.pos + 1].isdigit():
                raise self.fail("octal escapes are not allowed; use \\x or \\u escapes", start)
            return 0
        if char == "x":
            digits = src[self.pos : self.pos + 2]
            if len(digits) == 2 and set(digits) <= _HEX:
                self.pos += 2
                return int(digits, 16)
            raise self.fail("\\x must be followed by two hex digits", start)
        if char == "u":
            return self.unicode_escape(start)
        if in_class and char == "b":
            return 0x08
        if in_class and char == "-":
            return 0x2D
        if char in _SYNTAX_CHARACTERS:
            return ord(char)
        if char in _PYTHON_ONLY_ESCAPES:
            raise self.fail(
                f"\\{char} is not an ECMA-262 escape; {_PYTHON_ONLY_ESCAPES[char]}", start
            )
        if in_class and char in "123456789":
            raise self.fail(f"\\{char} is not allowed in a class; use \\x or \\u escapes", start)
        raise self.fail(
            f"\\{char} is not an ECMA-262 escape; write {char!r} without the backslash", start
        )

    def unicode_escape(self, start: int) -> int:
        src = self.src
        if self.peek("{"):
            end = src.find("}", self.pos)
            digits = src[self.pos + 1 : end] if end > 0 else ""
            if digits and set(digits) <= _HEX and int(digits, 16) <= _MAX_CODE_POINT:
                self.pos = end + 1
                return int(digits, 16)
            raise self.fail("\\u{...} needs hex digits of a code point up to 10FFFF", start)
        digits = src[self.pos : self.pos + 4]
        if len(digits) != 4 or not set(digits) <= _HEX:
            raise self.fail("\\u must be followed by four hex digits or {hex}", start)
        self.pos += 4
        code = int(digits, 16)
        # A surrogate pair written as two escapes is one code point under the u flag.
        if 0xD800 <= code <= 0xDBFF and self.peek("\\u"):
            low = src[self.pos + 2 : self.pos + 6]
            if len(low) == 4 and set(low) <= _HEX and 0xDC00 <= int(low, 16) <= 0xDFFF:
                self.pos += 6
                return 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        return code

    def property_escape(self, start: int) -> _Ranges:
        negated = self.src[self.pos] == "P"
        self.pos += 1
        found = re.match(r"\{([A-Za-z_]+)(?:=([A-Za-z0-9_]+))?\}", self.src[self.pos :])
        if found is None:
            raise self.fail("\\p must be followed by {Property} or {Property=Value}", start)
        ranges = _property(found.group(1), found.group(2))
        if isinstance(ranges, str):
            raise self.fail(ranges, start)
        self.pos += found.end()
        return _complement(ranges) if negated else ranges

    def character_class(self) -> _Ranges:
        start = self.pos
        self.pos += 1
        negated = self.peek("^")
        if negated:
            self.pos += 1
        parts: list[tuple[int, int]] = []
        src = self.src
        while True:
            if self.pos >= len(src):
                raise self.fail("unterminated character class; add ']'", start)
            if src[self.pos] == "]":
                self.pos += 1
                break
            atom_start = self.pos
            first = self.class_atom()
            if (
                self.peek("-")
                and not src.startswith("]", self.pos + 1)
                and (self.pos + 1 < len(src))
            ):
                self.pos += 1
                second = self.class_atom()
                if (
                    len(first) != 1
                    or len(second) != 1
                    or first[0][0] != first[0][1]
                    or (second[0][0] != second[0][1])
                ):
                    raise self.fail(
                        "a class escape cannot bound a range; escape the '-' as \\-",
                        atom_start,
                    )
                low, high = first[0][0], second[0][0]
                if low > high:
                    raise self.fail(
                        f"range out of order in character class ({chr(low)!r} > "
                        f"{chr(high)!r}); swap its ends",
                        atom_start,
                    )
                parts.append((low, high))
            else:
                parts.extend(first)
        ranges = _normalize(parts)
        return _complement(ranges) if negated else ranges

    def class_atom(self) -> _Ranges:
        src = self.src
        char = src[self.pos]
        if char == "\\":
            start = self.pos
            self.pos += 1
            if self.pos >= len(src):
                raise self.fail("unterminated character class; add ']'", start)
            return self.class_or_char_escape(start, in_class=True)
        self.pos += 1
        return ((ord(char), ord(char)),)


def _is_group_name(name: str) -> bool:
    return bool(name) and name.replace("$", "_").isidentifier()


# --- the determinism analysis (may re run it?) -----------------------------------------

# What may follow the whole pattern (or a lookaround's body): its end, where a match is
# found and nothing is tried any more.
_AT_END: _Ranges = ((_END, _END),)


# What re may cost, as (c, k): at most c * n**k steps on an input of n characters. Zero
# cost is (0, 0); coefficients are capped so that products stay small integers.
_Cost: TypeAlias = "tuple[int, int]"
_ZERO: _Cost = (0, 0)
_ONE: _Cost = (1, 0)
_N: _Cost = (1, 1)
_COEFFICIENT_CAP = 1 << 40


def _plus(a: _Cost, b: _Cost) -> _Cost:
    """An upper bound of a + b (for n >= 1)."""
    if not a[0]:
        return b
    if not b[0]:
        return a
    return min(a[0] + b[0], _COEFFICIENT_CAP), max(a[1], b[1])


def _times(a: _Cost, b: _Cost) -> _Cost:
    if not a[0] or not b[0]:
        return _ZERO
    return min(a[0] * b[0], _COEFFICIENT_CAP), a[1] + b[1]


def _larger(a: _Cost, b: _Cost) -> _Cost:
    return a if (a[1], a[0]) >= (b[1], b[0]) else b


class _Analysis:
    """Bounds what ``re`` costs on a pattern, or finds why it must not run it.

    ``re`` backtracks: at a choice point it takes one option and comes back for the next
    when the rest of the pattern fails. A choice point is *deterministic* when the sets of
    characters its options can start with (plus, for an option that can match empty, what
    may follow it) are pairwise disjoint: then every rejected option fails on its first
    character and a single path survives, so ``re`` reads each character about once per
    start position. An *ambiguous* one lets several paths go on, each trying the rest of
    the pattern again. :meth:`measure` counts this for every node (the number of ways it
    can end, and the work inside it beyond reading what it consumes once), and composes
    the counts along sequences, so ``^.*\\.py$`` (``.*`` may stop at any of n places, each
    followed by a fixed-width rest) is O(n), while ``^.*a.*b$`` is O(n²). An ambiguous
    choice point inside a loop can multiply the paths exponentially (``^(a+)+$``): such a
    pattern never runs on ``re`` (``reason`` says why). A lookaround is atomic in ``re``:
    it costs one evaluation of its body per visit.
    """

    def __init__(self, tree: _Node) -> None:
        self.groups: dict[int, _Node] = {}
        self._collect(tree)
        self.reason: str | None = None  # why re cannot run it, or None
        self.ambiguity: str | None = None  # the first ambiguous choice point, in words

    def _collect(self, node: _Node) -> None:
        if isinstance(node, _Group) and node.index is not None:
            self.groups[node.index] = node.body
        if isinstance(node, (_Seq, _Alt)):
            for child in node.items if isinstance(node, _Seq) else node.options:
                self._collect(child)
        elif isinstance(node, (_Repeat, _Group, _Look)):
            self._collect(node.body)

    def first(self, node: _Node) -> tuple[_Ranges, bool]:
        """The characters a match of ``node`` can start with, and whether it can be empty."""
        if isinstance(node, _Chars):
            return node.ranges, False
        if isinstance(node, _Seq):
            out: _Ranges = ()
            for item in node.items:
                chars, nullable = self.first(item)
                out = _union(out, chars)
                if not nullable:
                    return out, False
            return out, True
        if isinstance(node, _Alt):
            out, any_nullable = (), False
            for option in node.options:
                chars, nullable = self.first(option)
                out = _union(out, chars)
                any_nullable = any_nullable or nullable
            return out, any_nullable
        if isinstance(node, _Repeat):
            chars, nullable = self.first(node.body)
            return chars, nullable or node.low == 0
        if isinstance(node, _Group):
            return self.first(node.body)
        if isinstance(node, _Backref) and not node.forward:
            # the captured text is a match of the group (or empty, if it did not take part)
            return self.first(self.groups[node.index])[0], True
        return (), True  # assertions and lookarounds consume nothing

    def ambiguous(self, what: str, in_loop: bool) -> bool:
        """Record an ambiguous choice point; True if it rules ``re`` out altogether."""
        if in_loop:
            self.reason = f"{what}, inside a repeated group"
            return True
        self.ambiguity = self.ambiguity or what
        return False

    def measure(self, node: _Node, follow: _Ranges, in_loop: bool) -> tuple[_Cost, _Cost, _Cost]:
        """``(exits, cost, width)`` of ``node`` entered once, followed by characters in
        ``follow``: the ways it can end, from each of which re tries the rest of the
        pattern; the steps re takes in it beyond reading once what it consumes; and how
        many characters it can consume."""
        if self.reason is not None:
            return _ONE, _ZERO, _ONE
        if isinstance(node, _Chars):
            return _ONE, _ZERO, _ONE
        if isinstance(node, _Seq):
            # follow of each item: what the rest of the sequence (then ``follow``) starts with
            follows: list[_Ranges] = []
            after = follow
            for item in reversed(node.items):
                follows.append(after)
                chars, nullable = self.first(item)
                after = _union(chars, after) if nullable else chars
            items = node.items
            measured = [
                self.measure(item, item_follow, in_loop)
                for item, item_follow in zip(items, reversed(follows), strict=True)
            ]
            paths, cost, width = _ONE, _ZERO, _ZERO
            for index, (exits, item_cost, item_width) in enumerate(measured):
                cost = _plus(cost, _times(paths, item_cost))
                if paths != _ONE:
                    # every path but the first reads this item again
                    cost = _plus(cost, _times(paths, _plus(item_width, _ONE)))
                width = _plus(width, item_width)
                if exits[1] and self.reads_apart(items[index + 1 :], measured[index + 1 :]):
                    # this item may stop at any of n places, and the rest, tried from each,
                    # reads no further than the next place it could start again: all those
                    # tries together read the input about twice (^.*\\.[a-z]+$)
                    cost = _plus(cost, _times(paths, _times((exits[0], 0), _N)))
                    rest = measured[index + 1 :]
                    for _, _, rest_width in rest:
                        width = _plus(width, rest_width)
                    paths = _times(paths, exits)
                    break
                paths = _times(paths, exits)
            return paths, cost, _clamp(width)
        if isinstance(node, _Alt):
            seen: _Ranges = ()
            overlap = False
            for option in node.options:
                chars, nullable = self.first(option)
                if nullable:
                    chars = _union(chars, _union(follow, ((_EMPTY, _EMPTY),)))
                overlap = overlap or _intersects(seen, chars)
                seen = _union(seen, chars)
            measured = [self.measure(option, follow, in_loop) for option in node.options]
            exits, cost, width = _ZERO, _ZERO, _ZERO
            for option_exits, option_cost, option_width in measured:
                width = _plus(width, option_width)
                cost = _plus(cost, option_cost)
                if overlap:  # each option may be tried in full, and each may go on
                    cost = _plus(cost, option_width)
                    exits = _plus(exits, option_exits)
                else:  # one option goes on; the others fail on their first character
                    exits = _larger(exits, option_exits)
            if overlap and self.ambiguous(
                "two alternatives can start with the same character", in_loop
            ):
                return _ONE, _ZERO, _ONE
            return exits, cost, _clamp(width)
        if isinstance(node, _Repeat):
            chars, nullable = self.first(node.body)
            if nullable and node.high != node.low:
                self.reason = "a repeated or optional group can match the empty string"
                return _ONE, _ZERO, _ONE
            more = node.high is None or node.high > 1
            body_follow = _union(chars, follow) if more else follow
            _, body_cost, body_width = self.measure(node.body, body_follow, in_loop or more)
            count = _N if node.high is None else (max(node.high, 1), 0)
            exits = _ONE
            if node.high != node.low and _intersects(chars, follow):
                what = "a quantifier's body can start with a character that may also follow it"
                if self.ambiguous(what, in_loop):
                    return _ONE, _ZERO, _ONE
                exits = _N if node.high is None else (node.high - node.low + 1, 0)
            return exits, _times(count, body_cost), _clamp(_times(count, body_width))
        if isinstance(node, _Group):
            return self.measure(node.body, follow, in_loop)
        if isinstance(node, _Look):
            if not node.ahead:
                low, high = _width(node.body)
                if low != high:
                    self.reason = "a lookbehind of variable width"
                    return _ONE, _ZERO, _ONE
            _, body_cost, body_width = self.measure(node.body, _AT_END, in_loop)
            # atomic: re stops at its body's first match; each visit reads it again
            return _ONE, _plus(_plus(body_cost, body_width), _ONE), _ZERO
        if isinstance(node, _Backref):
            return _ONE, _ZERO, (_N if not node.forward else _ZERO)
        return _ONE, _ZERO, _ZERO  # an assertion

    def reads_apart(self, rest: list[_Node], measured: list[tuple[_Cost, _Cost, _Cost]]) -> bool:
        """Whether ``rest`` (a sequence's tail) starts with one character and never reads a
        character it could start with after it, without choices or lookarounds: then two
        tries of it from different places read no common character but the first."""
        if not rest or any(m[0] != _ONE or m[1] != _ZERO for m in measured):
            return False
        head = rest[0]
        while isinstance(head, _Group):
            head = head.body
        if not isinstance(head, _Chars):
            return False
        after: _Ranges = ()
        for item in rest[1:]:
            chars = _consumed(item)
            if chars is None:
                return False
            after = _union(after, chars)
        return not _intersects(head.ranges, after)

    def failing_width(self, node: _Node) -> _Cost:
        """How many characters a match attempt may read before ``node`` makes it fail."""
        if isinstance(node, _Seq):
            worst, read = _ZERO, _ZERO
            for item in node.items:
                worst = _larger(worst, _plus(read, self.failing_width(item)))
                read = _plus(read, self.measure(item, _AT_END, False)[2])
            return worst
        if isinstance(node, _Alt):
            worst = _ZERO
            for option in node.options:
                worst = _larger(worst, self.failing_width(option))
            return worst
        if isinstance(node, _Repeat):
            # it fails only short of its minimum: after at most ``low`` passes of its body
            body = self.measure(node.body, _AT_END, False)[2]
            return _plus(_times((node.low, 0), body), self.failing_width(node.body))
        if isinstance(node, _Group):
            return self.failing_width(node.body)
        if isinstance(node, _Backref):
            return _N
        return _ONE  # a character, an assertion, a lookaround (whose reading is its cost)

    def total(self, tree: _Node) -> _Cost:
        """What re may cost for a search in n characters."""
        _, cost, width = self.measure(tree, _AT_END, False)
        if _anchored(tree):
            return _plus(_plus(width, cost), _ONE)
        # a search tries up to n start positions; an attempt that fails re-reads what it read
        per_start = _plus(_plus(cost, self.failing_width(tree)), _ONE)
        return _times(_N, per_start)


def _clamp(width: _Cost) -> _Cost:
    """No match consumes more than the n characters there are."""
    return _N if width[1] >= 1 else width


def _consumed(node: _Node) -> _Ranges | None:
    """Every character ``node`` may consume; None if it reads more than it consumes (a
    lookaround, a backreference)."""
    if isinstance(node, _Chars):
        return node.ranges
    if isinstance(node, (_Seq, _Alt)):
        out: _Ranges = ()
        for child in node.items if isinstance(node, _Seq) else node.options:
            chars = _consumed(child)
            if chars is None:
                return None
            out = _union(out, chars)
        return out
    if isinstance(node, (_Repeat, _Group)):
        return _consumed(node.body)
    if isinstance(node, _Assert):
        return ()
    return None


def _width(node: _Node) -> tuple[int, int | None]:
    """The shortest and longest match of ``node`` (None: unbounded or unknown)."""
    if isinstance(node, _Chars):
        return 1, 1
    if isinstance(node, _Seq):
        low, high = 0, 0  # type: tuple[int, int | None]
        for item in node.items:
            a, b = _width(item)
            low += a
            high = None if high is None or b is None else high + b
        return low, high
    if isinstance(node, _Alt):
        widths = [_width(option) for option in node.options]
        highs = [b for _, b in widths]
        return min(a for a, _ in widths), (
            None if any(b is None for b in highs) else max(b for b in highs if b is not None)
        )
    if isinstance(node, _Repeat):
        a, b = _width(node.body)
        return a * node.low, (None if b is None or node.high is None else b * node.high)
    if isinstance(node, _Group):
        return _width(node.body)
    if isinstance(node, _Backref):
        return 0, None
    return 0, 0


def _anchored(node: _Node) -> bool:
    """Whether every match must start at position 0 (a leading ``^``)."""
    if isinstance(node, _Assert):
        return node.kind == "^"
    if isinstance(node, _Seq):
        return bool(node.items) and _anchored(node.items[0])
    if isinstance(node, _Alt):
        return all(_anchored(option) for option in node.options)
    if isinstance(node, _Group):
        return _anchored(node.body)
    return False


def _size(node: _Node) -> int:
    """A weight of ``node`` for re's cost: its nodes, with what re runs as several."""
    if isinstance(node, _Seq):
        return 1 + sum(_size(item) for item in node.items)
    if isinstance(node, _Alt):
        return 1 + sum(_size(option) for option in node.options)
    if isinstance(node, _Look):
        return 4 + _size(node.body)
    if isinstance(node, (_Repeat, _Group)):
        return 1 + _size(node.body)
    if isinstance(node, _Assert) and node.kind == "B":
        return 8  # spelled out as four lookarounds
    if isinstance(node, _Chars) and len(node.ranges) > 8:
        return 4  # a split class, or a walk through many ranges
    return 1


# --- translation to Python re ----------------------------------------------------------


def _code_text(code: int) -> str:
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    return f"\\U{code:08x}"


_BMP_END = 0xFFFF


def _astral_ranges(ranges: _Ranges) -> int:
    """How many ranges of a class lie past U+FFFF."""
    return sum(1 for _, high in ranges if high > _BMP_END)


def _class_text(ranges: _Ranges, repeated: bool = False) -> str:
    # re tests a class in O(1) with a bitmap for its characters up to U+FFFF, then walks
    # its ranges past U+FFFF one by one, also for a BMP character the bitmap refused. A
    # class with many such ranges (\p{L}) is split so that only astral characters walk
    # them (\p{L} against 5k non-letters: 13 ms -> 0.2 ms); but not the body of a
    # quantifier, which re runs in one loop only when the body is one class (and a run of
    # letters refuses a character once, at its end).
    if not repeated and _astral_ranges(ranges) > 2 and ranges[0][0] <= _BMP_END:
        bmp = tuple((low, min(high, _BMP_END)) for low, high in ranges if low <= _BMP_END)
        astral = tuple((max(low, 0x10000), high) for low, high in ranges if high > _BMP_END)
        return (
            f"(?:{_plain_class_text(bmp)}|(?=[\\U00010000-\\U0010ffff]){_plain_class_text(astral)})"
        )
    return _plain_class_text(ranges)


def _plain_class_text(ranges: _Ranges) -> str:
    if not ranges:
        return "(?!)"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _code_text(ranges[0][0])
    body = "".join(
        _code_text(low) if low == high else f"{_code_text(low)}-{_code_text(high)}"
        for low, high in ranges
    )
    return f"[{body}]"


# Python's \\B never matches in an empty string (ECMA's does), so it is spelled out.
_PYTHON_ASSERTIONS = {
    "^": "\\A",
    "$": "\\Z",
    "b": "\\b",
    "B": "(?:(?<=[A-Za-z0-9_])(?=[A-Za-z0-9_])|(?<![A-Za-z0-9_])(?![A-Za-z0-9_]))",
}


def _to_python(node: _Node, bmp: bool = False, capture: bool = True) -> str:
    """Python ``re`` source with the same matches (compiled with re.ASCII, for ``\\b``).

    With ``bmp``, every class keeps only its characters up to U+FFFF: the same matches on
    a text without characters past it, and each class one bitmap test (see _ReMatcher).
    Without ``capture`` (for a pattern without backreferences), groups do not capture.
    """
    if isinstance(node, _Chars):
        if bmp:
            return _plain_class_text(_bmp_part(node.ranges))
        return _class_text(node.ranges)
    if isinstance(node, _Seq):
        return "".join(_to_python(item, bmp, capture) for item in node.items)
    if isinstance(node, _Alt):
        return "(?:" + "|".join(_to_python(option, bmp, capture) for option in node.options) + ")"
    if isinstance(node, _Repeat):
        high = "" if node.high is None else str(node.high)
        lazy = "" if node.greedy else "?"
        inner = node.body
        while isinstance(inner, _Group) and inner.index is None:
            inner = inner.body
        if isinstance(inner, _Chars) and not bmp:
            text = _class_text(inner.ranges, repeated=True)
        else:
            text = _to_python(node.body, bmp, capture)
        return f"(?:{text}){{{node.low},{high}}}{lazy}"
    if isinstance(node, _Group):
        body = _to_python(node.body, bmp, capture)
        return f"({body})" if node.index is not None and capture else f"(?:{body})"
    if isinstance(node, _Assert):
        return _PYTHON_ASSERTIONS[node.kind]
    if isinstance(node, _Look):
        mark = (
            ("=" if not node.negative else "!")
            if node.ahead
            else ("<=" if not node.negative else "<!")
        )
        return f"(?{mark}{_to_python(node.body, bmp, capture)})"
    # A group without a value matches empty in ECMA; Python's plain \N would fail.
    return "" if node.forward else f"(?({node.index})\\{node.index})"


def _bmp_part(ranges: _Ranges) -> _Ranges:
    return tuple((low, min(high, _BMP_END)) for low, high in ranges if low <= _BMP_END)


def _has_big_class(node: _Node) -> bool:
    """Whether a class of ``node`` has so many ranges past U+FFFF that re walks them."""
    if isinstance(node, _Chars):
        return _astral_ranges(node.ranges) > 2
    if isinstance(node, (_Seq, _Alt)):
        return any(
            _has_big_class(child)
            for child in (node.items if isinstance(node, _Seq) else node.options)
        )
    if isinstance(node, (_Repeat, _Group, _Look)):
        return _has_big_class(node.body)
    return False


# --- the linear engine -----------------------------------------------------------------

# Instructions: (opcode, a, b). CHAR a=set index; SPLIT a,b=targets; JMP a=target;
# ASSERT a=kind; LOOK a=sub-program index, b=negative; MATCH.
_CHAR, _SPLIT, _JMP, _ASSERT, _LOOK, _MATCH = range(6)
_Code: TypeAlias = "tuple[tuple[int, Any, Any], ...]"


class _Program:
    """One NFA: instructions and character sets; lookaround bodies are sub-programs."""

    def __init__(self, owner: _Builder, reverse: bool) -> None:
        self.code: list[list[Any]] = []
        self.reverse = reverse
        self.owner = owner

    def emit(self, op: int, a: object = None, b: object = None) -> int:
        self.code.append([op, a, b])
        self.owner.states += 1
        if self.owner.states > _MAX_STATES:
            raise _TooLarge
        return len(self.code) - 1

    def compile(self, node: _Node) -> None:
        if isinstance(node, _Chars):
            self.emit(_CHAR, self.owner.charset(node.ranges))
        elif isinstance(node, _Seq):
            for item in reversed(node.items) if self.reverse else node.items:
                self.compile(item)
        elif isinstance(node, _Alt):
            jumps: list[int] = []
            for number, option in enumerate(node.options):
                if number < len(node.options) - 1:
                    split = self.emit(_SPLIT)
                    self.code[split][1] = split + 1
                    self.compile(option)
                    jumps.append(self.emit(_JMP))
                    self.code[split][2] = len(self.code)
                else:
                    self.compile(option)
            for jump in jumps:
                self.code[jump][1] = len(self.code)
        elif isinstance(node, _Repeat):
            for _ in range(node.low):
                self.compile(node.body)
            if node.high is None:
                split = self.emit(_SPLIT)
                self.code[split][1] = split + 1
                self.compile(node.body)
                self.emit(_JMP, split)
                self.code[split][2] = len(self.code)
            else:
                splits = []
                for _ in range(node.high - node.low):
                    split = self.emit(_SPLIT)
                    self.code[split][1] = split + 1
                    splits.append(split)
                    self.compile(node.body)
                for split in splits:
                    self.code[split][2] = len(self.code)
        elif isinstance(node, _Group):
            self.compile(node.body)
        elif isinstance(node, _Assert):
            self.emit(_ASSERT, node.kind)
        elif isinstance(node, _Look):
            # Compiled to be swept against the direction it reads in: one pass over the
            # text finds every position where the lookaround holds (see _Run.look).
            sub = self.owner.program(node.body, reverse=node.ahead)
            self.emit(_LOOK, sub, node.negative)
        elif not node.forward:  # a backreference with a value never gets here
            raise AssertionError("backreference on the linear engine")


class _TooLarge(Exception):
    """Internal: the NFA would exceed _MAX_STATES."""


class _Builder:
    def __init__(self) -> None:
        self.states = 0
        self.programs: list[_Program] = []
        self.sets: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self._set_index: dict[_Ranges, int] = {}

    def charset(self, ranges: _Ranges) -> int:
        if ranges not in self._set_index:
            self._set_index[ranges] = len(self.sets)
            self.sets.append((tuple(r[0] for r in ranges), tuple(r[1] for r in ranges)))
        return self._set_index[ranges]

    def program(self, node: _Node, reverse: bool) -> int:
        program = _Program(self, reverse)
        index = len(self.programs)
        self.programs.append(program)
        program.compile(node)
        program.emit(_MATCH)
        return index


_WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _is_word(text: str, index: int) -> bool:
    if 0 <= index < len(text):
        char = text[index]
        return char.isascii() and (char.isalnum() or char == "_")
    return False


class _LinearMatcher:
    """Runs the NFA over a string: every start position at once, one state set per
    character. Shared by threads: all per-call state lives in a :class:`_Run`.

    Each program memoizes its steps (a lazy DFA): the epsilon closure of a state set in
    a context (at an end or not, word characters around, which lookarounds hold), and
    the state set after a character. The memo is capped, so memory stays bounded."""

    engine = "linear"

    def __init__(self, builder: _Builder, main: int, anchored: bool = False) -> None:
        self.programs: list[_Code] = [
            tuple((op, a, b) for op, a, b in program.code) for program in builder.programs
        ]
        self.directions = [-1 if program.reverse else 1 for program in builder.programs]
        self.memos: list[dict[object, _MemoEntry]] = [{} for _ in self.programs]
        # what a program's closure reads about a position: 1 the ends, 2 the word
        # characters around it, 4 its lookarounds (the programs in ``looks``)
        self.looks = [tuple(a for op, a, _ in code if op == _LOOK) for code in self.programs]
        self.uses_context = [
            (1 if any(op == _ASSERT and a in "^$" for op, a, _ in code) else 0)
            | (2 if any(op == _ASSERT and a in "bB" for op, a, _ in code) else 0)
            | (4 if looks else 0)
            for code, looks in zip(self.programs, self.looks, strict=True)
        ]
        self.sets = builder.sets
        self.main = main
        # every match starts at position 0: once no thread is alive, none will be
        self.anchored = anchored
        #: the number of NFA states (all programs): a call visits at most this many per
        #: character and lookaround position
        self.size = builder.states

    def __call__(self, text: str, stop: Callable[[], bool] | None = None) -> bool:
        return _Run(self, text, stop).run(self.main, 0)

    def count_steps(self, text: str) -> tuple[bool, int]:
        """The verdict and the number of NFA states visited to reach it (for tests)."""
        state = _Run(self, text)
        verdict = state.run(self.main, 0)
        return verdict, state.steps


# A memoized step: the readers of a state set's closure, whether it matched, and the state
# set after each character seen so far. The memo is dropped at this many entries.
_MemoEntry: TypeAlias = "tuple[tuple[int, ...], bool, dict[int, tuple[int, ...]]]"
_MEMO_LIMIT = 2_000
_MEMO_CHARACTERS = 256  # distinct characters remembered per entry


class _Run:
    """One call of a :class:`_LinearMatcher`: the text, lookaround tables, a counter."""

    __slots__ = ("looks", "matcher", "steps", "stop", "text")

    def __init__(
        self, matcher: _LinearMatcher, text: str, stop: Callable[[], bool] | None = None
    ) -> None:
        self.matcher = matcher
        self.text = text
        self.looks: dict[int, bytearray] = {}
        self.steps = 0
        self.stop = stop

    def holds(self, kind: object, pos: int) -> bool:
        text = self.text
        if kind == "^":
            return pos == 0
        if kind == "$":
            return pos == len(text)
        boundary = _is_word(text, pos - 1) != _is_word(text, pos)
        return boundary if kind == "b" else not boundary

    def table(self, sub: int) -> bytearray:
        """Where lookaround body ``sub`` holds: one sweep over the whole text. A
        lookahead body, compiled backwards, runs from the end to the start with a thread
        starting at every position, and it reaches its match state exactly at the
        positions where the lookahead holds (a lookbehind likewise, forwards). So each
        lookaround costs O(n·m) per call, not O(n·m) per position."""
        table = self.looks.get(sub)
        if table is None:
            table = self.looks[sub] = bytearray(len(self.text) + 1)
            backwards = self.matcher.directions[sub] == -1
            self.run(sub, len(self.text) if backwards else 0, record=table)
        return table

    def look(self, sub: int, pos: int) -> bool:
        return bool(self.table(sub)[pos])

    def closure(
        self, code: _Code, current: tuple[int, ...], pos: int
    ) -> tuple[tuple[int, ...], bool]:
        """The states reading a character reachable from ``current`` (and the start
        state) without reading one at ``pos``, and whether the match state is."""
        seen: set[int] = set()
        readers: list[int] = []
        matched = False
        stack = [*current[::-1], 0]  # and a thread starting here
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op, a, b = code[pc]
            if op == _CHAR:
                readers.append(pc)
            elif op == _MATCH:
                matched = True
            elif op == _SPLIT:
                stack.append(b)
                stack.append(a)
            elif op == _JMP:
                stack.append(a)
            elif op == _ASSERT:
                if self.holds(a, pos):
                    stack.append(pc + 1)
            elif self.look(a, pos) != b:
                stack.append(pc + 1)
        self.steps += len(seen)
        return tuple(readers), matched

    def advance(
        self,
        code: _Code,
        readers: tuple[int, ...],
        code_point: int,
    ) -> tuple[int, ...]:
        sets = self.matcher.sets
        after = []
        for pc in readers:
            lows, highs = sets[code[pc][1]]
            slot = bisect_right(lows, code_point) - 1
            if slot >= 0 and code_point <= highs[slot]:
                after.append(pc + 1)
        self.steps += len(readers)
        return tuple(after)

    def run(self, index: int, start: int, record: bytearray | None = None) -> bool:
        """Whether program ``index`` matches somewhere, reading from ``start`` on in its
        direction with a thread starting at every position. With ``record``, mark every
        position where a match ends instead of stopping at the first."""
        matcher = self.matcher
        code = matcher.programs[index]
        step = matcher.directions[index]
        memo = matcher.memos[index]
        uses_context = matcher.uses_context[index]
        text = self.text
        size = len(text)
        end = size if step == 1 else 0
        pos = start
        current: tuple[int, ...] = ()
        words = uses_context & 2
        tables = [self.table(sub) for sub in matcher.looks[index]]
        context = 0
        stop = self.stop
        ends_early = record is None and index == matcher.main and matcher.anchored
        while True:
            if uses_context:
                # the facts this program's closure reads at ``pos``, as bits
                context = (pos == 0) + 2 * (pos == size)
                if words:
                    context += 4 * (0 < pos <= size and text[pos - 1] in _WORD_CHARACTERS)
                    context += 8 * (pos < size and text[pos] in _WORD_CHARACTERS)
                bit = 16
                for table in tables:
                    if table[pos]:
                        context += bit
                    bit <<= 1
            key = (current, context)
            entry = memo.get(key)
            if entry is None:
                if len(memo) >= _MEMO_LIMIT:
                    memo.clear()
                entry = memo[key] = (*self.closure(code, current, pos), {})
            readers, matched, transitions = entry
            if matched:
                if record is None:
                    return True
                record[pos] = 1
            if pos == end:
                return False
            if not current and pos and ends_early:
                return False  # anchored at the start, and no thread left
            if stop is not None and not pos & 1023 and pos and stop():
                raise OperationCancelledError("pattern check stopped: the call was cancelled")
            code_point = ord(text[pos] if step == 1 else text[pos - 1])
            after = transitions.get(code_point)
            if after is None:
                after = self.advance(code, readers, code_point)
                if len(transitions) < _MEMO_CHARACTERS:
                    transitions[code_point] = after
            current = after
            pos += step


# A text longer than this, stored with at most two bytes per character, is searched with a
# pattern's BMP variant (see _ReMatcher); a shorter one with the pattern as written.
_LONG_TEXT = 4096


def _two_bytes_at_most(text: str) -> bool:
    """True only if ``text`` has no character past U+FFFF, in O(1): CPython stores such a
    string with one or two bytes per character, and one with any with four. (A string
    this cannot judge is searched as written, which is only slower.)"""
    return sys.getsizeof(text) < 3 * len(text)


class _ReMatcher:
    """Runs a pattern on ``re``: at any length when re's cost on it is linear, else up to
    ``longest`` characters, past which ``fallback`` (the linear engine) takes the input.

    A pattern with a large Unicode class (``\\p{L}``) has a BMP variant too, in which
    every class is one bitmap test; a long text without characters past U+FFFF runs on it
    (``\\p{L}+`` over a million letters: ~10 ms instead of ~100 ms).
    """

    engine = "re"

    def __init__(
        self,
        compiled: re.Pattern[str],
        longest: int | None,
        fallback: _LinearMatcher | None,
        bmp: re.Pattern[str] | None = None,
    ) -> None:
        self.search = compiled.search
        self.longest = longest
        self.fallback = fallback
        self.bmp_search = bmp.search if bmp is not None else None

    def __call__(self, text: str, stop: Callable[[], bool] | None = None) -> bool:
        size = len(text)
        longest = self.longest
        if longest is not None and size > longest and self.fallback is not None:
            return self.fallback(text, stop)
        bmp_search = self.bmp_search
        if bmp_search is not None and size > _LONG_TEXT and _two_bytes_at_most(text):
            return bmp_search(text) is not None
        return self.search(text) is not None

    @property
    def direct(self) -> int | None:
        """The longest text ``search`` may be given directly (None: any)."""
        if self.bmp_search is None:
            return self.longest
        return _LONG_TEXT if self.longest is None else min(self.longest, _LONG_TEXT)


def _linear(pattern: str, tree: _Node) -> _LinearMatcher:
    builder = _Builder()
    try:
        main = builder.program(tree, reverse=False)
    except _TooLarge:
        raise EcmaPatternError(
            pattern,
            None,
            f"too large for the linear matcher (more than {_MAX_STATES} states); use "
            "smaller {n,m} counts, or check the length with maxLength instead",
        ) from None
    return _LinearMatcher(builder, main, _anchored(tree))


def compile_pattern(pattern: str) -> Callable[[str], bool]:
    """Compile an ECMA-262 ``pattern`` into a predicate: True iff it matches somewhere in
    the string (JSON Schema's unanchored search).

    Raises :class:`EcmaPatternError` for a pattern that is not valid ECMA-262 (``u``
    flag), that uses Script data or binary properties Python lacks, or that would need
    backtracking that could stall the interpreter (a backreference in an ambiguous
    pattern). The predicate never raises and never holds the interpreter for long.

    Example::

        is_name = compile_pattern("^[a-z]+$")
        assert is_name("abc") and not is_name("abc\\n")
    """
    search, longest, predicate = compile_search(pattern)
    if search is None:
        return predicate
    # A closure, not the object: calling an instance costs more than the search itself.
    if longest is None:

        def check(text: str) -> bool:
            return search(text) is not None

    else:

        def check(text: str) -> bool:
            if len(text) > longest:
                return predicate(text)
            return search(text) is not None

    return check


class Predicate(Protocol):
    """Whether a pattern matches ``text``; ``stop`` is asked now and then on a long run
    (it raises what it likes to end the run, such as OperationCancelledError)."""

    def __call__(self, text: str, stop: Callable[[], bool] | None = None) -> bool: ...


#: What :func:`compile_search` returns: ``(search, longest, predicate)``.
SearchParts: TypeAlias = tuple[Callable[[str], object] | None, int | None, Predicate]


def compile_search(pattern: str) -> SearchParts:
    """:func:`compile_pattern` in parts, for a caller that runs the common case inline.

    Returns ``(search, longest, predicate)``. ``predicate(text, stop=None)`` answers for
    any string, as :func:`compile_pattern`'s does; on the linear engine it calls ``stop()``
    every thousand characters or so and raises :class:`OperationCancelledError` when it
    returns True. When ``search`` is not None, ``search(text) is not None`` is the same
    answer, from Python's ``re`` directly, for a ``text`` of at most ``longest`` characters
    (of any length when ``longest`` is None); a caller must ask ``predicate`` for a longer
    ``text``. Raises as :func:`compile_pattern` does.

    Example::

        search, longest, predicate = compile_search("^[a-z]+$")
        assert search is not None and longest is None and search("abc") is not None
    """
    matcher = _compile(pattern)
    if isinstance(matcher, _LinearMatcher):
        return None, None, matcher
    direct = matcher.direct
    if direct is None:
        search = matcher.search

        def predicate(text: str, stop: Callable[[], bool] | None = None) -> bool:
            return search(text) is not None

        return search, None, predicate
    return matcher.search, direct, matcher


def compile_pattern_set(patterns: Sequence[str]) -> Callable[..., list[int]]:
    """Which of ``patterns`` match a text: ``matching(text, stop=None)`` returns their
    indices, in order, each pattern answering as :func:`compile_pattern`'s would.

    For ``patternProperties``: a property name is usually matched by no pattern or by one,
    so asking every pattern about every name costs patterns x names. Here the patterns
    that start with ``^`` and run on ``re`` in linear time are joined into one ``re``
    alternation: one call says which of them matches first, or that none does, and the
    later ones are asked only if they could match the same name (their fixed prefixes do
    not exclude it: ``^x-`` and ``^y-`` never both match). The others are asked one by
    one — only those a name can match by its start: an anchored pattern's literal prefix
    (``^k12(a|a)*$``: ``k12``) indexes it, so a name is asked only about the patterns whose
    prefix it starts with (200 such patterns cost a name a few dictionary lookups and one
    run, not 200 runs). Raises as :func:`compile_pattern` does.

    Example::

        matching = compile_pattern_set(["^a", "^b", "c"])
        assert matching("abc") == [0, 2]
    """
    parts = [compile_search(pattern) for pattern in patterns]
    trees = [_Parser(pattern).parse() for pattern in patterns]
    joined: list[int] = []  # indices of the patterns in the alternation
    for index, ((search, longest, _), tree) in enumerate(zip(parts, trees, strict=True)):
        if search is not None and longest is None and _anchored(tree) and not _has_backref(tree):
            joined.append(index)
    if len(joined) < 2:
        joined = []
    alone = [index for index in range(len(patterns)) if index not in set(joined)]
    # the patterns asked one by one: by the literal text every match starts with, if any
    by_prefix: dict[str, list[int]] = {}
    always: list[int] = []
    for index in alone:
        literal = _literal_prefix(trees[index])
        if literal:
            by_prefix.setdefault(literal, []).append(index)
        else:
            always.append(index)
    lengths = sorted({len(literal) for literal in by_prefix})
    prefixes = [_fixed_prefix(trees[index]) for index in joined]
    # for each joined pattern, the later joined ones a name it matches may also match
    also: list[list[int]] = []
    for position, prefix in enumerate(prefixes):
        also.append(
            [
                joined[later]
                for later in range(position + 1, len(joined))
                if not _exclusive(prefix, prefixes[later])
            ]
        )
    union: Callable[[str], re.Match[str] | None] | None = None
    union_longest = 0
    if joined:
        # \A once, then each pattern without its ^ and with an empty group at its end:
        # the group numbers the pattern that matched (lastindex), and, unlike a group
        # around it, lets re skip an alternative on its first character
        sources = [f"{_to_python(_unanchored(trees[index]), capture=False)}()" for index in joined]
        union = re.compile("\\A(?:" + "|".join(sources) + ")", re.ASCII).match
        # the alternation costs at most what its patterns cost one after the other
        union_longest = _BACKTRACKING_BUDGET // sum(_size(trees[index]) for index in joined)

    def ask(index: int, text: str, stop: Callable[[], bool] | None) -> bool:
        search, longest, predicate = parts[index]
        if search is not None and (longest is None or len(text) <= longest):
            return search(text) is not None
        return predicate(text, stop)

    def matching(text: str, stop: Callable[[], bool] | None = None) -> list[int]:
        found: list[int] = []
        if union is not None:
            if len(text) <= union_longest:
                first = union(text)
                if first is not None:
                    position = (first.lastindex or 1) - 1
                    found.append(joined[position])
                    found.extend(index for index in also[position] if ask(index, text, stop))
            else:
                found.extend(index for index in joined if ask(index, text, stop))
        if alone:
            found.extend(index for index in always if ask(index, text, stop))
            for length in lengths:
                if length > len(text):
                    break
                starting = by_prefix.get(text[:length])
                if starting is not None:
                    found.extend(index for index in starting if ask(index, text, stop))
            found.sort()
        return found

    return matching


def _unanchored(tree: _Node) -> _Node:
    """An anchored pattern without its leading ``^`` (or as it is, if it has none)."""
    if isinstance(tree, _Seq) and tree.items:
        first = tree.items[0]
        if isinstance(first, _Assert) and first.kind == "^":
            return _Seq(tree.items[1:])
    return tree


def _fixed_prefix(tree: _Node) -> list[_Ranges]:
    """The character sets of the first positions of every match of an anchored pattern,
    as far as they are fixed (``^ab[cd]x*`` -> a, b, [cd])."""
    items = tree.items if isinstance(tree, _Seq) else [tree]
    prefix: list[_Ranges] = []
    for item in items:
        if isinstance(item, _Assert) and item.kind == "^" and not prefix:
            continue
        if isinstance(item, _Chars):
            prefix.append(item.ranges)
        elif isinstance(item, _Repeat) and isinstance(item.body, _Chars) and item.low:
            prefix.extend([item.body.ranges] * min(item.low, 8))
            if item.high != item.low:
                break
        else:
            break
    return prefix


def _literal_prefix(tree: _Node) -> str:
    """The text every match of an anchored pattern starts with, as far as its fixed
    prefix is single characters (``^k12(a|a)*$`` -> ``k12``); ``""`` when there is none."""
    if not _anchored(tree):
        return ""
    literal: list[str] = []
    for ranges in _fixed_prefix(tree):
        if len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
            break
        literal.append(chr(ranges[0][0]))
    return "".join(literal)


def _exclusive(a: list[_Ranges], b: list[_Ranges]) -> bool:
    """Whether no text can start with both fixed prefixes."""
    return any(not _intersects(x, y) for x, y in zip(a, b, strict=False))


def _compile(pattern: str) -> _ReMatcher | _LinearMatcher:
    tree = _Parser(pattern).parse()
    analysis = _Analysis(tree)
    coefficient, degree = analysis.total(tree)
    # linear: re at any length, costing about what reading the input costs; otherwise
    # re only while its bound stays within the budget
    linear_on_re = degree <= 1
    longest = (
        None
        if linear_on_re
        else int((_BACKTRACKING_BUDGET / (coefficient * _size(tree))) ** (1 / degree))
    )
    if _has_backref(tree) and (analysis.reason is not None or not linear_on_re):
        why = (
            analysis.reason
            or analysis.ambiguity
            or ("an unbounded quantifier in a pattern that does not start with ^")
        )
        raise EcmaPatternError(
            pattern,
            None,
            "a backreference needs backtracking, which could hold the interpreter for "
            f"minutes on a crafted string here ({why}); anchor the pattern with ^, make "
            "its alternatives and quantifiers unambiguous, or drop the backreference",
        )
    if analysis.reason is not None or (longest is not None and longest < _SHORTEST_FOR_RE):
        return _linear(pattern, tree)
    try:
        compiled = re.compile(_to_python(tree), re.ASCII)
    except (re.error, OverflowError, RecursionError) as exc:
        raise EcmaPatternError(
            pattern, None, f"valid ECMA-262, but Python's re cannot run it ({exc}); simplify it"
        ) from None
    fallback = _linear(pattern, tree) if longest is not None else None
    bmp = re.compile(_to_python(tree, bmp=True), re.ASCII) if _has_big_class(tree) else None
    return _ReMatcher(compiled, longest, fallback, bmp)


def _has_backref(node: _Node) -> bool:
    if isinstance(node, _Backref):
        return not node.forward
    if isinstance(node, _Seq):
        return any(_has_backref(item) for item in node.items)
    if isinstance(node, _Alt):
        return any(_has_backref(option) for option in node.options)
    if isinstance(node, (_Repeat, _Group, _Look)):
        return _has_backref(node.body)
    return False
