"""MCP Streamable HTTP as an ASGI application, for uvicorn, hypercorn, granian and friends.

No dependency is needed to *be* ASGI: :class:`AsgiApp` is a plain ``async`` callable of
``(scope, receive, send)``. It answers the same ``/mcp`` endpoint as the embedded server
(:class:`~toolnexus.mcp._server._endpoint.Endpoint` decides everything) and never blocks the event
loop: tools run on the host's workers and their messages reach the loop through
``call_soon_threadsafe``. A client that disconnects while its call runs cancels the call.

A request is authenticated from its head before anything of its body is counted against
the in-flight cap or read (a check that may wait — OAuth — off the loop), and its body must
arrive within ``request_timeout_ms``: a peer without a token holds nothing, and one that
declares a body it does not send gives the bytes counted for it back.

Modern (2026-07-28) requests hold no state between requests, so several worker processes
can serve them behind any load balancer, given the same ``secret`` for ``requestState``;
legacy sessions live in the worker that created them and need sticky routing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from ...errors import InvalidValueError
from ._endpoint import SINGLE_HEADERS, Endpoint
from ._exchange import Exchange, Reply, sse_event
from ._options import ServerOptions, resolve

if TYPE_CHECKING:
    from ..._toolkit import Toolkit

__all__ = ["AsgiApp", "asgi_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
AsgiSend = Callable[[Message], Awaitable[None]]


class AsgiApp:
    """An ASGI 3 application serving ``toolkit`` over MCP at ``path`` (``/mcp``).

    ``options`` is a :class:`~toolnexus.mcp.ServerOptions` (the same as the embedded
    server's; the connection limits and timeouts are the ASGI server's own, but for
    ``request_timeout_ms``, the app's deadline for a request's body: then 408). The
    ``lifespan`` shutdown closes the host and ends legacy sessions; :meth:`close` does the
    same for a server without lifespan.

    Example::

        # app.py — run with: uvicorn app:app --workers 4
        from toolnexus.mcp import ServerOptions, asgi_app
        from mytools import toolkit

        app = asgi_app(toolkit, ServerOptions(secret=open("state.key", "rb").read()))
    """

    def __init__(
        self, toolkit: Toolkit, options: ServerOptions | None = None, *, path: str = "/mcp"
    ) -> None:
        if not isinstance(path, str) or not path.startswith("/"):
            raise InvalidValueError(f"path must be a str starting with '/', got {path!r}")
        self.path = path
        options = resolve(options)
        self.endpoint = Endpoint(toolkit, options, path)
        self._body_s = options.http.request_timeout_ms / 1000
        try:  # an app does not know its address: OAuth needs its resource configured
            self.endpoint.listening(None)
        except ValueError:
            self.endpoint.close()
            raise

    def close(self) -> None:
        """End every legacy session (cancelling their calls) and close the host."""
        self.endpoint.close()

    def __repr__(self) -> str:
        return f"<AsgiApp {self.path}, {self.endpoint.session_count} legacy session(s)>"

    async def __call__(self, scope: Scope, receive: Receive, send: AsgiSend) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1003})
            return
        path = scope.get("path")
        if path != self.path and not (isinstance(path, str) and self.endpoint.is_metadata(path)):
            await _send_reply(
                send,
                Reply(
                    404,
                    [("content-type", "text/plain")],
                    b"not found; MCP is at " + self.path.encode() + b"\n",
                ),
            )
            return
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            if name in headers:
                if name in SINGLE_HEADERS:
                    await _send_reply(
                        send,
                        Reply(
                            400,
                            [("content-type", "text/plain")],
                            f"bad request: repeated {name} header\n".encode(),
                        ),
                    )
                    return
                value = f"{headers[name]}, {value}"
            headers[name] = value
        method = str(scope.get("method", "GET")).upper()
        scheme = "https" if scope.get("scheme") == "https" else "http"
        if path != self.path:
            await _send_reply(send, self.endpoint.metadata(method, headers, scheme))
            return
        body = b""
        reserved = 0
        client = scope.get("client")
        peer = str(client[0]) if client else None
        # Who sent it, before anything of its body is counted or read.
        if self.endpoint.verifies_remotely:
            # Verifying an OAuth token may wait on the authorization server: on the guard's
            # own threads, never the loop's executor; a token checked lately answers now.
            outcome = self.endpoint.authenticate_nowait(headers, scheme, method, peer)
            if isinstance(outcome, concurrent.futures.Future):
                outcome = await asyncio.wrap_future(outcome)
            refused, identity = outcome
        else:
            refused, identity = self.endpoint.authenticate(headers, scheme, method, peer)
        if refused is not None:
            await _send_reply(send, refused)
            return
        try:
            if method == "POST":
                try:
                    read = await asyncio.wait_for(self._read_body(headers, receive), self._body_s)
                except asyncio.TimeoutError:
                    read = Reply(
                        408,
                        [("content-type", "text/plain"), ("connection", "close")],
                        b"request timeout: the body did not arrive whole in time\n",
                    )
                if isinstance(read, Reply):
                    await _send_reply(send, read)
                    return
                body, reserved = read
            reply = self.endpoint.handle(
                method,
                headers,
                body,
                reserved=reserved,
                peer=peer,
                scheme=scheme,
                identity=identity,
            )
        except MemoryError:
            from ..._log import get_logger

            get_logger().warning(
                "toolnexus mcp asgi: out of memory answering a request from %s", peer
            )
            await _send_reply(
                send,
                Reply(
                    503,
                    [("content-type", "text/plain"), ("retry-after", "1")],
                    b"service unavailable: out of memory; retry later\n",
                ),
            )
            return
        if reply.exchange is None:
            await _send_reply(send, reply)
            return
        await _stream(reply, reply.exchange, receive, send)

    async def _read_body(
        self, headers: dict[str, str], receive: Receive
    ) -> tuple[bytes, int] | Reply:
        """The body and the bytes taken for it from the in-flight cap (before it is read:
        all of a declared length at once, else as it comes), or the refusal. Cancelled (the
        body deadline), it gives back what it took."""
        endpoint = self.endpoint
        limit = endpoint.max_body_bytes
        declared = headers.get("content-length")
        reserved = 0
        if declared is not None and declared.strip().isdigit():
            length = int(declared)
            if length > limit:
                return endpoint.too_large(length)
            refused = endpoint.reserve(length)
            if refused is not None:
                return refused
            reserved = length
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                message = await receive()
                if message.get("type") == "http.disconnect":
                    endpoint.release(reserved)
                    return Reply(400, [], b"")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    endpoint.release(reserved)
                    return endpoint.too_large(size)
                if size > reserved:
                    refused = endpoint.reserve(size - reserved)
                    if refused is not None:
                        endpoint.release(reserved)
                        return refused
                    reserved = size
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks), reserved
        except BaseException:  # out of memory, or cancelled at the body deadline
            endpoint.release(reserved)
            raise

    async def _lifespan(self, receive: Receive, send: AsgiSend) -> None:
        while True:
            message = await receive()
            if message.get("type") == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message.get("type") == "lifespan.shutdown":
                await asyncio.get_running_loop().run_in_executor(None, self.close)
                await send({"type": "lifespan.shutdown.complete"})
                return


def asgi_app(
    toolkit: Toolkit, options: ServerOptions | None = None, *, path: str = "/mcp"
) -> AsgiApp:
    """An ASGI application serving ``toolkit`` over MCP Streamable HTTP at ``path``.

    ``options`` is a :class:`~toolnexus.mcp.ServerOptions`. Give every worker the same
    ``secret`` so a modern ``requestState`` retry can land on any of them.

    Example::

        app = asgi_app(
            toolkit, ServerOptions(name="team-tools", allowed_hosts=["tools.example.com"])
        )
    """
    return AsgiApp(toolkit, options, path=path)


def _encoded(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


async def _send_reply(send: AsgiSend, reply: Reply) -> None:
    headers = [*reply.headers, ("content-length", str(len(reply.body)))]
    await send(
        {"type": "http.response.start", "status": reply.status, "headers": _encoded(headers)}
    )
    await send({"type": "http.response.body", "body": reply.body})


async def _stream(reply: Reply, exchange: Exchange, receive: Receive, send: AsgiSend) -> None:
    """Send the exchange's messages as one JSON body or an event stream; a disconnect
    cancels the call."""
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(ready.set)

    exchange.wake = wake
    disconnected = asyncio.ensure_future(_disconnect(receive))
    streaming = False
    try:
        if exchange.opens_at_once:  # nothing to wait for first: the stream is open now
            streaming = True
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": _encoded(_stream_headers(reply)),
                }
            )
        while True:
            item = exchange.poll()
            if item is None:
                ready.clear()
                item = exchange.poll()  # a wake between poll and clear is not lost
            if item is None:
                waiter = asyncio.ensure_future(ready.wait())
                await asyncio.wait({waiter, disconnected}, return_when=asyncio.FIRST_COMPLETED)
                if not waiter.done():
                    waiter.cancel()
                if disconnected.done():
                    exchange.client_gone()
                    return
                continue
            data, final = item
            if not streaming and final:
                if data is None:  # cancelled: ended as the spec allows, never a bare 204
                    await _send_reply(send, exchange.cancelled_reply(reply.headers))
                else:
                    await _send_reply(
                        send,
                        Reply(
                            exchange.status_of(data),
                            [("content-type", "application/json"), *reply.headers],
                            data,
                        ),
                    )
                return
            if not streaming:
                streaming = True
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": _encoded(_stream_headers(reply)),
                    }
                )
            await send(
                {
                    "type": "http.response.body",
                    "body": sse_event(data) if data is not None else b"",
                    "more_body": not final,
                }
            )
            if final:
                return
    except OSError:
        exchange.client_gone()
    finally:
        exchange.wake = None
        disconnected.cancel()


def _stream_headers(reply: Reply) -> list[tuple[str, str]]:
    return [*reply.headers, ("content-type", "text/event-stream"), ("cache-control", "no-cache")]


async def _disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return
