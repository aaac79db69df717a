"""`toolnexus serve REF`: an MCP server on stdin/stdout offering REF's tools; stdout carries
only protocol messages, even when the tools' module prints while it loads."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from cli_helpers import child_env, run
from stdio_helpers import MODERN, StdioClient

ROOT = Path(__file__).resolve().parent.parent


def session(*messages: dict[str, object]) -> str:
    return "".join(json.dumps(message) + "\n" for message in messages)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def replies(stdout: str) -> dict[object, dict[str, object]]:
    return {m["id"]: m for m in map(json.loads, stdout.splitlines()) if "id" in m}


def test_serve_answers_initialize_list_and_call_then_exits_0_when_stdin_closes():
    out = run(
        "serve",
        "toolnexus.demo:toolkit",
        "--name",
        "demo",
        "--version",
        "9.9",
        stdin=session(
            INITIALIZE,
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "crunch", "arguments": {"steps": 3}},
            },
        ),
    )
    assert out.returncode == 0, out.stderr
    by_id = replies(out.stdout)
    assert by_id[1]["result"]["serverInfo"] == {"name": "demo", "version": "9.9"}
    names = [t["name"] for t in by_id[2]["result"]["tools"]]
    assert names == ["crunch", "fetchish", "deploy", "nap", "stubborn"]
    assert by_id[3]["result"]["content"] == [{"type": "text", "text": "completed 3 step(s)"}]


def test_a_module_that_prints_while_loading_cannot_corrupt_the_protocol(tmp_path):
    (tmp_path / "noisy.py").write_text(
        textwrap.dedent("""
        from toolnexus import tool
        print("loading noisy tools")

        @tool
        def ping() -> str:
            '''Answer pong.'''
            return "pong"
    """),
        encoding="utf-8",
    )
    out = run("serve", "noisy.py", cwd=tmp_path, stdin=session(INITIALIZE, INITIALIZED))
    assert out.returncode == 0, out.stderr
    assert "loading noisy tools" in out.stderr
    for line in out.stdout.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_serve_with_a_bad_ref_exits_2_before_reading_stdin():
    out = run("serve", "no_such_mod_xyz:tools", stdin=session(INITIALIZE))
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.startswith("toolnexus serve: error: cannot import 'no_such_mod_xyz'")


WIZARD = textwrap.dedent("""
    from toolnexus import Request, ToolContext, ToolResult, tool

    @tool
    def wizard(ctx: ToolContext) -> ToolResult:
        '''Asks a name, then an age.'''
        data = ctx.answer.data if ctx.answer is not None else None
        if data is None:
            return ToolResult.pending(Request("question", "Name?"))
        if "age" not in data:
            age = {"type": "object", "properties": {"age": {"type": "integer"}},
                   "required": ["age"]}
            return ToolResult.pending(Request("question", "Age?", data={"schema": age}))
        return ToolResult.ok(f"{data['age']} years")
