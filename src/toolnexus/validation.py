"""JSON Schema validation of tool arguments, on the stdlib alone.

This module owns JSON Schema 2020-12 (the core and applicator/validation vocabularies) as
tool schemas use it: a :class:`Validator` compiles a schema once into small closures,
refuses at once (:class:`SchemaError`) a keyword or value it cannot honour, and then
answers two questions fast — is this value valid, and if not, what exactly is wrong with
it, in words short enough for a model to correct its next call (``steps: expected
integer, got string "3"``).

Every keyword of those vocabularies is checked with its official semantics, including the
conditional ones (``if``/``then``/``else``), ``patternProperties``, ``propertyNames``,
``dependentRequired``/``dependentSchemas``, ``contains`` with ``minContains``/
``maxContains``, ``unevaluatedProperties``/``unevaluatedItems`` (annotations collected
across ``allOf``/``anyOf``/``oneOf``/``if``/``$ref``/...), and references by JSON pointer,
``$id``, ``$anchor`` and ``$dynamicRef``/``$dynamicAnchor``. Nothing is ever fetched: a
reference outside the document resolves only through the ``registry`` a caller passes.
Draft-07 spellings still in use (``definitions``, array-form ``items`` with
``additionalItems``, ``dependencies``) keep working. ``pattern`` follows ECMA-262
(:mod:`toolnexus._ecma`), never stalling on a hostile input. ``format`` is an annotation
unless ``format_assertion=True``. Annotations (``title``, ``description``, ``default``,
...) and ``x-`` extension keys are accepted and ignored; any other unknown keyword is
refused, so a typo such as ``minimun`` cannot silently weaken a schema.

JSON semantics, not Python's: ``True`` is never a number, ``3.0`` is an integer, ``1`` and
``1.0`` are equal for ``enum``/``const``/``uniqueItems`` while ``True`` and ``1`` are not.
Objects are mappings, arrays are lists (or tuples); string lengths count code points.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

from ._pointer import MISSING, escape, fragment_pointer, step, tokens
from .errors import InvalidValueError, OperationCancelledError, SchemaError

if TYPE_CHECKING:
    from fractions import Fraction

    from ._cancellation import CancellationToken
    from ._ecma import SearchParts
    from ._json_formats import FormatParts

__all__ = [
    "ANNOTATION_KEYWORDS",
    "SUPPORTED_KEYWORDS",
    "SchemaError",
    "Validator",
    "check_schema",
    "validate",
]

#: Keywords the validator checks.
SUPPORTED_KEYWORDS: frozenset[str] = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "prefixItems",
        "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "multipleOf", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
        "uniqueItems", "minProperties", "maxProperties", "anyOf", "oneOf", "allOf", "not",
        "$ref", "$defs", "definitions", "if", "then", "else", "patternProperties",
        "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "contains",
        "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems",
        "additionalItems", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor",
    }
)  # fmt: skip

#: Keywords that describe a value without constraining it; accepted and ignored.
ANNOTATION_KEYWORDS: frozenset[str] = frozenset(
    {
        "title", "description", "default", "examples", "$schema", "$comment",
        "$vocabulary", "deprecated", "readOnly", "writeOnly", "contentMediaType",
        "contentEncoding", "contentSchema",
    }
)  # fmt: skip

_KNOWN_KEYWORDS = SUPPORTED_KEYWORDS | ANNOTATION_KEYWORDS
# the supported keywords that constrain a value by themselves (format is an annotation unless
# asked; $defs a container; then/else/minContains/maxContains act through if and contains)
_CHECKING_KEYWORDS = SUPPORTED_KEYWORDS - {
    "format",
    "$defs",
    "definitions",
    "then",
    "else",
    "minContains",
    "maxContains",
    "$id",
    "$anchor",
    "$dynamicAnchor",
}
_NUMBER_KEYWORDS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_STRING_KEYWORDS = frozenset({"minLength", "maxLength", "pattern"})
_FUSED_STRING = frozenset({"type", "minLength", "maxLength", "pattern"})
_FUSED_NUMBER = frozenset({"type", *_NUMBER_KEYWORDS})
_COUNT_KEYWORDS = frozenset(
    {"minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties"}
)
_OBJECT_KEYWORDS = ("properties", "patternProperties", "required", "additionalProperties")
# keywords a bare {"type": ...} node may carry that still need a look when compiled
_QUIET_KEYWORDS = frozenset(
    {
        "$defs",
        "definitions",
        "format",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "then",
        "else",
        "minContains",
        "maxContains",
    }
)

DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_PROBLEMS = 20
# A schema nested deeper than this is refused when compiled: compiling and checking it
# recurse once per level, and no real tool schema comes close.
_MAX_SCHEMA_LEVELS = 100
# Walking stops after this many problems, so a huge wrong input costs bounded time.
_PROBLEM_CEILING = 1000

_INFINITY = float("inf")
_TYPE_NAMES = ("null", "boolean", "object", "array", "number", "string", "integer")
_SINGLE_TYPES = {name: (name,) for name in _TYPE_NAMES}

_Ok = Callable[[Any, int], bool]
# which patterns of a patternProperties match a name (see _ecma.compile_pattern_set)
_Matching = Callable[..., list[int]]
_Path = tuple[str | int, ...]
_Explain = Callable[[Any, _Path, "_Problems", int], None]


class _Stop(Exception):
    """Internal: enough problems collected; stop walking."""


class _TooDeep(Exception):
    """Internal: a value nests deeper than the limit while being compared."""


# --------------------------------------------------------------------------- describing


def _json_short(value: Any, limit: int = 40) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _number_text(value: Any) -> str:
    if isinstance(value, int):
        # str() of a huge int is slow (and refused past 4300 digits on 3.11+)
        if value.bit_length() > 200:
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
        return str(value)
    return repr(value)


def _describe(value: Any) -> str:
    """What was found: the JSON type and, for scalars, a short preview."""
    if value is None:
        return "null"
    if value is True or value is False:
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"integer {_number_text(value)}"
    if isinstance(value, float):
        if value - value != 0.0:
            return f"{value!r} (not a JSON number: JSON has no Infinity or NaN)"
        return f"number {_number_text(value)}"
    if isinstance(value, str):
        if len(value) <= 40:
            return f"string {json.dumps(value, ensure_ascii=False)}"
        preview = json.dumps(value[:37], ensure_ascii=False)[:-1]
        return f'string {preview}..." ({len(value)} characters)'
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return f"{type(value).__name__} (not a JSON value)"


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word[:-1]}ies" if word.endswith("y") else f"{count} {word}s"


class _Others(str):
    """In a list of alternatives: ``count`` more, not spelled out (a long enum's rest)."""

    hidden: int


def _alternatives(options: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c`` — shortened past a dozen."""
    hidden = sum(option.hidden for option in options if isinstance(option, _Others))
    unique = list(dict.fromkeys(option for option in options if not isinstance(option, _Others)))
    if len(unique) + hidden > 12:
        return ", ".join(unique[:10]) + f", ... ({len(unique) + hidden} in all)"
    if len(unique) <= 1:
        return "".join(unique)
    return ", ".join(unique[:-1]) + " or " + unique[-1]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


def format_path(path: _Path) -> str:
    """Package-internal: a value's path as error texts write it (``items[2].name``); tools.py
    uses it for argument errors, so both say a place the same way."""
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif _IDENTIFIER.match(segment):
            parts.append(f".{segment}" if parts else segment)
        else:
            parts.append(f"[{json.dumps(segment, ensure_ascii=False)}]")
    return "".join(parts)


class _Problems:
    """Collects problem strings in order, without duplicates, up to a ceiling."""

    __slots__ = ("ceiling", "items", "seen", "truncated")

    def __init__(self, ceiling: int = _PROBLEM_CEILING) -> None:
        self.items: list[str] = []
        self.seen: set[str] = set()
        self.ceiling = ceiling
        self.truncated = False

    def add(self, path: _Path, message: str) -> None:
        self.add_text(f"{format_path(path)}: {message}" if path else message)

    def add_text(self, text: str) -> None:
        if text in self.seen:
            return
        if len(self.items) >= self.ceiling:
            self.truncated = True
            raise _Stop
        self.seen.add(text)
        self.items.append(text)


# --------------------------------------------------------------------------- one validation

# Containers longer than this are walked in a loop that listens for the token.
_LONG = 4096


class _Run:
    """The state of one validation, for a validator that needs one: the answers of its
    shared subschemas (see :func:`_shared_schemas`), and the token it stops on.

    A shared subschema is evaluated once per (value, depth) in a validation; later visits
    read the answer. Each entry keeps the value alive, so its ``id`` cannot be reused by
    another object during the validation.
    """

    __slots__ = ("answers", "steps", "token")

    def __init__(self, token: CancellationToken | None) -> None:
        self.token = token
        self.steps = 0  # memo misses: the token is heard every 256th
        # (node, id(value), depth) -> ok's answer; with a fourth item: None for reject's,
        # the path for explain's, a bool for what unevaluated* saw; each with the value
        self.answers: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def heard(self) -> None:
        """Raise :class:`OperationCancelledError` if the token is cancelled."""
        token = self.token
        if token is not None and token.is_cancellation_requested:
            raise OperationCancelledError("validation stopped: the call was cancelled")

    def step(self) -> None:
        """Count one unit of long work; hear the token now and then."""
        self.steps += 1
        if not self.steps & 255:
            self.heard()

    def cancelled(self) -> bool:
        """``stop`` for a pattern's linear engine: raises when the token is cancelled."""
        self.heard()
        return False


class _Local(threading.local):
    run: _Run | None = None


# The validation running on this thread, if its validator needs a _Run (validation never
# awaits, so a thread runs one at a time; a nested one saves and restores the outer one).
_LOCAL = _Local()


def _stopper() -> Callable[[], bool] | None:
    """What a long pattern run asks to know if it must stop: this thread's validation's
    cancelled() when it has a token (it raises), else None."""
    run = _LOCAL.run
    if run is None or run.token is None:
        return None
    return run.cancelled


def _heard() -> None:
    """Raise :class:`OperationCancelledError` if this thread's validation was cancelled."""
    run = _LOCAL.run
    if run is not None:
        run.heard()


# --------------------------------------------------------------------------- JSON values


def _is_null(x: Any, d: int) -> bool:
    return x is None


def _is_boolean(x: Any, d: int) -> bool:
    return x is True or x is False


def _is_integer(x: Any, d: int) -> bool:
    t = type(x)
    if t is int:
        return True
    if t is float:
        return x.is_integer()  # type: ignore[no-any-return]
    if t is bool:
        return False
    if isinstance(x, int):
        return not isinstance(x, bool)
    return isinstance(x, float) and x.is_integer()


def _is_number(x: Any, d: int = 0) -> bool:
    """A JSON number: an int or a finite float (JSON has no Infinity and no NaN)."""
    t = type(x)
    if t is int:
        return True
    if t is float:
        return x - x == 0.0  # type: ignore[no-any-return]  # inf - inf and nan - nan are nan
    if isinstance(x, float):
        return x - x == 0.0
    return isinstance(x, int) and not isinstance(x, bool)


def _all_finite(values: Any) -> bool:
    """True when the sum of ``values`` (ints and floats) is finite, so none is inf or nan;
    False says nothing for sure (1e308 + 1e308 overflows): look at each value then."""
    try:
        total = sum(values)
    except OverflowError:  # an int too large for a float
        return False
    return total - total == 0.0  # type: ignore[no-any-return]


def _is_string(x: Any, d: int) -> bool:
    return isinstance(x, str)


def _is_array(x: Any, d: int) -> bool:
    return isinstance(x, (list, tuple))


def _is_object(x: Any, d: int) -> bool:
    return type(x) is dict or isinstance(x, Mapping)


_TYPE_CHECKS: dict[str, _Ok] = {
    "null": _is_null,
    "boolean": _is_boolean,
    "integer": _is_integer,
    "number": _is_number,
    "string": _is_string,
    "array": _is_array,
    "object": _is_object,
}
# Exact Python types accepted by a JSON type without a further look (the fast path). Not
# float for "number": inf and nan are floats, and not JSON numbers.
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int,),
    "string": (str,),
    "array": (list, tuple),
    "object": (dict,),
}

