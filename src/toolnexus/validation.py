"""JSON Schema validation of tool arguments, on the stdlib alone.

This module owns the subset of JSON Schema (2020-12 spelling) that tool schemas use, and
nothing else: a :class:`Validator` compiles a schema once into small closures, refuses at
once (:class:`SchemaError`) a keyword it cannot honour, and then answers two questions
fast — is this value valid, and if not, what exactly is wrong with it, in words short
enough for a model to correct its next call (``steps: expected integer, got string "3"``).

Supported keywords: ``type`` (a name or a list of names), ``properties``, ``required``,
``additionalProperties``, ``items``, ``prefixItems``, ``enum``, ``const``, ``minimum``,
``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``, ``minLength``,
``maxLength``, ``pattern``, ``format`` (an annotation only), ``minItems``, ``maxItems``,
``uniqueItems``, ``minProperties``, ``maxProperties``, ``anyOf``, ``oneOf``, ``allOf``,
``not``, and ``$ref`` to a JSON pointer inside the same document (``#``, ``#/$defs/...``,
``#/definitions/...``). Annotations (``title``, ``description``, ``default``, ...) and
``x-`` extension keys are accepted and ignored.

JSON semantics, not Python's: ``True`` is never a number, ``3.0`` is an integer, ``1`` and
``1.0`` are equal for ``enum``/``const``/``uniqueItems`` while ``True`` and ``1`` are not.
Objects are mappings, arrays are lists (or tuples); string lengths count code points.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Mapping, Set
from typing import TYPE_CHECKING, Any

from .errors import InvalidValueError, SchemaError

if TYPE_CHECKING:
    from fractions import Fraction

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
        "$ref", "$defs", "definitions",
    }
)  # fmt: skip

#: Keywords that describe a value without constraining it; accepted and ignored.
ANNOTATION_KEYWORDS: frozenset[str] = frozenset(
    {
        "title", "description", "default", "examples", "$schema", "$id", "$anchor",
        "$comment", "$vocabulary", "deprecated", "readOnly", "writeOnly",
        "contentMediaType", "contentEncoding", "contentSchema",
    }
)  # fmt: skip

_KNOWN_KEYWORDS = SUPPORTED_KEYWORDS | ANNOTATION_KEYWORDS
# the supported keywords that constrain a value (format is an annotation; $defs a container)
_CHECKING_KEYWORDS = SUPPORTED_KEYWORDS - {"format", "$defs", "definitions"}
_NUMBER_KEYWORDS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_STRING_KEYWORDS = frozenset({"minLength", "maxLength", "pattern"})
_FUSED_STRING = frozenset({"type", "minLength", "maxLength", "pattern"})
_FUSED_NUMBER = frozenset({"type", *_NUMBER_KEYWORDS})
_COUNT_KEYWORDS = frozenset(
    {"minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties"}
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
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _alternatives(options: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c`` — shortened past a dozen."""
    unique = list(dict.fromkeys(options))
    if len(unique) > 12:
        return ", ".join(unique[:10]) + f", ... ({len(unique)} in all)"
    if len(unique) <= 1:
        return "".join(unique)
    return ", ".join(unique[:-1]) + " or " + unique[-1]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


def _format_path(path: _Path) -> str:
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
        text = f"{_format_path(path)}: {message}" if path else message
        if text in self.seen:
            return
        if len(self.items) >= self.ceiling:
            self.truncated = True
            raise _Stop
        self.seen.add(text)
        self.items.append(text)


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
    t = type(x)
    if t is int or t is float:
        return True
    return isinstance(x, (int, float)) and not isinstance(x, bool)


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
# Exact Python types accepted by a JSON type without a further look (the fast path).
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
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
    if value is None or isinstance(value, (str, bool, int, float)):
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

    __slots__ = ("done", "exact", "explain", "links", "ok", "pointer", "reject")

    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        self.done = False
        self.ok: _Ok = _never
        self.explain: _Explain = _explain_nothing
        self.reject: Callable[[Any, int], list[str] | None] = _reject_nothing
        # same-instance references (keyword, node), for finding loops that never descend
        self.links: list[tuple[str, _Node]] = []
        # for a node that only checks a scalar type: the Python types it accepts at a glance
        self.exact: frozenset[type] = frozenset()

    def ok_late(self) -> _Ok:
        """``ok``, or a late-bound call to it while the node is still being compiled."""
        if self.done:
            return self.ok
        return lambda x, d: self.ok(x, d)


def _explain_nothing(x: Any, path: _Path, problems: _Problems, d: int) -> None:
    return None


def _reject_nothing(x: Any, d: int) -> list[str] | None:
    return None


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


def _escape(segment: str | int) -> str:
    text = str(segment)
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


