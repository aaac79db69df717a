"""HTTP tools: a tool that is one HTTP request (the family's SPEC §7), and the request
engine the OpenAPI import (``_openapi.py``) sends its operations through.

Owns everything about talking to an HTTP server on a tool's behalf: the budget (the
earlier of the call's deadline and the tool's own timeout, enforced by a timer that
closes the connection, so a server that trickles bytes cannot stretch it), cancellation
(the call's token closes the connection), redirects (bounded; one that leaves the origin
carries no header that could be a credential), the response size (bounded, counted as
it is read), header values (``${ENV}`` expanded at call time, never logged, never in an
error message) and the mapping of a response to a :class:`ToolResult` (JSON, text, bytes
as a :class:`Part`, an HTTP error as an error result with its status and a bounded
excerpt).

Standard library only: ``http.client`` and ``urllib.parse``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ._context import ToolContext
from ._log import LazyLogger
from ._parts import Part
from ._result import STRUCTURED_KEY, ToolResult
from ._tools import Tool
from .errors import InvalidTypeError, InvalidValueError, PartTooLargeError

__all__ = ["http_tool"]

_log = LazyLogger("http")

DEFAULT_TIMEOUT_MS = 30_000  # the family's default, used when the call sets no deadline
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_REDIRECTS = 5
EXCERPT_CHARS = 500  # of an error response's body, in the error result
ERROR_BODY_BYTES = 65_536  # read of an error response's body: its excerpt needs no more
_CHUNK = 65_536
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_BODY_KINDS = ("json", "form", "raw")
_RESULT_MODES = ("text", "json", "status+text")
# What a redirect to another origin still carries: any other header may be a credential
# (an API key's own header, a configured ${ENV} header), so none goes to a host not asked.
_CROSS_ORIGIN_HEADERS = frozenset({"accept", "accept-language", "content-type", "user-agent"})


class Response(NamedTuple):
    """What a server answered: the status, the headers (names in lower case), the body,
    and whether the body is all of it (an error's is read only as far as its excerpt
    needs: :data:`ERROR_BODY_BYTES`)."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    complete: bool = True


class Limits(NamedTuple):
    """How far one request may go: its own timeout (milliseconds; ``None``: the family's
    default when the call has no deadline), the response size, the redirects followed."""

    timeout_ms: int | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_redirects: int = DEFAULT_MAX_REDIRECTS


