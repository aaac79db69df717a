"""The MCP client as an OAuth 2.1 client (``toolnexus.mcp._client._oauth``) against our own
protected server and a test authorization server (opaque tokens: no extra needed):
sign-in in both eras, step-up, refresh under 50 concurrent calls (exactly one), a revoked
refresh token (one new sign-in, not a loop), a server that keeps answering 401, sign-ins
handed back pending, token stores, ``mcp.json``, and secrets kept out of the log."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from oauth_server import AuthServer
from test_mcp_auth import TOOLKIT
from toolnexus import Answer, Host, McpError, Request, Toolkit
from toolnexus.mcp import (
    FileTokenStore,
    HttpServer,
    McpClient,
    McpSource,
    MemoryTokenStore,
    OAuth,
    ProtectedResource,
    ServerOptions,
)

REDIRECT = "http://127.0.0.1:9/callback"  # the user (Browser) reads the redirect; nothing listens
ERAS = ["2026-07-28", "2025-11-25"]


class Browser:
    """The user: opens each authorization URL; the test server approves at once."""

    def __init__(self) -> None:
        self.asked: list[Request] = []
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Answer:
        with self.lock:
            self.asked.append(request)
        assert request.kind == "authorization" and request.url is not None
        parts = urlsplit(request.url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        try:
            connection.request("GET", f"{parts.path}?{parts.query}")
            response = connection.getresponse()
            location = response.getheader("Location")
        finally:
            connection.close()
        assert response.status == 302 and location is not None
        return Answer(request.id, True, {"url": location})

    def scopes(self) -> list[str]:
        return [parse_qs(urlsplit(r.url or "").query).get("scope", [""])[0] for r in self.asked]


def declines(request: Request) -> Answer:
    return Answer.decline(request)


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    with AuthServer(tokens="opaque") as running:
        yield running


@pytest.fixture
def server(auth: AuthServer) -> Iterator[HttpServer]:
    options = ServerOptions(
        auth=ProtectedResource(
            authorization_servers=[auth.issuer],
            verifier=auth.verify,
            required_scopes=["mcp"],
            tool_scopes={"deploy": ["deploy:write"]},
            cache_ms=0,  # a revoked token is refused at once (the tests revoke them)
        ),
        max_requests=64,
    )
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        yield running


def client(server: HttpServer, oauth: OAuth, era: str = "2026-07-28") -> McpClient:
    return McpClient(url=server.url, name="tools", protocol_version=era, auth=oauth)


@pytest.mark.parametrize("era", ERAS)
def test_the_client_signs_in_and_the_tool_sees_who_called(
    server: HttpServer, auth: AuthServer, era: str
) -> None:
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser), era) as mcp:
        names = [tool.name for tool in mcp.tools(prefix="")]
        result = mcp.call_tool("whoami")
    assert names == ["whoami", "deploy"]
    assert not result.is_error and result.output.startswith("alice ['mcp'] client-")
    [asked] = browser.asked
    query = {k: v[0] for k, v in parse_qs(urlsplit(asked.url or "").query).items()}
    assert query["scope"] == "mcp"  # the 401's scope
    assert query["resource"] == server.url  # RFC 8707, as the metadata publishes it
    assert query["code_challenge_method"] == "S256" and query["redirect_uri"] == REDIRECT
    [registration] = auth.seen["register"]
    assert registration["redirect_uris"] == [REDIRECT]
    assert registration["application_type"] == "native"
    assert registration["grant_types"] == ["authorization_code", "refresh_token"]
    [exchange] = auth.seen["token"]
    assert exchange["grant_type"] == "authorization_code" and exchange["resource"] == server.url


def test_a_tool_that_needs_another_scope_is_stepped_up_to_once(
    server: HttpServer, auth: AuthServer
) -> None:
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser)) as mcp:
        first = mcp.call_tool("deploy", {"env": "staging"})
        second = mcp.call_tool("deploy", {"env": "prod"})
    assert first.output == "deployed to staging" and second.output == "deployed to prod"
    assert browser.scopes() == ["mcp", "mcp deploy:write"]  # the union, asked once


def test_fifty_concurrent_calls_refresh_a_token_the_server_refuses_exactly_once(
    server: HttpServer, auth: AuthServer
) -> None:
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser)) as mcp:
        assert not mcp.call_tool("whoami").is_error
        auth.revoke_access_tokens()  # the server now answers 401 to the token held
        results: list[Any] = [None] * 50
        start = threading.Barrier(50)

        def call(index: int) -> None:
            start.wait()
            results[index] = mcp.call_tool("whoami")

        threads = [threading.Thread(target=call, args=(i,)) for i in range(50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert all(r is not None and not r.is_error for r in results), results
    assert auth.count("token", "refresh_token") == 1
    assert len(browser.asked) == 1  # refreshed, never asked again


def test_fifty_concurrent_calls_refresh_an_expired_token_exactly_once(
    server: HttpServer, auth: AuthServer
) -> None:
    store = MemoryTokenStore()
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser, token_store=store)) as mcp:
        assert not mcp.call_tool("whoami").is_error
    record = store.load(server.url)
    assert record is not None
    record["tokens"]["expires_at"] = 0  # expired long ago, as a later run finds it
    store.save(server.url, record)
    results: list[Any] = [None] * 50
    start = threading.Barrier(50)
    oauth = OAuth(redirect_uri=REDIRECT, ask=browser, token_store=store)
    with client(server, oauth) as later:

        def call(index: int) -> None:
            start.wait()
            results[index] = later.call_tool("whoami")

        threads = [threading.Thread(target=call, args=(i,)) for i in range(50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert all(r is not None and not r.is_error for r in results), results
    assert auth.count("token", "refresh_token") == 1
    assert len(browser.asked) == 1


def test_a_revoked_refresh_token_asks_for_one_new_sign_in(
    server: HttpServer, auth: AuthServer
) -> None:
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser)) as mcp:
        assert not mcp.call_tool("whoami").is_error
        auth.revoke_access_tokens()
        auth.revoke_refresh_tokens()  # the user withdrew the grant
        result = mcp.call_tool("whoami")
    assert not result.is_error
    assert len(browser.asked) == 2  # the first sign-in, and one new one
    assert auth.count("token", "refresh_token") == 1  # tried once, refused, not again


def test_closing_a_session_whose_grant_was_revoked_asks_nobody(
    server: HttpServer, auth: AuthServer
) -> None:
    browser = Browser()
    mcp = client(server, OAuth(redirect_uri=REDIRECT, ask=browser), "2025-11-25")
    assert not mcp.call_tool("whoami").is_error
    auth.revoke_access_tokens()
    auth.revoke_refresh_tokens()
    mcp.close()  # its DELETE meets a 401: a refresh is tried, a sign-in is not
    assert len(browser.asked) == 1
    assert auth.count("token", "refresh_token") == 1


def test_a_declined_sign_in_is_an_error_not_a_loop(server: HttpServer) -> None:
    asked: list[Request] = []

    def decline(request: Request) -> Answer:
        asked.append(request)
        return Answer.decline(request)

    with (
        client(server, OAuth(redirect_uri=REDIRECT, ask=decline)) as mcp,
        pytest.raises(McpError, match="sign-in for MCP server tools was declined"),
    ):
        mcp.connect()
    assert len(asked) == 1


def test_a_server_that_keeps_answering_401_fails_after_one_sign_in(auth: AuthServer) -> None:
    options = ServerOptions(
        auth=ProtectedResource(authorization_servers=[auth.issuer], verifier=lambda token: None)
    )
    browser = Browser()
    with HttpServer(TOOLKIT, options, port=0) as stubborn:
        stubborn.start()
        with (
            McpClient(url=stubborn.url, auth=OAuth(redirect_uri=REDIRECT, ask=browser)) as mcp,
            pytest.raises(McpError, match="refused the access token it just authorized"),
        ):
            mcp.connect()
    assert len(browser.asked) == 1
    assert auth.count("token", "authorization_code") == 1


def test_without_ask_a_sign_in_is_a_question_the_host_answers(
    server: HttpServer, auth: AuthServer
) -> None:
    store = MemoryTokenStore()
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser, token_store=store)) as mcp:
        mcp.connect()  # signed in once, by a client that could ask
    with client(server, OAuth(redirect_uri=REDIRECT, token_store=store)) as quiet:
        tools = Toolkit(quiet.tools())
        auth.revoke_access_tokens()
        auth.revoke_refresh_tokens()
        with Host(tools) as host:  # no wait_for: the sign-in comes back pending
            pending = host.call("tools_whoami", {})
            request = pending.metadata["pending"]
            assert request.kind == "authorization" and request.url.startswith(auth.issuer)
            resumed = host.resume("tools_whoami", {}, pending, browser(request))
        assert not resumed.is_error and resumed.output.startswith("alice")
        auth.revoke_access_tokens()
        auth.revoke_refresh_tokens()
        with Host(tools, wait_for=browser) as host:  # the loop rule: ask, then retry
            answered = host.call("tools_whoami", {})
    assert not answered.is_error and answered.output.startswith("alice")
    assert len(browser.asked) == 3  # the first sign-in, then one per revocation


def test_the_file_store_keeps_the_sign_in_private_for_the_next_run(
    server: HttpServer, tmp_path: Path
) -> None:
    path = tmp_path / "config" / "tokens.json"
    browser = Browser()
    for _ in range(2):
        oauth = OAuth(redirect_uri=REDIRECT, ask=browser, token_store=FileTokenStore(path))
        with client(server, oauth) as mcp:
            assert not mcp.call_tool("whoami").is_error
    assert len(browser.asked) == 1  # the second run used the stored tokens
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = json.loads(path.read_text())[server.url]
    assert set(record) >= {"client", "tokens", "issuer", "token_endpoint"}


def test_a_token_file_others_can_read_is_refused(server: HttpServer, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        FileTokenStore(path).load("https://x/mcp")
    browser = Browser()
    oauth = OAuth(redirect_uri=REDIRECT, ask=browser, token_store=FileTokenStore(path))
    with client(server, oauth) as mcp, pytest.raises(McpError, match=f"chmod 600 {path}"):
        mcp.connect()  # no sign-in whose tokens would land in a file others read
    assert browser.asked == []


def test_no_secret_reaches_the_log(
    server: HttpServer, auth: AuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryTokenStore()
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser, token_store=store)) as mcp:
        mcp.call_tool("deploy", {"env": "x"})
        auth.revoke_access_tokens()
        mcp.call_tool("whoami")  # a refresh
    record = store.load(server.url)
    assert record is not None
    secrets_seen = [record["tokens"]["access_token"], record["tokens"]["refresh_token"]]
    secrets_seen += [entry["code"] for entry in auth.seen["token"] if "code" in entry]
    secrets_seen += [entry["code_verifier"] for entry in auth.seen["token"] if "code" in entry]
    assert "signed in with" in caplog.text and "refreshed the access token" in caplog.text
    for secret in secrets_seen:
        assert secret not in caplog.text


def test_mcp_json_servers_sign_in_with_oauth(
    server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLS_SCOPES", "mcp")
    browser = Browser()
    config = {
        "mcpServers": {
            "plain": {"url": server.url, "auth": "oauth"},
            "scoped": {
                "url": server.url,
                "auth": {"type": "oauth", "scopes": "${TOOLS_SCOPES} deploy:write"},
            },
        }
    }
    template = OAuth(redirect_uri=REDIRECT, ask=browser)
    with McpSource(config, oauth=template).connect() as source:
        status = {name: s.status for name, s in source.status().items()}
        deployed = source.client("scoped").call_tool("deploy", {"env": "x"})
    assert status == {"plain": "connected", "scoped": "connected"}
    assert deployed.output == "deployed to x"
    assert sorted(browser.scopes()) == ["mcp", "mcp deploy:write"]  # no step-up needed


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "x", "auth": "oauth"}, "OAuth is for an HTTP server"),
        ({"url": "http://x/mcp", "auth": "basic"}, 'must be "oauth"'),
        ({"url": "http://x/mcp", "auth": {"type": "oauth", "secret": "s"}}, "unknown key"),
        (
            {"url": "http://x/mcp", "auth": {"type": "oauth", "allowPrivateNetwork": "yes"}},
            "allowPrivateNetwork: must be true or false",
        ),
    ],
)
def test_a_bad_auth_entry_is_refused_naming_the_place(entry: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        McpSource({"mcpServers": {"s": entry}})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"client_secret": "s"}, "needs the client_id"),
        ({"redirect_uri": "callback"}, "absolute URL"),
        ({"client_metadata_url": "http://example.com/client.json"}, "https URL with a path"),
        ({"token_endpoint_auth_method": "tls_client_auth"}, "must be one of"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "needs the key"),
        ({"scopes": ["a b"]}, "without spaces"),
        ({"ask": "yes"}, "must be callable"),
        ({"token_store": object()}, "load, save and delete"),
    ],
)
def test_bad_oauth_settings_are_refused_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        OAuth(**fields)


def test_oauth_is_for_http_and_excludes_an_authorization_header() -> None:
    with pytest.raises(ValueError, match="give url"):
        McpClient("python", auth=OAuth())
    with pytest.raises(ValueError, match="either an Authorization header or auth"):
        McpClient(url="http://x/mcp", headers={"Authorization": "Bearer x"}, auth=OAuth())


# A process that shares a FileTokenStore: it connects with the stored tokens (and so holds
# them), says "ready", and on "go" lets two hours pass (its clock jumps: the access token
# has expired) before it calls whoami. Whether it had to ask the user is printed too.
SHARING_PROCESS = """
import json, sys, time
from toolnexus import Answer
from toolnexus.mcp import FileTokenStore, McpClient, OAuth