_TRUE_KEY = object()
_FALSE_KEY = object()


class _NotJson:
    """Key for a non-JSON value: equal only to itself."""

    __slots__ = ()


def _canon(value: Any, budget: int) -> Any:
    """A hashable key with JSON equality: 1 == 1.0, True != 1, objects unordered."""
    t = type(value)
    if t is str or t is int or t is float or value is None:
        return value
    if value is True:
        return _TRUE_KEY
    if value is False:
        return _FALSE_KEY
    if budget <= 0:
        raise _TooDeep
    if isinstance(value, (list, tuple)):
        return tuple([_canon(item, budget - 1) for item in value])
    if isinstance(value, Mapping):
        return frozenset((key, _canon(item, budget - 1)) for key, item in value.items())
    # subclasses (a str Enum, an IntEnum) compare as the JSON value they stand for
    if isinstance(value, str):
        return str.__str__(value)  # str() would ask the subclass, and an Enum says "Colour.RED"
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return _NotJson()


def _is_json_value(value: Any, budget: int = _MAX_SCHEMA_LEVELS) -> bool:
    if isinstance(value, float):
        return value - value == 0.0  # not inf or nan
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if budget <= 0:
        return False
    if isinstance(value, (list, tuple)):
        return all(_is_json_value(item, budget - 1) for item in value)
    if isinstance(value, Mapping):
        return all(
            isinstance(key, str) and _is_json_value(item, budget - 1) for key, item in value.items()
        )
    return False


def _always(x: Any, d: int) -> bool:
    return True


def _never(x: Any, d: int) -> bool:
    return False


# --------------------------------------------------------------------------- compiled nodes


class _Node:
    """One compiled schema object: a fast yes/no check and a slow explainer.

    ``ok`` answers validity with no allocation on the valid path; ``explain`` runs only
    after ``ok`` said no, and adds every problem it finds. ``reject`` names what the node
    expects when a value fails at its root by type or enum (used to merge anyOf branches),
    or returns ``None`` when the value is of a shape the node could accept.
    """

    __slots__ = (
        "conditional",
        "dependent",
        "done",
        "exact",
        "explain",
        "floats",
        "inplace",
        "inplace_if_valid",
        "links",
        "memo",
        "ok",
        "pointer",
        "reject",
        "seen_all_items",
        "seen_all_properties",
        "seen_contains",
        "seen_match",
        "seen_names",
        "seen_prefix",
        "seen_unevaluated_items",
        "seen_unevaluated_properties",
    )  # fmt: skip

    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        self.done = False
        # a shared subschema: its answers are remembered for the rest of a validation
        self.memo = False
        self.ok: _Ok = _never
        self.explain: _Explain = _explain_nothing
        self.reject: Callable[[Any, int], list[str] | None] = _reject_nothing
        # same-instance references (keyword, node), for finding loops that never descend
        self.links: list[tuple[str, _Node]] = []
        # for a node that only checks a scalar type: the Python types it accepts at a glance
        self.exact: frozenset[type] = frozenset()
        # ...and whether it takes every finite float too (a number leaf)
        self.floats = False
        # What the node evaluates, for unevaluatedProperties/unevaluatedItems around it:
        # the properties, patternProperties and prefix it names, whether additionalProperties
        # / items (all) or its own unevaluated* (all, once it passed) cover the rest, its
        # contains, and the subschemas applied to the same value (always, or when they pass).
        self.seen_names: frozenset[str] = frozenset()
        self.seen_match: _Matching | None = None
        self.seen_all_properties = False
        self.seen_unevaluated_properties = False
        self.seen_prefix = 0
        self.seen_all_items = False
        self.seen_unevaluated_items = False
        self.seen_contains: _Node | None = None
        self.inplace: list[_Node] = []
        self.inplace_if_valid: list[_Node] = []
        self.conditional: tuple[_Node, _Node | None, _Node | None] | None = None
        self.dependent: list[tuple[str, _Node]] = []

    def ok_late(self) -> _Ok:
        """``ok``, or a late-bound call to it while the node is still being compiled."""
        if self.done:
            return self.ok
        return lambda x, d: self.ok(x, d)


def _explain_nothing(x: Any, path: _Path, problems: _Problems, d: int) -> None:
    return None


def _reject_nothing(x: Any, d: int) -> list[str] | None:
    return None


def _memoize(node: _Node) -> None:
    """Make ``node`` answer each (value, depth) once per validation (see :class:`_Run`):
    ``ok``, ``reject`` and ``explain`` each remember what they said."""
    ok, reject, explain = node.ok, node.reject, node.explain
    tag = id(node)
    local = _LOCAL
    node.memo = True

    def memo_ok(x: Any, d: int) -> bool:
        run = local.run
        if run is None:
            return ok(x, d)
        key = (tag, id(x), d)
        found = run.answers.get(key)
        if found is not None:
            return found[0]  # type: ignore[no-any-return]
        run.step()
        answer = ok(x, d)
        run.answers[key] = (answer, x)
        return answer

    def memo_reject(x: Any, d: int) -> list[str] | None:
        run = local.run
        if run is None:
            return reject(x, d)
        key = (tag, id(x), d, None)
        found = run.answers.get(key)
        if found is None:
            found = run.answers[key] = (reject(x, d), x)
        return found[0]  # type: ignore[no-any-return]

    def memo_explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        run = local.run
        if run is None:
            explain(x, path, problems, d)
            return
        key = (tag, id(x), d, path)
        found = run.answers.get(key)
        if found is None:
            run.step()
            inner = _Problems(problems.ceiling)
            with contextlib.suppress(_Stop):
                explain(x, path, inner, d)
            found = run.answers[key] = (inner.items, inner.truncated, x)
        items, truncated, _ = found
        for text in items:
            problems.add_text(text)
        if truncated:
            problems.truncated = True
            raise _Stop

    node.ok = memo_ok
    node.explain = memo_explain
    if reject is not _reject_nothing:
        node.reject = memo_reject


def _make_false() -> _Node:
    node = _Node("#")
    node.ok = _never

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        problems.add(path, "no value is allowed here")

    node.explain = explain
    node.reject = lambda x, d: []
    node.done = True
    return node


_FALSE_NODE = _make_false()


def _all_of(oks: list[_Ok]) -> _Ok:
    if not oks:
        return _always
    if len(oks) == 1:
        return oks[0]
    if len(oks) == 2:
        first, second = oks

        def ok2(x: Any, d: int) -> bool:
            return first(x, d) and second(x, d)

        return ok2
    checks = tuple(oks)

    def ok_n(x: Any, d: int) -> bool:
        # a plain loop: all() over a generator costs twice as much on this hot path
        for check in checks:  # noqa: SIM110
            if not check(x, d):
                return False
        return True

    return ok_n


def _leaf(ok: _Ok, message: Callable[[Any, int], str]) -> tuple[_Ok, _Explain]:
    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not ok(x, d):
            problems.add(path, message(x, d))

    return ok, explain


# --------------------------------------------------------------------------- references

# ($dynamicAnchor name, resource URI) pairs in force, outermost first
_Scope = tuple[tuple[str, str], ...]

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
_ANCHOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def _join_uri(base: str, reference: str) -> str:
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


class _Resources:
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
                base = _join_uri(base, ident).partition("#")[0]
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

    def dynamic_target(self, uri: str, target: Any, scope: _Scope) -> Any:
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

    def enter(self, schema: Mapping[str, Any], scope: _Scope) -> _Scope:
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


