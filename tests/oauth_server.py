"""A small OAuth 2.1 authorization server for tests (standard library; PyJWT for JWTs).

Not part of the package. It issues JWT access tokens signed with a test key (ES256, made
at start) — or, with ``tokens="opaque"``, random ones it looks up itself (:meth:`verify`
is then a protected server's verifier, and no extra is needed) — and speaks just enough
of the specifications for real clients to use it:
RFC 8414 metadata, a JWKS, RFC 7591 dynamic registration, the authorization endpoint
(approving at once: the "user" says yes by redirecting, with the ``iss`` of RFC 9207),
the token endpoint (authorization code with PKCE S256, refresh tokens that rotate) and
RFC 7662 introspection. What clients did is recorded for assertions
(:attr:`AuthServer.seen`); :meth:`AuthServer.mint` makes a token directly.

Example::

    with AuthServer() as auth:
        token = auth.mint("alice", scopes=["mcp"], audience="http://127.0.0.1:8000/mcp")
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from toolnexus import Principal


class AuthServer:
    """An authorization server on ``127.0.0.1`` (a free port), in a background thread.

    Args:
        access_ttl: seconds an access token lives.
        scopes_supported: advertised in the metadata (``None``: not advertised).
        grant: the scopes tokens grant whatever was asked (``None``: what was asked).
        tokens: ``"jwt"`` (signed; needs PyJWT) or ``"opaque"`` (looked up by
            :meth:`verify`).

    :attr:`tamper` (``None``, or a function of the token endpoint's answer returning the
    answer to send) and :attr:`published` (fields that replace the metadata's) play a
    hostile authorization server.
    """

    def __init__(
        self,
        *,
        access_ttl: float = 3600,
        scopes_supported: list[str] | None = None,
        grant: list[str] | None = None,
        tokens: str = "jwt",
    ) -> None:
        self.opaque = tokens == "opaque"
        self.key: Any = None
        if not self.opaque:
            from cryptography.hazmat.primitives.asymmetric import ec

            self.key = ec.generate_private_key(ec.SECP256R1())
        self.access_tokens: dict[str, dict[str, Any]] = {}  # opaque tokens: their claims
        self.kid = "test-key-1"
        self.access_ttl = access_ttl
        self.scopes_supported = scopes_supported
        self.grant = grant
        self.tamper: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.published: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh_tokens: dict[str, dict[str, Any]] = {}
        self.seen: dict[str, list[dict[str, Any]]] = {
            "register": [],
            "authorize": [],
            "token": [],
            "introspect": [],
            "jwks": [],
        }
        handler = type("Handler", (_Handler,), {"auth": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # shutdown() waits for the serving loop's next look at its flag: every 50 ms, not
        # the default 0.5 s each test used to wait out at its end.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> AuthServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)

    # ------------------------------------------------------------------ tokens

    def mint(
        self,
        subject: str = "alice",
        *,
        scopes: Iterable[str] = (),
        audience: str | list[str] | None = None,
        expires_in: float | None = None,
        issuer: str | None = None,
        client_id: str = "test-client",
        key: Any = None,
    ) -> str:
        """A signed access token, as the token endpoint would issue it."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": issuer or self.issuer,
            "sub": subject,
            "iat": now,
            "exp": now + int(self.access_ttl if expires_in is None else expires_in),
            "scope": " ".join(scopes),
            "client_id": client_id,
            "jti": secrets.token_hex(8),
        }
        if audience is not None:
            claims["aud"] = audience
        if self.opaque:
            token = "at-" + secrets.token_urlsafe(24)
            with self.lock:
                self.access_tokens[token] = claims
            return token
        import jwt

        return jwt.encode(claims, key or self.key, algorithm="ES256", headers={"kid": self.kid})

    def verify(self, token: str) -> Principal | None:
        """An opaque token's principal (a protected server's verifier), or ``None``."""
        with self.lock:
            claims = self.access_tokens.get(token)
        return Principal.from_claims(claims) if claims is not None else None

    def revoke_access_tokens(self) -> None:
        """Forget every opaque access token (the resource server now answers 401)."""
        with self.lock:
            self.access_tokens.clear()

    def revoke_refresh_tokens(self) -> None:
        """Forget every refresh token (a user who revoked the grant)."""
        with self.lock:
            self.refresh_tokens.clear()

    def metadata(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "introspection_endpoint": f"{self.issuer}/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "authorization_response_iss_parameter_supported": True,
        }
        if not self.opaque:
            document["jwks_uri"] = f"{self.issuer}/jwks"
        if self.scopes_supported is not None:
            document["scopes_supported"] = self.scopes_supported
        return {**document, **self.published}

    def jwks(self) -> dict[str, Any]:
        from jwt.algorithms import ECAlgorithm

        public = ECAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "ES256"}]}

    def count(self, kind: str, grant_type: str | None = None) -> int:
        with self.lock:
            entries = self.seen[kind]
            return sum(
                1 for e in entries if grant_type is None or e.get("grant_type") == grant_type
            )


