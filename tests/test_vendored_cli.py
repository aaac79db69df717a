"""A vendored copy's command line (`python -m _vendor.toolnexus`) names the command and the
demo REF it actually runs under, in its help, its hints and its demo."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolnexus
from cli_helpers import child_env


@pytest.fixture(scope="module")
def vendored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("app")
    package = Path(toolnexus.__file__).resolve().parent
    (folder / "_vendor").mkdir()
    (folder / "_vendor" / "__init__.py").write_text("")
    shutil.copytree(
        package, folder / "_vendor" / "toolnexus", ignore=shutil.ignore_patterns("__pycache__")
    )
    return folder


def vendored_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "_vendor.toolnexus", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        env=child_env(),
        timeout=60,
    )


def test_help_names_the_vendored_module_path(vendored: Path) -> None:
    out = vendored_cli(vendored, "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: python -m _vendor.toolnexus ")
    assert "python -m _vendor.toolnexus list _vendor.toolnexus.demo:toolkit" in out.stdout
    assert "  toolnexus list" not in out.stdout
    assert " toolnexus.demo:toolkit" not in out.stdout


def test_every_suggested_command_in_help_runs(vendored: Path) -> None:
    listed = vendored_cli(vendored, "list", "_vendor.toolnexus.demo:toolkit")
    assert listed.returncode == 0, listed.stderr
    assert "crunch" in listed.stdout
    call_help = vendored_cli(vendored, "call", "--help")
    assert "usage: python -m _vendor.toolnexus call REF" in call_help.stdout
    assert "python -m _vendor.toolnexus call _vendor.toolnexus.demo:toolkit crunch steps=3" in (
        call_help.stdout
    )


def test_error_hints_name_the_vendored_command(vendored: Path) -> None:
    out = vendored_cli(vendored, "call", "_vendor.toolnexus.demo:toolkit", "crunch", "steps=three")
    assert out.returncode == 2
    assert out.stderr.startswith("python -m _vendor.toolnexus call: error: ")
    assert "(see: python -m _vendor.toolnexus schema _vendor.toolnexus.demo:toolkit crunch)" in (
        out.stderr
    )


def test_the_demo_suggests_commands_that_work_here(vendored: Path) -> None:
    out = vendored_cli(vendored, "demo")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "python -m _vendor.toolnexus list _vendor.toolnexus.demo:toolkit" in out.stdout
    assert "   toolnexus " not in out.stdout


def test_the_installed_command_keeps_its_own_name() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "toolnexus", "--help"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert out.stdout.startswith("usage: toolnexus ")
    assert "  toolnexus list toolnexus.demo:toolkit" in out.stdout