def _shared_schemas(root: Any, resources: _Resources) -> set[int]:
    """The ids of the schema objects a validation could reach twice for the same value.

    Applicators on the same value (``$ref``, ``allOf``/``anyOf``/``oneOf``, ``not``,
    ``if``/``then``/``else``, ``dependentSchemas``) form a graph without cycles (a cycle is
    refused). Where two paths from one schema meet again (``anyOf: [{$ref: A}, {$ref: A}]``),
    ``A`` would be checked once per path, and twenty such levels make a million checks. So
    such a meeting point is memoized (:func:`_memoize`): then no schema is reached along
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
    schema: Mapping[str, Any], keyword: str, reference: str, resources: _Resources
) -> list[Any]:
    """Where a ``$ref`` (or any ``$dynamicRef`` with that anchor name) may land; nothing
    for a reference that does not resolve (compiling says why)."""
    uri = _join_uri(resources.base_of(schema), reference)
    try:
        target, _ = resources.resolve(uri, "#", keyword, reference)
    except SchemaError:
        return []
    found = [target]
    if keyword == "$dynamicRef":
        name = uri.partition("#")[2]
        found.extend(names[name] for names in resources.dynamic_anchors.values() if name in names)
    return found


def _compile_pattern_set(sources: list[str]) -> _Matching:
    """The one place that compiles the patterns of a ``patternProperties`` together."""
    from ._ecma import compile_pattern_set

    return compile_pattern_set(sources)


def _compile_pattern(source: str) -> SearchParts:
    """The one place that compiles a ``pattern`` (ECMA-262, never stalling): ``(search,
    longest, predicate)`` as :func:`toolnexus._ecma.compile_search` describes them."""
    from ._ecma import compile_search

    return compile_search(source)


# --------------------------------------------------------------------------- the compiler


class _Compiler:
    def __init__(
        self,
        root: Any,
        max_depth: int,
        registry: Mapping[str, Any] | None = None,
        format_assertion: bool = False,
    ) -> None:
        self.root = root
        self.max_depth = max_depth
        self.format_assertion = format_assertion
        self.resources = _Resources(root, registry)
        self.nodes: dict[tuple[int, _Scope], _Node] = {}
        self.started: set[tuple[int, _Scope]] = set()
        self.pending: list[tuple[Any, str, _Scope]] = []
        # the dynamic scope of the node being compiled: ($dynamicAnchor name, resource) pairs
        # of the resources entered so far, outermost first; () unless a $dynamicRef exists
        self.scope: _Scope = ()
        self.patterns: dict[str, _Pattern] = {}
        self.shared: set[int] = set()  # ids of the schema objects to memoize
        self.memoized = 0
        # keeps every compiled schema object alive, so an id() is never reused meanwhile
        self.keep: list[Any] = []
        # what `true`, `{}` and unlisted properties or items compile to: any value nested
        # no deeper than the limit
        self.anything = _Node("#")
        self.anything.ok, self.anything.explain = _depth_guard(_always, _explain_nothing, max_depth)
        self.anything.done = True

    # -- entry ---------------------------------------------------------------------------

    def compile(self) -> _Node:
        self.shared = _shared_schemas(self.root, self.resources)
        root = self.node(self.root, "#", 0)
        while self.pending:
            schema, pointer, scope = self.pending.pop()
            self.scope = scope
            self.node(schema, pointer, 0)
        self.check_loops()
        return root

    # -- keyword value checks --------------------------------------------------------------

    @staticmethod
    def fail(pointer: str, keyword: str | None, problem: str) -> SchemaError:
        return SchemaError(pointer, keyword, problem)

    def number(self, schema: Mapping[str, Any], keyword: str, pointer: str) -> int | float:
        value = schema[keyword]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            hint = ""
            if isinstance(value, bool) and keyword.startswith("exclusive"):
                hint = f" (the draft-4 boolean form is not supported: write {keyword}: <number>)"
            raise self.fail(
                pointer, keyword, f"{keyword!r} must be a number, got {_describe(value)}{hint}"
            )
        if value != value or value in (_INFINITY, -_INFINITY):
            raise self.fail(pointer, keyword, f"{keyword!r} must be a finite number")
        return value

    def count(self, schema: Mapping[str, Any], keyword: str, pointer: str) -> int:
        value = schema[keyword]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(
                pointer,
                keyword,
                f"{keyword!r} must be a non-negative integer, got {_describe(value)}",
            )
        return value

    def schema_list(self, schema: Mapping[str, Any], keyword: str, pointer: str) -> list[Any]:
        value = schema[keyword]
        if not isinstance(value, (list, tuple)) or not value:
            raise self.fail(
                pointer,
                keyword,
                f"{keyword!r} must be a non-empty array of schemas, got {_describe(value)}",
            )
        return list(value)

    def schema_map(
        self, schema: Mapping[str, Any], keyword: str, pointer: str
    ) -> Mapping[str, Any]:
        value = schema[keyword]
        if not isinstance(value, Mapping):
            raise self.fail(
                pointer,
                keyword,
                f"{keyword!r} must be an object mapping names to schemas, got {_describe(value)}",
            )
        for name in value:
            if not isinstance(name, str):
                raise self.fail(
                    pointer, keyword, f"{keyword!r} names must be strings, got {name!r}"
                )
        return value

    def names(self, value: Any, pointer: str, keyword: str, what: str) -> list[str]:
        if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) for name in value):
            raise self.fail(
                pointer,
                keyword,
                f"{what} must be an array of property names, got {_json_short(value)}",
            )
        if len(set(value)) != len(value):
            raise self.fail(pointer, keyword, f"{what} lists a property twice")
        return list(value)

    # -- nodes -----------------------------------------------------------------------------

    def node(self, schema: Any, pointer: str, level: int) -> _Node:
        if schema is True:
            return self.anything
        if schema is False:
            return _FALSE_NODE
        if not isinstance(schema, dict) and not isinstance(schema, Mapping):
            raise self.fail(
                pointer,
                None,
                f"a schema must be an object or a boolean, got {_describe(schema)}",
            )
        outer = self.scope
        scope = self.resources.enter(schema, outer) if self.resources.dynamic else outer
        key = (id(schema), scope)
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = _Node(pointer)
            self.keep.append(schema)
        if key in self.started:
            return node
        if level > _MAX_SCHEMA_LEVELS:
            raise self.fail(
                pointer, None, f"the schema nests more than {_MAX_SCHEMA_LEVELS} levels deep"
            )
        self.started.add(key)
        self.scope = scope
        try:
            self.build(node, schema, pointer, level)
        finally:
            self.scope = outer
        if id(schema) in self.shared:
            _memoize(node)
            self.memoized += 1
        node.done = True
        return node

    def child(self, schema: Any, pointer: str, level: int) -> _Node:
        return self.node(schema, pointer, level + 1)

    def build(self, node: _Node, schema: Mapping[str, Any], pointer: str, level: int) -> None:
        keys = schema.keys()
        unknown = keys - _KNOWN_KEYWORDS
        for keyword in keys if unknown else ():  # in schema order, so the report is stable
            if keyword not in unknown:
                continue
            if not isinstance(keyword, str):
                raise self.fail(pointer, None, f"keywords must be strings, got {keyword!r}")
            if not keyword.startswith("x-"):
                raise self.fail(pointer, keyword, _unsupported(keyword))
        checking = keys & _CHECKING_KEYWORDS
        asserts_format = self.format_assertion and "format" in keys

        if checking <= {"type"} and not asserts_format:
            # a leaf like {"type": "integer"}: most nodes of a tool schema; built once, shared
            if checking:
                names = self.types(schema, pointer)
                assert names is not None
                node.ok, node.explain, node.reject = _type_leaf(names)
                if _SCALAR_TYPE_NAMES.issuperset(names):
                    node.exact = frozenset(t for name in names for t in _EXACT_TYPES[name])
                    node.floats = "number" in names
                else:
                    node.ok, node.explain = _depth_guard(node.ok, node.explain, self.max_depth)
            else:
                node.ok, node.explain = self.anything.ok, self.anything.explain
                node.reject = _reject_nothing
            if keys & _QUIET_KEYWORDS:
                self.annotations(schema, pointer, level)
            return

        self.annotations(schema, pointer, level)
        oks: list[_Ok] = []
        explains: list[_Explain] = []

        def add(pair: tuple[_Ok, _Explain]) -> None:
            oks.append(pair[0])
            explains.append(pair[1])

        type_names = self.types(schema, pointer)
        type_ok: _Ok | None = None
        if type_names is not None:
            type_ok = _type_check(type_names)

        # value keywords
        enum_values: list[Any] | None = None
        if "enum" in schema:
            enum_values = self.enum(schema, pointer)
            add(self.enum_check(enum_values))
        if "const" in schema:
            const = schema["const"]
            if not _is_json_value(const):
                raise self.fail(
                    pointer, "const", f"'const' must be a JSON value, got {_describe(const)}"
                )
            add(self.const_check(const))
        if checking & _NUMBER_KEYWORDS:
            add_number_checks(self, schema, pointer, add)
        pattern: _Pattern | None = None
        if checking & _STRING_KEYWORDS:
            pattern = add_string_checks(self, schema, pointer, add)
        format_test = self.format_test(schema) if asserts_format else None
        if format_test is not None:
            add(_format_leaf(schema["format"], format_test))

        # arrays
        folded_array = False
        array_check = self.array(schema, pointer, level, node)
        if array_check is not None:
            array_ok, array_explain, array_check_typed = array_check
            if type_names == ("array",):
                folded_array = True
                array_ok = array_check_typed
            oks.append(array_ok)
            explains.append(array_explain)
        if "contains" in schema:
            add(self.contains(schema, pointer, level, node))
        if checking & _COUNT_KEYWORDS:
            add_count_checks(self, schema, pointer, add)

        # objects
        folded_object = False
        object_check = self.object(schema, pointer, level, node)
        if object_check is not None:
            object_ok, object_explain, object_check_typed = object_check
            if type_names == ("object",):
                folded_object = True
                object_ok = object_check_typed
            oks.append(object_ok)
            explains.append(object_explain)
        if "propertyNames" in schema:
            names_node = self.child(schema["propertyNames"], f"{pointer}/propertyNames", level)
            add(_property_names(names_node))
        if "dependentRequired" in schema or "dependencies" in schema:
            required_when = self.dependent_required(schema, pointer)
            if required_when:
                add(_dependent_required(required_when))
        if "dependentSchemas" in schema or "dependencies" in schema:
            schemas_when = self.dependent_schemas(schema, pointer, level)
            if schemas_when:
                node.dependent = schemas_when
                node.links.extend(("dependentSchemas", sub) for _, sub in schemas_when)
                add(_dependent_schemas(schemas_when))

        # applicators on the same instance
        ref_node: _Node | None = None
        if "$ref" in schema:
            ref_node = self.ref(schema, pointer)
            node.links.append(("$ref", ref_node))
            node.inplace.append(ref_node)
            add(_ref_check(ref_node))
        if "$dynamicRef" in schema:
            dynamic_node = self.ref(schema, pointer, "$dynamicRef")
            node.links.append(("$dynamicRef", dynamic_node))
            node.inplace.append(dynamic_node)
            add(_ref_check(dynamic_node))
        if "allOf" in schema:
            branches = self.branches(schema, "allOf", pointer, level, node)
            node.inplace.extend(branches)
            for branch in branches:
                add((branch.ok_late(), _explain_of(branch)))
        any_nodes: list[_Node] | None = None
        if "anyOf" in schema:
            any_nodes = self.branches(schema, "anyOf", pointer, level, node)
            node.inplace_if_valid.extend(any_nodes)
            add(_any_of(any_nodes))
        one_nodes: list[_Node] | None = None
        if "oneOf" in schema:
            one_nodes = self.branches(schema, "oneOf", pointer, level, node)
            node.inplace_if_valid.extend(one_nodes)
            add(_one_of(one_nodes))
        if "not" in schema:
            inner = self.child(schema["not"], f"{pointer}/not", level)
            node.links.append(("not", inner))
            add(_not(inner, schema["not"]))
        if "if" in schema:
            add(self.conditional(schema, pointer, level, node))

        # last: they look at what every other keyword evaluated
        if "unevaluatedItems" in schema:
            rest = self.child(schema["unevaluatedItems"], f"{pointer}/unevaluatedItems", level)
            add(_unevaluated_items(node, rest, self.max_depth))
        if "unevaluatedProperties" in schema:
            rest = self.child(
                schema["unevaluatedProperties"], f"{pointer}/unevaluatedProperties", level
            )
            add(_unevaluated_properties(node, rest, self.max_depth))
        node.seen_unevaluated_items = "unevaluatedItems" in schema
        node.seen_unevaluated_properties = "unevaluatedProperties" in schema

        # the type check runs first: when it fails, the other keywords say nothing useful
        if type_ok is not None and not (folded_object or folded_array):
            oks.insert(0, type_ok)
        node.ok = _fused_scalar(schema, type_names, checking, pattern, format_test) or _all_of(oks)
        node.explain = _node_explain(type_ok, type_names, explains)
        if not _covers_depth(
            checking, type_names, array_check is not None, object_check is not None
        ):
            node.ok, node.explain = _depth_guard(node.ok, node.explain, self.max_depth)
        node.reject = self.reject(
            schema, type_ok, type_names, enum_values, ref_node, any_nodes, one_nodes
        )

    # -- keyword compilers -------------------------------------------------------------------

    def annotations(self, schema: Mapping[str, Any], pointer: str, level: int) -> None:
        """Check what does not constrain the value by itself: ``format``, the ``$defs``,
        identifiers, and keywords that only act beside another (``then`` without ``if``)."""
        for keyword in ("$defs", "definitions"):
            if keyword in schema:
                for name, sub in self.schema_map(schema, keyword, pointer).items():
                    self.child(sub, f"{pointer}/{keyword}/{escape(name)}", level)
        if "format" in schema and not isinstance(schema["format"], str):
            raise self.fail(
                pointer, "format", f"'format' must be a string, got {_describe(schema['format'])}"
            )
        if "$id" in schema:
            ident = schema["$id"]
            if not isinstance(ident, str):
                raise self.fail(pointer, "$id", f"'$id' must be a string, got {_describe(ident)}")
            if ident.partition("#")[2]:
                raise self.fail(
                    pointer,
                    "$id",
                    f"'$id' {ident!r} has a fragment; name a location with '$anchor' instead",
                )
        for keyword in ("$anchor", "$dynamicAnchor"):
            if keyword in schema:
                name = schema[keyword]
                if not isinstance(name, str) or not _ANCHOR_NAME.match(name):
                    raise self.fail(
                        pointer,
                        keyword,
                        f"{keyword!r} must be a name like 'node' (a letter or _, then letters,"
                        f" digits, '-', '_' or '.'), got {_json_short(name)}",
                    )
        if "if" not in schema:
            # then/else without if have no effect, but must still be schemas
            for keyword in ("then", "else"):
                if keyword in schema:
                    self.child(schema[keyword], f"{pointer}/{keyword}", level)
        if "contains" not in schema:
            for keyword in ("minContains", "maxContains"):
                if keyword in schema:
                    self.count(schema, keyword, pointer)

    def types(self, schema: Mapping[str, Any], pointer: str) -> tuple[str, ...] | None:
        if "type" not in schema:
            return None
        value = schema["type"]
        single = _SINGLE_TYPES.get(value) if isinstance(value, str) else None
        if single is not None:
            return single
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, (list, tuple)) or not names:
            raise self.fail(
                pointer,
                "type",
                f"'type' must be a type name or a non-empty array of them, got {_describe(value)}",
            )
        for name in names:
            if name not in _TYPE_NAMES:
                raise self.fail(
                    pointer,
                    "type",
                    f"unknown type {_json_short(name)} (known: {', '.join(_TYPE_NAMES)})",
                )
        if len(set(names)) != len(names):
            raise self.fail(pointer, "type", "'type' lists a type twice")
        return tuple(names)

    def enum(self, schema: Mapping[str, Any], pointer: str) -> list[Any]:
        values = schema["enum"]
        if not isinstance(values, (list, tuple)):
            # an empty one is allowed: nothing is valid (2020-12: it SHOULD have an item)
            raise self.fail(pointer, "enum", f"'enum' must be an array, got {_describe(values)}")
        for value in values:
            if not _is_json_value(value):
                raise self.fail(
                    pointer, "enum", f"'enum' values must be JSON values, got {_describe(value)}"
                )
        return list(values)

    def enum_check(self, values: list[Any]) -> tuple[_Ok, _Explain]:
        keys = frozenset(_canon(value, _MAX_SCHEMA_LEVELS) for value in values)
        max_depth = self.max_depth
        # written once: a miss on an enum of a million values must not write them all
        expected = _expect_enum(values, len(keys))

        def ok(x: Any, d: int) -> bool:
            t = type(x)
            if t is str or t is int or t is float:
                return x in keys  # these are their own keys; 1 and 1.0 hash alike
            try:
                return _canon(x, max_depth - d) in keys
            except _TooDeep:
                return False

        def message(x: Any, d: int) -> str:
            try:
                _canon(x, max_depth - d)
            except _TooDeep:
                return _too_deep(max_depth)
            if not values:
                return f"no value is allowed here (its 'enum' is empty), got {_describe(x)}"
            return f"expected {expected}, got {_describe(x)}"

        return _leaf(ok, message)

    def const_check(self, const: Any) -> tuple[_Ok, _Explain]:
        key = _canon(const, _MAX_SCHEMA_LEVELS)
        max_depth = self.max_depth

        def ok(x: Any, d: int) -> bool:
            try:
                return bool(_canon(x, max_depth - d) == key)
            except _TooDeep:
                return False

        def message(x: Any, d: int) -> str:
            try:
                _canon(x, max_depth - d)
            except _TooDeep:
                return _too_deep(max_depth)
            return f"expected {_json_short(const)}, got {_describe(x)}"

        return _leaf(ok, message)

    def pattern(self, source: Any, pointer: str, keyword: str) -> _Pattern:
        """An ECMA-262 pattern compiled once per schema, remembering its last answers."""
        if not isinstance(source, str):
            raise self.fail(
                pointer, keyword, f"{keyword!r} patterns must be strings, got {_describe(source)}"
            )
        test = self.patterns.get(source)
        if test is None:
            from ._ecma import EcmaPatternError

            try:
                test = _Pattern(_compile_pattern(source))
            except EcmaPatternError as exc:
                where = f" at position {exc.position}" if exc.position is not None else ""
                raise self.fail(
                    pointer,
                    keyword,
                    f"pattern {_json_short(source, 60)}{where}: {exc.reason}",
                ) from None
            self.patterns[source] = test
        return test

    def format_test(self, schema: Mapping[str, Any]) -> FormatParts | None:
        """The check of the schema's ``format``; None for one that stays an annotation."""
        from ._json_formats import format_parts

        return format_parts(schema["format"], self.format_test_pattern)

    @staticmethod
    def format_test_pattern(text: str) -> bool:
        from ._ecma import EcmaPatternError

        try:
            _compile_pattern(text)
        except EcmaPatternError:
            return False
        return True

    def array(
        self, schema: Mapping[str, Any], pointer: str, level: int, node: _Node
    ) -> tuple[_Ok, _Explain, _Ok] | None:
        has_items = "items" in schema
        has_prefix = "prefixItems" in schema
        if not (has_items or has_prefix):
            return None
        prefix: list[_Node] = []
        if has_prefix:
            prefix = [
                self.child(sub, f"{pointer}/prefixItems/{index}", level)
                for index, sub in enumerate(self.schema_list(schema, "prefixItems", pointer))
            ]
        items: _Node | None = None
        if has_items:
            raw = schema["items"]
            if isinstance(raw, (list, tuple)):
                # the draft-07 spelling of prefixItems, with additionalItems for the rest
                if has_prefix:
                    raise self.fail(
                        pointer,
                        "items",
                        "an array 'items' is the draft-07 spelling of 'prefixItems'; write one",
                    )
                prefix = [
                    self.child(sub, f"{pointer}/items/{index}", level)
                    for index, sub in enumerate(raw)
                ]
            else:
                items = self.child(raw, f"{pointer}/items", level)
        if items is None and "additionalItems" in schema:
            items = self.child(schema["additionalItems"], f"{pointer}/additionalItems", level)
        node.seen_prefix = len(prefix)
        node.seen_all_items = items is not None
        return _array_check(prefix, items or self.anything, self.max_depth)

    def contains(
        self, schema: Mapping[str, Any], pointer: str, level: int, node: _Node
    ) -> tuple[_Ok, _Explain]:
        inner = self.child(schema["contains"], f"{pointer}/contains", level)
        fewest = self.count(schema, "minContains", pointer) if "minContains" in schema else 1
        most = self.count(schema, "maxContains", pointer) if "maxContains" in schema else None
        node.seen_contains = inner
        return _contains_check(inner, fewest, most, schema["contains"])

    def object(
        self, schema: Mapping[str, Any], pointer: str, level: int, node: _Node
    ) -> tuple[_Ok, _Explain, _Ok] | None:
        if not any(k in schema for k in _OBJECT_KEYWORDS):
            return None
        properties: dict[str, _Node] = {}
        if "properties" in schema:
            for name, sub in self.schema_map(schema, "properties", pointer).items():
                properties[name] = self.child(sub, f"{pointer}/properties/{escape(name)}", level)
        patterns: list[_Node] = []
        matching: _Matching | None = None
        if "patternProperties" in schema:
            sources: list[str] = []
            for source, sub in self.schema_map(schema, "patternProperties", pointer).items():
                self.pattern(source, pointer, "patternProperties")  # refused here, if at all
                sources.append(source)
                where = f"{pointer}/patternProperties/{escape(source)}"
                patterns.append(self.child(sub, where, level))
            matching = _compile_pattern_set(sources)
        required: list[str] = []
        if "required" in schema:
            required = self.names(schema["required"], pointer, "required", "'required'")
        additional: _Node | None = None
        if "additionalProperties" in schema:
            additional = self.child(
                schema["additionalProperties"], f"{pointer}/additionalProperties", level
            )
        node.seen_names = frozenset(properties)
        node.seen_match = matching
        node.seen_all_properties = additional is not None
        if matching is not None:
            return _pattern_object_check(
                properties,
                patterns,
                matching,
                required,
                additional or self.anything,
                self.max_depth,
            )
        return _object_check(properties, required, additional or self.anything, self.max_depth)

    def dependent_required(
        self, schema: Mapping[str, Any], pointer: str
    ) -> list[tuple[str, tuple[str, ...]]]:
        found: list[tuple[str, tuple[str, ...]]] = []
        for keyword in ("dependentRequired", "dependencies"):
            if keyword not in schema:
                continue
            value = schema[keyword]
            if not isinstance(value, Mapping):
                raise self.fail(
                    pointer,
                    keyword,
                    f"{keyword!r} must be an object mapping names to arrays of names,"
                    f" got {_describe(value)}",
                )
            for name, needs in value.items():
                if keyword == "dependencies" and not isinstance(needs, (list, tuple)):
                    continue  # a schema: dependentSchemas spelled the draft-07 way
                listed = self.names(needs, pointer, keyword, f"{keyword!r} of {name!r}")
                if listed:
                    found.append((name, tuple(listed)))
        return found

    def dependent_schemas(
        self, schema: Mapping[str, Any], pointer: str, level: int
    ) -> list[tuple[str, _Node]]:
        found: list[tuple[str, _Node]] = []
        for keyword in ("dependentSchemas", "dependencies"):
            if keyword not in schema:
                continue
            if keyword == "dependentSchemas":
                value = self.schema_map(schema, keyword, pointer)
            else:
                value = schema[keyword]  # checked by dependent_required
            for name, sub in value.items():
                if isinstance(sub, (list, tuple)):
                    continue
                where = f"{pointer}/{keyword}/{escape(name)}"
                found.append((name, self.child(sub, where, level)))
        return found

    def conditional(
        self, schema: Mapping[str, Any], pointer: str, level: int, node: _Node
    ) -> tuple[_Ok, _Explain]:
        condition = self.child(schema["if"], f"{pointer}/if", level)
        then = self.child(schema["then"], f"{pointer}/then", level) if "then" in schema else None
        otherwise = (
            self.child(schema["else"], f"{pointer}/else", level) if "else" in schema else None
        )
        node.links.append(("if", condition))
        node.links.extend((k, n) for k, n in (("then", then), ("else", otherwise)) if n)
        node.conditional = (condition, then, otherwise)
        return _conditional(condition, then, otherwise, schema["if"])

    def ref(self, schema: Mapping[str, Any], pointer: str, keyword: str = "$ref") -> _Node:
        reference = schema[keyword]
        if not isinstance(reference, str):
            raise self.fail(
                pointer, keyword, f"{keyword!r} must be a string, got {_describe(reference)}"
            )
        resources = self.resources
        base = resources.base_of(schema)
        target, where = resources.resolve(_join_uri(base, reference), pointer, keyword, reference)
        if keyword == "$dynamicRef":
            target = resources.dynamic_target(_join_uri(base, reference), target, self.scope)
        if isinstance(target, bool):
            return self.anything if target else _FALSE_NODE
        if not isinstance(target, Mapping):
            raise self.fail(
                pointer,
                keyword,
                f"{keyword} {reference!r} points at {_describe(target)}, not a schema",
            )
        scope = resources.enter(target, self.scope) if resources.dynamic else self.scope
        key = (id(target), scope)
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = _Node(where)
            self.keep.append(target)
        if key not in self.started:
            # compiled later from the queue, so a long chain of $refs is not a deep recursion
            self.pending.append((target, where, self.scope))
        return node

    def branches(
        self, schema: Mapping[str, Any], keyword: str, pointer: str, level: int, node: _Node
    ) -> list[_Node]:
        nodes = [
            self.child(sub, f"{pointer}/{keyword}/{index}", level)
            for index, sub in enumerate(self.schema_list(schema, keyword, pointer))
        ]
        node.links.extend((keyword, branch) for branch in nodes)
        return nodes

    def reject(
        self,
        schema: Mapping[str, Any],
        type_ok: _Ok | None,
        type_names: tuple[str, ...] | None,
        enum_values: list[Any] | None,
        ref_node: _Node | None,
        any_nodes: list[_Node] | None,
        one_nodes: list[_Node] | None,
    ) -> Callable[[Any, int], list[str] | None]:
        """How this node refuses a value at its root, as alternatives to list, if it does."""
        checking = schema.keys() & _CHECKING_KEYWORDS
        value_only = checking <= {"type", "enum", "const"}
        names = list(type_names or ())
        values: list[str] | None = None
        if value_only and (enum_values is not None or "const" in schema):
            pool = enum_values if enum_values is not None else [schema["const"]]
            if "const" in schema and enum_values is not None:
                pool = [schema["const"]]
            values = _shown_values(pool, len(pool))
        delegate: list[_Node] | None = None
        if checking == {"$ref"} and ref_node is not None:
            delegate = [ref_node]
        elif checking == {"anyOf"} and any_nodes is not None:
            delegate = any_nodes
        elif checking == {"oneOf"} and one_nodes is not None:
            delegate = one_nodes

        def reject(x: Any, d: int) -> list[str] | None:
            if type_ok is not None and not type_ok(x, d):
                return names
            if values is not None:
                return values
            if delegate is not None:
                merged: list[str] = []
                for branch in delegate:
                    if branch.ok(x, d):
                        return None
                    found = branch.reject(x, d)
                    if found is None:
                        return None
                    merged.extend(found)
                # without duplicates: a branch met twice would double the list per level
                return list(dict.fromkeys(merged))
            return None

        if type_ok is None and values is None and delegate is None:
            return _reject_nothing
        return reject

    # -- loops -------------------------------------------------------------------------------

    def check_loops(self) -> None:
        """Refuse references that return to a schema without descending into the value."""
        finished: set[int] = set()
        for start in list(self.nodes.values()):
            if not start.links:
                continue
            if id(start) in finished:
                continue
            on_path: dict[int, int] = {id(start): 0}
            trail: list[tuple[_Node, str]] = [(start, "")]
            stack = [iter(start.links)]
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    stack.pop()
                    done_node, _ = trail.pop()
                    del on_path[id(done_node)]
                    finished.add(id(done_node))
                    continue
                keyword, target = step
                if id(target) in finished:
                    continue
                if id(target) in on_path:
                    loop = [n.pointer for n, _ in trail[on_path[id(target)] :]]
                    loop.append(target.pointer)
                    raise self.fail(
                        trail[-1][0].pointer,
                        keyword,
                        "this schema refers back to itself without reaching a property or an"
                        f" item, so checking would never end: {' -> '.join(loop)}",
                    )
                on_path[id(target)] = len(trail)
                trail.append((target, keyword))
                stack.append(iter(target.links))


