"""Everything that reads a ``SKILL.md``'s YAML frontmatter lives here: the ``---`` fences,
and a reader on the standard library for the YAML that real skills contain.

The reader takes block mappings and block sequences (nested by indentation), flow
sequences and mappings (on one line or over several), plain, single- and double-quoted
scalars, literal (``|``) and folded (``>``) block scalars with their chomping and
indentation indicators, plain scalars continued on more-indented lines, comments, and a
``...`` line ending the document. It reads as PyYAML's ``safe_load`` does — the parser
of the family's reference port — so a skill loads the same with or without the ``yaml``
extra: plain scalars resolve by YAML 1.1 (``yes``/``on`` are true, ``012`` is octal 10,
``1e3`` is text, ``1_000`` is 1000), and a key given twice keeps its last value (a note
says so). Anchors, aliases, tags and multi-document streams are refused; with the
``yaml`` extra (PyYAML) installed, a block the reader cannot read is read by PyYAML
instead. A block neither can read raises ``_YamlError`` with the line (counted in the
whole file) where it went wrong and how to fix it.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["parse_yaml", "split_frontmatter"]

_FENCED = re.compile(r"---\r?\n(.*?)\r?\n---\r?\n?(.*)", re.DOTALL)
_EMPTY_FENCED = re.compile(r"---\r?\n---\r?\n?(.*)", re.DOTALL)
# a "key:" opening a line: a quoted key, or plain text not starting with an indicator
_KEY = re.compile(
    r"(?P<key>"
    r'"(?:[^"\\]|\\.)*"'
    r"|'(?:[^']|'')*'"
    r"|[^\s#'\"\[\]{},:&*!|>%@`-][^:#]*?"
    r"|-[^\s:#][^:#]*?"
    r")\s*:(?:\s+|$)(?P<rest>.*)"
)
# plain scalars as YAML 1.1 resolves them (PyYAML's safe_load, the reference's parser)
_BOOLS = {
    **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_INT = re.compile(
    r"[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]+|0|[1-9][0-9_]*(?P<sexagesimal>(?::[0-5]?[0-9])+)?)"
)
_FLOAT = re.compile(
    r"[-+]?[0-9][0-9_]*(?P<sexagesimal>(?::[0-5]?[0-9])+)?\.[0-9_]*"
    r"|[-+]?[0-9][0-9_]*\.[0-9_]*[eE][-+][0-9]+"
    r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
)
_INFINITY = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)")
_BLOCK_HEADER = re.compile(r"([|>])([1-9])?([-+])?([1-9])?\s*(?:#.*)?")
_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
    "_": "\xa0", "L": "\u2028", "P": "\u2029",
}  # fmt: skip


class _YamlError(Exception):
    """A frontmatter block that cannot be read: ``line`` (1-based, in the whole file) and
    ``problem``. Internal: the skills module turns it into a SkillError naming the skill."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line
        self.problem = problem


class _Unclosed(_YamlError):
    """A flow collection still open at the end of the text given: the reader joins the
    next line and tries again."""