def expand_env(value: str) -> str:
    """``value`` with each ``${NAME}`` replaced by the environment's ``NAME`` (the empty
    string when it is unset, as the family does; the name, never a value, is logged)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None:
            _log.warning("header variable ${%s} is not set; it expands to nothing", name)
            return ""
        return found

    return _ENV.sub(one, value)


def unset_variables(value: str) -> list[str]:
    """The names of the ``${NAME}`` in ``value`` that the environment does not set."""
    return list(dict.fromkeys(n for n in _ENV.findall(value) if os.environ.get(n) is None))


def as_text(value: Any) -> str:
    """An argument as it goes into a URL, a header or a form: a string as it is, a number
    or a boolean as JSON writes it (``true``, ``5``), ``None`` as nothing, an array or an
    object as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def check_limits(limits: Limits, who: str) -> Limits:
    """``limits``, or :class:`InvalidValueError` naming the field that is out of range."""
    timeout, size, redirects = limits
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)):
        raise InvalidValueError(f"{who}: timeout_ms must be None or an int > 0, got {timeout!r}")
    if timeout is not None and timeout <= 0:
        raise InvalidValueError(f"{who}: timeout_ms must be None or an int > 0, got {timeout!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise InvalidValueError(f"{who}: max_response_bytes must be an int > 0, got {size!r}")
    if isinstance(redirects, bool) or not isinstance(redirects, int) or redirects < 0:
        raise InvalidValueError(f"{who}: max_redirects must be an int >= 0, got {redirects!r}")
    return limits


# --------------------------------------------------------------------------- sending


class _Connection:
    """One connection at a time, stoppable from another thread (a timer, a cancel).

    Only the thread that runs the exchange closes the connection and its response
    (:meth:`release`); another thread only shuts the socket down (:meth:`close`), which
    wakes a read blocked on it. Closing an ``HTTPConnection`` or ``HTTPResponse`` from
    another thread races with http.client's own bookkeeping in the reading thread (both
    clear and close the response's file; one of them then finds ``None``).

    It keeps the socket itself: once a response says ``Connection: close``, http.client
    hands the socket to the response and forgets it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: http.client.HTTPConnection | None = None
        self._response: http.client.HTTPResponse | None = None
        self._socket: socket.socket | None = None
        self.closed_because: str | None = None

    def open(self, url: urllib.parse.SplitResult, seconds: float) -> http.client.HTTPConnection:
        """A connection to ``url``'s host, connected (within ``seconds``)."""
        host = url.hostname or ""
        if url.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, url.port, timeout=seconds
            )
        else:
            conn = http.client.HTTPConnection(host, url.port, timeout=seconds)
        self._drop()
        with self._lock:
            self.check()
            self._current = conn
        conn.connect()
        with self._lock:
            self._socket = conn.sock
            stopped = self.closed_because
            if stopped is not None:  # stopped while connecting: the close missed this socket
                self._shut(conn.sock)
        if stopped is not None:
            raise _Stopped(stopped)
        return conn

    def reading(self, response: http.client.HTTPResponse) -> None:
        """Remember ``response``, which :meth:`release` closes."""
        self._response = response

    def check(self) -> None:
        """Raise :class:`_Stopped` once the deadline or a cancel stopped the exchange."""
        if self.closed_because is not None:
            raise _Stopped(self.closed_because)

    def close(self, why: str) -> None:
        """Stop the exchange (from any thread): the socket is shut down, which ends a
        read blocked on it; the exchange's thread then sees :meth:`check` raise."""
        with self._lock:
            if self.closed_because is None:
                self.closed_because = why
            self._shut(self._socket)

    def release(self) -> None:
        """Close the connection and its response (the exchange's own thread only)."""
        with self._lock:
            if self.closed_because is None:
                self.closed_because = "done"
        self._drop()

    def _drop(self) -> None:
        # under the lock, forget the socket first, so a close() from another thread
        # never shuts a socket this thread is closing
        with self._lock:
            conn, response = self._current, self._response
            self._current = self._response = self._socket = None
        if response is not None:
            with contextlib.suppress(OSError):
                response.close()
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    @staticmethod
    def _shut(sock: socket.socket | None) -> None:
        if sock is not None:
            shut_socket(sock)


def shut_socket(sock: socket.socket) -> None:
    """End ``sock``'s traffic both ways from any thread: a read or send blocked on it in
    another thread wakes with an error (close alone may not wake it). The plain socket's
    own shutdown, never ``SSLSocket.shutdown``: that one drops the TLS state first, and a
    send or read in the other thread meanwhile would go over the wire unencrypted.

    Example::

        shut_socket(connection.sock)  # the deadline passed: wake the reader
    """
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Stopped(Exception):
    """The deadline passed or the call was cancelled (control flow inside this module)."""


def send(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    ctx: ToolContext | None,
    limits: Limits,
    who: str,
) -> Response | ToolResult:
    """Send one request and read its response within the call's budget.

    Returns the :class:`Response` (whatever its status), or an error :class:`ToolResult`
    naming ``who`` when the request could not be made or read: the deadline passed, the
    call was cancelled, the connection failed, the body was larger than
    ``limits.max_response_bytes``, or redirects went past ``limits.max_redirects``.
    Header values never appear in a log line or a result.
    """
    own = limits.timeout_ms
    deadline = ctx.deadline if ctx is not None else None
    if own is None and deadline is None:
        own = DEFAULT_TIMEOUT_MS
    if own is not None:
        mine = time.monotonic() + own / 1000
        deadline = mine if deadline is None else min(deadline, mine)
    assert deadline is not None
    budget_ms = max(0, round((deadline - time.monotonic()) * 1000))
    token = ctx.cancellation_token if ctx is not None else None
    if token is not None and token.is_cancellation_requested:
        return ToolResult.error(f"{who}: cancelled before the request was sent")
    connection = _Connection()
    from ._timers import schedule

    timer = schedule(deadline, lambda: connection.close("deadline"))
    registration = token.register(lambda: connection.close("cancelled")) if token else None
    try:
        return _exchange(method, url, dict(headers), body, deadline, connection, limits, who)
    except (_Stopped, OSError, http.client.HTTPException, ValueError) as exc:
        why = connection.closed_because
        # a host cancels its token at the deadline too: past the deadline, it is a timeout
        if why == "deadline" or time.monotonic() >= deadline:
            return ToolResult.error(
                f"{who}: no complete response within the call's budget of {budget_ms} ms "
                "(the connection was closed); try again later or give the call more time",
                {"timedOut": True},
            )
        if why == "cancelled":
            return ToolResult.error(f"{who}: cancelled; the connection was closed")
        return ToolResult.error(f"{who}: the request failed: {_safe_detail(exc)}")
    finally:
        timer.cancel()
        if registration is not None:
            registration.unregister()
        connection.release()


