"""Several calls at once: call_many, and provider-shaped turns whose messages are balanced —
one per call, in call order — or empty while a call still waits on a question."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from timing import TIMEOUT
from toolnexus import (
    Answer,
    Host,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    TurnResult,
    WireFormatError,
    tool,
)

# The toolnexus this test imports, for child processes (not the whole sys.path of pytest).
PACKAGE_ROOT = str(Path(__import__("toolnexus").__file__).resolve().parent.parent)


class World:
    """Tools sharing a little state: a login that other tools need."""

    def __init__(self) -> None:
        self.logged_in = False
        self.second_asked = threading.Event()
        self.runs: dict[str, int] = {}

        @tool
        def weather(city: str) -> str:
            """Weather for a city."""
            self.count("weather")
            return f"sunny in {city}"

        @tool
        def login(ctx: ToolContext) -> ToolResult:
            """Asks the human to log in, slowly: it suspends after 'approve' has."""
            self.count("login")
            if ctx.answer is not None:
                self.logged_in = True
                return ToolResult.ok("logged in")
            # Suspend only after the later call has: call order must win, not timing.
            self.second_asked.wait(TIMEOUT)
            return ToolResult.auth_required("https://example.com/login", "Please log in")

        @tool
        def approve(action: str, ctx: ToolContext) -> ToolResult:
            """Needs the login, then an approval."""
            self.count("approve")
            if ctx.answer is not None:
                return ToolResult.ok(f"approved {action}")
            self.second_asked.set()
            if not self.logged_in:
                return ToolResult.pending(Request("approval", f"Log in first to {action}"))
            return ToolResult.pending(Request("approval", f"Allow {action}?"))

        @tool
        def inbox(ctx: ToolContext) -> ToolResult:
            """Readable once logged in."""
            self.count("inbox")
            if not self.logged_in:
                return ToolResult.pending(Request("approval", "Log in to read the inbox"))
            return ToolResult.ok("3 unread")

        self.toolkit = Toolkit([weather, login, approve, inbox])

    def count(self, name: str) -> None:
        self.runs[name] = self.runs.get(name, 0) + 1


def openai_call(call_id: str, name: str, args: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def test_call_many_runs_calls_concurrently_and_keeps_their_order():
    first_in, second_in = threading.Event(), threading.Event()

    @tool
    def first() -> str:
        """Waits for the second call to start: only possible if they run concurrently."""
        first_in.set()
        assert second_in.wait(TIMEOUT)
        return "first"

    @tool
    def second() -> str:
        """Waits for the first call to start."""
        second_in.set()
        assert first_in.wait(TIMEOUT)
        return "second"

    with Host(Toolkit([first, second])) as host:
        results = host.call_many([("first", {}), ("second", "{}")])
        aresults = asyncio.run(host.acall_many([("second", {}), ("first", {})]))
        assert host.call_many([]) == []
    assert [r.output for r in results] == ["first", "second"]
    assert [r.output for r in aresults] == ["second", "first"]


def test_call_many_rejects_items_that_are_not_pairs():
    with Host(Toolkit([])) as host, pytest.raises(TypeError, match=r"\(name, args\) pairs"):
        host.call_many(["weather"])


def test_an_openai_turn_halts_on_the_first_suspension_in_call_order_then_balances():
    world = World()
    calls = [
        openai_call("call_1", "weather", {"city": "Oslo"}),
        openai_call("call_2", "login", {}),
        openai_call("call_3", "approve", {"action": "deploy"}),
    ]
    with Host(world.toolkit) as host:
        turn = host.run_turn(calls, style="openai")
        assert not turn.is_complete
        assert turn.messages == []  # never an unbalanced set
        assert turn.pending is not None and turn.pending.kind == "authorization"
        assert turn.waiting == ("call_2", "call_3")

        turn = host.resume_turn(turn, Answer.accept(turn.pending))
        # login succeeded; approve ran again (the world changed) and asks its real question.
        assert turn.waiting == ("call_3",)
        assert turn.pending.prompt == "Allow deploy?"
        assert turn.messages == []

        turn = host.resume_turn(turn, Answer.accept(turn.pending))
    assert turn.is_complete and turn.pending is None and turn.error is None
    assert turn.messages == [
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"},
        {"role": "tool", "tool_call_id": "call_2", "content": "logged in"},
        {"role": "tool", "tool_call_id": "call_3", "content": "approved deploy"},
    ]
    assert world.runs == {"weather": 1, "login": 2, "approve": 3}


def test_an_anthropic_turn_skips_text_blocks_and_answers_in_one_user_message():
    world = World()
    world.second_asked.set()
    content = [
        {"type": "text", "text": "Let me check a few things."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Rome"}},
        {"type": "tool_use", "id": "toolu_2", "name": "inbox", "input": {}},
        {"type": "tool_use", "id": "toolu_3", "name": "weather", "input": {}},
    ]
    with Host(world.toolkit) as host:
        turn = host.run_turn(content, style="anthropic")
        assert [call.id for call in turn.calls] == ["toolu_1", "toolu_2", "toolu_3"]
        assert turn.waiting == ("toolu_2",)
        world.logged_in = True  # the human logged in out of band
        turn = host.resume_turn(turn, Answer.accept(turn.pending))
    assert turn.is_complete
    (message,) = turn.messages
    assert message["role"] == "user"
    blocks = message["content"]
    assert [block["tool_use_id"] for block in blocks] == ["toolu_1", "toolu_2", "toolu_3"]
    assert all(block["type"] == "tool_result" for block in blocks)
    assert blocks[0]["content"] == "sunny in Rome" and blocks[0]["is_error"] is False
    assert blocks[1]["content"] == "3 unread" and blocks[1]["is_error"] is False
    assert blocks[2]["is_error"] is True and "city" in blocks[2]["content"]


def test_a_whole_assistant_message_is_accepted_too():
    world = World()
    openai_message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [openai_call("c1", "weather", {"city": "Lima"})],
    }
    anthropic_message = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Lima"}}],
    }
    with Host(world.toolkit) as host:
        assert host.run_turn(openai_message).messages[0]["content"] == "sunny in Lima"
        assert (
            host.run_turn(anthropic_message, style="anthropic").messages[0]["content"][0]["content"]
            == "sunny in Lima"
        )


def test_an_answer_for_another_request_leaves_the_turn_pending_on_the_same_question():
    world = World()
    world.second_asked.set()
    with Host(world.toolkit) as host:
        turn = host.run_turn([openai_call("c1", "login", {})])
        request = turn.pending
        stale = host.resume_turn(turn, Answer("pnd-stale", True))
        assert stale.pending == request
        assert stale.error is not None
        assert "pnd-stale" in stale.error and request.id in stale.error
        assert world.runs["login"] == 1  # the question was not used up
        done = host.resume_turn(stale, Answer.accept(request))
    assert done.is_complete and done.error is None
    assert done.messages == [{"role": "tool", "tool_call_id": "c1", "content": "logged in"}]


def test_a_second_suspension_of_the_halted_call_becomes_unresolved():
    @tool
    def nag(ctx: ToolContext) -> ToolResult:
        """Always asks."""
        return ToolResult.pending(Request("approval", "Sure?"))

    with Host(Toolkit([nag])) as host:
        turn = host.run_turn([openai_call("c1", "nag", {})])
        turn = host.resume_turn(turn, Answer.accept(turn.pending))
    assert turn.is_complete
    assert turn.messages[0]["content"] == "unresolved: Sure?"


def test_resuming_a_complete_turn_changes_nothing_and_says_so():
    world = World()
    with Host(world.toolkit) as host:
        turn = host.run_turn([openai_call("c1", "weather", {"city": "Oslo"})])
        again = host.resume_turn(turn, Answer("pnd-x", True))
    assert again.calls == turn.calls and again.is_complete
    assert "complete" in again.error


def test_bad_arguments_and_unknown_tools_still_get_their_balanced_message():
    world = World()
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{oops"}},
        openai_call("c2", "wether", {"city": "Oslo"}),
        {"id": "c3", "type": "function", "function": {"name": "weather", "arguments": ""}},
    ]
    with Host(world.toolkit) as host:
        turn = host.run_turn(calls)
    assert [m["tool_call_id"] for m in turn.messages] == ["c1", "c2", "c3"]
    assert "not valid JSON" in turn.messages[0]["content"]
    assert "unknown tool 'wether'" in turn.messages[1]["content"]
    assert "city" in turn.messages[2]["content"]


def test_a_tool_call_without_an_id_is_rejected_at_once():
    with Host(World().toolkit) as host:
        with pytest.raises(WireFormatError, match="id"):
            host.run_turn(
                [{"type": "function", "function": {"name": "weather", "arguments": "{}"}}]
            )
        with pytest.raises(ValueError, match=r"style must be 'openai', .* or 'gemini'"):
            host.run_turn([], style="bard")


def test_with_wait_for_a_turn_completes_in_one_go():
    world = World()
    world.second_asked.set()
    with Host(world.toolkit, wait_for=Answer.accept) as host:
        turn = host.run_turn(
            [openai_call("c1", "login", {}), openai_call("c2", "weather", {"city": "Oslo"})]
        )
    assert turn.is_complete
    assert [m["content"] for m in turn.messages] == ["logged in", "sunny in Oslo"]


def test_arun_turn_and_aresume_turn_are_the_async_twins():
    world = World()
    world.second_asked.set()

    async def main() -> TurnResult:
        with Host(world.toolkit) as host:
            turn = await host.arun_turn([openai_call("c1", "inbox", {})])
            world.logged_in = True
            return await host.aresume_turn(turn, Answer.accept(turn.pending))

    turn = asyncio.run(main())
    assert turn.messages == [{"role": "tool", "tool_call_id": "c1", "content": "3 unread"}]


def test_a_turn_round_trips_through_json():
    world = World()
    world.second_asked.set()
    with Host(world.toolkit) as host:
        turn = host.run_turn(
            [openai_call("c1", "weather", {"city": "Oslo"}), openai_call("c2", "inbox", {})]
        )
    again = TurnResult.from_json(turn.to_json())
    assert again == turn
    assert again.pending == turn.pending
    assert json.loads(turn.to_json())["pending"]["id"] == turn.pending.id
    assert repr(again) == f"<TurnResult openai calls=2 pending {turn.pending.id}>"
    with pytest.raises(WireFormatError, match="style"):
        TurnResult.from_json('{"style": "bard", "calls": []}')


TOOLS_MODULE = '''
from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool

@tool
def weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"

@tool
def approve(action: str, ctx: ToolContext) -> ToolResult:
    """Asks before acting."""
    if ctx.answer is not None:
        return ToolResult.ok(f"approved {action}")
    return ToolResult.pending(Request("approval", f"Allow {action}?"))

toolkit = Toolkit([weather, approve])
'''

RESUMER = """
import json, sys
from pathlib import Path
from toolnexus import Answer, Host, TurnResult
from turn_tools import toolkit

