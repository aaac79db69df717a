"""The built-in policies under attack (``toolnexus.policies``).

A rate limit under 500 concurrent calls (no burst over the bucket, none waiting past its
deadline); a retry that would cross the deadline does not start; a cache never serves
another tenant's entry or a stale one; a model calling a tool that needs approval 100
times gets 100 questions and 0 runs until answered; call limits; redaction.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

from toolnexus import (
    Answer,
    CancellationToken,
    CancellationTokenSource,
    Host,
    InvalidValueError,
    Part,
    Request,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)
from toolnexus.policies import (
    cache,
    call_limit,
    rate_limit,
    redact,
    require_approval,
    retry,
)

# --------------------------------------------------------------------------- rate_limit


def test_500_concurrent_calls_never_burst_over_the_bucket_nor_wait_past_their_deadline() -> None:
    per_second, burst, budget_ms = 20.0, 5, 1_000
    started: list[float] = []

    @tool
    async def ping() -> str:
        """Answers at once."""
        started.append(time.monotonic())
        return "pong"

    async def one(host: Host) -> tuple[ToolResult, float, float]:
        begun = time.monotonic()
        result = await host.acall("ping", timeout_ms=budget_ms)
        return result, begun, time.monotonic() - begun

    async def main() -> list[tuple[ToolResult, float, float]]:
        policy = rate_limit(per_second, burst=burst)
        with Host(Toolkit([ping]), middleware=[policy]) as host:
            return list(await asyncio.gather(*(one(host) for _ in range(500))))

    outcomes = asyncio.run(main())
    ran = [r for r, _, _ in outcomes if not r.is_error]
    refused = [(r, took) for r, _, took in outcomes if r.output.startswith("rate limited: ")]
    assert ran and refused
    assert all(
        r.output.startswith("rate limited: 'ping' may run 20 times a second") for r, _ in refused
    )
    # None waits past its deadline. The policy decides at once: a call whose slot comes
    # after its deadline is refused, any other waits for its slot. A call whose slot came
    # just before its deadline can still be woken after it on a busy machine (the
    # scheduler's lateness, not the policy's): its deadline then ends it, without running
    # the tool. Such calls are few (at most a second's worth of slots); a policy that let
    # calls wait instead of refusing them would make hundreds.
    late = [
        (r, took)
        for r, _, took in outcomes
        if r.is_error and not r.output.startswith("rate limited")
    ]
    for result, _ in late:
        assert "timed out" in result.output or "cancelled while 'ping' waited" in result.output, (
            result.output
        )
    assert len(late) <= per_second, len(late)
    assert len(ran) + len(refused) + len(late) == 500
    # Every answer, refusal or result, comes by the deadline — give or take what 500
    # coroutines on one event loop of a busy 2-core machine take to be resumed (the suite
    # also runs under two workers while both cores are busy).
    scheduling = 1.0
    for _result, _begun, took in outcomes:
        assert took < budget_ms / 1000 + scheduling, took
    # no burst over the bucket: in any window, at most burst + rate x window calls started
    # (plus one slot of scheduling slack, for a wake-up that came late)
    started.sort()
    for i, first in enumerate(started):
        for window in (0.0, 0.1, 0.25, 0.5, 1.0):
            inside = sum(1 for t in started[i:] if t - first <= window)
            assert inside <= burst + per_second * window + 1, (window, inside)
    assert len(ran) <= burst + per_second * (started[-1] - started[0]) + 1


def test_a_sync_tool_waits_for_its_slot_on_its_worker_and_a_key_per_tenant() -> None:
    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant")
    policy = rate_limit(1, burst=1, key=lambda call: tenant.get(), wait=False)

    @tool
    def work() -> str:
        """Works."""
        return "done"

    with Host(Toolkit([work]), middleware=[policy]) as host:
        tenant.set("a")
        assert host.call("work").output == "done"
        second = host.call("work")
        tenant.set("b")
        other = host.call("work")
    assert second.output.startswith("rate limited: 'work' may run 1 times a second")
    assert "try again then" in second.output
    assert other.output == "done"  # another tenant's bucket


def test_a_wait_that_fits_the_budget_is_waited() -> None:
    @tool
    def work() -> str:
        """Works."""
        return "done"

    with Host(Toolkit([work]), middleware=[rate_limit(20, burst=1)], timeout_ms=5_000) as host:
        results = host.call_many([("work", {}), ("work", {}), ("work", {})])
    assert [r.output for r in results] == ["done"] * 3


def test_rate_limit_refuses_nonsense_at_once() -> None:
    with pytest.raises(InvalidValueError, match=r"rate_limit\(burst=...\) must be an int >= 1"):
        rate_limit(5, burst=0)
    with pytest.raises(InvalidValueError, match="must be 'tool', 'global' or a function"):
        rate_limit(5, key="user")


# --------------------------------------------------------------------------- retry


def flaky_tool(fail_times: int, exc: type[Exception] = ConnectionError, **hints: Any) -> Any:
    attempts: list[float] = []

    @tool(**hints)
    def fetch(ctx: ToolContext) -> str:
        """Fails a few times, then works."""
        attempts.append(time.monotonic())
        if len(attempts) <= fail_times:
            raise exc("connection reset")
        return f"fetched after {len(attempts)} attempt(s)"

    return fetch, attempts


def test_retry_runs_an_idempotent_tool_again_until_it_works() -> None:
    fetch, attempts = flaky_tool(2, idempotent=True)
    with Host(Toolkit([fetch]), middleware=[retry(3, backoff_ms=1)], timeout_ms=5_000) as host:
        assert host.call("fetch").output == "fetched after 3 attempt(s)"
    assert len(attempts) == 3


def test_retry_leaves_a_tool_not_declared_idempotent_alone() -> None:
    fetch, attempts = flaky_tool(1)
    with Host(Toolkit([fetch]), middleware=[retry(3, backoff_ms=1)]) as host:
        assert host.call("fetch").output == "connection reset"
    assert len(attempts) == 1


def test_retry_only_for_the_exceptions_the_caller_selects() -> None:
    fetch, attempts = flaky_tool(1, exc=ValueError, idempotent=True)
    policy = retry(3, backoff_ms=1, exceptions=ConnectionError)
    with Host(Toolkit([fetch]), middleware=[policy]) as host:
        assert host.call("fetch").output == "connection reset"
    assert len(attempts) == 1


def test_retry_of_error_results_the_caller_selects() -> None:
    answers = iter(["busy", "busy", "ok"])

    @tool(idempotent=True)
    def poll() -> ToolResult:
        """Busy twice."""
        text = next(answers)
        return ToolResult.error(text) if text == "busy" else ToolResult.ok(text)

    policy = retry(3, backoff_ms=1, when=lambda result: result.output == "busy")
    with Host(Toolkit([poll]), middleware=[policy]) as host:
        assert host.call("poll").output == "ok"


def test_a_retry_that_would_cross_the_deadline_does_not_start() -> None:
    fetch, attempts = flaky_tool(5, idempotent=True)
    policy = retry(5, backoff_ms=500, jitter=False)
    with Host(Toolkit([fetch]), middleware=[policy], timeout_ms=300) as host:
        begun = time.monotonic()
        result = host.call("fetch")
        took = time.monotonic() - begun
    assert result.output == "connection reset"  # the tool's own words, not a timeout
    assert len(attempts) == 1
    assert took < 0.3


def test_retry_never_runs_a_question_again() -> None:
    asked: list[int] = []

    @tool(idempotent=True)
    def confirm() -> ToolResult:
        """Asks."""
        asked.append(1)
        return ToolResult.pending(Request("approval", "Sure?"))

    with Host(Toolkit([confirm]), middleware=[retry(3, backoff_ms=1, when=lambda r: True)]) as h:
        assert h.call("confirm").is_pending
    assert asked == [1]


# --------------------------------------------------------------------------- cache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_a_cache_never_serves_another_tenants_entry() -> None:
    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant")
    runs: list[str] = []
    lock = threading.Lock()

    @tool(read_only=True)
    def balance(account: str) -> str:
        """The caller's balance."""
        with lock:
            runs.append(tenant.get())
        return f"{tenant.get()}:{account}"

    policy = cache(60_000, key=lambda call: tenant.get())
    mismatches: list[tuple[str, str]] = []

    def client(name: str) -> None:
        tenant.set(name)
        for _ in range(20):
            got = host.call("balance", {"account": "main"}).output
            if got != f"{name}:main":
                mismatches.append((name, got))

    with Host(Toolkit([balance]), middleware=[policy]) as host:
        threads = [threading.Thread(target=client, args=(f"t{i}",)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert mismatches == []
    assert sorted(set(runs)) == [f"t{i}" for i in range(8)]
    assert len(runs) < 8 * 20  # and it did cache


def test_a_cache_never_serves_a_stale_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolnexus._policies as policies

    clock = FakeClock()
    monkeypatch.setattr(policies, "time", clock)
    runs: list[int] = []

    @tool(read_only=True)
    def quote(symbol: str) -> str:
        """A price."""
        runs.append(1)
        return f"{symbol}={len(runs)}"

    with Host(Toolkit([quote]), middleware=[cache(1_000)]) as host:
        assert host.call("quote", {"symbol": "X"}).output == "X=1"
        clock.now += 0.999
        assert host.call("quote", {"symbol": "X"}).output == "X=1"
        clock.now += 0.001  # the entry is exactly ttl old: stale
        assert host.call("quote", {"symbol": "X"}).output == "X=2"


def test_a_cache_keys_on_canonical_arguments_and_keeps_no_errors_or_questions() -> None:
    runs: list[dict[str, Any]] = []

    @tool(read_only=True)
    def find(q: str, limit: int = 10) -> ToolResult:
        """Search."""
        runs.append({"q": q, "limit": limit})
        if q == "bad":
            return ToolResult.error("bad query")
        if q == "ask":
            return ToolResult.pending(Request("input", "Which?"))
        return ToolResult.ok(f"{q}:{limit}")

    with Host(Toolkit([find]), middleware=[cache()]) as host:
        host.call("find", '{"q": "a", "limit": 3}')
        host.call("find", '{"limit": 3, "q": "a"}')  # the same call, other key order
        for _ in range(2):
            assert host.call("find", {"q": "bad"}).is_error
            assert host.call("find", {"q": "ask"}).is_pending
    assert [r["q"] for r in runs] == ["a", "bad", "ask", "bad", "ask"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"b": 1, "a": [1.0, True, None, "\u00e9", "\ud800"]},
        {"x": {"z": 1, "y": {"d": [], "c": {}}}},
        {},
        {"big": 1e300, "small": -0.0, "n": 10**30},
        {"1": 1, "1.0": 1.0, "true": True},
    ],
    ids=["scalars", "nested", "empty", "numbers", "lookalikes"],
)
def test_a_cache_key_is_what_a_sorted_json_encoder_writes(arguments: dict[str, Any]) -> None:
    # The key is written by a C encoder kept between calls; it must be exactly what
    # JSONEncoder(sort_keys=True).encode writes, so 1, 1.0 and true never share a key.
    import json

    from toolnexus._policies import _canonical

    expected = json.JSONEncoder(
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode(arguments)
    assert _canonical(arguments) == expected


def test_arguments_json_cannot_carry_are_never_cached_and_still_run() -> None:
    from toolnexus._policies import _canonical

    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    for value in (cyclic, {"n": float("nan")}, {"s": {1, 2}}):
        with pytest.raises((RecursionError, ValueError, TypeError)):
            _canonical(value)

    runs: list[object] = []

    @tool(read_only=True)
    def echo(value: Any) -> str:
        """Echo."""
        runs.append(value)
        return "ok"

    with Host(Toolkit([echo]), middleware=[cache()]) as host:
        for _ in range(2):  # keyed before its check, refused by it: never an exception
            refused = host.call("echo", {"value": cyclic})
            assert refused.is_error and "nested too deeply" in refused.output
        for _ in range(2):
            assert host.call("echo", {"value": float("nan")}).output == "ok"
    assert len(runs) == 2  # NaN ran both times: never cached


def test_a_cache_key_function_sees_the_call_before_the_worker_hand_off() -> None:
    # A hit is answered on the caller's thread; the key function still gets the
    # ToolCall, with the arguments and the call's budget.
    seen: list[tuple[str, dict[str, Any], int | None, bool]] = []
    runs: list[int] = []

    @tool(read_only=True)
    def square(n: int) -> int:
        """Square."""
        runs.append(n)
        return n * n

    def key(call: Any) -> str:
        seen.append(
            (call.name, dict(call.arguments), call.context.timeout_ms, call.deadline is not None)
        )
        return "tenant"

    with Host(Toolkit([square]), middleware=[cache(key=key)]) as host:
        for _ in range(3):
            assert host.call("square", {"n": 4}, timeout_ms=5_000).output == "16"
    assert runs == [4]
    # (the first call asks twice: before the hand-off, a miss, then in the chain)
    assert len(seen) >= 3 and all(s == ("square", {"n": 4}, 5_000, True) for s in seen)


def test_a_cache_leaves_tools_not_declared_read_only_alone_and_bounds_its_size() -> None:
    runs: list[int] = []

    @tool
    def write(n: int) -> str:
        """Writes."""
        runs.append(n)
        return "ok"

    @tool(read_only=True)
    def read(n: int) -> str:
        """Reads."""
        runs.append(n)
        return str(n)

    policy = cache(max_entries=2)
    with Host(Toolkit([write, read]), middleware=[policy]) as host:
        host.call("write", {"n": 0})
        host.call("write", {"n": 0})
        for n in (1, 2, 3, 1):  # 1 was the least recently used when 3 came: dropped
            host.call("read", {"n": n})
    assert runs == [0, 0, 1, 2, 3, 1]


# --------------------------------------------------------------------------- before a worker


def _held_host(policy: Any) -> tuple[Host, threading.Event, list[int]]:
    """A host with one worker, ``policy`` first in its chain, a read-only ``look`` (its
    runs counted) and a ``hold`` that keeps the worker until the event is set."""
    release, started = threading.Event(), threading.Event()
    runs: list[int] = []

    @tool
    def hold() -> str:
        """Holds the only worker."""
        started.set()
        release.wait(60)
        return "held"

    @tool(read_only=True)
    def look(n: int) -> str:
        """Reads."""
        runs.append(n)
        return f"seen {n}"

    # tracing=False: with a tracer provider set (by another test in this process), the
    # chain runs whole under the call's span, on the worker.
    host = Host(Toolkit([hold, look]), max_workers=1, middleware=[policy], tracing=False)
    assert host.call("look", {"n": 1}).output == "seen 1"
    host.submit("hold")
    assert started.wait(60)
    return host, release, runs


def test_a_cache_hit_answers_while_every_worker_is_busy() -> None:
    host, release, runs = _held_host(cache())
    try:
        # Answered on the caller's thread: with the one worker held, a call that needed
        # a worker would wait (here: past its budget).
        hit = host.call("look", {"n": 1}, timeout_ms=2_000)
        assert (hit.is_error, hit.output) == (False, "seen 1")
        assert runs == [1]
    finally:
        release.set()
        host.close()


def test_a_reached_call_limit_refuses_while_every_worker_is_busy() -> None:
    host, release, runs = _held_host(call_limit(1, per="tool"))
    try:
        refused = host.call("look", {"n": 2}, timeout_ms=2_000)
        assert refused.is_error and refused.output.startswith("call limit reached"), refused
        assert runs == [1]
    finally:
        release.set()
        host.close()


def _pass(call: Any, call_next: Any) -> ToolResult:
    return call_next(call)


@pytest.mark.parametrize(
    "make", [lambda: cache(), lambda: call_limit(2, per="tool")], ids=["cache", "call_limit"]
)
def test_a_policy_answering_before_the_worker_answers_as_it_does_in_the_chain(make: Any) -> None:
    # First in the chain, it answers before the hand-off; behind another middleware it
    # answers inside the chain, on the worker. The answers and the runs are the same.
    seen: dict[str, tuple[list[tuple[bool, str]], list[int]]] = {}
    for where, middleware in (("first", [make()]), ("in the chain", [_pass, make()])):
        runs: list[int] = []

        @tool(read_only=True)
        def look(n: int, runs: list[int] = runs) -> str:
            """Reads."""
            runs.append(n)
            return f"seen {n}"

        with Host(Toolkit([look]), middleware=middleware, tracing=False) as host:
            results = [host.call("look", {"n": n}) for n in (1, 1, 2, 1, 3)]
        seen[where] = ([(r.is_error, r.output) for r in results], runs)
    assert seen["first"] == seen["in the chain"]


# --------------------------------------------------------------------------- require_approval


def deploy_tool() -> Any:
    runs: list[dict[str, Any]] = []

    @tool
    def deploy(env: str) -> str:
        """Deploys."""
        runs.append({"env": env})
        return f"deployed to {env}"

    return deploy, runs


def test_a_model_calling_a_tool_that_needs_approval_100_times_gets_100_questions_0_runs() -> None:
    deploy, runs = deploy_tool()
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "deploy", "arguments": f'{{"env": "e{i}"}}'},
        }
        for i in range(100)
    ]
    with Host(Toolkit([deploy]), middleware=[require_approval(["deploy"])]) as host:
        turn = host.run_turn(calls)
        pending = [c for c in turn.calls if c.result.is_pending]
        assert len(pending) == 100 and runs == []
        ids = {ToolResult.pending_of(c.result).id for c in pending}  # type: ignore[union-attr]
        assert len(ids) == 100
        request = ToolResult.pending_of(pending[7].result)
        assert request is not None and request.kind == "approval"
        assert request.data == {"tool": "deploy", "arguments": {"env": "e7"}}
        # Answered: that one call runs, once.
        done = host.resume("deploy", {"env": "e7"}, pending[7].result, Answer.accept(request))
        assert done.output == "deployed to e7" and runs == [{"env": "e7"}]
        again = host.resume("deploy", {"env": "e7"}, pending[7].result, Answer.accept(request))
        assert again.is_error and "already answered" in again.output
        # The answer is bound to its call: not to another call's arguments.
        other = host.resume("deploy", {"env": "e8"}, pending[7].result, Answer.accept(request))
        assert other.is_error and runs == [{"env": "e7"}]
        # A made-up approval with the policy's id shape, for a call never asked: refused.
        forged = Request("approval", "Allow?", id="approval-" + "0" * 32)
        assert host.resume("deploy", {"env": "e9"}, forged, Answer.accept(forged)).is_error
    assert runs == [{"env": "e7"}]


