"""Each fast path on the served call's way gives what the plain path it stands in for gives:
the same calls run both ways, and what the caller sees is the same.

- ``Call._returned``: a tool's answer with no deadline armed is settled at once, without
  the loop rule's ``_settle_attempt_locked`` (which, for an answer, only cancels the
  deadline's timer and settles it "ok");
- ``CallBridge.report``: the session's one answer is delivered directly, without
  ``dispatch``;
- ``success_result``: what a tool returns becomes its successful ``ToolResult`` without the
  checked constructor's checks;
- the MCP client's HTTP request: its header fields checked by one expression over their
  lines, not by ``putheader`` one at a time, and sent byte for byte as ``http.client``'s
  ``request`` sends them (or refused as it refuses them);
- the MCP client's HTTP response: its fields read into a dict, not the ``email`` package's
  ``Message``, and seen as ``http.client`` shows them.
"""

from __future__ import annotations

import http.client
import io
import json
from typing import Any

import pytest

from recording_bridge import initialized, started
from toolnexus import Host, Toolkit, ToolResult, tool
from toolnexus._call import Call
from toolnexus._frozen import FrozenDict
from toolnexus._result import NO_METADATA
from toolnexus.mcp._client import _http
from toolnexus.mcp._server._bridge import InflightBytes


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def shape(n: int) -> dict[str, int]:
    """A structured answer."""
    return {"n": n, "twice": 2 * n}


@tool
def said() -> ToolResult:
    """A result the tool made itself, with metadata."""
    return ToolResult.ok("said", metadata={"source": "here"})


@tool
def broken() -> str:
    """Fails."""
    raise RuntimeError("disk full")


TOOLKIT = Toolkit([add, shape, said, broken])
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 2, "b": 3}),
    ("shape", {"n": 4}),
    ("said", {}),
    ("broken", {}),
    ("add", {"a": "two"}),  # bad arguments: settled before any tool runs
    ("nope", {}),  # an unknown tool
]


def _run(host: Host) -> list[tuple[Any, ...]]:
    seen: list[tuple[Any, ...]] = []
    for name, args in CALLS:
        callbacks: list[Call] = []
        call = host.submit(name, args)
        call.add_done_callback(callbacks.append)
        result = call.result(timeout=30)
        assert callbacks == [call]
        seen.append((result.to_dict(), call.outcome, call.reason, call.cancelled()))
        seen.append(("call", host.call(name, args).to_dict()))
    return seen


def test_an_answer_without_a_deadline_settles_as_the_loop_rule_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = Call._settle_attempt_locked
    through_rule: list[str] = []

    def counted(self: Call, result: ToolResult) -> list[int]:
        through_rule.append(self.name)
        return plain(self, result)

    monkeypatch.setattr(Call, "_settle_attempt_locked", counted)
    fast_events: list[Any] = []
    with Host(TOOLKIT, on_event=fast_events.append) as host:
        fast = _run(host)
    fast_rule = list(through_rule)
    through_rule.clear()
    plain_events: list[Any] = []
    with Host(TOOLKIT, timeout_ms=60_000, on_event=plain_events.append) as host:
        slow = _run(host)
    # Both ways were taken: without a deadline only the errors (the tool's raise, the bad
    # arguments its wrapper refused) went through the rule; with one, every call that
    # reached its tool did (not the unknown one).
    assert fast_rule == ["broken", "broken", "add", "add"]
    assert through_rule == ["add", "add", "shape", "shape", "said", "said", *fast_rule]
    assert fast == slow
    assert [(e.name, e.outcome, e.request_id) for e in fast_events] == [
        (e.name, e.outcome, e.request_id) for e in plain_events
    ]


RESULTS = [
    ToolResult.ok("5"),
    ToolResult.error("disk full"),
    ToolResult.ok("shaped", metadata={"structuredContent": {"n": 4}}),
]


