"""A tool's options for the providers' advanced tool use, checked when the tool is made.

Who may call a tool (``allowed_callers``: the model directly, or code the model wrote in
the provider's code-execution tool), example inputs shown to the model
(``input_examples``, each checked against the tool's input schema), eager input streaming,
and a :class:`Grammar` that makes a tool an OpenAI custom tool taking free text. The
adapters (:mod:`toolnexus._adapters`) write these into each provider's shape; the host
checks a call's caller against ``allowed_callers`` before it runs anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._frozen import freeze_schema, sealed, thaw
from .errors import InvalidTypeError, InvalidValueError

__all__ = [
    "CALLERS",
    "GRAMMAR_INPUT",
    "PROGRAMMATIC_STYLES",
    "Grammar",
    "caller_kind",
    "check_callers",
    "check_offered",
    "check_examples",
    "check_grammar_tool",
    "grammar_problem",
    "offered_in",
]

CALLERS = ("direct", "programmatic")
"""Who may call a tool: the model itself (``"direct"``), or code the model runs in the
provider's code-execution tool (``"programmatic"``)."""

PROGRAMMATIC_STYLES = ("responses", "anthropic")
"""The provider shapes — turn styles (:data:`~toolnexus._turns.STYLES`) and the adapters
that write their tool lists — that have programmatic tool calling: the OpenAI Responses
API and Anthropic. Chat Completions (``"openai"``) and Gemini (``"gemini"``) have none,
so there only the model itself calls a tool, and a tool whose ``allowed_callers`` leave
the model out is never offered (:func:`offered_in`, :func:`check_offered`)."""

_STYLE_TITLES = {
    "openai": "Chat Completions",
    "responses": "the OpenAI Responses API",
    "anthropic": "Anthropic",
    "gemini": "Gemini",
}

GRAMMAR_INPUT = "input"
"""The one string parameter a grammar tool takes: the model's free text arrives in it."""

_SYNTAXES = ("lark", "regex")


@sealed
@dataclass(frozen=True, slots=True)
class Grammar:
    """The grammar of an OpenAI custom tool's free-text input: ``syntax`` is ``"lark"`` or
    ``"regex"``, ``definition`` the grammar itself.

    A tool that takes it checks it against what OpenAI documents for these grammars, and
    refuses, naming the tool and the place, one the API would reject: regexes (the regex
    syntax and a Lark grammar's ``/.../`` terminals) are Rust's regex crate syntax without
    lookaround, lazy quantifiers (``*?``, ``+?``, ``??``) or backreferences, with groups
    and classes closed, class ranges low to high (not ``[z-a]``) and repetition bounds
    low to high (not ``{3,2}``), and a regex grammar is one line; a Lark grammar defines
    ``start``, closes its strings (on their line) and regexes, balances its parentheses
    and brackets, and has no terminal priorities, templates, ``%declare`` or ``%import``
    other than ``%import common``.

    Example::

        >>> Grammar("regex", r"^\\d{4}-\\d{2}-\\d{2}$").to_format()["syntax"]
        'regex'
        >>> Grammar("ebnf", "start: x")
        Traceback (most recent call last):
          ...
        toolnexus.errors.InvalidValueError: grammar syntax must be 'lark' or 'regex', got 'ebnf'
    """

    syntax: str
    definition: str

    def __post_init__(self) -> None:
        if self.syntax not in _SYNTAXES:
            raise InvalidValueError(
                f"grammar syntax must be 'lark' or 'regex', got {self.syntax!r}"
            )
        if not isinstance(self.definition, str) or not self.definition.strip():
            raise InvalidValueError("grammar definition must be a non-empty string")

    def to_format(self) -> dict[str, Any]:
        """The ``format`` of an OpenAI custom tool: ``{"type": "grammar", "syntax",
        "definition"}``."""
        return {"type": "grammar", "syntax": self.syntax, "definition": self.definition}


def grammar_problem(grammar: Grammar) -> str | None:
    """What in ``grammar`` OpenAI's grammars refuse, and where; None when nothing is known
    to be refused. (The API may also refuse a grammar as too complex; it documents no
    measure of that, so it is not guessed at here.)"""
    if grammar.syntax == "regex":
        return _regex_problem(grammar.definition, one_line=True)
    return _lark_problem(grammar.definition)


# --- regexes: Rust's regex crate syntax, as OpenAI's grammars take it ---------------------

