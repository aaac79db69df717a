"""ECMA-262 ``pattern`` semantics and the no-stall engines of ``toolnexus._ecma``."""

from __future__ import annotations

import pickle
import random
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Toolkit, tool
from toolnexus._ecma import (
    EcmaPatternError,
    _compile,
    _linear,
    _LinearMatcher,
    _Parser,
    _ReMatcher,
    _two_bytes_at_most,
    compile_pattern,
    compile_pattern_set,
)
from toolnexus.errors import OperationCancelledError, ToolnexusError

# (pattern, text, matches?) — ECMA-262 with the u flag, searched anywhere in the text.
SEMANTICS = [
    # the issue's reproductions
    ("^[a-z]+$", "abc", True),
    ("^[a-z]+$", "abc\n", False),  # $ never matches before a trailing newline
    ("^\\d+$", "123", True),
    ("^\\d+$", "\u0661\u0662\u0663", False),  # Arabic-Indic digits are not \d
    ("^\\w+$", "abc_09", True),
    ("^\\w+$", "\u00e9", False),  # \w is ASCII only
    ("\\p{L}", "\u00e9", True),
    ("\\p{L}", "1", False),
    # anchors: never multiline
    ("^b", "a\nb", False),
    ("a$", "a\nb", False),
    ("^$", "", True),
    ("^abc$", "abc", True),
    # . excludes exactly the ECMA line terminators
    ("^.$", "\n", False),
    ("^.$", "\r", False),
    ("^.$", "\u2028", False),
    ("^.$", "\u2029", False),
    ("^.$", "\u0085", True),
    ("^.$", "\U0001f600", True),  # one code point under the u flag
    # \s is WhiteSpace + LineTerminator
    ("^\\s$", "\u00a0", True),
    ("^\\s$", "\ufeff", True),
    ("^\\s$", "\u2003", True),
    ("^\\s$", "\u000b", True),
    ("^\\s$", "\u0085", False),
    ("^\\s$", "\u200b", False),
    ("^\\S$", "\u0001", True),
    # \D \W complements
    ("^\\D$", "\u07c0", True),
    ("^\\W$", "\u00e9", True),
    ("^\\W$", "_", False),
    # \b \B with ASCII word characters
    ("\\bfoo\\b", "a foo.", True),
    ("\\bfoo\\b", "\u00e9foo", True),  # é is not a word character
    ("\\bfoo\\b", "afoo", False),
    ("\\B", "", True),
    ("^\\B$", "", True),
    ("a\\B", "ab", True),
    # escapes
    ("^\\t$", "\t", True),
    ("^\\t$", "\\t", False),
    ("^\\cC$", "\u0003", True),
    ("^\\cc$", "\u0003", True),
    ("^\\x41$", "A", True),
    ("^\\u00e9$", "\u00e9", True),
    ("^\\u{1F600}$", "\U0001f600", True),
    ("^\\uD83D\\uDE00$", "\U0001f600", True),  # a surrogate pair is one code point
    ("^\\0$", "\x00", True),
    ("^[\\b]$", "\x08", True),
    ("^\\/$", "/", True),
    ("^[\\-]$", "-", True),
    ("^\\f\\n\\r\\v$", "\f\n\r\v", True),
    # classes
    ("^[^a]$", "\n", True),
    ("^[]$", "", False),
    ("^[^]$", "\n", True),
    ("^[\\d-]+$", "1-2", True),
    ("^[a-c\\s]+$", "a b", True),
    ("[\\p{Nd}]", "\u0663", True),
    ("^[^\\p{L}]$", "\u00e9", False),
    # Unicode properties, General_Category by short and long name
    ("^\\p{Letter}$", "\u00e9", True),
    ("^\\p{Lu}$", "\u00c9", True),
    ("^\\p{Lu}$", "\u00e9", False),
    ("^\\p{Ll}$", "\u00e9", True),
    ("^\\p{Nd}+$", "\u09ea\u09e8", True),
    ("^\\p{digit}+$", "\u09ea\u09e8", True),
    ("^\\p{Decimal_Number}$", "7", True),
    ("^\\p{gc=Lu}$", "A", True),
    ("^\\p{General_Category=Letter}$", "\u4e2d", True),
    ("^\\P{L}$", "1", True),
    ("^\\P{L}$", "a", False),
    ("^\\p{Any}$", "\n", True),
    ("^\\p{ASCII}$", "\u00e9", False),
    ("^\\p{Assigned}$", "a", True),
    ("^\\p{Zs}$", "\u3000", True),
    ("^\\p{P}$", "!", True),
    ("^\\p{Sc}$", "\u20ac", True),
    ("^\\p{Letter}$", "\U00020000", True),  # an astral letter (CJK Extension B)
    ("^\\p{Letter}$", "\U0001f600", False),
    # groups, alternation, quantifiers
    ("^(?<year>\\d{4})-(?<month>\\d{2})$", "2024-05", True),
    ("^(?:ab|cd)+$", "abcdab", True),
    ("^(?:ab|cd)+$", "abce", False),
    ("^a{2,3}$", "aaaa", False),
    ("^a{2,}$", "aaaa", True),
    ("^a+?b$", "aaab", True),
    ("^(a|ab)(c|bcd)$", "abcd", True),
    # lookarounds, including variable-width lookbehind
    ("^(?=.*\\d)(?=.*[a-z]).{6,}$", "abc123", True),
    ("^(?=.*\\d)(?=.*[a-z]).{6,}$", "abcdef", False),
    ("(?<=\\$)\\d+", "cost $42", True),
    ("(?<![a-z])\\d", "a1", False),
    ("(?<=a+)b", "aaab", True),
    ("(?<=^a*)b", "xab", False),
    # backreferences
    ("^(a)\\1$", "aa", True),
    ("^(?<q>['\"])[a-z]*\\k<q>$", "'abc'", True),
    ("^(?<q>['\"])[a-z]*\\k<q>$", "'abc\"", False),
    ("^\\1(a)$", "a", True),  # a forward reference matches empty
    ("^(a\\1)$", "a", True),  # so does a reference inside its own group
    # JSON Schema searches: the pattern need not cover the whole string
    ("es", "expression", True),
    ("^es", "expression", False),
    ("", "anything", True),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), SEMANTICS)