def test_approval_with_wait_for_runs_on_yes_and_never_on_no() -> None:
    deploy, runs = deploy_tool()
    verdicts = iter([True, False])
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        if next(verdicts):
            return Answer.accept(request, {"approved": True})
        return Answer.decline(request)

    policy = require_approval("deploy", when=lambda args: args["env"] == "prod")
    with Host(Toolkit([deploy]), middleware=[policy], wait_for=wait_for) as host:
        assert host.call("deploy", {"env": "dev"}).output == "deployed to dev"  # no rule
        assert host.call("deploy", {"env": "prod"}).output == "deployed to prod"
        declined = host.call("deploy", {"env": "prod"})
    assert declined.output.startswith("declined/expired: Allow 'deploy' to run with")
    assert runs == [{"env": "dev"}, {"env": "prod"}] and len(asked) == 2


def test_an_approved_tools_own_question_keeps_the_approval() -> None:
    runs: list[str] = []

    @tool
    def migrate(ctx: ToolContext) -> str:
        """Asks which database, then migrates it."""
        if ctx.answer is None:
            return ToolResult.pending(Request("input", "Which database?"))  # type: ignore[return-value]
        runs.append(str(ctx.answer.data))
        return f"migrated {ctx.answer.data}"

    answers: list[str] = []

    def wait_for(request: Request) -> Answer:
        answers.append(request.kind)
        if request.kind == "approval":
            return Answer.accept(request)
        return Answer.accept(request, {"db": "main"})

    with Host(
        Toolkit([migrate]), middleware=[require_approval()], wait_for=wait_for, max_rounds=2
    ) as host:
        assert host.call("migrate").output == "migrated {'db': 'main'}"
    assert answers == ["approval", "input"] and len(runs) == 1


