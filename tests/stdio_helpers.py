"""The raw stdio MCP client the tests share: a server in a subprocess, spoken to in lines.

``StdioClient.serving("tests/stdio_tools.py:toolkit", "--timeout", "200")`` starts
``python -m toolnexus serve`` with that spec and those flags; ``StdioClient("script.py")``
runs any Python command. Both run from the repository root (or ``cwd``) with the imported
toolnexus first on ``PYTHONPATH``. A thread reads each line of the server's stdout into
``lines`` (``None`` once stdout closed), another keeps its stderr; every wait is bounded by
``TIMEOUT``, so a server that hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from cli_helpers import child_env
from timing import TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


class StdioClient:
    """A server in a subprocess, with a line reader on its stdout."""

    def __init__(self, *command: str, cwd: Path = ROOT) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *command],
            cwd=cwd,
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw: list[bytes] = []  # every line the server wrote, in order
        self.stderr = b""
        self._stdout_done = threading.Event()
        self._stderr_done = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    @classmethod
    def serving(cls, spec: str, *flags: str, cwd: Path = ROOT) -> StdioClient:
        """``python -m toolnexus serve spec *flags``."""
        return cls("-m", "toolnexus", "serve", spec, *flags, cwd=cwd)

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.raw.append(line)
            self.lines.put(line)
        self.lines.put(None)
        self._stdout_done.set()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()
        self._stderr_done.set()

    def send(self, message: Any) -> None:
        """Write ``message`` as one JSON line (bytes are written as they are)."""
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        """The next message the server wrote."""
        line = self.lines.get(timeout=TIMEOUT)
        assert line is not None, f"the server closed stdout; stderr: {self.stderr!r}"
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, rid: Any, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return the next message (its answer, unless the server
        writes something else first)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.receive()

    def call(self, rid: Any, name: str, arguments: Any, **params: Any) -> dict[str, Any]:
        """A modern ``tools/call`` (``MODERN`` in its ``_meta``) and the next message."""
        return self.request(
            rid, "tools/call", {"name": name, "arguments": arguments, "_meta": MODERN, **params}
        )

    def initialize(self, **capabilities: Any) -> dict[str, Any]:
        """The legacy handshake (2025-11-25): ``initialize``, then ``initialized``."""
        answer = self.request(
            0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities}
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def assert_alive(self, rid: Any = "alive") -> None:
        """The server still answers: a ping gets its answer."""
        assert self.request(rid, "ping") == {"jsonrpc": "2.0", "id": rid, "result": {}}

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def finish(self) -> int:
        """Close stdin and wait until the server exited and both its outputs closed; the
        exit code. The lines not received yet stay in ``lines`` (see ``remaining``)."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        code = self.process.wait(timeout=TIMEOUT)
        assert self._stdout_done.wait(TIMEOUT), "stdout stayed open after the server exited"
        assert self._stderr_done.wait(TIMEOUT), "stderr stayed open after the server exited"
        return code

    def remaining(self) -> list[dict[str, Any]]:
        """The messages not received yet, up to where stdout closed."""
        rest = []
        while (line := self.lines.get(timeout=TIMEOUT)) is not None:
            rest.append(json.loads(line))
        return rest

    def kill(self) -> None:
        """End the server if it still runs (a test's cleanup)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT)
