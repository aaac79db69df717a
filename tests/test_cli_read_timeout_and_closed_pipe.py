"""``toolnexus read``/``get --timeout MS``: a read or a prompt that runs out of its
deadline exits 124, as ``call`` does, and says it timed out (never that its caller
cancelled it) — of an ``mcp.json``'s server and of a local resource alike. And a command
whose reader stops reading (``| head``) ends quietly: no traceback.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from timing import TIMEOUT

UPSTREAM = str(Path(__file__).with_name("fake_mcp_upstream.py"))
DEADLINE_MS = "300"  # a deadline that must pass: the server never answers


def toolnexus(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolnexus", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    state = tmp_path / "up.json"
    offer = {"resources": [{"uri": "hang://1", "name": "hangs"}], "prompts": [{"name": "hangp"}]}
    state.write_text(json.dumps(offer), encoding="utf-8")
    path = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [UPSTREAM, str(state)]}
    path.write_text(json.dumps({"mcpServers": {"slow": entry}}), encoding="utf-8")
    return path


def test_a_read_of_a_server_past_its_timeout_exits_124_saying_so(config: Path) -> None:
    done = toolnexus("read", str(config), "slow+hang://1", "--timeout", DEADLINE_MS)
    assert done.returncode == 124, (done.stdout, done.stderr)
    assert "timed out after 300 ms" in done.stdout
    assert "MCP server slow did not answer resources/read in time" in done.stdout
    assert "cancelled" not in done.stdout


def test_a_prompt_of_a_server_past_its_timeout_exits_124_saying_so(config: Path) -> None:
    done = toolnexus("get", str(config), "slow_hangp", "--timeout", DEADLINE_MS)
    assert done.returncode == 124, (done.stdout, done.stderr)
    assert "MCP server slow did not answer prompts/get in time" in done.stdout
    assert "cancelled" not in done.stdout


def test_a_local_read_past_its_timeout_exits_124(tmp_path: Path) -> None:
    module = tmp_path / "slowres.py"
    module.write_text(
        "import threading\nfrom toolnexus.mcp import resource\n\n\n"
        '@resource("slow://r")\ndef r() -> str:\n'
        "    threading.Event().wait(2)  # past the deadline\n    return 'late'\n",
        encoding="utf-8",
    )
    done = toolnexus("read", str(module), "slow://r", "--timeout", DEADLINE_MS)
    assert done.returncode == 124, (done.stdout, done.stderr)
    assert "timed out after 300 ms" in done.stdout


def test_output_into_a_reader_that_stops_reading_ends_without_a_traceback(
    tmp_path: Path,
) -> None:
    module = tmp_path / "wordy.py"
    # Many lines, each far over the pipe's buffer (each written on its own).
    module.write_text(
        "from toolnexus import Tool, Toolkit\n\n"
        "toolkit = Toolkit(\n"
        "    Tool(f'wordy{i}', 'word ' * 2000, {'type': 'object'}, lambda a, c=None: '')\n"
        "    for i in range(50)\n)\n",
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "toolnexus", "list", f"{module}:toolkit"]
    # A pipe of one page, so the command is surely still writing when the reader goes.
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    process = subprocess.Popen(command, stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    assert process.stderr is not None
    assert os.read(read_end, 5) == b"wordy"
    os.close(read_end)  # as `| head -c 5` does
    errors = process.stderr.read().decode()
    assert process.wait(TIMEOUT) == 141  # 128 + SIGPIPE, as a shell reports it
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
    assert errors == ""
