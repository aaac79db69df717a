"""The keywords that apply subschemas, as checks over compiled nodes: ``properties``,
``patternProperties``, ``additionalProperties`` and ``required``; ``prefixItems`` and
``items``; ``contains``; ``propertyNames``; ``anyOf``, ``oneOf`` and ``not``; ``if``/
``then``/``else``; ``dependentSchemas``; ``$ref``; and ``unevaluatedProperties``/
``unevaluatedItems`` with the annotations they collect across all of these.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from ._keywords import ANNOTATION_KEYWORDS
from ._nodes import FALSE_NODE, LOCAL, Explain, Matching, Node, heard, make_leaf, stopper
from ._problems import (
    Path,
    Problems,
    _Stop,
    alternatives,
    describe,
    expect_enum,
    first_problems,
    json_short,
    plural,
    too_deep,
)
from ._values import INT_FLOAT, Ok, all_finite

# Containers longer than this are walked in a loop that listens for the token.
_LONG = 4096


def explain_of(node: Node) -> Explain:
    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        node.explain(x, path, problems, d)

    return explain


def ref_check(target: Node) -> tuple[Ok, Explain]:
    # a target compiled already is called directly; one still being compiled (a recursive
    # reference) through a late-bound call
    return target.ok_late(), explain_of(target)


def properties_check(
    properties: dict[str, Node],
    required: list[str],
    additional: Node,
    max_depth: int,
) -> tuple[Ok, Explain, Ok]:
    """The object keywords as one check: (ok, explain, ok that also demands an object).

    Every value is looked at — a listed property by its schema, one whose name matches a
    patternProperties pattern by that schema too, any other by ``additional`` (which is
    the depth-limited "anything" when the schema sets none).
    """
    property_oks = {name: node.ok_late() for name, node in properties.items()}
    get = property_oks.get
    required_names = tuple(required)
    closed = additional is FALSE_NODE
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

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name in required_names:
            if name not in x:
                problems.add((*path, name), "required property is missing")
        if not x:
            return
        if d >= max_depth:
            problems.add(path, too_deep(max_depth))
            return
        for name, value in x.items():
            node = properties.get(name)
            where = (*path, name if isinstance(name, str) else repr(name))
            if node is None:
                if closed:
                    problems.add(where, unexpected)
                else:
                    additional.explain(value, where, problems, d + 1)
            elif node is FALSE_NODE:
                problems.add(where, "property is not allowed")
            else:
                node.explain(value, where, problems, d + 1)

    return ok, explain, typed_ok


def pattern_properties_check(
    properties: dict[str, Node],
    patterns: list[Node],
    matching: Matching,
    required: list[str],
    additional: Node,
    max_depth: int,
) -> tuple[Ok, Explain, Ok]:
    """properties_check for a schema with patternProperties (kept off the common path).

    ``matching(name)`` says which patterns match a name, all at once (see
    :func:`toolnexus._ecma.compile_pattern_set`), so a name no pattern matches costs one
    search, however many patterns there are.
    """
    property_oks = {name: node.ok_late() for name, node in properties.items()}
    pattern_oks = tuple(node.ok_late() for node in patterns)
    required_names = tuple(required)
    closed = additional is FALSE_NODE
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
        stop = stopper()
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

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name in required_names:
            if name not in x:
                problems.add((*path, name), "required property is missing")
        if not x:
            return
        if d >= max_depth:
            problems.add(path, too_deep(max_depth))
            return
        stop = stopper()
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


def _each_ok(check: Ok, items: Any, d: int, at_a_glance: frozenset[type]) -> bool:
    """Whether ``check`` holds for every item of a long array, the token heard after each
    few thousand items."""
    for start in range(0, len(items), _LONG):
        if start:
            heard()
        for item in items[start : start + _LONG]:
            if type(item) not in at_a_glance and not check(item, d):
                return False
    return True


def items_check(prefix: list[Node], items: Node, max_depth: int) -> tuple[Ok, Explain, Ok]:
    """``prefixItems`` and ``items`` as one check: (ok, explain, ok that also demands an
    array). ``items`` is the depth-limited "anything" when the schema sets none, so every
    item is looked at."""
    prefix_oks = tuple(node.ok_late() for node in prefix)
    count = len(prefix_oks)
    closed = items is FALSE_NODE
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
                    if floats and kinds <= INT_FLOAT and all_finite(x):
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

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, (list, tuple)):
            return
        if closed and len(x) > count:
            problems.add(path, f"expected at most {plural(count, 'item')}, got {len(x)}")
        if not x:
            return
        if d >= max_depth:
            problems.add(path, too_deep(max_depth))
            return
        for index, (node, value) in enumerate(zip(prefix, x, strict=False)):
            node.explain(value, (*path, index), problems, d + 1)
        if not closed:
            for index in range(count, len(x)):
                items.explain(x[index], (*path, index), problems, d + 1)

    return ok, explain, typed_ok


def any_of(branches: list[Node]) -> tuple[Ok, Explain]:
    oks = tuple(branch.ok_late() for branch in branches)

    def ok(x: Any, d: int) -> bool:
        for check in oks:  # noqa: SIM110 (faster than any() over a generator)
            if check(x, d):
                return True
        return False

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if ok(x, d):
            return
        _explain_no_match(branches, x, path, problems, d)

    return ok, explain


def one_of(branches: list[Node]) -> tuple[Ok, Explain]:
    oks = tuple(branch.ok_late() for branch in branches)

    def ok(x: Any, d: int) -> bool:
        matched = False
        for check in oks:
            if check(x, d):
                if matched:
                    return False
                matched = True
        return matched

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        matching = [index + 1 for index, check in enumerate(oks) if check(x, d)]
        if len(matching) == 1:
            return
        if not matching:
            _explain_no_match(branches, x, path, problems, d)
            return
        which = alternatives([str(index) for index in matching]).replace(" or ", " and ")
        problems.add(
            path,
            f"matches {len(matching)} of the {len(branches)} alternatives ({which});"
            " oneOf needs exactly one",
        )

    return ok, explain


def _explain_no_match(branches: list[Node], x: Any, path: Path, problems: Problems, d: int) -> None:
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
        problems.add(path, f"expected {alternatives(expected)}, got {describe(x)}")
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
        trial = Problems(ceiling=50)
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


def not_check(inner: Node, raw: Any) -> tuple[Ok, Explain]:
    def ok(x: Any, d: int) -> bool:
        return not inner.ok(x, d)

    def message(x: Any, d: int) -> str:
        return f"{_not_description(raw)}, got {describe(x)}"

    return make_leaf(ok, message)


def _not_description(raw: Any) -> str:
    """``must not be null`` for the simple shapes; the schema itself for the rest."""
    if isinstance(raw, Mapping):
        plain = {k: v for k, v in raw.items() if k not in ANNOTATION_KEYWORDS}
        if set(plain) == {"type"}:
            names = [plain["type"]] if isinstance(plain["type"], str) else list(plain["type"])
            return f"must not be {alternatives(names)}"
        if set(plain) == {"const"}:
            return f"must not be {json_short(plain['const'])}"
        if set(plain) == {"enum"}:
            return f"must not be {expect_enum(list(plain['enum']))}"
    return f"must not match {json_short(raw, 60)}"


def property_names(names: Node) -> tuple[Ok, Explain]:
    names_ok = names.ok_late()

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping):
            return True
        for name in x:  # noqa: SIM110 (faster than all() over a generator)
            if not names_ok(name, d):
                return False
        return True

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name in x:
            if names_ok(name, d):
                continue
            trial = Problems(ceiling=5)
            with contextlib.suppress(_Stop):
                names.explain(name, (), trial, d)
            where = (*path, name if isinstance(name, str) else repr(name))
            if names is FALSE_NODE:
                problems.add(where, "unexpected property (no properties are allowed)")
            else:
                problems.add(where, f"invalid property name: {first_problems(trial.items)}")

    return ok, explain


def dependent_schemas_check(rules: list[tuple[str, Node]]) -> tuple[Ok, Explain]:
    checks = tuple((name, node.ok_late()) for name, node in rules)

    def ok(x: Any, d: int) -> bool:
        if not isinstance(x, Mapping):
            return True
        for name, check in checks:  # noqa: SIM110 (faster than all() over a generator)
            if name in x and not check(x, d):
                return False
        return True

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, Mapping):
            return
        for name, node in rules:
            if name in x and not node.ok(x, d):
                trial = Problems(ceiling=50)
                with contextlib.suppress(_Stop):
                    node.explain(x, path, trial, d)
                because = json.dumps(name, ensure_ascii=False)
                problems.add(
                    path,
                    f"does not match the schema required when {because} is present:"
                    f" {first_problems(trial.items, path)}",
                )

    return ok, explain


def contains_check(inner: Node, fewest: int, most: int | None, raw: Any) -> tuple[Ok, Explain]:
    inner_ok = inner.ok_late()
    shown = json_short(raw, 60)

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

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, (list, tuple)):
            return
        found = count(x, d)
        if found < fewest:
            problems.add(
                path,
                f"expected at least {plural(fewest, 'item')} matching {shown}, got {found}",
            )
        elif most is not None and found > most:
            problems.add(
                path, f"expected at most {plural(most, 'item')} matching {shown}, got {found}"
            )

    return ok, explain


def conditional_check(
    condition: Node, then: Node | None, otherwise: Node | None, raw: Any
) -> tuple[Ok, Explain]:
    shown = json_short(raw, 60)

    def ok(x: Any, d: int) -> bool:
        if condition.ok(x, d):
            return then is None or then.ok(x, d)
        return otherwise is None or otherwise.ok(x, d)

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if condition.ok(x, d):
            branch, name = then, "then"
        else:
            branch, name = otherwise, "else"
        if branch is None or branch.ok(x, d):
            return
        trial = Problems(ceiling=50)
        with contextlib.suppress(_Stop):
            branch.explain(x, path, trial, d)
        problems.add(
            path,
            f"does not match the '{name}' branch of the condition {shown}:"
            f" {first_problems(trial.items, path)}",
        )

    return ok, explain


# Annotation collection for unevaluatedProperties / unevaluatedItems. Only a node that is
# valid for the value produces annotations, so these run after the node's other checks
# passed, and look again (ok) only at branches whose validity is not implied by it.


def _seen_properties(node: Node, x: Mapping[str, Any], d: int, own: bool) -> set[str] | None:
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


def _seen_items(node: Node, x: Any, d: int, own: bool) -> set[int] | None:
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


def _seen_once(node: Node, x: Any, d: int, collect: Callable[..., Any]) -> Any:
    """What a shared (memoized) node evaluated in ``x``, collected once per validation."""
    run = LOCAL.run
    if run is None:
        return collect(node, x, d, True)
    key = (id(node), id(x), d, collect is _seen_items)
    found = run.answers.get(key)
    if found is None:
        # "True": the node is not the one asking, but its memo must not recurse here again
        found = run.answers[key] = (collect(node, x, d, True), x)
    return found[0]


def _valid_inplace(node: Node, x: Any, d: int) -> list[Node]:
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


def unevaluated_properties(node: Node, rest: Node, max_depth: int) -> tuple[Ok, Explain]:
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

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, Mapping) or not x:
            return
        seen = _seen_properties(node, x, d, True)
        if seen is None:
            return
        for name, value in x.items():
            if name in seen:
                continue
            where = (*path, name if isinstance(name, str) else repr(name))
            if rest is FALSE_NODE:
                problems.add(where, "unexpected property (no keyword of the schema describes it)")
            else:
                rest.explain(value, where, problems, d + 1)

    return ok, explain


def unevaluated_items(node: Node, rest: Node, max_depth: int) -> tuple[Ok, Explain]:
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

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not isinstance(x, (list, tuple)) or not x:
            return
        seen = _seen_items(node, x, d, True)
        if seen is None:
            return
        for index, item in enumerate(x):
            if index in seen:
                continue
            if rest is FALSE_NODE:
                problems.add(
                    (*path, index), "unexpected item (no keyword of the schema describes it)"
                )
            else:
                rest.explain(item, (*path, index), problems, d + 1)

    return ok, explain
