"""Where a schema's references lead: ``$id`` bases, ``$anchor`` and ``$dynamicAnchor``
names, JSON-pointer fragments and the documents of a caller's ``registry`` (nothing is ever
fetched); the dynamic scope of ``$dynamicRef``; and which subschemas one validation may reach
twice for the same value (those are memoized).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._pointer import MISSING, escape, fragment_pointer, step, tokens
from ..errors import SchemaError

# ($dynamicAnchor name, resource URI) pairs in force, outermost first
Scope = tuple[tuple[str, str], ...]

# keywords whose value is one schema, an array of schemas, or an object of schemas
_ONE_SCHEMA = frozenset(
    {
        "additionalProperties", "additionalItems", "contains", "propertyNames", "if", "then",
        "else", "not", "unevaluatedItems", "unevaluatedProperties", "items",
    }
)  # fmt: skip
_SCHEMA_ARRAYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_OBJECTS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
ANCHOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def join_uri(base: str, reference: str) -> str:
    """``reference`` resolved against ``base`` (RFC 3986), for the URIs schemas use."""
    if reference.startswith("#"):
        return base.partition("#")[0] + reference
    if _SCHEME.match(reference) or not base:
        return reference
    from urllib.parse import urljoin

    return urljoin(base, reference)


def _subschemas(schema: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(pointer suffix, subschema) for every schema directly inside ``schema``."""
    found: list[tuple[str, Any]] = []
    for keyword, value in schema.items():
        if keyword in _ONE_SCHEMA and isinstance(value, (Mapping, bool)):
            found.append((f"/{keyword}", value))
        elif keyword in _SCHEMA_ARRAYS and isinstance(value, (list, tuple)):
            found.extend((f"/{keyword}/{index}", sub) for index, sub in enumerate(value))
        elif keyword in _SCHEMA_OBJECTS and isinstance(value, Mapping):
            found.extend(
                (f"/{keyword}/{escape(str(name))}", sub)
                for name, sub in value.items()
                if isinstance(sub, (Mapping, bool))
            )
    return found


class Resources:
    """Where every ``$id``, ``$anchor`` and ``$dynamicAnchor`` of a schema (and of the
    documents a caller registered) points, and the base URI of each schema object.

    Nothing is fetched: a URI neither defined in the schema nor registered is a
    :class:`SchemaError` at build time.
    """

    def __init__(self, root: Any, registry: Mapping[str, Any] | None) -> None:
        self.registry: dict[str, Any] = {}
        for uri, document in (registry or {}).items():
            if not isinstance(uri, str):
                raise SchemaError("#", None, f"registry keys must be URI strings, got {uri!r}")
            self.registry[uri.partition("#")[0]] = document
        self.documents: dict[str, Any] = {}
        self.anchors: dict[str, Any] = {}
        self.dynamic_anchors: dict[str, dict[str, Any]] = {}
        self.base: dict[int, str] = {}
        self.keep: list[Any] = []
        # a $dynamicRef in the schema (or a registry, which may hold one): only then do
        # nodes depend on the dynamic scope
        self.dynamic = bool(self.registry)
        self.unread = dict(self.registry)  # registered documents not indexed yet
        self.documents[""] = root
        self.index(root, "")

    def document(self, resource: str) -> Any:
        """The schema resource at ``resource``, indexing registered documents on first use."""
        document = self.documents.get(resource)
        if document is None and self.unread:
            if resource in self.unread:
                self.read(resource)
            else:
                for uri in list(self.unread):  # perhaps an $id inside a registered document
                    self.read(uri)
            document = self.documents.get(resource)
        return document

    def read(self, uri: str) -> None:
        document = self.unread.pop(uri)
        self.documents.setdefault(uri, document)
        self.index(document, uri)

    def index(self, schema: Any, base: str) -> None:
        stack = [(schema, base)]
        while stack:
            current, base = stack.pop()
            if not isinstance(current, Mapping) or id(current) in self.base:
                continue
            ident = current.get("$id")
            if isinstance(ident, str) and not ident.partition("#")[2]:
                base = join_uri(base, ident).partition("#")[0]
                self.documents.setdefault(base, current)
            self.base[id(current)] = base
            self.keep.append(current)
            for keyword in ("$anchor", "$dynamicAnchor"):
                name = current.get(keyword)
                if isinstance(name, str):
                    self.anchors.setdefault(f"{base}#{name}", current)
                    if keyword == "$dynamicAnchor":
                        self.dynamic_anchors.setdefault(base, {}).setdefault(name, current)
            if "$dynamicRef" in current:
                self.dynamic = True
            stack.extend((sub, base) for _, sub in reversed(_subschemas(current)))

    def base_of(self, schema: Mapping[str, Any]) -> str:
        return self.base.get(id(schema), "")

    def resolve(self, uri: str, pointer: str, keyword: str, reference: str) -> tuple[Any, str]:
        """The schema ``uri`` names, and a pointer-like name of it for messages."""
        resource, _, fragment = uri.partition("#")
        document = self.document(resource)
        if document is None:
            outside = (
                f"{reference!r}"
                if resource == reference.partition("#")[0]
                else (f"{reference!r} ({resource})")
            )
            raise SchemaError(
                pointer,
                keyword,
                f"{keyword} {outside} points outside this schema and remote references are"
                f" never fetched; pass the document as Validator(..., registry={{{resource!r}:"
                " schema})",
            )
        where = f"{resource}#" if resource else "#"
        json_pointer = fragment_pointer(f"#{fragment}")
        if json_pointer is None:
            from urllib.parse import unquote

            name = unquote(fragment)
            target: Any = self.anchors.get(f"{resource}#{name}")
            if target is None:
                raise SchemaError(
                    pointer,
                    keyword,
                    f"{keyword} {reference!r} does not resolve: no $anchor or $dynamicAnchor"
                    f" named {name!r} in {resource or 'this schema'}",
                )
            return target, f"{where}{name}"
        parts = tokens(json_pointer)
        if parts is None:
            raise SchemaError(
                pointer,
                keyword,
                f"{keyword} {reference!r} is not a JSON pointer: write '~' as '~0' and '/'"
                " inside a name as '~1'",
            )
        target = document
        for raw, segment in zip(json_pointer.split("/")[1:], parts, strict=True):
            found = step(target, segment)
            if found is MISSING:
                raise SchemaError(
                    pointer,
                    keyword,
                    f"{keyword} {reference!r} does not resolve: nothing at {segment!r} under"
                    f" {where}",
                )
            target = found
            where = f"{where}/{raw}"
        if isinstance(target, Mapping) and id(target) not in self.base:
            # a schema in a spot the index does not walk (inside an unknown keyword)
            self.index(target, resource)
        return target, where

    def dynamic_target(self, uri: str, target: Any, scope: Scope) -> Any:
        """Where a ``$dynamicRef`` lands: the outermost resource in the dynamic scope with a
        ``$dynamicAnchor`` of that name, if the static target is itself such an anchor."""
        resource, _, fragment = uri.partition("#")
        if not fragment or fragment.startswith("/"):
            return target
        if self.dynamic_anchors.get(resource, {}).get(fragment) is not target:
            return target  # a plain $anchor: behaves as $ref
        for name, outer in scope:
            if name == fragment:
                return self.dynamic_anchors[outer][name]
        return target

    def enter(self, schema: Mapping[str, Any], scope: Scope) -> Scope:
        """The dynamic scope once evaluation is inside ``schema``'s resource."""
        resource = self.base.get(id(schema), "")
        names = self.dynamic_anchors.get(resource)
        if not names:
            return scope
        known = {name for name, _ in scope}
        added = tuple((name, resource) for name in sorted(names) if name not in known)
        return scope + added if added else scope


