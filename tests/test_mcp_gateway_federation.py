"""The gateway's federation of upstream resources, templates and prompts, and its bad
input: two upstreams offering one URI, a template whose prefix cannot be read back. Each
is a named problem of that upstream; the other upstreams keep working.

The upstreams are ``tests/fake_mcp_server.py resources`` (see its docstring).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from timing import wait_until
from toolnexus import Host
from toolnexus.mcp import Federation, McpSource, federate

FAKE = str(Path(__file__).with_name("fake_mcp_server.py"))


def fake(**entry: object) -> dict[str, object]:
    return {"command": sys.executable, "args": [FAKE, "resources"], **entry}


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("federation") / "mcp.json"
    servers = {"a": fake(prefix=""), "b": fake(prefix=""), "c": fake()}
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def federated(config: Path) -> Iterator[tuple[McpSource, Federation]]:
    with McpSource(config).connect() as source:
        yield source, federate(source)


def read(source: McpSource, uri: str) -> str:
    with Host(source.toolkit, timeout_ms=30_000) as host:
        result = host.call("resources/read", {"uri": uri})
    assert not result.is_error, result.output
    return result.output


def test_a_uri_two_upstreams_offer_stays_with_the_first_and_names_both(
    federated: tuple[McpSource, Federation],
) -> None:
    source, federation = federated
    problems = federation.problems["b"]
    assert any("'notes://same' skipped: server a already offers it" in p for p in problems)
    assert "a" not in federation.problems or not any("same" in p for p in federation.problems["a"])
    assert read(source, "notes://same") == "read notes://same"  # a's, still served


def test_a_template_without_a_literal_scheme_is_a_named_problem_and_the_rest_serve(
    federated: tuple[McpSource, Federation],
) -> None:
    source, federation = federated
    (problem,) = [p for p in federation.problems["c"] if "{+base}/readme" in p]
    assert "does not begin with a literal scheme" in problem and '"prefix": ""' in problem
    uris = [item.uri for item in source.toolkit.resources()]
    assert "c+fake://items/{id}" in uris and "c+fake://doc" in uris
    assert not any("{+base}" in uri for uri in uris)
    assert read(source, "c+fake://items/9") == "read fake://items/9"
    assert read(source, "c+fake://doc") == "read fake://doc"


def test_a_federated_uri_reads_back_to_its_server(
    federated: tuple[McpSource, Federation],
) -> None:
    source, _ = federated
    assert source.uri_prefix("c") == "c" and source.uri_prefix("a") == ""
    assert source.federated_uri("c", "fake://items/9") == "c+fake://items/9"
    assert source.upstream_uri("c+fake://items/9") == ("c", "fake://items/9")
    assert source.federated_uri("c", "{+base}/readme") is None


def test_an_upstream_prompt_renders_through_the_source(
    federated: tuple[McpSource, Federation],
) -> None:
    source, _ = federated
    greet = source.toolkit.get_prompt("c_greet")
    assert [a["name"] for a in greet.arguments] == ["who"] and greet.arguments[0]["required"]
    assert greet.problem({}) is not None  # a required argument missing: refused here
    with Host(source.toolkit, timeout_ms=30_000) as host:
        result = host.call("prompts/get", {"name": "c_greet", "arguments": {"who": "Ada"}})
    assert result.output == "Hello Ada"


def test_read_and_get_take_an_mcp_json(config: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "toolnexus", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    done = run("read", str(config), "c+fake://items/3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "read fake://items/3"
    done = run("get", str(config), "c_greet", "who=Bo")
    assert done.returncode == 0, done.stderr
    assert "Hello Bo" in done.stdout


def test_a_resource_list_that_went_stale_without_a_notification_is_read_again() -> None:
    config = {"mcpServers": {"st": fake(args=[FAKE, "stale-resources"])}}
    with McpSource(config).connect() as source:
        federate(source)
        assert source.toolkit.find_resource("st+fake://new") is None
        assert read(source, "st+fake://doc") == "read fake://doc"  # its list then grows
        # Once the list's ttlMs runs out the gateway lists again, and offers the new one.
        assert wait_until(lambda: source.toolkit.find_resource("st+fake://new") is not None)


def test_a_read_its_caller_gives_up_is_cancelled_upstream() -> None:
    # The client's own bound (timeout) far past the test's: only the caller's cancel ends it.
    config = {"mcpServers": {"sr": fake(args=[FAKE, "slow-read"], timeout=600_000)}}
    with McpSource(config).connect() as source:
        federate(source)
        with Host(source.toolkit) as host:
            # A deadline to pass: the server never answers the read.
            result = host.call("resources/read", {"uri": "sr+fake://doc"}, timeout_ms=300)
        assert result.is_error and result.output.startswith("timed out after 300 ms")
        client = source.client("sr")

        def cancels() -> int:
            answer = client.call_tool("echo", {"text": "counts"})
            return int(json.loads(answer.output).get("notifications/cancelled", 0))

        # The gateway told the server its read was given up (not held for timeout_ms).
        assert wait_until(lambda: cancels() == 1)
