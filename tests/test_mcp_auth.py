"""The HTTP server as an OAuth 2.1 protected resource (``toolnexus.mcp._server._auth``), with a
verifier function (no extra needed): the metadata (RFC 9728), 401 challenges that name
it, expiry, audience binding (RFC 8707), scopes per request and per tool (403
insufficient_scope), the principal on ``ctx.principal`` in both eras and over both
transports, legacy sessions owned by a principal, and tokens never logged."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import json
import logging
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cli_helpers import ROOT, child_env, run
from http_helpers import send
from toolnexus import Principal, Toolkit, tool
from toolnexus._context import ToolContext
from toolnexus.mcp import HttpServer, ProtectedResource, ServerOptions, asgi_app
from toolnexus.mcp._shared._oauth_common import parse_challenge

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
ISSUER = "https://login.example.com"


@tool
def whoami(ctx: ToolContext) -> str:
    """Says who called, as the server verified it."""
    principal = ctx.principal
    if principal is None:
        return "nobody"
    return f"{principal.subject} {sorted(principal.scopes)} {principal.client_id}"


@tool
def deploy(env: str) -> str:
    """Deploys (needs deploy:write)."""
    return f"deployed to {env}"


TOOLKIT = Toolkit([whoami, deploy])


@contextlib.contextmanager
def serving_protected(issuer: str, *extra: str) -> Iterator[tuple[str, str]]:
    """``toolnexus serve --http 0`` of TOOLKIT, taking OAuth tokens from ``issuer`` (scope
    ``mcp``; ``deploy`` also needs ``deploy:write``; ``extra`` flags on top): yields its
    URL and its first line."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolnexus",
            "serve",
            "test_mcp_auth:TOOLKIT",
            "--http",
            "0",
            "--oauth-issuer",
            issuer,
            "--oauth-scope",
            "mcp",
            "--oauth-tool-scope",
            "deploy=deploy:write",
            *extra,
        ],
        cwd=ROOT / "tests",
        env=child_env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        assert found, line
        yield found.group(0), line
    finally:
        process.terminate()
        process.wait(30)


class Tokens:
    """A verifier: the tokens it knows and the principal each speaks for."""

    def __init__(self) -> None:
        self.known: dict[str, Principal] = {}
        self.calls = 0

    def add(
        self,
        token: str,
        audience: str | None,
        scopes: str = "mcp",
        subject: str = "alice",
        expires_in: float = 3600,
    ) -> str:
        self.known[token] = Principal(
            subject,
            scopes=scopes,
            client_id="app",
            issuer=ISSUER,
            audience=(audience,) if audience else (),
            expires_at=time.time() + expires_in,
        )
        return token

    def __call__(self, token: str) -> Principal | None:
        self.calls += 1
        return self.known.get(token)


def protected(tokens: Tokens, **extra: Any) -> ServerOptions:
    auth = ProtectedResource(
        authorization_servers=[ISSUER],
        verifier=tokens,
        required_scopes=["mcp"],
        tool_scopes={"deploy": ["deploy:write"]},
        **extra,
    )
    return ServerOptions(auth=auth)


@pytest.fixture
def tokens() -> Tokens:
    return Tokens()


@pytest.fixture
def server(tokens: Tokens) -> Iterator[HttpServer]:
    with HttpServer(TOOLKIT, protected(tokens), port=0) as running:
        running.start()
        yield running


def modern(
    server: HttpServer, method: str, params: dict[str, Any], token: str | None
) -> tuple[int, dict[str, str], bytes]:
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": MODERN}}
    return send(server, "POST", "/mcp", message, headers)


