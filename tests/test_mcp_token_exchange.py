"""A gateway's token exchange (RFC 8693, ``TokenExchanger``): each caller's token traded
for one scoped to the upstream — two callers with different scopes get different tokens,
none of them the caller's own; one exchange per caller and upstream while it is good; a
refused exchange is one clear error, not asked again at once, and shows no token. Needs
the ``jwt`` extra (the test authorization server signs JWTs): skipped without it, unless
TOOLNEXUS_REQUIRE_JWT=1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_JWT", "jwt", "jwt", "cryptography")

import jwt

from oauth_server import AuthServer
from toolnexus.errors import OAuthError
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