def _exchange(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    deadline: float,
    connection: _Connection,
    limits: Limits,
    who: str,
) -> Response | ToolResult:
    origin = _origin(urllib.parse.urlsplit(url))
    for _ in range(limits.max_redirects + 1):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return ToolResult.error(
                f"{who}: cannot request {parts.scheme or 'a relative'} URL; only http:// and "
                "https:// URLs with a host are followed"
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Stopped("deadline")
        conn = connection.open(parts, remaining)
        target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        connection.reading(response)
        connection.check()
        location = response.getheader("Location")
        if response.status in _REDIRECTS and location:
            response.close()
            url = urllib.parse.urljoin(url, location)
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, body = "GET", None
                headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            if _origin(urllib.parse.urlsplit(url)) != origin:
                headers = {k: v for k, v in headers.items() if k.lower() in _CROSS_ORIGIN_HEADERS}
            continue
        found = {name.lower(): value for name, value in response.getheaders()}
        # an error's body is only its excerpt: read what that needs, never the rest
        failed = not 200 <= response.status < 300
        wanted = (
            min(limits.max_response_bytes, ERROR_BODY_BYTES)
            if failed
            else limits.max_response_bytes
        )
        data = bytearray()
        while True:
            chunk = response.read1(_CHUNK)
            connection.check()  # an end of data the deadline's close made is no answer
            if not chunk:
                break
            data += chunk
            if len(data) > wanted:
                if failed:  # the status is the news: its excerpt, from what was read
                    return Response(response.status, found, bytes(data[:wanted]), False)
                return ToolResult.error(
                    f"{who}: the response is larger than {limits.max_response_bytes} bytes "
                    "(max_response_bytes); ask for less (a filter, a page size) or raise the limit",
                    {"status": response.status},
                )
        return Response(response.status, found, bytes(data))
    return ToolResult.error(
        f"{who}: more than {limits.max_redirects} redirects (max_redirects); the last one "
        "was not followed"
    )


def _safe_detail(exc: BaseException) -> str:
    """What went wrong, without the values involved: http.client quotes a bad header
    value or URL in its message, and either may hold a secret."""
    if isinstance(exc, (ValueError, http.client.InvalidURL)):
        return (
            f"{type(exc).__name__}: a header value or the URL holds a character HTTP does "
            "not allow (a line break, a space); check the arguments and the credentials"
        )
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) if isinstance(exc, http.client.HTTPException) else type(exc).__name__


def _origin(parts: urllib.parse.SplitResult) -> tuple[str, str, int | None]:
    return (parts.scheme, (parts.hostname or "").lower(), parts.port)


# --------------------------------------------------------------------------- results


def _media_type(headers: Mapping[str, str]) -> tuple[str, str]:
    """The response's media type (lower case, no parameters) and charset."""
    raw = headers.get("content-type", "")
    media, _, params = raw.partition(";")
    charset = "utf-8"
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip('"')
    return media.strip().lower(), charset


def is_json_media(media: str) -> bool:
    """Whether a media type is JSON (``application/json``, ``…+json``)."""
    return media == "application/json" or media.endswith("+json")


def _is_text_media(media: str) -> bool:
    return (
        media.startswith("text/")
        or is_json_media(media)
        or media.endswith("+xml")
        or media
        in (
            "application/xml",
            "application/javascript",
            "application/x-www-form-urlencoded",
            "application/yaml",
            "application/x-yaml",
        )
    )


