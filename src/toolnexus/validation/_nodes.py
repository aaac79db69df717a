"""Compiled schema nodes, and the one validation they run in.

A :class:`Node` is one schema object compiled into closures: ``ok`` answers yes or no
(no allocation on the valid path), ``explain`` lists the problems after ``ok`` said no, and
``reject`` names what the node expects at its root (to merge anyOf branches). Here too: the
state of one validation (:class:`_Run`: the answers of shared subschemas, the token it
stops on) and the depth limit every node keeps.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Set
from typing import TYPE_CHECKING, Any

from ..errors import OperationCancelledError
from ._problems import Path, Problems, _Stop, too_deep
from ._values import SCALAR_TYPE_NAMES, SCALARS, Ok

if TYPE_CHECKING:
    from .._cancellation import CancellationToken


# which patterns of a patternProperties match a name (see _ecma.compile_pattern_set)
Matching = Callable[..., list[int]]


Explain = Callable[[Any, Path, "Problems", int], None]


# --------------------------------------------------------------------------- one validation


class _Run:
    """The state of one validation, for a validator that needs one: the answers of its
    shared subschemas (see :func:`shared_schemas`), and the token it stops on.

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
LOCAL = _Local()


def stopper() -> Callable[[], bool] | None:
    """What a long pattern run asks to know if it must stop: this thread's validation's
    cancelled() when it has a token (it raises), else None."""
    run = LOCAL.run
    if run is None or run.token is None:
        return None
    return run.cancelled


def heard() -> None:
    """Raise :class:`OperationCancelledError` if this thread's validation was cancelled."""
    run = LOCAL.run
    if run is not None:
        run.heard()


def with_run(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` (a root's ok or explain) run inside a :class:`_Run`: its own, unless the
    thread's validation already has one (a token given to errors() or is_valid())."""
    local = LOCAL

    def in_run(*arguments: Any) -> Any:
        if local.run is not None:
            return check(*arguments)
        local.run = _Run(None)
        try:
            return check(*arguments)
        finally:
            local.run = None

    return in_run


def heard_while(token: CancellationToken, check: Callable[[Any], Any], instance: Any) -> Any:
    """``check(instance)`` inside a :class:`_Run` that hears ``token``."""
    local = LOCAL
    outer = local.run
    local.run = _Run(token)
    try:
        return check(instance)
    finally:
        local.run = outer


def always(x: Any, d: int) -> bool:
    return True


def _never(x: Any, d: int) -> bool:
    return False


# --------------------------------------------------------------------------- compiled nodes


class Node:
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
        self.ok: Ok = _never
        self.explain: Explain = explain_nothing
        self.reject: Callable[[Any, int], list[str] | None] = reject_nothing
        # same-instance references (keyword, node), for finding loops that never descend
        self.links: list[tuple[str, Node]] = []
        # for a node that only checks a scalar type: the Python types it accepts at a glance
        self.exact: frozenset[type] = frozenset()
        # ...and whether it takes every finite float too (a number leaf)
        self.floats = False
        # What the node evaluates, for unevaluatedProperties/unevaluatedItems around it:
        # the properties, patternProperties and prefix it names, whether additionalProperties
        # / items (all) or its own unevaluated* (all, once it passed) cover the rest, its
        # contains, and the subschemas applied to the same value (always, or when they pass).
        self.seen_names: frozenset[str] = frozenset()
        self.seen_match: Matching | None = None
        self.seen_all_properties = False
        self.seen_unevaluated_properties = False
        self.seen_prefix = 0
        self.seen_all_items = False
        self.seen_unevaluated_items = False
        self.seen_contains: Node | None = None
        self.inplace: list[Node] = []
        self.inplace_if_valid: list[Node] = []
        self.conditional: tuple[Node, Node | None, Node | None] | None = None
        self.dependent: list[tuple[str, Node]] = []

    def ok_late(self) -> Ok:
        """``ok``, or a late-bound call to it while the node is still being compiled."""
        if self.done:
            return self.ok
        return lambda x, d: self.ok(x, d)


def explain_nothing(x: Any, path: Path, problems: Problems, d: int) -> None:
    return None


def reject_nothing(x: Any, d: int) -> list[str] | None:
    return None


def memoize(node: Node) -> None:
    """Make ``node`` answer each (value, depth) once per validation (see :class:`_Run`):
    ``ok``, ``reject`` and ``explain`` each remember what they said."""
    ok, reject, explain = node.ok, node.reject, node.explain
    tag = id(node)
    local = LOCAL
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

    def memo_explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        run = local.run
        if run is None:
            explain(x, path, problems, d)
            return
        key = (tag, id(x), d, path)
        found = run.answers.get(key)
        if found is None:
            run.step()
            inner = Problems(problems.ceiling)
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
    if reject is not reject_nothing:
        node.reject = memo_reject


def _make_false() -> Node:
    node = Node("#")
    node.ok = _never

    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        problems.add(path, "no value is allowed here")

    node.explain = explain
    node.reject = lambda x, d: []
    node.done = True
    return node


FALSE_NODE = _make_false()


def all_of(oks: list[Ok]) -> Ok:
    if not oks:
        return always
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


def make_leaf(ok: Ok, message: Callable[[Any, int], str]) -> tuple[Ok, Explain]:
    def explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        if not ok(x, d):
            problems.add(path, message(x, d))

    return ok, explain


def covers_depth(
    checking: Set[str], type_names: tuple[str, ...] | None, has_array: bool, has_object: bool
) -> bool:
    """Whether a node's own checks already refuse values nested past the depth limit.

    True when it accepts no containers (scalar types, enum, const), when it defers to other
    nodes that do (a passing $ref/allOf/anyOf/oneOf branch is itself depth-limited), or when
    it walks every item and property of the containers it accepts.
    """
    if type_names is not None and SCALAR_TYPE_NAMES.issuperset(type_names):
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
        if type(value) in SCALARS:
            continue
        if not _within_depth(value, budget - 1):
            return False
    return True


def _too_deep_at(x: Any, budget: int) -> Path | None:
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


def depth_guard(ok: Ok, explain: Explain, max_depth: int) -> tuple[Ok, Explain]:
    """Add the depth limit to a node that accepts containers without walking them."""

    def guarded_ok(x: Any, d: int) -> bool:
        if type(x) in SCALARS:
            return ok(x, d)
        return ok(x, d) and _within_depth(x, max_depth - d)

    def guarded_explain(x: Any, path: Path, problems: Problems, d: int) -> None:
        explain(x, path, problems, d)
        if type(x) not in SCALARS:
            where = _too_deep_at(x, max_depth - d)
            if where is not None:
                problems.add((*path, *where), too_deep(max_depth))

    return guarded_ok, guarded_explain
