"""OpenTelemetry traces and metrics, with the SDK's in-memory exporter (the otel-test extra).

One span per host call after the GenAI ``execute_tool`` conventions, MCP spans on both
sides, W3C trace context in ``_meta`` so one trace runs host -> MCP client -> MCP server
-> tool (over stdio and over HTTP), events for progress and questions, the outcome of a
timeout and a cancel, and the two metrics.

Each test installs an SDK provider for itself only (and takes it away after), so the rest
of the suite runs untraced, as a program that never set a provider does.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_OTEL", "otel-test", "opentelemetry.sdk")

import opentelemetry.metrics._internal as metrics_internal
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_server
from toolnexus import (
    Answer,
    CancellationTokenSource,
    Host,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)
from toolnexus.mcp import HttpServer, McpClient
from toolnexus.policies import require_approval

SERVER = str(Path(__file__).with_name("otel_server.py"))


class Recorded:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.metrics = InMemoryMetricReader()

    def spans(self) -> list[dict[str, Any]]:
        return [otel_server.as_dict(span) for span in self.exporter.get_finished_spans()]

    def named(self, name: str) -> dict[str, Any]:
        found = [s for s in self.spans() if s["name"] == name]
        assert len(found) == 1, [s["name"] for s in self.spans()]
        return found[0]

    def raw(self, name: str) -> ReadableSpan:
        (span,) = [s for s in self.exporter.get_finished_spans() if s.name == name]
        return span


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    recorded = Recorded()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(recorded.exporter))
    meter_provider = MeterProvider(metric_readers=[recorded.metrics])
    # The API sets a provider once per process: set it for this test only, by hand.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", tracer_provider)
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", meter_provider)
    yield recorded
    tracer_provider.shutdown()
    meter_provider.shutdown()


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def steps(ctx: ToolContext) -> str:
    """Reports progress twice."""
    ctx.report_progress(1, 2, "half")
    ctx.report_progress(2, 2, "done")
    return "stepped"


HELD = threading.Event()


@tool
def hold(ctx: ToolContext) -> str:
    """Waits for its token."""
    HELD.set()
    ctx.cancellation_token.wait(30)
    return "stopped"


@tool
def ask(ctx: ToolContext) -> str:
    """Asks, then answers."""
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Which?", id="pnd-which"))  # type: ignore[return-value]
    return "answered"


TOOLKIT = Toolkit([add, steps, hold, ask])


# --------------------------------------------------------------------------- the host's span


def test_a_call_is_one_execute_tool_span_with_the_genai_attributes(otel: Recorded) -> None:
    calls = [
        {
            "id": "call_7",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
        }
    ]
    with Host(TOOLKIT, timeout_ms=5_000) as host:
        host.run_turn(calls)
    span = otel.named("execute_tool add")
    assert span["kind"] == "INTERNAL" and span["parent_id"] is None
    assert span["attributes"] == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
        "gen_ai.tool.call.id": "call_7",
        "toolnexus.tool.caller": "direct",
        "toolnexus.timeout_ms": 5_000,
        "toolnexus.outcome": "ok",
    }


def test_a_programmatic_call_records_its_caller_on_its_span(otel: Recorded) -> None:
    @tool(allowed_callers=["programmatic"])
    def total(a: int, b: int) -> int:
        """Add, for code."""
        return a + b

    blocks = [
        {"type": "tool_use", "id": "toolu_1", "name": "total", "input": {"a": 1, "b": 2},
         "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_1"}},
    ]  # fmt: skip
    with Host(Toolkit([total])) as host:
        host.run_turn(blocks, style="anthropic")
        host.call("total", {"a": 0, "b": 0})  # the application's own call: no caller
    first, second = [s for s in otel.spans() if s["name"] == "execute_tool total"]
    assert first["attributes"]["toolnexus.tool.caller"] == "programmatic"
    assert first["attributes"]["gen_ai.tool.call.id"] == "toolu_1"
    assert "toolnexus.tool.caller" not in second["attributes"]


def test_the_span_is_current_while_the_tool_runs(otel: Recorded) -> None:
    inside: list[Any] = []

    @tool
    def look() -> str:
        """Looks at the current span."""
        inside.append(trace.get_current_span().get_span_context().span_id)
        return "seen"

    with Host(Toolkit([look])) as host:
        host.call("look")
    assert format(inside[0], "016x") == otel.named("execute_tool look")["span_id"]


def test_progress_and_questions_are_events_and_a_suspension_is_not_an_error(otel: Recorded) -> None:
    reports: list[float] = []
    with Host(TOOLKIT, wait_for=lambda request: Answer.accept(request)) as host:
        host.call("steps", progress=lambda value, total, message: reports.append(value))
        host.call("ask")
    with Host(TOOLKIT) as host:
        host.call("ask")
    assert reports == [1, 2]  # the caller still hears its progress
    stepped = otel.raw("execute_tool steps")
    assert [e.name for e in stepped.events] == ["toolnexus.progress", "toolnexus.progress"]
    assert dict(stepped.events[0].attributes or {}) == {
        "toolnexus.progress": 1,
        "toolnexus.progress.total": 2,
        "toolnexus.progress.message": "half",
    }
    asked = [s for s in otel.exporter.get_finished_spans() if s.name == "execute_tool ask"]
    answered, parked = asked
    assert [e.name for e in answered.events] == ["toolnexus.question", "toolnexus.answer"]
    assert dict(answered.attributes or {})["toolnexus.outcome"] == "ok"
    assert dict(parked.attributes or {})["toolnexus.outcome"] == "pending"
    assert dict(parked.attributes or {})["toolnexus.request.id"] == "pnd-which"
    assert "error.type" not in dict(parked.attributes or {})
    assert parked.status.status_code.name == "UNSET"


def test_a_timeout_and_a_cancel_say_so_on_the_span(otel: Recorded) -> None:
    with Host(TOOLKIT) as host:
        host.call("hold", timeout_ms=50)
        HELD.clear()
        source = CancellationTokenSource()
        call = host.submit("hold", cancellation_token=source.token)
        assert HELD.wait(10)
        source.cancel()
        call.result(timeout=10)
    timed_out, cancelled = [dict(s.attributes or {}) for s in otel.exporter.get_finished_spans()]
    assert timed_out["toolnexus.outcome"] == "timeout" and timed_out["error.type"] == "timeout"
    assert timed_out["toolnexus.cancel.reason"] == "deadline"
    assert cancelled["toolnexus.outcome"] == "cancelled" and cancelled["error.type"] == "cancelled"
    assert cancelled["toolnexus.cancel.reason"] == "caller"
    assert otel.exporter.get_finished_spans()[0].status.status_code.name == "ERROR"


def test_an_approval_question_is_traced_as_pending(otel: Recorded) -> None:
    with Host(TOOLKIT, middleware=[require_approval("add")]) as host:
        assert host.call("add", {"a": 1, "b": 2}).is_pending
    span = otel.raw("execute_tool add")
    assert [e.name for e in span.events] == ["toolnexus.question"]
    assert dict(span.events[0].attributes or {})["toolnexus.request.kind"] == "approval"


def test_duration_and_calls_in_flight_per_tool_and_outcome(otel: Recorded) -> None:
    with Host(TOOLKIT) as host:
        host.call("add", {"a": 1, "b": 2})
        host.call("add", {"a": 1, "b": "x"})
    data = otel.metrics.get_metrics_data()
    assert data is not None
    metrics = {
        metric.name: metric
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    durations = {
        point.attributes["toolnexus.outcome"]: point.count
        for point in metrics["toolnexus.tool.duration"].data.data_points  # type: ignore[union-attr]
    }
    assert durations == {"ok": 1, "error": 1}
    (active,) = metrics["toolnexus.tool.active"].data.data_points  # type: ignore[union-attr]
    assert dict(active.attributes or {}) == {"gen_ai.tool.name": "add"} and active.value == 0


def test_traced_calls_read_no_environment_and_import_nothing_per_call(
    otel: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins
    import os

    from opentelemetry import metrics

    # No meter provider set: the API's get_meter_provider() reads the environment on each
    # call; the host reads it once, and imports nothing while it runs a call.
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", None)
    with Host(TOOLKIT, tracing=True) as host:
        host.call("add", {"a": 1, "b": 2})  # the first call may look everything up
        lookups: list[str] = []
        real_import = builtins.__import__
        real_get = metrics.get_meter_provider

        class Watched(dict):  # type: ignore[type-arg]
            def __contains__(self, key: object) -> bool:
                lookups.append(f"environ {key}")
                return super().__contains__(key)

        def counted_import(name: str, *args: Any, **kwargs: Any) -> Any:
            if name.startswith("opentelemetry"):
                lookups.append(f"import {name}")
            return real_import(name, *args, **kwargs)

        def counted_get() -> Any:
            lookups.append("get_meter_provider")
            return real_get()

        with pytest.MonkeyPatch.context() as watch:
            watch.setattr(os, "environ", Watched(os.environ))
            watch.setattr(builtins, "__import__", counted_import)
            watch.setattr(metrics, "get_meter_provider", counted_get)
            for _ in range(5):
                assert host.call("add", {"a": 1, "b": 2}).output == "3"
    assert lookups == []
    assert len([s for s in otel.spans() if s["name"] == "execute_tool add"]) == 6


def test_tracing_false_exports_nothing(otel: Recorded) -> None:
    with Host(TOOLKIT, tracing=False) as host:
        host.call("add", {"a": 1, "b": 2})
    assert otel.spans() == []


# --------------------------------------------------------------------------- one trace over MCP


def check_chain(host_side: list[dict[str, Any]], server_side: list[dict[str, Any]]) -> None:
    """host -> MCP client -> MCP server -> tool: one trace, each span the next's parent."""

    def find(spans: list[dict[str, Any]], name: str, kind: str) -> dict[str, Any]:
        (found,) = [s for s in spans if s["name"] == name and s["kind"] == kind]
        return found

    call = find(host_side, "execute_tool srv_add", "INTERNAL")
    client = find(host_side, "tools/call add", "CLIENT")
    server = find(server_side, "tools/call add", "SERVER")
    tool_span = find(server_side, "execute_tool add", "INTERNAL")
    assert {call["trace_id"], client["trace_id"], server["trace_id"], tool_span["trace_id"]} == {
        call["trace_id"]
    }
    assert client["parent_id"] == call["span_id"]
    assert server["parent_id"] == client["span_id"]
    assert tool_span["parent_id"] == server["span_id"]
    for side in (client, server):
        assert side["attributes"]["mcp.method.name"] == "tools/call"
        assert side["attributes"]["gen_ai.tool.name"] == "add"
        assert side["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert server["attributes"]["jsonrpc.request.id"] == client["attributes"]["jsonrpc.request.id"]


def test_one_trace_runs_from_the_host_into_the_tool_over_http(otel: Recorded) -> None:
    with HttpServer(TOOLKIT, port=0) as server:
        server.start()
        with McpClient(url=server.url, name="srv") as client, Host(Toolkit(client.tools())) as host:
            assert host.call("srv_add", {"a": 2, "b": 3}).output == "5"
    spans = otel.spans()
    check_chain(spans, spans)
    for span in spans:
        if span["name"] == "tools/call add":
            assert span["attributes"]["network.transport"] == "tcp"
            assert span["attributes"]["network.protocol.name"] == "http"


def test_one_trace_runs_from_the_host_into_the_tool_over_stdio(
    otel: Recorded, tmp_path: Path
) -> None:
    spans_file = tmp_path / "server-spans.jsonl"
    with (
        McpClient(
            sys.executable, [SERVER], name="srv", env={"TOOLNEXUS_OTEL_SPANS": str(spans_file)}
        ) as client,
        Host(Toolkit(client.tools())) as host,
    ):
        assert host.call("srv_add", {"a": 2, "b": 3}).output == "5"
        # The server ends its spans before it answers: they are in the file already.
        served = [json.loads(line) for line in spans_file.read_text().splitlines()]
    check_chain(otel.spans(), served)
    assert otel.named("tools/call add")["attributes"]["network.transport"] == "pipe"
