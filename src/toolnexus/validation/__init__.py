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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidValueError, SchemaError
from ._compiler import Compiler
from ._keywords import ANNOTATION_KEYWORDS, SUPPORTED_KEYWORDS
from ._nodes import heard_while, with_run
from ._problems import Problems, _Stop, json_short, too_deep

if TYPE_CHECKING:
    from .._cancellation import CancellationToken

__all__ = [
    "ANNOTATION_KEYWORDS",
    "SUPPORTED_KEYWORDS",
    "SchemaError",
    "Validator",
    "check_schema",
    "validate",
]

DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_PROBLEMS = 20


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

    __slots__ = ("_explain", "_max_depth", "_max_problems", "_ok", "hears_token", "schema")

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
        compiler = Compiler(schema, max_depth, registry, format_assertion)
        try:
            root = compiler.compile()
        except RecursionError:
            raise SchemaError("#", None, "the schema nests too deeply to compile") from None
        self._ok = root.ok
        self._explain = root.explain
        self.hears_token: bool = compiler.hears_token
        """Whether a check can hear a cancellation token: only long work does (a
        ``pattern`` or ``patternProperties`` match, an array's ``items``, a subschema the
        schema shares). False: :meth:`errors` and :meth:`is_valid` never read the
        ``token`` they are given, as every check of the schema is short. A host builds a
        call's token for such a tool's check only when the tool itself takes one.

        Example::

            Validator({"type": "integer"}).hears_token                          # False
            Validator({"type": "string", "pattern": "^a+$"}).hears_token       # True
        """
        if compiler.memoized:
            # a validation of a schema with shared subschemas keeps their answers in a _Run
            self._ok = with_run(root.ok)
            self._explain = with_run(root.explain)

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
        if token is not None and self.hears_token and token.can_be_cancelled:
            problems: list[str] = heard_while(token, self.errors, instance)
            return problems
        try:
            if self._ok(instance, 0):
                return []
        except RecursionError:
            pass
        return self._explained(instance)

    def _explained(self, instance: Any) -> list[str]:
        """The problems of an instance the fast check refused."""
        problems = Problems()
        try:
            self._explain(instance, (), problems, 0)
        except _Stop:
            pass
        except RecursionError:
            problems.items.append(too_deep(self._max_depth))
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
        if token is not None and self.hears_token and token.can_be_cancelled:
            return bool(heard_while(token, self.is_valid, instance))
        try:
            return bool(self._ok(instance, 0))
        except RecursionError:
            return False

    def __repr__(self) -> str:
        return f"<Validator {json_short(self.schema, 60)}>"


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
