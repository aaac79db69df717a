"""Two ways to verify an OAuth access token: locally as a JWT, or by asking (RFC 7662).

Either is a ``verify(token) -> Principal | None`` for
:class:`~toolnexus.mcp.ProtectedResource`:

- :class:`JwtVerifier` checks a JWT's signature against the authorization server's keys
  (its JWKS, found through its metadata unless given) and its issuer, with PyJWT — the
  ``jwt`` extra (``pip install 'PyJWT[crypto]'``); signatures are never checked by hand
  here. Keys are fetched on first use, kept for ``jwks_ttl_ms``, and fetched again for an
  unknown key id at most once per ``jwks_refresh_ms``, so a flood of made-up key ids
  cannot turn into a flood of fetches;
- :class:`IntrospectionVerifier` asks the authorization server's introspection endpoint
  (standard library only) and keeps each answer for ``cache_ms`` (never past the token's
  expiry), keyed by a digest of the token, never the token.

Expiry and audience are left to the :class:`~toolnexus.mcp.ProtectedResource` (one place,
for every verifier): both verifiers report them on the principal.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..._log import LazyLogger
from ...errors import InvalidValueError, OAuthError
from .._shared._oauth_common import authorization_server_metadata_urls, exchange, form

if TYPE_CHECKING:
    from ..._principal import Principal

__all__ = ["IntrospectionVerifier", "JwtVerifier"]

_log = LazyLogger("mcp.auth")
_VERIFIED_S = 300.0  # how long a verified JWT is known by its digest (never past its exp)
_MAX_VERIFIED = 10_000
_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")


def _principal(claims: dict[str, Any]) -> Principal | None:
    """The principal of verified claims, or ``None`` when they cannot describe one (a scope
    with a space inside a list, say): a malformed token is a refused token, not a
    verifier that is down."""
    from ..._principal import Principal

    try:
        return Principal.from_claims(claims)
    except (ValueError, TypeError):
        return None


def _positive(label: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidValueError(f"{label} must be an int > 0 (milliseconds), got {value!r}")
    return value / 1000


class JwtVerifier:
    """Verify JWT access tokens locally against the authorization server's public keys.

    Args:
        issuer: the authorization server's issuer; a token's ``iss`` must equal it.
        jwks_url: where its keys are (JWKS); ``None``: the ``jwks_uri`` of its metadata
            (RFC 8414 or OpenID discovery), found on first use.
        algorithms: the signature algorithms accepted (asymmetric only by default;
            ``none`` and HMAC never, unless you list HMAC yourself).
        timeout_ms: the bound on each fetch of metadata or keys.
        jwks_ttl_ms: how long fetched keys are used before they are fetched again.
        jwks_refresh_ms: the least time between two fetches for an unknown key id.
        leeway_ms: how far ahead of this server's clock a token's ``nbf`` and ``iat``
            may be (the authorization server's clock runs a little fast): 60 s. (``exp``
            is judged by :class:`~toolnexus.mcp.ProtectedResource`, with its
            ``leeway_ms``.)

    A token whose ``exp``, ``nbf`` or ``iat`` is not a number, or whose ``scope`` is not
    a list of scopes (a string, or strings without spaces), is refused like a forged
    one: the server answers 401 ``invalid_token``.

    Needs the ``jwt`` extra (PyJWT with its crypto backend): without it, constructing one
    raises ``ImportError`` with the install command.

    Example::

        verifier = JwtVerifier("https://login.example.com")
        principal = verifier(token)    # a Principal, or None for a bad token
    """

    def __init__(
        self,
        issuer: str,
        *,
        jwks_url: str | None = None,
        algorithms: Sequence[str] = _ALGORITHMS,
        timeout_ms: int = 5_000,
        jwks_ttl_ms: int = 3_600_000,
        jwks_refresh_ms: int = 30_000,
        leeway_ms: int = 60_000,
    ) -> None:
        try:
            import jwt  # noqa: F401 - checked now: a server should not find out at the first call
            from jwt.algorithms import has_crypto
        except ImportError:
            from ..._extras import install_hint

            raise ImportError(
                "JwtVerifier needs PyJWT with its crypto backend: "
                + install_hint("jwt", "PyJWT[crypto]>=2.8")
            ) from None
        if not has_crypto:
            raise ImportError(
                "JwtVerifier needs PyJWT's crypto backend (cryptography): pip install "
                "'PyJWT[crypto]'"
            )
        if not isinstance(issuer, str) or not issuer.startswith(("https://", "http://")):
            raise InvalidValueError(f"issuer must be an http(s) URL, got {issuer!r}")
        if isinstance(algorithms, str) or not algorithms:
            raise InvalidValueError("algorithms must be a non-empty list, e.g. ['RS256']")
        if any(alg.lower() == "none" for alg in algorithms):
            raise InvalidValueError("algorithms must not include 'none'")
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.algorithms = tuple(algorithms)
        self._timeout_s = _positive("timeout_ms", timeout_ms)
        self._ttl_s = _positive("jwks_ttl_ms", jwks_ttl_ms)
        self._refresh_s = _positive("jwks_refresh_ms", jwks_refresh_ms)
        if isinstance(leeway_ms, bool) or not isinstance(leeway_ms, int) or leeway_ms < 0:
            raise InvalidValueError(
                f"leeway_ms must be an int >= 0 (milliseconds), got {leeway_ms!r}"
            )
        self._leeway_s = leeway_ms / 1000
        self._lock = threading.Lock()
        self._keys: dict[str, Any] = {}  # kid ("" for a key without one) -> PyJWK
        self._verified: dict[bytes, tuple[float, Principal]] = {}  # digest -> (until, who)
        self._fetched = 0.0  # time.monotonic() of the last good fetch (0: never)
        self._tried = 0.0  # ... and of the last attempt

    def __call__(self, token: str) -> Principal | None:
        """The principal of a valid token (signature, issuer, ``nbf``/``iat``), else
        ``None``. Raises :class:`~toolnexus.errors.OAuthError` only when the keys cannot be
        fetched (a protected server then answers 503).

        A token verified once is known by its SHA-256 digest for up to five minutes (never
        past its ``exp``): a client sends the same token with every request, and checking
        its signature again costs more than the rest of the request."""
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        now = time.time()
        held = self._verified.get(digest)
        if held is not None and held[0] > now:
            return held[1]
        principal = self._verify(token)
        if principal is not None:
            until = now + _VERIFIED_S
            if principal.expires_at is not None:
                until = min(until, principal.expires_at)
            with self._lock:
                if len(self._verified) >= _MAX_VERIFIED:
                    self._verified.clear()  # a flood of valid tokens: start over
                self._verified[digest] = (until, principal)
        return principal

    def _verify(self, token: str) -> Principal | None:
        """:meth:`__call__` without the memory of tokens verified before."""
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        kid = header.get("kid") or ""
        if not isinstance(kid, str) or header.get("alg") not in self.algorithms:
            return None
        key = self._key(kid)
        if key is None:
            return None
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[header["alg"]],
                issuer=self.issuer,
                leeway=self._leeway_s,  # for nbf and iat
                options={
                    "require": ["exp", "iss", "aud"],
                    "verify_exp": False,  # checked by ProtectedResource, with its leeway
                    "verify_aud": False,  # the same: one place decides the audience
                },
            )
        except jwt.InvalidTokenError:
            return None
        # PyJWT reads a time claim with int(), so "9999999999" passes its checks; and a
        # time that is not a number would never expire here.
        for name in ("exp", "nbf", "iat"):
            value = claims.get(name)
            if name in claims and (isinstance(value, bool) or not isinstance(value, (int, float))):
                return None
        return _principal(claims)

    def _key(self, kid: str) -> Any:
        with self._lock:
            now = time.monotonic()
            wanted = not self._fetched or now - self._fetched > self._ttl_s or kid not in self._keys
            if wanted and (not self._tried or now - self._tried >= self._refresh_s):
                self._tried = now
                try:
                    self._keys = self._fetch()
                    self._fetched = time.monotonic()
                except OAuthError as exc:
                    if not self._keys:
                        raise
                    _log.warning("toolnexus mcp auth: keeping the keys held: %s", exc.problem)
            elif wanted and not self._keys:
                raise OAuthError(
                    self.jwks_url or self.issuer,
                    f"the keys could not be fetched; trying again in {self._refresh_s:g} s",
                )
            key = self._keys.get(kid)
            if key is None and not kid and len(self._keys) == 1:
                key = next(iter(self._keys.values()))  # one key and a token naming none
            return key

    def _fetch(self) -> dict[str, Any]:
        import jwt

        url = self.jwks_url or self._discover()
        answer = exchange("GET", url, timeout=self._timeout_s)
        document = answer.json()
        if answer.status != 200 or not isinstance(document, dict):
            raise OAuthError(url, f"answered {answer.status}, not a key set (JWKS)")
        keys: dict[str, Any] = {}
        for entry in document.get("keys") or []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
                continue  # a key type this PyJWT cannot use: skip it, keep the others
            keys[str(entry.get("kid") or "")] = key
        return keys

    def _discover(self) -> str:
        for url in authorization_server_metadata_urls(self.issuer):
            answer = exchange("GET", url, timeout=self._timeout_s)
            document = answer.json() if answer.status == 200 else None
            if isinstance(document, dict) and isinstance(document.get("jwks_uri"), str):
                if document.get("issuer") != self.issuer:
                    raise OAuthError(
                        url, f"names the issuer {document.get('issuer')!r}, not {self.issuer!r}"
                    )
                self.jwks_url = document["jwks_uri"]
                return self.jwks_url
        raise OAuthError(
            self.issuer,
            "no jwks_uri in its metadata (looked at "
            f"{', '.join(authorization_server_metadata_urls(self.issuer))}); give jwks_url",
        )

    def __repr__(self) -> str:
        return f"<JwtVerifier {self.issuer} {len(self._keys)} key(s)>"


class IntrospectionVerifier:
    """Verify access tokens by asking the authorization server (RFC 7662 introspection).

    Args:
        url: the introspection endpoint.
        client_id, client_secret: this server's credentials there (HTTP Basic); ``None``
            for an endpoint that needs none.
        timeout_ms: the bound on one introspection request.
        cache_ms: how long an active answer is reused (never past the token's expiry);
            a revoked token keeps working for at most this long.
        max_cached: how many answers are kept at most.

    Example::

        verifier = IntrospectionVerifier(
            "https://login.example.com/oauth2/introspect",
            client_id="mcp-server", client_secret=os.environ["INTROSPECTION_SECRET"],
        )
    """

    def __init__(
        self,
        url: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        timeout_ms: int = 5_000,
        cache_ms: int = 60_000,
        max_cached: int = 10_000,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise InvalidValueError(f"url must be an http(s) URL, got {url!r}")
        if (client_id is None) != (client_secret is None):
            raise InvalidValueError("give both client_id and client_secret, or neither")
        self.url = url
        self._authorization: str | None = None
        if client_id is not None and client_secret is not None:
            pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
            self._authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        self._timeout_s = _positive("timeout_ms", timeout_ms)
        self._cache_s = _positive("cache_ms", cache_ms)
        if isinstance(max_cached, bool) or not isinstance(max_cached, int) or max_cached < 1:
            raise InvalidValueError(f"max_cached must be an int >= 1, got {max_cached!r}")
        self._max = max_cached
        self._cache: dict[str, tuple[float, Principal]] = {}
        self._lock = threading.Lock()

    def __call__(self, token: str) -> Principal | None:
        """The principal of an active token, else ``None``. Raises
        :class:`~toolnexus.errors.OAuthError` when the endpoint cannot be asked (a
        protected server then answers 503)."""

        digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
        now = time.time()
        with self._lock:
            held = self._cache.get(digest)
        if held is not None and held[0] > now:
            return held[1]
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if self._authorization is not None:
            headers["Authorization"] = self._authorization
        answer = exchange(
            "POST",
            self.url,
            body=form({"token": token, "token_type_hint": "access_token"}),
            headers=headers,
            timeout=self._timeout_s,
        )
        document = answer.json()
        if answer.status != 200 or not isinstance(document, dict):
            raise OAuthError(
                self.url, f"answered {answer.status}, not an introspection result (RFC 7662)"
            )
        if document.get("active") is not True:
            return None
        principal = _principal(document)
        if principal is None:
            return None
        until = now + self._cache_s
        if principal.expires_at is not None:
            until = min(until, principal.expires_at)
        with self._lock:
            if len(self._cache) >= self._max:
                for key in [k for k, (end, _) in self._cache.items() if end <= now]:
                    del self._cache[key]
                if len(self._cache) >= self._max:
                    self._cache.clear()
            self._cache[digest] = (until, principal)
        return principal

    def __repr__(self) -> str:
        return f"<IntrospectionVerifier {self.url}>"
