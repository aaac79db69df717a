"""The library is quiet: an application that configured no logging sees nothing from
toolnexus when a tool raises; one that did gets the record on `toolnexus.tools`; `serve`
logs to stderr at the level `--log-level` sets, never to stdout."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_helpers import child_env, run
from toolnexus import Toolkit, tool


def test_the_package_logger_has_a_null_handler_before_its_first_record() -> None:
    # logging loads with the package's first record (not with the import); the
    # NullHandler is attached then, before any record is emitted.
    from toolnexus._log import get_logger

    get_logger("tools")
    handlers = logging.getLogger("toolnexus").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


SERVE_A_PING = """
import io, sys
from toolnexus import Toolkit, tool
from toolnexus.mcp import serve_stdio

@tool
def add(a: int, b: int) -> int:
    "Add."
    return a + b

line = '{"jsonrpc":"2.0","id":1,"method":"ping"}\\n'
serve_stdio(Toolkit([add]), stdin=io.StringIO(line), stdout=io.StringIO())
print("logging" in sys.modules)
"""


def test_serving_over_stdio_loads_logging_only_when_something_is_logged() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SERVE_A_PING], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_an_application_without_logging_configuration_prints_nothing_when_a_tool_raises() -> None:
    source = textwrap.dedent("""
        from toolnexus import Host, Toolkit, tool

        @tool
        def boom(x: int) -> int:
            '''Fail.'''
            raise RuntimeError("kaput")

        kit = Toolkit([boom])
        print(kit.execute("boom", {"x": 1}).output)
        with Host(kit) as host:
            print(host.call("boom", {"x": 1}).output)
    """)
    out = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, env=child_env(), timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert out.stdout.splitlines() == ["kaput", "kaput"]


def test_a_tool_failure_is_logged_on_toolnexus_tools_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def boom(x: int) -> int:
        """Fail."""
        raise RuntimeError("kaput")

    with caplog.at_level(logging.ERROR, logger="toolnexus.tools"):
        result = Toolkit([boom]).execute("boom", {"x": 1})
    assert result.is_error
    [record] = [r for r in caplog.records if r.name == "toolnexus.tools"]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


def test_an_application_can_silence_tool_failures_alone(caplog: pytest.LogCaptureFixture) -> None:
    @tool
    def boom(x: int) -> int:
        """Fail."""
        raise RuntimeError("kaput")

    logging.getLogger("toolnexus.tools").setLevel(logging.CRITICAL)
    try:
        with caplog.at_level(logging.DEBUG):
            Toolkit([boom]).execute("boom", {"x": 1})
    finally:
        logging.getLogger("toolnexus.tools").setLevel(logging.NOTSET)
    assert [r for r in caplog.records if r.name.startswith("toolnexus")] == []


BOOM = textwrap.dedent("""
    from toolnexus import tool

    @tool
    def boom(x: int) -> int:
        '''Fail.'''
        raise RuntimeError("kaput")
""")

CALL_BOOM = "".join(
    json.dumps(m) + "\n"
    for m in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "boom", "arguments": {"x": 1}},
        },
    )
)


def test_serve_logs_a_tool_failure_to_stderr_by_default_and_keeps_stdout_for_protocol(
    tmp_path: Path,
) -> None:
    (tmp_path / "booms.py").write_text(BOOM)
    out = run("serve", "booms", cwd=tmp_path, stdin=CALL_BOOM)
    assert out.returncode == 0, out.stderr
    assert "ERROR toolnexus.tools: tool 'boom' raised RuntimeError" in out.stderr
    assert "RuntimeError: kaput" in out.stderr  # the traceback, for the operator
    for line in out.stdout.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_serve_log_level_error_above_keeps_stderr_quiet(tmp_path: Path) -> None:
    (tmp_path / "booms.py").write_text(BOOM)
    out = run("serve", "booms", "--log-level", "critical", cwd=tmp_path, stdin=CALL_BOOM)
    assert out.returncode == 0, out.stderr
    assert "toolnexus.tools" not in out.stderr


def test_serve_refuses_an_unknown_log_level(tmp_path: Path) -> None:
    out = run("serve", "toolnexus.demo:toolkit", "--log-level", "loud", cwd=tmp_path)
    assert out.returncode == 2
    assert "--log-level: invalid choice: 'loud'" in out.stderr


def test_an_mcp_client_program_without_logging_configuration_prints_nothing(
    tmp_path: Path,
) -> None:
    # Each module of the MCP client logs a warning here — a server that fails (mcp.json),
    # a server that prints a line that is not JSON-RPC (the client), a token store that
    # fails (OAuth) — and none of them may reach stderr through logging's last resort.
    (tmp_path / "noisy.py").write_text(
        textwrap.dedent("""
            import runpy, sys
            print("not json-rpc", flush=True)
            sys.argv = ["toolnexus", "serve", "toolnexus.demo:toolkit"]
            runpy.run_module("toolnexus", run_name="__main__")
        """)
    )
    source = textwrap.dedent(f"""
        import sys
        from toolnexus import Toolkit
        from toolnexus.mcp import HttpServer, McpClient, McpSource, OAuth

        config = {{"mcpServers": {{"gone": {{"command": {str(tmp_path / "missing")!r}}}}}}}
        with McpSource(config).connect() as source:
            print(source.status()["gone"].status)

        with McpClient(sys.executable, [{str(tmp_path / "noisy.py")!r}]) as client:
            print(len(client.list_tools()) > 0)

        class Broken:
            def load(self, key): raise OSError("the disk is gone")
            def save(self, key, record): raise OSError("the disk is gone")
            def delete(self, key): raise OSError("the disk is gone")

        import toolnexus.demo
        with HttpServer(toolnexus.demo.toolkit, port=0) as server:
            server.start()
            with McpClient(url=server.url, auth=OAuth(token_store=Broken())) as client:
                print(len(client.list_tools()) > 0)
    """)
    out = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["failed", "True", "True"]
    assert out.stderr == ""


def test_the_command_line_names_a_failed_mcp_server_once(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "gone": {"command": str(tmp_path / "missing")},
            "demo": {
                "command": sys.executable,
                "args": ["-m", "toolnexus", "serve", "toolnexus.demo:toolkit"],
            },
        }
    }
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    # serve logs warnings to stderr by default: the failure is named by the command, once.
    out = run("serve", "mcp.json", cwd=tmp_path, stdin="")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("'gone'") + out.stderr.count(" gone ") == 1, out.stderr
    assert "toolnexus: MCP server 'gone' failed" in out.stderr
