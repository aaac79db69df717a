"""What an HTTP request to ``/mcp`` is answered with: a :class:`Reply` (a status, headers and
a body), or an :class:`Exchange` — the messages of one POST's response, which tool threads
produce and the transport (the embedded server, the ASGI app) drains, as JSON or as an
event stream (:func:`sse_event`). Values only: the endpoint decides, the auth guard refuses,
and the transports write, all in these terms, so none of them imports another for them."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._shared._codec import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    UNSUPPORTED_PROTOCOL_VERSION,
    encode,
    error_message,
)

if TYPE_CHECKING:
    from typing import Protocol

    class Channel(Protocol):
        """Where an exchange's request runs (the endpoint's channel): what it cancels when
        the client goes away."""

        def cancel_request(self, request_id: Any, reason: str) -> None: ...


__all__ = ["JSON_TYPE", "MODERN_STATUS", "SSE_HEADERS", "Exchange", "Reply", "sse_event"]

JSON_TYPE = ("content-type", "application/json")
SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
# JSON-RPC errors of the modern revision and the HTTP status each travels with.
MODERN_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


class Reply:
    """What to answer one HTTP request: a status, headers and either a ``body`` or an
    :class:`Exchange` whose messages the transport streams."""

    __slots__ = ("body", "exchange", "headers", "status")

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]] | None = None,
        body: bytes = b"",
        exchange: Exchange | None = None,
    ) -> None:
        self.status = status
        self.headers = headers if headers is not None else []
        self.body = body
        self.exchange = exchange

    def __repr__(self) -> str:
        kind = "streaming" if self.exchange is not None else f"{len(self.body)} bytes"
        return f"<Reply {self.status} {kind}>"


def sse_event(data: bytes) -> bytes:
    """One ``text/event-stream`` event carrying one JSON-RPC message."""
    return b"event: message\ndata: " + data.rstrip(b"\n") + b"\n\n"


# --------------------------------------------------------------------------- exchanges


class Exchange:
    """The messages one POST's response carries, produced by tool threads and drained by
    the transport (a blocking :meth:`next` or a ``wake`` callback for an event loop).

    Items are ``(data, final)``: ``data`` a JSON-RPC message as bytes, ``final`` true for
    the response that ends the stream. ``(None, True)`` ends it without a response (the
    request was cancelled).
    """

    __slots__ = (
        "_held",
        "_lock",
        "_queue",
        "channel",
        "ended",
        "io",
        "modern",
        "on_end",
        "opens_at_once",
        "request_id",
        "streams",
        "wake",
    )

    def __init__(self, channel: Channel, request_id: Any, modern: bool, streams: bool) -> None:
        self.channel = channel
        self.request_id = request_id
        self.modern = modern
        self.streams = streams  # the client accepts text/event-stream
        self.ended = False
        self.wake: Callable[[], object] | None = None
        # A stream with no answer to wait for (a legacy GET stream): its head goes out at
        # once, so the client knows it is open.
        self.opens_at_once = False
        self.on_end: Callable[[], object] | None = None  # run once it ends, either way
        self._lock = threading.Lock()  # `ended` against a racing client_gone
        # Producers put, the one consumer (the transport) gets: a C queue, no Condition.
        self._queue: queue.SimpleQueue[tuple[bytes | None, bool]] = queue.SimpleQueue()
        self._held: tuple[bytes | None, bool] | None = None  # given back by the consumer
        # What carries the answer of the remote call this response waits for (a stdio
        # client's transport), read by next() as it waits: see read_by.
        self.io: Any = None

    def _put(self, data: bytes | None, final: bool) -> None:
        if data == b"" and not final:
            return  # a notification Send.to_bytes could not encode (it logged why): no event
        with self._lock:
            if self.ended:
                return
            if final:
                self.ended = True
            self._queue.put((data, final))
        wake = self.wake
        if wake is not None:
            wake()
        if final:
            self._ended()

    def _ended(self) -> None:
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            on_end()

    # The consumer's side (one thread, or the event loop): next, poll and push_back.

    def read_by(self, io: Any) -> None:
        """The request's call is a remote one whose answer ``io`` carries (its client's
        ``read_until``, ``read_for_others``): :meth:`next` reads it while it waits, so the
        answer wakes the thread that writes the response, with no hand-over between two
        threads. The consumer must call :meth:`next` (the embedded server's worker does)."""
        self.io = io

    def next(self, timeout: float | None) -> tuple[bytes | None, bool] | None:
        """The next item, waiting up to ``timeout`` seconds; ``None`` if none came. While
        the request waits for a remote call's answer (:meth:`read_by`), this thread reads
        it: the items it ends in are here when that read returns."""
        held = self._held
        if held is not None:
            self._held = None
            return held
        io = self.io
        if io is not None:
            queued = self._queue
            # None: another thread reads the pipe (and hands this call its events).
            if io.read_until(lambda: not queued.empty(), timeout) is not None:
                try:
                    item = queued.get_nowait()
                except queue.Empty:
                    return None
                if item[1]:
                    self.io = None  # answered: nothing more to read for it
                return item
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def poll(self) -> tuple[bytes | None, bool] | None:
        """The next item if one is ready, else ``None`` (for an event loop after a wake)."""
        held = self._held
        if held is not None:
            self._held = None
            return held
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None

    def push_back(self, item: tuple[bytes | None, bool]) -> None:
        """Return an item taken with :meth:`poll` to the front."""
        self._held = item

    def status_of(self, data: bytes) -> int:
        """The HTTP status for a response sent as plain JSON (modern errors map)."""
        if not self.modern or b'"error"' not in data:
            return 200
        try:
            code = json.loads(data)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return 200
        return MODERN_STATUS.get(code, 200)

    def cancelled_reply(self, headers: list[tuple[str, str]]) -> Reply:
        """How a request cancelled before its answer ends, as the spec allows a POST's
        response to: an event stream with no event for a client that accepts one, else
        the error as JSON (never a bare 204, which SDK clients log as an error)."""
        if self.streams:
            return Reply(200, [*headers, *SSE_HEADERS], b"")
        message = error_message(self.request_id, REQUEST_CANCELLED, "request cancelled")
        return Reply(200, [JSON_TYPE, *headers], encode(message))

    def client_gone(self) -> None:
        """The response stream closed before the answer: cancel the request's call (or
        close the subscription it carried)."""
        io, self.io = self.io, None
        if io is not None:  # nobody reads for it here any more: its client's reader does
            io.read_for_others()
        with self._lock:
            if self.ended:
                return
            self.ended = True
        if self.request_id is not None:
            self.channel.cancel_request(self.request_id, "the client closed the response stream")
        self._ended()

    def __repr__(self) -> str:
        return f"<Exchange id={self.request_id!r} {'ended' if self.ended else 'open'}>"
