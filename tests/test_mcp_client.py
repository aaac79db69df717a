"""The MCP client against our own server: stdio and HTTP, both eras, through a Host.

Remote tools are ordinary Tools: listed with their schemas as sent, called with the host's
deadlines and cancellation, progress, parts and structured output, and questions that come
back as pending results a later resume (or an inline ``wait_for``) answers.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_client_tools
from toolnexus import Answer, Host, Request, Toolkit, ToolResult
from toolnexus.mcp import HttpServer, McpClient, ServerOptions

TOOLS = str(Path(__file__).with_name("mcp_client_tools.py"))
SECRET = "mcp-client-tests-secret-0123456789"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


def serve_command() -> tuple[str, list[str]]:
    return sys.executable, ["-m", "toolnexus", "serve", f"{TOOLS}:toolkit"]


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    with HttpServer(mcp_client_tools.toolkit, ServerOptions(secret=SECRET), port=0) as server:
        server.start()
        yield server


@pytest.fixture(
    scope="module", params=["stdio-modern", "stdio-legacy", "http-modern", "http-legacy"]
)
def client(request: pytest.FixtureRequest, http_server: HttpServer) -> Iterator[McpClient]:
    transport, era = request.param.split("-")
    version = MODERN if era == "modern" else LEGACY
    if transport == "stdio":
        command, args = serve_command()
        made = McpClient(
            command,
            args,
            name="srv",
            protocol_version=version,
            log_level="info",
            env={"TOOLNEXUS_SECRET": SECRET},
        )
    else:
        made = McpClient(
            url=http_server.url, name="srv", protocol_version=version, log_level="info"
        )
    with made:
        yield made


@pytest.fixture(scope="module")
def toolkit(client: McpClient) -> Toolkit:
    return Toolkit(client.tools())


def test_the_connection_speaks_the_era_it_was_asked_for(client: McpClient) -> None:
    client.connect()
    assert client.era in ("modern", "legacy")
    assert client.protocol_version == (MODERN if client.era == "modern" else LEGACY)
    assert client.server_info["name"] == "toolnexus"


def test_remote_tools_keep_the_schemas_the_server_sent(client: McpClient, toolkit: Toolkit) -> None:
    sent = {entry["name"]: entry for entry in client.list_tools()}
    assert [tool.name for tool in toolkit] == [f"srv_{name}" for name in sent]
    for tool in toolkit:
        entry = sent[tool.name.removeprefix("srv_")]
        assert tool.source == "mcp"
        assert tool.input_schema == entry["inputSchema"]
        assert tool.description == entry["description"]
    assert toolkit.get("srv_add").output_schema == sent["add"]["outputSchema"]


def test_a_call_returns_text_and_structured_output(toolkit: Toolkit) -> None:
    with Host(toolkit, timeout_ms=10_000) as host:
        result = host.call("srv_add", {"a": 2, "b": 40})
    assert result.output == "42"
    assert result.metadata is not None and result.metadata["structuredContent"] == {"result": 42}


def test_arguments_are_checked_against_the_remote_schema_before_sending(toolkit: Toolkit) -> None:
    with Host(toolkit) as host:
        result = host.call("srv_add", {"a": 2, "b": "forty"})
    assert result.is_error
    assert "b: expected integer" in result.output


def test_progress_reaches_the_reporter(toolkit: Toolkit) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    with Host(toolkit, timeout_ms=10_000) as host:
        result = host.call(
            "srv_steps", {"count": 3}, progress=lambda p, t, m: seen.append((p, t, m))
        )
    assert result.output == "3 steps"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_a_deadline_holds_against_a_tool_that_never_answers(
    client: McpClient, toolkit: Toolkit
) -> None:
    with Host(toolkit, grace_ms=50) as host:
        started = time.monotonic()
        result = host.call("srv_hang", {"seconds": 30}, timeout_ms=200)
        elapsed = time.monotonic() - started
    client.call_tool("release")  # the server's tool returns now, not at the module's end
    assert result.is_error and result.output.startswith("timed out after 200 ms")
    assert elapsed < 5  # generous: the host answers at its deadline, not after 30 s


def test_a_remote_call_past_the_host_deadline_reads_timed_out_not_cancelled(
    client: McpClient, toolkit: Toolkit
) -> None:
    # The host's deadline cancels the remote tool's token: the client tells that from a
    # caller's cancel by the deadline, not by matching text ("timed out after 200 ms:
    # cancelled by the caller" before).
    with Host(toolkit, grace_ms=5_000) as host:
        result = host.call("srv_hang", {"seconds": 30}, timeout_ms=200)
    client.call_tool("release")
    assert result.is_error
    assert result.output == "timed out after 200 ms: hang on MCP server srv did not answer in time"


def test_a_caller_cancel_within_a_timeout_reads_cancelled(http_server: HttpServer) -> None:
    from toolnexus import CancellationTokenSource

    with McpClient(url=http_server.url, protocol_version=MODERN) as client:
        source = CancellationTokenSource()
        results: list[ToolResult] = []
        call = threading.Thread(
            target=lambda: results.append(
                client.call_tool(
                    "wait", {"seconds": 30}, timeout_ms=60_000, cancellation_token=source.token
                )
            )
        )
        mcp_client_tools.STARTED.clear()
        call.start()
        assert mcp_client_tools.STARTED.wait(10)
        source.cancel()
        call.join(10)
    assert [r.output for r in results] == ["cancelled by the caller"]


def test_errors_and_parts_map_onto_the_result(toolkit: Toolkit) -> None:
    with Host(toolkit, timeout_ms=10_000) as host:
        failed = host.call("srv_fails", {})
        picture = host.call("srv_picture", {})
    assert failed.is_error and failed.output == "it failed on purpose"
    assert picture.output == "a red pixel"
    assert [(p.type, p.mime_type) for p in picture.parts] == [("image", "image/png")]


def test_server_log_messages_go_to_the_client_logger(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="toolnexus.mcp.client"):
        assert client.call_tool("chatty", {}).output == "said it"
    assert any(
        r.name == "toolnexus.mcp.client"
        and "careful now" in r.getMessage()
        and r.levelno == logging.WARNING
        for r in caplog.records
    )


def test_a_question_comes_back_pending_and_a_resume_continues_the_remote_call(
    toolkit: Toolkit,
) -> None:
    with Host(toolkit, timeout_ms=10_000) as host:
        first = host.call("srv_ask", {})
        request = ToolResult.pending_of(first)
        assert request is not None and request.kind == "input"
        assert request.prompt == "Your name?"
        assert request.data is not None
        assert request.data["schema"]["properties"]["name"] == {"type": "string"}
        done = host.resume("srv_ask", {}, first, Answer(request.id, True, {"name": "Ada"}))
    # The field the answer left out gets the default the server's schema gave.
    assert done.output == "hello Ada polite=True"


class DownStore:
    """An answer store that is down while ``down`` is set."""

    def __init__(self) -> None:
        from toolnexus.stores import MemoryAnswerStore

        self.down = False
        self.used = MemoryAnswerStore()

    def consume(self, key: str, expires_at: float) -> bool:
        if self.down:
            from toolnexus import StoreUnavailableError

            raise StoreUnavailableError("redis://cache:6379/0", "connection refused")
        return self.used.consume(key, expires_at)


def test_an_answer_the_server_refused_unused_may_be_sent_again() -> None:
    # The server's store is down: it refuses the resume and uses nothing up; the client's
    # host must not keep the answer as used either, or the resend is refused locally.
    from toolnexus.stores import MemoryAnswerStore

    store = DownStore()
    options = ServerOptions(secret=SECRET, answer_store=store)
    with HttpServer(mcp_client_tools.toolkit, options, port=0) as server:
        server.start()
        client = McpClient(url=server.url, name="srv", protocol_version=MODERN)
        kit = Toolkit(client.tools())
        with client, Host(kit, secret=SECRET, answer_store=MemoryAnswerStore()) as host:
            first = host.call("srv_ask", {})
            request = ToolResult.pending_of(first)
            assert request is not None
            answer = Answer.accept(request, {"name": "Ada"})
            store.down = True
            refused = host.resume("srv_ask", {}, first, answer)
            assert refused.is_error and "send it again once the store is back" in refused.output
            store.down = False
            done = host.resume("srv_ask", {}, first, answer)
            replay = host.resume("srv_ask", {}, first, answer)
    assert done.output == "hello Ada polite=True"
    assert "already answered" in replay.output


def test_a_question_is_answered_inline_by_wait_for(toolkit: Toolkit) -> None:
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(request.id, True, {"name": "Grace", "polite": False})

    with Host(toolkit, timeout_ms=10_000, wait_for=wait_for) as host:
        result = host.call("srv_ask", {})
    assert result.output == "hello Grace polite=False"
    assert [r.prompt for r in asked] == ["Your name?"]


def test_a_url_question_is_an_authorization_request(toolkit: Toolkit) -> None:
    with Host(toolkit, timeout_ms=10_000) as host:
        first = host.call("srv_login", {})
        request = ToolResult.pending_of(first)
        assert request is not None
        assert (request.kind, request.url) == ("authorization", "https://example.com/login")
        done = host.resume("srv_login", {}, first, Answer(request.id, True))
    assert done.output == "signed in"


def test_a_declined_question_is_declined(toolkit: Toolkit) -> None:
    with Host(toolkit, wait_for=lambda r: Answer(r.id, False, reason="declined")) as host:
        result = host.call("srv_ask", {})
    assert result.is_error and result.output.startswith("declined")


def test_call_tool_directly_with_a_timeout(client: McpClient) -> None:
    result = client.call_tool("wait", {"seconds": 30}, timeout_ms=150)
    assert result.is_error and result.output.startswith("timed out after 150 ms")
    assert client.call_tool("echo", {"text": "still here"}).output == "still here"


def test_a_cancel_reaches_the_server(http_server: HttpServer) -> None:
    from toolnexus import CancellationTokenSource

    heard = mcp_client_tools.HEARD
    for version in (MODERN, LEGACY):
        heard.clear()
        with McpClient(url=http_server.url, protocol_version=version) as client:
            source = CancellationTokenSource()
            call = threading.Thread(
                target=client.call_tool,
                args=("wait", {"seconds": 30}),
                kwargs={"cancellation_token": source.token},
            )
            call.start()
            assert mcp_client_tools.STARTED.wait(10)
            source.cancel()
            call.join(10)
            assert not call.is_alive()
            assert heard.wait(10), f"the server's tool never heard the cancel ({version})"
            mcp_client_tools.STARTED.clear()


def test_asyncio_callers_await_without_blocking_the_loop(client: McpClient) -> None:
    import asyncio

    async def main() -> tuple[str, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        spin = asyncio.ensure_future(ticker())
        result = await client.acall_tool("wait", {"seconds": 0.2})
        spin.cancel()
        return result.output, ticks

    output, ticks = asyncio.run(main())
    assert output == "waited"
    assert ticks > 10  # the loop kept turning while the call ran


def test_a_modern_question_is_resumed_by_another_process(tmp_path: Path) -> None:
    command, args = serve_command()
    env = {"TOOLNEXUS_SECRET": SECRET}
    client = McpClient(command, args, name="srv", protocol_version=MODERN, env=env)
    with client, Host(Toolkit(client.tools()), secret=SECRET) as host:
        first = host.call("srv_ask", {})
    assert first.is_pending
    request = ToolResult.pending_of(first)
    assert request is not None
    parked = tmp_path / "pending.json"
    parked.write_text(first.to_json(), encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import sys
        from toolnexus import Answer, Host, Toolkit, ToolResult
        from toolnexus.mcp import McpClient
        pending = ToolResult.from_json(open({str(parked)!r}, encoding="utf-8").read())
        request = ToolResult.pending_of(pending)
        with McpClient({command!r}, {args!r}, name="srv", protocol_version="{MODERN}",
                       env={{"TOOLNEXUS_SECRET": {SECRET!r}}}) as client:
            with Host(Toolkit(client.tools()), secret={SECRET!r}) as host:
                answer = Answer(request.id, True, {{"name": "Lin"}})
                done = host.resume("srv_ask", {{}}, pending, answer)
        print(done.output)
        """
    )
    finished = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "hello Lin polite=True"


