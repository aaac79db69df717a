"""`toolnexus serve REF --http [HOST:]PORT`: Streamable HTTP on 127.0.0.1 by default, a
bearer token from a file or the environment, and a clean exit on SIGTERM or SIGINT
(143 or 130, as `serve` over stdio)."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import ROOT, child_env, run

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def start(*extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str, str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolnexus",
            "serve",
            "toolnexus.demo:toolkit",
            "--http",
            "0",
            *extra,
        ],
        cwd=ROOT,
        env={**child_env(), **(env or {})},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # the server says where it listens once it does
    found = re.search(r"http://(127\.0\.0\.1:\d+)/mcp", line)
    assert found, line
    return process, found.group(1), line


def list_tools(address: str, headers: dict[str, str] | None = None) -> int:
    connection = http.client.HTTPConnection(address, timeout=10)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN}}
    connection.request(
        "POST",
        "/mcp",
        json.dumps(body),
        {
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/list",
            **(headers or {}),
        },
    )
    status = connection.getresponse().status
    connection.close()
    return status


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_http_listens_on_localhost_and_exits_128_plus_the_signal(signum: int) -> None:
    process, address, said = start()
    try:
        assert "(no token: loopback only)" in said, said
        assert list_tools(address) == 200
    finally:
        process.send_signal(signum)
        assert process.wait(30) == 128 + signum  # 143 after SIGTERM, 130 after SIGINT, as stdio


def test_a_token_file_requires_the_bearer_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token.txt"
    token_file.write_text("let-me-in\n")
    process, address, said = start("--token-file", str(token_file))
    try:
        assert "(bearer token required)" in said, said
        assert list_tools(address) == 401
        assert list_tools(address, {"Authorization": "Bearer let-me-in"}) == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 143


def test_the_token_may_come_from_the_environment() -> None:
    process, address, _ = start(env={"TOOLNEXUS_MCP_TOKEN": "from-env"})
    try:
        assert list_tools(address) == 401
        assert list_tools(address, {"Authorization": "Bearer from-env"}) == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 143


def test_a_bad_address_is_a_usage_error() -> None:
    out = run("serve", "toolnexus.demo:toolkit", "--http", "host:notaport")
    assert out.returncode == 2
    assert "expected [HOST:]PORT" in out.stderr


def test_http_options_without_http_are_a_usage_error() -> None:
    out = run("serve", "toolnexus.demo:toolkit", "--allow-host", "example.com")
    assert out.returncode == 2
    assert "need --http" in out.stderr
