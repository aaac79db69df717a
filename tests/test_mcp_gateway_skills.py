"""Upstream skills through ``mcp.json`` and the gateway: an McpSource adds each server's
skills (the skills extension) to its toolkit's ``skill`` tool, named as its tools are and
offered under prefixed ``skill://<prefix>/…`` URIs (``"skills": false`` opts a server
out); ``toolnexus serve mcp.json`` re-exports them (skills/list, skills/get, the files as
resources, directory reads), reading each file from upstream only when asked and
verifying it against the listed digest and size. The upstream is our own server
(``toolnexus serve`` of a skills folder); the gateway's client is the official SDK's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Host
from toolnexus.errors import McpError
from toolnexus.mcp import McpSource

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "skill_fixtures"


def skills_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "skills"
    for name in ("pdf-processing", "release-notes"):
        shutil.copytree(FIXTURES / name, folder / name)
    return folder


def upstream(folder: Path, **more: Any) -> dict[str, Any]:
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return {
        "command": sys.executable,
        "args": ["-m", "toolnexus", "serve", str(folder)],
        "env": {"PYTHONPATH": path},
        **more,
    }


def write_config(tmp_path: Path, **servers: dict[str, Any]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


# ---------------------------------------------------------------------- URIs


def test_a_skill_uri_takes_the_prefix_as_its_first_path_segment() -> None:
    source = McpSource({"mcpServers": {"docs": {"command": "x"}, "raw": {"command": "y"}}})
    assert source.federated_uri("docs", "skill://pdf/SKILL.md") == "skill://docs/pdf/SKILL.md"
    assert source.upstream_uri("skill://docs/pdf/SKILL.md") == ("docs", "skill://pdf/SKILL.md")
    # nested skill paths keep theirs after the prefix, and read back
    nested = source.federated_uri("docs", "skill://acme/billing/refunds/SKILL.md")
    assert nested == "skill://docs/acme/billing/refunds/SKILL.md"
    assert source.upstream_uri(nested) == ("docs", "skill://acme/billing/refunds/SKILL.md")
    # another scheme keeps the general rule: a skill path still ends in the skill's name
    other = source.federated_uri("docs", "github://o/r/skills/refunds/SKILL.md")
    assert other == "docs+github://o/r/skills/refunds/SKILL.md"


def test_skills_must_be_true_or_false_in_mcp_json() -> None:
    with pytest.raises(ValueError, match=r"mcpServers\.docs\.skills: must be true or false"):
        McpSource({"mcpServers": {"docs": {"command": "x", "skills": "no"}}})


# ---------------------------------------------------------------------- the source's toolkit


def test_a_source_adds_its_servers_skills_to_the_skill_tool(tmp_path: Path) -> None:
    folder = skills_folder(tmp_path)
    config = write_config(tmp_path, docs=upstream(folder), quiet=upstream(folder, skills=False))
    with McpSource(config).connect() as source:
        status = source.status()
        assert status["docs"].skills == ("docs_pdf-processing", "docs_release-notes")
        assert status["quiet"].status == "connected" and status["quiet"].skills == ()
        skills = {skill.name: skill for skill in source.toolkit.skills()}
        assert sorted(skills) == ["docs_pdf-processing", "docs_release-notes"]
        assert skills["docs_pdf-processing"].location == "skill://docs/pdf-processing/SKILL.md"
        assert "docs_pdf-processing" in source.toolkit.skills_prompt()
        # a server's skills sit in its namespace, beside its tools: a view admits them so
        docs = source.toolkit.view(namespaces=["docs"])
        assert [skill.name for skill in docs.skills()] == sorted(skills)
        assert source.toolkit.view(namespaces=["quiet"]).skills() == []
        with Host(source.toolkit, timeout_ms=30_000) as host:
            loaded = host.call("skill", {"name": "docs_pdf-processing"})
        assert not loaded.is_error, loaded.output
        body = (folder / "pdf-processing" / "SKILL.md").read_text(encoding="utf-8")
        assert body.split("---", 2)[2].strip() in loaded.output
        assert "Base directory for this skill: skill://docs/pdf-processing/" in loaded.output
        assert "<file>skill://docs/pdf-processing/references/FORMS.md</file>" in loaded.output
        forms = skills["docs_pdf-processing"].read(
            "skill://docs/pdf-processing/references/FORMS.md"
        )
        assert forms == (folder / "pdf-processing" / "references" / "FORMS.md").read_bytes()


# ---------------------------------------------------------------------- through the gateway

interop = pytest.mark.interop


def sdk_run(config: Path, mode: str, body: Any, transport: str = "stdio") -> Any:
    """``body(client)`` with the official SDK's client of ``toolnexus serve mcp.json``
    (over stdio, or over Streamable HTTP: the gateway then runs as a process here)."""
    from extras import require

    require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")
    import subprocess

    import anyio
    from mcp import Client, StdioServerParameters

    from test_mcp_client_interop import free_port, wait_listening
    from timing import TIMEOUT

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "toolnexus", "serve", str(config)]
    server: Any = StdioServerParameters(command=command[0], args=command[1:], env=env)
    gateway = None
    if transport == "http":
        port = free_port()
        gateway = subprocess.Popen(
            [*command, "--http", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server = f"http://127.0.0.1:{port}/mcp"

    async def main() -> Any:
        with anyio.fail_after(6 * TIMEOUT):
            async with Client(server, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                return await body(client)

    try:
        if gateway is not None:
            wait_listening(port, gateway)
        return anyio.run(main)
    finally:
        if gateway is not None:
            gateway.terminate()
            gateway.wait(TIMEOUT)


async def ask(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request the SDK has no method for (the skills extension), its result as sent."""
    import mcp.types as types
    from mcp.types import Request as SdkRequest
    from pydantic import ConfigDict

    class Raw(SdkRequest[Any, Any]):
        pass

    class Answer(types.Result):
        model_config = ConfigDict(extra="allow")

    got = await client.session.send_request(Raw(method=method, params=params), Answer)
    return dict(got.model_extra or {})


