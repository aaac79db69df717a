"""Running the command line as a user would: `python -m toolnexus …` in a child process,
with the same toolnexus this test process imports."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import toolnexus

ROOT = Path(__file__).resolve().parent.parent


# The children's config and cache folders: `call --no-input` makes a per-user key in the
# one on first use, `resume` keeps used answers in the other; neither may land in the real
# ~/.config or ~/.cache of whoever runs the tests.
_PRIVATE_HOMES = {
    name: tempfile.mkdtemp(prefix=f"toolnexus-tests-{name.lower()}-")
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")
}
_OUTER = {name: os.environ.get(name) for name in _PRIVATE_HOMES}


def child_env() -> dict[str, str]:
    """This process's environment, with the imported toolnexus first on PYTHONPATH and
    private ``XDG_CONFIG_HOME`` and ``XDG_CACHE_HOME`` folders (unless the test set its own,
    with ``monkeypatch.setenv`` or ``run(env=...)``)."""
    env = dict(os.environ)
    package_root = str(Path(toolnexus.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    for name, folder in _PRIVATE_HOMES.items():
        if os.environ.get(name) == _OUTER[name]:  # not the test's own
            env[name] = folder
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
