"""Provider adapters: each provider's tool shape, as plain JSON copies."""

import enum
import json
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import pytest

from toolnexus import Tool, Toolkit, tool
from toolnexus._toolkit import StrictSchemaError


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(title="Search the web", read_only=True, open_world=True)
def search(query: str, limit: int = 10) -> str:
    """Search the web."""
    return query


ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 10}},
    "required": ["query"],
    "additionalProperties": False,
}


def test_to_openai_wraps_each_tool_as_a_function():
    assert Toolkit([add, search]).to_openai() == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": ADD_SCHEMA,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Search the web.",
                "parameters": SEARCH_SCHEMA,
            },
        },
    ]


def test_to_anthropic_gives_name_description_input_schema():
    assert Toolkit([add]).to_anthropic() == [
        {"name": "add", "description": "Add two integers.", "input_schema": ADD_SCHEMA}
    ]


def test_to_mcp_gives_input_schema_and_the_optional_metadata_when_set():
    @tool(output_schema={"type": "object", "properties": {"sum": {"type": "integer"}}})
    def total(a: int) -> dict[str, int]:
        """Sum."""
        return {"sum": a}

    assert Toolkit([add, search, total]).to_mcp() == [
        {
            "name": "add",
            "description": "Add two integers.",
            "inputSchema": ADD_SCHEMA,
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            },
        },
        {
            "name": "search",
            "title": "Search the web",
            "description": "Search the web.",
            "inputSchema": SEARCH_SCHEMA,
            "annotations": {"readOnlyHint": True, "openWorldHint": True},
        },
        {
            "name": "total",
            "description": "Sum.",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}},
        },
    ]


def test_to_gemini_groups_declarations_in_one_tool():
    assert Toolkit([add, search]).to_gemini(schema="subset") == [
        {
            "functionDeclarations": [
                {
                    "name": "add",
                    "description": "Add two integers.",
                    "parameters": {
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "required": ["a", "b"],
                    },
                },
                {
                    "name": "search",
                    "description": "Search the web.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "query": {"type": "string"},
                            "limit": {"type": "integer", "default": 10},
                        },
                        "required": ["query"],
                    },
                },
            ]
        }
    ]


@pytest.mark.parametrize("adapter", ["to_openai", "to_anthropic", "to_gemini", "to_mcp"])
def test_adapters_return_plain_json_serialisable_copies(adapter):
    toolkit = Toolkit([add, search])
    out = getattr(toolkit, adapter)()
    assert json.loads(json.dumps(out)) == out

    def plain(value: Any) -> None:
        assert type(value) in (dict, list, str, int, float, bool, type(None)), type(value)
        if isinstance(value, dict):
            for item in value.values():
                plain(item)
        elif isinstance(value, list):
            for item in value:
                plain(item)

    plain(out)
    # Mutating what an adapter returned leaves the tool untouched.
    text = json.dumps(out)
    text_before = json.dumps(add.input_schema)
    first = out[0]
    first.clear()
    assert json.dumps(add.input_schema) == text_before
    assert json.loads(text) != out


def test_an_empty_toolkit_gives_empty_lists():
    toolkit = Toolkit()
    assert toolkit.to_openai() == []
    assert toolkit.to_anthropic() == []
    assert toolkit.to_mcp() == []
    assert toolkit.to_gemini() == [{"functionDeclarations": []}]


# --------------------------------------------------------------------------- OpenAI strict


def test_strict_openai_marks_the_function_and_keeps_an_already_strict_schema():
    [entry] = Toolkit([add]).to_openai(strict=True)
    assert entry == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": ADD_SCHEMA,
            "strict": True,
        },
    }


def test_strict_openai_makes_optional_properties_required_and_nullable():
    [entry] = Toolkit([search]).to_openai(strict=True)
    assert entry["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["query", "limit"],
        "additionalProperties": False,
    }