@interop
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_sdk_lists_gets_and_reads_upstream_skills_through_the_gateway(
    tmp_path: Path, mode: str, transport: str
) -> None:
    folder = skills_folder(tmp_path)
    config = write_config(tmp_path, docs=upstream(folder))

    async def body(client: Any) -> Any:
        listed = await ask(client, "skills/list", {})
        got = await ask(client, "skills/get", {"uri": "skill://docs/pdf-processing/SKILL.md"})
        manifest = await client.read_resource("skill://docs/pdf-processing/SKILL.md")
        forms = await client.read_resource("skill://docs/pdf-processing/references/FORMS.md")
        root = await ask(client, "resources/directory/read", {"uri": "skill://docs/pdf-processing"})
        resources = await client.list_resources()
        return listed, got, manifest, forms, root, resources

    listed, got, manifest, forms, root, resources = sdk_run(config, mode, body, transport)
    entries = {entry["uri"]: entry for entry in listed["skills"]}
    assert sorted(entries) == [
        "skill://docs/pdf-processing/SKILL.md",
        "skill://docs/release-notes/SKILL.md",
    ]
    pdf = entries["skill://docs/pdf-processing/SKILL.md"]
    assert pdf["frontmatter"]["name"] == "pdf-processing"  # the skill's own name, unprefixed
    files = {each["uri"]: each for each in pdf["resources"]}
    forms_bytes = (folder / "pdf-processing" / "references" / "FORMS.md").read_bytes()
    import hashlib

    forms_entry = files["skill://docs/pdf-processing/references/FORMS.md"]
    assert forms_entry["size"] == len(forms_bytes)
    assert forms_entry["digest"] == "sha256:" + hashlib.sha256(forms_bytes).hexdigest()
    assert got["skill"] == pdf
    text = (folder / "pdf-processing" / "SKILL.md").read_text(encoding="utf-8")
    assert manifest.contents[0].text == text
    assert forms.contents[0].text == forms_bytes.decode("utf-8")
    children = {each["name"]: each["mimeType"] for each in root["resources"]}
    assert children["references"] == "inode/directory" and children["SKILL.md"] == "text/markdown"
    uris = [str(each.uri) for each in resources.resources]
    # each SKILL.md listed once, under the gateway's URI (never the upstream's twice over)
    assert uris.count("skill://docs/pdf-processing/SKILL.md") == 1
    assert not any(uri.startswith("docs+skill:") for uri in uris)


