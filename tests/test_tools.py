"""Tool and @tool: a function becomes a contract callable that validates, calls, normalises."""

import asyncio
import dataclasses
import enum
import json
import logging
import threading
from typing import TypedDict

import pytest

from toolnexus import (
    CancellationTokenSource,
    OperationCancelledError,
    Request,
    SchemaError,
    Tool,
    ToolContext,
    ToolResult,
    tool,
)
from toolnexus._result import STRUCTURED_KEY


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


class CrunchArgs(TypedDict):
    steps: int


@tool
def crunch(args: CrunchArgs, ctx: ToolContext | None = None) -> ToolResult:
    """Count up to ``steps``, stopping early when the call is cancelled."""
    done = 0
    for _ in range(args["steps"]):
        if ctx is not None and ctx.is_cancelled:
            return ToolResult.error(f"cancelled after {done} step(s)")
        done += 1
    return ToolResult.ok(f"completed {done} step(s)")


# -------------------------------------------------------------------------- add (keyword style)


def test_add_becomes_a_tool_with_name_description_and_schema():
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two integers."
    assert add.source == "native"
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "the first addend."},
            "b": {"type": "integer", "description": "the second addend."},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_add_returns_its_sum_as_text_and_keeps_the_value_as_structured_content():
    result = add({"a": 2, "b": 3})
    assert result == ToolResult.ok("5", {STRUCTURED_KEY: {"result": 5}})


def test_add_refuses_a_string_where_an_integer_belongs():
    result = add({"a": 2, "b": "3"})
    assert result.is_error
    assert result.output == """invalid arguments for 'add': b: expected integer, got string "3\""""


def test_add_lists_every_problem_at_once():
    result = add({"b": True, "c": 1})
    assert result.is_error
    assert result.output.startswith("invalid arguments for 'add': ")
    problems = result.output.removeprefix("invalid arguments for 'add': ").split("; ")
    assert "a: required property is missing" in problems
    assert "b: expected integer, got boolean true" in problems
    assert "c: unexpected property (allowed: a, b)" in problems


def test_add_refuses_arguments_that_are_not_an_object():
    result = add([1, 2])  # type: ignore[arg-type]
    assert result.is_error
    assert result.output == "invalid arguments for 'add': expected object, got array"


def test_invalid_arguments_never_reach_the_function():
    calls = []

    @tool
    def record(n: int) -> None:
        calls.append(n)

    assert record({"n": "1"}).is_error
    assert calls == []


def test_the_schema_is_read_only():
    with pytest.raises(TypeError, match="read-only"):
        add.input_schema["type"] = "array"  # type: ignore[index]


# ---------------------------------------------------------------------- crunch (contract style)


def test_crunch_is_a_contract_style_tool_with_the_typeddict_schema():
    assert crunch.input_schema == {
        "type": "object",
        "properties": {"steps": {"type": "integer"}},
        "required": ["steps"],
        "additionalProperties": False,
    }
    assert crunch.description == "Count up to ``steps``, stopping early when the call is cancelled."


def test_crunch_runs_with_or_without_a_context():
    assert crunch({"steps": 3}) == ToolResult.ok("completed 3 step(s)")
    assert crunch({"steps": 3}, ToolContext(5000)).output == "completed 3 step(s)"


def test_crunch_sees_the_cancelled_context():
    source = CancellationTokenSource()
    source.cancel()
    result = crunch({"steps": 3}, ToolContext(cancellation_token=source.token))
    assert result == ToolResult.error("cancelled after 0 step(s)")


def test_crunch_refuses_steps_given_as_a_string():
    result = crunch({"steps": "3"})
    assert result.output == (
        """invalid arguments for 'crunch': steps: expected integer, got string "3\""""
    )


