"""What both sides of MCP's OAuth read the same way: well-known URLs, challenges, JSON over HTTP.

The server (a protected resource: :mod:`._auth`, :mod:`._verifiers`) and the client (an
OAuth client: :mod:`._oauth`) share these rules so each is written once:

- where metadata lives: a protected resource's (RFC 9728: ``/.well-known/
  oauth-protected-resource`` inserted before the resource's path) and an authorization
  server's (RFC 8414 ``oauth-authorization-server`` and OpenID Connect discovery, with
  and without path insertion, in the order the MCP specification gives);
- the ``WWW-Authenticate: Bearer`` challenge, written and read (RFC 6750 §3, RFC 9728 §5.1);
- one small HTTP exchange on :mod:`http.client` (no redirects followed, a size limit, a
  timeout for each wait and optionally a deadline for all of it, optionally to an
  address the caller checked), for metadata, tokens, registration and introspection.

No secret passes through a log line here: callers hand in headers and bodies, and only
the URL and the status are ever named in an error.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from ...errors import OAuthError

__all__ = [
    "HttpAnswer",
    "authorization_server_metadata_urls",
    "challenge",
    "exchange",
    "form",
    "parse_challenge",
    "protected_resource_metadata_url",
    "resource_metadata_urls",
    "shown",
]

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
_MAX_BODY = 1 << 20  # metadata and token answers are small: 1 MiB is plenty
_AUTH_PARAM = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*,?')


class HttpAnswer:
    """One HTTP answer: ``status``, ``headers`` (lower-case names) and ``body``."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body as JSON, or ``None`` when it is not JSON."""
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return None

    def __repr__(self) -> str:
        return f"<HttpAnswer {self.status} {len(self.body)} bytes>"


def exchange(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    limit: int = _MAX_BODY,
    deadline: float | None = None,
    address: str | None = None,
) -> HttpAnswer:
    """Send one request and read its answer (redirects are answers too, never followed).

    ``timeout`` bounds each wait (connecting, each read); ``deadline`` (a
    :func:`time.monotonic` time) bounds the whole exchange — a server that answers a byte
    at a time is cut off there. ``address``: the IP address to connect to, as the caller
    checked it (the URL's host is then not looked up again: no DNS rebinding in between;
    it is still the ``Host`` and what the TLS certificate must name).

    Raises :class:`~toolnexus.errors.OAuthError` when no answer comes (naming ``url``,
    never a header or body: they may hold a secret).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OAuthError(shown(url), "not an http(s) URL")
    if deadline is not None:
        timeout = min(timeout, deadline - time.monotonic())
        if timeout <= 0:
            raise OAuthError(shown(url), f"{method} not sent: out of time")
    connection: http.client.HTTPConnection
    if address is not None:
        connection = _Pinned(parts.hostname, parts.port, address, parts.scheme == "https", timeout)
    elif parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = {"Accept": "application/json", **(headers or {})}
    cut = threading.Event()  # set when the deadline came first: the socket was shut

    def shut() -> None:
        cut.set()
        sock = connection.sock
        if sock is not None:
            from ..._http_tools import shut_socket

            shut_socket(sock)  # wakes the read that waits on it

    watchdog = None
    try:
        connection.connect()
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OAuthError(shown(url), f"{method} failed: timed out")
            watchdog = threading.Timer(left, shut)
            watchdog.daemon = True
            watchdog.start()
        connection.request(method, target, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read(limit + 1)
        if cut.is_set():  # the shut socket read as the end of the answer
            raise OAuthError(shown(url), f"{method} failed: timed out")
    except OAuthError:
        raise  # (an OSError too: said already)
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, socket.timeout) or cut.is_set():
            reason = "timed out"
        else:
            reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
        raise OAuthError(shown(url), f"{method} failed: {reason}") from None
    finally:
        if watchdog is not None:
            watchdog.cancel()
        connection.close()
    if len(data) > limit:
        raise OAuthError(shown(url), f"{method}: the answer is over {limit} bytes")
    return HttpAnswer(
        response.status, {name.lower(): value for name, value in response.getheaders()}, data
    )


class _Pinned(http.client.HTTPConnection):
    """An HTTP(S) connection to ``host`` made to the IP ``address`` already checked;
    TLS (with the default context: certificates verified) for ``host``."""

    def __init__(
        self, host: str, port: int | None, address: str, tls: bool, timeout: float
    ) -> None:
        super().__init__(host, port or (443 if tls else 80), timeout=timeout)
        if tls:
            self.default_port = 443  # (the Host header names a port only when another)
        self._address = address
        self._tls = ssl.create_default_context() if tls else None

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        if self._tls is not None:
            try:
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
            except BaseException:
                sock.close()
                raise
        self.sock = sock


def form(fields: Mapping[str, str | None]) -> bytes:
    """An ``application/x-www-form-urlencoded`` body of the fields that are set."""
    return urlencode({k: v for k, v in fields.items() if v is not None}).encode("ascii")


def shown(url: str) -> str:
    """``url`` without its query (a query may carry a code or a token)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