def _unsupported(keyword: str) -> str:
    import difflib

    close = difflib.get_close_matches(keyword, sorted(SUPPORTED_KEYWORDS), n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (
        f"unsupported keyword {keyword!r}{hint} (toolnexus validates only: "
        f"{', '.join(sorted(SUPPORTED_KEYWORDS - {'$defs', 'definitions'}))})"
    )


def _shown_values(values: Sequence[Any], count: int) -> list[str]:
    """The first dozen distinct values as a problem shows them, then an :class:`_Others`
    for the rest of ``count`` distinct values. Reads only the values it shows: a long enum
    is not written out to say that a value is not in it."""
    shown: dict[str, None] = {}
    for value in values:
        shown[_json_short(value)] = None
        if len(shown) > 12:
            break
    texts = list(shown)
    if len(texts) <= 12:
        return texts
    others = _Others("...")
    others.hidden = max(count, 13) - 12
    return [*texts[:12], others]


def _expect_enum(values: Sequence[Any], count: int | None = None) -> str:
    """``"a"``, ``one of "a", "b"``, or the first ten and how many in all."""
    shown = _shown_values(values, len(values) if count is None else count)
    if not shown:
        return "nothing (the enum is empty)"
    last = shown[-1]
    if isinstance(last, _Others):
        return f"one of {', '.join(shown[:10])}, ... ({len(shown) - 1 + last.hidden} values)"
    if len(shown) == 1:
        return shown[0]
    return f"one of {', '.join(shown)}"


def _type_check(names: tuple[str, ...]) -> _Ok:
    if len(names) == 1:
        return _TYPE_CHECKS[names[0]]
    exact = frozenset(t for name in names for t in _EXACT_TYPES[name])
    checks = tuple(_TYPE_CHECKS[name] for name in names)

    def ok(x: Any, d: int) -> bool:
        if type(x) in exact:
            return True
        for check in checks:  # noqa: SIM110 (faster than any() over a generator)
            if check(x, d):
                return True
        return False

    return ok


_TYPE_LEAVES: dict[
    tuple[str, ...], tuple[_Ok, _Explain, Callable[[Any, int], list[str] | None]]
] = {}


def _type_leaf(
    names: tuple[str, ...],
) -> tuple[_Ok, _Explain, Callable[[Any, int], list[str] | None]]:
    """The three functions of a node that only checks ``type``, shared by all such nodes."""
    leaf = _TYPE_LEAVES.get(names)
    if leaf is None:
        ok = _type_check(names)
        expected = list(names)
        explain = _node_explain(ok, names, [])

        def reject(x: Any, d: int) -> list[str] | None:
            return None if ok(x, d) else expected

        leaf = _TYPE_LEAVES[names] = (ok, explain, reject)
    return leaf


def _node_explain(
    type_ok: _Ok | None, type_names: tuple[str, ...] | None, explains: list[_Explain]
) -> _Explain:
    checks = tuple(explains)

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if type_ok is not None and not type_ok(x, d):
            expected = _alternatives(list(type_names or ()))
            problems.add(path, f"expected {expected}, got {_describe(x)}")
            return
        for check in checks:
            check(x, path, problems, d)

    return explain


def _explain_of(node: _Node) -> _Explain:
    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        node.explain(x, path, problems, d)

    return explain


def _ref_check(target: _Node) -> tuple[_Ok, _Explain]:
    # a target compiled already is called directly; one still being compiled (a recursive
    # reference) through a late-bound call
    return target.ok_late(), _explain_of(target)


def _too_deep(max_depth: int) -> str:
    return f"nested too deeply (more than {max_depth} levels)"


_SCALAR_TYPE_NAMES = frozenset({"null", "boolean", "integer", "number", "string"})
_SCALARS = (str, int, float, bool, type(None))
_INT_FLOAT = frozenset({int, float})


def _covers_depth(
    checking: Set[str], type_names: tuple[str, ...] | None, has_array: bool, has_object: bool
) -> bool:
    """Whether a node's own checks already refuse values nested past the depth limit.

    True when it accepts no containers (scalar types, enum, const), when it defers to other
    nodes that do (a passing $ref/allOf/anyOf/oneOf branch is itself depth-limited), or when
    it walks every item and property of the containers it accepts.
    """
    if type_names is not None and _SCALAR_TYPE_NAMES.issuperset(type_names):
        return True
    if checking & {"enum", "const", "$ref", "$dynamicRef", "allOf", "anyOf", "oneOf"}:
        return True
    arrays_covered = has_array or (type_names is not None and "array" not in type_names)
    objects_covered = has_object or (type_names is not None and "object" not in type_names)
    return arrays_covered and objects_covered


def _within_depth(x: Any, budget: int) -> bool:
    """True when no container inside ``x`` nests more than ``budget`` levels below it."""
    if isinstance(x, Mapping):
        values: Any = x.values()
    elif isinstance(x, (list, tuple)):
        values = x
    else:
        return True
    if not x:
        return True
    if budget <= 0:
        return False
    for value in values:
        if type(value) in _SCALARS:
            continue
        if not _within_depth(value, budget - 1):
            return False
    return True


def _too_deep_at(x: Any, budget: int) -> _Path | None:
    """The relative path of the first container that nests past ``budget``, if any."""
    if isinstance(x, Mapping):
        entries: Any = x.items()
    elif isinstance(x, (list, tuple)):
        entries = enumerate(x)
    else:
        return None
    if not x:
        return None
    if budget <= 0:
        return ()
    for key, value in entries:
        found = _too_deep_at(value, budget - 1)
        if found is not None:
            return (key if isinstance(key, (str, int)) else repr(key), *found)
    return None


def _depth_guard(ok: _Ok, explain: _Explain, max_depth: int) -> tuple[_Ok, _Explain]:
    """Add the depth limit to a node that accepts containers without walking them."""

    def guarded_ok(x: Any, d: int) -> bool:
        if type(x) in _SCALARS:
            return ok(x, d)
        return ok(x, d) and _within_depth(x, max_depth - d)

    def guarded_explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        explain(x, path, problems, d)
        if type(x) not in _SCALARS:
            where = _too_deep_at(x, max_depth - d)
            if where is not None:
                problems.add((*path, *where), _too_deep(max_depth))

    return guarded_ok, guarded_explain


def _object_check(
    properties: dict[str, _Node],
    required: list[str],
    additional: _Node,
    max_depth: int,
) -> tuple[_Ok, _Explain, _Ok]:
    """The object keywords as one check: (ok, explain, ok that also demands an object).

    Every value is looked at — a listed property by its schema, one whose name matches a
    patternProperties pattern by that schema too, any other by ``additional`` (which is
    the depth-limited "anything" when the schema sets none).
    """
    property_oks = {name: node.ok_late() for name, node in properties.items()}
    get = property_oks.get
    required_names = tuple(required)
    closed = additional is _FALSE_NODE
    additional_ok = additional.ok_late()
    if len(properties) > 12:
        allowed = ", ".join(list(properties)[:10]) + f", ... ({len(properties)} in all)"
    else:
        allowed = ", ".join(properties)
    unexpected = (
        f"unexpected property (allowed: {allowed})"
        if properties
        else "unexpected property (no properties are allowed)"
    )

    # {"a": {"type": "integer"}} and friends: most values pass on their exact type, without
    # a call (the properties of a typical tool's arguments)
    at_a_glance = {
        name: node.exact for name, node in properties.items() if node.done and node.exact
    }
    glance = at_a_glance.get

    def typed_ok(x: Any, d: int) -> bool:
        if type(x) is not dict and not isinstance(x, Mapping):
            return False
        for name in required_names:
            if name not in x:
                return False
        if not x:
            return True
        if d >= max_depth:
            return False
        d += 1
        for name, value in x.items():
            if at_a_glance and type(value) in glance(name, ()):
                continue
            check = get(name)
            if check is None:
                if closed or not additional_ok(value, d):
                    return False
            elif not check(value, d):
                return False
        return True

    # Under "type": "object" the node uses typed_ok alone: one call on the hot path of
    # every tool call. Without it, values of other types pass the object keywords.
    def ok(x: Any, d: int) -> bool:
        if type(x) is dict or isinstance(x, Mapping):
            return typed_ok(x, d)
        return True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name in required_names:
            if name not in x:
                problems.add((*path, name), "required property is missing")
        if not x:
            return
        if d >= max_depth:
            problems.add(path, _too_deep(max_depth))
            return
        for name, value in x.items():
            node = properties.get(name)
            where = (*path, name if isinstance(name, str) else repr(name))
            if node is None:
                if closed:
                    problems.add(where, unexpected)
                else:
                    additional.explain(value, where, problems, d + 1)
            elif node is _FALSE_NODE:
                problems.add(where, "property is not allowed")
            else:
                node.explain(value, where, problems, d + 1)

    return ok, explain, typed_ok


def _pattern_object_check(
    properties: dict[str, _Node],
    patterns: list[_Node],
    matching: _Matching,
    required: list[str],
    additional: _Node,
    max_depth: int,
) -> tuple[_Ok, _Explain, _Ok]:
    """_object_check for a schema with patternProperties (kept off the common path).

    ``matching(name)`` says which patterns match a name, all at once (see
    :func:`toolnexus._ecma.compile_pattern_set`), so a name no pattern matches costs one
    search, however many patterns there are.
    """
    property_oks = {name: node.ok_late() for name, node in properties.items()}
    pattern_oks = tuple(node.ok_late() for node in patterns)
    required_names = tuple(required)
    closed = additional is _FALSE_NODE
    additional_ok = additional.ok_late()

    def typed_ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping):
            return False
        for name in required_names:
            if name not in x:
                return False
        if not x:
            return True
        if d >= max_depth:
            return False
        d += 1
        stop = _stopper()
        for name, value in x.items():
            check = property_oks.get(name)
            matched = check is not None
            if matched and not check(value, d):  # type: ignore[misc]
                return False
            if isinstance(name, str):
                for index in matching(name, stop):
                    matched = True
                    if not pattern_oks[index](value, d):
                        return False
            if not matched and (closed or not additional_ok(value, d)):
                return False
        return True

    def ok(x: Any, d: int) -> bool:
        return typed_ok(x, d) if isinstance(x, Mapping) else True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name in required_names:
            if name not in x:
                problems.add((*path, name), "required property is missing")
        if not x:
            return
        if d >= max_depth:
            problems.add(path, _too_deep(max_depth))
            return
        stop = _stopper()
        for name, value in x.items():
            where = (*path, name if isinstance(name, str) else repr(name))
            node = properties.get(name)
            matched = node is not None
            if node is not None:
                node.explain(value, where, problems, d + 1)
            if isinstance(name, str):
                for index in matching(name, stop):
                    matched = True
                    patterns[index].explain(value, where, problems, d + 1)
            if not matched:
                if closed:
                    problems.add(where, "unexpected property (its name matches no pattern)")
                else:
                    additional.explain(value, where, problems, d + 1)

    return ok, explain, typed_ok


