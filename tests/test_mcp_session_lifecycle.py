"""The session's two eras: the legacy ``initialize`` handshake and modern per-request _meta."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Toolkit, tool
from toolnexus.mcp import (
    LEGACY_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    Send,
    ServerOptions,
    ServerSession,
)

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
SERVER_INFO = {"name": "calc", "version": "9.9"}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def new_session(**options: Any) -> ServerSession:
    return ServerSession(Toolkit([add]), ServerOptions(name="calc", version="9.9", **options))


def reply(session: ServerSession, message: dict[str, Any]) -> dict[str, Any]:
    actions = session.receive(message)
    assert len(actions) == 1 and isinstance(actions[0], Send), actions
    return dict(actions[0].message)


def request(session: ServerSession, rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return reply(session, message)


def initialize(session: ServerSession, version: str = "2025-11-25", **caps: Any) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": caps,
        "clientInfo": {"name": "t", "version": "1"},
    }
    return request(session, 0, "initialize", params)


# --------------------------------------------------------------------------- legacy


@pytest.mark.parametrize("version", LEGACY_PROTOCOL_VERSIONS)
def test_initialize_echoes_every_legacy_version_it_speaks(version: str) -> None:
    session = new_session()
    answer = initialize(session, version)
    assert answer == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": SERVER_INFO,
        },
    }
    assert session.protocol_version == version


@pytest.mark.parametrize("version", ["2099-01-01", "2026-07-28", "1.0"])
def test_initialize_with_a_version_it_does_not_speak_offers_the_newest_legacy_one(
    version: str,
) -> None:
    session = new_session()
    assert initialize(session, version)["result"]["protocolVersion"] == "2025-11-25"


def test_initialize_sends_instructions_when_the_server_has_them() -> None:
    session = new_session(instructions="Use add for sums.")
    assert initialize(session)["result"]["instructions"] == "Use add for sums."


def test_a_second_initialize_is_refused_and_the_first_session_stays() -> None:
    session = new_session()
    initialize(session, "2025-06-18")
    again = initialize(session, "2025-11-25")
    assert again["error"]["code"] == -32600
    assert "already" in again["error"]["message"]
    assert session.protocol_version == "2025-06-18"


@pytest.mark.parametrize(
    "params, field",
    [
        ({"capabilities": {}}, "protocolVersion"),
        ({"protocolVersion": 20251125, "capabilities": {}}, "protocolVersion"),
        ({"protocolVersion": "2025-11-25", "capabilities": []}, "capabilities"),
        ({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": "me"}, "clientInfo"),
    ],
)
def test_initialize_with_a_mistyped_field_is_invalid_params(
    params: dict[str, Any], field: str
) -> None:
    session = new_session()
    answer = request(session, 1, "initialize", params)
    assert answer["error"]["code"] == -32602
    assert field in answer["error"]["message"]
    assert session.protocol_version is None


def test_ping_is_answered_before_initialize_and_after() -> None:
    session = new_session()
    assert request(session, "p1", "ping") == {"jsonrpc": "2.0", "id": "p1", "result": {}}
    initialize(session)
    assert request(session, "p2", "ping") == {"jsonrpc": "2.0", "id": "p2", "result": {}}


def test_a_request_before_initialize_without_modern_meta_is_invalid_params_naming_both_ways() -> (
    None
):
    session = new_session()
    answer = request(session, 1, "tools/list")
    assert answer["error"]["code"] == -32602
    assert "initialize" in answer["error"]["message"]
    assert "io.modelcontextprotocol/protocolVersion" in answer["error"]["message"]


def test_after_initialize_and_initialized_legacy_requests_are_served() -> None:
    session = new_session()
    initialize(session)
    assert session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    listed = request(session, 2, "tools/list")
    assert [t["name"] for t in listed["result"]["tools"]] == ["add"]


def test_legacy_results_carry_no_modern_fields() -> None:
    session = new_session()
    initialize(session)
    listed = request(session, 2, "tools/list")["result"]
    assert set(listed) == {"tools"}


def test_server_discover_is_not_a_legacy_method() -> None:
    session = new_session()
    initialize(session)
    assert request(session, 3, "server/discover")["error"]["code"] == -32601


# --------------------------------------------------------------------------- modern


def test_a_modern_request_is_served_without_any_handshake() -> None:
    session = new_session()
    listed = request(session, 1, "tools/list", {"_meta": MODERN})
    assert [t["name"] for t in listed["result"]["tools"]] == ["add"]
    assert session.protocol_version is None


def test_every_modern_result_says_complete_and_names_the_server() -> None:
    session = new_session()
    listed = request(session, 1, "tools/list", {"_meta": MODERN})["result"]
    assert listed["resultType"] == "complete"
    assert listed["_meta"] == {"io.modelcontextprotocol/serverInfo": SERVER_INFO}


def test_server_discover_advertises_versions_capabilities_identity_and_cache_hints() -> None:
    session = new_session(instructions="Sums only.", list_ttl_ms=5_000)
    result = request(session, "d", "server/discover", {"_meta": MODERN})["result"]
    # Only what a modern request may name: legacy revisions go through initialize.
    assert result["supportedVersions"] == list(reversed(MODERN_PROTOCOL_VERSIONS))
    assert result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO
    assert result["instructions"] == "Sums only."
    assert result["ttlMs"] == 5_000
    assert result["cacheScope"] == "public"
    assert result["resultType"] == "complete"


@pytest.mark.parametrize(
    "meta, problem",
    [
        ({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "clientCapabilities"),
        (
            {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": "all",
            },
            "clientCapabilities",
        ),
        (
            {
                "io.modelcontextprotocol/protocolVersion": 2026,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "protocolVersion",
        ),
    ],
)
def test_a_modern_envelope_missing_or_mistyping_a_required_field_is_invalid_params(
    meta: dict[str, Any], problem: str
) -> None:
    session = new_session()
    answer = request(session, 7, "tools/list", {"_meta": meta})
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32602
    assert problem in answer["error"]["message"]


def test_meta_that_is_not_an_object_is_invalid_params() -> None:
    session = new_session()
    assert request(session, 1, "tools/list", {"_meta": ["x"]})["error"]["code"] == -32602


@pytest.mark.parametrize("version", ["2027-01-01", "2025-11-25", ""])
def test_an_unsupported_modern_version_is_refused_with_the_supported_list(version: str) -> None:
    session = new_session()
    meta = {**MODERN, "io.modelcontextprotocol/protocolVersion": version}
    error = request(session, 1, "tools/list", {"_meta": meta})["error"]
    assert error["code"] == -32022
    assert error["message"].startswith("Unsupported protocol version")
    assert error["data"]["requested"] == version
    assert error["data"]["supported"] == ["2026-07-28"]
    assert "2025-11-25 through initialize" in error["message"]


def test_discover_and_the_unsupported_version_error_name_the_same_versions() -> None:
    session = new_session()
    discovered = request(session, 1, "server/discover", {"_meta": MODERN})["result"]
    meta = {**MODERN, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    refused = request(session, 2, "tools/list", {"_meta": meta})["error"]
    assert refused["data"]["supported"] == discovered["supportedVersions"]
    for version in discovered["supportedVersions"]:
        named = {**MODERN, "io.modelcontextprotocol/protocolVersion": version}
        assert "result" in request(session, 3, "tools/list", {"_meta": named})


def test_initialize_carrying_modern_meta_is_method_not_found() -> None:
    session = new_session()
    answer = request(session, 4, "initialize", {"_meta": MODERN})
    assert answer["error"]["code"] == -32601
    assert session.protocol_version is None


def test_ping_is_not_a_modern_method() -> None:
    session = new_session()
    assert request(session, 1, "ping", {"_meta": MODERN})["error"]["code"] == -32601


def test_a_modern_request_on_a_legacy_connection_is_served_by_its_own_meta() -> None:
    session = new_session()
    initialize(session, "2024-11-05")
    result = request(session, 1, "server/discover", {"_meta": MODERN})["result"]
    assert result["resultType"] == "complete"


@pytest.mark.parametrize("meta", [None, MODERN])
def test_an_unknown_method_is_method_not_found_in_either_era(meta: Any) -> None:
    session = new_session()
    if meta is None:
        initialize(session)
    params = {"_meta": meta} if meta is not None else None
    error = request(session, 5, "sampling/teleport", params)["error"]
    assert error["code"] == -32601
    assert "sampling/teleport" in error["message"]


# --------------------------------------------------------------------------- the object


def test_repr_shows_the_era_and_calls_in_flight() -> None:
    session = new_session()
    assert repr(session) == "<ServerSession not initialized, 0 call(s) in flight>"
    initialize(session, "2025-06-18")
    session.receive(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {}},
        }
    )
    assert repr(session) == "<ServerSession legacy 2025-06-18, 1 call(s) in flight>"
    assert session.running_calls == 1


def test_version_defaults_to_the_toolnexus_version() -> None:
    import toolnexus

    session = ServerSession(Toolkit([add]))
    result = initialize(session)["result"]
    assert result["serverInfo"] == {"name": "toolnexus", "version": toolnexus.__version__}


@pytest.mark.parametrize(
    "options, match",
    [
        ({"page_size": 0}, "page_size must be an int >= 1"),
        ({"list_ttl_ms": -1}, "list_ttl_ms must be an int >= 0"),
        ({"name": ""}, "name must be a non-empty str"),
        ({"secret": b"short"}, "a key must be at least 16 bytes"),
    ],
)
def test_a_misconfigured_session_raises_at_once(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ServerSession(Toolkit([add]), ServerOptions(**options))
