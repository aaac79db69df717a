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
]

CALLERS = ("direct", "programmatic")
"""Who may call a tool: the model itself (``"direct"``), or code the model runs in the
provider's code-execution tool (``"programmatic"``)."""

GRAMMAR_INPUT = "input"
"""The one string parameter a grammar tool takes: the model's free text arrives in it."""

_SYNTAXES = ("lark", "regex")
# What OpenAI's regex grammars (Rust's regex crate) do not have: lookaround, backreferences.
_UNSUPPORTED_REGEX = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<")
_LARK_RULE = re.compile(r"^\s*\??start\s*:", re.MULTILINE)


@sealed
@dataclass(frozen=True, slots=True)
class Grammar:
    """The grammar of an OpenAI custom tool's free-text input: ``syntax`` is ``"lark"`` or
    ``"regex"``, ``definition`` the grammar itself. Checked when made: a regex must be a
    valid pattern (on the ECMA-262 engine the schemas' ``pattern`` use) without lookaround
    or backreferences, which the provider refuses; a Lark grammar must define ``start``.

    Example::

        >>> Grammar("regex", r"^\\d{4}-\\d{2}-\\d{2}$").to_format()["syntax"]
        'regex'
        >>> Grammar("regex", "(a")
        Traceback (most recent call last):
          ...
        toolnexus.errors.InvalidValueError: grammar: the regex is not valid: ...
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
        if self.syntax == "regex":
            from ._ecma import EcmaPatternError, compile_pattern

            try:
                compile_pattern(self.definition)
            except EcmaPatternError as exc:
                raise InvalidValueError(f"grammar: the regex is not valid: {exc}") from None
            found = _UNSUPPORTED_REGEX.search(self.definition)
            if found is not None:
                raise InvalidValueError(
                    f"grammar: the regex uses {found.group()!r} at {found.start()} (lookaround "
                    "or a backreference), which OpenAI's regex grammars do not support; "
                    "rewrite it without, or use a Lark grammar"
                )
        elif _LARK_RULE.search(self.definition) is None:
            raise InvalidValueError(
                "grammar: a Lark grammar must define the rule 'start' (for example "
                "'start: expr'); the provider refuses one without it"
            )

    def to_format(self) -> dict[str, Any]:
        """The ``format`` of an OpenAI custom tool: ``{"type": "grammar", "syntax",
        "definition"}``."""
        return {"type": "grammar", "syntax": self.syntax, "definition": self.definition}


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