_ESCAPE_LETTERS = frozenset("dDwWsSbBAzpPxuUaftnrv")
_ESCAPE_WIDTH = {"x": 2, "u": 4, "U": 8, "p": 1, "P": 1}
_GROUP_FLAGS = frozenset("imsRUux-")
_GROUP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\[\]]*>")
_COUNTED = re.compile(r"\{(\d*)(,(\d*))?\}")
_NO_LOOKAROUND = (
    "lookaround, which OpenAI's grammars do not support (Rust regex syntax); rewrite the "
    "pattern without it"
)


def _regex_problem(pattern: str, *, one_line: bool) -> str | None:
    """The first thing in ``pattern`` Rust's regex syntax or OpenAI's grammars refuse."""
    groups: list[int] = []
    can_repeat = False
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            problem, i = _regex_escape(pattern, i)
            if problem is not None:
                return problem
            can_repeat = True
        elif char == "[":
            problem, i = _regex_class(pattern, i)
            if problem is not None:
                return problem
            can_repeat = True
        elif char == "(":
            problem, after, opens = _regex_group(pattern, i)
            if problem is not None:
                return problem
            if opens:
                groups.append(i)
            i, can_repeat = after, False
        elif char == ")":
            if not groups:
                return f"')' at {i} closes no group; escape it as '\\)' or remove it"
            groups.pop()
            i, can_repeat = i + 1, True
        elif char == "|":
            i, can_repeat = i + 1, False
        elif char in "*+?" or (char == "{" and _counted(pattern, i)):
            if not can_repeat:
                return (
                    f"{char!r} at {i} repeats nothing; escape it (for example '\\{char}') "
                    "or put it after what it repeats"
                )
            match = _COUNTED.match(pattern, i) if char == "{" else None
            if match is not None and match.group(1) and match.group(3):
                if max(len(match.group(1)), len(match.group(3))) > 9:
                    return (
                        f"the repetition '{match.group(0)[:40]}' at {i} counts past what a "
                        "provider's engine takes; use a bound under a billion (or '*', '+')"
                    )
                low, high = int(match.group(1)), int(match.group(3))
                if low > high:
                    return (
                        f"the repetition '{match.group(0)}' at {i} has its bounds reversed "
                        f"({low} is more than {high}); write '{{{high},{low}}}'"
                    )
            start, i = i, match.end() if match is not None else i + 1
            if i < n and pattern[i] == "?":
                return (
                    f"the lazy quantifier '{pattern[start : i + 1]}' at {start}: OpenAI's "
                    "grammars do not support lazy modifiers (*?, +?, ??); use the greedy "
                    "form, bounded if need be"
                )
        elif one_line and char in "\r\n":
            return (
                f"a line break at {i}: a regex grammar must be on one line; write '\\n' "
                "to match a newline"
            )
        else:
            i, can_repeat = i + 1, True
    if groups:
        return f"the group opened at {groups[-1]} is not closed; add its ')'"
    return None


def _counted(pattern: str, at: int) -> bool:
    """Whether a counted repetition (``{n}``, ``{n,}``, ``{n,m}``) starts at ``at``."""
    match = _COUNTED.match(pattern, at)
    return match is not None and bool(match.group(1) or match.group(3))


def _regex_escape(pattern: str, at: int) -> tuple[str | None, int]:
    """An escape at ``at``: a problem, or None and the index after it."""
    if at + 1 >= len(pattern):
        return "a '\\' at the end escapes nothing; double it to match a backslash", at + 1
    char = pattern[at + 1]
    if char.isdigit() or pattern.startswith("k<", at + 1):
        return (
            f"the backreference '{pattern[at : at + (3 if char == 'k' else 2)]}' at {at}: "
            "Rust's regex syntax (which "
            "OpenAI's grammars use) has no backreferences; repeat the group instead",
            at + 2,
        )
    if not char.isascii() or (char.isalpha() and char not in _ESCAPE_LETTERS):
        return (
            f"the escape '\\{char}' at {at} is not in Rust's regex syntax (which OpenAI's "
            "grammars use); write the character itself",
            at + 2,
        )
    end = at + 2
    if char in "pPxuUb" and pattern.startswith("{", end):
        close = pattern.find("}", end)
        if close < 0:
            return f"the escape at {at} opens '{{' and never closes it; add the '}}'", at + 2
        end = close + 1
    else:
        end += _ESCAPE_WIDTH.get(char, 0)
    return None, end


