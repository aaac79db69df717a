"""URI templates (RFC 6570, levels 1 to 3, as MCP uses them): parse, match and expand.

A resource served at ``test://template/{id}/data`` answers ``resources/read`` for
``test://template/123/data`` with ``id = "123"``. This module owns that rule both ways:
:meth:`UriTemplate.match` reads the variables out of a URI, :meth:`UriTemplate.expand`
writes a URI from them. Every level-3 form is understood — ``{var}``, ``{+var}``,
``{#var}``, ``{.var}``, ``{/var}``, ``{;var}``, ``{?var}``, ``{&var}``, each with several
comma-separated variables; level 4's modifiers (``{var:3}``, ``{list*}``) are refused when
the template is built, naming the expression.

Matching is the inverse of expansion, as far as it can be: a simple variable (``{id}``)
matches one path segment (no ``/``, ``?``, ``#`` or ``,``), a reserved one (``{+path}``)
anything but ``?`` and ``#``, a query expression (``{?q,page}``) the query's
``name=value`` pairs in any order (absent ones stay absent, unknown names are ignored).
Percent-escapes in values are decoded. No I/O, no state: a parsed template is immutable.

A decoded value may reach a file system, so :meth:`UriTemplate.refusal` says which values a
server must not hand to its function: a simple variable (``{name}``, and the label, path
and parameter forms ``{.x}``, ``{/x}``, ``{;x}``) is one path segment — no ``/`` or ``\\``
(``%2F`` and ``%5C`` included), not ``..``; a reserved, fragment or query variable
(``{+path}``, ``{#x}``, ``{?q}``) may hold ``/`` (a path of several segments: the
template's author opts in by writing ``{+path}``) but no ``..`` segment and no absolute
path (a leading ``/`` or ``\\``, a drive such as ``C:``); no value holds NUL or another
control character.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import InvalidValueError

__all__ = ["UriTemplate", "is_template"]

_OPERATORS = "+#./;?&"
_VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*")
# What each operator puts before the first value and between values, whether it writes
# name=value pairs, and which characters it leaves unencoded (RFC 6570, appendix A).
_FIRST = {"": "", "+": "", "#": "#", ".": ".", "/": "/", ";": ";", "?": "?", "&": "&"}
_SEPARATOR = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/", ";": ";", "?": "&", "&": "&"}
_NAMED = frozenset(";?&")
_RESERVED_SAFE = ":/?#[]@!$&'()*+,;="
# What one value may hold when a URI is matched, by operator.
_VALUE = {
    "": r"[^/?#,]+",
    ".": r"[^/?#,.]+",
    "/": r"[^/?#,]+",
    "+": r"[^?#,]+",
    "#": r"[^,]+",
}
_ALONE = {"+": r"[^?#]+", "#": r".+"}
# The operators whose values are one path segment; the others may hold a path.
_SEGMENT = frozenset({"", ".", "/", ";"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"[A-Za-z]:")


def is_template(uri: str) -> bool:
    """Whether ``uri`` holds at least one ``{expression}`` (is a template, not a URI).

    Example::

        >>> is_template("test://template/{id}/data"), is_template("test://static-text")
        (True, False)
    """
    return "{" in uri


class _Expression:
    __slots__ = ("names", "operator")

    def __init__(self, operator: str, names: tuple[str, ...]) -> None:
        self.operator = operator
        self.names = names


class UriTemplate:
    """A parsed RFC 6570 URI template (levels 1 to 3).

    Raises ``ValueError`` naming the expression for a template that is not one: an
    unclosed brace, an empty or malformed variable name, a level-4 modifier, a variable
    named twice.

    Example::

        >>> template = UriTemplate("test://template/{id}/data")
        >>> template.variables
        ('id',)
        >>> template.match("test://template/123/data")
        {'id': '123'}
        >>> template.expand({"id": "a b"})
        'test://template/a%20b/data'
    """

    __slots__ = ("_operators", "_parts", "_pattern", "_queries", "template", "variables")

    def __init__(self, template: str) -> None:
        if not isinstance(template, str) or not template:
            raise InvalidValueError(f"a URI template must be a non-empty str, got {template!r}")
        self.template = template
        parts: list[str | _Expression] = []
        names: list[str] = []
        position = 0
        while True:
            start = template.find("{", position)
            stray = template.find("}", position, start if start >= 0 else len(template))
            if stray >= 0:
                raise InvalidValueError(
                    f"URI template {template!r}: '}}' at {stray} closes no expression"
                )
            if start < 0:
                if position < len(template):
                    parts.append(template[position:])
                break
            if start > position:
                parts.append(template[position:start])
            end = template.find("}", start)
            if end < 0:
                raise InvalidValueError(
                    f"URI template {template!r}: the expression at {start} is never closed ('}}')"
                )
            expression = _parse_expression(template, template[start + 1 : end])
            for name in expression.names:
                if name in names:
                    raise InvalidValueError(
                        f"URI template {template!r}: variable {name!r} appears twice; "
                        "name each variable once"
                    )
                names.append(name)
            parts.append(expression)
            position = end + 1
        self._parts = tuple(parts)
        self.variables = tuple(names)
        self._operators = {
            name: part.operator
            for part in parts
            if isinstance(part, _Expression)
            for name in part.names
        }
        # Each capture group of the pattern and the variables it holds: "vN" one value,
        # "sN" one ";name=value" parameter, "qN" a query expression's name=value pairs.
        self._queries: list[tuple[str, tuple[str, ...]]] = []
        self._pattern = re.compile(self._regex(), re.DOTALL)

    def _regex(self) -> str:
        pieces: list[str] = []
        groups = 0
        for part in self._parts:
            if isinstance(part, str):
                pieces.append(re.escape(part))
                continue
            operator = part.operator
            if operator in ("?", "&"):
                # The query's name=value pairs, read whole and parsed by name afterwards.
                group = f"q{len(self._queries)}"
                self._queries.append((group, part.names))
                pieces.append(f"(?:{re.escape(operator)}(?P<{group}>[^#]*))?")
                continue
            if operator == ";":
                for name in part.names:
                    groups += 1
                    pieces.append(f"(?P<s{groups}>;{re.escape(name)}(?:=[^;/?#,]*)?)?")
                    self._queries.append((f"s{groups}", (name,)))
                continue
            value = _VALUE[operator]
            if len(part.names) == 1 and operator in _ALONE:
                value = _ALONE[operator]  # one variable: a comma is part of its value
            captured = []
            for name in part.names:
                groups += 1
                captured.append(f"(?P<v{groups}>{value})")
                self._queries.append((f"v{groups}", (name,)))
            joined = re.escape(_SEPARATOR[operator]).join(captured)
            first = re.escape(_FIRST[operator])
            if len(part.names) > 1:
                # Trailing variables may be undefined: "{x,y}" also matches just "x".
                head, *rest = captured
                tail = "".join(f"(?:{re.escape(_SEPARATOR[operator])}{item})?" for item in rest)
                joined = head + tail
            pieces.append(
                f"(?:{first}{joined})?" if operator in ("#", ".", "/") else f"{first}{joined}"
            )
        return "".join(pieces)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables ``uri`` gives this template (percent-escapes decoded), or ``None``
        when it does not match. A variable the URI leaves undefined (an optional query
        parameter) is absent from the result.

        Example::

            >>> UriTemplate("test://search{?q,page}").match("test://search?page=2&q=a%20b")
            {'q': 'a b', 'page': '2'}
        """
        if not isinstance(uri, str):
            return None
        found = self._pattern.fullmatch(uri)
        if found is None:
            return None
        from urllib.parse import unquote  # here: every server with a resource imports us

        values: dict[str, str] = {}
        for group, named in self._queries:
            raw = found.group(group)
            if group.startswith("q"):  # a query expression: its pairs, by name
                pairs = _query_pairs(raw) if raw else {}
                values.update((name, pairs[name]) for name in named if name in pairs)
            elif group.startswith("s"):  # ";name" or ";name=value"
                if raw is not None:
                    values[named[0]] = unquote(raw.partition("=")[2])
            elif raw is not None:
                values[named[0]] = unquote(raw)
        return values

    def refusal(self, values: Mapping[str, str]) -> str | None:
        """Why a server must not hand ``values`` (what :meth:`match` read) to a function
        — a value that could name a file outside the one its variable names — or None.

        A simple variable (``{name}``) is one path segment: no ``/`` or ``\\``, not
        ``..``. A reserved one (``{+path}``, ``{#x}``) or a query one (``{?q}``) may hold
        ``/`` but no ``..`` segment and no absolute path. No value holds NUL or another
        control character.

        Example::

            >>> template = UriTemplate("docs://files/{name}")
            >>> template.refusal(template.match("docs://files/..%2Fetc%2Fhostname"))[:42]
            "variable 'name' is '../etc/hostname': a {n"
            >>> UriTemplate("docs://{+path}").refusal({"path": "guides/start.md"}) is None
            True
        """
        for name, value in values.items():
            problem = _value_problem(value, self._operators.get(name, "") in _SEGMENT)
            if problem is not None:
                operator = self._operators.get(name, "")
                if operator in _SEGMENT and problem == "a path":
                    return (
                        f"variable {name!r} is {value!r}: a {{{name}}} value is one path "
                        f"segment (no '/', '\\' or '..'); write {{+{name}}} in the template "
                        "to take a path"
                    )
                return f"variable {name!r} is {value!r}: {problem}"
        return None

    def expand(self, values: Mapping[str, Any]) -> str:
        """The URI this template gives ``values`` (strings, or anything ``str()`` writes);
        an absent or ``None`` variable is left out, as RFC 6570 says.

        Example::

            >>> UriTemplate("file:///{+path}{?rev}").expand({"path": "docs/a b.md"})
            'file:///docs/a%20b.md'
        """
        from urllib.parse import quote

        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            operator = part.operator
            safe = _RESERVED_SAFE if operator in ("+", "#") else ""
            written: list[str] = []
            for name in part.names:
                value = values.get(name)
                if value is None:
                    continue
                text = quote(str(value), safe=safe)
                if operator in _NAMED:
                    written.append(f"{name}={text}" if text or operator != ";" else name)
                else:
                    written.append(text)
            if written:
                out.append(_FIRST[operator] + _SEPARATOR[operator].join(written))
        return "".join(out)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriTemplate) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"


