"""A server's tools as ordinary :class:`~toolnexus.Tool`\\ s whose calls go to the server.

:func:`remote_tool_list` reads a ``tools/list`` answer (:func:`~._session.remote_tools`
says what each entry means) into :class:`~toolnexus.Tool`\\ s whose function is a
:class:`RemoteTool`: ``fn(args, ctx)`` runs ``tools/call`` on the client that listed it,
with the context's deadline, cancellation, progress and answer. A tool that cannot be used
is skipped with a warning naming the server and the tool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..._log import LazyLogger
from ..._result import ToolResult
from ...errors import InvalidValueError
from ._session import remote_tools

if TYPE_CHECKING:
    from ..._cancellation import CancellationToken
    from ..._context import ProgressReporter, ToolContext
    from ..._suspension import Answer
    from ..._tools import Tool
    from ._admission import Booking
    from ._oauth_exchange import UpstreamExchange

__all__ = ["Caller", "IoReader", "RemoteTool", "relink", "remote_tool_list"]

_log = LazyLogger("mcp.client")  # the package's: it never prints on its own


class IoReader(Protocol):
    """What carries a started call's answer (a stdio client's transport): read it on a
    thread that waits anyway, or hand it to the client's reader thread."""

    def read_until(self, done: Callable[[], object], timeout: float | None) -> bool | None: ...

    def read_for_others(self) -> None: ...


class Caller(Protocol):
    """What a remote tool calls: the client (its ``name``, its one ``tools/call``, and
    that call started without a waiting thread)."""

    name: str

    def _io_ready(self) -> bool: ...

    def _start_io(
        self,
        name: str,
        arguments: dict[str, Any],
        token: CancellationToken,
        progress: ProgressReporter | None,
        deadline: float | None,
        done: Callable[[ToolResult], object],
    ) -> IoReader | None: ...

    def _start_apart(
        self,
        name: str,
        run: Callable[[Booking], ToolResult],
        done: Callable[[ToolResult], object],
    ) -> object: ...

    def _apart_ready(self) -> bool: ...

    def _call(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout_ms: int | None,
        token: CancellationToken | None,
        progress: ProgressReporter | None,
        answer: Answer | None,
        headers: Mapping[str, str] | None,
        deadline: float | None = None,
        booked: Booking | None = None,
    ) -> ToolResult: ...