def test_a_legacy_question_cannot_outlive_its_session() -> None:
    command, args = serve_command()
    with McpClient(command, args, name="srv", protocol_version=LEGACY) as client:
        tools = client.tools()
        with Host(Toolkit(tools)) as host:
            first = host.call("srv_ask", {})
            request = ToolResult.pending_of(first)
            assert request is not None
    # A new client (a new session) cannot continue the old session's question.
    again = McpClient(command, args, name="srv", protocol_version=LEGACY)
    with again, Host(Toolkit(again.tools())) as host:
        result = host.resume("srv_ask", {}, first, Answer(request.id, True, {"name": "x"}))
    assert result.is_error
    assert "no longer waiting" in result.output and "call the tool again" in result.output


def test_a_restarted_server_is_reconnected_on_the_next_call() -> None:
    import os
    import signal

    command, args = serve_command()
    with McpClient(command, args, name="srv") as client:
        assert client.call_tool("echo", {"text": "one"}).output == "one"
        first_pid = client.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        outputs = [client.call_tool("echo", {"text": "two"}).output for _ in range(2)]
        # The loss may be found by the first call (an error naming it) or before it.
        assert outputs[-1] == "two"
        assert outputs[0] == "two" or "connection to MCP server srv failed" in outputs[0]
        assert client.pid not in (None, first_pid)