class _Unsupported(Exception):
    """Valid YAML this reader does not implement (PyYAML may read it)."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


def opens_frontmatter(text: str) -> bool:
    """Whether ``text`` opens with a frontmatter fence (``---`` on the first line),
    closed or not: :func:`split_frontmatter` says whether it is closed."""
    return re.match(r"---\r?\n", text) is not None


def key_line(block: str, key: str) -> int | None:
    """The line (0-based, in ``block``) where the top-level ``key:`` is written, or None
    — read as the reader reads keys (quoted or plain)."""
    for number, line in enumerate(block.splitlines()):
        if line[:1].isspace():
            continue
        match = _KEY.fullmatch(line.rstrip())
        if match is None:
            continue
        written = match.group("key").strip()
        if written[:1] in ("'", '"'):
            try:
                written = str(_Reader([line], 1, None).quoted(written, 0)[0])
            except (_YamlError, _Unsupported):
                continue
        if written == key:
            return number
    return None


def split_frontmatter(text: str) -> tuple[str, str, bool] | None:
    """``(block, body, True)`` for text that opens with a ``---`` fenced block, else
    None. The closing fence is the first line that is ``---``; the body is what follows
    it (one line break after the fence dropped)."""
    empty = _EMPTY_FENCED.fullmatch(text)
    if empty is not None:
        return "", empty.group(1), True
    match = _FENCED.fullmatch(text)
    if match is None:
        return None
    return match.group(1), match.group(2), True


def parse_yaml(
    block: str, *, first_line: int = 1, notes: list[tuple[int, str]] | None = None
) -> Any:
    """The value of the YAML ``block`` (a frontmatter's text between its fences):
    mappings as dicts, sequences as lists. ``first_line`` is the block's first line in
    its file, for the line numbers of errors; ``notes`` (when given) gains a (line,
    text) for what was read but deserves a warning (a key given twice).

    With the ``yaml`` extra (PyYAML) installed, a block the reader cannot read goes to
    PyYAML's ``safe_load``, so whatever the family's reference loads, loads.

    Raises ``_YamlError`` naming the line and how to fix it, for YAML that is malformed,
    or that this reader does not implement while PyYAML is not installed.

    Example::

        >>> parse_yaml("name: pdf\\ndescription: >\\n  Fill\\n  forms.\\n")
        {'name': 'pdf', 'description': 'Fill forms.\\n'}
    """
    try:
        return _Reader(block.splitlines(), first_line, notes).document()
    except (_Unsupported, _YamlError) as exc:
        refusal = exc
    except RecursionError:  # [[[[... thousands deep: no skill needs it, and PyYAML neither
        raise _YamlError(
            first_line, "the frontmatter nests too deeply; write it with less nesting"
        ) from None
    try:
        import yaml  # the yaml extra: full YAML, when the plain reader does not do
    except ImportError:
        if isinstance(refusal, _YamlError):
            raise refusal from None
        from ._extras import install_hint

        raise _YamlError(
            refusal.line,
            f"{refusal.problem} is not supported without the yaml extra "
            f"({install_hint('yaml', 'PyYAML>=6.0')}); rewrite it as plain YAML",
        ) from None
    try:
        return _json_safe(yaml.safe_load(block))
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError) as yaml_exc:
        if isinstance(refusal, _YamlError):
            raise refusal from None  # malformed for both: the reader says it plainer
        mark = getattr(yaml_exc, "problem_mark", None)
        line = first_line + (mark.line if mark is not None else 0)
        raise _YamlError(line, f"invalid YAML: {yaml_exc}") from None


def _json_safe(value: Any) -> Any:
    """PyYAML's value as JSON data: dates become their ISO text, keys text."""
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if callable(isoformat) else str(value)


class _FlowScan:
    """Whether the brackets of a flow collection's text, fed in pieces, balance yet:
    ``[``/``{`` open, ``]``/``}`` close, outside quoted scalars (``'...'`` with ``''``
    for a quote, ``"..."`` with backslash escapes). Only a guide to when to read: the
    reader's :meth:`_Reader.flow` judges the text."""

    __slots__ = ("depth", "escaped", "quote")

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""
        self.escaped = False

    @property
    def balanced(self) -> bool:
        return self.depth <= 0 and not self.quote

    def feed(self, text: str) -> None:
        for char in text:
            if self.quote == '"':
                if self.escaped:
                    self.escaped = False
                elif char == "\\":
                    self.escaped = True
                elif char == '"':
                    self.quote = ""
            elif self.quote == "'":
                if char == "'":
                    self.quote = ""  # ('' reopens at once: the next quote)
            elif char in "'\"":
                self.quote = char
            elif char in "[{":
                self.depth += 1
            elif char in "]}":
                self.depth -= 1


def _strip_comment(text: str) -> str:
    """``text`` without a trailing ``# comment`` (a ``#`` after whitespace)."""
    match = re.search(r"(?:^|\s)#", text)
    return (text[: match.start()] if match else text).rstrip()


def _plain(text: str) -> Any:
    """A plain scalar resolved as YAML 1.1 resolves it (PyYAML's ``safe_load``, which the
    family's reference reads frontmatter with): null, booleans (``yes``/``no``/``on``/
    ``off`` too), integers (binary, octal with a leading 0, hex, base 60, ``_``
    ignored), floats (with a dot; an exponent needs its sign); anything else is text
    (dates too)."""
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    number = _INT.fullmatch(text)
    if number is not None:
        return _number(text, int, number.group("sexagesimal"))
    number = _FLOAT.fullmatch(text)
    if number is not None:
        return _number(text, float, number.group("sexagesimal"))
    if _INFINITY.fullmatch(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.fullmatch(text):
        return float("nan")
    return text


def _number(text: str, kind: type[int] | type[float], sexagesimal: str | None) -> Any:
    """The value of ``text``, which YAML 1.1 resolves as a ``kind`` number; the text
    itself when its digits are only underscores (``0b_``)."""
    digits = text.replace("_", "")
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("+-")
    try:
        if sexagesimal:
            value: int | float = 0
            for part in digits.split(":"):
                value = value * 60 + kind(part)
            return sign * value
        if kind is float:
            return sign * float(digits)
        if digits.startswith("0b"):
            return sign * int(digits[2:], 2)
        if digits.startswith("0x"):
            return sign * int(digits[2:], 16)
        if digits.startswith("0") and digits != "0":
            return sign * int(digits, 8)
        return sign * int(digits)
    except ValueError:
        return text


class _Reader:
    """One block, line by line: ``lines[index]`` is the next line to read."""

    def __init__(
        self, lines: list[str], first_line: int, notes: list[tuple[int, str]] | None = None
    ) -> None:
        self.lines = lines
        self.first = first_line
        self.index = 0
        self.notes = notes

    def fail(self, problem: str, index: int | None = None) -> _YamlError:
        return _YamlError(self.first + (self.index if index is None else index), problem)

    def unsupported(self, problem: str) -> _Unsupported:
        return _Unsupported(self.first + self.index, problem)

    def skip_blank(self) -> None:
        while self.index < len(self.lines):
            stripped = self.lines[self.index].strip()
            if stripped and not stripped.startswith("#"):
                return
            self.index += 1

    def indent_of(self, index: int) -> int:
        line = self.lines[index]
        if line[: len(line) - len(line.lstrip(" "))].count("\t") or line.startswith("\t"):
            raise self.fail("a tab indents this line; YAML indents with spaces", index)
        return len(line) - len(line.lstrip(" "))

    def document(self) -> Any:
        self.skip_blank()
        if self.index >= len(self.lines):
            return None
        if self.lines[self.index].strip() == "---":
            raise self.unsupported("a second YAML document")
        value = None if self.at_end_marker() else self.node(self.indent_of(self.index))
        self.skip_blank()
        if self.at_end_marker():
            self.index += 1
            self.skip_blank()
            if self.index < len(self.lines):
                raise self.fail(
                    "text after the '...' line that ends the YAML document: move it above "
                    "the '...' line, or remove that line"
                )
        if self.index < len(self.lines):
            raise self.fail("unexpected text (is it indented wrongly?)")
        return value

    def at_end_marker(self) -> bool:
        """Whether the line at ``index`` is ``...``, the end of the YAML document."""
        return self.index < len(self.lines) and self.lines[self.index].rstrip() == "..."

    def node(self, indent: int) -> Any:
        """The block node whose first line is at ``index``, indented ``indent``."""
        text = self.lines[self.index].strip()
        if text == "-" or text.startswith("- "):
            return self.sequence(indent)
        if _KEY.fullmatch(text):
            return self.mapping(indent)
        return self.inline(text, indent)

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while True:
            self.skip_blank()
            if self.index >= len(self.lines):
                return items
            here = self.indent_of(self.index)
            line = self.lines[self.index]
            text = line.strip()
            if here < indent or self.at_end_marker():
                return items
            if here > indent:
                raise self.fail("this line is indented more than the list items before it")
            if not (text == "-" or text.startswith("- ")):
                return items
            rest = text[1:].lstrip(" ")
            if not rest or rest.startswith("#"):
                self.index += 1
                self.skip_blank()
                if self.index < len(self.lines) and self.indent_of(self.index) > indent:
                    items.append(self.node(self.indent_of(self.index)))
                else:
                    items.append(None)
                continue
            # "- key: value" opens a mapping indented at the text after the dash
            inner = here + (len(text) - len(rest))
            self.lines[self.index] = " " * inner + rest
            items.append(self.node(inner))

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while True:
            self.skip_blank()
            if self.index >= len(self.lines):
                return result
            here = self.indent_of(self.index)
            if here < indent or self.at_end_marker():
                return result
            if here > indent:
                raise self.fail("this line is indented more than the keys before it")
            text = self.lines[self.index].strip()
            match = _KEY.fullmatch(text)
            if match is None:
                if text.startswith("- "):
                    raise self.fail("a list item where a 'key: value' line belongs")
                raise self.fail(f"expected 'key: value', got {text[:40]!r}")
            key = self.key(match.group("key").strip())
            if key in result and self.notes is not None:
                # PyYAML (the reference's parser) keeps the last value: so does this
                self.notes.append(
                    (
                        self.first + self.index,
                        f"the key {key!r} is given again here; its last value is used "
                        "(remove the other one)",
                    )
                )
            rest = match.group("rest").strip()
            if not rest.startswith(("'", '"')):
                rest = _strip_comment(rest)  # a quoted value may hold a '#'; it ends itself
            if rest == "":
                self.index += 1
                self.skip_blank()
                if self.index < len(self.lines):
                    child = self.indent_of(self.index)
                    text_child = self.lines[self.index].strip()
                    is_item = text_child == "-" or text_child.startswith("- ")
                    if child > indent or (child == indent and is_item):
                        result[key] = self.node(child)
                        continue
                result[key] = None
                continue
            result[key] = self.inline(rest, indent)

    def key(self, text: str) -> str:
        if text[:1] in ("'", '"'):
            return str(self.quoted(text, 0)[0])
        return text

    def inline(self, text: str, indent: int) -> Any:
        """The value that starts on this line after a key or a dash (``text``, comment
        kept for quoted values), reading continuation lines as it needs; leaves
        ``index`` on the next line to read."""
        first = text[:1]
        if first in ("&", "*", "!"):
            raise self.unsupported("an anchor, alias or tag")
        if first in ("|", ">"):
            return self.block_scalar(text, indent)
        if first in ("'", '"'):
            return self.quoted(text, indent)[0]
        if first in ("[", "{"):
            return self.flow_lines(text, indent)
        if first in ("@", "`"):
            raise self.fail(f"a plain value cannot start with {first!r}; quote it")
        parts = [_strip_comment(text)]
        self.index += 1
        # a plain scalar continues on lines indented more than its key
        while self.index < len(self.lines):
            line = self.lines[self.index]
            stripped = line.strip()
            if not stripped:
                look = self.index
                while look < len(self.lines) and not self.lines[look].strip():
                    look += 1
                if look < len(self.lines) and self.indent_of(look) > indent:
                    parts.append("\n" * (look - self.index))
                    self.index = look
                    continue
                break
            if self.indent_of(self.index) <= indent or stripped.startswith("#"):
                break
            if _KEY.fullmatch(stripped):
                raise self.fail("this line is indented more than the keys before it")
            parts.append(_strip_comment(stripped))
            self.index += 1
        if len(parts) == 1:
            return _plain(parts[0])
        folded = parts[0]
        for part in parts[1:]:
            if part.startswith("\n") or folded.endswith("\n"):
                folded += part
            else:
                folded += " " + part
        return folded

    def flow_lines(self, text: str, indent: int) -> Any:
        """A flow collection starting at ``text`` on this line, continued on the lines
        that follow until it closes (each line break read as a space, comments
        dropped); leaves ``index`` on the next line to read."""
        start = self.index
        joined = _strip_comment(text)
        scan = _FlowScan()
        scan.feed(joined)
        while True:
            # Lines are joined until the brackets balance, then read (scanned as they
            # come: a collection over thousands of lines is read once, not once a line).
            if scan.balanced:
                try:
                    value, end = self.flow(joined, 0)
                    break
                except _Unclosed:
                    pass  # balanced to the scan, still open to the reader: read on
            self.index += 1
            self.skip_blank()
            ends = self.index >= len(self.lines) or self.at_end_marker()
            if ends or (
                self.indent_of(self.index) <= indent
                and _KEY.fullmatch(self.lines[self.index].strip())
            ):
                closer = "]" if text[0] == "[" else "}"
                raise self.fail(
                    f"the flow collection opened with {text[0]!r} here is not closed: "
                    f"end it with {closer!r} (it may go on over indented lines), or "
                    "quote a value that starts with '[' or '{'",
                    start,
                ) from None
            more = " " + _strip_comment(self.lines[self.index].strip())
            scan.feed(more)
            joined += more
        if joined[end:].strip():
            raise self.fail("unexpected text after a flow collection")
        self.index += 1
        return value

    def quoted(self, text: str, indent: int) -> tuple[str, int]:
        """A quoted scalar starting at ``text`` (may span lines); returns the value and
        leaves ``index`` after its last line."""
        quote = text[0]
        pieces: list[str] = []
        current = text[1:]
        start = self.index
        while True:
            position = 0
            while position < len(current):
                char = current[position]
                if quote == "'" and char == "'":
                    if current[position + 1 : position + 2] == "'":
                        pieces.append("'")
                        position += 2
                        continue
                    return self.after_quote("".join(pieces), current[position + 1 :])
                if quote == '"' and char == '"':
                    return self.after_quote("".join(pieces), current[position + 1 :])
                if quote == '"' and char == "\\":
                    code = current[position + 1 : position + 2]
                    if code in _ESCAPES:
                        pieces.append(_ESCAPES[code])
                        position += 2
                        continue
                    size = {"x": 2, "u": 4, "U": 8}.get(code)
                    digits = current[position + 2 : position + 2 + (size or 0)]
                    if size and re.fullmatch(r"[0-9a-fA-F]+", digits) and len(digits) == size:
                        pieces.append(chr(int(digits, 16)))
                        position += 2 + size
                        continue
                    if code == "":
                        break  # an escaped line break: the next line joins without a space
                    raise self.fail(f"unknown escape \\{code} in a double-quoted string")
                pieces.append(char)
                position += 1
            escaped_break = quote == '"' and current.endswith("\\") and position < len(current)
            self.index += 1
            if self.index >= len(self.lines):
                raise self.fail(f"a {quote}-quoted string is not closed", start)
            following = self.lines[self.index].strip()
            if escaped_break:
                current = following
                continue
            if not following:
                pieces.append("\n")
                current = ""
                continue
            if pieces and not pieces[-1].endswith("\n"):
                while pieces and pieces[-1] in (" ", "\t"):
                    pieces.pop()
                pieces.append(" ")
            current = following

    def after_quote(self, value: str, rest: str) -> tuple[str, int]:
        rest = rest.strip()
        if rest and not rest.startswith("#"):
            raise self.fail(f"unexpected text after a quoted string: {rest[:40]!r}")
        self.index += 1
        return value, 0

    def block_scalar(self, header: str, indent: int) -> str:
        match = _BLOCK_HEADER.fullmatch(header)
        if match is None:
            raise self.fail(f"malformed block scalar header {header!r}")
        style, digit_a, chomp, digit_b = match.groups()
        explicit = digit_a or digit_b
        self.index += 1
        lines: list[str] = []
        block_indent = indent + int(explicit) if explicit else None
        while self.index < len(self.lines):
            line = self.lines[self.index]
            if not line.strip():
                lines.append("")
                self.index += 1
                continue
            here = len(line) - len(line.lstrip(" "))
            if block_indent is None:
                if here <= indent:
                    break
                block_indent = here
            if here < block_indent:
                break
            lines.append(line[block_indent:])
            self.index += 1
        # trailing blank lines belong to the chomping, not to the content
        content = list(lines)
        trailing = 0
        while content and content[-1] == "":
            content.pop()
            trailing += 1
        text = "\n".join(content) if style == "|" else _fold(content)
        if not content:
            return "\n" * trailing if chomp == "+" else ""
        if chomp == "-":
            return text
        if chomp == "+":
            return text + "\n" + "\n" * trailing
        return text + "\n"

    def flow(self, text: str, position: int) -> tuple[Any, int]:
        """A flow collection or scalar in ``text`` at ``position``; returns it and the
        position after it."""
        while position < len(text) and text[position] == " ":
            position += 1
        if position >= len(text):
            raise _Unclosed(self.first + self.index, "a flow collection is not closed")
        opener = text[position]
        if opener in ("[", "{"):
            closer = "]" if opener == "[" else "}"
            items: list[Any] = []
            mapping: dict[str, Any] = {}
            position += 1
            while True:
                while position < len(text) and text[position] == " ":
                    position += 1
                if position >= len(text):
                    raise _Unclosed(self.first + self.index, "a flow collection is not closed")
                if text[position] == closer:
                    return (items if opener == "[" else mapping), position + 1
                if opener == "{":
                    key, position = self.flow(text, position)
                    while position < len(text) and text[position] == " ":
                        position += 1
                    if position >= len(text):
                        raise _Unclosed(self.first + self.index, "a flow collection is not closed")
                    if text[position : position + 1] != ":":
                        raise self.fail("expected ':' in a flow mapping")
                    value, position = self.flow(text, position + 1)
                    mapping[str(key)] = value
                else:
                    value, position = self.flow(text, position)
                    items.append(value)
                while position < len(text) and text[position] == " ":
                    position += 1
                if position >= len(text):
                    raise _Unclosed(self.first + self.index, "a flow collection is not closed")
                if text[position] == ",":
                    position += 1
                elif text[position : position + 1] != closer:
                    raise self.fail(f"expected ',' or {closer!r} in a flow collection")
        if opener in ("'", '"'):
            end = position + 1
            while end < len(text):
                if text[end] == opener:
                    if opener == "'" and text[end + 1 : end + 2] == "'":
                        end += 2
                        continue
                    break
                if opener == '"' and text[end] == "\\":
                    end += 1
                end += 1
            if end >= len(text):  # it may go on on the next line
                raise _Unclosed(self.first + self.index, "a quoted string is not closed")
            saved = self.lines, self.index
            self.lines, self.index = [text[position : end + 1]], 0
            try:
                value = self.quoted(text[position : end + 1], 0)[0]
            finally:
                self.lines, self.index = saved
            return value, end + 1
        if opener in ("&", "*", "!"):
            raise self.unsupported("an anchor, alias or tag")
        end = position
        while end < len(text) and text[end] not in ",]}" and text[end : end + 2] != ": ":
            if text[end] == ":" and end + 1 == len(text):
                break
            end += 1
        return _plain(text[position:end].strip()), end


def _fold(lines: list[str]) -> str:
    """Folded block content: a single line break between two text lines becomes a
    space, ``k`` blank lines between them become ``k`` breaks; around a more-indented
    line every break is kept."""
    out = ""
    previous: str | None = None
    blanks = 0
    for line in lines:
        if line == "":
            blanks += 1
            continue
        if previous is None:
            out = "\n" * blanks + line
        elif line.startswith((" ", "\t")) or previous.startswith((" ", "\t")):
            out += "\n" * (blanks + 1) + line
        else:
            out += ("\n" * blanks if blanks else " ") + line
        previous = line
        blanks = 0
    return out