@interop
def test_a_file_changed_upstream_is_a_named_error_and_other_skills_keep_working(
    tmp_path: Path,
) -> None:
    folder = skills_folder(tmp_path)
    config = write_config(tmp_path, docs=upstream(folder))
    forms = folder / "pdf-processing" / "references" / "FORMS.md"

    async def body(client: Any) -> Any:
        from mcp import MCPError

        await ask(client, "skills/list", {})  # the gateway listed the skills: it is up
        forms.write_text("# Forms\n\nSomething else entirely.\n", encoding="utf-8")
        with pytest.raises(MCPError) as failed:
            await client.read_resource("skill://docs/pdf-processing/references/FORMS.md")
        other = await client.read_resource("skill://docs/release-notes/SKILL.md")
        return failed.value, other

    failed, other = sdk_run(config, "2026-07-28", body)
    message = str(failed)
    assert "docs_pdf-processing" in message
    assert "skill://docs/pdf-processing/references/FORMS.md" in message
    assert "the skill's entry says" in message
    text = (folder / "release-notes" / "SKILL.md").read_text(encoding="utf-8")
    assert other.contents[0].text == text


def test_a_servers_scopes_gate_its_skills_through_the_gateway(tmp_path: Path) -> None:
    from toolnexus import Principal
    from toolnexus.mcp import AccessOptions, HttpServer, McpClient, ServerOptions

    principals = {"alice": Principal("alice", scopes="docs"), "bob": Principal("bob", scopes="")}
    folder = skills_folder(tmp_path)
    config = write_config(tmp_path, docs=upstream(folder, scopes=["docs"]))
    with McpSource(config).connect() as source:
        options = ServerOptions(access=AccessOptions(verify_token=principals.get))
        with HttpServer(source.toolkit, options, port=0) as server:
            server.start()

            def seen(token: str) -> tuple[list[str], list[str]]:
                headers = {"Authorization": f"Bearer {token}"}
                with McpClient(url=server.url, headers=headers, name="gw") as client:
                    uris = sorted(entry["uri"] for entry in client.list_skills())
                    tools = sorted(tool["name"] for tool in client.list_tools())
                    return uris, tools

            alice, bob = seen("alice"), seen("bob")
            assert alice[0] == [
                "skill://docs/pdf-processing/SKILL.md",
                "skill://docs/release-notes/SKILL.md",
            ]
            assert "skill" in alice[1]  # the gateway's own skill tool, over what alice sees
            assert bob == ([], [])  # no skill, and no skill tool to load one with
            headers = {"Authorization": "Bearer bob"}
            with (
                McpClient(url=server.url, headers=headers, name="gw") as client,
                pytest.raises(McpError),
            ):
                client.read_resource("skill://docs/release-notes/SKILL.md")


