"""The middleware chain: what runs around every tool call a :class:`~toolnexus.Host` makes.

A host given middleware (``Host(middleware=[...], tool_middleware={...})``), or one that
traces (:mod:`toolnexus._tracing`), runs each call's tool through a chain: each middleware
sees the call (:class:`ToolCall`: the tool, the arguments, the context, the call id, the
turn) and a ``call_next`` that runs the rest of the chain, and returns the result. It may
pass the call on, rewrite its arguments (``call_next(call.with_arguments(...))``, checked
against the tool's schema again), answer without running the tool, or transform the result.

Rules the code below keeps:

- **The chain runs where the tool runs**, inside the call's attempt: time in middleware
  counts against the call's budget, the deadline and a cancel hold through it (the host
  sees one tool that takes a context), and the loop rule applies to what the chain returns.
- **Arguments are checked once before the chain** (an invalid call never reaches a
  middleware) **and again only when a middleware rewrote them.**
- **Sync and async**: a middleware is a plain function, an ``async def`` function, or a
  :class:`Middleware` with both forms. The chain is async — awaited on the caller's loop
  under ``acall`` — when the tool is async and every middleware has an async form; else it
  runs on the host's worker, where an async-only middleware (or an async tool) runs on a
  private loop that the call's token cancels.
- **A middleware hears the call's own token**: ``call.context`` is the context the call
  makes for its tool (not a copy), whose token the deadline, ``call.cancel()``,
  ``host.close()`` and the caller's token cancel. A chained call therefore always has a
  context and a token (``_Run.takes_context``), even for a tool that takes neither: a
  middleware may wait, and must still be stoppable. (Made lazily, they would be most of a
  pass-through's saving; but ``ToolCall.context`` is a field of a frozen dataclass.)
- **A policy that can answer without the tool answers before the worker hand-off**: when
  the first middleware of a tool's chain is a built-in that can tell from the call alone
  (a ``cache()`` hit, a ``call_limit()`` already reached), the host asks it on the
  caller's thread before the call goes to a worker, and the call settles there with its
  answer (``Host.call`` makes no call object for it). It is asked with what a
  :class:`ToolCall` would carry, and makes one only if it must (a cache's ``key``).
  Otherwise (or while tracing may be on) the whole chain runs, as below.
- **A middleware's failure is a result**: one that raises, or returns anything but a
  :class:`~toolnexus.ToolResult`, becomes an error result naming it; the traceback goes to
  ``logging``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from . import _tracing
from ._context import ProgressReporter, ToolContext, bound_principal, remaining_ms_until
from ._frozen import sealed
from ._log import LazyLogger
from ._result import ToolResult
from .errors import InvalidTypeError, InvalidValueError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing costs as much to import as Host
if TYPE_CHECKING:
    from typing import Any, TypeAlias, TypeVar

    from ._tools import Tool
    from ._tracing import Settled

    C = TypeVar("C", bound=Settled)  # the host's Call: this layer is below the host's

    # A built-in's answer before the worker hand-off, from what a ToolCall would carry
    # (tool, arguments, context without the budget, call_id, turn, budget): no ToolCall
    # made unless it needs one (see early_call).
    Early = Callable[
        [Tool, Mapping[str, Any], ToolContext, str | None, int | None, int | None],
        ToolResult | None,
    ]

__all__ = [
    "AsyncNext",
    "Middleware",
    "MiddlewareLike",
    "Next",
    "Policies",
    "ToolCall",
    "early_call",
    "exception_of",
    "is_read_only",
    "same_budget",
    "selects",
]

_log = LazyLogger()


@sealed
@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as a middleware sees it.

    Attributes:
        tool: the :class:`~toolnexus.Tool` the call runs (its ``name``, ``annotations``,
            schema).
        arguments: the arguments, checked against the tool's schema. Never change them in
            place: pass ``call.with_arguments(new)`` on, and they are checked again.
        context: the tool's :class:`~toolnexus.ToolContext` for this attempt (its token, its
            budget, the ``answer`` on a retry after a question).
        call_id: the model's id for this tool call in a turn (``Host.run_turn``), else None.
        turn: which ``run_turn``/``resume_turn`` the call belongs to (unique in the
            process), else None.
        caller: who made a turn's call: ``"direct"`` (the model) or ``"programmatic"``
            (code the model ran in the provider's code-execution tool); None outside a
            turn. Every policy applies to both alike; one may tell them apart here.
        deadline: when the call's budget ends, in ``time.monotonic()`` seconds
            (``context.deadline``); None without a deadline. A context changed through
            :meth:`with_context` keeps it.

    Example::

        def audit(call: ToolCall, call_next: Next) -> ToolResult:
            print("calling", call.name, dict(call.arguments))
            return call_next(call)
    """

    tool: Tool
    arguments: Mapping[str, Any]
    context: ToolContext = field(default_factory=ToolContext)
    call_id: str | None = None
    turn: int | None = None
    deadline: float | None = None
    _admitted: Any = field(default=None, repr=False, compare=False)
    _run: Any = field(default=None, repr=False, compare=False)
    caller: str | None = None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name

    def remaining_ms(self) -> int | None:
        """Whole milliseconds left of the call's budget now (``0`` once it ran out); None
        without one — as :meth:`ToolContext.remaining_ms <toolnexus.ToolContext.remaining_ms>`
        says it to the tool.

        Example::

            left = call.remaining_ms()
            if left is not None and left < 100:
                return ToolResult.error("not enough time left to try")
        """
        return remaining_ms_until(self.deadline)

    def with_arguments(self, arguments: Mapping[str, Any]) -> ToolCall:
        """A copy with other arguments (checked against the schema before the tool runs).

        Example::

            return call_next(call.with_arguments({**call.arguments, "limit": 10}))
        """
        if not isinstance(arguments, Mapping):
            raise InvalidTypeError(
                f"with_arguments() takes a mapping (a JSON object), got {type(arguments).__name__}"
            )
        return replace(self, arguments=arguments)

    def with_context(self, context: ToolContext) -> ToolCall:
        """A copy with another :class:`~toolnexus.ToolContext` (say, without the answer).

        Example::

            return call_next(call.with_context(call.context.with_answer(None)))
        """
        if not isinstance(context, ToolContext):
            raise InvalidTypeError(
                f"with_context() takes a ToolContext, got {type(context).__name__}"
            )
        return replace(self, context=same_budget(context, self.context))