""")


def _wizard_rounds(tmp_path: Path, *flags: str) -> list[dict[str, object]]:
    """Call wizard over real pipes, answering each question, until it gives a final result."""
    (tmp_path / "wizard.py").write_text(WIZARD, encoding="utf-8")
    results: list[dict[str, object]] = []
    params: dict[str, object] = {"name": "wizard", "arguments": {}, "_meta": MODERN}
    answers = iter([{"answer": "Ada"}, {"age": 36}])
    with StdioClient.serving("wizard.py", *flags, cwd=tmp_path) as server:
        for call_id in range(1, 4):
            result = server.request(call_id, "tools/call", params)["result"]
            results.append(result)
            if result["resultType"] != "input_required":
                break
            (key,) = result["inputRequests"]
            params = {
                **params,
                "requestState": result["requestState"],
                "inputResponses": {key: {"action": "accept", "content": next(answers)}},
            }
        assert server.finish() == 0
    return results


def test_serve_max_rounds_lets_a_call_ask_again_over_stdio(tmp_path):
    two = _wizard_rounds(tmp_path, "--max-rounds", "2")
    assert [r["resultType"] for r in two] == ["input_required", "input_required", "complete"]
    assert two[-1]["content"] == [{"type": "text", "text": "36 years"}]
    # The default is the loop rule: a retry that asks again is unresolved.
    one = _wizard_rounds(tmp_path)
    assert one[-1]["content"] == [{"type": "text", "text": "unresolved: Age?"}]
    assert one[-1]["isError"] is True


def test_serve_refuses_max_rounds_below_one():
    out = run("serve", "toolnexus.demo:toolkit", "--max-rounds", "0")
    assert out.returncode == 2
    assert "--max-rounds: must be >= 1, got 0" in out.stderr


# What a server that answers a plain call of plain types never needs, each a good share of
# its start-up (benchmarks/mcp_server.py): the task stores (until a client makes a task);
# parts and urllib.parse (until a result has a part); the text formats and datetime (until a
# tool takes or returns a datetime, a UUID, ...); base64 (HTTP headers only). Not argparse,
# nor the shutil its help formatter loads: `serve` reads its command line with the one parser
# every command uses (issue 35: the hand-written second parser for `serve` was reverted).
NOT_LOADED_BY_SERVE = (
    "base64",
    "datetime",
    "toolnexus._formats",
    "toolnexus._parts",
    # The stores' package and its URL reader load with a host (to find its default store), but
    # not the modules of the stores a plain call never uses, nor their protocols (typing).
    "toolnexus.stores._postgres",
    "toolnexus.stores._protocol",
    "toolnexus.stores._redis",
    "toolnexus.stores._tasks",
    "urllib.parse",
)


# Nor, until its first call, the validator: a tool compiles the schema inference wrote with
# its first call, and so do a resource's and a prompt's inner tools and completion tools.
NOT_LOADED_BEFORE_A_CALL = ("toolnexus.validation",)

# Nor, until its first answer is out, a suspension's question and answer and the loop rule:
# the host (which needs them) is made on a thread after it.
NOT_LOADED_BEFORE_THE_FIRST_ANSWER = ("toolnexus._loop_rule", "toolnexus._suspension")


def served(
    tmp_path: Path, *messages: dict[str, object], unloaded: tuple[str, ...]
) -> tuple[dict[object, dict[str, object]], list[str], list[str]]:
    """Serve a kit of a tool, a resource and a prompt over ``messages``: the answers by id,
    which of ``unloaded`` were loaded when the first answer was out (when the host starts
    warming up), and which when the server ended (exit code 0)."""
    (tmp_path / "kit.py").write_text(
        textwrap.dedent("""
            from toolnexus import Toolkit, tool
            from toolnexus.mcp import prompt, resource

            @tool
            def add(a: int, b: int) -> int:
                "Add."
                return a + b

            @resource("notes://readme")
            def readme() -> str:
                "The notes."
                return "hello"

            @prompt
            def greet(name: str) -> str:
                "Greet someone."
                return f"Hello, {name}!"

            toolkit = Toolkit([add, readme, greet])
        """),
        encoding="utf-8",
    )
    code = textwrap.dedent("""
        import json
        import sys
        from toolnexus._cli import main
        from toolnexus.mcp._server._bridge import LazyHost

        def loaded():
            return sorted(m for m in UNLOADED if m in sys.modules)

        first_answer = []
        warm_up = LazyHost.warm_up

        def noted(self):
            first_answer.append(loaded())
            warm_up(self)

        LazyHost.warm_up = noted
        code = main(["serve", "kit.py:toolkit", "--timeout", "30000"])
        print(json.dumps([code, first_answer[0], loaded()]))
    """).replace("UNLOADED", repr(unloaded))
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],  # -S: no site hook loads any of them first
        input=session(*messages),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=child_env(),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    *answers, last = out.stdout.splitlines()
    code, at_first_answer, at_end = json.loads(last)
    assert code == 0
    return replies("\n".join(answers)), at_first_answer, at_end


def test_serving_a_plain_call_loads_only_what_it_needs(tmp_path: Path) -> None:
    # Checked after the server answered a call: nothing on the way loaded them late.
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
    answers, _, loaded = served(
        tmp_path, INITIALIZE, INITIALIZED, call, unloaded=NOT_LOADED_BY_SERVE
    )
    assert answers[2]["result"]["content"] == [{"type": "text", "text": "3"}]
    assert loaded == []


def test_a_server_loads_less_before_its_first_answer_and_its_first_call(tmp_path: Path) -> None:
    unloaded = NOT_LOADED_BY_SERVE + NOT_LOADED_BEFORE_A_CALL + NOT_LOADED_BEFORE_THE_FIRST_ANSWER
    answers, at_first_answer, at_end = served(tmp_path, INITIALIZE, INITIALIZED, unloaded=unloaded)
    assert answers[1]["result"]["serverInfo"]["name"] == "toolnexus"
    assert at_first_answer == []
    assert not set(at_end) & set(NOT_LOADED_BY_SERVE + NOT_LOADED_BEFORE_A_CALL)