def _parse_expression(template: str, body: str) -> _Expression:
    where = f"URI template {template!r}: expression {{{body}}}"
    operator = body[0] if body and body[0] in _OPERATORS else ""
    if body and body[0] in "=,!@|":
        raise InvalidValueError(f"{where} uses the reserved operator {body[0]!r}")
    names = body[len(operator) :].split(",")
    checked: list[str] = []
    for name in names:
        if name.endswith("*") or ":" in name:
            raise InvalidValueError(
                f"{where} uses a level-4 modifier ({'*' if name.endswith('*') else ':n'}); "
                "only levels 1 to 3 are supported: write the variable plainly"
            )
        if not _VARNAME.fullmatch(name):
            raise InvalidValueError(
                f"{where}: {name!r} is not a variable name (letters, digits, '_', '.')"
            )
        checked.append(name)
    return _Expression(operator, tuple(checked))


def _value_problem(value: str, segment: bool) -> str | None:
    """What is wrong with one decoded value: ``"a path"`` when a segment holds more than
    one, else a description; None when nothing is."""
    if _CONTROL.search(value):
        return "it holds NUL or another control character, which no name may hold"
    parts = value.replace("\\", "/").split("/")
    if segment:
        return "a path" if len(parts) > 1 or value == ".." else None
    if ".." in parts:
        return "a '..' segment could reach outside the path the template names"
    if value.startswith(("/", "\\")) or _DRIVE.match(value):
        return "an absolute path could reach outside the path the template names"
    return None


def _query_pairs(raw: str) -> dict[str, str]:
    from urllib.parse import unquote

    pairs: dict[str, str] = {}
    for item in raw.split("&"):
        if not item:
            continue
        name, _, value = item.partition("=")
        pairs.setdefault(unquote(name), unquote(value))
    return pairs
