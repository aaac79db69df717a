"""A 1,000-tool toolkit for the search tests over MCP (``toolnexus serve --search
tests/search_catalog.py:toolkit``): one always-loaded tool, 998 generated ones, and the one
a client must find by search."""

from __future__ import annotations

from toolnexus import Tool, Toolkit, ToolResult, tool

_NOUNS = ["invoice", "customer", "shipment", "coupon", "warehouse", "subscription", "payout"]
_VERBS = ["create", "get", "list", "update", "delete", "archive", "export"]


def _generated(index: int) -> Tool:
    noun = _NOUNS[index % len(_NOUNS)]
    verb = _VERBS[(index // len(_NOUNS)) % len(_VERBS)]
    name = f"{verb}_{noun}_{index}"
    return Tool(
        name,
        f"{verb.capitalize()} a {noun} (variant {index}).",
        {"type": "object", "properties": {"id": {"type": "string"}}},
        lambda args, ctx=None: ToolResult.ok(name),
    )


@tool(defer=False)
def ping() -> str:
    """Check that the server answers."""
    return "pong"


@tool
def refund_charge(charge_id: str, amount_cents: int) -> str:
    """Create a refund for a card charge."""
    return f"refunded {amount_cents} of {charge_id}"


toolkit = Toolkit([ping, *(_generated(i) for i in range(998)), refund_charge])
