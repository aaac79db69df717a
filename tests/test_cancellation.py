"""Cancellation: sources cancel, tokens observe, callbacks run exactly once, timers share a thread.

No test sleeps: waits are on events with generous upper bounds (WAIT seconds), and "a timer
did not fire" is shown by waiting for a later timer on the same single timer thread.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest

from doctests import run_doctests
from toolnexus import (
    CancellationToken,
    CancellationTokenRegistration,
    CancellationTokenSource,
    OperationCancelledError,
    ToolnexusError,
)

WAIT = 10.0  # upper bound for anything that should happen "promptly"


def later_timer_fired(seconds: float = 0.05) -> bool:
    """Wait until a fresh timer `seconds` from now has fired.

    Timers fire in deadline order on one thread, so once it has fired every earlier
    deadline has had its turn: a timer that should have been stopped would have fired.
    """
    clock = CancellationTokenSource()
    clock.cancel_after(seconds)
    return clock.token.wait(WAIT)


# --- sources and tokens -------------------------------------------------------------------


def test_a_new_source_and_its_token_are_live():
    source = CancellationTokenSource()
    assert not source.is_cancellation_requested
    assert not source.token.is_cancellation_requested
    assert source.token.can_be_cancelled


def test_cancel_is_seen_by_the_token_and_is_sticky():
    source = CancellationTokenSource()
    token = source.token
    source.cancel()
    assert source.is_cancellation_requested
    assert token.is_cancellation_requested
    source.cancel()  # idempotent
    assert token.is_cancellation_requested


def test_a_token_is_observe_only():
    token = CancellationTokenSource().token
    assert not hasattr(token, "cancel")
    assert not hasattr(token, "cancel_after")


def test_every_token_of_one_source_is_equal_and_hashes_alike():
    source = CancellationTokenSource()
    assert source.token == source.token
    assert hash(source.token) == hash(source.token)
    assert source.token != CancellationTokenSource().token
    assert source.token != "token"


def test_none_token_is_never_cancelled_and_cannot_be():
    none = CancellationToken.NONE
    assert not none.is_cancellation_requested
    assert not none.can_be_cancelled
    assert none.wait(0) is False
    none.raise_if_cancellation_requested()


def test_a_token_built_without_a_source_is_the_none_token():
    assert CancellationToken() == CancellationToken.NONE
    assert not CancellationToken().can_be_cancelled


def test_registering_on_the_none_token_never_runs_the_callback():
    ran = []
    registration = CancellationToken.NONE.register(lambda: ran.append(1))
    assert ran == []
    assert registration.unregister() is False
    assert repr(registration) == "<CancellationTokenRegistration inactive>"


# --- wait ---------------------------------------------------------------------------------


def test_wait_returns_false_on_timeout_and_true_once_cancelled():
    source = CancellationTokenSource()
    assert source.token.wait(0) is False
    assert source.token.wait(0.01) is False
    source.cancel()
    assert source.token.wait(0) is True
    assert source.token.wait() is True


def test_a_cancel_from_another_thread_wakes_a_blocked_wait():
    source = CancellationTokenSource()
    waiting = threading.Event()
    outcome: list[bool] = []

    def waiter() -> None:
        waiting.set()
        outcome.append(source.token.wait(timeout=WAIT * 3))

    thread = threading.Thread(target=waiter)
    thread.start()
    assert waiting.wait(WAIT)
    threading.Thread(target=source.cancel).start()
    thread.join(WAIT)
    # Joined well before the waiter's own timeout, and woken by the cancel (True), not by it.
    assert not thread.is_alive()
    assert outcome == [True]


def test_many_waiters_are_all_woken_by_one_cancel():
    source = CancellationTokenSource()
    results: list[bool] = []
    lock = threading.Lock()

    def waiter() -> None:
        woke = source.token.wait(WAIT * 3)
        with lock:
            results.append(woke)

    threads = [threading.Thread(target=waiter) for _ in range(20)]
    for thread in threads:
        thread.start()
    source.cancel()
    for thread in threads:
        thread.join(WAIT)
    assert results == [True] * 20


# --- register -----------------------------------------------------------------------------


def test_a_callback_runs_once_on_cancel():
    source = CancellationTokenSource()
    calls = []
    source.token.register(lambda: calls.append("ran"))
    assert calls == []
    source.cancel()
    source.cancel()
    assert calls == ["ran"]


def test_callbacks_run_on_the_cancelling_thread_before_cancel_returns():
    source = CancellationTokenSource()
    events: list[tuple[str, int]] = []
    source.token.register(lambda: events.append(("callback", threading.get_ident())))

    def canceller() -> None:
        source.cancel()
        events.append(("cancel returned", threading.get_ident()))

    thread = threading.Thread(target=canceller)
    thread.start()
    thread.join(WAIT)
    assert [name for name, _ in events] == ["callback", "cancel returned"]
    assert events[0][1] == events[1][1] == thread.ident
    assert thread.ident != threading.get_ident()


def test_callbacks_run_in_registration_order():
    source = CancellationTokenSource()
    order: list[int] = []
    for index in range(5):
        source.token.register(lambda index=index: order.append(index))
    source.cancel()
    assert order == [0, 1, 2, 3, 4]


def test_callback_registered_after_cancel_runs_immediately_inside_register():
    source = CancellationTokenSource()
    source.cancel()
    calls: list[int] = []
    registration = source.token.register(lambda: calls.append(threading.get_ident()))
    assert calls == [threading.get_ident()]  # already ran, on this thread, before returning
    assert registration.unregister() is False


def test_a_failing_callback_is_logged_and_does_not_stop_the_others(caplog):
    source = CancellationTokenSource()
    calls: list[str] = []

    def broken() -> None:
        raise RuntimeError("callback exploded")

    source.token.register(lambda: calls.append("first"))
    source.token.register(broken)
    source.token.register(lambda: calls.append("third"))
    with caplog.at_level(logging.ERROR, logger="toolnexus"):
        source.cancel()  # does not raise
    assert calls == ["first", "third"]
    failures = [r for r in caplog.records if r.name == "toolnexus"]
    assert len(failures) == 1
    assert failures[0].exc_info is not None
    assert "callback exploded" in str(failures[0].exc_info[1])


def test_a_failing_callback_registered_after_cancel_does_not_raise_out_of_register(caplog):
    source = CancellationTokenSource()
    source.cancel()

    def broken() -> None:
        raise ValueError("late and broken")

    with caplog.at_level(logging.ERROR, logger="toolnexus"):
        source.token.register(broken)
    assert any("late and broken" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_unregister_before_cancel_stops_the_callback():
    source = CancellationTokenSource()
    calls: list[str] = []
    registration = source.token.register(lambda: calls.append("ran"))
    assert repr(registration) == "<CancellationTokenRegistration active>"
    assert registration.unregister() is True
    assert registration.unregister() is False  # second time: nothing left to remove
    assert repr(registration) == "<CancellationTokenRegistration inactive>"
    source.cancel()
    assert calls == []


def test_unregister_after_the_callback_ran_returns_false():
    source = CancellationTokenSource()
    calls: list[str] = []
    registration = source.token.register(lambda: calls.append("ran"))
    source.cancel()
    assert registration.unregister() is False
    assert calls == ["ran"]


def test_a_registration_used_as_a_context_manager_unregisters_on_exit():
    source = CancellationTokenSource()
    calls: list[str] = []
    with source.token.register(lambda: calls.append("ran")) as registration:
        assert isinstance(registration, CancellationTokenRegistration)
    source.cancel()
    assert calls == []


def test_register_refuses_a_non_callable():
    with pytest.raises(TypeError, match="callback must be callable"):
        CancellationTokenSource().token.register("not callable")  # type: ignore[arg-type]


def test_a_callback_may_cancel_again_and_register_more_without_deadlock():
    source = CancellationTokenSource()
    calls: list[str] = []

    def reentrant() -> None:
        source.cancel()
        source.token.register(lambda: calls.append("registered from a callback"))

    source.token.register(reentrant)
    thread = threading.Thread(target=source.cancel)
    thread.start()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert calls == ["registered from a callback"]


def run_together(*actions: Callable[[], object]) -> None:
    """Start every action on its own thread at the same moment; wait for all of them."""
    start = threading.Barrier(len(actions))

    def run(action: Callable[[], object]) -> None:
        start.wait(WAIT)
        action()

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()


def register_cancel_round(registrars: int, per_registrar: int) -> list[int]:
    """Race `registrars` threads registering callbacks against two cancelling threads.

    The cancellers wait until registering has begun, so the cancel lands in the middle of
    the registrations rather than before all of them.
    """
    source = CancellationTokenSource()
    counts = [0] * (registrars * per_registrar)
    lock = threading.Lock()
    registering = threading.Event()

    def bump(slot: int) -> None:
        with lock:
            counts[slot] += 1

    def registrar(first: int) -> None:
        for slot in range(first, first + per_registrar):
            source.token.register(lambda slot=slot: bump(slot))
            registering.set()

    def canceller() -> None:
        registering.wait(WAIT)
        source.cancel()

    run_together(
        *(lambda i=i: registrar(i * per_registrar) for i in range(registrars)),
        canceller,
        canceller,
    )
    return counts


def test_register_and_cancel_races_run_each_callback_exactly_once():
    for _ in range(300):
        assert register_cancel_round(registrars=3, per_registrar=20) == [1] * 60


def unregister_cancel_round() -> tuple[list[bool], list[int]]:
    source = CancellationTokenSource()
    ran: list[int] = []
    registration = source.token.register(lambda: ran.append(1))
    removed: list[bool] = []
    run_together(lambda: removed.append(registration.unregister()), source.cancel)
    return removed, ran


def test_unregister_racing_cancel_never_runs_a_callback_it_removed():
    for _ in range(300):
        removed, ran = unregister_cancel_round()
        # Exactly one side wins: removed before it ran, or ran and could not be removed.
        assert (removed, ran) in (([True], []), ([False], [1]))


# --- raise_if_cancellation_requested -------------------------------------------------------


def test_raise_if_cancellation_requested_is_silent_while_live():
    CancellationTokenSource().token.raise_if_cancellation_requested()


def test_raise_if_cancellation_requested_raises_operation_cancelled_error():
    source = CancellationTokenSource()
    source.cancel()
    with pytest.raises(OperationCancelledError, match="cancelled") as caught:
        source.token.raise_if_cancellation_requested()
    assert isinstance(caught.value, ToolnexusError)


# --- cancel_after and the timer thread -----------------------------------------------------


def test_cancel_after_cancels_the_token_later():
    source = CancellationTokenSource()
    source.cancel_after(0.01)
    assert source.token.wait(WAIT) is True
    assert source.is_cancellation_requested


def test_cancel_after_zero_cancels_at_once():
    source = CancellationTokenSource()
    calls: list[int] = []
    source.token.register(lambda: calls.append(threading.get_ident()))
    source.cancel_after(0)
    assert source.is_cancellation_requested
    assert calls == [threading.get_ident()]


def test_cancel_after_runs_callbacks_on_a_dispatcher_never_on_the_timer_thread():
    source = CancellationTokenSource()
    names: list[str] = []
    ran = threading.Event()

    def record() -> None:
        names.append(threading.current_thread().name)
        ran.set()

    source.token.register(record)
    source.cancel_after(0.01)
    assert ran.wait(WAIT)
    assert len(names) == 1 and names[0].startswith("toolnexus-dispatch")


def test_a_slow_cancel_after_callback_does_not_delay_another_timer():
    slow, quick = CancellationTokenSource(), CancellationTokenSource()
    release = threading.Event()
    slow_started = threading.Event()

    def stall() -> None:
        slow_started.set()
        release.wait(WAIT)

    slow.token.register(stall)
    slow.cancel_after(0.001)
    assert slow_started.wait(WAIT)
    quick.cancel_after(0.01)
    try:
        assert quick.token.wait(WAIT)  # fired while the slow callback still runs
        assert not release.is_set()
    finally:
        release.set()


def test_closed_long_timers_leave_the_heap():
    from toolnexus import _timers

    sources = [CancellationTokenSource() for _ in range(2000)]
    for source in sources:
        source.cancel_after(3600)
    for source in sources:
        source.close()
    assert len(_timers._wheel._heap) < 1000  # rebuilt without the cancelled entries


def test_a_later_cancel_after_replaces_an_earlier_one():
    source = CancellationTokenSource()
    source.cancel_after(0.01)
    source.cancel_after(3600)
    assert later_timer_fired()
    assert not source.is_cancellation_requested
    source.close()


@pytest.mark.parametrize("seconds", [-1, -0.5, float("nan"), True, "1", None])
def test_cancel_after_refuses_what_is_not_a_non_negative_number(seconds):
    with pytest.raises(ValueError, match="seconds must be a number >= 0"):
        CancellationTokenSource().cancel_after(seconds)


def test_cancel_after_on_a_cancelled_source_does_nothing():
    source = CancellationTokenSource()
    source.cancel()
    source.cancel_after(0.01)
    assert repr(source) == "<CancellationTokenSource cancelled>"


def test_an_endless_cancel_after_does_not_stop_other_timers():
    forever = CancellationTokenSource()
    forever.cancel_after(float("inf"))
    huge = CancellationTokenSource()
    huge.cancel_after(1e300)
    assert later_timer_fired(0.01)
    assert not forever.is_cancellation_requested
    forever.close()
    huge.close()


def test_leaving_the_with_block_stops_pending_timers_without_cancelling():
    with CancellationTokenSource() as source:
        source.cancel_after(0.01)
        assert "timer pending" in repr(source)
    assert repr(source) == "<CancellationTokenSource live>"
    assert later_timer_fired()
    assert not source.is_cancellation_requested


def test_a_cancel_inside_the_with_block_stays_cancelled_after_it():
    with CancellationTokenSource() as source:
        source.cancel()
    assert source.token.is_cancellation_requested


def test_cancel_stops_a_pending_timer():
    source = CancellationTokenSource()
    source.cancel_after(3600)
    source.cancel()
    assert repr(source) == "<CancellationTokenSource cancelled>"


def test_importing_starts_no_thread_and_all_timers_share_one():
    code = (
        "import threading, toolnexus\n"
        "print(threading.active_count())\n"
        "sources = [toolnexus.CancellationTokenSource() for _ in range(100)]\n"
        "for s in sources: s.cancel_after(3600)\n"
        "print(threading.active_count())\n"
        "print(sorted(t.name for t in threading.enumerate() if t.daemon))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split("\n")[:3] == ["1", "2", "['toolnexus-timer']"]


# --- linked sources ------------------------------------------------------------------------


def test_a_linked_source_is_cancelled_when_any_parent_is():
    first, second = CancellationTokenSource(), CancellationTokenSource()
    linked = CancellationTokenSource.linked(first.token, second.token)
    assert not linked.is_cancellation_requested
    second.cancel()
    assert linked.is_cancellation_requested
    assert linked.token.is_cancellation_requested
    assert not first.is_cancellation_requested


def test_cancelling_a_linked_source_leaves_its_parents_alone():
    parent = CancellationTokenSource()
    linked = CancellationTokenSource.linked(parent.token)
    linked.cancel()
    assert linked.is_cancellation_requested
    assert not parent.is_cancellation_requested


def test_a_source_linked_to_a_cancelled_parent_starts_cancelled():
    parent = CancellationTokenSource()
    parent.cancel()
    live = CancellationTokenSource()
    linked = CancellationTokenSource.linked(live.token, parent.token)
    assert linked.is_cancellation_requested
    assert not live.is_cancellation_requested


def test_a_linked_source_runs_its_callbacks_when_a_parent_cancels():
    parent = CancellationTokenSource()
    linked = CancellationTokenSource.linked(parent.token)
    calls: list[str] = []
    linked.token.register(lambda: calls.append("child callback"))
    parent.cancel()
    assert calls == ["child callback"]


def test_a_parent_timer_cancels_the_linked_source():
    parent = CancellationTokenSource()
    linked = CancellationTokenSource.linked(parent.token)
    parent.cancel_after(0.01)
    assert linked.token.wait(WAIT) is True


def test_links_chain_through_generations():
    root = CancellationTokenSource()
    child = CancellationTokenSource.linked(root.token)
    grandchild = CancellationTokenSource.linked(child.token)
    root.cancel()
    assert grandchild.is_cancellation_requested


def test_a_linked_source_can_have_its_own_timer():
    parent = CancellationTokenSource()
    linked = CancellationTokenSource.linked(parent.token)
    linked.cancel_after(0.01)
    assert linked.token.wait(WAIT)
    assert not parent.is_cancellation_requested


def test_linking_to_the_none_token_or_nothing_gives_a_plain_source():
    for linked in (
        CancellationTokenSource.linked(CancellationToken.NONE),
        CancellationTokenSource.linked(),
    ):
        assert linked.token.can_be_cancelled
        assert not linked.is_cancellation_requested
        linked.cancel()
        assert linked.is_cancellation_requested


def test_a_closed_linked_source_no_longer_follows_its_parent():
    parent = CancellationTokenSource()
    with CancellationTokenSource.linked(parent.token) as linked:
        pass
    parent.cancel()
    assert not linked.is_cancellation_requested


def test_linked_refuses_a_source_where_a_token_belongs():
    source = CancellationTokenSource()
    with pytest.raises(TypeError, match=r"argument 1 is CancellationTokenSource"):
        CancellationTokenSource.linked(CancellationToken.NONE, source)  # type: ignore[arg-type]


def linked_cancel_round() -> list[int]:
    first, second = CancellationTokenSource(), CancellationTokenSource()
    linked = CancellationTokenSource.linked(first.token, second.token)
    calls: list[int] = []
    linked.token.register(lambda: calls.append(1))
    run_together(first.cancel, second.cancel, linked.cancel)
    return calls


def test_linked_cancel_races_run_each_child_callback_exactly_once():
    for _ in range(200):
        assert linked_cancel_round() == [1]


# --- asyncio -------------------------------------------------------------------------------


def test_wait_async_does_not_block_the_event_loop():
    async def main() -> tuple[int, bool]:
        source = CancellationTokenSource()
        waiter = asyncio.ensure_future(source.token.wait_async())
        ticks = 0
        while ticks < 100:  # other work keeps running while the waiter waits
            await asyncio.sleep(0)
            assert not waiter.done()
            ticks += 1
        threading.Thread(target=source.cancel).start()
        return ticks, await asyncio.wait_for(waiter, WAIT)

    assert asyncio.run(main()) == (100, True)


def test_wait_async_is_woken_by_a_cancel_on_the_loop_thread():
    async def main() -> bool:
        source = CancellationTokenSource()
        asyncio.get_running_loop().call_soon(source.cancel)
        return await asyncio.wait_for(source.token.wait_async(), WAIT)

    assert asyncio.run(main()) is True


def test_wait_async_is_woken_by_cancel_after():
    async def main() -> bool:
        source = CancellationTokenSource()
        source.cancel_after(0.01)
        return await asyncio.wait_for(source.token.wait_async(), WAIT)

    assert asyncio.run(main()) is True


def test_wait_async_returns_true_at_once_when_already_cancelled():
    source = CancellationTokenSource()
    source.cancel()
    assert asyncio.run(source.token.wait_async()) is True


def test_wait_async_returns_false_when_its_timeout_passes_first():
    source = CancellationTokenSource()
    assert asyncio.run(source.token.wait_async(timeout=0.01)) is False
    assert asyncio.run(CancellationToken.NONE.wait_async(timeout=0.01)) is False


def test_cancelling_the_awaiting_task_cancels_only_the_wait():
    async def main() -> tuple[bool, bool]:
        source = CancellationTokenSource()
        waiter = asyncio.ensure_future(source.token.wait_async())
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return source.is_cancellation_requested, source.token.can_be_cancelled

    assert asyncio.run(main()) == (False, True)


def test_a_cancel_after_the_waiting_loop_closed_is_quiet(caplog):
    source = CancellationTokenSource()
    calls: list[str] = []
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: None)  # the abandoned task is expected
    waiter = loop.create_task(source.token.wait_async())
    loop.run_until_complete(asyncio.sleep(0))  # the waiter is now registered on the token
    loop.close()  # ... and its loop is gone without the waiter ever finishing
    source.token.register(lambda: calls.append("later callback"))
    with caplog.at_level(logging.ERROR, logger="toolnexus"):
        source.cancel()
    assert source.is_cancellation_requested
    assert calls == ["later callback"]
    assert [r for r in caplog.records if r.name == "toolnexus"] == []  # nothing failed
    assert not waiter.done()


# --- reprs ---------------------------------------------------------------------------------


def test_reprs_show_state():
    source = CancellationTokenSource()
    assert repr(source.token) == "<CancellationToken live>"
    assert repr(source) == "<CancellationTokenSource live>"
    source.cancel_after(3600)
    assert repr(source) == "<CancellationTokenSource live timer pending>"
    source.cancel()
    assert repr(source.token) == "<CancellationToken cancelled>"
    assert repr(source) == "<CancellationTokenSource cancelled>"
    assert repr(CancellationToken.NONE) == "<CancellationToken none>"


def test_the_docstring_examples_in_cancellation_run():
    import toolnexus._cancellation as module

    failed, attempted = run_doctests(module)
    assert attempted > 0
    assert failed == 0, "a docstring example failed (see the output above)"


def test_20k_closed_hour_long_timers_keep_no_memory():
    import gc
    import tracemalloc

    from toolnexus import _timers

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20_000):
            source = CancellationTokenSource()
            source.cancel_after(3600)
            source.close()
        del source
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # Kept alive they would hold about 13 MiB (a timer, its action and its source: ~650 bytes
    # each); the bound still catches a leak of 7 bytes per timer.
    assert kept < 1 << 17, f"{kept} bytes still held"
    assert len(_timers._wheel._heap) < 1000


def test_a_token_says_by_when_a_timer_cancels_it_and_a_linked_one_inherits_it():
    from toolnexus._cancellation import cancelled_by

    source = CancellationTokenSource()
    assert cancelled_by(source.token) == float("inf")  # no timer: no promise
    source.cancel_after(3600)
    due = cancelled_by(source.token)
    assert due < float("inf")
    linked = CancellationTokenSource.linked(source.token, CancellationTokenSource().token)
    assert cancelled_by(linked.token) == due  # cancelled with its parent, at the latest
    source.close()  # the timer is gone: so is its promise
    assert cancelled_by(source.token) == float("inf")
    linked.close()
    assert cancelled_by(linked.token) == float("inf")