def _each_ok(check: _Ok, items: Any, d: int, at_a_glance: frozenset[type]) -> bool:
    """Whether ``check`` holds for every item of a long array, the token heard after each
    few thousand items."""
    for start in range(0, len(items), _LONG):
        if start:
            _heard()
        for item in items[start : start + _LONG]:
            if type(item) not in at_a_glance and not check(item, d):
                return False
    return True


def _array_check(prefix: list[_Node], items: _Node, max_depth: int) -> tuple[_Ok, _Explain, _Ok]:
    """``prefixItems`` and ``items`` as one check: (ok, explain, ok that also demands an
    array). ``items`` is the depth-limited "anything" when the schema sets none, so every
    item is looked at."""
    prefix_oks = tuple(node.ok_late() for node in prefix)
    count = len(prefix_oks)
    closed = items is _FALSE_NODE
    items_ok = items.ok_late()
    # list[int] and friends: most items pass on their exact type, without a call
    at_a_glance = items.exact if items.done else frozenset()
    floats = items.done and items.floats

    if not count and not closed:
        # the common shape (items alone): no prefix to pair up, no length to check
        def typed_ok(x: Any, d: int) -> bool:
            if type(x) is not list and not isinstance(x, (list, tuple)):
                return False
            if not x:
                return True
            if d >= max_depth:
                return False
            d += 1
            if at_a_glance:
                if len(x) > 16:
                    kinds = set(map(type, x))
                    if at_a_glance.issuperset(kinds):
                        return True  # a long list[int] or list[str]: one pass at C speed
                    if floats and kinds <= _INT_FLOAT and _all_finite(x):
                        return True  # a long list[float] (an embedding): likewise
                    if len(x) > _LONG:
                        return _each_ok(items_ok, x, d, at_a_glance)
                for item in x:
                    if type(item) not in at_a_glance and not items_ok(item, d):
                        return False
                return True
            if len(x) > _LONG:
                return _each_ok(items_ok, x, d, at_a_glance)
            for item in x:  # noqa: SIM110 (faster than all() over a generator)
                if not items_ok(item, d):
                    return False
            return True

    else:

        def typed_ok(x: Any, d: int) -> bool:
            if not isinstance(x, (list, tuple)):
                return False
            if closed and len(x) > count:
                return False
            if not x:
                return True
            if d >= max_depth:
                return False
            d += 1
            for check, value in zip(prefix_oks, x):  # noqa: B905 (x may be shorter)
                if not check(value, d):
                    return False
            if not closed:
                if len(x) > _LONG:
                    return _each_ok(items_ok, x[count:], d, at_a_glance)
                for item in x[count:]:
                    if type(item) not in at_a_glance and not items_ok(item, d):
                        return False
            return True

    # Under "type": "array" the node uses typed_ok alone; without it, values of other
    # types pass the array keywords.
    def ok(x: Any, d: int) -> bool:
        if type(x) is list or isinstance(x, (list, tuple)):
            return typed_ok(x, d)
        return True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, (list, tuple)):
            return
        if closed and len(x) > count:
            problems.add(path, f"expected at most {_plural(count, 'item')}, got {len(x)}")
        if not x:
            return
        if d >= max_depth:
            problems.add(path, _too_deep(max_depth))
            return
        for index, (node, value) in enumerate(zip(prefix, x, strict=False)):
            node.explain(value, (*path, index), problems, d + 1)
        if not closed:
            for index in range(count, len(x)):
                items.explain(x[index], (*path, index), problems, d + 1)

    return ok, explain, typed_ok