def test_a_plain_contract_callable_is_accepted_as_it_is():
    def echo(args, ctx=None):  # type: ignore[no-untyped-def]
        return ToolResult.ok(json.dumps(args, sort_keys=True))

    made = tool(echo)
    assert made.input_schema == {"type": "object"}
    assert made({"anything": [1, 2]}).output == '{"anything": [1, 2]}'


# ------------------------------------------------------------------------ the context parameter


def test_the_context_is_passed_only_to_functions_that_take_it():
    seen = []

    @tool
    def with_ctx(a: int, ctx: ToolContext | None = None) -> str:
        seen.append(ctx)
        return "ok"

    @tool
    def without_ctx(a: int) -> str:
        return "ok"

    context = ToolContext(1234)
    assert with_ctx({"a": 1}, context).output == "ok"
    assert without_ctx({"a": 1}, context).output == "ok"
    assert with_ctx({"a": 1}).output == "ok"
    assert seen == [context, None]


def test_a_context_parameter_without_default_gets_an_empty_context_when_none_is_given():
    @tool
    def budget(ctx: ToolContext) -> str:
        return str(ctx.timeout_ms)

    assert budget({}).output == "None"
    assert budget({}, ToolContext(50)).output == "50"


def test_a_keyword_only_context_parameter_of_a_contract_tool_receives_the_context():
    @tool
    def echo(args, *, context: ToolContext) -> str:  # type: ignore[no-untyped-def]
        return f"{sorted(args)} {context.timeout_ms}"

    assert echo({"x": 1}, ToolContext(7)).output == "['x'] 7"


# -------------------------------------------------------------------------------- normalisation


class Shade(enum.Enum):
    DARK = "dark"


@dataclasses.dataclass
class Reading:
    value: float
    unit: str


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (ToolResult.error("kept as is"), ToolResult.error("kept as is")),
        ("plain text", ToolResult.ok("plain text")),
        (None, ToolResult.ok("")),
        (42, ToolResult.ok("42", {STRUCTURED_KEY: 42})),
        (2.5, ToolResult.ok("2.5", {STRUCTURED_KEY: 2.5})),
        (True, ToolResult.ok("true", {STRUCTURED_KEY: True})),
        (
            {"ok": 1, "text": "é"},
            ToolResult.ok('{"ok":1,"text":"é"}', {STRUCTURED_KEY: {"ok": 1, "text": "é"}}),
        ),
        ([1, "two", None], ToolResult.ok('[1,"two",null]', {STRUCTURED_KEY: [1, "two", None]})),
        ((1, 2), ToolResult.ok("[1,2]", {STRUCTURED_KEY: [1, 2]})),
        (Shade.DARK, ToolResult.ok('"dark"', {STRUCTURED_KEY: "dark"})),
        (
            Reading(1.5, "m"),
            ToolResult.ok(
                '{"value":1.5,"unit":"m"}', {STRUCTURED_KEY: {"value": 1.5, "unit": "m"}}
            ),
        ),
    ],
    ids=[
        "ToolResult",
        "str",
        "None",
        "int",
        "float",
        "bool",
        "dict",
        "list",
        "tuple",
        "enum",
        "dataclass",
    ],
)
def test_return_values_are_normalised(returned, expected):
    made = tool(lambda args: returned, name="value")
    result = made({})
    assert result == expected
    assert result.to_dict() == expected.to_dict()


def test_a_suspension_returned_by_the_tool_is_kept_as_is():
    request = Request("approval", "Deploy?")
    made = tool(lambda args: ToolResult.pending(request), name="deploy")
    assert ToolResult.pending_of(made({})) is request


@pytest.mark.parametrize(
    ("returned", "kind"),
    [(object(), "object"), (float("nan"), "float")],
)
def test_a_value_json_cannot_carry_becomes_an_error_saying_what_was_returned(returned, kind):
    made = tool(lambda args: returned, name="odd")
    result = made({})
    assert result.is_error
    assert result.output.startswith(f"tool 'odd' returned a {kind}, which is not JSON-serialisable")
    assert "return a str, None, a ToolResult or a JSON value" in result.output


