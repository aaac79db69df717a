"""A gateway's token exchange (RFC 8693, ``TokenExchanger``): each caller's token traded
for one scoped to the upstream — two callers with different scopes get different tokens,
none of them the caller's own; one exchange per caller and upstream while it is good; a
refused exchange is one clear error, not asked again at once, and shows no token. Needs
the ``jwt`` extra (the test authorization server signs JWTs): skipped without it, unless
TOOLNEXUS_REQUIRE_JWT=1."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_JWT", "jwt", "jwt", "cryptography")

import jwt

from oauth_server import AuthServer
from toolnexus import Host, Principal, ToolContext, Toolkit, tool
from toolnexus._context import PresentedToken, bound_principal, bound_token
from toolnexus.errors import OAuthError
from toolnexus.mcp import (
    HttpServer,
    JwtVerifier,
    McpClient,
    McpSource,
    ProtectedResource,
    ServerOptions,
    federate,
    resource,
)
from toolnexus.mcp._client._oauth_exchange import TokenExchanger

UPSTREAM = "https://crm.example.com/mcp"


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    with AuthServer() as running:
        running.register("gateway", secret="gateway-secret")
        yield running


def claims(token: str) -> dict[str, object]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


def test_two_callers_get_different_tokens_for_the_upstream_never_their_own(
    auth: AuthServer,
) -> None:
    exchanger = TokenExchanger(auth.issuer + "/token", "gateway", "gateway-secret")
    alice = auth.mint("alice", scopes=["crm:read", "crm:write"], audience="gateway")
    bob = auth.mint("bob", scopes=["crm:read"], audience="gateway")
    for_alice = exchanger.token_for(alice, resource=UPSTREAM, scope="crm:read crm:write")
    for_bob = exchanger.token_for(bob, resource=UPSTREAM, scope="crm:read")
    assert for_alice not in (alice, bob) and for_bob not in (alice, bob)
    assert claims(for_alice)["sub"] == "alice" and claims(for_bob)["sub"] == "bob"
    assert claims(for_alice)["aud"] == claims(for_bob)["aud"] == UPSTREAM
    assert claims(for_alice)["scope"] == "crm:read crm:write"
    assert claims(for_bob)["scope"] == "crm:read"
    # Again for alice: from memory, no second exchange.
    assert exchanger.token_for(alice, resource=UPSTREAM, scope="crm:read crm:write") == for_alice
    assert auth.count("token", "urn:ietf:params:oauth:grant-type:token-exchange") == 2


def test_a_refused_exchange_is_one_clear_error_and_not_asked_again_at_once(
    auth: AuthServer,
) -> None:
    exchanger = TokenExchanger(auth.issuer + "/token", "gateway", "gateway-secret")
    bob = auth.mint("bob", scopes=["crm:read"], audience="gateway")
    for _ in range(5):  # a caller's flood of calls
        with pytest.raises(OAuthError) as refused:
            exchanger.token_for(bob, resource=UPSTREAM, scope="crm:admin")
        problem = str(refused.value)
        assert "token exchange for https://crm.example.com/mcp was refused: invalid_scope" in (
            problem
        )
        assert bob not in problem and "gateway-secret" not in problem
    assert auth.count("token", "urn:ietf:params:oauth:grant-type:token-exchange") == 1


# ---------------------------------------------------------------- through the gateway

EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@tool
def whoami(ctx: ToolContext) -> str:
    """Says who called, as the upstream verified it."""
    principal = ctx.principal
    assert principal is not None
    return f"{principal.subject} {' '.join(sorted(principal.scopes))}"


@resource("crm://me", mime_type="text/plain")
def me(params: dict[str, Any], ctx: ToolContext | None = None) -> str:
    """Who reads, as the upstream verified it."""
    assert ctx is not None and ctx.principal is not None
    return f"read by {ctx.principal.subject}"


class Upstream:
    """A protected upstream (scopes crm:read and crm:write) that records every token it
    is sent (its verifier sees each request's Authorization)."""

    def __init__(self, auth: AuthServer, tool_scopes: dict[str, list[str]] | None = None) -> None:
        self.seen: list[str] = []
        self._lock = threading.Lock()
        self._verify = JwtVerifier(auth.issuer)
        options = ServerOptions(
            auth=ProtectedResource(
                authorization_servers=[auth.issuer],
                verifier=self.verify,
                scopes_supported=["crm:read", "crm:write"],
                tool_scopes=tool_scopes or {},
                cache_ms=0,
            )
        )
        self.server = HttpServer(Toolkit([whoami, me]), options, port=0)

    def verify(self, token: str) -> Principal | None:
        with self._lock:
            self.seen.append(token)
        return self._verify(token)


@pytest.fixture
def upstream(auth: AuthServer) -> Iterator[Upstream]:
    made = Upstream(auth)
    with made.server:
        made.server.start()
        yield made


def gateway_entry(upstream: Upstream, exchange: Any = True) -> dict[str, Any]:
    return {
        "mcpServers": {
            "crm": {
                "url": upstream.server.url,
                "auth": {
                    "type": "oauth",
                    "grant": "client_credentials",
                    "clientId": "gateway",
                    "clientSecret": "gateway-secret",
                    "exchange": exchange,
                },
            }
        }
    }


@pytest.fixture
def gateway(auth: AuthServer, upstream: Upstream) -> Iterator[HttpServer]:
    """The gateway over HTTP, taking the callers' tokens from the same authorization
    server, calling the upstream with each caller's exchanged token."""
    with McpSource(gateway_entry(upstream)).connect() as source:
        assert source.status()["crm"].status == "connected", source.status()
        federate(source)
        options = ServerOptions(
            auth=ProtectedResource(
                authorization_servers=[auth.issuer], verifier=JwtVerifier(auth.issuer)
            )
        )
        with HttpServer(source.toolkit, options, port=0) as served:
            served.start()
            yield served


@contextlib.contextmanager
def bound(token: str, subject: str, scopes: list[str]) -> Iterator[None]:
    """Run as the gateway's server does for a verified caller: its principal and token
    bound for the calls made here."""
    principal = bound_principal.set(Principal(subject=subject, scopes=frozenset(scopes)))
    held = bound_token.set(PresentedToken(token))
    try:
        yield
    finally:
        bound_token.reset(held)
        bound_principal.reset(principal)


def call_as(gateway: HttpServer, token: str) -> tuple[str, bool]:
    headers = {"Authorization": f"Bearer {token}"}
    with McpClient(url=gateway.url, headers=headers) as client:
        result = client.call_tool("crm_whoami")
    return str(result.output), result.is_error


def test_two_callers_reach_the_upstream_through_the_gateway_with_their_own_exchanged_tokens(
    auth: AuthServer, upstream: Upstream, gateway: HttpServer
) -> None:
    alice = auth.mint("alice", scopes=["crm:read", "crm:write", "mail"], audience=gateway.url)
    bob = auth.mint("bob", scopes=["crm:read"], audience=gateway.url)
    listed = len(upstream.seen)  # the gateway's own sign-in (client credentials) listed
    assert call_as(gateway, alice) == ("alice crm:read crm:write", False)
    assert call_as(gateway, bob) == ("bob crm:read", False)
    assert call_as(gateway, alice) == ("alice crm:read crm:write", False)
    calls = upstream.seen[listed:]
    assert len(calls) == 3
    # Never a caller's own token, and never the gateway's own for a caller's call.
    assert alice not in upstream.seen and bob not in upstream.seen
    assert not set(calls) & set(upstream.seen[:listed])
    for_alice, for_bob, again = calls
    assert for_alice != for_bob and again == for_alice  # kept: one exchange per caller
    assert claims(for_alice)["aud"] == claims(for_bob)["aud"] == upstream.server.url
    exchanges = [e for e in auth.seen["token"] if e.get("grant_type") == EXCHANGE]
    assert len(exchanges) == 2
    assert {e["subject_token"] for e in exchanges} == {alice, bob}
    assert [e["scope"] for e in exchanges] == ["crm:read crm:write", "crm:read"]
    assert all(e["resource"] == upstream.server.url for e in exchanges)


def test_a_refused_exchange_through_the_gateway_is_one_named_error_and_no_storm(
    auth: AuthServer, upstream: Upstream, gateway: HttpServer
) -> None:
    carol = auth.mint("carol", scopes=["mail"], audience=gateway.url)  # none of the upstream's
    listed = len(upstream.seen)
    for _ in range(3):
        output, is_error = call_as(gateway, carol)
        assert is_error
        assert "whoami on MCP server crm" in output and "token exchange" in output, output
        assert "refused: invalid_scope" in output and carol not in output
    assert auth.count("token", EXCHANGE) == 1
    assert len(upstream.seen) == listed  # nothing reached the upstream


def test_a_call_without_a_signed_in_caller_is_refused_not_sent_as_the_gateway(
    upstream: Upstream,
) -> None:
    with McpSource(gateway_entry(upstream)).connect() as source:
        listed = len(upstream.seen)
        result = source.toolkit.get("crm_whoami").fn({})
    assert result.is_error and "has no caller signed in with OAuth" in str(result.output)
    assert len(upstream.seen) == listed


def test_bad_exchange_settings_are_refused_naming_the_place(upstream: Upstream) -> None:
    with pytest.raises(
        ValueError, match=r"mcpServers\.crm\.auth\.exchange: unknown key\(s\) audience"
    ):
        McpSource(gateway_entry(upstream, {"audience": "x"}))
    with pytest.raises(ValueError, match=r"mcpServers\.crm\.auth\.exchange: must be true or"):
        McpSource(gateway_entry(upstream, "yes"))


def test_a_caller_asks_the_upstream_only_for_scopes_it_holds_and_its_403_stays_its_own(
    auth: AuthServer,
) -> None:
    """bob holds crm:read of the upstream's crm:read and crm:write: his exchange asks for
    crm:read alone (asking for both would be refused), and the upstream's 403 (whoami
    needs crm:write) is his call's error: no new grant for the gateway, nothing sent as
    the gateway."""
    upstream = Upstream(auth, tool_scopes={"whoami": ["crm:write"]})
    with upstream.server:
        upstream.server.start()
        with McpSource(gateway_entry(upstream)).connect() as source:
            listed = len(upstream.seen)
            grants = auth.count("token", "client_credentials")
            bob = auth.mint("bob", scopes=["crm:read"], audience="gateway")
            with Host(source.toolkit) as host, bound(bob, "bob", ["crm:read"]):
                result = host.call("crm_whoami", {})
    assert result.is_error and "bob" not in str(result.output), result.output
    assert "refuses the caller's exchanged token (403 insufficient_scope" in str(result.output)
    assert "it asks for: crm:write" in str(result.output), result.output
    calls = upstream.seen[listed:]
    assert len(calls) == 1 and claims(calls[0])["sub"] == "bob"
    assert auth.count("token", "client_credentials") == grants


def test_an_exchanged_token_the_upstream_refuses_is_not_sent_again_as_the_gateway(
    auth: AuthServer, upstream: Upstream, gateway: HttpServer
) -> None:
    bob = auth.mint("bob", scopes=["crm:read"], audience=gateway.url)
    listed = len(upstream.seen)
    # From now on the authorization server hands out tokens the upstream does not take.
    auth.tamper = lambda answer: {**answer, "access_token": answer["access_token"] + "x"}
    output, is_error = call_as(gateway, bob)
    assert is_error and "refuses the caller's exchanged token (401 invalid_token" in output, output
    calls = upstream.seen[listed:]
    # One try with bob's exchanged token; never the gateway's own sent in its place.
    assert len(calls) == 1 and calls[0].endswith("x")
    assert auth.count("token", "client_credentials") == 1


def test_a_federated_resource_is_read_with_the_callers_exchanged_token(
    auth: AuthServer, upstream: Upstream, gateway: HttpServer
) -> None:
    bob = auth.mint("bob", scopes=["crm:read"], audience=gateway.url)
    listed = len(upstream.seen)
    with McpClient(url=gateway.url, headers={"Authorization": f"Bearer {bob}"}) as client:
        contents = client.read_resource("crm+crm://me")
    assert [each.get("text") for each in contents] == ["read by bob"]
    calls = upstream.seen[listed:]
    assert len(calls) == 1 and bob not in calls and claims(calls[0])["sub"] == "bob"


def test_exchange_settings_in_mcp_json_override_the_upstreams_and_read_the_environment(
    auth: AuthServer, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXCHANGE_SECRET", "gateway-secret")
    settings = {
        "tokenEndpoint": auth.issuer + "/token",
        "clientId": "gateway",
        "clientSecret": "${EXCHANGE_SECRET}",
        "scopes": "crm:read",
    }
    alice = auth.mint("alice", scopes=["crm:read", "crm:write"], audience="gateway")
    with (
        McpSource(gateway_entry(upstream, settings)).connect() as source,
        Host(source.toolkit) as host,
        bound(alice, "alice", ["crm:read", "crm:write"]),
    ):
        result = host.call("crm_whoami", {})
    assert result.output == "alice crm:read", result.output  # the settings' scopes alone
    exchanges = [e for e in auth.seen["token"] if e.get("grant_type") == EXCHANGE]
    assert [e["scope"] for e in exchanges] == ["crm:read"]
