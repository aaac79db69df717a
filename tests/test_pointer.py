"""JSON pointers (RFC 6901): the one resolver, and every adapter reading ``~0``/``~1`` alike."""

from typing import Any

import pytest

from toolnexus import tool
from toolnexus._pointer import (
    MISSING,
    escape,
    fragment_pointer,
    resolve,
    resolve_reference,
    tokens,
)
from toolnexus.errors import StrictSchemaError
from toolnexus.validation import SchemaError, Validator

DOCUMENT = {"a/b": {"c~d": [10, 20]}, "e f": 1, "%": 2, "": 3, "x": None}


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("", DOCUMENT),
        ("/a~1b/c~0d/1", 20),
        ("/a~1b/c~0d/0", 10),
        ("/e f", 1),
        ("/%", 2),
        ("/", 3),
        ("/x", None),
    ],
)
def test_a_pointer_names_the_value_rfc_6901_says(pointer: str, expected: Any) -> None:
    assert resolve(DOCUMENT, pointer) == expected


@pytest.mark.parametrize(
    "pointer",
    [
        "/a/b",  # "/" inside a name must be ~1
        "/a~1b/c~d/0",  # "~" alone is not an escape
        "/a~1b/c~0d/01",  # no leading zero in an index
        "/a~1b/c~0d/2",  # past the end
        "/a~1b/c~0d/-",  # the position after the last item names nothing
        "a~1b",  # not starting with "/"
        "/x/y",  # under null
    ],
)
def test_a_pointer_that_names_nothing_resolves_to_missing(pointer: str) -> None:
    assert resolve(DOCUMENT, pointer) is MISSING


def test_tokens_are_unescaped_in_the_order_that_keeps_tilde_one_apart() -> None:
    assert tokens("/~01") == ["~1"]  # "~01" is "~" then "1", never "/"
    assert tokens("/~1/~0") == ["/", "~"]
    assert tokens("") == []
    assert tokens("/~2") is None
    assert escape("a/b~c") == "a~1b~0c" and tokens("/" + escape("a/b~c")) == ["a/b~c"]


def test_a_uri_fragment_is_percent_decoded_before_it_is_read_as_a_pointer() -> None:
    assert fragment_pointer("#/e%20f") == "/e f"
    assert fragment_pointer("#/%25") == "/%"
    assert fragment_pointer("#") == ""
    assert fragment_pointer("#node") is None  # an anchor, not a pointer
    assert fragment_pointer("other.json#/a") is None  # another document
    assert resolve_reference(DOCUMENT, "#/e%20f") == 1
    assert resolve_reference(DOCUMENT, "#/a~1b/c~0d/1") == 20
    assert resolve_reference(DOCUMENT, "#node") is MISSING


# --------------------------------------------------------------------------- every adapter

# Definitions whose names need escaping in a pointer: "/" (~1), "~" (~0), a space (%20).
SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"$ref": "#/$defs/per~1page"},
        "mode": {"$ref": "#/$defs/mode~0v2"},
        "label": {"$ref": "#/$defs/short%20text"},
    },
    "required": ["count"],
    "additionalProperties": False,
    "$defs": {
        "per/page": {"type": "integer", "minimum": 1},
        "mode~v2": {"type": "string", "enum": ["fast", "safe"]},
        "short text": {"type": "string", "maxLength": 8},
    },
}


@tool(name="page", input_schema=SCHEMA)
def page(args: dict[str, Any]) -> str:
    """Show one page."""
    return f"{args['count']} {args.get('mode')} {args.get('label')}"


def _refused_for_the_referenced_type(schema: dict[str, Any]) -> None:
    """The adapter's schema still points at the definitions the tool checks against."""
    check = Validator(schema).errors
    good = {"count": 3, "mode": "fast", "label": "hi"}
    assert check(good) == []
    assert check({**good, "count": "3"}) == ['count: expected integer, got string "3"']
    assert '"fast", "safe"' in check({**good, "mode": "slow"})[0]
    assert "expected string" in check({**good, "label": 5})[0]


def test_the_tool_itself_resolves_escaped_references() -> None:
    assert page({"count": 2, "mode": "safe", "label": "hi"}).output == "2 safe hi"
    assert page({"count": "2"}).is_error
    assert "count: expected integer" in page({"count": "2"}).output


def test_to_gemini_inlines_escaped_references_with_their_own_types() -> None:
    # The bug this pins: a resolver that skipped ~0/~1 advertised these as {"type": "object"}.
    properties = page.to_gemini(schema="subset")["parameters"]["properties"]
    assert properties["count"] == {"type": "integer", "minimum": 1}
    assert properties["mode"] == {"type": "string", "enum": ["fast", "safe"]}
    assert properties["label"] == {"type": "string", "maxLength": 8}


def test_to_openai_keeps_escaped_references_that_resolve() -> None:
    _refused_for_the_referenced_type(page.to_openai()["function"]["parameters"])


def test_to_openai_strict_makes_escaped_references_nullable_and_the_tool_takes_the_nulls() -> None:
    parameters = page.to_openai(strict=True)["function"]["parameters"]
    assert parameters["required"] == ["count", "mode", "label"]
    assert parameters["properties"]["mode"] == {
        "anyOf": [{"$ref": "#/$defs/mode~0v2"}, {"type": "null"}]
    }
    _refused_for_the_referenced_type(parameters)
    # what a strict model sends for what it leaves out: null, read as "not given"
    sent = {"count": 4, "mode": None, "label": None}
    assert Validator(parameters).errors(sent) == []
    assert page(sent).output == "4 None None"


def test_to_anthropic_keeps_escaped_references_that_resolve() -> None:
    _refused_for_the_referenced_type(page.to_anthropic()["input_schema"])
    _refused_for_the_referenced_type(page.to_anthropic(strict=True)["input_schema"])


def test_to_anthropic_strict_sees_a_recursive_definition_behind_escaped_names() -> None:
    @tool(
        name="tree",
        input_schema={
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/a~1tree"}},
            "required": ["root"],
            "additionalProperties": False,
            "$defs": {
                "a/tree": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "kids": {"type": "array", "items": {"$ref": "#/$defs/a~1tree"}},
                    },
                    "required": ["name", "kids"],
                    "additionalProperties": False,
                }
            },
        },
    )
    def tree(args: dict[str, Any]) -> str:
        """Walk a tree."""
        return "ok"

    with pytest.raises(StrictSchemaError, match=r"#/\$defs/a~1tree.*recursive"):
        tree.to_anthropic(strict=True)
    assert tree.to_openai(strict=True)["function"]["strict"] is True  # OpenAI allows recursion


def test_to_mcp_keeps_escaped_references_that_resolve() -> None:
    _refused_for_the_referenced_type(page.to_mcp()["inputSchema"])


def test_a_reference_with_a_lone_tilde_is_a_schema_error_that_says_how_to_escape() -> None:
    with pytest.raises(SchemaError, match=r"not a JSON pointer: write '~' as '~0'"):
        Validator({"$ref": "#/$defs/a~b", "$defs": {"a~b": {}}})
