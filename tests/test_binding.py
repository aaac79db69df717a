"""Answers bound to their question (toolnexus._binding): an answer resumes only the call that
asked — same tool, same arguments, same request as issued — once, on every Python path."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import pytest

import toolnexus._binding
import toolnexus._suspension
from doctests import run_doctests
from toolnexus import (
    Answer,
    Host,
    Request,
    StoreUnavailableError,
    ToolContext,
    Toolkit,
    ToolResult,
    TurnResult,
    tool,
)
from toolnexus._binding import Binder, arguments_digest, load_secret
from toolnexus.stores import AnswerStore, MemoryAnswerStore, SqliteAnswerStore

ENV_SCHEMA = {
    "type": "object",
    "properties": {"env": {"enum": ["staging", "production"]}},
    "required": ["env"],
}
KEY = "binding-test-key-0123456789abcdef"
OTHER_KEY = "another-test-key-0123456789abcdef"

runs: list[tuple[str, Answer | None]] = []


@tool
def deploy(service: str, env: str, ctx: ToolContext) -> ToolResult:
    """Deploy after an approval."""
    runs.append(("deploy", ctx.answer))
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", f"Deploy {service} to {env}?"))
    return ToolResult.ok(f"deployed {service} to {env}")


@tool
def summarize(text: str, ctx: ToolContext) -> ToolResult:
    """Never asks anything."""
    runs.append(("summarize", ctx.answer))
    return ToolResult.ok("summary")


@tool
def wipe(ctx: ToolContext) -> ToolResult:
    """Never asks anything either."""
    runs.append(("wipe", ctx.answer))
    return ToolResult.ok("wiped")


@tool
def place(ctx: ToolContext) -> ToolResult:
    """Asks where, with a schema."""
    runs.append(("place", ctx.answer))
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Where?", data={"schema": ENV_SCHEMA}))
    return ToolResult.ok(f"placed in {ctx.answer.data['env']}")


@tool
def wizard(ctx: ToolContext) -> ToolResult:
    """Asks a name, then an age."""
    runs.append(("wizard", ctx.answer))
    answer = ctx.answer
    if answer is None:
        return ToolResult.pending(Request("input", "Name?"))
    if "age" not in (answer.data or {}):
        return ToolResult.pending(Request("input", f"Age of {answer.data['name']}?"))
    return ToolResult.ok(f"age {answer.data['age']}")


TOOLKIT = Toolkit([deploy, summarize, wipe, place, wizard])
ARGS = {"service": "api", "env": "production"}


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch):
    monkeypatch.delenv("TOOLNEXUS_SECRET", raising=False)
    monkeypatch.delenv("TOOLNEXUS_STORE", raising=False)
    runs.clear()


@pytest.fixture
def host():
    with Host(TOOLKIT) as host:
        yield host


def ask(host: Host, name: str = "deploy", args: Any = None) -> tuple[ToolResult, Request]:
    pending = host.call(name, ARGS if args is None else args)
    request = ToolResult.pending_of(pending)
    assert request is not None, pending
    runs.clear()
    return pending, request


# --- the reproductions: redirected, made up, edited ---------------------------------------


def test_the_pending_result_carries_a_binding_beside_an_unchanged_request(host):
    pending, request = ask(host)
    assert set(pending.metadata) == {"pending", "binding"}
    assert pending.metadata["binding"].startswith("tnb1.")
    wire = json.loads(pending.to_json())
    assert wire["metadata"]["pending"] == request.to_dict()
    assert list(wire["metadata"]["pending"]) == ["id", "kind", "prompt"]


def test_an_approval_does_not_run_another_tool(host):
    pending, request = ask(host)
    for name, args in (("summarize", {"text": "x"}), ("wipe", {})):
        result = host.resume(name, args, pending, Answer.accept(request))
        assert result.is_error
        assert f"was asked by 'deploy', not '{name}'" in result.output
        assert "(the tool was not run)" in result.output
    assert runs == []


def test_an_approval_does_not_run_the_tool_with_other_arguments(host):
    pending, request = ask(host)
    result = host.resume(
        "deploy", {"service": "billing", "env": "production"}, pending, Answer.accept(request)
    )
    assert "the arguments differ" in result.output
    assert runs == []
    # The same arguments spelled differently are the same call.
    done = host.resume(
        "deploy", '{"env": "production", "service": "api"}', pending, Answer.accept(request)
    )
    assert done.output == "deployed api to production"


def test_a_made_up_request_is_refused(host):
    invented = Request("approval", "Deploy api to production?")
    result = host.resume("deploy", ARGS, invented, Answer.accept(invented))
    assert "has no binding and this process did not ask it" in result.output
    assert runs == []


def test_an_edited_request_is_refused_even_with_its_binding(host):
    pending, request = ask(host, "place", {})
    wire = pending.to_dict()
    del wire["metadata"]["pending"]["data"]  # drop data.schema to let env=moon through
    result = host.resume("place", {}, wire, Answer.accept(request, {"env": "moon"}))
    assert "is not the request this binding was issued for" in result.output
    wire = pending.to_dict()
    wire["metadata"]["pending"]["prompt"] = "Anything goes?"
    assert (
        "is not the request"
        in host.resume("place", {}, wire, Answer.accept(request, {"env": "moon"})).output
    )
    assert runs == []


def test_the_bare_request_works_in_the_process_that_asked(host):
    _, request = ask(host)
    assert host.resume("deploy", ARGS, request, Answer.accept(request)).output == (
        "deployed api to production"
    )


def test_a_turn_edited_into_another_call_is_refused_and_keeps_waiting(host):
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "deploy", "arguments": json.dumps(ARGS)},
        }
    ]
    turn = host.run_turn(calls)
    runs.clear()
    wire = json.loads(turn.to_json())
    wire["calls"][0]["name"] = "wipe"
    wire["calls"][0]["arguments"] = "{}"
    edited = TurnResult.from_dict(wire)
    resumed = host.resume_turn(edited, Answer.accept(edited.pending))
    assert resumed.error is not None and "was asked by 'deploy', not 'wipe'" in resumed.error
    assert resumed.pending == turn.pending
    assert runs == []
    done = host.resume_turn(turn, Answer.accept(turn.pending))
    assert done.messages[0]["content"] == "deployed api to production"
    again = host.resume_turn(turn, Answer.accept(turn.pending))
    assert again.error is not None and "already answered" in again.error


# --- at most once -------------------------------------------------------------------------


def test_a_replayed_approval_never_runs_the_tool_twice(host):
    pending, request = ask(host)
    first = host.resume("deploy", ARGS, pending, Answer.accept(request))
    second = host.resume("deploy", ARGS, pending, Answer.accept(request))
    third = host.resume("deploy", ARGS, pending.to_json(), Answer.decline(request))
    assert first.output == "deployed api to production"
    assert "already answered" in second.output and "already answered" in third.output
    assert [name for name, _ in runs] == ["deploy"]


def test_a_replay_through_another_host_of_the_process_is_refused_too(host):
    pending, request = ask(host)
    assert not host.resume("deploy", ARGS, pending, Answer.accept(request)).is_error
    with Host(TOOLKIT) as other:
        assert (
            "already answered"
            in other.resume("deploy", ARGS, pending, Answer.accept(request)).output
        )
    assert len(runs) == 1


def test_a_decline_uses_the_answer_up(host):
    pending, request = ask(host)
    declined = host.resume("deploy", ARGS, pending, Answer.decline(request))
    assert declined.output == "declined/expired: Deploy api to production?"
    assert "already answered" in host.resume("deploy", ARGS, pending, Answer.accept(request)).output
    assert runs == []


def test_an_invalid_answer_uses_nothing_up_so_a_corrected_one_may_follow(host):
    pending, request = ask(host, "place", {})
    bad = host.resume("place", {}, pending, Answer.accept(request, {"env": "moon"}))
    assert bad.output.startswith("invalid answer to 'Where?': env")
    assert (
        host.resume("place", {}, pending, Answer.accept(request, {"env": "staging"})).output
        == "placed in staging"
    )


def test_concurrent_replays_run_the_tool_once(host):
    pending, request = ask(host)
    results: list[ToolResult] = []
    start = threading.Barrier(8)

    def replay() -> None:
        start.wait()
        results.append(host.resume("deploy", ARGS, pending, Answer.accept(request)))

    threads = [threading.Thread(target=replay) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.is_error for r in results) == [False] + [True] * 7
    assert len(runs) == 1


def test_submit_and_aresume_enforce_the_binding_and_single_use(host):
    pending, request = ask(host)
    refused = host.submit("wipe", {}, request=pending, answer=Answer.accept(request))
    assert "not 'wipe'" in refused.result(timeout=10).output
    first = asyncio.run(host.aresume("deploy", ARGS, pending, Answer.accept(request)))
    second = asyncio.run(host.aresume("deploy", ARGS, pending, Answer.accept(request)))
    assert first.output == "deployed api to production"
    assert "already answered" in second.output
    assert len(runs) == 1


# --- one meaning of "no" ------------------------------------------------------------------


def test_approved_false_is_a_decline_on_resume(host):
    pending, request = ask(host)
    result = host.resume("deploy", ARGS, pending, Answer(request.id, True, {"approved": False}))
    assert result.output == "declined/expired: Deploy api to production?"
    assert result.metadata == {"reason": "declined"}
    assert runs == []


def test_approved_false_is_a_decline_with_wait_for_too():
    with Host(TOOLKIT, wait_for=lambda r: Answer(r.id, True, {"approved": False})) as live:
        result = live.call("deploy", ARGS)
    assert result.output == "declined/expired: Deploy api to production?"
    assert [answer for _, answer in runs] == [None]


@pytest.mark.parametrize("reason", ["declined", "cancelled", "expired"])
def test_the_declined_result_says_which_it_was_in_its_metadata(reason):
    with Host(TOOLKIT, wait_for=lambda r: Answer(r.id, False, None, reason)) as live:
        result = live.call("deploy", ARGS)
    assert result.output == "declined/expired: Deploy api to production?"
    assert result.metadata == {"reason": reason}


# --- keys ---------------------------------------------------------------------------------


def test_a_binding_from_another_key_is_refused_and_without_a_key_the_message_says_how():
    with Host(TOOLKIT, secret=KEY) as asker:
        pending = asker.call("deploy", ARGS)
    request = ToolResult.pending_of(pending)
    with Host(TOOLKIT, secret=OTHER_KEY) as other:
        refused = other.resume("deploy", ARGS, pending.to_json(), Answer.accept(request))
    assert "does not verify under this host's key(s)" in refused.output
    with Host(TOOLKIT) as keyless:
        refused = keyless.resume("deploy", ARGS, pending.to_json(), Answer.accept(request))
    assert "no key is configured" in refused.output
    assert "Host(secret=...)" in refused.output and "TOOLNEXUS_SECRET" in refused.output
    assert runs == [("deploy", None)]


def test_keys_rotate_new_first_old_still_verifies():
    with Host(TOOLKIT, secret=[OTHER_KEY]) as old:
        pending = old.call("deploy", ARGS)
    request = ToolResult.pending_of(pending)
    with Host(TOOLKIT, secret=[KEY]) as only_new:
        assert (
            "does not verify"
            in only_new.resume("deploy", ARGS, pending, Answer.accept(request)).output
        )
    with Host(TOOLKIT, secret=[KEY, OTHER_KEY]) as rotated:
        assert rotated.resume("deploy", ARGS, pending, Answer.accept(request)).output == (
            "deployed api to production"
        )


def test_the_key_comes_from_the_environment_when_none_is_given(monkeypatch):
    monkeypatch.setenv("TOOLNEXUS_SECRET", f"{KEY},{OTHER_KEY}")
    assert load_secret() == (KEY.encode(), OTHER_KEY.encode())
    with Host(TOOLKIT, secret=KEY) as asker:
        pending = asker.call("deploy", ARGS)
    with Host(TOOLKIT) as from_env:
        assert not from_env.resume(
            "deploy", ARGS, pending, Answer.accept(ToolResult.pending_of(pending))
        ).is_error


def test_bad_keys_are_refused_at_once():
    with pytest.raises(ValueError, match="at least 16 bytes, got 5"):
        Host(TOOLKIT, secret="short")
    with pytest.raises(ValueError, match="an empty list of keys"):
        Host(TOOLKIT, secret=[])
    with pytest.raises(TypeError, match="a key must be bytes or str"):
        Host(TOOLKIT, secret=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="consume"):
        Host(TOOLKIT, answer_store=object())  # type: ignore[arg-type]


def test_a_binding_expires_after_its_ttl_when_the_request_sets_no_expiry():
    now = [1_000_000.0]
    binder = Binder(KEY, store=MemoryAnswerStore(), ttl_s=60, clock=lambda: now[0])
    request = Request("approval", "Go?")
    parked = binder.bind("deploy", ARGS, ToolResult.pending(request))
    now[0] += 61
    refused = binder.check("deploy", ARGS, parked, Answer.accept(request))
    assert "expired at" in refused.result.output and refused.spent
    assert refused.result.metadata == {"reason": "expired"}


# --- max_rounds ---------------------------------------------------------------------------


def test_a_second_question_is_unresolved_by_default(host):
    pending, request = ask(host, "wizard", {})
    result = host.resume("wizard", {}, pending, Answer.accept(request, {"name": "Ada"}))
    assert result.output == "unresolved: Age of Ada?"


def test_max_rounds_hands_back_each_new_question_bound_to_the_same_call():
    with Host(TOOLKIT, max_rounds=2) as host:
        first = host.call("wizard", {})
        second = host.resume(
            "wizard", {}, first, Answer.accept(ToolResult.pending_of(first), {"name": "Ada"})
        )
        asked = ToolResult.pending_of(second)
        assert asked is not None and asked.prompt == "Age of Ada?"
        assert second.metadata["binding"] != first.metadata["binding"]
        assert (
            "was asked by 'wizard', not 'wipe'"
            in host.resume("wipe", {}, second, Answer.accept(asked, {"age": 36})).output
        )
        done = host.resume("wizard", {}, second, Answer.accept(asked, {"age": 36}))
        assert done.output == "age 36"


def test_max_rounds_with_wait_for_asks_each_question():
    answers = iter([{"name": "Ada"}, {"age": 36}])
    with Host(TOOLKIT, max_rounds=2, wait_for=lambda r: Answer.accept(r, next(answers))) as live:
        assert live.call("wizard", {}).output == "age 36"
    with Host(TOOLKIT, wait_for=lambda r: Answer.accept(r, {"name": "Ada"})) as once:
        assert once.call("wizard", {}).output == "unresolved: Age of Ada?"
    with pytest.raises(ValueError, match="max_rounds must be an int >= 1"):
        Host(TOOLKIT, max_rounds=0)


def test_max_rounds_on_the_submit_path():
    with Host(TOOLKIT, max_rounds=2) as host:
        first = host.call("wizard", {})
        second = host.submit(
            "wizard",
            {},
            request=first,
            answer=Answer.accept(ToolResult.pending_of(first), {"name": "Ada"}),
        ).result(timeout=10)
        asked = ToolResult.pending_of(second)
        assert asked is not None and asked.prompt == "Age of Ada?"
        assert "binding" in second.metadata
        done = host.submit(
            "wizard", {}, request=second.to_json(), answer=Answer.accept(asked, {"age": 36})
        ).result(timeout=10)
        assert done.output == "age 36"
        replay = host.submit(
            "wizard", {}, request=second, answer=Answer.accept(asked, {"age": 36})
        ).result(timeout=10)
        assert "already answered" in replay.output


# --- digests and stores -------------------------------------------------------------------


def test_the_argument_digest_is_canonical():
    assert arguments_digest({"b": 1, "a": [1.0, {"y": 2, "x": 3}]}) == arguments_digest(
        '{"a": [1, {"x": 3, "y": 2}], "b": 1}'
    )
    assert arguments_digest(None) == arguments_digest({}) == arguments_digest("{}")
    assert arguments_digest({"a": 1}) != arguments_digest({"a": "1"})
    assert arguments_digest({"a": "\ud800"}) != arguments_digest({"a": "x"})


def test_the_memory_store_drops_entries_at_their_expiry():
    now = [100.0]
    store = MemoryAnswerStore(clock=lambda: now[0])
    assert store.consume("a", 110.0) and not store.consume("a", 110.0)
    assert store.consume("b", 200.0)
    now[0] = 150.0
    assert store.consume("c", 300.0)  # a later consume sweeps the expired "a"
    assert len(store) == 2 and repr(store) == "<MemoryAnswerStore 2 used>"
    assert isinstance(store, AnswerStore)


def test_the_sqlite_store_is_shared_and_atomic(tmp_path):
    path = tmp_path / "used.db"
    one, two = SqliteAnswerStore(path), SqliteAnswerStore(path)
    assert isinstance(one, AnswerStore)
    results: list[bool] = []
    start = threading.Barrier(6)

    def consume(store: SqliteAnswerStore) -> None:
        start.wait()
        results.append(store.consume("k", 9e9))

    threads = [threading.Thread(target=consume, args=(s,)) for s in (one, two) * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 5 + [True]
    now = [1000.0]
    expiring = SqliteAnswerStore(path, clock=lambda: now[0])
    assert expiring.consume("e", 1001.0) and not expiring.consume("e", 1001.0)
    now[0] = 1002.0
    assert expiring.consume("e", 2000.0)  # past its expiry: forgotten


def test_a_host_with_an_sqlite_store_refuses_a_replay_from_another_host(tmp_path):
    store = tmp_path / "used.db"
    with Host(TOOLKIT, secret=KEY, answer_store=SqliteAnswerStore(store)) as asker:
        pending = asker.call("deploy", ARGS)
    request = ToolResult.pending_of(pending)
    results = []
    for _ in range(2):
        with Host(TOOLKIT, secret=KEY, answer_store=SqliteAnswerStore(store)) as fresh:
            results.append(fresh.resume("deploy", ARGS, pending.to_json(), Answer.accept(request)))
    assert results[0].output == "deployed api to production"
    assert "already answered" in results[1].output


class FlakyStore:
    """A store whose server is down until ``up`` is set; then a memory store."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.up = False
        self.memory = MemoryAnswerStore()

    def consume(self, key: str, expires_at: float) -> bool:
        if not self.up:
            raise self.error
        return self.memory.consume(key, expires_at)