def _decode(body: bytes, charset: str) -> str:
    try:
        return body.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def excerpt(response: Response) -> str:
    """A bounded, one-line excerpt of a body for an error result: its text with runs of
    whitespace (and, for HTML, the tags) collapsed, cut at :data:`EXCERPT_CHARS`."""
    media, charset = _media_type(response.headers)
    if response.body and media and not _is_text_media(media):
        if response.complete:
            return f"({media}, {len(response.body)} bytes)"
        return f"({media}, {_size(response)})"
    text = _decode(response.body, charset)
    if media == "text/html" or text.lstrip()[:1] == "<":
        text = re.sub(r"<(script|style)\b.*?</\1\s*>", " ", text, flags=re.S | re.I)
        text = re.sub(r"<[^>]*>", " ", text)
    text = " ".join(text.split())
    if len(text) > EXCERPT_CHARS or not response.complete:
        text = f"{text[:EXCERPT_CHARS]}… ({_size(response)})"
    return text


def _size(response: Response) -> str:
    """How large the whole body is, as far as it is known."""
    if response.complete:
        return f"{len(response.body)} bytes in all"
    declared = response.headers.get("content-length", "")
    if declared.isdigit():
        return f"{int(declared)} bytes in all"
    return f"more than {len(response.body)} bytes"


def error_result(response: Response) -> ToolResult:
    """The family's error for a status outside 2xx: ``HTTP <status>: <excerpt>``."""
    return ToolResult.error(
        f"HTTP {response.status}: {excerpt(response)}", {"status": response.status}
    )


def response_result(
    response: Response, who: str, *, mode: str = "text", structured: bool = False
) -> ToolResult:
    """The :class:`ToolResult` for a response.

    A status outside 2xx is :func:`error_result`. A 2xx JSON body is the text (``mode``
    ``"json"``: re-encoded; ``"status+text"``: after the status and a newline) and, when
    ``structured``, its value as ``structuredContent`` (the tool checks it against its
    output schema). A text body is its text; any other body becomes a :class:`Part`
    (image, audio, or file by its media type), described in ``output``.
    """
    if not 200 <= response.status < 300:
        return error_result(response)
    metadata: dict[str, Any] = {"status": response.status}
    media, charset = _media_type(response.headers)
    if response.body and media and not _is_text_media(media):
        try:
            part = _part(response.body, media)
        except (PartTooLargeError, ValueError) as exc:
            return ToolResult.error(f"{who}: the {media} response cannot be a part: {exc}")
        return ToolResult(part.describe(), False, metadata, (part,))
    text = _decode(response.body, charset)
    value: Any = None
    parsed = False
    if is_json_media(media) or (mode == "json" and text):
        try:
            value = json.loads(text)
            parsed = True
        except ValueError:
            parsed = False
    if mode == "json" and parsed:
        text = json.dumps(value, ensure_ascii=False)
    elif mode == "status+text":
        text = f"{response.status}\n{text}"
    if structured and parsed:
        metadata[STRUCTURED_KEY] = value
    return ToolResult(text, False, metadata)


def _part(body: bytes, media: str) -> Part:
    kind = media.partition("/")[0]
    if kind == "image":
        return Part.image(body, media)
    if kind == "audio":
        return Part.audio(body, media)
    return Part.file(body, media)


# --------------------------------------------------------------------------- the tool


