"""JSON Schema ``format`` assertions: is this string a date-time, an email, a URI, ...?

Everything that decides whether a string is valid for a ``format`` lives here, used by
:class:`toolnexus.validation.Validator` when built with ``format_assertion=True`` (by default
``format`` is an annotation only, as JSON Schema 2020-12 says). Each check follows the RFC
the JSON Schema validation spec names, strictly and in ASCII: ``date-time``/``date``/``time``
(RFC 3339, leap seconds only at 23:59:60 UTC), ``duration`` (RFC 3339 appendix A),
``email`` (RFC 5321 mailbox), ``hostname`` (RFC 1123), ``ipv4``/``ipv6`` (RFC 2673 /
RFC 4291, no zone), ``uri``/``uri-reference`` (RFC 3986), ``uuid`` (RFC 4122 text form),
``json-pointer`` (RFC 6901) and ``regex`` (ECMA-262, through the pattern engine).

This is not :mod:`toolnexus._formats`, which reads the text of typed parameters
(``datetime``, ``UUID``, ...) into Python values, more leniently.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["format_checker"]

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z", re.ASCII)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z", re.ASCII)
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_date(text: str) -> bool:
    match = _DATE.match(text)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    if not 1 <= month <= 12 or day < 1:
        return False
    if month == 2 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        return day <= 28
    return day <= _DAYS[month - 1]


def _is_time(text: str) -> bool:
    match = _TIME.match(text)
    if match is None:
        return False
    hour, minute, second = int(match[1]), int(match[2]), int(match[3])
    offset_hours = int(match[6] or 0)
    offset_minutes = int(match[7] or 0)
    if hour > 23 or minute > 59 or second > 60 or offset_hours > 23 or offset_minutes > 59:
        return False
    if second == 60:
        # a leap second is 23:59:60 in UTC, whatever the local offset
        sign = -1 if match[5] == "+" else 1
        utc = (hour * 60 + minute + sign * (offset_hours * 60 + offset_minutes)) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def _is_date_time(text: str) -> bool:
    date, separator, time = text[:10], text[10:11], text[11:]
    return separator in ("T", "t") and _is_date(date) and _is_time(time)


_DURATION = re.compile(
    r"P(?:(?:\d+Y)?(?:\d+M)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+S)?)?|\d+W)\Z", re.ASCII
)


def _is_duration(text: str) -> bool:
    # the grammar's parts are all optional; "P" or "P1YT" alone name no element
    return _DURATION.match(text) is not None and not text.endswith(("P", "T"))


_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z", re.ASCII)


def _is_hostname(text: str) -> bool:
    if not text or len(text) > 253:
        return False
    labels = text[:-1].split(".") if text.endswith(".") and len(text) > 1 else text.split(".")
    for label in labels:
        if not _LABEL.match(label):
            return False
        # "--" in the third and fourth place is reserved for A-labels (xn--)
        if label[2:4] == "--" and not label.lower().startswith("xn--"):
            return False
    return True


_IPV4 = re.compile(r"(?:0|[1-9]\d{0,2})(?:\.(?:0|[1-9]\d{0,2})){3}\Z", re.ASCII)


def _is_ipv4(text: str) -> bool:
    return _IPV4.match(text) is not None and all(int(part) <= 255 for part in text.split("."))


_IPV6_CHARS = re.compile(r"[0-9A-Fa-f:.]+\Z", re.ASCII)


def _is_ipv6(text: str) -> bool:
    if not _IPV6_CHARS.match(text):
        return False  # also refuses a zone (%eth0), which is no part of an address
    import ipaddress

    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(rf'(?:{_ATOM}(?:\.{_ATOM})*|"(?:[ !#-\[\]-~]|\\[ -~])*")\Z', re.ASCII)


def _is_email(text: str) -> bool:
    local, at, domain = text.rpartition("@")
    if not at or not local or len(local) > 64 or not _LOCAL.match(local):
        return False
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        if literal[:5].lower() == "ipv6:":
            return _is_ipv6(literal[5:])
        return _is_ipv4(literal)
    return _is_hostname(domain)


# RFC 3986, appendix A
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_USERINFO = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
_IP_LITERAL = r"\[[0-9A-Fa-f:.vV]+\]"
_REG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"
_AUTHORITY = rf"(?:{_USERINFO}@)?(?:{_IP_LITERAL}|{_REG_NAME})(?::\d*)?"
_SEGMENTS = rf"(?:/{_PCHAR}*)*"
_HIER = rf"(?://{_AUTHORITY}{_SEGMENTS}|/(?:{_PCHAR}+{_SEGMENTS})?|{_PCHAR}+{_SEGMENTS}|)"
_QUERY = rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
_SCHEME = r"[A-Za-z][A-Za-z0-9+\-.]*"
_URI = re.compile(rf"{_SCHEME}:{_HIER}{_QUERY}\Z", re.ASCII)
_NOSCHEME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}@]|{_PCT})+"
_RELATIVE = re.compile(
    rf"(?://{_AUTHORITY}{_SEGMENTS}|/(?:{_PCHAR}+{_SEGMENTS})?|{_NOSCHEME}{_SEGMENTS}|){_QUERY}\Z",
    re.ASCII,
)


def _ip_literal_ok(text: str) -> bool:
    """The bracketed host of a URI, if any, is an IPv6 address (or an IPvFuture)."""
    start = text.find("//[")
    if start < 0:
        return True
    end = text.find("]", start)
    host = text[start + 3 : end]
    return host[:1] in ("v", "V") or _is_ipv6(host)


def _is_uri(text: str) -> bool:
    return _URI.match(text) is not None and _ip_literal_ok(text)


def _is_uri_reference(text: str) -> bool:
    return (_URI.match(text) is not None or _RELATIVE.match(text) is not None) and (
        _ip_literal_ok(text)
    )


_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_JSON_POINTER = re.compile(r"(?:/(?:[^~/]|~[01])*)*\Z")

_CHECKS: dict[str, Callable[[str], bool]] = {
    "date-time": _is_date_time,
    "date": _is_date,
    "time": _is_time,
    "duration": _is_duration,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "uri": _is_uri,
    "uri-reference": _is_uri_reference,
    "uuid": lambda text: _UUID.match(text) is not None,
    "json-pointer": lambda text: _JSON_POINTER.match(text) is not None,
}


def format_checker(name: str, is_regex: Callable[[str], bool]) -> Callable[[str], bool] | None:
    """The check for format ``name``, or None for a format this module does not assert.

    ``is_regex`` decides the ``regex`` format (the validator passes its pattern engine).

    Example::

        assert format_checker("date", bool)("2024-02-29")
    """
    if name == "regex":
        return is_regex
    return _CHECKS.get(name)
