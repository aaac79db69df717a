"""The official MCP Python SDK client reads our skills as resources (it knows nothing of
the skills extension: to it ``skill://`` files are ordinary resources), in both eras,
over stdio (``toolnexus serve`` of a skills folder) and Streamable HTTP. Skipped when
``mcp`` is not installed, unless TOOLNEXUS_REQUIRE_INTEROP=1 (CI sets it)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require
from toolnexus import Toolkit
from toolnexus.mcp import HttpServer

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

import anyio
from mcp import Client, StdioServerParameters

from timing import TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / "tests" / "skill_fixtures" / "pdf-processing"
CASES = [("stdio", "legacy"), ("stdio", "2026-07-28"), ("http", "legacy"), ("http", "2026-07-28")]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    toolkit = Toolkit()
    toolkit.add_skills(SKILL)
    with HttpServer(toolkit, port=0) as server:
        server.start()
        yield server.url


def stdio() -> StdioServerParameters:
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", str(SKILL)],
        cwd=str(ROOT),
        env={"PYTHONPATH": path},
    )


@pytest.mark.parametrize(("transport", "mode"), CASES)
def test_the_sdk_lists_and_reads_skill_files_as_resources(
    url: str, transport: str, mode: str
) -> None:
    async def body(client: Client) -> Any:
        listed = await client.list_resources()
        manifest = await client.read_resource("skill://pdf-processing/SKILL.md")
        forms = await client.read_resource("skill://pdf-processing/references/FORMS.md")
        return listed, manifest, forms

    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            server: Any = url if transport == "http" else stdio()
            async with Client(server, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                return await body(client)

    listed, manifest, forms = anyio.run(main)
    [entry] = listed.resources
    assert str(entry.uri) == "skill://pdf-processing/SKILL.md"
    assert entry.name == "pdf-processing" and entry.mime_type == "text/markdown"
    assert entry.description == "Extract, fill, and assemble PDF documents"
    (content,) = manifest.contents
    assert content.mime_type == "text/markdown"
    assert content.text == (SKILL / "SKILL.md").read_text(encoding="utf-8")
    assert forms.contents[0].text == (SKILL / "references" / "FORMS.md").read_text(encoding="utf-8")
