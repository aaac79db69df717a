"""OpenAPI ``oauth2`` schemes with a ``clientCredentials`` flow, through the MCP client's
OAuth machinery (``toolnexus.mcp.OpenApiOAuth``): the tools get a token at the scheme's
``tokenUrl`` (no MCP discovery) with the client's secret or private key, keep it while it
lasts, get another when it is about to expire, and a refusal is an error result naming
the scheme — never the secret. The authorization server is the project's test one
(tests/oauth_server.py, opaque tokens: no extra needed but for ``private_key_jwt``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from oauth_server import AuthServer
from rest_server import RestServer
from toolnexus import Toolkit
from toolnexus.mcp import MemoryTokenStore, OAuth, OpenApiOAuth


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    with AuthServer(tokens="opaque") as running:
        running.register("agent", secret="agent-secret")
        yield running


@pytest.fixture
def api() -> Iterator[RestServer]:
    running = RestServer()
    try:
        yield running
    finally:
        running.stop()


def document(api: RestServer, token_url: str, flow: str = "clientCredentials") -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": api.url + "/echo"}],
        "components": {
            "securitySchemes": {
                "oauth": {
                    "type": "oauth2",
                    "flows": {
                        flow: {
                            "tokenUrl": token_url,
                            "authorizationUrl": token_url,
                            "scopes": {"pets:read": "read pets", "pets:write": "add pets"},
                        }
                    },
                }
            }
        },
        "security": [{"oauth": ["pets:read"]}],
        "paths": {
            "/pets": {
                "get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}},
                "post": {
                    "operationId": "addPet",
                    "security": [{"oauth": ["pets:write"]}],
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
    }


def client(**settings: Any) -> OpenApiOAuth:
    return OpenApiOAuth(
        OAuth(
            grant="client_credentials", client_id="agent", client_secret="agent-secret", **settings
        )
    )


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_the_token_is_got_at_the_token_url_once_and_sent_with_each_call(auth, api, method):
    credential = client(token_endpoint_auth_method=method)
    toolkit = Toolkit.from_openapi(
        document(api, auth.issuer + "/token"), credentials={"oauth": credential}
    )
    first = toolkit.execute("listPets", {})
    second = toolkit.execute("listPets", {})
    assert not first.is_error and not second.is_error, (first.output, second.output)
    [request] = auth.seen["token"]  # one token request: the token is kept while it lasts
    assert request["grant_type"] == "client_credentials"
    assert request["scope"] == "pets:read"  # the operation's requirement
    assert "resource" not in request  # no MCP resource indicator for a REST API
    assert ("client_secret" in request) == (method == "client_secret_post")
    sent = [seen["headers"]["authorization"] for seen in api.requests]
    assert len(sent) == 2 and sent[0] == sent[1] and sent[0].startswith("Bearer at-")
    assert auth.verify(sent[0][len("Bearer ") :]) is not None  # the server's own token
    # another operation needing other scopes gets its own token
    assert not toolkit.execute("addPet", {}).is_error
    assert [seen["scope"] for seen in auth.seen["token"]] == ["pets:read", "pets:write"]


def test_a_token_about_to_expire_is_replaced_before_the_call(auth, api):
    class Store(MemoryTokenStore):
        def save(self, key: str, record: dict[str, Any]) -> None:
            self.keys.add(key)
            super().save(key, record)

    store = Store()
    store.keys = set()
    toolkit = Toolkit.from_openapi(
        document(api, auth.issuer + "/token"),
        credentials={"oauth": client(token_store=store)},
    )
    assert not toolkit.execute("listPets", {}).is_error
    [key] = store.keys
    record = store.load(key)
    assert record is not None
    record["tokens"]["expires_at"] = time.time() - 1  # as if its hour had passed
    store.save(key, record)
    assert not toolkit.execute("listPets", {}).is_error
    assert auth.count("token", "client_credentials") == 2
    first, second = (seen["headers"]["authorization"] for seen in api.requests)
    assert first != second


def test_a_refused_client_is_an_error_naming_the_scheme_never_the_secret(auth, api, caplog):
    wrong = OpenApiOAuth(
        OAuth(grant="client_credentials", client_id="agent", client_secret="not-the-secret")
    )
    toolkit = Toolkit.from_openapi(
        document(api, auth.issuer + "/token"), credentials={"oauth": wrong}
    )
    with caplog.at_level("DEBUG", logger="toolnexus"):
        result = toolkit.execute("listPets", {})
    assert result.is_error
    assert "no OAuth token for security scheme 'oauth'" in result.output
    assert "invalid_client" in result.output
    assert "not-the-secret" not in result.output + caplog.text
    assert api.requests == []  # no request went out without its token


def test_a_scheme_without_a_client_credentials_flow_says_to_pass_a_callable(auth, api):
    toolkit = Toolkit.from_openapi(
        document(api, auth.issuer + "/token", flow="authorizationCode"),
        credentials={"oauth": client()},
    )
    result = toolkit.execute("listPets", {})
    assert result.is_error and "no oauth2 clientCredentials flow" in result.output
    assert auth.seen["token"] == [] and api.requests == []
    # a sign-in flow keeps taking a token callable
    with_callable = Toolkit.from_openapi(
        document(api, auth.issuer + "/token", flow="authorizationCode"),
        credentials={"oauth": lambda: "user-token"},
    )
    assert not with_callable.execute("listPets", {}).is_error
    assert api.requests[-1]["headers"]["authorization"] == "Bearer user-token"


def test_only_machine_grants_are_taken():
    with pytest.raises(ValueError, match="grant='client_credentials'"):
        OpenApiOAuth(OAuth())  # a sign-in: not for a tool call
    with pytest.raises(TypeError):
        OpenApiOAuth({"client_id": "agent"})  # type: ignore[arg-type]


def test_a_token_url_elsewhere_over_plain_http_is_refused(api):
    # the client secret would cross the network in clear: nothing is sent
    toolkit = Toolkit.from_openapi(
        document(api, "http://10.0.0.1/token"), credentials={"oauth": client()}
    )
    result = toolkit.execute("listPets", {})
    assert result.is_error and "over plain http: refused" in result.output
    assert "agent-secret" not in result.output
    assert api.requests == []


def test_private_key_jwt(api):
    pytest.importorskip("jwt")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with AuthServer(tokens="opaque") as auth:
        auth.register("signer", public_key=key.public_key())
        credential = OpenApiOAuth(
            OAuth(grant="client_credentials", client_id="signer", private_key=lambda: pem)
        )
        toolkit = Toolkit.from_openapi(
            document(api, auth.issuer + "/token"), credentials={"oauth": credential}
        )
        result = toolkit.execute("listPets", {})
        assert not result.is_error, result.output
        [request] = auth.seen["token"]
    assert request["client_assertion_type"].endswith("jwt-bearer")
    assert "client_secret" not in request


def test_the_flow_takes_a_token_endpoint_directly_only_for_a_machine_grant(auth):
    from toolnexus.errors import OAuthError
    from toolnexus.mcp._client._oauth import OAuthFlow

    signing_in = OAuthFlow(OAuth(), "http://127.0.0.1:9/api", "api")
    with pytest.raises(OAuthError, match="grant='client_credentials'"):
        signing_in.token_header(auth.issuer + "/token")
    machine = OAuthFlow(
        OAuth(grant="client_credentials", client_id="agent", client_secret="agent-secret"),
        "http://127.0.0.1:9/api",
        "api",
    )
    header = machine.token_header(auth.issuer + "/token", "pets:read")
    assert header.startswith("Bearer at-")
    assert machine.token_header(auth.issuer + "/token", "pets:read") == header  # kept
    assert auth.count("token") == 1


def test_an_mcp_json_openapi_entry_takes_client_credentials_as_auth_does(
    auth, api, tmp_path, monkeypatch
):
    import json

    from toolnexus.mcp import McpSource

    monkeypatch.setenv("AGENT_SECRET", "agent-secret")
    (tmp_path / "api.json").write_text(json.dumps(document(api, auth.issuer + "/token")))
    oauth = {
        "type": "oauth",
        "grant": "client_credentials",
        "clientId": "agent",
        "clientSecret": "${AGENT_SECRET}",
    }
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "pets": {
                        "type": "openapi",
                        "document": "api.json",
                        "credentials": {"oauth": oauth},
                    },
                    "unset": {
                        "type": "openapi",
                        "document": "api.json",
                        "prefix": "u_",
                        "credentials": {"oauth": {**oauth, "clientSecret": "${NOPE_X}"}},
                    },
                }
            }
        )
    )
    with McpSource(config).connect() as source:
        status = source.status()
        assert status["pets"].status == "connected"
        assert status["unset"].status == "failed" and "NOPE_X" in (status["unset"].reason or "")
        result = source.toolkit.execute("pets_listPets", {})
    assert not result.is_error, result.output
    [request] = auth.seen["token"]
    assert request["grant_type"] == "client_credentials" and request["scope"] == "pets:read"
    assert api.requests[-1]["headers"]["authorization"].startswith("Bearer at-")