@pytest.mark.parametrize(
    "error",
    [
        StoreUnavailableError("postgresql://app:***@db/app", "connection refused"),
        RuntimeError("a store of one's own, broken"),
    ],
)
def test_a_store_that_fails_refuses_the_resume_and_uses_nothing_up(error, caplog):
    store = FlakyStore(error)
    with Host(TOOLKIT, secret=KEY, answer_store=store) as host:
        pending = host.call("deploy", ARGS)
        request = ToolResult.pending_of(pending)
        with caplog.at_level(logging.WARNING, logger="toolnexus"):
            refused = host.resume("deploy", ARGS, pending, Answer.accept(request))
        assert refused.is_error
        assert refused.output == (
            "cannot resume: the answer store is unavailable, so the answer could not be checked "
            "for single use; it was not used: send it again once the store is back (the tool "
            "was not run)"
        )
        assert "db/app" not in refused.output  # where the store is goes to the log only
        assert [r.getMessage() for r in caplog.records if r.name == "toolnexus"] == [
            f"cannot resume request {request.id!r}: {error}"
        ]
        assert runs == [("deploy", None)]
        store.up = True
        done = host.resume("deploy", ARGS, pending, Answer.accept(request))
        assert done.output == "deployed api to production"
        again = host.resume("deploy", ARGS, pending, Answer.accept(request))
        assert "already answered" in again.output


