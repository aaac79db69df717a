"""The command line's resources and prompts: `list` shows them, `read` reads a resource and
`get` renders a prompt — of a toolkit module, or of an MCP server at a URL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_helpers import run
from served_tools import GIF, toolkit
from toolnexus.mcp import HttpServer

REF = "tests/served_tools.py:toolkit"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with HttpServer(toolkit, port=0) as server:
        server.start()
        yield server.url


# What `toolnexus list` shows of the served kit, from its module and from its URL alike.
LISTING = [
    "capital  Asks the client's model for a capital.",
    "slow     Works `seconds`, then answers (a task, for a client that takes tasks).",
    "verses   Three lines, one text block each.",
    "",
    "resources:",
    "  notes://readme  The readme.",
    "  notes://logo    A tiny logo.",
    "",
    "resource templates:",
    "  notes://items/{item_id}  One item, by number.",
    "",
    "prompts:",
    "  review  Ask for a code review.",
]


def test_list_shows_the_tools_then_resources_templates_and_prompts() -> None:
    done = run("list", REF)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == LISTING


def test_read_prints_a_text_resource_and_saves_a_binary_one(tmp_path: Path) -> None:
    text = run("read", REF, "notes://readme")
    assert (text.returncode, text.stdout) == (0, "# Notes\nRead me first.\n")
    binary = run("read", REF, "notes://logo", "--save", str(tmp_path))
    assert binary.returncode == 0, binary.stderr
    assert (tmp_path / "logo").read_bytes() == GIF
    assert "saved notes://logo (image/gif, 14 bytes)" in binary.stderr
    templated = run("read", REF, "notes://items/42", "--json")
    assert json.loads(templated.stdout) == {
        "contents": [
            {
                "uri": "notes://items/42",
                "mimeType": "application/json",
                "text": '{"id":42,"name":"item 42"}',
            }
        ]
    }


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("notes://nothing",), 2, "serves 'notes://nothing'"),
        (("notes://items/x",), 2, "item_id: expected integer"),
    ],
)
def test_a_uri_no_resource_serves_or_one_that_fails_is_said(
    args: tuple[str, ...], code: int, words: str
) -> None:
    done = run("read", REF, *args)
    assert done.returncode == code
    assert words in done.stdout + done.stderr


def test_get_renders_a_prompt_with_string_arguments() -> None:
    done = run("get", REF, "review", "code=x = 1", "focus=style")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "user: Review this for style:",
        "x = 1",
        "user: [image image/gif]",
        "assistant: Reading it now.",
    ]
    as_json = json.loads(run("get", REF, "review", "code=y", "--json").stdout)
    assert as_json["description"] == "Ask for a code review."
    assert as_json["messages"][0]["content"]["text"] == "Review this for bugs:\ny"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("review",), "code: required property is missing"),
        (("review", "code=x", "focus=speed"), "focus"),
        (("reveiw",), "did you mean 'review'"),
        (("review", "nonsense"), "key=value pairs"),
    ],
)
def test_get_refuses_missing_wrong_or_unknown_with_a_usage_error(
    args: tuple[str, ...], words: str
) -> None:
    done = run("get", REF, *args)
    assert done.returncode == 2
    assert words in done.stderr


def test_read_and_get_ask_an_mcp_server_at_a_url(url: str) -> None:
    text = run("read", url, "notes://readme")
    assert (text.returncode, text.stdout) == (0, "# Notes\nRead me first.\n")
    missing = run("read", url, "notes://nothing")
    assert missing.returncode == 2 and "Resource not found" in missing.stderr
    got = run("get", url, "review", "code=z")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == "user: Review this for bugs:"
    refused = run("get", url, "review")
    assert refused.returncode == 2 and "code" in refused.stderr


def test_the_mcp_client_lists_reads_and_gets() -> None:
    from toolnexus import McpError
    from toolnexus.mcp import McpClient

    with HttpServer(toolkit, port=0) as server:
        server.start()
        with McpClient(url=server.url) as client:
            assert [r["uri"] for r in client.list_resources()] == ["notes://readme", "notes://logo"]
            assert [t["uriTemplate"] for t in client.list_resource_templates()] == [
                "notes://items/{item_id}"
            ]
            (content,) = client.read_resource("notes://items/17")
            assert content["text"] == '{"id":17,"name":"item 17"}'
            assert [p["name"] for p in client.list_prompts()] == ["review"]
            rendered = client.get_prompt("review", {"code": "q"})
            assert rendered["messages"][2] == {
                "role": "assistant",
                "content": {"type": "text", "text": "Reading it now."},
            }
            with pytest.raises(McpError, match="Resource not found"):
                client.read_resource("notes://gone")


def test_every_command_takes_the_server_url_read_and_get_take(url: str) -> None:
    listed = run("list", url)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == LISTING
    called = run("call", url, "slow", "seconds=0")
    assert (called.returncode, called.stdout) == (0, "slept 0\n"), called.stderr
    refused = run("call", url, "slow", "seconds=soon")
    assert refused.returncode == 2
    assert "seconds: expected number" in refused.stderr
    schema = run("schema", url, "slow", "--format", "mcp")
    assert json.loads(schema.stdout)[0]["name"] == "slow"


def test_a_server_url_that_cannot_be_reached_is_one_line_and_a_usage_error() -> None:
    done = run("list", "http://127.0.0.1:9/mcp")
    assert done.returncode == 2
    assert done.stderr.startswith("toolnexus list: error: MCP server ")
    assert "cannot reach http://127.0.0.1:9/mcp" in done.stderr
    assert "Traceback" not in done.stderr


def test_call_prints_every_text_block_of_a_server_result(url: str) -> None:
    # An MCP result of three text blocks reaches the client as output + two text parts.
    done = run("call", url, "verses")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "one\ntwo\nthree\n"


FAILING = "tests/failing_served_tools.py:toolkit"


@pytest.fixture(scope="module")
def failing_url() -> Iterator[str]:
    from failing_served_tools import toolkit as failing

    with HttpServer(failing, port=0) as server:
        server.start()
        yield server.url


@pytest.mark.parametrize(
    ("args", "code"),
    [
        # the caller's mistake: a template variable that is not a number, an unknown URI,
        # an unknown prompt, a missing argument — a usage error, exit 2
        (("read", "boom://items/x"), 2),
        (("read", "boom://nothing"), 2),
        (("get", "nothing"), 2),
        (("get", "broken"), 2),
        # the resource's or the prompt's own failure — exit 1, as a tool's error is
        (("read", "boom://now"), 1),
        (("get", "broken", "topic=cats"), 1),
        (("read", "boom://items/7"), 0),
    ],
)
def test_read_and_get_exit_alike_for_the_same_kind_of_mistake_here_and_at_a_url(
    failing_url: str, args: tuple[str, ...], code: int
) -> None:
    command, *rest = args
    here = run(command, FAILING, *rest)
    there = run(command, failing_url, *rest)
    assert (here.returncode, there.returncode) == (code, code), here.stderr + there.stderr