def test_pattern_follows_ecma_262(pattern: str, text: str, expected: bool) -> None:
    assert compile_pattern(pattern)(text) is expected


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [case for case in SEMANTICS if not ("(a)\\1" in case[0] or "\\k" in case[0])],
)
def test_the_linear_engine_follows_the_same_table(pattern: str, text: str, expected: bool) -> None:
    # (backreferences with a value never run on it: they need backtracking)
    assert _linear(pattern, _Parser(pattern).parse())(text) is expected


# (pattern, position, words the reason must contain)
SYNTAX_ERRORS = [
    ("(?P<year>\\d{4})", 1, "(?<name>...)"),
    ("(?P=year)", 1, "Python syntax"),
    ("\\Aabc", 0, "use ^"),
    ("abc\\Z", 3, "use $"),
    ("abc\\z", 3, "use $"),
    ("(?i)abc", 1, "inline flags"),
    ("(?i:abc)", 1, "inline flags"),
    ("(?#comment)", 1, "inline flags"),
    ("a{2,1}", 1, "out of order"),
    ("a{", 1, "lone '{'"),
    ("}", 0, "lone '}'"),
    ("]", 0, "lone ']'"),
    ("*a", 0, "nothing to repeat"),
    ("a**", 2, "nothing to repeat"),
    ("{2}", 0, "nothing to repeat"),
    ("(abc", 0, "unterminated group"),
    ("abc)", 3, "unmatched ')'"),
    ("[abc", 0, "unterminated character class"),
    ("[z-a]", 1, "out of order"),
    ("[\\d-z]", 1, "class escape cannot bound a range"),
    ("\\1(a)(b)\\3", 8, "has 2"),
    ("\\k<nope>", 0, "names no group"),
    ("(?<a>x)(?<a>y)", 10, "duplicate group name"),
    ("(?<1a>x)", 3, "invalid group name"),
    ("\\c1", 0, "letter"),
    ("\\x4", 0, "two hex digits"),
    ("\\u12", 0, "four hex digits"),
    ("\\u{110000}", 0, "10FFFF"),
    ("\\01", 0, "octal"),
    ("\\-", 0, "not an ECMA-262 escape"),
    ("\\q", 0, "not an ECMA-262 escape"),
    ("abc\\", 3, "lone '\\'"),
    ("^*", 1, "assertion cannot be repeated"),
    ("(?=a)+", 5, "assertion cannot be repeated"),
    ("\\p{Letter", 0, "\\p must be followed by"),
    ("\\p{NotAThing}", 0, "not a General_Category value"),
    ("\\p{gc=Nope}", 0, "unknown General_Category value"),
    ("\\p{Foo=Bar}", 0, "unknown Unicode property"),
]


