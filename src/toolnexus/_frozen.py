"""Deep read-only copies of JSON-like data, for the mapping fields of frozen values.

``FrozenDict`` and ``FrozenList`` subclass ``dict`` and ``list`` so they still compare
equal to plain ones and ``json.dumps`` them as usual; only mutation is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .errors import InvalidTypeError

__all__ = [
    "FrozenDict",
    "FrozenList",
    "freeze",
    "freeze_schema",
    "not_json_at",
    "sealed",
    "thaw",
]

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any, NoReturn, TypeVar

    _T = TypeVar("_T")

    _DictBase = dict[str, Any]
    _ListBase = list[Any]
else:
    _DictBase = dict
    _ListBase = list


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise InvalidTypeError(
        f"{type(self).__name__} is read-only; copy it first (dict(x) / list(x)) to change it"
    )


class FrozenDict(_DictBase):
    """A ``dict`` that refuses to change after construction."""

    __slots__ = ()
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        # Hashable, so the frozen values holding one (results, requests) hash too.
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __repr__(self) -> str:
        return dict.__repr__(self)


class FrozenList(_ListBase):
    """A ``list`` that refuses to change after construction."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = _refuse
    reverse = sort = clear = __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __repr__(self) -> str:
        return list.__repr__(self)


_LEAVES = frozenset({int, str, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """Return a deep read-only copy of mappings and lists; other values as they are."""
    kind = value.__class__
    if kind in _LEAVES or kind is FrozenDict or kind is FrozenList:
        return value  # the common cases, before the ABC check below (a Python call)
    if kind is dict:
        frozen: dict[Any, Any] = {}  # a loop, not a comprehension: as thaw, a frame less
        for key, item in value.items():
            frozen[key] = item if item.__class__ in _LEAVES else freeze(item)
        return FrozenDict(frozen)
    if kind is list:  # before the ABC check too: a result's content is one
        return FrozenList([item if item.__class__ in _LEAVES else freeze(item) for item in value])
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(item) for item in value])
    if isinstance(value, tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """Return a deep plain (mutable) copy of what :func:`freeze` made."""
    kind = value.__class__
    if kind in _LEAVES:
        return value  # the common leaves, before the ABC check below (a Python call)
    if kind is FrozenDict or kind is dict or isinstance(value, Mapping):
        plain: dict[Any, Any] = {}  # a loop, not a comprehension: one frame less before Python 3.12
        for key, item in value.items():
            plain[key] = item if item.__class__ in _LEAVES else thaw(item)
        return plain
    if isinstance(value, (list, tuple)):
        return [thaw(item) for item in value]
    return value


def sealed(cls: type[_T]) -> type[_T]:
    """Make every assignment or deletion on a frozen-slots dataclass raise FrozenInstanceError.

    The ``__setattr__`` that ``@dataclass(frozen=True, slots=True)`` writes refers to the
    class it replaced, so for a name that is not a field it fails with a puzzling
    ``TypeError: super(type, obj)`` instead. Apply above the ``@dataclass`` line.
    """

    def refuse(self: object, name: str, *value: object) -> NoReturn:
        raise dataclasses.FrozenInstanceError(
            f"{type(self).__name__} is frozen: cannot change {name!r}; "
            "make a changed copy with dataclasses.replace()"
        )

    cls.__setattr__ = refuse  # type: ignore[method-assign]
    cls.__delattr__ = refuse  # type: ignore[method-assign]
    return cls


# --------------------------------------------------------------------------- schemas


class _NotJson(Exception):
    """A value in a schema that JSON cannot carry (raised by :func:`freeze_schema`)."""


def freeze_schema(value: Any) -> tuple[Any, tuple[str, str] | None]:
    """``(copy, None)``: a read-only copy of ``value``; or ``(None, (where, problem))`` when
    JSON cannot carry it, ``where`` a JSON pointer (see :func:`not_json_at`).

    Example::

        >>> freeze_schema({"type": "object"})
        ({'type': 'object'}, None)
        >>> freeze_schema({"default": float("nan")})[1]
        ('#/default', 'nan is not a JSON number (NaN and infinities are not JSON)')
    """
    try:
        return _freeze_schema(value), None
    except _NotJson:
        return None, not_json_at(value) or ("#", "it is not JSON")


def _freeze_schema(value: Any) -> Any:
    """A read-only copy of a schema, refusing what JSON cannot carry (``NaN``, a set, an
    object): a tool's schemas are sent as JSON, to every provider and in MCP's
    ``tools/list``. Plain dicts and lists (what inference builds) are copied by exact type,
    several times faster than :func:`freeze`'s ABC checks."""
    kind = value.__class__
    if kind is str or kind is bool or kind is int or value is None:
        return value
    if kind is dict or kind is FrozenDict:
        return FrozenDict({_schema_key(key): _freeze_schema(item) for key, item in value.items()})
    if kind is list or kind is FrozenList or kind is tuple:
        return FrozenList([_freeze_schema(item) for item in value])
    if isinstance(value, float):
        if value - value == 0.0:  # not NaN, not an infinity
            return value
        raise _NotJson(f"{value!r} is not a JSON number (NaN and infinities are not JSON)")
    if isinstance(value, (str, int)):  # subclasses (a str enum): JSON writes their value
        return value
    if isinstance(value, Mapping):
        return FrozenDict({_schema_key(key): _freeze_schema(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList([_freeze_schema(item) for item in value])
    hint = "; use a list" if isinstance(value, (set, frozenset)) else ""
    article = "an" if kind.__name__[:1].lower() in "aeiou" else "a"
    raise _NotJson(f"{article} {kind.__name__} is not a JSON value{hint}")


def _schema_key(key: Any) -> str:
    if key.__class__ is str or isinstance(key, str):
        return key
    raise _NotJson(f"the key {key!r} is not a string (JSON object keys are strings)")


def not_json_at(value: Any, path: str = "#") -> tuple[str, str] | None:
    """Where in ``value`` something JSON cannot carry is, and what (the failure path of
    :func:`freeze_schema`): ``("#/properties/n/default", "nan is not a JSON number ...")``."""
    from ._pointer import escape

    try:
        if isinstance(value, Mapping):
            for key, item in value.items():
                _schema_key(key)
                found = not_json_at(item, f"{path}/{escape(key)}")
                if found is not None:
                    return found
            return None
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                found = not_json_at(item, f"{path}/{index}")
                if found is not None:
                    return found
            return None
        _freeze_schema(value)
    except _NotJson as exc:
        return path, str(exc)
    return None
