"""OpenTelemetry for toolnexus: a span per call, MCP spans on both sides, W3C trace context
in MCP's ``_meta``, and two metrics. Everything that touches ``opentelemetry`` is here.

Nothing here imports ``opentelemetry`` on its own: tracing is on when the application
imported the API and set a tracer provider (``Host(tracing=True)`` turns it on anyway, and
``tracing=False`` off). Without the API installed, or unused, each call pays one dict
lookup (``sys.modules``) and nothing else.

What is recorded (the OpenTelemetry semantic conventions for GenAI tool execution and for
MCP, both "development" status):

- ``execute_tool {tool}`` (INTERNAL), one per host call, from its start to its settled
  result: ``gen_ai.operation.name`` = ``execute_tool``, ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id`` (a turn's call), ``toolnexus.tool.caller`` (a turn's
  ``direct`` or ``programmatic`` call), ``gen_ai.tool.description``,
  ``gen_ai.tool.type`` = ``function``, ``toolnexus.outcome`` (ok, error, pending, timeout,
  cancelled), ``error.type`` (``tool_error``, ``timeout``, ``cancelled``) with the status
  ERROR, ``toolnexus.cancel.reason``, ``toolnexus.timeout_ms``, ``toolnexus.request.id``
  for a suspension; events ``toolnexus.progress``, ``toolnexus.question`` (a suspension)
  and ``toolnexus.answer`` (the retry with an answer). It is the current span while the
  chain and the tool run, so a tool's own spans and a remote tool's MCP span are its
  children.
- ``tools/call {tool}`` (SERVER) on an MCP server, its parent read from the request's
  ``_meta`` (``traceparent``, ``tracestate``); CLIENT on the MCP client, whose context is
  written into the request's ``_meta``: ``mcp.method.name``, ``jsonrpc.request.id``,
  ``mcp.session.id`` (HTTP sessions), ``mcp.protocol.version``, ``network.transport``
  (``pipe`` for stdio, ``tcp`` for HTTP), ``gen_ai.tool.name``, ``gen_ai.operation.name``.
- metrics: ``toolnexus.tool.duration`` (histogram, seconds; per tool and outcome) and
  ``toolnexus.tool.active`` (up-down counter: calls in flight, per tool).
"""

from __future__ import annotations

import sys
import time

from .errors import InvalidValueError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a host loads this module, not typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Protocol

    from ._context import ProgressReporter, ToolContext
    from ._result import ToolResult
    from ._tools import Tool

if TYPE_CHECKING:

    class Settled(Protocol):
        """What a span reads of a call once it settled: a host's ``Call``, named by its
        fields, since this layer is below the host's."""

        @property
        def outcome(self) -> str: ...
        @property
        def reason(self) -> str | None: ...
        def result(self, timeout: float | None = None) -> ToolResult: ...


__all__ = [
    "API_MODULE",
    "CallSpan",
    "Incoming",
    "McpSpan",
    "call_span",
    "client_span",
    "event",
    "incoming",
    "inject",
    "is_on",
    "require",
    "server_span",
]

API_MODULE = _TRACE = "opentelemetry.trace"
"""The module whose presence in ``sys.modules`` says the application uses the API."""
_METRICS = "opentelemetry.metrics"
_SCOPE = "toolnexus"
_ERROR_TYPES = {"error": "tool_error", "timeout": "timeout", "cancelled": "cancelled"}
_MAX_HEADER = 8192  # a traceparent is 55 characters, a tracestate at most 32 entries


