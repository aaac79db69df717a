"""Which callers may see an item: the scopes it asks of them.

A tool's, a resource's or a prompt's function may carry ``required_scopes`` (a
``frozenset`` of scope names; the MCP gateway sets them from ``mcp.json``'s ``scopes`` and
``toolScopes`` with :func:`gate`). An item asking none is seen by every
caller; one asking some only by a :class:`~toolnexus.Principal` granted all of them — and
never by a call no server verified (no principal). The MCP server's catalog per caller and
the search meta-tools (``search_tools``, ``call_tool``) both read this one rule.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._principal import Principal

__all__ = ["any_gated", "gate", "gates", "required_scopes", "visible"]

_gated = 0  # how many functions were ever gated: with none, every caller sees everything
_gates = 0  # how many times gate() ran: what a caller may see can change with each
_lock = threading.Lock()


def gate(fn: Any, scopes: Iterable[str]) -> None:
    """Ask a caller for every one of ``scopes`` before showing the tool, resource or
    prompt whose function ``fn`` is (``()``: shown to all).

    Example::

        gate(tool.fn, {"files:read"})
    """
    global _gated, _gates
    needed = frozenset(scopes)
    with _lock:
        fn.required_scopes = needed
        _gates += 1  # after the change: what was seen before it is stale from now on
        if needed:
            _gated += 1


def any_gated() -> bool:
    """Whether any function was ever gated (without one, every caller sees everything)."""
    return _gated > 0


def gates() -> int:
    """How many times :func:`gate` ran: a value derived from what callers may see (a
    server's list page per caller) is current while this count has not changed.

    Example::

        seen = gates()   # ... later: gates() != seen when anything was gated since
    """
    return _gates


def required_scopes(item: Any) -> frozenset[str]:
    """The scopes ``item`` (a tool, resource, prompt or skill) asks of a caller (a
    remote skill's function is the one that reads its files).

    Example::

        required_scopes(tool)  # frozenset({'files:read'})
    """
    fn = item.fn if hasattr(item, "fn") else getattr(item, "_fetch", None)
    needed = getattr(fn, "required_scopes", None)
    return needed if isinstance(needed, frozenset) else frozenset()


def visible(item: Any, principal: Principal | None) -> bool:
    """Whether ``principal`` may see ``item``: it asks no scopes, or the principal has them.

    Example::

        visible(tool, Principal("ann", scopes="files:read"))  # True
    """
    needed = required_scopes(item)
    return not needed or (principal is not None and principal.has_scopes(*needed))
