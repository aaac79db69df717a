"""The tools the MCP conformance suite calls, served over Streamable HTTP.

Not part of the package: ``.ci/run`` starts this to let ``@modelcontextprotocol/conformance``
check the embedded server (``python tests/conformance/server.py PORT``) and the ASGI app
(``uvicorn --factory conformance_server:app``, with this directory on the path). Each
tool does what the suite's scenario text asks of a tool by that name.
"""

from __future__ import annotations

import io
import json
import struct
import sys
import threading
import wave
import zlib
from pathlib import Path
from typing import Any

from toolnexus import Answer, Part, Request, Tool, Toolkit, ToolResult, tool
from toolnexus._context import ToolContext
from toolnexus.mcp import prompt, resource

MAX_ROUNDS = 2
"""Answers one call may take: test_input_required_result_multi_round asks twice."""

_PAUSE = threading.Event()  # never set: waits stand for "about 50 ms of work"


def _work(ctx: ToolContext | None, seconds: float = 0.05) -> None:
    token = ctx.cancellation_token if ctx is not None else None
    if token is not None:
        token.wait(seconds)
    else:
        _PAUSE.wait(seconds)


@tool
def test_simple_text() -> str:
    """Returns a fixed text."""
    return "This is a simple text response for testing."


@tool
def test_error_handling() -> ToolResult:
    """Always fails."""
    return ToolResult.error("This tool intentionally returns an error for testing")


@tool
def test_tool_with_progress(ctx: ToolContext) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for step in (0, 50, 100):
        ctx.report_progress(step, 100)
        if step < 100:
            _work(ctx)
    return "Progress reported: 0, 50, 100 of 100"


@tool
def test_tool_with_logging(ctx: ToolContext) -> str:
    """Sends three info log messages."""
    ctx.report_log("info", "Tool execution started")
    _work(ctx)
    ctx.report_log("info", "Tool processing data")
    _work(ctx)
    ctx.report_log("info", "Tool execution completed")
    return "Logging completed: 3 messages sent"


@tool
def test_logging_tool(ctx: ToolContext) -> str:
    """Sends log messages (only to a client that asked for them)."""
    ctx.report_log("info", "test_logging_tool started")
    ctx.report_log("warning", "test_logging_tool is about to finish")
    return "logged"


def _asks(ctx: ToolContext | None, request: Request, done: str) -> ToolResult:
    if ctx is None or ctx.answer is None:
        return ToolResult.pending(request)
    return ToolResult.ok(f"{done}: action=accept, content={json.dumps(ctx.answer.data)}")


_USER_SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


@tool
def test_elicitation(message: str, ctx: ToolContext) -> ToolResult:
    """Asks the user for a name and an email."""
    request = Request("input", message, data={"schema": _USER_SCHEMA})
    return _asks(ctx, request, "User response")


@tool
def test_streaming_elicitation(ctx: ToolContext) -> ToolResult:
    """Asks one question."""
    request = Request(
        "input",
        "Please provide your name",
        data={
            "schema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
        },
    )
    return _asks(ctx, request, "Elicitation completed")


def _name_schema(key: str, kind: str = "string") -> dict[str, Any]:
    return {"type": "object", "properties": {key: {"type": kind}}, "required": [key]}


@tool
def test_input_required_result_elicitation(ctx: ToolContext) -> ToolResult:
    """Asks for a name, then greets."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input", "What is your name?", id="user_name", data={"schema": _name_schema("name")}
            )
        )
    return ToolResult.ok(f"Hello, {(ctx.answer.data or {}).get('name')}!")


@tool
def test_input_required_result_request_state(ctx: ToolContext) -> ToolResult:
    """Asks for a confirmation; the answer comes back with the signed state."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "Please confirm",
                id="confirm",
                data={"schema": _name_schema("ok", "boolean")},
            )
        )
    return ToolResult.ok(f"state-ok: confirmed={(ctx.answer.data or {}).get('ok')}")


@tool
def test_input_required_result_tampered_state(ctx: ToolContext) -> ToolResult:
    """Asks for a confirmation (the suite then tampers with the state)."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "Please confirm",
                id="confirm",
                data={"schema": _name_schema("ok", "boolean")},
            )
        )
    return ToolResult.ok("confirmed")


@tool
def test_input_required_result_multi_round(ctx: ToolContext) -> ToolResult:
    """Asks two questions, one per round: the server allows a call ``MAX_ROUNDS`` answers."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "Step 1: What is your name?",
                id="step1",
                data={"schema": _name_schema("name")},
            )
        )
    if ctx.answer.id == "step1":
        return ToolResult.pending(
            Request(
                "input",
                "Step 2: What is your favorite color?",
                id="step2",
                data={"schema": _name_schema("color")},
            )
        )
    return ToolResult.ok(f"multi-round complete: color={(ctx.answer.data or {}).get('color')}")


