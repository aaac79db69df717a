"""Tools that return parts, for the MCP tests: served by ``toolnexus serve
tests/parts_tools.py:toolkit`` in the interop suite and run in-process by the session tests.

The four mirror the MCP conformance scenarios tools-call-image, -audio, -embedded-resource
and -mixed-content. The media are real (a 1x1 PNG, a 10 ms WAV), built here with the stdlib.
"""

from __future__ import annotations

import io
import struct
import wave
import zlib

from toolnexus import Part, Toolkit, ToolResult, tool


def _png_1x1() -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte + one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _wav_10ms() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG = _png_1x1()
WAV = _wav_10ms()
REPORT = b'{"embedded":true,"message":"Embedded resource content"}'


@tool
def image_content() -> ToolResult:
    """Return a 1x1 PNG and nothing else."""
    return ToolResult.ok("", parts=[Part.image(PNG, "image/png")])


@tool
def audio_content() -> ToolResult:
    """Return a short WAV clip."""
    return ToolResult.ok("a 10 ms clip", parts=[Part.audio(WAV, "audio/wav")])


@tool
def embedded_resource() -> ToolResult:
    """Return a JSON file as an embedded resource."""
    return ToolResult.ok("", parts=[Part.file(REPORT, "application/json", name="report.json")])


@tool
def mixed_content() -> ToolResult:
    """Return text, an image, a file, a linked image and a caption."""
    return ToolResult.ok(
        "Multiple content types test:",
        parts=[
            Part.image(PNG, "image/png", name="pixel.png"),
            Part.file(REPORT, "application/json", name="report.json"),
            Part.image("https://example.test/charts/q3.png"),
            Part.from_text("caption: one red pixel"),
        ],
    )


toolkit = Toolkit([image_content, audio_content, embedded_resource, mixed_content])