def test_a_reported_answer_is_delivered_as_dispatch_delivers_it() -> None:
    fast, plain = initialized(TOOLKIT), initialized(TOOLKIT)
    for n, result in enumerate(RESULTS, 1):
        # The fast path: report() delivers the session's one answer itself.
        entry = started(fast, n, "add", {"a": n, "b": 1})
        fast.report(entry.call_id, result)
        # The plain path: the same answer through dispatch, with report's bookkeeping.
        entry = started(plain, n, "add", {"a": n, "b": 1})
        with plain.lock:
            assert plain.calls.pop(entry.call_id) is entry
            plain.inflight.give(entry.weight)
            assert plain.dispatch(plain.session.complete_call(entry.call_id, result)) == []
    assert fast.lines == plain.lines
    assert [json.loads(line)["id"] for line in fast.lines] == [1, 2, 3]
    assert fast.inflight.used == plain.inflight.used == 0
    assert not fast.busy and not plain.busy
    assert fast.session.running_calls == plain.session.running_calls == 0


def test_a_cancelled_calls_report_delivers_nothing_either_way() -> None:
    bridge = initialized(TOOLKIT)
    entry = started(bridge, 1, "add", {"a": 1, "b": 1})
    bridge.feed(
        bridge.session.receive_line,
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
    )
    bridge.report(entry.call_id, ToolResult.ok("late"))
    assert bridge.lines == []
    assert not bridge.busy and bridge.inflight.used == 0


def test_a_guarded_byte_cap_counts_and_refuses_as_a_locked_one() -> None:
    def run(cap: InflightBytes) -> list[Any]:
        seen: list[Any] = []
        for weight in (40, 50, 20, 10):
            seen.append((cap.take(weight), cap.used, cap.peak))
        cap.give(40)
        seen.append((cap.take(35), cap.used, cap.peak))
        cap.give(50)
        cap.give(10)
        cap.give(35)
        seen.append((cap.used, cap.peak))
        return seen

    guarded = run(InflightBytes(100, guarded=True))
    assert guarded == run(InflightBytes(100))
    assert guarded[2][0] is not None and "over the limit of 100" in guarded[2][0]
    assert guarded[-1] == (0, 100)


class Label(str):
    """A str subclass a tool may return: its answer is the plain text."""


RETURNED: list[Any] = [
    "plain",
    "",
    Label("labelled"),
    "naïve ✓ \u2028",
    7,
    -2.5,
    True,
    None,
    {"n": 1, "nested": {"list": [1, "x", None]}},
    [1, 2, 3],
]


@pytest.mark.parametrize("value", RETURNED, ids=lambda value: type(value).__name__)
def test_a_returned_value_becomes_the_result_the_checked_constructor_builds(value: Any) -> None:
    @tool
    def give() -> Any:
        """Returns the value under test."""
        return value

    result = give({})
    # The result the checked constructor builds from the same parts.
    checked = ToolResult(str(result.output), False, dict(result.metadata) or None)
    assert result == checked and hash(result) == hash(checked) and repr(result) == repr(checked)
    assert type(result.output) is str and result.is_error is False and result.parts == ()
    if isinstance(value, str):
        assert result.output == str(value) and result.metadata is NO_METADATA
    elif value is None:
        assert result.output == "" and result.metadata is NO_METADATA
    else:
        assert json.loads(result.output) == value
        assert type(result.metadata) is FrozenDict
        assert result.metadata["structuredContent"] == {"result": value} or (
            result.metadata["structuredContent"] == value
        )
    with pytest.raises(AttributeError):
        result.output = "changed"  # type: ignore[misc]


# --------------------------------------------------------------------------- HTTP client


class _Wire:
    """A socket that keeps what is sent, and reads a canned answer."""

    def __init__(self, answer: bytes = b"") -> None:
        self.writes: list[bytes] = []
        self.answer = answer

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.answer))  # type: ignore[arg-type]

    def close(self) -> None:
        pass