def test_a_null_sent_under_strict_mode_for_an_optional_argument_means_its_default():
    toolkit = Toolkit([search])
    assert toolkit.execute("search", '{"query": "q", "limit": null}').output == "q"


@dataclass
class Window:
    width: int
    height: int = 100


class Options(TypedDict, total=False):
    dark: bool


def test_strict_openai_rewrites_nested_objects_and_definitions():
    @tool
    def layout(main: Window, side: Window, options: Options) -> str:
        return f"{main.height} {side.height} {options}"

    [entry] = Toolkit([layout]).to_openai(strict=True)
    parameters = entry["function"]["parameters"]
    assert parameters["$defs"]["Window"] == {
        "type": "object",
        "properties": {
            "width": {"type": "integer"},
            "height": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["width", "height"],
        "additionalProperties": False,
    }
    assert parameters["properties"]["options"] == {
        "type": "object",
        "properties": {"dark": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}},
        "required": ["dark"],
        "additionalProperties": False,
    }
    # What a strict model sends is accepted, its nulls reading as "not given".
    sent = json.dumps(
        {
            "main": {"width": 1, "height": None},
            "side": {"width": 2, "height": 3},
            "options": {"dark": None},
        }
    )
    assert Toolkit([layout]).execute("layout", sent).output == "100 3 {}"


def test_strict_openai_drops_keywords_strict_mode_refuses():
    @tool
    def pick(tags: set[str], pair: tuple[int, str]) -> str:
        return "ok"

    [entry] = Toolkit([pick]).to_openai(strict=True)
    properties = entry["function"]["parameters"]["properties"]
    assert properties["tags"] == {"type": "array", "items": {"type": "string"}}
    assert properties["pair"] == {
        "type": "array",
        "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "minItems": 2,
        "maxItems": 2,
    }


def test_strict_openai_refuses_an_open_object_naming_the_tool_and_where():
    @tool
    def label(names: dict[str, str]) -> str:
        return "ok"

    with pytest.raises(StrictSchemaError) as caught:
        Toolkit([add, label]).to_openai(strict=True)
    assert caught.value.tool == "label"
    assert caught.value.path == "names"
    assert "cannot be offered in OpenAI strict mode" in str(caught.value)
    assert "without strict=True" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_strict_openai_refuses_a_contract_tool_that_takes_any_object():
    with pytest.raises(StrictSchemaError, match="takes any keys"):
        Toolkit([tool(lambda args: "", name="anything")]).to_openai(strict=True)


# --------------------------------------------------------------------------- Gemini mapping


class Mode(enum.IntEnum):
    FAST = 1
    SAFE = 2


@dataclass
class Node:
    name: str
    children: list["Node"]


def gemini_parameters(item: Tool) -> dict[str, Any]:
    [group] = Toolkit([item]).to_gemini(schema="subset")  # the subset mapper, chosen
    [declaration] = group["functionDeclarations"]
    result: dict[str, Any] = declaration["parameters"]
    return result


def test_gemini_turns_optional_into_nullable():
    @tool
    def find(name: str | None, kind: Literal["a", "b"] | None = None) -> str:
        return "ok"

    assert gemini_parameters(find)["properties"] == {
        "name": {"type": "string", "nullable": True},
        "kind": {"type": "string", "enum": ["a", "b"], "nullable": True, "default": None},
    }


def test_gemini_keeps_real_unions_as_anyof_and_advertises_a_numeric_enum_as_its_type():
    @tool
    def tune(value: int | str, mode: Mode) -> str:
        return f"{value!r} {mode!r}"

    assert gemini_parameters(tune)["properties"] == {
        "value": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "mode": {"type": "integer", "minimum": 1, "maximum": 2, "description": "one of 1, 2"},
    }
    # What the declaration invites the model to send is what the tool accepts.
    assert tune({"value": 3, "mode": 2}).output == "3 <Mode.SAFE: 2>"
    assert tune({"value": 3, "mode": 3}).is_error


