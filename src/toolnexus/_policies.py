"""The built-in policies: small middleware for the chain in ``_chain.py``.

Each is a :class:`~toolnexus.policies.Middleware` with both forms (so an async chain stays
on its loop) and one job: ``retry``, ``rate_limit``, ``cache``, ``call_limit``,
``require_approval``, ``redact`` — and ``hooks``, the toolnexus family's
``beforeTool``/``afterTool`` as one middleware. Their waits (a backoff, a rate limit's
slot) hear the call's token and never pass its deadline.
"""

from __future__ import annotations

import base64
import json
import os
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import _tracing
from ._chain import (
    AsyncNext,
    Middleware,
    Next,
    ToolCall,
    early_call,
    exception_of,
    is_read_only,
    selects,
)
from ._result import PENDING_KEY, STRUCTURED_KEY, ToolResult
from ._suspension import Answer, Request
from .errors import InvalidTypeError, InvalidValueError

if TYPE_CHECKING:
    from ._context import ToolContext
    from ._parts import Part
    from ._tools import Tool

__all__ = [
    "cache",
    "call_limit",
    "hooks",
    "rate_limit",
    "redact",
    "require_approval",
    "retry",
]

Tools = Sequence[str] | str | None
"""Which tools a policy applies to: names or ``fnmatch`` globs; None: its default."""


def _check_tools(tools: object, policy: str) -> Sequence[str] | str | None:
    if tools is None or isinstance(tools, str):
        return tools
    if not isinstance(tools, Sequence) or not all(isinstance(t, str) for t in tools):
        raise InvalidTypeError(
            f"{policy}(tools=...) takes tool names or globs (a list of str), got {tools!r}"
        )
    return tuple(tools)