def _regex_class(pattern: str, at: int) -> tuple[str | None, int]:
    """A character class at ``at`` (nested classes and ``[:name:]`` included); a range
    whose ends are reversed (``[z-a]``) is refused."""
    depth, i, n = 1, at + 1, len(pattern)
    i += pattern.startswith("^", i)
    # The last single character seen and where it starts: the low end of a range if a
    # '-' and another character follow.
    last: tuple[str, int] | None = None
    first = i  # (a '-' there is the character itself)
    if pattern.startswith("]", i):
        last, i = ("]", i), i + 1
    while i < n:
        char = pattern[i]
        if i > first and pattern.startswith(("--", "&&", "~~"), i):  # Rust's set operators
            last, i = None, i + 2
            continue
        if char == "-" and last is not None and i + 1 < n and pattern[i + 1] != "]":
            high, after = _class_char(pattern, i + 1)
            if high is not None and high[0] < last[0]:
                low, start = last
                return (
                    f"the range '{pattern[start:after]}' at {start} in the character class "
                    f"opened at {at} is reversed ({low!r} comes after {high[0]!r}); write its "
                    "lower end first",
                    after,
                )
            if high is not None:  # a range's end starts no other range
                last, i = None, after
                continue
        if char == "\\":
            problem, end = _regex_escape(pattern, i)
            if problem is not None:
                return problem, end
            found, _ = _class_char(pattern, i)
            last, i = (None if found is None else (found[0], i)), end
        elif char == "[" and pattern.startswith("[:", i) and ":]" in pattern[i + 2 :]:
            last, i = None, pattern.index(":]", i + 2) + 2
        elif char == "[":
            depth, i, last = depth + 1, i + 1, None
            i += pattern.startswith("^", i)
            if pattern.startswith("]", i):
                last, i = ("]", i), i + 1
        elif char == "]":
            depth, i, last = depth - 1, i + 1, None
            if depth == 0:
                return None, i
        else:
            last, i = (char, i), i + 1
    return f"the character class opened at {at} is not closed; add its ']'", n


_ESCAPED_CHARS = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


def _class_char(pattern: str, at: int) -> tuple[tuple[str] | None, int]:
    """The one character a class item at ``at`` stands for (a literal, or an escape of
    one: ``\\-``, ``\\n``, ``\\x41``, ``\\u{263A}``) in a 1-tuple, or None for anything
    else (a class like ``\\d``, a nested class), and the index after the item."""
    char = pattern[at]
    if char == "[":
        return None, at + 1
    if char != "\\":
        return (char,), at + 1
    if at + 1 >= len(pattern):
        return None, at + 1
    kind = pattern[at + 1]
    if kind in _ESCAPED_CHARS:
        return (_ESCAPED_CHARS[kind],), at + 2
    if kind in "xuU":
        if pattern.startswith("{", at + 2):
            close = pattern.find("}", at + 2)
            if close < 0:  # (never closed: the escape check says so)
                return None, at + 2
            digits, end = pattern[at + 3 : close], close + 1
        else:
            end = at + 2 + _ESCAPE_WIDTH[kind]
            digits = pattern[at + 2 : end]
        try:
            return (chr(int(digits, 16)),), end
        except (ValueError, OverflowError):  # (not hex, or past the last code point)
            return None, end
    if not kind.isalnum():
        return (kind,), at + 2
    return None, at + 2


def _regex_group(pattern: str, at: int) -> tuple[str | None, int, bool]:
    """A group opening at ``at``: a problem, or None, the index after the opening, and
    whether it opened a group (``(?i)`` alone opens none)."""
    if not pattern.startswith("(?", at):
        return None, at + 1, True
    rest = at + 2
    for look in ("=", "!", "<=", "<!"):
        if pattern.startswith(look, rest):
            return f"'(?{look}' at {at} is {_NO_LOOKAROUND}", rest, False
    if pattern.startswith(("P<", "<"), rest):
        name_at = rest + (2 if pattern[rest] == "P" else 1)
        name = _GROUP_NAME.match(pattern, name_at)
        if name is None:
            return (
                f"the group name at {name_at} is not valid: a name starts with a letter or "
                "'_' and holds letters, digits, '_', '.', '[' and ']', then '>'",
                rest,
                False,
            )
        return None, name.end(), True
    end = rest
    while end < len(pattern) and pattern[end] in _GROUP_FLAGS:
        end += 1
    if pattern.startswith(")", end) and end > rest:
        return None, end + 1, False
    if pattern.startswith(":", end):
        return None, end + 1, True
    return (
        f"the group '{pattern[at : end + 1]}' at {at} is not in Rust's regex syntax (which "
        "OpenAI's grammars use): groups are (...), (?:...), (?P<name>...), (?<name>...) and "
        "flags (?imsUx)",
        rest,
        False,
    )


# --- Lark grammars: the subset OpenAI (LLGuidance) takes ------------------------------------

