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
from ._frozen import thaw
from .context import ToolContext
from .errors import ToolnexusError
from .result import ToolResult
from .tools import Tool, _make_tool

__all__ = ["DuplicateToolError", "StrictSchemaError", "Toolkit", "UnknownToolError"]


class UnknownToolError(ToolnexusError, LookupError):
    """No tool of that name is registered.

    ``name`` is the name asked for, ``suggestions`` the closest registered names (best
    first, possibly empty).

    Example::

        try:
            toolkit.get("serch")
        except UnknownToolError as exc:
            print(exc)              # unknown tool 'serch'; did you mean 'search'?
            print(exc.suggestions)  # ['search']
    """

    def __init__(self, name: str, suggestions: list[str], known: list[str]) -> None:
        super().__init__(_unknown_message(name, suggestions, known))
        self.name = name
        self.suggestions = suggestions

    def __str__(self) -> str:
        return str(self.args[0])


class DuplicateToolError(ToolnexusError, ValueError):
    """A tool of that name is already registered (pass ``replace=True`` to swap it).

    Example::

        try:
            toolkit.register(add)
        except DuplicateToolError as exc:
            assert exc.name == "add"
    """

    def __init__(self, name: str) -> None:
        super().__init__(
            f"a tool named {name!r} is already registered; pass replace=True to replace it, "
            "or register this one under another name with @tool(name=...)"
        )
        self.name = name


class StrictSchemaError(ToolnexusError, ValueError):
    """A tool's schema cannot be expressed in OpenAI's strict mode.

    ``tool`` is the tool's name, ``path`` where in its schema the problem is.

    Example::

        try:
            toolkit.to_openai(strict=True)
        except StrictSchemaError as exc:
            print(exc.tool, exc.path)
    """

    def __init__(self, tool: str, path: str, problem: str) -> None:
        super().__init__(
            f"tool {tool!r} cannot be offered in OpenAI strict mode: {path or 'its arguments'} "
            f"{problem}; use to_openai() without strict=True for it, or give the tool a "
            "schema whose objects all list their properties"
        )
        self.tool = tool
        self.path = path
        self.problem = problem