def _positive(policy: str, label: str, value: object, *, minimum: float = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise InvalidValueError(
            f"{policy}({label}=...) must be a number >= {minimum}, got {value!r}"
        )


def _callable(policy: str, label: str, value: object) -> None:
    if value is not None and not callable(value):
        raise InvalidTypeError(
            f"{policy}({label}=...) must be callable or None, got {type(value).__name__}"
        )


# --------------------------------------------------------------------------- retry


class _Retry(Middleware):
    name = "retry"

    def __init__(
        self,
        attempts: int,
        backoff_ms: float,
        max_backoff_ms: float,
        jitter: bool,
        exceptions: tuple[type[BaseException], ...],
        when: Callable[[ToolResult], bool] | None,
        tools: Tools,
    ) -> None:
        self.attempts = attempts
        self.backoff = backoff_ms / 1000
        self.max_backoff = max_backoff_ms / 1000
        self.jitter = jitter
        self.exceptions = exceptions
        self.when = when
        self.tools = tools

    def __repr__(self) -> str:
        return f"<retry attempts={self.attempts} backoff_ms={self.backoff * 1000:g}>"

    def _applies(self, tool: Tool) -> bool:
        if self.tools is not None:
            return selects(self.tools, tool.name)
        return bool(tool.annotations and tool.annotations.get("idempotentHint") is True)

    def _again(self, call: ToolCall, result: ToolResult) -> bool:
        """Whether ``result`` is worth another attempt: an error (not a question) the
        caller selected, and the call still wanted."""
        if not result.is_error or result.is_pending or call.context.is_cancelled:
            return False
        raised = exception_of(call, result)
        if raised is not None:
            return isinstance(raised, self.exceptions)
        return self.when is not None and bool(self.when(result))

    def _pause(self, call: ToolCall, attempt: int, took: float) -> float | None:
        """The backoff before attempt ``attempt + 1``, or None when that attempt would end
        past the deadline (it is expected to take as long as the last one did)."""
        delay: float = min(self.max_backoff, self.backoff * float(2 ** (attempt - 1)))
        if self.jitter:
            delay = random.uniform(delay / 2, delay)
        if not _fits(call, delay + took):
            return None
        _tracing.event(
            "toolnexus.retry",
            {"toolnexus.retry.attempt": attempt + 1, "toolnexus.retry.delay_ms": delay * 1000},
        )
        return delay

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        if not self._applies(call.tool):
            return call_next(call)
        attempt = 1
        while True:
            started = time.monotonic()
            result = call_next(call)
            if attempt >= self.attempts or not self._again(call, result):
                return result
            took = time.monotonic() - started
            delay = self._pause(call, attempt, took)
            if delay is None or call.context.cancellation_token.wait(delay):
                return result
            if not _fits(call, took):  # the pause ended late: the attempt could not finish
                return result
            attempt += 1

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        if not self._applies(call.tool):
            return await call_next(call)
        attempt = 1
        while True:
            started = time.monotonic()
            result = await call_next(call)
            if attempt >= self.attempts or not self._again(call, result):
                return result
            took = time.monotonic() - started
            delay = self._pause(call, attempt, took)
            if delay is None or await call.context.cancellation_token.wait_async(delay):
                return result
            if not _fits(call, took):  # the pause ended late: the attempt could not finish
                return result
            attempt += 1


def _fits(call: ToolCall, needed: float) -> bool:
    """Whether ``needed`` more seconds, from now, end before the call's deadline."""
    return call.deadline is None or time.monotonic() + needed < call.deadline


def retry(
    attempts: int = 3,
    *,
    backoff_ms: float = 100,
    max_backoff_ms: float = 5_000,
    jitter: bool = True,
    exceptions: type[BaseException] | tuple[type[BaseException], ...] = Exception,
    when: Callable[[ToolResult], bool] | None = None,
    tools: Tools = None,
) -> Middleware:
    """Run a failed call again — only for tools declared idempotent.

    A tool is retried when it declares itself idempotent (MCP's ``idempotentHint``,
    ``@tool(idempotent=True)``), or when ``tools`` names it (names or globs). Another
    attempt starts when the tool raised one of ``exceptions`` (any ``Exception`` by
    default), or returned an error result that ``when(result)`` selects (none by default);
    never for a success, a question (a suspension), or a cancelled call. The pause before
    attempt *n* + 1 is ``backoff_ms * 2**(n-1)`` (at most ``max_backoff_ms``), with
    ``jitter`` a random 50 to 100 % of it. An attempt that would end past the call's deadline
    (expected to take as long as the last one) does not start: the last result stands. That
    is judged before the pause and again after it (a pause that ends late — a busy
    machine — does not start an attempt that cannot finish: the model reads the tool's
    own error, not "timed out").
    At most ``attempts`` attempts in all.

    Example::

        host = Host(toolkit, middleware=[retry(3, backoff_ms=200)], timeout_ms=10_000)
    """
    _positive("retry", "attempts", attempts)
    if isinstance(attempts, float):
        raise InvalidValueError(f"retry(attempts=...) must be an int >= 1, got {attempts!r}")
    _positive("retry", "backoff_ms", backoff_ms, minimum=0)
    _positive("retry", "max_backoff_ms", max_backoff_ms, minimum=0)
    if isinstance(exceptions, type):
        exceptions = (exceptions,)
    if not isinstance(exceptions, tuple) or not all(
        isinstance(e, type) and issubclass(e, BaseException) for e in exceptions
    ):
        raise InvalidTypeError(
            f"retry(exceptions=...) takes an exception class or a tuple of them, got {exceptions!r}"
        )
    _callable("retry", "when", when)
    return _Retry(
        attempts,
        backoff_ms,
        max_backoff_ms,
        bool(jitter),
        exceptions,
        when,
        _check_tools(tools, "retry"),
    )


# --------------------------------------------------------------------------- rate_limit

_PRUNE_AT = 4096  # keys kept before the full buckets among them are forgotten


class _RateLimit(Middleware):
    """A token bucket per key, kept as GCRA's one number: when the bucket is next full
    enough (``_due``). A call reserves its slot under the lock, then waits for it outside."""

    name = "rate_limit"

    def __init__(
        self,
        per_second: float,
        burst: int,
        key: str | Callable[[ToolCall], Hashable],
        wait: bool,
        tools: Tools,
    ) -> None:
        self.per_second = per_second
        self.burst = burst
        self.key = key
        self.wait = wait
        self.tools = tools
        self._interval = 1 / per_second
        self._tolerance = (burst - 1) * self._interval
        self._due: dict[Hashable, float] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<rate_limit {self.per_second:g}/s burst={self.burst} key={self.key!r}>"

    def _key_of(self, call: ToolCall) -> Hashable:
        key = self.key
        if key == "tool":
            return call.name
        if key == "global":
            return None
        assert callable(key)
        return ("key", key(call))

    def _reserve(self, call: ToolCall) -> float | ToolResult:
        """Take the call's slot: the seconds to wait for it, or the refusal."""
        key = self._key_of(call)
        deadline = call.deadline
        with self._lock:
            now = time.monotonic()
            due = self._due.get(key, now)
            start = due if due > now else now
            wait = start - self._tolerance - now
            if wait > 0:
                if not self.wait:
                    return self._refusal(call, wait, None)
                if deadline is not None and now + wait >= deadline:
                    return self._refusal(call, wait, max(0.0, deadline - now))
            else:
                wait = 0.0
            slots = self._due
            slots[key] = start + self._interval
            if len(slots) > _PRUNE_AT:
                for stale in [k for k, at in slots.items() if at <= now]:
                    del slots[stale]
        return wait

    def _refusal(self, call: ToolCall, wait: float, left: float | None) -> ToolResult:
        limit = f"'{call.name}' may run {self.per_second:g} times a second (bursts of {self.burst})"
        if left is None:
            tail = "; try again then"
        else:
            tail = f", past this call's budget ({left * 1000:.0f} ms left); try again later"
        return ToolResult.error(
            f"rate limited: {limit}; the next slot opens in {wait * 1000:.0f} ms{tail}"
        )

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        if not selects(self.tools, call.name):
            return call_next(call)
        wait = self._reserve(call)
        if isinstance(wait, ToolResult):
            return wait
        if wait > 0:
            _tracing.event("toolnexus.rate_limit.wait", {"toolnexus.wait_ms": wait * 1000})
            if call.context.cancellation_token.wait(wait):
                return ToolResult.error(f"cancelled while '{call.name}' waited for its rate limit")
        return call_next(call)

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        if not selects(self.tools, call.name):
            return await call_next(call)
        wait = self._reserve(call)
        if isinstance(wait, ToolResult):
            return wait
        if wait > 0:
            _tracing.event("toolnexus.rate_limit.wait", {"toolnexus.wait_ms": wait * 1000})
            if await call.context.cancellation_token.wait_async(wait):
                return ToolResult.error(f"cancelled while '{call.name}' waited for its rate limit")
        return await call_next(call)


def rate_limit(
    per_second: float,
    *,
    burst: int = 1,
    key: str | Callable[[ToolCall], Hashable] = "tool",
    wait: bool = True,
    tools: Tools = None,
) -> Middleware:
    """Keep calls under a rate: a token bucket of ``burst`` calls, refilled at
    ``per_second``.

    ``key`` says whose bucket a call takes from: ``"tool"`` (one per tool, the default),
    ``"global"`` (one for every call), or a function of the :class:`ToolCall` returning
    the key you derive (a user, a tenant — read from the call or your own context
    variables; the calls run in a copy of the submitter's context). A call finding the
    bucket empty waits for its slot (``wait=True``) within its budget — one whose slot
    comes after its deadline is refused at once, never left waiting — or is refused at
    once (``wait=False``), with a message saying when to try again. ``tools`` limits it
    to some tools (names or globs). No burst ever exceeds the bucket, under any
    concurrency.

    A synchronous tool waits on its worker thread; an async chain waits on its loop.

    Example::

        host = Host(toolkit, middleware=[rate_limit(5, burst=10, key=lambda c: tenant.get())])
    """
    _positive("rate_limit", "per_second", per_second, minimum=1e-9)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
        raise InvalidValueError(f"rate_limit(burst=...) must be an int >= 1, got {burst!r}")
    if key not in ("tool", "global") and not callable(key):
        raise InvalidValueError(
            f"rate_limit(key=...) must be 'tool', 'global' or a function of the call, got {key!r}"
        )
    return _RateLimit(float(per_second), burst, key, bool(wait), _check_tools(tools, "rate_limit"))


# --------------------------------------------------------------------------- cache


class _Cache(Middleware):
    name = "cache"

    def __init__(
        self,
        ttl_ms: float,
        max_entries: int,
        key: Callable[[ToolCall], Hashable] | None,
        tools: Tools,
    ) -> None:
        self.ttl = ttl_ms / 1000
        self.max_entries = max_entries
        self.key = key
        self.tools = tools
        self._entries: OrderedDict[Hashable, tuple[float, ToolResult]] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<cache ttl_ms={self.ttl * 1000:g} entries={len(self._entries)}/{self.max_entries}>"

    def _key_of(
        self, tool: Tool, arguments: Any, context: ToolContext, call: ToolCall | None
    ) -> Hashable | None:
        try:
            canonical = _canonical(arguments)
        except (TypeError, ValueError, RecursionError):
            return None  # arguments that are not plain JSON: not cached
        scope = None
        if self.key is not None:
            assert call is not None  # (made for the key: see _answer_early)
            scope = self.key(call)
        return (tool.name, _whose(context), scope, canonical)

    def _get(self, key: Hashable) -> ToolResult | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if found[0] <= time.monotonic():  # stale: never served
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return found[1]

    def _put(self, key: Hashable, result: ToolResult) -> None:
        if result.is_error:  # errors and questions are never kept
            return
        with self._lock:
            entries = self._entries
            entries[key] = (time.monotonic() + self.ttl, result)
            entries.move_to_end(key)
            while len(entries) > self.max_entries:
                entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def _lookup(
        self, tool: Tool, arguments: Any, context: ToolContext, call: ToolCall | None
    ) -> tuple[Hashable | None, ToolResult | None]:
        """The call's key (None: not cached) and its entry, when there is a fresh one.
        ``call`` is the :class:`ToolCall` of ``tool``, ``arguments`` and ``context``;
        None where nobody reads it (no ``key``)."""
        if context.answer is not None:  # a retry after a question: never from a cache
            return None, None
        if not (selects(self.tools, tool.name) if self.tools is not None else is_read_only(tool)):
            return None, None
        key = self._key_of(tool, arguments, context, call)
        if key is None:
            return None, None
        return key, self._get(key)

    def _hit(self, call: ToolCall, hit: ToolResult) -> ToolResult:
        """A hit in the chain: marked on the call's span (a hit before the worker hand-off
        has none: it is answered only while tracing is off)."""
        _tracing.event("toolnexus.cache.hit", {"gen_ai.tool.name": call.name})
        return hit

    def _answer_early(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        context: ToolContext,
        call_id: str | None,
        turn: int | None,
        budget: int | None,
    ) -> ToolResult | None:
        """A hit, before a worker takes the call (``Policies.answer_early``). Its arguments
        are not checked yet: only for a tool that acts on them as given (no nulls to drop),
        so a hit names arguments that were checked and ran. A :class:`ToolCall` is made
        only for a ``key`` to read."""
        if tool._prepare is not None:
            return None
        call = None
        if self.key is not None:
            call = early_call(tool, arguments, context, call_id, turn, budget)
        return self._lookup(tool, arguments, context, call)[1]

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        key, hit = self._lookup(call.tool, call.arguments, call.context, call)
        if hit is not None:
            return self._hit(call, hit)
        result = call_next(call)
        if key is not None:
            self._put(key, result)
        return result

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        key, hit = self._lookup(call.tool, call.arguments, call.context, call)
        if hit is not None:
            return self._hit(call, hit)
        result = await call_next(call)
        if key is not None:
            self._put(key, result)
        return result


_SORTED = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def _sorted_json() -> Callable[[Any], str]:
    """A cache key's arguments as sorted compact JSON (``_SORTED.encode``), with the C
    encoder behind it built once: ``JSONEncoder.encode`` builds that object anew for
    every value, which was a fifth of a cache hit. Built without a circular-reference memo
    (a shared one would not be thread-safe): cyclic arguments raise ``RecursionError``,
    and are not cached, as any other arguments JSON cannot carry."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return _SORTED.encode
    chunks = make(
        None, _SORTED.default, json.encoder.encode_basestring, None, ":", ",", True, False, False
    )

    def canonical(value: Any) -> str:
        return "".join(chunks(value, 0))

    return canonical


_canonical = _sorted_json()


def _whose(context: ToolContext) -> Hashable:
    """Whose entry a call may be served: the principal the server verified made it (its
    issuer, subject, client and scopes — a token refreshed for the same grant keeps it),
    or None for a call no server authenticated."""
    principal = context.principal
    if principal is None:
        return None
    return (principal.issuer, principal.subject, principal.client_id, principal.scopes)


def cache(
    ttl_ms: float = 60_000,
    *,
    max_entries: int = 1_024,
    key: Callable[[ToolCall], Hashable] | None = None,
    tools: Tools = None,
) -> Middleware:
    """Answer a repeated call from memory — only for read-only tools.

    A tool is cached when it declares itself read-only (MCP's ``readOnlyHint``,
    ``@tool(read_only=True)``), or when ``tools`` names it. Entries are keyed on the tool
    and its canonical arguments (sorted JSON), always on the caller's verified principal
    (``ctx.principal``: its issuer, subject, client and scopes — so one signed-in user is
    never served another's entry; calls without a principal share theirs) — and on
    ``key(call)`` when given: give the tenant there when your tenants are not principals
    (an application's own context variable). Only successes
    are kept (never an error, never a question), each for ``ttl_ms`` from when it was made
    (a stale entry is never served), the least recently used dropped beyond
    ``max_entries``. A retry that carries an answer always runs the tool. The returned
    policy has ``clear()``.

    Example::

        host = Host(toolkit, middleware=[cache(30_000, key=lambda call: tenant.get())])
    """
    _positive("cache", "ttl_ms", ttl_ms, minimum=0)
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise InvalidValueError(f"cache(max_entries=...) must be an int >= 1, got {max_entries!r}")
    _callable("cache", "key", key)
    return _Cache(ttl_ms, max_entries, key, _check_tools(tools, "cache"))


# --------------------------------------------------------------------------- call_limit

_TURNS_KEPT = 1_024  # per-turn counts kept (the oldest turns are forgotten)
_PER = {"turn": "per turn", "tool": "per tool", "run": "in this run"}


class _CallLimit(Middleware):
    name = "call_limit"

    def __init__(self, max_calls: int, per: str, message: str | None, tools: Tools) -> None:
        self.max_calls = max_calls
        self.per = per
        self.message = message
        self.tools = tools
        self._counts: OrderedDict[Hashable, int] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<call_limit {self.max_calls} {_PER[self.per]}>"

    def reset(self) -> None:
        """Start counting afresh (a new run)."""
        with self._lock:
            self._counts.clear()

    _gate = True  # counted in before the worker hand-off, it is not run again in the chain

    def _answer_early(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        context: ToolContext,
        call_id: str | None,
        turn: int | None,
        budget: int | None,
    ) -> ToolResult | None:
        """Count the call in, or refuse it, before a worker takes it
        (``Policies.answer_early``)."""
        return self._refusal(tool.name, context, turn)

    def _refusal(self, name: str, context: ToolContext, turn: int | None) -> ToolResult | None:
        """Count the call in, or the refusal the model reads."""
        if not selects(self.tools, name) or context.answer is not None:
            return None  # a retry with an answer continues a call already counted
        if self.per == "turn":
            if turn is None:
                return None  # not part of a turn: nothing to count it against
            key: Hashable = turn
        elif self.per == "tool":
            key = name
        else:
            key = None
        with self._lock:
            counts = self._counts
            used = counts.get(key, 0)
            if used < self.max_calls:
                counts[key] = used + 1
                if self.per == "turn" and len(counts) > _TURNS_KEPT:
                    counts.popitem(last=False)
                return None
        text = self.message or (
            f"call limit reached: at most {self.max_calls} call(s) {_PER[self.per]}; "
            f"'{name}' was not run. Answer with what you have, or ask the user to go on"
        )
        return ToolResult.error(text.format(tool=name, limit=self.max_calls))

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        refused = self._refusal(call.name, call.context, call.turn)
        return call_next(call) if refused is None else refused

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        refused = self._refusal(call.name, call.context, call.turn)
        return await call_next(call) if refused is None else refused


def call_limit(
    max_calls: int, *, per: str = "turn", message: str | None = None, tools: Tools = None
) -> Middleware:
    """Allow at most ``max_calls`` calls per turn, per tool, or per run; the calls beyond
    get an error result the model reads.

    ``per="turn"`` counts the calls of one ``Host.run_turn`` (or ``resume_turn``; calls
    made outside a turn are not counted); ``"tool"`` counts each tool's calls;
    ``"run"`` counts every call — both for the life of the policy (``reset()`` starts a new
    run). ``tools`` limits it to some tools (names or globs). ``message`` replaces the
    default text (``{tool}`` and ``{limit}`` are filled in). A retry with an answer (after
    a question) continues a call already counted.

    Example::

        host = Host(toolkit, middleware=[call_limit(5, per="turn")])
    """
    if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0:
        raise InvalidValueError(f"call_limit(max_calls=...) must be an int >= 0, got {max_calls!r}")
    if per not in _PER:
        raise InvalidValueError(f"call_limit(per=...) must be 'turn', 'tool' or 'run', got {per!r}")
    if message is not None and not isinstance(message, str):
        raise InvalidTypeError(
            f"call_limit(message=...) must be a str, got {type(message).__name__}"
        )
    return _CallLimit(max_calls, per, message, _check_tools(tools, "call_limit"))


# --------------------------------------------------------------------------- require_approval

_ASK = "approval-"  # the id of an approval request this policy asked
_APPROVED = "approved."  # marks a question the tool asked once its call was approved


class _RequireApproval(Middleware):
    name = "require_approval"

    def __init__(
        self,
        tools: Tools,
        when: Callable[[Mapping[str, Any]], bool] | None,
        prompt: str | Callable[[ToolCall], str] | None,
    ) -> None:
        self.tools = tools
        self.when = when
        self.prompt = prompt

    def __repr__(self) -> str:
        return f"<require_approval tools={self.tools!r}>"

    def _decide(self, call: ToolCall) -> ToolCall | ToolResult:
        """The call to run (approved, or needing no approval), or the question to ask."""
        if not selects(self.tools, call.name) or (
            self.when is not None and not self.when(call.tool._with_defaults(call.arguments))
        ):
            return call  # not this rule's call: an answer it carries is someone else's
        answer = call.context.answer
        if answer is not None:
            if answer.id.startswith(_ASK):
                # The host checked it is the answer to this call's question (bound to the
                # call, used once); a "no" never reaches here, but is refused again anyway.
                if not answer.ok or (answer.data or {}).get("approved", True) is not True:
                    return ToolResult.error(f"declined/expired: approval of '{call.name}'")
                return call.with_context(call.context.with_answer(None))
            if answer.id.startswith(_APPROVED):
                # The tool's own question, asked after the approval: the approval holds.
                own = Answer(answer.id[len(_APPROVED) :], answer.ok, answer.data, answer.reason)
                return call.with_context(call.context.with_answer(own))
        return ToolResult.pending(self._request(call))

    def _request(self, call: ToolCall) -> Request:
        prompt = self.prompt
        arguments = call.tool._with_defaults(call.arguments)  # what the human approves
        if prompt is None:
            text = f"Allow '{call.name}' to run with {_json(arguments)}?"
        elif callable(prompt):
            text = prompt(call)
        else:
            text = prompt.format(tool=call.name, arguments=_json(arguments))
        return Request(
            "approval",
            text,
            id=_ASK + os.urandom(16).hex(),
            data={"tool": call.name, "arguments": dict(call.arguments)},
        )

    @staticmethod
    def _approved(result: ToolResult) -> ToolResult:
        """An approved call's own question keeps the approval for its answer: its id is
        marked (once more for each approval it passes, each policy taking off its own)."""
        request = ToolResult.pending_of(result) if result.is_error else None
        if request is None:
            return result
        marked = Request(
            request.kind,
            request.prompt,
            id=_APPROVED + request.id,
            url=request.url,
            data=request.data,
            expires_at=request.expires_at,
        )
        return ToolResult(
            result.output, True, {**result.metadata, PENDING_KEY: marked}, result.parts
        )

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        decided = self._decide(call)
        if isinstance(decided, ToolResult):
            return decided
        if decided is call:
            return call_next(call)
        return self._approved(call_next(decided))

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        decided = self._decide(call)
        if isinstance(decided, ToolResult):
            return decided
        if decided is call:
            return await call_next(call)
        return self._approved(await call_next(decided))


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def require_approval(
    tools: Tools = None,
    *,
    when: Callable[[Mapping[str, Any]], bool] | None = None,
    prompt: str | Callable[[ToolCall], str] | None = None,
) -> Middleware:
    """Ask a human before a tool runs: the call becomes an ``approval`` question.

    The rule is the host's, not the tool author's: ``tools`` (names or globs; None: every
    tool) and ``when(arguments)`` (a predicate; None: always) choose the calls. ``when``
    sees the arguments as the tool will act on them: a property the caller left out is
    there with its schema ``default`` (``def deploy(env: str = "prod")`` called with ``{}``
    is judged as ``{"env": "prod"}``), so leaving an argument out never slips past the
    rule. Such a call returns a pending result — a :class:`~toolnexus.Request` of kind
    ``approval`` whose ``data`` names the tool and the arguments as sent, ``prompt`` its
    text (``{tool}`` and ``{arguments}`` — with the defaults — filled in, or a function of
    the call) — and the tool does not run. The
    question is like any suspension: ``wait_for`` asks it, or it goes back to the caller,
    bound to this very call (tool, arguments, request) and good for one answer, to resume
    later (``Host.resume``), in this process or another sharing the host's key. A "no" (or
    ``approved: false``) is ``declined/expired: <prompt>``; a yes runs the tool, once. A
    model cannot talk its way around it: only an answer the host checked reaches the
    policy. Once approved, the tool's own questions keep the approval (their ids are
    marked ``approved.``); allow a round for each (``max_rounds``).

    Example::

        host = Host(toolkit, middleware=[require_approval(["deploy", "delete_*"])])
    """
    _callable("require_approval", "when", when)
    if prompt is not None and not isinstance(prompt, str) and not callable(prompt):
        raise InvalidTypeError(
            f"require_approval(prompt=...) must be a str or a function, got {type(prompt).__name__}"
        )
    return _RequireApproval(_check_tools(tools, "require_approval"), when, prompt)


# --------------------------------------------------------------------------- redact

_MISSING = object()


class _Redact(Middleware):
    name = "redact"

    def __init__(
        self, fields: frozenset[str], patterns: tuple[Any, ...], mask: str | None, tools: Tools
    ) -> None:
        self.fields = fields
        self.patterns = patterns
        self.mask = mask
        self.tools = tools

    def __repr__(self) -> str:
        return f"<redact fields={sorted(self.fields)!r} patterns={len(self.patterns)}>"

    def _text(self, text: str) -> str:
        replacement = self.mask or ""
        for pattern in self.patterns:
            text = pattern.sub(replacement, text)
        return text

    def _value(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key in self.fields:
                    if self.mask is not None:
                        out[key] = self.mask
                else:
                    out[key] = self._value(item)
            return out
        if isinstance(value, (list, tuple)):
            return [self._value(item) for item in value]
        if isinstance(value, str):
            return self._text(value)
        return value

    def clean(self, result: ToolResult) -> ToolResult:
        """``result`` with the fields and patterns redacted (a question is left alone)."""
        if result.is_error and result.is_pending:
            return result
        metadata: Mapping[str, Any] = result.metadata
        output = result.output
        structured = metadata.get(STRUCTURED_KEY, _MISSING)
        if structured is not _MISSING:
            cleaned = self._value(structured)
            metadata = {**metadata, STRUCTURED_KEY: cleaned}
            parsed = _parsed(output)
            if parsed is not _MISSING and parsed == structured:
                output = _dump(cleaned)  # the text was the value: write it anew
            else:
                output = self._text(output)
        else:
            output = self._document(output)
        parts = tuple(self._part(part) for part in result.parts)
        if (
            output == result.output
            and metadata is result.metadata
            and all(a is b for a, b in zip(parts, result.parts, strict=True))
        ):
            return result
        return ToolResult(output, result.is_error, metadata, parts)

    def _document(self, text: str) -> str:
        """A text redacted: its fields, when it is a JSON object or array (written anew),
        else its patterns."""
        parsed = _parsed(text)
        if parsed is not _MISSING and isinstance(parsed, (dict, list)):
            return _dump(self._value(parsed))
        return self._text(text)

    def _part(self, part: Part) -> Part:
        """A part redacted as the output is: a text part's text; a JSON part's (a file of
        ``application/json`` or ``*+json``) fields and patterns; another ``text/*`` file's
        patterns. Media (images, audio, other files) and URLs are kept as they are."""
        if part.type == "text" and part.text is not None:
            text = self._document(part.text)
            return part if text == part.text else replace(part, text=text)
        mime = (part.mime_type or "").split(";")[0].strip().lower()
        is_json = mime == "application/json" or mime.endswith("+json")
        if part.data is None or not (is_json or mime.startswith("text/")):
            return part
        try:
            text = part.to_bytes().decode("utf-8")
        except UnicodeDecodeError:
            return part  # not text after all: left as the media it is
        cleaned = self._document(text) if is_json else self._text(text)
        if cleaned == text:
            return part
        return replace(part, data=base64.b64encode(cleaned.encode("utf-8")).decode("ascii"))

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        result = call_next(call)
        return self.clean(result) if selects(self.tools, call.name) else result

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        result = await call_next(call)
        return self.clean(result) if selects(self.tools, call.name) else result


def _parsed(text: str) -> Any:
    if not text or text[0] not in "{[":
        return _MISSING
    try:
        return json.loads(text)
    except ValueError:
        return _MISSING


_dump = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def redact(
    fields: Sequence[str] = (),
    *,
    patterns: Sequence[str] = (),
    mask: str | None = "[redacted]",
    tools: Tools = None,
) -> Middleware:
    """Strip or mask what a result must not carry, before the model (or a log, or a
    trace) sees it.

    ``fields``: keys removed (``mask=None``) or masked wherever they appear in a result's
    JSON — its ``structuredContent`` and a text that is JSON (rewritten to match).
    ``patterns``: regular expressions replaced by ``mask`` (or removed) in every text of
    the result. Parts are redacted as the output is: a text part's text, a JSON part's
    content (a file part of ``application/json`` or ``*+json``: its fields and patterns)
    and another ``text/*`` file's patterns; media (images, audio, other files) and URLs
    are kept as they are. Errors are redacted too; a question (a suspension) is left
    alone. ``tools`` limits it to some tools.

    Example::

        host = Host(toolkit, middleware=[redact(["password", "ssn"], patterns=[r"sk-\\w+"])])
    """
    import re

    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise InvalidTypeError(f"redact(fields=...) takes a list of key names, got {fields!r}")
    if isinstance(patterns, str) or not all(isinstance(p, str) for p in patterns):
        raise InvalidTypeError(f"redact(patterns=...) takes a list of regexes, got {patterns!r}")
    if mask is not None and not isinstance(mask, str):
        raise InvalidTypeError(f"redact(mask=...) must be a str or None, got {type(mask).__name__}")
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise InvalidValueError(
                f"redact(patterns=...): {pattern!r} is not a regex: {exc}"
            ) from None
    return _Redact(frozenset(fields), tuple(compiled), mask, _check_tools(tools, "redact"))


# --------------------------------------------------------------------------- hooks

Hook = Callable[[dict[str, Any]], Any]


class _Hooks(Middleware):
    name = "hooks"

    def __init__(self, before_tool: Hook | None, after_tool: Hook | None) -> None:
        self.before_tool = before_tool
        self.after_tool = after_tool

    @staticmethod
    def _event(call: ToolCall) -> dict[str, Any]:
        return {
            "name": call.name,
            "args": dict(call.arguments),
            "id": call.call_id,
            "turn": call.turn,
            "caller": call.caller,
        }

    @staticmethod
    def _before(call: ToolCall, verdict: Any) -> ToolCall | ToolResult:
        if verdict is None:
            return call
        if not isinstance(verdict, Mapping):
            raise InvalidTypeError(
                'before_tool must return None, {"result": ToolResult} or {"args": {...}}, '
                f"got {type(verdict).__name__}"
            )
        if "result" in verdict and verdict["result"] is not None:
            result = verdict["result"]
            if not isinstance(result, ToolResult):
                raise InvalidTypeError(
                    f'before_tool\'s "result" must be a ToolResult, got {type(result).__name__}'
                )
            return result
        if verdict.get("args") is not None:
            return call.with_arguments(verdict["args"])
        return call

    @staticmethod
    def _after(result: ToolResult, verdict: Any) -> ToolResult:
        if verdict is None:
            return result
        if not isinstance(verdict, Mapping):
            raise InvalidTypeError(
                'after_tool must return None or {"result": ToolResult}, got '
                f"{type(verdict).__name__}"
            )
        replaced = verdict.get("result")
        if replaced is None:
            return result
        if not isinstance(replaced, ToolResult):
            raise InvalidTypeError(
                f'after_tool\'s "result" must be a ToolResult, got {type(replaced).__name__}'
            )
        return replaced

    def __call__(self, call: ToolCall, call_next: Next) -> ToolResult:
        if self.before_tool is not None and call.context.answer is None:
            decided = self._before(call, _settled(self.before_tool(self._event(call)), call))
            if isinstance(decided, ToolResult):
                return decided
            call = decided
        result = call_next(call)
        if self.after_tool is not None and not result.is_pending:
            event = {**self._event(call), "result": result}
            result = self._after(result, _settled(self.after_tool(event), call))
        return result

    async def acall(self, call: ToolCall, call_next: AsyncNext) -> ToolResult:
        if self.before_tool is not None and call.context.answer is None:
            verdict = self.before_tool(self._event(call))
            if _is_awaitable(verdict):
                verdict = await verdict
            decided = self._before(call, verdict)
            if isinstance(decided, ToolResult):
                return decided
            call = decided
        result = await call_next(call)
        if self.after_tool is not None and not result.is_pending:
            verdict = self.after_tool({**self._event(call), "result": result})
            if _is_awaitable(verdict):
                verdict = await verdict
            result = self._after(result, verdict)
        return result


def _is_awaitable(value: Any) -> bool:
    import inspect

    return inspect.isawaitable(value)


def _settled(value: Any, call: ToolCall) -> Any:
    """A hook's value; an ``async`` hook's awaited on a private loop (a sync chain runs on
    a worker), which the call's token stops."""
    if not _is_awaitable(value):
        return value
    from . import _aio

    awaitable = value
    outcome = _aio.run_blocking(lambda: _aio.drive(awaitable, call.context.cancellation_token))
    if outcome is _aio.CANCELLED:
        raise InvalidValueError("the hook was cancelled with its call")
    return outcome


def hooks(before_tool: Hook | None = None, after_tool: Hook | None = None) -> Middleware:
    """The toolnexus family's ``beforeTool``/``afterTool`` hooks (SPEC §8), as one middleware.

    ``before_tool({"name", "args", "id", "turn", "caller"})`` runs before the tool: return
    None to go on, ``{"args": {...}}`` to rewrite the call (checked against the schema again), or
    ``{"result": ToolResult}`` to answer it without running the tool — a deny, a cache
    hit, a dry run, or a suspension (a guard-raised question, counted as pending).
    ``after_tool({"name", "args", "result", "id", "turn"})`` runs after it: return None,
    or ``{"result": ToolResult}`` to replace the result. As in the family, ``after_tool``
    never sees a suspension — only the resolved result of the retry; and the retry with
    an answer runs the tool without ``before_tool`` (it decided already: a guard-raised
    question, once answered, lets the tool run). Either may be ``async``. ``id`` is the
    model's call id in a turn, ``turn`` the turn (else None).

    They are a special case of a middleware: one that calls ``call_next`` once, between
    the two hooks.

    Example::

        def deny_rm(event):
            if event["name"] == "rm":
                return {"result": ToolResult.error("rm is not allowed here")}
            return None

        host = Host(toolkit, middleware=[hooks(before_tool=deny_rm)])
    """
    _callable("hooks", "before_tool", before_tool)
    _callable("hooks", "after_tool", after_tool)
    return _Hooks(before_tool, after_tool)
