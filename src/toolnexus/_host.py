"""The host's public face: run a model's tool calls with deadlines that hold, cancellation,
async tools, the suspension loop rule, durable resume, provider-shaped turns and events.

A :class:`Host` wraps a :class:`~toolnexus.Toolkit` (or a :class:`~toolnexus.ToolView` of
one: then it runs that view's tools only). Every call — blocking
(:meth:`Host.call`), asyncio (:meth:`Host.acall`) or started without waiting
(:meth:`Host.submit`, what the MCP server and other drivers use) — is one
:class:`~toolnexus.Call`, the state machine in ``_call.py``; this module checks the
arguments, builds the call and picks how to wait for it:

- synchronous tools run on the host's elastic worker pool (``_pool.py``), so a deadline
  holds even for a tool that ignores its token: at the deadline the host cancels the call's
  token, waits a short grace period, and answers ``timed out after N ms`` on time; a worker
  still running after that is *abandoned* (Python cannot kill a thread) — counted, logged,
  replaced, its late result discarded — and while ``max_stuck`` of them are still running,
  new calls are refused at once with a ``host overloaded`` error;
- ``async def`` tools are awaited on the caller's loop in :meth:`Host.acall` and on a
  private loop in a worker otherwise;
- a suspension follows the loop rule (``loop_rule.py``): with ``wait_for`` the host asks —
  on its own question threads, within ``question_timeout_ms`` — and retries once; without
  it the pending result goes back to the caller, who can :meth:`Host.resume` later;
- :meth:`Host.run_turn` runs a provider's tool calls concurrently and returns a
  :class:`~toolnexus.TurnResult` whose messages are balanced.

Deadlines are enforced by the process's one timer thread (``_timers.py``), which only
changes state: callbacks, ``on_event`` and a tool's cancel callbacks run on the waiting
caller's thread, a worker, or the dispatcher — never on the timer thread.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType

from . import _loop_rule as loop_rule
from ._binding import Accepted, Binder, Refusal
from ._call import Call, Outcome, Reason, Runtime
from ._cancellation import CancellationToken
from ._context import ProgressReporter
from ._frozen import sealed
from ._log import LazyLogger
from ._pool import Pool, current_worker
from ._result import ToolResult
from ._suspension import Answer, Request
from ._tracing import API_MODULE
from .errors import InvalidTypeError, InvalidValueError, NotFoundError, WireFormatError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing costs as much to import as Host
if TYPE_CHECKING:
    from collections.abc import Awaitable
    from typing import Any, Literal, Protocol, TypeAlias

    from ._chain import MiddlewareLike
    from ._toolkit import Toolkit
    from ._turns import Style, TurnCall, TurnInput, TurnResult
    from ._views import ToolView
    from .stores._protocol import AnswerStore

    class Runner(Protocol):
        """Where a host's tools run, when not on its own threads: a runner turns the
        toolkit into stand-ins that run each call elsewhere and keep the host's rules here
        (:class:`toolnexus.temporal.TemporalRunner`). Defined here, so the host layer
        imports no integration: an integration plugs in by this shape."""

        def _toolkit_for(self, toolkit: Toolkit, max_rounds: int) -> Toolkit: ...


__all__ = ["Call", "Host", "ToolEvent", "TurnCall", "TurnResult"]

_log = LazyLogger()  # logging loads with the first record, not with Host

WaitFor = Callable[[Request], "Answer | Awaitable[Answer]"]

_DEFAULT_GRACE_MS = 100
# How long a caller's cancel waits for a tool that can hear it to return its own result: a
# tool that polls its token every few milliseconds makes it; one that takes a context but
# does not stop is answered "cancelled by the caller" this long after the cancel; a sync
# tool that takes no context cannot hear a cancel and is answered at once.
_DEFAULT_CANCEL_GRACE_MS = 20
# I/O-bound tools mostly wait, so the pool grows well past the core count: 64 threads run
# 1000 concurrent 10 ms calls at several thousand calls/s on two cores, while a thread
# costs a reserved stack (virtual memory) and some tens of KiB resident.
_DEFAULT_WORKERS = 64
_DEFAULT_MAX_STUCK = 4
_DEFAULT_QUESTION_TIMEOUT_MS = 300_000
# Questions wait for humans: they get threads of their own, never the tools'.
_QUESTION_THREADS = 16
_IDLE_SECONDS = 10.0  # a worker with nothing to do this long exits


def __getattr__(name: str) -> Any:
    # TurnCall and TurnResult are exported here too; turns.py loads with the first use.
    if name in ("TurnCall", "TurnResult"):
        from . import _turns as turns

        return getattr(turns, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- events


@sealed
@dataclass(frozen=True, slots=True)
class ToolEvent:
    """What the ``on_event`` hook learns about one finished call.

    Attributes:
        name: the tool name the call asked for (as the model spelled it).
        duration_ms: wall time from the call's start to its result, in milliseconds
            (for the loop rule, including the wait for the answer).
        outcome: ``"ok"``, ``"error"``, ``"pending"`` (the call suspended on a question —
            never reported as an error), ``"timeout"`` (the deadline passed) or
            ``"cancelled"`` (the caller cancelled, or the host was closed).
        request_id: the id of the request the call last suspended on, else ``None``.

    Example::

        events = []
        host = Host(toolkit, on_event=events.append)
        host.call("search", {"q": "x"})
        assert events[0].outcome == "ok"
    """

    name: str
    duration_ms: float
    outcome: Outcome
    request_id: str | None = None


# --------------------------------------------------------------------------- small helpers


def _check_ms(name: str, value: object, *, allow_none: bool = True) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        expected = "None or an int >= 0" if allow_none else "an int >= 0"
        raise InvalidValueError(f"{name} must be {expected} (milliseconds), got {value!r}")
    return value


def _check_token(token: object) -> CancellationToken:
    if token is None:
        return CancellationToken.NONE
    if not isinstance(token, CancellationToken):
        raise InvalidTypeError(
            "cancellation_token must be a CancellationToken (pass source.token, not the "
            f"source), got {type(token).__name__}"
        )
    return token


AsyncTools: TypeAlias = 'Literal["loop", "workers"]'  # typing stays unloaded
"""Where :meth:`Host.acall` runs an ``async def`` tool (see :class:`Host`)."""


def _warn_if_memory_store(binder: Binder) -> None:
    """A key is configured, which says answers may come from other processes; the
    per-process memory store cannot refuse a replay from one of them: say so, loudly."""
    from .stores._answers import MemoryAnswerStore

    if not isinstance(binder.store, MemoryAnswerStore):
        return  # TOOLNEXUS_STORE named a shared one
    import warnings

    warnings.warn(
        "Host has a signing key (secret=... or TOOLNEXUS_SECRET), so its questions can be "
        "answered from other processes, but used answers are remembered only in this "
        "process's memory: after a restart, or in another process, an answer already used "
        "would resume its call again. Give every process one shared store: "
        "answer_store=toolnexus.stores.open_store('sqlite:/path/used.db') (or a "
        "postgresql:// or redis:// URL), or set TOOLNEXUS_STORE; or pass "
        "answer_store=MemoryAnswerStore() to keep them per process on purpose",
        UserWarning,
        stacklevel=3,
    )


_Item: TypeAlias = "tuple[str, Any, Accepted | None, str | None, int | None, str | None]"
"""One call of a batch: the tool name, its arguments, for a resume the checked answer, and
for a turn's call its id, the turn and its caller (``"direct"``/``"programmatic"``: what
the middleware sees)."""

_Steps: TypeAlias = "Generator[list[_Item], list[ToolResult], TurnResult]"
"""A turn's logic, written once for both drivers (:meth:`Host._run_steps`,
:meth:`Host._arun_steps`): it yields the batches to run and receives their results."""


# --------------------------------------------------------------------------- the host


class Host:
    """Runs tool calls from a :class:`~toolnexus.Toolkit` with real deadlines.

    Args:
        toolkit: the tools to run: a :class:`~toolnexus.Toolkit`, or a
            :class:`~toolnexus.ToolView` of one (``toolkit.view(namespaces=[...],
            filter=..., defer=...)``) to run that view's tools only — a tool outside it is
            unknown to every call, the meta-tools (``search_tools``, ``call_tool``,
            ``tool_search``) search and run only its tools with its ranker, and in
            :meth:`run_turn` a tool the view defers must be revealed by a search first
            (docs/tool-search.md).
        wait_for: ``wait_for(request) -> Answer`` (sync or ``async``) answers suspensions
            in-process (loop rule 1). ``None``: pending results go back to the caller, who
            may :meth:`resume` later (loop rule 2).
        timeout_ms: the default budget per call; ``None`` for no deadline.
        on_event: receives one :class:`ToolEvent` per call; a hook that raises is logged.
        max_stuck: how many abandoned workers (still running a call nobody waits for) the
            host tolerates; at that many, new calls are refused with ``host overloaded``.
        max_workers: the most worker threads running synchronous tools at once (64 by
            default). The pool starts empty, grows with demand up to this bound and shrinks
            when idle (a worker idle for 10 s exits). Calls beyond it queue; the queue wait
            counts against their budget, and a call whose deadline passes while it waits
            never starts. Threads stay at most ``max_workers + max_stuck``, plus up to 16
            for questions and the package's shared timer and dispatcher threads.
        grace_ms: after the deadline cancels a call's token, how long the tool may take to
            return on its own before its worker is abandoned.
        cancel_grace_ms: after a cancel, how long the host waits for a tool that can hear
            it (an async tool, or one that takes a ``ctx``) to return (never longer than
            ``grace_ms``). A tool that returns in that time keeps its own result, whatever
            it says; one still running is answered ``cancelled by the caller`` and
            abandoned. A synchronous tool that takes no context is answered at once.
        question_timeout_ms: the budget of one ``wait_for`` question (a human's time, not
            the tool's: the retry still gets a fresh tool budget); ``None`` waits as long as
            it takes. Past it the question counts as expired: ``declined/expired:
            <prompt>``. Five minutes by default. ``wait_for_timeout_ms`` is its old name
            (deprecated: it warns).
        secret: the key(s) that sign the binding of a pending result to its call (newest
            first: the first signs, all verify). ``None`` reads ``TOOLNEXUS_SECRET``;
            without it a random per-process key signs, so resumes work in this process
            only. See :mod:`toolnexus._binding`.
        answer_store: where used answers are remembered, so each is used once (default:
            the store ``TOOLNEXUS_STORE`` names, else one in-memory store per process;
            :func:`~toolnexus.stores.open_store` opens one shared by processes or machines).
            A configured key says answers may come from other processes, so with a key
            and neither ``answer_store`` nor ``TOOLNEXUS_STORE`` the host warns: a used
            answer would work again after a restart or in another process. Pass
            ``answer_store=MemoryAnswerStore()`` to keep them per process on purpose.
        max_rounds: how many answers one call may take. 1 (the loop rule): a retry that
            suspends again is ``unresolved: <prompt>``. More: the retry's new question is
            asked (``wait_for``) or handed back, bound to the same call, until the rounds
            are used up.
        middleware: policies run around every call, outermost first: plain functions
            ``(call, call_next) -> ToolResult``, ``async def`` ones, or
            :class:`~toolnexus.policies.Middleware`; the built-ins are in
            :mod:`toolnexus.policies`. The chain runs inside the call's budget.
        tool_middleware: more middleware for some tools: tool names (or ``fnmatch``
            globs) to lists, run inside the host-wide ``middleware``, in the mapping's order.
        tracing: OpenTelemetry spans and metrics for every call (see ``docs/tracing.md``).
            None (the default): on when the ``opentelemetry`` API is in use — imported and
            given a tracer provider; False: never; True: always (the API must be installed:
            the ``otel`` extra, ``opentelemetry-api``).
        async_tools: where :meth:`acall` runs an ``async def`` tool. ``"loop"`` (the
            default): as a task on the caller's event loop — no thread, and the deadline
            cancels the task; but a tool that blocks its loop (``time.sleep``, a sync
            client, long CPU work) blocks its caller too, so its answer comes only once
            the tool lets the loop run, however late. ``"workers"``: on a worker thread's
            own loop, as :meth:`call` runs it — the deadline holds for such a tool too, at
            the cost of a worker thread per running async tool and a thread hop per call.
        runner: where the tools run: ``None`` (the default), on this host's own threads;
            a :class:`~toolnexus.temporal.TemporalRunner`, on a Temporal worker fleet,
            durably. The host keeps every rule above either way (deadline, cancel, the
            loop rule, binding and single use); see ``docs/scale-out.md``.

    Raises ``TypeError``/``ValueError`` at once for a misconfigured host (a negative budget,
    a non-callable hook, a toolkit of another loaded copy of toolnexus, a view with a
    ``runner``, ...). Warns
    (``UserWarning``) when a key is configured (``secret``, or ``TOOLNEXUS_SECRET``) but
    used answers would only be remembered in this process's memory: see
    ``answer_store``.

    Threads start with the first call that needs one, not at construction. A host is a
    context manager; :meth:`close` cancels the calls still running and ends its threads.

    Example::

        with Host(toolkit, timeout_ms=5_000) as host:
            result = host.call("search", '{"query": "weather"}')
            print(result.output)
    """

    def __init__(
        self,
        toolkit: Toolkit | ToolView,
        *,
        wait_for: WaitFor | None = None,
        timeout_ms: int | None = None,
        on_event: Callable[[ToolEvent], object] | None = None,
        max_stuck: int = _DEFAULT_MAX_STUCK,
        max_workers: int = _DEFAULT_WORKERS,
        grace_ms: int = _DEFAULT_GRACE_MS,
        cancel_grace_ms: int = _DEFAULT_CANCEL_GRACE_MS,
        question_timeout_ms: int | None = _DEFAULT_QUESTION_TIMEOUT_MS,
        wait_for_timeout_ms: int | None = None,
        secret: bytes | str | Sequence[bytes | str] | None = None,
        answer_store: AnswerStore | None = None,
        max_rounds: int = 1,
        middleware: Sequence[MiddlewareLike] = (),
        tool_middleware: Mapping[str, Sequence[MiddlewareLike]] | None = None,
        tracing: bool | None = None,
        async_tools: AsyncTools = "loop",
        runner: Runner | None = None,
    ) -> None:
        from ._tools import refuse_other_copy
        from ._views import ToolView  # (loaded with any Toolkit already)

        refuse_other_copy(toolkit)  # another copy's Toolkit: say so now, not at every call
        view: ToolView | None = None
        kit: Toolkit
        if isinstance(toolkit, ToolView):
            view, kit = toolkit, toolkit.toolkit
        else:
            kit = toolkit
        if not callable(getattr(kit, "resolve", None)):
            raise InvalidTypeError(
                f"Host() takes a Toolkit or a ToolView, got {type(kit).__name__}; "
                "build one with Toolkit([tool_a, tool_b])"
            )
        if view is not None and runner is not None:
            raise InvalidValueError(
                "Host(view, runner=...) is not supported: a runner runs a whole toolkit's "
                "tools elsewhere; give it a Toolkit of the view's tools "
                "(Toolkit(view.tools())) or run the view without a runner"
            )
        if wait_for is not None and not callable(wait_for):
            raise InvalidTypeError(
                f"wait_for must be callable or None, got {type(wait_for).__name__}"
            )
        if runner is not None and not callable(getattr(runner, "_toolkit_for", None)):
            raise InvalidTypeError(
                f"runner must be a toolnexus.temporal.TemporalRunner or None, got "
                f"{type(runner).__name__}"
            )
        if on_event is not None and not callable(on_event):
            raise InvalidTypeError(
                f"on_event must be callable or None, got {type(on_event).__name__}"
            )
        for label, number in (
            ("max_stuck", max_stuck),
            ("max_workers", max_workers),
            ("max_rounds", max_rounds),
        ):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise InvalidValueError(f"{label} must be an int >= 1, got {number!r}")
        if wait_for_timeout_ms is not None:
            # The old name: it means the same, so only one of the two may be given.
            import warnings

            warnings.warn(
                "Host(wait_for_timeout_ms=...) is deprecated; use question_timeout_ms=...",
                DeprecationWarning,
                stacklevel=2,
            )
            if question_timeout_ms != _DEFAULT_QUESTION_TIMEOUT_MS:
                raise InvalidValueError(
                    "give question_timeout_ms or its old name wait_for_timeout_ms, not both"
                )
            question_timeout_ms = wait_for_timeout_ms
        if async_tools not in ("loop", "workers"):
            raise InvalidValueError(f'async_tools must be "loop" or "workers", got {async_tools!r}')
        self._toolkit = kit
        self._view = view  # the view given (its tools only), or None: the whole toolkit
        # What calls resolve to: the tools themselves (those of the view given), or a
        # runner's stand-ins that run each one elsewhere (a Temporal fleet) and keep the
        # host's rules here.
        self._tools: Toolkit | ToolView = (
            view
            if view is not None
            else kit
            if runner is None
            else runner._toolkit_for(kit, max_rounds)
        )
        self._timeout_ms = _check_ms("timeout_ms", timeout_ms)
        self._on_event = on_event
        self._max_stuck = max_stuck
        grace = _check_ms("grace_ms", grace_ms, allow_none=False) or 0
        cancel_grace = _check_ms("cancel_grace_ms", cancel_grace_ms, allow_none=False) or 0
        question_ms = _check_ms("question_timeout_ms", question_timeout_ms)
        self._pool = Pool(max_workers, max_stuck, "toolnexus-host-worker", _IDLE_SECONDS)
        self._questions = Pool(
            _QUESTION_THREADS, _QUESTION_THREADS, "toolnexus-host-question", _IDLE_SECONDS
        )
        self._binder = Binder(secret, store=answer_store)
        if answer_store is None and self._binder.is_configured:
            _warn_if_memory_store(self._binder)
        self._rt = Runtime(
            self._pool,
            self._questions,
            grace,
            cancel_grace,
            question_ms,
            wait_for,
            self._emit if on_event is not None else None,
            self._binder,
            max_rounds,
            async_tools == "loop",
        )
        self._closed = False
        self._kept: dict[str, Call] = {}  # calls submitted with keep_ms, by id
        # ---- policies (issue 27): the middleware chain and tracing, in _chain.py
        from ._chain import Policies

        policies = Policies(middleware, tool_middleware, tracing)
        self._policies = None if policies.is_empty else policies

    # ----------------------------------------------------------------- properties

    @property
    def toolkit(self) -> Toolkit:
        """The toolkit this host runs (for a host made over a view, the view's toolkit:
        :attr:`view` says which of its tools the host runs)."""
        return self._toolkit

    @property
    def view(self) -> ToolView:
        """The tools this host runs: the view it was made over, else its toolkit's whole
        view (every tool)."""
        return self._view if self._view is not None else self._toolkit._whole()

    @property
    def stuck_workers(self) -> int:
        """How many abandoned workers are still running a call nobody waits for."""
        return self._pool.stuck

    @property
    def max_workers(self) -> int:
        """The most worker threads running tools at once; settable (the pool follows at
        the next call; threads above a lowered bound exit when idle)."""
        return self._pool.limit

    @max_workers.setter
    def max_workers(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidValueError(f"max_workers must be an int >= 1, got {value!r}")
        self._pool.limit = value

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._closed

    # ----------------------------------------------------------------- one call

    def submit(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
        request: Request | ToolResult | Mapping[str, Any] | str | None = None,
        answer: Answer | Mapping[str, Any] | str | None = None,
        keep_ms: int | None = None,
    ) -> Call:
        """Start :meth:`call` — or, with ``request`` and ``answer``, :meth:`resume` — and
        return its :class:`~toolnexus.Call` at once, without waiting.

        The call follows every rule of :meth:`call` (deadline, grace, cancellation, the loop
        rule, one event). ``call.result()`` waits for it; ``call.add_done_callback(fn)``
        runs ``fn(call)`` when it is done (on a worker or the dispatcher, never on the timer
        thread); ``await call`` waits in asyncio; ``call.cancel()`` cancels it. A tool that
        submits to its own host runs the call inline, on its own worker.

        With ``keep_ms``, the host keeps the call under :attr:`Call.id` — while it runs, and
        ``keep_ms`` after it ends — so :meth:`find` finds it later, from any thread or
        request (submit now, look it up by id later); then it is forgotten.

        Raises ``ValueError``/``TypeError`` only for a bad ``timeout_ms``, ``keep_ms`` or
        token, or a ``request`` without an ``answer`` (or the reverse).

        Example::

            call = host.submit("add", {"a": 1, "b": 2}, timeout_ms=500)
            assert call.result(timeout=5).output == "3"
        """
        kept = _check_ms("keep_ms", keep_ms)
        call = self._prepare_call(
            name,
            args,
            timeout_ms,
            cancellation_token,
            progress,
            request,
            answer,
            resume=request is not None or answer is not None,
        )
        if kept is not None:
            self._keep(call, kept)
        call._start()
        return call

    def find(self, call_id: str) -> Call:
        """The call kept under ``call_id`` (by ``submit(..., keep_ms=...)``): running, or
        ended less than its ``keep_ms`` ago. Thread-safe.

        Raises :class:`~toolnexus.NotFoundError` (a ``LookupError``) when no call is kept
        under that id — never kept, forgotten, or kept by another host.

        Example::

            call_id = host.submit("crunch", {"steps": 3}, keep_ms=60_000).id
            ...                                   # later, in another request or thread
            result = host.find(call_id).result(timeout=5)
        """
        found = self._kept.get(call_id) if isinstance(call_id, str) else None
        if found is None:
            raise NotFoundError("call", str(call_id))
        return found

    def _keep(self, call: Call, keep_ms: int) -> None:
        """Keep ``call`` findable by its id until ``keep_ms`` after it ends."""
        from ._timers import schedule

        ident = call.id
        self._kept[ident] = call

        def forget() -> None:
            if self._kept.get(ident) is call:
                del self._kept[ident]

        def ended(_: Call) -> None:
            # A dict store is quick: the timer thread does it itself.
            schedule(time.monotonic() + keep_ms / 1000, forget, quick=True)

        call.add_done_callback(ended)

    def call(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """Run one tool call and return its result; never raises for what a tool does.

        ``args`` is a dict or JSON text, as for ``Toolkit.execute``. The tool's context gets
        ``timeout_ms`` (else the host's default), a token linked to ``cancellation_token``
        and cancelled at the deadline, and ``progress``.

        Returns the tool's result; an error starting with ``timed out after N ms`` when the
        deadline passed (on time, even if the tool ignores its token); ``cancelled by the
        caller`` when the caller's token was cancelled and the tool did not return within
        ``cancel_grace_ms`` (if it did, its own result); ``host overloaded: ...`` while
        ``max_stuck`` workers are stuck. With ``wait_for`` a suspension is answered and
        retried once (the loop rule); without it the pending result is returned at once.
        ``on_event`` and the tool's cancel callbacks run on this thread.

        A tool may call its own host: the nested call runs inline on the tool's worker
        (its deadline cancels its token; its result comes when the nested tool returns).

        Raises ``ValueError``/``TypeError`` only for a bad ``timeout_ms`` or token.

        Example::

            result = host.call("crunch", {"steps": 3}, timeout_ms=500)
            assert not result.is_error
        """
        call = self._call_or_answer(False, name, args, timeout_ms, cancellation_token, progress)
        if isinstance(call, ToolResult):  # answered at once: no call was made
            return call
        return self._wait(call)

    def resume(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None,
        request: Request | ToolResult | Mapping[str, Any] | str,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """Run a suspended call again with the answer to its request (loop rule 2).

        ``request`` is the pending result this host handed out (its ``metadata["binding"]``
        binds the answer to the call), its wire dict or JSON — so the resume can happen in
        another process with the same key — or, in the process that asked, the bare
        :class:`Request`. ``answer`` is the value, its wire dict or its JSON. Before the tool
        runs, the host checks that the binding verifies and names this tool, these arguments
        and this very request; that ``answer.id`` echoes ``request.id``; that nothing has
        expired; that ``answer.data`` fits ``request.data["schema"]``; and that the answer
        was not used before (``already answered``). A "no" (``ok`` false, or an
        ``approval`` with ``approved: false``) is ``declined/expired: <prompt>``. A failed
        check is an error result and the tool is not run. A retry that suspends again
        becomes ``unresolved: <prompt>`` (or, with ``max_rounds`` left, the next bound
        question).

        Example::

            first = host.call("deploy", {})
            done = host.resume("deploy", {}, first, Answer.accept(
                ToolResult.pending_of(first), {"env": "dev"}))
        """
        call = self._call_or_answer(
            False, name, args, timeout_ms, cancellation_token, progress, request, answer, True
        )
        if isinstance(call, ToolResult):  # answered at once: no call was made
            return call
        return self._wait(call)

    async def acall(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """The asyncio twin of :meth:`call`; never blocks the event loop.

        ``async def`` tools run as tasks on this loop (the deadline and the caller's token
        cancel the task); synchronous tools run on the worker threads. What a tool raises —
        any exception but this task's own cancellation, ``SystemExit`` and
        ``KeyboardInterrupt`` included — becomes an error result, as in :meth:`call`.
        Cancelling the task that awaits ``acall`` cancels the call and re-raises
        ``CancelledError``, as asyncio code expects.

        Example::

            result = await host.acall("fetch", {"url": "https://example.com"}, timeout_ms=2000)
        """
        call = self._call_or_answer(False, name, args, timeout_ms, cancellation_token, progress)
        if isinstance(call, ToolResult):  # answered at once: no call was made
            return call
        return await self._await(call)

    async def aresume(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None,
        request: Request | ToolResult | Mapping[str, Any] | str,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> ToolResult:
        """The asyncio twin of :meth:`resume`.

        Example::

            done = await host.aresume("deploy", {}, request, answer)
        """
        call = self._call_or_answer(
            False, name, args, timeout_ms, cancellation_token, progress, request, answer, True
        )
        if isinstance(call, ToolResult):  # answered at once: no call was made
            return call
        return await self._await(call)

    # ----------------------------------------------------------------- the adapters

    def _prepare_call(
        self,
        name: str,
        args: Any = None,
        timeout_ms: int | None = None,
        token: object = None,
        progress: ProgressReporter | None = None,
        request: object = None,
        answer: object = None,
        *,
        resume: bool | None = None,
        accepted: Accepted | None = None,
        done_callback: Callable[[Call], object] | None = None,
        call_id: str | None = None,
        turn: int | None = None,
        caller: str | None = None,
    ) -> Call:
        """Check the arguments and build the call, not started: every way in that keeps
        its call (``submit``, a turn) makes it here, and so do the drivers (the MCP
        transports, package-internal): they keep the call where a cancel finds it, then
        start it with ``call._start()`` — ``call._start(inline=True)`` runs the tool on
        the calling thread. A ``cancel()`` before then means it never starts. (``call``,
        ``resume`` and their async forms, which return only the result, go through
        :meth:`_call_or_answer` without ``keep``.)

        The call is already settled (``done()``) when refused, for bad arguments, a failed
        resume check, a caller's token cancelled before it began, or a policy's answer
        before the worker hand-off (a cache hit, a limit reached). ``done_callback`` is
        its first done callback, registered before anything can settle it (so it has run
        when the call comes back settled) — with an inline start the only way to hear of a
        deadline while the tool still runs. ``resume``: whether this is a resume (default:
        when ``request`` or ``answer`` is given). ``call_id``, ``turn`` and ``caller`` are
        what the middleware sees of a turn's call; a ``caller`` the tool's
        ``allowed_callers`` does not list is refused before anything runs.
        """
        call = self._call_or_answer(  # (positional: forwarded keywords cost every call)
            True,
            name,
            args,
            timeout_ms,
            token,
            progress,
            request,
            answer,
            resume,
            accepted,
            done_callback,
            call_id,
            turn,
            caller,
        )
        assert isinstance(call, Call)
        return call

    def _call_or_answer(
        self,
        keep: bool,
        name: str,
        args: Any,
        timeout_ms: int | None,
        token: object,
        progress: ProgressReporter | None,
        request: object = None,
        answer: object = None,
        resume: bool | None = None,
        accepted: Accepted | None = None,
        done_callback: Callable[[Call], object] | None = None,
        call_id: str | None = None,
        turn: int | None = None,
        caller: str | None = None,
    ) -> Call | ToolResult:
        """:meth:`_prepare_call`. Without ``keep`` (``call``, ``resume`` and their async
        forms: nobody else ever sees their call) a call answered at once is not made at
        all: its result comes back instead, after the event a settled call would report
        (see :meth:`_answered`)."""
        if done_callback is not None and not callable(done_callback):
            raise InvalidTypeError(
                f"done_callback must be callable, got {type(done_callback).__name__}"
            )
        if resume is None:
            resume = request is not None or answer is not None
        start = time.monotonic() if self._rt.emit is not None else 0.0  # on_event's duration
        # The checks are inlined for the common case (what _budget and _refusal say): this
        # is every call's path, and each Python call on it costs about 1% of a served call.
        budget = self._timeout_ms if timeout_ms is None else _check_ms("timeout_ms", timeout_ms)
        caller_token = None if token is None else _check_token(token)
        if resume and accepted is None:
            if request is None or answer is None:
                raise InvalidTypeError("a resume needs both request and answer")
            verdict = self._binder.check(name, args, request, answer)
            if isinstance(verdict, Refusal):
                return self._answered(keep, name, start, done_callback, verdict.result, "error")
            accepted = verdict
        if self._closed or self._pool.stuck >= self._max_stuck:
            refused = self._refusal(name)
            if refused is not None:
                return self._answered(keep, name, start, done_callback, refused, "error")
        resolved = self._tools.resolve(name, args)
        if isinstance(resolved, ToolResult):
            outcome: Outcome = "pending" if resolved.is_pending else "error"
            return self._answered(keep, name, start, done_callback, resolved, outcome)
        if caller_token is not None and caller_token.is_cancellation_requested:
            cancelled = ToolResult.error("cancelled by the caller")
            return self._answered(
                keep, name, start, done_callback, cancelled, "cancelled", "caller"
            )
        tool, parsed = resolved
        if caller is not None and caller not in tool.allowed_callers:
            refused = _caller_refused(tool.name, caller, tool.allowed_callers)
            return self._answered(keep, name, start, done_callback, refused, "error")
        policies = self._policies  # the middleware chain, or the call's span, in its place
        if policies is not None and (policies.busy or API_MODULE in sys.modules):
            early = policies.answers_early and policies.answer_early(
                tool, parsed, budget, None if accepted is None else accepted.answer, call_id, turn
            )
            if early.__class__ is ToolResult:  # a cache hit, a limit's refusal: no worker
                assert isinstance(early, ToolResult)
                outcome = "error" if early.is_error else "ok"
                return self._answered(keep, name, start, done_callback, early, outcome)
            call = Call._create(self._rt, name, start, done_callback)
            tool, first, progress = policies.around(
                call,
                tool,
                budget,
                call_id,
                turn,
                done_callback,
                progress,
                early is True,
                caller=caller,
            )
            if first is done_callback:
                first = None  # a first done callback in place of done_callback's
        else:
            call = Call._create(self._rt, name, start, done_callback)
            first = None
        call._prepare(
            tool,
            parsed,
            args,
            budget,
            caller_token,
            progress,
            None if accepted is None else accepted.answer,
            None if accepted is None else accepted.round,
            first,
        )
        if accepted is not None:
            # A tool that handed the answer on and saw it refused unused says so: the
            # answer may come again (run before the call's owner gets the result).
            binder, used = self._binder, accepted
            call.add_done_callback(lambda done: binder.release(used, done.result()))
        return call

    def _answered(
        self,
        keep: bool,
        name: str,
        start: float,
        done_callback: Callable[[Call], object] | None,
        result: ToolResult,
        outcome: Outcome,
        reason: Reason | None = None,
    ) -> Call | ToolResult:
        """A call answered before anything ran (refused, bad arguments, a cache hit ...):
        with ``keep``, settled as a :class:`Call`; else its result alone, once
        ``on_event`` heard what settling that call would report (it would have no
        callbacks: nobody could have added one)."""
        if keep:
            call = Call._create(self._rt, name, start, done_callback)
            call._finish_now(result, outcome, reason)
            return call
        emit = self._rt.emit
        if emit is not None:
            emit(name, start, outcome, None)  # (a request id only once a question was asked)
        return result

    def _wait(self, call: Call) -> ToolResult:
        """The blocking adapter: this thread owns the call and runs its effects — or,
        for a tool that runs on its caller (a remote MCP tool: see :func:`_runs_on_caller`),
        runs the tool itself, since it would only wait for another thread to do so."""
        if call.done():
            return call.result()
        if self._on_own_worker():
            call._start()  # re-entrant: runs inline on this worker
            return call.result()
        if _runs_on_caller(call):
            return call._run_on_caller()
        return call._wait_owned()

    async def _await(self, call: Call) -> ToolResult:
        """The asyncio adapter: the loop owns the call and runs its effects."""
        if call.done():
            return call.result()
        tool = call._tool
        if tool is not None and not tool.is_async and self._on_own_worker():
            # An async tool on one of our workers awaiting a sync tool: waiting for another
            # worker could deadlock the pool, so it runs inline here, like Host.call.
            call._start()
            return call.result()
        import asyncio

        loop = asyncio.get_running_loop()
        settled: asyncio.Future[None] = loop.create_future()
        # Settling runs on this loop's thread (drained here, or run directly when the loop
        # itself made the transition): either way it resolves the future.
        call._own(loop=loop, settled=settled)
        call._start()
        try:
            await settled
        except asyncio.CancelledError:
            call.cancel()
            raise
        return call.result()

    # ----------------------------------------------------------------- several calls

    def call_many(
        self,
        calls: Iterable[tuple[str, Mapping[str, Any] | str | bytes | None]],
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> list[ToolResult]:
        """Run independent ``(name, args)`` calls concurrently; results in the calls' order.

        Each call follows :meth:`call`'s rules (its own deadline, the loop rule, one event).

        Example::

            weather, news = host.call_many([("weather", {"city": "Oslo"}), ("news", {})])
        """
        pairs = _pairs(calls)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        items: list[_Item] = [(n, a, None, None, None, None) for n, a in pairs]
        return self._gather_blocking(items, budget, token)

    async def acall_many(
        self,
        calls: Iterable[tuple[str, Mapping[str, Any] | str | bytes | None]],
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> list[ToolResult]:
        """The asyncio twin of :meth:`call_many`.

        Example::

            weather, news = await host.acall_many([("weather", {"city": "Oslo"}), ("news", {})])
        """
        pairs = _pairs(calls)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        return await self._gather([(n, a, None, None, None, None) for n, a in pairs], budget, token)

    def run_turn(
        self,
        calls: TurnInput,
        *,
        style: Style = "openai",
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        revealed: Iterable[str] = (),
    ) -> TurnResult:
        """Run the tool calls of one model turn concurrently.

        ``calls`` is what the provider returned, as plain dicts or the SDK's own objects:
        for ``style="openai"`` (Chat Completions) the message's ``tool_calls`` (or the whole
        message); for ``"responses"`` the Responses API ``output`` items (or the whole
        response; ``function_call`` items are run, others skipped); for ``"anthropic"`` the
        content blocks (or the whole message; ``tool_use`` blocks are run); for
        ``"gemini"`` the candidate's parts, its content or the whole response
        (``functionCall`` parts are run), or ``response.function_calls``.

        A call made by the model's code (its ``caller``: programmatic tool calling) runs
        like any other — every policy applies — once the tool's ``allowed_callers`` allow
        that caller (else it is an error result and nothing runs). A hosted MCP server's
        ``mcp_approval_request`` (Responses) is not run: it becomes an approval question,
        pending like a tool's, and its answer becomes the ``mcp_approval_response``.

        Returns a :class:`TurnResult`. When calls suspend (no ``wait_for``), its ``pending``
        is the first suspension in call order and its ``messages`` stay empty until
        :meth:`resume_turn` has produced one result per call.

        With deferred tools (docs/tool-search.md), ``revealed`` is what the conversation's
        searches found so far (the previous turn's :attr:`TurnResult.revealed`); a call to
        a deferred tool not revealed — by it, by the provider's own search in this
        response, or by a search of this turn — gets an error result saying to search
        first. ``call_tool`` runs the call it names; the returned turn's ``revealed`` adds
        what this turn's searches found.

        Raises :class:`~toolnexus.errors.WireFormatError` (a ``ValueError``) when a tool call
        lacks its id or name, and ``ValueError`` for an unknown ``style``.

        Example::

            turn = host.run_turn(message["tool_calls"], style="openai")
            if turn.is_complete:
                history.extend(turn.messages)
        """
        from ._turns import parse_calls  # turns load with the first turn, not with Host

        parsed = parse_calls(calls, style)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        discovery = _discovery(self.view, calls, style, revealed)
        steps = _turn_steps(parsed, style, self._ask_approval, discovery)
        return self._run_steps(steps, budget, token)

    async def arun_turn(
        self,
        calls: TurnInput,
        *,
        style: Style = "openai",
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
        revealed: Iterable[str] = (),
    ) -> TurnResult:
        """The asyncio twin of :meth:`run_turn`.

        Example::

            turn = await host.arun_turn(response.content, style="anthropic")
        """
        from ._turns import parse_calls  # turns load with the first turn, not with Host

        parsed = parse_calls(calls, style)
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        discovery = _discovery(self.view, calls, style, revealed)
        steps = _turn_steps(parsed, style, self._ask_approval, discovery)
        return await self._arun_steps(steps, budget, token)

    def resume_turn(
        self,
        turn: TurnResult,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> TurnResult:
        """Continue a halted turn with the answer to its ``pending`` request.

        The halted call runs again with the answer (as :meth:`resume`: expiry, decline and
        ``data.schema`` checks apply, and a second suspension becomes ``unresolved:
        <prompt>``); then the turn's other suspended calls run again concurrently (the
        answer may have changed the world for them — a login, say). Returns a new
        :class:`TurnResult`: complete with balanced ``messages``, or pending on the next
        request in call order.

        An answer whose id does not echo ``turn.pending.id`` changes nothing: the returned
        turn still waits on the same request and its ``error`` says why. A complete turn is
        returned unchanged with an ``error``.

        Example::

            turn = host.resume_turn(turn, Answer.accept(turn.pending, {"env": "staging"}))
        """
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        return self._run_steps(self._resume_steps(turn, answer), budget, token)

    async def aresume_turn(
        self,
        turn: TurnResult,
        answer: Answer | Mapping[str, Any] | str,
        *,
        timeout_ms: int | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> TurnResult:
        """The asyncio twin of :meth:`resume_turn`.

        Example::

            turn = await host.aresume_turn(turn, answer)
        """
        budget = self._budget(timeout_ms)
        token = _check_token(cancellation_token)
        return await self._arun_steps(self._resume_steps(turn, answer), budget, token)

    # ----------------------------------------------------------------- lifecycle

    def close(self, timeout: float | None = None) -> None:
        """Cancel the calls still running and end the host's threads. Idempotent.

        Running calls are cancelled with reason ``"host closed"``: a tool that returns
        within ``cancel_grace_ms`` keeps its own result, else its caller gets ``cancelled:
        the host was closed``. Idle workers and question threads exit at once; ``close()``
        waits up to ``timeout`` seconds (default: the grace period plus the cancel grace)
        for every thread the host started. A thread still inside a tool that ignores its
        token cannot be stopped: it exits when the tool returns. Calls made after
        ``close()`` return an error result saying the host is closed.

        Example::

            host = Host(toolkit)
            try:
                host.call("search", {"q": "x"})
            finally:
                host.close()
        """
        if self._closed:
            return
        self._closed = True
        self._rt.closed = True
        for call in list(self._rt.active):
            call._cancel("host closed")
        wait = self._rt.grace + self._rt.cancel_grace if timeout is None else timeout
        end = time.monotonic() + wait
        self._pool.close(wait)
        self._questions.close(max(0.0, end - time.monotonic()))

    def __enter__(self) -> Host:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        pool = self._pool
        state = " closed" if self._closed else ""
        busy = len(self._rt.active)  # calls not settled yet
        return f"<Host max_workers={pool.limit} busy={busy} stuck={pool.stuck}{state}>"

    # ----------------------------------------------------------------- internals

    def _on_own_worker(self) -> bool:
        """True on one of this host's worker threads (a tool calling its own host)."""
        worker = current_worker()
        return worker is not None and worker.pool is self._pool

    def _budget(self, timeout_ms: int | None) -> int | None:
        """A call's budget: its own ``timeout_ms`` (checked), else the host's default."""
        if timeout_ms is None:
            return self._timeout_ms
        return _check_ms("timeout_ms", timeout_ms)

    def _emit(self, name: str, start: float, outcome: Outcome, request_id: str | None) -> None:
        hook = self._on_event
        if hook is None:
            return
        try:
            hook(ToolEvent(name, (time.monotonic() - start) * 1000, outcome, request_id))
        except Exception:
            _log.exception("toolnexus host: on_event hook failed for %r", name)

    def _refusal(self, name: str) -> ToolResult | None:
        """Why a new call is refused at once (the host is closed or overloaded), or None."""
        if self._closed:
            return ToolResult.error(
                f"host is closed; '{name}' was not run (create a new Host to run more calls)"
            )
        stuck = self._pool.stuck
        if stuck >= self._max_stuck:
            return ToolResult.error(
                f"host overloaded: {stuck} stuck workers are still running abandoned calls "
                f"(max_stuck={self._max_stuck}); '{name}' was not run. Tools that ignore "
                "their cancellation token hold workers past their deadline; retry later"
            )
        return None

    def _call_for(self, item: _Item, budget: int | None, token: CancellationToken) -> Call:
        name, args, checked, call_id, turn, caller = item
        return self._prepare_call(
            name,
            args,
            budget,
            token,
            None,
            None,
            None,
            resume=checked is not None,
            accepted=checked,
            call_id=call_id,
            turn=turn,
            caller=caller,
        )

    def _gather_blocking(
        self, items: list[_Item], budget: int | None, token: CancellationToken
    ) -> list[ToolResult]:
        """Run a batch from synchronous code: concurrently, on the one coroutine runner
        (``_aio.run_blocking``) — or, on one of this host's own workers, inline one after
        another in order, each with its own deadline (waiting for other workers there
        could deadlock the pool)."""
        if self._on_own_worker():
            return [self._wait(self._call_for(item, budget, token)) for item in items]
        from ._aio import run_blocking

        results: list[ToolResult] = run_blocking(lambda: self._gather(items, budget, token))
        return results

    async def _gather(
        self, items: list[_Item], budget: int | None, token: CancellationToken
    ) -> list[ToolResult]:
        """Run a batch from asyncio: concurrently — or, on one of this host's own workers
        (an async tool on its private loop), one after another in order, as
        :meth:`_gather_blocking` does."""
        if self._on_own_worker():
            return [await self._await(self._call_for(item, budget, token)) for item in items]
        if not items:
            return []
        if len(items) == 1:
            return [await self._await(self._call_for(items[0], budget, token))]
        import asyncio

        return list(
            await asyncio.gather(
                *(self._await(self._call_for(item, budget, token)) for item in items)
            )
        )

    def _run_steps(self, steps: _Steps, budget: int | None, token: CancellationToken) -> TurnResult:
        """Drive a turn's steps from synchronous code."""
        try:
            batch = next(steps)
            while True:
                batch = steps.send(self._gather_blocking(batch, budget, token))
        except StopIteration as end:
            turn: TurnResult = end.value
            return turn

    async def _arun_steps(
        self, steps: _Steps, budget: int | None, token: CancellationToken
    ) -> TurnResult:
        """Drive a turn's steps from asyncio."""
        try:
            batch = next(steps)
            while True:
                batch = steps.send(await self._gather(batch, budget, token))
        except StopIteration as end:
            turn: TurnResult = end.value
            return turn

    def _ask_approval(self, call_id: str, name: str, arguments: Any) -> ToolResult:
        """A hosted MCP server's approval request as a pending result, its question bound
        (signed, single use) to the item: its id, server, tool and arguments."""
        from ._turns import approval_request

        pending = ToolResult.pending(approval_request(call_id, name, arguments))
        return self._binder.bind(name, arguments, pending)

    def _resume_steps(self, turn: TurnResult, answer: object) -> _Steps:
        """:meth:`resume_turn`'s logic: the halted call with the answer, then the turn's
        other suspended calls again."""
        from ._turns import TurnResult

        if not isinstance(turn, TurnResult):
            raise InvalidTypeError(
                f"resume_turn() takes the TurnResult of run_turn (or TurnResult.from_json), "
                f"got {type(turn).__name__}"
            )
        halted = turn.pending_call
        if halted is None:
            return replace(turn, error="the turn is complete; there is nothing to resume")
        request = ToolResult.pending_of(halted.result)
        assert request is not None
        try:
            ans = loop_rule.coerce_answer(answer)
        except WireFormatError as exc:
            return replace(
                turn,
                error=f"cannot resume the turn: {exc}; it still waits on request {request.id!r}",
            )
        if ans.id != request.id:
            return replace(
                turn,
                error=f"answer id {ans.id!r} does not echo the pending request's id "
                f"{request.id!r}; the turn still waits on {request.id!r}",
            )
        turn_id = next(_turns)  # the resumed turn's calls: one turn for the middleware
        discovery = _discovery(self.view, (), turn.style, turn.revealed)
        runs = {  # what each call ran as (call_tool runs the call it names)
            c.id: (c.name, c.arguments)
            if discovery is None
            else discovery.target(c.name, c.arguments)
            for c in turn.calls
        }
        # The binding in the halted result names the tool, the arguments and the request:
        # a turn edited into another call (or replayed) is refused and keeps waiting.
        ran_as, ran_with = runs[halted.id]
        verdict = self._binder.check(ran_as, ran_with, halted.result, ans)
        if isinstance(verdict, Refusal):
            if not verdict.spent:
                return replace(
                    turn,
                    error=f"{verdict.result.output}; the turn still waits on "
                    f"request {request.id!r}",
                )
            first = [verdict.result]
        elif halted.kind == "mcp_approval":
            first = [_approved(halted.name)]  # the provider's server runs it, not this host
        else:
            first = yield [(*runs[halted.id], verdict, halted.id, turn_id, _turn_caller(halted))]
        calls = [replace(c, result=first[0]) if c is halted else c for c in turn.calls]
        # An approval still waiting keeps its own question: only calls of ours run again.
        others = [i for i, c in enumerate(calls) if c.is_pending and c.kind != "mcp_approval"]
        if others:
            again = yield [
                (*runs[calls[i].id], None, calls[i].id, turn_id, _turn_caller(calls[i]))
                for i in others
            ]
            for i, result in zip(others, again, strict=True):
                calls[i] = replace(calls[i], result=result)
        if discovery is None:
            return TurnResult(turn.style, tuple(calls))
        for call in calls:
            discovery.learn(call.name, call.result)
        return TurnResult(turn.style, tuple(calls), revealed=tuple(discovery.revealed))


_turns = itertools.count(1)  # each turn's id (what ToolCall.turn says)


def _runs_on_caller(call: Call) -> bool:
    """Whether :meth:`Host.call` runs ``call``'s tool on the calling thread: its function
    says ``runs_on_caller`` (it only waits for I/O, and its context's token ends that
    wait at once — a remote MCP tool, :class:`~toolnexus.mcp._client._remote.RemoteTool`),
    so the deadline and a cancel hold there as on a worker, and the caller, who would
    block anyway, saves the hand-off to a worker and back. A tool wrapped by middleware
    or tracing runs on a worker as before: the chain's own code may not hear the token."""
    fn = getattr(call._tool, "fn", None)  # (a chain's stand-in has none)
    return getattr(fn, "runs_on_caller", False) is True


def _discovery(view: ToolView, calls: Any, style: Style, revealed: Iterable[str]) -> Any:
    """The turn's search state (``_turn_search.Discovery``) over the host's ``view``, or
    None when nothing of the turn concerns tool search (the turn then runs exactly as
    before)."""
    from ._turn_search import Discovery  # only a turn with search loads it

    if not Discovery.is_needed(view, calls, style, revealed):
        return None
    return Discovery(view, calls, style, revealed)


def _turn_steps(
    calls: list[tuple[str, str, Any, dict[str, Any]]],
    style: Style,
    ask_approval: Callable[[str, str, Any], ToolResult],
    discovery: Any = None,
) -> _Steps:
    """:meth:`Host.run_turn`'s logic: run the calls, pair each result with its call. A
    hosted MCP server's approval request is not run: it becomes a question
    (``ask_approval``), answered through :meth:`Host.resume_turn`. With tool search
    (``discovery``), a call to a deferred tool not revealed is refused without running,
    ``call_tool`` runs the call it names, and the searches' finds are added."""
    from ._tool_use import caller_kind
    from ._turns import TurnCall, TurnResult

    turn = next(_turns)
    if discovery is not None:  # the provider's client-executed searches first
        calls = [*((cid, name, args, {}) for cid, name, args in discovery.searches), *calls]
    results: dict[int, ToolResult] = {}
    runs: list[_Item] = []
    ran_at: list[int] = []
    for index, (cid, name, args, extras) in enumerate(calls):
        if extras.get("kind") == "mcp_approval":
            continue
        target, target_args = (name, args) if discovery is None else discovery.target(name, args)
        refusal = None if discovery is None else discovery.refusal(target)
        if refusal is not None:
            results[index] = refusal
            continue
        runs.append((target, target_args, None, cid, turn, caller_kind(extras.get("caller"))))
        ran_at.append(index)
    ran = yield runs
    results.update(zip(ran_at, ran, strict=True))
    out = []
    for index, (cid, name, args, extras) in enumerate(calls):
        if extras.get("kind") == "mcp_approval":
            result = ask_approval(cid, name, args)
        else:
            result = results[index]
        out.append(TurnCall(cid, name, args, result, **extras))
    if discovery is None:
        return TurnResult(style, tuple(out))
    for call in out:
        discovery.learn(call.name, call.result)
    return TurnResult(style, tuple(out), revealed=tuple(discovery.revealed))


def _turn_caller(call: TurnCall) -> str:
    """The caller a turn's call runs as: ``"direct"`` or ``"programmatic"``."""
    from ._tool_use import caller_kind

    return caller_kind(call.caller)


def _caller_refused(name: str, caller: str, allowed: tuple[str, ...]) -> ToolResult:
    """The error result of a call from a caller the tool does not allow."""
    how = {"direct": "directly by the model", "programmatic": "programmatically"}
    return ToolResult.error(
        f"tool {name!r} cannot be called {how.get(caller, caller)}: its allowed_callers are "
        f"{', '.join(allowed)}; it was not run (offer it with allowed_callers="
        f"{(*allowed, caller)!r} to allow such calls)"
    )


def _approved(name: str) -> ToolResult:
    """The result of an approved hosted-MCP call: the provider's server runs it."""
    return ToolResult.ok(f"approved: the MCP server may run {name!r}")


def _pairs(calls: Iterable[Any]) -> list[tuple[str, Any]]:
    pairs = []
    for index, item in enumerate(calls):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise InvalidTypeError(
                f"call_many() takes (name, args) pairs; item {index} is {item!r}"
            )
        pairs.append((item[0], item[1]))
    return pairs