def _quote_list(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _unknown_message(name: str, suggestions: list[str], known: list[str]) -> str:
    if suggestions:
        return f"unknown tool {name!r}; did you mean {_quote_list(suggestions)}?"
    if not known:
        return f"unknown tool {name!r}; no tools are registered"
    shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
    return f"unknown tool {name!r}; known tools: {shown}"


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
            raise TypeError(
                f"Toolkit takes Tool objects or functions, got {type(item).__name__}"
            )
        return _make_tool(item, _NO_OPTIONS, frame)

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

    def to_openai(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """Tool definitions for OpenAI's Chat Completions ``tools`` parameter.

        Each is ``{"type": "function", "function": {name, description, parameters}}``.
        With ``strict=True`` each function also says ``"strict": true`` and its schema is
        rewritten as strict mode requires: every property is listed in ``required``, an
        optional one becomes nullable (a ``null`` argument then reads as "not given"),
        every object is closed, and ``default``, ``uniqueItems`` and ``prefixItems`` (which
        strict mode refuses) are dropped — the tool still enforces them when called.
        Raises :class:`StrictSchemaError` for a schema with an open object (one that
        takes arbitrary keys), which strict mode cannot express.

        Example::

            client.chat.completions.create(model=..., messages=..., tools=toolkit.to_openai())
        """
        out = []
        for item in self._tools.values():
            parameters = thaw(item.input_schema)
            function: dict[str, Any] = {
                "name": item.name,
                "description": item.description,
                "parameters": _strict_schema(item.name, parameters) if strict else parameters,
            }
            if strict:
                function["strict"] = True
            out.append({"type": "function", "function": function})
        return out

    def to_anthropic(self) -> list[dict[str, Any]]:
        """Tool definitions for Anthropic's Messages API: ``{name, description,
        input_schema}``.

        Example::

            client.messages.create(model=..., messages=..., tools=toolkit.to_anthropic())
        """
        return [
            {"name": item.name, "description": item.description,
             "input_schema": thaw(item.input_schema)}
            for item in self._tools.values()
        ]

    def to_gemini(self) -> list[dict[str, Any]]:
        """Tool definitions for the Gemini API: ``[{"functionDeclarations": [...]}]``.

        Gemini's ``parameters`` take a subset of OpenAPI 3.0, so each schema is mapped:
        ``$ref`` is inlined (a recursive reference becomes a plain object), ``T | None``
        becomes ``T`` with ``"nullable": true``, a list of types becomes ``anyOf``,
        ``oneOf`` becomes ``anyOf``, ``const`` a one-value ``enum``, enums of numbers
        become enums of strings, fixed tuples become arrays with bounds, and keywords
        Gemini refuses (``additionalProperties``, ``uniqueItems``, ``multipleOf``,
        ``not``, exclusive bounds made inclusive, ...) are dropped — the tool still
        enforces them when called. A tool without arguments has no ``parameters``.

        Example::

            config = {"tools": toolkit.to_gemini()}
        """
        declarations = []
        for item in self._tools.values():
            declaration: dict[str, Any] = {"name": item.name, "description": item.description}
            schema = item.input_schema
            if schema.get("properties"):
                declaration["parameters"] = thaw(_GeminiMapper(schema).map(schema))
            declarations.append(declaration)
        return [{"functionDeclarations": declarations}]

    def to_mcp(self) -> list[dict[str, Any]]:
        """Tool definitions for an MCP ``tools/list`` reply: ``{name, description,
        inputSchema}``, plus ``title``, ``outputSchema`` and ``annotations`` when set.

        Example::

            reply = {"tools": toolkit.to_mcp()}
        """
        out = []
        for item in self._tools.values():
            entry: dict[str, Any] = {"name": item.name}
            if item.title is not None:
                entry["title"] = item.title
            entry["description"] = item.description
            entry["inputSchema"] = thaw(item.input_schema)
            if item.output_schema is not None:
                entry["outputSchema"] = thaw(item.output_schema)
            if item.annotations:
                entry["annotations"] = thaw(item.annotations)
            out.append(entry)
        return out


_NO_OPTIONS: dict[str, Any] = {
    "name": None, "description": None, "input_schema": None, "title": None,
    "output_schema": None, "hints": {},
}


def _shape_hint(item: Tool) -> str:
    properties = item.input_schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        keys = ", ".join(properties)
        return f"one JSON object with the keys {keys}"
    return "one JSON object"


# --------------------------------------------------------------------------- OpenAI strict

_STRICT_DROPPED = ("default", "uniqueItems")


def _strict_schema(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    def walk(node: Any, path: str) -> Any:
        if not isinstance(node, dict):
            return node
        out = {key: value for key, value in node.items() if key not in _STRICT_DROPPED}
        if "prefixItems" in out:
            prefix = out.pop("prefixItems")
            distinct: list[Any] = []
            for each in prefix:
                if each not in distinct:
                    distinct.append(each)
            out["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
        is_object = out.get("type") == "object" or "properties" in out
        if is_object:
            extra = out.get("additionalProperties")
            if extra not in (None, False):
                raise StrictSchemaError(
                    tool, path, "is an object with free-form keys (additionalProperties)"
                )
            if "properties" not in out and extra is not False:
                raise StrictSchemaError(tool, path, "is an object that takes any keys")
            properties = out.get("properties", {})
            required = set(out.get("required", ()))
            new_properties = {}
            for key, sub in properties.items():
                sub = walk(sub, f"{path}.{key}" if path else key)
                if key not in required and not _nullable(sub):
                    sub = {"anyOf": [sub, {"type": "null"}]}
                new_properties[key] = sub
            out["properties"] = new_properties
            out["required"] = list(properties)
            out["additionalProperties"] = False
        for key in ("items",):
            if key in out:
                out[key] = walk(out[key], f"{path}[]")
        for key in ("anyOf", "oneOf", "allOf"):
            if key in out:
                out[key] = [walk(each, path) for each in out[key]]
        for key in ("$defs", "definitions"):
            if key in out:
                out[key] = {name: walk(each, f"#/{key}/{name}") for name, each in out[key].items()}
        return out

    result: dict[str, Any] = walk(schema, "")
    return result


def _nullable(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(
        isinstance(branch, Mapping) and _nullable(branch) for branch in schema.get("anyOf", ())
    )


# --------------------------------------------------------------------------- Gemini

_GEMINI_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "default", "items", "minimum", "maximum",
}


class _GeminiMapper:
    """Maps a JSON Schema onto the OpenAPI 3.0 subset Gemini's ``parameters`` accept."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.active: list[str] = []

    def _resolve(self, ref: str) -> Mapping[str, Any] | None:
        if not ref.startswith("#/"):
            return None
        target: Any = self.root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        return target if isinstance(target, Mapping) else None

    def map(self, node: Mapping[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref)
            if target is None or ref in self.active:
                # Gemini has no references: a recursive one becomes a plain object.
                out: dict[str, Any] = {"type": "object"}
            else:
                self.active.append(ref)
                out = self.map(target)
                self.active.pop()
            if isinstance(node.get("description"), str):
                out["description"] = node["description"]
            return out
        out = {}
        kind = node.get("type")
        branches = node.get("anyOf") or node.get("oneOf")
        if isinstance(kind, list):
            kinds = [each for each in kind if each != "null"]
            if len(kinds) < len(kind):
                out["nullable"] = True
            if len(kinds) == 1:
                out["type"] = kinds[0]
            elif kinds:
                branches = [{**{k: v for k, v in node.items() if k != "type"}, "type": each}
                            for each in kinds]
        elif isinstance(kind, str):
            out["type"] = kind
        if branches:
            real = [each for each in branches if each.get("type") != "null"]
            if len(real) < len(branches):
                out["nullable"] = True
            if len(real) == 1:
                inner = self.map(real[0])
                if inner.get("nullable") or out.get("nullable"):
                    inner["nullable"] = True
                for key in ("description", "default", "title"):
                    if key in node:
                        inner[key] = node[key]
                return inner
            out["anyOf"] = [self.map(each) for each in real]
            out.pop("type", None)
        all_of = node.get("allOf")
        if all_of:
            merged: dict[str, Any] = {}
            for each in all_of:
                merged.update(self.map(each))
            out = {**merged, **out}
        for key, value in node.items():
            if key in ("type", "anyOf", "oneOf", "allOf", "nullable"):
                continue
            if key == "properties":
                out["properties"] = {name: self.map(sub) for name, sub in value.items()}
            elif key == "items":
                if isinstance(value, Mapping):
                    out["items"] = self.map(value)
            elif key == "prefixItems":
                distinct: list[Any] = []
                for each in value:
                    mapped = self.map(each)
                    if mapped not in distinct:
                        distinct.append(mapped)
                out["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
            elif key == "const":
                out.update(self._enum([value]))
            elif key == "enum":
                out.update(self._enum(list(value)))
            elif key == "exclusiveMinimum" and "minimum" not in node:
                out["minimum"] = value
            elif key == "exclusiveMaximum" and "maximum" not in node:
                out["maximum"] = value
            elif key in _GEMINI_KEYS and key not in out:
                out[key] = value
        if out.get("type") == "object" and "properties" not in out:
            # An object with free-form keys: Gemini cannot say so; the tool still checks.
            out.setdefault("description", "an object (any keys)")
        return out

    @staticmethod
    def _enum(values: list[Any]) -> dict[str, Any]:
        plain = [value for value in values if value is not None]
        out: dict[str, Any] = {}
        if len(plain) < len(values):
            out["nullable"] = True
        if all(isinstance(value, str) for value in plain):
            out["enum"] = plain
            out["type"] = "string"
        elif all(isinstance(value, (int, float)) and not isinstance(value, bool)
                 for value in plain):
            # Gemini's enums hold strings; a numeric one is written as strings with
            # format "enum" (the documented form for INTEGER/NUMBER enums).
            out["enum"] = [json.dumps(value) for value in plain]
            out["format"] = "enum"
        return out