def send_at(
    server: HttpServer, host: str, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    """:func:`send` with the ``Host`` header ``host`` (what a DNS-rebinding page, or an
    attacker, sends)."""
    return send(server, method, path, body, {"Host": host})


def modern_at(
    server: HttpServer, host: str, method: str, params: dict[str, Any], token: str | None
) -> tuple[int, dict[str, str], bytes]:
    """:func:`modern` with the ``Host`` header ``host``."""
    headers = {"Host": host, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": MODERN}}
    return send(server, "POST", "/mcp", message, headers)


def metadata_url(url: str) -> str:
    """Where the metadata of the endpoint at ``url`` is (RFC 9728 path insertion)."""
    return url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")


def text_of(body: bytes) -> str:
    return str(json.loads(body)["result"]["content"][0]["text"])


# --------------------------------------------------------------------------- metadata


def test_the_metadata_names_the_resource_its_authorization_servers_and_scopes(
    server: HttpServer,
) -> None:
    status, headers, body = send(server, "GET", "/.well-known/oauth-protected-resource/mcp")
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body) == {
        "resource": server.url,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolnexus",
        "scopes_supported": ["mcp", "deploy:write"],
    }


def test_a_configured_resource_is_published_and_its_metadata_path_served_too(
    tokens: Tokens,
) -> None:
    options = protected(tokens, resource="https://tools.example.com/team/mcp")
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource/team/mcp",
        ):
            status, _, body = send(running, "GET", path)
            assert status == 200
            assert json.loads(body)["resource"] == "https://tools.example.com/team/mcp"
        status, headers, _ = modern(running, "tools/list", {}, None)
    assert status == 401
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge is not None
    assert challenge["resource_metadata"] == (
        "https://tools.example.com/.well-known/oauth-protected-resource/team/mcp"
    )


def test_without_auth_there_is_no_metadata(tokens: Tokens) -> None:
    with HttpServer(TOOLKIT, port=0) as running:
        running.start()
        status, _, _ = send(running, "GET", "/.well-known/oauth-protected-resource/mcp")
    assert status == 404


def test_the_metadata_is_read_only(server: HttpServer) -> None:
    status, headers, _ = send(server, "POST", "/.well-known/oauth-protected-resource/mcp", {})
    assert status == 405 and headers["allow"] == "GET, HEAD"


# --------------------------------------------------------------------------- refusals


def test_a_request_without_a_token_gets_401_naming_the_metadata_and_the_scope(
    server: HttpServer,
) -> None:
    status, headers, body = modern(server, "tools/list", {}, None)
    assert status == 401
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge == {
        "resource_metadata": metadata_url(server.url),
        "scope": "mcp",
    }
    assert b"needs an OAuth access token" in body


def test_an_unknown_token_is_refused_401_invalid_token(server: HttpServer) -> None:
    status, headers, body = modern(server, "tools/list", {}, "made-up")
    assert status == 401
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge is not None and challenge["error"] == "invalid_token"
    assert b"made-up" not in body  # what was presented is never echoed


def test_an_expired_token_is_refused_saying_it_expired(server: HttpServer, tokens: Tokens) -> None:
    token = tokens.add("old", server.url, expires_in=-60)
    status, headers, _ = modern(server, "tools/list", {}, token)
    assert status == 401
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge is not None
    assert challenge["error"] == "invalid_token"
    assert challenge["error_description"] == "the access token expired"


def test_a_token_issued_for_another_resource_is_refused(server: HttpServer, tokens: Tokens) -> None:
    token = tokens.add("elsewhere", "https://other.example.com/mcp")
    status, headers, body = modern(server, "tools/list", {}, token)
    assert status == 401
    assert b"issued for another resource" in body
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge is not None and challenge["error"] == "invalid_token"
    no_audience = tokens.add("nowhere", None)
    assert modern(server, "tools/list", {}, no_audience)[0] == 401


def test_an_audience_option_accepts_the_identity_providers_api_id(tokens: Tokens) -> None:
    options = protected(tokens, audience=["api://toolnexus"])
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        api = tokens.add("api", "api://toolnexus")
        url = tokens.add("url", running.url)
        assert modern(running, "tools/list", {}, api)[0] == 200
        assert modern(running, "tools/list", {}, url)[0] == 401