def _sampling(prompt: str, id: str | None = None, max_tokens: int = 100) -> Request:
    data = {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens,
    }
    if id is None:
        return Request("sampling", prompt, data=data)
    return Request("sampling", prompt, id=id, data=data)


def _said(answer: Answer | None) -> str:
    """The text of a sampling answer (a message whose content is a text block)."""
    content = (answer.data or {}).get("content") if answer is not None else None
    return str(content.get("text")) if isinstance(content, dict) else ""


@tool
def test_sampling(prompt: str, ctx: ToolContext) -> ToolResult:
    """Asks the client's model about the prompt."""
    if ctx.answer is None:
        return ToolResult.pending(_sampling(prompt))
    return ToolResult.ok(f"LLM response: {_said(ctx.answer)}")


@tool
def test_input_required_result_sampling(ctx: ToolContext) -> ToolResult:
    """Asks the client's model a question, then reports its answer."""
    if ctx.answer is None:
        return ToolResult.pending(_sampling("What is the capital of France?", "capital_question"))
    return ToolResult.ok(f"The model says: {_said(ctx.answer)}")


@tool
def test_input_required_result_list_roots(ctx: ToolContext) -> ToolResult:
    """Asks for the client's roots, then lists them."""
    if ctx.answer is None:
        return ToolResult.pending(Request("roots", "Which roots may I use?", id="client_roots"))
    roots = (ctx.answer.data or {}).get("roots") or []
    return ToolResult.ok("roots: " + ", ".join(str(root.get("uri")) for root in roots))


@tool
def test_input_required_result_multiple_inputs(ctx: ToolContext) -> ToolResult:
    """Asks for a name, a greeting from the model and the roots, in one round."""
    name = Request(
        "input", "What is your name?", id="user_name", data={"schema": _name_schema("name")}
    )
    greeting = _sampling("Generate a greeting", "greeting", 50)
    roots = Request("roots", "Which roots may I use?", id="client_roots")
    if ctx.answer is None:
        return ToolResult.pending(Request.several(name, greeting, roots))
    named = ctx.answer.answer_to(name)
    who = (named.data or {}).get("name") if named is not None else None
    return ToolResult.ok(f"{_said(ctx.answer.answer_to(greeting))} {who}")


@tool
def test_input_required_result_capabilities(ctx: ToolContext) -> ToolResult:
    """Asks only what a sampling-only client can answer: the model."""
    if ctx.answer is None:
        return ToolResult.pending(_sampling("Capability check", "llm_check", 50))
    return ToolResult.ok(f"checked: {_said(ctx.answer)}")


@tool
def test_missing_capability(ctx: ToolContext) -> ToolResult:
    """Needs sampling: a client that did not declare it gets -32021."""
    if ctx.answer is None:
        return ToolResult.pending(_sampling("Is sampling there?"))
    return ToolResult.ok(_said(ctx.answer))


@tool
def test_elicitation_sep1034_defaults(ctx: ToolContext) -> ToolResult:
    """Asks with defaults for every primitive type."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "default": True},
        },
    }
    return _asks(
        ctx,
        Request("input", "Please review your details", data={"schema": schema}),
        "Elicitation completed",
    )


@tool
def test_elicitation_sep1330_enums(ctx: ToolContext) -> ToolResult:
    """Asks with all five enum shapes."""
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
    }
    return _asks(
        ctx,
        Request("input", "Please pick options", data={"schema": schema}),
        "Elicitation completed",
    )


def _headers_tool(args: Any, ctx: ToolContext | None = None) -> ToolResult:
    return ToolResult.ok(f"headers ok: {json.dumps(args, sort_keys=True)}")


test_custom_headers = Tool(
    name="test_custom_headers",
    description="Echoes arguments that also travel as Mcp-Param-* headers.",
    input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"},
        },
        "required": ["region"],
    },
    fn=_headers_tool,
)


_ADDRESS = {
    "$anchor": "addressDef",
    "type": "object",
    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
}

# The scenario's schema: $defs and $ref by JSON pointer, an $anchor, allOf/anyOf and
# if/then/else, all of which the validator speaks (a Tool refuses a schema it cannot check).
json_schema_2020_12_tool = Tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": _ADDRESS},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {
            "properties": {"contactMethod": {"const": "phone"}},
            "required": ["contactMethod"],
        },
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
    fn=_headers_tool,
)


def _png_pixel() -> bytes:
    """A 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


