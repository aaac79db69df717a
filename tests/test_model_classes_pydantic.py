"""Real pydantic models as parameters and return types (pydantic arrives with the
``interop`` extra, through the MCP SDK). Skipped when pydantic is not installed, unless
TOOLNEXUS_REQUIRE_INTEROP=1, which makes its absence a failure (CI sets it)."""

from __future__ import annotations

import datetime as dt

import pytest

from extras import require
from toolnexus import Toolkit, tool

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "pydantic")

import pydantic


class Item(pydantic.BaseModel):
    sku: str
    qty: int = 1


class Order(pydantic.BaseModel):
    items: list[Item]
    deliver_on: dt.date


def test_a_real_pydantic_model_as_a_parameter_and_a_return_type():
    @tool
    def place(order: Order, rush: bool = False) -> Order:
        """Place an order."""
        return order

    schema = place.input_schema
    assert schema["properties"]["order"]["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    assert "Item" in schema["$defs"]
    result = place({"order": {"items": [{"sku": "a"}], "deliver_on": "2026-05-01"}})
    assert not result.is_error, result.output
    assert result.metadata["structuredContent"] == {
        "items": [{"sku": "a", "qty": 1}],
        "deliver_on": "2026-05-01",
    }
    refused = place({"order": {"items": [{"sku": "a"}], "deliver_on": "soon"}})
    assert refused.is_error
    assert refused.output.startswith("invalid arguments for 'place': order: not a valid Order (")
    assert "deliver_on" in refused.output
    # and every adapter can describe it
    toolkit = Toolkit([place])
    for shape in (
        toolkit.to_openai(),
        toolkit.to_anthropic(),
        toolkit.to_gemini(),
        toolkit.to_gemini(schema="subset"),
        toolkit.to_mcp(),
    ):
        assert shape


def test_a_pydantic_model_as_the_whole_arguments_object():
    @tool
    def place(args: Order) -> str:
        return f"{len(args.items)} item(s) on {args.deliver_on.isoformat()}"

    assert place.input_schema["type"] == "object"
    assert place({"items": [{"sku": "a", "qty": 2}], "deliver_on": "2026-05-01"}).output == (
        "1 item(s) on 2026-05-01"
    )


class Filter(pydantic.BaseModel):
    text: str
    limit: int = 10
    since: dt.date | None = None
    item: Item | None = None


def test_a_strict_models_nulls_inside_an_optional_pydantic_model_read_as_its_defaults():
    @tool
    def search(flt: Filter | None = None, items: list[Item] = []) -> str:  # noqa: B006
        """Search."""
        return repr((flt, items))

    strict = search.to_openai(strict=True)["function"]["parameters"]
    sent = {
        "flt": {"text": "x", "limit": None, "since": None, "item": {"sku": "a", "qty": None}},
        "items": [{"sku": "b", "qty": None}],
    }
    from toolnexus.validation import Validator

    assert Validator(strict).errors(sent) == []
    result = search(sent)
    assert not result.is_error, result.output
    assert result.output == repr(
        (Filter(text="x", limit=10, since=None, item=Item(sku="a")), [Item(sku="b")])
    )
