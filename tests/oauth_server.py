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

For agents with nobody at a browser (needs PyJWT): the ``client_credentials`` grant (a
secret, or ``private_key_jwt`` with a public key given to :meth:`AuthServer.register`),
the JWT-bearer grant (a workload's assertion signed by :attr:`AuthServer.workload_key`,
or an ID-JAG), and an identity provider's token exchange at ``/idp/token`` (an ID token
signed by :attr:`AuthServer.idp_key` for an ID-JAG). With ``dpop=True`` a token request
carrying a DPoP proof gets a DPoP-bound token (``cnf.jkt``); :attr:`AuthServer.dpop_nonce`
set makes it demand that nonce first. The proofs are checked here with PyJWT alone, not
with toolnexus's own code.

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
        dpop: bool = False,
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
        self.dpop = dpop
        self.dpop_nonce: str | None = None  # demanded in token request proofs when set
        self.dpop_nonce_loop = False  # True: a new nonce demanded every time (a broken server)
        self.workload_key: Any = None  # signs the workload tokens the JWT-bearer grant takes
        self.idp_key: Any = None  # signs the ID tokens the identity provider exchanges
        if not self.opaque:
            from cryptography.hazmat.primitives.asymmetric import ec

            self.workload_key = ec.generate_private_key(ec.SECP256R1())
            self.idp_key = ec.generate_private_key(ec.SECP256R1())
        self.exchanged: list[dict[str, Any]] = []  # RFC 8693 exchanges granted
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
            "idp": [],
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
        jkt: str | None = None,
    ) -> str:
        """A signed access token, as the token endpoint would issue it (bound to the DPoP
        key of thumbprint ``jkt`` when given)."""
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
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
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

    def register(
        self, client_id: str, *, secret: str | None = None, public_key: Any = None
    ) -> None:
        """A client registered beforehand: with a secret, a public key (it authenticates
        with ``private_key_jwt``), or neither (a public client)."""
        method = "client_secret_basic" if secret else "private_key_jwt" if public_key else "none"
        with self.lock:
            self.clients[client_id] = {
                "client_id": client_id,
                "client_secret": secret,
                "public_key": public_key,
                "redirect_uris": [],
                "token_endpoint_auth_method": method,
            }

    def workload_token(self, *, audience: str | None = None, expires_in: int = 300) -> str:
        """A workload identity's JWT (as a cloud or Kubernetes would issue it)."""
        import jwt

        now = int(time.time())
        claims = {
            "iss": "https://workload-idp.test",
            "sub": "system:serviceaccount:ci:agent",
            "aud": audience or self.issuer,
            "iat": now,
            "exp": now + expires_in,
        }
        return jwt.encode(claims, self.workload_key, algorithm="ES256")

    def id_token(self, subject: str = "alice") -> str:
        """A user's ID token from the enterprise identity provider."""
        import jwt

        now = int(time.time())
        claims = {"iss": self.issuer + "/idp", "sub": subject, "aud": "idp-client", "iat": now}
        claims["exp"] = now + 300
        return jwt.encode(claims, self.idp_key, algorithm="ES256")

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
                "private_key_jwt",
            ],
            "authorization_response_iss_parameter_supported": True,
        }
        if not self.opaque:
            document["jwks_uri"] = f"{self.issuer}/jwks"
        if self.scopes_supported is not None:
            document["scopes_supported"] = self.scopes_supported
        if self.dpop:
            document["dpop_signing_alg_values_supported"] = ["ES256"]
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
        elif path == "/idp/token":
            self._exchange(self._form())
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
        """The client the token request authenticates as (basic, post, private_key_jwt or
        none)."""
        auth = self.auth
        header = self.headers.get("Authorization", "")
        client_id, secret = body.get("client_id"), body.get("client_secret")
        if body.get("client_assertion_type") == (
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        ):
            import jwt

            with auth.lock:
                client = auth.clients.get(client_id or "")
            if client is None or client.get("public_key") is None:
                return None
            try:
                claims = jwt.decode(
                    body.get("client_assertion", ""),
                    client["public_key"],
                    algorithms=["ES256", "RS256"],
                    # the issuer, or the token endpoint's URL (RFC 7523 §3 allows both)
                    audience=[auth.issuer, auth.issuer + "/token"],
                )
            except jwt.InvalidTokenError:
                return None
            return client if claims.get("iss") == claims.get("sub") == client_id else None
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
        grant = body.get("grant_type")
        client = self._client(body)
        anonymous = not body.get("client_id") and "Authorization" not in self.headers
        if client is None and anonymous and grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            client = {"client_id": "workload"}  # known by its assertion (RFC 7523 §3.1)
        if client is None:
            self._reply(401, {"error": "invalid_client"})
            return
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
        elif grant == "client_credentials":
            scope, resource = body.get("scope", ""), body.get("resource")
        elif grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            import jwt

            assertion = body.get("assertion", "")
            try:
                if jwt.get_unverified_header(assertion).get("typ") == "oauth-id-jag+jwt":
                    claims = jwt.decode(
                        assertion, auth.key.public_key(), algorithms=["ES256"], audience=auth.issuer
                    )
                    if claims.get("client_id") != client["client_id"]:
                        raise jwt.InvalidTokenError("another client's grant")
                else:
                    claims = jwt.decode(
                        assertion,
                        auth.workload_key.public_key(),
                        algorithms=["ES256"],
                        audience=auth.issuer,
                    )
            except jwt.InvalidTokenError as exc:
                self._reply(400, {"error": "invalid_grant", "error_description": str(exc)})
                return
            scope, resource = body.get("scope", ""), body.get("resource") or claims.get("resource")
        elif grant == "urn:ietf:params:oauth:grant-type:token-exchange":  # RFC 8693
            import jwt

            try:
                subject = jwt.decode(
                    body.get("subject_token", ""),
                    auth.key.public_key(),
                    algorithms=["ES256"],
                    options={"verify_aud": False},
                )
            except jwt.InvalidTokenError:
                self._reply(400, {"error": "invalid_grant", "error_description": "subject"})
                return
            held = set(str(subject.get("scope", "")).split())
            asked = body.get("scope", "").split()
            if not set(asked) <= held:
                self._reply(400, {"error": "invalid_scope"})
                return
            scope, resource = " ".join(asked), body.get("resource")
            auth.exchanged.append({"sub": subject["sub"], "scope": scope, "aud": resource})
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
        jkt = None
        if auth.dpop and self.headers.get("DPoP"):
            jkt = self._proof(self.headers["DPoP"])
            if jkt is None:
                return  # (answered)
        granted = auth.grant if auth.grant is not None else scope.split()
        subject = auth.exchanged[-1]["sub"] if grant.endswith("token-exchange") else "alice"
        access = auth.mint(
            subject, scopes=granted, audience=resource, client_id=client["client_id"], jkt=jkt
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
            "token_type": "DPoP" if jkt else "Bearer",
            "expires_in": int(auth.access_ttl),
            "scope": " ".join(granted),
        }
        if grant != "client_credentials":  # RFC 6749 §4.4.3: none for client credentials
            answer["refresh_token"] = refresh
        if auth.tamper is not None:
            answer = auth.tamper(answer)
        self._reply(200, answer, {"Cache-Control": "no-store"})

    def _proof(self, proof: str) -> str | None:
        """The thumbprint of a good token-request proof; else answers 400 and ``None``
        (``use_dpop_nonce`` with the nonce when one is demanded and missing)."""
        import jwt

        auth = self.auth
        try:
            header = jwt.get_unverified_header(proof)
            jwk = header["jwk"]
            key = jwt.PyJWK(jwk, algorithm=header["alg"]).key
            claims = jwt.decode(proof, key, algorithms=["ES256"])
        except (jwt.PyJWTError, KeyError) as exc:
            self._reply(400, {"error": "invalid_dpop_proof", "error_description": str(exc)})
            return None
        if claims.get("htm") != "POST" or claims.get("htu") != f"{auth.issuer}/token":
            self._reply(400, {"error": "invalid_dpop_proof", "error_description": "htm/htu"})
            return None
        if auth.dpop_nonce_loop:  # a broken server: every nonce is stale at once
            auth.dpop_nonce = secrets.token_urlsafe(8)
        if auth.dpop_nonce is not None and claims.get("nonce") != auth.dpop_nonce:
            self._reply(400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": auth.dpop_nonce})
            return None
        # RFC 7638 by hand here on purpose: not toolnexus's code judging itself.
        members = json.dumps(
            {k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True
        )
        digest = hashlib.sha256(members.encode()).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def _exchange(self, body: dict[str, str]) -> None:
        """The enterprise identity provider: an ID token exchanged for an ID-JAG (RFC 8693)."""
        import jwt

        auth = self.auth
        with auth.lock:
            auth.seen["idp"].append(dict(body))
        if (
            body.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
            or body.get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag"
            or body.get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token"
        ):
            self._reply(400, {"error": "invalid_request"})
            return
        try:
            claims = jwt.decode(
                body.get("subject_token", ""),
                auth.idp_key.public_key(),
                algorithms=["ES256"],
                audience="idp-client",
            )
        except jwt.InvalidTokenError:
            self._reply(400, {"error": "invalid_grant", "error_description": "bad ID token"})
            return
        now = int(time.time())
        grant = {
            "iss": auth.issuer + "/idp",
            "sub": claims["sub"],
            "aud": body.get("audience"),
            "resource": body.get("resource"),
            "client_id": "enterprise-agent",
            "iat": now,
            "exp": now + 300,
        }
        token = jwt.encode(grant, auth.key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        self._reply(
            200,
            {
                "access_token": token,
                "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "token_type": "N_A",
            },
        )

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