# --------------------------------------------------------------------------- metadata URLs


def protected_resource_metadata_url(resource: str) -> str:
    """RFC 9728 §3.1: the metadata URL of ``resource`` — ``/.well-known/oauth-protected-
    resource`` inserted between its host and its path (a trailing ``/`` dropped).

    Example::

        >>> protected_resource_metadata_url("https://mcp.example.com/mcp")
        'https://mcp.example.com/.well-known/oauth-protected-resource/mcp'
    """
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, PRM_WELL_KNOWN + path, parts.query, ""))


def resource_metadata_urls(server_url: str) -> list[str]:
    """Where a client looks for a server's protected-resource metadata when the challenge
    names none: the path-inserted URL first, then the root (MCP authorization spec).

    Example::

        >>> resource_metadata_urls("https://mcp.example.com/mcp")
        ['https://mcp.example.com/.well-known/oauth-protected-resource/mcp', \
'https://mcp.example.com/.well-known/oauth-protected-resource']
    """
    parts = urlsplit(server_url)
    root = urlunsplit((parts.scheme, parts.netloc, PRM_WELL_KNOWN, "", ""))
    first = protected_resource_metadata_url(urlunsplit((*parts[:3], "", "")))
    return [first] if first == root else [first, root]


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where an authorization server's metadata may live, in the order the MCP
    specification tries them: RFC 8414 then OpenID Connect discovery, path-inserted for
    an issuer with a path, then OpenID's path-appended form.

    Example::

        >>> authorization_server_metadata_urls("https://auth.example.com/tenant1")
        ['https://auth.example.com/.well-known/oauth-authorization-server/tenant1', \
'https://auth.example.com/.well-known/openid-configuration/tenant1', \
'https://auth.example.com/tenant1/.well-known/openid-configuration']
    """
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(location: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, location, "", ""))

    if not path:
        return [
            at("/.well-known/oauth-authorization-server"),
            at("/.well-known/openid-configuration"),
        ]
    return [
        at("/.well-known/oauth-authorization-server" + path),
        at("/.well-known/openid-configuration" + path),
        at(path + "/.well-known/openid-configuration"),
    ]


# --------------------------------------------------------------------------- challenges


def challenge(params: Mapping[str, str | None], scheme: str = "Bearer") -> str:
    """A ``WWW-Authenticate`` value: ``scheme`` (``Bearer``, or RFC 9449's ``DPoP``) and
    the parameters that are set, quoted.

    Example::

        >>> challenge({"resource_metadata": "https://x/m", "scope": "a b", "error": None})
        'Bearer resource_metadata="https://x/m", scope="a b"'
    """
    shown = []
    for name, value in params.items():
        if value is None:
            continue
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        shown.append(f'{name}="{escaped}"')
    return f"{scheme} " + ", ".join(shown) if shown else scheme


def parse_challenge(header: str | None, scheme: str = "bearer") -> dict[str, str] | None:
    """The parameters of the ``scheme`` challenge (``Bearer``, or ``DPoP`` of RFC 9449) in
    a ``WWW-Authenticate`` value (names lower-cased, quotes and escapes removed), or
    ``None`` when there is no such one.

    Example::

        >>> parse_challenge('Bearer error="insufficient_scope", scope="files:write"')
        {'error': 'insufficient_scope', 'scope': 'files:write'}
        >>> parse_challenge('DPoP error="use_dpop_nonce", algs="ES256"', "dpop")
        {'error': 'use_dpop_nonce', 'algs': 'ES256'}
    """
    if not header:
        return None
    match = re.search(rf"(?:^|,)\s*{re.escape(scheme)}(?:\s+|$)", header, re.IGNORECASE)
    if match is None:
        return None
    rest = header[match.end() :]
    params: dict[str, str] = {}
    position = 0
    while position < len(rest):
        found = _AUTH_PARAM.match(rest, position)
        if found is None or found.end() == position:
            break
        name, value = found.group(1).lower(), found.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params.setdefault(name, value)
        position = found.end()
    return params