def test_approval_holds_in_an_async_chain_too() -> None:
    ran: list[int] = []

    @tool
    async def launch() -> str:
        """Launches."""
        ran.append(1)
        return "launched"

    async def main() -> ToolResult:
        with Host(Toolkit([launch]), middleware=[require_approval()]) as host:
            return await host.acall("launch")

    assert asyncio.run(main()).is_pending and ran == []


# --------------------------------------------------------------------------- call_limit


def test_call_limit_per_turn_refuses_the_calls_beyond_with_its_message() -> None:
    runs: list[int] = []

    @tool
    def step(n: int) -> str:
        """A step."""
        runs.append(n)
        return f"step {n}"

    calls = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "step", "arguments": f'{{"n": {i}}}'},
        }
        for i in range(5)
    ]
    with Host(Toolkit([step]), middleware=[call_limit(3)]) as host:
        turn = host.run_turn(calls)
        again = host.run_turn(calls[:1])
        outside = [host.call("step", {"n": 9}) for _ in range(5)]
    refused = [c.result.output for c in turn.calls if c.result.is_error]
    assert len(runs) == 3 + 1 + 5 and len(refused) == 2
    assert refused[0].startswith(
        "call limit reached: at most 3 call(s) per turn; 'step' was not run"
    )
    assert again.calls[0].result.output == "step 0"
    assert not any(r.is_error for r in outside)


