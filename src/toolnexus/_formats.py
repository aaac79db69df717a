"""Python values that travel as JSON strings: their schema and how their text is read.

Everything that knows how a ``datetime``, ``date``, ``time``, ``timedelta``, ``UUID``,
``Path``, ``Decimal`` or ``bytes`` parameter looks on the wire lives here: the JSON Schema a
model is shown (a string with a ``format``), the parser that turns the model's text into the
annotated type before the function is called (refusing bad text with a message that says
what was expected), and the reverse, for return values (``to_json``).

The formats: ``date-time`` (RFC 3339; an offset-less time gives a naive datetime),
``date`` (``YYYY-MM-DD``), ``time`` (``HH:MM[:SS[.ffffff]]`` with an optional offset),
``duration`` (ISO 8601, ``P1DT2H30M``, ``PT0.5S``, ``P2W``, a leading ``-`` for a negative
one; years and months are refused: they have no fixed length), ``uuid``, ``path`` and
``decimal`` (plain strings; JSON Schema has no standard format for either, so these are
hints to the model), and ``bytes`` as base64 text (``contentEncoding: base64``).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from typing import Any

from .errors import FormatError, InvalidTypeError, InvalidValueError

__all__ = ["FormatError", "text_type", "to_json"]


_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME = r"(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?"
_TIME_ONLY = re.compile(_TIME)
_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt ]" + _TIME)
_NUMBER = r"(\d+(?:[.,]\d+)?)"
_DURATION = re.compile(
    rf"(-)?P(?:{_NUMBER}W)?(?:{_NUMBER}D)?(?:T(?:{_NUMBER}H)?(?:{_NUMBER}M)?(?:{_NUMBER}S)?)?"
)
_DURATION_LIKE = re.compile(r"-?P[0-9.,YMWDTHS]+")


def _shown(text: str) -> str:
    import json

    return json.dumps(text if len(text) <= 60 else text[:57] + "...", ensure_ascii=False)


def _zone(match: re.Match[str], first: int) -> _dt.tzinfo | None:
    if match.group(first):
        return _dt.timezone.utc
    sign = match.group(first + 1)
    if sign is None:
        return None
    hours, minutes = int(match.group(first + 2)), int(match.group(first + 3))
    if hours > 23 or minutes > 59:
        raise InvalidValueError("the offset is out of range")
    offset = _dt.timedelta(hours=hours, minutes=minutes)
    return _dt.timezone(-offset if sign == "-" else offset)


def _clock(match: re.Match[str], first: int) -> tuple[int, int, int, int, _dt.tzinfo | None]:
    hour, minute = int(match.group(first)), int(match.group(first + 1))
    second = int(match.group(first + 2) or 0)
    fraction = match.group(first + 3) or ""
    micro = int((fraction + "000000")[:6])
    return hour, minute, second, micro, _zone(match, first + 4)


def parse_datetime(text: str) -> _dt.datetime:
    """RFC 3339 text (``2026-05-01T09:30:00Z``) as a datetime; naive without an offset."""
    match = _DATE_TIME.fullmatch(text)
    if match is not None:
        try:
            hour, minute, second, micro, zone = _clock(match, 4)
            return _dt.datetime(
                int(match.group(1)),
                int(match.group(2)),
                int(match.group(3)),
                hour,
                minute,
                second,
                micro,
                zone,
            )
        except ValueError as exc:
            raise FormatError(f"{_shown(text)} is not a valid date-time ({exc})") from None
    raise FormatError(
        f'expected a date-time (RFC 3339, e.g. "2026-05-01T09:30:00Z"), got {_shown(text)}'
    )


def parse_date(text: str) -> _dt.date:
    """``YYYY-MM-DD`` as a date."""
    match = _DATE.fullmatch(text)
    if match is not None:
        try:
            return _dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError as exc:
            raise FormatError(f"{_shown(text)} is not a valid date ({exc})") from None
    raise FormatError(f'expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got {_shown(text)}')


def parse_time(text: str) -> _dt.time:
    """``HH:MM[:SS[.ffffff]]`` with an optional ``Z`` or ``+HH:MM`` offset as a time."""
    match = _TIME_ONLY.fullmatch(text)
    if match is not None:
        try:
            hour, minute, second, micro, zone = _clock(match, 1)
            return _dt.time(hour, minute, second, micro, zone)
        except ValueError as exc:
            raise FormatError(f"{_shown(text)} is not a valid time ({exc})") from None
    raise FormatError(f'expected a time (HH:MM:SS, e.g. "09:30:00"), got {_shown(text)}')


def parse_duration(text: str) -> _dt.timedelta:
    """An ISO 8601 duration (``P1DT2H30M``, ``PT0.5S``, ``P2W``, ``-PT5M``) as a timedelta."""
    match = _DURATION.fullmatch(text)
    if (
        match is not None
        and any(match.group(index) for index in range(2, 7))
        and not (text.endswith("T"))
    ):
        weeks, days, hours, minutes, seconds = (
            float((match.group(index) or "0").replace(",", ".")) for index in range(2, 7)
        )
        try:
            value = _dt.timedelta(
                weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds
            )
        except OverflowError:
            raise FormatError(f"the duration {_shown(text)} is too long") from None
        return -value if match.group(1) else value
    if _DURATION_LIKE.fullmatch(text) and ("Y" in text or "M" in text.split("T")[0]):
        raise FormatError(
            f"the duration {_shown(text)} counts years or months, which have no fixed "
            'length; give it in weeks, days, hours, minutes or seconds (e.g. "P30D")'
        )
    raise FormatError(
        f'expected a duration (ISO 8601, e.g. "PT1H30M" or "P2D"), got {_shown(text)}'
    )


def parse_uuid(text: str) -> Any:
    """A UUID in any form ``uuid.UUID`` reads (hyphens optional, braces, ``urn:uuid:``)."""
    import uuid

    try:
        return uuid.UUID(text)
    except ValueError:
        raise FormatError(
            f'expected a UUID (e.g. "123e4567-e89b-12d3-a456-426614174000"), got {_shown(text)}'
        ) from None


def parse_decimal(text: str) -> Any:
    """A finite decimal number written as text (``"12.50"``, ``"-3"``, ``"1e-3"``)."""
    import decimal

    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        value = None
    if value is None or not value.is_finite() or not text.strip():
        raise FormatError(f'expected a decimal number as text (e.g. "12.50"), got {_shown(text)}')
    return value


def parse_base64(text: str) -> bytes:
    """Base64 text (standard or URL-safe alphabet, padding optional) as bytes."""
    import base64
    import binascii

    compact = "".join(text.split())
    padded = compact + "=" * (-len(compact) % 4)
    try:
        if "-" in compact or "_" in compact:
            return base64.urlsafe_b64decode(padded.encode("ascii"))
        return base64.b64decode(padded.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise FormatError(
            f'expected bytes as base64 text (e.g. "aGVsbG8="), got {_shown(text)}'
        ) from None


def _path_from_text(text: str) -> Any:
    import pathlib

    return pathlib.Path(text)


def text_type(tp: Any) -> tuple[dict[str, Any], Callable[[str], Any]] | None:
    """The schema and text parser for a type carried as a string, or None for other types.

    Example::

        >>> import datetime
        >>> schema, parse = text_type(datetime.date)
        >>> schema, parse("2026-05-01")
        ({'type': 'string', 'format': 'date'}, datetime.date(2026, 5, 1))
    """
    if not isinstance(tp, type):
        return None
    if tp is _dt.datetime:
        return {"type": "string", "format": "date-time"}, parse_datetime
    if tp is _dt.date:
        return {"type": "string", "format": "date"}, parse_date
    if tp is _dt.time:
        return {"type": "string", "format": "time"}, parse_time
    if tp is _dt.timedelta:
        return {"type": "string", "format": "duration"}, parse_duration
    if tp is bytes:
        return {"type": "string", "contentEncoding": "base64"}, parse_base64
    module = tp.__module__
    if module == "uuid" and tp.__name__ == "UUID":
        return {"type": "string", "format": "uuid"}, parse_uuid
    if module == "decimal" and tp.__name__ == "Decimal":
        return {"type": "string", "format": "decimal"}, parse_decimal
    # Python 3.13 defines the classes in pathlib._local (and re-exports them).
    if module.partition(".")[0] == "pathlib" and tp.__name__ in (
        "Path",
        "PurePath",
        "PosixPath",
        "WindowsPath",
        "PurePosixPath",
        "PureWindowsPath",
    ):
        if tp.__name__ in ("Path", "PurePath"):
            return {"type": "string", "format": "path"}, _path_from_text
        return {"type": "string", "format": "path"}, tp
    return None


def to_json(value: Any) -> Any:
    """The JSON form of a value :func:`text_type` reads, or of a pydantic-like model;
    raises TypeError for anything else.

    Example::

        >>> import datetime
        >>> to_json(datetime.timedelta(hours=1, minutes=30))
        'PT1H30M'
    """
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return _duration_text(value)
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(bytes(value)).decode("ascii")
    kind = type(value)
    module = kind.__module__
    if (module == "uuid" and kind.__name__ == "UUID") or module.startswith("pathlib"):
        return str(value)
    if module == "decimal" and kind.__name__ == "Decimal":
        return str(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json")
        except TypeError:
            return dump()
    raise InvalidTypeError(f"{kind.__name__} is not JSON-serialisable")


def _duration_text(value: _dt.timedelta) -> str:
    sign = "-" if value < _dt.timedelta(0) else ""
    value = abs(value)
    days, seconds, micro = value.days, value.seconds, value.microseconds
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}P" + (f"{days}D" if days else "")
    clock = ""
    if hours:
        clock += f"{hours}H"
    if minutes:
        clock += f"{minutes}M"
    if seconds or micro:
        clock += f"{seconds}.{micro:06d}".rstrip("0") + "S" if micro else f"{seconds}S"
    if clock:
        text += "T" + clock
    return text if text not in ("P", "-P") else "PT0S"
