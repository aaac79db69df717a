"""The grammar check refuses more of what OpenAI would reject, naming the place: a regex
class range written high to low (``[z-a]``), repetition bounds written high to low
(``a{3,2}``) — in a regex grammar and in a Lark grammar's ``/.../`` terminals — and a
Lark grammar with a string or regex left open or its parentheses and brackets out of
balance. What is fine stays accepted."""

from __future__ import annotations

import pytest

from toolnexus import Grammar, tool
from toolnexus.errors import InvalidValueError


def echo(input: str) -> str:
    """Echo."""
    return input


@pytest.mark.parametrize(
    ("syntax", "definition", "problem"),
    [
        ("regex", "[z-a]", r"the range 'z-a' at 1 in the character class opened at 0 is "
         r"reversed \('z' comes after 'a'\)"),
        ("regex", "^[0-9A-Fa-f]+[9-0]$", "the range '9-0' at 14"),
        ("regex", r"^[^\x5a-\x41]$", r"the range '\\x5a-\\x41' at 3 .* is reversed"),
        ("regex", "[--+]", r"the range '--\+' at 1"),
        ("regex", "a{3,2}", r"the repetition '\{3,2\}' at 1 has its bounds reversed "
         r"\(3 is more than 2\); write '\{2,3\}'"),
        ("regex", "^(ab){10,9}$", r"the repetition '\{10,9\}' at 5"),
        ("lark", 'start: "a" "', r"the string opened at line 1, column 12 is not closed"),
        ("lark", 'start: x\nx: "a\n| "b"', r"the string opened at line 2, column 4 is not "
         "closed; add its closing '\"' on the same line"),
        ("lark", "start: W\nW: /[a-z]+", "the regex opened at line 2, column 4 is not closed"),
        ("lark", 'start: ( "a"', r"the '\(' at line 1, column 8 is not closed; add its '\)'"),
        ("lark", 'start: [ "a" ("b")', r"the '\[' at line 1, column 8 is not closed"),
        ("lark", 'start: "a" )', r"the '\)' at line 1, column 12 closes nothing"),
        ("lark", 'start: ( "a" ]', r"the '\]' at line 1, column 14 does not match the '\(' "
         "at line 1, column 8"),
        ("lark", "start: W\nW: /[z-a]+/", r"the regex /\[z-a\]\+/ at line 2: the range 'z-a'"),
        ("lark", "start: W\nW: /a{5,1}/", r"the regex /a\{5,1\}/ at line 2: the repetition"),
    ],
)  # fmt: skip
def test_a_grammar_the_provider_would_reject_is_refused_naming_the_place(
    syntax: str, definition: str, problem: str
) -> None:
    with pytest.raises(InvalidValueError, match=f"^{syntax} grammar of tool 'g': {problem}"):
        tool(echo, name="g", grammar=Grammar(syntax, definition))


@pytest.mark.parametrize(
    ("syntax", "definition"),
    [
        ("regex", "^[a-z0-9_-]+$"),
        ("regex", "^[-a-c][a-][]a-c][a-c-e]$"),
        ("regex", r"^[\--z][+--][\x41-\x5a\u{263A}-\u{263B}]$"),
        ("regex", r"^[[:alpha:]-z]a{2,2}b{0,}c{3}$"),
        ("regex", r"^[abc--b][0-9--4][a-z&&[^aeiou]][a~~b]$"),  # Rust's class set operators
        ("lark", 'start: "(" expr ")" | "[" "]"\nexpr: ("a"\n  | "b")+'),
        ("lark", 'start: W // an open ( or " in a comment\nW: /[(\\[]+/'),
        ("lark", 'start: "a\\"b" | "c//d"'),
    ],
)
def test_grammars_that_are_fine_are_still_accepted(syntax: str, definition: str) -> None:
    made = tool(echo, name="g", grammar=Grammar(syntax, definition))
    assert made.to_openai(api="responses")["format"]["definition"] == definition


@pytest.mark.parametrize(
    "definition",
    [
        "a{" + "9" * 5_000 + ",1}",  # past int()'s digit limit: ValueError before
        "a{2," + "9" * 20 + "}",
        r"[a-\x{FFFFFFFFFFFFFFFFFFFFFFFF}]",  # past chr(): OverflowError before
        r"[\x{FFFFFFFFFFFFFFFFFFFFFFFF}-a]",
    ],
)
def test_a_grammar_with_huge_numbers_is_judged_never_a_crash(definition: str) -> None:
    try:
        tool(echo, name="g", grammar=Grammar("regex", definition))
    except InvalidValueError as exc:
        assert "regex grammar of tool" in str(exc)
