"""The official MCP Python SDK client's OAuth flow against ``toolnexus serve --http``
protected by a test authorization server (``tests/oauth_server.py``), in both eras: the
SDK reads our 401 and metadata, registers, authorizes with PKCE and the resource, calls
with the token it got, and steps up when a tool needs another scope. Needs the interop
and jwt extras: skipped without them, unless TOOLNEXUS_REQUIRE_INTEROP=1 /
TOOLNEXUS_REQUIRE_JWT=1 (CI sets both)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from extras import require

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp", "httpx2")
require("TOOLNEXUS_REQUIRE_JWT", "jwt", "jwt", "cryptography")

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from oauth_server import AuthServer
from test_mcp_auth import serving_protected
from timing import TIMEOUT

MODES = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def auth() -> Iterator[AuthServer]:
    with AuthServer() as running:
        yield running


@pytest.fixture(scope="module")
def url(auth: AuthServer) -> Iterator[str]:
    with serving_protected(auth.issuer) as (url, _):
        yield url


class Storage:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The user: opens the authorization URL; the test server approves at once and
    redirects, and the redirect's query is what the callback hands back."""

    def __init__(self) -> None:
        self.visited: list[str] = []
        self.redirect: str | None = None

    async def open(self, url: str) -> None:
        self.visited.append(url)
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            answer = await http.get(url)
        assert answer.status_code == 302, answer.text
        self.redirect = answer.headers["location"]

    async def callback(self) -> AuthorizationCodeResult:
        assert self.redirect is not None
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.redirect).query).items()}
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )


def connect(url: str, mode: str, body: Any) -> tuple[Any, Browser]:
    browser = Browser()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="sdk-interop",
            redirect_uris=["http://127.0.0.1:9/callback"],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
        ),
        storage=Storage(),
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )

    async def main() -> Any:
        with anyio.fail_after(TIMEOUT):
            async with httpx2.AsyncClient(auth=provider, timeout=TIMEOUT) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                    return await body(client)

    return anyio.run(main), browser


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_authorizes_and_the_tool_sees_its_principal(
    url: str, auth: AuthServer, mode: str
) -> None:
    async def body(client: Any) -> Any:
        listed = await client.list_tools()
        result = await client.call_tool("whoami", {})
        return [tool.name for tool in listed.tools], result

    (names, result), browser = connect(url, mode, body)
    assert names == ["whoami", "deploy"]
    assert result.is_error is False
    assert result.content[0].text.startswith("alice ['mcp'] client-")
    [visited] = browser.visited
    query = parse_qs(urlsplit(visited).query)
    assert query["scope"] == ["mcp"]  # from our 401's scope
    assert query["resource"] == [url]  # RFC 8707, as our metadata names it
    assert query["code_challenge_method"] == ["S256"]


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_steps_up_when_a_tool_needs_another_scope(
    url: str, auth: AuthServer, mode: str
) -> None:
    async def body(client: Any) -> Any:
        await client.list_tools()  # authorized for "mcp" first, as a session starts
        return await client.call_tool("deploy", {"env": "staging"})

    result, browser = connect(url, mode, body)
    assert result.is_error is False
    assert result.content[0].text == "deployed to staging"
    scopes = [parse_qs(urlsplit(visited).query)["scope"][0] for visited in browser.visited]
    assert scopes == ["mcp", "mcp deploy:write"]  # our 403 named the union to ask for
