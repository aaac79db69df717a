"""A toolkit for the turn-style tests: one tool per kind of result a provider must carry."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from parts_tools import PNG, WAV
from toolnexus import Part, Toolkit, ToolResult, tool

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Level(Enum):
    LOW = 1
    HIGH = 2


@tool
def paint(
    color: Color,
    level: Level,
    finish: Literal["matte", "gloss"] = "matte",
    coats: int = 1,
    ratio: float = 0.5,
    tags: list[str] | None = None,
    dry: bool = True,
) -> str:
    """Paint the wall (a tool with every common parameter type, for the adapters)."""
    return f"{coats} coat(s) of {color.value}"


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("sensor offline")


@tool
def media() -> ToolResult:
    """Every kind of part: image bytes and URL, a PDF, a text file, a CSV, audio, text."""
    return ToolResult.ok(
        "the media",
        parts=[
            Part.image(PNG, "image/png", name="pixel.png"),
            Part.image("https://example.test/q3.png"),
            Part.file(PDF, "application/pdf", name="report.pdf"),
            Part.file("https://example.test/r.pdf"),
            Part.file(b"plain words", "text/plain", name="notes.txt"),
            Part.file(b"a,b\n1,2\n", "text/csv"),
            Part.audio(WAV, "audio/wav"),
            Part.audio("https://example.test/a.mp3"),
            Part.from_text("a caption"),
        ],
    )


@tool
def snapshot() -> ToolResult:
    """Only an image, no text."""
    return ToolResult.ok("", parts=[Part.image(PNG, "image/png")])


toolkit = Toolkit([weather, paint, broken, media, snapshot])