# --------------------------------------------------------------------------- the compiler


class _Compiler:
    def __init__(self, root: Any, max_depth: int) -> None:
        self.root = root
        self.max_depth = max_depth
        self.nodes: dict[int, _Node] = {}
        self.started: set[int] = set()
        self.pending: list[tuple[Any, str]] = []
        # keeps every compiled schema object alive, so an id() is never reused meanwhile
        self.keep: list[Any] = []
        # what `true`, `{}` and unlisted properties or items compile to: any value nested
        # no deeper than the limit
        self.anything = _Node("#")
        self.anything.ok, self.anything.explain = _depth_guard(_always, _explain_nothing, max_depth)
        self.anything.done = True

    # -- entry ---------------------------------------------------------------------------

    def compile(self) -> _Node:
        root = self.node(self.root, "#", 0)
        while self.pending:
            schema, pointer = self.pending.pop()
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
        key = id(schema)
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
        self.build(node, schema, pointer, level)
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

        if checking <= {"type"}:
            # a leaf like {"type": "integer"}: most nodes of a tool schema; built once, shared
            if checking:
                names = self.types(schema, pointer)
                assert names is not None
                node.ok, node.explain, node.reject = _type_leaf(names)
                if _SCALAR_TYPE_NAMES.issuperset(names):
                    node.exact = frozenset(t for name in names for t in _EXACT_TYPES[name])
                else:
                    node.ok, node.explain = _depth_guard(node.ok, node.explain, self.max_depth)
            else:
                node.ok, node.explain = self.anything.ok, self.anything.explain
                node.reject = _reject_nothing
            if "$defs" in keys or "definitions" in keys or "format" in keys:
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
        if checking & _STRING_KEYWORDS:
            add_string_checks(self, schema, pointer, add)

        # arrays
        folded_array = False
        array_check = self.array(schema, pointer, level)
        if array_check is not None:
            array_ok, array_explain = array_check
            if type_names == ("array",):
                folded_array = True
                array_ok = _fold_type(array_ok, _is_array)
            oks.append(array_ok)
            explains.append(array_explain)
        if checking & _COUNT_KEYWORDS:
            add_count_checks(self, schema, pointer, add)

        # objects
        folded_object = False
        object_check = self.object(schema, pointer, level)
        if object_check is not None:
            object_ok, object_explain, object_check_typed = object_check
            if type_names == ("object",):
                folded_object = True
                object_ok = object_check_typed
            oks.append(object_ok)
            explains.append(object_explain)

        # applicators on the same instance
        ref_node: _Node | None = None
        if "$ref" in schema:
            ref_node = self.ref(schema, pointer)
            node.links.append(("$ref", ref_node))
            add(_ref_check(ref_node))
        if "allOf" in schema:
            branches = self.branches(schema, "allOf", pointer, level, node)
            for branch in branches:
                add((branch.ok_late(), _explain_of(branch)))
        any_nodes: list[_Node] | None = None
        if "anyOf" in schema:
            any_nodes = self.branches(schema, "anyOf", pointer, level, node)
            add(_any_of(any_nodes))
        one_nodes: list[_Node] | None = None
        if "oneOf" in schema:
            one_nodes = self.branches(schema, "oneOf", pointer, level, node)
            add(_one_of(one_nodes))
        if "not" in schema:
            inner = self.child(schema["not"], f"{pointer}/not", level)
            node.links.append(("not", inner))
            add(_not(inner, schema["not"]))

        # the type check runs first: when it fails, the other keywords say nothing useful
        if type_ok is not None and not (folded_object or folded_array):
            oks.insert(0, type_ok)
        node.ok = _fused_scalar(schema, type_names, checking) or _all_of(oks)
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
        """Check what does not constrain the value itself: ``format`` and the ``$defs``."""
        for keyword in ("$defs", "definitions"):
            if keyword in schema:
                for name, sub in self.schema_map(schema, keyword, pointer).items():
                    self.child(sub, f"{pointer}/{keyword}/{_escape(name)}", level)
        if "format" in schema and not isinstance(schema["format"], str):
            raise self.fail(
                pointer, "format", f"'format' must be a string, got {_describe(schema['format'])}"
            )

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
        if not isinstance(values, (list, tuple)) or not values:
            raise self.fail(
                pointer, "enum", f"'enum' must be a non-empty array, got {_describe(values)}"
            )
        for value in values:
            if not _is_json_value(value):
                raise self.fail(
                    pointer, "enum", f"'enum' values must be JSON values, got {_describe(value)}"
                )
        return list(values)

    def enum_check(self, values: list[Any]) -> tuple[_Ok, _Explain]:
        keys = frozenset(_canon(value, _MAX_SCHEMA_LEVELS) for value in values)
        max_depth = self.max_depth

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
            return f"expected {_expect_enum(values)}, got {_describe(x)}"

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

    def pattern(self, schema: Mapping[str, Any], pointer: str) -> re.Pattern[str]:
        source = schema["pattern"]
        if not isinstance(source, str):
            raise self.fail(
                pointer, "pattern", f"'pattern' must be a string, got {_describe(source)}"
            )
        try:
            return re.compile(source)
        except re.error as exc:
            raise self.fail(
                pointer, "pattern", f"'pattern' {_json_short(source)} is not a valid regex: {exc}"
            ) from None

    def array(
        self, schema: Mapping[str, Any], pointer: str, level: int
    ) -> tuple[_Ok, _Explain] | None:
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
                raise self.fail(
                    pointer,
                    "items",
                    "'items' must be a schema; for a fixed tuple write 'prefixItems': [...]",
                )
            items = self.child(raw, f"{pointer}/items", level)
        return _array_check(prefix, items or self.anything, self.max_depth)

    def object(
        self, schema: Mapping[str, Any], pointer: str, level: int
    ) -> tuple[_Ok, _Explain, _Ok] | None:
        if not any(k in schema for k in ("properties", "required", "additionalProperties")):
            return None
        properties: dict[str, _Node] = {}
        if "properties" in schema:
            for name, sub in self.schema_map(schema, "properties", pointer).items():
                properties[name] = self.child(sub, f"{pointer}/properties/{_escape(name)}", level)
        required: list[str] = []
        if "required" in schema:
            value = schema["required"]
            if not isinstance(value, (list, tuple)) or not all(
                isinstance(name, str) for name in value
            ):
                raise self.fail(
                    pointer,
                    "required",
                    f"'required' must be an array of property names, got {_json_short(value)}",
                )
            if len(set(value)) != len(value):
                raise self.fail(pointer, "required", "'required' lists a property twice")
            required = list(value)
        additional: _Node | None = None
        if "additionalProperties" in schema:
            additional = self.child(
                schema["additionalProperties"], f"{pointer}/additionalProperties", level
            )
        return _object_check(properties, required, additional or self.anything, self.max_depth)

    def ref(self, schema: Mapping[str, Any], pointer: str) -> _Node:
        reference = schema["$ref"]
        if not isinstance(reference, str):
            raise self.fail(pointer, "$ref", f"'$ref' must be a string, got {_describe(reference)}")
        if not reference.startswith("#"):
            raise self.fail(
                pointer,
                "$ref",
                f"only local references ('#/$defs/Name') are supported, got {reference!r}",
            )
        from urllib.parse import unquote

        fragment = unquote(reference[1:])
        if fragment and not fragment.startswith("/"):
            raise self.fail(
                pointer,
                "$ref",
                f"anchor references like {reference!r} are not supported;"
                " use a JSON pointer such as '#/$defs/Name'",
            )
        target: Any = self.root
        where = "#"
        for raw in fragment.split("/")[1:] if fragment else []:
            segment = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and segment in target:
                target = target[segment]
            elif (
                isinstance(target, (list, tuple))
                and segment.isdigit()
                and int(segment) < len(target)
            ):
                target = target[int(segment)]
            else:
                raise self.fail(
                    pointer,
                    "$ref",
                    f"$ref {reference!r} does not resolve: nothing at {segment!r} under {where}",
                )
            where = f"{where}/{raw}"
        if isinstance(target, bool):
            return self.anything if target else _FALSE_NODE
        if not isinstance(target, Mapping):
            raise self.fail(
                pointer, "$ref", f"$ref {reference!r} points at {_describe(target)}, not a schema"
            )
        key = id(target)
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = _Node(where)
            self.keep.append(target)
        if key not in self.started:
            # compiled later from the queue, so a long chain of $refs is not a deep recursion
            self.pending.append((target, where))
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
            values = pool
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
                return [_json_short(value) for value in values]
            if delegate is not None:
                merged: list[str] = []
                for branch in delegate:
                    if branch.ok(x, d):
                        return None
                    found = branch.reject(x, d)
                    if found is None:
                        return None
                    merged.extend(found)
                return merged
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


