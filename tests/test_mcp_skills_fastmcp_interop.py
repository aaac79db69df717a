"""Skills interop with FastMCP (``fastmcp`` from the index, the test-only ``fastmcp``
extra): its skills client lists and gets our skills, and our client consumes its skills
server. FastMCP speaks the extension on the modern era only (its own rule), so these
run on 2026-07-28. Skipped without ``fastmcp``, unless TOOLNEXUS_REQUIRE_FASTMCP=1 (CI
sets it where it installs the extra)."""

from __future__ import annotations

import hashlib
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require
from toolnexus import Toolkit
from toolnexus.mcp import HttpServer, McpClient

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_FASTMCP", "fastmcp", "fastmcp", "anyio")

import anyio
from fastmcp import Client, FastMCP
from fastmcp.skills import SkillsClientExtension
from fastmcp.skills.provider import SkillsDirectoryProvider

from timing import TIMEOUT, wait_until

FIXTURES = Path(__file__).parent / "skill_fixtures"


@pytest.fixture(scope="module")
def our_server() -> Iterator[str]:
    toolkit = Toolkit()
    toolkit.add_skills(FIXTURES / "pdf-processing")
    toolkit.add_skills(FIXTURES / "release-notes")
    with HttpServer(toolkit, port=0) as server:
        server.start()
        yield server.url


def test_fastmcps_skills_client_lists_and_gets_our_skills(our_server: str) -> None:
    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            client = Client(our_server, extensions=[SkillsClientExtension()])
            async with client:
                listed = await client.list_skills()
                got = await client.get_skill_mcp("skill://release-notes/SKILL.md")
                text = await client.read_resource("skill://pdf-processing/references/FORMS.md")
                return listed, got, text

    listed, got, text = anyio.run(main)
    assert [str(skill.uri) for skill in listed] == [
        "skill://pdf-processing/SKILL.md",
        "skill://release-notes/SKILL.md",
    ]
    pdf = listed[0]
    forms = FIXTURES / "pdf-processing" / "references" / "FORMS.md"
    files = {str(r.uri): (r.digest, r.size) for r in pdf.resources}
    assert files["skill://pdf-processing/references/FORMS.md"] == (
        "sha256:" + hashlib.sha256(forms.read_bytes()).hexdigest(),
        forms.stat().st_size,
    )
    assert got.skill.frontmatter.name == "release-notes"
    assert text[0].text == forms.read_text(encoding="utf-8")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def fastmcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("fastmcp-skills")
    shutil.copytree(FIXTURES / "pdf-processing", root / "pdf-processing")
    server = FastMCP("their-skills")
    server.add_provider(SkillsDirectoryProvider(roots=root))
    port = free_port()
    thread = threading.Thread(
        target=server.run,
        kwargs={"transport": "http", "host": "127.0.0.1", "port": port, "show_banner": False},
        daemon=True,  # uvicorn's own thread: ends with the test process
    )
    thread.start()

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
        except OSError:
            return False
        return True

    # uvicorn announces nothing this process can wait on: poll the port
    assert wait_until(listening), f"FastMCP's server never listened on port {port}"
    yield f"http://127.0.0.1:{port}/mcp"


def test_our_client_consumes_fastmcps_skills_server(fastmcp_server: str) -> None:
    with McpClient(url=fastmcp_server, name="fast") as client:
        assert client.offers_skills and client.era == "modern"
        skills = client.skills()
        assert [s.name for s in skills] == ["fast_pdf-processing"]
        toolkit = Toolkit()
        toolkit.register(*skills)
        loaded = toolkit.execute("skill", {"name": "fast_pdf-processing"})
        assert not loaded.is_error, loaded.output
        assert "Read `references/FORMS.md` before filling a form" in loaded.output
        forms = skills[0].read("references/FORMS.md")
    assert forms == (FIXTURES / "pdf-processing" / "references" / "FORMS.md").read_bytes()
