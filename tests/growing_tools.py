"""A toolkit that changes while it is served, for the client's listen tests
(``toolnexus serve tests/growing_tools.py:toolkit``): ``grow`` adds the tool ``grown``
(its list changes); ``touch`` says the resource ``notes://today`` changed."""

from __future__ import annotations

from toolnexus import Toolkit, tool
from toolnexus.mcp import resource


@tool
def grown() -> str:
    """The tool ``grow`` adds."""
    return "grown"


@tool
def grow() -> str:
    """Add the tool ``grown`` (the tool list changes)."""
    if "grown" not in toolkit:
        toolkit.register(grown)
    return "grew"


@tool
def touch() -> str:
    """Say that ``notes://today`` changed."""
    toolkit.resource_changed("notes://today")
    return "touched"


@resource("notes://today")
def today() -> str:
    """Today's notes."""
    return "nothing yet"


toolkit = Toolkit([grow, touch, today])