# ----------------------------------------------------------------------------------- exceptions


def test_an_exception_becomes_an_error_with_its_message_and_the_traceback_goes_to_logging(caplog):
    @tool
    def explode(city: str) -> str:
        raise ValueError(f"no such city: {city}")

    with caplog.at_level(logging.ERROR, logger="toolnexus"):
        result = explode({"city": "Atlantis"})
    assert result == ToolResult.error("no such city: Atlantis")
    assert "Traceback" not in result.output
    [record] = [r for r in caplog.records if r.name == "toolnexus.tools"]
    assert "explode" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ValueError


def test_an_exception_without_a_message_is_reported_by_its_type_name():
    @tool
    def fail() -> str:
        raise KeyError()

    assert fail({}).output == "KeyError"


def test_an_operation_cancelled_error_becomes_a_cancelled_result():
    @tool
    def patient(ctx: ToolContext) -> str:
        ctx.cancellation_token.raise_if_cancellation_requested()
        return "finished"

    source = CancellationTokenSource()
    source.cancel()
    result = patient({}, ToolContext(cancellation_token=source.token))
    assert result.is_error
    assert result.output.startswith("cancelled")


def test_an_operation_cancelled_error_keeps_its_message():
    @tool
    def stop() -> str:
        raise OperationCancelledError("user pressed stop")

    assert stop({}).output == "cancelled: user pressed stop"


def test_keyboard_interrupt_is_not_swallowed():
    @tool
    def interrupt() -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupt({})


def test_an_exception_raised_while_building_a_dataclass_argument_is_an_error_result():
    @dataclasses.dataclass
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n <= 0:
                raise ValueError("n must be positive")

    @tool
    def use(value: Positive) -> int:
        return value.n

    assert use({"value": {"n": -1}}) == ToolResult.error("n must be positive")
    assert use({"value": {"n": 2}}).output == "2"


# ---------------------------------------------------------------------------------- async tools


@tool
async def fetch(url: str, ctx: ToolContext | None = None) -> str:
    """Pretend to fetch a url."""
    await asyncio.sleep(0)
    return f"fetched {url}"


def test_an_async_tool_says_so():
    assert fetch.is_async
    assert not add.is_async


def test_an_async_tool_called_synchronously_runs_to_completion():
    assert fetch({"url": "/a"}) == ToolResult.ok("fetched /a")


def test_an_async_tool_awaited_runs_on_the_callers_loop():
    loops = []

    @tool
    async def where() -> str:
        loops.append(asyncio.get_running_loop())
        return "here"

    async def main() -> tuple[ToolResult, asyncio.AbstractEventLoop]:
        return await where.acall({}), asyncio.get_running_loop()

    result, loop = asyncio.run(main())
    assert result.output == "here"
    assert loops == [loop]


def test_an_async_tool_called_synchronously_inside_a_running_loop_uses_a_helper_thread():
    threads = []

    @tool
    async def where() -> str:
        threads.append(threading.current_thread())
        return "done"

    async def main() -> ToolResult:
        return where({})  # a sync call from async code must not deadlock

    assert asyncio.run(main()).output == "done"
    assert threads[0] is not threading.main_thread()


def test_acall_calls_a_sync_tool_inline_and_validates_first():
    async def main() -> tuple[ToolResult, ToolResult]:
        return await add.acall({"a": 1, "b": 2}), await add.acall({"a": "1", "b": 2})

    good, bad = asyncio.run(main())
    assert good.output == "3"
    assert bad.output == """invalid arguments for 'add': a: expected integer, got string "1\""""


def test_an_async_tool_raising_becomes_an_error_result_in_both_paths():
    @tool
    async def broken() -> str:
        raise RuntimeError("backend down")

    assert broken({}) == ToolResult.error("backend down")
    assert asyncio.run(broken.acall({})) == ToolResult.error("backend down")


