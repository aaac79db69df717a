"""The exception hierarchy: one root, subclasses split by whose fault it is.

Everything toolnexus raises derives from :class:`ToolnexusError`. Each subclass also
inherits the builtin a caller would naturally catch (``ValueError``, ``LookupError``,
``TimeoutError``), so ``except ValueError`` keeps working, and carries structured fields
so no layer has to parse a message.
"""

from __future__ import annotations

__all__ = [
    "OperationCancelledError",
    "PartTooLargeError",
    "StrictSchemaError",
    "ToolnexusError",
    "WaitTimeoutError",
    "WireFormatError",
]


class ToolnexusError(Exception):
    """Root of every exception toolnexus raises.

    Example::

        try:
            Request.from_json("[]")
        except ToolnexusError as exc:
            print(exc)
    """


class OperationCancelledError(ToolnexusError):
    """Raised by :meth:`CancellationToken.raise_if_cancellation_requested`.

    A tool may let it propagate: the toolkit turns it into an error result saying the
    call was cancelled.

    Example::

        token.raise_if_cancellation_requested()   # raises once the token is cancelled
    """

    def __init__(self, message: str = "the operation was cancelled") -> None:
        super().__init__(message)


class WaitTimeoutError(ToolnexusError, TimeoutError):
    """Raised by :meth:`Call.result` when its ``timeout`` passes before the call is done.

    Only the wait gave up: the call goes on, and a later ``result()`` still gets its answer.

    Example::

        try:
            result = call.result(timeout=0.5)
        except WaitTimeoutError:
            call.cancel()
    """


class WireFormatError(ToolnexusError, ValueError):
    """Malformed wire input: not JSON, not an object, or a missing or mistyped field.

    ``type_name`` is the type being read (``"Request"``), ``field`` the wire key at fault
    (``None`` when the whole document is wrong).

    Example::

        try:
            Answer.from_dict({"id": "pnd-1"})
        except WireFormatError as exc:
            assert exc.field == "ok"
    """

    def __init__(self, type_name: str, field: str | None, problem: str) -> None:
        where = f"field {field!r}" if field is not None else "input"
        super().__init__(f"invalid {type_name}: {where} {problem}")
        self.type_name = type_name
        self.field = field
        self.problem = problem

    def __reduce__(self) -> tuple[type[WireFormatError], tuple[str, str | None, str]]:
        # Rebuild from the fields, not from the message: errors cross process boundaries.
        return (type(self), (self.type_name, self.field, self.problem))


class PartTooLargeError(ToolnexusError, ValueError):
    """A content part's decoded bytes exceed the ceiling (maxPartBytes).

    ``part_type`` is the part's type, ``size`` its decoded size and ``limit`` the ceiling,
    both in bytes. The message names both sizes, never the content.

    Example::

        try:
            Part.image("huge.png", max_bytes=1024)
        except PartTooLargeError as exc:
            print(exc.size, exc.limit)
    """

    def __init__(self, part_type: str, size: int, limit: int) -> None:
        super().__init__(
            f"the {part_type} part is {size} bytes, over the {limit}-byte limit "
            "(maxPartBytes); shrink it, or raise the limit with "
            "toolnexus.parts.set_max_part_bytes(n) or max_bytes=n for this call"
        )
        self.part_type = part_type
        self.size = size
        self.limit = limit

    def __reduce__(self) -> tuple[type[PartTooLargeError], tuple[str, int, int]]:
        return (type(self), (self.part_type, self.size, self.limit))


class StrictSchemaError(ToolnexusError, ValueError):
    """A tool's schema cannot be expressed in a provider's strict mode.

    ``tool`` is the tool's name, ``path`` where in its schema the problem is, ``provider``
    whose strict mode refuses it (``"OpenAI"`` or ``"Anthropic"``).

    Example::

        try:
            toolkit.to_openai(strict=True)
        except StrictSchemaError as exc:
            print(exc.tool, exc.path)
    """

    def __init__(self, tool: str, path: str, problem: str, provider: str = "OpenAI") -> None:
        method = "to_openai()" if provider == "OpenAI" else f"to_{provider.lower()}()"
        super().__init__(
            f"tool {tool!r} cannot be offered in {provider} strict mode: "
            f"{path or 'its arguments'} {problem}; use {method} without strict=True for it, "
            "or give the tool a schema whose objects all list their properties"
        )
        self.tool = tool
        self.path = path
        self.problem = problem
        self.provider = provider
