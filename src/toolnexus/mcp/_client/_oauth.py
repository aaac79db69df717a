"""The MCP client as an OAuth 2.1 client: :class:`OAuth` (the settings) and the flow.

What the MCP authorization specification asks of a client, for the Streamable HTTP
transport (:mod:`._client_http` calls in here, and nowhere else):

- **discovery from the 401**: the protected-resource metadata (RFC 9728: the challenge's
  ``resource_metadata``, else the well-known URLs, path first), the resource it names
  checked against the server's URL, then the authorization server's metadata (RFC 8414,
  OpenID discovery, in the specification's order) whose ``issuer`` must be exactly the one
  asked for; a server with no metadata at all gets the 2025-03-26 fallbacks;
- **client identification**: a pre-registered client id, a Client ID Metadata Document
  (when the authorization server supports them), or dynamic registration (RFC 7591) —
  bound to the authorization server that issued it, so a server that moves to another one
  gets a new registration (SEP-2352), never the old credentials;
- **authorization code with PKCE S256**, the ``resource`` (RFC 8707) exactly as the
  metadata publishes it, ``state``, and the ``iss`` of the answer checked (RFC 9207);
- **scopes**: the challenge's, else the metadata's ``scopes_supported``, else none;
  ``offline_access`` when the authorization server offers it; a step-up on
  ``403 insufficient_scope`` asks for the union of what it had and what is missing, once
  per request and never when the token already has it;
- **tokens**: sent on every request, refreshed before they expire and on a 401 — one
  refresh or authorization at a time per server, the others wait and use its result — and
  kept in a :class:`~toolnexus.mcp.TokenStore`; a refresh token that no longer works means
  a new authorization, asked once. A refresh re-reads the record under the store's
  ``locked(key)`` (where it has one), so processes sharing a store refresh once;
- **where a server may send the client**: every URL it names (resource metadata, the
  authorization server, its endpoints) is ``https`` (``http`` only to loopback, for a
  server on loopback), and not link-local nor — for a public server — private or
  loopback, unless ``OAuth(allow_private_network=True)``; the address checked is the one
  connected to;
- **hostile answers**: token answers are checked (a header-safe access token, a bounded
  ``expires_in``), and ``timeout_ms`` bounds a whole refresh or sign-in, not each read.

The user's part — opening the authorization URL and coming back — is a
``Request("authorization", url=…)``: ``OAuth(ask=...)`` answers it (a host's UI; the
command line prints the URL and waits for the redirect on a loopback port), else a tool
call hands it back pending like any other question. Tokens, codes, verifiers and secrets
are never logged.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

from ..._frozen import sealed
from ..._log import LazyLogger
from ..._suspension import Answer, Request
from ...errors import InvalidTypeError, InvalidValueError, OAuthError
from .._shared._oauth_common import (
    HttpAnswer,
    authorization_server_metadata_urls,
    exchange,
    form,
    parse_challenge,
    resource_metadata_urls,
    shown,
)
from ._oauth_grants import (
    CLIENT_ASSERTION_TYPE,
    GRANTS,
    ID_JAG,
    ID_TOKEN,
    JWT_BEARER,
    TOKEN_EXCHANGE,
    _GrantProblem,
    client_assertion,
    read_secret,
)

if TYPE_CHECKING:
    from .._shared._dpop import DpopKey
    from ._tokens import TokenStore

__all__ = ["OAuth", "OAuthFlow", "OpenApiOAuth"]

_log = LazyLogger("mcp.auth")  # the package's: it never prints on its own

AUTH_METHODS = (  # token_endpoint_auth_method: what OAuth and mcp.json accept
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
    "none",
)
_REFRESH_MARGIN_S = 30.0  # refresh this long before expiry (at most a tenth of the lifetime)
_MAX_PENDING = 64  # authorizations handed back pending and not answered yet
_ENDPOINTS = {
    "authorization_endpoint": "authorization endpoint",
    "token_endpoint": "token endpoint",
    "registration_endpoint": "registration endpoint",
}
_LOCAL_KINDS = {"public", "private", "loopback"}  # what a local server may name
_MAX_LIFETIME_S = 10 * 366 * 24 * 3600  # an expires_in beyond ten years is not one
# RFC 6750 §2.1: what an Authorization: Bearer value may hold; RFC 6749 A.17: a refresh token.
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_VSCHARS = re.compile(r"[\x20-\x7e]+")


@sealed
@dataclass(frozen=True, slots=True)
class OAuth:
    """How an :class:`~toolnexus.mcp.McpClient` signs in to an OAuth-protected server:
    ``McpClient(url=..., auth=OAuth(...))``, or ``"auth": "oauth"`` in ``mcp.json``.

    Every field is optional: with none, the client discovers the authorization server
    from the server's ``401``, registers itself (dynamic registration or a Client ID
    Metadata Document), and asks for the scopes the server names.

    Attributes:
        client_id: a client registered with the authorization server beforehand (then
            no registration happens).
        client_secret: its secret, for a confidential client (sent as the authorization
            server prefers: HTTP Basic or in the body).
        scopes: scopes to ask for, besides those the server names (``None``: only those).
        redirect_uri: where the authorization server sends the user back — where your
            ``ask`` receives the redirect (``http://127.0.0.1:PORT/callback`` for a
            desktop or command-line app). Needed when a sign-in is needed.
        client_metadata_url: an ``https`` URL of your Client ID Metadata Document, used
            as the client id where the authorization server supports them.
        client_name: the name the user sees on the consent page (registration).
        token_endpoint_auth_method: ``client_secret_basic``, ``client_secret_post`` or
            ``none`` to prefer (``None``: what the authorization server supports).
        token_store: where tokens and registrations are kept (``None``: in memory, for
            this client's life) — e.g. :class:`~toolnexus.mcp.FileTokenStore`.
        ask: ``ask(request) -> Answer`` shows the user ``request.url`` and returns once
            they are back: ``Answer(request.id, True, {"url": redirect_url})`` (or the
            redirect's ``code``, ``state`` and ``iss`` as data); ``ok=False`` declines.
            ``None``: a tool call that needs a sign-in returns it pending instead.
        allow_private_network: let a server on the internet send this client to private,
            loopback and link-local addresses (your intranet's authorization server).
            Without it, such a server may only name public ``https`` addresses; a
            server on loopback or a private network may name private ones (and a
            loopback one plain ``http`` on loopback). See ``docs/auth.md``.
        timeout_ms: the bound on a whole refresh or sign-in's talk with the servers —
            discovery, registration and the token request together (the user's part
            aside); a server that answers slowly, or a byte at a time, is cut off there.
        grant: how tokens are got. ``"authorization_code"`` (the default): a person
            signs in. With nobody at a browser: ``"client_credentials"`` (the client's
            own id and secret or private key), ``"jwt_bearer"`` (RFC 7523: a workload
            identity's JWT, from ``assertion_file``/``assertion``), ``"id_jag"``
            (enterprise-managed authorization: the user's ID token, from
            ``assertion_file``/``assertion``, exchanged at ``idp_token_endpoint`` for an
            identity assertion grant that the authorization server takes).
        private_key_file: a PEM private key file: the client authenticates with
            ``private_key_jwt`` (RFC 7523), a JWT signed with it, instead of a secret.
            Read at each use, so a rotated key is picked up.
        private_key: instead of the file, ``fn() -> str | bytes`` giving the PEM (a
            secrets manager, a keyring).
        signing_algorithm: the JWS algorithm for ``private_key_jwt`` (``None``: by the
            key: ``RS256``, ``ES256``/``ES384``/``ES512``, ``EdDSA``).
        assertion_file: the file holding the assertion for ``jwt_bearer`` (a workload
            identity token) or ``id_jag`` (the user's ID token); read at each use.
        assertion: instead of the file, ``fn() -> str`` giving it.
        idp_token_endpoint: for ``id_jag``: the enterprise identity provider's token
            endpoint, where the ID token is exchanged (RFC 8693).
        idp_client_id: for ``id_jag``: this client's id at the identity provider.
        idp_client_secret: for ``id_jag``: its secret there, if it has one.
        dpop: bind the tokens to a key of this client's (DPoP, RFC 9449): every token
            request and every request to the server carries a fresh proof signed with it;
            a stolen token is useless without the key. The key is kept in the token
            store with the tokens. Needs the ``jwt`` extra.

    Example::

        from toolnexus.mcp import FileTokenStore, McpClient, OAuth

        auth = OAuth(
            redirect_uri="http://127.0.0.1:8976/callback",
            ask=show_and_wait,   # your UI: open request.url, return the redirect
            token_store=FileTokenStore("~/.config/my-agent/tokens.json"),
        )
        client = McpClient(url="https://mcp.example.com/mcp", auth=auth)
    """

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)  # (never shown)
    scopes: Sequence[str] | None = None
    redirect_uri: str | None = None
    client_metadata_url: str | None = None
    client_name: str = "toolnexus"
    token_endpoint_auth_method: str | None = None
    token_store: TokenStore | None = None
    ask: Callable[[Request], Answer] | None = None
    allow_private_network: bool = False
    timeout_ms: int = 30_000
    grant: str = "authorization_code"
    private_key_file: str | None = None
    private_key: Callable[[], str | bytes] | None = None
    signing_algorithm: str | None = None
    assertion_file: str | None = None
    assertion: Callable[[], str] | None = None
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: str | None = field(default=None, repr=False)
    dpop: bool = False

    def __post_init__(self) -> None:
        for label in (
            "client_id",
            "client_secret",
            "redirect_uri",
            "client_metadata_url",
            "private_key_file",
            "signing_algorithm",
            "assertion_file",
            "idp_token_endpoint",
            "idp_client_id",
            "idp_client_secret",
        ):
            value = getattr(self, label)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidValueError(f"OAuth.{label} must be a non-empty str or None")
        if self.client_secret is not None and self.client_id is None:
            raise InvalidValueError("OAuth.client_secret needs the client_id it belongs to")
        if not isinstance(self.client_name, str) or not self.client_name:
            raise InvalidValueError("OAuth.client_name must be a non-empty str")
        if self.scopes is not None:
            scopes = self.scopes.split() if isinstance(self.scopes, str) else list(self.scopes)
            if not all(isinstance(s, str) and s and " " not in s for s in scopes):
                raise InvalidValueError("OAuth.scopes must be scope names without spaces")
            object.__setattr__(self, "scopes", tuple(scopes))
        if self.redirect_uri is not None:
            parts = urlsplit(self.redirect_uri)
            if not parts.scheme or parts.fragment:
                raise InvalidValueError(
                    "OAuth.redirect_uri must be an absolute URL without a fragment, e.g. "
                    f"'http://127.0.0.1:8976/callback', got {self.redirect_uri!r}"
                )
        if self.client_metadata_url is not None:
            parts = urlsplit(self.client_metadata_url)
            if parts.scheme != "https" or not parts.netloc or parts.path in ("", "/"):
                raise InvalidValueError(
                    "OAuth.client_metadata_url must be an https URL with a path (where your "
                    f"Client ID Metadata Document is), got {self.client_metadata_url!r}"
                )
        method = self.token_endpoint_auth_method
        if method is not None and method not in AUTH_METHODS:
            raise InvalidValueError(
                f"OAuth.token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}, "
                f"got {method!r}"
            )
        store = self.token_store
        if store is not None and not all(
            callable(getattr(store, name, None)) for name in ("load", "save", "delete")
        ):
            raise InvalidTypeError(
                "OAuth.token_store must have load, save and delete methods (a TokenStore), "
                f"got {type(store).__name__}"
            )
        if self.ask is not None and not callable(self.ask):
            raise InvalidTypeError(f"OAuth.ask must be callable, got {type(self.ask).__name__}")
        if not isinstance(self.allow_private_network, bool):
            raise InvalidTypeError(
                "OAuth.allow_private_network must be True or False, got "
                f"{self.allow_private_network!r}"
            )
        timeout = self.timeout_ms
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
            raise InvalidValueError(f"OAuth.timeout_ms must be an int > 0, got {timeout!r}")
        self._check_grant()

    def _check_grant(self) -> None:
        """The machine grants' settings fit together (raises naming what is missing)."""
        if self.grant not in GRANTS:
            raise InvalidValueError(
                f"OAuth.grant must be one of {', '.join(GRANTS)}, got {self.grant!r}"
            )
        for label in ("private_key", "assertion"):
            value = getattr(self, label)
            if value is not None and not callable(value):
                raise InvalidTypeError(
                    f"OAuth.{label} must be a function returning the text (or use "
                    f"{label}_file=PATH), got {type(value).__name__}"
                )
            if value is not None and getattr(self, label + "_file") is not None:
                raise InvalidValueError(f"OAuth: give {label}_file or {label}, not both")
        keyed = self.private_key_file is not None or self.private_key is not None
        if keyed and self.client_id is None:
            raise InvalidValueError(
                "OAuth.private_key_file/private_key signs as a registered client: give its "
                "client_id too"
            )
        if keyed and self.client_secret is not None:
            raise InvalidValueError("OAuth: give client_secret or a private key, not both")
        method = self.token_endpoint_auth_method
        if method == "private_key_jwt" and not keyed:
            raise InvalidValueError(
                "OAuth.token_endpoint_auth_method 'private_key_jwt' needs the key: "
                "private_key_file=PATH or private_key=fn"
            )
        if not isinstance(self.dpop, bool):
            raise InvalidTypeError(f"OAuth.dpop must be True or False, got {self.dpop!r}")
        if self.dpop or keyed:  # signing needs the jwt extra: say so now, not mid-request
            from .._shared._dpop import require_jwt

            require_jwt("OAuth(dpop=True)" if self.dpop else "OAuth's private_key_jwt")
        asserted = self.assertion_file is not None or self.assertion is not None
        grant = self.grant
        if grant == "client_credentials" and (
            self.client_id is None or (self.client_secret is None and not keyed)
        ):
            raise InvalidValueError(
                "OAuth(grant='client_credentials') needs the client's registered id and its "
                "secret or private key: client_id=..., and client_secret=... or "
                "private_key_file=PATH"
            )
        if grant in ("jwt_bearer", "id_jag") and not asserted:
            what = "workload identity token" if grant == "jwt_bearer" else "user's ID token"
            raise InvalidValueError(
                f"OAuth(grant={grant!r}) needs the {what}: assertion_file=PATH or assertion=fn"
            )
        if grant == "id_jag" and (self.idp_token_endpoint is None or self.client_id is None):
            raise InvalidValueError(
                "OAuth(grant='id_jag') needs idp_token_endpoint (the identity provider's "
                "token endpoint, where the ID token is exchanged) and client_id (this "
                "client's id at the MCP server's authorization server)"
            )
        if self.idp_token_endpoint is not None:
            _check_endpoint_setting("OAuth.idp_token_endpoint", self.idp_token_endpoint)
        if grant != "id_jag" and (
            self.idp_token_endpoint is not None or self.idp_client_id is not None
        ):
            raise InvalidValueError(
                "OAuth.idp_token_endpoint and idp_client_id are for grant='id_jag'"
            )
        if grant not in ("jwt_bearer", "id_jag") and asserted:
            raise InvalidValueError(
                "OAuth.assertion_file/assertion are for grant='jwt_bearer' or 'id_jag'"
            )


def loopback_host(host: str) -> bool:
    """Whether ``host`` (a URL's host name, lower case) is this machine's loopback —
    ``localhost``, ``127.0.0.0/8``, ``::1`` — the one place plain ``http`` may carry a
    secret (a server of your own on this machine).

    Example::

        >>> loopback_host("127.0.0.1"), loopback_host("127.evil.example")
        (True, False)
    """
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return False


def _check_endpoint_setting(label: str, url: str) -> None:
    """An endpoint the user sets (not one a server names): an ``https`` URL with a host
    and no fragment, or plain ``http`` to loopback (a server of your own on this machine),
    as the flow allows for a server's endpoints. Raises naming ``label``."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    loopback = loopback_host(host)
    if scheme not in ("http", "https") or not host or parts.fragment:
        raise InvalidValueError(
            f"{label} must be an https URL with a host and no fragment, e.g. "
            f"'https://idp.example.com/oauth2/token', got {url!r}"
        )
    if scheme == "http" and not loopback:
        raise InvalidValueError(
            f"{label} must be an https URL (plain http only to loopback: localhost, "
            f"127.0.0.1 or [::1]); got {url!r} — the ID token and any client secret would "
            "cross the network in clear"
        )


# --------------------------------------------------------------------------- the flow


class _Failed(Exception):
    """The flow cannot get a usable token: ``problem`` says why (for the user)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class _NeedsUser(Exception):
    """A sign-in is needed and nobody is there to ask: the request to hand back."""

    def __init__(self, request: Request) -> None:
        super().__init__(request.prompt)
        self.request = request


class Attempt:
    """What one HTTP request already tried, so that no request loops: at most one switch
    to a token another thread got, one refresh, one authorization, one step-up."""

    __slots__ = ("authorized", "nonce_retried", "refreshed", "stepped_up", "switched")

    def __init__(self) -> None:
        self.switched = self.refreshed = self.authorized = self.stepped_up = False
        self.nonce_retried = False  # one retry with the server's DPoP nonce, never a loop


class _Pending:
    """An authorization asked and not answered yet: what finishing it needs."""

    __slots__ = (
        "client",
        "created",
        "issuer",
        "metadata",
        "request",
        "resource",
        "scope",
        "state",
        "verifier",
    )

    def __init__(
        self,
        request: Request,
        client: dict[str, Any],
        metadata: dict[str, Any],
        issuer: str,
        resource: str,
        scope: str,
        state: str,
        verifier: str,
    ) -> None:
        self.request = request
        self.client = client
        self.metadata = metadata
        self.issuer = issuer
        self.resource = resource
        self.scope = scope
        self.state = state
        self.verifier = verifier
        self.created = time.monotonic()


class OAuthFlow:
    """One server's OAuth state for one client: the tokens it holds, and the one place
    that refreshes or authorizes them (a lock: one at a time; thread-safe).

    The transport calls :meth:`header` for each request it sends, and :meth:`challenged`
    when the answer is ``401`` (or ``403``); the client calls :meth:`owns` and
    :meth:`complete` for an answer to an authorization it handed back pending.
    """

    def __init__(self, config: OAuth, server_url: str, name: str) -> None:
        from ._tokens import MemoryTokenStore

        self.config = config
        self.server_url = server_url
        self.name = name
        self.store: TokenStore = (
            config.token_store if config.token_store is not None else MemoryTokenStore()
        )
        self.key = server_url
        self._timeout_s = config.timeout_ms / 1000
        self._lock = threading.Lock()  # one refresh or authorization at a time
        self._record: dict[str, Any] | None = None  # as saved (tokens, client, issuer)
        self._metadata: dict[str, Any] | None = None  # the authorization server's
        self._pending: dict[str, _Pending] = {}
        self._store_problem: str | None = None  # why the token store could not be read
        self._unsaved = False  # the last save failed: the record here is the only copy
        self._deadline = 0.0  # when the current refresh or sign-in runs out of time
        self._server_addresses: set[str] | None = None  # the kinds of the MCP server's
        self._dpop_key: DpopKey | None = None  # DPoP: this client's key (in the record too)
        self._dpop_pem: Any = None  # ... as the record held it when it was read
        self._as_nonce: str | None = None  # the authorization server's latest DPoP nonce
        self._rs_nonce: str | None = None  # the MCP server's

    # ------------------------------------------------------------------ sending

    def header(self) -> str | None:
        """The ``Authorization`` value for the next request (``None``: no token yet),
        refreshing a token that is about to expire first. Never raises."""
        tokens = self._tokens()
        if tokens is not None and tokens.get("refresh_token") and self._expiring(tokens):
            with self._lock, self._store_held():
                self._reread()  # another process may have refreshed already: use its tokens
                tokens = self._tokens()
                if tokens is not None and tokens.get("refresh_token") and self._expiring(tokens):
                    self._refresh(tokens)
                    tokens = self._tokens()
        return None if tokens is None else _authorization(tokens)

    def exchange_target(self) -> tuple[str | None, str | None, str | None]:
        """The token endpoint this flow got its token at, the resource and the scopes it
        asked for (the server's protected-resource metadata's, unless configured): what a
        gateway's token exchange for this server uses where ``mcp.json`` leaves them out;
        ``None`` for what is not known yet."""
        record = self._load()
        found = [record.get(key) for key in ("token_endpoint", "resource", "scope")]
        endpoint, resource, scope = (value if isinstance(value, str) else None for value in found)
        return endpoint, resource, scope

    def sign(self, method: str, url: str, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` for one request as it is sent: with a DPoP-bound token, a fresh
        ``DPoP`` proof for this method and URL, the token's hash and the server's latest
        nonce (RFC 9449 §7) — made anew for each send, so no proof is ever sent twice."""
        out = dict(headers)
        authorization = out.get("Authorization", "")
        if not authorization.startswith("DPoP "):
            out.pop("DPoP", None)
            return out
        key = self._dpop_key
        if key is None:
            return out  # (never: a DPoP token is only kept with its key)
        out["DPoP"] = key.proof(method, url, access_token=authorization[5:], nonce=self._rs_nonce)
        return out

    def challenged(
        self,
        status: int,
        www_authenticate: str | None,
        sent: str | None,
        attempt: Attempt,
        nonce: str | None = None,
    ) -> bool | str | Request:
        """What to do about a ``401``/``403`` answer to a request that carried ``sent``:
        ``True``: send it again (a usable token is held now); ``False``: not an OAuth
        matter (a 403 for another reason) — the answer stands; a ``str``: why no token
        will do (say it and stop); a :class:`~toolnexus.Request`: a sign-in is needed and
        no ``ask`` was given — hand it back. ``nonce``: the answer's ``DPoP-Nonce``."""
        dpop = parse_challenge(www_authenticate, "dpop") or {}
        challenge = {**dpop, **(parse_challenge(www_authenticate) or {})}
        if status == 401 and dpop.get("error") == "use_dpop_nonce":
            if nonce is None or not _VSCHARS.fullmatch(nonce) or attempt.nonce_retried:
                return (
                    f"MCP server {self.name} asked for a DPoP nonce again (use_dpop_nonce) "
                    "right after this client sent the one it gave"
                    + ("" if nonce else ", or gave none (no DPoP-Nonce header)")
                    + "; not retrying (no loop): check the server's DPoP nonce handling"
                )
            attempt.nonce_retried = True
            self._rs_nonce = nonce
            return True
        try:
            if status == 403:
                if challenge.get("error") != "insufficient_scope":
                    return False
                if attempt.stepped_up:
                    return self._refused_again(challenge)
                attempt.stepped_up = True
                with self._lock:
                    wanted = set((challenge.get("scope") or "").split())
                    if wanted and wanted <= self._granted():
                        return self._refused_again(challenge)
                    self._authorize(challenge, step_up=True)
                return True
            if status != 401:
                return False
            with self._lock:
                with self._store_held():  # re-read and refresh: one process at a time
                    current = self._current_header(reload=True)
                    if current is not None and current != sent and not attempt.switched:
                        attempt.switched = True  # another thread (or process) got a new one
                        return True
                    tokens = self._tokens()
                    if tokens is not None and tokens.get("refresh_token") and not attempt.refreshed:
                        attempt.refreshed = True
                        if self._refresh(tokens):
                            return True
                if attempt.authorized:
                    return (
                        f"MCP server {self.name} refused the access token it just authorized "
                        f"(401{_described(challenge)}); check that its authorization server "
                        "issues tokens for it"
                    )
                attempt.authorized = True
                self._authorize(challenge, step_up=False)
            return True
        except _NeedsUser as needs:
            return needs.request
        except _Failed as failed:
            return failed.problem
        except OAuthError as exc:
            return f"authorization with MCP server {self.name} failed: {exc}"

    def token_header(self, token_endpoint: str, scope: str = "") -> str:
        """The ``Authorization`` value for a resource whose token endpoint is known
        beforehand — an OpenAPI ``oauth2`` scheme's ``tokenUrl``, with no MCP discovery:
        the token held while it is not about to expire, else one refreshed, else one got
        anew with the configured machine grant (``OAuth(grant="client_credentials")``
        with a secret or ``private_key_jwt``; ``jwt_bearer``). The endpoint is checked as
        a discovered one is (https, or loopback http for a loopback resource). Raises
        :class:`~toolnexus.errors.OAuthError` saying what failed (never a secret).

        Example::

            flow = OAuthFlow(oauth, "https://api.example.com", "example")
            headers["Authorization"] = flow.token_header("https://auth.example.com/token")
        """
        if self.config.grant not in ("client_credentials", "jwt_bearer") or self.config.dpop:
            raise OAuthError(
                token_endpoint,
                "a token endpoint given directly takes OAuth(grant='client_credentials') or "
                "'jwt_bearer', without dpop (a sign-in or a DPoP-bound token needs an MCP "
                "server's discovery); pass a callable that returns a token instead",
            )
        with self._lock, self._store_held():
            self._reread()  # another process may hold a newer token
            tokens = self._tokens()
            if tokens is not None and not self._expiring(tokens):
                return _authorization(tokens)
            if tokens is not None and tokens.get("refresh_token") and self._refresh(tokens):
                refreshed = self._tokens()
                if refreshed is not None:
                    return _authorization(refreshed)
            try:
                self._check_target(token_endpoint, "token endpoint")
                self._start_clock()
                metadata = {"token_endpoint": token_endpoint}
                self._machine_grant(metadata, token_endpoint, None, scope)
            except _Failed as failed:
                raise OAuthError(token_endpoint, failed.problem) from None
            tokens = self._tokens()
            if tokens is None:  # (never: _keep_tokens raises for a token it cannot keep)
                raise OAuthError(token_endpoint, "no usable access token was issued")
            return _authorization(tokens)

    def _refused_again(self, challenge: Mapping[str, str]) -> str:
        return (
            f"MCP server {self.name} still refuses: the access token lacks the scope(s) "
            f"{challenge.get('scope') or '(unnamed)'}{_described(challenge)}, and a new "
            "authorization did not give them; ask its administrator for access"
        )

    # ------------------------------------------------------------------ the record

    def _load(self) -> dict[str, Any]:
        if self._record is None:
            try:
                record = self.store.load(self.key)
                self._store_problem = None
            except Exception as exc:  # a store of the caller's: never a crash here
                _log.warning("MCP server %s: the token store failed to load: %s", self.name, exc)
                self._store_problem = str(exc)
                record = None
            self._record = record if isinstance(record, dict) else {}
        return self._record

    def _save(self) -> None:
        record = self._load()
        try:
            self.store.save(self.key, record)
            self._unsaved = False
        except Exception as exc:
            self._unsaved = True
            _log.warning("MCP server %s: the token store failed to save: %s", self.name, exc)

    def _tokens(self) -> dict[str, Any] | None:
        tokens = self._load().get("tokens")
        if not isinstance(tokens, dict):
            return None
        access = tokens.get("access_token")
        # (checked as it came, and again as the store gives it back: it goes in a header)
        if not isinstance(access, str) or not _B64TOKEN.fullmatch(access):
            return None
        if tokens.get("token_type") == "DPoP" and self._dpop() is None:
            return None  # bound to a key this client no longer has: useless
        return tokens

    def _dpop(self) -> DpopKey | None:
        """This client's DPoP key (``None`` without ``OAuth(dpop=True)``): the one kept in
        the token store with the tokens bound to it, else a new one, saved there."""
        if not self.config.dpop:
            return None
        record = self._load()
        pem = record.get("dpop_key")
        if self._dpop_key is not None and pem == self._dpop_pem:
            return self._dpop_key
        from .._shared._dpop import DpopKey

        key = None
        if isinstance(pem, str):
            try:
                key = DpopKey(pem)
            except (ValueError, TypeError):  # not a PEM key of ours (or an encrypted one)
                _log.warning(
                    "MCP server %s: the stored DPoP key cannot be read; making a new one",
                    self.name,
                )
        if key is None:
            key = DpopKey()
            pem = record["dpop_key"] = key.pem()
            tokens = record.get("tokens")
            if isinstance(tokens, dict) and tokens.get("token_type") == "DPoP":
                record.pop("tokens")  # bound to the key that is gone
            self._save()
        self._dpop_key, self._dpop_pem = key, pem
        return key

    def _reread(self) -> None:
        """Read the record from the store again at the next look (another process may
        have refreshed, and rotated, the tokens) — unless the last save failed: then this
        process's copy is the only one with the tokens it holds."""
        if not self._unsaved:
            self._record = None

    @contextlib.contextmanager
    def _store_held(self) -> Iterator[None]:
        """The store's own lock across processes, where it has one (``locked(key)``):
        held from re-reading the record to saving the refreshed tokens."""
        locked = getattr(self.store, "locked", None)
        with contextlib.ExitStack() as stack:
            if callable(locked):
                try:
                    stack.enter_context(locked(self.key))
                except Exception as exc:  # a store of the caller's: never a crash here
                    _log.warning(
                        "MCP server %s: the token store could not be locked: %s", self.name, exc
                    )
            yield

    def _current_header(self, reload: bool = False) -> str | None:
        if reload:  # another process may have refreshed (and rotated) the tokens
            self._reread()
        tokens = self._tokens()
        return None if tokens is None else _authorization(tokens)

    @staticmethod
    def _expiring(tokens: Mapping[str, Any]) -> bool:
        expires = tokens.get("expires_at")
        if not isinstance(expires, (int, float)):
            return False
        lifetime = tokens.get("lifetime")
        margin = _REFRESH_MARGIN_S
        if isinstance(lifetime, (int, float)) and lifetime > 0:
            margin = min(margin, lifetime / 10)
        return time.time() >= expires - margin

    def _granted(self) -> set[str]:
        tokens = self._tokens()
        scope = tokens.get("scope") if tokens is not None else None
        return set(scope.split()) if isinstance(scope, str) else set()

    # ------------------------------------------------------------------ refresh

    def _refresh(self, tokens: Mapping[str, Any]) -> bool:
        """Trade the refresh token for new tokens (the lock is held); False when it does
        not work (then the tokens are forgotten: a new authorization is needed)."""
        record = self._load()
        client = record.get("client")
        endpoint = record.get("token_endpoint")
        if not isinstance(client, dict) or not isinstance(endpoint, str):
            return False
        self._start_clock()
        fields: dict[str, str | None] = {
            "grant_type": "refresh_token",
            "refresh_token": str(tokens["refresh_token"]),
            "resource": record.get("resource"),
        }
        try:
            answer = self._token_request(endpoint, client, fields)
        except (OAuthError, _Failed) as exc:
            _log.warning("MCP server %s: refreshing the access token failed: %s", self.name, exc)
            return False
        document = answer.json()
        if answer.status != 200 or not isinstance(document, dict):
            error = document.get("error") if isinstance(document, dict) else None
            _log.info(
                "MCP server %s: the refresh token was refused (%s): a new authorization is needed",
                self.name,
                error or f"HTTP {answer.status}",
            )
            self._reread()
            if self._tokens_changed(tokens):
                return True  # another process refreshed meanwhile (a store without locked())
            self._load().pop("tokens", None)
            self._save()
            return False
        try:
            self._keep_tokens(document, str(record.get("scope") or ""), tokens)
        except _Failed as failed:
            _log.warning("MCP server %s: %s", self.name, failed.problem)
            return False
        _log.info("MCP server %s: refreshed the access token", self.name)
        return True

    def _tokens_changed(self, used: Mapping[str, Any]) -> bool:
        """Whether the store holds other tokens than ``used`` now (saved by another
        process), which are then the ones to use."""
        tokens = self._tokens()
        return tokens is not None and (
            tokens.get("access_token") != used.get("access_token")
            or tokens.get("refresh_token") != used.get("refresh_token")
        )

    # ------------------------------------------------------------------ authorize

    def _authorize(self, challenge: Mapping[str, str], *, step_up: bool) -> None:
        """Discover, register, ask the user, exchange the code (the lock is held).
        Raises :class:`_Failed`, :class:`_NeedsUser` or ``OAuthError``."""
        record = self._load()
        if self._store_problem is not None:  # a sign-in now would be lost, or worse, shown
            raise _Failed(f"the token store cannot be used: {self._store_problem}")
        self._start_clock()
        resource, issuer, supported = self._discover_resource(challenge)
        known = record.get("issuer")
        if known is not None and known != issuer:
            # SEP-2352: a registration (and tokens) belong to the server that issued them.
            _log.info(
                "MCP server %s moved from authorization server %s to %s: registering again",
                self.name,
                known,
                issuer,
            )
            for stale in ("client", "tokens", "token_endpoint"):
                record.pop(stale, None)
            self._metadata = None
        metadata = self._discover_server(issuer, legacy=supported is None and resource is None)
        for key, what in _ENDPOINTS.items():  # before anyone signs in, or any secret is sent
            if isinstance(metadata.get(key), str):
                self._check_target(metadata[key], what)
        record["issuer"] = issuer
        token_endpoint = metadata.get("token_endpoint")
        if not isinstance(token_endpoint, str):
            raise _Failed(f"the authorization server {issuer} names no token_endpoint")
        methods = metadata.get("code_challenge_methods_supported")
        if isinstance(methods, list) and "S256" not in methods:
            raise _Failed(
                f"the authorization server {issuer} does not support PKCE with S256 "
                "(code_challenge_methods_supported), which MCP requires; refusing to sign in"
            )
        scope = self._scope(challenge, supported or [], metadata, step_up)
        if self.config.grant != "authorization_code":
            self._machine_grant(metadata, issuer, resource or _canonical(self.server_url), scope)
            return
        if self.config.redirect_uri is None and self.config.ask is None:
            raise _Failed(
                f"MCP server {self.name} needs a sign-in with {issuer}, and nobody can be "
                "asked here: sign in where someone can (the command line without "
                "--no-input; tokens are kept in its token file), or give OAuth(ask=..., "
                "redirect_uri=...)"
            )
        client = self._client(issuer, metadata)
        redirect = self._redirect_uri()
        verifier = secrets.token_urlsafe(64)
        state = secrets.token_urlsafe(24)
        query = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": redirect,
            "state": state,
            "code_challenge": _s256(verifier),
            "code_challenge_method": "S256",
            "resource": resource or _canonical(self.server_url),
        }
        if scope:
            query["scope"] = scope
        endpoint = metadata.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise _Failed(f"the authorization server {issuer} names no authorization_endpoint")
        separator = "&" if urlsplit(endpoint).query else "?"
        request = Request(
            "authorization",
            f"Sign in to let this client use MCP server {self.name}",
            id="oauth-" + secrets.token_hex(12),
            url=endpoint + separator + urlencode(query),
            data={"server": self.server_url, "redirect_uri": redirect},
        )
        pending = _Pending(
            request=request,
            client=client,
            metadata=metadata,
            issuer=issuer,
            resource=query["resource"],
            scope=scope,
            state=state,
            verifier=verifier,
        )
        record["token_endpoint"] = token_endpoint
        record["resource"] = query["resource"]
        ask = self.config.ask
        if ask is None:
            if len(self._pending) >= _MAX_PENDING:
                oldest = min(self._pending, key=lambda key: self._pending[key].created)
                del self._pending[oldest]
            self._pending[request.id] = pending
            raise _NeedsUser(request)
        _log.info("MCP server %s: asking the user to sign in at %s", self.name, shown(endpoint))
        left = self._deadline - time.monotonic()  # the user's time is not the servers'
        try:
            answer = ask(request)
        except Exception as exc:
            _log.exception("MCP server %s: the authorization ask function raised", self.name)
            raise _Failed(f"asking the user to sign in failed: {exc}") from None
        self._deadline = time.monotonic() + left
        self._finish(pending, answer)

    def owns(self, request_id: str) -> bool:
        """Whether ``request_id`` is an authorization this flow handed back pending."""
        return request_id in self._pending

    def complete(self, answer: Answer) -> str | None:
        """Finish the pending authorization ``answer`` answers; ``None`` when tokens are
        held now, else why not."""
        with self._lock:
            pending = self._pending.pop(answer.id, None)
            if pending is None:
                return (
                    f"the sign-in {answer.id!r} for MCP server {self.name} is not pending "
                    "(already used, or asked by another process); call again to sign in anew"
                )
            try:
                self._start_clock()
                self._finish(pending, answer)
            except _Failed as failed:
                return failed.problem
            except OAuthError as exc:
                return f"authorization with MCP server {self.name} failed: {exc}"
        return None

    def _finish(self, pending: _Pending, answer: Answer) -> None:
        """Check the user's answer (state, iss) and trade its code for tokens."""
        if not isinstance(answer, Answer) or answer.id != pending.request.id:
            raise _Failed(
                f"the answer does not answer the sign-in for MCP server {self.name} (its id "
                "must echo the request's)"
            )
        if not answer.ok:
            raise _Failed(
                f"the sign-in for MCP server {self.name} was {answer.reason or 'declined'}"
            )
        params = _redirect_params(answer.data)
        if params.get("error"):
            raise _Failed(
                f"the authorization server refused the sign-in: {params['error']}"
                + (f" ({params['error_description']})" if params.get("error_description") else "")
            )
        if not hmac.compare_digest((params.get("state") or "").encode(), pending.state.encode()):
            raise _Failed(
                "the sign-in came back with another state than was sent: refused (it may "
                "not be this client's)"
            )
        issuer = params.get("iss")
        advertised = pending.metadata.get("authorization_response_iss_parameter_supported")
        if issuer is not None and issuer != pending.issuer:
            raise _Failed(
                f"the sign-in came back from issuer {issuer!r}, not {pending.issuer!r}: "
                "refused (RFC 9207)"
            )
        if issuer is None and advertised is True:
            raise _Failed(
                f"the sign-in came back without the iss its authorization server "
                f"{pending.issuer} promises: refused (RFC 9207)"
            )
        code = params.get("code")
        if not code:
            raise _Failed("the sign-in came back without an authorization code")
        fields: dict[str, str | None] = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self._redirect_uri(),
            "code_verifier": pending.verifier,
            "resource": pending.resource,
        }
        answer_http = self._token_request(
            str(pending.metadata["token_endpoint"]), pending.client, fields
        )
        document = answer_http.json()
        if answer_http.status != 200 or not isinstance(document, dict):
            error = document.get("error") if isinstance(document, dict) else None
            raise _Failed(
                f"the authorization server refused the code: {error or answer_http.status}"
                + (
                    f" ({document['error_description']})"
                    if isinstance(document, dict) and document.get("error_description")
                    else ""
                )
            )
        record = self._load()
        record["issuer"] = pending.issuer
        record["client"] = pending.client
        record["token_endpoint"] = pending.metadata["token_endpoint"]
        record["resource"] = pending.resource
        record["scope"] = pending.scope
        self._metadata = pending.metadata
        self._keep_tokens(document, pending.scope, None)
        _log.info(
            "MCP server %s: signed in with %s%s",
            self.name,
            pending.issuer,
            f" (scopes {pending.scope})" if pending.scope else "",
        )

    def _keep_tokens(
        self, document: Mapping[str, Any], asked: str, previous: Mapping[str, Any] | None
    ) -> None:
        access = document.get("access_token")
        if not isinstance(access, str) or not access:
            raise _Failed("the authorization server answered without an access_token")
        if not _B64TOKEN.fullmatch(access):
            raise _Failed(
                "the authorization server issued an access_token that cannot be sent in an "
                "Authorization header (RFC 6750 b64token: letters, digits and -._~+/ then "
                "'='s); refused"
            )
        kind = document.get("token_type", "Bearer")
        bound = isinstance(kind, str) and kind.lower() == "dpop" and self._dpop() is not None
        if not bound and (not isinstance(kind, str) or kind.lower() != "bearer"):
            raise _Failed(
                f"the authorization server issued a {kind!r} token, not a Bearer one"
                + ("" if kind != "DPoP" else " (a DPoP-bound token: set OAuth(dpop=True))")
            )
        tokens: dict[str, Any] = {"access_token": access}
        if bound:
            tokens["token_type"] = "DPoP"
        lifetime = _lifetime(document.get("expires_in"))
        if lifetime is not None:
            tokens["expires_at"] = time.time() + lifetime
            tokens["lifetime"] = lifetime
        refresh = document.get("refresh_token")
        if refresh is not None and (
            not isinstance(refresh, str) or not _VSCHARS.fullmatch(refresh)
        ):
            raise _Failed(
                "the authorization server issued a refresh_token that is not printable "
                "ASCII (RFC 6749 VSCHAR); refused"
            )
        if refresh is None and previous is not None:
            refresh = previous.get("refresh_token")  # kept when not rotated
        if isinstance(refresh, str):
            tokens["refresh_token"] = refresh
        granted = document.get("scope")
        if isinstance(granted, str):
            tokens["scope"] = granted
        elif previous is not None and isinstance(previous.get("scope"), str):
            tokens["scope"] = previous["scope"]
        elif asked:
            tokens["scope"] = asked  # RFC 6749 §5.1: omitted means as asked
        self._load()["tokens"] = tokens
        self._save()

    # ------------------------------------------------------------------ discovery

    def _discover_resource(
        self, challenge: Mapping[str, str]
    ) -> tuple[str | None, str, list[str] | None]:
        """The resource, its authorization server's issuer and the scopes it supports,
        from its metadata; ``(None, origin, None)`` for a server without any (2025-03-26)."""
        urls = resource_metadata_urls(self.server_url)
        named = challenge.get("resource_metadata")
        if named:
            urls = [named, *[url for url in urls if url != named]]
        failed: int | None = None
        for url in urls:
            answer = self._exchange("GET", url, "protected-resource metadata")
            document = answer.json()
            if answer.status >= 500 or answer.status == 429:
                failed = answer.status
            if answer.status != 200 or not isinstance(document, dict):
                continue
            resource = document.get("resource")
            servers = document.get("authorization_servers")
            if not isinstance(resource, str) or not _resource_allowed(self.server_url, resource):
                raise _Failed(
                    f"MCP server {self.name}'s metadata ({shown(url)}) names the resource "
                    f"{resource!r}, which is not {self.server_url}: refusing to sign in "
                    "there (RFC 8707/9728)"
                )
            if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
                raise _Failed(
                    f"MCP server {self.name}'s metadata ({shown(url)}) names no "
                    "authorization_servers"
                )
            supported = document.get("scopes_supported")
            scopes = (
                [s for s in supported if isinstance(s, str)] if isinstance(supported, list) else []
            )
            return resource, servers[0], scopes
        if failed is not None:
            raise _Failed(
                f"MCP server {self.name}'s protected-resource metadata could not be read "
                f"(HTTP {failed}); try again later"
            )
        parts = urlsplit(self.server_url)
        return None, urlunsplit((parts.scheme, parts.netloc, "", "", "")), None

    def _discover_server(self, issuer: str, *, legacy: bool) -> dict[str, Any]:
        """The authorization server's metadata; its ``issuer`` must be ``issuer`` exactly
        (RFC 8414 §3.3). A legacy server without metadata gets the default endpoints."""
        cached = self._metadata
        if cached is not None and cached.get("issuer") == issuer:
            return cached
        for url in authorization_server_metadata_urls(issuer):
            answer = self._exchange("GET", url, "authorization server metadata")
            document = answer.json()
            if answer.status != 200 or not isinstance(document, dict):
                continue
            named = document.get("issuer")
            if named != issuer and not (
                legacy and isinstance(named, str) and named.rstrip("/") == issuer
            ):
                raise _Failed(
                    f"the authorization server metadata at {shown(url)} names the issuer "
                    f"{named!r}, not {issuer!r}: refusing to use it (RFC 8414)"
                )
            self._metadata = document
            return document
        if not legacy:
            raise _Failed(
                f"the authorization server {issuer} publishes no metadata (looked at "
                f"{', '.join(authorization_server_metadata_urls(issuer))})"
            )
        # 2025-03-26: an authorization server at the MCP server's origin, default paths.
        document = {
            "issuer": issuer,
            "authorization_endpoint": issuer + "/authorize",
            "token_endpoint": issuer + "/token",
            "registration_endpoint": issuer + "/register",
        }
        self._metadata = document
        return document

    def _scope(
        self,
        challenge: Mapping[str, str],
        supported: list[str],
        metadata: Mapping[str, Any],
        step_up: bool,
    ) -> str:
        """The scopes to ask for: the challenge's, else the resource's scopes_supported;
        with a step-up, also what was asked and granted before; offline_access when the
        authorization server offers it."""
        wanted: list[str] = list(self.config.scopes or ())
        named = (challenge.get("scope") or "").split()
        wanted += named or ([] if step_up else supported)
        if step_up:
            record = self._load()
            wanted = [*str(record.get("scope") or "").split(), *self._granted(), *wanted]
        offered = metadata.get("scopes_supported")
        if isinstance(offered, list) and "offline_access" in offered and wanted:
            wanted.append("offline_access")
        return " ".join(dict.fromkeys(wanted))

    # ------------------------------------------------------------------ the client

    def _redirect_uri(self) -> str:
        redirect = self.config.redirect_uri
        if redirect is None:
            raise _Failed(
                f"MCP server {self.name} needs a sign-in, and OAuth(redirect_uri=...) is not "
                "set: give the URL where your ask function receives the redirect"
            )
        return redirect

    def _client(self, issuer: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """Who this client is at ``issuer``: pre-registered, a metadata document URL, a
        registration made before (for this issuer and redirect), or a new one."""
        config = self.config
        if config.client_id is not None:
            return {
                "client_id": config.client_id,
                "client_secret": config.client_secret,
                "method": self._method(metadata, config.client_secret is not None),
            }
        record = self._load()
        held = record.get("client")
        redirect = self._redirect_uri()
        if (
            isinstance(held, dict)
            and held.get("issuer") == issuer
            and held.get("redirect_uri") == redirect
            and isinstance(held.get("client_id"), str)
        ):
            return held
        if (
            config.client_metadata_url is not None
            and metadata.get("client_id_metadata_document_supported") is True
        ):
            return {
                "client_id": config.client_metadata_url,
                "method": "none",
                "issuer": issuer,
                "redirect_uri": redirect,
            }
        endpoint = metadata.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise _Failed(
                f"the authorization server {issuer} offers no dynamic client registration: "
                "register this client there and give its id (OAuth(client_id=...), or "
                '"auth": {"type": "oauth", "clientId": ...} in mcp.json)'
            )
        method = self._method(metadata, None)
        body = {
            "client_name": config.client_name,
            "redirect_uris": [redirect],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native" if _is_native(redirect) else "web",
        }
        answer = self._exchange(
            "POST",
            endpoint,
            "registration endpoint",
            body=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"},
        )
        document = answer.json()
        if answer.status not in (200, 201) or not isinstance(document, dict):
            error = document.get("error") if isinstance(document, dict) else None
            raise _Failed(
                f"registering with the authorization server {issuer} failed: "
                f"{error or f'HTTP {answer.status}'}"
            )
        client_id = document.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise _Failed(f"the authorization server {issuer} registered no client_id")
        secret = document.get("client_secret")
        granted_method = document.get("token_endpoint_auth_method")
        if not isinstance(granted_method, str):
            granted_method = "client_secret_basic" if isinstance(secret, str) else "none"
        if granted_method not in AUTH_METHODS:
            raise _Failed(
                f"the authorization server {issuer} registered this client for "
                f"{granted_method!r} at its token endpoint, which this client does not do"
            )
        client = {
            "client_id": client_id,
            "client_secret": secret if isinstance(secret, str) else None,
            "method": granted_method,
            "issuer": issuer,
            "redirect_uri": redirect,
        }
        record["client"] = client
        self._save()
        _log.info("MCP server %s: registered with %s", self.name, issuer)
        return client

    def _method(self, metadata: Mapping[str, Any], has_secret: bool | None) -> str:
        """The token endpoint authentication to use (``has_secret`` known) or to ask for
        at registration (``None``)."""
        offered = metadata.get("token_endpoint_auth_methods_supported")
        supported = (
            [m for m in offered if isinstance(m, str)]
            if isinstance(offered, list)
            else ["client_secret_basic"]
        )
        if self.config.private_key_file is not None or self.config.private_key is not None:
            return "private_key_jwt"
        if has_secret is False:
            return "none"
        preferred = self.config.token_endpoint_auth_method
        if preferred is not None:
            return preferred
        order = ["client_secret_basic", "client_secret_post"]
        if has_secret is None:  # registering: a public client where that is allowed
            order = ["none", *order]
        return next((m for m in order if m in supported), order[0])

    def _token_request(
        self, endpoint: str, client: Mapping[str, Any], fields: dict[str, str | None]
    ) -> HttpAnswer:
        """POST ``fields`` to the token endpoint, the client authenticated as registered
        (``client_secret_basic``/``_post``, ``private_key_jwt``, or its id alone), with a
        DPoP proof when ``OAuth(dpop=True)``. A ``use_dpop_nonce`` answer is retried once
        with the nonce the server gave (RFC 9449 §8), never more."""
        answer = self._token_post(endpoint, client, fields)
        if self._dpop_key is not None and _wants_nonce(answer):
            nonce = answer.headers.get("dpop-nonce")
            if not nonce or not _VSCHARS.fullmatch(nonce):
                raise _Failed(
                    "the authorization server asked for a DPoP nonce (use_dpop_nonce) "
                    "without giving one (no DPoP-Nonce header)"
                )
            self._as_nonce = nonce
            answer = self._token_post(endpoint, client, fields)
            if _wants_nonce(answer):
                raise _Failed(
                    "the authorization server asked for a new DPoP nonce again right after "
                    "this client sent the one it gave; not retrying (no loop)"
                )
        return answer

    def _token_post(
        self, endpoint: str, client: Mapping[str, Any], fields: dict[str, str | None]
    ) -> HttpAnswer:
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        method = client.get("method")
        secret = client.get("client_secret")
        client_id = str(client["client_id"])
        if client.get("client_id") is None:
            pass  # a workload known by its assertion alone (RFC 7523 §2.1)
        elif method == "client_secret_basic" and isinstance(secret, str):
            pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif method == "client_secret_post" and isinstance(secret, str):
            fields = {**fields, "client_id": client_id, "client_secret": secret}
        elif method == "private_key_jwt":
            audience = self._load().get("issuer")
            fields = {
                **fields,
                "client_id": client_id,
                "client_assertion_type": CLIENT_ASSERTION_TYPE,
                "client_assertion": self._signed(
                    client_id, audience if isinstance(audience, str) else endpoint
                ),
            }
        else:
            fields = {**fields, "client_id": client_id}
        key = self._dpop()
        if key is not None:
            headers["DPoP"] = key.proof("POST", endpoint, nonce=self._as_nonce)
        answer = self._exchange(
            "POST", endpoint, "token endpoint", body=form(fields), headers=headers
        )
        nonce = answer.headers.get("dpop-nonce")
        if key is not None and nonce and _VSCHARS.fullmatch(nonce):
            self._as_nonce = nonce  # (a server may hand out the next one with any answer)
        return answer

    def _signed(self, client_id: str, audience: str) -> str:
        """A ``private_key_jwt`` client assertion for ``audience`` (the issuer)."""
        config = self.config
        try:
            pem = read_secret(config.private_key_file, config.private_key, "private key")
            return client_assertion(pem, client_id, audience, config.signing_algorithm)
        except _GrantProblem as problem:
            raise _Failed(f"private_key_jwt: {problem}") from None

    def _assertion(self) -> str:
        """The assertion for ``jwt_bearer``/``id_jag``, read now."""
        config = self.config
        what = "workload identity token" if config.grant == "jwt_bearer" else "ID token"
        try:
            return read_secret(config.assertion_file, config.assertion, what)
        except _GrantProblem as problem:
            raise _Failed(str(problem)) from None

    def _machine_grant(
        self, metadata: Mapping[str, Any], issuer: str, resource: str | None, scope: str
    ) -> None:
        """Get tokens with no person involved (the lock is held): client credentials,
        a JWT bearer assertion (workload identity), or an identity assertion grant
        (enterprise-managed authorization). One token request: a refusal is an error
        naming the grant and the server's reason — never retried, never another grant."""
        config = self.config
        grant = config.grant
        token_endpoint = str(metadata["token_endpoint"])
        client: dict[str, Any] = {
            "client_id": config.client_id,
            "client_secret": config.client_secret,
            "method": self._method(metadata, config.client_secret is not None),
        }
        if config.client_id is None:  # a workload known by its assertion alone
            client = {"client_id": None, "method": "none"}
        fields: dict[str, str | None] = {"scope": scope or None, "resource": resource}
        if grant == "client_credentials":
            fields["grant_type"] = "client_credentials"
        elif grant == "jwt_bearer":
            fields = {"grant_type": JWT_BEARER, "assertion": self._assertion(), **fields}
        else:
            assertion = self._id_jag(issuer, resource, scope)
            fields = {"grant_type": JWT_BEARER, "assertion": assertion, **fields}
        record = self._load()
        record["token_endpoint"] = token_endpoint
        record["resource"] = resource
        answer = self._token_request(token_endpoint, client, fields)
        document = answer.json()
        if answer.status != 200 or not isinstance(document, dict):
            raise _Failed(self._refused_grant(grant, issuer, answer.status, document))
        record["client"] = {**client, "issuer": issuer}
        record["scope"] = scope
        self._metadata = dict(metadata)
        self._keep_tokens(document, scope, None)
        _log.info(
            "MCP server %s: got an access token from %s (%s)%s",
            self.name,
            issuer,
            grant,
            f", scopes {scope}" if scope else "",
        )

    def _id_jag(self, issuer: str, resource: str | None, scope: str) -> str:
        """Exchange the user's ID token at the identity provider (RFC 8693) for an
        identity assertion grant (ID-JAG) for ``issuer`` and ``resource``."""
        config = self.config
        endpoint = str(config.idp_token_endpoint)
        fields: dict[str, str | None] = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": issuer,
            "resource": resource,
            "scope": scope or None,
            "subject_token": self._assertion(),
            "subject_token_type": ID_TOKEN,
        }
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if config.idp_client_id is not None and config.idp_client_secret is not None:
            pair = (
                f"{quote(config.idp_client_id, safe='')}:{quote(config.idp_client_secret, safe='')}"
            )
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif config.idp_client_id is not None:
            fields["client_id"] = config.idp_client_id
        answer = self._exchange(
            "POST",
            endpoint,
            "identity provider token endpoint",
            body=form(fields),
            headers=headers,
            setting='OAuth.idp_token_endpoint ("idpTokenEndpoint" in mcp.json)',
        )
        document = answer.json()
        if answer.status != 200 or not isinstance(document, dict):
            raise _Failed(
                self._refused_grant("id_jag token exchange", endpoint, answer.status, document)
            )
        grant = document.get("access_token")
        kind = document.get("issued_token_type")
        if not isinstance(grant, str) or not _B64TOKEN.fullmatch(grant) or kind != ID_JAG:
            raise _Failed(
                f"the identity provider at {shown(endpoint)} answered the token exchange "
                f"without an identity assertion grant (issued_token_type {kind!r}, not "
                f"{ID_JAG!r})"
            )
        return grant

    def _refused_grant(self, grant: str, where: str, status: int, document: Any) -> str:
        """Why a token request was refused, for the user: the server's error and
        description (never what was sent)."""
        error = document.get("error") if isinstance(document, dict) else None
        described = document.get("error_description") if isinstance(document, dict) else None
        text = (
            f"{where} refused the {grant} grant: "
            f"{error if isinstance(error, str) else f'HTTP {status}'}"
        )
        if isinstance(described, str) and described:
            text += f" ({described[:200]})"
        if error == "invalid_client" and self._method({}, None) == "private_key_jwt":
            text += (
                "; check that the private key matches the public key registered for "
                f"client {self.config.client_id!r}"
            )
        return text + "; not retried"

    def _exchange(
        self,
        method: str,
        url: str,
        what: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        setting: str | None = None,
    ) -> HttpAnswer:
        """One request to ``url`` (the ``what`` a server named, or the user set in the
        ``OAuth`` field ``setting``), if this client may go there (:meth:`_check_target`),
        within what is left of the current refresh's or sign-in's time
        (``OAuth.timeout_ms`` for all of it)."""
        address = self._check_target(url, what, setting)
        if time.monotonic() >= self._deadline:
            raise _Failed(self._out_of_time())
        try:
            return exchange(
                method,
                url,
                body=body,
                headers=headers,
                timeout=self._timeout_s,
                deadline=self._deadline,
                address=address,
            )
        except OAuthError:
            if time.monotonic() >= self._deadline:
                raise _Failed(self._out_of_time()) from None
            raise

    def _check_target(self, url: str, what: str, setting: str | None = None) -> str | None:
        """Whether this client may go to ``url``: the address checked, to connect to
        (``None``: the server's own origin, resolved as ever); raises :class:`_Failed`
        saying what was refused, where the URL came from — the server's discovery, or
        the user's ``OAuth`` field ``setting`` — and how to allow it. The MCP server's
        own origin (the user's choice) is always allowed. Elsewhere: ``https`` (plain
        ``http`` only to loopback, for a server on loopback or with
        ``allow_private_network``), and no link-local, multicast or reserved address,
        nor — for a server with a public address — a private or loopback one, unless
        ``allow_private_network``."""
        if _origin(url) == _origin(self.server_url):
            return None
        parts = urlsplit(url)
        host = parts.hostname or ""
        scheme = parts.scheme.lower()
        if setting is None:
            named = f"MCP server {self.name}'s OAuth discovery names {shown(url)} as its {what}"
        else:  # the user's own setting: never blamed on the server
            named = f"the {what} {shown(url)} set in {setting}"
        if scheme not in ("http", "https") or not host:
            raise _Failed(f"{named}, which is not an https URL; refusing to use it")
        allowed = self.config.allow_private_network
        addresses = _addresses(host, parts.port or (443 if scheme == "https" else 80))
        kinds = set(addresses.values())
        if not kinds:
            fix = "refusing to use it" if setting is None else "check the host name there"
            raise _Failed(f"{named}, and {host} does not resolve; {fix}")
        server = self._server_kinds()
        local_server = server <= {"loopback", "private"}
        refused = sorted(kinds - ({"public"} if not local_server else _LOCAL_KINDS))
        if refused and not allowed:
            if setting is not None:
                why = (
                    "the MCP server is on the internet, and this client goes to private "
                    "addresses only when told to"
                    if not local_server
                    else "no identity provider lives there"
                )
            elif not local_server:
                why = "a server on the internet may not send this client into a private network"
            else:
                why = "no authorization server lives there"
            raise _Failed(
                f"{named}, and {host} is a {' and '.join(refused)} address: refused — {why}. "
                "If it is your organization's own server, allow it: "
                'OAuth(allow_private_network=True), or "allowPrivateNetwork": true in '
                'the server\'s "auth" in mcp.json'
            )
        if scheme == "http" and not (kinds == {"loopback"} and (server == {"loopback"} or allowed)):
            raise _Failed(
                f"{named}, over plain http: refused — OAuth needs https there (the code, its "
                "verifier and any client secret would cross the network in clear); only a "
                "loopback address may use http, for a server on loopback"
            )
        return next(iter(addresses))  # connected to as checked: no second lookup

    def _server_kinds(self) -> set[str]:
        """What kind of addresses the MCP server itself has (looked up once)."""
        if self._server_addresses is None:
            parts = urlsplit(self.server_url)
            default = 443 if parts.scheme.lower() == "https" else 80
            found = _addresses(parts.hostname or "", parts.port or default)
            self._server_addresses = set(found.values())
        return self._server_addresses or {"public"}  # unresolvable: the strict rules

    def _start_clock(self) -> None:
        """A refresh or a sign-in begins: all its requests together get timeout_ms."""
        self._deadline = time.monotonic() + self._timeout_s

    def _out_of_time(self) -> str:
        return (
            f"the authorization server(s) of MCP server {self.name} did not finish within "
            f"{self.config.timeout_ms} ms (OAuth(timeout_ms=...) bounds a whole refresh or "
            "sign-in, the user's part aside); try again later"
        )

    def __repr__(self) -> str:
        state = "signed in" if self._tokens() is not None else "not signed in"
        return f"<OAuthFlow {self.server_url} {state}>"


class OpenApiOAuth:
    """Tokens for an OpenAPI ``oauth2`` scheme's ``clientCredentials`` flow, got, cached
    and refreshed by the MCP client's OAuth machinery (:class:`OAuthFlow`): give it as
    the scheme's credential to ``Toolkit.from_openapi``. The scheme's ``tokenUrl`` is the
    token endpoint (no MCP discovery); each operation asks for the scopes its security
    requirement names (one token per set of scopes, kept in ``oauth.token_store``).

    ``oauth`` is an :class:`OAuth` with ``grant="client_credentials"`` and the client's
    ``client_id`` with ``client_secret`` (``client_secret_basic`` or ``_post``) or a
    private key (``private_key_jwt``), or ``grant="jwt_bearer"`` with an assertion.
    DPoP-bound tokens and sign-ins (``authorizationCode``) are not for this: pass a
    callable that returns a token for those.

    Example::

        from toolnexus.mcp import OAuth, OpenApiOAuth

        toolkit = Toolkit.from_openapi(
            "openapi.json",
            credentials={"oauth": OpenApiOAuth(OAuth(
                grant="client_credentials", client_id="agent",
                client_secret=os.environ["AGENT_SECRET"]))},
        )
    """

    __slots__ = ("_flows", "_lock", "oauth")

    def __init__(self, oauth: OAuth) -> None:
        if not isinstance(oauth, OAuth):
            raise InvalidTypeError(f"OpenApiOAuth takes an OAuth, got {type(oauth).__name__}")
        if oauth.grant not in ("client_credentials", "jwt_bearer") or oauth.dpop:
            raise InvalidValueError(
                "OpenApiOAuth takes OAuth(grant='client_credentials') (or 'jwt_bearer'), "
                f"without dpop, got grant={oauth.grant!r}; for a sign-in flow "
                "(authorizationCode) give the scheme a callable that returns a token"
            )
        self.oauth = oauth
        self._flows: dict[tuple[str, str, str], OAuthFlow] = {}
        self._lock = threading.Lock()

    def oauth_header(self, token_url: str, scopes: Sequence[str], server: str) -> str:
        """The ``Authorization`` value for a request to ``server`` whose scheme has the
        token endpoint ``token_url`` and needs ``scopes`` (see
        :meth:`OAuthFlow.token_header`). Raises :class:`~toolnexus.errors.OAuthError`."""
        scope = " ".join(scopes)
        key = (server, token_url, scope)
        with self._lock:
            flow = self._flows.get(key)
            if flow is None:
                flow = OAuthFlow(self.oauth, server, shown(token_url))
                flow.key = f"{server} {token_url} {scope}".rstrip()  # one token per scope set
                self._flows[key] = flow
        return flow.token_header(token_url, scope)

    def __repr__(self) -> str:
        return f"<OpenApiOAuth {self.oauth!r}>"


# --------------------------------------------------------------------------- helpers


def _authorization(tokens: Mapping[str, Any]) -> str:
    """The ``Authorization`` value for held tokens: ``DPoP`` for a bound one (RFC 9449
    §7.1), else ``Bearer``."""
    scheme = "DPoP" if tokens.get("token_type") == "DPoP" else "Bearer"
    return f"{scheme} {tokens['access_token']}"


def _wants_nonce(answer: HttpAnswer) -> bool:
    """Whether a token endpoint's answer is RFC 9449 §8's ``use_dpop_nonce``."""
    document = answer.json() if answer.status in (400, 401) else None
    return isinstance(document, dict) and document.get("error") == "use_dpop_nonce"


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _lifetime(value: Any) -> float | None:
    """A token answer's ``expires_in`` as seconds (``None``: not given). Raises
    :class:`_Failed` for a value that is not a lifetime: negative, not finite, over
    ten years, or not a number (a string of digits is taken, as some servers send one)."""
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10:
        value = int(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 <= value <= _MAX_LIFETIME_S  # (NaN compares false: refused too)
    ):
        shown_value = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
        raise _Failed(
            f"the authorization server answered with expires_in {shown_value}, which is "
            f"not a token lifetime in seconds (0 to {_MAX_LIFETIME_S}); refused"
        )
    return float(value)


def _addresses(host: str, port: int) -> dict[str, str]:
    """The addresses ``host`` resolves to, each with its kind — ``public``, ``private``,
    ``loopback``, ``link-local`` or ``reserved`` (unspecified, multicast, reserved);
    empty when it does not resolve."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return {}
    kinds: dict[str, str] = {}
    for *_, address in found:
        text = str(address[0])
        ip = ipaddress.ip_address(text.split("%", 1)[0])  # (an IPv6 zone)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip.is_loopback:
            kinds[text] = "loopback"
        elif ip.is_link_local:
            kinds[text] = "link-local"
        elif ip.is_unspecified or ip.is_multicast or ip.is_reserved:
            kinds[text] = "reserved"
        elif ip.is_private or not ip.is_global:
            kinds[text] = "private"
        else:
            kinds[text] = "public"
    return kinds


def _described(challenge: Mapping[str, str]) -> str:
    text = challenge.get("error_description")
    return f": {text[:200]}" if text else ""


def _canonical(url: str) -> str:
    """The server's URL as a resource identifier: lower-case scheme and host, no
    fragment (the path kept as it is)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port or default


def _resource_allowed(server_url: str, resource: str) -> bool:
    """Whether ``resource`` (from the metadata) covers the server at ``server_url``: the
    same origin, and its path the server's or a parent of it."""
    if _origin(server_url) != _origin(resource):
        return False
    mine = urlsplit(server_url).path.rstrip("/") + "/"
    theirs = urlsplit(resource).path.rstrip("/") + "/"
    return mine.startswith(theirs)


def _is_native(redirect: str) -> bool:
    """Loopback and private-scheme redirects are a native app's (RFC 8252)."""
    parts = urlsplit(redirect)
    return parts.scheme not in ("http", "https") or (parts.hostname or "") in (
        "localhost",
        "127.0.0.1",
        "::1",
    )


def _redirect_params(data: Any) -> dict[str, str]:
    """The redirect's parameters from an answer's data: ``{"url": redirect}`` or the
    ``code``/``state``/``iss`` (and ``error``) themselves."""
    if not isinstance(data, Mapping):
        return {}
    url = data.get("url")
    if isinstance(url, str):
        query = urlsplit(url).query
        return {key: values[0] for key, values in parse_qs(query).items()}
    return {
        key: str(data[key])
        for key in ("code", "state", "iss", "error", "error_description")
        if isinstance(data.get(key), str)
    }