Next = Callable[[ToolCall], ToolResult]
"""``call_next(call) -> ToolResult``: runs the rest of a synchronous chain."""

AsyncNext = Callable[[ToolCall], Awaitable[ToolResult]]
"""``await call_next(call) -> ToolResult``: runs the rest of an async chain."""


class Middleware:
    """A middleware with a synchronous and an async form, for chains of either kind.

    Override ``__call__(call, call_next)`` (``call_next(call)`` returns the result) and
    ``acall(call, call_next)`` (``await call_next(call)``). A subclass that overrides only
    one has only that form: one with only ``__call__`` makes its chain run on the host's
    workers. ``name`` is what an error result names when it fails (default: the class name).

    A plain function ``def mw(call, call_next) -> ToolResult`` or ``async def mw(call,
    call_next)`` is a middleware too; this class is for one that keeps settings or state.

    Example::

        class Stamp(Middleware):
            def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
                return stamp(call_next(call))

            async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
                return stamp(await call_next(call))
    """

    name: str = ""

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        return call_next(call)

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        return await call_next(call)

    def __repr__(self) -> str:
        return f"<{self.name or type(self).__name__}>"


MiddlewareLike: TypeAlias = (
    "Middleware | Callable[[ToolCall, Next], ToolResult]"
    " | Callable[[ToolCall, AsyncNext], Awaitable[ToolResult]]"
)
"""What ``Host(middleware=[...])`` takes: a :class:`Middleware`, or a plain or async
function ``(call, call_next) -> ToolResult``."""


# --------------------------------------------------------------------------- steps


class _Step:
    """One middleware, adapted: its name, and its sync and async forms (one may be None)."""

    __slots__ = ("arun", "early", "gate", "name", "run")

    def __init__(self, middleware: object) -> None:
        run: Callable[..., Any] | None = None
        arun: Callable[..., Any] | None = None
        # A built-in policy's answer from the call alone (see Policies.answer_early), and
        # whether that check is its whole job when it lets the call pass (a gate).
        self.early: Early | None = getattr(middleware, "_answer_early", None)
        self.gate = bool(getattr(middleware, "_gate", False))
        if isinstance(middleware, Middleware):
            cls = type(middleware)
            if cls.__call__ is not Middleware.__call__:
                run = middleware.__call__
            if cls.acall is not Middleware.acall:
                arun = middleware.acall
            if run is None and arun is None:
                raise InvalidTypeError(
                    f"middleware {cls.__name__} overrides neither __call__ nor acall; "
                    "override one (or both) to do something with the call"
                )
        elif not callable(middleware):
            raise InvalidTypeError(
                "a middleware is a function (call, call_next) -> ToolResult, an async one, "
                f"or a Middleware; got {type(middleware).__name__}"
            )
        elif inspect.iscoroutinefunction(middleware) or inspect.iscoroutinefunction(
            getattr(middleware, "__call__", None)  # noqa: B004 - an object's async __call__
        ):
            arun = middleware
        else:
            run = middleware
        self.run = run
        self.arun = arun
        self.name = str(
            getattr(middleware, "name", "")
            or getattr(middleware, "__qualname__", "")
            or type(middleware).__name__
        )


