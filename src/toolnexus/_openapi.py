"""OpenAPI 3.0 and 3.1 documents as tools: :func:`load_openapi` (behind
``Toolkit.from_openapi``).

Owns reading a document (a dict, a file, a URL; JSON, or YAML with PyYAML), resolving its
``$ref`` (in the document and in files beside it; a cycle stays a ``$ref`` into ``$defs``),
turning each operation into one :class:`Tool` (its input schema from the path, query, header
and cookie parameters and the request body; its output schema from the 2xx JSON response)
and each call of that tool into a request (parameter styles, the server, the security
schemes' credentials). The request itself is ``_http_tools.send``'s.

Schemas become JSON Schema 2020-12 here, once: the 3.0-isms (``nullable``, boolean
``exclusiveMinimum``/``exclusiveMaximum``, ``example``) are rewritten; the keywords only
OpenAPI reads (``discriminator``, ``xml``, ``externalDocs``) are dropped; ``x-`` extensions
stay (the validator ignores them); any other keyword the validator does not know
(``validation.ANNOTATION_KEYWORDS``/``SUPPORTED_KEYWORDS`` say which) is dropped with a
note. What goes wrong with one operation is a problem naming it; the others still load.
"""

from __future__ import annotations

import base64
import dataclasses
import fnmatch
import hashlib
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from ._context import ToolContext
from ._http_tools import (
    DEFAULT_MAX_REDIRECTS,
    DEFAULT_MAX_RESPONSE_BYTES,
    Limits,
    as_text,
    check_limits,
    encode_body,
    expand_env,
    is_json_media,
    response_result,
    send,
    unset_variables,
)
from ._log import LazyLogger
from ._pointer import MISSING, resolve
from ._result import ToolResult
from ._schema import sanitize_name
from ._tools import Tool
from .errors import InvalidTypeError, InvalidValueError, OpenApiError, SchemaError
from .validation import ANNOTATION_KEYWORDS, SUPPORTED_KEYWORDS

__all__ = ["OpenApiImport", "load_openapi"]

_log = LazyLogger("openapi")

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
AUTO_DEFER_ABOVE = 30  # operations; above it a catalog is deferred unless told otherwise
MAX_NAME = 64  # what the strictest provider (OpenAI) takes for a tool name
_KNOWN = SUPPORTED_KEYWORDS | ANNOTATION_KEYWORDS
# What only OpenAPI reads: dropped without a note.
_OPENAPI_ONLY = frozenset({"discriminator", "xml", "externalDocs", "example", "nullable"})
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
)
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_FORM = "application/x-www-form-urlencoded"
_MULTIPART = "multipart/form-data"
_MAX_SCHEMA_RETRIES = 20
_TEMPLATE = re.compile(r"\{([^{}]+)\}")  # a path's or a server URL's {name}


@runtime_checkable
class TokenSource(Protocol):
    """What gets a token for an ``oauth2`` scheme's ``clientCredentials`` flow, given as a
    credential: ``toolnexus.mcp.OpenApiOAuth`` (the MCP client's OAuth machinery) is one.
    ``oauth_header(token_url, scopes, server)`` returns the ``Authorization`` value."""

    def oauth_header(self, token_url: str, scopes: Sequence[str], server: str) -> str: ...


Credential = str | Callable[[], str] | TokenSource


@dataclass(frozen=True, slots=True)
class OpenApiImport:
    """What :func:`load_openapi` made of a document.

    Attributes:
        tools: one :class:`Tool` per operation that loaded, in document order.
        problems: one line per operation that did not load (each names it and says how
            to fix it); empty when every operation loaded.
        notes: what was changed on the way (a keyword dropped, a name shortened), each
            naming the operation.
        defer: whether the tools should be deferred (found by tool search rather than
            listed): the ``defer`` given, or ``True`` above 30 operations.
        namespaces: each tool's namespace by tool name (``None``: none).
        title: the document's ``info.title``.
        descriptions: each namespace's description by namespace name: the ``description``
            of the tag in the document's ``tags`` list, else one naming the tag and the API.

    Example::

        imported = load_openapi(document, base_url="https://api.example.test")
        print(len(imported.tools), imported.problems)
    """

    tools: tuple[Tool, ...]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    defer: bool = False
    namespaces: Mapping[str, str | None] = field(default_factory=dict)
    title: str = ""
    descriptions: Mapping[str, str] = field(default_factory=dict)

    def namespace_defer(self, given: bool | None = None) -> bool | None:
        """The ``defer`` of this import's namespaces: ``given`` when it is True or False
        (what the caller asked), else True when the import is deferred (above 30
        operations), else None (follow the toolkit).

        Example::

            toolkit.namespace("pets", "Pets", defer=imported.namespace_defer())
        """
        if given is not None:
            return given
        return True if self.defer else None


# --------------------------------------------------------------------------- reading