def test_skills_added_upstream_at_run_time_reach_the_source(tmp_path: Path) -> None:
    import threading

    from timing import TIMEOUT
    from toolnexus import Toolkit
    from toolnexus.mcp import HttpServer

    served = Toolkit()
    served.add_skills(FIXTURES / "pdf-processing")
    with HttpServer(served, port=0) as server:
        server.start()
        with McpSource({"mcpServers": {"docs": {"url": server.url}}}).connect() as source:
            assert [s.name for s in source.toolkit.skills()] == ["docs_pdf-processing"]
            arrived = threading.Event()

            def watcher(kind: str, uri: str | None) -> None:
                names = [s.name for s in source.toolkit.skills()]
                if kind == "skills" and "docs_release-notes" in names:
                    arrived.set()

            stop = source.toolkit._watch(watcher)
            try:
                served.add_skills(FIXTURES / "release-notes")
                # what the server announces when its skills change (over stdio, or a
                # modern client's subscriptions/listen), as the client hears it
                source.client("docs")._noticed("notifications/resources/list_changed", {})
                assert arrived.wait(TIMEOUT), "the source never listed the new skill"
            finally:
                stop()
            names = sorted(s.name for s in source.toolkit.skills())
            assert names == ["docs_pdf-processing", "docs_release-notes"]
            assert source.status()["docs"].skills == tuple(names)


