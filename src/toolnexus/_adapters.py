"""Every provider's tool shape: OpenAI (Chat Completions and Responses), Anthropic, Gemini
and MCP, for one tool at a time.

:class:`~toolnexus.Tool`'s ``to_openai()``/``to_anthropic()``/``to_gemini()``/``to_mcp()``
and :class:`~toolnexus.Toolkit`'s adapters of the same names all come here, so a shape is
written in one place. Each function returns a fresh plain-JSON copy (dicts and lists) the
caller may change. What a provider's schema subset cannot say is mapped or dropped here;
the tool itself still enforces the full schema when it is called.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ._frozen import sealed, thaw
from ._pointer import escape, fragment_pointer, resolve_reference, tokens
from ._tool_use import check_offered, offered_in
from .errors import InvalidTypeError, InvalidValueError, StrictSchemaError

if TYPE_CHECKING:
    from typing import Protocol

    from ._tool_use import Grammar

    class Tool(Protocol):
        """What a shape is made from: a :class:`~toolnexus.Tool`'s description. This
        module sits below the tools layer, so it names the fields it reads, not the class."""

        @property
        def name(self) -> str: ...
        @property
        def title(self) -> str | None: ...
        @property
        def description(self) -> str: ...
        @property
        def input_schema(self) -> Mapping[str, Any]: ...
        @property
        def output_schema(self) -> Mapping[str, Any] | None: ...
        @property
        def annotations(self) -> Mapping[str, Any] | None: ...
        @property
        def allowed_callers(self) -> tuple[str, ...]: ...
        @property
        def input_examples(self) -> tuple[Mapping[str, Any], ...]: ...
        @property
        def eager_input_streaming(self) -> bool | None: ...
        @property
        def grammar(self) -> Grammar | None: ...


__all__ = [
    "ANTHROPIC_CODE_EXECUTION",
    "GEMINI_SCHEMAS",
    "CODE_EXECUTION_NAME",
    "HostedMcp",
    "anthropic_tool",
    "check_code_execution",
    "gemini_declaration",
    "keep_listable",
    "mcp_tool",
    "offered",
    "openai_style",
    "openai_tool",
    "programmatic_entry",
]

_OPENAI_APIS = ("chat", "responses")


def openai_style(api: str) -> str:
    """The turn style (and tool-list shape) of an OpenAI ``api``: ``"openai"`` for Chat
    Completions, ``"responses"`` for the Responses API."""
    if api not in _OPENAI_APIS:
        raise InvalidValueError(f"api must be 'chat' or 'responses', got {api!r}")
    return "openai" if api == "chat" else "responses"


_T = TypeVar("_T", bound="Tool")


def offered(tools: Iterable[_T], style: str) -> list[_T]:
    """The tools a tool list in ``style`` (``"openai"``, ``"responses"``, ``"anthropic"``,
    ``"gemini"``) describes: each the model there can call — directly, or from code where
    the style has programmatic tool calling (:func:`~toolnexus._tool_use.offered_in`). A
    programmatic-only tool is left out of a Chat Completions or Gemini list, where
    describing it alone is refused (:func:`openai_tool`, :func:`gemini_declaration`)."""
    return [each for each in tools if offered_in(each.allowed_callers, style)]


def openai_tool(tool: Tool, *, strict: bool = False, api: str = "chat") -> dict[str, Any]:
    """One tool in OpenAI's shape: Chat Completions (``api="chat"``,
    ``{"type": "function", "function": {...}}``) or the Responses API (``api="responses"``,
    ``{"type": "function", "name", "description", "parameters", "strict"}``, flat, with
    ``strict`` always present because that API reads a missing one as true).

    Raises ValueError for another ``api``, or for a programmatic-only tool
    (``allowed_callers=["programmatic"]``) with ``api="chat"``: Chat Completions has no
    programmatic tool calling, so the model could never call it there;
    :class:`StrictSchemaError` when ``strict`` and the schema has an open object.
    """
    check_offered(tool.name, tool.allowed_callers, openai_style(api))
    if tool.grammar is not None:
        return _openai_custom_tool(tool, api)
    parameters = thaw(tool.input_schema)
    if strict:
        parameters = _strict_schema(tool.name, parameters, _OPENAI_STRICT)
    if api == "responses":
        out = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": strict,
        }
        out.update(_openai_callers(tool))
        return out
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": parameters,
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def anthropic_tool(
    tool: Tool,
    *,
    strict: bool = False,
    code_execution: str = "code_execution_20260120",
    cache_control: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One tool in Anthropic's Messages API shape: ``{name, description, input_schema}``,
    plus ``"strict": true`` and a schema within strict tool use's subset when ``strict``;
    ``allowed_callers`` (``"programmatic"`` written as the ``code_execution`` tool
    version), ``input_examples`` and ``eager_input_streaming`` as the tool sets them;
    ``cache_control`` (``{"type": "ephemeral"}``, optionally with ``"ttl"``) when given.

    Raises :class:`StrictSchemaError` when ``strict`` and the schema has an open object or
    a recursive reference.
    """
    schema = thaw(tool.input_schema)
    if strict:
        schema = _strict_schema(tool.name, schema, _ANTHROPIC_STRICT)
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": schema,
    }
    if strict:
        out["strict"] = True
    out.update(_anthropic_tool_use(tool, code_execution))
    if cache_control is not None:
        out["cache_control"] = _cache_control(cache_control)
    return out


