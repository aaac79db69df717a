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

__all__ = ["format_parts"]

# The ranges of each field are in the expressions (a month is 01-12, a second 00-60), so a
# valid value is decided by one match; only days 29-31 and a leap second look further.
_D = r"(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
_T = r"([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(?:\.\d+)?(?:[Zz]|([+-])([01]\d|2[0-3]):([0-5]\d))"
_DATE = re.compile(_D + r"\Z", re.ASCII)
_TIME = re.compile(_T + r"\Z", re.ASCII)
_DATE_TIME = re.compile(_D + "[Tt]" + _T + r"\Z", re.ASCII)
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _day_exists(year: str, month: str, day: str) -> bool:
    """For days 29-31: whether the month has that day (February 29 in leap years)."""
    number, which = int(day), int(month)
    if which == 2 and number == 29:
        leap = int(year)
        return leap % 4 == 0 and (leap % 100 != 0 or leap % 400 == 0)
    return number <= _DAYS[which - 1]


def _leap_second(hour: str, minute: str, sign: str | None, hours: str, minutes: str) -> bool:
    """A leap second is 23:59:60 in UTC, whatever the local offset."""
    offset = (int(hours) * 60 + int(minutes)) if sign else 0
    local = int(hour) * 60 + int(minute)
    utc = (local - offset if sign == "+" else local + offset) % (24 * 60)
    return utc == 23 * 60 + 59


def _is_date(text: str) -> bool:
    match = _DATE.match(text)
    return match is not None and (match[3] <= "28" or _day_exists(*match.groups()))


def _is_time(text: str) -> bool:
    match = _TIME.match(text)
    if match is None:
        return False
    return match[3] != "60" or _leap_second(match[1], match[2], match[4], match[5], match[6])


def _is_date_time(text: str) -> bool:
    match = _DATE_TIME.match(text)
    if match is None:
        return False
    if match[3] > "28" and not _day_exists(match[1], match[2], match[3]):
        return False
    return match[6] != "60" or _leap_second(match[4], match[5], match[7], match[8], match[9])


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
_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# the common shape, decided by one match: a dot-atom @ a host name
_PLAIN_EMAIL = re.compile(
    rf"{_ATOM}(?:\.{_ATOM})*@{_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?\Z", re.ASCII
)


def _is_email(text: str) -> bool:
    if _PLAIN_EMAIL.match(text) is not None:
        at = text.rindex("@")
        if at <= 64 and len(text) - at <= 254 and "--" not in text[at:]:
            return True
    # a quoted local part, an address literal, a reserved "--", or not an email
    local, at_sign, domain = text.rpartition("@")
    if not at_sign or not local or len(local) > 64 or not _LOCAL.match(local):
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


# Most valid values are told by one match of a stricter expression (a day up to 28, a
# second up to 59, a plain dot-atom address); what it does not match goes to the full
# check, which decides. The validator runs ``quick`` inline, without a call of its own.
_D28 = r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])"
_T59 = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
_QUICK_EMAIL = (
    rf"(?=[^@]{{1,64}}@){_ATOM}(?:\.{_ATOM})*@(?=[^@]{{1,253}}\Z)(?![^@]*--)"
    rf"{_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?\Z"
)
_QUICK: dict[str, str] = {
    "date-time": _D28 + "[Tt]" + _T59 + r"\Z",
    "date": _D28 + r"\Z",
    "time": _T59 + r"\Z",
    "email": _QUICK_EMAIL,
    "hostname": rf"(?=[^@]{{1,253}}\Z)(?!.*--){_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?\Z",
}

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
    "uuid": lambda text: _UUID.match(text) is not None,  # the quick expression is all of it
    "json-pointer": lambda text: _JSON_POINTER.match(text) is not None,
}
_WHOLE: dict[str, re.Pattern[str]] = {"uuid": _UUID, "json-pointer": _JSON_POINTER}

FormatParts = tuple[Callable[[str], object], Callable[[str], bool]]


def format_parts(name: str, is_regex: Callable[[str], bool]) -> FormatParts | None:
    """The check for format ``name`` as ``(quick, thorough)``: a string is valid when
    ``quick(text)`` is not None or else ``thorough(text)`` is true; None for a format this
    module does not assert.

    ``is_regex`` decides the ``regex`` format (the validator passes its pattern engine).

    Example::

        quick, thorough = format_parts("date", bool)
        assert quick("2024-02-28") is not None and thorough("2024-02-29")
    """
    if name == "regex":
        return _no_match, is_regex
    thorough = _CHECKS.get(name)
    if thorough is None:
        return None
    whole = _WHOLE.get(name)
    if whole is not None:
        return whole.match, thorough
    source = _QUICK.get(name)
    quick = re.compile(source, re.ASCII).match if source is not None else _no_match
    return quick, thorough


def _no_match(text: str) -> None:
    return None
