"""The stdio server's promises to hostile and unlucky clients, over real pipes.

It never goes deaf (whatever fails while a line is handled answers that request, and the
next one is answered too), bounds the argument bytes of calls in flight, exits cleanly on
SIGINT/SIGTERM and when stdin closes, leaves no thread behind, and answers a burst of 1000
calls to tools that ignore their deadline exactly once each with a bounded number of
threads.

The served tools live in ``tests/stdio_robustness_tools.py`` (a module without pytest, quick
to import).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stdio_helpers import MODERN, StdioClient
from stdio_robustness_tools import toolkit
from timing import TIMEOUT
from toolnexus import Request, ToolResult, _timers
from toolnexus.mcp import ServerOptions, ServerSession, serve_stdio

DEPTH = 700  # deeper than the session can walk with Python recursion
DECODER_DEPTH = 20_000  # deeper than json.loads itself can parse, on every CPython 3.10-3.13
# (json.loads parses 994 levels on 3.10-3.11, 1,497 on 3.12, 9,998 on 3.13)
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SPEC = "tests/stdio_robustness_tools.py:toolkit"


@pytest.fixture
def client() -> Any:
    with StdioClient.serving(SPEC) as running:
        yield running


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_json(depth: int) -> str:
    return '{"a":' * depth + '"deep"' + "}" * depth


def with_deep(message: Any, depth: int = DEPTH) -> bytes:
    """``message`` as a line, its ``"@DEEP@"`` string replaced by data nested ``depth`` deep
    (built as text: ``json.dumps`` itself cannot nest that deep)."""
    return json.dumps(message).replace('"@DEEP@"', deep_json(depth)).encode() + b"\n"


# --------------------------------------------------------------------------- never deaf


def test_answers_json_cannot_carry_as_they_are_are_still_answered(client: StdioClient) -> None:
    # A legacy client: its text answers are written straight from the result (the
    # session's complete_call_bytes), which hands these two to the general encoder.
    client.request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools_call = {"name": "unwritable", "arguments": {"kind": "surrogate"}}
    escaped = client.request(1, "tools/call", tools_call)["result"]
    assert escaped["content"] == [{"type": "text", "text": "bad \udcff byte"}]
    refused = client.request(2, "tools/call", {**tools_call, "arguments": {"kind": "nan"}})
    assert refused["id"] == 2 and refused["error"]["code"] == -32603
    assert client.request(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "content": [{"type": "text", "text": "3"}],
            "isError": False,
            "structuredContent": {"result": 3},
        },
    }


@pytest.mark.parametrize("depth", [DEPTH, DECODER_DEPTH])
def test_a_legacy_elicitation_answer_nested_too_deep_answers_the_call(
    client: StdioClient, depth: int
) -> None:
    # At DECODER_DEPTH the line cannot even be parsed: its top-level id still names it.
    client.request(
        0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}
    )
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    client.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "deploy", "arguments": {}},
        }
    )
    asked = client.receive()
    assert asked["method"] == "elicitation/create"
    client.send(
        with_deep(
            {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {"action": "accept", "content": {"env": "@DEEP@"}},
            },
            depth,
        )
    )
    answer = client.receive()
    assert answer["id"] == 1 and answer["error"]["code"] == -32602
    assert "nested too deeply" in answer["error"]["message"]
    client.assert_alive()
    # The request id is free again: nothing of the failed call is left in the session.
    again = client.request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert again["result"]["content"][0]["text"] == "3"


@pytest.mark.parametrize("depth", [DEPTH, DECODER_DEPTH])
def test_a_modern_input_response_nested_too_deep_is_answered(
    client: StdioClient, depth: int
) -> None:
    first = client.call(1, "deploy", {})
    state = first["result"]["requestState"]
    (question,) = first["result"]["inputRequests"]
    client.send(
        with_deep(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "deploy",
                    "arguments": {},
                    "requestState": state,
                    "_meta": MODERN,
                    "inputResponses": {
                        question: {"action": "accept", "content": {"env": "@DEEP@"}}
                    },
                },
            },
            depth,
        )
    )
    answer = client.receive()
    assert answer["id"] == 2 and answer["error"]["code"] == -32602
    client.assert_alive()
    # The rejected answer used nothing up: the state still resumes the call.
    done = client.call(
        3,
        "deploy",
        {},
        requestState=state,
        inputResponses={question: {"action": "accept", "content": {"env": "prod"}}},
    )
    assert done["result"]["content"][0]["text"] == "deployed to prod"


def test_deep_arguments_on_a_modern_retry_are_answered(client: StdioClient) -> None:
    first = client.call(1, "deploy", {})
    state = first["result"]["requestState"]
    answer = client.call(2, "deploy", {"x": nested(DEPTH)}, requestState=state, inputResponses={})
    assert answer["id"] == 2 and answer["error"]["code"] == -32602
    client.assert_alive()


def test_deep_arguments_on_a_plain_call_are_an_error_result(client: StdioClient) -> None:
    answer = client.call(1, "add", {"a": nested(DEPTH), "b": 1})
    assert answer["id"] == 1
    assert answer.get("result", {}).get("isError") or answer.get("error")
    client.assert_alive()


FAULTY_SERVER = """
import sys
from toolnexus.mcp import ServerSession, serve_stdio
sys.path.insert(0, "tests")
from stdio_helpers import MODERN, StdioClient
from stdio_robustness_tools import toolkit

