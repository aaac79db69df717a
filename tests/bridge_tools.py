"""The tools every bridge test runs: a plain one, one that asks a human, one that ignores its
token (only the host's deadline stops the wait), each counting its invocations, and one whose
results carry parts (an image, a PDF, an audio clip, an image by URL)."""

from __future__ import annotations

import threading
from typing import Any

from toolnexus import Part, Request, ToolContext, Toolkit, ToolResult, tool

ENVIRONMENTS = {
    "type": "object",
    "properties": {"env": {"type": "string", "enum": ["staging", "production"]}},
    "required": ["env"],
}


PNG = b"\x89PNG\r\n\x1a\n" + b"chart" * 4
PDF = b"%PDF-1.4 a report"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "
EXTRA_PARTS = [
    Part.file(PDF, "application/pdf", name="report.pdf"),
    Part.audio(WAV, "audio/wav"),
    Part.image("https://example.test/chart.png"),
]


class Tools:
    def __init__(self) -> None:
        self.deployed: list[tuple[str, str]] = []
        self.asked = 0
        self.release = threading.Event()
        self.stubborn_returned = threading.Event()

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @tool
        def deploy(service: str, ctx: ToolContext) -> ToolResult:
            """Deploy a service, asking which environment first."""
            if ctx.answer is None:
                self.asked += 1
                return ToolResult.pending(
                    Request("input", f"Where should {service} go?", data={"schema": ENVIRONMENTS})
                )
            env = ctx.answer.value("env", str)
            self.deployed.append((service, env))
            return ToolResult.ok(f"deployed {service} to {env}")

        @tool
        def stubborn(seconds: float) -> str:
            """Wait, ignoring cancellation."""
            self.release.wait(seconds)
            self.stubborn_returned.set()
            return "finally done"

        @tool
        def chart(points: int, fail: bool = False) -> ToolResult:
            """Draw a chart: its parts are an image, a PDF, an audio clip and a linked image."""
            parts = [Part.image(PNG, "image/png"), *EXTRA_PARTS]
            if fail:
                return ToolResult.error(f"could not draw {points} points", parts=parts[:1])
            return ToolResult.ok(f"a chart of {points} points", parts=parts)

        self.toolkit = Toolkit([add, deploy, stubborn, chart])

    def done(self) -> None:
        self.release.set()


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id}