def test_a_token_without_the_required_scope_gets_403_insufficient_scope(
    server: HttpServer, tokens: Tokens
) -> None:
    token = tokens.add("narrow", server.url, scopes="profile")
    status, headers, body = modern(server, "tools/list", {}, token)
    assert status == 403
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge is not None
    assert challenge["error"] == "insufficient_scope" and challenge["scope"] == "mcp"
    assert b"lacks the scope(s) mcp" in body


def test_a_tool_call_without_the_tools_scope_gets_403_naming_what_is_missing(
    server: HttpServer, tokens: Tokens
) -> None:
    token = tokens.add("basic", server.url, scopes="mcp")
    assert modern(server, "tools/list", {}, token)[0] == 200
    call = {"name": "deploy", "arguments": {"env": "prod"}}
    status, headers, body = modern(server, "tools/call", call, token)
    assert status == 403
    challenge = parse_challenge(headers["www-authenticate"])
    assert challenge is not None
    assert challenge["error"] == "insufficient_scope"
    assert challenge["scope"] == "mcp deploy:write"  # what to ask for: the union
    assert challenge["error_description"] == "missing scope(s) for calling 'deploy': deploy:write"
    wide = tokens.add("wide", server.url, scopes="mcp deploy:write")
    status, _, body = modern(server, "tools/call", call, wide)
    assert status == 200 and text_of(body) == "deployed to prod"


# --------------------------------------------------------------------------- the principal


def test_the_tool_sees_the_verified_principal_on_the_modern_era(
    server: HttpServer, tokens: Tokens
) -> None:
    token = tokens.add("alice", server.url, scopes="mcp read")
    status, _, body = modern(server, "tools/call", {"name": "whoami", "arguments": {}}, token)
    assert status == 200
    assert text_of(body) == "alice ['mcp', 'read'] app"


def initialize(server: HttpServer, token: str) -> str:
    message = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    status, headers, _ = send(server, "POST", "/mcp", message, {"Authorization": f"Bearer {token}"})
    assert status == 200
    session = headers["mcp-session-id"]
    send(
        server,
        "POST",
        "/mcp",
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"Authorization": f"Bearer {token}", "Mcp-Session-Id": session},
    )
    return session


def legacy_call(
    server: HttpServer, session: str, token: str, name: str
) -> tuple[int, dict[str, str], bytes]:
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}},
    }
    return send(
        server,
        "POST",
        "/mcp",
        message,
        {"Authorization": f"Bearer {token}", "Mcp-Session-Id": session},
    )


def test_the_tool_sees_the_principal_on_a_legacy_session_across_a_refreshed_token(
    server: HttpServer, tokens: Tokens
) -> None:
    first = tokens.add("first", server.url, scopes="mcp")
    session = initialize(server, first)
    status, _, body = legacy_call(server, session, first, "whoami")
    assert status == 200 and text_of(body) == "alice ['mcp'] app"
    # A refreshed token of the same person through the same client keeps the session.
    refreshed = tokens.add("refreshed", server.url, scopes="mcp read")
    status, _, body = legacy_call(server, session, refreshed, "whoami")
    assert status == 200 and text_of(body) == "alice ['mcp', 'read'] app"
    # Someone else's token does not find it.
    mallory = tokens.add("mallory", server.url, subject="mallory")
    status, _, _ = legacy_call(server, session, mallory, "whoami")
    assert status == 404


def test_middleware_around_a_served_call_sees_the_principal(tokens: Tokens) -> None:
    seen: list[Any] = []

    def audit(call: Any, call_next: Any) -> Any:
        principal = call.context.principal if call.context is not None else None
        seen.append((call.name, principal.subject if principal is not None else None))
        return call_next(call)

    options = protected(tokens).replace(middleware=[audit])
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        token = tokens.add("audited", running.url)
        call = {"name": "deploy", "arguments": {"env": "x"}}
        wide = tokens.add("audited-wide", running.url, scopes="mcp deploy:write")
        assert modern(running, "tools/call", call, wide)[0] == 200
        assert modern(running, "tools/call", call, token)[0] == 403  # never reaches the chain
    assert seen == [("deploy", "alice")]


