"""Tool search inside a turn: the revealed set, and the providers' native search items.

A conversation with deferred tools (docs/tool-search.md) keeps one piece of state: the
names its searches revealed. :class:`Discovery` is that state for one turn of
:meth:`Host.run_turn <toolnexus.Host.run_turn>` — it starts from the set the previous turn
handed on (``TurnResult.revealed``), adds what the provider's own search found in the
response (Anthropic's ``tool_search_tool_result`` blocks, OpenAI's ``tool_search_output``
items), refuses a call to a deferred tool nobody revealed, turns ``call_tool`` into the
call it names, and adds what the turn's own searches revealed. It also reads the
client-executed searches a provider asks for (OpenAI's ``tool_search_call`` with
``execution: "client"``) and renders their answers (``tool_search_output``; Anthropic's
``tool_reference`` blocks).

No module below the host imports this one; it reads a turn's calls by their fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ._frozen import thaw
from ._result import ToolResult
from ._views import CALL_TOOL, NATIVE_SEARCH, REVEALED_KEY, SEARCH_TOOLS
from .errors import InvalidTypeError

__all__ = ["Discovery", "render_native"]

ParsedCall = tuple[str, str, Any]


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _items(calls: Any, style: str) -> list[Any]:
    """The response's items (content blocks, output items) when it holds any, else []."""
    if isinstance(calls, (list, tuple)):
        return list(calls)
    held = _get(calls, "content" if style == "anthropic" else "output")
    return list(held) if isinstance(held, (list, tuple)) else []


def _tool_names(tools: Any) -> Iterable[str]:
    """The function names of a ``tool_search_output``'s tools (inside namespaces too)."""
    for each in tools if isinstance(tools, (list, tuple)) else ():
        if _get(each, "type") == "namespace":
            yield from _tool_names(_get(each, "tools"))
        else:
            name = _get(each, "name")
            if isinstance(name, str):
                yield name


class Discovery:
    """One turn's revealed set and the native search items of its response.

    ``view`` is the :class:`~toolnexus.ToolView` the host runs (a toolkit's whole view,
    or the one it was made over): its deferral says which tools need revealing, and its
    tools are those a search may reveal and a call may run.

    Example::

        discovery = Discovery(view, response.content, "anthropic", previous.revealed)
        target = discovery.target(name, arguments)
    """

    __slots__ = ("_view", "revealed", "searches")

    def __init__(self, view: Any, calls: Any, style: str, revealed: Iterable[str]) -> None:
        if isinstance(revealed, (str, bytes)):
            raise InvalidTypeError("revealed takes a list of tool names, got one str")
        self._view = view
        self.revealed: list[str] = []
        for name in revealed:
            if not isinstance(name, str):
                raise InvalidTypeError(f"revealed takes tool names (str), got {name!r}")
            self._reveal(name)
        self.searches: list[ParsedCall] = []  # client-executed native searches to run
        if style not in ("anthropic", "responses"):
            return
        for item in _items(calls, style):
            kind = _get(item, "type")
            if kind == "tool_search_tool_result":  # Anthropic's server-side search
                content = _get(item, "content")
                for reference in _get(content, "tool_references") or ():
                    name = _get(reference, "tool_name")
                    if isinstance(name, str):
                        self._reveal(name)
            elif kind == "tool_search_output":  # OpenAI's hosted search
                for name in _tool_names(_get(item, "tools")):
                    self._reveal(name)
            elif kind == "tool_search_call" and _get(item, "execution") == "client":
                call_id = _get(item, "call_id") or _get(item, "id")
                arguments = _get(item, "arguments")
                if isinstance(call_id, str) and call_id:
                    self.searches.append((call_id, NATIVE_SEARCH, arguments or {}))

    def _reveal(self, name: str) -> None:
        if name not in self.revealed:
            self.revealed.append(name)

    @staticmethod
    def is_needed(view: Any, calls: Any, style: str, revealed: Iterable[str]) -> bool:
        """False when nothing of this turn concerns search: no revealed set handed on, no
        tool held back, and no native search item — the turn then runs as before."""
        holds_back = getattr(view, "_holds_back", None)
        if holds_back is None:
            return False  # not a view: nothing can be deferred
        if revealed or holds_back():
            return True
        if style not in ("anthropic", "responses"):
            return False
        kinds = ("tool_search_tool_result", "tool_search_output", "tool_search_call")
        return any(_get(item, "type") in kinds for item in _items(calls, style))

    def target(self, name: str, arguments: Any) -> tuple[str, Any]:
        """The call to run for the model's ``(name, arguments)``: ``call_tool``'s inner
        call when its arguments name one, else the call itself."""
        if name != CALL_TOOL or self._view._own(name):  # a tool of that name wins
            return name, arguments
        if isinstance(arguments, (str, bytes, bytearray)):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return name, arguments  # call_tool itself says what is wrong
        inner = arguments.get("name") if isinstance(arguments, Mapping) else None
        if not isinstance(inner, str) or inner in (SEARCH_TOOLS, CALL_TOOL, NATIVE_SEARCH):
            return name, arguments
        return inner, arguments.get("arguments")

    def refusal(self, name: str) -> ToolResult | None:
        """The error result for a call to a deferred tool of the view this conversation
        never revealed, else None (a tool outside the view is unknown when it runs)."""
        if name in self.revealed or not self._view.is_deferred(name):
            return None
        return ToolResult.error(
            f"tool {name!r} is not loaded: no search in this conversation found it. Call "
            f"{SEARCH_TOOLS} (or the tool search) with what you need done, then call the "
            "tool it finds"
        )

    def learn(self, name: str, result: ToolResult) -> None:
        """Add what a finished search call revealed."""
        if name not in (SEARCH_TOOLS, NATIVE_SEARCH) or self._view._own(name) or result.is_error:
            return
        found = result.metadata.get(REVEALED_KEY)
        for each in found if isinstance(found, (list, tuple)) else ():
            if isinstance(each, str):
                self._reveal(each)


def render_native(call: Any, style: str) -> dict[str, Any] | None:
    """The answer to a client-executed native search, or None for any other call: for
    Anthropic a ``tool_result`` of ``tool_reference`` blocks, for the Responses API a
    ``tool_search_output`` item with the tools' definitions."""
    result = call.result
    if call.name != NATIVE_SEARCH:
        return None
    if style == "responses":  # a tool_search_call is answered by its output item, always
        definitions = None if result.is_error else result.metadata.get("definitions")
        return {
            "type": "tool_search_output",
            "call_id": call.id,
            "execution": "client",
            "status": "completed",
            "tools": [thaw(each) for each in definitions or ()],
        }
    names = None if result.is_error else result.metadata.get(REVEALED_KEY)
    if style != "anthropic" or not isinstance(names, (list, tuple)) or not names:
        return None  # an error, or nothing found: the result's text says so
    return {
        "type": "tool_result",
        "tool_use_id": call.id,
        "content": [{"type": "tool_reference", "tool_name": name} for name in names],
    }
