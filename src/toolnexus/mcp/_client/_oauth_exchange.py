"""RFC 8693 token exchange for a gateway: a caller's token traded for one per upstream.

A gateway that serves several upstream MCP servers must not pass a caller's own access
token through (the upstream would see a token issued for the gateway, and could replay it
against every other server that token is good for). :class:`TokenExchanger` trades it at
the authorization server for a token whose audience is the upstream (``resource``) and
whose scopes are what that upstream asks — one per caller and upstream, kept until it
expires, so a busy caller makes one exchange, not one per call.

A refused exchange is an :class:`~toolnexus.errors.OAuthError` naming the endpoint and the
server's reason, remembered for ``_REFUSED_S`` so a caller's flood of calls does not become
a flood of exchanges; nothing here logs or shows a token or the gateway's secret.

:class:`UpstreamExchange` is one upstream's use of it, as ``auth.exchange`` in
``mcp.json`` sets it up: a gateway's remote tool asks it for the ``Authorization`` of a
call made for the caller the server verified (``bound_token``), and sends the call with it
(``_http.on_behalf``) instead of the gateway's own credentials.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..._context import bound_principal, bound_token
from ...errors import OAuthError
from .._shared._oauth_common import exchange, form, shown

if TYPE_CHECKING:
    from ..._principal import Principal
    from ._oauth import OAuth, OAuthFlow

__all__ = ["ExchangeSettings", "TokenExchanger", "UpstreamExchange", "as_caller"]

_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
_ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
_MAX_KEPT = 1_000  # exchanged tokens (and refusals) kept at once
_MARGIN_S = 30.0  # an exchanged token is not handed out this close to its expiry
_REFUSED_S = 10.0  # a refused exchange is not asked again for this long
_DEFAULT_LIFETIME_S = 300.0  # an answer without expires_in: kept this long


class TokenExchanger:
    """Exchanges callers' access tokens at ``token_endpoint`` (RFC 8693), authenticating
    as the gateway (``client_id``, ``client_secret`` with HTTP Basic). Thread-safe.

    Example::

        exchanger = TokenExchanger("https://login.example.com/token", "gateway", secret)
        upstream_token = exchanger.token_for(
            caller_token, resource="https://crm.example.com/mcp", scope="crm:read"
        )
    """

    def __init__(
        self,
        token_endpoint: str,
        client_id: str,
        client_secret: str | None = None,
        *,
        timeout_ms: int = 10_000,
    ) -> None:
        self.token_endpoint = token_endpoint
        self.client_id = client_id
        self._secret = client_secret
        self._timeout_s = timeout_ms / 1000
        self._lock = threading.Lock()
        self._kept: OrderedDict[bytes, tuple[float, str | OAuthError]] = OrderedDict()
        self._running: dict[bytes, threading.Lock] = {}  # one exchange per key at a time

    def token_for(self, subject_token: str, *, resource: str, scope: str = "") -> str:
        """A token for ``resource`` with ``scope``, exchanged for ``subject_token`` (the
        caller's), from memory while it is good. Raises :class:`OAuthError` when the
        authorization server refuses (the same answer for ``_REFUSED_S`` after)."""
        key = hashlib.sha256("\0".join((subject_token, resource, scope)).encode()).digest()
        with self._lock:
            flight = self._running.setdefault(key, threading.Lock())
        with flight:  # a second call for the same caller and upstream waits for the first
            found = self._found(key)
            if found is None:
                found = self._exchange(subject_token, resource, scope)
                with self._lock:
                    self._keep(key, found)
            with self._lock:
                self._running.pop(key, None)
        if isinstance(found[1], OAuthError):
            raise found[1]
        return found[1]

    def _found(self, key: bytes) -> tuple[float, str | OAuthError] | None:
        with self._lock:
            held = self._kept.get(key)
            if held is None or held[0] <= time.monotonic():
                self._kept.pop(key, None)
                return None
            return held

    def _keep(self, key: bytes, found: tuple[float, str | OAuthError]) -> None:
        self._kept[key] = found
        self._kept.move_to_end(key)
        while len(self._kept) > _MAX_KEPT:
            self._kept.popitem(last=False)

    def _exchange(
        self, subject_token: str, resource: str, scope: str
    ) -> tuple[float, str | OAuthError]:
        fields = {
            "grant_type": _GRANT,
            "subject_token": subject_token,
            "subject_token_type": _ACCESS_TOKEN,
            "requested_token_type": _ACCESS_TOKEN,
            "resource": resource,
            "scope": scope or None,
        }
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if self._secret is not None:
            pair = f"{quote(self.client_id, safe='')}:{quote(self._secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            fields["client_id"] = self.client_id
        now = time.monotonic()
        try:
            answer = exchange(
                "POST",
                self.token_endpoint,
                body=form(fields),
                headers=headers,
                timeout=self._timeout_s,
                deadline=now + self._timeout_s,
            )
        except OAuthError as exc:
            return now + _REFUSED_S, exc
        document = answer.json()
        token = document.get("access_token") if isinstance(document, dict) else None
        if answer.status != 200 or not isinstance(token, str) or not token:
            error = document.get("error") if isinstance(document, dict) else None
            return now + _REFUSED_S, OAuthError(
                shown(self.token_endpoint),
                f"the token exchange for {resource} was refused: "
                f"{error if isinstance(error, str) else f'HTTP {answer.status}'}; not retried "
                f"for {_REFUSED_S:.0f} s",
            )
        lifetime = document.get("expires_in")
        if isinstance(lifetime, bool) or not isinstance(lifetime, (int, float)) or lifetime <= 0:
            lifetime = _DEFAULT_LIFETIME_S
        return now + max(0.0, min(float(lifetime), 86_400.0) - _MARGIN_S), token

    def __repr__(self) -> str:
        return f"<TokenExchanger {shown(self.token_endpoint)} as {self.client_id}>"


@dataclass(frozen=True)
class ExchangeSettings:
    """One upstream's ``auth.exchange`` in ``mcp.json``; ``None``: from the gateway's own
    sign-in to that upstream (its token endpoint, the resource and the scopes the
    upstream's protected-resource metadata names, its client)."""

    token_endpoint: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    resource: str | None = None
    scope: str | None = None

    def __repr__(self) -> str:  # the secret stays out of every log line
        shown_secret = "***" if self.client_secret is not None else None
        return (
            f"ExchangeSettings(token_endpoint={self.token_endpoint!r}, "
            f"client_id={self.client_id!r}, client_secret={shown_secret!r}, "
            f"resource={self.resource!r}, scope={self.scope!r})"
        )


class UpstreamExchange:
    """The ``Authorization`` of a call to upstream ``server`` (at ``url``) made for the
    caller the serving side verified: that caller's token exchanged for one scoped to the
    upstream. ``oauth``/``flow``: the gateway's own sign-in to the upstream (``None``
    without one), which fills in what ``settings`` leaves out.

    Example::

        exchange = UpstreamExchange("crm", "https://crm.example.com/mcp", ExchangeSettings(
            token_endpoint="https://login.example.com/token", client_id="gateway",
            client_secret=secret, scope="crm:read"))
        authorization = exchange.authorization()  # "Bearer …", or raises OAuthError
    """

    def __init__(
        self,
        server: str,
        url: str,
        settings: ExchangeSettings,
        oauth: OAuth | None = None,
        flow: OAuthFlow | None = None,
    ) -> None:
        self.server = server
        self.url = url
        self.settings = settings
        self._oauth = oauth
        self._flow = flow
        self._lock = threading.Lock()
        self._exchangers: dict[tuple[str, str], TokenExchanger] = {}

    def authorization(self) -> str:
        """``Bearer <token>`` for this call's caller. Raises :class:`OAuthError` when the
        call has no verified caller, when it is not known where to exchange, or when the
        authorization server refuses (then the same answer for a while: no storm)."""
        held = bound_token.get()
        if held is None:
            raise OAuthError(
                self.url,
                f"MCP server {self.server} is called with each caller's exchanged token "
                "(auth.exchange in mcp.json), and this call has no caller signed in with "
                "OAuth: serve the gateway over HTTP with OAuth (ProtectedResource), or drop "
                "auth.exchange to call it with the gateway's own credentials",
            )
        endpoint, resource, scope = self._target()
        exchanger = self._exchanger(endpoint)
        scope = _narrowed(scope, bound_principal.get())
        return "Bearer " + exchanger.token_for(held.token, resource=resource, scope=scope)

    def _target(self) -> tuple[str, str, str]:
        """The token endpoint, resource and scope: the settings', else the sign-in's."""
        settings = self.settings
        found: tuple[str | None, str | None, str | None] = (None, None, None)
        if self._flow is not None:
            found = self._flow.exchange_target()
        endpoint = settings.token_endpoint or found[0]
        if endpoint is None:
            raise OAuthError(
                self.url,
                f"MCP server {self.server}: auth.exchange names no tokenEndpoint and the "
                "gateway has not signed in to the server to find one: give "
                "auth.exchange.tokenEndpoint",
            )
        resource = settings.resource or found[1] or self.url
        scope = settings.scope if settings.scope is not None else (found[2] or "")
        return endpoint, resource, scope

    def _exchanger(self, endpoint: str) -> TokenExchanger:
        oauth = self._oauth
        client_id = self.settings.client_id or (oauth.client_id if oauth is not None else None)
        secret = self.settings.client_secret
        if secret is None and self.settings.client_id is None and oauth is not None:
            secret = oauth.client_secret  # the sign-in's client, with its own secret
        if client_id is None:
            raise OAuthError(
                endpoint,
                f"MCP server {self.server}: auth.exchange needs the gateway's client: give "
                "auth.exchange.clientId (and clientSecret), or auth.clientId",
            )
        with self._lock:
            key = (endpoint, client_id)
            found = self._exchangers.get(key)
            if found is None:
                found = self._exchangers[key] = TokenExchanger(endpoint, client_id, secret)
            return found

    def __repr__(self) -> str:
        return f"<UpstreamExchange for MCP server {self.server!r}>"


def _narrowed(scope: str, principal: Principal | None) -> str:
    """The scopes of ``scope`` (what the upstream asks) that the caller holds: a caller
    never asks an upstream for more than it was granted. A caller that holds none of them
    (its token's scopes name the gateway's, not the upstream's) asks for them all, and the
    authorization server decides."""
    held = principal.scopes if principal is not None else frozenset()
    kept = [each for each in scope.split() if each in held]
    return " ".join(kept) if kept else scope


@contextlib.contextmanager
def as_caller(exchange: UpstreamExchange | None) -> Iterator[None]:
    """Within: requests to the upstream go with the caller's exchanged token (``None``:
    with the client's own credentials, as without ``auth.exchange``). Raises
    :class:`OAuthError` on entering when there is no token to send.

    Example::

        with as_caller(source.exchange_of("crm")):
            contents = client.read_resource("crm://accounts/1")
    """
    if exchange is None:
        yield
        return
    from ._http import on_behalf

    mark = on_behalf.set(exchange.authorization())
    try:
        yield
    finally:
        on_behalf.reset(mark)
