"""Every primitive through the gateway: the official SDK client, through ``toolnexus serve
mcp.json`` in front of ``@modelcontextprotocol/server-everything``, lists and reads its
resources and templates (under the server's prefix, ``every+demo://…``), gets its prompts
with completion, follows a resource link from a tool result, runs an upstream task, and
hears a subscribed resource's update — both eras, the gateway over stdio and over HTTP,
in front of server-everything over stdio and over HTTP. (server-everything's tasks are the
legacy era's, which the gateway follows itself; a modern upstream task handed to the SDK
client as its own is ``test_mcp_gateway_tasks_interop.py``.)

Needs the interop extra (``mcp``), Node and server-everything (``TOOLNEXUS_NODE``,
``TOOLNEXUS_EVERYTHING``); ``.ci/run`` sets ``TOOLNEXUS_REQUIRE_INTEROP=1``, so there a
missing one fails instead of skipping.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters

from test_mcp_client_interop import everything, one_server_config, served_over_http
from timing import TIMEOUT

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parent.parent
CASES = [("stdio", "legacy"), ("stdio", "2026-07-28"), ("http", "legacy"), ("http", "2026-07-28")]


@pytest.fixture(scope="module", params=["stdio upstream", "http upstream"])
def config(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    node, script = everything()
    path = tmp_path_factory.mktemp("gateway-every") / "mcp.json"
    stdio = {"command": node, "args": [script, "stdio"]}
    with one_server_config(
        path,
        "every",
        stdio if request.param == "stdio upstream" else None,
        lambda port: ([node, script, "streamableHttp"], {"PORT": str(port)}),
    ) as written:
        yield written


@pytest.fixture(scope="module")
def url(config: Path) -> Iterator[str]:
    with served_over_http(config) as served:
        yield served


def run(config: Path, url: str, transport: str, mode: str, body: Any, **options: Any) -> Any:
    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            server: Any = url
            if transport == "stdio":
                server = StdioServerParameters(
                    command=sys.executable,
                    args=["-m", "toolnexus", "serve", str(config)],
                    env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                )
            async with Client(server, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
                return await body(client)

    return anyio.run(main)


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_lists_and_reads_upstream_resources_and_templates(
    config: Path, url: str, transport: str, mode: str
) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_resources()
        templates = await client.list_resource_templates()
        document = await client.read_resource(
            "every+demo://resource/static/document/architecture.md"
        )
        text = await client.read_resource("every+demo://resource/dynamic/text/7")
        blob = await client.read_resource("every+demo://resource/dynamic/blob/7")
        return listed, templates, document, text, blob

    listed, templates, document, text, blob = run(config, url, transport, mode, body)
    uris = [str(r.uri) for r in listed.resources]
    assert "every+demo://resource/static/document/architecture.md" in uris
    assert all(uri.startswith("every+demo://") for uri in uris)
    assert [t.uri_template for t in templates.resource_templates] == [
        "every+demo://resource/dynamic/text/{resourceId}",
        "every+demo://resource/dynamic/blob/{resourceId}",
    ]
    assert "Architecture" in document.contents[0].text
    assert document.contents[0].mime_type == "text/markdown"
    assert text.contents[0].text.startswith("Resource 7:")
    assert str(text.contents[0].uri) == "every+demo://resource/dynamic/text/7"
    # A blob stays a blob, with the type the server gave it (server-everything: text/plain).
    import base64

    assert base64.b64decode(blob.contents[0].blob).startswith(b"Resource 7:")
    assert blob.contents[0].mime_type == "text/plain"


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_gets_upstream_prompts_with_completion(
    config: Path, url: str, transport: str, mode: str
) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_prompts()
        simple = await client.get_prompt("every_simple-prompt")
        args = await client.get_prompt("every_args-prompt", {"city": "Lima"})
        completed = await client.complete(
            types.PromptReference(type="ref/prompt", name="every_completable-prompt"),
            {"name": "department", "value": "E"},
        )
        narrowed = await client.complete(
            types.PromptReference(type="ref/prompt", name="every_completable-prompt"),
            {"name": "name", "value": ""},
            {"department": "Engineering"},
        )
        return listed, simple, args, completed, narrowed

    listed, simple, args, completed, narrowed = run(config, url, transport, mode, body)
    names = [p.name for p in listed.prompts]
    assert "every_simple-prompt" in names and "every_args-prompt" in names
    (args_prompt,) = [p for p in listed.prompts if p.name == "every_args-prompt"]
    assert [(a.name, a.required) for a in args_prompt.arguments or ()] == [
        ("city", True),
        ("state", False),
    ]
    assert simple.messages[0].content.text  # type: ignore[union-attr]
    assert "Lima" in args.messages[0].content.text  # type: ignore[union-attr]
    assert completed.completion.values == ["Engineering"]
    # The context (the department chosen) reached the server: it narrowed the names.
    assert narrowed.completion.values and "Engineering" not in narrowed.completion.values


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_follows_a_resource_link_from_a_tool_result(
    config: Path, url: str, transport: str, mode: str
) -> None:
    async def body(client: Client) -> Any:
        result = await client.call_tool("every_get-resource-links", {"count": 2})
        links = [block for block in result.content if block.type == "resource_link"]
        read = [await client.read_resource(str(link.uri)) for link in links]
        return links, read

    links, read = run(config, url, transport, mode, body)
    assert len(links) == 2
    assert all(str(link.uri).startswith("every+demo://resource/") for link in links)
    for link, contents in zip(links, read, strict=True):
        assert contents.contents and str(contents.contents[0].uri) == str(link.uri)


# The SDK warns that the modern era has no resources/subscribe; this test is legacy.
@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
def test_a_subscribed_upstream_resource_update_reaches_the_client(config: Path) -> None:
    """Legacy era, stdio: the subscribe reaches server-everything, whose updates (turned
    on with its own tool) come back as notifications/resources/updated on the federated
    URI."""
    uri = "every+demo://resource/static/document/architecture.md"

    async def body(client: Client) -> Any:
        await client.subscribe_resource(uri)
        await client.call_tool("every_toggle-subscriber-updates", {})
        with anyio.fail_after(TIMEOUT):
            await heard.wait()
        return seen

    seen: list[str] = []
    heard: Any = None

    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            seen.append(str(root.params.uri))
            heard.set()

    async def main() -> Any:
        nonlocal heard
        heard = anyio.Event()
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "toolnexus", "serve", str(config)],
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        with anyio.fail_after(4 * TIMEOUT):
            async with Client(
                server, mode="legacy", read_timeout_seconds=TIMEOUT, message_handler=handler
            ) as client:
                return await body(client)

    assert anyio.run(main) and seen[0] == uri


def test_the_client_runs_an_upstream_task_to_completion() -> None:
    """server-everything's ``simulate-research-query`` runs only as a task (legacy era):
    the client creates it, polls it (its status messages as progress) and reads its
    result — one call to the caller."""
    from toolnexus.mcp import McpClient

    node, script = everything()
    messages: list[str] = []
    with McpClient(node, [script, "stdio"], name="every") as client:
        client.list_tools()  # says which tools run only as tasks
        result = client.call_tool(
            "simulate-research-query",
            {"topic": "gateways"},
            progress=lambda progress, total, message: messages.append(str(message)),
        )
    assert not result.is_error, result.output
    assert "Research Report: gateways" in result.output
    assert "Gathering sources..." in messages and len(messages) >= 2


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_runs_an_upstream_task_through_the_gateway(
    config: Path, url: str, transport: str, mode: str
) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("every_simulate-research-query", {"topic": "hops"})

    result = run(config, url, transport, mode, body)
    assert not result.is_error
    assert "Research Report: hops" in result.content[0].text  # type: ignore[union-attr]


async def historical(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"interpretation": "historical"})


def test_the_client_answers_an_upstream_tasks_question() -> None:
    """An ambiguous ``simulate-research-query`` asks (its task goes input_required, the
    question comes on ``tasks/result``): the call hands it back, the answer completes it."""
    from toolnexus import Answer, Host, Toolkit, ToolResult
    from toolnexus.mcp import McpClient

    node, script = everything()
    args = {"topic": "ships", "ambiguous": True}
    client = McpClient(node, [script, "stdio"], name="every")
    with client, Host(Toolkit(client.tools()), timeout_ms=int(4 * TIMEOUT * 1000)) as host:
        first = host.call("every_simulate-research-query", args)
        question = ToolResult.pending_of(first)
        assert question is not None and "interpretations" in question.prompt
        answer = Answer(question.id, True, {"interpretation": "historical"})
        done = host.resume("every_simulate-research-query", args, first, answer)
    assert not done.is_error, done.output
    assert "Research Report: ships (historical)" in done.output


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_answers_an_upstream_tasks_question_through_the_gateway(
    config: Path, url: str, transport: str, mode: str
) -> None:
    async def body(client: Client) -> Any:
        arguments = {"topic": "ships", "ambiguous": True}
        return await client.call_tool("every_simulate-research-query", arguments)

    result = run(config, url, transport, mode, body, elicitation_callback=historical)
    assert not result.is_error
    assert "Research Report: ships (historical)" in result.content[0].text  # type: ignore[union-attr]
