"""The stdio server end to end: ``python -m toolnexus serve`` over real pipes, and
``serve_stdio`` in-process with streams the test owns.

The served tools live in ``tests/stdio_tools.py`` (a module without pytest, quick to import).
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from typing import Any

import pytest

from stdio_helpers import MODERN, StdioClient
from stdio_tools import toolkit
from timing import TIMEOUT
from toolnexus.mcp import ServerOptions, serve_stdio

SPEC = "tests/stdio_tools.py:toolkit"


@pytest.fixture
def server() -> Any:
    with StdioClient.serving(SPEC) as running:
        yield running


# --------------------------------------------------------------------------- end to end


def test_a_legacy_client_lists_and_calls_tools_over_real_pipes(server: StdioClient) -> None:
    hello = server.initialize()
    assert hello["result"]["protocolVersion"] == "2025-11-25"
    assert hello["result"]["serverInfo"]["name"] == "toolnexus"
    listed = server.request(1, "tools/list")
    assert [t["name"] for t in listed["result"]["tools"]] == [t.name for t in toolkit]
    answer = server.request(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    assert answer == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {
            "content": [{"type": "text", "text": "42"}],
            "isError": False,
            "structuredContent": {"result": 42},
        },
    }
    assert server.finish() == 0


def test_a_modern_client_discovers_calls_and_answers_an_input_request(server: StdioClient) -> None:
    found = server.request("d", "server/discover", {"_meta": MODERN})["result"]
    assert found["supportedVersions"][0] == "2026-07-28"
    first = server.request(1, "tools/call", {"name": "deploy", "_meta": MODERN})["result"]
    assert first["resultType"] == "input_required"
    (key,) = first["inputRequests"]
    retry = {
        "name": "deploy",
        "_meta": MODERN,
        "requestState": first["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"env": "staging"}}},
    }
    final = server.request(2, "tools/call", retry)["result"]
    assert final["content"] == [{"type": "text", "text": "deployed to staging"}]
    assert final["resultType"] == "complete"
    assert server.finish() == 0


def test_a_legacy_elicitation_round_trip_over_pipes(server: StdioClient) -> None:
    server.initialize(elicitation={})
    server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "deploy"}})
    asked = server.receive()
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["message"] == "Which environment?"
    server.send(
        {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"action": "accept", "content": {"env": "prod"}},
        }
    )
    final = server.receive()
    assert final["id"] == 5
    assert final["result"]["content"] == [{"type": "text", "text": "deployed to prod"}]


def test_stdout_carries_only_protocol_json_even_when_a_tool_prints(server: StdioClient) -> None:
    server.initialize()
    answer = server.request(1, "tools/call", {"name": "shout", "arguments": {"text": "hi"}})
    assert answer["result"]["content"][0]["text"] == "HI"
    assert server.finish() == 0
    for line in server.raw:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert b"noise from print()" in server.stderr
    assert b"noise written to fd 1" in server.stderr


def test_pings_are_answered_and_a_cancel_reaches_the_running_tool(server: StdioClient) -> None:
    server.initialize()
    server.send(
        {
            "jsonrpc": "2.0",
            "id": "long",
            "method": "tools/call",
            "params": {"name": "wait_for_cancel", "_meta": {"progressToken": "p"}},
        }
    )
    started = server.receive()
    assert started["method"] == "notifications/progress"
    assert started["params"]["message"] == "started"
    assert server.request("ping-1", "ping") == {"jsonrpc": "2.0", "id": "ping-1", "result": {}}
    server.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long"}}
    )
    seen = server.request("check", "tools/call", {"name": "last_cancel"})
    assert seen["id"] == "check"
    assert seen["result"]["content"][0]["text"] == "cancelled"
    assert server.finish() == 0
    assert all(message.get("id") != "long" for message in server.remaining())


def test_concurrent_calls_are_each_answered_once_with_their_own_result(server: StdioClient) -> None:
    server.initialize()
    for i in range(40):
        server.send(
            {
                "jsonrpc": "2.0",
                "id": f"c{i}",
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": i, "b": 1000}},
            }
        )
    answers = {}
    for _ in range(40):
        message = server.receive()
        assert message["id"] not in answers
        answers[message["id"]] = message["result"]["content"][0]["text"]
    assert answers == {f"c{i}": str(i + 1000) for i in range(40)}


def test_progress_arrives_in_order_before_the_response(server: StdioClient) -> None:
    server.initialize()
    server.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "steps", "arguments": {"count": 5}, "_meta": {"progressToken": 9}},
        }
    )
    received = [server.receive() for _ in range(6)]
    assert [m["params"]["progress"] for m in received[:5]] == [1, 2, 3, 4, 5]
    assert all(m["params"]["progressToken"] == 9 for m in received[:5])
    assert received[5]["id"] == 1
    assert received[5]["result"]["content"][0]["text"] == "5 steps"


def test_a_tool_logs_to_its_client_at_the_level_set_before_the_call(server: StdioClient) -> None:
    server.initialize()
    # No level set: the tool's log messages go nowhere; its answer comes alone.
    unasked = server.request(1, "tools/call", {"name": "chatty", "arguments": {}})
    assert unasked["id"] == 1 and unasked["result"]["content"][0]["text"] == "logged"
    assert server.request(2, "logging/setLevel", {"level": "info"}) == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {},
    }
    server.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "chatty"}})
    heard, answer = server.receive(), server.receive()
    assert heard == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "warning", "logger": "fs", "data": {"disk": "nearly full"}},
    }
    assert answer["id"] == 3 and answer["result"]["content"][0]["text"] == "logged"


def test_a_call_that_finishes_within_the_grace_period_is_still_answered_after_stdin_closes(
    server: StdioClient,
) -> None:
    server.initialize()
    server.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "nap", "arguments": {"ms": 200}},
        }
    )
    server.close_stdin()
    assert server.finish() == 0
    rest = server.remaining()
    assert [m["id"] for m in rest] == [1]
    assert rest[0]["result"]["content"][0]["text"] == "slept 200 ms"


@pytest.mark.slow  # the 1 s grace, then 1 s for the stuck thread
def test_closing_stdin_exits_even_while_a_tool_ignores_cancellation(server: StdioClient) -> None:
    server.initialize()
    server.send(
        {
            "jsonrpc": "2.0",
            "id": "stuck",
            "method": "tools/call",
            "params": {"name": "stubborn", "_meta": {"progressToken": "s"}},
        }
    )
    assert server.receive()["params"]["message"] == "started"
    server.close_stdin()
    assert server.finish() == 0  # within TIMEOUT, although the tool sleeps for an hour
    assert server.remaining() == []


def test_garbage_lines_are_answered_and_the_server_keeps_serving(server: StdioClient) -> None:
    server.send(b"\xff\xfe not utf-8\n")
    assert server.receive()["error"]["code"] == -32700
    server.send(b"{not json\n")
    parse_error = server.receive()
    assert (parse_error["id"], parse_error["error"]["code"]) == (None, -32700)
    server.send(b"[]\n")
    assert server.receive()["error"]["code"] == -32600
    server.send(b"\n")
    assert server.request(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_timeout_option_bounds_each_call() -> None:
    with StdioClient.serving(SPEC, "--timeout", "200") as running:
        running.initialize()
        answer = running.request(1, "tools/call", {"name": "stubborn"})
        assert answer["result"]["isError"] is True
        assert answer["result"]["content"][0]["text"].startswith("timed out after 200 ms")


def test_name_and_version_options_are_the_server_identity() -> None:
    with StdioClient.serving(SPEC, "--name", "calc", "--version", "2.1") as running:
        assert running.initialize()["result"]["serverInfo"] == {"name": "calc", "version": "2.1"}
        assert running.finish() == 0


# --------------------------------------------------------------------------- in process


def serve_in_thread(**options: Any) -> tuple[Any, Any, threading.Thread, list[int]]:
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    stdin = open(read_in, "rb")  # noqa: SIM115 - closed by the test
    stdout = open(write_out, "wb")  # noqa: SIM115 - closed by the test
    codes: list[int] = []

    def target() -> None:
        try:
            codes.append(serve_stdio(toolkit, ServerOptions(**options), stdin=stdin, stdout=stdout))
        finally:
            stdout.close()
            stdin.close()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return open(write_in, "wb"), open(read_out, "rb"), thread, codes


def test_a_line_over_the_limit_is_refused_without_reading_it_whole() -> None:
    to_server, from_server, thread, codes = serve_in_thread(max_message_bytes=1024)
    try:
        payload = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 100_000}}
        to_server.write(json.dumps(payload).encode() + b"\n")
        to_server.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        to_server.flush()
        refused = json.loads(from_server.readline())
        assert refused["id"] is None and refused["error"]["code"] == -32600
        assert "too large" in refused["error"]["message"]
        assert json.loads(from_server.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    finally:
        to_server.close()
        thread.join(TIMEOUT)
        from_server.close()
    assert codes == [0]


def test_serve_stdio_reads_and_writes_text_streams() -> None:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        },
    ]
    stdin = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    stdout = io.StringIO()
    assert (
        serve_stdio(toolkit, ServerOptions(name="calc", version="1"), stdin=stdin, stdout=stdout)
        == 0
    )
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"]["content"][0]["text"] == "2"


def test_serve_stdio_restores_sys_stdout_afterwards() -> None:
    before = sys.stdout
    serve_stdio(toolkit, stdin=io.StringIO(""), stdout=io.StringIO())
    assert sys.stdout is before


def test_serve_stdio_returns_1_when_stdout_is_gone() -> None:
    class Broken(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            raise BrokenPipeError("the client went away")

    stdin = io.BytesIO(
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    )
    assert serve_stdio(toolkit, stdin=stdin, stdout=Broken()) == 1


@pytest.mark.parametrize(
    "options, match",
    [
        (
            {"max_message_bytes": 10},
            r"ServerOptions.max_message_bytes must be an int >= 64 \(bytes\)",
        ),
        ({"grace_ms": -1}, r"ServerOptions.grace_ms must be an int >= 0 \(milliseconds\)"),
        ({"timeout_ms": -5}, "HostOptions.timeout_ms must be None or an int >= 0"),
        ({"name": ""}, "ServerOptions.name must be a non-empty str"),
        ({"allowed_hosts": "example.com"}, "allowed_hosts must be a list of strings"),
    ],
)
def test_bad_server_options_are_refused_at_once_naming_the_field(
    options: dict[str, Any], match: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        ServerOptions(**options)


def test_serve_stdio_says_what_to_pass_for_options_that_are_not_server_options() -> None:
    with pytest.raises(TypeError, match=r"options must be a ServerOptions .*got dict"):
        serve_stdio(toolkit, {"name": "x"}, stdin=io.StringIO(""), stdout=io.StringIO())  # type: ignore[arg-type]
