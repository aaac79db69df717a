"""Token verification against a real (test) authorization server: :class:`JwtVerifier`
(signature, issuer, keys found through the metadata, key fetches bounded) and
:class:`IntrospectionVerifier` (RFC 7662, answers cached), behind the embedded server and
``toolnexus serve --http --oauth-issuer``. Needs the ``jwt`` extra (PyJWT with its crypto
backend): skipped without it, unless TOOLNEXUS_REQUIRE_JWT=1 (CI sets it)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_JWT", "jwt", "jwt", "cryptography")

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from http_helpers import send
from oauth_server import AuthServer
from test_mcp_auth import TOOLKIT, metadata_url, modern, serving_protected, text_of
from toolnexus.mcp import (
    HttpServer,
    IntrospectionVerifier,
    JwtVerifier,
    ProtectedResource,
    ServerOptions,
)
from toolnexus.mcp._shared._oauth_common import parse_challenge


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthServer]:
    with AuthServer() as running:
        yield running


def serve(auth: AuthServer, verifier: Any) -> HttpServer:
    options = ServerOptions(
        auth=ProtectedResource(
            authorization_servers=[auth.issuer],
            verifier=verifier,
            required_scopes=["mcp"],
            tool_scopes={"deploy": ["deploy:write"]},
        )
    )
    server = HttpServer(TOOLKIT, options, port=0)
    server.start()
    return server


@pytest.fixture
def server(auth: AuthServer) -> Iterator[HttpServer]:
    with serve(auth, JwtVerifier(auth.issuer)) as running:
        yield running


def whoami(server: HttpServer, token: str) -> tuple[int, dict[str, str], bytes]:
    return modern(server, "tools/call", {"name": "whoami", "arguments": {}}, token)


def test_a_valid_jwt_reaches_the_tool_as_its_principal(
    auth: AuthServer, server: HttpServer
) -> None:
    token = auth.mint("alice", scopes=["mcp", "read"], audience=server.url)
    status, _, body = whoami(server, token)
    assert status == 200 and text_of(body) == "alice ['mcp', 'read'] test-client"


def test_an_expired_jwt_is_refused_as_expired(auth: AuthServer, server: HttpServer) -> None:
    token = auth.mint(scopes=["mcp"], audience=server.url, expires_in=-60)
    status, headers, _ = whoami(server, token)
    assert status == 401
    assert parse_challenge(headers["www-authenticate"]) == {
        "resource_metadata": metadata_url(server.url),
        "scope": "mcp",
        "error": "invalid_token",
        "error_description": "the access token expired",
    }


def test_a_jwt_for_another_resource_is_refused(auth: AuthServer, server: HttpServer) -> None:
    token = auth.mint(scopes=["mcp"], audience="https://elsewhere.example.com/mcp")
    status, _, body = whoami(server, token)
    assert status == 401 and b"issued for another resource" in body
    unbound = auth.mint(scopes=["mcp"], audience=None)  # no aud claim at all
    assert whoami(server, unbound)[0] == 401


def test_a_jwt_without_the_tools_scope_gets_403_insufficient_scope(
    auth: AuthServer, server: HttpServer
) -> None:
    token = auth.mint(scopes=["mcp"], audience=server.url)
    status, headers, _ = modern(
        server, "tools/call", {"name": "deploy", "arguments": {"env": "prod"}}, token
    )
    assert status == 403
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge is not None and challenge["scope"] == "mcp deploy:write"
    assert challenge["error"] == "insufficient_scope"


def test_forged_jwts_are_refused(auth: AuthServer, server: HttpServer) -> None:
    other_key = ec.generate_private_key(ec.SECP256R1())
    forged = [
        auth.mint(scopes=["mcp"], audience=server.url, key=other_key),  # another key
        auth.mint(scopes=["mcp"], audience=server.url, issuer="https://evil.example.com"),
        jwt.encode(  # alg none
            {"iss": auth.issuer, "aud": server.url, "exp": time.time() + 60, "scope": "mcp"},
            None,
            algorithm="none",
        ),
        "not.a.jwt",
    ]
    for token in forged:
        assert whoami(server, token)[0] == 401, token


def signed(auth: AuthServer, **claims: Any) -> str:
    """A JWT the test authorization server signed, with exactly ``claims`` (and its
    issuer), for claims its token endpoint would never write."""
    return jwt.encode(
        {"iss": auth.issuer, **claims}, auth.key, algorithm="ES256", headers={"kid": auth.kid}
    )


def test_nbf_and_iat_a_little_ahead_are_accepted_within_the_leeway(
    auth: AuthServer, server: HttpServer
) -> None:
    """Issue 36, item 14: no leeway — an authorization server whose clock runs 30 s fast
    issued tokens that were refused until this server's clock caught up."""
    now = int(time.time())
    ahead = signed(
        auth, sub="alice", aud=server.url, scope="mcp", iat=now + 30, nbf=now + 30, exp=now + 600
    )
    assert whoami(server, ahead)[0] == 200
    too_far = signed(auth, sub="alice", aud=server.url, scope="mcp", nbf=now + 600, exp=now + 900)
    assert whoami(server, too_far)[0] == 401
    with serve(auth, JwtVerifier(auth.issuer, leeway_ms=1_000)) as strict:
        early = signed(auth, sub="alice", aud=strict.url, scope="mcp", nbf=now + 30, exp=now + 600)
        assert whoami(strict, early)[0] == 401


