"""JSON values as the validator sees them, not as Python does: ``True`` is never a number,
``3.0`` is an integer, ``1`` and ``1.0`` are equal for ``enum``/``const``/``uniqueItems``
while ``True`` and ``1`` are not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Ok = Callable[[Any, int], bool]


# A schema nested deeper than this is refused when compiled: compiling and checking it
# recurse once per level, and no real tool schema comes close.
MAX_SCHEMA_LEVELS = 100


INFINITY = float("inf")
TYPE_NAMES = ("null", "boolean", "object", "array", "number", "string", "integer")
SINGLE_TYPES = {name: (name,) for name in TYPE_NAMES}


class _TooDeep(Exception):
    """Internal: a value nests deeper than the limit while being compared."""


def _is_null(x: Any, d: int) -> bool:
    return x is None


def _is_boolean(x: Any, d: int) -> bool:
    return x is True or x is False


def is_json_integer(x: Any, d: int) -> bool:
    t = type(x)
    if t is int:
        return True
    if t is float:
        return x.is_integer()  # type: ignore[no-any-return]
    if t is bool:
        return False
    if isinstance(x, int):
        return not isinstance(x, bool)
    return isinstance(x, float) and x.is_integer()


def is_json_number(x: Any, d: int = 0) -> bool:
    """A JSON number: an int or a finite float (JSON has no Infinity and no NaN)."""
    t = type(x)
    if t is int:
        return True
    if t is float:
        return x - x == 0.0  # type: ignore[no-any-return]  # inf - inf and nan - nan are nan
    if isinstance(x, float):
        return x - x == 0.0
    return isinstance(x, int) and not isinstance(x, bool)


def all_finite(values: Any) -> bool:
    """True when the sum of ``values`` (ints and floats) is finite, so none is inf or nan;
    False says nothing for sure (1e308 + 1e308 overflows): look at each value then."""
    try:
        total = sum(values)
    except OverflowError:  # an int too large for a float
        return False
    return total - total == 0.0  # type: ignore[no-any-return]


def _is_string(x: Any, d: int) -> bool:
    return isinstance(x, str)


def _is_array(x: Any, d: int) -> bool:
    return isinstance(x, (list, tuple))


def _is_object(x: Any, d: int) -> bool:
    return type(x) is dict or isinstance(x, Mapping)


TYPE_CHECKS: dict[str, Ok] = {
    "null": _is_null,
    "boolean": _is_boolean,
    "integer": is_json_integer,
    "number": is_json_number,
    "string": _is_string,
    "array": _is_array,
    "object": _is_object,
}
# Exact Python types accepted by a JSON type without a further look (the fast path). Not
# float for "number": inf and nan are floats, and not JSON numbers.
EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int,),
    "string": (str,),
    "array": (list, tuple),
    "object": (dict,),
}

_TRUE_KEY = object()
_FALSE_KEY = object()


class _NotJson:
    """Key for a non-JSON value: equal only to itself."""

    __slots__ = ()


def canon(value: Any, budget: int) -> Any:
    """A hashable key with JSON equality: 1 == 1.0, True != 1, objects unordered."""
    t = type(value)
    if t is str or t is int or t is float or value is None:
        return value
    if value is True:
        return _TRUE_KEY
    if value is False:
        return _FALSE_KEY
    if budget <= 0:
        raise _TooDeep
    if isinstance(value, (list, tuple)):
        return tuple([canon(item, budget - 1) for item in value])
    if isinstance(value, Mapping):
        return frozenset((key, canon(item, budget - 1)) for key, item in value.items())
    # subclasses (a str Enum, an IntEnum) compare as the JSON value they stand for
    if isinstance(value, str):
        return str.__str__(value)  # str() would ask the subclass, and an Enum says "Colour.RED"
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return _NotJson()


def is_json_value(value: Any, budget: int = MAX_SCHEMA_LEVELS) -> bool:
    if isinstance(value, float):
        return value - value == 0.0  # not inf or nan
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if budget <= 0:
        return False
    if isinstance(value, (list, tuple)):
        return all(is_json_value(item, budget - 1) for item in value)
    if isinstance(value, Mapping):
        return all(
            isinstance(key, str) and is_json_value(item, budget - 1) for key, item in value.items()
        )
    return False


SCALAR_TYPE_NAMES = frozenset({"null", "boolean", "integer", "number", "string"})
SCALARS = (str, int, float, bool, type(None))
INT_FLOAT = frozenset({int, float})
