"""The wire format: exact bytes, round-trips, and a clear ValueError for every malformed input."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import Answer, Request, ToolnexusError, ToolResult, WireFormatError

# --- exact bytes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (
            Request("input", "Which environment?", id="pnd-1"),
            '{"id":"pnd-1","kind":"input","prompt":"Which environment?"}',
        ),
        (
            # Keyword order at construction does not matter; the wire order is fixed.
            Request(
                expires_at="2026-01-02T03:04:05Z",
                data={"scope": "repo"},
                url="https://example.test/login",
                id="pnd-2",
                prompt="Log in",
                kind="authorization",
            ),
            '{"id":"pnd-2","kind":"authorization","prompt":"Log in",'
            '"url":"https://example.test/login","data":{"scope":"repo"},'
            '"expiresAt":"2026-01-02T03:04:05Z"}',
        ),
        (
            Request("question", "", id="pnd-3", expires_at="2026-01-02T05:04:05+02:00"),
            '{"id":"pnd-3","kind":"question","prompt":"","expiresAt":"2026-01-02T05:04:05+02:00"}',
        ),
        (Answer("pnd-1", True), '{"id":"pnd-1","ok":true}'),
        (
            Answer("pnd-1", True, {"env": "staging"}),
            '{"id":"pnd-1","ok":true,"data":{"env":"staging"}}',
        ),
        (
            Answer("pnd-1", False, reason="declined"),
            '{"id":"pnd-1","ok":false,"reason":"declined"}',
        ),
        (
            Answer(reason="expired", data={"n": 1}, ok=False, id="pnd-1"),
            '{"id":"pnd-1","ok":false,"data":{"n":1},"reason":"expired"}',
        ),
        (ToolResult.ok("42"), '{"output":"42","isError":false}'),
        (ToolResult.error("boom"), '{"output":"boom","isError":true}'),
        (
            ToolResult.ok("[1,2]", {"structuredContent": [1, 2], "b": None}),
            '{"output":"[1,2]","isError":false,"metadata":{"structuredContent":[1,2],"b":null}}',
        ),
        (
            ToolResult.pending(Request("input", "Which environment?", id="pnd-1")),
            '{"output":"Which environment?","isError":true,'
            '"metadata":{"pending":{"id":"pnd-1","kind":"input","prompt":"Which environment?"}}}',
        ),
        (
            ToolResult.auth_required("https://example.test/oauth"),
            None,  # id is generated: checked by shape below
        ),
    ],
)
def test_to_json_writes_the_exact_bytes(value, wire):
    text = value.to_json()
    assert isinstance(text, str)
    if wire is not None:
        assert text == wire
        assert text.encode("utf-8") == wire.encode("utf-8")
        assert type(value).from_json(wire) == value
    else:
        request = ToolResult.pending_of(value)
        assert request is not None
        assert text == (
            '{"output":"Authorization required to continue\\nhttps://example.test/oauth",'
            '"isError":true,"metadata":{"pending":{"id":"' + request.id + '",'
            '"kind":"authorization","prompt":"Authorization required to continue",'
            '"url":"https://example.test/oauth"}}}'
        )


def test_to_dict_uses_the_wire_keys_in_order_and_omits_unset_optionals():
    full = Request("a", "p", id="i", url="u", data={}, expires_at="2026-01-02T03:04:05Z")
    assert list(full.to_dict()) == ["id", "kind", "prompt", "url", "data", "expiresAt"]
    assert list(Request("a", "p").to_dict()) == ["id", "kind", "prompt"]
    assert list(Answer("i", False, {}, "declined").to_dict()) == ["id", "ok", "data", "reason"]
    assert list(Answer("i", True).to_dict()) == ["id", "ok"]
    assert list(ToolResult.ok("x", {}).to_dict()) == ["output", "isError", "metadata"]
    assert list(ToolResult.ok("x").to_dict()) == ["output", "isError"]


def test_an_empty_mapping_is_set_not_unset():
    assert Answer("pnd-1", True, {}).to_json() == '{"id":"pnd-1","ok":true,"data":{}}'
    assert ToolResult.ok("x", {}).to_json() == '{"output":"x","isError":false,"metadata":{}}'


def test_unset_metadata_reads_as_an_empty_mapping_and_stays_off_the_wire():
    import copy
    import dataclasses
    import pickle

    unset = ToolResult.ok("x")
    assert unset.metadata == {} and unset.metadata.get("reason") is None
    assert unset.to_json() == '{"output":"x","isError":false}'
    # However the result travels, "unset" stays unset (and a set {} stays set).
    for same in (
        pickle.loads(pickle.dumps(unset)),
        copy.deepcopy(unset),
        dataclasses.replace(unset, output="x"),
        ToolResult.from_json(unset.to_json()),
        ToolResult("x", False, None),
    ):
        assert same.to_json() == '{"output":"x","isError":false}'
    explicit = ToolResult.ok("x", {})
    assert pickle.loads(pickle.dumps(explicit)).to_json() == explicit.to_json()
    assert ToolResult.from_json(explicit.to_json()).to_json() == explicit.to_json()


def test_to_dict_returns_plain_json_types():
    wire = ToolResult.pending(Request("input", "?", data={"choices": ["a", "b"]})).to_dict()
    pending = wire["metadata"]["pending"]
    assert type(wire["metadata"]) is dict and type(pending) is dict
    assert type(pending["data"]) is dict and type(pending["data"]["choices"]) is list


def test_non_ascii_is_kept_as_utf8_not_escaped():
    request = Request("input", "Welche Umgebung? 🌍 — 环境", id="pnd-ü")
    text = request.to_json()
    assert text == '{"id":"pnd-ü","kind":"input","prompt":"Welche Umgebung? 🌍 — 环境"}'
    assert "\\u" not in text
    assert "🌍".encode() in text.encode("utf-8")
    assert Request.from_json(text.encode("utf-8")) == request
    assert Request.from_json(bytearray(text.encode("utf-8"))) == request


def test_control_characters_and_quotes_are_escaped_the_json_way():
    result = ToolResult.ok('line 1\nline "2"\t\\ \x00')
    assert result.to_json() == '{"output":"line 1\\nline \\"2\\"\\t\\\\ \\u0000","isError":false}'
    assert ToolResult.from_json(result.to_json()) == result


def test_reading_ignores_key_order_and_writing_restores_it():
    text = '{"prompt":"?","url":"https://x.test","kind":"authorization","id":"pnd-1"}'
    assert Request.from_json(text).to_json() == (
        '{"id":"pnd-1","kind":"authorization","prompt":"?","url":"https://x.test"}'
    )
    assert Answer.from_json('{"reason":"declined","ok":false,"id":"a"}').to_json() == (
        '{"id":"a","ok":false,"reason":"declined"}'
    )


def test_reading_tolerates_unknown_keys_and_null_optionals():
    request = Request.from_json(
        '{"id":"pnd-1","kind":"input","prompt":"?","url":null,"data":null,"expiresAt":null,'
        '"extension":{"from":"a newer port"}}'
    )
    assert request == Request("input", "?", id="pnd-1")
    answer = Answer.from_json('{"id":"pnd-1","ok":true,"data":null,"reason":null,"x":1}')
    assert answer == Answer("pnd-1", True)
    assert ToolResult.from_json('{"output":"","isError":false,"metadata":null}') == (
        ToolResult.ok("")
    )


# --- round-trips ----------------------------------------------------------------------------


def test_a_pending_result_round_trips_with_its_request_rebuilt():
    request = Request(
        "input",
        "Which environment?",
        url="https://example.test/form",
        data={"schema": {"type": "object", "properties": {"env": {"type": "string"}}}},
        expires_at="2026-01-02T03:04:05Z",
    )
    original = ToolResult.pending(request)
    for back in (
        ToolResult.from_json(original.to_json()),
        ToolResult.from_dict(original.to_dict()),
        ToolResult.from_dict(json.loads(original.to_json())),
    ):
        assert back == original
        assert back.is_pending
        rebuilt = ToolResult.pending_of(back)
        assert isinstance(rebuilt, Request)
        assert rebuilt == request
        assert Answer.accept(rebuilt).id == request.id


def test_a_pending_result_keeps_its_other_metadata():
    request = Request("approval", "Deploy?", id="pnd-1")
    result = ToolResult("Deploy?", True, {"pending": request, "trace": "abc"})
    text = result.to_json()
    assert text == (
        '{"output":"Deploy?","isError":true,"metadata":{"pending":'
        '{"id":"pnd-1","kind":"approval","prompt":"Deploy?"},"trace":"abc"}}'
    )
    assert ToolResult.from_json(text) == result


def test_from_dict_does_not_keep_a_reference_to_its_input():
    wire = {"id": "pnd-1", "ok": True, "data": {"tags": ["a"]}}
    answer = Answer.from_dict(wire)
    wire["data"]["tags"].append("b")
    assert answer.data == {"tags": ["a"]}


# A seeded, dependency-free property test: random JSON-shaped values round-trip byte for byte.

ALPHABET = (
    "abcXYZ019 _-/:.,{}[]\"'\\\n\t\r\x00\x07\x1f\x7f"
    "äöüßéñçøåÆ€£¥—\u2013…“”\u2018\u2019«»\u2028\u2029"
    "中文字日本語한국어ελληνικάкириллица"
    "🌍🚀😀𝄞🧪"
)


def random_text(rng: random.Random, max_len: int = 12) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, max_len)))


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] * 2 if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, -1, rng.randint(-(2**70), 2**70), rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.0, -0.0, 0.1, 1e300, -2.5e-300, rng.uniform(-1e6, 1e6)])
    if kind == "str":
        return random_text(rng)
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return random_object(rng, depth + 1)


def random_object(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    return {random_text(rng, 6): random_json(rng, depth) for _ in range(rng.randint(0, 4))}


def maybe(rng: random.Random, make: Callable[[], Any]) -> Any:
    return make() if rng.random() < 0.5 else None


def random_timestamp(rng: random.Random) -> str:
    zone = rng.choice(["Z", "z", "+00:00", "+05:30", "-11:00", "+14:00"])
    fraction = rng.choice(["", ".5", ".123456", ".123456789"])
    return (
        f"{rng.randint(1970, 2999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        f"{fraction}{zone}"
    )


def random_request(rng: random.Random) -> Request:
    return Request(
        random_text(rng) or "input",
        random_text(rng, 40),
        id=rng.choice(["pnd-" + random_text(rng), Request("x", "").id]) or "pnd-",
        url=maybe(rng, lambda: "https://example.test/" + random_text(rng) + "x"),
        data=maybe(rng, lambda: random_object(rng)),
        expires_at=maybe(rng, lambda: random_timestamp(rng)),
    )


def random_answer(rng: random.Random) -> Answer:
    # The ports write a reason only on a refusal, and only from their vocabulary.
    ok = rng.random() < 0.5
    return Answer(
        "pnd-" + random_text(rng),
        ok,
        maybe(rng, lambda: random_object(rng)),
        None if ok else maybe(rng, lambda: rng.choice(["declined", "cancelled", "expired"])),
    )


def random_result(rng: random.Random) -> ToolResult:
    if rng.random() < 0.3:
        return ToolResult.pending(random_request(rng))
    metadata = maybe(rng, lambda: random_object(rng))
    return ToolResult(random_text(rng, 60), rng.random() < 0.5, metadata)


@pytest.mark.parametrize(
    ("make", "keys"),
    [
        (random_request, ["id", "kind", "prompt", "url", "data", "expiresAt"]),
        (random_answer, ["id", "ok", "data", "reason"]),
        (random_result, ["output", "isError", "metadata"]),
    ],
    ids=["Request", "Answer", "ToolResult"],
)
def test_random_values_round_trip_byte_for_byte(make, keys):
    rng = random.Random(20260102)
    for _ in range(400):
        value = make(rng)
        cls = type(value)
        text = value.to_json()
        back = cls.from_json(text)
        assert back == value
        assert back.to_json() == text  # byte-stable
        assert cls.from_dict(value.to_dict()) == value
        parsed = json.loads(text)
        assert parsed == value.to_dict()
        assert [key for key in keys if key in parsed] == list(parsed)  # wire order
        assert text == json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)
        if isinstance(value, ToolResult):
            assert back.is_pending == value.is_pending


# --- malformed input ------------------------------------------------------------------------

NOT_AN_OBJECT = [
    ("", "is not valid JSON"),
    ("   ", "is not valid JSON"),
    ("{", "is not valid JSON"),
    ("{'id': 'pnd-1'}", "is not valid JSON"),
    ('{"id":"a",}', "is not valid JSON"),
    ("nope", "is not valid JSON"),
    (b"\xff\xfe{", "is not valid JSON"),
    ("[" * 100_000, "is not valid JSON"),
    ('{"id":"pnd-1","ok":true,"data":{"x":NaN}}', "NaN is not a JSON value"),
    ('{"output":"x","isError":false,"metadata":{"x":Infinity}}', "Infinity is not a JSON value"),
    # Python reads 1e400 as inf, which to_json refuses to write: refused on reading too
    ('{"output":"x","isError":false,"metadata":{"x":1e400}}', "the number 1e400 is out of range"),
    ('{"id":"pnd-1","ok":true,"data":{"x":-2.5E+999}}', "the number -2.5E+999 is out of range"),
    ("[]", "must be a JSON object, got array"),
    ('[{"id":"pnd-1"}]', "must be a JSON object, got array"),
    ("null", "must be a JSON object, got null"),
    ("42", "must be a JSON object, got number 42"),
    ("true", "must be a JSON object, got boolean true"),
    ('"pnd-1"', 'must be a JSON object, got string "pnd-1"'),
]


@pytest.mark.parametrize("cls", [Request, Answer, ToolResult])
@pytest.mark.parametrize(("text", "problem"), NOT_AN_OBJECT, ids=lambda v: repr(v)[:30])
def test_from_json_refuses_what_is_not_a_json_object(cls, text, problem):
    with pytest.raises(ValueError, match=f"invalid {cls.__name__}: input") as caught:
        cls.from_json(text)
    assert problem in str(caught.value)
    assert isinstance(caught.value, WireFormatError) and isinstance(caught.value, ToolnexusError)
    assert caught.value.field is None
    assert caught.value.type_name == cls.__name__


@pytest.mark.parametrize(("number", "readable"), [("1e308", True), ("1e400", False)])
def test_from_json_reads_a_number_exactly_when_to_json_can_write_it_back(number, readable):
    text = '{"output":"x","isError":false,"metadata":{"n":' + number + "}}"
    value = json.loads(text)["metadata"]["n"]  # Python alone reads 1e400 as inf
    try:
        written = ToolResult("x", metadata={"n": value}).to_json()
    except WireFormatError:
        written = None
    if readable:
        assert written is not None and ToolResult.from_json(text).metadata == {"n": 1e308}
    else:
        assert written is None
        with pytest.raises(WireFormatError, match="out of range"):
            ToolResult.from_json(text)


@pytest.mark.parametrize("cls", [Request, Answer, ToolResult])
@pytest.mark.parametrize("value", [42, None, {"id": "pnd-1"}, ["{}"]], ids=repr)
def test_from_json_refuses_what_is_not_json_text(cls, value):
    with pytest.raises(ValueError, match="input must be JSON text, got"):
        cls.from_json(value)


@pytest.mark.parametrize("cls", [Request, Answer, ToolResult])
@pytest.mark.parametrize("value", [[], None, "{}", 3, Request("input", "?", id="pnd-1")], ids=repr)
def test_from_dict_refuses_what_is_not_a_mapping(cls, value):
    with pytest.raises(ValueError, match="input must be a JSON object, got"):
        cls.from_dict(value)


REQUEST = {"id": "pnd-1", "kind": "input", "prompt": "Which environment?"}
ANSWER = {"id": "pnd-1", "ok": True}
RESULT = {"output": "x", "isError": False}
PENDING = {"output": "?", "isError": True, "metadata": {"pending": dict(REQUEST)}}


def without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def pending_with(**changes: Any) -> dict[str, Any]:
    request = {**REQUEST, **changes}
    return {**PENDING, "metadata": {"pending": {k: v for k, v in request.items() if v != ...}}}


MALFORMED = [
    # Request
    (Request, without(REQUEST, "id"), "id", "is missing; expected a string"),
    (Request, without(REQUEST, "kind"), "kind", "is missing; expected a string"),
    (Request, without(REQUEST, "prompt"), "prompt", "is missing; expected a string"),
    (Request, {**REQUEST, "id": None}, "id", "must be a string, got null"),
    (Request, {**REQUEST, "id": 7}, "id", "must be a string, got number 7"),
    (Request, {**REQUEST, "id": ""}, "id", 'must be a non-empty string, got string ""'),
    (Request, {**REQUEST, "kind": ["input"]}, "kind", "must be a string, got array"),
    (Request, {**REQUEST, "kind": ""}, "kind", 'must be a non-empty string, got string ""'),
    (Request, {**REQUEST, "prompt": True}, "prompt", "must be a string, got boolean true"),
    (Request, {**REQUEST, "prompt": {"en": "?"}}, "prompt", "must be a string, got object"),
    (Request, {**REQUEST, "url": 1.5}, "url", "must be a string, got number 1.5"),
    (Request, {**REQUEST, "url": ""}, "url", 'must be a non-empty string, got string ""'),
    (Request, {**REQUEST, "data": [1]}, "data", "must be an object, got array"),
    (Request, {**REQUEST, "data": "x"}, "data", 'must be an object, got string "x"'),
    (
        Request,
        {**REQUEST, "expiresAt": 1767323045},
        "expiresAt",
        "must be an RFC 3339 timestamp string, got number",
    ),
    (
        Request,
        {**REQUEST, "expiresAt": "tomorrow"},
        "expiresAt",
        'must be an RFC 3339 timestamp such as "2026-01-02T03:04:05Z", got string "tomorrow"',
    ),
    (
        Request,
        {**REQUEST, "expiresAt": "2026-01-02T03:04:05"},
        "expiresAt",
        "must be an RFC 3339 timestamp",
    ),
    (Request, {**REQUEST, "expiresAt": "2026-01-02"}, "expiresAt", "must be an RFC 3339"),
    (
        Request,
        {**REQUEST, "expiresAt": "2026-13-02T03:04:05Z"},
        "expiresAt",
        "(month must be in 1..12)",
    ),
    (
        Request,
        {**REQUEST, "expiresAt": "2026-01-02T03:04:05+24:00"},
        "expiresAt",
        "(offset out of range)",
    ),
    # Answer
    (Answer, without(ANSWER, "id"), "id", "is missing; expected a string"),
    (Answer, without(ANSWER, "ok"), "ok", "is missing; expected a boolean"),
    (Answer, {**ANSWER, "id": ""}, "id", 'must be a non-empty string, got string ""'),
    (Answer, {**ANSWER, "id": ["pnd-1"]}, "id", "must be a string, got array"),
    (Answer, {**ANSWER, "ok": None}, "ok", "must be a boolean, got null"),
    (Answer, {**ANSWER, "ok": "true"}, "ok", 'must be a boolean, got string "true"'),
    (Answer, {**ANSWER, "ok": 1}, "ok", "must be a boolean, got number 1"),
    (Answer, {**ANSWER, "data": [{"env": "staging"}]}, "data", "must be an object, got array"),
    (Answer, {**ANSWER, "data": True}, "data", "must be an object, got boolean true"),
    (Answer, {**ANSWER, "reason": 3}, "reason", "must be a string, got number 3"),
    # ToolResult
    (ToolResult, without(RESULT, "output"), "output", "is missing; expected a string"),
    (ToolResult, without(RESULT, "isError"), "isError", "is missing; expected a boolean"),
    (ToolResult, {**RESULT, "output": 42}, "output", "must be a string, got number 42"),
    (ToolResult, {**RESULT, "output": None}, "output", "must be a string, got null"),
    (ToolResult, {**RESULT, "isError": "false"}, "isError", "must be a boolean, got string"),
    (ToolResult, {**RESULT, "isError": 0}, "isError", "must be a boolean, got number 0"),
    (ToolResult, {**RESULT, "metadata": []}, "metadata", "must be an object, got array"),
    (ToolResult, {**RESULT, "metadata": "x"}, "metadata", 'must be an object, got string "x"'),
    # ToolResult: a nested pending request that is wrong
    (
        ToolResult,
        {**PENDING, "metadata": {"pending": None}},
        "metadata.pending",
        "must be a JSON object, got null",
    ),
    (
        ToolResult,
        {**PENDING, "metadata": {"pending": []}},
        "metadata.pending",
        "must be a JSON object, got array",
    ),
    (
        ToolResult,
        {**PENDING, "metadata": {"pending": "pnd-1"}},
        "metadata.pending",
        'must be a JSON object, got string "pnd-1"',
    ),
    (ToolResult, pending_with(kind=...), "metadata.pending.kind", "is missing; expected a string"),
    (ToolResult, pending_with(id=3), "metadata.pending.id", "must be a string, got number 3"),
    (ToolResult, pending_with(data=[]), "metadata.pending.data", "must be an object, got array"),
    (
        ToolResult,
        pending_with(expiresAt="soon"),
        "metadata.pending.expiresAt",
        "must be an RFC 3339 timestamp",
    ),
    (
        ToolResult,
        {**PENDING, "isError": False},
        "isError",
        "must be true when metadata.pending is set, got false",
    ),
]


@pytest.mark.parametrize(
    ("cls", "data", "field", "problem"),
    MALFORMED,
    ids=[f"{c.__name__}-{f}-{i}" for i, (c, _, f, _) in enumerate(MALFORMED)],
)
def test_malformed_fields_are_refused_naming_the_field_and_what_was_expected(
    cls, data, field, problem
):
    for read in (lambda: cls.from_dict(data), lambda: cls.from_json(json.dumps(data))):
        with pytest.raises(ValueError) as caught:
            read()
        error = caught.value
        assert isinstance(error, WireFormatError)
        assert (error.type_name, error.field) == (cls.__name__, field)
        assert str(error).startswith(f"invalid {cls.__name__}: field {field!r} ")
        assert problem in str(error)


# Seeded mutation fuzzing: break one field of a valid wire object at a time.

FIELDS: dict[type, dict[str, tuple[bool, tuple[type, ...]]]] = {
    Request: {
        "id": (True, (str,)),
        "kind": (True, (str,)),
        "prompt": (True, (str,)),
        "url": (False, (str,)),
        "data": (False, (dict,)),
        "expiresAt": (False, (str,)),
    },
    Answer: {
        "id": (True, (str,)),
        "ok": (True, (bool,)),
        "data": (False, (dict,)),
        "reason": (False, (str,)),
    },
    ToolResult: {
        "output": (True, (str,)),
        "isError": (True, (bool,)),
        "metadata": (False, (dict,)),
    },
}
VALID = {
    Request: {
        "id": "pnd-1",
        "kind": "input",
        "prompt": "?",
        "url": "https://x.test",
        "data": {"a": 1},
        "expiresAt": "2026-01-02T03:04:05Z",
    },
    Answer: {"id": "pnd-1", "ok": False, "data": {"a": 1}, "reason": "declined"},
    ToolResult: {"output": "x", "isError": True, "metadata": {"a": 1}},
}


def wrong_value(rng: random.Random, allowed: tuple[type, ...], required: bool) -> Any:
    while True:
        value = random_json(rng, depth=3)
        if value is None and not required:
            continue  # null reads as unset for an optional field
        if isinstance(value, bool) and bool not in allowed:
            return value
        if not isinstance(value, allowed):
            return value


@pytest.mark.parametrize("cls", [Request, Answer, ToolResult])
def test_random_single_field_breakage_is_always_pinned_on_that_field(cls):
    rng = random.Random(7 + len(cls.__name__))
    assert cls.from_dict(VALID[cls]) is not None
    for _ in range(300):
        key = rng.choice(list(FIELDS[cls]))
        required, allowed = FIELDS[cls][key]
        broken = dict(VALID[cls])
        if required and rng.random() < 0.25:
            del broken[key]
        else:
            broken[key] = wrong_value(rng, allowed, required)
        with pytest.raises(WireFormatError) as caught:
            cls.from_json(json.dumps(broken, ensure_ascii=False))
        assert caught.value.field == key, (broken, str(caught.value))
        assert "expected" in str(caught.value) or "must be" in str(caught.value)


def test_to_json_refuses_metadata_json_cannot_carry():
    for metadata in ({"when": object()}, {"nan": float("nan")}, {"tags": {"a", "b"}}):
        with pytest.raises(WireFormatError, match="invalid ToolResult: input is not JSON"):
            ToolResult.ok("x", metadata).to_json()


def test_a_wire_error_keeps_its_fields_across_pickling():
    import pickle

    with pytest.raises(WireFormatError) as caught:
        Answer.from_json('{"id":"pnd-1"}')
    clone = pickle.loads(pickle.dumps(caught.value))
    assert (clone.type_name, clone.field, clone.problem) == ("Answer", "ok", caught.value.problem)
    assert (
        str(clone)
        == str(caught.value)
        == ("invalid Answer: field 'ok' is missing; expected a boolean")
    )


# --- edges: reason, lone surrogates, deep nesting -------------------------------------------


def test_a_reason_is_only_for_a_refusal_and_from_the_ports_vocabulary():
    with pytest.raises(ValueError, match="only for a refusal"):
        Answer("x", True, None, "declined")
    with pytest.raises(ValueError, match="must be one of 'declined', 'cancelled', 'expired'"):
        Answer("x", False, None, "nope")
    for reason in ("declined", "cancelled", "expired"):
        assert Answer("x", False, None, reason).to_json() == (
            f'{{"id":"x","ok":false,"reason":"{reason}"}}'
        )


def test_a_reader_ignores_a_reason_beside_ok_true_and_reads_an_unknown_one_as_declined():
    assert Answer.from_json('{"id":"x","ok":true,"reason":"declined"}') == Answer("x", True)
    assert Answer.from_json('{"id":"x","ok":false,"reason":"timeout"}').reason == "declined"
    assert Answer.from_json('{"id":"x","ok":false,"reason":""}').reason == "declined"


def test_a_lone_surrogate_is_written_as_an_escape_and_reads_back_the_same():
    request = Request("input", "a\ud800b é \udfff", id="pnd-1", data={"k\udc00": ["\ud83d"]})
    text = request.to_json()
    assert text == (
        '{"id":"pnd-1","kind":"input","prompt":"a\\ud800b é \\udfff",'
        '"data":{"k\\udc00":["\\ud83d"]}}'
    )
    text.encode("utf-8")  # always encodable
    assert Request.from_json(text) == request
    assert Request.from_json(text.encode("utf-8")).to_json() == text
    pair = Request("input", "\U0001f30d", id="pnd-2")  # a real pair stays raw UTF-8
    assert pair.to_json() == '{"id":"pnd-2","kind":"input","prompt":"\U0001f30d"}'


def test_bytes_that_are_not_utf8_are_a_wire_format_error():
    with pytest.raises(WireFormatError, match="not UTF-8"):
        Request.from_json(b'{"id":"p","kind":"input","prompt":"\xed\xa0\x80"}')


@pytest.mark.parametrize("depth", [200, 600, 5_000, 100_000])
@pytest.mark.parametrize("cls", [Request, Answer, ToolResult])
def test_deep_nesting_is_a_wire_format_error_never_a_recursion_error(cls, depth):
    nested = "[" * depth + "]" * depth
    texts = {
        Request: '{"id":"p","kind":"input","prompt":"?","data":{"x":' + nested + "}}",
        Answer: '{"id":"p","ok":true,"data":{"x":' + nested + "}}",
        ToolResult: '{"output":"","isError":false,"metadata":{"x":' + nested + "}}",
    }
    with pytest.raises(WireFormatError, match=r"deep|not valid JSON"):
        cls.from_json(texts[cls])


def test_deep_nesting_from_a_dict_is_a_wire_format_error_too():
    value: Any = []
    for _ in range(700):
        value = [value]
    with pytest.raises(WireFormatError, match="more than 128 levels deep"):
        Answer.from_dict({"id": "p", "ok": True, "data": {"x": value}})
    with pytest.raises(WireFormatError, match="more than 128 levels deep"):
        ToolResult.from_dict({"output": "", "isError": False, "metadata": {"x": value}})


def test_nesting_up_to_the_limit_round_trips():
    value: Any = 1
    for _ in range(126):  # + the data object + the answer object = 128 levels
        value = [value]
    answer = Answer("p", True, {"x": value})
    assert Answer.from_json(answer.to_json()) == answer