class _Handler(BaseHTTPRequestHandler):
    auth: AuthServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read what they need from AuthServer.seen

    def _reply(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        if self.headers.get("Content-Type", "").startswith("application/json"):
            return json.loads(raw or "{}")
        return {k: v[0] for k, v in parse_qs(raw).items()}

    def do_GET(self) -> None:
        auth = self.auth
        parts = urlsplit(self.path)
        if parts.path in (
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ):
            self._reply(200, auth.metadata())
        elif parts.path == "/jwks":
            with auth.lock:
                auth.seen["jwks"].append({})
            self._reply(200, auth.jwks())
        elif parts.path == "/authorize":
            self._authorize({k: v[0] for k, v in parse_qs(parts.query).items()})
        else:
            self._reply(404, {"error": "not_found"})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if path == "/register":
            self._register(self._form())
        elif path == "/token":
            self._token(self._form())
        elif path == "/introspect":
            self._introspect(self._form())
        else:
            self._reply(404, {"error": "not_found"})

    def _register(self, body: dict[str, Any]) -> None:
        auth = self.auth
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        client_id = "client-" + secrets.token_hex(6)
        client: dict[str, Any] = {
            "client_id": client_id,
            "redirect_uris": body.get("redirect_uris") or [],
            "token_endpoint_auth_method": method,
            "grant_types": body.get("grant_types") or ["authorization_code"],
        }
        if method != "none":
            client["client_secret"] = secrets.token_urlsafe(16)
        with auth.lock:
            auth.clients[client_id] = client
            auth.seen["register"].append(dict(body))
        self._reply(201, {**client, "client_name": body.get("client_name", "")})

    def _authorize(self, query: dict[str, str]) -> None:
        auth = self.auth
        with auth.lock:
            auth.seen["authorize"].append(dict(query))
            client = auth.clients.get(query.get("client_id", ""))
        redirect = query.get("redirect_uri", "")
        if client is None or (client["redirect_uris"] and redirect not in client["redirect_uris"]):
            self._reply(400, {"error": "invalid_request", "error_description": "unknown client"})
            return
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            self._reply(400, {"error": "invalid_request", "error_description": "PKCE S256"})
            return
        code = secrets.token_urlsafe(16)
        with auth.lock:
            auth.codes[code] = {
                "client_id": client["client_id"],
                "challenge": query["code_challenge"],
                "redirect_uri": redirect,
                "scope": query.get("scope", ""),
                "resource": query.get("resource"),
            }
        answer = {"code": code, "iss": auth.issuer}
        if "state" in query:
            answer["state"] = query["state"]
        separator = "&" if "?" in redirect else "?"
        self._reply(302, None, {"Location": redirect + separator + urlencode(answer)})

    def _client(self, body: dict[str, str]) -> dict[str, Any] | None:
        """The client the token request authenticates as (basic, post or none)."""
        auth = self.auth
        header = self.headers.get("Authorization", "")
        client_id, secret = body.get("client_id"), body.get("client_secret")
        if header.startswith("Basic "):
            pair = base64.b64decode(header[6:]).decode()
            client_id, _, secret = pair.partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
        with auth.lock:
            client = auth.clients.get(client_id or "")
        if client is None:
            return None
        if client["token_endpoint_auth_method"] != "none" and secret != client.get("client_secret"):
            return None
        return client

    def _token(self, body: dict[str, str]) -> None:
        auth = self.auth
        with auth.lock:
            auth.seen["token"].append(dict(body))
        client = self._client(body)
        if client is None:
            self._reply(401, {"error": "invalid_client"})
            return
        grant = body.get("grant_type")
        if grant == "authorization_code":
            with auth.lock:
                code = auth.codes.pop(body.get("code", ""), None)
            verifier = body.get("code_verifier", "")
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .rstrip(b"=")
                .decode()
            )
            if code is None or code["client_id"] != client["client_id"]:
                self._reply(400, {"error": "invalid_grant"})
                return
            if challenge != code["challenge"]:
                self._reply(400, {"error": "invalid_grant", "error_description": "PKCE"})
                return
            scope, resource = code["scope"], body.get("resource") or code["resource"]
        elif grant == "refresh_token":
            with auth.lock:
                held = auth.refresh_tokens.pop(body.get("refresh_token", ""), None)
            if held is None or held["client_id"] != client["client_id"]:
                self._reply(400, {"error": "invalid_grant", "error_description": "revoked"})
                return
            scope, resource = held["scope"], body.get("resource") or held["resource"]
        else:
            self._reply(400, {"error": "unsupported_grant_type"})
            return
        granted = auth.grant if auth.grant is not None else scope.split()
        access = auth.mint(
            "alice", scopes=granted, audience=resource, client_id=client["client_id"]
        )
        refresh = secrets.token_urlsafe(24)
        with auth.lock:
            auth.refresh_tokens[refresh] = {
                "client_id": client["client_id"],
                "scope": scope,
                "resource": resource,
            }
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(auth.access_ttl),
            "refresh_token": refresh,
            "scope": " ".join(granted),
        }
        if auth.tamper is not None:
            answer = auth.tamper(answer)
        self._reply(200, answer, {"Cache-Control": "no-store"})

    def _introspect(self, body: dict[str, str]) -> None:
        auth = self.auth
        with auth.lock:
            auth.seen["introspect"].append({"has_token": "token" in body})
            held = auth.access_tokens.get(body.get("token", ""))
        if auth.opaque:
            self._reply(200, {"active": True, **held} if held else {"active": False})
            return
        import jwt

        try:
            claims = jwt.decode(
                body.get("token", ""),
                auth.key.public_key(),
                algorithms=["ES256"],
                options={"verify_aud": False},
            )
        except jwt.InvalidTokenError:
            self._reply(200, {"active": False})
            return
        self._reply(200, {"active": True, **claims})