def test_gemini_inlines_references_and_cuts_recursion():
    @tool
    def walk(root: Node, other: Node) -> str:
        return "ok"

    parameters = gemini_parameters(walk)
    assert "$defs" not in parameters
    node = parameters["properties"]["root"]
    assert node["type"] == "object"
    assert node["properties"]["name"] == {"type": "string"}
    assert node["properties"]["children"] == {"type": "array", "items": {"type": "object"}}
    assert node["required"] == ["name", "children"]
    assert "additionalProperties" not in node


def test_gemini_drops_keywords_it_refuses():
    @tool(
        input_schema={
            "type": "object",
            "properties": {
                "n": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "pair": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                    "minItems": 2,
                    "maxItems": 2,
                },
                "mode": {"const": "x"},
                "either": {"type": ["integer", "string"]},
                "free": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "additionalProperties": False,
        }
    )
    def many(n=None, tags=None, pair=None, mode=None, either=None, free=None):  # type: ignore[no-untyped-def]
        return "ok"

    assert gemini_parameters(many)["properties"] == {
        "n": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "pair": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        "mode": {"type": "string", "enum": ["x"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "free": {"type": "object", "description": "an object (any keys)"},
    }


def test_gemini_leaves_out_parameters_for_a_tool_without_arguments():
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert Toolkit([ping]).to_gemini() == [
        {"functionDeclarations": [{"name": "ping", "description": "Answer pong."}]}
    ]


# --------------------------------------------------------------------------- functools.partial

SECRET = "sk-live-0123456789"


def fetch(url: str, api_key: str, retries: int = 2) -> str:
    """Fetch a URL.

    Args:
        url: what to fetch.
        api_key: the service key.
    """
    return f"{url} with {api_key[:3]}... x{retries}"


def test_a_partials_bound_secret_appears_in_no_adapter_output():
    import functools

    from toolnexus.mcp import ServerSession

    made = tool(functools.partial(fetch, api_key=SECRET))
    assert made.name == "fetch"
    assert made.description == "Fetch a URL."
    assert list(made.input_schema["properties"]) == ["url", "retries"]
    toolkit = Toolkit([made])
    shapes: list[Any] = [
        toolkit.to_openai(),
        toolkit.to_openai(strict=True),
        toolkit.to_anthropic(),
        toolkit.to_gemini(),
        toolkit.to_gemini(schema="subset"),
        toolkit.to_mcp(),
        repr(made),
        repr(toolkit),
    ]
    session = ServerSession(toolkit)
    shapes.append(
        session.receive(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/list",
                "params": {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                },
            }
        )
    )
    for shape in shapes:
        text = shape if isinstance(shape, str) else json.dumps(shape, default=repr)
        assert SECRET not in text
        assert "api_key" not in text


def test_a_model_cannot_override_what_a_partial_binds():
    import functools

    def call(url: str, api_key: str, **extra: Any) -> str:
        return f"{url} {api_key} {extra}"

    made = tool(functools.partial(call, api_key=SECRET), name="call")
    refused = made({"url": "u", "api_key": "sk-attacker"})
    assert refused.is_error
    assert refused.output == (
        "invalid arguments for 'call': api_key: set by the tool itself and cannot be given; "
        "leave it out"
    )
    assert SECRET not in refused.output
    assert made({"url": "u", "x": 1}).output == f"u {SECRET} {{'x': 1}}"
    assert Toolkit([made]).execute("call", '{"url": "u", "api_key": "k"}').is_error


# ------------------------------------------------------------ per-tool, Responses, strict


def test_the_toolkit_adapters_are_the_tools_own_in_registration_order():
    toolkit = Toolkit([add, search])
    assert toolkit.to_openai() == [add.to_openai(), search.to_openai()]
    assert toolkit.to_openai(api="responses", strict=True) == [
        add.to_openai(api="responses", strict=True),
        search.to_openai(api="responses", strict=True),
    ]
    assert toolkit.to_anthropic(strict=True) == [
        add.to_anthropic(strict=True),
        search.to_anthropic(strict=True),
    ]
    assert toolkit.to_gemini() == [{"functionDeclarations": [add.to_gemini(), search.to_gemini()]}]
    assert toolkit.to_mcp() == [add.to_mcp(), search.to_mcp()]


def test_the_responses_api_shape_is_flat_and_always_says_strict():
    assert add.to_openai(api="responses") == {
        "type": "function",
        "name": "add",
        "description": "Add two integers.",
        "parameters": ADD_SCHEMA,
        "strict": False,
    }
    strict = search.to_openai(api="responses", strict=True)
    assert strict["strict"] is True
    assert strict["parameters"]["required"] == ["query", "limit"]
    assert strict["parameters"]["properties"]["limit"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}]
    }


