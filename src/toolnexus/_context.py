"""The optional second argument of every tool: :class:`ToolContext`.

It carries what a tool needs to be a good citizen: a cancellation token, the caller's
budget for this call, the answer to a question it asked earlier, and ways to report
progress and log messages when someone listens.
"""

from __future__ import annotations

import contextvars
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ._cancellation import CancellationToken
from ._frozen import sealed
from .errors import InvalidTypeError, InvalidValueError

# Not `from typing import TYPE_CHECKING`: importing typing would double what
# `import toolnexus` costs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._principal import Principal
    from ._suspension import Answer

__all__ = ["LOG_LEVELS", "LogReporter", "ProgressReporter", "ToolContext", "remaining_ms_until"]

ProgressReporter = Callable[[float, "float | None", "str | None"], None]
"""``reporter(progress, total, message)``: receives a tool's progress reports."""

if TYPE_CHECKING:
    LogReporter = Callable[[str, Any, "str | None"], None]
else:  # typing stays unloaded, so at run time the alias spells Any as object
    LogReporter = Callable[[str, object, "str | None"], None]
"""``reporter(level, data, logger)``: receives a tool's log messages for its client."""

LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""The log levels a tool may use, least severe first (the syslog levels MCP uses)."""

# Package-internal: a driver that serves a call (the MCP HTTP transport) binds its
# client's log channel here before starting the call; the host copies the caller's context
# variables into the worker, so the tool's ctx.report_log finds it without every host
# signature growing a parameter.
bound_log: contextvars.ContextVar[LogReporter | None] = contextvars.ContextVar(
    "toolnexus_log_reporter", default=None
)

# Package-internal, the same way: a server that verified who sent a request (the MCP HTTP
# transport, with OAuth) binds the principal here before it makes the call; the call reads
# it from the context it copied when it builds the tool's ToolContext.
bound_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "toolnexus_principal", default=None
)


class PresentedToken:
    """The access token a verified caller presented, held for a gateway that trades it
    for an upstream's own (RFC 8693); its repr never shows it, so no log line can."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return "<presented token, hidden>"


# Package-internal, next to bound_principal: the token that principal was verified from
# (set only with an OAuth-verified principal). Never put in a ToolContext: only a
# gateway's remote tool that exchanges it per upstream reads it.
bound_token: contextvars.ContextVar[PresentedToken | None] = contextvars.ContextVar(
    "toolnexus_presented_token", default=None
)


