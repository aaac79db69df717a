"""`toolnexus serve`'s `--oauth-*` options: none is silently ignored. Without `--http`
each is a usage error naming it (as `--oauth-issuer` always was); with `--http` but no
`--oauth-issuer` the message agrees in number; `--oauth-dpop-nonce` without
`--oauth-dpop` is refused in the command line's words, not the Python API's."""

from __future__ import annotations

import pytest

from cli_helpers import run

REF = "toolnexus.demo:toolkit"


@pytest.mark.parametrize(
    "flags",
    [
        ["--oauth-dpop"],
        ["--oauth-dpop-nonce"],
        ["--oauth-scope", "mcp"],
        ["--oauth-resource", "https://mcp.example.com/mcp"],
    ],
)
def test_an_oauth_option_without_http_is_a_usage_error(flags: list[str]) -> None:
    out = run("serve", REF, *flags)
    assert out.returncode == 2, out.stderr
    assert f"{flags[0]} without --http" in out.stderr
    assert "need --http" in out.stderr
    assert out.stdout == ""


def test_several_options_without_http_are_named_together() -> None:
    out = run("serve", REF, "--oauth-dpop", "--oauth-dpop-nonce", "--allow-host", "x.dev")
    assert out.returncode == 2
    assert "--oauth-dpop, --oauth-dpop-nonce and --allow-host without --http" in out.stderr


def test_one_oauth_option_without_an_issuer_needs_it() -> None:
    out = run("serve", REF, "--http", "0", "--oauth-dpop")
    assert out.returncode == 2
    assert "--oauth-dpop needs --oauth-issuer (the authorization server)" in out.stderr


def test_several_oauth_options_without_an_issuer_need_it() -> None:
    out = run("serve", REF, "--http", "0", "--oauth-scope", "mcp", "--oauth-dpop")
    assert out.returncode == 2
    assert "--oauth-scope and --oauth-dpop need --oauth-issuer" in out.stderr


def test_a_dpop_nonce_without_dpop_is_refused_in_the_command_lines_words() -> None:
    out = run(
        "serve", REF, "--http", "0", "--oauth-issuer", "https://as.example.com",
        "--oauth-dpop-nonce",
    )  # fmt: skip
    assert out.returncode == 2
    assert "--oauth-dpop-nonce needs --oauth-dpop" in out.stderr
    assert "ProtectedResource" not in out.stderr and "dpop=True" not in out.stderr
