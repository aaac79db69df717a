"""The compiler: a schema read once into a tree of :class:`._nodes.Node` closures.

It refuses at once (:class:`SchemaError`) a keyword or value it cannot honour, resolves
references (:mod:`._references`), chooses the checks of each keyword (:mod:`._keywords`,
:mod:`._applicators`), memoizes the subschemas one validation may reach twice, and refuses
references that loop without descending into the value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._pointer import escape
from ..errors import SchemaError
from ._applicators import (
    any_of,
    conditional_check,
    contains_check,
    dependent_schemas_check,
    explain_of,
    items_check,
    not_check,
    one_of,
    pattern_properties_check,
    properties_check,
    property_names,
    ref_check,
    unevaluated_items,
    unevaluated_properties,
)
from ._keywords import (
    CHECKING_KEYWORDS,
    COUNT_KEYWORDS,
    KNOWN_KEYWORDS,
    NUMBER_KEYWORDS,
    OBJECT_KEYWORDS,
    QUIET_KEYWORDS,
    STRING_KEYWORDS,
    SUPPORTED_KEYWORDS,
    Pattern,
    dependent_required_check,
    format_leaf,
    fused_scalar,
    is_multiple,
    node_explain,
    type_check,
    type_leaf,
    unique_check,
)
from ._nodes import (
    FALSE_NODE,
    Explain,
    Matching,
    Node,
    all_of,
    always,
    covers_depth,
    depth_guard,
    explain_nothing,
    make_leaf,
    memoize,
    reject_nothing,
)
from ._problems import (
    describe,
    expect_enum,
    json_short,
    number_text,
    plural,
    shown_values,
    too_deep,
)
from ._references import ANCHOR_NAME, Resources, Scope, join_uri, shared_schemas
from ._values import (
    EXACT_TYPES,
    INFINITY,
    MAX_SCHEMA_LEVELS,
    SCALAR_TYPE_NAMES,
    SINGLE_TYPES,
    TYPE_NAMES,
    Ok,
    _TooDeep,
    canon,
    is_json_number,
    is_json_value,
)

if TYPE_CHECKING:
    from .._ecma import SearchParts
    from .._json_formats import FormatParts


def _compile_pattern_set(sources: list[str]) -> Matching:
    """The one place that compiles the patterns of a ``patternProperties`` together."""
    from .._ecma import compile_pattern_set

    return compile_pattern_set(sources)


def compile_pattern(source: str) -> SearchParts:
    """The one place that compiles a ``pattern`` (ECMA-262, never stalling): ``(search,
    longest, predicate)`` as :func:`toolnexus._ecma.compile_search` describes them."""
    from .._ecma import compile_search

    return compile_search(source)


# --------------------------------------------------------------------------- the compiler


class Compiler:
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
        self.resources = Resources(root, registry)
        self.nodes: dict[tuple[int, Scope], Node] = {}
        self.started: set[tuple[int, Scope]] = set()
        self.pending: list[tuple[Any, str, Scope]] = []
        # the dynamic scope of the node being compiled: ($dynamicAnchor name, resource) pairs
        # of the resources entered so far, outermost first; () unless a $dynamicRef exists
        self.scope: Scope = ()
        self.patterns: dict[str, Pattern] = {}
        self.shared: set[int] = set()  # ids of the schema objects to memoize
        self.memoized = 0
        self.arrays = 0  # item checks compiled: a long array hears the token
        # keeps every compiled schema object alive, so an id() is never reused meanwhile
        self.keep: list[Any] = []
        # what `true`, `{}` and unlisted properties or items compile to: any value nested
        # no deeper than the limit
        self.anything = Node("#")
        self.anything.ok, self.anything.explain = depth_guard(always, explain_nothing, max_depth)
        self.anything.done = True

    # -- entry ---------------------------------------------------------------------------

    @property
    def hears_token(self) -> bool:
        """Whether a check of what was compiled can hear a token: only long work does
        (a pattern's match, a long array's items, a shared subschema's memo; see
        ``_nodes.heard``, ``stopper`` and ``_Run.step``), so a schema with none of them
        checks any value without reading one."""
        return bool(self.patterns) or self.memoized > 0 or self.arrays > 0

    def compile(self) -> Node:
        self.shared = shared_schemas(self.root, self.resources)
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
                pointer, keyword, f"{keyword!r} must be a number, got {describe(value)}{hint}"
            )
        if value != value or value in (INFINITY, -INFINITY):
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
                f"{keyword!r} must be a non-negative integer, got {describe(value)}",
            )
        return value

    def schema_list(self, schema: Mapping[str, Any], keyword: str, pointer: str) -> list[Any]:
        value = schema[keyword]
        if not isinstance(value, (list, tuple)) or not value:
            raise self.fail(
                pointer,
                keyword,
                f"{keyword!r} must be a non-empty array of schemas, got {describe(value)}",
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
                f"{keyword!r} must be an object mapping names to schemas, got {describe(value)}",
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
                f"{what} must be an array of property names, got {json_short(value)}",
            )
        if len(set(value)) != len(value):
            raise self.fail(pointer, keyword, f"{what} lists a property twice")
        return list(value)

    # -- nodes -----------------------------------------------------------------------------

    def node(self, schema: Any, pointer: str, level: int) -> Node:
        if schema is True:
            return self.anything
        if schema is False:
            return FALSE_NODE
        if not isinstance(schema, dict) and not isinstance(schema, Mapping):
            raise self.fail(
                pointer,
                None,
                f"a schema must be an object or a boolean, got {describe(schema)}",
            )
        outer = self.scope
        scope = self.resources.enter(schema, outer) if self.resources.dynamic else outer
        key = (id(schema), scope)
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = Node(pointer)
            self.keep.append(schema)
        if key in self.started:
            return node
        if level > MAX_SCHEMA_LEVELS:
            raise self.fail(
                pointer, None, f"the schema nests more than {MAX_SCHEMA_LEVELS} levels deep"
            )
        self.started.add(key)
        self.scope = scope
        try:
            self.build(node, schema, pointer, level)
        finally:
            self.scope = outer
        if id(schema) in self.shared:
            memoize(node)
            self.memoized += 1
        node.done = True
        return node

    def child(self, schema: Any, pointer: str, level: int) -> Node:
        return self.node(schema, pointer, level + 1)

    def build(self, node: Node, schema: Mapping[str, Any], pointer: str, level: int) -> None:
        keys = schema.keys()
        unknown = keys - KNOWN_KEYWORDS
        for keyword in keys if unknown else ():  # in schema order, so the report is stable
            if keyword not in unknown:
                continue
            if not isinstance(keyword, str):
                raise self.fail(pointer, None, f"keywords must be strings, got {keyword!r}")
            if not keyword.startswith("x-"):
                raise self.fail(pointer, keyword, _unsupported(keyword))
        checking = keys & CHECKING_KEYWORDS
        asserts_format = self.format_assertion and "format" in keys

        if checking <= {"type"} and not asserts_format:
            # a leaf like {"type": "integer"}: most nodes of a tool schema; built once, shared
            if checking:
                names = self.types(schema, pointer)
                assert names is not None
                node.ok, node.explain, node.reject = type_leaf(names)
                if SCALAR_TYPE_NAMES.issuperset(names):
                    node.exact = frozenset(t for name in names for t in EXACT_TYPES[name])
                    node.floats = "number" in names
                else:
                    node.ok, node.explain = depth_guard(node.ok, node.explain, self.max_depth)
            else:
                node.ok, node.explain = self.anything.ok, self.anything.explain
                node.reject = reject_nothing
            if keys & QUIET_KEYWORDS:
                self.annotations(schema, pointer, level)
            return

        self.annotations(schema, pointer, level)
        oks: list[Ok] = []
        explains: list[Explain] = []

        def add(pair: tuple[Ok, Explain]) -> None:
            oks.append(pair[0])
            explains.append(pair[1])

        type_names = self.types(schema, pointer)
        type_ok: Ok | None = None
        if type_names is not None:
            type_ok = type_check(type_names)

        # value keywords
        enum_values: list[Any] | None = None
        if "enum" in schema:
            enum_values = self.enum(schema, pointer)
            add(self.enum_check(enum_values))
        if "const" in schema:
            const = schema["const"]
            if not is_json_value(const):
                raise self.fail(
                    pointer, "const", f"'const' must be a JSON value, got {describe(const)}"
                )
            add(self.const_check(const))
        if checking & NUMBER_KEYWORDS:
            add_number_checks(self, schema, pointer, add)
        pattern: Pattern | None = None
        if checking & STRING_KEYWORDS:
            pattern = add_string_checks(self, schema, pointer, add)
        format_test = self.format_test(schema) if asserts_format else None
        if format_test is not None:
            add(format_leaf(schema["format"], format_test))

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
        if checking & COUNT_KEYWORDS:
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
            add(property_names(names_node))
        if "dependentRequired" in schema or "dependencies" in schema:
            required_when = self.dependent_required(schema, pointer)
            if required_when:
                add(dependent_required_check(required_when))
        if "dependentSchemas" in schema or "dependencies" in schema:
            schemas_when = self.dependent_schemas(schema, pointer, level)
            if schemas_when:
                node.dependent = schemas_when
                node.links.extend(("dependentSchemas", sub) for _, sub in schemas_when)
                add(dependent_schemas_check(schemas_when))

        # applicators on the same instance
        ref_node: Node | None = None
        if "$ref" in schema:
            ref_node = self.ref(schema, pointer)
            node.links.append(("$ref", ref_node))
            node.inplace.append(ref_node)
            add(ref_check(ref_node))
        if "$dynamicRef" in schema:
            dynamic_node = self.ref(schema, pointer, "$dynamicRef")
            node.links.append(("$dynamicRef", dynamic_node))
            node.inplace.append(dynamic_node)
            add(ref_check(dynamic_node))
        if "allOf" in schema:
            branches = self.branches(schema, "allOf", pointer, level, node)
            node.inplace.extend(branches)
            for branch in branches:
                add((branch.ok_late(), explain_of(branch)))
        any_nodes: list[Node] | None = None
        if "anyOf" in schema:
            any_nodes = self.branches(schema, "anyOf", pointer, level, node)
            node.inplace_if_valid.extend(any_nodes)
            add(any_of(any_nodes))
        one_nodes: list[Node] | None = None
        if "oneOf" in schema:
            one_nodes = self.branches(schema, "oneOf", pointer, level, node)
            node.inplace_if_valid.extend(one_nodes)
            add(one_of(one_nodes))
        if "not" in schema:
            inner = self.child(schema["not"], f"{pointer}/not", level)
            node.links.append(("not", inner))
            add(not_check(inner, schema["not"]))
        if "if" in schema:
            add(self.conditional(schema, pointer, level, node))

        # last: they look at what every other keyword evaluated
        if "unevaluatedItems" in schema:
            rest = self.child(schema["unevaluatedItems"], f"{pointer}/unevaluatedItems", level)
            add(unevaluated_items(node, rest, self.max_depth))
        if "unevaluatedProperties" in schema:
            rest = self.child(
                schema["unevaluatedProperties"], f"{pointer}/unevaluatedProperties", level
            )
            add(unevaluated_properties(node, rest, self.max_depth))
        node.seen_unevaluated_items = "unevaluatedItems" in schema
        node.seen_unevaluated_properties = "unevaluatedProperties" in schema

        # the type check runs first: when it fails, the other keywords say nothing useful
        if type_ok is not None and not (folded_object or folded_array):
            oks.insert(0, type_ok)
        node.ok = fused_scalar(schema, type_names, checking, pattern, format_test) or all_of(oks)
        node.explain = node_explain(type_ok, type_names, explains)
        if not covers_depth(
            checking, type_names, array_check is not None, object_check is not None
        ):
            node.ok, node.explain = depth_guard(node.ok, node.explain, self.max_depth)
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
                pointer, "format", f"'format' must be a string, got {describe(schema['format'])}"
            )
        if "$id" in schema:
            ident = schema["$id"]
            if not isinstance(ident, str):
                raise self.fail(pointer, "$id", f"'$id' must be a string, got {describe(ident)}")
            if ident.partition("#")[2]:
                raise self.fail(
                    pointer,
                    "$id",
                    f"'$id' {ident!r} has a fragment; name a location with '$anchor' instead",
                )
        for keyword in ("$anchor", "$dynamicAnchor"):
            if keyword in schema:
                name = schema[keyword]
                if not isinstance(name, str) or not ANCHOR_NAME.match(name):
                    raise self.fail(
                        pointer,
                        keyword,
                        f"{keyword!r} must be a name like 'node' (a letter or _, then letters,"
                        f" digits, '-', '_' or '.'), got {json_short(name)}",
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
        single = SINGLE_TYPES.get(value) if isinstance(value, str) else None
        if single is not None:
            return single
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, (list, tuple)) or not names:
            raise self.fail(
                pointer,
                "type",
                f"'type' must be a type name or a non-empty array of them, got {describe(value)}",
            )
        for name in names:
            if name not in TYPE_NAMES:
                raise self.fail(
                    pointer,
                    "type",
                    f"unknown type {json_short(name)} (known: {', '.join(TYPE_NAMES)})",
                )
        if len(set(names)) != len(names):
            raise self.fail(pointer, "type", "'type' lists a type twice")
        return tuple(names)

    def enum(self, schema: Mapping[str, Any], pointer: str) -> list[Any]:
        values = schema["enum"]
        if not isinstance(values, (list, tuple)):
            # an empty one is allowed: nothing is valid (2020-12: it SHOULD have an item)
            raise self.fail(pointer, "enum", f"'enum' must be an array, got {describe(values)}")
        for value in values:
            if not is_json_value(value):
                raise self.fail(
                    pointer, "enum", f"'enum' values must be JSON values, got {describe(value)}"
                )
        return list(values)

    def enum_check(self, values: list[Any]) -> tuple[Ok, Explain]:
        keys = frozenset(canon(value, MAX_SCHEMA_LEVELS) for value in values)
        max_depth = self.max_depth
        # written once: a miss on an enum of a million values must not write them all
        expected = expect_enum(values, len(keys))

        def ok(x: Any, d: int) -> bool:
            t = type(x)
            if t is str or t is int or t is float:
                return x in keys  # these are their own keys; 1 and 1.0 hash alike
            try:
                return canon(x, max_depth - d) in keys
            except _TooDeep:
                return False

        def message(x: Any, d: int) -> str:
            try:
                canon(x, max_depth - d)
            except _TooDeep:
                return too_deep(max_depth)
            if not values:
                return f"no value is allowed here (its 'enum' is empty), got {describe(x)}"
            return f"expected {expected}, got {describe(x)}"

        return make_leaf(ok, message)

    def const_check(self, const: Any) -> tuple[Ok, Explain]:
        key = canon(const, MAX_SCHEMA_LEVELS)
        max_depth = self.max_depth

        def ok(x: Any, d: int) -> bool:
            try:
                return bool(canon(x, max_depth - d) == key)
            except _TooDeep:
                return False

        def message(x: Any, d: int) -> str:
            try:
                canon(x, max_depth - d)
            except _TooDeep:
                return too_deep(max_depth)
            return f"expected {json_short(const)}, got {describe(x)}"

        return make_leaf(ok, message)

    def pattern(self, source: Any, pointer: str, keyword: str) -> Pattern:
        """An ECMA-262 pattern compiled once per schema, remembering its last answers."""
        if not isinstance(source, str):
            raise self.fail(
                pointer, keyword, f"{keyword!r} patterns must be strings, got {describe(source)}"
            )
        test = self.patterns.get(source)
        if test is None:
            from .._ecma import EcmaPatternError

            try:
                test = Pattern(compile_pattern(source))
            except EcmaPatternError as exc:
                where = f" at position {exc.position}" if exc.position is not None else ""
                raise self.fail(
                    pointer,
                    keyword,
                    f"pattern {json_short(source, 60)}{where}: {exc.reason}",
                ) from None
            self.patterns[source] = test
        return test

    def format_test(self, schema: Mapping[str, Any]) -> FormatParts | None:
        """The check of the schema's ``format``; None for one that stays an annotation."""
        from .._json_formats import format_parts

        return format_parts(schema["format"], self.format_test_pattern)

    @staticmethod
    def format_test_pattern(text: str) -> bool:
        from .._ecma import EcmaPatternError

        try:
            compile_pattern(text)
        except EcmaPatternError:
            return False
        return True

    def array(
        self, schema: Mapping[str, Any], pointer: str, level: int, node: Node
    ) -> tuple[Ok, Explain, Ok] | None:
        has_items = "items" in schema
        has_prefix = "prefixItems" in schema
        if not (has_items or has_prefix):
            return None
        prefix: list[Node] = []
        if has_prefix:
            prefix = [
                self.child(sub, f"{pointer}/prefixItems/{index}", level)
                for index, sub in enumerate(self.schema_list(schema, "prefixItems", pointer))
            ]
        items: Node | None = None
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
        self.arrays += 1
        return items_check(prefix, items or self.anything, self.max_depth)

    def contains(
        self, schema: Mapping[str, Any], pointer: str, level: int, node: Node
    ) -> tuple[Ok, Explain]:
        inner = self.child(schema["contains"], f"{pointer}/contains", level)
        fewest = self.count(schema, "minContains", pointer) if "minContains" in schema else 1
        most = self.count(schema, "maxContains", pointer) if "maxContains" in schema else None
        node.seen_contains = inner
        return contains_check(inner, fewest, most, schema["contains"])

    def object(
        self, schema: Mapping[str, Any], pointer: str, level: int, node: Node
    ) -> tuple[Ok, Explain, Ok] | None:
        if not any(k in schema for k in OBJECT_KEYWORDS):
            return None
        properties: dict[str, Node] = {}
        if "properties" in schema:
            for name, sub in self.schema_map(schema, "properties", pointer).items():
                properties[name] = self.child(sub, f"{pointer}/properties/{escape(name)}", level)
        patterns: list[Node] = []
        matching: Matching | None = None
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
        additional: Node | None = None
        if "additionalProperties" in schema:
            additional = self.child(
                schema["additionalProperties"], f"{pointer}/additionalProperties", level
            )
        node.seen_names = frozenset(properties)
        node.seen_match = matching
        node.seen_all_properties = additional is not None
        if matching is not None:
            return pattern_properties_check(
                properties,
                patterns,
                matching,
                required,
                additional or self.anything,
                self.max_depth,
            )
        return properties_check(properties, required, additional or self.anything, self.max_depth)

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
                    f" got {describe(value)}",
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
    ) -> list[tuple[str, Node]]:
        found: list[tuple[str, Node]] = []
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
        self, schema: Mapping[str, Any], pointer: str, level: int, node: Node
    ) -> tuple[Ok, Explain]:
        condition = self.child(schema["if"], f"{pointer}/if", level)
        then = self.child(schema["then"], f"{pointer}/then", level) if "then" in schema else None
        otherwise = (
            self.child(schema["else"], f"{pointer}/else", level) if "else" in schema else None
        )
        node.links.append(("if", condition))
        node.links.extend((k, n) for k, n in (("then", then), ("else", otherwise)) if n)
        node.conditional = (condition, then, otherwise)
        return conditional_check(condition, then, otherwise, schema["if"])

    def ref(self, schema: Mapping[str, Any], pointer: str, keyword: str = "$ref") -> Node:
        reference = schema[keyword]
        if not isinstance(reference, str):
            raise self.fail(
                pointer, keyword, f"{keyword!r} must be a string, got {describe(reference)}"
            )
        resources = self.resources
        base = resources.base_of(schema)
        target, where = resources.resolve(join_uri(base, reference), pointer, keyword, reference)
        if keyword == "$dynamicRef":
            target = resources.dynamic_target(join_uri(base, reference), target, self.scope)
        if isinstance(target, bool):
            return self.anything if target else FALSE_NODE
        if not isinstance(target, Mapping):
            raise self.fail(
                pointer,
                keyword,
                f"{keyword} {reference!r} points at {describe(target)}, not a schema",
            )
        scope = resources.enter(target, self.scope) if resources.dynamic else self.scope
        key = (id(target), scope)
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = Node(where)
            self.keep.append(target)
        if key not in self.started:
            # compiled later from the queue, so a long chain of $refs is not a deep recursion
            self.pending.append((target, where, self.scope))
        return node

    def branches(
        self, schema: Mapping[str, Any], keyword: str, pointer: str, level: int, node: Node
    ) -> list[Node]:
        nodes = [
            self.child(sub, f"{pointer}/{keyword}/{index}", level)
            for index, sub in enumerate(self.schema_list(schema, keyword, pointer))
        ]
        node.links.extend((keyword, branch) for branch in nodes)
        return nodes

    def reject(
        self,
        schema: Mapping[str, Any],
        type_ok: Ok | None,
        type_names: tuple[str, ...] | None,
        enum_values: list[Any] | None,
        ref_node: Node | None,
        any_nodes: list[Node] | None,
        one_nodes: list[Node] | None,
    ) -> Callable[[Any, int], list[str] | None]:
        """How this node refuses a value at its root, as alternatives to list, if it does."""
        checking = schema.keys() & CHECKING_KEYWORDS
        value_only = checking <= {"type", "enum", "const"}
        names = list(type_names or ())
        values: list[str] | None = None
        if value_only and (enum_values is not None or "const" in schema):
            pool = enum_values if enum_values is not None else [schema["const"]]
            if "const" in schema and enum_values is not None:
                pool = [schema["const"]]
            values = shown_values(pool, len(pool))
        delegate: list[Node] | None = None
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
            return reject_nothing
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
            trail: list[tuple[Node, str]] = [(start, "")]
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


