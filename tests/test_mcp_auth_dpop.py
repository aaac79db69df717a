"""A DPoP-protected MCP server (``ProtectedResource(dpop=True)``, RFC 9449), on the embedded
server and the ASGI app: a bound token is served only with a fresh proof of its key made
for this request's method and URL; a replayed proof, a proof for another URL or method, an
old one, one signed by another key, and a bound token presented as a Bearer one are each
refused ``401`` saying why; ``dpop_nonce=True`` hands out the nonce to use. Proofs here are
made with PyJWT directly (not toolnexus's code), and the client's own DPoP calls are served.
Needs the ``jwt`` extra: skipped without it, unless TOOLNEXUS_REQUIRE_JWT=1 (CI sets it)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_JWT", "jwt", "jwt", "cryptography")

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from http_helpers import send
from oauth_server import AuthServer
from test_mcp_auth import MODERN, TOOLKIT, serving_protected, text_of
from toolnexus.mcp import (
    HttpServer,
    JwtVerifier,
    McpClient,
    MemoryTokenStore,
    OAuth,
    ProtectedResource,
    ServerOptions,
    asgi_app,
)
from toolnexus.mcp._shared._oauth_common import parse_challenge


class Holder:
    """A client's DPoP key, and the proofs it makes (with PyJWT alone)."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.jwk = ECAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        members = {k: self.jwk[k] for k in ("crv", "kty", "x", "y")}
        canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
        self.jkt = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=")
        self.jkt_text = self.jkt.decode()

    def proof(
        self,
        method: str,
        url: str,
        token: str,
        *,
        iat: float | None = None,
        nonce: str | None = None,
    ) -> str:
        digest = hashlib.sha256(token.encode()).digest()
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(12),
            "htm": method,
            "htu": url,
            "iat": int(time.time() if iat is None else iat),
            "ath": base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
        }
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.jwk}
        return jwt.encode(claims, self.key, algorithm="ES256", headers=headers)


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthServer]:
    with AuthServer(dpop=True) as running:
        yield running


def protected(auth: AuthServer, **extra: Any) -> ServerOptions:
    return ServerOptions(
        auth=ProtectedResource(
            authorization_servers=[auth.issuer],
            verifier=JwtVerifier(auth.issuer),
            required_scopes=["mcp"],
            dpop=True,
            **extra,
        )
    )


@pytest.fixture
def server(auth: AuthServer) -> Iterator[HttpServer]:
    with HttpServer(TOOLKIT, protected(auth), port=0) as running:
        running.start()
        yield running


def call(
    server: HttpServer | _At, authorization: str, proof: str | None, method: str = "POST"
) -> tuple[int, dict[str, str], bytes]:
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "whoami",
        "Authorization": authorization,
    }
    if proof is not None:
        headers["DPoP"] = proof
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}, "_meta": MODERN},
    }
    return send(server, method, "/mcp", message if method == "POST" else None, headers)


def refusal(headers: dict[str, str]) -> dict[str, str]:
    challenge = parse_challenge(headers.get("www-authenticate"), "dpop")
    assert challenge is not None, headers
    return challenge


def bound_token(auth: AuthServer, server: HttpServer, holder: Holder) -> str:
    return auth.mint("alice", scopes=["mcp"], audience=server.url, jkt=holder.jkt_text)


def test_a_bound_token_with_a_fresh_proof_is_served(auth: AuthServer, server: HttpServer) -> None:
    holder = Holder()
    token = bound_token(auth, server, holder)
    status, _, body = call(server, f"DPoP {token}", holder.proof("POST", server.url, token))
    assert status == 200, body
    assert text_of(body).startswith("alice")


def test_a_replayed_proof_is_refused(auth: AuthServer, server: HttpServer) -> None:
    holder = Holder()
    token = bound_token(auth, server, holder)
    proof = holder.proof("POST", server.url, token)
    assert call(server, f"DPoP {token}", proof)[0] == 200
    status, headers, _ = call(server, f"DPoP {token}", proof)  # whoever saw it sends it again
    assert status == 401
    challenge = refusal(headers)
    assert challenge["error"] == "invalid_dpop_proof"
    assert "used before" in challenge["error_description"]


@pytest.mark.parametrize(
    ("method", "url", "why"),
    [
        ("GET", None, "another method"),
        ("POST", "http://127.0.0.1:1/mcp", "another URL"),
        ("POST", "{server}/other", "another URL"),
    ],
)
def test_a_proof_for_another_url_or_method_is_refused(
    auth: AuthServer, server: HttpServer, method: str, url: str | None, why: str
) -> None:
    holder = Holder()
    token = bound_token(auth, server, holder)
    target = (url or server.url).replace("{server}", server.url)
    status, headers, _ = call(server, f"DPoP {token}", holder.proof(method, target, token))
    assert status == 401
    assert why in refusal(headers)["error_description"]


def test_a_proof_of_another_key_an_old_proof_and_a_bearer_use_are_refused(
    auth: AuthServer, server: HttpServer
) -> None:
    holder, thief = Holder(), Holder()
    token = bound_token(auth, server, holder)
    status, headers, _ = call(server, f"DPoP {token}", thief.proof("POST", server.url, token))
    assert status == 401 and "another key" in refusal(headers)["error_description"]
    old = holder.proof("POST", server.url, token, iat=time.time() - 3600)
    status, headers, _ = call(server, f"DPoP {token}", old)
    assert status == 401 and "expired" in refusal(headers)["error_description"]
    status, headers, _ = call(server, f"Bearer {token}", None)  # the stolen token alone
    assert status == 401
    assert "bound to a DPoP key" in (parse_challenge(headers["www-authenticate"]) or {}).get(
        "error_description", ""
    )
    status, headers, _ = call(server, f"DPoP {token}", None)
    assert status == 401 and "needs a DPoP proof" in refusal(headers)["error_description"]


