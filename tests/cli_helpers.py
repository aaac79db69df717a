"""Running the command line as a user would: `python -m toolnexus …` in a child process,
with the same toolnexus this test process imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import toolnexus

ROOT = Path(__file__).resolve().parent.parent


def child_env() -> dict[str, str]:
    """This process's environment, with the imported toolnexus first on PYTHONPATH."""
    env = dict(os.environ)
    package_root = str(Path(toolnexus.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


def run(
    *args: str, cwd: Path = ROOT, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m toolnexus ARGS`, its output captured as text; ``env`` adds variables."""
    return subprocess.run(
        [sys.executable, "-m", "toolnexus", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**child_env(), **(env or {})},
        timeout=60,
    )