def add_number_checks(
    compiler: Compiler,
    schema: Mapping[str, Any],
    pointer: str,
    add: Callable[[tuple[Ok, Explain]], None],
) -> None:
    is_number = is_json_number
    if "minimum" in schema:
        low = compiler.number(schema, "minimum", pointer)
        add(make_leaf(
            lambda x, d: not is_number(x) or x >= low,
            lambda x, d: f"expected at least {number_text(low)}, got {number_text(x)}",
        ))  # fmt: skip
    if "exclusiveMinimum" in schema:
        above = compiler.number(schema, "exclusiveMinimum", pointer)
        add(make_leaf(
            lambda x, d: not is_number(x) or x > above,
            lambda x, d: f"expected more than {number_text(above)}, got {number_text(x)}",
        ))  # fmt: skip
    if "maximum" in schema:
        high = compiler.number(schema, "maximum", pointer)
        add(make_leaf(
            lambda x, d: not is_number(x) or x <= high,
            lambda x, d: f"expected at most {number_text(high)}, got {number_text(x)}",
        ))  # fmt: skip
    if "exclusiveMaximum" in schema:
        below = compiler.number(schema, "exclusiveMaximum", pointer)
        add(make_leaf(
            lambda x, d: not is_number(x) or x < below,
            lambda x, d: f"expected less than {number_text(below)}, got {number_text(x)}",
        ))  # fmt: skip
    if "multipleOf" in schema:
        step = compiler.number(schema, "multipleOf", pointer)
        if step <= 0:
            raise compiler.fail(
                pointer, "multipleOf", f"'multipleOf' must be greater than 0, got {step}"
            )
        add(make_leaf(
            lambda x, d: not is_number(x) or is_multiple(x, step),
            lambda x, d: f"expected a multiple of {number_text(step)}, got {number_text(x)}",
        ))  # fmt: skip