def _steps(middleware: object, where: str) -> tuple[_Step, ...]:
    if isinstance(middleware, (str, bytes, Mapping)) or not isinstance(middleware, Sequence):
        raise InvalidTypeError(
            f"{where} must be a list of middleware, got {type(middleware).__name__}"
        )
    return tuple(_Step(m) for m in middleware)


def same_budget(context: ToolContext, before: ToolContext) -> ToolContext:
    """``context``, a copy of ``before`` made in the chain (without the answer, with a
    progress reporter ...), keeping its budget's start: a copy starts its budget afresh,
    and a middleware must not give the tool more time than the call has."""
    if context is not before and context.timeout_ms == before.timeout_ms:
        started = before._started
        if context._started > started:
            object.__setattr__(context, "_started", started)
    return context


def selects(patterns: Sequence[str] | str | None, name: str) -> bool:
    """Whether a tool ``name`` matches ``patterns`` (names or ``fnmatch`` globs; None
    matches every tool)."""
    if patterns is None:
        return True
    if isinstance(patterns, str):
        patterns = (patterns,)
    from fnmatch import fnmatchcase  # loaded with the first pattern, not with Host

    return any(name == p or fnmatchcase(name, p) for p in patterns)


def is_read_only(tool: Tool) -> bool:
    """Whether the tool declares itself read-only (MCP ``readOnlyHint``)."""
    return bool(tool.annotations and tool.annotations.get("readOnlyHint") is True)


# --------------------------------------------------------------------------- the host's part

_BARE = ToolContext()  # what answer_early shows of a call with no budget, answer, principal
_CHAINS_KEPT = 4_096  # tools whose chains a host remembers (more: it starts afresh)


