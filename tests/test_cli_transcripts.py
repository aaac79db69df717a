"""The shell sessions in docs/cli.md are what the command line really prints.

Every ```text block of that page whose commands can run unattended is replayed in a scratch
folder holding a copy of `examples/`: each `$ command` runs through bash with a `toolnexus`
on PATH, and its output (stdout and stderr, as a terminal shows them) must match the lines
under it. What changes from run to run is masked on both sides: numbers (timings, step
counts), request ids, temporary paths and runs of spaces. A line that ends in `…` or `...`
in the page matches any line that starts the same way. Blocks that show a person typing at
a prompt or pressing Ctrl-C are left out: they cannot be replayed without a terminal.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import child_env

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"


def blocks() -> list[tuple[int, list[str]]]:
    found: list[tuple[int, list[str]]] = []
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start: int | None = None
    for number, line in enumerate(lines, 1):
        if line.strip() == "```text" and start is None:
            start = number
        elif line.strip() == "```" and start is not None:
            body = lines[start : number - 1]
            if body and body[0].startswith("$ "):
                found.append((start, body))
            start = None
    return found


def is_replayable(body: list[str]) -> bool:
    text = "\n".join(body)
    if "cancelling…" in text:  # someone pressed Ctrl-C
        return False
    # A prompt answered by a person: the typed answer is on the prompt's line.
    commands = [line for line in body if line.startswith("$ ")]
    fed = any("|" in c or "<" in c for c in commands)
    return fed or not re.search(r"^\? ", text, re.MULTILINE)


def mask(line: str) -> str:
    line = re.sub(r"pnd-[0-9a-f]+", "pnd-ID", line)
    line = re.sub(r"/tmp/\S+?(?=[ )]|$)", "TMP", line)
    line = re.sub(r"\d+(?:\.\d+)?", "N", line)
    return re.sub(r"\s+", " ", line).strip()


def matches(expected: list[str], actual: list[str]) -> bool:
    if len(expected) != len(actual):
        return False
    for want, got in zip(expected, actual, strict=True):
        want, got = mask(want), mask(got)
        if want.endswith(("…", "...")):
            if not got.startswith(want.rstrip(".…").rstrip()):
                return False
        elif want != got:
            return False
    return True


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("clidoc")
    shutil.copytree(ROOT / "examples", folder / "examples")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "toolnexus"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m toolnexus "$@"\n')
    shim.chmod(0o755)
    env = child_env()
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    env["COLUMNS"] = "80"
    return folder, env


REPLAYABLE = [(start, body) for start, body in blocks() if is_replayable(body)]


def test_the_page_has_replayable_sessions() -> None:
    # The demo, listing, calls and --no-input/resume sessions at least.
    assert len(REPLAYABLE) >= 5


@pytest.mark.parametrize(("start", "body"), REPLAYABLE, ids=[f"line{s}" for s, _ in REPLAYABLE])
def test_a_shell_session_in_the_cli_page_prints_what_it_shows(
    start: int, body: list[str], shell: tuple[Path, dict[str, str]]
) -> None:
    folder, env = shell
    last_code = 0
    index = 0
    while index < len(body):
        command = body[index][2:]
        index += 1
        expected: list[str] = []
        while index < len(body) and not body[index].startswith("$ "):
            expected.append(body[index])
            index += 1
        if command == "echo $?":
            actual = [str(last_code)]
        else:
            done = subprocess.run(
                ["bash", "-c", f"{{ {command} ; }} 2>&1"],
                capture_output=True,
                text=True,
                cwd=folder,
                env=env,
                timeout=120,
            )
            last_code = done.returncode
            actual = done.stdout.splitlines()
        if expected and expected[-1] == "...":
            # `--help` shown in part: the lines given must open the output.
            expected, actual = expected[:-1], actual[: len(expected) - 1]
        assert matches(expected, actual), (
            f"docs/cli.md line {start}: `{command}` printed:\n"
            + "\n".join(actual)
            + "\n\nthe page shows:\n"
            + "\n".join(expected)
        )