def test_call_limit_per_tool_and_per_run() -> None:
    @tool
    def a() -> str:
        """A."""
        return "a"

    @tool
    def b() -> str:
        """B."""
        return "b"

    per_tool = call_limit(1, per="tool", message="no more {tool} (limit {limit})")
    per_run = call_limit(3, per="run")
    with Host(Toolkit([a, b]), middleware=[per_tool]) as host:
        assert [host.call(n).output for n in "aabb"] == [
            "a",
            "no more a (limit 1)",
            "b",
            "no more b (limit 1)",
        ]
    with Host(Toolkit([a, b]), middleware=[per_run]) as host:
        outputs = [host.call(n).output for n in "abab"]
        assert outputs[:3] == ["a", "b", "a"] and outputs[3].startswith("call limit reached")
        per_run.reset()  # type: ignore[attr-defined]
        assert host.call("b").output == "b"


# --------------------------------------------------------------------------- redact


def test_redact_masks_fields_in_structured_output_and_the_text_that_shows_it() -> None:
    @tool
    def user(name: str) -> dict[str, Any]:
        """A user record."""
        return {"name": name, "password": "hunter2", "nested": [{"token": "abc", "ok": 1}]}

    with Host(Toolkit([user]), middleware=[redact(["password", "token"])]) as host:
        result = host.call("user", {"name": "ann"})
    assert "hunter2" not in result.output and "abc" not in result.output
    assert result.metadata["structuredContent"] == {
        "name": "ann",
        "password": "[redacted]",
        "nested": [{"token": "[redacted]", "ok": 1}],
    }


