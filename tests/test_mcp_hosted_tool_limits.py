"""``McpSource.hosted()`` never lets a provider reach more of a server than ``mcp.json``
allows: ``excludeTools`` is taken off ``includeTools`` in both providers' shapes, a limit
a provider cannot be told (``excludeTools`` alone) is refused naming the key, and so is an
OAuth ``auth`` a hosted entry cannot carry."""

from __future__ import annotations

import pytest

from toolnexus.mcp import McpSource


def test_exclude_tools_is_taken_off_include_tools_for_openai_and_anthropic() -> None:
    source = McpSource(
        {
            "mcpServers": {
                "w2": {
                    "url": "https://x.example/mcp",
                    "includeTools": ["a", "b"],
                    "excludeTools": ["b"],
                },
                # switched off: left out, whatever a provider could not be told about them
                "off": {"url": "https://off.example/mcp", "auth": "oauth", "disabled": True},
                "on": {"url": "https://on.example/mcp", "excludeTools": ["x"], "enabled": False},
            }
        }
    )
    (entry,) = source.hosted()
    assert entry.allowed_tools == ("a",)
    assert entry.to_openai()["allowed_tools"] == ["a"]
    toolset = entry.to_anthropic_toolset()
    assert toolset["default_config"] == {"enabled": False}
    assert toolset["configs"] == {"a": {"enabled": True}}


def test_exclude_tools_without_include_tools_is_refused_naming_the_key() -> None:
    source = McpSource(
        {
            "mcpServers": {
                "wiki": {
                    "url": "https://mcp.deepwiki.com/mcp",
                    "excludeTools": ["delete_everything"],
                }
            }
        }
    )
    with pytest.raises(ValueError) as caught:
        source.hosted()
    text = str(caught.value)
    assert text.startswith("mcp.json: mcpServers.wiki.excludeTools: ")
    assert "'delete_everything'" in text and "mcpServers.wiki.includeTools" in text


@pytest.mark.parametrize(
    "auth", ["oauth", {"type": "oauth", "clientId": "app", "scopes": ["read"]}]
)
def test_a_server_that_signs_in_with_oauth_is_refused_naming_its_auth(auth: object) -> None:
    source = McpSource(
        {
            "mcpServers": {
                "open": {"url": "https://open.example/mcp"},
                "crm": {"url": "https://crm.example/mcp", "auth": auth},
            }
        }
    )
    with pytest.raises(ValueError) as caught:
        source.hosted()
    text = str(caught.value)
    assert text.startswith("mcp.json: mcpServers.crm.auth: ")
    assert "Authorization" in text  # how to fix: a token header instead
