"""The argument validator: every keyword, its exact problem text, schema errors, and limits.

Each table row is (schema, value, problems): ``[]`` means valid; otherwise the exact
problem strings a model would read. Every row is also checked through ``is_valid``, so the
fast yes/no path and the explaining path can never disagree.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import pytest

import toolnexus
from toolnexus import ToolnexusError
from toolnexus.validation import (
    ANNOTATION_KEYWORDS,
    SUPPORTED_KEYWORDS,
    SchemaError,
    Validator,
    check_schema,
    validate,
)

TWO_INTEGERS = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def row(schema: Any, value: Any, *problems: str, id: str) -> Any:
    return pytest.param(schema, value, list(problems), id=id)


IF_FILE = {
    "if": {"properties": {"kind": {"const": "file"}}},
    "then": {"required": ["path"]},
    "else": {"required": ["url"]},
}

KEYWORD_CASES = [
    # type: single names
    row({"type": "integer"}, 3, id="integer accepts an int"),
    row({"type": "integer"}, 3.0, id="integer accepts an integral float"),
    row({"type": "integer"}, -(10**30), id="integer accepts a big int"),
    row({"type": "integer"}, 3.5, "expected integer, got number 3.5", id="integer refuses 3.5"),
    row({"type": "integer"}, True, "expected integer, got boolean true", id="integer refuses True"),
    row({"type": "integer"}, "3", 'expected integer, got string "3"', id="integer refuses '3'"),
    row({"type": "number"}, 2, id="number accepts an int"),
    row({"type": "number"}, 2.5, id="number accepts a float"),
    row({"type": "number"}, False, "expected number, got boolean false", id="number refuses bool"),
    row({"type": "number"}, None, "expected number, got null", id="number refuses null"),
    row({"type": "string"}, "", id="string accepts empty"),
    row({"type": "string"}, 1, "expected string, got integer 1", id="string refuses int"),
    row({"type": "boolean"}, False, id="boolean accepts False"),
    row({"type": "boolean"}, 0, "expected boolean, got integer 0", id="boolean refuses 0"),
    row({"type": "null"}, None, id="null accepts None"),
    row({"type": "null"}, "", 'expected null, got string ""', id="null refuses empty string"),
    row({"type": "array"}, [1], id="array accepts a list"),
    row({"type": "array"}, (1, 2), id="array accepts a tuple"),
    row({"type": "array"}, {}, "expected array, got object", id="array refuses object"),
    row({"type": "object"}, {"k": 1}, id="object accepts a dict"),
    row({"type": "object"}, [], "expected object, got array", id="object refuses array"),
    row({"type": "object"}, {1, 2}, "expected object, got set (not a JSON value)", id="non-JSON"),
    # type: lists of names
    row({"type": ["integer", "null"]}, None, id="type list accepts null"),
    row({"type": ["integer", "null"]}, 7, id="type list accepts integer"),
    row(
        {"type": ["integer", "null"]},
        "3",
        'expected integer or null, got string "3"',
        id="type list refuses string",
    ),
    row(
        {"type": ["string", "integer", "null"]},
        1.5,
        "expected string, integer or null, got number 1.5",
        id="type list of three",
    ),
    row(
        {"type": ["number", "string"]},
        True,
        "expected number or string, got boolean true",
        id="type list never takes bool as number",
    ),
    # properties / required / additionalProperties
    row(TWO_INTEGERS, {"a": 1, "b": 2}, id="two integers valid"),
    row(TWO_INTEGERS, {"a": 1.0, "b": -2}, id="two integers accept 1.0"),
    row(TWO_INTEGERS, {"a": 1}, "b: required property is missing", id="required missing"),
    row(
        TWO_INTEGERS,
        {"a": "1", "b": 2, "colour": "red"},
        'a: expected integer, got string "1"',
        "colour: unexpected property (allowed: a, b)",
        id="wrong type and extra property",
    ),
    row(
        TWO_INTEGERS,
        {},
        "a: required property is missing",
        "b: required property is missing",
        id="every missing property listed",
    ),
    row(TWO_INTEGERS, [1, 2], "expected object, got array", id="object schema refuses array"),
    row({"properties": {"a": {"type": "string"}}}, 5, id="properties ignore non-objects"),
    row({"required": ["a"]}, "text", id="required ignores non-objects"),
    row(
        {"type": "object", "additionalProperties": False},
        {"x": 1},
        "x: unexpected property (no properties are allowed)",
        id="closed empty object",
    ),
    row(
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"a": 1, "b": "x", "c d": None},
        'b: expected integer, got string "x"',
        '["c d"]: expected integer, got null',
        id="additionalProperties schema, odd key quoted",
    ),
    row(
        {"type": "object", "additionalProperties": True, "properties": {"a": {"type": "null"}}},
        {"a": None, "z": [1]},
        id="additionalProperties true",
    ),
    row(
        {"type": "object", "properties": {"old": False}},
        {"old": 1},
        "old: property is not allowed",
        id="property with false schema",
    ),
    row(
        {"type": "object", "properties": {"a": True}, "required": ["a"]},
        {"a": {"anything": [1]}},
        id="property with true schema",
    ),
    # items / prefixItems
    row({"type": "array", "items": {"type": "string"}}, ["a", "b"], id="items valid"),
    row(
        {"type": "array", "items": {"type": "string"}},
        ["a", 2, None],
        "[1]: expected string, got integer 2",
        "[2]: expected string, got null",
        id="items every bad item",
    ),
    row(
        {"prefixItems": [{"type": "number"}, {"type": "string"}]},
        [1, "x", {"extra": True}],
        id="prefixItems allow extra items by default",
    ),
    row(
        {"prefixItems": [{"type": "number"}, {"type": "string"}]},
        [1, 2],
        "[1]: expected string, got integer 2",
        id="prefixItems position",
    ),
    row({"prefixItems": [{"type": "number"}, {"type": "string"}]}, [1], id="prefixItems short"),
    row(
        {"prefixItems": [{"type": "number"}, {"type": "number"}], "items": False},
        [1, 2, 3],
        "expected at most 2 items, got 3",
        id="prefixItems closed with items false",
    ),
    row(
        {"prefixItems": [{"type": "number"}], "items": {"type": "string"}},
        [1, "a", 3],
        "[2]: expected string, got integer 3",
        id="items after prefixItems",
    ),
    row(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                }
            },
        },
        {"items": [{"name": "a"}, {"name": 5}]},
        "items[1].name: expected string, got integer 5",
        id="nested path",
    ),
    # enum / const
    row({"enum": ["red", "green"]}, "green", id="enum valid"),
    row(
        {"enum": ["red", "green"]},
        "pink",
        'expected one of "red", "green", got string "pink"',
        id="enum invalid",
    ),
    row({"enum": ["red"]}, "blue", 'expected "red", got string "blue"', id="single enum"),
    row({"enum": [1, 2]}, 2.0, id="enum 2.0 equals 2"),
    row({"enum": [1, 2]}, True, "expected one of 1, 2, got boolean true", id="enum True is not 1"),
    row({"enum": [True]}, 1, "expected true, got integer 1", id="enum 1 is not True"),
    row({"enum": [None, [1, {"a": 2}]]}, [1.0, {"a": 2}], id="enum deep JSON equality"),
    row({"const": "dog"}, "dog", id="const valid"),
    row({"const": "dog"}, "cat", 'expected "dog", got string "cat"', id="const invalid"),
    row({"const": 0}, False, "expected 0, got boolean false", id="const False is not 0"),
    row({"const": {"a": [1, 2]}}, {"a": [1.0, 2]}, id="const object equality"),
    row(
        {"const": {"a": [1, 2]}},
        {"a": [2, 1]},
        'expected {"a": [1, 2]}, got object',
        id="const array order matters",
    ),
    # numbers
    row({"minimum": 0}, 0, id="minimum inclusive"),
    row({"minimum": 0}, -1, "expected at least 0, got -1", id="minimum"),
    row({"minimum": 0}, "text", id="minimum ignores strings"),
    row({"minimum": 0}, False, id="minimum ignores booleans"),
    row({"exclusiveMinimum": 0}, 0, "expected more than 0, got 0", id="exclusiveMinimum"),
    row({"exclusiveMinimum": 0}, 0.001, id="exclusiveMinimum valid"),
    row({"maximum": 10}, 10.5, "expected at most 10, got 10.5", id="maximum"),
    row({"exclusiveMaximum": 10}, 10, "expected less than 10, got 10", id="exclusiveMaximum"),
    row({"multipleOf": 3}, 9, id="multipleOf int"),
    row({"multipleOf": 3}, 10, "expected a multiple of 3, got 10", id="multipleOf int invalid"),
    row({"multipleOf": 0.1}, 0.3, id="multipleOf decimal-friendly"),
    row({"multipleOf": 0.1}, 0.35, "expected a multiple of 0.1, got 0.35", id="multipleOf 0.1"),
    row({"multipleOf": 2}, 4.0, id="multipleOf integral float"),
    row({"multipleOf": 0.5}, 10**400, id="multipleOf huge int"),
    # strings
    row({"minLength": 2}, "ab", id="minLength valid"),
    row({"minLength": 3}, "ab", "expected at least 3 characters, got 2", id="minLength"),
    row({"minLength": 2}, "😀", "expected at least 2 characters, got 1", id="code points"),
    row({"maxLength": 1}, "é", id="maxLength counts code points"),
    row({"maxLength": 1}, "ab", "expected at most 1 character, got 2", id="maxLength"),
    row({"maxLength": 1}, ["a", "b"], id="maxLength ignores arrays"),
    row({"pattern": "b"}, "abc", id="pattern searches anywhere"),
    row(
        {"pattern": "^[a-z]+$"},
        "ABC",
        'expected a string matching "^[a-z]+$", got string "ABC"',
        id="pattern",
    ),
    row({"pattern": "^x"}, 5, id="pattern ignores numbers"),
    row({"format": "email"}, "not an email", id="format is an annotation"),
    # arrays
    row({"minItems": 1}, [], "expected at least 1 item, got 0", id="minItems"),
    row({"maxItems": 1}, [1, 2], "expected at most 1 item, got 2", id="maxItems"),
    row({"uniqueItems": True}, [1, "1", True, None], id="uniqueItems distinct types"),
    row(
        {"uniqueItems": True},
        [1, 2, 1.0],
        "expected unique items, got duplicates at index 0 and 2",
        id="uniqueItems 1 equals 1.0",
    ),
    row({"uniqueItems": True}, [1, True], id="uniqueItems True is not 1"),
    row({"uniqueItems": True}, [0, False], id="uniqueItems False is not 0"),
    row(
        {"uniqueItems": True},
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
        "expected unique items, got duplicates at index 0 and 1",
        id="uniqueItems objects ignore key order",
    ),
    row({"uniqueItems": True}, [[1, 2], [2, 1]], id="uniqueItems arrays keep order"),
    row({"uniqueItems": False}, [1, 1], id="uniqueItems false"),
    # object counts
    row({"minProperties": 1}, {}, "expected at least 1 property, got 0", id="minProperties"),
    row(
        {"maxProperties": 1},
        {"a": 1, "b": 2},
        "expected at most 1 property, got 2",
        id="maxProperties",
    ),
    # allOf / anyOf / oneOf / not
    row({"allOf": [{"minimum": 1}, {"multipleOf": 2}]}, 4, id="allOf valid"),
    row(
        {"allOf": [{"minimum": 1}, {"multipleOf": 2}]},
        0.5,
        "expected at least 1, got 0.5",
        "expected a multiple of 2, got 0.5",
        id="allOf lists every failing branch",
    ),
    row({"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, id="anyOf valid"),
    row(
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "x",
        'expected integer or null, got string "x"',
        id="anyOf by type names the alternatives",
    ),
    row(
        {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},
        3,
        'expected "a", "b" or null, got integer 3',
        id="anyOf with enum names the values",
    ),
    row(
        {"anyOf": [{"type": "integer"}, {"const": "auto"}]},
        "x",
        'expected integer or "auto", got string "x"',
        id="anyOf with const",
    ),
    row(
        {"anyOf": [{"type": "string", "minLength": 3}, {"type": "null"}]},
        "ab",
        "expected at least 3 characters, got 2",
        id="anyOf reports the only branch of the right type",
    ),
    row({"oneOf": [{"type": "integer"}, {"type": "string"}]}, "s", id="oneOf valid"),
    row(
        {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        None,
        "expected integer or string, got null",
        id="oneOf none",
    ),
    row(
        {"oneOf": [{"type": "integer"}, {"type": "number"}, {"type": "string"}]},
        1,
        "matches 2 of the 3 alternatives (1 and 2); oneOf needs exactly one",
        id="oneOf several",
    ),
    row({"not": {"type": "null"}}, 0, id="not valid"),
    row({"not": {"type": "null"}}, None, "must not be null, got null", id="not type"),
    row({"not": {"const": "x"}}, "x", 'must not be "x", got string "x"', id="not const"),
    row(
        {"not": {"minimum": 3}},
        5,
        'must not match {"minimum": 3}, got integer 5',
        id="not other schema",
    ),
    # boolean schemas
    row(True, {"any": "thing"}, id="true schema"),
    row(False, 1, "no value is allowed here", id="false schema"),
    row({}, [None], id="empty schema"),
    # annotations are ignored
    row(
        {
            "title": "T",
            "description": "d",
            "default": 3,
            "examples": [1],
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:x",
            "$comment": "c",
            "deprecated": True,
            "readOnly": False,
            "writeOnly": False,
            "contentMediaType": "text/plain",
            "contentEncoding": "base64",
            "x-vendor": {"anything": 1},
            "type": "integer",
        },
        4,
        id="annotations ignored",
    ),
    # if / then / else
    row(IF_FILE, {"kind": "file", "path": "a"}, id="if holds and then holds"),
    row(IF_FILE, {"kind": "web", "url": "u"}, id="if fails and else holds"),
    row(
        IF_FILE,
        {"kind": "file"},
        "does not match the 'then' branch of the condition"
        ' {"properties": {"kind": {"const": "file"}}}: path: required property is missing',
        id="then fails",
    ),
    row(
        IF_FILE,
        {"kind": "web"},
        "does not match the 'else' branch of the condition"
        ' {"properties": {"kind": {"const": "file"}}}: url: required property is missing',
        id="else fails",
    ),
    row(
        {"properties": {"x": {"if": {"type": "string"}, "then": {"maxLength": 3}}}},
        {"x": "abcd"},
        'x: does not match the \'then\' branch of the condition {"type": "string"}:'
        " expected at most 3 characters, got 4",
        id="then fails under a property",
    ),
    row({"then": False, "else": False}, 1, id="then and else without if do nothing"),
    # patternProperties, propertyNames
    row(
        {"patternProperties": {"^n_": {"type": "integer"}}, "additionalProperties": False},
        {"n_a": "1", "b": 2},
        'n_a: expected integer, got string "1"',
        "b: unexpected property (its name matches no pattern)",
        id="patternProperties",
    ),
    row(
        {"properties": {"n_a": {"minimum": 5}}, "patternProperties": {"^n_": {"maximum": 1}}},
        {"n_a": 3},
        "n_a: expected at least 5, got 3",
        "n_a: expected at most 1, got 3",
        id="a property and a pattern both apply",
    ),
    row(
        {"propertyNames": {"pattern": "^[a-z]+$"}},
        {"ok": 1, "NO": 2},
        'NO: invalid property name: expected a string matching "^[a-z]+$", got string "NO"',
        id="propertyNames",
    ),
    row(
        {"propertyNames": False},
        {"a": 1},
        "a: unexpected property (no properties are allowed)",
        id="propertyNames false",
    ),
    # dependentRequired, dependentSchemas, draft-07 dependencies
    row({"dependentRequired": {"card": ["cvv"]}}, {"cvv": 1}, id="dependentRequired absent"),
    row(
        {"dependentRequired": {"card": ["cvv"]}},
        {"card": "1"},
        'cvv: required property is missing ("card" is present)',
        id="dependentRequired",
    ),
    row(
        {"dependentSchemas": {"card": {"required": ["cvv"]}}},
        {"card": "1"},
        'does not match the schema required when "card" is present:'
        " cvv: required property is missing",
        id="dependentSchemas",
    ),
    row(
        {"dependencies": {"card": ["cvv"], "b": {"required": ["c"]}}},
        {"card": "1", "b": 1},
        'cvv: required property is missing ("card" is present)',
        'does not match the schema required when "b" is present: c: required property is missing',
        id="draft-07 dependencies",
    ),
    # contains, minContains, maxContains
    row({"contains": {"type": "integer"}}, ["a", 1], id="contains"),
    row(
        {"contains": {"type": "integer"}},
        ["a"],
        'expected at least 1 item matching {"type": "integer"}, got 0',
        id="contains none",
    ),
    row(
        {"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3},
        ["a", 1],
        'expected at least 2 items matching {"type": "integer"}, got 1',
        id="minContains",
    ),
    row(
        {"contains": {"type": "integer"}, "maxContains": 1},
        [1, 2],
        'expected at most 1 item matching {"type": "integer"}, got 2',
        id="maxContains",
    ),
    row({"contains": False, "minContains": 0}, [], id="minContains 0"),
    row({"minContains": 2, "maxContains": 0}, [1], id="min/maxContains without contains"),
    # unevaluatedProperties, unevaluatedItems
    row(
        {"properties": {"a": {}}, "unevaluatedProperties": False},
        {"a": 1, "b": 2},
        "b: unexpected property (no keyword of the schema describes it)",
        id="unevaluatedProperties false",
    ),
    row(
        {
            "allOf": [{"properties": {"a": {}}}],
            "anyOf": [{"properties": {"b": {}}, "required": ["b"]}, {"required": ["z"]}],
            "unevaluatedProperties": {"type": "string"},
        },
        {"a": 1, "b": 2, "c": 3},
        "c: expected string, got integer 3",
        id="unevaluatedProperties sees through allOf and anyOf",
    ),
    row(
        {
            "$defs": {"Base": {"properties": {"a": {}}}},
            "$ref": "#/$defs/Base",
            "if": {"required": ["k"]},
            "then": {"properties": {"k": {}}},
            "unevaluatedProperties": False,
        },
        {"a": 1, "k": 2},
        id="unevaluatedProperties sees through $ref and if/then",
    ),
    row(
        {"prefixItems": [{"type": "string"}], "unevaluatedItems": False},
        ["a", 2],
        "[1]: unexpected item (no keyword of the schema describes it)",
        id="unevaluatedItems false",
    ),
    row(
        {"contains": {"type": "integer"}, "unevaluatedItems": {"type": "string"}},
        [1, "a", 2],
        id="unevaluatedItems sees contains",
    ),
    # draft-07 array-form items
    row(
        {"items": [{"type": "string"}], "additionalItems": False},
        ["a", 2],
        "expected at most 1 item, got 2",
        id="draft-07 items array with additionalItems",
    ),
    row({"items": [{"type": "string"}]}, ["a", 2], id="draft-07 items array alone"),
    # references by $id, $anchor, $dynamicRef
    row(
        {
            "$defs": {"n": {"$anchor": "num", "type": "number"}},
            "properties": {"a": {"$ref": "#num"}},
        },
        {"a": "x"},
        'a: expected number, got string "x"',
        id="$anchor",
    ),
    row(
        {
            "$id": "https://example.com/root",
            "$defs": {"b": {"$id": "parts/b", "type": "boolean"}},
            "items": {"$ref": "parts/b"},
        },
        [True, 1],
        "[1]: expected boolean, got integer 1",
        id="$id-relative $ref",
    ),
    row(
        {
            "$id": "https://example.com/strict-list",
            "$defs": {
                "text": {"$dynamicAnchor": "item", "type": "string"},
                "list": {
                    "$id": "list",
                    "type": "array",
                    "items": {"$dynamicRef": "#item"},
                    "$defs": {"item": {"$dynamicAnchor": "item"}},
                },
            },
            "$ref": "list",
        },
        ["a", 1],
        "[1]: expected string, got integer 1",
        id="$dynamicRef to the outermost $dynamicAnchor",
    ),
]


@pytest.mark.parametrize(("schema", "value", "problems"), KEYWORD_CASES)
def test_each_keyword_reports_exactly_these_problems(
    schema: Any, value: Any, problems: list[str]
) -> None:
    validator = Validator(schema)
    assert validator.errors(value) == problems
    assert validator.is_valid(value) is (problems == [])
    assert validate(schema, value) == problems


def test_every_supported_keyword_appears_in_the_table() -> None:
    seen: set[str] = set()

    def walk(schema: Any) -> None:
        if isinstance(schema, dict):
            seen.update(schema)
            for value in schema.values():
                walk(value)
        elif isinstance(schema, list):
            for item in schema:
                walk(item)

    for case in KEYWORD_CASES:
        walk(case.values[0])
    walk({"$defs": {}, "definitions": {}, "$ref": "#"})  # covered by the $ref tests below
    assert seen >= SUPPORTED_KEYWORDS
    assert not SUPPORTED_KEYWORDS & ANNOTATION_KEYWORDS


# --- the toolkit's message shape ----------------------------------------------------------


def test_the_issue_example_reads_as_written() -> None:
    schema = {"type": "object", "properties": {"steps": {"type": "integer"}}}
    problems = Validator(schema).errors({"steps": "3"})
    assert "invalid arguments for 'crunch': " + "; ".join(problems) == (
        "invalid arguments for 'crunch': steps: expected integer, got string \"3\""
    )


def test_root_problems_have_no_path_prefix() -> None:
    assert Validator(TWO_INTEGERS).errors(None) == ["expected object, got null"]


def test_long_strings_are_shortened_in_problems() -> None:
    [problem] = Validator({"type": "integer"}).errors("x" * 500)
    assert problem == 'expected integer, got string "' + "x" * 37 + '..." (500 characters)'


def test_huge_integers_are_described_without_printing_them() -> None:
    [problem] = Validator({"maximum": 0}).errors(10**5000)
    assert problem == "expected at most 0, got an integer of about 5001 digits"


def test_unusual_keys_are_quoted_in_paths() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "string"}}
    assert Validator(schema).errors({"0": 1, "a.b": 2, "ok_key-2": 3}) == [
        '["0"]: expected string, got integer 1',
        '["a.b"]: expected string, got integer 2',
        "ok_key-2: expected string, got integer 3",
    ]


def test_many_problems_are_capped_with_a_count_of_the_rest() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    problems = Validator(schema).errors(["x"] * 50)
    assert len(problems) == 21
    assert problems[0] == '[0]: expected integer, got string "x"'
    assert problems[19] == '[19]: expected integer, got string "x"'
    assert problems[20] == "... and 30 more"


def test_the_problem_cap_is_configurable() -> None:
    validator = Validator({"items": {"type": "null"}}, max_problems=2)
    assert validator.errors([1, 2, 3]) == [
        "[0]: expected null, got integer 1",
        "[1]: expected null, got integer 2",
        "... and 1 more",
    ]


def test_a_huge_wrong_input_stops_walking_and_says_so() -> None:
    problems = Validator({"items": {"type": "string"}}).errors(list(range(100_000)))
    assert len(problems) == 21
    assert problems[-1] == "... and at least 980 more"


def test_an_additional_property_lists_at_most_a_dozen_allowed_names() -> None:
    schema = {
        "type": "object",
        "properties": {f"p{index}": {} for index in range(20)},
        "additionalProperties": False,
    }
    [problem] = Validator(schema).errors({"zz": 1})
    assert problem == (
        "zz: unexpected property (allowed: p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, ... (20 in all))"
    )


# --- anyOf / oneOf say something useful -------------------------------------------------

PET = {
    "anyOf": [
        {
            "type": "object",
            "properties": {"kind": {"const": "dog"}, "bark": {"type": "boolean"}},
            "required": ["kind", "bark"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"kind": {"const": "cat"}, "meow": {"type": "boolean"}},
            "required": ["kind", "meow"],
            "additionalProperties": False,
        },
    ]
}


def test_anyof_of_objects_names_the_closest_alternative_and_its_problems() -> None:
    schema = {"type": "object", "properties": {"pet": PET}}
    assert Validator(schema).errors({"pet": {"kind": "cat", "meow": 1}}) == [
        "pet: matches none of the 2 alternatives; closest is alternative 2:"
        " pet.meow: expected boolean, got integer 1"
    ]


def test_oneof_of_objects_behaves_like_anyof_when_nothing_matches() -> None:
    schema = {"oneOf": PET["anyOf"]}
    assert Validator(schema).errors({"kind": "dog"}) == [
        "matches none of the 2 alternatives; closest is alternative 1:"
        " bark: required property is missing"
    ]


def test_optional_object_reports_the_object_problems_directly() -> None:
    config = {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {"cfg": {"anyOf": [{"$ref": "#/$defs/Config"}, {"type": "null"}]}},
        "$defs": {"Config": config},
    }
    validator = Validator(schema)
    assert validator.errors({"cfg": {"size": "x", "colour": 1}}) == [
        'cfg.size: expected integer, got string "x"',
        "cfg.colour: unexpected property (allowed: size)",
    ]
    assert validator.errors({"cfg": 5}) == ["cfg: expected object or null, got integer 5"]
    assert validator.errors({"cfg": None}) == []


def test_nested_anyof_alternatives_are_flattened() -> None:
    schema = {"anyOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"type": "null"}]}
    assert Validator(schema).errors([]) == ["expected integer, string or null, got array"]


# --- $ref -----------------------------------------------------------------------------


def test_ref_into_defs_and_definitions() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/definitions/B"}},
        "$defs": {"A": {"type": "integer"}},
        "definitions": {"B": {"type": "string"}},
    }
    validator = Validator(schema)
    assert validator.errors({"a": 1, "b": "x"}) == []
    assert validator.errors({"a": "1", "b": 2}) == [
        'a: expected integer, got string "1"',
        "b: expected string, got integer 2",
    ]


def test_ref_pointer_escapes_and_percent_encoding() -> None:
    schema = {
        "$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}, "e f": {"type": "null"}},
        "prefixItems": [
            {"$ref": "#/$defs/a~1b"},
            {"$ref": "#/$defs/c~0d"},
            {"$ref": "#/$defs/e%20f"},
        ],
    }
    validator = Validator(schema)
    assert validator.errors([1, "x", None]) == []
    assert validator.errors(["1", 2, 3]) == [
        '[0]: expected integer, got string "1"',
        "[1]: expected string, got integer 2",
        "[2]: expected null, got integer 3",
    ]


def test_ref_siblings_apply_too() -> None:
    schema = {"$defs": {"N": {"type": "integer"}}, "$ref": "#/$defs/N", "minimum": 5}
    assert Validator(schema).errors(3) == ["expected at least 5, got 3"]
    assert Validator(schema).errors("x") == ['expected integer, got string "x"']


def test_recursive_ref_to_the_root_checks_a_tree() -> None:
    tree = {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["value"],
        "additionalProperties": False,
    }
    validator = Validator(tree)
    good = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert validator.errors(good) == []
    bad = {"value": 1, "children": [{"value": 2, "children": [{"value": "3"}]}]}
    assert validator.errors(bad) == [
        'children[0].children[0].value: expected integer, got string "3"'
    ]


def test_recursive_ref_through_defs() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                "required": ["next"],
            }
        },
        "$ref": "#/$defs/Node",
    }
    validator = Validator(schema)
    assert validator.errors({"next": {"next": {"next": None}}}) == []
    assert validator.errors({"next": {"next": {}}}) == [
        "next.next.next: required property is missing"
    ]


def test_a_python_dict_that_contains_itself_is_a_recursive_schema() -> None:
    schema: dict[str, Any] = {"type": "array"}
    schema["items"] = schema
    validator = Validator(schema)
    assert validator.errors([[], [[]]]) == []
    assert validator.errors([[1]]) == ["[0][0]: expected array, got integer 1"]


# --- depth and recursion limits -------------------------------------------------------------


def nested_dicts(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    current = root
    for _ in range(depth):
        current["next"] = {}
        current = current["next"]
    return root


LINKED = {
    "$defs": {
        "N": {
            "type": "object",
            "properties": {"next": {"$ref": "#/$defs/N"}},
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/N",
}


def test_nesting_within_the_limit_is_checked_normally() -> None:
    assert Validator(LINKED).errors(nested_dicts(64)) == []


def test_nesting_past_the_limit_is_a_problem_not_a_recursion_error() -> None:
    problems = Validator(LINKED).errors(nested_dicts(65))
    assert problems == [".".join(["next"] * 64) + ": nested too deeply (more than 64 levels)"]
    assert Validator(LINKED).is_valid(nested_dicts(65)) is False


def test_the_depth_limit_is_configurable() -> None:
    validator = Validator(LINKED, max_depth=3)
    assert validator.errors(nested_dicts(3)) == []
    assert validator.errors(nested_dicts(4)) == [
        "next.next.next: nested too deeply (more than 3 levels)"
    ]


def test_very_deep_input_far_past_the_recursion_limit_is_refused_cleanly() -> None:
    deep: list[Any] = []
    for _ in range(sys.getrecursionlimit() * 3):
        deep = [deep]
    nested_arrays: dict[str, Any] = {"type": "array"}
    nested_arrays["items"] = nested_arrays
    for schema in (nested_arrays, {"enum": [[1]]}, {"const": [[]]}, {"uniqueItems": True}):
        validator = Validator(schema)
        assert validator.is_valid(deep) is False
        [problem] = validator.errors(deep)
        assert "more than 64 levels" in problem, (schema, problem)


def deep_list(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("schema", "wrap"),
    [
        pytest.param({}, lambda deep: deep, id="empty schema"),
        pytest.param(True, lambda deep: deep, id="true schema"),
        pytest.param({"type": "array"}, lambda deep: deep, id="type array without items"),
        pytest.param({"type": ["array", "null"]}, lambda deep: deep, id="type list"),
        pytest.param({"minItems": 1}, lambda deep: deep, id="array counts only"),
        pytest.param({"not": {"type": "null"}}, lambda deep: deep, id="not"),
        pytest.param({"type": "object"}, lambda deep: {"data": deep}, id="open object"),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            lambda deep: {"a": 1, "extra": deep},
            id="unlisted property of an open object",
        ),
        pytest.param(
            {"type": "object", "properties": {"data": {}}},
            lambda deep: {"data": deep},
            id="property of any type",
        ),
        pytest.param(
            {"prefixItems": [{"type": "integer"}]},
            lambda deep: [1, deep],
            id="item past prefixItems",
        ),
        pytest.param(
            {"anyOf": [{"type": "array"}, {"type": "null"}]},
            lambda deep: deep,
            id="anyOf branch",
        ),
    ],
)
def test_input_nested_past_the_limit_is_refused_whatever_the_schema(schema: Any, wrap: Any) -> None:
    validator = Validator(schema)
    assert validator.errors(wrap(deep_list(30))) == []
    too_deep = wrap(deep_list(5000))
    assert validator.is_valid(too_deep) is False
    [problem] = validator.errors(too_deep)
    assert problem.endswith("[0][0][0]: nested too deeply (more than 64 levels)")


def test_the_depth_problem_names_the_path_where_the_limit_is_crossed() -> None:
    validator = Validator({"type": "object"}, max_depth=3)
    assert validator.errors({"a": {"b": [[]]}}) == []
    assert validator.errors({"a": {"b": [[1]]}}) == [
        "a.b[0]: nested too deeply (more than 3 levels)"
    ]


def test_ref_loop_that_never_descends_is_a_schema_error() -> None:
    schema = {
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"anyOf": [{"$ref": "#/$defs/A"}]}},
        "$ref": "#/$defs/A",
    }
    with pytest.raises(SchemaError, match="refers back to itself") as caught:
        Validator(schema)
    assert caught.value.keyword == "$ref"
    assert "#/$defs/A -> #/$defs/B" in str(caught.value)


def test_ref_to_itself_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="refers back to itself"):
        Validator({"$ref": "#"})
    with pytest.raises(SchemaError, match="refers back to itself"):
        Validator({"not": {"allOf": [{"$ref": "#"}]}})


def test_a_schema_nested_absurdly_deep_is_a_schema_error() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(150):
        schema = {"items": schema}
    with pytest.raises(SchemaError, match="more than 100 levels"):
        Validator(schema)


# --- schema errors ---------------------------------------------------------------------------

SCHEMA_ERRORS = [
    ({"type": "object", "properties": {"n": {"minimun": 1}}}, "#/properties/n", "minimun",
     "unsupported keyword 'minimun'; did you mean 'minimum'?"),
    ({"patternProperties": {"(": {}}}, "#", "patternProperties",
     'pattern "(" at position 0: unterminated group'),
    ({"if": {}, "then": 5}, "#/then", None, "a schema must be an object or a boolean"),
    ({"nullable": True}, "#", "nullable", "unsupported keyword 'nullable'"),
    ({"minimum": "3"}, "#", "minimum", "'minimum' must be a number, got string \"3\""),
    ({"maximum": True}, "#", "maximum", "'maximum' must be a number, got boolean true"),
    ({"exclusiveMinimum": True}, "#", "exclusiveMinimum", "draft-4 boolean form"),
    ({"multipleOf": 0}, "#", "multipleOf", "'multipleOf' must be greater than 0"),
    ({"minLength": -1}, "#", "minLength", "'minLength' must be a non-negative integer"),
    ({"maxItems": 1.5}, "#", "maxItems", "'maxItems' must be a non-negative integer"),
    ({"type": "int"}, "#", "type", 'unknown type "int"'),
    ({"type": []}, "#", "type", "'type' must be a type name or a non-empty array"),
    ({"type": ["string", "string"]}, "#", "type", "'type' lists a type twice"),
    ({"pattern": "(unclosed"}, "#", "pattern", 'pattern "(unclosed" at position 0'),
    ({"pattern": 5}, "#", "pattern", "'pattern' patterns must be strings"),
    ({"format": 5}, "#", "format", "'format' must be a string"),
    ({"enum": "abc"}, "#", "enum", "'enum' must be an array, got string"),
    ({"enum": [object()]}, "#", "enum", "'enum' values must be JSON values"),
    ({"const": {1, 2}}, "#", "const", "'const' must be a JSON value"),
    ({"required": "a"}, "#", "required", "'required' must be an array of property names"),
    ({"required": ["a", "a"]}, "#", "required", "'required' lists a property twice"),
    ({"properties": []}, "#", "properties", "'properties' must be an object"),
    ({"properties": {"a": 5}}, "#/properties/a", None, "a schema must be an object or a boolean"),
    ({"items": [{}], "prefixItems": [{}]}, "#", "items", "the draft-07 spelling of 'prefixItems'"),
    ({"prefixItems": []}, "#", "prefixItems", "non-empty array of schemas"),
    ({"anyOf": {}}, "#", "anyOf", "'anyOf' must be a non-empty array of schemas"),
    ({"uniqueItems": "yes"}, "#", "uniqueItems", "'uniqueItems' must be a boolean"),
    ({"$ref": "#/$defs/Missing", "$defs": {}}, "#", "$ref",
     "$ref '#/$defs/Missing' does not resolve: nothing at 'Missing' under #/$defs"),
    ({"$ref": "other.json#/a"}, "#", "$ref",
     "$ref 'other.json#/a' points outside this schema and remote references are never fetched;"
     " pass the document as Validator(..., registry={'other.json': schema})"),
    ({"$ref": "#anchor"}, "#", "$ref",
     "no $anchor or $dynamicAnchor named 'anchor' in this schema"),
    ({"$id": "x#y"}, "#", "$id", "has a fragment; name a location with '$anchor' instead"),
    ({"$anchor": "1a"}, "#", "$anchor", "'$anchor' must be a name like 'node'"),
    ({"dependentRequired": {"a": "b"}}, "#", "dependentRequired",
     "'dependentRequired' of 'a' must be an array of property names"),
    ({"contains": {}, "minContains": -1}, "#", "minContains",
     "'minContains' must be a non-negative integer"),
    ({"$ref": "#/required", "required": []}, "#", "$ref", "points at array, not a schema"),
    ({"$defs": {"A": {"type": "integr"}}}, "#/$defs/A", "type", 'unknown type "integr"'),
    ({"allOf": [{"not": {"maxLenght": 2}}]}, "#/allOf/0/not", "maxLenght",
     "did you mean 'maxLength'?"),
    (["type", "object"], "#", None, "a schema must be an object or a boolean, got array"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "path", "keyword", "message"), SCHEMA_ERRORS)
def test_a_schema_it_cannot_honour_is_refused_when_built(
    schema: Any, path: str, keyword: str | None, message: str
) -> None:
    with pytest.raises(SchemaError) as caught:
        Validator(schema)
    error = caught.value
    assert error.path == path
    if keyword is not None:
        assert error.keyword == keyword
    assert message in str(error)
    assert str(error).startswith(f"invalid schema at {path}: ")
    with pytest.raises(SchemaError):
        check_schema(schema)


def test_schema_error_is_a_toolnexus_error_and_a_value_error_exported_at_the_top() -> None:
    assert issubclass(SchemaError, ToolnexusError)
    assert issubclass(SchemaError, ValueError)
    assert toolnexus.SchemaError is SchemaError
    assert "SchemaError" in toolnexus.__all__


def test_schema_errors_in_unused_defs_are_still_reported() -> None:
    with pytest.raises(SchemaError, match="unsupported keyword 'foo'"):
        Validator({"type": "string", "$defs": {"Unused": {"foo": 1}}})


def test_check_schema_accepts_a_good_schema() -> None:
    assert check_schema(TWO_INTEGERS) is None


def test_bad_limits_are_programmer_errors() -> None:
    with pytest.raises(ValueError, match="max_depth must be an int >= 1, got 0"):
        Validator({}, max_depth=0)
    with pytest.raises(ValueError, match="max_problems must be an int >= 1"):
        Validator({}, max_problems=0)


# --- JSON numbers and booleans ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "is_integer", "is_number", "is_boolean"),
    [
        (0, True, True, False),
        (3.0, True, True, False),
        (-7.0, True, True, False),
        (3.5, False, True, False),
        (float("inf"), False, False, False),  # not JSON: no JSON text reads as it
        (float("-inf"), False, False, False),
        (float("nan"), False, False, False),
        (True, False, False, True),
        (False, False, False, True),
        ("1", False, False, False),
        (None, False, False, False),
    ],
)
def test_booleans_are_never_numbers_and_integral_floats_are_integers(
    value: Any, is_integer: bool, is_number: bool, is_boolean: bool
) -> None:
    assert Validator({"type": "integer"}).is_valid(value) is is_integer
    assert Validator({"type": "number"}).is_valid(value) is is_number
    assert Validator({"type": "boolean"}).is_valid(value) is is_boolean


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")], ids=repr)
def test_infinity_and_nan_are_refused_where_a_number_is_expected_and_say_why(bad: float) -> None:
    schema = {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "bounded": {"type": "number", "minimum": 0},
            "either": {"type": ["number", "null"]},
            "vector": {"type": "array", "items": {"type": "number"}},
        },
    }
    v = Validator(schema)
    why = f"got {bad!r} (not a JSON number: JSON has no Infinity or NaN)"
    for key in ("x", "bounded"):
        assert v.errors({key: bad}) == [f"{key}: expected number, {why}"]
    assert v.errors({"either": bad}) == [f"either: expected number or null, {why}"]
    # a long list of floats is checked at C speed; one bad value among them is still found
    assert v.is_valid({"vector": [0.5] * 1000})
    assert v.errors({"vector": [0.5] * 1000 + [bad]}) == [f"vector[1000]: expected number, {why}"]
    assert v.is_valid({"vector": [1e308] * 20})  # their sum overflows; each is finite


def test_a_tool_refuses_an_infinite_argument_instead_of_failing_on_its_own_output() -> None:
    @toolnexus.tool
    def half(x: float) -> float:
        """Halve a number."""
        return x / 2

    refused = half({"x": float("inf")})
    assert refused.is_error
    assert refused.output == (
        "invalid arguments for 'half': x: expected number, got inf (not a JSON number: JSON has"
        " no Infinity or NaN)"
    )
    assert half({"x": 3.0}).output == "1.5"


def test_a_schema_value_that_is_not_json_is_refused() -> None:
    with pytest.raises(SchemaError, match="'enum' values must be JSON values, got nan"):
        Validator({"enum": [1, float("nan")]})
    with pytest.raises(SchemaError, match="'const' must be a JSON value, got inf"):
        Validator({"const": float("inf")})


def test_int_and_str_subclasses_count_as_their_json_type() -> None:
    import enum

    class Colour(str, enum.Enum):
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    assert Validator({"enum": ["red"]}).is_valid(Colour.RED)
    assert Validator({"type": "integer", "enum": [3]}).is_valid(Level.HIGH)
    assert Validator({"const": 3}).is_valid(Level.HIGH)


def test_the_validator_keeps_working_after_the_schema_dict_changes() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    validator = Validator(schema)
    schema["type"] = "string"
    assert validator.is_valid(3)


def test_repr_shows_the_schema() -> None:
    assert repr(Validator({"type": "integer"})) == '<Validator {"type": "integer"}>'


# --- the fast path and the explaining path agree ------------------------------------------


def random_value(rng: random.Random, depth: int = 0) -> Any:
    makers = [
        lambda: None,
        lambda: rng.choice([True, False]),
        lambda: rng.randint(-3, 3),
        lambda: rng.choice([0.5, 2.0, -1.5]),
        lambda: rng.choice(["", "a", "ab", "A1"]),
        lambda: [1, 1.0],
    ]
    if depth < 3:
        makers.append(lambda: [random_value(rng, depth + 1) for _ in range(rng.randrange(4))])
        makers.append(lambda: {rng.choice("abcd"): random_value(rng, depth + 1) for _ in range(3)})
    return rng.choice(makers)()


def random_schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    if rng.random() < 0.5:
        schema["type"] = rng.choice(
            [
                "null",
                "boolean",
                "integer",
                "number",
                "string",
                "array",
                "object",
                ["integer", "null"],
            ]
        )
    makers: dict[str, Any] = {
        "enum": lambda: [random_value(rng, 2) for _ in range(rng.randint(1, 3))],
        "const": lambda: random_value(rng, 2),
        "minimum": lambda: rng.choice([0, 1, 2.5]),
        "exclusiveMaximum": lambda: rng.choice([0, 2]),
        "multipleOf": lambda: rng.choice([1, 2, 0.5]),
        "minLength": lambda: rng.randrange(3),
        "maxItems": lambda: rng.randrange(3),
        "pattern": lambda: rng.choice(["a", "^A", "[0-9]"]),
        "uniqueItems": lambda: True,
        "minProperties": lambda: rng.randrange(3),
    }
    if depth < 3:
        makers.update(
            {
                "properties": lambda: {
                    name: random_schema(rng, depth + 1) for name in rng.sample("abcd", 2)
                },
                "required": lambda: rng.sample("abcd", rng.randrange(3)),
                "additionalProperties": lambda: rng.choice([False, random_schema(rng, depth + 1)]),
                "items": lambda: random_schema(rng, depth + 1),
                "prefixItems": lambda: [random_schema(rng, depth + 1)],
                "anyOf": lambda: [random_schema(rng, depth + 1) for _ in range(2)],
                "oneOf": lambda: [random_schema(rng, depth + 1) for _ in range(2)],
                "allOf": lambda: [random_schema(rng, depth + 1) for _ in range(2)],
                "not": lambda: random_schema(rng, depth + 1),
            }
        )
    for keyword in rng.sample(sorted(makers), rng.randrange(3)):
        schema[keyword] = makers[keyword]()
    return schema


def test_the_fast_check_and_the_explanation_never_disagree_on_random_schemas() -> None:
    rng = random.Random(20240601)
    for _ in range(1500):
        schema = random_schema(rng)
        validator = Validator(schema)
        for _ in range(4):
            value = random_value(rng)
            problems = validator.errors(value)
            assert validator.is_valid(value) is (problems == []), (schema, value, problems)
            assert "does not match the schema" not in problems, (schema, value)


def test_the_first_unsupported_keyword_in_schema_order_is_reported() -> None:
    with pytest.raises(SchemaError) as caught:
        Validator({"type": "string", "zeta": 1, "alpha": 2, "mid": 3})
    assert caught.value.keyword == "zeta"


def test_schema_error_survives_pickling() -> None:
    import pickle

    error = SchemaError("#/properties/n", "minimun", "unsupported keyword 'minimun'")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.keyword, copy.problem, str(copy)) == (
        error.path,
        error.keyword,
        error.problem,
        str(error),
    )


def test_a_pattern_runs_once_per_value_even_when_the_problems_are_explained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolnexus.validation._compiler as compiler

    seen: list[str] = []
    real = compiler.compile_pattern

    def counting(source: str) -> Any:
        search, longest, predicate = real(source)
        assert search is not None  # this pattern runs on re, called directly by the check

        def counted_search(text: str) -> object:
            seen.append(text)
            return search(text)

        def counted(text: str) -> bool:
            seen.append(text)
            return predicate(text)

        return counted_search, longest, counted

    monkeypatch.setattr(compiler, "compile_pattern", counting)
    v = Validator(
        {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]+$"},
                "n": {"type": "integer"},
            },
        }
    )
    assert v.errors({"sku": "abc", "n": 1}) == [
        'sku: expected a string matching "^[A-Z]+$", got string "abc"'
    ]
    assert seen == ["abc"]
    seen.clear()
    assert v.errors({"sku": "ABC", "n": "1"}) == ['n: expected integer, got string "1"']
    assert seen == ["ABC"]


def test_a_typed_string_runs_its_pattern_on_re_only_within_re_s_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # [a-z]+1 without ^ may cost re n*n steps: past its bound a string goes to the linear
    # engine, also when the check calls re's search directly
    import toolnexus.validation._compiler as compiler

    searched: list[int] = []
    real = compiler.compile_pattern

    def counting(source: str) -> Any:
        search, longest, predicate = real(source)
        assert search is not None and longest is not None

        def counted_search(text: str) -> object:
            searched.append(len(text))
            return search(text)

        return counted_search, longest, predicate

    monkeypatch.setattr(compiler, "compile_pattern", counting)
    v = Validator({"type": "string", "pattern": "[a-z]+1"})
    assert v.is_valid("ab1") and not v.is_valid("ab2")
    assert searched == [3, 3]
    long = "a" * 40_000
    assert not v.is_valid(long) and v.is_valid(long + "1")
    assert v.errors(long) == [f'expected a string matching "[a-z]+1", got {_preview(long)}']
    assert searched == [3, 3]


def _preview(text: str) -> str:
    return f'string "{text[:37]}..." ({len(text)} characters)'


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^[A-Z]+$"},  # re, called by the typed check
        {"pattern": "^[A-Z]+$"},  # re, through the keyword's own check
        {"type": "string", "pattern": "^([A-Z]+)+$"},  # the linear engine only
    ],
)
def test_a_pattern_answers_alike_on_every_path(schema: dict[str, Any]) -> None:
    v = Validator(schema)
    for text in ("ABC", "abc", "", "ABC\n", "A" * 30 + "!"):
        expected = text != "" and text.isupper() and text.isalpha() and text.isascii()
        assert v.is_valid(text) is expected, text
        assert (v.errors(text) == []) is expected, text
    assert v.is_valid(3) is ("type" not in schema)


# --- bounded by design: what an instance can make the validator do ------------------------


class _CountingObject(dict[str, Any]):
    """A dict that counts how often a validator asks whether it has a key."""

    asked = 0

    def __contains__(self, key: object) -> bool:
        type(self).asked += 1
        return super().__contains__(key)


def _chain(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    """Level i: anyOf of two $refs to level i-1; level 0: ``leaf``."""
    defs: dict[str, Any] = {"L0": leaf}
    for i in range(1, levels + 1):
        defs[f"L{i}"] = {"anyOf": [{"$ref": f"#/$defs/L{i - 1}"}, {"$ref": f"#/$defs/L{i - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/L{levels}"}


def test_a_subschema_reached_along_many_paths_is_checked_once_per_value() -> None:
    # 12 levels: 4096 paths lead to the leaf; each check of it asks for "b" once
    leaf = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"]}
    v = Validator(_chain(12, leaf))
    _CountingObject.asked = 0
    assert v.is_valid(_CountingObject(a=1)) is False
    assert _CountingObject.asked == 1
    _CountingObject.asked = 0
    problems = v.errors(_CountingObject(a=1))
    assert problems[0].startswith("matches none of the 2 alternatives")
    assert "b: required property is missing" in problems[0]
    assert _CountingObject.asked <= 4  # the fast check, then the explanation
    assert v.is_valid({"a": 1, "b": 2}) and v.errors({"a": 1, "b": 2}) == []


def test_shared_subschemas_give_the_verdicts_of_their_unshared_copies() -> None:
    # the same dict object used in many places is memoized; its JSON copy (no sharing, no
    # $ref) is not: both must agree on every value, unevaluated* and if/then included
    rng = random.Random(20261205)
    shared_leaf: dict[str, Any] = {"properties": {"n": {"type": "integer"}}, "required": ["n"]}
    extra: dict[str, Any] = {"properties": {"x": {"const": 1}}}
    level: dict[str, Any] = {"anyOf": [shared_leaf, {"allOf": [shared_leaf, extra]}]}
    for _ in range(3):
        level = {
            "anyOf": [level, {"allOf": [level, extra]}],
            "if": level,
            "then": {"required": ["n"]},
        }
    schema = {**level, "unevaluatedProperties": {"type": "string"}}
    memoized = Validator(schema)
    plain = Validator(json.loads(json.dumps(schema)))
    values: list[Any] = [{}, 3, {"n": 1}, {"n": "1"}, {"n": 1, "x": 1}, {"n": 1, "x": 2}]
    for _ in range(200):
        value = {key: rng.choice([1, 2, "s", None]) for key in rng.sample("nxy", rng.randint(0, 3))}
        values.append(value)
    for value in values:
        assert memoized.is_valid(value) is plain.is_valid(value), value
        assert memoized.errors(value) == plain.errors(value), value


def test_a_miss_on_a_huge_enum_writes_only_the_values_it_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolnexus.validation._problems as problems

    written: list[Any] = []
    real = problems.json_short

    def counting(value: Any, limit: int = 40) -> str:
        written.append(value)
        return real(value, limit)

    monkeypatch.setattr(problems, "json_short", counting)
    v = Validator({"enum": list(range(100_000))})
    assert v.errors(-1) == [
        "expected one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... (100000 values), got integer -1"
    ]
    either = Validator({"anyOf": [{"enum": list(range(100_000))}, {"type": "string"}]})
    assert either.errors(-1) == [
        "expected 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... (100001 in all), got integer -1"
    ]
    assert len(written) < 100  # a dozen or so per list, not the 100000 values


@pytest.mark.parametrize("value", ["foo", 42, None, {}, [], False], ids=repr)
def test_an_empty_enum_is_a_schema_that_nothing_matches(value: Any) -> None:
    # the official suite's newest enum group: {"enum": []} is a schema; nothing is valid
    v = Validator({"enum": []})
    assert v.is_valid(value) is False
    assert v.errors(value) == [
        f"no value is allowed here (its 'enum' is empty), got {validation_describe(value)}"
    ]
    assert Validator({"anyOf": [{"enum": []}, {"type": "integer"}]}).errors("x") == [
        'expected integer, got string "x"'
    ]


def validation_describe(value: Any) -> str:
    from toolnexus.validation._problems import describe

    return describe(value)


def test_a_name_no_pattern_matches_costs_one_search_however_many_patterns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolnexus._ecma as ecma

    asked: list[str] = []
    real = ecma.compile_search

    def counting(source: str) -> Any:
        search, longest, predicate = real(source)
        assert search is not None

        def counted(text: str) -> object:
            asked.append(text)
            return search(text)

        return counted, longest, predicate

    monkeypatch.setattr(ecma, "compile_search", counting)
    schema = {
        "type": "object",
        "patternProperties": {f"^p{i}_": {"type": "integer"} for i in range(200)},
        "additionalProperties": {"type": "string"},
    }
    v = Validator(schema)
    value: dict[str, Any] = {f"k{i}": "s" for i in range(1000)}
    value.update({f"p{i % 200}_{i}": i for i in range(1000)})
    assert v.is_valid(value)
    assert asked == []  # one alternation said which pattern matched, or that none did
    value["p7_bad"] = "x"
    assert v.errors(value) == ['p7_bad: expected integer, got string "x"']
    # patterns that may both match a name are each asked about it
    both = Validator({"patternProperties": {"^a": {"minimum": 5}, "^[a-z]+$": {"maximum": 9}}})
    assert both.errors({"ab": 3, "zz": 10}) == [
        "ab: expected at least 5, got 3",
        "zz: expected at most 9, got 10",
    ]


# --- the token: a validation stops when its call is cancelled ------------------------------


def test_a_short_check_finishes_even_with_a_cancelled_token() -> None:
    # the token is heard in long work only, so a tool still sees its cancelled context
    # itself (docs/testing.md's cancelled_context) when its arguments are quick to check
    from toolnexus import CancellationTokenSource

    source = CancellationTokenSource()
    source.cancel()
    v = Validator({"type": "string", "pattern": "^(a+)+$"})
    assert v.errors("aaa", token=source.token) == []
    assert v.is_valid("aab", token=source.token) is False
    assert Validator(_chain(3, {"required": ["b"]})).is_valid({}, token=source.token) is False


class _CancelsWhenRead(dict[str, Any]):
    """An object whose first reading cancels ``source``: what follows it runs cancelled."""

    def __init__(self, source: Any) -> None:
        super().__init__(x=1)
        self.source = source

    def __iter__(self) -> Any:
        self.source.cancel()
        return super().__iter__()

    def values(self) -> Any:
        self.source.cancel()
        return super().values()


@pytest.mark.parametrize(
    "word_schema",
    [
        {"type": "string", "pattern": "^(a+)+$"},  # the linear engine, heard every 1k chars
        {"patternProperties": {"(a+)+$": {}}, "type": "object"},
    ],
)
def test_a_token_cancelled_during_a_long_check_stops_it(word_schema: dict[str, Any]) -> None:
    from toolnexus import CancellationTokenSource
    from toolnexus.errors import OperationCancelledError

    source = CancellationTokenSource()
    v = Validator(
        {
            "type": "object",
            "properties": {"first": {"type": "object"}, "word": word_schema},
            "required": ["first", "word"],
        }
    )
    long = "a" * 200_000 + "!"
    word: Any = long if word_schema.get("type") == "string" else {long: 1}
    with pytest.raises(OperationCancelledError, match="cancelled"):
        v.errors({"first": _CancelsWhenRead(source), "word": word}, token=source.token)


def test_a_tool_whose_call_is_cancelled_while_its_arguments_are_checked_ends_cancelled() -> None:
    from toolnexus import CancellationTokenSource, ToolContext

    ran: list[str] = []

    @toolnexus.tool(
        input_schema={
            "type": "object",
            "properties": {
                "first": {"type": "object"},
                "word": {"type": "string", "pattern": "^(a+)+$"},
            },
        }
    )
    def spell(args: dict[str, Any]) -> str:
        """Spell a word."""
        ran.append(args["word"][:3])
        return "ok"

    source = CancellationTokenSource()
    ctx = ToolContext(cancellation_token=source.token)
    long = "a" * 200_000 + "!"
    result = spell({"first": _CancelsWhenRead(source), "word": long}, ctx)
    assert result.is_error
    assert result.output == "cancelled: validation stopped: the call was cancelled"
    assert ran == []
    fresh = ToolContext(cancellation_token=CancellationTokenSource().token)
    assert spell({"first": {}, "word": "aaa"}, fresh).output == "ok"


def test_a_host_deadline_stops_a_long_argument_check_and_no_worker_is_left_stuck() -> None:
    # 10M characters against ^(a+)+$ on the linear matcher: seconds of checking, far past
    # the deadline and its grace; the token the host cancels at the deadline stops it
    from toolnexus import Host, ToolContext, Toolkit

    @toolnexus.tool(
        input_schema={
            "type": "object",
            "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}},
            "required": ["word"],
        }
    )
    def spell(args: dict[str, Any], ctx: ToolContext | None = None) -> str:
        """Spell a word."""
        return "ok"

    with Host(Toolkit([spell]), grace_ms=1000) as host:
        assert host.call("spell", {"word": "aaa"}).output == "ok"
        result = host.call("spell", {"word": "a" * 10_000_000 + "!"}, timeout_ms=200)
        assert result.is_error
        assert host.stuck_workers == 0


def test_counts_of_properties_are_spelled_as_words() -> None:
    from toolnexus.validation import Validator

    (problem,) = Validator({"type": "object", "minProperties": 3}).errors({"a": 1})
    assert "expected at least 3 properties, got 1" in problem


@pytest.mark.parametrize(
    ("schema", "hears"),
    [
        ({"type": "integer"}, False),
        ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, False),
        ({"type": "array", "uniqueItems": True, "maxItems": 3}, False),
        ({"enum": ["a", "b"]}, False),
        ({"type": "string", "pattern": "^a+$"}, True),
        ({"type": "object", "patternProperties": {"^x": {}}}, True),
        ({"type": "object", "propertyNames": {"pattern": "^x"}}, True),
        ({"type": "array", "items": {"type": "integer"}}, True),
        ({"prefixItems": [{"type": "integer"}]}, True),
        ({"properties": {"a": {"properties": {"b": {"type": "array", "items": {}}}}}}, True),
    ],
)
def test_hears_token_says_whether_any_check_of_the_schema_is_long_work(
    schema: dict[str, Any], hears: bool
) -> None:
    assert Validator(schema).hears_token is hears


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"type": "array", "uniqueItems": True, "maxItems": 2},
        {"anyOf": [{"type": "string", "minLength": 2}, {"type": "number", "minimum": 0}]},
    ],
)
def test_a_validator_that_hears_no_token_answers_as_it_does_without_one(
    schema: dict[str, Any],
) -> None:
    # The plain path (no token) and the path given a token — cancelled, even — agree on
    # every value: such a validator never reads the token it is given.
    from toolnexus import CancellationTokenSource

    cancelled = CancellationTokenSource()
    cancelled.cancel()
    live = CancellationTokenSource()
    v = Validator(schema)
    assert not v.hears_token
    for value in [{"a": 1}, {"a": "x"}, {}, [1, 2], [1, 1], [1, 2, 3], "ab", "a", -1, 5, None]:
        plain = v.errors(value)
        assert v.errors(value, cancelled.token) == plain == v.errors(value, live.token)
        assert v.is_valid(value, cancelled.token) is v.is_valid(value) is (plain == [])