def test_redact_strips_fields_and_patterns_from_text_and_errors_but_not_questions() -> None:
    @tool
    def leak(kind: str) -> ToolResult:
        """Leaks a key."""
        if kind == "error":
            return ToolResult.error("auth failed for key sk-live-123")
        if kind == "ask":
            return ToolResult.pending(Request("input", "paste sk-live-123?"))
        return ToolResult.ok('{"user": "ann", "secret": "x"}')

    policy = redact(["secret"], patterns=[r"sk-[\w-]+"], mask=None)
    with Host(Toolkit([leak]), middleware=[policy]) as host:
        assert host.call("leak", {"kind": "ok"}).output == '{"user":"ann"}'
        assert host.call("leak", {"kind": "error"}).output == "auth failed for key "
        assert host.call("leak", {"kind": "ask"}).output == "paste sk-live-123?"


def test_two_approval_rules_each_ask_once_and_the_tool_runs_once_both_said_yes() -> None:
    deploy, runs = deploy_tool()
    asked: list[str] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request.prompt)
        return Answer.accept(request)

    outer = require_approval("deploy", when=lambda args: args["env"] == "prod", prompt="outer?")
    inner = require_approval("deploy", prompt="inner?")
    for rules, expected in (
        ([outer, inner], ["outer?", "inner?"]),
        ([inner, outer], ["inner?", "outer?"]),
    ):
        asked.clear()
        with Host(Toolkit([deploy]), middleware=rules, wait_for=wait_for, max_rounds=2) as host:
            assert host.call("deploy", {"env": "prod"}).output == "deployed to prod"
            assert asked == expected
        asked.clear()
        with Host(Toolkit([deploy]), middleware=rules, wait_for=wait_for, max_rounds=2) as host:
            assert host.call("deploy", {"env": "dev"}).output == "deployed to dev"
            assert asked == ["inner?"]  # the outer rule does not match: one question
    assert len(runs) == 4


