"""The MCP client against servers that misbehave, and the lifetimes it keeps.

Each "Bad input" line of the client's issue: garbage on stdout, malformed JSON-RPC and
wrong ids, a huge result, a result nested 10,000 levels deep, a server that dies mid-call or
never answers, a schema the validator refuses, two servers with the same tool name — each
gets a clear error or status, nothing hangs past its timeout, and no thread or child leaks.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

import pytest

from toolnexus import Answer, Host, McpError, Request, Toolkit
from toolnexus.mcp import HttpServer, McpClient, McpSource, ServerOptions

FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))


def fake(mode: str, **options: object) -> McpClient:
    return McpClient(sys.executable, [FAKE, mode], name="fake", **options)  # type: ignore[arg-type]


def test_a_server_that_behaves_is_served_in_the_legacy_era_it_speaks() -> None:
    with fake("fine") as client:
        assert client.call_tool("echo", {"text": "hi"}).output == "hi"
        assert (client.era, client.protocol_version) == ("legacy", "2025-06-18")


def test_garbage_on_stdout_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus.mcp.client"), fake("garbage") as c:
        assert c.call_tool("echo", {"text": "through"}).output == "through"
        assert c.call_tool("echo", {"text": "again"}).output == "again"
    assert any("not JSON-RPC" in r.getMessage() for r in caplog.records)


def test_wrong_ids_are_ignored_and_a_malformed_result_is_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus.mcp.client"), fake("wrong-ids") as c:
        result = c.call_tool("echo", {"text": "x"})
    assert result.is_error
    assert "must be an object" in result.output and "fake" in result.output
    assert any("no request of ours" in r.getMessage() for r in caplog.records)


def test_a_result_over_the_size_limit_is_an_error_and_the_next_call_reconnects() -> None:
    with fake("huge", max_message_bytes=1_000_000) as client:
        result = client.call_tool("echo", {"text": "x"})
        assert result.is_error and "over 1000000 bytes" in result.output
        first = client.pid
        again = client.call_tool("echo", {"text": "x"})
        assert again.is_error and "over 1000000 bytes" in again.output
        assert client.pid != first  # a new process: the connection was made anew


def test_a_result_nested_too_deeply_is_an_error() -> None:
    with fake("deep") as client:
        result = client.call_tool("echo", {"text": "x"})
    assert result.is_error and "nested" in result.output


def test_a_server_that_dies_mid_call_is_an_error_naming_how_it_ended() -> None:
    with fake("die") as client:
        result = client.call_tool("echo", {"text": "x"})
    assert result.is_error
    assert "exited with code 3" in result.output
    assert "dying on purpose" in result.output  # the tail of its stderr


def test_a_server_that_never_answers_fails_within_its_timeout() -> None:
    with fake("silent", timeout_ms=300) as client, pytest.raises(McpError) as caught:
        client.connect()
    assert caught.value.server == "fake"
    assert "no answer to" in caught.value.problem and "0.3 s" in caught.value.problem


def test_a_tool_whose_schema_is_refused_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus.mcp.client"), fake("bad-schema") as c:
        tools = c.tools()
    assert [tool.name for tool in tools] == ["fake_echo"]
    warned = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert warned and "fake" in warned[0]


def test_a_command_that_does_not_exist_is_an_error_naming_it() -> None:
    with McpClient("/no/such/mcp-server", name="ghost") as client, pytest.raises(McpError) as e:
        client.connect()
    assert "/no/such/mcp-server" in e.value.problem


def test_a_tool_list_change_refreshes_the_source_toolkit() -> None:
    changed = threading.Event()
    config = {"mcpServers": {"fake": {"command": sys.executable, "args": [FAKE, "changes"]}}}
    with McpSource(config).connect() as source:
        source.client("fake").on_tools_changed(changed.set)
        assert [t.name for t in source.toolkit] == ["fake_echo"]
        with Host(source.toolkit) as host:
            assert host.call("fake_echo", {"text": "x"}).output == "x"
        # Listeners run in the order they were added, on one thread: the source's own
        # (added at connect) has refreshed the toolkit by the time ours runs.
        assert changed.wait(10)
        assert [t.name for t in source.toolkit] == ["fake_echo", "fake_extra"]


def test_one_bad_server_never_breaks_the_others() -> None:
    config = {
        "mcpServers": {
            "good": {"command": sys.executable, "args": [FAKE, "fine"]},
            "twin": {"command": sys.executable, "args": [FAKE, "fine"], "prefix": "good_"},
            "silent": {"command": sys.executable, "args": [FAKE, "silent"], "timeout": 300},
            "ghost": {"command": "/no/such/mcp-server"},
            "off": {"command": "whatever", "disabled": True},
            "remote": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        }
    }
    with McpSource(config).connect() as source:
        status = source.status()
        assert {name: s.status for name, s in status.items()} == {
            "good": "connected",
            "twin": "connected",
            "silent": "failed",
            "ghost": "failed",
            "off": "disabled",
            "remote": "failed",
        }
        assert status["good"].tools == ("good_echo",)
        assert status["twin"].tools == ()  # the same name: the first server keeps it
        assert "no answer" in (status["silent"].reason or "")
        assert "/no/such/mcp-server" in (status["ghost"].reason or "")
        assert "sse" in (status["remote"].reason or "")
        with Host(source.toolkit) as host:
            assert host.call("good_echo", {"text": "fine"}).output == "fine"


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({}, "no servers found"),
        ({"mcpServers": []}, "must be an object of servers"),
        ({"mcpServers": {"a": {}}}, "mcpServers.a: give either command"),
        ({"servers": {"a": {"command": "x", "args": "y"}}}, "servers.a.args: must be a list"),
        ({"mcp": {"servers": {"a": {"url": "http://h/mcp", "timeout": 0}}}}, "a.timeout"),
        ({"mcpServers": {"a": {"command": "x", "type": "carrier-pigeon"}}}, "a.type"),
    ],
)
def test_a_file_that_is_not_an_mcp_configuration_is_refused_naming_the_place(
    config: dict[str, object], problem: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=problem):
        McpSource(config)


def test_environment_variables_fill_headers_and_a_missing_one_fails_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mcp_client_tools

    monkeypatch.setenv("MCP_TEST_TOKEN", "s3cret")
    with HttpServer(mcp_client_tools.toolkit, ServerOptions(token="s3cret"), port=0) as server:
        server.start()
        config = {
            "servers": {
                "ok": {"url": server.url, "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"}},
                "missing": {"url": server.url, "headers": {"Authorization": "${env:NOT_SET_X}"}},
            }
        }
        with McpSource(config).connect() as source:
            status = source.status()
            assert status["ok"].status == "connected"
            assert status["missing"].status == "failed"
            assert "NOT_SET_X" in (status["missing"].reason or "")
            with Host(source.toolkit) as host:
                assert host.call("ok_echo", {"text": "in"}).output == "in"


def _children() -> set[int]:
    import os

    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.add(int(entry))
    return found


@pytest.mark.slow  # 200 cycles on each transport, as issue 25 asks: 200 child interpreters
@pytest.mark.skipif(sys.platform != "linux", reason="counts children through /proc")
def test_200_connect_close_cycles_leak_no_thread_and_no_child() -> None:
    import mcp_client_tools

    threads_before = threading.active_count()
    children_before = _children()
    with HttpServer(mcp_client_tools.toolkit, port=0) as server:
        server.start()
        for index in range(200):
            version = "2025-11-25" if index % 2 else "2026-07-28"
            with McpClient(url=server.url, protocol_version=version) as client:
                assert client.call_tool("echo", {"text": "x"}).output == "x"
    for _ in range(200):
        with fake("fine") as client:
            client.connect()
    assert _children() == children_before
    # Threads the package shares (timer, dispatcher) may come and go; ours must not pile up.
    assert threading.active_count() <= threads_before + 4


def test_an_idle_call_times_out_and_the_connection_goes_on() -> None:
    import mcp_client_tools  # noqa: F401  (the served tools)

    command = [
        sys.executable,
        "-m",
        "toolnexus",
        "serve",
        f"{Path(__file__).parent}/mcp_client_tools.py:toolkit",
    ]
    with McpClient(command[0], command[1:], name="srv", idle_timeout_ms=300) as client:
        result = client.call_tool("wait", {"seconds": 30})
        assert result.is_error
        assert result.output.startswith("timed out: wait on MCP server srv sent nothing for 300 ms")
        assert client.call_tool("echo", {"text": "still"}).output == "still"


@pytest.mark.skipif(sys.platform != "linux", reason="looks the child up in /proc")
def test_interpreter_exit_ends_the_server_process() -> None:
    import os
    import subprocess

    script = (
        "import sys\n"
        "from toolnexus.mcp import McpClient\n"
        f"client = McpClient(sys.executable, [{FAKE!r}, 'linger'])\n"
        "client.connect()\n"
        "print(client.pid, flush=True)\n"
        # no close(): the exit hook must end the child
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    child = int(done.stdout.strip())
    assert not os.path.exists(f"/proc/{child}") or "Z" in _state(child)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_server_that_stops_reading_loses_its_own_session_never_a_worker() -> None:
    # The deaf server reads nothing once it listed its tools: a call whose arguments fill
    # the pipe used to block its worker in the write (and the cancel queued behind it),
    # until the host abandoned it as stuck. Now the writer's bound ends that connection.
    from toolnexus import Toolkit, tool

    @tool
    def local(text: str) -> str:
        """A local tool beside the servers."""
        return text

    with (
        fake("deaf", timeout_ms=3000) as deaf,
        fake("fine") as fine,
        Host(
            Toolkit([*deaf.tools(), *fine.tools(prefix="ok_"), local]),
            timeout_ms=20_000,
            grace_ms=100,
            max_stuck=1,
        ) as host,
    ):
        result = host.call("fake_echo", {"text": "x" * 1_000_000})
        assert result.is_error, result.output
        assert "the server does not read its input" in result.output, result.output
        assert host.stuck_workers == 0
        assert host.call("ok_echo", {"text": "still here"}).output == "still here"
        assert host.call("local", {"text": "and here"}).output == "and here"
        assert host.stuck_workers == 0


def test_a_server_flooding_requests_without_reading_the_replies_does_not_block_the_reader() -> None:
    # Twenty thousand pings before the answer, their replies never read: a reader that
    # wrote each reply itself blocked once the pipe was full and never read the answer.
    with fake("flood", timeout_ms=20_000) as client:
        result = client.call_tool("echo", {"text": "through"}, timeout_ms=20_000)
    assert not result.is_error, result.output
    assert result.output == "through"


@pytest.mark.parametrize(("how", "action"), [("declines", "decline"), ("lets expire", "cancel")])
def test_a_question_the_host_gives_up_is_answered_to_the_legacy_server_at_once(
    how: str, action: str
) -> None:
    # A legacy server's question waits for the client's answer; the host's loop rule
    # never runs the tool again after a decline, so the client used to answer the server
    # only when its own question_timeout_ms (5 minutes) ran out.
    never = threading.Event()

    def wait_for(request: Request) -> Answer:
        if how == "declines":
            return Answer(request.id, False, reason="declined")
        never.wait(30)  # past the host's question_timeout_ms
        return Answer.accept(request)

    with fake("ask") as client:
        host = Host(Toolkit(client.tools()), wait_for=wait_for, question_timeout_ms=100)
        with host:
            first = host.call("fake_echo", {"text": "ask"}, timeout_ms=20_000)
        never.set()
        assert first.output == "declined/expired: Your name?", first.output
        # The server heard it, long before the client's own 5 minutes.
        assert client.call_tool("echo", {"text": "heard"}, timeout_ms=20_000).output == action