def test_an_unknown_openai_api_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="api must be 'chat' or 'responses', got 'assistants'"):
        add.to_openai(api="assistants")


def test_openai_strict_keeps_standard_formats_and_drops_hints_it_does_not_know():
    import datetime
    import decimal
    import pathlib

    @tool
    def file(at: datetime.date, where: pathlib.Path, cost: decimal.Decimal, raw: bytes) -> str:
        return "ok"

    properties = file.to_openai(strict=True)["function"]["parameters"]["properties"]
    assert properties == {
        "at": {"type": "string", "format": "date"},
        "where": {"type": "string"},
        "cost": {"type": "string"},
        "raw": {"type": "string"},
    }


def test_anthropic_strict_closes_objects_keeps_optionals_and_drops_unsupported_bounds():
    @tool(
        input_schema={
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 9},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 5},
                    "minItems": 2,
                    "maxItems": 4,
                    "uniqueItems": True,
                },
                "point": {"type": "object", "properties": {"x": {"type": "number"}}},
                "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
            },
            "required": ["n"],
        }
    )
    def shaped(args: dict[str, Any]) -> str:
        return "ok"

    out = shaped.to_anthropic(strict=True)
    assert out["strict"] is True
    assert out["input_schema"] == {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "additionalProperties": False,
            },
            "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    # the tool itself still holds the bounds it no longer advertises
    assert shaped({"n": 10}).is_error
    assert "strict" not in shaped.to_anthropic()


def test_anthropic_strict_refuses_open_objects_and_recursive_schemas():
    @tool
    def label(names: dict[str, str]) -> str:
        return "ok"

    with pytest.raises(
        StrictSchemaError,
        match="in Anthropic strict mode: names is an object "
        r"with free-form keys.*use to_anthropic\(\)",
    ):
        label.to_anthropic(strict=True)

    @tool
    def walk(root: Node, other: Node) -> str:
        return "ok"

    with pytest.raises(StrictSchemaError) as caught:
        walk.to_anthropic(strict=True)
    assert caught.value.provider == "Anthropic"
    assert caught.value.path == "#/$defs/Node"
    assert "refers to itself" in str(caught.value)


def test_gemini_says_unknown_string_formats_in_words():
    import datetime

    @tool
    def book(day: datetime.date, at: datetime.datetime, blob: bytes) -> str:
        """Book.

        Args:
            day: the day.
        """
        return "ok"

    assert gemini_parameters(book)["properties"] == {
        "day": {"type": "string", "description": "the day. (format: date)"},
        "at": {"type": "string", "format": "date-time"},
        "blob": {"type": "string", "description": "base64"},
    }


def test_a_model_cannot_set_what_a_partial_binds_positionally_either():
    import functools

    def call(base: str, path: str, **extra: Any) -> str:
        return f"{base}{path} {extra}"

    made = tool(functools.partial(call, "https://internal"), name="call")
    assert list(made.input_schema["properties"]) == ["path"]
    assert made({"path": "/x"}).output == "https://internal/x {}"
    refused = made({"path": "/x", "base": "https://evil"})
    assert refused.output == (
        "invalid arguments for 'call': base: set by the tool itself and cannot be given; "
        "leave it out"
    )
