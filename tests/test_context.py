"""ToolContext: a frozen value with a budget, a token, an answer, and a progress sink."""

from __future__ import annotations

import dataclasses
import types

import pytest

from doctests import run_doctests
from toolnexus import (
    Answer,
    CancellationToken,
    CancellationTokenSource,
    Request,
    ToolContext,
)


def test_a_positional_argument_is_the_timeout_in_milliseconds():
    assert ToolContext(5000).timeout_ms == 5000


def test_defaults_are_unset_budget_none_token_and_no_answer():
    ctx = ToolContext()
    assert ctx.timeout_ms is None
    assert ctx.cancellation_token is CancellationToken.NONE
    assert ctx.answer is None
    assert ctx.progress is None
    assert ctx.is_cancelled is False


def test_keywords_set_every_field():
    source = CancellationTokenSource()
    answer = Answer("pnd-1", True)
    ctx = ToolContext(timeout_ms=250, cancellation_token=source.token, answer=answer)
    assert (ctx.timeout_ms, ctx.cancellation_token, ctx.answer) == (250, source.token, answer)


@pytest.mark.parametrize("timeout_ms", [0, 1, 5000, 10**12])
def test_timeout_ms_accepts_non_negative_ints(timeout_ms):
    assert ToolContext(timeout_ms).timeout_ms == timeout_ms


@pytest.mark.parametrize(
    "timeout_ms",
    [True, False, 5000.0, 0.5, float("nan"), -1, -5000, "5000", b"5", [5000], {"ms": 5}],
    ids=repr,
)
def test_timeout_ms_refuses_anything_but_none_or_an_int_at_least_zero(timeout_ms):
    with pytest.raises((ValueError, TypeError), match="timeout_ms") as caught:
        ToolContext(timeout_ms)
    assert repr(timeout_ms) in str(caught.value)  # the message shows the value it refused


def test_a_bad_timeout_message_says_what_is_expected():
    with pytest.raises(ValueError, match=r"timeout_ms must be None or an int >= 0.*got -1"):
        ToolContext(-1)


def test_a_source_where_a_token_belongs_is_refused_with_a_hint():
    source = CancellationTokenSource()
    with pytest.raises(TypeError, match=r"cancellation_token must be a CancellationToken"):
        ToolContext(cancellation_token=source)  # type: ignore[arg-type]


def test_an_answer_must_be_an_answer():
    with pytest.raises(TypeError, match="answer must be an Answer or None, got dict"):
        ToolContext(answer={"id": "pnd-1", "ok": True})  # type: ignore[arg-type]


def test_progress_must_be_callable():
    with pytest.raises(TypeError, match="progress must be callable"):
        ToolContext(progress="stdout")  # type: ignore[arg-type]


def test_is_cancelled_follows_the_token():
    source = CancellationTokenSource()
    ctx = ToolContext(cancellation_token=source.token)
    assert ctx.is_cancelled is False
    source.cancel()
    assert ctx.is_cancelled is True