def test_a_verify_token_function_may_return_the_principal_tools_see() -> None:
    def verify(token: str) -> Principal | None:
        return Principal("bob", scopes=["x"]) if token == "bobs-token" else None

    with HttpServer(TOOLKIT, ServerOptions(verify_token=verify), port=0) as running:
        running.start()
        call = {"name": "whoami", "arguments": {}}
        status, _, body = modern(running, "tools/call", call, "bobs-token")
        assert status == 200 and text_of(body) == "bob ['x'] None"
        assert modern(running, "tools/call", call, "wrong")[0] == 401


def test_without_oauth_a_tool_sees_no_principal() -> None:
    with HttpServer(TOOLKIT, port=0) as running:
        running.start()
        status, _, body = modern(running, "tools/call", {"name": "whoami", "arguments": {}}, None)
    assert status == 200 and text_of(body) == "nobody"


# --------------------------------------------------------------------------- the ASGI app


async def asgi(
    app: Any, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    data = b"" if body is None else json.dumps(body).encode()
    sent = {
        "host": "localhost:8000",
        "content-type": "application/json",
        "accept": "application/json",
        **{k.lower(): v for k, v in (headers or {}).items()},
    }
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "scheme": "http",
        "headers": [(k.encode(), v.encode()) for k, v in sent.items()],
    }
    events: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send_event(event: dict[str, Any]) -> None:
        events.append(event)

    await app(scope, receive, send_event)
    start = next(e for e in events if e["type"] == "http.response.start")
    return (
        start["status"],
        {k.decode(): v.decode() for k, v in start["headers"]},
        b"".join(e.get("body", b"") for e in events if e["type"] == "http.response.body"),
    )


def test_the_asgi_app_serves_the_metadata_refuses_and_passes_the_principal(
    tokens: Tokens,
) -> None:
    resource = "http://localhost:8000/mcp"
    app = asgi_app(TOOLKIT, protected(tokens, resource=resource))

    async def main() -> None:
        status, _, body = await asgi(app, "GET", "/.well-known/oauth-protected-resource/mcp")
        assert status == 200 and json.loads(body)["resource"] == resource
        headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}, "_meta": MODERN},
        }
        headers["mcp-name"] = "whoami"
        status, answer, _ = await asgi(app, "POST", "/mcp", message, headers)
        assert status == 401
        challenge = parse_challenge(answer["www-authenticate"])
        assert challenge is not None
        assert challenge["resource_metadata"] == (
            "http://localhost:8000/.well-known/oauth-protected-resource/mcp"
        )
        token = tokens.add("asgi", resource)
        status, _, body = await asgi(
            app, "POST", "/mcp", message, {**headers, "authorization": f"Bearer {token}"}
        )
        assert status == 200 and text_of(body) == "alice ['mcp'] app"
        deploy_call = {
            **message,
            "params": {"name": "deploy", "arguments": {"env": "x"}, "_meta": MODERN},
        }
        status, answer, _ = await asgi(
            app,
            "POST",
            "/mcp",
            deploy_call,
            {**headers, "mcp-name": "deploy", "authorization": f"Bearer {token}"},
        )
        assert status == 403
        assert "insufficient_scope" in answer["www-authenticate"]

    try:
        asyncio.run(main())
    finally:
        app.close()


# --------------------------------------------------------------------------- secrets


