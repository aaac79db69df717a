"""Shared helpers for the wire format: compact UTF-8 JSON and field checks with clear errors.

Two edges every reader and writer here shares:

- **Lone surrogates** (``"\\ud800"`` in a Python or JavaScript string) are written as JSON
  ``\\uXXXX`` escapes, as JavaScript's ``JSON.stringify`` does, so the text always encodes
  as UTF-8 and reads back to the same string; every other non-ASCII character is kept as is.
  Bytes that are not UTF-8 are refused.
- **Nesting** deeper than :data:`MAX_DEPTH` levels is refused with a
  :class:`~toolnexus.errors.WireFormatError` on reading and writing, never a
  ``RecursionError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from .errors import InputError, WireFormatError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any


MAX_DEPTH = 128
"""How deeply arrays and objects may nest in a wire value (the document itself is level 1).

.NET's reader stops at 64 by default, so no port's everyday value comes near; Python's own
recursion limit is far enough above it that reading, freezing and writing never hit it."""


def _escape_surrogates(text: str) -> str:
    import re  # lazily: only non-ASCII text pays, and `import toolnexus` stays cheap

    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps(value: Any, type_name: str) -> str:
    """Compact JSON with non-ASCII kept as is: the bytes every toolnexus port produces.

    A lone surrogate is written as a ``\\uXXXX`` escape (a surrogate in a Python ``str`` is
    always lone: a pair is one code point), so the text always encodes as UTF-8.
    """
    check_depth(value, type_name)
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise WireFormatError(type_name, None, f"is not JSON-serialisable: {exc}") from None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # Surrogates occur only inside JSON strings: every structural character is ASCII.
            text = _escape_surrogates(text)
    return text


def check_depth(value: Any, type_name: str) -> None:
    """Raise :class:`WireFormatError` when ``value`` nests deeper than :data:`MAX_DEPTH`.

    Iterative, so it is safe on values too deep for the recursive code after it.
    """
    if not isinstance(value, (Mapping, list, tuple)):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise WireFormatError(
                type_name,
                None,
                f"nests arrays/objects more than {MAX_DEPTH} levels deep; flatten the data",
            )
        children = item.values() if isinstance(item, Mapping) else item
        for child in children:
            if isinstance(child, (Mapping, list, tuple)):
                stack.append((child, depth + 1))


def loads_object(text: str | bytes | bytearray, type_name: str) -> Mapping[str, Any]:
    """Parse a JSON document that must be an object."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise WireFormatError(type_name, None, f"must be JSON text, got {type(text).__name__}")
    if not isinstance(text, str):
        try:
            # Strict UTF-8: json.loads would otherwise guess UTF-16/32 and let encoded
            # surrogates through.
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireFormatError(
                type_name, None, f"is not valid JSON: it is not UTF-8 ({exc}); write it as UTF-8"
            ) from None
    try:
        value = json.loads(text, parse_constant=refuse_json_constant, parse_float=finite_float)
    except (ValueError, RecursionError) as exc:
        raise WireFormatError(
            type_name, None, f"is not valid JSON ({exc}); expected a JSON object"
        ) from None
    return require_object(value, type_name)


def refuse_json_constant(name: str) -> Any:
    """``parse_constant`` hook for every JSON reader in the package (wire, MCP, CLI).

    Python's json reads ``NaN`` and ``Infinity``, but they are not JSON and no other port
    would read them back, so each reader refuses them with this one text.
    """
    raise InputError(f"{name} is not a JSON value")


def finite_float(text: str) -> float:
    """``parse_float`` hook beside :func:`refuse_json_constant`: a number a double cannot
    hold (``1e400``) is refused, as ``NaN`` is. Python would read it as ``inf``, which no
    JSON writer (``to_json`` included) can write back.
    """
    value = float(text)
    if value - value != 0.0:  # inf - inf is nan
        raise InputError(
            f"the number {text} is out of range (a JSON number here must fit a double:"
            " at most about 1.8e308)"
        )
    return value


def require_object(value: Any, type_name: str) -> Mapping[str, Any]:
    """``value`` when it is an object no deeper than :data:`MAX_DEPTH`, else a clear error."""
    if not isinstance(value, Mapping):
        raise WireFormatError(type_name, None, f"must be a JSON object, got {describe(value)}")
    check_depth(value, type_name)
    return value


def describe(value: Any) -> str:
    """Name a JSON value's type the way JSON does, with a short preview."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        preview = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(preview, ensure_ascii=False)}"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def field(
    data: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    type_name: str,
    *,
    required: bool,
    expected: str,
) -> Any:
    """Read ``data[key]`` checking its type; None when absent (or null) and not required."""
    value = data.get(key)
    if value is None:
        if not required:
            return None  # other ports omit unset optionals; a null reads the same
        if key in data:
            raise WireFormatError(type_name, key, f"must be {expected}, got null")
        raise WireFormatError(type_name, key, f"is missing; expected {expected}")
    if isinstance(value, bool) and kind is not bool:
        raise WireFormatError(type_name, key, f"must be {expected}, got {describe(value)}")
    if not isinstance(value, kind):
        raise WireFormatError(type_name, key, f"must be {expected}, got {describe(value)}")
    return value