receive, receive_line = ServerSession._receive, ServerSession.receive_line
FAULTS = {"explode": MemoryError, "recurse": RecursionError, "bug": RuntimeError}

def faulty_receive(self, message):
    fault = FAULTS.get(message.get("method")) if isinstance(message, dict) else None
    if fault is not None:
        raise fault("injected")
    return receive(self, message)

def faulty_receive_line(self, line):
    if b"line-bomb" in bytes(line):
        raise MemoryError("injected")
    return receive_line(self, line)

ServerSession._receive = faulty_receive  # what receive() guards: handling one message
ServerSession.receive_line = faulty_receive_line
raise SystemExit(serve_stdio(toolkit))
"""


@pytest.fixture
def faulty(tmp_path: Path) -> Any:
    script = tmp_path / "faulty_server.py"
    script.write_text(textwrap.dedent(FAULTY_SERVER))
    running = StdioClient(str(script))
    yield running
    running.kill()


@pytest.mark.parametrize(
    "method, code",
    [("explode", -32603), ("recurse", -32602), ("bug", -32603)],
)
def test_any_failure_handling_a_request_answers_it_and_reading_goes_on(
    faulty: StdioClient, method: str, code: int
) -> None:
    for rid in (f"{method}-1", 17):
        answer = faulty.request(rid, method, {"_meta": MODERN})
        assert answer["id"] == rid and answer["error"]["code"] == code
        faulty.assert_alive(f"ping-after-{rid}")
    # A notification that fails is dropped: the next answer is the ping's.
    faulty.send({"jsonrpc": "2.0", "method": method})
    faulty.assert_alive("ping-after-notification")
    assert faulty.finish() == 0


def test_a_failure_the_session_cannot_catch_is_answered_by_the_reader(faulty: StdioClient) -> None:
    faulty.send(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"line-bomb"}}\n')
    answer = faulty.receive()
    assert answer["id"] is None and answer["error"]["code"] == -32603
    assert "MemoryError" in answer["error"]["message"]
    faulty.assert_alive()
    assert faulty.finish() == 0


@pytest.mark.parametrize("fed_as", ["line", "parsed"])
def test_a_failed_legacy_answer_frees_its_call_in_process(fed_as: str) -> None:
    # "parsed": the HTTP transport feeds parsed messages to receive(), guarded the same way.
    session = ServerSession(toolkit)
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
            "params": {"name": "deploy", "arguments": {}},
        }
    )
    schema = {"type": "object", "properties": {"env": {"type": "string"}}}
    (ask,) = session.complete_call(
        start.call_id, ToolResult.pending(Request("input", "Env?", data={"schema": schema}))
    )
    response = {
        "jsonrpc": "2.0",
        "id": ask.message["id"],
        "result": {"action": "accept", "content": {"env": "@DEEP@"}},
    }
    if fed_as == "line":
        (answer,) = session.receive_line(with_deep(response))
    else:
        response["result"]["content"]["env"] = nested(DEPTH)
        (answer,) = session.receive(response)
    assert answer.message["id"] == 1 and answer.message["error"]["code"] == -32602
    assert session.running_calls == 0
    assert "0 call(s) in flight" in repr(session)


def _line(template: str) -> list[dict[str, Any]]:
    """What a fresh session answers to ``template`` with ``@DEEP@`` made 5000 deep."""
    session = ServerSession(toolkit)
    text = template.replace("@DEEP@", deep_json(DECODER_DEPTH))
    return [dict(action.message) for action in session.receive_line(text)]


@pytest.mark.parametrize(
    ("line", "answered_id"),
    [
        # The top-level id, wherever it stands, past strings with escaped quotes and brackets.
        ('{"jsonrpc":"2.0","method":"ping","params":{"x":@DEEP@},"id":7}', 7),
        (
            '{"id" : "r-\\"}]{1", "method":"tools/call","params":{"s":"\\"{[","d":@DEEP@}}',
            'r-"}]{1',
        ),
        # An "id" inside the params, or spelled inside a string, is not the message's.
        (
            '{"jsonrpc":"2.0","method":"ping","note":"\\"id\\":9","id":3,'
            '"params":{"id":9,"x":@DEEP@}}',
            3,
        ),
    ],
)
def test_a_request_too_deep_to_parse_is_answered_with_its_own_id(
    line: str, answered_id: Any
) -> None:
    (answer,) = _line(line)
    assert answer["id"] == answered_id and answer["error"]["code"] == -32602
    assert "nested too deeply" in answer["error"]["message"]


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","method":"ping","id":1,"params":{"x":@DEEP@}',  # never closes
        '{"jsonrpc":"2.0","method":"ping","id":1,"params":{"x":@DEEP@}}}',  # closes twice
        '{"jsonrpc":"2.0","id":1,"params":{"x":@DEEP@}}',  # neither kind
        '{"jsonrpc":"2.0","method":"ping","id":{"a":1},"x":@DEEP@}',  # no usable id
        "[" * DECODER_DEPTH,  # not an object
        '{"id": 1, "method": "ping"',  # plain bad JSON
    ],
)
def test_a_line_too_deep_or_broken_that_names_nothing_is_a_parse_error(line: str) -> None:
    (answer,) = _line(line)
    assert answer["id"] is None and answer["error"]["code"] == -32700


def test_a_notification_too_deep_to_parse_is_dropped() -> None:
    assert _line('{"jsonrpc":"2.0","method":"notifications/progress","params":@DEEP@}') == []


def test_a_response_too_deep_to_parse_to_nothing_we_asked_is_ignored() -> None:
    assert _line('{"jsonrpc":"2.0","id":"nobody","result":@DEEP@}') == []


# --------------------------------------------------------------------------- the byte cap


def test_arguments_over_the_in_flight_cap_are_answered_overloaded() -> None:
    client = StdioClient.serving(SPEC, "--max-inflight-bytes", "4K")
    try:
        pad = "x" * 2500
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "hold", "arguments": {"pad": pad}, "_meta": MODERN},
            }
        )
        refused = client.call(2, "hold", {"pad": pad})  # 2 x 2.5 KB > 4 KiB
        assert refused["id"] == 2 and refused["error"]["code"] == -32603
        message = refused["error"]["message"]
        assert message.startswith("server overloaded:") and "limit of 4096" in message
        assert "--max-inflight-bytes" in message
        client.assert_alive()
        assert client.call(3, "release", {})["result"]["content"][0]["text"] == "released"
        held = client.receive()
        assert held["id"] == 1 and held["result"]["content"][0]["text"] == "held 2500 bytes"
        # The bytes of the finished call are free again: the same request now runs.
        again = client.call(4, "hold", {"pad": pad})
        assert again["result"]["content"][0]["text"] == "held 2500 bytes"
        assert client.finish() == 0
    finally:
        client.kill()


def test_a_bad_cap_is_a_usage_error() -> None:
    client = StdioClient.serving(SPEC, "--max-inflight-bytes", "lots")
    assert client.finish() == 2
    assert b"--max-inflight-bytes" in client.stderr and b"positive number" in client.stderr


def test_serve_stdio_refuses_a_bad_cap() -> None:
    import io

    with pytest.raises(ValueError, match="max_inflight_bytes must be an int >= 1"):
        serve_stdio(
            toolkit,
            ServerOptions(max_inflight_bytes=0),
            stdin=io.StringIO(""),
            stdout=io.StringIO(),
        )


# --------------------------------------------------------------------------- signals, the end


@posix_only
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("round_", range(3))
def test_a_signal_after_a_finished_call_exits_cleanly(signum: int, code: int, round_: int) -> None:
    client = StdioClient.serving(SPEC)
    try:
        assert client.call(1, "add", {"a": 1, "b": 2})["result"]["content"][0]["text"] == "3"
        client.process.send_signal(signum)
        assert client.finish() == code
        assert b"Fatal Python error" not in client.stderr
        assert b"Traceback" not in client.stderr
    finally:
        client.kill()


@posix_only
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_a_tool_ignores_cancellation_exits_cleanly(signum: int, code: int) -> None:
    client = StdioClient.serving(SPEC)
    try:
        client.assert_alive()
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "stubborn", "arguments": {}, "_meta": MODERN},
            }
        )
        client.assert_alive("ping-while-stubborn")  # the call was read and started
        client.process.send_signal(signum)
        assert client.finish() == code
        assert b"Fatal Python error" not in client.stderr
    finally:
        client.kill()


def test_closing_stdin_answers_the_calls_in_flight_and_exits(client: StdioClient) -> None:
    client.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "sleepy", "arguments": {"ms": 50}, "_meta": MODERN},
        }
    )
    client.assert_alive()
    assert client.finish() == 0
    answer = client.receive()
    assert answer["id"] == 1 and answer["result"]["content"][0]["text"] == "slept 50 ms"
    assert client.lines.get(timeout=TIMEOUT) is None
    assert b"Fatal Python error" not in client.stderr


def test_serve_stdio_leaves_no_thread_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    # The shared timer and dispatcher threads leave after IDLE_SECONDS (2 s) idle; waiting
    # out 0.2 s shows the same.
    monkeypatch.setattr(_timers, "IDLE_SECONDS", 0.2)
    before = set(threading.enumerate())
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    codes: list[int] = []

    def serve() -> None:
        # A deadline per call, so the shared timer runs too (it leaves one idle wait after
        # the last deadline went, however far away that deadline was).
        with open(read_in, "rb") as stdin, open(write_out, "wb") as stdout:
            codes.append(
                serve_stdio(toolkit, ServerOptions(timeout_ms=20_000), stdin=stdin, stdout=stdout)
            )

    server = threading.Thread(target=serve, name="test-serve")
    server.start()
    with open(write_in, "wb") as to_server, open(read_out, "rb") as from_server:
        for rid in range(1, 21):
            params = {"name": "sleepy", "arguments": {"ms": rid}, "_meta": MODERN}
            to_server.write(
                json.dumps(
                    {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
                ).encode()
                + b"\n"
            )
        to_server.flush()
        answered = {json.loads(from_server.readline())["id"] for _ in range(20)}
        assert answered == set(range(1, 21))
        to_server.close()
        assert from_server.readline() == b""  # stdout closed: the server is done
    server.join(TIMEOUT)
    assert not server.is_alive() and codes == [0]
    left = [t for t in threading.enumerate() if t not in before and t is not server]
    # What serve_stdio owns (its reader, the host's workers) is gone when it returns; the
    # package's shared timer and dispatcher threads end once idle for a moment.
    owned = [
        t.name for t in left if not t.name.startswith(("toolnexus-timer", "toolnexus-dispatch"))
    ]
    assert owned == []
    for thread in left:
        thread.join(TIMEOUT)
    assert [t.name for t in left if t.is_alive()] == []


# --------------------------------------------------------------------------- a burst


def _sample_threads(pid: int, stop: threading.Event, peak: list[int]) -> None:
    status = Path(f"/proc/{pid}/status")
    while not stop.wait(0.002):
        try:
            text = status.read_text()
        except OSError:
            return
        for row in text.splitlines():
            if row.startswith("Threads:"):
                peak[0] = max(peak[0], int(row.split()[1]))


def test_a_burst_of_1000_token_ignoring_calls_is_answered_once_each_with_bounded_threads() -> None:
    max_workers, max_stuck = 64, 4  # the host's defaults, which the server uses
    bound = max_workers + max_stuck + 16  # + timer, dispatchers, main, warm-up
    client = StdioClient.serving(SPEC, "--timeout", "30")
    stop = threading.Event()
    sampled = [0]
    sampler = threading.Thread(
        target=_sample_threads, args=(client.process.pid, stop, sampled), daemon=True
    )
    sampler.start()
    try:
        rng = random.Random(9)
        burst = b"".join(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {
                        "name": "sleepy",
                        "arguments": {"ms": rng.randint(50, 200)},
                        "_meta": MODERN,
                    },
                }
            ).encode()
            + b"\n"
            for rid in range(1000)
        )
        client.send(burst)
        answers = [client.receive() for _ in range(1000)]
        counts = Counter(answer["id"] for answer in answers)
        assert sorted(counts) == list(range(1000)) and set(counts.values()) == {1}
        texts = [answer["result"]["content"][0]["text"] for answer in answers]
        refused = [t for t in texts if t.startswith("host overloaded") or "never started" in t]
        started = len(texts) - len(refused)
        # Once every call is answered, every tool body that will ever run has started.
        rid = 1000
        while True:
            rid += 1
            answer = client.call(rid, "stats", {})
            text = answer["result"]["content"][0]["text"]
            if not text.startswith("host overloaded"):
                break
            client.assert_alive(f"wait-{rid}")  # stuck workers still drain; ask again
        numbers = json.loads(text)
        assert numbers["invocations"] == started
        assert numbers["peak_threads"] <= bound
        assert sampled[0] <= bound
        assert client.finish() == 0
        assert b"Fatal Python error" not in client.stderr
    finally:
        stop.set()
        client.kill()