def test_an_async_tool_cancelled_by_asyncio_propagates_from_acall():
    @tool
    async def forever() -> str:
        await asyncio.Event().wait()
        return "never"

    async def main() -> None:
        task = asyncio.ensure_future(forever.acall({}))
        await asyncio.sleep(0)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())


# -------------------------------------------------------------------------------- @tool options


def test_tool_works_bare_with_arguments_and_as_a_plain_call():
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert tool(ping).name == "ping"
    assert tool(name="ping2")(ping).name == "ping2"
    assert tool(ping, description="Say pong.").description == "Say pong."


def test_mcp_hints_become_annotations_and_title_is_kept():
    @tool(
        title="Delete a file", read_only=False, destructive=True, idempotent=True, open_world=False
    )
    def delete(path: str) -> str:
        return path

    assert delete.title == "Delete a file"
    assert delete.annotations == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    }


def test_no_hints_means_no_annotations():
    assert add.annotations is None
    assert add.title is None


def test_an_output_schema_is_kept_read_only():
    @tool(output_schema={"type": "object", "properties": {"sum": {"type": "integer"}}})
    def total(a: int) -> dict[str, int]:
        return {"sum": a}

    assert total.output_schema == {"type": "object", "properties": {"sum": {"type": "integer"}}}


def test_an_explicit_input_schema_with_an_unsupported_keyword_fails_at_definition_time():
    with pytest.raises(SchemaError):
        tool(lambda args: "x", name="bad", input_schema={"type": "object", "nullable": True})


def test_an_explicit_input_schema_with_a_condition_is_checked_on_every_call():
    # the MCP conformance suite's json-schema-2020-12 scenario registers a schema like this
    send = tool(
        lambda args: "sent",
        name="send",
        input_schema={
            "type": "object",
            "properties": {"channel": {"enum": ["mail", "sms"]}, "to": {"type": "string"}},
            "if": {"properties": {"channel": {"const": "sms"}}},
            "then": {"properties": {"to": {"pattern": "^[+][0-9]+$"}}},
        },
    )
    assert send({"channel": "sms", "to": "+4912"}).output == "sent"
    refused = send({"channel": "sms", "to": "ada@example.com"})
    assert refused.is_error and "does not match the 'then' branch" in refused.output


@pytest.mark.parametrize(
    ("schema", "where", "problem"),
    [
        (
            {"type": "object", "properties": {"n": {"type": "number", "default": float("nan")}}},
            "#/properties/n/default",
            "nan is not a JSON number (NaN and infinities are not JSON)",
        ),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "examples": {1, 2}}}},
            "#/properties/n/examples",
            "a set is not a JSON value; use a list",
        ),
        (
            {"type": "object", "properties": {"a/b": {"enum": [1, float("inf")]}}},
            "#/properties/a~1b/enum/1",
            "inf is not a JSON number",
        ),
        ({"type": "object", "x-meta": object()}, "#/x-meta", "an object is not a JSON value"),
        (
            {"type": "object", "properties": {"n": {"default": {1: "one"}}}},
            "#/properties/n/default",
            "the key 1 is not a string (JSON object keys are strings)",
        ),
    ],
)
def test_a_schema_json_cannot_carry_is_refused_when_the_tool_is_defined(schema, where, problem):
    # One such tool would otherwise break every tool list it is in (tools/list: -32603).
    with pytest.raises(SchemaError) as caught:
        tool(lambda args: "x", name="odd", input_schema=schema)
    assert caught.value.path == where
    assert str(caught.value).startswith(
        f"invalid schema at {where}: input_schema of tool 'odd' is not JSON here: {problem}"
    )
    assert str(caught.value).endswith("write JSON values only")
    with pytest.raises(SchemaError, match="output_schema of tool 'out' is not JSON here"):
        tool(lambda args: "x", name="out", output_schema=schema)
    with pytest.raises(SchemaError, match="input_schema of tool 'direct' is not JSON here"):
        Tool("direct", "", schema, lambda args: "x")