@pytest.mark.parametrize(("pattern", "position", "words"), SYNTAX_ERRORS)
def test_ecma_syntax_errors_are_refused_with_pattern_and_position(
    pattern: str, position: int, words: str
) -> None:
    with pytest.raises(EcmaPatternError) as caught:
        compile_pattern(pattern)
    error = caught.value
    assert error.pattern == pattern
    assert error.position == position
    assert words in error.reason
    assert repr(pattern) in str(error) and f"at position {position}" in str(error)


def test_script_properties_are_refused_because_unicodedata_has_no_script_data() -> None:
    for pattern in ("\\p{Script=Greek}", "\\p{sc=Latn}", "\\p{scx=Grek}"):
        with pytest.raises(EcmaPatternError, match="script data"):
            compile_pattern(pattern)
    with pytest.raises(EcmaPatternError, match="binary properties other than Any, ASCII"):
        compile_pattern("\\p{Alphabetic}")


def test_the_error_belongs_to_the_package_root_and_to_value_error() -> None:
    with pytest.raises(ToolnexusError):
        compile_pattern("(")
    with pytest.raises(ValueError):
        compile_pattern("(")


def test_the_error_survives_pickling_with_its_fields() -> None:
    try:
        compile_pattern("a{2,1}")
    except EcmaPatternError as exc:
        copy = pickle.loads(pickle.dumps(exc))
        assert (copy.pattern, copy.position, copy.reason) == (exc.pattern, 1, exc.reason)
        assert str(copy) == str(exc)


def test_deep_nesting_is_a_clear_error_not_a_crash() -> None:
    with pytest.raises(EcmaPatternError, match="nest"):
        compile_pattern("(" * 5000 + ")" * 5000)


# --- no stall ---------------------------------------------------------------------------

REDOS = [
    "^(a+)+$",
    "(a+)+b",
    "^(a|a)*$",
    "(a|aa)+$",
    "^(.*a){20}$",
    "\\d*\\d*\\d*x",
    "^(\\w+\\s?)*$",
    "^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
    "^(a?){25}a{25}$",
    "(x+x+)+y",
    "^(([a-z])+.)+[A-Z]([a-z])+$",
    "(?=(a+)+$)",
]
ATTACKS = ["a" * 28 + "!", "a" * 500 + "!", "x" * 400, "a1" * 200 + "!", " " * 300 + "!"]


@pytest.mark.parametrize("pattern", REDOS)
def test_redos_patterns_run_on_the_linear_engine_in_bounded_steps(pattern: str) -> None:
    matcher = _compile(pattern)
    assert matcher.engine == "linear"
    for text in ATTACKS:
        verdict, steps = matcher.count_steps(text)
        assert verdict is compile_pattern(pattern)(text)
        # every state of every program (lookaround bodies included) once per position
        assert steps <= (len(text) + 1) * matcher.size


def test_the_issue_reproduction_is_decided_in_a_few_hundred_steps() -> None:
    verdict, steps = _compile("^(a+)+$").count_steps("a" * 28 + "!")
    assert verdict is False
    assert steps < 1000  # backtracking re takes ~2**28 steps here