def _read_text(location: str) -> tuple[str, str]:
    """The text at a path or URL, and its absolute location."""
    if location.startswith(("http://", "https://")):
        import urllib.request

        try:
            with urllib.request.urlopen(location, timeout=30) as response:
                return response.read(50 * 1024 * 1024).decode("utf-8"), location
        except (OSError, ValueError) as exc:
            raise OpenApiError(location, f"cannot fetch it: {exc}") from None
    path = os.path.abspath(location)
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), path
    except OSError as exc:
        raise OpenApiError(location, f"cannot read it: {exc.strerror or exc}") from None


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as json_error:
        if where.lower().endswith((".json",)):
            raise OpenApiError(where, f"it is not JSON: {json_error}") from None
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        from ._extras import install_hint

        raise OpenApiError(
            where, f"it is not JSON; to read YAML, {install_hint('yaml', 'PyYAML>=6')}"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise OpenApiError(where, f"it is neither JSON nor YAML: {exc}") from None


class _Documents:
    """The documents a ``$ref`` may reach, by absolute location, read on first need."""

    def __init__(self, root: Any, where: str, in_memory: bool = False) -> None:
        self.root_where = where
        self.in_memory = in_memory  # a dict: ``where`` is no file, only a base for $refs
        self.loaded: dict[str, Any] = {where: root}

    def name(self, where: str) -> str:
        """How a problem names the document at ``where``."""
        if where == self.root_where and self.in_memory:
            return "the document"
        return os.path.basename(where) or where

    def get(self, where: str) -> Any:
        if where not in self.loaded:
            text, _ = _read_text(where)
            self.loaded[where] = _parse(text, where)
        return self.loaded[where]

    def follow(self, ref: str, base: str) -> tuple[Any, str, str]:
        """What ``ref`` names from the document at ``base``: the value, the document it
        is in, and a stable key for it. Raises :class:`_Unresolved`."""
        target, _, fragment = ref.partition("#")
        where = base
        if target:
            if base.startswith(("http://", "https://")) or target.startswith(
                ("http://", "https://")
            ):
                where = urllib.parse.urljoin(base, target)
                if _origin_of(where) != _origin_of(base):
                    # a document names what it reads: never another host (nor a local
                    # file from a fetched document)
                    raise _Unresolved(ref, "a $ref to another origin is not followed")
            else:
                where = os.path.normpath(os.path.join(os.path.dirname(base), target))
        try:
            document = self.get(where)
        except OpenApiError as exc:
            raise _Unresolved(ref, f"{where}: {exc.problem}") from None
        pointer = urllib.parse.unquote(fragment)
        value = resolve(document, pointer) if pointer else document
        if value is MISSING:
            raise _Unresolved(ref, f"nothing at {pointer!r} in {self.name(where)}")
        return value, where, f"{where}#{pointer}"


def _origin_of(location: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(location)
    return (parts.scheme, parts.netloc.lower())


class _Unresolved(Exception):
    def __init__(self, ref: str, problem: str) -> None:
        super().__init__(f"$ref {ref!r} cannot be resolved: {problem}")


def _deref(docs: _Documents, node: Any, base: str) -> tuple[Any, str]:
    """A non-schema object (a parameter, a request body, a response) with its ``$ref``
    followed, and the document it is in."""
    seen: set[str] = set()
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        node, base, key = docs.follow(node["$ref"], base)
        if key in seen:
            raise _Unresolved(key, "it refers to itself")
        seen.add(key)
    return node, base


# --------------------------------------------------------------------------- schemas


class _Schemas:
    """Converts OpenAPI Schema Objects to JSON Schema 2020-12 for one tool at a time:
    references are inlined, except a reference back into itself, which becomes
    ``{"$ref": "#/$defs/Name"}`` with the schema under ``$defs``."""

    def __init__(self, docs: _Documents, version: str) -> None:
        self.docs = docs
        self.is_30 = version.startswith("3.0")
        self.cache: dict[tuple[str, str], Any] = {}  # (key, context) -> converted, no cycles

    def start(self, operation: str, context: str) -> None:
        self.operation = operation
        self.context = context  # "request" or "response": readOnly/writeOnly drop there
        self.defs: dict[str, Any] = {}
        self.def_names: dict[str, str] = {}  # reference key -> $defs name
        self.stack: list[str] = []
        self.cyclic: set[str] = set()
        self.cycle_refs = 0  # $refs into $defs written so far
        self.notes: list[str] = []

    def root(self, schema: Any, base: str) -> dict[str, Any]:
        converted = self.convert(schema, base, "#")
        out: dict[str, Any] = dict(converted) if isinstance(converted, Mapping) else {}
        if converted is False:
            out = {"not": {}}
        return out

    def finish(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with the ``$defs`` the cycles met on the way need."""
        if self.defs:
            out = {**out, "$defs": {**out.get("$defs", {}), **self.defs}}
        return out

    def _def_name(self, key: str) -> str:
        if key not in self.def_names:
            base = sanitize_name(key.rpartition("/")[2] or "schema") or "schema"
            name, number = base, 2
            while name in self.def_names.values():
                name, number = f"{base}_{number}", number + 1
            self.def_names[key] = name
        return self.def_names[key]

    def convert(self, schema: Any, base: str, where: str) -> Any:
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, Mapping):
            self.notes.append(
                f"{self.operation}: the schema at {where} is not an object; any value is allowed"
            )
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str):
            try:
                target, target_base, key = self.docs.follow(ref, base)
            except _Unresolved as exc:
                at = "" if where == "#" else f" (at {where} in its schema)"
                raise _Problem(f"{exc}{at}") from None
            if key in self.stack:
                self.cyclic.add(key)
                self.cycle_refs += 1
                return {"$ref": f"#/$defs/{self._def_name(key)}"}
            cached = self.cache.get((key, self.context))
            if cached is not None:
                return cached
            self.stack.append(key)
            cycles_before = self.cycle_refs
            try:
                converted = self.convert(target, target_base, where)
            finally:
                self.stack.pop()
            if key in self.cyclic:
                self.defs[self._def_name(key)] = converted
            elif self.cycle_refs == cycles_before:  # no $ref into $defs inside: shareable
                self.cache[(key, self.context)] = converted
            siblings = {k: v for k, v in schema.items() if k not in ("$ref", "nullable")}
            if siblings:  # 3.1 allows keywords beside $ref: both apply
                converted = {"allOf": [converted, self.convert(siblings, base, where)]}
            if schema.get("nullable") is True:  # 3.0 documents write it beside a $ref too
                converted = _nullable(dict(converted) if isinstance(converted, Mapping) else {})
            return converted
        return self._keywords(schema, base, where)

    def _keywords(self, schema: Mapping[str, Any], base: str, where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {
                    name: self.convert(sub, base, f"{where}/{key}/{name}")
                    for name, sub in value.items()
                }
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [
                    self.convert(sub, base, f"{where}/{key}/{index}")
                    for index, sub in enumerate(value)
                ]
            elif key == "items":
                if isinstance(value, list):
                    out[key] = [
                        self.convert(sub, base, f"{where}/items/{index}")
                        for index, sub in enumerate(value)
                    ]
                else:
                    out[key] = self.convert(value, base, f"{where}/items")
            elif key in _SCHEMA_ONE:
                out[key] = self.convert(value, base, f"{where}/{key}")
            elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                if value and bound in schema:
                    out[key] = schema[bound]
            elif key in ("minimum", "maximum"):
                exclusive = schema.get("exclusiveM" + key[1:])
                if exclusive is not True:
                    out[key] = value
            elif key == "example":
                if "examples" not in schema:
                    out["examples"] = [value]
            elif key == "examples" and not isinstance(value, list):
                continue  # 3.0's examples is a map of Example Objects, not a list
            elif key.startswith("x-") or key in _KNOWN:
                out[key] = value
            elif key not in _OPENAPI_ONLY:
                self.notes.append(
                    f"{self.operation}: keyword {key!r} at {where} is not JSON Schema; dropped"
                )
        if schema.get("nullable") is True:
            out = _nullable(out)
        if self.context == "request" and isinstance(out.get("properties"), Mapping):
            out = _without(out, "readOnly")
        elif self.context == "response" and isinstance(out.get("properties"), Mapping):
            out = _without(out, "writeOnly")
        return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """3.0's ``nullable: true`` in 2020-12: ``null`` joins the type (and the enum)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
    elif isinstance(kind, list):
        schema = {**schema, "type": [*kind, "null"]} if "null" not in kind else schema
    elif any(key in schema for key in ("allOf", "anyOf", "oneOf", "$ref", "enum", "const")):
        return {"anyOf": [schema, {"type": "null"}]}
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema = {**schema, "enum": [*schema["enum"], None]}
    return schema


def _without(schema: dict[str, Any], flag: str) -> dict[str, Any]:
    """An object schema without the properties marked ``flag`` (``readOnly`` ones are
    not sent; ``writeOnly`` ones not received)."""
    properties = schema["properties"]
    gone = {
        name
        for name, sub in properties.items()
        if isinstance(sub, Mapping) and sub.get(flag) is True
    }
    if not gone:
        return schema
    out = {**schema, "properties": {k: v for k, v in properties.items() if k not in gone}}
    if isinstance(schema.get("required"), list):
        out["required"] = [name for name in schema["required"] if name not in gone]
    return out


class _Problem(Exception):
    """What stops one operation from loading (its message names the fix)."""


# --------------------------------------------------------------------------- operations


@dataclass(frozen=True, slots=True)
class _Param:
    name: str  # in the request
    prop: str  # in the tool's arguments
    location: str  # path, query, header, cookie
    style: str
    explode: bool
    deep: bool = False


@dataclass(frozen=True, slots=True)
class _Plan:
    """How one tool's arguments become one request."""

    # What to do about an answer outside the output schema, for the Tool's refusal to
    # say (read as ``fn.output_schema_remedy``) instead of its generic advice.
    output_schema_remedy: ClassVar[str] = (
        "the API answered outside its document's response schema: fix the document, or "
        'load it with output_schemas=False (mcp.json: "outputSchemas": false) to take '
        "its answers as text"
    )

    who: str
    method: str
    server: str
    path: str
    params: tuple[_Param, ...]
    body_prop: str | None
    body_media: str | None
    security: tuple[tuple[tuple[str, Mapping[str, Any], tuple[str, ...]], ...], ...]
    credentials: Mapping[str, Credential]
    headers: Mapping[str, str]
    limits: Limits
    structured: bool

    def __call__(self, args: Mapping[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        path = self.path
        query: list[tuple[str, str]] = []
        try:
            headers = {k: _expanded(v, f"header {k!r}") for k, v in self.headers.items()}
        except _Problem as exc:
            return ToolResult.error(f"{self.who}: {exc}")
        cookies: list[tuple[str, str]] = []
        for param in self.params:
            if param.prop not in args:
                continue
            value = args[param.prop]
            if param.location == "path":
                text = urllib.parse.quote(_joined(value, param.explode), safe="")
                path = path.replace("{" + param.name + "}", text)
            elif param.location == "query":
                query.extend(_query_pairs(param, value))
            elif param.location == "header":
                headers[param.name] = _joined(value, param.explode)
            else:
                # percent-encoded: a ';' from a model must not start a cookie of its own
                cookies.append((param.name, urllib.parse.quote(_joined(value, False), safe="")))
        try:
            self._authorize(headers, query, cookies)
        except _Problem as exc:
            return ToolResult.error(f"{self.who}: {exc}")
        if cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in cookies)
        url = self.server.rstrip("/") + path
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
        data: bytes | None = None
        if self.body_prop is not None and self.body_prop in args:
            value = args[self.body_prop]
            media = self.body_media or "application/json"
            bare = _bare(media)
            if is_json_media(bare):
                data = json.dumps(value, ensure_ascii=False).encode()
            elif bare == _FORM and isinstance(value, Mapping):
                data, _ = encode_body("form", value)
            elif bare == _MULTIPART and isinstance(value, Mapping):
                data, media = _multipart(value)
            else:
                data = as_text(value).encode()
            headers["Content-Type"] = media
        headers.setdefault("Accept", "application/json, */*;q=0.5")
        answer = send(self.method, url, headers, data, ctx, self.limits, self.who)
        if isinstance(answer, ToolResult):
            return answer
        return response_result(answer, self.who, structured=self.structured)

    def _authorize(
        self, headers: dict[str, str], query: list[tuple[str, str]], cookies: list[tuple[str, str]]
    ) -> None:
        """Apply the first security requirement whose every scheme has a credential."""
        if not self.security:
            return
        for requirement in self.security:
            if requirement and all(name in self.credentials for name, _, _ in requirement):
                for name, scheme, scopes in requirement:
                    credential = self.credentials[name]
                    if isinstance(credential, TokenSource):
                        headers["Authorization"] = self._token(name, scheme, scopes, credential)
                        continue
                    _apply(scheme, _secret(name, credential), headers, query, cookies)
                return
        if any(not requirement for requirement in self.security):
            return  # anonymous access is one of the alternatives
        names = sorted({name for requirement in self.security for name, _, _ in requirement})
        _log.info("%s: no credentials for %s; sending without", self.who, ", ".join(names))

    def _token(
        self, name: str, scheme: Mapping[str, Any], scopes: tuple[str, ...], source: TokenSource
    ) -> str:
        """The ``Authorization`` value from an OAuth token source for an ``oauth2``
        scheme's ``clientCredentials`` flow (its ``tokenUrl``, relative to the server)."""
        flows = scheme.get("flows") if scheme.get("type") == "oauth2" else None
        flow = flows.get("clientCredentials") if isinstance(flows, Mapping) else None
        token_url = flow.get("tokenUrl") if isinstance(flow, Mapping) else None
        if not isinstance(token_url, str) or not token_url:
            raise _Problem(
                f"security scheme {name!r} has no oauth2 clientCredentials flow with a "
                "tokenUrl, which an OAuth token source needs; give a callable that returns "
                "a token for it instead"
            )
        token_url = urllib.parse.urljoin(self.server.rstrip("/") + "/", token_url)
        try:
            value = source.oauth_header(token_url, scopes, self.server)
        except Exception as exc:  # the token source's: report it, never raise
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise _Problem(f"no OAuth token for security scheme {name!r}: {problem}") from None
        if not isinstance(value, str):
            raise _Problem(f"the OAuth token source for {name!r} must return a str")
        return value


def _scopes(value: Any) -> tuple[str, ...]:
    """A security requirement's scopes for one scheme."""
    return tuple(each for each in value if isinstance(each, str)) if isinstance(value, list) else ()


def _secret(scheme: str, credential: str | Callable[[], str]) -> str:
    """The secret for ``scheme`` now: a callable's answer, or the string with ``${ENV}``
    expanded. What goes wrong names the scheme, never a value."""
    if callable(credential):
        try:
            value = credential()
        except Exception as exc:  # the callable is the application's: report, don't raise
            raise _Problem(
                f"the credentials callable for {scheme!r} raised {type(exc).__name__}"
            ) from None
    else:
        value = _expanded(credential, f"the credential for security scheme {scheme!r}")
    if not isinstance(value, str):
        raise _Problem(
            f"the credentials callable for {scheme!r} must return a str, got {type(value).__name__}"
        )
    return value


def _expanded(value: str, used_in: str) -> str:
    """``value`` with ``${NAME}`` expanded; an unset variable is a :class:`_Problem`
    naming it and where it is used (a secret must not go out empty)."""
    missing = unset_variables(value)
    if missing:
        names = ", ".join(f"${{{name}}}" for name in missing)
        verb = "is" if len(missing) == 1 else "are"
        raise _Problem(
            f"{used_in} uses {names}, which {verb} not set in the environment; set it "
            "before calling (nothing was sent)"
        )
    return expand_env(value)


def _apply(
    scheme: Mapping[str, Any],
    secret: str,
    headers: dict[str, str],
    query: list[tuple[str, str]],
    cookies: list[tuple[str, str]],
) -> None:
    kind = scheme.get("type")
    if kind == "apiKey":
        name, where = str(scheme.get("name", "")), scheme.get("in")
        if where == "header":
            headers[name] = secret
        elif where == "query":
            query.append((name, secret))
        else:
            cookies.append((name, secret))
    elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
        # "user:password", sent as RFC 7617 says (base64 is an encoding, not a cipher)
        headers["Authorization"] = "Basic " + base64.b64encode(secret.encode()).decode()
    else:  # http bearer, oauth2, openIdConnect: a bearer token
        headers["Authorization"] = f"Bearer {secret}"


def _joined(value: Any, explode: bool) -> str:
    """A path, header or cookie value in the ``simple`` style."""
    if isinstance(value, list):
        return ",".join(as_text(item) for item in value)
    if isinstance(value, Mapping):
        sep = "=" if explode else ","
        return ",".join(f"{k}{sep}{as_text(v)}" for k, v in value.items())
    return as_text(value)


def _query_pairs(param: _Param, value: Any) -> list[tuple[str, str]]:
    """A query parameter's pairs in its style (``form``, ``deepObject``, delimited)."""
    if param.deep and isinstance(value, Mapping):
        return [(f"{param.name}[{k}]", as_text(v)) for k, v in value.items()]
    if isinstance(value, list):
        if param.explode and param.style == "form":
            return [(param.name, as_text(item)) for item in value]
        sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(param.style, ",")
        return [(param.name, sep.join(as_text(item) for item in value))]
    if isinstance(value, Mapping):
        if param.explode:
            return [(k, as_text(v)) for k, v in value.items()]
        return [(param.name, ",".join(f"{k},{as_text(v)}" for k, v in value.items()))]
    return [(param.name, as_text(value))]


def _operation_name(method: str, path: str, operation: Mapping[str, Any]) -> str:
    """The tool's name: the operationId, or ``<method>_<path>`` without braces."""
    given = operation.get("operationId")
    raw = given.strip() if isinstance(given, str) and given.strip() else f"{method}_{path}"
    name = re.sub(r"_+", "_", sanitize_name(raw.replace("{", "").replace("}", ""))).strip("_")
    return name or method


def _shortened(name: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


# --------------------------------------------------------------------------- the import


def load_openapi(
    document: Mapping[str, Any] | str | os.PathLike[str],
    *,
    base_url: str | None = None,
    server_variables: Mapping[str, str] | None = None,
    tags: Iterable[str] | None = None,
    paths: Iterable[str] | None = None,
    methods: Iterable[str] | None = None,
    credentials: Mapping[str, Credential] | None = None,
    headers: Mapping[str, str] | None = None,
    prefix: str = "",
    timeout_ms: int | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    defer: bool | None = None,
    namespace: str | None = "tag",
    output_schemas: bool = True,
) -> OpenApiImport:
    """Read an OpenAPI 3.0 or 3.1 document and make one HTTP tool per operation.

    ``document`` is the parsed document, a file path or an http(s) URL (JSON; YAML when
    PyYAML is installed: the ``yaml`` extra). Relative ``$ref``s resolve against the
    file or URL (against the current folder for a dict); a ``$ref`` to another origin is
    not followed. Operations are kept when they carry one of ``tags``, their path
    matches one of ``paths`` (``fnmatch`` patterns such as ``"/repos/*"``) and their
    method is one of ``methods`` (each filter only when given; a list, or one string as
    one item). Each tool sends its request to ``base_url``, else the operation's (or the
    document's) first server with its variables (``server_variables`` override their
    defaults, and fill a ``{name}`` the server does not define; one left unfilled is a
    problem). ``credentials`` gives a secret per security scheme name: a string
    (``"${GITHUB_TOKEN}"`` expands from the environment at call time) or a callable
    returning one; basic auth takes ``"user:password"``. ``headers`` are sent with every
    request (``${ENV}`` expanded). A ``${NAME}`` that is unset when a call is made is
    that call's error result naming it (nothing is sent). A secret never enters a schema
    or a log line.

    Each tool's output schema is its 2xx JSON response's (an object's); an answer that
    does not match it is an error result, as MCP requires. ``output_schemas=False`` leaves
    them out, for an API whose answers stray from its document: JSON answers are then
    text.

    ``defer`` (``None``: above 30 operations) and ``namespace`` (``"tag"``: each
    operation's first tag; a string: that one; ``None``: none) are recorded on the
    result for tool search.

    Raises :class:`~toolnexus.errors.OpenApiError` when the document cannot be read, is
    not OpenAPI 3.x, names no server and no ``base_url`` is given, or ``credentials``
    names a security scheme the document does not declare;
    :class:`~toolnexus.errors.InvalidValueError` for a method in ``methods`` OpenAPI
    has no operations for, :class:`~toolnexus.errors.InvalidTypeError` for a filter that
    is not a string or a list of strings. An operation that cannot be made a tool is a
    line in ``problems``; the others still load.

    Example::

        imported = load_openapi("openapi.json", base_url="http://127.0.0.1:4010")
        for tool in imported.tools:
            print(tool.name)
    """
    where = "the document"
    in_memory = isinstance(document, Mapping)
    if isinstance(document, Mapping):
        root: Any = document
        # no file: a base for relative $refs (the current folder), never named in a problem
        location = os.path.join(os.getcwd(), "openapi.json")
    elif isinstance(document, (str, os.PathLike)):
        text, location = _read_text(os.fspath(document))
        where = os.fspath(document)
        root = _parse(text, location)
    else:
        raise InvalidTypeError(
            f"document must be a dict, a path or a URL, got {type(document).__name__}"
        )
    version = _check_document(root, where)
    limits = check_limits(Limits(timeout_ms, max_response_bytes, max_redirects), "from_openapi")
    docs = _Documents(root, location, in_memory)
    schemas = _Schemas(docs, version)
    wanted_tags = _filter(tags, "tags")
    wanted_paths = _filter(paths, "paths")
    wanted_methods = _filter(methods, "methods")
    if wanted_methods is not None:
        wanted_methods = [m.lower() for m in wanted_methods]
        unknown = [m for m in wanted_methods if m not in METHODS]
        if unknown:
            raise InvalidValueError(
                f"load_openapi: methods= names {', '.join(repr(m.upper()) for m in unknown)}, "
                f"which OpenAPI has no operations for; use any of "
                f"{', '.join(m.upper() for m in METHODS)}"
            )
    schemes, scheme_problem = _security_schemes(docs, root, location)
    _check_credentials(schemes, scheme_problem, credentials or {}, where)
    default_security = root.get("security")
    tools: list[Tool] = []
    problems: list[str] = []
    notes: list[str] = []
    namespaces: dict[str, str | None] = {}
    owners: dict[str, str] = {}
    if scheme_problem:
        problems.append(scheme_problem)
    for path, item in (root.get("paths") or {}).items():
        if wanted_paths is not None and not any(fnmatch.fnmatchcase(path, p) for p in wanted_paths):
            continue
        try:
            item, item_base = _deref(docs, item, location)
        except _Unresolved as exc:
            problems.append(f"path {path!r}: {exc}")
            continue
        if not isinstance(item, Mapping):
            problems.append(f"path {path!r}: its Path Item is not an object")
            continue
        for method, operation in item.items():  # in the document's order
            if method not in METHODS:
                continue
            label = f"{method.upper()} {path}"
            if wanted_methods is not None and method not in wanted_methods:
                continue
            if not isinstance(operation, Mapping):
                problems.append(f"operation {label}: it is not an object")
                continue
            op_tags = [t for t in operation.get("tags") or () if isinstance(t, str)]
            if wanted_tags is not None and not set(wanted_tags) & set(op_tags):
                continue
            name = _shortened(prefix + _operation_name(method, path, operation))
            if name in owners:
                problems.append(
                    f"operation {label}: its tool name {name!r} (operationId "
                    f"{operation.get('operationId')!r}) is already taken by {owners[name]}; "
                    "operationIds must be unique: rename one of them (the later one was skipped)"
                )
                continue
            who = f"operation {name!r} ({label})"
            schemas.start(who, "request")
            try:
                tool = _make_tool(
                    docs,
                    schemas,
                    name,
                    method,
                    path,
                    item,
                    item_base,
                    operation,
                    root,
                    location,
                    base_url,
                    server_variables or {},
                    schemes,
                    default_security,
                    credentials or {},
                    headers or {},
                    limits,
                    notes,
                    output_schemas,
                )
            except (_Problem, _Unresolved) as exc:
                problems.append(f"{who}: {exc}")
                continue
            except (AttributeError, TypeError, KeyError) as exc:
                # a field of the wrong shape somewhere in this operation (a list where an
                # object belongs, ...): this operation is left out, not the document
                problems.append(
                    f"{who}: a part of it does not have the shape OpenAPI gives it "
                    f"({type(exc).__name__}: {exc}); check it against the specification"
                )
                continue
            owners[name] = label
            tools.append(tool)
            if name != prefix + _operation_name(method, path, operation):
                notes.append(f"{who}: name shortened to {MAX_NAME} characters")
            if namespace == "tag":
                namespaces[name] = _namespace_name(op_tags[0]) if op_tags else None
            else:
                namespaces[name] = namespace
    for problem in problems:
        _log.warning("OpenAPI import: %s", problem)
    for note in notes:
        _log.debug("OpenAPI import: %s", note)
    info = root.get("info")
    title = info.get("title", "") if isinstance(info, Mapping) else ""
    title = title if isinstance(title, str) else ""
    return OpenApiImport(
        tuple(tools),
        tuple(problems),
        tuple(notes),
        len(tools) > AUTO_DEFER_ABOVE if defer is None else bool(defer),
        namespaces,
        title,
        _descriptions(root, namespaces, namespace, title),
    )


def _filter(value: Iterable[str] | str | None, argument: str) -> list[str] | None:
    """A filter argument as a list: ``None`` (no filter), one string as one item, or an
    iterable of strings; anything else is :class:`InvalidTypeError` naming the argument."""
    if value is None:
        return None
    items: list[Any] = [value] if isinstance(value, str) else []
    if not items:
        try:
            items = list(value)
        except TypeError:
            items = [value]  # not iterable: refused below
    if not all(isinstance(item, str) for item in items):
        raise InvalidTypeError(
            f"load_openapi: {argument}= must be a string or a list of strings, got {value!r}"
        )
    return items


def _check_credentials(
    schemes: Mapping[str, Any],
    problem: str | None,
    credentials: Mapping[str, Any],
    where: str,
) -> None:
    """Raise :class:`OpenApiError` for a credential whose name is no usable security
    scheme of the document (``schemes``, as :func:`_security_schemes` read them; its
    ``problem``, when one could not be read): it would never be sent, and the API's 401
    would not say why."""
    names = [name for name in schemes if isinstance(name, str)]
    unknown = [name for name in credentials if name not in names]
    if not unknown:
        return
    given = ", ".join(repr(name) for name in unknown)
    if problem is not None:
        raise OpenApiError(where, f"credentials= names {given}, but {problem}")
    if names:
        fix = (
            "its security schemes (components.securitySchemes) are "
            + ", ".join(repr(name) for name in names)
            + ": name the credential after one of them"
        )
    else:
        fix = (
            "it declares no security schemes (components.securitySchemes): send the secret "
            "with headers= instead (e.g. {'Authorization': 'Bearer ${TOKEN}'})"
        )
    raise OpenApiError(
        where, f"credentials= names {given}, which the document does not declare; {fix}"
    )


def _namespace_name(tag: str) -> str | None:
    """A tag as a namespace name (1 to 64 of ``[a-zA-Z0-9_-]``), or None for a tag with
    nothing of them."""
    name = sanitize_name(tag).strip("_")[:MAX_NAME]
    return name or None


def _descriptions(
    root: Mapping[str, Any],
    namespaces: Mapping[str, str | None],
    namespace: str | None,
    title: str,
) -> dict[str, str]:
    """Each namespace's description: its tag's ``description`` in the document's
    ``tags`` list, else one naming the tag and the API."""
    api = f" of {title}" if title else ""
    given: dict[str, str] = {}
    for entry in root.get("tags") or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            about = entry.get("description")
            name = _namespace_name(entry["name"]) if namespace == "tag" else None
            if name is not None and isinstance(about, str) and about.strip():
                given.setdefault(name, about.strip())
    out: dict[str, str] = {}
    for name in namespaces.values():
        if name is not None and name not in out:
            if namespace == "tag":
                out[name] = given.get(name) or f"The operations tagged {name!r}{api}."
            else:
                out[name] = f"The operations{api}." if api else "The API's operations."
    return out


def _check_document(root: Any, where: str) -> str:
    if not isinstance(root, Mapping):
        raise OpenApiError(where, f"it is a JSON {type(root).__name__}, not an OpenAPI object")
    version = root.get("openapi")
    if version is None:
        if "swagger" in root:
            raise OpenApiError(
                where,
                f"it is Swagger {root['swagger']} (OpenAPI 2); only OpenAPI 3.0 and 3.1 are "
                "read: convert it first (e.g. with swagger2openapi)",
            )
        raise OpenApiError(
            where,
            "it is not an OpenAPI document: it has no 'openapi' field (an MCP configuration "
            'has \'mcpServers\'; an OpenAPI document starts with "openapi": "3.1.0")',
        )
    if not isinstance(version, str) or not re.match(r"3\.[01](\.|$)", version):
        raise OpenApiError(
            where, f"OpenAPI version {version!r} is not supported; give a 3.0.x or 3.1.x document"
        )
    if not isinstance(root.get("paths", {}), Mapping):
        raise OpenApiError(where, "its 'paths' is not an object")
    return version


def _security_schemes(
    docs: _Documents, root: Mapping[str, Any], location: str
) -> tuple[dict[str, Mapping[str, Any]], str | None]:
    components = root.get("components") or {}
    found: dict[str, Mapping[str, Any]] = {}
    for name, scheme in (components.get("securitySchemes") or {}).items():
        try:
            scheme, _ = _deref(docs, scheme, location)
        except _Unresolved as exc:
            return found, f"security scheme {name!r}: {exc}"
        if isinstance(scheme, Mapping):
            found[name] = scheme
    return found, None


def _server_url(
    servers: Any, variables: Mapping[str, str], location: str, label: str
) -> str | None:
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], Mapping):
        return None
    server = servers[0]
    url = str(server.get("url", ""))
    for name, spec in (server.get("variables") or {}).items():
        value = variables.get(name)
        if value is None:
            value = spec.get("default") if isinstance(spec, Mapping) else None
        if value is None:
            raise _Problem(f"server variable {name!r} has no default; pass server_variables=")
        url = url.replace("{" + name + "}", str(value))
    for name in dict.fromkeys(_TEMPLATE.findall(url)):
        if name not in variables:
            raise _Problem(
                f"its server URL {server.get('url')!r} has {{{name}}}, which the server's "
                f"'variables' do not define; define it there with a default, or pass "
                f"server_variables={{{name!r}: ...}} or base_url="
            )
        url = url.replace("{" + name + "}", str(variables[name]))
    if not url.startswith(("http://", "https://")):
        if location.startswith(("http://", "https://")):
            url = urllib.parse.urljoin(location, url)
        else:
            raise _Problem(
                f"its server URL {url!r} is relative and the document was not read from a "
                "URL; pass base_url="
            )
    return url


def _make_tool(
    docs: _Documents,
    schemas: _Schemas,
    name: str,
    method: str,
    path: str,
    item: Mapping[str, Any],
    item_base: str,
    operation: Mapping[str, Any],
    root: Mapping[str, Any],
    location: str,
    base_url: str | None,
    variables: Mapping[str, str],
    schemes: Mapping[str, Mapping[str, Any]],
    default_security: Any,
    credentials: Mapping[str, Credential],
    headers: Mapping[str, str],
    limits: Limits,
    notes: list[str],
    output_schemas: bool,
) -> Tool:
    label = f"{method.upper()} {path}"
    server = base_url
    if server is None:
        for servers in (operation.get("servers"), item.get("servers"), root.get("servers")):
            server = _server_url(servers, variables, location, label)
            if server is not None:
                break
    if server is None:
        raise OpenApiError(
            "the document", "it names no server; pass base_url= (e.g. 'https://api.example.com')"
        )
    # Parameters: the path item's, then the operation's (which win on name and place).
    merged: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
    for holder, holder_base in ((item, item_base), (operation, item_base)):
        for raw in holder.get("parameters") or ():
            param, param_base = _deref(docs, raw, holder_base)
            if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
                raise _Problem("a parameter is not an object with a name")
            merged[(param["name"], str(param.get("in")))] = (param, param_base)
    in_template = list(dict.fromkeys(_TEMPLATE.findall(path)))
    declared = [pname for pname, where_in in merged if where_in == "path"]
    stray = [pname for pname in declared if pname not in in_template]
    if stray:
        raise _Problem(
            f"path parameter(s) {', '.join(map(repr, stray))} do not appear in the path "
            f"{path!r}; make the path's {{names}} and its path parameters' names match"
        )
    for pname in in_template:
        if pname not in declared:
            # OpenAPI requires a path parameter for each {name}; the value must still be
            # given, so it is taken as a required string rather than sent as "{name}"
            merged[(pname, "path")] = (
                {"name": pname, "in": "path", "schema": {"type": "string"}},
                item_base,
            )
            notes.append(
                f"operation {name!r} ({label}): the path has {{{pname}}} but no path "
                f"parameter {pname!r}; it is taken as a required string (declare it in the "
                "document to give it a type and a description)"
            )
    properties: dict[str, Any] = {}
    required: list[str] = []
    plan_params: list[_Param] = []
    for (pname, location_in), (param, param_base) in merged.items():
        if location_in not in ("path", "query", "header", "cookie"):
            raise _Problem(
                f"parameter {pname!r} is in {location_in!r}; expected path, query, header or cookie"
            )
        if location_in == "header" and pname.lower() in _IGNORED_HEADERS:
            continue  # OpenAPI: these are described by other fields
        prop = pname if pname not in properties else f"{location_in}_{pname}"
        raw_schema = param.get("schema")
        if raw_schema is None and isinstance(param.get("content"), Mapping):
            for media in param["content"].values():
                if isinstance(media, Mapping) and "schema" in media:
                    raw_schema = media["schema"]
                    break
        converted = schemas.root(raw_schema if raw_schema is not None else {}, param_base)
        description = param.get("description")
        if isinstance(description, str) and "description" not in converted:
            converted["description"] = description
        if param.get("deprecated") is True:
            converted["deprecated"] = True
        properties[prop] = converted
        if param.get("required") is True or location_in == "path":
            required.append(prop)
        style = str(
            param.get("style") or ("form" if location_in in ("query", "cookie") else "simple")
        )
        explode = param.get("explode")
        plan_params.append(
            _Param(
                pname,
                prop,
                location_in,
                style,
                bool(explode) if explode is not None else style == "form",
                style == "deepObject",
            )
        )
    body_prop: str | None = None
    body_media: str | None = None
    raw_body = operation.get("requestBody")
    if raw_body is not None:
        body, body_base = _deref(docs, raw_body, item_base)
        content = body.get("content") if isinstance(body, Mapping) else None
        if isinstance(content, Mapping) and content:
            body_media = _pick_media(content)
            media = content[body_media]
            body_prop = "body" if "body" not in properties else "requestBody"
            raw_schema = media.get("schema", {}) if isinstance(media, Mapping) else {}
            converted = schemas.root(raw_schema, body_base)
            if not is_json_media(_bare(body_media)) and _bare(body_media) not in (
                _FORM,
                _MULTIPART,
            ):
                converted = {
                    "type": "string",
                    **{k: v for k, v in converted.items() if k == "description"},
                }
            description = body.get("description")
            if isinstance(description, str) and "description" not in converted:
                converted["description"] = description
            properties[body_prop] = converted
            if body.get("required") is True:
                required.append(body_prop)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False
    input_schema = schemas.finish(input_schema)
    output_schema = (
        _output_schema(docs, schemas, operation, item_base, label, notes)
        if output_schemas
        else None
    )
    notes.extend(schemas.notes)
    security_spec = operation.get("security", default_security)
    security: list[tuple[tuple[str, Mapping[str, Any], tuple[str, ...]], ...]] = []
    for requirement in security_spec or ():
        if not isinstance(requirement, Mapping):
            continue
        unknown = [s for s in requirement if s not in schemes]
        if unknown:
            # a requirement that cannot be met is no alternative (not anonymous access)
            notes.append(
                f"operation {name!r} ({label}): security scheme(s) {', '.join(unknown)} not "
                "in components.securitySchemes; that requirement is left out"
            )
            continue
        security.append(tuple((s, schemes[s], _scopes(requirement[s])) for s in requirement))
    summary = operation.get("summary")
    details = operation.get("description")
    text = "\n\n".join(t.strip() for t in (summary, details) if isinstance(t, str) and t.strip())
    plan = _Plan(
        who=f"operation {name!r} ({label})",
        method=method.upper(),
        server=server,
        path=path,
        params=tuple(plan_params),
        body_prop=body_prop,
        body_media=body_media,
        security=tuple(security),
        credentials=dict(credentials),
        headers=dict(headers),
        limits=limits,
        structured=output_schema is not None,
    )
    annotations = {
        "readOnlyHint": method in ("get", "head", "options"),
        "destructiveHint": method == "delete",
        "idempotentHint": method in ("get", "head", "options", "put", "delete"),
        "openWorldHint": True,
    }
    return _tool_with_checked_schema(
        name, text or label, input_schema, output_schema, plan, annotations, label, notes
    )


def _bare(media: str) -> str:
    """A media type without its parameters, in lower case."""
    return media.split(";")[0].strip().lower()


def _pick_media(content: Mapping[str, Any]) -> str:
    """The request body's media type: JSON first, then a form, then the first listed."""
    for wanted in (is_json_media, _FORM.__eq__, _MULTIPART.__eq__):
        for media in content:
            if wanted(_bare(media)):
                return media
    return next(iter(content))


def _multipart(values: Mapping[str, Any]) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body of text fields (RFC 7578), and its content type."""
    import secrets

    boundary = f"toolnexus-{secrets.token_hex(12)}"
    lines: list[bytes] = []
    for name, value in values.items():
        quoted = str(name).replace("\\", "\\\\").replace('"', '\\"')
        lines += [
            f"--{boundary}".encode(),
            f'Content-Disposition: form-data; name="{quoted}"'.encode(),
            b"",
            as_text(value).encode(),
        ]
    lines += [f"--{boundary}--".encode(), b""]
    return b"\r\n".join(lines), f"multipart/form-data; boundary={boundary}"


def _output_schema(
    docs: _Documents,
    schemas: _Schemas,
    operation: Mapping[str, Any],
    base: str,
    label: str,
    notes: list[str],
) -> dict[str, Any] | None:
    responses = operation.get("responses")
    if not isinstance(responses, Mapping):
        return None
    for code, raw in sorted(responses.items(), key=lambda pair: str(pair[0])):
        if not str(code).startswith("2"):
            continue
        response, response_base = _deref(docs, raw, base)
        content = response.get("content") if isinstance(response, Mapping) else None
        if not isinstance(content, Mapping):
            return None
        for media, spec in content.items():
            if is_json_media(media.split(";")[0].strip().lower()) and isinstance(spec, Mapping):
                if "schema" not in spec:
                    return None
                saved = (schemas.defs, schemas.def_names, schemas.stack, schemas.cyclic)
                schemas.context = "response"
                schemas.defs, schemas.def_names, schemas.stack, schemas.cyclic = {}, {}, [], set()
                try:
                    out = schemas.finish(schemas.root(spec["schema"], response_base))
                finally:
                    schemas.context = "request"
                    schemas.defs, schemas.def_names, schemas.stack, schemas.cyclic = saved
                # MCP's outputSchema is an object's; any other answer stays text
                return out if out.get("type") == "object" else None
        return None
    return None


def _tool_with_checked_schema(
    name: str,
    description: str,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any] | None,
    plan: _Plan,
    annotations: Mapping[str, Any],
    label: str,
    notes: list[str],
) -> Tool:
    """The Tool; a keyword the validator refuses (a pattern it cannot run, a bad value)
    is dropped with a note and the schema tried again; an output schema it refuses is
    left out."""
    who = f"operation {name!r} ({label})"
    for _ in range(_MAX_SCHEMA_RETRIES):
        try:
            return Tool(
                name=name,
                description=description,
                input_schema=input_schema,
                fn=plan,
                source="http",
                output_schema=output_schema,
                annotations=annotations,
            )
        except SchemaError as exc:
            if output_schema is not None and _refused_in_output(exc, input_schema):
                notes.append(f"{who}: output schema left out: {exc.problem}")
                output_schema = None
                plan = dataclasses.replace(plan, structured=False)
                continue
            dropped = _drop_at(input_schema, exc)
            if dropped is None:
                raise _Problem(
                    f"its input schema is refused at {exc.path}: {exc.problem}; fix the "
                    "parameter's schema in the document"
                ) from None
            input_schema = dropped
            notes.append(f"{who}: keyword {exc.keyword!r} at {exc.path} dropped: {exc.problem}")
    raise _Problem("its input schema is refused too often; fix its parameters' schemas")


def _refused_in_output(exc: SchemaError, input_schema: Mapping[str, Any]) -> bool:
    from .validation import Validator

    try:
        Validator(input_schema)
    except SchemaError:
        return False
    return True


def _drop_at(schema: dict[str, Any], exc: SchemaError) -> dict[str, Any] | None:
    """A copy of ``schema`` without the keyword ``exc`` names, or None."""
    if exc.keyword is None:
        return None
    copy = json.loads(json.dumps(schema))
    target = resolve(copy, exc.path[1:]) if exc.path.startswith("#") else MISSING
    if not isinstance(target, dict) or exc.keyword not in target:
        return None
    del target[exc.keyword]
    return copy  # type: ignore[no-any-return]
