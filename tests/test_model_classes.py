"""Classes that describe and validate themselves (``model_json_schema()`` /
``model_validate()``, pydantic's spelling) as parameters and return types — used through
those two methods, without toolnexus importing pydantic."""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import pytest

from toolnexus import tool


class Money:
    """A fake model: no pydantic anywhere, only the two methods."""

    calls: ClassVar[list[str]] = []

    def __init__(self, amount: int, currency: str) -> None:
        self.amount = amount
        self.currency = currency

    @classmethod
    def model_json_schema(cls, mode: str = "validation") -> dict[str, Any]:
        cls.calls.append(mode)
        return {
            "title": "Money",
            "type": "object",
            "properties": {"amount": {"type": "integer"}, "currency": {"$ref": "#/$defs/Code"}},
            "required": ["amount", "currency"],
            "$defs": {"Code": {"type": "string", "enum": ["EUR", "USD"]}},
        }

    @classmethod
    def model_validate(cls, value: Any) -> Money:
        if value["amount"] < 0:
            raise ValueError("amount must not be negative")
        return cls(value["amount"], value["currency"])

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {"amount": self.amount, "currency": self.currency}


def test_a_fake_model_parameter_uses_the_models_own_schema_and_definitions():
    @tool
    def pay(price: Money, note: str = "") -> str:
        """Pay."""
        return f"{price.amount} {price.currency}"

    assert pay.input_schema["properties"]["price"] == {
        "title": "Money",
        "type": "object",
        "properties": {"amount": {"type": "integer"}, "currency": {"$ref": "#/$defs/Code"}},
        "required": ["amount", "currency"],
    }
    assert pay.input_schema["$defs"] == {"Code": {"type": "string", "enum": ["EUR", "USD"]}}
    assert pay({"price": {"amount": 5, "currency": "EUR"}}).output == "5 EUR"


def test_the_schema_refuses_before_the_model_and_the_model_refuses_after_it():
    @tool
    def pay(price: Money) -> str:
        return "paid"

    assert pay({"price": {"amount": 5, "currency": "GBP"}}).output.startswith(
        "invalid arguments for 'pay': price.currency: expected one of"
    )
    assert pay({"price": {"amount": -5, "currency": "EUR"}}).output == (
        "invalid arguments for 'pay': price: not a valid Money (amount must not be negative)"
    )


def test_a_returned_model_is_dumped_and_its_serialization_schema_is_the_output_schema():
    Money.calls.clear()

    @tool
    def price(sku: str) -> Money:
        return Money(3, "USD")

    assert "serialization" in Money.calls
    assert price.output_schema is not None
    assert price.output_schema["type"] == "object"
    result = price({"sku": "a"})
    assert result.output == '{"amount":3,"currency":"USD"}'
    assert result.metadata == {"structuredContent": {"amount": 3, "currency": "USD"}}


def test_two_models_with_clashing_definition_names_keep_both():
    class Other(Money):
        @classmethod
        def model_json_schema(cls, mode: str = "validation") -> dict[str, Any]:
            return {
                "type": "object",
                "properties": {"code": {"$ref": "#/$defs/Code"}},
                "required": ["code"],
                "$defs": {"Code": {"type": "integer"}},
            }

        @classmethod
        def model_validate(cls, value: Any) -> Other:
            return cls(value["code"], "EUR")

    @tool
    def both(a: Money, b: Other) -> str:
        return f"{a.currency} {b.amount}"

    defs = both.input_schema["$defs"]
    assert defs["Code"] == {"type": "string", "enum": ["EUR", "USD"]}
    assert defs["Code_2"] == {"type": "integer"}
    assert both.input_schema["properties"]["b"]["properties"]["code"] == {"$ref": "#/$defs/Code_2"}
    assert both({"a": {"amount": 1, "currency": "USD"}, "b": {"code": 7}}).output == "USD 7"
    assert both({"a": {"amount": 1, "currency": "USD"}, "b": {"code": "7"}}).is_error


def test_a_model_whose_schema_cannot_be_read_fails_at_definition_time():
    class Broken:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            raise RuntimeError("no schema today")

        @classmethod
        def model_validate(cls, value: Any) -> Broken:
            return cls()

    def use(x: Broken) -> None:
        return None

    with pytest.raises(
        TypeError,
        match=r"parameter 'x'.*Broken.model_json_schema\(\) failed "
        r"\(RuntimeError: no schema today\)",
    ):
        tool(use)


def test_pydantic_is_never_imported_by_toolnexus_itself():
    import subprocess

    code = (
        "import sys, datetime, toolnexus\n"
        "@toolnexus.tool\n"
        "def f(when: datetime.date) -> int:\n"
        "    return 1\n"
        "f({'when': '2026-05-01'})\n"
        "toolnexus.Toolkit([f]).to_openai()\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