# --------------------------------------------------------------------------- issue 36


def test_approval_when_judges_the_arguments_with_their_defaults_filled_in() -> None:
    runs: list[str] = []

    @tool
    def deploy(env: str = "prod") -> str:
        """Deploys."""
        runs.append(env)
        return f"deployed to {env}"

    def drop_table(args: dict[str, Any]) -> str:
        runs.append(f"drop {args['table']}")
        return "dropped"

    contract = Tool(
        "drop",
        "Drops a table.",
        {
            "type": "object",
            "properties": {"table": {"type": "string"}, "cascade": {"default": True}},
            "required": ["table"],
        },
        drop_table,
    )
    seen: list[dict[str, Any]] = []

    def risky(args: Any) -> bool:
        seen.append(dict(args))
        return args.get("env") == "prod" or args.get("cascade") is True

    gate = require_approval(["deploy", "drop"], when=risky)
    with Host(Toolkit([deploy, contract]), middleware=[gate]) as host:
        left_out = host.call("deploy", {})  # the default is prod: it needs the approval
        assert left_out.is_pending and runs == []
        request = ToolResult.pending_of(left_out)
        assert request is not None and '"env": "prod"' in request.prompt
        assert host.call("drop", {"table": "t"}).is_pending and runs == []
        assert host.call("deploy", {"env": "staging"}).output == "deployed to staging"
    assert seen[:2] == [{"env": "prod"}, {"table": "t", "cascade": True}]
    assert runs == ["staging"]