# keywords that apply a subschema to the same value (besides $ref and $dynamicRef)
_INPLACE_ONE = ("not", "if", "then", "else")
_INPLACE_ARRAYS = ("allOf", "anyOf", "oneOf")
_INPLACE_OBJECTS = ("dependentSchemas", "dependencies")


def shared_schemas(root: Any, resources: Resources) -> set[int]:
    """The ids of the schema objects a validation could reach twice for the same value.

    Applicators on the same value (``$ref``, ``allOf``/``anyOf``/``oneOf``, ``not``,
    ``if``/``then``/``else``, ``dependentSchemas``) form a graph without cycles (a cycle is
    refused). Where two paths from one schema meet again (``anyOf: [{$ref: A}, {$ref: A}]``),
    ``A`` would be checked once per path, and twenty such levels make a million checks. So
    such a meeting point is memoized (:func:`memoize`): then no schema is reached along
    two unmemoized paths, and one validation evaluates each (schema, value) pair a bounded
    number of times. Leaves (no subschema, no reference) are cheap and left out.
    """
    edges: dict[int, list[int]] = {}
    leaves: set[int] = set()
    order: list[int] = []
    stack: list[Any] = [root]
    while stack:
        schema = stack.pop()
        if not isinstance(schema, Mapping) or id(schema) in edges:
            continue
        order.append(id(schema))
        targets: list[Any] = []
        for keyword in _INPLACE_ONE:
            targets.append(schema.get(keyword))
        for keyword in _INPLACE_ARRAYS:
            value = schema.get(keyword)
            if isinstance(value, (list, tuple)):
                targets.extend(value)
        for keyword in _INPLACE_OBJECTS:
            value = schema.get(keyword)
            if isinstance(value, Mapping):
                targets.extend(value.values())
        for keyword in ("$ref", "$dynamicRef"):
            reference = schema.get(keyword)
            if isinstance(reference, str):
                targets.extend(_reference_targets(schema, keyword, reference, resources))
        children = [sub for _, sub in _subschemas(schema)]
        if not children and not any(isinstance(t, Mapping) for t in targets):
            leaves.add(id(schema))
        edges[id(schema)] = [id(t) for t in targets if isinstance(t, Mapping)]
        stack.extend(t for t in targets if isinstance(t, Mapping))
        stack.extend(children)
    shared: set[int] = set()
    for source in order:
        out = edges[source]
        if len(out) < 2:
            continue  # two paths from here part at a schema with two applicators or more
        reached: set[int] = set()
        walk = list(out)
        while walk:
            target = walk.pop()
            if target in reached:
                shared.add(target)  # a second path
                continue
            reached.add(target)
            if target not in shared:
                walk.extend(edges.get(target, ()))
    return shared - leaves


def _reference_targets(
    schema: Mapping[str, Any], keyword: str, reference: str, resources: Resources
) -> list[Any]:
    """Where a ``$ref`` (or any ``$dynamicRef`` with that anchor name) may land; nothing
    for a reference that does not resolve (compiling says why)."""
    uri = join_uri(resources.base_of(schema), reference)
    try:
        target, _ = resources.resolve(uri, "#", keyword, reference)
    except SchemaError:
        return []
    found = [target]
    if keyword == "$dynamicRef":
        name = uri.partition("#")[2]
        found.extend(names[name] for names in resources.dynamic_anchors.values() if name in names)
    return found