def test_a_failing_verifier_gets_503_and_the_token_stays_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(token: str) -> Principal | None:
        raise RuntimeError(f"cannot check {token}")

    options = ServerOptions(auth=ProtectedResource(authorization_servers=[ISSUER], verifier=broken))
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        status, headers, _ = modern(running, "tools/list", {}, "s3cr3t-token-value")
    assert status == 503 and headers["retry-after"] == "5"
    assert "RuntimeError" in caplog.text
    assert "s3cr3t-token-value" not in caplog.text


def test_no_token_reaches_the_log_through_a_whole_exchange(
    server: HttpServer, tokens: Tokens, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = tokens.add("never-logged-token-1234", server.url, scopes="mcp")
    modern(server, "tools/call", {"name": "whoami", "arguments": {}}, token)
    modern(server, "tools/call", {"name": "deploy", "arguments": {"env": "x"}}, token)
    modern(server, "tools/list", {}, "never-logged-bad-token")
    assert "never-logged" not in caplog.text


# --------------------------------------------------------------------------- options


def test_a_network_address_may_listen_with_oauth(tokens: Tokens) -> None:
    options = protected(tokens, resource="https://mcp.example.com/mcp")
    with HttpServer(TOOLKIT, options, host="0.0.0.0", port=0) as running:
        assert running.address[0] == "0.0.0.0"


# --------------------------------------------------------------------------- the resource


def test_a_token_for_another_local_server_is_refused_whatever_host_it_names(
    tokens: Tokens,
) -> None:
    """Issue 36, item 3: the audience came from the request's Host, and the Host allow-list
    compared names only — a token issued to another MCP server on this machine, sent with
    that server's Host, was accepted."""
    elsewhere = tokens.add("for-9999", "http://localhost:9999/mcp", scopes="mcp deploy:write")
    call = {"name": "deploy", "arguments": {"env": "prod"}}
    with HttpServer(TOOLKIT, protected(tokens), port=0) as running:
        running.start()
        status, headers, body = modern_at(running, "localhost:9999", "tools/call", call, elsewhere)
        assert status == 401 and b"issued for another resource" in body
    # Where every Host is answered too, the audience is this server's own URL.
    with HttpServer(TOOLKIT, protected(tokens).replace(allowed_hosts=["*"]), port=0) as running:
        running.start()
        status, headers, body = modern_at(running, "localhost:9999", "tools/call", call, elsewhere)
        assert status == 401 and b"issued for another resource" in body
        challenge = parse_challenge(headers["www-authenticate"])
        assert challenge is not None
        assert challenge["resource_metadata"] == metadata_url(running.url)
        status, _, body = send_at(
            running, "localhost:9999", "GET", "/.well-known/oauth-protected-resource/mcp"
        )
        assert status == 200 and json.loads(body)["resource"] == running.url


def test_the_resource_is_the_listening_address_and_localhost_at_its_port(tokens: Tokens) -> None:
    with HttpServer(TOOLKIT, protected(tokens), port=0) as running:
        running.start()
        port = running.address[1]
        by_name = f"http://localhost:{port}/mcp"
        path = "/.well-known/oauth-protected-resource/mcp"
        status, _, body = send_at(running, f"localhost:{port}", "GET", path)
        assert status == 200 and json.loads(body)["resource"] == by_name
        status, _, body = send_at(running, f"127.0.0.1:{port}", "GET", path)
        assert status == 200 and json.loads(body)["resource"] == running.url
        # A token for either of this server's own URLs is accepted, whichever it is asked by.
        for token in (tokens.add("by-name", by_name), tokens.add("by-address", running.url)):
            for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
                status, _, _ = modern_at(running, host, "tools/list", {}, token)
                assert status == 200, (token, host)


def test_an_allowed_host_entry_with_a_port_answers_for_that_port_only() -> None:
    options = ServerOptions(allowed_hosts=["tools.example.com:8443", "any-port.example.com"])
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        answers = {
            host: modern_at(running, host, "tools/list", {}, None)[0]
            for host in (
                "tools.example.com:8443",
                "tools.example.com:8444",
                "tools.example.com",
                "any-port.example.com:1234",
                "localhost:1234",  # local names: any port (a local proxy in front)
            )
        }
    assert answers == {
        "tools.example.com:8443": 200,
        "tools.example.com:8444": 421,
        "tools.example.com": 421,
        "any-port.example.com:1234": 200,
        "localhost:1234": 200,
    }


def test_oauth_without_a_resource_is_refused_where_none_can_be_derived(tokens: Tokens) -> None:
    with pytest.raises(ValueError, match=r"ProtectedResource\(resource=\.\.\.\) is required"):
        asgi_app(TOOLKIT, protected(tokens))
    with pytest.raises(ValueError, match=r"listening on '0\.0\.0\.0'.*--oauth-resource"):
        HttpServer(TOOLKIT, protected(tokens), host="0.0.0.0", port=0)


def test_serve_on_every_interface_with_oauth_asks_for_the_resource() -> None:
    result = run(
        "serve",
        "test_mcp_auth:TOOLKIT",
        "--http",
        "0.0.0.0:0",
        "--oauth-issuer",
        ISSUER,
        "--oauth-introspect",
        "https://login.example.com/introspect",
        cwd=ROOT / "tests",
    )
    assert result.returncode != 0
    assert "--oauth-resource" in result.stderr and "Traceback" not in result.stderr


def test_the_asgi_app_accepts_only_its_configured_resource_whatever_the_host(
    tokens: Tokens,
) -> None:
    app = asgi_app(
        TOOLKIT,
        protected(tokens, resource="http://localhost:8000/mcp").replace(allowed_hosts=["*"]),
    )
    elsewhere = tokens.add("asgi-9999", "http://localhost:9999/mcp")
    headers = {
        "host": "localhost:9999",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
        "authorization": f"Bearer {elsewhere}",
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN}}
    try:
        status, _, body = asyncio.run(asgi(app, "POST", "/mcp", message, headers))
    finally:
        app.close()
    assert status == 401 and b"issued for another resource" in body


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"authorization_servers": []}, "at least one issuer URL"),
        ({"authorization_servers": ["login.example.com"]}, "not an absolute http"),
        ({"verifier": "yes"}, "must be callable"),
        ({"resource": "https://x/mcp#frag"}, "without a fragment"),
        ({"required_scopes": ["two words"]}, "two words"),
        ({"tool_scopes": {"deploy": [""]}}, "non-empty strings"),
        ({"leeway_ms": -1}, "leeway_ms must be an int >= 0"),
    ],
)
def test_a_bad_protected_resource_is_refused_naming_the_field(
    changes: dict[str, Any], message: str
) -> None:
    settings: dict[str, Any] = {"authorization_servers": [ISSUER], "verifier": Tokens()}
    with pytest.raises((ValueError, TypeError), match=message):
        ProtectedResource(**{**settings, **changes})


