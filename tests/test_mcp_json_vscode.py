"""VS Code's mcp.json: ``${input:id}`` values (which VS Code prompts for) come from the
environment or fail the server saying how to give them, never passing through literally;
``envFile`` fills a stdio server's environment from KEY=VALUE lines next to the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from toolnexus import Host
from toolnexus.mcp import McpSource

ENV_TOOL = '''
import os
from toolnexus import tool

@tool
def getenv(name: str) -> str:
    """A variable of this server's environment."""
    return os.environ.get(name, "<unset>")
'''


def write_config(folder: Path, server: dict[str, object], **top: object) -> Path:
    (folder / "envtool.py").write_text(ENV_TOOL, encoding="utf-8")
    entry = {
        "command": sys.executable,
        "args": ["-m", "toolnexus", "serve", str(folder / "envtool.py")],
        **server,
    }
    path = folder / "mcp.json"
    path.write_text(json.dumps({**top, "servers": {"env": entry}}), encoding="utf-8")
    return path


def getenv(path: Path, name: str) -> str:
    with McpSource(path).connect() as source:
        status = source.status()["env"]
        assert status.status == "connected", status.reason
        with Host(source.toolkit) as host:
            return host.call("env_getenv", {"name": name}).output


INPUTS = [{"type": "promptString", "id": "api-key", "description": "API key", "password": True}]


def test_an_input_is_read_from_its_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLNEXUS_INPUT_API_KEY", "k-123")
    path = write_config(tmp_path, {"env": {"TOKEN": "${input:api-key}"}}, inputs=INPUTS)
    assert getenv(path, "TOKEN") == "k-123"


def test_an_input_without_a_value_fails_the_server_saying_how_to_give_it(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLNEXUS_INPUT_API_KEY", raising=False)
    path = write_config(tmp_path, {"args": ["--key", "${input:api-key}"]}, inputs=INPUTS)
    with McpSource(path).connect() as source:
        status = source.status()["env"]
    assert status.status == "failed"
    assert status.reason == (
        "args uses ${input:api-key} (API key), which needs a value: set it in the environment "
        "as TOOLNEXUS_INPUT_API_KEY (toolnexus does not prompt for inputs)"
    )


def test_an_undeclared_input_is_named_too_and_a_declared_default_is_used(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLNEXUS_INPUT_REGION", raising=False)
    monkeypatch.delenv("TOOLNEXUS_INPUT_TOKEN", raising=False)
    undeclared = write_config(tmp_path, {"env": {"T": "${input:token}"}})
    with McpSource(undeclared).connect() as source:
        reason = source.status()["env"].reason or ""
    assert "TOOLNEXUS_INPUT_TOKEN" in reason and "not declared in inputs" in reason
    defaulted = write_config(
        tmp_path,
        {"env": {"REGION": "${input:region}"}},
        inputs=[{"type": "promptString", "id": "region", "default": "eu-west"}],
    )
    assert getenv(defaulted, "REGION") == "eu-west"


def test_an_input_value_is_not_read_again_for_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLNEXUS_INPUT_API_KEY", "${HOME}")
    path = write_config(tmp_path, {"env": {"TOKEN": "${input:api-key}"}}, inputs=INPUTS)
    assert getenv(path, "TOKEN") == "${HOME}"


def test_env_file_fills_the_environment_relative_to_the_config_and_env_wins(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / ".env").write_text(
        '# the server\'s secrets\n\nAPI_KEY=from-file\nexport QUOTED="a b"\nBOTH=file\n',
        encoding="utf-8",
    )
    path = write_config(tmp_path / "conf", {"envFile": ".env", "env": {"BOTH": "entry"}})
    assert getenv(path, "API_KEY") == "from-file"
    assert getenv(path, "QUOTED") == "a b"
    assert getenv(path, "BOTH") == "entry"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "envFile '{path}': cannot read it: No such file or directory"),
        ("A=1\nnot a pair\n", "envFile '{path}', line 2: expected KEY=VALUE (a variable name)"),
    ],
)
def test_an_env_file_that_is_missing_or_malformed_fails_the_server_naming_it(
    tmp_path, content, problem
):
    env_file = tmp_path / "server.env"
    if content is not None:
        env_file.write_text(content, encoding="utf-8")
    path = write_config(tmp_path, {"envFile": "server.env"})
    with McpSource(path).connect() as source:
        status = source.status()["env"]
    assert (status.status, status.reason) == ("failed", problem.format(path=env_file))


def test_env_file_on_an_http_server_is_refused_naming_the_place() -> None:
    config = {"servers": {"web": {"url": "http://127.0.0.1:9/mcp", "envFile": ".env"}}}
    with pytest.raises(ValueError, match=r"servers\.web\.envFile: an env file is for a stdio"):
        McpSource(config)