def _wav_silence() -> bytes:
    """A few milliseconds of 8 kHz mono silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(8000)
        clip.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


@tool
def test_image_content() -> ToolResult:
    """Returns a 1x1 PNG."""
    return ToolResult.ok("", parts=[Part.image(_png_pixel(), "image/png")])


@tool
def test_audio_content() -> ToolResult:
    """Returns a short WAV clip."""
    return ToolResult.ok("", parts=[Part.audio(_wav_silence(), "audio/wav")])


@tool
def test_embedded_resource() -> ToolResult:
    """Returns an embedded text resource."""
    text = b"This is an embedded resource content."
    return ToolResult.ok("", parts=[Part.file(text, "text/plain", name="embedded-resource")])


@tool
def test_multiple_content_types() -> ToolResult:
    """Returns text, an image and a JSON resource."""
    data = b'{"test":"data","value":123}'
    return ToolResult.ok(
        "Multiple content types test:",
        parts=[
            Part.image(_png_pixel(), "image/png"),
            Part.file(data, "application/json", name="mixed-content-resource"),
        ],
    )


# --------------------------------------------------------------------------- resources


@resource("test://static-text", name="Static Text Resource", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing."""
    return "This is the content of the static text resource."


@resource("test://static-binary", name="Static Binary Resource", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a 1x1 PNG)."""
    return _png_pixel()


@resource("test://watched-resource", name="Watched Resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


@resource(
    "test://template/{id}/data",
    name="Template Resource",
    mime_type="application/json",
    complete={"id": ["123", "456", "789"]},
)
def template_data(id: str) -> dict[str, Any]:
    """Data for an id."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


# --------------------------------------------------------------------------- prompts


@prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@prompt(complete={"arg1": ["paris", "park", "party", "test-value"]})
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    text = b"Embedded resource content for testing."
    return [
        Part.file(text, "text/plain", name=resourceUri),
        "Please process the embedded resource above.",
    ]


@prompt
def test_prompt_with_image() -> list[Any]:
    """A prompt with an image."""
    return [Part.image(_png_pixel(), "image/png"), "Please analyze the image above."]


@prompt
def test_input_required_result_prompt(ctx: ToolContext) -> Any:
    """Asks what context to use, then renders with it."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input",
                "What context should the prompt use?",
                id="user_context",
                data={"schema": _name_schema("context")},
            )
        )
    return f"Prompt with context: {(ctx.answer.data or {}).get('context')}"


# --------------------------------------------------------------------------- tasks (SEP-2663)
# The server makes a call still running after TASK_AFTER_MS a task, for a client that
# takes tasks; a tool's task_support forbids or requires it.

TASK_AFTER_MS = 200


@tool(task_support="forbidden")
def greet(name: str = "world") -> str:
    """Greets by name (never a task)."""
    return f"Hello, {name}!"


@tool
def slow_compute(ctx: ToolContext, seconds: float = 0, label: str = "result") -> str:
    """Works for `seconds`, then answers: a task when it takes long."""
    _work(ctx, seconds)
    if ctx.is_cancelled:
        return "cancelled"
    return f"computed {label} in {seconds} s"


@tool(task_support="required")
def failing_job(ctx: ToolContext) -> ToolResult:
    """Works a second, then fails: a tool error (the task completes, isError)."""
    _work(ctx, 1.0)
    return ToolResult.error("Tool execution failed")


@tool
def protocol_error_job(ctx: ToolContext) -> ToolResult:
    """Works a second, then returns what JSON cannot carry: a protocol error (failed)."""
    _work(ctx, 1.0)
    return ToolResult("not a number", False, {"structuredContent": {"value": float("nan")}})


_CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}


@tool
def confirm_delete(ctx: ToolContext, filename: str = "file") -> ToolResult:
    """Looks the file up (half a second), then asks to confirm the deletion."""
    if ctx.answer is None:
        _work(ctx, 0.5)
        return ToolResult.pending(
            Request("input", f"Delete {filename}?", id="confirmation", data={"schema": _CONFIRM})
        )
    return ToolResult.ok(f"deleted {filename}: confirm={(ctx.answer.data or {}).get('confirm')}")


_NAMED = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
}


@tool
def multi_input(ctx: ToolContext) -> ToolResult:
    """Works half a second, then asks two questions at once."""
    first = Request("input", "First value?", id="first", data={"schema": _NAMED})
    second = Request("input", "Second value?", id="second", data={"schema": _NAMED})
    if ctx.answer is None:
        _work(ctx, 0.5)
        return ToolResult.pending(Request.several(first, second))
    names = [
        ((ctx.answer.answer_to(each) or Answer(each.id, False)).data or {}).get("name")
        for each in (first, second)
    ]
    return ToolResult.ok(f"Got {names[0]} and {names[1]}")


@tool(task_support="required")
def test_tool_with_task(ctx: ToolContext) -> ToolResult:
    """Asks a name at once (before any task), then works: the result comes as a task."""
    if ctx.answer is None:
        return ToolResult.pending(
            Request(
                "input", "What is your name?", id="user_name", data={"schema": _name_schema("name")}
            )
        )
    _work(ctx, 0.5)
    return ToolResult.ok(f"Hello, {(ctx.answer.data or {}).get('name')}!")


_SERVED: list[Toolkit] = []  # the toolkit this process serves (the triggers change it)


@tool
def test_trigger_tool_change() -> str:
    """Adds a tool, or removes it again: the tool list changes."""
    kit = _SERVED[0]
    if "test_changing_tool" in kit:
        kit.remove("test_changing_tool")
        return "removed test_changing_tool"
    kit.register(Tool("test_changing_tool", "Comes and goes.", {"type": "object"}, _headers_tool))
    return "added test_changing_tool"


@tool
def test_trigger_prompt_change() -> str:
    """Adds a prompt, or removes it again: the prompt list changes."""
    kit = _SERVED[0]
    try:
        kit.remove(kit.get_prompt("test_changing_prompt"))
        return "removed test_changing_prompt"
    except LookupError:
        kit.register(
            prompt(name="test_changing_prompt", description="Comes and goes.")(lambda: "Hi.")
        )
        return "added test_changing_prompt"


@tool
def test_trigger_resource_update() -> str:
    """Says the watched resource's content changed."""
    _SERVED[0].resource_changed("test://watched-resource")
    return "updated test://watched-resource"


