"""What a validation says: values described, a value's path written, problems collected.

Every problem text of :mod:`toolnexus.validation` is worded with these helpers, so a value,
a path and a list of alternatives read the same way in every message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

Path = tuple[str | int, ...]


# Walking stops after this many problems, so a huge wrong input costs bounded time.
_PROBLEM_CEILING = 1000


class _Stop(Exception):
    """Internal: enough problems collected; stop walking."""


# --------------------------------------------------------------------------- describing


def json_short(value: Any, limit: int = 40) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def number_text(value: Any) -> str:
    if isinstance(value, int):
        # str() of a huge int is slow (and refused past 4300 digits on 3.11+)
        if value.bit_length() > 200:
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
        return str(value)
    return repr(value)


def describe(value: Any) -> str:
    """What was found: the JSON type and, for scalars, a short preview."""
    if value is None:
        return "null"
    if value is True or value is False:
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"integer {number_text(value)}"
    if isinstance(value, float):
        if value - value != 0.0:
            return f"{value!r} (not a JSON number: JSON has no Infinity or NaN)"
        return f"number {number_text(value)}"
    if isinstance(value, str):
        if len(value) <= 40:
            return f"string {json.dumps(value, ensure_ascii=False)}"
        preview = json.dumps(value[:37], ensure_ascii=False)[:-1]
        return f'string {preview}..." ({len(value)} characters)'
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return f"{type(value).__name__} (not a JSON value)"


def plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word[:-1]}ies" if word.endswith("y") else f"{count} {word}s"


class _Others(str):
    """In a list of alternatives: ``count`` more, not spelled out (a long enum's rest)."""

    hidden: int


def alternatives(options: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c`` — shortened past a dozen."""
    hidden = sum(option.hidden for option in options if isinstance(option, _Others))
    unique = list(dict.fromkeys(option for option in options if not isinstance(option, _Others)))
    if len(unique) + hidden > 12:
        return ", ".join(unique[:10]) + f", ... ({len(unique) + hidden} in all)"
    if len(unique) <= 1:
        return "".join(unique)
    return ", ".join(unique[:-1]) + " or " + unique[-1]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


def format_path(path: Path) -> str:
    """Package-internal: a value's path as error texts write it (``items[2].name``); tools.py
    uses it for argument errors, so both say a place the same way."""
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif _IDENTIFIER.match(segment):
            parts.append(f".{segment}" if parts else segment)
        else:
            parts.append(f"[{json.dumps(segment, ensure_ascii=False)}]")
    return "".join(parts)


class Problems:
    """Collects problem strings in order, without duplicates, up to a ceiling."""

    __slots__ = ("ceiling", "items", "seen", "truncated")

    def __init__(self, ceiling: int = _PROBLEM_CEILING) -> None:
        self.items: list[str] = []
        self.seen: set[str] = set()
        self.ceiling = ceiling
        self.truncated = False

    def add(self, path: Path, message: str) -> None:
        self.add_text(f"{format_path(path)}: {message}" if path else message)

    def add_text(self, text: str) -> None:
        if text in self.seen:
            return
        if len(self.items) >= self.ceiling:
            self.truncated = True
            raise _Stop
        self.seen.add(text)
        self.items.append(text)


def shown_values(values: Sequence[Any], count: int) -> list[str]:
    """The first dozen distinct values as a problem shows them, then an :class:`_Others`
    for the rest of ``count`` distinct values. Reads only the values it shows: a long enum
    is not written out to say that a value is not in it."""
    shown: dict[str, None] = {}
    for value in values:
        shown[json_short(value)] = None
        if len(shown) > 12:
            break
    texts = list(shown)
    if len(texts) <= 12:
        return texts
    others = _Others("...")
    others.hidden = max(count, 13) - 12
    return [*texts[:12], others]


def expect_enum(values: Sequence[Any], count: int | None = None) -> str:
    """``"a"``, ``one of "a", "b"``, or the first ten and how many in all."""
    shown = shown_values(values, len(values) if count is None else count)
    if not shown:
        return "nothing (the enum is empty)"
    last = shown[-1]
    if isinstance(last, _Others):
        return f"one of {', '.join(shown[:10])}, ... ({len(shown) - 1 + last.hidden} values)"
    if len(shown) == 1:
        return shown[0]
    return f"one of {', '.join(shown)}"


def first_problems(items: list[str], path: Path = (), shown: int = 3) -> str:
    """A few problems found under ``path``, as one clause (that path's own prefix dropped)."""
    if not items:
        return "does not match"
    prefix = f"{format_path(path)}: " if path else ""
    if prefix:
        items = [item[len(prefix) :] if item.startswith(prefix) else item for item in items]
    detail = "; ".join(items[:shown])
    if len(items) > shown:
        detail += f"; ... and {len(items) - shown} more"
    return detail


def too_deep(max_depth: int) -> str:
    return f"nested too deeply (more than {max_depth} levels)"