_LARK_START = re.compile(r"^[ \t]*[?!]?start[ \t]*:", re.MULTILINE)
_LARK_DIRECTIVE = re.compile(r"^[ \t]*%([a-z]+)\b[ \t]*([^\n]*)", re.MULTILINE)
_LARK_PRIORITY = re.compile(r"^[ \t]*(_?[A-Z][A-Z0-9_]*)\.-?\d+[ \t]*:", re.MULTILINE)
_LARK_TEMPLATE = re.compile(r"^[ \t]*[?!]?(_?[a-z][a-z0-9_]*)\{[^}\n]*\}[ \t]*:", re.MULTILINE)
_LARK_COMMON = re.compile(r"common(?:\.|[ \t]*\(|[ \t]*$)")


def _lark_problem(text: str) -> str | None:
    """The first thing in a Lark grammar OpenAI's grammars refuse, with its line."""

    def line(at: int) -> int:
        return text.count("\n", 0, at) + 1

    if _LARK_START.search(text) is None:
        return (
            "a Lark grammar must define the rule 'start' (for example 'start: expr'); the "
            "provider refuses one without it"
        )
    for directive in _LARK_DIRECTIVE.finditer(text):
        name, argument = directive.group(1), directive.group(2).strip()
        if name == "declare":
            return (
                f"'%declare' at line {line(directive.start())} is not supported by OpenAI's "
                "grammars; define the terminal instead"
            )
        if name == "import" and _LARK_COMMON.match(argument) is None:
            return (
                f"'%import {argument}' at line {line(directive.start())}: OpenAI's grammars "
                "import only from 'common' (for example '%import common.NUMBER'); define "
                "the rule or terminal in the grammar"
            )
    priority = _LARK_PRIORITY.search(text)
    if priority is not None:
        return (
            f"the terminal {priority.group(1)} at line {line(priority.start())} has a "
            "priority, which OpenAI's grammars do not support; drop the '.N'"
        )
    template = _LARK_TEMPLATE.search(text)
    if template is not None:
        return (
            f"the rule {template.group(1)} at line {line(template.start())} is a template, "
            "which OpenAI's grammars do not support; write out each use as its own rule"
        )
    regexes, problem = _lark_scan(text)
    if problem is not None:
        return problem
    for at, body in regexes:
        problem = _regex_problem(body, one_line=False)
        if problem is not None:
            return f"the regex /{body}/ at line {line(at)}: {problem}"
    return None


_LARK_CLOSERS = {"(": ")", "[": "]"}
_NEWLINE = "\n"


def _lark_scan(text: str) -> tuple[list[tuple[int, str]], str | None]:
    """Each ``/regex/`` terminal of a Lark grammar (its offset and body), outside strings
    and ``//`` comments; and the first string or regex left open, or parenthesis or
    bracket not balanced, with its line and column (None when there is none)."""

    def place(at: int) -> str:
        start = text.rfind("\n", 0, at) + 1
        return f"line {text.count(_NEWLINE, 0, at) + 1}, column {at - start + 1}"

    found: list[tuple[int, str]] = []
    opened: list[int] = []  # the offsets of the '(' and '[' not closed yet
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif char in '"/':
            j = i + 1
            while j < n and text[j] != char and not (char == '"' and text[j] == "\n"):
                j += 2 if text[j] == "\\" else 1
            if j >= n or text[j] != char:
                what = "string" if char == '"' else "regex"
                return found, (
                    f"the {what} opened at {place(i)} is not closed; add its closing {char!r}"
                    + (" on the same line" if char == '"' else "")
                )
            if char == "/":
                found.append((i, text[i + 1 : j]))
            i = j + 1
        elif char in _LARK_CLOSERS:
            opened.append(i)
            i += 1
        elif char in ")]":
            if not opened:
                return found, (
                    f"the {char!r} at {place(i)} closes nothing; remove it or add the "
                    f"{'(' if char == ')' else '['!r} it closes"
                )
            start = opened.pop()
            if _LARK_CLOSERS[text[start]] != char:
                return found, (
                    f"the {char!r} at {place(i)} does not match the {text[start]!r} at "
                    f"{place(start)}; close that one with {_LARK_CLOSERS[text[start]]!r}"
                )
            i += 1
        else:
            i += 1
    if opened:
        start = opened[-1]
        return found, (
            f"the {text[start]!r} at {place(start)} is not closed; add its "
            f"{_LARK_CLOSERS[text[start]]!r}"
        )
    return found, None


