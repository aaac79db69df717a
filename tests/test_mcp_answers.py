"""MCP answers checked (issue 10): requestState single-use and bound to its call, a restart
with the same key resumes, elicited content fits the form, forms are flat, approved:false
declines, and a question that cannot be put on the wire still gets a response."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import Answer, Host, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.mcp import Send, ServerOptions, ServerSession, StartCall
from toolnexus.mcp._shared._questions import open_state
from toolnexus.stores import MemoryAnswerStore

KEY = "mcp-answers-key-0123456789abcdef"
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

runs: list[tuple[str, Answer | None]] = []


@tool
def deploy(service: str, ctx: ToolContext) -> ToolResult:
    """Deploy after an approval."""
    runs.append(("deploy", ctx.answer))
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", f"Deploy {service}?"))
    return ToolResult.ok(f"deployed {service}")


@tool
def greet(ctx: ToolContext) -> ToolResult:
    """Asks a name with a form."""
    runs.append(("greet", ctx.answer))
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Your name?", data={"schema": FORM}))
    return ToolResult.ok(f"hello {ctx.answer.data['name']}")


@tool
def nested(ctx: ToolContext) -> ToolResult:
    """Asks with a schema MCP forms cannot carry."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "address": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    return ToolResult.pending(Request("input", "Where?", data={"schema": schema}))


@tool
def wizard(ctx: ToolContext) -> ToolResult:
    """Asks a name, then an age."""
    runs.append(("wizard", ctx.answer))
    answer = ctx.answer
    if answer is None:
        return ToolResult.pending(Request("question", "Name?"))
    if "age" not in (answer.data or {}):
        return ToolResult.pending(Request("question", "Age?"))
    return ToolResult.ok(f"{answer.data['age']}")


TOOLKIT = Toolkit([deploy, greet, nested, wizard])
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch):
    monkeypatch.delenv("TOOLNEXUS_SECRET", raising=False)
    runs.clear()


class Server:
    """A session and a host sharing a key and a store, driven synchronously."""

    def __init__(self, secret: str | None = KEY, store: Any = None, max_rounds: int = 1):
        self.store = store if store is not None else MemoryAnswerStore()
        self.session = ServerSession(
            TOOLKIT, ServerOptions(secret=secret, answer_store=self.store, max_rounds=max_rounds)
        )
        self.host = Host(TOOLKIT, secret=secret, answer_store=self.store, max_rounds=max_rounds)
        self.next_id = 0

    def handle(self, actions: list[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for action in actions:
            if isinstance(action, Send):
                out.append(dict(action.message))
            elif isinstance(action, StartCall):
                if action.answer is None:
                    result = self.host.call(action.name, action.arguments)
                else:
                    result = self.host.resume(
                        action.name, action.arguments, action.resumes, action.answer
                    )
                out.extend(self.handle(self.session.complete_call(action.call_id, result)))
        return out

    def call(self, name: str, args: dict[str, Any], **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": MODERN, **params},
        }
        (reply,) = self.handle(self.session.receive(message))
        return reply


def accept(request_id: str, content: Any) -> dict[str, Any]:
    return {request_id: {"action": "accept", "content": content}}


def asked(reply: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    result = reply["result"]
    assert result["resultType"] == "input_required", reply
    ((request_id, elicit),) = result["inputRequests"].items()
    return request_id, result["requestState"], elicit["params"]


def text(reply: dict[str, Any]) -> str:
    return str(reply["result"]["content"][0]["text"])


# --- modern: single use ---------------------------------------------------------------------


def test_a_replayed_request_state_runs_the_tool_once():
    server = Server()
    rid, state, _ = asked(server.call("deploy", {"service": "api"}))
    runs.clear()
    first = server.call(
        "deploy",
        {"service": "api"},
        requestState=state,
        inputResponses=accept(rid, {"approved": True}),
    )
    replays = [
        server.call(
            "deploy",
            {"service": "api"},
            requestState=state,
            inputResponses=accept(rid, {"approved": approved}),
        )
        for approved in (True, True, False)
    ]
    assert text(first) == "deployed api"
    for reply in replays:
        assert reply["result"]["isError"] is True
        assert text(reply).startswith("already answered")
    assert [name for name, _ in runs] == ["deploy"]


def test_an_answer_without_a_request_state_is_not_used_and_extra_keys_are_ignored():
    # Bound or nothing: an answer counts only with the signed state of the question it
    # answers. A first call that brings one runs the tool afresh, and it asks.
    server = Server()
    rid, state, _ = asked(server.call("greet", {}))
    unbound = server.call(
        "greet",
        {},
        inputResponses={**accept(rid, {"name": "Ada"}), "unknown_extra_key": {"action": "accept"}},
    )
    asked(unbound)  # asked again, under a new binding
    assert [answer for _, answer in runs] == [None, None]
    done = server.call(
        "greet",
        {},
        requestState=state,
        inputResponses={
            **accept(rid, {"name": "Ada"}),
            "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
        },
    )
    assert text(done) == "hello Ada"


def test_a_state_re_issued_for_an_unanswered_question_keeps_its_expiry_and_is_single_use():
    server = Server()
    rid, state, _ = asked(server.call("deploy", {"service": "api"}))
    again = server.call("deploy", {"service": "api"}, requestState=state)
    rid2, state2, _ = asked(again)
    keys = (KEY.encode(),)
    assert rid2 == rid and state2 != state
    assert open_state(state2, keys)["exp"] == open_state(state, keys)["exp"]
    assert text(server.call("deploy", {"service": "api"}, requestState=state)).startswith(
        "already answered"
    )
    done = server.call(
        "deploy",
        {"service": "api"},
        requestState=state2,
        inputResponses=accept(rid, {"approved": True}),
    )
    assert text(done) == "deployed api"


def test_a_state_does_not_resume_another_tool_or_other_arguments():
    server = Server()
    rid, state, _ = asked(server.call("deploy", {"service": "api"}))
    runs.clear()
    for name, args in (("deploy", {"service": "billing"}), ("greet", {})):
        reply = server.call(
            name, args, requestState=state, inputResponses=accept(rid, {"approved": True})
        )
        assert reply["error"]["code"] == -32602
        assert "belongs to another call" in reply["error"]["message"]
    assert runs == []


def test_approved_false_declines_on_the_modern_path():
    server = Server()
    rid, state, params = asked(server.call("deploy", {"service": "api"}))
    assert params["requestedSchema"]["properties"]["approved"]["type"] == "boolean"
    runs.clear()
    reply = server.call(
        "deploy",
        {"service": "api"},
        requestState=state,
        inputResponses=accept(rid, {"approved": False}),
    )
    assert text(reply) == "declined/expired: Deploy api?"
    assert runs == []


def test_a_retry_rejected_as_nested_too_deeply_leaves_its_state_usable():
    # A rejected answer uses nothing up: the correct retry with the same state resumes.
    server = Server()
    rid, state, _ = asked(server.call("greet", {}))
    runs.clear()
    deep = "[" * 500 + "1" + "]" * 500
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "greet",
                "arguments": {},
                "_meta": MODERN,
                "requestState": state,
                "inputResponses": accept(rid, {"name": "DEEP"}),
            },
        }
    ).replace('"DEEP"', deep)
    (rejected,) = server.handle(server.session.receive_line(line))
    assert rejected["id"] == 7 and rejected["error"]["code"] == -32602
    assert "nested too deeply" in rejected["error"]["message"]
    reply = server.call(
        "greet", {}, requestState=state, inputResponses=accept(rid, {"name": "Ada"})
    )
    assert text(reply) == "hello Ada"
    assert [name for name, _ in runs] == ["greet"]