def add_string_checks(
    compiler: Compiler,
    schema: Mapping[str, Any],
    pointer: str,
    add: Callable[[tuple[Ok, Explain]], None],
) -> Pattern | None:
    """Add the string keywords' checks; return the compiled ``pattern``, if any."""
    if "minLength" in schema:
        shortest = compiler.count(schema, "minLength", pointer)
        add(make_leaf(
            lambda x, d: not isinstance(x, str) or len(x) >= shortest,
            lambda x, d: f"expected at least {plural(shortest, 'character')}, got {len(x)}",
        ))  # fmt: skip
    if "maxLength" in schema:
        longest = compiler.count(schema, "maxLength", pointer)
        add(make_leaf(
            lambda x, d: not isinstance(x, str) or len(x) <= longest,
            lambda x, d: f"expected at most {plural(longest, 'character')}, got {len(x)}",
        ))  # fmt: skip
    if "pattern" not in schema:
        return None
    pattern = compiler.pattern(schema["pattern"], pointer, "pattern")
    test = pattern.test
    shown = json_short(schema["pattern"], 60)
    add(make_leaf(
        lambda x, d: not isinstance(x, str) or test(x),
        lambda x, d: f"expected a string matching {shown}, got {describe(x)}",
    ))  # fmt: skip
    return pattern