class Forwarder:
    """A tool that hands its answer on to a service that refuses it unused until ``up``."""

    def __init__(self) -> None:
        self.up = False
        self.answers: list[Answer] = []

    def __call__(self, args: Any, ctx: ToolContext | None = None) -> ToolResult:
        assert ctx is not None
        if ctx.answer is None:
            return ToolResult.pending(Request("approval", "Forward it?"))
        self.answers.append(ctx.answer)
        if not self.up:
            return ToolResult.error(
                "the service is down; send the answer again", {"answer": "unused"}
            )
        return ToolResult.ok("forwarded")


@pytest.mark.parametrize("store", [MemoryAnswerStore, SqliteAnswerStore])
def test_an_answer_the_tool_did_not_use_may_come_again_and_then_only_once(store, tmp_path):
    # An MCP client's remote tool whose server refused the answer unused says so
    # (metadata["answer"] == "unused"): the host forgets it used the answer.
    from toolnexus import Tool

    forwarder = Forwarder()
    kit = Toolkit([Tool("forward", "Forwards.", {"type": "object"}, forwarder)])
    opened = store() if store is MemoryAnswerStore else store(str(tmp_path / "used.db"))
    with Host(kit, secret=KEY, answer_store=opened) as host:
        pending = host.call("forward", {})
        answer = Answer.accept(ToolResult.pending_of(pending))
        refused = host.resume("forward", {}, pending, answer)
        assert refused.output == "the service is down; send the answer again"
        forwarder.up = True
        assert host.resume("forward", {}, pending, answer).output == "forwarded"
        again = host.resume("forward", {}, pending, answer)
    assert "already answered" in again.output
    assert len(forwarder.answers) == 2  # the replay after the used one never ran