def test_list_changes_heard_at_once_never_empty_the_sources_catalog(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # One upstream announces its lists changed many times at once (a listen stream and a
    # poll can both hear it): every refresh of it runs on its own thread. A reader of the
    # toolkit must find the server's tools and skills at every change, each name held
    # all along, and the source must never take the server's own names for another's.
    import logging
    import threading

    from timing import wait_until
    from toolnexus import Toolkit, tool
    from toolnexus.mcp import HttpServer

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    served = Toolkit()
    served.register(echo)
    served.add_skills(FIXTURES / "pdf-processing")
    with HttpServer(served, port=0) as server:
        server.start()
        with McpSource({"mcpServers": {"docs": {"url": server.url}}}).connect() as source:
            kit = source.toolkit
            before = source.status()["docs"]
            assert before.tools == ("docs_echo", "docs_skill")
            snapshots: list[tuple[list[str], bool, bool]] = []

            def watcher(kind: str, uri: str | None) -> None:
                snapshots.append(
                    ([s.name for s in kit.skills()], "docs_echo" in kit, "docs_skill" in kit)
                )

            stop = kit._watch(watcher)
            client = source.client("docs")
            caplog.set_level(logging.WARNING, logger="toolnexus")
            try:
                served.add_skills(FIXTURES / "release-notes")
                for _ in range(25):
                    client._noticed("notifications/resources/list_changed", {})
                    client._noticed("notifications/tools/list_changed", {})

                def refreshing() -> bool:
                    return any(t.name == "toolnexus-mcp-docs-notice" for t in threading.enumerate())

                assert wait_until(lambda: not refreshing()), "the refreshes never ended"
            finally:
                stop()
            assert snapshots, "no refresh changed the toolkit"
            for skills, has_echo, has_skill_tool in snapshots:
                assert "docs_pdf-processing" in skills, snapshots
                assert has_echo and has_skill_tool, snapshots
            names = sorted(s.name for s in kit.skills())
            assert names == ["docs_pdf-processing", "docs_release-notes"]
            after = source.status()["docs"]
            assert after.tools == ("docs_echo", "docs_skill")
            assert after.skills == tuple(names)
            assert not [r for r in caplog.records if "skipped" in r.getMessage()]


@contextlib.contextmanager
def pdf_source() -> Iterator[McpSource]:
    """A source connected to server ``docs``: a server of ours (HTTP, in this process)
    serving the pdf-processing skill."""
    from toolnexus import Toolkit
    from toolnexus.mcp import HttpServer

    served = Toolkit()
    served.add_skills(FIXTURES / "pdf-processing")
    with HttpServer(served, port=0) as server:
        server.start()
        with McpSource({"mcpServers": {"docs": {"url": server.url}}}).connect() as source:
            yield source


PDF_MANIFEST = "skill://docs/pdf-processing/SKILL.md"


@contextlib.contextmanager
def slow_pdf_source() -> Iterator[tuple[McpSource, threading.Event, threading.Event]]:
    """:func:`pdf_source`, its server slow to read a file: ``(source, asked, release)`` —
    ``asked`` is set as a read reaches the server, which answers once ``release`` is."""
    from timing import TIMEOUT

    with pdf_source() as source:
        upstream = source.client("docs")
        read = upstream.read_resource
        asked, release = threading.Event(), threading.Event()

        def slow_read(uri: str) -> Any:
            asked.set()
            assert release.wait(TIMEOUT), "the test never released the upstream"
            return read(uri)

        upstream.read_resource = slow_read  # type: ignore[method-assign]
        try:
            yield source, asked, release
        finally:
            release.set()


def test_a_skill_file_read_from_a_slow_upstream_holds_up_nothing_else_of_a_stdio_session() -> None:
    # A re-exported skill's file is read from its server when asked: over stdio, while
    # that server is slow to answer, the session's other requests are answered.
    from test_mcp_tasks import PipedTasksClient
    from timing import TIMEOUT

    with slow_pdf_source() as (source, asked, release):
        client = PipedTasksClient(source.toolkit)
        try:
            client.send(1, "resources/read", {"uri": PDF_MANIFEST})
            assert asked.wait(TIMEOUT), "the read never reached the upstream"
            listed = client.request(2, "tools/list", {})["result"]
            assert "skill" in [tool["name"] for tool in listed["tools"]]
            release.set()
            (content,) = client.answer(1)["result"]["contents"]
            assert content["uri"] == PDF_MANIFEST
            assert content["text"].startswith("---\nname: pdf-processing")
        finally:
            release.set()
            client.close()


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
def test_over_http_a_skill_file_read_its_client_cancelled_ends_as_a_cancelled_call(
    accept: str,
) -> None:
    # A legacy session over HTTP cancels a read that waits on a slow upstream: once the
    # upstream answers, the read's POST ends as a cancelled call's does (an empty event
    # stream, or the -32800 error), never with the answer nor left open.
    from http_helpers import assert_ended_as_cancelled, post
    from test_mcp_http_attacks import legacy_client
    from timing import TIMEOUT
    from toolnexus.mcp import HttpServer

    with (
        slow_pdf_source() as (source, asked, release),
        HttpServer(source.toolkit, port=0) as server,
    ):
        server.start()
        session = legacy_client(server)
        message = {
            "jsonrpc": "2.0",
            "id": "r-1",
            "method": "resources/read",
            "params": {"uri": PDF_MANIFEST},
        }
        answers: list[tuple[int, dict[str, str], bytes]] = []

        def reader() -> None:
            answers.append(post(server, message, {"Mcp-Session-Id": session, "Accept": accept}))

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            assert asked.wait(TIMEOUT), "the read never reached the upstream"
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "r-1"},
            }
            assert post(server, cancel, {"Mcp-Session-Id": session})[0] == 202
        finally:
            release.set()
            thread.join(TIMEOUT)
        (reply,) = answers
        assert_ended_as_cancelled(reply, accept, "r-1")
        # The session goes on, and the id is free again.
        again = post(server, message, {"Mcp-Session-Id": session, "Accept": "application/json"})
        (content,) = json.loads(again[2])["result"]["contents"]
        assert content["text"].startswith("---\nname: pdf-processing")


def test_a_session_driven_by_hand_reads_a_re_exported_skill_file_in_its_answer() -> None:
    # A driver of one's own carries out Send, StartCall and CancelCall only: the session
    # answers it in the request's own actions, as before (only the package's call bridge
    # takes requests answered off its lock).
    from toolnexus.mcp import Send, ServerSession

    with pdf_source() as source:
        session = ServerSession(source.toolkit)
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        message = {"uri": PDF_MANIFEST, "_meta": meta}
        request = {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": message}
        (answer,) = session.receive(request)
        assert isinstance(answer, Send)
        (content,) = answer.message["result"]["contents"]
        assert content["text"].startswith("---\nname: pdf-processing")