def check_callers(tool: str, value: object) -> tuple[str, ...]:
    """``value`` as a tuple of :data:`CALLERS`; a clear error for anything else."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidTypeError(
            f"allowed_callers of tool {tool!r} must be a sequence of 'direct' and "
            f"'programmatic', got {value!r}"
        )
    callers = tuple(value)
    wrong = [each for each in callers if each not in CALLERS]
    if wrong or not callers:
        raise InvalidValueError(
            f"allowed_callers of tool {tool!r} must name one or both of 'direct' and "
            f"'programmatic', got {value!r}"
        )
    return tuple(dict.fromkeys(callers))


def offered_in(callers: Sequence[str], style: str) -> bool:
    """Whether a tool with these ``allowed_callers`` can be offered in ``style`` (a key of
    :data:`~toolnexus._turns.STYLES`): yes when the model may call it directly, or when
    the style has programmatic tool calling (:data:`PROGRAMMATIC_STYLES`). The one rule
    the adapters and the toolkit's lists follow.

    Example::

        >>> offered_in(("programmatic",), "gemini"), offered_in(("programmatic",), "anthropic")
        (False, True)
    """
    return "direct" in callers or style in PROGRAMMATIC_STYLES


def check_offered(tool: str, callers: Sequence[str], style: str) -> None:
    """Refuse to describe ``tool`` for ``style`` when no caller it allows exists there
    (:func:`offered_in`): a programmatic-only tool offered to Chat Completions or Gemini
    would fail every call the model made to it."""
    if offered_in(callers, style):
        return
    where = _STYLE_TITLES.get(style, style)
    raise InvalidValueError(
        f"tool {tool!r} has allowed_callers={list(callers)!r}: only code the model runs may "
        f"call it, and {where} has no programmatic tool calling, so the model could never "
        "call it there. Offer it to the OpenAI Responses API (to_openai(api='responses')) "
        "or Anthropic (to_anthropic()), which have programmatic tool calling, or add "
        "'direct' to its allowed_callers"
    )


def check_examples(
    tool: str, examples: object, errors: Callable[[Any], list[str]]
) -> tuple[Mapping[str, Any], ...]:
    """``examples`` as read-only copies, each checked by ``errors`` (the tool's input
    validator); the first one that fails is refused naming its index and the problem."""
    if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Sequence):
        raise InvalidTypeError(
            f"input_examples of tool {tool!r} must be a list of argument objects, "
            f"got {type(examples).__name__}"
        )
    out = []
    for index, example in enumerate(examples):
        if not isinstance(example, Mapping):
            raise InvalidTypeError(
                f"input_examples[{index}] of tool {tool!r} must be an object of arguments, "
                f"got {type(example).__name__}"
            )
        frozen, refused = freeze_schema(example)
        if refused is not None:
            where, problem = refused
            raise InvalidValueError(
                f"input_examples[{index}] of tool {tool!r} is not JSON at {where}: {problem}"
            )
        problems = errors(thaw(frozen))
        if problems:
            raise InvalidValueError(
                f"input_examples[{index}] of tool {tool!r} does not fit its input schema: "
                f"{'; '.join(problems)}; fix the example (the provider would show the model "
                "an input the tool refuses)"
            )
        out.append(frozen)
    return tuple(out)


def check_grammar_tool(tool: str, grammar: object, schema: Mapping[str, Any]) -> None:
    """A grammar tool takes exactly one required string parameter, :data:`GRAMMAR_INPUT`."""
    if not isinstance(grammar, Grammar):
        raise InvalidTypeError(
            f"grammar of tool {tool!r} must be a Grammar, got {type(grammar).__name__}"
        )
    problem = grammar_problem(grammar)
    if problem is not None:
        raise InvalidValueError(f"{grammar.syntax} grammar of tool {tool!r}: {problem}")
    properties = schema.get("properties") or {}
    kind = properties.get(GRAMMAR_INPUT, {}).get("type") if GRAMMAR_INPUT in properties else None
    if list(properties) != [GRAMMAR_INPUT] or kind != "string":
        raise InvalidValueError(
            f"tool {tool!r} has a grammar, so it takes free text: give it exactly one "
            f"parameter, {GRAMMAR_INPUT}: str (its parameters are {list(properties)})"
        )


def caller_kind(caller: Mapping[str, Any] | None) -> str:
    """``"direct"`` or ``"programmatic"`` for a provider's ``caller`` object: Anthropic's
    ``{"type": "direct"}`` / ``{"type": "code_execution_…", "tool_id"}``, OpenAI's
    ``{"type": "direct"}`` / ``{"type": "program", "caller_id"}``; no caller is direct."""
    if caller is None or caller.get("type") == "direct":
        return "direct"
    return "programmatic"
