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

from typing import TYPE_CHECKING

from ..._scopes import any_gated, gate, required_scopes, visible

if TYPE_CHECKING:
    from ..._toolkit import Toolkit

__all__ = ["gate", "required_scopes", "view", "visible"]


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
