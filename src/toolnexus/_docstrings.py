"""Docstring parsing: a function's description, and each parameter's, from its docstring.

A tool's description is its docstring's first paragraph; a parameter's description comes
from the docstring's parameter section in the Google (``Args:``), NumPy (``Parameters``
over a dashed line) or reST (``:param name:``) style. :mod:`toolnexus._schema` puts them
into the schemas it infers; the MCP server reads resources' and prompts' descriptions here too.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

# Patterns as text: re compiles (and caches) them with the first docstring of more than one
# line; a server of tools with one-line docstrings starts without compiling any.
_GOOGLE_SECTION = (
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters"
    r"|Attributes|Fields):\s*$"
)
_ANY_GOOGLE_SECTION = r"^[A-Z][A-Za-z ]{1,30}:\s*$"
_GOOGLE_ENTRY = r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$"
_NUMPY_PARAM_SECTIONS = {"parameters", "other parameters", "attributes", "fields"}
_NUMPY_ENTRY = (
    r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)"
    r"\s*(?::.*)?$"
)
_REST_FIELD = (
    r"^:(param|parameter|arg|argument|key|keyword|ivar|var)\s+(?:[^:]*\s)?"
    r"\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$"
)
_REST_ANY_FIELD = r"^:[A-Za-z]+[^:]*:"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(parts: list[str]) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its first paragraph and per-parameter descriptions.

    Reads Google (``Args:``), NumPy (``Parameters`` over a dashed line) and reST
    (``:param name:``) styles; continuation lines are joined with spaces.

    Example::

        >>> parse_docstring('''Add two numbers.
        ...
        ... Args:
        ...     a: the first one.
        ...     b: the second
        ...        one.
        ... ''')
        ('Add two numbers.', {'a': 'the first one.', 'b': 'the second one.'})
    """
    if not doc:
        return "", {}
    if "\n" not in doc:
        return doc.strip(), {}
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}

    # The description: the first paragraph, stopping at any section or field list.
    summary: list[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            if summary:
                break
            continue
        if (
            re.match(_ANY_GOOGLE_SECTION, stripped)
            or re.match(_REST_ANY_FIELD, stripped)
            or (index + 1 < len(lines) and set(lines[index + 1].strip()) == {"-"})
        ):
            break
        summary.append(stripped)

    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        # Google: "Args:" then indented "name (type): text" entries.
        if re.match(_GOOGLE_SECTION, stripped):
            base = _indent(line)
            index += 1
            entry_indent: int | None = None
            name: str | None = None
            text: list[str] = []
            while index < len(lines):
                line = lines[index]
                if line.strip() and _indent(line) <= base:
                    break
                if line.strip():
                    indent = _indent(line)
                    if entry_indent is None:
                        entry_indent = indent
                    match = (
                        re.match(_GOOGLE_ENTRY, line.strip()) if indent == entry_indent else None
                    )
                    if match:
                        if name is not None:
                            params.setdefault(name, _join(text))
                        name, text = match.group(1), [match.group(2)]
                    elif name is not None:
                        text.append(line)
                index += 1
            if name is not None:
                params.setdefault(name, _join(text))
            continue
        # NumPy: "Parameters" over "----------", entries "name : type", text indented.
        if (
            stripped.lower() in _NUMPY_PARAM_SECTIONS
            and index + 1 < len(lines)
            and set(lines[index + 1].strip()) == {"-"}
        ):
            base = _indent(line)
            index += 2
            names: list[str] = []
            text = []
            while index < len(lines):
                line = lines[index]
                if line.strip() and _indent(line) <= base:
                    if index + 1 < len(lines) and set(lines[index + 1].strip()) == {"-"}:
                        break  # the next section
                    match = re.match(_NUMPY_ENTRY, line.strip())
                    if not match:
                        break
                    for each in names:
                        params.setdefault(each, _join(text))
                    names = [part.strip().lstrip("*") for part in match.group(1).split(",")]
                    text = []
                elif line.strip():
                    text.append(line)
                index += 1
            for each in names:
                params.setdefault(each, _join(text))
            continue
        # reST: ":param name: text" (or ":param type name: text"), continuation indented.
        match = re.match(_REST_FIELD, stripped)
        if match:
            name, text = match.group(2), [match.group(3)]
            index += 1
            while (
                index < len(lines)
                and lines[index].strip()
                and _indent(lines[index]) > 0
                and not re.match(_REST_ANY_FIELD, lines[index].strip())
            ):
                text.append(lines[index])
                index += 1
            params.setdefault(name, _join(text))
            continue
        index += 1
    return _join(summary), params