def test_a_backreference_in_an_ambiguous_pattern_is_refused_at_build() -> None:
    with pytest.raises(EcmaPatternError, match="backreference") as caught:
        compile_pattern("^(a+)+\\1$")
    assert "unambiguous" in caught.value.reason
    with pytest.raises(EcmaPatternError, match="anchor the pattern with"):
        compile_pattern("(a)[a-z]*\\1")


SAFE = [
    "^[a-z]+$",
    "^\\d{3}-\\d{4}$",
    "^[A-Za-z_][A-Za-z0-9_]*$",
    "^(?:ab|cd)+$",
    "^\\p{L}+$",
    "^[a-z0-9._%+-]+@[a-z0-9.-]+$",
    "^(?<q>['\"])[a-z]*\\k<q>$",
    "\\bfoo\\b",
    "^[0-9]{1,3}(?:\\.[0-9]{1,3}){3}$",
    "^(?!-)[a-z-]{1,63}$",
]


@pytest.mark.parametrize("pattern", SAFE)
def test_common_deterministic_patterns_run_on_re(pattern: str) -> None:
    assert _compile(pattern).engine == "re"


def test_an_unanchored_search_hands_long_inputs_to_the_linear_engine() -> None:
    # [a-z]+1 searched in 40k letters backtracks for seconds on re: O(n^2)
    matcher = _compile("[a-z]+1")
    assert matcher.engine == "re" and matcher.longest is not None
    assert matcher.fallback is not None and matcher.fallback.engine == "linear"
    long_text = "a" * (matcher.longest + 1)
    assert matcher(long_text) is False
    assert matcher(long_text + "1") is True
    assert matcher("a" * 10 + "1") is True
    # anchored, the same pattern costs O(n) on re, and re takes any input
    anchored = _compile("^[a-z]+1")
    assert anchored.engine == "re" and anchored.longest is None and anchored.fallback is None


LINEAR_ON_RE = [
    "^[a-z]+$",
    "^.*\\.py$",  # .* may stop before any ".", but what follows it has a fixed width
    "^.*bar$",
    "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$",  # each try after a "." ends at the next "."
    "^(?=.*a)(?=.*b)(?=.*c).*$",  # each lookahead read once, from the start
    "\\p{Lu}",  # n start positions, one character each
    "^(?<q>['\"])[^'\"]*\\k<q>$",
]


@pytest.mark.parametrize("pattern", LINEAR_ON_RE)
def test_a_pattern_whose_cost_on_re_is_linear_runs_on_re_at_any_length(pattern: str) -> None:
    matcher = _compile(pattern)
    assert matcher.engine == "re"
    assert matcher.longest is None and matcher.fallback is None


def test_two_ambiguous_quantifiers_in_a_row_run_on_re_within_a_budget() -> None:
    matcher = _compile("^.*a.*b$")  # each .* may stop anywhere: O(n^2) at worst
    assert matcher.engine == "re" and matcher.longest is not None
    assert matcher("xaxb") is True and matcher("xaxb\n") is False
    tail = "x" * matcher.longest
    assert matcher(tail + "ab") is True  # past the budget: the linear engine
    assert matcher(tail + "ba") is False


def test_no_input_is_too_long_for_a_verdict() -> None:
    matcher = _compile("[a-z]+$")  # unanchored: O(n^2) on re
    assert matcher.longest is not None
    text = "a" * (matcher.longest * 2)
    assert matcher(text) is True and matcher(text + "\n") is False


def test_a_long_text_within_the_bmp_runs_on_the_bmp_variant_with_the_same_verdicts() -> None:
    matcher = _compile("^\\p{L}+$")
    assert isinstance(matcher, _ReMatcher) and matcher.bmp_search is not None
    letters = "é" * 10_000
    assert _two_bytes_at_most(letters) and _two_bytes_at_most("a" * 10_000)
    assert not _two_bytes_at_most("\U0001d400" * 10_000)  # four bytes each
    assert matcher(letters) is True and matcher(letters + "1") is False
    # a text with a letter past U+FFFF (MATHEMATICAL BOLD CAPITAL A) runs as written
    assert matcher(letters + "\U0001d400") is True
    assert matcher(letters + "\U0001d7ce") is False  # MATHEMATICAL BOLD DIGIT ZERO
    assert compile_pattern("\\p{Lu}")("a" * 10_000 + "\U0001d400") is True
    assert compile_pattern("\\p{Lu}")("a" * 10_000 + "\u00e9") is False


