"""An ``mcp.json`` server's ``auth`` settings that do not fit together are refused as the
file is read (``McpSource(...)``), naming the file, the server and the key as the file
spells it, and how to fix it — never first seen after ``connect()``, in Python's names.
A ``${NAME}`` is read when the server connects; an unset one fails that server, naming
the file's key."""

from __future__ import annotations

import re
from typing import Any

import pytest

from toolnexus.mcp import McpSource


def load(auth: Any, **entry: Any) -> McpSource:
    server = {"url": "http://127.0.0.1:9/mcp", "auth": auth, **entry}
    return McpSource({"mcpServers": {"s": server}})


@pytest.mark.parametrize(
    ("auth", "key", "says"),
    [
        (
            {"type": "oauth", "grant": "client-credentials", "clientId": "a", "clientSecret": "b"},
            "grant",
            'got \'client-credentials\'; write "grant": "client_credentials"',
        ),
        (
            {"type": "oauth", "grant": "client_credentials", "clientId": "a"},
            "clientSecret",
            "give clientId, and clientSecret or privateKeyFile",
        ),
        (
            {"type": "oauth", "grant": "client_credentials"},
            "clientId",
            "give clientId, and clientSecret or privateKeyFile",
        ),
        ({"type": "oauth", "clientSecret": "b"}, "clientSecret", "give its clientId too"),
        (
            {"type": "oauth", "clientId": "a", "clientSecret": "b", "privateKeyFile": "k.pem"},
            "clientSecret",
            "give clientSecret or privateKeyFile, not both",
        ),
        ({"type": "oauth", "grant": "jwt_bearer"}, "assertionFile", "give the path"),
        (
            {"type": "oauth", "grant": "id_jag", "assertionFile": "t", "clientId": "a"},
            "idpTokenEndpoint",
            "is missing",
        ),
        ({"type": "oauth", "idpClientId": "x"}, "idpClientId", '"grant": "id_jag" only'),
        ({"type": "oauth", "assertionFile": "t"}, "assertionFile", '"jwt_bearer" or "id_jag"'),
        (
            {"type": "oauth", "tokenEndpointAuthMethod": "basic"},
            "tokenEndpointAuthMethod",
            "must be one of client_secret_basic",
        ),
        (
            {"type": "oauth", "tokenEndpointAuthMethod": "private_key_jwt"},
            "tokenEndpointAuthMethod",
            "give privateKeyFile",
        ),
        (
            {
                "type": "oauth",
                "grant": "id_jag",
                "assertionFile": "t",
                "clientId": "a",
                "idpTokenEndpoint": "http://idp.example/token",
            },
            "idpTokenEndpoint",
            "plain http only to loopback",
        ),
        ({"type": "oauth", "redirectUri": "localhost/cb"}, "redirectUri", "absolute URL"),
        (
            {"type": "oauth", "clientMetadataUrl": "http://app.example/c.json"},
            "clientMetadataUrl",
            "an https URL with a path",
        ),
        (
            {"type": "oauth", "exchange": {"tokenEndpoint": "not a url"}},
            "exchange.tokenEndpoint",
            "plain http only to loopback",
        ),
        (  # the gateway's client secret and each caller's token go there: never in clear
            {"type": "oauth", "exchange": {"tokenEndpoint": "http://login.example/token"}},
            "exchange.tokenEndpoint",
            "plain http only to loopback",
        ),
        (  # a host name that begins like a loopback address is not one
            {
                "type": "oauth",
                "grant": "id_jag",
                "assertionFile": "t",
                "clientId": "a",
                "idpTokenEndpoint": "http://127.evil.example/token",
            },
            "idpTokenEndpoint",
            "plain http only to loopback",
        ),
    ],
)
def test_auth_settings_that_do_not_fit_are_refused_at_load_naming_the_key(
    auth: Any, key: str, says: str
) -> None:
    with pytest.raises(ValueError) as caught:
        load(auth)
    text = str(caught.value)
    assert text.startswith(f"mcp.json: mcpServers.s.auth.{key}: "), text
    assert says in text
    # the file's names, never the Python arguments'
    assert not re.search(
        r"client_id|client_secret(?!_basic|_post)|private_key_file|OAuth[.(]", text
    ), text


def test_an_openapi_credential_needs_a_grant_without_a_user() -> None:
    entry = {
        "type": "openapi",
        "document": "missing.json",
        "credentials": {"oauth": {"type": "oauth", "clientId": "a", "clientSecret": "b"}},
    }
    with pytest.raises(ValueError) as caught:
        McpSource({"mcpServers": {"pets": entry}})
    text = str(caught.value)
    assert text.startswith("mcp.json: mcpServers.pets.credentials.oauth.grant: ")
    assert '"client_credentials"' in text


def test_settings_held_in_variables_are_checked_when_the_server_connects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NOPE_UNSET", raising=False)
    monkeypatch.setenv("EXCHANGE_AT", "not a url")
    # what is written fits: only the variables' values can be wrong, and are read later
    load({"type": "oauth", "grant": "client_credentials", "clientId": "${A}", "clientSecret": "x"})
    load({"type": "oauth", "grant": "${GRANT}", "clientId": "a"})
    unset = load({"type": "oauth", "exchange": {"clientSecret": "${NOPE_UNSET}"}})
    bad_url = load({"type": "oauth", "exchange": {"tokenEndpoint": "${EXCHANGE_AT}"}})
    with unset.connect(), bad_url.connect():
        reason = unset.status()["s"].reason or ""
        assert unset.status()["s"].status == "failed"
        assert reason.startswith("auth.exchange.clientSecret uses ${NOPE_UNSET}"), reason
        status = bad_url.status()["s"]
        assert status.status == "failed"
        assert (status.reason or "").startswith("auth.exchange.tokenEndpoint: must be"), status