def test_auth_and_a_static_token_exclude_each_other() -> None:
    auth = ProtectedResource(authorization_servers=[ISSUER], verifier=Tokens())
    with pytest.raises(ValueError, match="give one of token, verify_token and auth"):
        ServerOptions(auth=auth, token="abc")
    with pytest.raises(TypeError, match=r"must be a toolnexus\.mcp\.ProtectedResource"):
        ServerOptions(auth="oauth")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- token checks


class SlowTokens(Tokens):
    """A verifier like an introspection endpoint that hangs for tokens it does not know:
    each such check waits at ``gate``; ``entered`` counts the checks that reached it."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Semaphore(0)
        self.asked: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def __call__(self, token: str) -> Principal | None:
        with self._lock:
            self.asked[token] += 1
        if token in self.known:
            return self.known[token]
        self.entered.release()
        self.gate.wait(60)
        return None


@pytest.fixture
def slow() -> Iterator[SlowTokens]:
    verifier = SlowTokens()
    yield verifier
    verifier.gate.set()


def test_a_slow_verifier_stalls_no_client_whose_token_was_accepted(slow: SlowTokens) -> None:
    """Issue 36, item 7: made-up tokens whose checks hang held every request thread, and a
    client whose token was accepted waited behind them."""
    with HttpServer(TOOLKIT, protected(slow).replace(max_requests=8), port=0) as running:
        running.start()
        good = slow.add("good", running.url)
        assert modern(running, "tools/list", {}, good)[0] == 200
        statuses: list[int] = []

        def made_up(number: int) -> None:
            statuses.append(modern(running, "tools/list", {}, f"made-up-{number}")[0])

        threads = [threading.Thread(target=made_up, args=(n,)) for n in range(12)]
        for thread in threads:
            thread.start()
        for _ in range(4):  # the checking threads all hang now
            assert slow.entered.acquire(timeout=30)
        # While they hang, the accepted token is served (from memory: asked once in all).
        assert modern(running, "tools/list", {}, good)[0] == 200
        assert slow.asked["good"] == 1
        slow.gate.set()
        for thread in threads:
            thread.join(30)
    # Each made-up token was refused (401), or told the checks were full (503) — which of
    # them depends on when each arrived, before or after the gate opened.
    assert len(statuses) == 12 and set(statuses) <= {401, 503}


def test_the_busy_answer_says_to_retry_soon(slow: SlowTokens) -> None:
    with HttpServer(TOOLKIT, protected(slow).replace(max_requests=2), port=0) as running:
        running.start()
        waiting = threading.Thread(target=modern, args=(running, "tools/list", {}, "hangs"))
        waiting.start()
        assert slow.entered.acquire(timeout=30)
        status, headers, body = modern(running, "tools/list", {}, "another")
        slow.gate.set()
        waiting.join(30)
    assert status == 503 and headers["retry-after"] == "1"
    assert b"too many access tokens are being verified" in body


def test_a_refused_token_is_refused_again_without_asking_the_verifier(
    server: HttpServer, tokens: Tokens
) -> None:
    for _ in range(3):
        assert modern(server, "tools/list", {}, "made-up")[0] == 401
    good = tokens.add("good", server.url)
    for _ in range(3):
        assert modern(server, "tools/list", {}, good)[0] == 200
    assert tokens.calls == 2  # once each


def test_cache_ms_0_asks_the_verifier_every_time(tokens: Tokens) -> None:
    with HttpServer(TOOLKIT, protected(tokens, cache_ms=0), port=0) as running:
        running.start()
        good = tokens.add("good", running.url)
        for token in ("made-up", "made-up", good, good):
            modern(running, "tools/list", {}, token)
    assert tokens.calls == 4


def test_the_asgi_app_serves_an_accepted_token_while_others_are_being_checked(
    slow: SlowTokens,
) -> None:
    """Issue 36, item 7, on the ASGI app: checks ran on the loop's default executor, so a
    few made-up tokens stalled every client."""
    resource = "http://localhost:8000/mcp"
    app = asgi_app(TOOLKIT, protected(slow, resource=resource))
    good = slow.add("good", resource)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN}}

    def listing(token: str) -> Any:
        headers = {
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/list",
            "authorization": f"Bearer {token}",
        }
        return asgi(app, "POST", "/mcp", message, headers)

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        assert (await listing(good))[0] == 200
        made_up = [asyncio.ensure_future(listing(f"made-up-{n}")) for n in range(12)]
        with concurrent.futures.ThreadPoolExecutor(1) as waiter:
            for _ in range(4):
                assert await loop.run_in_executor(waiter, slow.entered.acquire, True, 30)
        assert (await asyncio.wait_for(listing(good), 30))[0] == 200
        slow.gate.set()
        return [status for status, _, _ in await asyncio.gather(*made_up)]

    try:
        statuses = asyncio.run(main())
    finally:
        app.close()
    assert statuses == [401] * 12
    assert slow.asked["good"] == 1