asked = []

def ask(request):
    asked.append(request.url)
    return Answer.decline(request)

url, path = sys.argv[1], sys.argv[2]
oauth = OAuth(redirect_uri="http://127.0.0.1:9/callback", ask=ask, token_store=FileTokenStore(path))
with McpClient(url=url, name="tools", auth=oauth) as mcp:
    first = mcp.call_tool("whoami")
    print("ready", flush=True)
    sys.stdin.readline()
    real = time.time
    time.time = lambda: real() + 7200
    second = mcp.call_tool("whoami")
print(json.dumps({"first": first.output, "second": second.output, "asked": len(asked)}))
"""


def test_two_processes_sharing_a_token_file_refresh_once_and_both_stay_signed_in(
    auth: AuthServer, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from cli_helpers import child_env

    options = ServerOptions(
        auth=ProtectedResource(authorization_servers=[auth.issuer], verifier=auth.verify)
    )
    path = tmp_path / "tokens.json"
    browser = Browser()
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        oauth = OAuth(redirect_uri=REDIRECT, ask=browser, token_store=FileTokenStore(path))
        with McpClient(url=running.url, auth=oauth) as mcp:
            assert not mcp.call_tool("whoami").is_error  # signed in once, tokens in the file
        children = [
            subprocess.Popen(
                [sys.executable, "-c", SHARING_PROCESS, running.url, str(path)],
                env=child_env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        try:
            for child in children:
                assert child.stdout is not None
                assert child.stdout.readline() == "ready\n"  # both hold the same tokens
            for child in children:  # now the token expires for both at once
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
            outcomes = []
            for child in children:
                out, err = child.communicate(timeout=60)
                assert child.returncode == 0, err
                outcomes.append(json.loads(out.splitlines()[-1]))
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
        assert auth.count("token", "refresh_token") == 1  # one refresh, the other used it
        for outcome in outcomes:
            assert outcome["first"].startswith("alice") and outcome["second"].startswith("alice")
            assert outcome["asked"] == 0  # nobody was signed out
        # The file holds tokens the server takes: a third client uses them without asking.
        record = json.loads(path.read_text())[running.url]
        assert set(record["tokens"]) >= {"access_token", "refresh_token"}
        oauth = OAuth(redirect_uri=REDIRECT, ask=declines, token_store=FileTokenStore(path))
        with McpClient(url=running.url, auth=oauth) as later:
            assert later.call_tool("whoami").output.startswith("alice")
        assert len(browser.asked) == 1
        assert auth.count("token", "refresh_token") == 1


@pytest.mark.parametrize(
    ("tampered", "message"),
    [
        ({"expires_in": 10**400}, "expires_in"),  # OverflowError as a float
        ({"expires_in": float("inf")}, "expires_in"),
        ({"expires_in": -5}, "expires_in"),
        ({"access_token": "at-x\r\nX-Injected: yes"}, "access_token"),  # a header injection
        ({"access_token": "at x"}, "access_token"),
        ({"refresh_token": "rt-\x00"}, "refresh_token"),
    ],
)
def test_a_hostile_token_answer_is_an_auth_error_not_an_exception(
    server: HttpServer, auth: AuthServer, tampered: dict[str, Any], message: str
) -> None:
    auth.tamper = lambda answer: {**answer, **tampered}
    with client(server, OAuth(redirect_uri=REDIRECT, ask=Browser())) as mcp:
        result = mcp.call_tool("whoami")  # never raises: a gateway's thread lives on
        assert result.is_error
        assert message in result.output and "authorization server" in result.output
        with pytest.raises(McpError, match=message):
            mcp.connect()
    assert auth.count("token", "authorization_code") == 2  # one sign-in each, no loop


def test_a_hostile_refresh_answer_is_an_auth_error_not_an_exception(
    server: HttpServer, auth: AuthServer
) -> None:
    browser = Browser()
    with client(server, OAuth(redirect_uri=REDIRECT, ask=browser)) as mcp:
        assert not mcp.call_tool("whoami").is_error
        auth.tamper = lambda answer: {**answer, "expires_in": 10**400}
        auth.revoke_access_tokens()  # a 401: the client refreshes, and gets the answer
        result = mcp.call_tool("whoami")
    assert result.is_error and "expires_in" in result.output
    assert auth.count("token", "refresh_token") == 1


class DrippingServer:
    """An authorization server that answers every request one byte at a time, forever:
    each read gets something (a per-read timeout never fires), the answer never ends."""

    def __init__(self) -> None:
        import socket

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.issuer = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stop = threading.Event()
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(sock,), daemon=True).start()

    def _drip(self, sock: Any) -> None:
        with sock:
            try:
                sock.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not self.stop.wait(0.05):
                    sock.sendall(b"a")
            except OSError:
                return  # the client gave up: what the test waits for

    def __enter__(self) -> DrippingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        import socket

        self.stop.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self.listener.close()
        self.thread.join(5)


def test_timeout_ms_bounds_the_whole_exchange_not_each_read() -> None:
    with DrippingServer() as dripping:
        options = ServerOptions(
            auth=ProtectedResource(
                authorization_servers=[dripping.issuer], verifier=lambda token: None
            )
        )
        with HttpServer(TOOLKIT, options, port=0) as running:
            running.start()
            oauth = OAuth(redirect_uri=REDIRECT, ask=Browser(), timeout_ms=500)
            outcome: list[Any] = []
            with McpClient(url=running.url, auth=oauth) as mcp:
                caller = threading.Thread(target=lambda: outcome.append(mcp.call_tool("whoami")))
                caller.start()
                caller.join(60)  # a generous margin: the old client read on for hours
                gave_up = not caller.is_alive()
                dripping.stop.set()  # (so that a client that did not give up ends now)
                caller.join(60)
    assert gave_up, "the sign-in never gave up on a dripping server"
    [result] = outcome
    assert result.is_error and "did not finish within 500 ms" in result.output
    assert dripping.connections == 1  # the first metadata URL used the whole time


class Challenger:
    """An MCP server that answers every POST 401 with ``challenge``, and serves
    ``metadata`` as its protected-resource metadata; ``seen`` lists the paths asked."""

    def __init__(self, challenge: str = "Bearer", metadata: dict[str, Any] | None = None) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        owner = self
        self.challenge = challenge
        self.metadata = metadata
        self.seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                owner.seen.append("POST " + self.path)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer(401, b"", {"WWW-Authenticate": owner.challenge})

            def do_GET(self) -> None:
                owner.seen.append("GET " + self.path)
                if owner.metadata is None:
                    self._answer(404, b"", {})
                else:
                    body = json.dumps(owner.metadata).encode()
                    self._answer(200, body, {"Content-Type": "application/json"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Challenger:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class Canary:
    """A listener that counts the connections it gets (and answers none)."""

    def __init__(self) -> None:
        import socket

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._count, daemon=True)

    def _count(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                continue
            self.connections += 1
            sock.close()

    def __enter__(self) -> Canary:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.listener.close()


PUBLIC_HOST = "mcp.example.test"


@pytest.fixture
def public_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """A network where mcp.example.test has a public address (93.184.216.34) — and is
    reached, as this machine has no other, on 127.0.0.1."""
    import socket

    resolve, connect = socket.getaddrinfo, socket.create_connection

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == PUBLIC_HOST:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]
        return resolve(host, port, *args, **kwargs)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        host, port = address
        return connect(("127.0.0.1" if host == PUBLIC_HOST else host, port), *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)


def test_a_server_cannot_send_the_client_to_a_link_local_address() -> None:
    metadata_service = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    with Challenger(f'Bearer resource_metadata="{metadata_service}"') as stub:
        url = f"http://127.0.0.1:{stub.port}/mcp"
        oauth = OAuth(redirect_uri=REDIRECT, ask=Browser(), timeout_ms=2000)
        with (
            McpClient(url=url, auth=oauth) as mcp,
            pytest.raises(McpError, match=r"169\.254\.169\.254.*link-local address") as info,
        ):
            mcp.connect()
    assert "link-local address: refused" in str(info.value)
    assert "allow_private_network=True" in str(info.value)
    assert "allowPrivateNetwork" in str(info.value)


def test_a_public_server_cannot_send_the_client_into_the_private_network(
    public_network: None,
) -> None:
    with Canary() as canary:
        named = f"https://127.0.0.1:{canary.port}/.well-known/oauth-protected-resource"
        with Challenger(f'Bearer resource_metadata="{named}"') as stub:
            url = f"http://{PUBLIC_HOST}:{stub.port}/mcp"
            oauth = OAuth(redirect_uri=REDIRECT, ask=Browser(), timeout_ms=2000)
            with (
                McpClient(url=url, auth=oauth) as mcp,
                pytest.raises(McpError, match="loopback address: refused"),
            ):
                mcp.connect()
            assert stub.seen == ["POST /mcp"]  # reached, through the public name
            assert canary.connections == 0  # never fetched
            # An intranet's own authorization server: the user allows it, in mcp.json.
            entry = {
                "url": url,
                "auth": {"type": "oauth", "allowPrivateNetwork": True},
            }
            source = McpSource({"mcpServers": {"intranet": entry}}, oauth=oauth).connect()
            source.close()
            assert canary.connections >= 1  # followed this time (and failed: no TLS there)


def test_an_authorization_server_on_plain_http_gets_no_code_and_no_secret(
    server: HttpServer, auth: AuthServer
) -> None:
    auth.published = {"token_endpoint": "http://192.0.2.10/token"}  # not loopback, in clear
    browser = Browser()
    oauth = OAuth(redirect_uri=REDIRECT, ask=browser, client_id="app", client_secret="s3cret")
    with (
        client(server, oauth) as mcp,
        pytest.raises(McpError, match=r"http://192\.0\.2\.10/token.*over plain http: refused"),
    ):
        mcp.connect()
    assert browser.asked == []  # nobody signed in: no code was issued to leak


def test_a_loopback_server_may_name_a_plain_http_authorization_server_on_loopback(
    server: HttpServer, auth: AuthServer
) -> None:
    assert server.url.startswith("http://127.0.0.1") and auth.issuer.startswith("http://127.")
    with client(server, OAuth(redirect_uri=REDIRECT, ask=Browser())) as mcp:
        assert not mcp.call_tool("whoami").is_error  # local development works as it did


def test_allow_private_network_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="allow_private_network must be True or False"):
        OAuth(allow_private_network="yes")  # type: ignore[arg-type]


def test_a_403_insufficient_scope_reads_as_a_missing_scope_not_a_failed_connection(
    server: HttpServer, auth: AuthServer
) -> None:
    token = auth.mint("alice", scopes=["mcp"], audience=server.url)  # without deploy:write
    with McpClient(
        url=server.url, name="tools", headers={"Authorization": f"Bearer {token}"}
    ) as mcp:
        assert not mcp.call_tool("whoami").is_error
        result = mcp.call_tool("deploy", {"env": "prod"})
    assert result.is_error
    assert "connection" not in result.output and "failed" not in result.output
    assert result.output.startswith("deploy: MCP server tools: the server refuses this request")
    assert "lacks the scope(s) it needs — it asks for: mcp deploy:write" in result.output
    assert "auth=OAuth()" in result.output  # how to get them


def test_a_refused_or_missing_token_without_oauth_says_how_to_sign_in(server: HttpServer) -> None:
    with (
        McpClient(url=server.url, name="tools") as mcp,
        pytest.raises(McpError, match=r"needs an access token \(401\): let the client sign in"),
    ):
        mcp.connect()
    headers = {"Authorization": "Bearer made-up"}
    with (
        McpClient(url=server.url, name="tools", headers=headers) as mcp,
        pytest.raises(McpError, match=r"refuses the access token \(401 invalid_token"),
    ):
        mcp.connect()


def test_the_address_checked_is_the_address_connected_to(
    auth: AuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    # The authorization server's name resolves to loopback once — when the client checks
    # it — and to the cloud metadata service after that (DNS rebinding).
    local = auth.issuer
    auth.issuer = f"http://as.example.test:{auth.httpd.server_address[1]}"
    auth.published = {
        "authorization_endpoint": f"{local}/authorize",
        "token_endpoint": f"{local}/token",
        "registration_endpoint": f"{local}/register",
    }
    lookups: list[str] = []
    resolve = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "as.example.test":
            return resolve(host, port, *args, **kwargs)
        lookups.append(host)
        address = "127.0.0.1" if len(lookups) == 1 else "169.254.169.254"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    options = ServerOptions(
        auth=ProtectedResource(authorization_servers=[auth.issuer], verifier=auth.verify)
    )
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        oauth = OAuth(redirect_uri=REDIRECT, ask=Browser(), timeout_ms=3000)
        with McpClient(url=running.url, auth=oauth) as mcp:
            result = mcp.call_tool("whoami")
    assert not result.is_error, result.output
    assert lookups == ["as.example.test"]  # looked up once, checked, connected to