def _expect_enum(values: list[Any]) -> str:
    shown = list(dict.fromkeys(_json_short(value) for value in values))
    if len(shown) == 1:
        return shown[0]
    if len(shown) > 12:
        return f"one of {', '.join(shown[:10])}, ... ({len(shown)} values)"
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


def _fold_type(inner: _Ok, type_ok: _Ok) -> _Ok:
    def ok(x: Any, d: int) -> bool:
        return type_ok(x, d) and inner(x, d)

    return ok


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
    def ok(x: Any, d: int) -> bool:
        return target.ok(x, d)

    return ok, _explain_of(target)


def _too_deep(max_depth: int) -> str:
    return f"nested too deeply (more than {max_depth} levels)"


_SCALAR_TYPE_NAMES = frozenset({"null", "boolean", "integer", "number", "string"})
_SCALARS = (str, int, float, bool, type(None))


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
    if checking & {"enum", "const", "$ref", "allOf", "anyOf", "oneOf"}:
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

    Every value is looked at — a listed property by its schema, any other by
    ``additional`` (which is the depth-limited "anything" when the schema sets none).
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


def _array_check(prefix: list[_Node], items: _Node, max_depth: int) -> tuple[_Ok, _Explain]:
    """``prefixItems`` and ``items`` as one check; ``items`` is the depth-limited "anything"
    when the schema sets none, so every item is looked at."""
    prefix_oks = tuple(node.ok_late() for node in prefix)
    count = len(prefix_oks)
    closed = items is _FALSE_NODE
    items_ok = items.ok_late()
    # list[int] and friends: most items pass on their exact type, without a call
    at_a_glance = items.exact if items.done else frozenset()

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, (list, tuple)):
            return True
        if closed and len(x) > count:
            return False
        if not x:
            return True
        if d >= max_depth:
            return False
        d += 1
        for check, value in zip(prefix_oks, x, strict=False):
            if not check(value, d):
                return False
        if not closed:
            if not count and len(x) > 16 and at_a_glance.issuperset(set(map(type, x))):
                return True  # a long list[int] or list[str]: one pass at C speed
            for item in x[count:] if count else x:
                if type(item) not in at_a_glance and not items_ok(item, d):
                    return False
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

    return ok, explain


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