def test_json_results_survive(client: McpClient) -> None:
    assert json.loads(client.call_tool("add", {"a": 1, "b": 1}).output) == 2


def test_closed_clients_answer_calls_with_an_error() -> None:
    command, args = serve_command()
    client = McpClient(command, args, name="srv")
    assert client.call_tool("echo", {"text": "x"}).output == "x"
    client.close()
    assert client.is_closed
    result = client.call_tool("echo", {"text": "x"})
    assert result.is_error and "closed" in result.output


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_a_restarted_http_server_is_reconnected_on_the_next_call(version: str) -> None:
    first = HttpServer(mcp_client_tools.toolkit, port=0)
    first.start()
    port = first.address[1]
    with McpClient(url=first.url, name="srv", protocol_version=version) as client:
        try:
            assert client.call_tool("echo", {"text": "one"}).output == "one"
        finally:
            first.shutdown()
        # A new server on the same port knows nothing of the old session (404 on the
        # legacy session id): the client opens a new one and the call goes through.
        with HttpServer(mcp_client_tools.toolkit, port=port) as second:
            second.start()
            assert client.call_tool("echo", {"text": "two"}).output == "two"


def test_a_synchronous_program_never_imports_asyncio() -> None:
    command, args = serve_command()
    script = textwrap.dedent(
        f"""
        import sys
        from toolnexus import Host, Toolkit
        from toolnexus.mcp import McpClient
        with McpClient({command!r}, {args!r}, name="srv") as client:
            with Host(Toolkit(client.tools())) as host:
                assert host.call("srv_echo", {{"text": "x"}}).output == "x"
        print("asyncio" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("how", ["declined by the host", "declined to the server"])
def test_a_declined_legacy_question_leaves_the_next_question_to_its_own_call(how: str) -> None:
    # Over legacy stdio a question names no call. The first call's question is declined:
    # by the host's wait_for (the loop rule does not run the tool again, so the server's
    # request stays unanswered), or by an answer the client sends on to the server, which
    # ends that call there. Either way the next call's question must go to the next call,
    # not to the first: it used to hang there until its deadline.
    command, args = serve_command()
    with McpClient(
        command, args, name="srv", protocol_version=LEGACY, env={"TOOLNEXUS_SECRET": SECRET}
    ) as client:
        toolkit = Toolkit(client.tools())
        if how == "declined by the host":
            with Host(toolkit, wait_for=lambda r: Answer(r.id, False, reason="declined")) as host:
                first = host.call("srv_ask", {})
            assert first.is_error and first.output.startswith("declined"), first.output
        else:
            request = ToolResult.pending_of(client.call_tool("ask", {}))
            assert request is not None
            first = client.call_tool("ask", {}, answer=Answer.decline(request))
            # The server heard the decline: its tool was not run again.
            assert first.is_error and first.output.startswith("declined"), first.output
        asked_second: list[Request] = []

        def accept(request: Request) -> Answer:
            asked_second.append(request)
            return Answer(request.id, True, {"name": "Bo"})

        with Host(toolkit, timeout_ms=20_000, wait_for=accept) as host:
            second = host.call("srv_ask", {})
        assert second.output == "hello Bo polite=True", second.output
        assert [r.prompt for r in asked_second] == ["Your name?"]
