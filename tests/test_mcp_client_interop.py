"""The MCP client against servers nobody here wrote, through a Host: the official Python
SDK's server (stdio and HTTP, both eras) and ``@modelcontextprotocol/server-everything``
from npm (stdio and HTTP; it speaks the legacy era).

Needs the interop extra (``mcp``); server-everything needs Node and the npm package, named
by ``TOOLNEXUS_EVERYTHING`` (the package's ``dist/index.js``) and ``TOOLNEXUS_NODE``
(default ``node``). ``.ci/run`` installs both and sets ``TOOLNEXUS_REQUIRE_INTEROP=1``, so
there a missing one fails instead of skipping.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require
from timing import TIMEOUT

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "mcp")

from toolnexus import Answer, CancellationTokenSource, Host, Request, Toolkit, ToolResult
from toolnexus.mcp import McpClient

pytestmark = pytest.mark.interop

SDK_SERVER = str(Path(__file__).with_name("interop_sdk_server.py"))
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    """Until the server accepts connections (or has died: then fail with its output)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            process_wait(process, 0.05)
    raise AssertionError(f"the server on port {port} did not start within 30 s")


@contextlib.contextmanager
def served_over_http(config: Path) -> Iterator[str]:
    """``toolnexus serve config --http PORT`` running (a gateway of an ``mcp.json``): its URL."""
    port = free_port()
    command = [sys.executable, "-m", "toolnexus", "serve", str(config), "--http", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(TIMEOUT)


@contextlib.contextmanager
def one_server_config(
    path: Path,
    name: str,
    stdio: dict[str, Any] | None,
    http: Callable[[int], tuple[list[str], dict[str, str]]],
) -> Iterator[Path]:
    """``path`` written as an ``mcp.json`` naming one server, ``name``: the stdio entry
    ``stdio`` (``command``, ``args``, ...), or — ``stdio`` None — the server that
    ``http(port)`` gives the command and added environment of, started here, listening,
    reached by its URL, and ended on the way out."""
    upstream = None
    entry = stdio
    if entry is None:
        port = free_port()
        command, env = http(port)
        upstream = subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_listening(port, upstream)
        entry = {"url": f"http://127.0.0.1:{port}/mcp"}
    path.write_text(json.dumps({"mcpServers": {name: entry}}), encoding="utf-8")
    try:
        yield path
    finally:
        if upstream is not None:
            upstream.terminate()
            upstream.wait(TIMEOUT)


def process_wait(process: subprocess.Popen[bytes], seconds: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(seconds)


def everything() -> tuple[str, str]:
    script = os.environ.get("TOOLNEXUS_EVERYTHING", "")
    node = os.environ.get("TOOLNEXUS_NODE") or shutil.which("node") or ""
    if not (script and os.path.isfile(script) and node):
        message = (
            "server-everything is not available: set TOOLNEXUS_EVERYTHING to its dist/index.js "
            "(npm install @modelcontextprotocol/server-everything) and TOOLNEXUS_NODE to node"
        )
        if os.environ.get("TOOLNEXUS_REQUIRE_INTEROP") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return node, script


@pytest.fixture(scope="module")
def sdk_http() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SDK_SERVER, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(
    scope="module", params=["stdio-modern", "stdio-legacy", "http-modern", "http-legacy"]
)
def sdk(request: pytest.FixtureRequest, sdk_http: str) -> Iterator[McpClient]:
    transport, era = request.param.split("-")
    version = MODERN if era == "modern" else LEGACY
    if transport == "stdio":
        client = McpClient(
            sys.executable, [SDK_SERVER, "stdio"], name="sdk", protocol_version=version
        )
    else:
        client = McpClient(url=sdk_http, name="sdk", protocol_version=version)
    with client:
        yield client


def test_sdk_list_and_call_with_structured_output(sdk: McpClient) -> None:
    with Host(Toolkit(sdk.tools()), timeout_ms=20_000) as host:
        result = host.call("sdk_add", {"a": 2, "b": 40})
    assert sdk.era == ("modern" if sdk.protocol_version == MODERN else "legacy")
    assert result.output == "42"
    assert result.metadata is not None and result.metadata["structuredContent"] == {"result": 42}


def test_sdk_progress_reaches_the_reporter(sdk: McpClient) -> None:
    seen: list[float] = []
    with Host(Toolkit(sdk.tools()), timeout_ms=20_000) as host:
        result = host.call("sdk_steps", {"count": 3}, progress=lambda p, t, m: seen.append(p))
    assert result.output == "3 steps"
    assert seen == [1, 2, 3]


def test_sdk_a_deadline_holds_and_the_cancel_reaches_the_server(
    sdk: McpClient, tmp_path: Path
) -> None:
    marker = tmp_path / "cancelled"
    with Host(Toolkit(sdk.tools()), grace_ms=50) as host:
        started = time.monotonic()
        result = host.call("sdk_sleep", {"seconds": 60, "marker": str(marker)}, timeout_ms=300)
        elapsed = time.monotonic() - started
    assert result.is_error and result.output.startswith("timed out after 300 ms")
    assert elapsed < 10
    # The server is another process: look for its marker until it is written whole.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text(encoding="utf-8") == "cancelled":
            break
        CancellationTokenSource().token.wait(0.05)
    assert marker.read_text(encoding="utf-8") == "cancelled"


def test_sdk_elicitation_answered_inline(sdk: McpClient) -> None:
    with Host(Toolkit(sdk.tools()), wait_for=lambda r: Answer(r.id, True, {"name": "Ada"})) as h:
        assert h.call("sdk_greet", {}).output == "hello Ada"


def test_sdk_elicitation_parked_then_resumed(sdk: McpClient) -> None:
    with Host(Toolkit(sdk.tools()), timeout_ms=20_000) as host:
        first = host.call("sdk_greet", {})
        request = ToolResult.pending_of(first)
        assert isinstance(request, Request) and request.kind == "input"
        assert request.data is not None and "name" in request.data["schema"]["properties"]
        done = host.resume("sdk_greet", {}, first, Answer(request.id, True, {"name": "Lin"}))
    assert done.output == "hello Lin"


def test_sdk_image_results_are_parts(sdk: McpClient) -> None:
    result = sdk.call_tool("picture", {})
    assert [(part.type, part.mime_type) for part in result.parts] == [("image", "image/png")]


# ---------------------------------------------------------------- server-everything


@pytest.fixture(scope="module")
def everything_http() -> Iterator[str]:
    node, script = everything()
    port = free_port()
    process = subprocess.Popen(
        [node, script, "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module", params=["stdio", "http"])
def ev(request: pytest.FixtureRequest) -> Iterator[McpClient]:
    if request.param == "stdio":
        node, script = everything()
        client = McpClient(node, [script, "stdio"], name="ev")
    else:
        client = McpClient(url=request.getfixturevalue("everything_http"), name="ev")
    with client:
        yield client


def test_everything_list_and_call(ev: McpClient) -> None:
    with Host(Toolkit(ev.tools()), timeout_ms=20_000) as host:
        assert host.call("ev_echo", {"message": "hi"}).output == "Echo: hi"
        assert "3" in host.call("ev_get-sum", {"a": 1, "b": 2}).output


def test_everything_progress_and_a_deadline_that_holds(ev: McpClient) -> None:
    seen: list[float] = []
    with Host(Toolkit(ev.tools()), grace_ms=50) as host:
        done = host.call(
            "ev_trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            timeout_ms=20_000,
            progress=lambda p, t, m: seen.append(p),
        )
        assert not done.is_error, done.output
        assert seen == [1, 2, 3]
        started = time.monotonic()
        late = host.call(
            "ev_trigger-long-running-operation", {"duration": 60, "steps": 2}, timeout_ms=300
        )
        assert late.is_error and late.output.startswith("timed out after 300 ms")
        assert time.monotonic() - started < 10
    assert ev.call_tool("echo", {"message": "after"}).output == "Echo: after"


def everything_said(result: ToolResult) -> str:
    """The whole text of a result (server-everything answers in several text blocks)."""
    return "\n".join([result.output, *(part.text or "" for part in result.parts)])


def test_everything_elicitation_inline_and_parked(ev: McpClient) -> None:
    def wait_for(request: Request) -> Answer:
        return Answer(request.id, True, {"name": "Ada", "check": True})

    with Host(Toolkit(ev.tools()), wait_for=wait_for, timeout_ms=20_000) as host:
        inline = host.call("ev_trigger-elicitation-request", {})
    assert not inline.is_error and "Name: Ada" in everything_said(inline)
    with Host(Toolkit(ev.tools()), timeout_ms=20_000) as host:
        first = host.call("ev_trigger-elicitation-request", {})
        request = ToolResult.pending_of(first)
        assert request is not None and request.data is not None
        answer = Answer(request.id, True, {"name": "Lin", "check": False})
        done = host.resume("ev_trigger-elicitation-request", {}, first, answer)
    said = everything_said(done)
    assert not done.is_error and "Name: Lin" in said
    assert "It was a dark and stormy night." in said  # a default the answer left out


def test_everything_a_declined_question_leaves_the_next_one_to_its_own_call(
    ev: McpClient,
) -> None:
    # The host declines the first question (the loop rule does not run the tool again, so
    # server-everything's request stays unanswered); the next call's question names no
    # call either, and used to go to the first call and hang there until its deadline.
    def decline(request: Request) -> Answer:
        return Answer(request.id, False, reason="declined")

    with Host(Toolkit(ev.tools()), wait_for=decline, timeout_ms=20_000) as host:
        first = host.call("ev_trigger-elicitation-request", {})
    assert first.is_error and first.output.startswith("declined"), first.output
    asked: list[Request] = []

    def accept(request: Request) -> Answer:
        asked.append(request)
        return Answer(request.id, True, {"name": "Kay", "check": True})

    with Host(Toolkit(ev.tools()), wait_for=accept, timeout_ms=20_000) as host:
        second = host.call("ev_trigger-elicitation-request", {})
    assert not second.is_error and "Name: Kay" in everything_said(second), second.output
    assert len(asked) == 1


def test_everything_image_and_resource_results(ev: McpClient) -> None:
    image = ev.call_tool("get-tiny-image", {})
    assert "image" in [part.type for part in image.parts]
    resource = ev.call_tool("get-resource-reference", {"resourceType": "Text", "resourceId": 1})
    assert not resource.is_error, resource.output
    assert "file" in [part.type for part in resource.parts]