@sealed
@dataclass(frozen=True, slots=True, repr=False)  # its own __repr__ below
class ToolContext:
    """What the host tells a tool about this one call. Every field is optional.

    Attributes:
        timeout_ms: this call's budget in milliseconds; ``None`` means unset (fall back
            to your own default — never read it as zero). What is left of it:
            :meth:`remaining_ms`, or :attr:`deadline`.
        cancellation_token: observe it in long work; ``CancellationToken.NONE`` by default.
        answer: present only on a retry after a suspension was resolved.
        progress: where :meth:`report_progress` sends reports; ``None`` when nobody
            listens (reports are then dropped).
        log: where :meth:`report_log` sends messages; ``None``: to the channel the
            serving driver bound for this call (an MCP client's), if any.
        principal: who made the call, as the server verified it (an OAuth access
            token's subject, scopes and client: :class:`~toolnexus.Principal`); ``None``
            when nobody verified anyone (a local call, stdio, a static token).

    Example::

        >>> ctx = ToolContext(5000)
        >>> ctx.timeout_ms, ctx.is_cancelled, ctx.answer
        (5000, False, None)
    """

    timeout_ms: int | None = None
    cancellation_token: CancellationToken = CancellationToken.NONE
    answer: Answer | None = None
    progress: ProgressReporter | None = field(default=None, repr=False, compare=False)
    log: LogReporter | None = field(default=None, repr=False, compare=False)
    principal: Principal | None = field(default=None, repr=False)
    # When the budget started (time.monotonic()): when this context was made. The host
    # makes a call's context as it arms the call's deadline, so both count from there.
    _started: float = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        token = self.cancellation_token
        state = (
            "cancelled"
            if token.is_cancellation_requested
            else "live"
            if token.can_be_cancelled
            else "no token"
        )
        return f"<ToolContext timeout_ms={self.timeout_ms} {state} answer={self.answer!r}>"

    def __post_init__(self) -> None:
        timeout = self.timeout_ms
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0
        ):
            raise InvalidValueError(
                f"timeout_ms must be None or an int >= 0 (milliseconds), got {timeout!r}"
            )
        if not isinstance(self.cancellation_token, CancellationToken):
            raise InvalidTypeError(
                "cancellation_token must be a CancellationToken (e.g. source.token), "
                f"got {type(self.cancellation_token).__name__}"
            )
        if self.answer is not None and not _is_answer(self.answer):
            raise InvalidTypeError(
                f"answer must be an Answer or None, got {type(self.answer).__name__}"
            )
        if self.progress is not None and not callable(self.progress):
            raise InvalidTypeError(
                f"progress must be callable or None, got {type(self.progress).__name__}"
            )
        if self.log is not None and not callable(self.log):
            raise InvalidTypeError(f"log must be callable or None, got {type(self.log).__name__}")
        if self.principal is not None:
            from ._principal import Principal  # loaded with the first principal, not before

            if not isinstance(self.principal, Principal):
                raise InvalidTypeError(
                    "principal must be a toolnexus.Principal or None, got "
                    f"{type(self.principal).__name__}"
                )
        object.__setattr__(self, "_started", time.monotonic())

    @property
    def deadline(self) -> float | None:
        """When this call's budget runs out, on the ``time.monotonic()`` clock; ``None``
        when no budget is set. Counted from when the context was made (the host makes it
        as it arms the call's deadline, so the time a call waited for a worker is already
        spent); a changed copy (``with_timeout``, ``with_answer``, ``replace``) starts
        afresh.

        Example::

            >>> import time
            >>> ctx = ToolContext(5000)
            >>> 4.0 < ctx.deadline - time.monotonic() <= 5.0
            True
            >>> ToolContext().deadline is None
            True
        """
        if self.timeout_ms is None:
            return None
        return self._started + self.timeout_ms / 1000

    def remaining_ms(self) -> int | None:
        """How many milliseconds of this call's budget are left: ``0`` once it has run
        out, ``None`` when no budget is set (fall back to your own default). A tool that
        wants to stop in time checks it between steps, or hands it to a client library as
        its timeout.

        Example::

            >>> 4000 < ToolContext(5000).remaining_ms() <= 5000
            True
            >>> ToolContext(0).remaining_ms(), ToolContext().remaining_ms()
            (0, None)
        """
        return remaining_ms_until(self.deadline)

    @property
    def is_cancelled(self) -> bool:
        """Shorthand for ``cancellation_token.is_cancellation_requested``.

        Example::

            >>> from toolnexus import CancellationTokenSource
            >>> source = CancellationTokenSource()
            >>> ctx = ToolContext(cancellation_token=source.token)
            >>> source.cancel()
            >>> ctx.is_cancelled
            True
        """
        return self.cancellation_token.is_cancellation_requested

    def with_answer(self, answer: Answer | None) -> ToolContext:
        """A copy of this context carrying ``answer`` (for the retry after a suspension).

        Example::

            >>> from toolnexus import Answer
            >>> ToolContext(5000).with_answer(Answer("pnd-1", True)).answer.ok
            True
        """
        return dataclasses.replace(self, answer=answer)

    def with_timeout(self, timeout_ms: int | None) -> ToolContext:
        """A copy of this context with another budget; validated like the constructor.

        Example::

            >>> ToolContext(5000).with_timeout(250).timeout_ms
            250
        """
        return dataclasses.replace(self, timeout_ms=timeout_ms)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report how far the call has come; a no-op when nobody listens.

        Example::

            >>> ctx = ToolContext(progress=lambda done, total, message: print(done, total, message))
            >>> ctx.report_progress(1, 3, "first of three")
            1 3 first of three
            >>> ToolContext().report_progress(1, 3)   # nobody listens: dropped
        """
        if self.progress is not None:
            self.progress(progress, total, message)

    def report_log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message to whoever serves this call (an MCP client that asked for
        messages at ``level`` or above); a no-op when nobody listens.

        ``level`` is one of :data:`LOG_LEVELS`; ``data`` is any JSON value (usually a
        string); ``logger`` optionally names the source. Raises ``ValueError`` for an
        unknown level.

        Example::

            >>> ctx = ToolContext(log=lambda level, data, logger: print(level, data))
            >>> ctx.report_log("info", "fetched 3 pages")
            info fetched 3 pages
            >>> ToolContext().report_log("debug", "nobody listens: dropped")
        """
        if level not in LOG_LEVELS:
            raise InvalidValueError(f"level must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
        reporter = self.log if self.log is not None else bound_log.get()
        if reporter is not None:
            reporter(level, data, logger)


def _is_answer(value: object) -> bool:
    # Answer loads with the first answer given, not with the contract: a server starts
    # without it.
    from ._suspension import Answer

    return isinstance(value, Answer)


def remaining_ms_until(deadline: float | None) -> int | None:
    """Whole milliseconds from now to ``deadline`` (a ``time.monotonic()`` time), never
    below 0; None without a deadline. The one rule for "what is left of a budget", which
    :meth:`ToolContext.remaining_ms` and a policy's ``ToolCall.remaining_ms()`` share.

    Example::

        >>> remaining_ms_until(None), remaining_ms_until(time.monotonic() - 1)
        (None, 0)
    """
    if deadline is None:
        return None
    return max(0, int((deadline - time.monotonic()) * 1000))