def toolkit() -> Toolkit:
    kit = _toolkit()
    _SERVED[:] = [kit]
    return kit


def _toolkit() -> Toolkit:
    served = Toolkit(
        [
            test_trigger_tool_change,
            test_trigger_prompt_change,
            test_trigger_resource_update,
            greet,
            slow_compute,
            failing_job,
            protocol_error_job,
            confirm_delete,
            multi_input,
            test_tool_with_task,
            static_text,
            static_binary,
            watched_resource,
            template_data,
            test_simple_prompt,
            test_prompt_with_arguments,
            test_prompt_with_embedded_resource,
            test_prompt_with_image,
            test_input_required_result_prompt,
            test_simple_text,
            test_error_handling,
            test_tool_with_progress,
            test_tool_with_logging,
            test_logging_tool,
            test_elicitation,
            test_streaming_elicitation,
            test_input_required_result_elicitation,
            test_input_required_result_request_state,
            test_input_required_result_tampered_state,
            test_input_required_result_multi_round,
            test_sampling,
            test_input_required_result_sampling,
            test_input_required_result_list_roots,
            test_input_required_result_multiple_inputs,
            test_input_required_result_capabilities,
            test_missing_capability,
            test_elicitation_sep1034_defaults,
            test_elicitation_sep1330_enums,
            test_custom_headers,
            test_image_content,
            test_audio_content,
            test_embedded_resource,
            test_multiple_content_types,
            json_schema_2020_12_tool,
        ]
    )
    # The skills extension's scenarios (sep-2640-*): two skills from the test fixtures,
    # one with files in subfolders (for directory reads), one with a folded description.
    fixtures = Path(__file__).resolve().parent.parent / "skill_fixtures"
    served.add_skills(fixtures / "pdf-processing", strict=True)
    served.add_skills(fixtures / "release-notes", strict=True)
    return served


def app() -> Any:
    """The ASGI app (``uvicorn --factory server:app``)."""
    import os

    from toolnexus.mcp import ServerOptions, asgi_app

    secret = os.environ.get("CONFORMANCE_SECRET")
    return asgi_app(
        toolkit(),
        ServerOptions(
            name="toolnexus-conformance",
            max_rounds=MAX_ROUNDS,
            task_after_ms=TASK_AFTER_MS,
            secret=secret.encode() if secret else None,
        ),
    )


if __name__ == "__main__":
    from toolnexus.mcp import ServerOptions, serve_http

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 3001

    def ready(server: Any) -> None:
        print(f"listening on {server.url}", flush=True)

    raise SystemExit(
        serve_http(
            toolkit(),
            ServerOptions(
                name="toolnexus-conformance", max_rounds=MAX_ROUNDS, task_after_ms=TASK_AFTER_MS
            ),
            port=port,
            ready=ready,
        )
    )