turn = TurnResult.from_json(Path(sys.argv[1]).read_text())
with Host(toolkit) as host:   # its key comes from TOOLNEXUS_SECRET
    while turn.pending is not None and turn.error is None:
        turn = host.resume_turn(turn, Answer.accept(turn.pending))
print(json.dumps({"messages": turn.messages, "error": turn.error}))
"""

KEY = "turn-test-key-0123456789abcdef"


def test_a_halted_turn_is_resumed_by_a_fresh_host_in_another_process(tmp_path: Path, monkeypatch):
    (tmp_path / "turn_tools.py").write_text(textwrap.dedent(TOOLS_MODULE))
    (tmp_path / "resumer.py").write_text(textwrap.dedent(RESUMER))
    monkeypatch.syspath_prepend(str(tmp_path))
    import turn_tools  # type: ignore[import-not-found]

    blocks = [
        {"type": "tool_use", "id": "t1", "name": "approve", "input": {"action": "deploy"}},
        {"type": "tool_use", "id": "t2", "name": "weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "t3", "name": "approve", "input": {"action": "rollback"}},
    ]
    with Host(turn_tools.toolkit, secret=KEY) as host:
        turn = host.run_turn(blocks, style="anthropic")
    assert turn.waiting == ("t1", "t3")
    parked = tmp_path / "turn.json"
    parked.write_text(turn.to_json())

    def resume_elsewhere(key: str) -> dict:
        out = subprocess.run(
            [sys.executable, str(tmp_path / "resumer.py"), str(parked)],
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PYTHONPATH": os.pathsep.join([str(tmp_path), PACKAGE_ROOT]),
                "PATH": "",
                "TOOLNEXUS_SECRET": key,
            },
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    foreign = resume_elsewhere("another-key-0123456789abcdef")
    assert foreign["messages"] == []
    assert "does not verify under this host's key(s)" in foreign["error"]
    (message,) = resume_elsewhere(KEY)["messages"]
    assert [(b["tool_use_id"], b["content"], b["is_error"]) for b in message["content"]] == [
        ("t1", "approved deploy", False),
        ("t2", "sunny in Oslo", False),
        ("t3", "approved rollback", False),
    ]


def test_the_sync_batch_api_also_works_from_inside_a_running_loop():
    import contextvars

    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")

    @tool
    def whose() -> str:
        """Reads a context variable."""
        return tenant.get()

    async def main() -> list[ToolResult]:
        tenant.set("acme")
        with Host(Toolkit([whose])) as host:
            return host.call_many([("whose", {}), ("whose", {})])  # sync call, async caller

    assert [r.output for r in asyncio.run(main())] == ["acme", "acme"]


def test_a_style_is_an_entry_in_the_styles_table(monkeypatch):
    from toolnexus import _turns as turns

    def read(item, index):
        return item["call_id"], item["tool"], item["args"]

    def render(calls):
        return [{"call": call.id, "text": call.result.output} for call in calls]

    monkeypatch.setitem(turns.STYLES, "toy", turns.TurnStyle(lambda calls: calls, read, render))

    @tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    with Host(Toolkit([echo])) as host:
        turn = host.run_turn(
            [{"call_id": "c1", "tool": "echo", "args": {"text": "hi"}}], style="toy"
        )
    assert turn.messages == [{"call": "c1", "text": "hi"}]
    with pytest.raises(ValueError, match=r"style must be 'openai', .*'gemini' or 'toy'"):
        host.run_turn([], style="nope")