def require() -> None:
    """``Host(tracing=True)``: the API must be installed."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        from ._extras import install_hint

        raise InvalidValueError(
            "tracing=True needs the OpenTelemetry API, which is not installed: "
            f"{install_hint('otel', 'opentelemetry-api')}; or pass tracing=None to trace "
            "only when it is in use"
        ) from None


# --------------------------------------------------------------------------- on or off

_tracer_of: tuple[object, Any] | None = None  # (provider, its tracer), for the last provider
_meter_of: tuple[object, Any] | None = None  # (provider, (histogram, counter))


_UNKNOWN = object()
_provider_from_env: bool | None = None  # OTEL_PYTHON_TRACER_PROVIDER names one (read once)
_meter_from_env: bool | None = None  # OTEL_PYTHON_METER_PROVIDER names one (read once)
_METRICS_INTERNAL = "opentelemetry.metrics._internal"  # where the API keeps the provider


def _tracer(forced: bool = False) -> Any:
    """The tracer, when tracing is on: the API imported (by the application), and a tracer
    provider set — or ``forced``. None otherwise; the API is never imported here."""
    global _tracer_of, _provider_from_env
    trace = sys.modules.get(_TRACE)
    if trace is None:
        return None
    if not forced and getattr(trace, "_TRACER_PROVIDER", _UNKNOWN) is None:
        # No provider set: get_tracer_provider() would say so, but reads the environment
        # each time (2.4 us, a tenth of a host call); the variable is read once here.
        if _provider_from_env is None:
            import os

            _provider_from_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
        if not _provider_from_env:
            return None
    provider = trace.get_tracer_provider()
    cached = _tracer_of
    if cached is not None and cached[0] is provider:
        return cached[1]
    if not forced and isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    from ._version import __version__

    tracer = provider.get_tracer(_SCOPE, __version__)
    _tracer_of = (provider, tracer)
    return tracer


def is_on() -> bool:
    """Whether a host with ``tracing=None`` traces its calls now (the API imported and a
    tracer provider set)."""
    return _tracer() is not None


def _instruments() -> Any:
    """The histogram and the counter, when a meter provider is set; else None."""
    global _meter_of
    global _meter_from_env
    metrics = sys.modules.get(_METRICS)
    if metrics is None:
        return None
    internal = sys.modules.get(_METRICS_INTERNAL)
    if internal is not None and getattr(internal, "_METER_PROVIDER", _UNKNOWN) is None:
        # No provider set: get_meter_provider() would read the environment each time; the
        # variable is read once here (as for the tracer).
        if _meter_from_env is None:
            import os

            _meter_from_env = "OTEL_PYTHON_METER_PROVIDER" in os.environ
        if not _meter_from_env:
            return None
    provider = metrics.get_meter_provider()
    cached = _meter_of
    if cached is not None and cached[0] is provider:
        return cached[1]
    # The API's default is a proxy that records nothing until a provider is set.
    if isinstance(provider, metrics.NoOpMeterProvider) or type(provider).__name__.startswith(
        "_Proxy"
    ):
        return None
    from ._version import __version__

    meter = provider.get_meter(_SCOPE, __version__)
    instruments = (
        meter.create_histogram(
            "toolnexus.tool.duration",
            unit="s",
            description="How long tool calls take, from their start to their result",
        ),
        meter.create_up_down_counter(
            "toolnexus.tool.active", unit="{call}", description="Tool calls in flight"
        ),
    )
    _meter_of = (provider, instruments)
    return instruments


def event(name: str, attributes: Mapping[str, Any]) -> None:
    """Add an event to the current span (a policy's retry or wait); nothing when no span
    records."""
    trace = sys.modules.get(_TRACE)
    if trace is None:
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event(name, dict(attributes))


# --------------------------------------------------------------------------- a host call


_KEPT = 4_096  # tools whose span names and attributes are kept (more: start afresh)
_described: dict[int, tuple[Tool, str, dict[str, Any]]] = {}


def _described_as(tool: Tool) -> tuple[str, dict[str, Any]]:
    """The span name and the attributes a tool's spans always carry: what its
    registration says, worked out once per tool."""
    known = _described.get(id(tool))
    if known is not None and known[0] is tool:
        return known[1], known[2]
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool.name,
        "gen_ai.tool.type": "function",
    }
    if tool.description:
        attributes["gen_ai.tool.description"] = tool.description
    if len(_described) >= _KEPT:
        _described.clear()
    _described[id(tool)] = (tool, f"execute_tool {tool.name}", attributes)  # the tool kept
    return f"execute_tool {tool.name}", attributes


class _Api:
    """The OpenTelemetry API names a call's span uses, looked up once (not imported in
    each call)."""

    def __init__(self) -> None:
        from opentelemetry import context, trace

        self.attach = context.attach
        self.detach = context.detach
        self.set_span_in_context = trace.set_span_in_context
        self.internal = trace.SpanKind.INTERNAL
        self.status = trace.Status
        self.error = trace.StatusCode.ERROR


_api: _Api | None = None


def _bound_api() -> _Api:
    global _api
    if _api is None:
        _api = _Api()
    return _api


def call_span(
    tool: Tool,
    call_id: str | None,
    budget: int | None,
    *,
    forced: bool = False,
    caller: str | None = None,
) -> CallSpan | None:
    """Start the span of a host call to ``tool`` (a child of the current span), or None
    when tracing is off. ``caller`` (a turn's ``"direct"`` or ``"programmatic"``) is
    recorded as ``toolnexus.tool.caller``."""
    tracer = _tracer(forced)
    if tracer is None:
        return None
    return CallSpan(tracer, tool, call_id, budget, caller)


class CallSpan:
    """The ``execute_tool`` span of one host call, and its metrics."""

    __slots__ = ("_api", "_context", "_instruments", "_name", "_span", "_start")

    def __init__(
        self,
        tracer: Any,
        tool: Tool,
        call_id: str | None,
        budget: int | None,
        caller: str | None = None,
    ) -> None:
        self._api = api = _bound_api()
        span_name, known = _described_as(tool)
        attributes = dict(known)  # the SDK's own copy may be kept: never the shared one
        if call_id is not None:
            attributes["gen_ai.tool.call.id"] = call_id
        if budget is not None:
            attributes["toolnexus.timeout_ms"] = budget
        if caller is not None:
            attributes["toolnexus.tool.caller"] = caller
        self._name = name = tool.name
        self._span = span = tracer.start_span(span_name, kind=api.internal, attributes=attributes)
        self._context = api.set_span_in_context(span)
        self._start = time.monotonic()
        self._instruments = instruments = _instruments()
        if instruments is not None:
            instruments[1].add(1, {"gen_ai.tool.name": name})

    def attempt(self, ctx: ToolContext) -> None:
        """An attempt starts: the answer it retries with, recorded as an event."""
        answer = ctx.answer
        if answer is not None:
            self._span.add_event(
                "toolnexus.answer",
                {"toolnexus.request.id": answer.id, "toolnexus.answer.ok": answer.ok},
            )

    def reporter(self, forward: ProgressReporter | None) -> ProgressReporter:
        """What the call's context reports progress to: an event on the span, then
        ``forward`` (the caller's reporter) — set once for the call, no context copied."""
        span = self._span

        def progress(value: float, total: float | None, message: str | None) -> None:
            attributes: dict[str, Any] = {"toolnexus.progress": value}
            if total is not None:
                attributes["toolnexus.progress.total"] = total
            if message is not None:
                attributes["toolnexus.progress.message"] = message
            span.add_event("toolnexus.progress", attributes)
            if forward is not None:
                forward(value, total, message)

        return progress

    def enter(self) -> object:
        """Make the span current on this thread or task (until :meth:`leave`)."""
        return self._api.attach(self._context)

    def leave(self, token: Any) -> None:
        self._api.detach(token)

    def seen(self, result: ToolResult) -> ToolResult:
        """An attempt's result: a suspension is recorded as a question."""
        if result.is_error:
            request = result.pending_of(result)
            if request is not None:
                self._span.add_event(
                    "toolnexus.question",
                    {"toolnexus.request.id": request.id, "toolnexus.request.kind": request.kind},
                )
        return result

    def end(self, call: Settled) -> None:
        """The call settled: its outcome on the span, which ends, and in the metrics."""
        try:
            self._end(call)
        except Exception:  # a failing exporter never breaks a call
            from ._log import get_logger

            get_logger().exception("toolnexus: ending the span of %r failed", self._name)

    def _end(self, call: Settled) -> None:
        span = self._span
        outcome = call.outcome
        result = call.result()
        span.set_attribute("toolnexus.outcome", outcome)
        error_type = _ERROR_TYPES.get(outcome)
        if outcome == "pending":
            request = result.pending_of(result)
            if request is not None:
                span.set_attribute("toolnexus.request.id", request.id)
        if call.reason is not None:
            span.set_attribute("toolnexus.cancel.reason", call.reason)
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            api = self._api
            span.set_status(api.status(api.error, _first_line(result.output)))
        span.end()
        instruments = self._instruments
        if instruments is not None:
            attributes = {"gen_ai.tool.name": self._name, "toolnexus.outcome": outcome}
            if error_type is not None:
                attributes["error.type"] = error_type
            instruments[0].record(time.monotonic() - self._start, attributes)
            instruments[1].add(-1, {"gen_ai.tool.name": self._name})


def _first_line(text: str) -> str:
    line = text.split("\n", 1)[0]
    return line if len(line) <= 200 else line[:199] + "…"


# --------------------------------------------------------------------------- MCP


class Incoming:
    """What a served ``tools/call`` says for its trace: the JSON-RPC id, the protocol
    version, and the W3C trace context from ``_meta`` (``traceparent``, ``tracestate``,
    ``baggage``)."""

    __slots__ = ("carrier", "request_id", "version")

    def __init__(
        self, request_id: str | int, version: str | None, carrier: Mapping[str, str]
    ) -> None:
        self.request_id = request_id
        self.version = version
        self.carrier = carrier

    def __repr__(self) -> str:
        return f"<Incoming {self.request_id!r} {dict(self.carrier)!r}>"


def incoming(
    meta: Mapping[str, Any], request_id: str | int, version: str | None
) -> Incoming | None:
    """Read a request's trace context from its ``_meta`` (the MCP server session calls
    this); None when nothing in this process can trace (the API is not in use)."""
    if _TRACE not in sys.modules:
        return None
    carrier = {
        key: value
        for key in ("traceparent", "tracestate", "baggage")
        if isinstance(value := meta.get(key), str) and len(value) <= _MAX_HEADER
    }
    return Incoming(request_id, version, carrier)


class McpSpan:
    """A ``tools/call`` span of the MCP server or client."""

    __slots__ = ("_context", "_span")

    def __init__(self, span: Any, context: Any) -> None:
        self._span = span
        self._context = context

    def enter(self) -> object:
        from opentelemetry import context

        return context.attach(self._context)

    def leave(self, token: Any) -> None:
        from opentelemetry import context

        context.detach(token)

    def end(self, result: ToolResult | None) -> None:
        """End the span; an error result marks it ``tool_error`` (a suspension does not)."""
        try:
            span = self._span
            if result is not None and result.is_error and not result.is_pending:
                from opentelemetry.trace import Status, StatusCode

                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR, _first_line(result.output)))
            span.end()
        except Exception:
            from ._log import get_logger

            get_logger().exception("toolnexus: ending an MCP span failed")


