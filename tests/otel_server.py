"""An MCP server on stdio that traces to a file, for tests/test_tracing.py.

It sets an OpenTelemetry SDK tracer provider whose exporter appends each ended span, as
one JSON line, to the file ``TOOLNEXUS_OTEL_SPANS`` names, then serves ``toolkit`` below.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from toolnexus import Toolkit, tool


class FileExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(as_dict(span)) + "\n")
        return SpanExportResult.SUCCESS


def as_dict(span: ReadableSpan) -> dict[str, object]:
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
        "attributes": dict(span.attributes or {}),
    }


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


toolkit = Toolkit([add])

if __name__ == "__main__":
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(FileExporter(os.environ["TOOLNEXUS_OTEL_SPANS"]))
    )
    trace.set_tracer_provider(provider)

    from toolnexus.mcp import serve_stdio

    serve_stdio(toolkit)