def _any_of(branches: list[_Node]) -> tuple[_Ok, _Explain]:
    oks = tuple(branch.ok_late() for branch in branches)

    def ok(x: Any, d: int) -> bool:
        for check in oks:  # noqa: SIM110 (faster than any() over a generator)
            if check(x, d):
                return True
        return False

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if ok(x, d):
            return
        _explain_no_match(branches, x, path, problems, d)

    return ok, explain


def _one_of(branches: list[_Node]) -> tuple[_Ok, _Explain]:
    oks = tuple(branch.ok_late() for branch in branches)

    def ok(x: Any, d: int) -> bool:
        matched = False
        for check in oks:
            if check(x, d):
                if matched:
                    return False
                matched = True
        return matched

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        matching = [index + 1 for index, check in enumerate(oks) if check(x, d)]
        if len(matching) == 1:
            return
        if not matching:
            _explain_no_match(branches, x, path, problems, d)
            return
        which = _alternatives([str(index) for index in matching]).replace(" or ", " and ")
        problems.add(
            path,
            f"matches {len(matching)} of the {len(branches)} alternatives ({which});"
            " oneOf needs exactly one",
        )

    return ok, explain


def _explain_no_match(
    branches: list[_Node], x: Any, path: _Path, problems: _Problems, d: int
) -> None:
    """Say something a model can act on when no alternative matched."""
    candidates: list[int] = []
    expected: list[str] = []
    for index, branch in enumerate(branches):
        found = branch.reject(x, d)
        if found is None:
            candidates.append(index)
        else:
            expected.extend(found)
    if not candidates:
        # every branch wants another type or value: one line lists them all
        problems.add(path, f"expected {_alternatives(expected)}, got {_describe(x)}")
        return
    none = f"matches none of the {len(branches)} alternatives"
    if len(candidates) == 1:
        # the only branch of the right shape: its own problems are the useful ones
        before = len(problems.items)
        branches[candidates[0]].explain(x, path, problems, d)
        if len(problems.items) == before:
            problems.add(path, none)  # never let a failed anyOf go unmentioned
        return
    best_index = candidates[0]
    best: list[str] = []
    for index in candidates:
        trial = _Problems(ceiling=50)
        with contextlib.suppress(_Stop):
            branches[index].explain(x, path, trial, d)
        if trial.items and (not best or len(trial.items) < len(best)):
            best_index, best = index, trial.items
    if not best:
        problems.add(path, none)
        return
    detail = "; ".join(best[:3])
    if len(best) > 3:
        detail += f"; ... and {len(best) - 3} more"
    problems.add(path, f"{none}; closest is alternative {best_index + 1}: {detail}")


def _not(inner: _Node, raw: Any) -> tuple[_Ok, _Explain]:
    def ok(x: Any, d: int) -> bool:
        return not inner.ok(x, d)

    def message(x: Any, d: int) -> str:
        return f"{_not_description(raw)}, got {_describe(x)}"

    return _leaf(ok, message)


def _not_description(raw: Any) -> str:
    """``must not be null`` for the simple shapes; the schema itself for the rest."""
    if isinstance(raw, Mapping):
        plain = {k: v for k, v in raw.items() if k not in ANNOTATION_KEYWORDS}
        if set(plain) == {"type"}:
            names = [plain["type"]] if isinstance(plain["type"], str) else list(plain["type"])
            return f"must not be {_alternatives(names)}"
        if set(plain) == {"const"}:
            return f"must not be {_json_short(plain['const'])}"
        if set(plain) == {"enum"}:
            return f"must not be {_expect_enum(list(plain['enum']))}"
    return f"must not match {_json_short(raw, 60)}"


def add_number_checks(
    compiler: _Compiler,
    schema: Mapping[str, Any],
    pointer: str,
    add: Callable[[tuple[_Ok, _Explain]], None],
) -> None:
    is_number = _is_number
    if "minimum" in schema:
        low = compiler.number(schema, "minimum", pointer)
        add(_leaf(
            lambda x, d: not is_number(x) or x >= low,
            lambda x, d: f"expected at least {_number_text(low)}, got {_number_text(x)}",
        ))  # fmt: skip
    if "exclusiveMinimum" in schema:
        above = compiler.number(schema, "exclusiveMinimum", pointer)
        add(_leaf(
            lambda x, d: not is_number(x) or x > above,
            lambda x, d: f"expected more than {_number_text(above)}, got {_number_text(x)}",
        ))  # fmt: skip
    if "maximum" in schema:
        high = compiler.number(schema, "maximum", pointer)
        add(_leaf(
            lambda x, d: not is_number(x) or x <= high,
            lambda x, d: f"expected at most {_number_text(high)}, got {_number_text(x)}",
        ))  # fmt: skip
    if "exclusiveMaximum" in schema:
        below = compiler.number(schema, "exclusiveMaximum", pointer)
        add(_leaf(
            lambda x, d: not is_number(x) or x < below,
            lambda x, d: f"expected less than {_number_text(below)}, got {_number_text(x)}",
        ))  # fmt: skip
    if "multipleOf" in schema:
        step = compiler.number(schema, "multipleOf", pointer)
        if step <= 0:
            raise compiler.fail(
                pointer, "multipleOf", f"'multipleOf' must be greater than 0, got {step}"
            )
        add(_leaf(
            lambda x, d: not is_number(x) or _is_multiple(x, step),
            lambda x, d: f"expected a multiple of {_number_text(step)}, got {_number_text(x)}",
        ))  # fmt: skip


def _format_leaf(name: str, parts: FormatParts) -> tuple[_Ok, _Explain]:
    shown = json.dumps(name)
    quick, thorough = parts
    return _leaf(
        lambda x, d: not isinstance(x, str) or quick(x) is not None or thorough(x),
        lambda x, d: f"expected a {shown} string, got {_describe(x)}",
    )


