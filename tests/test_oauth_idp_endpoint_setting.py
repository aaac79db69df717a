"""``OAuth(grant="id_jag", idp_token_endpoint=...)``: the identity provider's endpoint is
the user's own setting, so it is checked when ``OAuth(...)`` is made — an https URL with a
host (plain http to loopback only, as for a server's endpoints) — and a refusal at sign-in
names that setting, never the MCP server's discovery."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from oauth_server import AuthServer
from test_mcp_auth import TOOLKIT
from toolnexus import McpError
from toolnexus.mcp import HttpServer, McpClient, OAuth, ProtectedResource, ServerOptions

SETTINGS: dict[str, Any] = {
    "client_id": "ci-agent",
    "client_secret": "s3cret",
    "grant": "id_jag",
    "assertion": lambda: "id-token",
    "idp_client_id": "x",
}


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("not a url", "must be an https URL with a host"),
        ("ftp://idp.example.com/token", "must be an https URL with a host"),
        ("https:///token", "must be an https URL with a host"),
        ("https://idp.example.com/token#frag", "no fragment"),
        ("http://example.com/idp", r"must be an https URL \(plain http only to loopback"),
        ("http://10.0.0.5/idp", "plain http only to loopback"),
        ("http://127.example.com/idp", "plain http only to loopback"),
    ],
)
def test_a_bad_identity_provider_endpoint_is_refused_when_oauth_is_made(
    endpoint: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem) as refused:
        OAuth(**SETTINGS, idp_token_endpoint=endpoint)
    assert "OAuth.idp_token_endpoint" in str(refused.value)
    assert repr(endpoint) in str(refused.value)


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://idp.example.com/oauth2/token",
        "https://idp.example.com:8443/token",
        "http://127.0.0.1:9000/idp/token",
        "http://localhost/idp",
        "http://[::1]:9000/idp",
        "http://127.0.0.2/idp",
    ],
)
def test_an_https_or_loopback_endpoint_is_taken(endpoint: str) -> None:
    assert OAuth(**SETTINGS, idp_token_endpoint=endpoint).idp_token_endpoint == endpoint


@pytest.fixture
def server() -> Iterator[HttpServer]:
    with AuthServer(tokens="opaque") as auth:
        options = ServerOptions(
            auth=ProtectedResource(
                authorization_servers=[auth.issuer],
                verifier=auth.verify,
                required_scopes=["mcp"],
            )
        )
        with HttpServer(TOOLKIT, options, port=0) as running:
            running.start()
            yield running


def test_a_refusal_at_sign_in_names_the_users_setting_not_discovery(
    server: HttpServer,
) -> None:
    oauth = OAuth(**SETTINGS, idp_token_endpoint="https://169.254.1.1/token", timeout_ms=5000)
    with pytest.raises(McpError) as refused:
        McpClient(url=server.url, auth=oauth).connect()
    message = str(refused.value)
    assert "discovery" not in message
    assert (
        "the identity provider token endpoint https://169.254.1.1/token set in "
        'OAuth.idp_token_endpoint ("idpTokenEndpoint" in mcp.json)'
    ) in message
    assert "link-local address: refused" in message
    assert "allow_private_network=True" in message
