"""Which callers may see an item: the scopes it asks of them.

A tool's, a resource's or a prompt's function may carry ``required_scopes`` (a
``frozenset`` of scope names; the MCP gateway sets them from ``mcp.json``'s ``scopes`` and
``toolScopes`` with ``toolnexus.mcp``'s ``gate``). An item asking none is seen by every
caller; one asking some only by a :class:`~toolnexus.Principal` granted all of them — and
never by a call no server verified (no principal). The MCP server's catalog per caller and
the search meta-tools (``search_tools``, ``call_tool``) both read this one rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._principal import Principal

__all__ = ["required_scopes", "visible"]


def required_scopes(item: Any) -> frozenset[str]:
    """The scopes ``item`` (a tool, resource or prompt) asks of a caller.

    Example::

        required_scopes(tool)  # frozenset({'files:read'})
    """
    needed = getattr(getattr(item, "fn", None), "required_scopes", None)
    return needed if isinstance(needed, frozenset) else frozenset()


def visible(item: Any, principal: Principal | None) -> bool:
    """Whether ``principal`` may see ``item``: it asks no scopes, or the principal has them.

    Example::

        visible(tool, Principal("ann", scopes="files:read"))  # True
    """
    needed = required_scopes(item)
    return not needed or (principal is not None and principal.has_scopes(*needed))