def test_a_server_that_wants_nonces_hands_one_out_and_takes_it(auth: AuthServer) -> None:
    holder = Holder()
    with HttpServer(TOOLKIT, protected(auth, dpop_nonce=True), port=0) as server:
        server.start()
        token = bound_token(auth, server, holder)
        status, headers, _ = call(server, f"DPoP {token}", holder.proof("POST", server.url, token))
        assert status == 401
        assert refusal(headers)["error"] == "use_dpop_nonce"
        nonce = headers["dpop-nonce"]
        proof = holder.proof("POST", server.url, token, nonce=nonce)
        assert call(server, f"DPoP {token}", proof)[0] == 200
        wrong = holder.proof("POST", server.url, token, nonce=nonce + "x")
        assert call(server, f"DPoP {token}", wrong)[0] == 401


def test_the_metadata_says_dpop_is_taken(server: HttpServer) -> None:
    status, _, body = send(server, "GET", "/.well-known/oauth-protected-resource/mcp")
    assert status == 200
    assert "ES256" in json.loads(body)["dpop_signing_alg_values_supported"]


def asgi_call(app: Any, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    """One tools/call to the ASGI app (driven directly): its status and headers."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}, "_meta": MODERN},
    }
    sent = {
        "host": "localhost:8000",  # (a local name: allowed; the resource is configured)
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "whoami",
        **headers,
    }
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "scheme": "https",
        "headers": [(k.encode(), v.encode()) for k, v in sent.items()],
    }
    body = json.dumps(message).encode()
    out: list[dict[str, Any]] = []

    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # a client that stays (the app ends on its own)
        return {"type": "http.disconnect"}

    async def send_(event: dict[str, Any]) -> None:
        out.append(event)

    asyncio.run(app(scope, receive, send_))
    start = next(event for event in out if event["type"] == "http.response.start")
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}


def test_the_asgi_app_checks_proofs_the_same_way(auth: AuthServer) -> None:
    resource = "https://mcp.example.com/mcp"
    options = ServerOptions(
        auth=ProtectedResource(
            authorization_servers=[auth.issuer],
            verifier=JwtVerifier(auth.issuer),
            resource=resource,
            required_scopes=["mcp"],
            dpop=True,
        )
    )
    app = asgi_app(TOOLKIT, options)
    holder = Holder()
    token = auth.mint("alice", scopes=["mcp"], audience=resource, jkt=holder.jkt_text)
    proof = holder.proof("POST", resource, token)
    assert asgi_call(app, {"authorization": f"DPoP {token}", "dpop": proof})[0] == 200
    status, headers = asgi_call(app, {"authorization": f"DPoP {token}", "dpop": proof})
    assert status == 401 and "used before" in headers["www-authenticate"]
    other = holder.proof("POST", "https://elsewhere.example.com/mcp", token)
    status, headers = asgi_call(app, {"authorization": f"DPoP {token}", "dpop": other})
    assert status == 401 and "another URL" in headers["www-authenticate"]


def test_our_client_with_dpop_is_served_and_keeps_its_key_with_the_tokens(
    auth: AuthServer,
) -> None:
    auth.register("dpop-agent", secret="agent-secret")
    store = MemoryTokenStore()
    with HttpServer(TOOLKIT, protected(auth, dpop_nonce=True), port=0) as server:
        server.start()
        oauth = OAuth(
            client_id="dpop-agent",
            client_secret="agent-secret",
            grant="client_credentials",
            dpop=True,
            token_store=store,
        )
        auth.dpop_nonce = "as-nonce-1"
        try:
            with McpClient(url=server.url, auth=oauth) as client:
                first = client.call_tool("whoami")
                second = client.call_tool("whoami")
        finally:
            auth.dpop_nonce = None
        assert not first.is_error and not second.is_error, (first.output, second.output)
        record = store.load(server.url)
        assert record is not None
        assert record["tokens"]["token_type"] == "DPoP"
        assert record["dpop_key"].startswith("-----BEGIN PRIVATE KEY-----")
        claims = jwt.decode(record["tokens"]["access_token"], options={"verify_signature": False})
        assert "jkt" in claims["cnf"]


class _At:
    """What :func:`call` needs of a server: its address (a served process's URL)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.url = url
        self.address = (parts.hostname, parts.port)


def test_toolnexus_serve_with_oauth_dpop_checks_proofs(auth: AuthServer) -> None:
    holder = Holder()
    with serving_protected(auth.issuer, "--oauth-dpop") as (url, _line):
        server = _At(url)
        token = auth.mint("alice", scopes=["mcp"], audience=url, jkt=holder.jkt_text)
        proof = holder.proof("POST", url, token)
        status, _, body = call(server, f"DPoP {token}", proof)
        assert status == 200, body
        status, headers, _ = call(server, f"DPoP {token}", proof)
        assert status == 401 and "used before" in refusal(headers)["error_description"]
