"""The MCP client signing in with nobody at a browser (``OAuth(grant=...)``): client
credentials with a secret (HTTP Basic or in the body) and with ``private_key_jwt`` (a key
from a file or a function), the JWT-bearer grant of a workload identity, enterprise-managed
authorization (an ID token exchanged for an ID-JAG at the identity provider, then the
JWT-bearer grant), and DPoP-bound tokens. A refusal — a key that does not match, an
expired assertion, an exchange the identity provider refuses, a DPoP nonce demanded again
and again — is one clear error after one request (no retry storm), and nothing secret is
ever logged. Needs the ``jwt`` extra: skipped without it, unless TOOLNEXUS_REQUIRE_JWT=1."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_JWT", "jwt", "jwt", "cryptography")

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from oauth_server import AuthServer
from test_mcp_auth import TOOLKIT
from toolnexus import McpError
from toolnexus.mcp import (
    HttpServer,
    JwtVerifier,
    McpClient,
    McpSource,
    MemoryTokenStore,
    OAuth,
    ProtectedResource,
    ServerOptions,
)


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    with AuthServer(dpop=True) as running:
        yield running


@pytest.fixture
def server(auth: AuthServer) -> Iterator[HttpServer]:
    options = ServerOptions(
        auth=ProtectedResource(
            authorization_servers=[auth.issuer],
            verifier=JwtVerifier(auth.issuer),
            required_scopes=["mcp"],
            dpop=True,
        )
    )
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        yield running


def pem_of(key: Any) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def whoami(server: HttpServer, oauth: OAuth) -> str:
    with McpClient(url=server.url, auth=oauth) as client:
        result = client.call_tool("whoami")
    assert not result.is_error, result.output
    return str(result.output)


def refusal(server: HttpServer, oauth: OAuth) -> str:
    with pytest.raises(McpError) as refused:
        McpClient(url=server.url, auth=oauth).connect()
    return str(refused.value)


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_a_secret(
    server: HttpServer, auth: AuthServer, method: str
) -> None:
    auth.register("agent", secret="agent-secret")
    oauth = OAuth(
        client_id="agent",
        client_secret="agent-secret",
        grant="client_credentials",
        token_endpoint_auth_method=method,
    )
    assert "agent-secret" not in repr(oauth)  # a settings object that is logged shows none
    assert whoami(server, oauth).startswith("alice")
    [request] = auth.seen["token"]
    assert request["grant_type"] == "client_credentials"
    assert request["scope"] == "mcp" and request["resource"] == server.url
    assert ("client_secret" in request) == (method == "client_secret_post")
    assert auth.seen["authorize"] == []  # nobody was asked


def test_client_credentials_with_a_private_key_from_a_file_or_a_function(
    server: HttpServer, auth: AuthServer, tmp_path: Path
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    auth.register("signer", public_key=key.public_key())
    path = tmp_path / "agent.pem"
    path.write_text(pem_of(key))
    for oauth in (
        OAuth(client_id="signer", private_key_file=str(path), grant="client_credentials"),
        OAuth(client_id="signer", private_key=lambda: pem_of(key), grant="client_credentials"),
    ):
        assert whoami(server, oauth).startswith("alice")
    assertions = [r["client_assertion"] for r in auth.seen["token"]]
    assert len(assertions) == 2 and assertions[0] != assertions[1]  # a fresh one each time
    assert all("client_secret" not in r for r in auth.seen["token"])


def test_a_private_key_that_does_not_match_is_one_clear_error(
    server: HttpServer, auth: AuthServer
) -> None:
    registered = ec.generate_private_key(ec.SECP256R1())
    auth.register("signer", public_key=registered.public_key())
    other = pem_of(ec.generate_private_key(ec.SECP256R1()))
    problem = refusal(
        server, OAuth(client_id="signer", private_key=lambda: other, grant="client_credentials")
    )
    assert "invalid_client" in problem
    assert "private key matches the public key registered for client 'signer'" in problem
    assert len(auth.seen["token"]) == 1  # not retried


def test_workload_identity_trades_its_token_file_for_an_access_token(
    server: HttpServer, auth: AuthServer, tmp_path: Path
) -> None:
    path = tmp_path / "token"
    path.write_text(auth.workload_token())
    oauth = OAuth(grant="jwt_bearer", assertion_file=str(path))
    assert whoami(server, oauth).startswith("alice")
    [request] = auth.seen["token"]
    assert request["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert request["assertion"] == path.read_text()


def test_an_expired_workload_token_is_one_clear_error(server: HttpServer, auth: AuthServer) -> None:
    expired = auth.workload_token(expires_in=-120)
    problem = refusal(server, OAuth(grant="jwt_bearer", assertion=lambda: expired))
    assert "refused the jwt_bearer grant: invalid_grant" in problem
    assert "not retried" in problem
    assert len(auth.seen["token"]) == 1
    assert expired not in problem


def test_enterprise_managed_authorization_exchanges_the_id_token_for_an_id_jag(
    server: HttpServer, auth: AuthServer
) -> None:
    auth.register("enterprise-agent", secret="enterprise-secret")
    id_token = auth.id_token("alice")
    oauth = OAuth(
        client_id="enterprise-agent",
        client_secret="enterprise-secret",
        grant="id_jag",
        assertion=lambda: id_token,
        idp_token_endpoint=auth.issuer + "/idp/token",
        idp_client_id="idp-client",
    )
    assert whoami(server, oauth).startswith("alice")
    [exchange] = auth.seen["idp"]
    assert exchange["subject_token"] == id_token
    assert exchange["audience"] == auth.issuer and exchange["resource"] == server.url
    assert exchange["requested_token_type"] == "urn:ietf:params:oauth:token-type:id-jag"
    [grant] = auth.seen["token"]
    assert grant["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"


def test_an_exchange_the_identity_provider_refuses_is_one_clear_error(
    server: HttpServer, auth: AuthServer
) -> None:
    auth.register("enterprise-agent", secret="enterprise-secret")
    oauth = OAuth(
        client_id="enterprise-agent",
        client_secret="enterprise-secret",
        grant="id_jag",
        assertion=lambda: "not.an.idtoken",
        idp_token_endpoint=auth.issuer + "/idp/token",
    )
    problem = refusal(server, oauth)
    assert "refused the id_jag token exchange grant: invalid_grant" in problem
    assert len(auth.seen["idp"]) == 1 and auth.seen["token"] == []


def test_a_token_endpoint_that_wants_a_new_nonce_every_time_is_not_looped(
    server: HttpServer, auth: AuthServer
) -> None:
    auth.register("agent", secret="agent-secret")
    auth.dpop_nonce_loop = True
    oauth = OAuth(
        client_id="agent", client_secret="agent-secret", grant="client_credentials", dpop=True
    )
    problem = refusal(server, oauth)
    assert "DPoP nonce again" in problem and "no loop" in problem
    assert len(auth.seen["token"]) == 2  # the request, and one retry with the nonce


def test_an_mcp_server_that_wants_a_new_nonce_every_time_is_not_looped(
    server: HttpServer, auth: AuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolnexus.mcp._server import _dpop

    asked: list[str] = []

    def fresh(self: Any) -> str:
        asked.append("nonce")
        return f"nonce-{len(asked)}"

    monkeypatch.setattr(_dpop.ProofChecker, "nonce", fresh)
    monkeypatch.setattr(_dpop.ProofChecker, "_previous_nonce_ok", lambda self, proof: False)
    options = ServerOptions(
        auth=ProtectedResource(
            authorization_servers=[auth.issuer],
            verifier=JwtVerifier(auth.issuer),
            dpop=True,
            dpop_nonce=True,
        )
    )
    auth.register("agent", secret="agent-secret")
    with HttpServer(TOOLKIT, options, port=0) as looping:
        looping.start()
        oauth = OAuth(
            client_id="agent", client_secret="agent-secret", grant="client_credentials", dpop=True
        )
        problem = refusal(looping, oauth)
    assert "asked for a DPoP nonce again" in problem and "no loop" in problem
    assert len(auth.seen["token"]) == 1  # the token was fine: no new one was asked for


def test_no_secret_reaches_the_log(
    server: HttpServer, auth: AuthServer, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    key = ec.generate_private_key(ec.SECP256R1())
    auth.register("signer", public_key=key.public_key())
    auth.register("enterprise-agent", secret="enterprise-secret")
    store = MemoryTokenStore()
    workload = auth.workload_token()
    id_token = auth.id_token()
    configs = [
        OAuth(
            client_id="signer",
            private_key=lambda: pem_of(key),
            grant="client_credentials",
            dpop=True,
            token_store=store,
        ),
        OAuth(grant="jwt_bearer", assertion=lambda: workload),
        OAuth(
            client_id="enterprise-agent",
            client_secret="enterprise-secret",
            grant="id_jag",
            assertion=lambda: id_token,
            idp_token_endpoint=auth.issuer + "/idp/token",
        ),
    ]
    for oauth in configs:
        whoami(server, oauth)
    refusal(server, OAuth(grant="jwt_bearer", assertion=lambda: workload + "x"))
    record = store.load(server.url)
    assert record is not None
    secrets_seen = [pem_of(key), record["dpop_key"], record["tokens"]["access_token"]]
    secrets_seen += ["enterprise-secret", workload, id_token]
    secrets_seen += [r.get("assertion") or r.get("client_assertion") for r in auth.seen["token"]]
    assert "got an access token from" in caplog.text
    for secret in secrets_seen:
        assert secret and secret not in caplog.text


def test_mcp_json_chooses_the_grant_and_dpop(
    server: HttpServer, auth: AuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    auth.register("signer", public_key=key.public_key())
    path = tmp_path / "agent.pem"
    path.write_text(pem_of(key))
    monkeypatch.setenv("AGENT_KEY", str(path))
    config = {
        "mcpServers": {
            "tools": {
                "url": server.url,
                "auth": {
                    "type": "oauth",
                    "grant": "client_credentials",
                    "clientId": "signer",
                    "privateKeyFile": "${AGENT_KEY}",
                    "dpop": True,
                },
            }
        }
    }
    with McpSource(config).connect() as source:
        result = source.client("tools").call_tool("whoami")
    assert not result.is_error, result.output
    [request] = auth.seen["token"]
    assert "client_assertion" in request


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"grant": "password"}, "must be one of"),
        ({"grant": "client_credentials", "client_id": "a"}, "secret or private key"),
        ({"grant": "jwt_bearer"}, "needs the workload identity token"),
        ({"grant": "id_jag", "assertion": lambda: "t"}, "needs idp_token_endpoint"),
        ({"client_id": "a", "client_secret": "s", "private_key_file": "k"}, "not both"),
        ({"private_key_file": "k"}, "give its client_id"),
        ({"assertion": "token-text"}, "must be a function"),
        ({"dpop": "yes"}, "True or False"),
    ],
)
def test_bad_machine_grant_settings_are_refused_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        OAuth(**fields)


def test_twenty_calls_meeting_a_refused_granted_token_make_one_new_grant(
    auth: AuthServer,
) -> None:
    verifier = JwtVerifier(auth.issuer)
    revoked: set[str] = set()
    options = ServerOptions(
        auth=ProtectedResource(
            authorization_servers=[auth.issuer],
            verifier=lambda token: None if token in revoked else verifier(token),
            required_scopes=["mcp"],
            dpop=True,
            cache_ms=0,
        )
    )
    auth.register("agent", secret="agent-secret")
    store = MemoryTokenStore()
    oauth = OAuth(
        client_id="agent",
        client_secret="agent-secret",
        grant="client_credentials",
        dpop=True,
        token_store=store,
    )
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        with McpClient(url=server.url, auth=oauth) as client:
            assert not client.call_tool("whoami").is_error
            record = store.load(server.url)
            assert record is not None
            revoked.add(record["tokens"]["access_token"])  # expired, or revoked
            results: list[Any] = [None] * 20
            start = threading.Barrier(20)

            def call(index: int) -> None:
                start.wait()
                results[index] = client.call_tool("whoami")

            threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
    assert all(r is not None and not r.is_error for r in results), results
    assert auth.count("token", "client_credentials") == 2  # one new grant for all twenty
