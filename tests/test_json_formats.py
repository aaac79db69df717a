"""JSON Schema ``format`` assertions (``_json_formats.py``): each format's verdicts, and the
quick expression never accepting what the thorough check refuses."""

from __future__ import annotations

import random

import pytest

from toolnexus._json_formats import format_parts
from toolnexus.validation import Validator

CASES = {
    "date-time": {
        "2026-12-05T09:30:00Z": True,
        "2026-12-05t09:30:00z": True,
        "2026-12-05T09:30:00.123456+05:30": True,
        "2024-02-29T00:00:00Z": True,  # a leap year
        "2000-02-29T00:00:00Z": True,  # divisible by 400
        "1900-02-29T00:00:00Z": False,  # divisible by 100 only
        "2023-02-29T00:00:00Z": False,
        "2026-04-31T00:00:00Z": False,
        "2026-12-31T23:59:60Z": True,  # a leap second, in UTC
        "2026-12-31T23:59:60+01:00": False,  # 22:59:60 in UTC
        "2027-01-01T00:59:60+01:00": True,  # 23:59:60 in UTC
        "2026-12-31T18:59:60-05:00": True,
        "2026-13-01T00:00:00Z": False,
        "2026-00-01T00:00:00Z": False,
        "2026-12-00T00:00:00Z": False,
        "2026-12-05T24:00:00Z": False,
        "2026-12-05T09:60:00Z": False,
        "2026-12-05T09:30:61Z": False,
        "2026-12-05T09:30:00": False,  # no offset
        "2026-12-05T09:30:00+24:00": False,
        "2026-12-05T09:30:00+23:59": True,
        "2026-12-05 09:30:00Z": False,
        "\uff12026-12-05T09:30:00Z": False,  # a fullwidth digit
        "2026-12-05T09:30:00Z\n": False,
    },
    "date": {
        "2024-02-29": True,
        "2023-02-29": False,
        "2026-06-30": True,
        "2026-06-31": False,
        "2026-1-05": False,
        "2026-01-05\n": False,
    },
    "time": {
        "09:30:00Z": True,
        "23:59:60Z": True,
        "23:59:60+00:00": True,
        "12:59:60Z": False,
        "09:30:00.5-08:00": True,
        "09:30Z": False,
    },
    "email": {
        "ada@example.com": True,
        "ada.lovelace+tag@mail.example.co.uk": True,
        "a@localhost": True,
        "ada@example.com.": True,
        '"ada lovelace"@example.com': True,
        "ada@[192.168.0.1]": True,
        "ada@[IPv6:2001:db8::1]": True,
        "ada@xn--bcher-kva.example": True,
        "ada@ab--cd.example": False,  # "--" in the 3rd and 4th place is reserved
        "ada@a--b.example": True,
        "x" * 64 + "@example.com": True,
        "x" * 65 + "@example.com": False,
        "ada@" + "a" * 63 + ".com": True,
        "ada@" + "a" * 64 + ".com": False,
        "ada@" + ".".join(["a" * 61] * 4) + ".com": True,  # a host name of 251 characters
        "ada@" + ".".join(["a" * 62] * 4) + ".com": False,  # 255: past 253
        "ada@-example.com": False,
        "ada@example-.com": False,
        "ada..lovelace@example.com": False,
        ".ada@example.com": False,
        "ada@": False,
        "@example.com": False,
        "ada": False,
        "ada@exa mple.com": False,
        "adä@example.com": False,
    },
    "hostname": {
        "example.com": True,
        "example.com.": True,
        "xn--bcher-kva.example": True,
        "ab--cd.example": False,
        "a" * 63: True,
        "a" * 64: False,
        "-a.example": False,
        "a_b.example": False,
        "": False,
    },
    "uuid": {
        "3f2b8a9c-1d4e-4f6a-9b7c-2e5d8f1a0b3c": True,
        "3F2B8A9C-1D4E-4F6A-9B7C-2E5D8F1A0B3C": True,
        "3f2b8a9c1d4e4f6a9b7c2e5d8f1a0b3c": False,
        "3f2b8a9c-1d4e-4f6a-9b7c-2e5d8f1a0b3g": False,
    },
}


@pytest.mark.parametrize(
    ("name", "text", "valid"),
    [(name, text, valid) for name, table in CASES.items() for text, valid in table.items()],
    ids=lambda value: repr(value)[:40],
)
def test_each_format_decides_as_its_rfc_says(name: str, text: str, valid: bool) -> None:
    v = Validator({"type": "string", "format": name}, format_assertion=True)
    assert v.is_valid(text) is valid
    assert (v.errors(text) == []) is valid
    # the same through the unfused keyword check (no "type")
    assert Validator({"format": name}, format_assertion=True).is_valid(text) is valid


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_quick_expression_accepts_only_what_the_thorough_check_accepts(name: str) -> None:
    parts = format_parts(name, bool)
    assert parts is not None
    quick, thorough = parts
    rng = random.Random(20261205)
    texts = list(CASES[name])
    for text in list(texts):
        for _ in range(40):  # mutants of each case: a character changed, dropped or doubled
            chars = list(text)
            if not chars:
                break
            spot = rng.randrange(len(chars))
            roll = rng.random()
            if roll < 0.5:
                chars[spot] = rng.choice("0123456789:-.@Tz+aZ-_ ")
            elif roll < 0.75:
                del chars[spot]
            else:
                chars.insert(spot, chars[spot])
            texts.append("".join(chars))
    for text in texts:
        if quick(text) is not None:
            assert thorough(text), (name, text)