class RemoteTool:
    """The function of a remote tool: ``fn(args, ctx)`` calls the server's tool."""

    __slots__ = ("client", "exchange", "headers", "links", "remote", "required_scopes", "stale")

    runs_on_caller = True
    """A call only waits for the server, and the context's token ends that wait at once
    (the client wakes its reader and tells the server): ``Host.call`` runs it on the
    calling thread, with no worker hand-off, and its deadline and cancel still hold."""

    def __init__(self, client: Caller, remote: str, headers: Mapping[str, str]) -> None:
        self.client = client
        self.remote = remote
        self.headers = headers
        self.links: Callable[[str], str] | None = None
        """What a resource link's URI becomes in a result (a gateway's prefixed URI)."""
        self.required_scopes: frozenset[str] = frozenset()
        """The scopes a caller needs to see this tool (a gateway's catalog; see gate)."""
        self.exchange: UpstreamExchange | None = None
        """A gateway's: each call goes with its caller's token exchanged for the server
        (``auth.exchange`` in mcp.json), never with the gateway's own credentials."""
        self.stale: Callable[..., ToolResult | None] | None = None
        """What a call the server refused as if it did not know this tool becomes, its
        tool list looked at again (an McpSource's: a list that changed unannounced):
        ``stale(remote, result)``; with ``quick=True``, None when a listing is due (to be
        made off the thread that ends the call), else the answer at once."""

    def __call__(self, args: Mapping[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        result = self._run(args, ctx)
        stale = self.stale
        if stale is not None and unknown_tool(result, self.remote):
            result = stale(self.remote, result) or result
        links = self.links
        if links is None or not result.parts:
            return result
        return relink(result, links)

    def io_ready(self) -> bool:
        """Whether :meth:`start_io` can start a call now (a stdio client, connected, no
        exchanged token; or a client with threads of its own): asked before a host checks
        the arguments for it, so a call that cannot go that way is not checked twice on
        its way to a worker."""
        client = self.client
        return (self.exchange is None and client._io_ready()) or client._apart_ready()

    def start_io(
        self,
        args: Mapping[str, Any],
        ctx: ToolContext | None,
        done: Callable[[ToolResult], object],
    ) -> object:
        """Start the call with no thread of the caller's waiting for it, ``done(result)``
        called once by whoever ends it: written to the pipe here (the thread reading the
        answer ends it; the context's token, cancelled by a cancel or the host's deadline,
        tells the server), else run on the client's own threads (``McpClient._start_apart``:
        an HTTP server, a resume, an exchanged token, a call that waits for a place).
        Returns what carries the answer (:class:`IoReader`: read it, or hand it to the
        client's reader thread), or True once ``done`` has it already. None, having done
        nothing, when it must run as ``fn(args, ctx)`` instead (a client that can do
        neither). A host starts a call nobody waits on a thread for (``submit``, a
        server's bridge) this way: see ``Call._start``."""
        if ctx is None:
            return None
        links = self.links
        if links is not None:
            given = done

            def relinked(result: ToolResult) -> None:
                given(relink(result, links) if result.parts else result)

            done = relinked
        stale = self.stale
        if stale is not None:
            ended = done

            def checked(result: ToolResult) -> None:
                if not unknown_tool(result, self.remote):
                    ended(result)
                    return
                answer = stale(self.remote, result, quick=True)
                if answer is not None:  # no listing due: answered by the list as it is
                    ended(answer)
                    return
                # Its tools are listed again off the thread that ends the call (it may
                # be the one that reads the server's answers); once a second at most.
                threading.Thread(
                    target=lambda: ended(stale(self.remote, result, slot=True) or result),
                    name=f"toolnexus-mcp-{self.client.name}-stale",
                    daemon=True,
                ).start()

            done = checked
        client = self.client
        if ctx.answer is None and self.exchange is None:
            started = client._start_io(
                self.remote,
                dict(args),
                ctx.cancellation_token,
                ctx.report_progress if ctx.progress is not None else None,
                ctx.deadline,
                done,
            )
            if started is not None:
                return started
        return client._start_apart(self.remote, partial(self._run, args, ctx), done)

    def _run(
        self, args: Mapping[str, Any], ctx: ToolContext | None, booked: Booking | None = None
    ) -> ToolResult:
        if self.exchange is None:
            return self._send(args, ctx, booked)
        from ...errors import OAuthError
        from ._oauth_exchange import as_caller

        try:
            with as_caller(self.exchange):
                return self._send(args, ctx, booked)
        except OAuthError as exc:  # no retry here: the exchanger remembers a refusal
            return ToolResult(f"{self.remote} on MCP server {self.client.name}: {exc}", True)

    def _send(
        self, args: Mapping[str, Any], ctx: ToolContext | None, booked: Booking | None
    ) -> ToolResult:
        if ctx is None:
            return self.client._call(
                self.remote, dict(args), None, None, None, None, self.headers, None, booked
            )
        return self.client._call(
            self.remote,
            dict(args),
            ctx.timeout_ms,
            ctx.cancellation_token,
            ctx.report_progress if ctx.progress is not None else None,
            ctx.answer,
            self.headers,
            ctx.deadline,
            booked,
        )

    def __repr__(self) -> str:
        return f"<remote tool {self.remote!r} on MCP server {self.client.name!r}>"


def unknown_tool(result: ToolResult, remote: str) -> bool:
    """Whether ``result`` (of a call of the server's tool ``remote``) may say the server
    does not know the tool: an error that names it and was refused as invalid params
    (``-32602``, the spec's code for an unknown tool, or saying "not found"), or that
    says "unknown tool".
    Only a hint: the server's tool list, read again, decides (``RemoteTool.stale``).

    Example::

        unknown_tool(ToolResult("gone: MCP server s refused the call: Unknown tool: gone "
                                "(-32602)", True), "gone")  # True
    """
    if not result.is_error or result.is_pending or remote not in result.output:
        return False
    text = result.output.lower()
    if "unknown tool" in text:
        return True
    # (the words of a refusal: _questions.refused)
    return "refused the call" in text and (text.endswith("(-32602)") or "not found" in text)


def relink(result: ToolResult, links: Callable[[str], str]) -> ToolResult:
    """``result`` with each resource link's URI (a URL part's), and each embedded
    resource's (a part named with its URI), passed through ``links``.

    Example::

        relink(result, lambda uri: "every+" + uri)
    """
    import dataclasses

    parts = [
        dataclasses.replace(part, url=links(part.url))
        if part.url is not None
        else dataclasses.replace(part, name=links(part.name))
        if part.name is not None and "://" in part.name
        else part
        for part in result.parts
    ]
    return ToolResult(result.output, result.is_error, result.metadata, parts)


def remote_tool_list(
    client: Caller,
    specs: Sequence[Mapping[str, Any]],
    prefix: str,
    include: Sequence[str] | None,
    exclude: Sequence[str],
) -> list[Tool]:
    """The tools ``specs`` (a ``tools/list`` answer of ``client``'s server) lists, as
    :class:`~toolnexus.Tool`\\ s named ``prefix + name`` that ``include``/``exclude``
    keep; each one the validator refuses is skipped with a warning.

    Example::

        tools = remote_tool_list(client, client.list_tools(), "demo_", None, ())
    """
    from ..._tools import Tool

    made: list[Tool] = []
    for remote, fields in remote_tools(specs, prefix, include, exclude):
        if not remote:
            _log.warning("MCP server %s listed a tool without a name; skipped", client.name)
            continue
        try:
            if isinstance(fields, str):
                raise InvalidValueError(fields)
            headers = fields.pop("headers")
            made.append(Tool(fn=RemoteTool(client, remote, headers), source="mcp", **fields))
        except (ValueError, TypeError) as exc:
            _log.warning("MCP server %s: tool %r skipped: %s", client.name, remote, exc)
    return made
