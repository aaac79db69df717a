"""What every answer and task store shares: the environment variable that names a store,
the key rule, and how a store's messages read (:func:`redact`, so no password reaches a log;
:func:`first_line` of a driver's error)."""

from __future__ import annotations

import re

from ..errors import InvalidValueError

__all__ = ["STORE_ENV", "check_key", "first_line", "redact"]

STORE_ENV = "TOOLNEXUS_STORE"
"""The environment variable naming the answer store (a URL) a host uses when none is given."""

_PASSWORD_PARAM = re.compile(r"(?i)(password=)[^&\s]*")


def redact(url: str) -> str:
    """``url`` with its password (``user:password@`` or ``password=…``) shown as ``***``.

    Also for a URL too malformed to use: whatever stands between the user name and the
    last ``@`` before the query is hidden.

    Example::

        >>> redact("postgresql://app:s3cret@db:5432/app?sslmode=require")
        'postgresql://app:***@db:5432/app?sslmode=require'
        >>> redact("redis://:s3cret@cache:6379/0")
        'redis://:***@cache:6379/0'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, sep, rest = url.partition(":")
    head, question, query = rest.partition("?")
    userinfo, at, hostpath = head.rpartition("@")
    if at and ":" in userinfo:
        url = f"{scheme}{sep}{userinfo.partition(':')[0]}:***@{hostpath}{question}{query}"
    return _PASSWORD_PARAM.sub(r"\1***", url)


def check_key(key: object) -> str:
    """``key`` when it is 1 to 64 ASCII characters, as :class:`AnswerStore` promises;
    else ``ValueError`` (a programmer's mistake: the host's keys always fit)."""
    if not isinstance(key, str) or not key.isascii() or not 0 < len(key) <= 64:
        raise InvalidValueError(
            f"an answer store key must be 1 to 64 ASCII characters, got {key!r:.80}"
        )
    return key


def first_line(exc: BaseException) -> str:
    """The first line of a driver's error message (the rest is often a hint or a dump)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
