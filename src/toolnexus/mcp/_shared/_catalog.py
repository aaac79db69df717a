"""Who sees what: a catalog per principal.

A tool's, a resource's or a prompt's function may ask a caller for scopes before the item
is even shown (:func:`gate`; a gateway does so for the upstreams and tools ``mcp.json``
gives ``scopes`` and ``toolScopes``). :func:`view` is the toolkit a server answers the
caller of the current request with (``toolnexus.Principal`` bound in the request's
context): the items it may see. An item outside it is unknown to that caller — listed
nowhere, and a call, read or get of it answered as for a name that does not exist, with
suggestions drawn only from what it may see — never "forbidden", which would say it
exists. Without a principal (stdio, a server without ``auth``) no gated item is shown.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from ..._scopes import any_gated, gate, gates, required_scopes, visible

if TYPE_CHECKING:
    from ..._toolkit import Toolkit

__all__ = ["audience", "cache_scope", "gate", "required_scopes", "view", "visible"]


def audience() -> Hashable:
    """What decides which items the caller of the current request may see, as a key: the
    same key, the same :func:`view` of an unchanged toolkit. None while nothing was ever
    gated (every caller sees everything); else the count of :func:`gate` calls so far (a
    gate set later changes what is seen) and the caller's scopes (None without a
    principal), which is all :func:`visible` reads of it.

    Example::

        key = ("tools/list", audience(), offset)
    """
    if not any_gated():
        return None
    from ..._context import bound_principal

    principal = bound_principal.get()
    return gates(), None if principal is None else principal.scopes


def cache_scope() -> str:
    """The ``cacheScope`` of an answer that shows the catalog, or an item of it, to the
    caller of the current request: ``"public"`` when every caller sees the same (nothing
    gated, or no principal: a server without ``auth``, where every caller is alike), else
    ``"private"`` — what this caller sees depends on its scopes, and a cache shared across
    principals must not hand it to another.

    Example::

        body["cacheScope"] = cache_scope()
    """
    if not any_gated():
        return "public"
    from ..._context import bound_principal

    return "public" if bound_principal.get() is None else "private"


def view(toolkit: Toolkit) -> Toolkit:
    """``toolkit`` as the caller of the current request may see it: itself when it may
    see everything, else a toolkit of only what it may see (lookups in it answer a hidden
    name as unknown).

    Example::

        tools = view(context.toolkit).tools()
    """
    if not any_gated():
        return toolkit
    from ..._context import bound_principal

    principal = bound_principal.get()
    skills = toolkit.skills()
    # the skill tool comes with the first skill shown, and loads only those
    tools = [tool for tool in toolkit.tools() if not (skills and tool.source == "skill")]
    items = [*tools, *toolkit.resources(), *toolkit.prompts(), *skills]
    shown = [item for item in items if visible(item, principal)]
    if len(shown) == len(items):
        return toolkit
    from ..._toolkit import Toolkit

    return Toolkit(shown)
