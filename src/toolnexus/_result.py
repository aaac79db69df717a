"""What a tool returns: :class:`ToolResult` — text for the model, an error flag, metadata,
and optional content parts (images, files, audio).

A suspension is data on the result, not a new type: a result is pending iff
``metadata["pending"]`` is a :class:`Request`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MethodType

from . import _wire
from ._frozen import FrozenDict, freeze, sealed, thaw
from .errors import InvalidTypeError, InvalidValueError, WireFormatError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any, ClassVar, Protocol, overload

    # parts.py (a dataclass and base64) loads with the first result that has parts, not
    # with `import toolnexus` or `from toolnexus import Host`.
    from ._parts import Part
    from ._suspension import Request

    class _OkFactory(Protocol):
        def __call__(
            self,
            output: str,
            metadata: Mapping[str, Any] | None = None,
            *,
            parts: Iterable[Part] | None = None,
        ) -> ToolResult: ...


__all__ = ["NO_METADATA", "PENDING_KEY", "STRUCTURED_KEY", "ToolResult"]

PENDING_KEY = "pending"
"""The metadata key under which a suspension carries its :class:`Request`."""

STRUCTURED_KEY = "structuredContent"
"""The metadata key under which a tool's JSON return value is kept for structured output."""


class _NoMetadata(FrozenDict):
    """The metadata of a result built without any: an empty read-only mapping, so
    ``result.metadata["reason"]`` type-checks (and ``.get`` works) on every result, while
    the wire form still omits ``metadata`` for it. A mapping given explicitly, even an
    empty one, is set: it is written (``"metadata": {}``)."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_no_metadata, ())  # unpickles as the one shared instance


NO_METADATA: Mapping[str, Any] = _NoMetadata()
"""What ``ToolResult.metadata`` is when no metadata was given (``None`` is stored as this)."""


def _no_metadata() -> Mapping[str, Any]:
    return NO_METADATA


@sealed
@dataclass(frozen=True, slots=True, repr=False, init=False)  # its own __init__, __repr__
class ToolResult:
    """The outcome of one tool call.

    Attributes:
        output: text for the model (for a suspension: the prompt, plus ``"\\n" + url``).
        is_error: True when the call produced no usable answer.
        metadata: a read-only JSON object, empty when none was given (then the wire
            form leaves it out); ``metadata["pending"]`` marks a suspension.
        parts: a tuple of :class:`~toolnexus.Part` (images, files, audio) that go
            with ``output``; ``()`` when there are none (``None`` and an empty list are
            stored as ``()``, so a result without parts is the same value as before parts
            existed). ``output`` stays what text-only providers and transcripts see.

    Example::

        >>> ToolResult.ok("42")
        <ToolResult ok '42'>
        >>> ToolResult.error("no such file").is_error
        True
        >>> from toolnexus import Request
        >>> ToolResult.pending(Request("approval", "Deploy?")).is_pending
        True
    """

    output: str
    is_error: bool = False
    metadata: Mapping[str, Any] = field(default_factory=lambda: NO_METADATA)
    parts: Sequence[Part] = ()

    def __init__(
        self,
        output: str,
        is_error: bool = False,
        metadata: Mapping[str, Any] | None = None,
        parts: Sequence[Part] = (),
    ) -> None:
        # Written out rather than generated with a __post_init__: one frame, not two, for
        # what every tool call builds.
        if output.__class__ is not str and not isinstance(output, str):
            raise InvalidTypeError(
                f"ToolResult.output must be a str, got {type(output).__name__}; "
                "convert it (str(value) or json.dumps(value)) first"
            )
        if is_error.__class__ is not bool:  # bool cannot be subclassed
            raise InvalidTypeError(
                f"ToolResult.is_error must be a bool, got {type(is_error).__name__}"
            )
        if metadata is None:
            metadata = NO_METADATA
        else:
            if metadata.__class__ is FrozenDict:
                pass  # what tools build: no ABC check on the hot path
            elif not isinstance(metadata, Mapping):
                raise InvalidTypeError(
                    "ToolResult.metadata must be a mapping (a JSON object) or None, "
                    f"got {type(metadata).__name__}"
                )
            elif not isinstance(metadata, FrozenDict):
                metadata = freeze(metadata)
            if not is_error and _is_request(metadata.get(PENDING_KEY)):
                # A suspension has no usable answer yet; a host reading is_error alone
                # must never take one for a success.
                raise InvalidValueError(
                    "a ToolResult with metadata['pending'] must have is_error=True; "
                    "build suspensions with ToolResult.pending(request)"
                )
        if parts != ():
            parts = _check_parts(parts)
        _set_output(self, output)
        _set_is_error(self, is_error)
        _set_metadata(self, metadata)
        _set_parts(self, parts)

    # `ToolResult.ok(...)` builds a success; `result.ok` reads one (see _OkFactoryOrFlag).
    if TYPE_CHECKING:
        ok: ClassVar[_OkFactoryOrFlag]

    @classmethod
    def error(
        cls,
        output: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        parts: Iterable[Part] | None = None,
    ) -> ToolResult:
        """A failed result: ``output`` says what went wrong, for the model to read
        (``parts`` may carry, say, a screenshot of the failure).

        Example::

            >>> ToolResult.error("no such file: a.txt").is_error
            True
        """
        return cls(output, True, metadata, _as_tuple(parts))

    @classmethod
    def pending(cls, request: Request) -> ToolResult:
        """A suspension: the call waits for an answer to ``request``.

        It is an error result (no usable answer yet) whose output is the prompt, plus
        ``"\\n" + url`` when the request has a url. Raises ``TypeError`` for anything but
        a :class:`Request`.

        Example::

            >>> from toolnexus import Request
            >>> parked = ToolResult.pending(Request("input", "Which environment?"))
            >>> parked.is_pending, parked.is_error, parked.output
            (True, True, 'Which environment?')
        """
        if not _is_request(request):
            raise InvalidTypeError(f"pending() takes a Request, got {type(request).__name__}")
        output = request.prompt if request.url is None else f"{request.prompt}\n{request.url}"
        return cls(output, True, {PENDING_KEY: request})

    @classmethod
    def auth_required(
        cls, url: str, prompt: str = "Authorization required to continue"
    ) -> ToolResult:
        """A suspension asking the human to authorize at ``url`` (completed out of band).

        Example::

            >>> print(ToolResult.auth_required("https://example.test/login").output)
            Authorization required to continue
            https://example.test/login
        """
        from ._suspension import Request

        return cls.pending(Request("authorization", prompt, url=url))

    @staticmethod
    def pending_of(result: ToolResult | None) -> Request | None:
        """The request a result is suspended on, or None (also for ``None`` itself).

        Example::

            >>> from toolnexus import Request
            >>> req = Request("approval", "Deploy?")
            >>> ToolResult.pending_of(ToolResult.pending(req)) is req
            True
            >>> ToolResult.pending_of(ToolResult.ok("done")) is None
            True
        """
        if result is None:
            return None
        if not isinstance(result, ToolResult):
            raise InvalidTypeError(
                f"pending_of() takes a ToolResult or None, got {type(result).__name__}"
            )
        request = result.metadata.get(PENDING_KEY)
        return request if _is_request(request) else None

    @property
    def is_pending(self) -> bool:
        """True iff this result is a suspension (``metadata["pending"]`` is a Request).

        Example::

            >>> ToolResult.error("boom").is_pending
            False
        """
        return ToolResult.pending_of(self) is not None

    def to_dict(self) -> dict[str, Any]:
        """The wire form: keys ``output, isError, metadata, parts`` (``metadata`` omitted
        when none was given, ``parts`` when there are none); a pending request is written under
        ``metadata.pending``, each part as :meth:`Part.to_dict`.

        Example::

            >>> ToolResult.ok("42").to_dict()
            {'output': '42', 'isError': False}
        """
        out: dict[str, Any] = {"output": self.output, "isError": self.is_error}
        if self.metadata is not NO_METADATA:
            meta = {}
            for key, value in self.metadata.items():
                meta[key] = value.to_dict() if _is_request(value) else thaw(value)
            out["metadata"] = meta
        if self.parts:
            out["parts"] = [part.to_dict() for part in self.parts]
        return out

    def to_json(self) -> str:
        """Compact JSON of :meth:`to_dict`, non-ASCII kept as is (encode it as UTF-8).

        Raises :class:`WireFormatError` when metadata holds a value JSON cannot carry.

        Example::

            >>> from toolnexus import Request
            >>> print(ToolResult.pending(Request("input", "Which?", id="pnd-1")).to_json())
            {"output":"Which?","isError":true,"metadata":{"pending":{"id":"pnd-1","kind":"input","prompt":"Which?"}}}
        """
        return _wire.dumps(self.to_dict(), "ToolResult")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        """Rebuild a result from its wire form; ``metadata.pending`` becomes a Request,
        each of ``parts`` a :class:`~toolnexus.Part`.

        Raises :class:`WireFormatError` (a ``ValueError``) naming the field at fault
        (``metadata.pending.kind`` for a field of the nested request, ``parts[1].mimeType``
        for a part's), and :class:`~toolnexus.errors.PartTooLargeError` for a part over
        the process-wide ceiling.

        Example::

            >>> ToolResult.from_dict({"output": "42", "isError": False})
            <ToolResult ok '42'>
        """
        data = _wire.require_object(data, "ToolResult")
        output = _wire.field(data, "output", str, "ToolResult", required=True, expected="a string")
        is_error = _wire.field(
            data, "isError", bool, "ToolResult", required=True, expected="a boolean"
        )
        metadata = _wire.field(
            data, "metadata", Mapping, "ToolResult", required=False, expected="an object"
        )
        if metadata is not None and PENDING_KEY in metadata:
            pending = metadata[PENDING_KEY]
            from ._suspension import Request

            try:
                request = Request.from_dict(pending)
            except WireFormatError as exc:
                # Point at the nested field, e.g. metadata.pending.kind, not at the Request.
                where = "metadata.pending" + (f".{exc.field}" if exc.field else "")
                raise WireFormatError("ToolResult", where, exc.problem) from None
            if not is_error:
                raise WireFormatError(
                    "ToolResult", "isError", "must be true when metadata.pending is set, got false"
                )
            metadata = {**metadata, PENDING_KEY: request}
        parts = _wire.field(
            data, "parts", list, "ToolResult", required=False, expected="an array of parts"
        )
        read: list[Part] = []
        if parts is not None:
            from ._parts import Part

            for index, raw in enumerate(parts):
                try:
                    read.append(Part.from_dict(raw))
                except WireFormatError as exc:
                    where = f"parts[{index}]" + (f".{exc.field}" if exc.field else "")
                    raise WireFormatError("ToolResult", where, exc.problem) from None
        return cls(output, is_error, metadata, tuple(read))

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> ToolResult:
        """Parse :meth:`to_json` output (text or UTF-8 bytes); a pending result gets its
        :class:`Request` back.

        Raises :class:`WireFormatError` (a ``ValueError``) when the text is not JSON, not
        an object, or a field is missing or mistyped.

        Example::

            >>> text = '{"output":"?","isError":true,"metadata":{"pending":' \\
            ...        '{"id":"pnd-1","kind":"input","prompt":"?"}}}'
            >>> ToolResult.pending_of(ToolResult.from_json(text)).id
            'pnd-1'
        """
        return cls.from_dict(_wire.loads_object(text, "ToolResult"))

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt through the public class and __init__ (an unset metadata as None), so a
        # pickle names toolnexus.ToolResult and an unpickled result is written as it was.
        metadata = None if self.metadata is NO_METADATA else self.metadata
        return (type(self), (self.output, self.is_error, metadata, tuple(self.parts)))

    def __repr__(self) -> str:
        state = "pending" if self.is_pending else "error" if self.is_error else "ok"
        text = self.output if len(self.output) <= 60 else self.output[:57] + "..."
        if not self.parts:
            return f"<ToolResult {state} {text!r}>"
        count = len(self.parts)
        return f"<ToolResult {state} {text!r} +{count} part{'s' if count > 1 else ''}>"


def _ok(
    cls: type[ToolResult],
    output: str,
    metadata: Mapping[str, Any] | None = None,
    *,
    parts: Iterable[Part] | None = None,
) -> ToolResult:
    """A successful result; ``metadata`` is copied and made read-only; ``parts``
    (images, files, audio) go with the text.

    On an instance, ``result.ok`` is instead a bool: True when the call succeeded
    (``not result.is_error``; a pending result is not ok until it is answered).

    Example::

        >>> ToolResult.ok("3 rows", {"rows": 3})
        <ToolResult ok '3 rows'>
        >>> from toolnexus import Part
        >>> ToolResult.ok("the chart", parts=[Part.image(b"GIF89a", "image/gif")])
        <ToolResult ok 'the chart' +1 part>
    """
    return cls(output, False, metadata, _as_tuple(parts))


class _OkFactoryOrFlag:
    """``ToolResult.ok``: the factory on the class, a bool on an instance.

    ``ToolResult.ok("42")`` builds a success, and ``if result.ok:`` reads one, the way
    ``answer.ok`` reads an :class:`Answer`. A plain classmethod would make ``result.ok``
    a bound method, always truthy, so ``if result.ok:`` would pass for every error.
    """

    def __init__(self, factory: Any) -> None:
        self._factory = factory
        self.__doc__ = factory.__doc__

    if TYPE_CHECKING:

        @overload
        def __get__(self, instance: None, owner: type[ToolResult]) -> _OkFactory: ...

        @overload
        def __get__(self, instance: ToolResult, owner: type[ToolResult] | None = None) -> bool: ...

    def __get__(self, instance: ToolResult | None, owner: type[ToolResult] | None = None) -> Any:
        if instance is None:
            return MethodType(self._factory, owner)
        return not instance.is_error


ToolResult.ok = _OkFactoryOrFlag(_ok)

# What __init__ stores through (the class refuses assignment): each slot's own setter, a
# third cheaper than object.__setattr__, which looks the name up first. Measured, kept:
# a ToolResult costs 0.68 us this way and 1.11 us with object.__setattr__, 3.5% of the
# instructions of a whole Host.call (callgrind, 98k vs 95k).
_set_output = ToolResult.__dict__["output"].__set__
_set_is_error = ToolResult.__dict__["is_error"].__set__
_set_metadata = ToolResult.__dict__["metadata"].__set__
_set_parts = ToolResult.__dict__["parts"].__set__


def success_result(output: str, metadata: Mapping[str, Any] = NO_METADATA) -> ToolResult:
    """Package-internal: the successful result ``ToolResult(output, False, metadata)``,
    built without its checks, for what every tool call returns. The caller vouches for
    each part: ``output`` an exact ``str``, ``metadata`` :data:`NO_METADATA` or a
    :class:`FrozenDict` without a pending request. tests/test_fast_paths.py holds what
    it builds equal to the checked constructor's result. (The checks and the parameters'
    defaults cost a tenth of a served call.)"""
    result: ToolResult = object.__new__(ToolResult)
    _set_output(result, output)
    _set_is_error(result, False)
    _set_metadata(result, metadata)
    _set_parts(result, ())
    return result


def _as_tuple(parts: Iterable[Part] | None) -> tuple[Part, ...]:
    if parts is None:
        return ()
    from ._parts import Part

    if isinstance(parts, (Part, str, bytes, Mapping)):
        raise InvalidTypeError(
            f"parts must be a list of Part, got a single {type(parts).__name__}; "
            "wrap it in a list: parts=[part]"
        )
    return tuple(parts)


def _check_parts(parts: Any) -> tuple[Part, ...]:
    if parts is None:
        return ()
    from ._parts import Part

    if isinstance(parts, (Part, str, bytes, Mapping)) or not isinstance(parts, Iterable):
        raise InvalidTypeError(
            f"ToolResult.parts must be a list of Part or None, got {type(parts).__name__}"
        )
    checked = tuple(parts)
    for index, part in enumerate(checked):
        if not isinstance(part, Part):
            raise InvalidTypeError(
                f"ToolResult.parts[{index}] must be a Part, got {type(part).__name__}; "
                "build one with Part.image(...), Part.file(...), Part.audio(...) or "
                "Part.from_text(...)"
            )
    return checked


def _is_request(value: object) -> bool:
    """Whether ``value`` is a :class:`Request`. Request loads with the first value there is
    to check, not with the contract: a server starts without it, and most results carry no
    ``metadata["pending"]`` (None) to check."""
    if value is None:
        return False
    from ._suspension import Request

    return isinstance(value, Request)
