"""`toolnexus list|call mcp.json` with a server that asks for OAuth: the command prints
the sign-in URL, receives the redirect on a loopback port, keeps the tokens in the
per-user token file (0600) for the next run, and with --no-input asks nobody."""

from __future__ import annotations

import http.client
import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from cli_helpers import ROOT, child_env
from oauth_server import AuthServer
from test_mcp_auth import TOOLKIT
from toolnexus.mcp import HttpServer, ProtectedResource, ServerOptions


@pytest.fixture
def server() -> Iterator[tuple[HttpServer, AuthServer]]:
    with AuthServer(tokens="opaque") as auth:
        options = ServerOptions(
            auth=ProtectedResource(
                authorization_servers=[auth.issuer], verifier=auth.verify, required_scopes=["mcp"]
            )
        )
        with HttpServer(TOOLKIT, options, port=0) as running:
            running.start()
            yield running, auth


def get(url: str) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    connection.request("GET", f"{parts.path}?{parts.query}")
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def toolnexus(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "toolnexus", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_list_signs_in_on_the_terminal_and_the_next_run_does_not(
    server: tuple[HttpServer, AuthServer], tmp_path: Path
) -> None:
    running, auth = server
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"team": {"url": running.url, "auth": "oauth"}}}))
    env = {**child_env(), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    process = toolnexus("list", str(config), env=env)
    try:
        assert process.stderr is not None
        shown = process.stderr.readline()
        assert "needs you to sign in" in shown, shown
        url = process.stderr.readline().strip()
        assert url.startswith(f"{auth.issuer}/authorize?"), url
        approved = get(url)  # the user signs in; the browser follows the redirect:
        assert approved.status == 302
        landed = get(approved.getheader("Location") or "")
        assert landed.status == 200
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "team_whoami" in out and "team_deploy" in out
    tokens = tmp_path / "config" / "toolnexus" / "mcp-tokens.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert running.url in json.loads(tokens.read_text())
    again = subprocess.run(
        [sys.executable, "-m", "toolnexus", "list", str(config)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0 and "team_whoami" in again.stdout
    assert "sign in" not in again.stderr
    assert len(auth.seen["authorize"]) == 1


def test_no_input_asks_nobody_and_says_a_sign_in_is_needed(
    server: tuple[HttpServer, AuthServer], tmp_path: Path
) -> None:
    running, auth = server
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"team": {"url": running.url, "auth": "oauth"}}}))
    env = {**child_env(), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-m", "toolnexus", "call", str(config), "team_whoami", "--no-input"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "needs a sign-in with " + auth.issuer in done.stderr
    assert auth.seen["authorize"] == []


def test_call_says_a_missing_scope_is_a_missing_scope(tmp_path: Path) -> None:
    with AuthServer(tokens="opaque") as auth:
        options = ServerOptions(
            auth=ProtectedResource(
                authorization_servers=[auth.issuer],
                verifier=auth.verify,
                tool_scopes={"deploy": ["deploy:write"]},
            )
        )
        with HttpServer(TOOLKIT, options, port=0) as running:
            running.start()
            token = auth.mint("alice", scopes=["mcp"], audience=running.url)
            entry = {"url": running.url, "headers": {"Authorization": "Bearer ${TEAM_TOKEN}"}}
            config = tmp_path / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"team": entry}}))
            done = subprocess.run(
                [sys.executable, "-m", "toolnexus", "call", str(config), "team_deploy", "env=x"],
                cwd=ROOT,
                env={**child_env(), "TEAM_TOKEN": token},
                capture_output=True,
                text=True,
                timeout=60,
            )
    shown = done.stdout + done.stderr
    assert done.returncode != 0
    assert "the connection" not in shown, shown
    assert "lacks the scope(s) it needs — it asks for: deploy:write" in shown, shown
    assert token not in shown