def test_a_cache_without_a_key_never_serves_one_principals_entry_to_another() -> None:
    from toolnexus import Principal
    from toolnexus._context import bound_principal  # where a serving driver binds it

    runs: list[str | None] = []

    @tool(read_only=True)
    def inbox(ctx: ToolContext) -> str:
        """The caller's mail."""
        who = ctx.principal.subject if ctx.principal else None
        runs.append(who)
        return f"mail of {who}"

    def as_(principal: Principal | None) -> str:
        got: list[str] = []

        def call() -> None:
            bound_principal.set(principal)
            got.append(host.call("inbox").output)

        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
        return got[0]

    alice, bob = Principal("alice", scopes="mail"), Principal("bob", scopes="mail")
    with Host(Toolkit([inbox]), middleware=[cache()]) as host:
        assert as_(alice) == "mail of alice"
        assert as_(bob) == "mail of bob"  # not alice's entry
        assert as_(alice) == "mail of alice"
        assert as_(Principal("alice", scopes="mail", client_id="other")) == "mail of alice"
        assert as_(None) == "mail of None"
    assert runs == ["alice", "bob", "alice", None]  # alice's second call was served


class _LatePause(CancellationToken):
    """A token whose waits end late: each moves the fake clock on by ``late`` seconds."""

    __slots__ = ()

    clock: FakeClock
    late = 0.0

    def wait(self, timeout: float | None = None) -> bool:
        _LatePause.clock.now += _LatePause.late
        return False

    async def wait_async(self, timeout: float | None = None) -> bool:
        return self.wait(timeout)


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_retry_whose_pause_ended_late_does_not_start_an_attempt_that_cannot_finish(
    form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolnexus._policies as policies
    from toolnexus.policies import ToolCall

    clock = FakeClock()
    monkeypatch.setattr(policies, "time", clock)
    monkeypatch.setattr(_LatePause, "clock", clock, raising=False)
    monkeypatch.setattr(_LatePause, "late", 0.92)  # the 100 ms pause took 920 ms
    attempts: list[float] = []

    @tool(idempotent=True)
    def fetch() -> str:
        """Unused: the test's call_next stands for it."""
        return ""

    def call_next(call: ToolCall) -> ToolResult:
        attempts.append(clock.now)
        clock.now += 0.05  # an attempt takes 50 ms
        return ToolResult.error("upstream 503")

    async def acall_next(call: ToolCall) -> ToolResult:
        return call_next(call)

    policy = retry(3, backoff_ms=100, jitter=False, when=lambda result: True)
    context = ToolContext(1_000, _LatePause(CancellationTokenSource().token._state))
    call = ToolCall(fetch, {}, context, deadline=clock.now + 1.0)
    if form == "sync":
        result = policy(call, call_next)
    else:
        result = asyncio.run(policy.acall(call, acall_next))
    # Before the pause, 100 ms + 50 ms fit in the 950 ms left; after it, 30 ms left:
    # the second attempt could not finish, so it never starts and the tool's error stands.
    assert result.output == "upstream 503"
    assert len(attempts) == 1


def test_redact_reaches_text_parts_and_json_parts_too() -> None:
    import base64

    @tool
    def export() -> ToolResult:
        """Exports a user."""
        record = b'{"user": "ann", "password": "hunter2", "note": "key sk-live-1"}'
        return ToolResult.ok(
            "exported",
            parts=[
                Part.from_text('{"password": "hunter2"}'),
                Part.from_text("your key is sk-live-2"),
                Part.file(record, "application/json", name="user.json"),
                Part.file(b"a,sk-live-3\n", "text/csv"),
                Part.image(b"GIF89a sk-live-4", "image/gif"),
            ],
        )

    policy = redact(["password"], patterns=[r"sk-[\w-]+"])
    with Host(Toolkit([export]), middleware=[policy]) as host:
        result = host.call("export")
    text_json, text, json_file, csv, image = result.parts
    assert text_json.text == '{"password":"[redacted]"}'
    assert text.text == "your key is [redacted]"
    assert base64.b64decode(json_file.data or "") == (
        b'{"user":"ann","password":"[redacted]","note":"key [redacted]"}'
    )
    assert json_file.name == "user.json" and json_file.mime_type == "application/json"
    assert base64.b64decode(csv.data or "") == b"a,[redacted]\n"
    assert image.to_bytes() == b"GIF89a sk-live-4"  # media is kept as it is