def test_content_off_the_form_leaves_the_state_usable_and_a_good_answer_uses_it_up():
    server = Server()
    rid, state, _ = asked(server.call("greet", {}))
    runs.clear()
    bad = server.call("greet", {}, requestState=state, inputResponses=accept(rid, {"name": 42}))
    assert text(bad).startswith("invalid answer to 'Your name?': ")
    good = server.call("greet", {}, requestState=state, inputResponses=accept(rid, {"name": "Ada"}))
    assert text(good) == "hello Ada"
    replay = server.call(
        "greet", {}, requestState=state, inputResponses=accept(rid, {"name": "Bob"})
    )
    assert text(replay).startswith("already answered")
    assert [name for name, _ in runs] == ["greet"]


# --- the key across processes ---------------------------------------------------------------


def test_a_new_server_with_the_same_key_resumes_and_another_key_is_refused():
    first = Server()
    rid, state, _ = asked(first.call("deploy", {"service": "api"}))
    other = Server(secret="yet-another-key-0123456789abcdef")
    refused = other.call(
        "deploy",
        {"service": "api"},
        requestState=state,
        inputResponses=accept(rid, {"approved": True}),
    )
    assert refused["error"]["code"] == -32602
    assert "under another key" in refused["error"]["message"]
    keyless = Server(secret=None)
    message = keyless.call(
        "deploy",
        {"service": "api"},
        requestState=state,
        inputResponses=accept(rid, {"approved": True}),
    )["error"]["message"]
    assert "no configured key" in message and "TOOLNEXUS_SECRET" in message
    restarted = Server()  # same key, nothing else shared
    runs.clear()
    done = restarted.call(
        "deploy",
        {"service": "api"},
        requestState=state,
        inputResponses=accept(rid, {"approved": True}),
    )
    assert text(done) == "deployed api"
    assert [name for name, _ in runs] == ["deploy"]


SERVE_TOOLS = '''
from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool

@tool
def deploy(service: str, ctx: ToolContext) -> ToolResult:
    """Deploy after an approval."""
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", f"Deploy {service}?"))
    return ToolResult.ok(f"deployed {service} after the restart")

toolkit = Toolkit([deploy])
'''