def _sent(connection: http.client.HTTPConnection, send: Any) -> list[bytes] | type[Exception]:
    """The writes ``send()`` made on ``connection``, or the type of what it raised."""
    wire = _Wire()
    connection.sock = wire  # type: ignore[assignment]
    try:
        send()
    except (ValueError, http.client.HTTPException) as exc:
        return type(exc)
    return wire.writes


BASE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
FIELDS = [
    BASE,
    {**BASE, "Mcp-Name": "add", "Authorization": "Bearer abc.def", "X-Latin": "caf\xe9"},
    {**BASE, "Host": "elsewhere.test", "Accept-Encoding": "gzip"},  # they replace http.client's
    {**BASE, "Content-Length": "2"},  # a length given: none added
    {**BASE, "X-Control": "a\x01b"},  # http.client sends it: so through putheader
    {**BASE, "X-Tab": "a\tb", "X-Empty": ""},
    {**BASE, "X-Injected": "a\r\nEvil: 1"},  # refused
    {**BASE, "X-Folded": "a\r\n b"},  # obsolete folding: http.client sends it
    {**BASE, "X:Y": "1"},  # refused
    {**BASE, "X-Bare-LF": "a\nb"},  # refused
    {**BASE, "X-Wide": "\u0100"},  # not latin-1: refused
    {**BASE, "Bad Name": "1"},  # refused
    {**BASE, "": "1"},  # refused
]


@pytest.mark.parametrize("fields", FIELDS, ids=range(len(FIELDS)))
@pytest.mark.parametrize(
    ("method", "body"), [("POST", b"{}"), ("POST", None), ("GET", None), ("DELETE", None)]
)
def test_a_request_is_sent_byte_for_byte_as_http_clients_request_sends_it(
    fields: dict[str, str], method: str, body: bytes | None
) -> None:
    ours = _http._Http("upstream.test", 8443)
    plain = http.client.HTTPConnection("upstream.test", 8443)
    sent = _sent(ours, lambda: ours.request_at_once(method, "/mcp?x=1", body, fields))
    expected = _sent(plain, lambda: plain.request(method, "/mcp?x=1", body, fields))
    if isinstance(expected, list):  # the same bytes, the head and the body in one write
        assert isinstance(sent, list) and len(sent) == 1
        assert sent[0] == b"".join(expected) and sent[0].endswith(b"\r\n\r\n" + (body or b""))
    else:
        assert sent is expected  # refused with the same exception


ANSWERS = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
    b"Mcp-Session-Id: s-1\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    b"\r\n2\r\n{}\r\n0\r\n\r\n",
    b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer error="invalid_token"\r\n'
    b"Connection: close\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.0 202 Accepted\r\nKeep-Alive: timeout=5\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",  # email parser
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-Spaced:   v  \r\n\r\n",
]
NAMES = ["content-type", "CONTENT-LENGTH", "Mcp-Session-Id", "set-cookie", "www-authenticate"]
NAMES += ["transfer-encoding", "x-folded", "x-spaced", "missing", "connection", "keep-alive"]


@pytest.mark.parametrize("answer", ANSWERS, ids=range(len(ANSWERS)))
def test_a_response_is_seen_as_http_client_shows_it(answer: bytes) -> None:
    def read(response_class: type[http.client.HTTPResponse]) -> tuple[Any, ...]:
        response = response_class(_Wire(answer), method="POST")  # type: ignore[arg-type]
        response.begin()
        headers = response.headers
        return (
            response.status,
            response.reason,
            response.version,
            response.getheaders(),
            [(name, response.getheader(name), response.getheader(name, "-")) for name in NAMES],
            [(name, headers.get(name), headers.get_all(name), name in headers) for name in NAMES],
            (response.chunked, response.length, response.will_close),
            response.read(),
        )

    assert read(_http._Response) == read(http.client.HTTPResponse)
