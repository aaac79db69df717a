"""Shared helpers for the wire format: compact UTF-8 JSON and field checks with clear errors."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .errors import WireFormatError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any


def dumps(value: Any, type_name: str) -> str:
    """Compact JSON with non-ASCII kept as is: the bytes every toolnexus port produces."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise WireFormatError(type_name, None, f"is not JSON-serialisable: {exc}") from None


def loads_object(text: str | bytes | bytearray, type_name: str) -> Mapping[str, Any]:
    """Parse a JSON document that must be an object."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise WireFormatError(type_name, None, f"must be JSON text, got {type(text).__name__}")
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise WireFormatError(
            type_name, None, f"is not valid JSON ({exc}); expected a JSON object"
        ) from None
    return require_object(value, type_name)


def _refuse_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, but they are not JSON and no other port
    # would read them back.
    raise ValueError(f"{name} is not a JSON value")


def require_object(value: Any, type_name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise WireFormatError(type_name, None, f"must be a JSON object, got {describe(value)}")
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