def test_annotations_json_cannot_carry_are_refused_when_the_tool_is_defined():
    with pytest.raises(ValueError) as caught:
        Tool("hinted", "", {"type": "object"}, lambda args: "x", annotations={"x-tags": {"a"}})
    assert str(caught.value) == (
        "annotations of tool 'hinted' are not JSON at #/x-tags: a set is not a JSON value; use "
        "a list; MCP's tools/list sends them as JSON: write JSON values only"
    )


def test_an_explicit_input_schema_must_describe_an_object():
    with pytest.raises(ValueError, match=r"must describe an object"):
        tool(lambda args: "x", name="bad", input_schema={"type": "array"})


def test_a_non_boolean_hint_is_refused():
    with pytest.raises(TypeError, match="readOnlyHint must be a bool"):
        tool(read_only="yes")(lambda args: "x")  # type: ignore[arg-type]


def test_a_lambda_needs_a_name():
    with pytest.raises(ValueError, match=r"give it a name with @tool\(name='...'\)"):
        tool(lambda args: "x")
    assert tool(lambda args: "x", name="echo").name == "echo"


# ---------------------------------------------------------------------------------- Tool itself


def test_tool_can_be_constructed_directly_around_a_contract_callable():
    seen = []

    def proxy(args, ctx):  # type: ignore[no-untyped-def]
        seen.append((args, ctx))
        return "remote says hi"

    made = Tool("remote.hello", "Say hi remotely.", {"type": "object"}, proxy, source="mcp")
    assert made.name == "remote_hello"
    assert made({"x": 1}).output == "remote says hi"
    assert seen == [({"x": 1}, None)]
    assert repr(made) == "<Tool 'remote_hello' source='mcp'>"


def test_a_directly_constructed_tool_around_a_one_argument_callable_is_called_with_args_only():
    made = Tool("one", "", {"type": "object"}, lambda args: "ok")
    assert made({}, ToolContext()).output == "ok"


def test_dataclasses_replace_keeps_the_way_the_function_is_called():
    renamed = dataclasses.replace(add, name="plus")
    assert renamed.name == "plus"
    assert renamed({"a": 1, "b": 1}).output == "2"
    assert renamed({"a": 1}).output == (
        "invalid arguments for 'plus': b: required property is missing"
    )


def test_tool_repr_shows_name_and_kind():
    assert repr(add) == "<Tool 'add'>"
    assert repr(fetch) == "<Tool 'fetch' async>"


def test_tools_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        add.name = "other"  # type: ignore[misc]


def test_a_null_for_an_optional_argument_reads_as_not_given():
    @tool
    def greet(name: str, greeting: str = "Hello") -> str:
        return f"{greeting}, {name}"

    assert greet({"name": "Ada", "greeting": None}).output == "Hello, Ada"
    assert greet({"name": None}).output == (
        "invalid arguments for 'greet': name: expected string, got null"
    )


def test_a_tool_is_frozen_for_fields_and_for_new_attributes_alike():
    import dataclasses

    @tool
    def same(x: int) -> int:
        """Return x."""
        return x

    with pytest.raises(dataclasses.FrozenInstanceError, match="name"):
        same.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="replace"):
        same.colour = "red"  # type: ignore[attr-defined]
    assert dataclasses.replace(same, name="other").name == "other"


def test_a_tool_keeps_one_copy_of_each_schema_also_when_copied_with_changes():
    # Its inference record shares the read-only schemas (a second copy was 40% of a small
    # tool's memory); a changed copy still knows its output schema was inferred (wrapped).
    for each in (add, tool(add, name="plus"), dataclasses.replace(add, description="Sum.")):
        assert each._signature is not None
        assert each._signature.schema is each.input_schema
        assert each._signature.output_schema is each.output_schema
        assert each({"a": 1, "b": 2}).metadata == {STRUCTURED_KEY: {"result": 3}}
