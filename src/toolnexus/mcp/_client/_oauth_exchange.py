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

Not wired into the gateway yet: the gateway's per-call upstream credentials live in the
gateway's own modules; this is the provider they call (``token_for``).
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections import OrderedDict
from urllib.parse import quote

from ...errors import OAuthError
from .._shared._oauth_common import exchange, form, shown

__all__ = ["TokenExchanger"]

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