GEMINI_SCHEMAS = ("json", "subset")
"""How :func:`gemini_declaration` writes a schema: ``"json"`` (the default), the full JSON
Schema as ``parametersJsonSchema``; ``"subset"``, mapped onto the OpenAPI 3.0 subset of
``parameters`` (for models that take only that)."""


def gemini_declaration(tool: Tool, *, schema: str = "json") -> dict[str, Any]:
    """One Gemini function declaration: ``{name, description, parametersJsonSchema}`` with
    the tool's JSON Schema unmodified (``schema="json"``, the default), or ``{name,
    description, parameters}`` mapped onto Gemini's OpenAPI subset (``schema="subset"``);
    no schema at all for a tool without arguments.

    Raises ValueError for a programmatic-only tool (``allowed_callers=["programmatic"]``):
    Gemini has no programmatic tool calling, so the model could never call it."""
    check_offered(tool.name, tool.allowed_callers, "gemini")
    if schema not in GEMINI_SCHEMAS:
        raise InvalidValueError(
            f"schema must be 'json' (parametersJsonSchema) or 'subset' (parameters), got {schema!r}"
        )
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    input_schema = tool.input_schema
    if input_schema.get("properties"):
        if schema == "json":
            declaration["parametersJsonSchema"] = thaw(input_schema)
        else:
            declaration["parameters"] = thaw(_GeminiMapper(input_schema).map(input_schema))
    return declaration


def mcp_tool(tool: Tool) -> dict[str, Any]:
    """One entry of an MCP ``tools/list`` reply: ``{name, description, inputSchema}``, plus
    ``title``, ``outputSchema`` and ``annotations`` when set."""
    entry: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        entry["title"] = tool.title
    entry["description"] = tool.description
    entry["inputSchema"] = thaw(tool.input_schema)
    if tool.output_schema is not None:
        entry["outputSchema"] = thaw(tool.output_schema)
    if tool.annotations:
        entry["annotations"] = thaw(tool.annotations)
    return entry