def _fused_scalar(
    schema: Mapping[str, Any],
    type_names: tuple[str, ...] | None,
    checking: Set[str],
    pattern: _Pattern | None,
    format_test: FormatParts | None,
) -> _Ok | None:
    """One closure for a typed string or number with bounds — the commonest constrained
    leaf in a tool schema — instead of a chain of one call per keyword.

    Only the yes/no path is fused; problems still come from the per-keyword checks, which
    have already validated the keyword values. Returns None for any other node. (An
    asserted ``format`` checks strings only, so a number leaf leaves it out.)
    """
    if type_names == ("string",) and checking <= _FUSED_STRING:
        fused = _fused_string(schema.get("minLength", 0), schema.get("maxLength"), pattern)
        if format_test is None:
            return fused
        quick, thorough = format_test
        if pattern is None and "minLength" not in schema and "maxLength" not in schema:

            def format_ok(x: Any, d: int) -> bool:
                if type(x) is not str and not isinstance(x, str):
                    return False
                return quick(x) is not None or thorough(x)

            return format_ok

        def fused_format_ok(x: Any, d: int) -> bool:
            return fused(x, d) and (quick(x) is not None or thorough(x))

        return fused_format_ok
    if (type_names == ("integer",) or type_names == ("number",)) and checking <= _FUSED_NUMBER:
        is_type = _is_integer if type_names == ("integer",) else _is_number
        low = schema.get("minimum")
        high = schema.get("maximum")
        above = schema.get("exclusiveMinimum")
        below = schema.get("exclusiveMaximum")
        step = schema.get("multipleOf")

        def number_ok(x: Any, d: int) -> bool:
            if not is_type(x, d):
                return False
            if low is not None and not x >= low:
                return False
            if high is not None and not x <= high:
                return False
            if above is not None and not x > above:
                return False
            if below is not None and not x < below:
                return False
            return step is None or _is_multiple(x, step)

        return number_ok
    return None


def _fused_string(shortest: int, longest: int | None, pattern: _Pattern | None) -> _Ok:
    """The yes/no check of ``{"type": "string"}`` with minLength/maxLength/pattern."""
    most = sys.maxsize if longest is None else longest
    if pattern is None:

        def string_ok(x: Any, d: int) -> bool:
            if type(x) is not str and not isinstance(x, str):
                return False
            return shortest <= len(x) <= most

        return string_ok
    search = pattern.search
    if search is None:  # only the linear engine runs this pattern
        test = pattern.test

        def string_test_ok(x: Any, d: int) -> bool:
            if type(x) is not str and not isinstance(x, str):
                return False
            return shortest <= len(x) <= most and test(x)

        return string_test_ok
    # re runs it directly (no wrapper call per value) on strings within its bound, and the
    # linear engine beyond; the memo is written here so errors() does not run it again
    on_re = sys.maxsize if pattern.longest is None else pattern.longest
    beyond = pattern.test
    memo = pattern

    def string_search_ok(x: Any, d: int) -> bool:
        if type(x) is not str and not isinstance(x, str):
            return False
        size = len(x)
        if size < shortest or size > most:
            return False
        if size > on_re:
            return beyond(x)
        if search(x) is None:
            memo.failed = x
            return False
        memo.passed = x
        return True

    return string_search_ok


def _is_multiple(x: int | float, step: int | float) -> bool:
    if type(x) is int and type(step) is int:
        return x % step == 0
    if x != x or x in (_INFINITY, -_INFINITY):
        return False
    return (_exact(x) / _exact(step)).denominator == 1


def _exact(number: int | float) -> Fraction:
    """The number as the decimal a person wrote: 0.1 is 1/10 here, not the float nearest it."""
    from decimal import Decimal
    from fractions import Fraction

    if isinstance(number, int):
        return Fraction(int(number))
    return Fraction(Decimal(repr(float(number))))


def add_string_checks(
    compiler: _Compiler,
    schema: Mapping[str, Any],
    pointer: str,
    add: Callable[[tuple[_Ok, _Explain]], None],
) -> _Pattern | None:
    """Add the string keywords' checks; return the compiled ``pattern``, if any."""
    if "minLength" in schema:
        shortest = compiler.count(schema, "minLength", pointer)
        add(_leaf(
            lambda x, d: not isinstance(x, str) or len(x) >= shortest,
            lambda x, d: f"expected at least {_plural(shortest, 'character')}, got {len(x)}",
        ))  # fmt: skip
    if "maxLength" in schema:
        longest = compiler.count(schema, "maxLength", pointer)
        add(_leaf(
            lambda x, d: not isinstance(x, str) or len(x) <= longest,
            lambda x, d: f"expected at most {_plural(longest, 'character')}, got {len(x)}",
        ))  # fmt: skip
    if "pattern" not in schema:
        return None
    pattern = compiler.pattern(schema["pattern"], pointer, "pattern")
    test = pattern.test
    shown = _json_short(schema["pattern"], 60)
    add(_leaf(
        lambda x, d: not isinstance(x, str) or test(x),
        lambda x, d: f"expected a string matching {shown}, got {_describe(x)}",
    ))  # fmt: skip
    return pattern


def add_count_checks(
    compiler: _Compiler,
    schema: Mapping[str, Any],
    pointer: str,
    add: Callable[[tuple[_Ok, _Explain]], None],
) -> None:
    if "minItems" in schema:
        fewest = compiler.count(schema, "minItems", pointer)
        add(_leaf(
            lambda x, d: not isinstance(x, (list, tuple)) or len(x) >= fewest,
            lambda x, d: f"expected at least {_plural(fewest, 'item')}, got {len(x)}",
        ))  # fmt: skip
    if "maxItems" in schema:
        most = compiler.count(schema, "maxItems", pointer)
        add(_leaf(
            lambda x, d: not isinstance(x, (list, tuple)) or len(x) <= most,
            lambda x, d: f"expected at most {_plural(most, 'item')}, got {len(x)}",
        ))  # fmt: skip
    if "uniqueItems" in schema:
        flag = schema["uniqueItems"]
        if not isinstance(flag, bool):
            raise compiler.fail(
                pointer, "uniqueItems", f"'uniqueItems' must be a boolean, got {_describe(flag)}"
            )
        if flag:
            add(_unique_check(compiler.max_depth))
    if "minProperties" in schema:
        least = compiler.count(schema, "minProperties", pointer)
        add(_leaf(
            lambda x, d: not isinstance(x, Mapping) or len(x) >= least,
            lambda x, d: f"expected at least {_plural(least, 'property')}, got {len(x)}",
        ))  # fmt: skip
    if "maxProperties" in schema:
        most_properties = compiler.count(schema, "maxProperties", pointer)
        add(_leaf(
            lambda x, d: not isinstance(x, Mapping) or len(x) <= most_properties,
            lambda x, d: (
                f"expected at most {_plural(most_properties, 'property')}, got {len(x)}"
            ),
        ))  # fmt: skip


def _first_duplicate(x: Any, budget: int) -> tuple[int, int] | None:
    seen: dict[Any, int] = {}
    for index, item in enumerate(x):
        key = _canon(item, budget)
        first = seen.setdefault(key, index)
        if first != index:
            return first, index
    return None


def _unique_check(max_depth: int) -> tuple[_Ok, _Explain]:
    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, (list, tuple)):
            return True
        try:
            return _first_duplicate(x, max_depth - d) is None
        except _TooDeep:
            return True  # the node's depth limit refuses this value and says where

    def message(x: Any, d: int) -> str:
        first, second = _first_duplicate(x, max_depth - d) or (0, 0)
        return f"expected unique items, got duplicates at index {first} and {second}"

    return _leaf(ok, message)


class _Pattern:
    """A compiled ``pattern`` that answers a repeat question about the same string from
    memory.

    :meth:`Validator.errors` asks the fast check first and the explaining one after it;
    with the memo, a pattern runs once per value, not twice. ``passed`` and ``failed`` are
    the last string that matched and the last that did not, each written in one
    assignment: threads sharing a validator may overwrite each other's, but a string is
    immutable, so whatever object is found there has that answer. The fast check of a
    typed string (``_fused_scalar``) runs ``search`` inline and writes the memo itself.
    """

    __slots__ = ("failed", "longest", "passed", "predicate", "search")

    def __init__(self, parts: SearchParts) -> None:
        self.search, self.longest, self.predicate = parts
        self.passed: str | None = None
        self.failed: str | None = None

    def test(self, text: str) -> bool:
        if text is self.passed:
            return True
        if text is self.failed:
            return False
        search = self.search
        longest = self.longest
        if search is not None and (longest is None or len(text) <= longest):
            answer = search(text) is not None
        else:
            answer = self.predicate(text, _stopper())
        if answer:
            self.passed = text
        else:
            self.failed = text
        return answer


def _property_names(names: _Node) -> tuple[_Ok, _Explain]:
    names_ok = names.ok_late()

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping):
            return True
        for name in x:  # noqa: SIM110 (faster than all() over a generator)
            if not names_ok(name, d):
                return False
        return True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name in x:
            if names_ok(name, d):
                continue
            trial = _Problems(ceiling=5)
            with contextlib.suppress(_Stop):
                names.explain(name, (), trial, d)
            where = (*path, name if isinstance(name, str) else repr(name))
            if names is _FALSE_NODE:
                problems.add(where, "unexpected property (no properties are allowed)")
            else:
                problems.add(where, f"invalid property name: {_first_problems(trial.items)}")

    return ok, explain


def _first_problems(items: list[str], path: _Path = (), shown: int = 3) -> str:
    """A few problems found under ``path``, as one clause (that path's own prefix dropped)."""
    if not items:
        return "does not match"
    prefix = f"{format_path(path)}: " if path else ""
    if prefix:
        items = [item[len(prefix) :] if item.startswith(prefix) else item for item in items]
    detail = "; ".join(items[:shown])
    if len(items) > shown:
        detail += f"; ... and {len(items) - shown} more"
    return detail


def _dependent_required(rules: list[tuple[str, tuple[str, ...]]]) -> tuple[_Ok, _Explain]:
    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping):
            return True
        for name, needs in rules:
            if name in x:
                for need in needs:
                    if need not in x:
                        return False
        return True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name, needs in rules:
            if name in x:
                for need in needs:
                    if need not in x:
                        because = json.dumps(name, ensure_ascii=False)
                        problems.add(
                            (*path, need), f"required property is missing ({because} is present)"
                        )

    return ok, explain


def _dependent_schemas(rules: list[tuple[str, _Node]]) -> tuple[_Ok, _Explain]:
    checks = tuple((name, node.ok_late()) for name, node in rules)

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping):
            return True
        for name, check in checks:  # noqa: SIM110 (faster than all() over a generator)
            if name in x and not check(x, d):
                return False
        return True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name, node in rules:
            if name in x and not node.ok(x, d):
                trial = _Problems(ceiling=50)
                with contextlib.suppress(_Stop):
                    node.explain(x, path, trial, d)
                because = json.dumps(name, ensure_ascii=False)
                problems.add(
                    path,
                    f"does not match the schema required when {because} is present:"
                    f" {_first_problems(trial.items, path)}",
                )

    return ok, explain


def _contains_check(inner: _Node, fewest: int, most: int | None, raw: Any) -> tuple[_Ok, _Explain]:
    inner_ok = inner.ok_late()
    shown = _json_short(raw, 60)

    def count(x: Any, d: int) -> int:
        found = 0
        for item in x:
            if inner_ok(item, d + 1):
                found += 1
        return found

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, (list, tuple)):
            return True
        if most is None and fewest == 1:
            for item in x:  # noqa: SIM110 (faster than any() over a generator)
                if inner_ok(item, d + 1):
                    return True
            return False
        found = count(x, d)
        return found >= fewest and (most is None or found <= most)

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, (list, tuple)):
            return
        found = count(x, d)
        if found < fewest:
            problems.add(
                path,
                f"expected at least {_plural(fewest, 'item')} matching {shown}, got {found}",
            )
        elif most is not None and found > most:
            problems.add(
                path, f"expected at most {_plural(most, 'item')} matching {shown}, got {found}"
            )

    return ok, explain