@pytest.mark.parametrize("name", ["timeout_ms", "cancellation_token", "answer", "progress"])
def test_fields_cannot_be_assigned_or_deleted(name):
    ctx = ToolContext(5000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(ctx, name, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(ctx, name)
    assert ctx.timeout_ms == 5000


def test_no_new_attribute_can_be_added_or_deleted():
    ctx = ToolContext()
    with pytest.raises(dataclasses.FrozenInstanceError, match="ToolContext is frozen"):
        ctx.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError, match="ToolContext is frozen"):
        del ctx.extra  # type: ignore[attr-defined]


def test_contexts_with_equal_fields_are_equal_and_hash_alike():
    source = CancellationTokenSource()
    answer = Answer("pnd-1", True, {"env": "staging"})
    first = ToolContext(100, source.token, answer)
    second = ToolContext(100, source.token, Answer("pnd-1", True, {"env": "staging"}))
    assert first == second
    assert hash(first) == hash(second)
    assert first != ToolContext(101, source.token, answer)
    assert first != ToolContext(100, CancellationTokenSource().token, answer)


def test_the_progress_sink_takes_no_part_in_equality():
    assert ToolContext(1, progress=lambda *a: None) == ToolContext(1)


def test_with_answer_returns_a_copy_carrying_the_answer():
    source = CancellationTokenSource()
    ctx = ToolContext(5000, source.token)
    request = Request("input", "Which environment?")
    answer = Answer.accept(request, {"env": "staging"})
    resumed = ctx.with_answer(answer)
    assert resumed.answer == answer
    assert (resumed.timeout_ms, resumed.cancellation_token) == (5000, source.token)
    assert ctx.answer is None  # the original is untouched
    assert resumed.with_answer(None).answer is None


def test_with_timeout_returns_a_copy_with_another_budget_and_validates_it():
    reports: list[object] = []
    ctx = ToolContext(5000, progress=lambda *report: reports.append(report))
    shorter = ctx.with_timeout(100)
    assert (shorter.timeout_ms, ctx.timeout_ms) == (100, 5000)
    assert shorter.progress is ctx.progress
    assert ctx.with_timeout(None).timeout_ms is None
    with pytest.raises(ValueError, match="timeout_ms"):
        ctx.with_timeout(-1)


def test_dataclasses_replace_validates_too():
    with pytest.raises(ValueError, match="timeout_ms"):
        dataclasses.replace(ToolContext(), timeout_ms=1.5)


def test_report_progress_without_a_listener_does_nothing():
    assert ToolContext().report_progress(1, 10, "one of ten") is None


def test_report_progress_is_delivered_to_the_listener():
    reports: list[tuple[float, float | None, str | None]] = []
    ctx = ToolContext(
        progress=lambda progress, total, message: reports.append((progress, total, message))
    )
    ctx.report_progress(1, 3, "first of three")
    ctx.report_progress(0.5)
    ctx.report_progress(2, message="halfway-ish")
    assert reports == [(1, 3, "first of three"), (0.5, None, None), (2, None, "halfway-ish")]


def test_repr_shows_the_budget_the_token_state_and_the_answer():
    source = CancellationTokenSource()
    ctx = ToolContext(5000, source.token)
    assert repr(ctx) == "<ToolContext timeout_ms=5000 live answer=None>"
    source.cancel()
    assert repr(ctx) == "<ToolContext timeout_ms=5000 cancelled answer=None>"
    assert repr(ToolContext()) == "<ToolContext timeout_ms=None no token answer=None>"
    answered = ToolContext(answer=Answer("pnd-1", True, {"password": "hunter2"}))
    assert repr(answered) == (
        "<ToolContext timeout_ms=None no token answer=<Answer ok id='pnd-1' data: 1 key>>"
    )
    assert "hunter2" not in repr(answered)


def test_the_docstring_examples_in_context_run():
    import toolnexus._context as module

    failed, attempted = run_doctests(module)
    assert attempted > 0
    assert failed == 0, "a docstring example failed (see the output above)"


def test_remaining_ms_counts_down_from_when_the_context_was_made(monkeypatch):
    from toolnexus import _context

    now = [100.0]
    monkeypatch.setattr(_context, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    ctx = ToolContext(5000)
    assert ctx.remaining_ms() == 5000 and ctx.deadline == 105.0
    now[0] = 101.5
    assert ctx.remaining_ms() == 3500
    now[0] = 106.0
    assert ctx.remaining_ms() == 0  # spent: never negative
    assert ctx.with_timeout(1000).remaining_ms() == 1000  # a changed copy starts afresh
    assert ctx.with_timeout(1000).deadline == 107.0


def test_without_a_budget_nothing_remains_to_count():
    assert ToolContext().remaining_ms() is None and ToolContext().deadline is None


def test_the_budget_start_does_not_change_equality():
    first = ToolContext(5000)
    assert first == ToolContext(5000) and hash(first) == hash(ToolContext(5000))
