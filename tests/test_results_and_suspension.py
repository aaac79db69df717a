"""ToolResult, Request and Answer: frozen values, suspension as data, read-only mappings."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import re
from datetime import datetime, timedelta, timezone

import pytest

from doctests import run_doctests
from toolnexus import Answer, Request, ToolResult

# --- ToolResult ----------------------------------------------------------------------------


def test_ok_is_a_success_with_empty_metadata():
    result = ToolResult.ok("42")
    assert (result.output, result.is_error, result.metadata) == ("42", False, {})
    assert not result.is_pending


def test_error_is_a_failure_the_model_can_read():
    result = ToolResult.error("no such file: a.txt")
    assert (result.output, result.is_error, result.metadata) == ("no such file: a.txt", True, {})
    assert not result.is_pending


def test_the_constructor_takes_output_is_error_and_metadata_in_that_order():
    result = ToolResult("done", True, {"attempts": 3})
    assert (result.output, result.is_error, result.metadata) == ("done", True, {"attempts": 3})
    assert ToolResult("done") == ToolResult.ok("done")


def test_ok_and_error_carry_metadata():
    assert ToolResult.ok("x", {"n": 1}).metadata == {"n": 1}
    assert ToolResult.error("x", metadata={"code": "E1"}).metadata == {"code": "E1"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"output": 42}, r"ToolResult.output must be a str, got int; convert it"),
        ({"output": None}, r"ToolResult.output must be a str, got NoneType"),
        ({"output": "x", "is_error": 1}, r"ToolResult.is_error must be a bool, got int"),
        ({"output": "x", "metadata": [1]}, r"ToolResult.metadata must be a mapping"),
    ],
)
def test_a_malformed_result_is_refused_at_construction(kwargs, message):
    with pytest.raises(TypeError, match=message):
        ToolResult(**kwargs)


def test_a_pending_result_is_an_error_whose_output_is_the_prompt():
    request = Request("input", "Which environment?")
    result = ToolResult.pending(request)
    assert result.is_error
    assert result.is_pending
    assert result.output == "Which environment?"
    assert result.metadata == {"pending": request}
    assert ToolResult.pending_of(result) is request


def test_a_pending_result_with_a_url_shows_prompt_newline_url():
    request = Request("authorization", "Log in to GitHub", url="https://example.test/login")
    assert ToolResult.pending(request).output == "Log in to GitHub\nhttps://example.test/login"


def test_pending_refuses_what_is_not_a_request():
    with pytest.raises(TypeError, match="pending\\(\\) takes a Request, got dict"):
        ToolResult.pending({"kind": "input", "prompt": "?"})  # type: ignore[arg-type]


def test_a_result_carrying_a_pending_request_must_be_an_error():
    with pytest.raises(ValueError, match=r"must have is_error=True.*ToolResult.pending"):
        ToolResult.ok("fine", {"pending": Request("input", "?")})


def test_pending_of_is_none_for_none_and_for_results_without_a_request():
    assert ToolResult.pending_of(None) is None
    assert ToolResult.pending_of(ToolResult.ok("x")) is None
    assert ToolResult.pending_of(ToolResult.error("x", {"other": 1})) is None
    # A plain object under "pending" is not a suspension: only a Request is.
    not_a_request = ToolResult.error("x", {"pending": {"kind": "input"}})
    assert ToolResult.pending_of(not_a_request) is None
    assert not not_a_request.is_pending


def test_pending_of_refuses_what_is_not_a_result():
    with pytest.raises(TypeError, match="pending_of\\(\\) takes a ToolResult or None, got dict"):
        ToolResult.pending_of({"metadata": {}})  # type: ignore[arg-type]


def test_auth_required_suspends_on_an_authorization_request():
    result = ToolResult.auth_required("https://example.test/oauth")
    request = ToolResult.pending_of(result)
    assert request is not None
    assert (request.kind, request.url) == ("authorization", "https://example.test/oauth")
    assert request.prompt == "Authorization required to continue"
    assert result.output == "Authorization required to continue\nhttps://example.test/oauth"
    assert result.is_error and result.is_pending


def test_auth_required_takes_a_custom_prompt():
    result = ToolResult.auth_required("https://x.test", prompt="Sign in to the wiki")
    assert result.output == "Sign in to the wiki\nhttps://x.test"


# --- frozen, equality, read-only mappings -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (ToolResult.ok("x"), "output"),
        (ToolResult.ok("x"), "is_error"),
        (ToolResult.ok("x"), "metadata"),
        (Request("input", "?"), "prompt"),
        (Request("input", "?"), "id"),
        (Answer("pnd-1", True), "ok"),
        (Answer("pnd-1", True), "data"),
    ],
)
def test_assignment_raises_frozen_instance_error(value, name):
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, name, None)


def test_equal_values_are_equal_and_hash_alike():
    pairs = [
        (ToolResult.ok("x", {"a": [1, {"b": 2}]}), ToolResult.ok("x", {"a": [1, {"b": 2}]})),
        (
            Request("input", "?", id="pnd-1", data={"k": [1]}),
            Request("input", "?", id="pnd-1", data={"k": [1]}),
        ),
        (Answer("pnd-1", True, {"env": "staging"}), Answer("pnd-1", True, {"env": "staging"})),
    ]
    for first, second in pairs:
        assert first == second
        assert hash(first) == hash(second)
    assert ToolResult.ok("x") != ToolResult.error("x")
    assert Request("input", "?") != Request("input", "?")  # fresh ids differ
    assert Answer("pnd-1", True) != Answer("pnd-1", False)


def test_mutating_the_callers_dict_afterwards_changes_nothing():
    metadata = {"tags": ["a"], "nested": {"n": 1}}
    data = {"schema": {"type": "object", "properties": {}}}
    result = ToolResult.ok("x", metadata)
    request = Request("input", "?", data=data)
    answer = Answer("pnd-1", True, data)
    metadata["tags"].append("b")
    metadata["nested"]["n"] = 2
    metadata["added"] = True
    data["schema"]["type"] = "array"
    assert result.metadata == {"tags": ["a"], "nested": {"n": 1}}
    assert request.data == {"schema": {"type": "object", "properties": {}}}
    assert answer.data == {"schema": {"type": "object", "properties": {}}}


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: m.__setitem__("x", 1),
        lambda m: m.__delitem__("tags"),
        lambda m: m.update(x=1),
        lambda m: m.pop("tags"),
        lambda m: m.popitem(),
        lambda m: m.setdefault("x", 1),
        lambda m: m.clear(),
        lambda m: m.__ior__({"x": 1}),
        lambda m: m["tags"].append("b"),
        lambda m: m["tags"].__setitem__(0, "z"),
        lambda m: m["tags"].sort(),
        lambda m: m["nested"].__setitem__("n", 2),
    ],
    ids=[
        "setitem",
        "delitem",
        "update",
        "pop",
        "popitem",
        "setdefault",
        "clear",
        "ior",
        "nested-append",
        "nested-setitem",
        "nested-sort",
        "nested-dict",
    ],
)
def test_exposed_mappings_are_read_only_all_the_way_down(mutate):
    values = {"tags": ["a"], "nested": {"n": 1}}
    for exposed in (
        ToolResult.ok("x", values).metadata,
        Request("input", "?", data=values).data,
        Answer("pnd-1", True, values).data,
    ):
        with pytest.raises(TypeError, match="read-only; copy it first"):
            mutate(exposed)
        assert exposed == values


def test_read_only_mappings_still_behave_as_plain_json_data():
    result = ToolResult.ok("x", {"tags": ["a"], "n": 1.5})
    metadata = result.metadata
    assert isinstance(metadata, dict) and isinstance(metadata["tags"], list)
    assert json.dumps(metadata) == '{"tags": ["a"], "n": 1.5}'
    changed = dict(metadata)
    changed["more"] = True  # a plain copy is freely mutable
    assert "more" not in metadata


def test_to_dict_hands_out_mutable_copies():
    result = ToolResult.ok("x", {"tags": ["a"]})
    wire = result.to_dict()
    wire["metadata"]["tags"].append("b")
    assert result.metadata == {"tags": ["a"]}


def test_values_survive_pickle_and_copy():
    pending = ToolResult.pending(Request("input", "?", data={"schema": {"type": "object"}}))
    for clone in (pickle.loads(pickle.dumps(pending)), copy.copy(pending), copy.deepcopy(pending)):
        assert clone == pending
        assert clone.is_pending
        with pytest.raises(TypeError):
            clone.metadata["x"] = 1  # type: ignore[index]


# --- Request ---------------------------------------------------------------------------------


def test_generated_request_ids_are_unique_prefixed_and_carry_128_random_bits():
    ids = [Request("input", "?").id for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for rid in ids:
        assert re.fullmatch(r"pnd-[0-9a-f]{32}", rid)  # 32 hex digits = 128 bits >= 122
    # Every hex digit position varies across ids: nothing is fixed or counted.
    for position in range(4, 36):
        assert len({rid[position] for rid in ids}) > 8


def test_an_explicit_id_is_kept_and_must_be_given_by_keyword():
    assert Request("input", "?", id="pnd-mine").id == "pnd-mine"
    with pytest.raises(TypeError):
        Request("input", "?", "pnd-mine")  # type: ignore[misc]


def test_request_fields_and_defaults():
    request = Request("approval", "Deploy to production?")
    assert (request.kind, request.prompt) == ("approval", "Deploy to production?")
    assert (request.url, request.data, request.expires_at) == (None, None, None)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"kind": "", "prompt": "?"}, ValueError, r"Request.kind must not be empty"),
        ({"kind": 3, "prompt": "?"}, TypeError, r"Request.kind must be a str, got int"),
        ({"kind": "input", "prompt": None}, TypeError, r"Request.prompt must be a str"),
        ({"kind": "input", "prompt": "?", "id": ""}, ValueError, r"Request.id must not be empty"),
        ({"kind": "input", "prompt": "?", "url": ""}, ValueError, r"Request.url must not be"),
        ({"kind": "input", "prompt": "?", "data": [1]}, TypeError, r"Request.data must be a map"),
        (
            {"kind": "input", "prompt": "?", "expires_at": "tomorrow"},
            ValueError,
            r"Request.expires_at: not an RFC 3339 timestamp: 'tomorrow'",
        ),
        (
            {"kind": "input", "prompt": "?", "expires_at": "2026-01-02T03:04:05"},
            ValueError,
            r"Request.expires_at: not an RFC 3339",
        ),
    ],
)
def test_a_malformed_request_is_refused_at_construction(kwargs, error, message):
    with pytest.raises(error, match=message):
        Request(**kwargs)


UTC = timezone.utc


@pytest.mark.parametrize(
    ("expires_at", "moment"),
    [
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02t03:04:05z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T05:04:05+02:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-01T22:34:05-04:30", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05.250Z", datetime(2026, 1, 2, 3, 4, 5, 250000, tzinfo=UTC)),
        ("2026-01-02T03:04:05+00:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_is_expired_reads_z_and_offsets(expires_at, moment):
    request = Request("approval", "?", expires_at=expires_at)
    tick = timedelta(microseconds=1)
    assert request.is_expired(moment - tick) is False
    assert request.is_expired(moment) is True  # at the instant itself: expired
    assert request.is_expired(moment + tick) is True
    # `now` in another zone is compared as the same instant.
    tokyo = timezone(timedelta(hours=9))
    assert request.is_expired((moment - tick).astimezone(tokyo)) is False
    assert request.is_expired(moment.astimezone(tokyo)) is True


def test_is_expired_defaults_to_the_current_time():
    assert Request("approval", "?", expires_at="2000-01-01T00:00:00Z").is_expired() is True
    assert Request("approval", "?", expires_at="2999-01-01T00:00:00Z").is_expired() is False


def test_a_request_without_expiry_never_expires():
    assert Request("approval", "?").is_expired(datetime(9999, 1, 1, tzinfo=UTC)) is False


def test_is_expired_refuses_a_naive_now():
    request = Request("approval", "?", expires_at="2026-01-02T03:04:05Z")
    with pytest.raises(ValueError, match="needs an aware datetime"):
        request.is_expired(datetime(2026, 1, 2, 3, 4, 5))


def test_is_expired_refuses_what_is_not_a_datetime():
    request = Request("approval", "?", expires_at="2026-01-02T03:04:05Z")
    with pytest.raises(TypeError, match="takes a datetime, got str"):
        request.is_expired("2026-01-02T03:04:05Z")  # type: ignore[arg-type]


def test_request_repr_shows_its_state_without_dumping_its_content():
    assert repr(Request("input", "Which environment?", id="pnd-1")) == (
        "<Request input id='pnd-1' prompt='Which environment?'>"
    )
    request = Request(
        "authorization",
        "Log in to the calendar so I can book the meeting you asked for",
        id="pnd-2",
        url="https://user:pw@auth.example/cb?code=SECRET-CODE",
        data={"schema": {"type": "object"}, "hint": "private"},
        expires_at="2026-01-02T03:04:05Z",
    )
    assert repr(request) == (
        "<Request authorization id='pnd-2' prompt='Log in to the calendar so I can book ...' "
        "url=https://auth.example/... data=[schema, hint] expires_at=2026-01-02T03:04:05Z>"
    )
    assert "SECRET" not in repr(request) and "pw" not in repr(request)
    assert "private" not in repr(request)


# --- Answer ----------------------------------------------------------------------------------


def test_accept_echoes_the_request_id_and_carries_data():
    request = Request("input", "Which environment?")
    answer = Answer.accept(request, {"env": "staging"})
    assert (answer.id, answer.ok, answer.data, answer.reason) == (
        request.id,
        True,
        {"env": "staging"},
        None,
    )
    assert Answer.accept(request).data is None


def test_decline_echoes_the_request_id_with_a_reason():
    request = Request("approval", "Deploy?")
    assert Answer.decline(request) == Answer(request.id, False, None, "declined")
    assert Answer.decline(request, reason="expired").reason == "expired"


def test_accept_and_decline_refuse_what_is_not_a_request():
    with pytest.raises(TypeError, match="expected a Request to answer, got str"):
        Answer.accept("pnd-1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a Request to answer"):
        Answer.decline(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("", True), ValueError, r"Answer.id must not be empty"),
        ((7, True), TypeError, r"Answer.id must be a str, got int"),
        (("pnd-1", 1), TypeError, r"Answer.ok must be a bool, got int"),
        (("pnd-1", "yes"), TypeError, r"Answer.ok must be a bool, got str"),
        (("pnd-1", True, "staging"), TypeError, r"Answer.data must be a mapping"),
        (("pnd-1", False, None, 3), TypeError, r"Answer.reason must be a str"),
    ],
)
def test_a_malformed_answer_is_refused_at_construction(args, error, message):
    with pytest.raises(error, match=message):
        Answer(*args)


def test_answer_repr_shows_its_state_never_its_data():
    assert repr(Answer("pnd-1", False, reason="expired")) == "<Answer refused (expired) id='pnd-1'>"
    assert repr(Answer("pnd-1", False)) == "<Answer refused (declined) id='pnd-1'>"
    typed = Answer("pnd-1", True, {"password": "hunter2", "user": "ada"})
    assert repr(typed) == "<Answer ok id='pnd-1' data: 2 keys>"
    assert "hunter2" not in repr(typed) and "hunter2" not in str(typed)
    assert repr(Answer("pnd-1", True)) == "<Answer ok id='pnd-1'>"


# --- ToolResult.ok -------------------------------------------------------------------------


def test_ok_on_the_class_builds_a_success():
    assert ToolResult.ok("42", {"rows": 1}) == ToolResult("42", False, {"rows": 1})
    assert "successful result" in (ToolResult.ok.__doc__ or "")


def test_ok_on_a_result_reads_as_whether_it_succeeded():
    assert ToolResult.ok("42").ok is True
    assert ToolResult.error("no such file").ok is False
    pending = ToolResult.pending(Request("approval", "Deploy?"))
    assert pending.ok is False  # a question is not an answer yet
    outcomes = [r for r in (ToolResult.error("boom"), pending) if r.ok]
    assert outcomes == []  # `if result.ok:` is never fooled by a truthy bound method


def test_ok_on_a_result_is_not_a_factory():
    with pytest.raises(TypeError, match="'bool' object is not callable"):
        ToolResult.error("boom").ok("again")  # type: ignore[operator]


def test_ok_on_a_subclass_builds_the_subclass():
    class Traced(ToolResult):
        __slots__ = ()

    assert type(Traced.ok("x")) is Traced


# --- ToolResult reprs ------------------------------------------------------------------------


def test_result_reprs_show_state_and_a_short_output():
    assert repr(ToolResult.ok("42")) == "<ToolResult ok '42'>"
    assert repr(ToolResult.error("timed out after 50 ms")) == (
        "<ToolResult error 'timed out after 50 ms'>"
    )
    assert repr(ToolResult.pending(Request("input", "Which environment?"))) == (
        "<ToolResult pending 'Which environment?'>"
    )
    long = repr(ToolResult.ok("x" * 100))
    assert long == "<ToolResult ok '" + "x" * 57 + "...'>"


def test_the_docstring_examples_in_result_run():
    import toolnexus._result as module

    failed, attempted = run_doctests(module)
    assert attempted > 0
    assert failed == 0, "a docstring example failed (see the output above)"


def test_the_docstring_examples_in_suspension_run():
    import toolnexus._suspension as module

    failed, attempted = run_doctests(module)
    assert attempted > 0
    assert failed == 0, "a docstring example failed (see the output above)"


# --- Answer.value: the typed way to read an answer's data ---------------------------------


def test_answer_value_returns_the_key_checked_against_its_type():
    answer = Answer.accept(Request("input", "?", id="pnd-1"), {"env": "prod", "n": 3})
    assert answer.value("env", str) == "prod"
    assert answer.value("n", int) == 3


def test_answer_value_reads_a_json_integer_as_a_float():
    answer = Answer.accept(Request("input", "?", id="pnd-1"), {"ratio": 2})
    ratio = answer.value("ratio", float)
    assert ratio == 2.0 and isinstance(ratio, float)


def test_answer_value_never_takes_a_boolean_for_an_integer():
    answer = Answer.accept(Request("input", "?", id="pnd-1"), {"n": True})
    with pytest.raises(ValueError, match=r"^the answer's 'n' is bool True, expected int$"):
        answer.value("n", int)


def test_answer_value_names_a_missing_key_and_what_the_data_has():
    answer = Answer.accept(Request("input", "?", id="pnd-1"), {"env": "prod"})
    with pytest.raises(ValueError, match=r"^the answer's data has no 'region' \(it has 'env'\)$"):
        answer.value("region", str)
    declined = Answer.decline(Request("input", "?", id="pnd-1"))
    with pytest.raises(ValueError, match=r"has no 'env' \(it has nothing\)"):
        declined.value("env", str)


def test_answer_value_falls_back_to_a_default_only_when_the_key_is_missing():
    answer = Answer.accept(Request("input", "?", id="pnd-1"), {"env": 7})
    assert answer.value("region", str, "eu") == "eu"
    with pytest.raises(ValueError, match=r"the answer's 'env' is int 7, expected str"):
        answer.value("env", str, "staging")