def _mcp_attributes(
    tool: str, transport: str, session_id: str | None, version: str | None
) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "network.transport": transport,
    }
    if transport == "tcp":
        attributes["network.protocol.name"] = "http"
    if session_id is not None:
        # The id lets whoever holds it use the session: traces get a digest of it.
        import hashlib

        attributes["mcp.session.id"] = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    if version is not None:
        attributes["mcp.protocol.version"] = version
    return attributes


def server_span(
    tool: str, trace: Incoming | None, transport: str, session_id: str | None
) -> McpSpan | None:
    """Start the server's span of a served ``tools/call``, its parent the context the
    request carried (else the current one); None when tracing is off."""
    if trace is None:
        return None
    tracer = _tracer()
    if tracer is None:
        return None
    from opentelemetry import propagate
    from opentelemetry import trace as api

    attributes = _mcp_attributes(tool, transport, session_id, trace.version)
    attributes["jsonrpc.request.id"] = str(trace.request_id)
    parent = propagate.extract(trace.carrier) if trace.carrier else None
    span = tracer.start_span(
        f"tools/call {tool}", context=parent, kind=api.SpanKind.SERVER, attributes=attributes
    )
    return McpSpan(span, api.set_span_in_context(span, parent))


def client_span(
    tool: str, transport: str, session_id: str | None, version: str | None
) -> McpSpan | None:
    """Start the client's span of a ``tools/call`` (a child of the current span); None
    when tracing is off."""
    tracer = _tracer()
    if tracer is None:
        return None
    from opentelemetry import trace as api

    span = tracer.start_span(
        f"tools/call {tool}",
        kind=api.SpanKind.CLIENT,
        attributes=_mcp_attributes(tool, transport, session_id, version),
    )
    return McpSpan(span, api.set_span_in_context(span))


def inject(meta: dict[str, Any], request_id: str | int) -> None:
    """Write the current trace context into a request's ``_meta`` (the MCP client), and
    name the request on the current span."""
    trace = sys.modules.get(_TRACE)
    if trace is None:
        return
    span = trace.get_current_span()
    if not span.get_span_context().is_valid:
        return
    if span.is_recording():
        span.set_attribute("jsonrpc.request.id", str(request_id))
    from opentelemetry import propagate

    propagate.inject(meta)
