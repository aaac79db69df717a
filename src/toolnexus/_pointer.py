"""JSON pointers (RFC 6901), and the ``$ref`` URI fragments that carry them.

The one place the package turns ``"#/$defs/a~1b"`` into the value it names: the validator,
the provider adapters (Gemini's inlined references, the strict modes' recursion check) and
the tools' handling of strict mode's nulls all resolve references here, so a definition
named ``a/b``, ``c~d`` or ``e f`` (``#/$defs/e%20f``) means the same thing everywhere.

A pointer is ``""`` (the whole document) or ``/``-separated reference tokens in which
``~1`` stands for ``/`` and ``~0`` for ``~``. In a URI fragment (``"#/..."``) the pointer
is percent-encoded first (RFC 6901, section 6), so ``%25`` is ``%`` and ``%2F`` a ``/``
that separates tokens.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MISSING",
    "escape",
    "fragment_pointer",
    "resolve",
    "resolve_reference",
    "step",
    "tokens",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""What a pointer that names nothing resolves to (``None`` is a JSON value)."""


def escape(token: str) -> str:
    """``token`` as a reference token: ``~`` written ``~0`` and ``/`` written ``~1``.

    Example::

        escape("a/b~c")   # 'a~1b~0c'
    """
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def tokens(pointer: str) -> list[str] | None:
    """The unescaped reference tokens of ``pointer`` (``[]`` for ``""``), or None when it is
    not a JSON pointer (it does not start with ``/``, or has a ``~`` not followed by 0 or 1).

    Example::

        tokens("/$defs/a~1b")   # ['$defs', 'a/b']
    """
    if not pointer:
        return []
    if pointer[0] != "/":
        return None
    parts = pointer[1:].split("/")
    if "~" not in pointer:
        return parts
    out = []
    for part in parts:
        # ~1 first, then ~0: "~01" is the token "~1", never "/"
        plain = part.replace("~1", "/").replace("~0", "~")
        if plain.count("~") != part.count("~0"):
            return None  # a "~" followed by something other than 0 or 1
        out.append(plain)
    return out


def step(target: Any, token: str) -> Any:
    """The member ``token`` of an object, or the item at index ``token`` of an array;
    :data:`MISSING` when there is none (RFC 6901 indices: ``0`` or no leading zero)."""
    from collections.abc import Mapping

    if isinstance(target, Mapping):
        return target.get(token, MISSING)
    if isinstance(target, (list, tuple)) and token.isdigit() and token.isascii():
        if token[0] == "0" and token != "0":
            return MISSING
        index = int(token)
        return target[index] if index < len(target) else MISSING
    return MISSING


def resolve(document: Any, pointer: str) -> Any:
    """The value ``pointer`` names in ``document``, or :data:`MISSING`.

    Example::

        resolve({"a/b": [10, 20]}, "/a~1b/1")   # 20
    """
    parts = tokens(pointer)
    if parts is None:
        return MISSING
    target = document
    for part in parts:
        target = step(target, part)
        if target is MISSING:
            break
    return target


def fragment_pointer(reference: str) -> str | None:
    """The JSON pointer of a same-document reference (``"#"`` or ``"#/..."``), percent-
    decoded; None for any other reference (another document, or an anchor like ``#node``).

    Example::

        fragment_pointer("#/$defs/e%20f")   # '/$defs/e f'
    """
    if not reference.startswith("#"):
        return None
    pointer = reference[1:]
    if "%" in pointer:
        from urllib.parse import unquote

        pointer = unquote(pointer)
    if pointer and pointer[0] != "/":
        return None
    return pointer


def resolve_reference(root: Any, reference: str) -> Any:
    """What a same-document ``$ref`` (``"#/$defs/Name"``) names in ``root``, or
    :data:`MISSING` (also for a reference to another document or to an anchor).

    Example::

        resolve_reference({"$defs": {"a/b": {"type": "integer"}}}, "#/$defs/a~1b")
        # {'type': 'integer'}
    """
    pointer = fragment_pointer(reference)
    return MISSING if pointer is None else resolve(root, pointer)
