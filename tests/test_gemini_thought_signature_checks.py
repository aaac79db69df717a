"""A Gemini thought signature is checked whole: non-empty base64 text (the standard or
the URL-safe alphabet, as the google-genai SDK's JSON writes it), else a
``WireFormatError`` naming the part and the field — in a turn's parts and in a parked
turn's JSON alike."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from toolnexus import Host, Toolkit, TurnResult, tool
from toolnexus.errors import WireFormatError


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def part(signature: Any) -> list[dict[str, Any]]:
    return [
        {"text": "thinking aloud"},
        {"functionCall": {"id": "fc-1", "name": "add", "args": {"a": 1, "b": 2}},
         "thoughtSignature": signature},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("signature", "problem"),
    [
        ("not base64!!", "is not base64"),
        ("", "is empty"),
        ("abc", "is not base64"),  # padding missing
        (123, "must be base64 text"),
    ],
)
def test_a_signature_that_is_not_base64_is_refused_naming_the_part(
    signature: Any, problem: str
) -> None:
    with Host(Toolkit([add])) as host, pytest.raises(WireFormatError) as refused:
        host.run_turn(part(signature), style="gemini")
    message = str(refused.value)
    assert refused.value.field == "thoughtSignature"
    assert "function call part 1" in message and problem in message


@pytest.mark.parametrize(
    "signature",
    [
        "c2lnbmF0dXJl",  # standard alphabet
        base64.urlsafe_b64encode(b"\xfb\xff\xfe sig").decode(),  # the SDK's JSON: URL-safe
        base64.b64encode(b"\xfb\xff\xfe sig").decode(),
    ],
)
def test_base64_signatures_are_kept_as_given(signature: str) -> None:
    with Host(Toolkit([add])) as host:
        turn = host.run_turn(part(signature), style="gemini")
    assert [call.signature for call in turn.calls] == [signature]
    assert TurnResult.from_json(turn.to_json()).calls[0].signature == signature


def test_the_sdks_bytes_are_encoded() -> None:
    with Host(Toolkit([add])) as host:
        turn = host.run_turn(part(b"\x00\x01sig"), style="gemini")
    assert turn.calls[0].signature == base64.b64encode(b"\x00\x01sig").decode()


@pytest.mark.parametrize("signature", ["not base64!!", ""])
def test_a_parked_turn_with_a_bad_signature_is_refused(signature: str) -> None:
    with Host(Toolkit([add])) as host:
        data = host.run_turn(part("c2lnbmF0dXJl"), style="gemini").to_dict()
    data["calls"][0]["signature"] = signature
    with pytest.raises(WireFormatError) as refused:
        TurnResult.from_dict(data)
    assert "signature" in str(refused.value)
