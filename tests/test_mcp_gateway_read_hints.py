"""A federated ``resources/read`` carries the upstream's cache hints, the stricter of the
upstream's and the gateway's: the smaller ``ttlMs`` — ``0`` (the spec's default) when the
upstream gave none, as its content may change at each read — and ``private`` when either
says so. The gateway's own list TTL is never stamped on an upstream's content.

And a template whose prefix cannot be read back (no literal scheme) is refused with a fix
that works: not the promise that ``"prefix": ""`` would offer it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolnexus.mcp import McpClient, McpSource, federate

UPSTREAM = str(Path(__file__).with_name("fake_mcp_upstream.py"))


def gateway_read(tmp_path: Path, hints: dict[str, Any]) -> dict[str, Any]:
    """The hints of the gateway's answer to a modern client's read of an upstream's
    resource whose reads carry ``hints``."""
    state = tmp_path / "up.json"
    offer = {"resources": [{"uri": "r://1", "name": "one"}], "readHints": hints}
    state.write_text(json.dumps(offer), encoding="utf-8")
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [UPSTREAM, str(state)]}
    config.write_text(json.dumps({"mcpServers": {"up": entry}}), encoding="utf-8")
    command = [sys.executable, "-m", "toolnexus", "serve", str(config)]
    with McpClient(command[0], command[1:], name="gateway") as client:
        contents, given = client._read("up+r://1", None)
        assert client.era == "modern"
    assert contents[0]["text"] == "read r://1"
    return given


def test_a_read_the_upstream_gave_no_ttl_is_not_cached(tmp_path: Path) -> None:
    assert gateway_read(tmp_path, {})["ttlMs"] == 0


def test_a_read_keeps_the_upstreams_smaller_ttl_and_its_private_scope(tmp_path: Path) -> None:
    given = gateway_read(tmp_path, {"ttlMs": 5, "cacheScope": "private"})
    assert (given["ttlMs"], given["cacheScope"]) == (5, "private")


def test_a_read_never_outlives_the_gateways_own_ttl(tmp_path: Path) -> None:
    given = gateway_read(tmp_path, {"ttlMs": 10**9, "cacheScope": "public"})
    assert 0 < given["ttlMs"] < 10**9 and given["cacheScope"] == "public"


@pytest.mark.parametrize("prefix", [None, ""])
def test_a_template_without_a_scheme_is_refused_with_a_fix_that_works(
    tmp_path: Path, prefix: str | None
) -> None:
    state = tmp_path / "up.json"
    templates = [
        {"uriTemplate": "{+base}/readme", "name": "anywhere"},
        {"uriTemplate": "fake://items/{id}", "name": "item"},
    ]
    state.write_text(json.dumps({"resourceTemplates": templates}), encoding="utf-8")
    entry: dict[str, Any] = {"command": sys.executable, "args": [UPSTREAM, str(state)]}
    if prefix is not None:
        entry["prefix"] = prefix
    with McpSource({"mcpServers": {"up": entry}}).connect() as source:
        federation = federate(source)
        (problem,) = federation.problems["up"]
        assert "'{+base}/readme' skipped: it does not begin with a literal scheme" in problem
        # The fix it gives works: no promise that "prefix": "" would offer it.
        assert "read this one from the server itself" in problem
        assert "to offer it as it is" not in problem
        uris = [item.uri for item in source.toolkit.resources()]
        assert uris == ["fake://items/{id}" if prefix == "" else "up+fake://items/{id}"]