def _conditional(
    condition: _Node, then: _Node | None, otherwise: _Node | None, raw: Any
) -> tuple[_Ok, _Explain]:
    shown = _json_short(raw, 60)

    def ok(x: Any, d: int) -> bool:
        if condition.ok(x, d):
            return then is None or then.ok(x, d)
        return otherwise is None or otherwise.ok(x, d)

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if condition.ok(x, d):
            branch, name = then, "then"
        else:
            branch, name = otherwise, "else"
        if branch is None or branch.ok(x, d):
            return
        trial = _Problems(ceiling=50)
        with contextlib.suppress(_Stop):
            branch.explain(x, path, trial, d)
        problems.add(
            path,
            f"does not match the '{name}' branch of the condition {shown}:"
            f" {_first_problems(trial.items, path)}",
        )

    return ok, explain


# Annotation collection for unevaluatedProperties / unevaluatedItems. Only a node that is
# valid for the value produces annotations, so these run after the node's other checks
# passed, and look again (ok) only at branches whose validity is not implied by it.


def _seen_properties(node: _Node, x: Mapping[str, Any], d: int, own: bool) -> set[str] | None:
    """The property names of ``x`` that ``node`` evaluated; ``None`` means all of them.

    ``own`` leaves out the node's own unevaluatedProperties (the one asking).
    """
    if node.seen_all_properties or (node.seen_unevaluated_properties and not own):
        return None
    if node.memo and not own:
        names_seen: set[str] | None = _seen_once(node, x, d, _seen_properties)
        return names_seen
    seen: set[str] = set()
    names = node.seen_names
    if names:
        seen.update(name for name in x if name in names)
    matching = node.seen_match
    if matching is not None:
        seen.update(name for name in x if isinstance(name, str) and matching(name))
    for sub in _valid_inplace(node, x, d):
        more = _seen_properties(sub, x, d, False)
        if more is None:
            return None
        seen |= more
    return seen


def _seen_items(node: _Node, x: Any, d: int, own: bool) -> set[int] | None:
    """The indices of ``x`` that ``node`` evaluated; ``None`` means all of them."""
    if node.seen_all_items or (node.seen_unevaluated_items and not own):
        return None
    if node.memo and not own:
        indices_seen: set[int] | None = _seen_once(node, x, d, _seen_items)
        return indices_seen
    seen: set[int] = set(range(min(node.seen_prefix, len(x))))
    contains = node.seen_contains
    if contains is not None:
        seen.update(index for index, item in enumerate(x) if contains.ok(item, d + 1))
    for sub in _valid_inplace(node, x, d):
        more = _seen_items(sub, x, d, False)
        if more is None:
            return None
        seen |= more
    return seen


def _seen_once(node: _Node, x: Any, d: int, collect: Callable[..., Any]) -> Any:
    """What a shared (memoized) node evaluated in ``x``, collected once per validation."""
    run = _LOCAL.run
    if run is None:
        return collect(node, x, d, True)
    key = (id(node), id(x), d, collect is _seen_items)
    found = run.answers.get(key)
    if found is None:
        # "True": the node is not the one asking, but its memo must not recurse here again
        found = run.answers[key] = (collect(node, x, d, True), x)
    return found[0]


def _valid_inplace(node: _Node, x: Any, d: int) -> list[_Node]:
    """The subschemas applied to the same value that passed, so their annotations count."""
    found = list(node.inplace)
    found.extend(sub for sub in node.inplace_if_valid if sub.ok(x, d))
    if node.conditional is not None:
        condition, then, otherwise = node.conditional
        if condition.ok(x, d):
            found.append(condition)
            if then is not None:
                found.append(then)
        elif otherwise is not None:
            found.append(otherwise)
    if node.dependent and isinstance(x, Mapping):
        found.extend(sub for name, sub in node.dependent if name in x)
    return found


def _unevaluated_properties(node: _Node, rest: _Node, max_depth: int) -> tuple[_Ok, _Explain]:
    rest_ok = rest.ok_late()

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping) or not x:
            return True
        seen = _seen_properties(node, x, d, True)
        if seen is None:
            return True
        for name, value in x.items():
            if name not in seen and not rest_ok(value, d + 1):
                return False
        return True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, Mapping) or not x:
            return
        seen = _seen_properties(node, x, d, True)
        if seen is None:
            return
        for name, value in x.items():
            if name in seen:
                continue
            where = (*path, name if isinstance(name, str) else repr(name))
            if rest is _FALSE_NODE:
                problems.add(where, "unexpected property (no keyword of the schema describes it)")
            else:
                rest.explain(value, where, problems, d + 1)

    return ok, explain


def _unevaluated_items(node: _Node, rest: _Node, max_depth: int) -> tuple[_Ok, _Explain]:
    rest_ok = rest.ok_late()

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, (list, tuple)) or not x:
            return True
        seen = _seen_items(node, x, d, True)
        if seen is None:
            return True
        for index, item in enumerate(x):
            if index not in seen and not rest_ok(item, d + 1):
                return False
        return True

    def explain(x: Any, path: _Path, problems: _Problems, d: int) -> None:
        if not isinstance(x, (list, tuple)) or not x:
            return
        seen = _seen_items(node, x, d, True)
        if seen is None:
            return
        for index, item in enumerate(x):
            if index in seen:
                continue
            if rest is _FALSE_NODE:
                problems.add(
                    (*path, index), "unexpected item (no keyword of the schema describes it)"
                )
            else:
                rest.explain(item, (*path, index), problems, d + 1)

    return ok, explain


def _in_run(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` (a root's ok or explain) run inside a :class:`_Run`: its own, unless the
    thread's validation already has one (a token given to errors() or is_valid())."""
    local = _LOCAL

    def in_run(*arguments: Any) -> Any:
        if local.run is not None:
            return check(*arguments)
        local.run = _Run(None)
        try:
            return check(*arguments)
        finally:
            local.run = None

    return in_run


def _heard_while(token: CancellationToken, check: Callable[[Any], Any], instance: Any) -> Any:
    """``check(instance)`` inside a :class:`_Run` that hears ``token``."""
    local = _LOCAL
    outer = local.run
    local.run = _Run(token)
    try:
        return check(instance)
    finally:
        local.run = outer


# --------------------------------------------------------------------------- public API


class Validator:
    """A JSON Schema compiled once, checking many values fast.

    Building it checks the schema and raises :class:`SchemaError` for anything it cannot
    honour (an unsupported keyword, a bad keyword value, an invalid or refused ``pattern``,
    a dangling ``$ref``, a reference to a document neither in the schema nor in
    ``registry``, a ``$ref`` loop that never reaches a property or item). After that,
    :meth:`errors` and :meth:`is_valid` never raise and always agree: a value nested
    deeper than ``max_depth`` levels is a problem like any other, and at most
    ``max_problems`` problems are listed.

    ``registry`` maps absolute URIs to schema documents that ``$ref``/``$dynamicRef`` may
    name (nothing is ever fetched). ``format_assertion=True`` checks ``format`` for
    date-time, date, time, duration, email, hostname, ipv4, ipv6, uri, uri-reference,
    uuid, regex and json-pointer (other formats stay annotations, as all are by default).

    The schema is read once; changing it afterwards does not change the validator.

    Example::

        v = Validator({"type": "object", "properties": {"steps": {"type": "integer"}},
                       "required": ["steps"], "additionalProperties": False})
        v.errors({"steps": "3"})    # ['steps: expected integer, got string "3"']
        v.is_valid({"steps": 3})    # True
    """

    __slots__ = ("_explain", "_max_depth", "_max_problems", "_ok", "schema")

    def __init__(
        self,
        schema: Mapping[str, Any] | bool,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_problems: int = DEFAULT_MAX_PROBLEMS,
        registry: Mapping[str, Mapping[str, Any] | bool] | None = None,
        format_assertion: bool = False,
    ) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise InvalidValueError(f"max_depth must be an int >= 1, got {max_depth!r}")
        if isinstance(max_problems, bool) or not isinstance(max_problems, int) or max_problems < 1:
            raise InvalidValueError(f"max_problems must be an int >= 1, got {max_problems!r}")
        self.schema = schema
        self._max_depth = max_depth
        self._max_problems = max_problems
        compiler = _Compiler(schema, max_depth, registry, format_assertion)
        try:
            root = compiler.compile()
        except RecursionError:
            raise SchemaError("#", None, "the schema nests too deeply to compile") from None
        self._ok = root.ok
        self._explain = root.explain
        if compiler.memoized:
            # a validation of a schema with shared subschemas keeps their answers in a _Run
            self._ok = _in_run(root.ok)
            self._explain = _in_run(root.explain)

    def errors(self, instance: Any, token: CancellationToken | None = None) -> list[str]:
        """Every problem with ``instance``, as ``"path: problem"`` strings; ``[]`` when valid.

        Root-level problems have no path prefix. Past ``max_problems`` the list ends with
        ``"... and N more"``.

        ``token`` (a call's ``ctx.cancellation_token``) is heard while checking: once it is
        cancelled, the check stops and raises
        :class:`~toolnexus.errors.OperationCancelledError`, within milliseconds even on a
        huge value. Without a token, or with one not cancelled, it never raises.

        Example::

            Validator({"type": "integer"}).errors(True)   # ['expected integer, got boolean true']
        """
        if token is not None and token.can_be_cancelled:
            problems: list[str] = _heard_while(token, self.errors, instance)
            return problems
        try:
            if self._ok(instance, 0):
                return []
        except RecursionError:
            pass
        return self._explained(instance)

    def _explained(self, instance: Any) -> list[str]:
        """The problems of an instance the fast check refused."""
        problems = _Problems()
        try:
            self._explain(instance, (), problems, 0)
        except _Stop:
            pass
        except RecursionError:
            problems.items.append(_too_deep(self._max_depth))
        items = problems.items
        if not items:
            # ok() and explain() disagree: never call an invalid value valid
            items.append("does not match the schema")
        limit = self._max_problems
        if len(items) > limit:
            rest = len(items) - limit
            more = f"at least {rest}" if problems.truncated else str(rest)
            items = [*items[:limit], f"... and {more} more"]
        return items

    def is_valid(self, instance: Any, token: CancellationToken | None = None) -> bool:
        """True when ``instance`` satisfies the schema. Never raises, except as
        :meth:`errors` does when ``token`` is cancelled during the check.

        Example::

            Validator({"type": "string", "maxLength": 3}).is_valid("abcd")   # False
        """
        if token is not None and token.can_be_cancelled:
            return bool(_heard_while(token, self.is_valid, instance))
        try:
            return bool(self._ok(instance, 0))
        except RecursionError:
            return False

    def __repr__(self) -> str:
        return f"<Validator {_json_short(self.schema, 60)}>"


def check_schema(schema: Mapping[str, Any] | bool) -> None:
    """Raise :class:`SchemaError` if the validator cannot honour ``schema``; else return None.

    Example::

        check_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    """
    Validator(schema)


def validate(schema: Mapping[str, Any] | bool, instance: Any) -> list[str]:
    """The problems with ``instance`` under ``schema`` (``[]`` when valid).

    Compiles the schema on every call; keep a :class:`Validator` to check many values.

    Example::

        validate({"type": "array", "items": {"type": "string"}}, ["a", 2])
        # ['[1]: expected string, got integer 2']
    """
    return Validator(schema).errors(instance)