def _fused_scalar(
    schema: Mapping[str, Any], type_names: tuple[str, ...] | None, checking: Set[str]
) -> _Ok | None:
    """One closure for a typed string or number with bounds — the commonest constrained
    leaf in a tool schema — instead of a chain of one call per keyword.

    Only the yes/no path is fused; problems still come from the per-keyword checks, which
    have already validated the keyword values. Returns None for any other node.
    """
    if type_names == ("string",) and checking <= _FUSED_STRING:
        shortest = schema.get("minLength", 0)
        longest = schema.get("maxLength")
        search = re.compile(schema["pattern"]).search if "pattern" in checking else None

        def string_ok(x: Any, d: int) -> bool:
            if type(x) is not str and not isinstance(x, str):
                return False
            if len(x) < shortest or (longest is not None and len(x) > longest):
                return False
            return search is None or search(x) is not None

        return string_ok
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
) -> None:
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
    if "pattern" in schema:
        search = compiler.pattern(schema, pointer).search
        shown = _json_short(schema["pattern"], 60)
        add(_leaf(
            lambda x, d: not isinstance(x, str) or search(x) is not None,
            lambda x, d: f"expected a string matching {shown}, got {_describe(x)}",
        ))  # fmt: skip


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


# --------------------------------------------------------------------------- public API


class Validator:
    """A JSON Schema compiled once, checking many values fast.

    Building it checks the schema and raises :class:`SchemaError` for anything it cannot
    honour (an unsupported keyword, a bad keyword value, a dangling or non-local ``$ref``,
    a ``$ref`` loop that never reaches a property or item). After that, :meth:`errors`
    and :meth:`is_valid` never raise: a value nested deeper than ``max_depth`` levels is a
    problem like any other, and at most ``max_problems`` problems are listed.

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
    ) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise InvalidValueError(f"max_depth must be an int >= 1, got {max_depth!r}")
        if isinstance(max_problems, bool) or not isinstance(max_problems, int) or max_problems < 1:
            raise InvalidValueError(f"max_problems must be an int >= 1, got {max_problems!r}")
        self.schema = schema
        self._max_depth = max_depth
        self._max_problems = max_problems
        try:
            root = _Compiler(schema, max_depth).compile()
        except RecursionError:
            raise SchemaError("#", None, "the schema nests too deeply to compile") from None
        self._ok = root.ok
        self._explain = root.explain

    def errors(self, instance: Any) -> list[str]:
        """Every problem with ``instance``, as ``"path: problem"`` strings; ``[]`` when valid.

        Root-level problems have no path prefix. Past ``max_problems`` the list ends with
        ``"... and N more"``.

        Example::

            Validator({"type": "integer"}).errors(True)   # ['expected integer, got boolean true']
        """
        try:
            if self._ok(instance, 0):
                return []
        except RecursionError:
            pass
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

    def is_valid(self, instance: Any) -> bool:
        """True when ``instance`` satisfies the schema; never raises.

        Example::

            Validator({"type": "string", "maxLength": 3}).is_valid("abcd")   # False
        """
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
