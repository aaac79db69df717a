"""The middleware chain around every host call (``toolnexus.policies``, ``_chain.py``).

Each middleware sees the call and may pass it on, rewrite its arguments (checked again),
answer without the tool, or transform the result; sync and async; one that raises, blocks
or returns garbage is an error result naming it; deadlines and cancellation hold through
the chain; the same chain runs for local tools, tools served over MCP and remote tools.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolnexus import (
    Answer,
    CancellationTokenSource,
    Host,
    InvalidTypeError,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)
from toolnexus.mcp import HttpServer, McpClient, ServerOptions
from toolnexus.policies import AsyncNext, Middleware, Next, ToolCall, hooks

RAN: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append("add")
    return a + b


@tool
async def aadd(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    RAN.append("aadd")
    return a + b


@tool
def explode() -> str:
    """Always raises."""
    raise ValueError("kaput")


@tool
def ask(ctx: ToolContext) -> str:
    """Asks a question, then answers with what it was told."""
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Which one?"))  # type: ignore[return-value]
    return f"told {ctx.answer.data}"


TOOLKIT = Toolkit([add, aadd, explode, ask])


def passthrough(call: ToolCall, call_next: Next) -> ToolResult:
    return call_next(call)


# --------------------------------------------------------------------------- what it sees


def test_a_middleware_sees_the_tool_the_checked_arguments_and_the_context() -> None:
    seen: list[ToolCall] = []

    def look(call: ToolCall, call_next: Next) -> ToolResult:
        seen.append(call)
        return call_next(call)

    with Host(TOOLKIT, middleware=[look], timeout_ms=5_000) as host:
        assert host.call("add", '{"a": 1, "b": 2}').output == "3"
    (call,) = seen
    assert call.tool is add and call.name == "add"
    assert call.arguments == {"a": 1, "b": 2}
    assert call.context.timeout_ms == 5_000 and not call.context.is_cancelled
    assert call.call_id is None and call.turn is None
    assert call.deadline is not None and 0 < (call.remaining_ms() or 0) <= 5_000


def test_a_turns_calls_carry_the_models_call_ids_and_one_turn() -> None:
    seen: list[ToolCall] = []

    def look(call: ToolCall, call_next: Next) -> ToolResult:
        seen.append(call)
        return call_next(call)

    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "add", "arguments": "{}"}}
        for i in (1, 2)
    ]
    for entry in calls:
        entry["function"]["arguments"] = '{"a": 1, "b": 1}'  # type: ignore[index]
    with Host(TOOLKIT, middleware=[look]) as host:
        host.run_turn(calls)
        host.run_turn(calls[:1])
    assert sorted(c.call_id or "" for c in seen[:2]) == ["call_1", "call_2"]
    assert seen[0].turn == seen[1].turn is not None
    assert seen[2].turn != seen[0].turn


def test_an_invalid_call_never_reaches_a_middleware() -> None:
    seen: list[ToolCall] = []
    with Host(TOOLKIT, middleware=[lambda c, n: seen.append(c) or n(c)]) as host:
        result = host.call("add", {"a": "one", "b": 2})
    assert result.is_error and result.output.startswith("invalid arguments for 'add'")
    assert seen == []


# --------------------------------------------------------------------------- what it may do


def test_middleware_runs_outermost_first_and_may_transform_the_result() -> None:
    order: list[str] = []

    def named(label: str) -> Any:
        def middleware(call: ToolCall, call_next: Next) -> ToolResult:
            order.append(f"{label} in")
            result = call_next(call)
            order.append(f"{label} out")
            return ToolResult.ok(f"{label}({result.output})")

        return middleware

    with Host(TOOLKIT, middleware=[named("outer")], tool_middleware={"a*": [named("inner")]}) as h:
        assert h.call("add", {"a": 1, "b": 2}).output == "outer(inner(3))"
    assert order == ["outer in", "inner in", "inner out", "outer out"]


def test_rewritten_arguments_are_checked_again_before_the_tool_runs() -> None:
    def double(call: ToolCall, call_next: Next) -> ToolResult:
        return call_next(call.with_arguments({**call.arguments, "a": call.arguments["a"] * 2}))

    def spoil(call: ToolCall, call_next: Next) -> ToolResult:
        return call_next(call.with_arguments({"a": "x", "b": 1}))

    with Host(TOOLKIT, middleware=[double]) as host:
        assert host.call("add", {"a": 2, "b": 1}).output == "5"
    RAN.clear()
    with Host(TOOLKIT, middleware=[spoil]) as host:
        refused = host.call("add", {"a": 2, "b": 1})
    assert refused.output.startswith("invalid arguments for 'add': a: expected integer")
    assert RAN == []


def test_a_middleware_may_answer_without_running_the_tool() -> None:
    RAN.clear()

    def deny(call: ToolCall, call_next: Next) -> ToolResult:
        return ToolResult.error(f"{call.name} is not allowed")

    with Host(TOOLKIT, middleware=[deny]) as host:
        assert host.call("add", {"a": 1, "b": 2}).output == "add is not allowed"
    assert RAN == []


def test_call_next_refuses_another_tool_or_a_plain_dict() -> None:
    def swap(call: ToolCall, call_next: Next) -> ToolResult:
        return call_next(ToolCall(explode, {}))

    def plain(call: ToolCall, call_next: Next) -> ToolResult:
        return call_next({"a": 1})  # type: ignore[arg-type]

    with Host(TOOLKIT, middleware=[swap]) as host:
        swapped = host.call("add", {"a": 1, "b": 2})
    with Host(TOOLKIT, middleware=[plain]) as host:
        dicted = host.call("add", {"a": 1, "b": 2})
    assert "middleware 'test_call_next_refuses_another_tool_or_a_plain_dict.<locals>.swap'" in (
        swapped.output
    )
    assert "runs the call's own tool 'add', not 'explode'" in swapped.output
    assert "call_next() takes the ToolCall" in dicted.output


# --------------------------------------------------------------------------- sync and async


class Tag(Middleware):
    name = "tag"

    def __init__(self) -> None:
        self.forms: list[str] = []

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        self.forms.append("sync")
        return call_next(call)

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        self.forms.append("async")
        return await call_next(call)


def test_an_async_tools_chain_stays_on_the_callers_loop_when_every_middleware_can() -> None:
    tag = Tag()
    loops: list[object] = []

    async def note_loop(call: ToolCall, call_next: AsyncNext) -> ToolResult:
        loops.append(asyncio.get_running_loop())
        return await call_next(call)

    async def main() -> tuple[ToolResult, object]:
        with Host(TOOLKIT, middleware=[tag, note_loop]) as host:
            return await host.acall("aadd", {"a": 1, "b": 2}), asyncio.get_running_loop()

    result, loop = asyncio.run(main())
    assert result.output == "3" and tag.forms == ["async"] and loops == [loop]


def test_a_sync_middleware_moves_an_async_tools_chain_to_a_worker() -> None:
    threads: list[str] = []

    def note_thread(call: ToolCall, call_next: Next) -> ToolResult:
        threads.append(threading.current_thread().name)
        return call_next(call)

    async def main() -> ToolResult:
        with Host(TOOLKIT, middleware=[note_thread]) as host:
            return await host.acall("aadd", {"a": 1, "b": 2})

    assert asyncio.run(main()).output == "3"
    assert threads[0].startswith("toolnexus-host-worker")


def test_an_async_middleware_runs_around_a_sync_tool_on_a_worker() -> None:
    tag = Tag()

    async def wrap(call: ToolCall, call_next: AsyncNext) -> ToolResult:
        result = await call_next(call)
        return ToolResult.ok(f"[{result.output}]")

    with Host(TOOLKIT, middleware=[wrap, tag, passthrough]) as host:
        assert host.call("add", {"a": 1, "b": 2}).output == "[3]"
        assert host.call("aadd", {"a": 1, "b": 2}).output == "[3]"
    assert tag.forms == ["async", "async"]  # inside the async step's loop: its async form


# --------------------------------------------------------------------------- failures


def test_a_middleware_that_raises_is_an_error_result_naming_it() -> None:
    class Flaky(Middleware):
        name = "flaky"

        def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
            raise RuntimeError("lost the config")

    with Host(TOOLKIT, middleware=[Flaky()]) as host:
        result = host.call("add", {"a": 1, "b": 2})
    assert result.is_error
    assert (
        result.output
        == "middleware 'flaky' failed on the call to 'add': RuntimeError: lost the config"
    )


def test_a_tool_that_raises_reads_as_without_a_chain_and_is_not_blamed_on_it() -> None:
    with Host(TOOLKIT) as plain, Host(TOOLKIT, middleware=[passthrough]) as chained:
        assert chained.call("explode").output == plain.call("explode").output == "kaput"


@pytest.mark.parametrize(
    "garbage, text",
    [
        (42, "returned int, not a ToolResult"),
        (None, "returned NoneType, not a ToolResult"),
        ("3", "returned str, not a ToolResult"),
    ],
)
def test_a_middleware_that_returns_garbage_is_an_error_result_naming_it(
    garbage: object, text: str
) -> None:
    class Garbage(Middleware):
        name = "garbage"

        def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
            call_next(call)
            return garbage  # type: ignore[return-value]

    with Host(TOOLKIT, middleware=[Garbage()]) as host:
        result = host.call("add", {"a": 1, "b": 2})
    assert result.is_error and f"middleware 'garbage' {text}" in result.output


def test_a_sync_middleware_that_returns_a_coroutine_is_told_to_be_async() -> None:
    async def later() -> ToolResult:
        return ToolResult.ok("never")

    class Sneaky(Middleware):
        name = "sneaky"

        def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
            return later()  # type: ignore[return-value]

    with Host(TOOLKIT, middleware=[Sneaky()]) as host:
        result = host.call("add", {"a": 1, "b": 2})
    assert "returned a coroutine" in result.output and "async def" in result.output


def test_a_middleware_that_blocks_is_stopped_by_the_calls_deadline() -> None:
    never = threading.Event()

    def stuck(call: ToolCall, call_next: Next) -> ToolResult:
        call.context.cancellation_token.wait()  # hears the deadline, as a good tool does
        never.wait(0)
        return ToolResult.error("gave up")

    with Host(TOOLKIT, middleware=[stuck], timeout_ms=100) as host:
        result = host.call("add", {"a": 1, "b": 2})
    assert result.is_error and result.output.startswith("timed out after 100 ms")


def test_a_middleware_that_ignores_its_token_is_abandoned_at_the_deadline() -> None:
    release = threading.Event()

    def deaf(call: ToolCall, call_next: Next) -> ToolResult:
        release.wait(30)
        return call_next(call)

    with Host(TOOLKIT, middleware=[deaf], timeout_ms=100, grace_ms=20) as host:
        result = host.call("add", {"a": 1, "b": 2})
        assert result.output.startswith("timed out after 100 ms")
        assert "was abandoned" in result.output
        release.set()


def test_a_cancel_reaches_a_waiting_middleware() -> None:
    waiting = threading.Event()

    def patient(call: ToolCall, call_next: Next) -> ToolResult:
        waiting.set()
        if call.context.cancellation_token.wait(30):
            return ToolResult.error("stopped waiting")
        return call_next(call)

    source = CancellationTokenSource()
    with Host(TOOLKIT, middleware=[patient]) as host:
        call = host.submit("add", {"a": 1, "b": 2}, cancellation_token=source.token)
        assert waiting.wait(10)
        source.cancel()
        result = call.result(timeout=10)
    assert call.cancelled() and result.output == "stopped waiting"


@pytest.mark.parametrize("stop", ["call.cancel()", "host.close()"])
def test_a_waiting_middleware_hears_the_calls_own_token_with_no_deadline(stop: str) -> None:
    # `add` takes no context, and the call has no deadline and no caller's token: the
    # chain still gives the middleware the call's own token, which cancel() and close()
    # cancel (a call without middleware would have none at all).
    waiting = threading.Event()
    heard: list[bool] = []

    def patient(call: ToolCall, call_next: Next) -> ToolResult:
        waiting.set()
        heard.append(call.context.cancellation_token.wait(30))
        return ToolResult.error("stopped waiting")

    host = Host(TOOLKIT, middleware=[patient], timeout_ms=None)
    try:
        call = host.submit("add", {"a": 1, "b": 2})
        assert waiting.wait(10)
        if stop == "call.cancel()":
            assert call.cancel()
        else:
            host.close(timeout=10)
        result = call.result(timeout=10)
    finally:
        host.close()
    assert heard == [True] and call.cancelled() and result.output == "stopped waiting"


def test_an_async_middleware_is_cancelled_with_its_acall() -> None:
    entered = asyncio.Event()
    cancelled: list[bool] = []

    async def slow(call: ToolCall, call_next: AsyncNext) -> ToolResult:
        entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return await call_next(call)

    async def main() -> ToolResult:
        with Host(TOOLKIT, middleware=[slow]) as host:
            source = CancellationTokenSource()
            task = asyncio.ensure_future(
                host.acall("aadd", {"a": 1, "b": 2}, cancellation_token=source.token)
            )
            await entered.wait()
            source.cancel()
            return await task

    result = asyncio.run(main())
    assert result.output == "cancelled by the caller" and cancelled == [True]


def test_a_host_refuses_what_is_not_a_middleware_at_once() -> None:
    with pytest.raises(InvalidTypeError, match="a middleware is a function"):
        Host(TOOLKIT, middleware=[42])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError, match="must be a list of middleware"):
        Host(TOOLKIT, middleware=passthrough)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="overrides neither __call__ nor acall"):
        Host(TOOLKIT, middleware=[Middleware()])
    with pytest.raises(InvalidTypeError, match="tool_middleware keys"):
        Host(TOOLKIT, tool_middleware={"": [passthrough]})


# --------------------------------------------------------------------------- the loop rule


def test_a_question_goes_through_the_chain_and_its_answer_comes_back_through_it() -> None:
    seen: list[Answer | None] = []

    def look(call: ToolCall, call_next: Next) -> ToolResult:
        seen.append(call.context.answer)
        return call_next(call)

    def wait_for(request: Request) -> Answer:
        return Answer.accept(request, {"pick": "b"})

    with Host(TOOLKIT, middleware=[look], wait_for=wait_for) as host:
        assert host.call("ask").output == "told {'pick': 'b'}"
    assert seen[0] is None and seen[1] is not None and seen[1].ok


# --------------------------------------------------------------------------- the family's hooks


def test_hooks_before_tool_rewrites_or_short_circuits_and_after_tool_transforms() -> None:
    RAN.clear()
    events: list[dict[str, Any]] = []

    def before(event: dict[str, Any]) -> dict[str, Any] | None:
        events.append(event)
        if event["args"].get("a") == 0:
            return {"result": ToolResult.error("no zeros")}
        return {"args": {**event["args"], "b": 10}}

    async def after(event: dict[str, Any]) -> dict[str, Any]:
        return {"result": ToolResult.ok(f"after: {event['result'].output}")}

    with Host(TOOLKIT, middleware=[hooks(before_tool=before, after_tool=after)]) as host:
        assert host.call("add", {"a": 1, "b": 2}).output == "after: 11"
        assert host.call("add", {"a": 0, "b": 2}).output == "no zeros"
    assert RAN == ["add"]
    assert events[0] == {
        "name": "add",
        "args": {"a": 1, "b": 2},
        "id": None,
        "turn": None,
        "caller": None,
    }


def test_hooks_after_tool_never_sees_a_suspension_only_the_resolved_result() -> None:
    seen: list[ToolResult] = []

    def after(event: dict[str, Any]) -> None:
        seen.append(event["result"])

    def wait_for(request: Request) -> Answer:
        return Answer.accept(request, {"pick": "a"})

    with Host(TOOLKIT, middleware=[hooks(after_tool=after)], wait_for=wait_for) as host:
        assert host.call("ask").output == "told {'pick': 'a'}"
    assert [r.output for r in seen] == ["told {'pick': 'a'}"]


def test_a_guard_raised_suspension_is_pending_and_resumes_to_the_real_tool() -> None:
    def guard(event: dict[str, Any]) -> dict[str, Any] | None:
        return {"result": ToolResult.pending(Request("approval", "add them?"))}

    with Host(TOOLKIT, middleware=[hooks(before_tool=guard)]) as host:
        parked = host.call("add", {"a": 1, "b": 2})
        assert parked.is_pending
        request = ToolResult.pending_of(parked)
        assert request is not None
        # As in the family, the retry with the answer runs the tool without the guard.
        again = host.resume("add", {"a": 1, "b": 2}, parked, Answer.accept(request))
    assert again.output == "3"


# --------------------------------------------------------------------------- over MCP


class Count(Middleware):
    name = "count"

    def __init__(self) -> None:
        self.names: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        with self.lock:
            self.names.append(call.name)
        return call_next(call)

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        with self.lock:
            self.names.append(call.name)
        return await call_next(call)


def test_the_same_chain_runs_for_served_tools_and_for_remote_tools() -> None:
    served = Count()
    remote = Count()
    options = ServerOptions(middleware=[served])
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        with (
            McpClient(url=server.url, name="srv") as client,
            Host(Toolkit(client.tools()), middleware=[remote], timeout_ms=10_000) as host,
        ):
            assert host.call("srv_add", {"a": 2, "b": 3}).output == "5"
    assert served.names == ["add"] and remote.names == ["srv_add"]


def test_server_options_check_their_middleware_at_construction() -> None:
    with pytest.raises(InvalidTypeError, match="a middleware is a function"):
        ServerOptions(middleware=["not one"])


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_a_served_tools_approval_reaches_a_remote_host_as_a_question_it_resumes(
    version: str,
) -> None:
    from toolnexus.policies import require_approval

    RAN.clear()
    options = ServerOptions(middleware=[require_approval("add")])
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        with (
            McpClient(url=server.url, name="srv", protocol_version=version) as client,
            Host(Toolkit(client.tools())) as host,
        ):
            parked = host.call("srv_add", {"a": 2, "b": 3})
            request = ToolResult.pending_of(parked)
            assert request is not None and RAN == []
            no = host.resume(
                "srv_add", {"a": 2, "b": 3}, parked, Answer.accept(request, {"approved": False})
            )
            assert no.is_error and RAN == []
            parked = host.call("srv_add", {"a": 2, "b": 3})
            request = ToolResult.pending_of(parked)
            assert request is not None
            yes = host.resume(
                "srv_add", {"a": 2, "b": 3}, parked, Answer.accept(request, {"approved": True})
            )
    assert yes.output == "5" and RAN == ["add"]


def test_a_context_changed_in_the_chain_keeps_the_calls_deadline() -> None:
    deadlines: list[float | None] = []

    @tool
    def look(ctx: ToolContext) -> str:
        """Notes its deadline."""
        deadlines.append(ctx.deadline)
        return "ok"

    def fresh(call: ToolCall, call_next: Next) -> ToolResult:
        deadlines.append(call.deadline)
        return call_next(call.with_context(call.context.with_answer(None)))

    with Host(Toolkit([look]), middleware=[fresh], timeout_ms=5_000) as host:
        assert host.call("look").output == "ok"
    assert deadlines[0] is not None and deadlines[0] == deadlines[1]