def add_count_checks(
    compiler: Compiler,
    schema: Mapping[str, Any],
    pointer: str,
    add: Callable[[tuple[Ok, Explain]], None],
) -> None:
    if "minItems" in schema:
        fewest = compiler.count(schema, "minItems", pointer)
        add(make_leaf(
            lambda x, d: not isinstance(x, (list, tuple)) or len(x) >= fewest,
            lambda x, d: f"expected at least {plural(fewest, 'item')}, got {len(x)}",
        ))  # fmt: skip
    if "maxItems" in schema:
        most = compiler.count(schema, "maxItems", pointer)
        add(make_leaf(
            lambda x, d: not isinstance(x, (list, tuple)) or len(x) <= most,
            lambda x, d: f"expected at most {plural(most, 'item')}, got {len(x)}",
        ))  # fmt: skip
    if "uniqueItems" in schema:
        flag = schema["uniqueItems"]
        if not isinstance(flag, bool):
            raise compiler.fail(
                pointer, "uniqueItems", f"'uniqueItems' must be a boolean, got {describe(flag)}"
            )
        if flag:
            add(unique_check(compiler.max_depth))
    if "minProperties" in schema:
        least = compiler.count(schema, "minProperties", pointer)
        add(make_leaf(
            lambda x, d: not isinstance(x, Mapping) or len(x) >= least,
            lambda x, d: f"expected at least {plural(least, 'property')}, got {len(x)}",
        ))  # fmt: skip
    if "maxProperties" in schema:
        most_properties = compiler.count(schema, "maxProperties", pointer)
        add(make_leaf(
            lambda x, d: not isinstance(x, Mapping) or len(x) <= most_properties,
            lambda x, d: (
                f"expected at most {plural(most_properties, 'property')}, got {len(x)}"
            ),
        ))  # fmt: skip