def test_a_turn_whose_store_fails_still_waits_on_its_question():
    store = FlakyStore(StoreUnavailableError("redis://cache:6379/0", "connection refused"))
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "deploy", "arguments": json.dumps(ARGS)},
        }
    ]
    with Host(TOOLKIT, secret=KEY, answer_store=store) as host:
        turn = host.run_turn(calls)
        refused = host.resume_turn(turn, Answer.accept(turn.pending))
        assert refused.error is not None and "answer store is unavailable" in refused.error
        assert f"the turn still waits on request {turn.pending.id!r}" in refused.error
        assert refused.pending == turn.pending
        store.up = True
        done = host.resume_turn(refused, Answer.accept(turn.pending))
    assert done.error is None
    assert done.messages[0]["content"] == "deployed api to production"


def test_the_environment_names_the_store_of_every_host_given_none(tmp_path, monkeypatch):
    path = tmp_path / "used.db"
    monkeypatch.setenv("TOOLNEXUS_STORE", f"sqlite:{path}")
    with Host(TOOLKIT, secret=KEY) as asker:
        assert isinstance(asker._binder.store, SqliteAnswerStore)
        pending = asker.call("deploy", ARGS)
    request = ToolResult.pending_of(pending)
    assert SqliteAnswerStore(path).consume("unrelated", 9e9)
    with Host(TOOLKIT, secret=KEY) as one, Host(TOOLKIT, secret=KEY) as two:
        assert one._binder.store is two._binder.store  # opened once per process
        assert one.resume("deploy", ARGS, pending, Answer.accept(request)).output == (
            "deployed api to production"
        )
        assert (
            "already answered" in two.resume("deploy", ARGS, pending, Answer.accept(request)).output
        )
    monkeypatch.setenv("TOOLNEXUS_STORE", "mongodb://db/answers")
    with pytest.raises(ValueError, match="TOOLNEXUS_STORE: unknown store scheme 'mongodb'"):
        Host(TOOLKIT, secret=KEY)


@pytest.mark.parametrize("module", [toolnexus._binding, toolnexus._suspension])
def test_module_examples_run(module):
    failed, attempted = run_doctests(module)
    assert attempted > 0 and failed == 0
