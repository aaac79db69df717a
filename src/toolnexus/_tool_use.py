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
    "Grammar",
    "caller_kind",
    "check_callers",
    "check_examples",
    "check_grammar_tool",
    "grammar_problem",
]

CALLERS = ("direct", "programmatic")
"""Who may call a tool: the model itself (``"direct"``), or code the model runs in the
provider's code-execution tool (``"programmatic"``)."""

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
    lookaround, lazy quantifiers (``*?``, ``+?``, ``??``) or backreferences, and a regex
    grammar is one line; a Lark grammar defines ``start`` and has no terminal priorities,
    templates, ``%declare`` or ``%import`` other than ``%import common``.

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
    """A character class at ``at`` (nested classes and ``[:name:]`` included)."""
    depth, i, n = 1, at + 1, len(pattern)
    i += pattern.startswith("^", i)
    i += pattern.startswith("]", i)
    while i < n:
        char = pattern[i]
        if char == "\\":
            problem, i = _regex_escape(pattern, i)
            if problem is not None:
                return problem, i
        elif char == "[" and pattern.startswith("[:", i) and ":]" in pattern[i + 2 :]:
            i = pattern.index(":]", i + 2) + 2
        elif char == "[":
            depth, i = depth + 1, i + 1
            i += pattern.startswith("^", i)
            i += pattern.startswith("]", i)
        elif char == "]":
            depth, i = depth - 1, i + 1
            if depth == 0:
                return None, i
        else:
            i += 1
    return f"the character class opened at {at} is not closed; add its ']'", n


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
    for at, body in _lark_regexes(text):
        problem = _regex_problem(body, one_line=False)
        if problem is not None:
            return f"the regex /{body}/ at line {line(at)}: {problem}"
    return None


def _lark_regexes(text: str) -> list[tuple[int, str]]:
    """Each ``/regex/`` terminal of a Lark grammar (its offset and body), outside strings
    and ``//`` comments."""
    found = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text[i] in '"/':
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                j += 2 if text[j] == "\\" else 1
            if quote == "/":
                found.append((i, text[i + 1 : j]))
            i = j + 1
        else:
            i += 1
    return found


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