def keep_listable(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of a tool list (``tools/list``, a provider's ``tools``) that JSON can
    carry; each one left out is logged as a warning naming the tool and the place.

    A :class:`~toolnexus.Tool` refuses a schema that is not JSON when it is defined, so this
    drops nothing in practice: it is what keeps one broken tool (built around that check)
    from taking the whole list down with it.

    Example::

        >>> keep_listable([{"name": "ok", "inputSchema": {"type": "object"}}])
        [{'name': 'ok', 'inputSchema': {'type': 'object'}}]
    """
    kept = []
    for entry in entries:
        try:
            json.dumps(entry, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            from ._frozen import not_json_at
            from ._log import get_logger

            where, problem = not_json_at(entry) or ("#", "it is not JSON")
            get_logger("tools").warning(
                "tool %r left out of the tool list: its entry is not JSON at %s: %s",
                entry.get("name"),
                where,
                problem,
            )
            continue
        kept.append(entry)
    return kept


# --------------------------------------------------------------------------- advanced tool use
#
# Programmatic calls, input examples, eager input streaming, cache control, grammar (custom)
# tools and hosted MCP. Kept apart from the base shapes above: each adapter adds what these
# return to its entry.

ANTHROPIC_CODE_EXECUTION = (
    "code_execution_20250825",
    "code_execution_20260120",
    "code_execution_20260521",
)
"""The Anthropic code-execution tool versions a tool's ``allowed_callers`` may name."""


def check_code_execution(version: str) -> str:
    """``version`` when it is an Anthropic code-execution tool version a tool's
    ``allowed_callers`` may name; a clear error otherwise."""
    if version not in ANTHROPIC_CODE_EXECUTION:
        raise InvalidValueError(
            f"code_execution must be one of {', '.join(ANTHROPIC_CODE_EXECUTION)}, got {version!r}"
        )
    return version


CODE_EXECUTION_NAME = "code_execution"
"""The name Anthropic's code-execution tool always has (``BetaCodeExecutionTool…Param``)."""


def programmatic_entry(
    provider: str, *, code_execution: str = "code_execution_20260120"
) -> dict[str, Any]:
    """The provider's own tool entry that lets the model call tools from code: Anthropic's
    ``{"type": "code_execution_…", "name": "code_execution"}`` (the version a tool's
    ``allowed_callers`` names), OpenAI Responses' ``{"type": "programmatic_tool_calling"}``.
    The toolkit adapters add it with ``programmatic=True``.

    Example::

        >>> programmatic_entry("openai")
        {'type': 'programmatic_tool_calling'}
        >>> programmatic_entry("anthropic", code_execution="code_execution_20250825")
        {'type': 'code_execution_20250825', 'name': 'code_execution'}
    """
    if provider == "openai":
        return {"type": "programmatic_tool_calling"}
    if provider == "anthropic":
        return {"type": check_code_execution(code_execution), "name": CODE_EXECUTION_NAME}
    raise InvalidValueError(f"provider must be 'openai' or 'anthropic', got {provider!r}")


def _openai_callers(tool: Tool) -> dict[str, Any]:
    """``allowed_callers`` of an OpenAI Responses tool, when the tool is not direct-only."""
    if tool.allowed_callers == ("direct",):
        return {}
    return {"allowed_callers": list(tool.allowed_callers)}


def _openai_custom_tool(tool: Tool, api: str) -> dict[str, Any]:
    """A grammar tool as an OpenAI custom tool (free-text input in that grammar)."""
    grammar = tool.grammar
    assert grammar is not None
    if api == "responses":
        out = {
            "type": "custom",
            "name": tool.name,
            "description": tool.description,
            "format": grammar.to_format(),
        }
        out.update(_openai_callers(tool))
        return out
    return {
        "type": "custom",
        "custom": {
            "name": tool.name,
            "description": tool.description,
            "format": {
                "type": "grammar",
                "grammar": {"definition": grammar.definition, "syntax": grammar.syntax},
            },
        },
    }


def _anthropic_tool_use(tool: Tool, code_execution: str) -> dict[str, Any]:
    """The advanced-tool-use fields of an Anthropic tool the tool sets."""
    check_code_execution(code_execution)
    out: dict[str, Any] = {}
    if tool.allowed_callers != ("direct",):
        out["allowed_callers"] = [
            code_execution if caller == "programmatic" else caller
            for caller in tool.allowed_callers
        ]
    if tool.input_examples:
        out["input_examples"] = [thaw(example) for example in tool.input_examples]
    if tool.eager_input_streaming is not None:
        out["eager_input_streaming"] = tool.eager_input_streaming
    return out


def _cache_control(value: Mapping[str, Any]) -> dict[str, Any]:
    """A checked Anthropic cache-control breakpoint: ``{"type": "ephemeral", "ttl"?}``."""
    if not isinstance(value, Mapping) or value.get("type") != "ephemeral":
        raise InvalidValueError(
            'cache_control must be {"type": "ephemeral"} (optionally with "ttl": "5m" or '
            f'"1h"), got {value!r}'
        )
    unknown = set(value) - {"type", "ttl"}
    if unknown or value.get("ttl", "5m") not in ("5m", "1h"):
        raise InvalidValueError(
            f'cache_control takes "type" and "ttl" ("5m" or "1h") only, got {dict(value)!r}'
        )
    return dict(value)


_APPROVALS = ("always", "never")


@sealed
@dataclass(frozen=True, slots=True)
class HostedMcp:
    """An MCP server the provider calls itself (hosted MCP): OpenAI's ``{"type": "mcp"}``
    tool, Anthropic's MCP connector (an ``mcp_servers`` entry and its ``mcp_toolset``).

    Attributes:
        label: the server's name (OpenAI's ``server_label``, Anthropic's ``name``).
        url: its Streamable HTTP URL.
        require_approval: ``"always"`` (the default: each call is an
            ``mcp_approval_request``, which ``Host.run_turn`` turns into a question) or
            ``"never"`` (OpenAI only; Anthropic's connector asks no approval).
        allowed_tools: the server's tools the model may use, or None for all.
        headers: HTTP headers for the server (OpenAI).
        authorization: an OAuth access token for the server.
        description: what the server is for (OpenAI's ``server_description``).

    Example::

        >>> docs = HostedMcp("docs", "https://mcp.example.com/mcp", allowed_tools=("search",))
        >>> docs.to_openai()["server_label"], docs.to_anthropic_toolset()["mcp_server_name"]
        ('docs', 'docs')
    """

    label: str
    url: str
    require_approval: str = "always"
    allowed_tools: tuple[str, ...] | None = None
    headers: Mapping[str, str] | None = field(default=None, repr=False)  # secrets
    authorization: str | None = field(default=None, repr=False)
    description: str | None = None

    def __post_init__(self) -> None:
        for key in ("label", "url"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value:
                raise InvalidValueError(f"HostedMcp.{key} must be a non-empty string")
        if not self.url.startswith(("https://", "http://")):
            raise InvalidValueError(
                f"HostedMcp.url must be an http(s) URL the provider can reach, got {self.url!r}"
            )
        if self.require_approval not in _APPROVALS:
            raise InvalidValueError(
                f"HostedMcp.require_approval must be 'always' or 'never', "
                f"got {self.require_approval!r}"
            )
        if self.allowed_tools is not None:
            tools = self.allowed_tools
            if isinstance(tools, str) or not all(isinstance(each, str) for each in tools):
                raise InvalidTypeError("HostedMcp.allowed_tools must be a sequence of names")
            object.__setattr__(self, "allowed_tools", tuple(tools))

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI Responses ``{"type": "mcp", "server_label", "server_url",
        "require_approval", ...}`` tool."""
        out: dict[str, Any] = {
            "type": "mcp",
            "server_label": self.label,
            "server_url": self.url,
            "require_approval": self.require_approval,
        }
        if self.allowed_tools is not None:
            out["allowed_tools"] = list(self.allowed_tools)
        if self.headers:
            out["headers"] = dict(self.headers)
        if self.authorization is not None:
            out["authorization"] = self.authorization
        if self.description is not None:
            out["server_description"] = self.description
        return out

    def to_anthropic_server(self) -> dict[str, Any]:
        """The Anthropic ``mcp_servers`` entry: ``{"type": "url", "name", "url",
        "authorization_token"?}``."""
        out: dict[str, Any] = {"type": "url", "name": self.label, "url": self.url}
        if self.authorization is not None:
            out["authorization_token"] = self.authorization
        return out

    def to_anthropic_toolset(self) -> dict[str, Any]:
        """The Anthropic ``{"type": "mcp_toolset", "mcp_server_name"}`` tool; with
        ``allowed_tools``, every other tool of the server disabled."""
        out: dict[str, Any] = {"type": "mcp_toolset", "mcp_server_name": self.label}
        if self.allowed_tools is not None:
            out["default_config"] = {"enabled": False}
            out["configs"] = {name: {"enabled": True} for name in self.allowed_tools}
        return out


# --------------------------------------------------------------------------- strict modes


class _Strict:
    """What one provider's strict mode accepts."""

    def __init__(
        self,
        provider: str,
        dropped: frozenset[str],
        formats: frozenset[str],
        *,
        all_required: bool,
        allows_recursion: bool,
    ) -> None:
        self.provider = provider
        self.dropped = dropped
        self.formats = formats
        # OpenAI: every property listed in required, an optional one made nullable.
        self.all_required = all_required
        self.allows_recursion = allows_recursion


_OPENAI_STRICT = _Strict(
    "OpenAI",
    frozenset({"default", "uniqueItems", "contentEncoding", "contentMediaType"}),
    frozenset(
        {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
    ),
    all_required=True,
    allows_recursion=True,
)
_ANTHROPIC_STRICT = _Strict(
    "Anthropic",
    frozenset(
        {
            "uniqueItems",
            "contentEncoding",
            "contentMediaType",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "maxItems",
            "minProperties",
            "maxProperties",
            "not",
        }
    ),
    frozenset(
        {
            "date-time",
            "time",
            "date",
            "duration",
            "email",
            "hostname",
            "uri",
            "ipv4",
            "ipv6",
            "uuid",
        }
    ),
    all_required=False,
    allows_recursion=False,
)


def _strict_schema(tool: str, schema: dict[str, Any], rules: _Strict) -> dict[str, Any]:
    def walk(node: Any, path: str) -> Any:
        if not isinstance(node, dict):
            return node
        out = {key: value for key, value in node.items() if key not in rules.dropped}
        if "format" in out and out["format"] not in rules.formats:
            del out["format"]  # a hint strict mode does not know (path, decimal)
        if not rules.all_required and out.get("minItems", 0) > 1:
            del out["minItems"]  # Anthropic: only 0 or 1
        if "oneOf" in out and "anyOf" not in out:
            out["anyOf"] = out.pop("oneOf")
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
                    tool,
                    path,
                    "is an object with free-form keys (additionalProperties)",
                    rules.provider,
                )
            if "properties" not in out and extra is not False:
                raise StrictSchemaError(
                    tool, path, "is an object that takes any keys", rules.provider
                )
            properties = out.get("properties", {})
            required = set(out.get("required", ()))
            new_properties = {}
            for key, sub in properties.items():
                sub = walk(sub, f"{path}.{key}" if path else key)
                if rules.all_required and key not in required and not _nullable(sub):
                    sub = {"anyOf": [sub, {"type": "null"}]}
                new_properties[key] = sub
            out["properties"] = new_properties
            if rules.all_required:
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
    if not rules.allows_recursion:
        cycle = _recursive_definition(result)
        if cycle is not None:
            raise StrictSchemaError(
                tool, cycle, "refers to itself (a recursive schema)", rules.provider
            )
    return result


def _recursive_definition(schema: Mapping[str, Any]) -> str | None:
    """The pointer of a definition that reaches itself through ``$ref``, or None."""
    defs: dict[tuple[str, ...], Any] = {}
    for key in ("$defs", "definitions"):
        for name, each in (schema.get(key) or {}).items():
            defs[(key, name)] = each

    def refs(node: Any) -> list[tuple[str, ...]]:
        """The same-document references under ``node``, as pointer tokens."""
        if isinstance(node, dict):
            ref = node.get("$ref")
            pointer = fragment_pointer(ref) if isinstance(ref, str) else None
            parts = tokens(pointer) if pointer is not None else None
            found = [tuple(parts)] if parts is not None else []
            for value in node.values():
                found.extend(refs(value))
            return found
        if isinstance(node, list):
            return [ref for item in node for ref in refs(item)]
        return []

    edges = {place: [ref for ref in refs(body) if ref in defs] for place, body in defs.items()}
    for start in edges:
        seen: set[tuple[str, ...]] = set()
        stack: list[tuple[str, ...]] = list(edges[start])
        while stack:
            place = stack.pop()
            if place == start:
                key, name = start
                return f"#/{key}/{escape(name)}"
            if place not in seen:
                seen.add(place)
                stack.extend(edges.get(place, ()))
    if () in refs(schema):
        return "#"
    return None


def _nullable(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(
        isinstance(branch, Mapping) and _nullable(branch) for branch in schema.get("anyOf", ())
    )


# --------------------------------------------------------------------------- Gemini

_NOTE = " note"  # not a schema key: carries an enum's words to the description

_GEMINI_KEYS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "default",
    "items",
    "minimum",
    "maximum",
}


class _GeminiMapper:
    """Maps a JSON Schema onto the OpenAPI 3.0 subset Gemini's ``parameters`` accept."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.active: list[int] = []  # the definitions being inlined, outermost first

    def map(self, node: Mapping[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = resolve_reference(self.root, ref)
            if not isinstance(target, Mapping) or id(target) in self.active:
                # Gemini has no references: a recursive one becomes a plain object.
                out: dict[str, Any] = {"type": "object"}
            else:
                self.active.append(id(target))
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
                branches = [
                    {**{k: v for k, v in node.items() if k != "type"}, "type": each}
                    for each in kinds
                ]
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
        notes = [out.pop(_NOTE)] if _NOTE in out else []
        text_format = out.get("format")
        if out.get("type") == "string" and text_format not in (None, "enum", "date-time"):
            # Gemini knows only these string formats: the others are said in words.
            notes.append(f"format: {out.pop('format')}")
        if node.get("contentEncoding") == "base64":
            notes.append("base64")
        if notes:
            note = "; ".join(notes)
            description = out.get("description")
            out["description"] = f"{description} ({note})" if description else note
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
        elif plain and all(
            isinstance(value, (int, float)) and not isinstance(value, bool) for value in plain
        ):
            # Gemini's enums hold strings only, and a model shown ["1", "2"] answers "1",
            # which an integer parameter refuses. So a numeric enum is advertised as the
            # type the tool accepts, bounded, with its values said in words.
            integral = all(isinstance(value, int) for value in plain)
            out["type"] = "integer" if integral else "number"
            out["minimum"] = min(plain)
            out["maximum"] = max(plain)
            out[_NOTE] = "one of " + ", ".join(json.dumps(value) for value in plain)
        return out