def test_the_linear_engine_stops_when_asked() -> None:
    matcher = _compile("^(a+)+$")
    assert matcher.engine == "linear"
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(OperationCancelledError):
        matcher("a" * 100_000 + "!", stop)
    assert len(calls) == 3  # asked every thousand characters or so, not per character
    assert matcher("a" * 5_000 + "!", lambda: False) is False


def test_an_anchored_pattern_on_the_linear_engine_stops_reading_when_no_match_can_start() -> None:
    verdict, steps = _compile("^(a+)+$").count_steps("b" * 100_000)
    assert verdict is False and steps < 100


def test_a_matcher_is_shared_by_threads_without_mixing_their_inputs() -> None:
    matcher = compile_pattern("^(a|b)*(?<=b)c$")  # the linear engine, with a lookbehind
    texts = ["ab" * 200 + "c", "ab" * 200 + "a" + "c", "b" * 300 + "c", "a" * 300 + "c"]
    expected = [True, False, True, False]
    failures: list[str] = []
    start = threading.Barrier(4)

    def check(text: str, verdict: bool) -> None:
        start.wait()
        for _ in range(20):
            if matcher(text) is not verdict:
                failures.append(text[-3:])

    pairs = zip(texts, expected, strict=True)
    threads = [threading.Thread(target=check, args=pair) for pair in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_counted_repeats_too_large_for_the_linear_engine_are_refused() -> None:
    with pytest.raises(EcmaPatternError, match="too large"):
        compile_pattern("^((a|a){100}){1000}$")


# --- the two engines agree (randomized, seeded) -----------------------------------------

_ATOMS = ["a", "b", "1", " ", ".", "\\d", "\\w", "\\s", "\\W", "[ab]", "[^a]", "\\p{L}", "é"]


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice(_ATOMS)
    if roll < 0.55:
        return "".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(1, 3)))
    if roll < 0.68:
        options = [_random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3))]
        return "(" + "|".join(options) + ")"
    if roll < 0.88:
        quantifier = rng.choice(["*", "+", "?", "{2}", "{1,3}", "{2,}"])
        return "(?:" + _random_pattern(rng, depth + 1) + ")" + quantifier
    if roll < 0.95:
        return rng.choice(["^", "$", "\\b", "\\B"])
    return "(" + rng.choice(["?=", "?!", "?<=", "?<!"]) + _random_pattern(rng, depth + 1) + ")"


def test_re_and_the_linear_engine_give_the_same_verdicts() -> None:
    rng = random.Random(20261203)
    texts = ["".join(rng.choice("ab1 é\nA_") for _ in range(rng.randint(0, 8))) for _ in range(30)]
    compared = 0
    while compared < 150:
        pattern = _random_pattern(rng)
        matcher = _compile(pattern)
        if matcher.engine != "re":
            continue
        linear = _linear(pattern, _Parser(pattern).parse())
        for text in texts:
            assert (matcher.search(text) is not None) == linear(text), (pattern, text)
        compared += 1


# --- over MCP: a hostile pattern check stalls nobody -------------------------------------
# This module doubles as the served tool module (tests/test_ecma_patterns.py:toolkit).


@tool(
    input_schema={
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}},
        "required": ["word"],
    }
)
def spell(args: dict[str, Any]) -> str:
    """Accept a word of a's, under a pattern that makes backtracking engines stall."""
    return "ok"


toolkit = Toolkit([spell])


