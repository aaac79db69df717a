"""``freeze``: its quick path for plain dicts and common leaves gives what the general path
(any ``Mapping``) gives."""

from __future__ import annotations

import enum
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

from toolnexus._frozen import FrozenDict, FrozenList, freeze, thaw


class Level(enum.IntEnum):
    LOW = 1


def nested() -> dict[str, Any]:
    return {
        "text": "é",
        "n": 1,
        "x": 1.5,
        "ok": True,
        "none": None,
        "level": Level.LOW,
        "list": [1, {"deep": [2, 3]}, (4, {"t": 5})],
        "map": {"inner": {"list": []}},
    }


def test_a_dict_freezes_as_any_other_mapping_does() -> None:
    plain = freeze(nested())
    for other in (OrderedDict(nested()), MappingProxyType(nested())):
        assert freeze(other) == plain
    assert type(plain) is FrozenDict
    assert type(plain["list"]) is FrozenList and type(plain["list"][1]) is FrozenDict
    assert type(plain["list"][2]) is tuple and type(plain["list"][2][1]) is FrozenDict
    assert type(plain["map"]["inner"]) is FrozenDict
    assert plain["level"] is Level.LOW
    assert thaw(plain) == {**nested(), "list": [1, {"deep": [2, 3]}, [4, {"t": 5}]]}


def test_what_is_frozen_already_is_kept_as_it_is() -> None:
    frozen = freeze(nested())
    assert freeze(frozen) is frozen
    assert freeze(frozen["list"]) is frozen["list"]
    for leaf in ("s", 1, 1.0, True, None, Level.LOW):
        assert freeze(leaf) is leaf
