"""Parts reach the official MCP SDK client (the ``interop`` extra) as the right blocks.

The server is ``toolnexus serve tests/parts_tools.py:toolkit``; its four tools mirror the
conformance scenarios tools-call-image, -audio, -embedded-resource and -mixed-content.
Each era the SDK speaks is tried. What the SDK hands back is also read back with
:func:`toolnexus.mcp.result_from_mcp`, so both directions meet the SDK's own types.
Skipped when ``mcp`` is not installed, unless TOOLNEXUS_REQUIRE_INTEROP=1 (CI sets it).
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from extras import require
from parts_tools import PNG, REPORT, WAV
from toolnexus import Part
from toolnexus.mcp import result_from_mcp

pytestmark = pytest.mark.interop

require("TOOLNEXUS_REQUIRE_INTEROP", "interop", "anyio", "mcp")

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters

from timing import TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
MODES = ["legacy", "2026-07-28"]


def call(name: str, mode: str) -> Any:
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", "tests/parts_tools.py:toolkit"],
        cwd=str(ROOT),
        env={"PYTHONPATH": path},
    )

    async def main() -> Any:
        with anyio.fail_after(4 * TIMEOUT):
            async with Client(parameters, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                return await client.call_tool(name, {})

    return anyio.run(main)


def decoded(data: str) -> bytes:
    return base64.b64decode(data, validate=True)


@pytest.mark.parametrize("mode", MODES)
def test_an_image_arrives_as_an_image_block(mode: str) -> None:
    result = call("image_content", mode)
    assert result.is_error is False
    [block] = result.content
    assert isinstance(block, types.ImageContent)
    assert block.mime_type == "image/png" and decoded(block.data) == PNG
    back = result_from_mcp(result)
    assert back.output == "" and back.parts == (Part.image(PNG, "image/png"),)


@pytest.mark.parametrize("mode", MODES)
def test_an_audio_clip_arrives_as_an_audio_block_after_the_text(mode: str) -> None:
    result = call("audio_content", mode)
    text, clip = result.content
    assert isinstance(text, types.TextContent) and text.text == "a 10 ms clip"
    assert isinstance(clip, types.AudioContent)
    assert clip.mime_type == "audio/wav" and decoded(clip.data) == WAV
    assert result_from_mcp(result).parts == (Part.audio(WAV, "audio/wav"),)


@pytest.mark.parametrize("mode", MODES)
def test_a_file_arrives_as_an_embedded_resource_with_blob_and_mime_type(mode: str) -> None:
    result = call("embedded_resource", mode)
    [block] = result.content
    assert isinstance(block, types.EmbeddedResource)
    assert isinstance(block.resource, types.BlobResourceContents)
    assert block.resource.mime_type == "application/json"
    assert decoded(block.resource.blob) == REPORT
    assert str(block.resource.uri).endswith("report.json")
    [part] = result_from_mcp(result).parts
    assert (part.type, part.name, part.to_bytes()) == ("file", "report.json", REPORT)


@pytest.mark.parametrize("mode", MODES)
def test_mixed_content_arrives_in_order_text_first(mode: str) -> None:
    result = call("mixed_content", mode)
    kinds = [type(block) for block in result.content]
    assert kinds == [
        types.TextContent,
        types.ImageContent,
        types.EmbeddedResource,
        types.ResourceLink,
        types.TextContent,
    ]
    link = result.content[3]
    assert str(link.uri) == "https://example.test/charts/q3.png"
    assert link.mime_type == "image/png" and link.name == "q3.png"
    back = result_from_mcp(result)
    assert back.output == "Multiple content types test:"
    assert [p.type for p in back.parts] == ["image", "file", "image", "text"]
    assert back.parts[2].url == "https://example.test/charts/q3.png"