def test_a_ping_is_answered_while_a_calls_hostile_pattern_is_being_checked() -> None:
    # Imported here: the server imports this module for its toolkit, and needs no client.
    from stdio_helpers import StdioClient

    with StdioClient.serving("tests/test_ecma_patterns.py:toolkit") as server:
        assert server.initialize()["id"] == 0
        # 2**28 backtracking steps on re for 28 a's; here 300k a's, checked for a while
        # on the linear engine, which lets the server's other threads run meanwhile.
        word = "a" * 300_000 + "!"
        server.send({"jsonrpc": "2.0", "id": "call", "method": "tools/call",
                     "params": {"name": "spell", "arguments": {"word": word}}})  # fmt: skip
        server.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        first, second = server.receive(), server.receive()
        assert first == {"jsonrpc": "2.0", "id": "ping", "result": {}}
        assert second["id"] == "call" and second["result"]["isError"] is True
        assert "expected a string matching" in second["result"]["content"][0]["text"]
        assert server.finish() == 0


def _docs_table_examples() -> list[str]:
    page = (Path(__file__).resolve().parent.parent / "docs" / "patterns.md").read_text("utf-8")
    examples: list[str] = []
    for line in page.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| `") and len(cells) == 3:
            examples.extend(re.findall(r"`([^`]+)`", cells[2]))
    return examples


def test_the_docs_table_has_examples() -> None:
    assert len(_docs_table_examples()) >= 12


@pytest.mark.parametrize("pattern", _docs_table_examples())
def test_every_example_of_the_docs_table_runs_on_re_at_any_length(pattern: str) -> None:
    # what makes its check take milliseconds on a million characters (pattern_speed.py)
    matcher = _compile(pattern)
    assert isinstance(matcher, _ReMatcher)
    assert matcher.longest is None and matcher.fallback is None


def test_a_pattern_set_answers_as_its_patterns_do_one_by_one() -> None:
    rng = random.Random(20261205)
    texts = ["".join(rng.choice("ab1 é\nA_-") for _ in range(rng.randint(0, 8))) for _ in range(40)]
    for _ in range(60):
        patterns = [_random_pattern(rng) for _ in range(rng.randint(1, 6))]
        patterns += [f"^{p}" for p in patterns[:2]] + ["^a", "^ab", "^[ab]+$"]
        try:
            matching = compile_pattern_set(patterns)
        except EcmaPatternError:
            continue
        singles = [compile_pattern(pattern) for pattern in patterns]
        for text in texts:
            expected = [index for index, check in enumerate(singles) if check(text)]
            assert matching(text) == expected, (patterns, text)


def test_200_prefixed_linear_patterns_run_once_per_property_name_not_200_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ^k{i}(a|a)*$ is ambiguous: each runs on the linear matcher, outside the joined
    # alternation. Asking all 200 about each of 10^4 names was 2 million runs (seconds);
    # each pattern's literal prefix (k0 ... k199) picks the few a name can match.
    from toolnexus.validation import Validator

    runs = [0]
    real = _LinearMatcher.__call__

    def counted(self: _LinearMatcher, text: str, stop: Any = None) -> bool:
        runs[0] += 1
        return real(self, text, stop)

    monkeypatch.setattr(_LinearMatcher, "__call__", counted)
    patterns = [f"^k{i}(a|a)*$" for i in range(200)]
    schema = {"type": "object", "patternProperties": {p: {"type": "integer"} for p in patterns}}
    validator = Validator(schema)
    names = {f"k{i % 200}" + "a" * (i % 7): i for i in range(10_000)}
    names |= {f"k{i}b": i for i in range(200)}  # a prefix that fits, a pattern that does not
    names |= {f"x{i}": i for i in range(1_000)}  # no prefix fits: no run at all
    assert validator.is_valid(names)
    # k1aa is asked about ^k1 only; k10a about ^k1 and ^k10; k100 about ^k1, ^k10, ^k100
    assert runs[0] <= 3 * len(names)
    runs[0] = 0
    bad = {**names, "k7aa": "not an integer"}
    assert validator.errors(bad) == ['k7aa: expected integer, got string "not an integer"']
    assert runs[0] <= 2 * 3 * len(bad)  # the yes/no check, then the explanation
    # And the set answers as its patterns do one by one.
    matching = compile_pattern_set(patterns)
    singles = [compile_pattern(p) for p in patterns]
    for name in ["k1", "k1aaa", "k10", "k10a", "k199aa", "k199b", "k", "x1", "k2000"]:
        assert matching(name) == [i for i, check in enumerate(singles) if check(name)]