class Policies:
    """What a host runs around its calls: its middleware, per tool, and its tracing.

    ``tracing``: None traces when OpenTelemetry is in use (its API imported and a tracer
    provider set), False never, True always (the API must be installed).
    """

    __slots__ = ("_chains", "_host", "_rules", "answers_early", "busy", "tracing")

    def __init__(
        self,
        middleware: Sequence[object],
        tool_middleware: Mapping[str, Sequence[object]] | None,
        tracing: bool | None,
    ) -> None:
        self._host = _steps(middleware, "middleware")
        rules: list[tuple[str, tuple[_Step, ...]]] = []
        if tool_middleware is not None:
            if not isinstance(tool_middleware, Mapping):
                raise InvalidTypeError(
                    "tool_middleware must map tool names (or globs) to lists of middleware, "
                    f"got {type(tool_middleware).__name__}"
                )
            for pattern, listed in tool_middleware.items():
                if not isinstance(pattern, str) or not pattern:
                    raise InvalidTypeError(
                        f"tool_middleware keys are tool names or globs, got {pattern!r}"
                    )
                rules.append((pattern, _steps(listed, f"tool_middleware[{pattern!r}]")))
        self._rules = tuple(rules)
        self._chains: dict[int, tuple[Tool, tuple[_Step, ...], bool, tuple[_Step, ...]]] = {}
        if tracing is True:
            _tracing.require()
        elif tracing is not None and tracing is not False:
            raise InvalidTypeError(f"tracing must be None, True or False, got {tracing!r}")
        self.tracing = tracing
        # Whether every call needs around(): middleware, or tracing forced on. Otherwise
        # (no middleware, tracing None) only while the OpenTelemetry API is in use.
        self.busy = bool(self._host or self._rules) or tracing is True
        # Whether a chain can start with a policy that answers early (see answer_early).
        self.answers_early = any(
            steps and steps[0].early is not None
            for steps in (self._host, *(listed for _, listed in rules))
        )

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to run around a call: no middleware, no tracing."""
        return not self._host and not self._rules and self.tracing is False

    def _chain_for(self, tool: Tool) -> tuple[Tool, tuple[_Step, ...], bool, tuple[_Step, ...]]:
        """The tool, its steps, whether its chain is async (every step can be awaited and
        the tool is async), and the steps after a first one that is a gate (see
        :meth:`answer_early`) — worked out once per tool."""
        known = self._chains.get(id(tool))
        if known is not None and known[0] is tool:
            return known
        steps = self._host
        for pattern, listed in self._rules:
            if selects(pattern, tool.name):
                steps = steps + listed
        is_async = tool.is_async and all(step.arun is not None for step in steps)
        if len(self._chains) >= _CHAINS_KEPT:  # toolkits that change (a refreshed source)
            self._chains.clear()
        after_gate = steps[1:] if steps and steps[0].gate else steps
        # The tool is kept in its entry: its id stays its own while the entry lives.
        chain = self._chains[id(tool)] = (tool, steps, is_async, after_gate)
        return chain

    def answer_early(
        self,
        tool: Tool,
        args: Mapping[str, Any],
        budget: int | None,
        answer: Any,
        call_id: str | None,
        turn: int | None,
    ) -> ToolResult | bool:
        """The answer of the first middleware of ``tool``'s chain when it can give one
        without the tool (a cache hit, a limit reached), asked on the caller's thread
        before the call goes to a worker; else whether that middleware did its whole part
        (a gate: ``call_limit`` counted the call in), so the chain runs without it — pass
        this on to :meth:`around`. ``args`` are the arguments as resolved, not yet
        checked: a policy that keys on them answers only when they are what the tool
        would see (a cache hit names arguments that were checked and ran).

        Never while tracing may be on (the call's span then covers the whole chain), and
        never through a failure: a policy that raises here runs, and fails, in the
        chain."""
        steps = self._chain_for(tool)[1]
        first = steps[0] if steps else None
        if first is None or first.early is None:
            return False
        if self.tracing is True or (
            self.tracing is None and _tracing.API_MODULE in sys.modules and _tracing.is_on()
        ):
            return False
        # What a policy reads of the call's context here: its answer and its principal.
        # Its budget is not in it (a context with one starts its clock when made, so it
        # cannot be kept): a policy that needs it makes the ToolCall (see early_call).
        principal = bound_principal.get()
        if answer is None and principal is None:
            context = _BARE  # nothing of this call's own to say: one context kept
        else:
            context = ToolContext(answer=answer, principal=principal)
        try:
            answer = first.early(tool, args, context, call_id, turn, budget)
        except Exception:  # the chain runs it again, and reports its failure there
            return False
        return first.gate if answer is None else answer

    def around(
        self,
        call: C,
        tool: Tool,
        budget: int | None,
        call_id: str | None,
        turn: int | None,
        done: Callable[[C], object] | None,
        progress: ProgressReporter | None,
        gated: bool = False,
        *,
        caller: str | None = None,
    ) -> tuple[Tool, Callable[[C], object] | None, ProgressReporter | None]:
        """What ``call`` runs instead of ``tool`` (the tool itself when nothing runs
        around it), its first done callback (a span ends there, before ``done``), and
        its progress reporter (``progress``, or the span's, which records each report
        and passes it on). ``gated``: :meth:`answer_early` said the first step did its
        part already."""
        chain = self._chain_for(tool)
        steps = chain[3] if gated else chain[1]
        span = None
        if self.tracing is True or (self.tracing is None and _tracing.API_MODULE in sys.modules):
            span = _tracing.call_span(
                tool, call_id, budget, forced=self.tracing is True, caller=caller
            )
        if not steps and span is None:
            return tool, done, progress
        run = _Run(tool, steps, chain[2], call_id, turn, span, caller)
        if span is not None:
            progress = span.reporter(progress)
            end = span.end
            if done is None:
                done = end
            else:
                then = done

                def done(finished: C) -> None:
                    end(finished)  # the span ends before a driver answers the call
                    then(finished)

        return run, done, progress  # type: ignore[return-value]  # it runs as the tool does


def early_call(
    tool: Tool,
    arguments: Mapping[str, Any],
    context: ToolContext,
    call_id: str | None,
    turn: int | None,
    budget: int | None,
) -> ToolCall:
    """The :class:`ToolCall` of a call asked before the worker hand-off (what
    :meth:`Policies.answer_early` passed on): its context with the call's budget, counted
    from now, as the call's own will be."""
    if budget is not None:
        context = ToolContext(budget, answer=context.answer, principal=context.principal)
    return ToolCall(tool, arguments, context, call_id, turn, context.deadline)


def exception_of(call: ToolCall, result: ToolResult) -> BaseException | None:
    """What the tool raised when it returned ``result`` (the error result an exception
    became) through this chain, or None."""
    run = call._run
    if run is None or run.raised is None:
        return None
    found: tuple[ToolResult, BaseException] | None = run.raised.get(id(result))
    return None if found is None else found[1]


# --------------------------------------------------------------------------- one call


class _Run:
    """The chain for one call: the host's call runs it as it would run the tool."""

    __slots__ = (
        "call_id",
        "caller",
        "is_async",
        "name",
        "raised",
        "span",
        "steps",
        "takes_context",
        "tool",
        "turn",
    )

    def __init__(
        self,
        tool: Tool,
        steps: tuple[_Step, ...],
        is_async: bool,
        call_id: str | None,
        turn: int | None,
        span: _tracing.CallSpan | None,
        caller: str | None = None,
    ) -> None:
        self.tool = tool
        self.caller = caller
        self.name = tool.name
        self.steps = steps
        self.call_id = call_id
        self.turn = turn
        self.span = span
        self.is_async = is_async  # on the caller's loop only if every step can be awaited
        # Middleware hears the call's token, whatever the tool does; a span alone (no
        # steps) gives the tool what it takes, as an untraced call would.
        self.takes_context = bool(steps) or tool.takes_context
        # id(result) -> (result, exception): what the tool raised, for retry policies
        self.raised: dict[int, tuple[ToolResult, BaseException]] | None = None

    def __repr__(self) -> str:
        return f"<chain {[s.name for s in self.steps]} around {self.tool!r}>"

    @property
    def hears_token(self) -> bool:
        """Whether the tool's argument check can read the call's token, as
        :attr:`Tool.hears_token <toolnexus.Tool.hears_token>` says (a span alone around
        a tool that takes no context gives it one only then)."""
        return self.tool.hears_token

    def _first(self, args: Any, ctx: ToolContext | None) -> ToolCall | ToolResult:
        """The first ToolCall of an attempt, or the result refusing its arguments."""
        if ctx is None:  # a span alone around a tool that takes no context, or no host
            ctx = ToolContext()
        span = self.span
        if span is not None:
            span.attempt(ctx)
        admitted, refusal = self.tool._admit(args, ctx)
        if refusal is not None:
            return refusal
        return ToolCall(
            self.tool,
            admitted,
            ctx,
            self.call_id,
            self.turn,
            ctx.deadline,
            admitted,
            self,
            caller=self.caller,
        )

    # ----------------------------------------------------------------- synchronous

    def __call__(self, args: Any, ctx: ToolContext | None = None) -> ToolResult:
        first = self._first(args, ctx)
        if first.__class__ is ToolResult:
            return first
        assert isinstance(first, ToolCall)
        span = self.span
        if span is None:
            return self._at(0, first)
        token = span.enter()
        try:
            return span.seen(self._at(0, first))
        finally:
            span.leave(token)

    def _at(self, index: int, call: ToolCall) -> ToolResult:
        """Run step ``index`` and those after it on this thread."""
        steps = self.steps
        if index == len(steps):
            return self._bottom(call)
        step = steps[index]

        def call_next(next_call: ToolCall) -> ToolResult:
            return self._at(index + 1, self._own(next_call))

        try:
            if step.run is not None:
                value = step.run(call, call_next)
            else:
                value = self._drive(step, call, index)
        except Exception as exc:
            return self._failed(step, exc)
        return self._checked(step, value)

    def _drive(self, step: _Step, call: ToolCall, index: int) -> Any:
        """An async-only step in a synchronous chain: on a private loop, which the call's
        token stops."""
        from . import _aio

        async def call_next(next_call: ToolCall) -> ToolResult:
            return await self._mixed_at(index + 1, self._own(next_call))

        arun = step.arun
        assert arun is not None
        value = _aio.run_blocking(
            lambda: _aio.drive(arun(call, call_next), call.context.cancellation_token)
        )
        return ToolResult.error("cancelled") if value is _aio.CANCELLED else value

    async def _mixed_at(self, index: int, call: ToolCall) -> ToolResult:
        """The rest of a synchronous chain, from inside an async step's private loop."""
        steps = self.steps
        if index == len(steps):
            if self.tool.is_async:
                return await self._abottom(call)
            return self._bottom(call)  # blocks the private loop, on the worker: as it should
        step = steps[index]
        if step.arun is None:
            return self._at(index, call)

        async def call_next(next_call: ToolCall) -> ToolResult:
            return await self._mixed_at(index + 1, self._own(next_call))

        try:
            value = await step.arun(call, call_next)
        except Exception as exc:
            return self._failed(step, exc)
        return self._checked(step, value)

    def _bottom(self, call: ToolCall) -> ToolResult:
        """The tool itself, on this thread (the arguments checked again if rewritten)."""
        tool = self.tool
        args = call.arguments
        if args is not call._admitted:
            args, refusal = tool._admit(args, call.context)
            if refusal is not None:
                return refusal
        raised: list[BaseException] = []
        if tool.is_async:
            from . import _aio

            ctx = call.context
            value = _aio.run_blocking(
                lambda: _aio.drive(tool._arun(args, ctx, raised), ctx.cancellation_token)
            )
            result = ToolResult.error("cancelled") if value is _aio.CANCELLED else value
        else:
            result = tool._run(args, call.context, raised)
        if raised:
            if self.raised is None:
                self.raised = {}
            self.raised[id(result)] = (result, raised[0])
        return result

    # ----------------------------------------------------------------- async

    async def acall(self, args: Any, ctx: ToolContext | None = None) -> ToolResult:
        first = self._first(args, ctx)
        if first.__class__ is ToolResult:
            return first
        assert isinstance(first, ToolCall)
        span = self.span
        if span is None:
            return await self._aat(0, first)
        token = span.enter()
        try:
            return span.seen(await self._aat(0, first))
        finally:
            span.leave(token)

    async def _aat(self, index: int, call: ToolCall) -> ToolResult:
        steps = self.steps
        if index == len(steps):
            return await self._abottom(call)
        step = steps[index]
        arun = step.arun
        assert arun is not None  # an async chain has only steps with an async form

        async def call_next(next_call: ToolCall) -> ToolResult:
            return await self._aat(index + 1, self._own(next_call))

        try:
            value = await arun(call, call_next)
        except Exception as exc:
            return self._failed(step, exc)
        return self._checked(step, value)

    async def _abottom(self, call: ToolCall) -> ToolResult:
        tool = self.tool
        args = call.arguments
        if args is not call._admitted:
            args, refusal = tool._admit(args, call.context)
            if refusal is not None:
                return refusal
        raised: list[BaseException] = []
        result = await tool._arun(args, call.context, raised)
        if raised:
            if self.raised is None:
                self.raised = {}
            self.raised[id(result)] = (result, raised[0])
        return result

    # ----------------------------------------------------------------- checks

    def _own(self, call: object) -> ToolCall:
        """What a middleware passed to ``call_next``: a ToolCall of this very tool."""
        if not isinstance(call, ToolCall):
            raise InvalidTypeError(
                "call_next() takes the ToolCall (call, call.with_arguments(...) or "
                f"call.with_context(...)), got {type(call).__name__}"
            )
        if call.tool is not self.tool:
            raise InvalidValueError(
                f"call_next() runs the call's own tool {self.tool.name!r}, not "
                f"{call.tool.name!r}; a middleware may change the arguments, not the tool"
            )
        if call._run is not self:
            call = replace(call, _run=self)
        return call

    def _failed(self, step: _Step, exc: Exception) -> ToolResult:
        _log.error(
            "toolnexus: middleware %r failed on the call to %r",
            step.name,
            self.name,
            exc_info=exc,
        )
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return ToolResult.error(
            f"middleware {step.name!r} failed on the call to {self.name!r}: {text}"
        )

    def _checked(self, step: _Step, value: object) -> ToolResult:
        if isinstance(value, ToolResult):
            return value
        if inspect.iscoroutine(value):
            value.close()  # never awaited: close it so asyncio does not warn
            return ToolResult.error(
                f"middleware {step.name!r} returned a coroutine on the call to {self.name!r}; "
                "declare it with async def (or give a Middleware an acall) so the chain "
                "awaits it"
            )
        _log.warning(
            "toolnexus: middleware %r returned %s, not a ToolResult",
            step.name,
            type(value).__name__,
        )
        return ToolResult.error(
            f"middleware {step.name!r} returned {type(value).__name__}, not a ToolResult, on "
            f"the call to {self.name!r}"
        )
