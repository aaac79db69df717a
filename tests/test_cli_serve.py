"""`toolnexus serve REF`: an MCP server on stdin/stdout offering REF's tools; stdout carries
only protocol messages, even when the tools' module prints while it loads."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent


def session(*messages: dict[str, object]) -> str:
    return "".join(json.dumps(message) + "\n" for message in messages)


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def replies(stdout: str) -> dict[object, dict[str, object]]:
    return {m["id"]: m for m in map(json.loads, stdout.splitlines()) if "id" in m}


def test_serve_answers_initialize_list_and_call_then_exits_0_when_stdin_closes():
    out = run("serve", "toolnexus.demo:toolkit", "--name", "demo", "--version", "9.9",
              stdin=session(
                  INITIALIZE, INITIALIZED,
                  {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                  {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "crunch", "arguments": {"steps": 3}}},
              ))
    assert out.returncode == 0, out.stderr
    by_id = replies(out.stdout)
    assert by_id[1]["result"]["serverInfo"] == {"name": "demo", "version": "9.9"}
    names = [t["name"] for t in by_id[2]["result"]["tools"]]
    assert names == ["crunch", "fetchish", "deploy", "nap", "stubborn"]
    assert by_id[3]["result"]["content"] == [{"type": "text", "text": "completed 3 step(s)"}]


def test_a_module_that_prints_while_loading_cannot_corrupt_the_protocol(tmp_path):
    (tmp_path / "noisy.py").write_text(textwrap.dedent("""
        from toolnexus import tool
        print("loading noisy tools")

        @tool
        def ping() -> str:
            '''Answer pong.'''
            return "pong"
    """), encoding="utf-8")
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
