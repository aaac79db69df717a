"""The registry: :class:`Toolkit` — tools by name, calls by name, schemas per provider.

A host hands a model ``toolkit.to_openai()`` (or the Anthropic, Gemini, MCP shape), then
runs each call the model makes with ``toolkit.execute(name, args)``. Everything a model
can get wrong — an unknown name, arguments that are not JSON or not an object, arguments
that do not match the schema — comes back as an error :class:`ToolResult` that says how
to fix it; nothing raises.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from . import _wire
from ._context import ToolContext
from ._result import ToolResult
from ._tools import Tool, make_tool
from .errors import DuplicateToolError, InvalidTypeError, StrictSchemaError, UnknownToolError

__all__ = ["DuplicateToolError", "StrictSchemaError", "Toolkit", "UnknownToolError"]


class Toolkit:
    """Tools by name: register them, look them up, run a model's calls, export schemas.

    Accepts :class:`Tool` objects and plain functions (made into tools with
    :func:`~toolnexus.tool`). Iteration, :meth:`tools` and the adapters keep
    registration order.

    Example::

        >>> from toolnexus import Toolkit, tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> toolkit = Toolkit([add])
        >>> toolkit.execute("add", '{"a": 2, "b": 3}')
        <ToolResult ok '5'>
        >>> toolkit.execute("ad", {"a": 2, "b": 3}).output
        "unknown tool 'ad'; did you mean 'add'?"
    """

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        frame = sys._getframe(1)
        for each in tools:
            self._add(self._as_tool(each, frame), replace=False)

    # ----------------------------------------------------------------- registry

    @staticmethod
    def _as_tool(item: Tool | Callable[..., Any], frame: Any) -> Tool:
        if isinstance(item, Tool):
            return item
        if not callable(item):
            raise InvalidTypeError(
                f"Toolkit takes Tool objects or functions, got {type(item).__name__}"
            )
        return make_tool(item, _NO_OPTIONS, frame)

    def _add(self, item: Tool, *, replace: bool) -> None:
        if item.name in self._tools and not replace:
            raise DuplicateToolError(item.name)
        self._tools[item.name] = item

    def register(self, *tools: Tool | Callable[..., Any], replace: bool = False) -> None:
        """Add tools (or functions, made into tools). All or nothing.

        Raises :class:`DuplicateToolError` (a ``ValueError``) when a name is taken —
        by a registered tool or by another in the same call — unless ``replace=True``,
        which replaces the registered tool in its place.

        Example::

            toolkit.register(add, search)
            toolkit.register(better_search, replace=True)
        """
        frame = sys._getframe(1)
        made = [self._as_tool(each, frame) for each in tools]
        seen: set[str] = set()
        for item in made:
            if item.name in seen or (item.name in self._tools and not replace):
                raise DuplicateToolError(item.name)
            seen.add(item.name)
        for item in made:
            self._add(item, replace=replace)

    def get(self, name: str) -> Tool:
        """The tool registered as ``name``.

        Raises :class:`UnknownToolError` (a ``LookupError``) listing the closest names.

        Example::

            toolkit.get("add")({"a": 1, "b": 2})
        """
        found = self._tools.get(name) if isinstance(name, str) else None
        if found is None:
            raise self._unknown(name)
        return found

    def _unknown(self, name: Any) -> UnknownToolError:
        import difflib  # only a miss pays for it

        known = list(self._tools)
        text = name if isinstance(name, str) else repr(name)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(text)
        scored = []
        for candidate in known:
            matcher.set_seq1(candidate)
            score = matcher.ratio()
            if score >= 0.6:
                scored.append((score, candidate))
        scored.sort(key=lambda pair: -pair[0])
        # Only names about as close as the best: 'serch' suggests 'search', not 'fetch' too.
        best = scored[0][0] if scored else 0.0
        suggestions = [candidate for score, candidate in scored[:3] if score >= best - 0.1]
        return UnknownToolError(text, suggestions, known)

    def remove(self, name: str) -> Tool:
        """Unregister ``name`` and return its tool. Raises :class:`UnknownToolError`.

        Example::

            toolkit.remove("add")
        """
        self.get(name)
        return self._tools.pop(name)

    def tools(self) -> list[Tool]:
        """The registered tools, in registration order (a new list).

        Example::

            [t.name for t in toolkit.tools()]
        """
        return list(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Tool):
            return self._tools.get(item.name) is item
        return isinstance(item, str) and item in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __repr__(self) -> str:
        names = ", ".join(self._tools)
        count = len(self._tools)
        return f"<Toolkit {count} tool{'' if count == 1 else 's'}{': ' + names if names else ''}>"

    # ----------------------------------------------------------------- calls

    def resolve(
        self, name: str, args: Mapping[str, Any] | str | bytes | None
    ) -> tuple[Tool, dict[str, Any]] | ToolResult:
        """Look the tool up and read its arguments, or say what is wrong with the call.

        ``args`` may be a mapping, JSON text (what OpenAI-style providers send; empty text
        means no arguments) or None. Returns ``(tool, args_dict)``, or an error
        :class:`ToolResult` for an unknown name, malformed JSON or a non-object — never
        raises. The arguments are not validated here: the tool does that when called.

        Example::

            resolved = toolkit.resolve("add", '{"a": 1, "b": 2}')
            if isinstance(resolved, ToolResult):
                return resolved           # tell the model what was wrong
            tool, args = resolved
        """
        found = self._tools.get(name) if isinstance(name, str) else None
        if found is None:
            return ToolResult(str(self._unknown(name)), True)
        if args is None:
            return found, {}
        if isinstance(args, dict):
            return found, args
        if isinstance(args, Mapping):
            return found, dict(args)
        if isinstance(args, (str, bytes, bytearray)):
            if not args.strip():
                return found, {}
            try:
                value = json.loads(args)
            except RecursionError:
                return ToolResult(
                    f"invalid arguments for {found.name!r}: the JSON is nested too deeply; "
                    f"send {_shape_hint(found)}",
                    True,
                )
            except ValueError as exc:
                return ToolResult(
                    f"invalid arguments for {found.name!r}: not valid JSON ({exc}); "
                    f"send {_shape_hint(found)}",
                    True,
                )
            if not isinstance(value, dict):
                return ToolResult(
                    f"invalid arguments for {found.name!r}: expected a JSON object, got "
                    f"{_wire.describe(value)}; send {_shape_hint(found)}",
                    True,
                )
            return found, value
        return ToolResult(
            f"invalid arguments for {found.name!r}: expected a JSON object, got "
            f"{type(args).__name__}; send {_shape_hint(found)}",
            True,
        )

    def execute(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        ctx: ToolContext | None = None,
    ) -> ToolResult:
        """Run one call by name: resolve, validate, call, normalise. Never raises for
        anything a model can cause (see :meth:`resolve` and :class:`Tool`).

        An ``async def`` tool runs to completion on a private event loop; in async code
        prefer :meth:`aexecute`.

        Example::

            result = toolkit.execute("add", '{"a": 1, "b": 2}')
        """
        resolved = self.resolve(name, args)
        if isinstance(resolved, ToolResult):
            return resolved
        tool, arguments = resolved
        return tool(arguments, ctx)

    async def aexecute(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        ctx: ToolContext | None = None,
    ) -> ToolResult:
        """The async twin of :meth:`execute`: awaits an ``async def`` tool natively (a sync
        tool is called inline).

        Example::

            result = await toolkit.aexecute("fetch", {"url": "https://example.com"})
        """
        resolved = self.resolve(name, args)
        if isinstance(resolved, ToolResult):
            return resolved
        tool, arguments = resolved
        return await tool.acall(arguments, ctx)

    # ----------------------------------------------------------------- adapters

    def to_openai(self, *, strict: bool = False, api: str = "chat") -> list[dict[str, Any]]:
        """Tool definitions for OpenAI: the Chat Completions ``tools`` parameter, or with
        ``api="responses"`` the Responses API's.

        Chat Completions: ``{"type": "function", "function": {name, description,
        parameters}}``. Responses API: ``{"type": "function", name, description, parameters,
        strict}`` — flat, and ``strict`` always written (that API reads a missing one as
        true). With ``strict=True`` each schema is rewritten as strict mode requires: every
        property is listed in ``required``, an optional one becomes nullable (a ``null``
        argument then reads as "not given"), every object is closed, and ``default``,
        ``uniqueItems``, ``prefixItems``, ``contentEncoding`` and formats strict mode does not
        know (``path``, ``decimal``) are dropped — the tool still enforces them when called.
        Raises :class:`StrictSchemaError` for a schema with an open object (one that takes
        arbitrary keys), which strict mode cannot express, and ValueError for another
        ``api``.

        Example::

            client.chat.completions.create(model=..., messages=..., tools=toolkit.to_openai())
            client.responses.create(model=..., input=..., tools=toolkit.to_openai(api="responses"))
        """
        return [item.to_openai(strict=strict, api=api) for item in self._tools.values()]

    def to_anthropic(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """Tool definitions for Anthropic's Messages API: ``{name, description,
        input_schema}``.

        With ``strict=True`` each also says ``"strict": true`` (strict tool use) and its
        schema is kept within that mode's subset: every object is closed, ``oneOf`` becomes
        ``anyOf``, fixed tuples become arrays, and numeric and length bounds, ``uniqueItems``,
        ``minItems`` above 1 and unknown formats are dropped — the tool still enforces them.
        Raises :class:`StrictSchemaError` for an open object or a recursive schema.

        Example::

            client.messages.create(model=..., messages=..., tools=toolkit.to_anthropic())
        """
        return [item.to_anthropic(strict=strict) for item in self._tools.values()]

    def to_gemini(self) -> list[dict[str, Any]]:
        """Tool definitions for the Gemini API: ``[{"functionDeclarations": [...]}]``.

        Gemini's ``parameters`` take a subset of OpenAPI 3.0, so each schema is mapped:
        ``$ref`` is inlined (a recursive reference becomes a plain object), ``T | None``
        becomes ``T`` with ``"nullable": true``, a list of types becomes ``anyOf``,
        ``oneOf`` becomes ``anyOf``, ``const`` a one-value ``enum``, an enum of numbers
        becomes its type with the values' bounds and the values listed in the description
        (Gemini's enums hold strings, and a model answering one with a string would be
        refused), string formats other than ``date-time`` move to the description, fixed
        tuples become arrays with bounds, and keywords Gemini refuses
        (``additionalProperties``, ``uniqueItems``, ``multipleOf``, ``not``, exclusive
        bounds made inclusive, ...) are dropped — the tool still enforces them when called.
        A tool without arguments has no ``parameters``.

        Example::

            config = {"tools": toolkit.to_gemini()}
        """
        return [{"functionDeclarations": [item.to_gemini() for item in self._tools.values()]}]

    def to_mcp(self) -> list[dict[str, Any]]:
        """Tool definitions for an MCP ``tools/list`` reply: ``{name, description,
        inputSchema}``, plus ``title``, ``outputSchema`` and ``annotations`` when set.

        A tool whose entry JSON cannot carry is left out, with a warning naming it, so the
        others are still listed (a :class:`Tool` refuses such a schema when it is defined).

        Example::

            reply = {"tools": toolkit.to_mcp()}
        """
        from ._adapters import keep_listable

        return keep_listable([item.to_mcp() for item in self._tools.values()])


_NO_OPTIONS: dict[str, Any] = {
    "name": None,
    "description": None,
    "input_schema": None,
    "title": None,
    "output_schema": None,
    "hints": {},
}


def _shape_hint(item: Tool) -> str:
    properties = item.input_schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        keys = ", ".join(properties)
        return f"one JSON object with the keys {keys}"
    return "one JSON object"