def test_a_restarted_serve_with_the_same_key_resumes_a_state_issued_before(tmp_path: Path):
    (tmp_path / "serve_tools.py").write_text(textwrap.dedent(SERVE_TOOLS))
    (tmp_path / "key").write_text(KEY + "\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(toolnexus.__file__).resolve().parent.parent), str(tmp_path)]
        ),
    }
    env.pop("TOOLNEXUS_SECRET", None)

    def serve(message: dict[str, Any], key_file: str = "key") -> dict[str, Any]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolnexus",
                "serve",
                "serve_tools:toolkit",
                "--secret-file",
                str(tmp_path / key_file),
                "--answers-db",
                str(tmp_path / "a.db"),
            ],
            input=json.dumps(message) + "\n",
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout.splitlines()[0]))

    def call(**params: Any) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "deploy",
                "arguments": {"service": "api"},
                "_meta": MODERN,
                **params,
            },
        }

    rid, state, _ = asked(serve(call()))  # the first server process exits here
    (tmp_path / "other").write_text("a-different-key-0123456789abcdef\n")
    refused = serve(
        call(requestState=state, inputResponses=accept(rid, {"approved": True})), key_file="other"
    )
    assert refused["error"]["code"] == -32602
    resumed = serve(call(requestState=state, inputResponses=accept(rid, {"approved": True})))
    assert text(resumed) == "deployed api after the restart"
    replayed = serve(call(requestState=state, inputResponses=accept(rid, {"approved": True})))
    assert text(replayed).startswith("already answered")


# --- elicited content, flat forms -----------------------------------------------------------


def test_elicited_content_must_fit_the_form_modern():
    server = Server()
    rid, state, params = asked(server.call("greet", {}))
    assert params["requestedSchema"] == FORM
    runs.clear()
    reply = server.call(
        "greet", {}, requestState=state, inputResponses=accept(rid, {"name": 42, "extra": [1, 2]})
    )
    assert reply["result"]["isError"] is True
    assert text(reply).startswith("invalid answer to 'Your name?': ")
    assert runs == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"name": 42}, "name"),
        ({"name": "Ada", "extra": [1, 2]}, "extra: not a field of the form"),
        ({}, "name"),
        ({"name": {"first": "Ada"}}, "name: expected a string, number or boolean, got object"),
    ],
)
def test_elicited_content_must_fit_the_form_legacy(content: Any, problem: str):
    store = MemoryAnswerStore()
    session = ServerSession(TOOLKIT, ServerOptions(answer_store=store))
    host = Host(TOOLKIT, answer_store=store)
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}},
        }
    )
    session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})
    (start,) = session.receive(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "greet", "arguments": {}},
        }
    )
    (ask,) = session.complete_call(start.call_id, host.call("greet", {}))
    runs.clear()
    (reply,) = session.receive(
        {
            "jsonrpc": "2.0",
            "id": ask.message["id"],
            "result": {"action": "accept", "content": content},
        }
    )
    assert isinstance(reply, Send)
    assert reply.message["result"]["isError"] is True
    assert problem in reply.message["result"]["content"][0]["text"]
    assert runs == []


def test_a_nested_data_schema_is_refused_naming_the_field():
    server = Server()
    reply = server.call("nested", {})
    assert reply["result"]["isError"] is True
    assert text(reply) == (
        "tool 'nested' asked a question MCP cannot ask: data.schema.properties.address has "
        "type 'object'; MCP forms take only string, number, integer and boolean fields (and "
        "enums of them): flatten it into several fields"
    )


# --- multi-step, wire edges -----------------------------------------------------------------


def test_each_round_is_a_new_input_required_result_with_a_new_state():
    server = Server(max_rounds=2)
    rid, state, _ = asked(server.call("wizard", {}))
    rid2, state2, params = asked(
        server.call("wizard", {}, requestState=state, inputResponses=accept(rid, {"answer": "Ada"}))
    )
    assert state2 != state and params["message"] == "Age?"
    done = server.call(
        "wizard",
        {},
        requestState=state2,
        inputResponses={rid2: {"action": "accept", "content": {"answer": "x"}}},
    )
    # The tool wants "age"; a text form gave "answer": it asks again, and rounds are used up.
    assert text(done) == "unresolved: Age?"
    once = Server()
    rid, state, _ = asked(once.call("wizard", {}))
    assert (
        text(
            once.call(
                "wizard", {}, requestState=state, inputResponses=accept(rid, {"answer": "Ada"})
            )
        )
        == "unresolved: Age?"
    )


def test_a_prompt_with_a_lone_surrogate_still_gets_a_response_and_frees_its_id():
    session = ServerSession(TOOLKIT, ServerOptions(secret=KEY))
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"service": "x"}, "_meta": MODERN},
    }
    (start,) = session.receive(message)
    pending = ToolResult.pending(Request("approval", "Deploy \ud800?"))
    (reply,) = session.complete_call(start.call_id, pending)
    wire = json.loads(reply.to_bytes())
    assert wire["id"] == 7 and wire["result"]["resultType"] == "input_required"
    assert session.running_calls == 0
    (again,) = session.receive(message)  # the id is free again
    assert isinstance(again, StartCall)