def http_tool(
    *,
    name: str,
    method: str,
    url: str,
    description: str = "",
    headers: Mapping[str, str] | None = None,
    query: Sequence[str] | None = None,
    body: str = "json",
    input_schema: Mapping[str, Any] | None = None,
    output_schema: Mapping[str, Any] | None = None,
    timeout_ms: int | None = None,
    result_mode: str = "text",
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
) -> Tool:
    """A tool that is one HTTP request (``source="http"``), as the toolnexus family
    defines HTTP tools (SPEC §7).

    Each call fills the URL's ``{placeholders}`` from the arguments of those names
    (percent-encoded; they leave the body), sends the arguments named in ``query`` — or,
    for ``GET`` and ``HEAD``, all the others — as the query string, and the rest as the
    body: ``"json"`` (the default), ``"form"`` (URL-encoded) or ``"raw"`` (the ``body``
    argument as text). ``headers`` values expand ``${ENV}`` from the environment at call
    time; they are never logged nor shown in a result.

    The request gets the earlier of the call's deadline and ``timeout_ms`` (30 s when
    neither is set); at the deadline, or when the call is cancelled, the connection is
    closed and the result is an error. At most ``max_redirects`` redirects are followed
    (to another origin, only ``Accept``, ``Content-Type`` and the like go along: any other
    header may be a credential) and at most ``max_response_bytes`` are
    read. A 2xx answer's body is the output (``result_mode`` ``"json"`` re-encodes JSON,
    ``"status+text"`` puts the status first); a binary body becomes a :class:`Part`; any
    other status is the error ``HTTP <status>: <excerpt of the body>``. With an
    ``output_schema``, a JSON answer is also the result's ``structuredContent``, checked
    against it.

    Raises :class:`~toolnexus.errors.InvalidValueError` for an unknown ``body`` or
    ``result_mode``, a URL that is not http(s), or a limit out of range.

    Example::

        get_post = http_tool(
            name="get_post",
            method="GET",
            url="https://jsonplaceholder.typicode.com/posts/{id}",
            headers={"Authorization": "Bearer ${API_TOKEN}"},
            input_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
        )
        get_post({"id": 1}).output  # the post, as JSON text
    """
    who = f"http tool {name!r}"
    verb = method.upper() if isinstance(method, str) else ""
    if not re.fullmatch(r"[A-Z]+", verb):
        raise InvalidValueError(
            f"{who}: method must be an HTTP method such as 'GET', got {method!r}"
        )
    if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise InvalidValueError(f"{who}: url must be an http:// or https:// URL, got {url!r}")
    if body not in _BODY_KINDS:
        raise InvalidValueError(f"{who}: body must be one of {_BODY_KINDS}, got {body!r}")
    if result_mode not in _RESULT_MODES:
        raise InvalidValueError(
            f"{who}: result_mode must be one of {_RESULT_MODES}, got {result_mode!r}"
        )
    fixed = dict(headers or {})
    for key, value in fixed.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidTypeError(f"{who}: headers must map str to str")
    in_query = frozenset(query or ())
    limits = check_limits(Limits(timeout_ms, max_response_bytes, max_redirects), who)

    def call(args: Mapping[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        rest = dict(args)
        used: set[str] = set()

        def fill(match: re.Match[str]) -> str:
            used.add(match.group(1))
            return urllib.parse.quote(as_text(rest.get(match.group(1))), safe="")

        target = _PLACEHOLDER.sub(fill, url)
        for key in used:
            rest.pop(key, None)
        pairs = [
            (key, as_text(rest.pop(key)))
            for key in list(rest)
            if key in in_query or verb in ("GET", "HEAD")
        ]
        if pairs:
            target += ("&" if "?" in target else "?") + urllib.parse.urlencode(pairs)
        sent = {key: expand_env(value) for key, value in fixed.items()}
        data: bytes | None = None
        if verb not in ("GET", "HEAD") and rest:
            data, content_type = encode_body(body, rest)
            if not any(key.lower() == "content-type" for key in sent):
                sent["Content-Type"] = content_type
        answer = send(verb, target, sent, data, ctx, limits, who)
        if isinstance(answer, ToolResult):
            return answer
        return response_result(answer, who, mode=result_mode, structured=structured)

    structured = output_schema is not None
    return Tool(
        name=name,
        description=description,
        input_schema=input_schema if input_schema is not None else _default_schema(url),
        fn=call,
        source="http",
        output_schema=output_schema,
    )


def _default_schema(url: str) -> dict[str, Any]:
    """Without an input schema: the URL's placeholders, required; other arguments free
    (they go to the query or the body, as the family sends them)."""
    names = list(dict.fromkeys(_PLACEHOLDER.findall(url)))
    scalar = {"type": ["string", "number", "boolean"]}
    schema: dict[str, Any] = {"type": "object", "properties": dict.fromkeys(names, scalar)}
    if names:
        schema["required"] = names
    return schema


def encode_body(kind: str, values: Mapping[str, Any]) -> tuple[bytes, str]:
    """A body of ``kind`` (``"json"``, ``"form"``, ``"raw"``) from ``values``, and its
    content type."""
    if kind == "json":
        return json.dumps(dict(values), ensure_ascii=False).encode(), "application/json"
    if kind == "form":
        pairs = [(key, as_text(value)) for key, value in values.items()]
        return urllib.parse.urlencode(pairs).encode(), "application/x-www-form-urlencoded"
    return as_text(values.get("body", "")).encode(), "text/plain; charset=utf-8"