def test_a_time_claim_that_is_not_a_number_is_a_refused_token(
    auth: AuthServer, server: HttpServer
) -> None:
    """Issue 36, item 14: a string ``exp`` never expired."""
    now = int(time.time())
    for claims in (
        {"exp": str(now - 3600)},
        {"exp": str(now + 3600)},
        {"exp": now + 3600, "nbf": str(now)},
        {"exp": now + 3600, "iat": str(now)},
        {"exp": True},
    ):
        token = signed(auth, sub="alice", aud=server.url, scope="mcp", **claims)
        status, headers, _ = whoami(server, token)
        assert status == 401, claims
        challenge = parse_challenge(headers["www-authenticate"])
        assert challenge is not None and challenge["error"] == "invalid_token"


def test_a_malformed_scope_claim_is_a_refused_token_not_a_verifier_down(
    auth: AuthServer, server: HttpServer
) -> None:
    """Issue 36, item 14: a space inside a list ``scope`` item gave 503 ("verifier down")."""
    exp = int(time.time()) + 600
    for scope in (["mcp", "two words"], ["mcp", ""]):
        token = signed(auth, sub="alice", aud=server.url, scope=scope, exp=exp)
        status, headers, _ = whoami(server, token)
        assert status == 401, scope
        challenge = parse_challenge(headers["www-authenticate"])
        assert challenge is not None and challenge["error"] == "invalid_token"
    listed = signed(auth, sub="alice", aud=server.url, scope=["mcp", "read"], exp=exp)
    assert whoami(server, listed)[0] == 200


def test_keys_are_fetched_once_and_unknown_key_ids_cannot_force_fetches(
    auth: AuthServer,
) -> None:
    verifier = JwtVerifier(auth.issuer, jwks_refresh_ms=60_000)
    with serve(auth, verifier) as running:
        before = auth.count("jwks")
        good = auth.mint(scopes=["mcp"], audience=running.url)
        for _ in range(3):
            assert whoami(running, good)[0] == 200
        assert auth.count("jwks") == before + 1
        original, auth.kid = auth.kid, "rotated-away"
        try:
            for _ in range(5):  # made-up key ids: refused, one refetch at most per minute
                stranger = auth.mint(scopes=["mcp"], audience=running.url)
                assert whoami(running, stranger)[0] == 401
        finally:
            auth.kid = original
        assert auth.count("jwks") <= before + 2


def test_a_verified_jwt_is_remembered_and_reads_as_its_signature_check(
    auth: AuthServer,
) -> None:
    verifier = JwtVerifier(auth.issuer)
    token = auth.mint("alice", scopes=["mcp"], audience="https://mcp.example.com/mcp")
    first = verifier(token)
    assert first is not None and first == verifier._verify(token)
    assert verifier(token) is first  # known by its digest: no second signature check
    tampered = token[: token.rindex(".") + 1] + "A" * 86
    assert verifier(tampered) is None and verifier(tampered) is None


def test_the_jwks_url_may_be_given(auth: AuthServer) -> None:
    with serve(auth, JwtVerifier(auth.issuer, jwks_url=f"{auth.issuer}/jwks")) as running:
        token = auth.mint(scopes=["mcp"], audience=running.url)
        assert whoami(running, token)[0] == 200


def test_an_unreachable_key_set_is_503_not_401(auth: AuthServer) -> None:
    verifier = JwtVerifier(auth.issuer, jwks_url="http://127.0.0.1:9/jwks", timeout_ms=2_000)
    with serve(auth, verifier) as running:
        token = auth.mint(scopes=["mcp"], audience=running.url)
        assert whoami(running, token)[0] == 503


def test_introspection_verifies_and_caches_by_digest(auth: AuthServer) -> None:
    verifier = IntrospectionVerifier(f"{auth.issuer}/introspect", cache_ms=60_000)
    with serve(auth, verifier) as running:
        token = auth.mint("carol", scopes=["mcp"], audience=running.url)
        before = auth.count("introspect")
        for _ in range(3):
            status, _, body = whoami(running, token)
            assert status == 200 and text_of(body) == "carol ['mcp'] test-client"
        assert auth.count("introspect") == before + 1
        assert whoami(running, "inactive-token")[0] == 401


def test_verifier_options_are_checked() -> None:
    with pytest.raises(ValueError, match="must not include 'none'"):
        JwtVerifier("https://login.example.com", algorithms=["none"])
    with pytest.raises(ValueError, match=r"leeway_ms must be an int >= 0"):
        JwtVerifier("https://login.example.com", leeway_ms=-1)
    with pytest.raises(ValueError, match="give both client_id and client_secret"):
        IntrospectionVerifier("https://login.example.com/introspect", client_id="x")


def test_serve_http_takes_oauth_tokens_from_an_issuer(auth: AuthServer) -> None:
    with serving_protected(auth.issuer) as (url, line):
        assert f"OAuth access tokens from {auth.issuer}" in line

        class Address:
            address = ("127.0.0.1", urlsplit(url).port)

        running: Any = Address()
        status, _, body = send(running, "GET", "/.well-known/oauth-protected-resource/mcp")
        assert status == 200
        assert json.loads(body)["scopes_supported"] == ["mcp", "deploy:write"]
        assert modern(running, "tools/list", {}, None)[0] == 401
        token = auth.mint(scopes=["mcp"], audience=url)
        assert modern(running, "tools/list", {}, token)[0] == 200
        call = {"name": "deploy", "arguments": {"env": "prod"}}
        assert modern(running, "tools/call", call, token)[0] == 403
