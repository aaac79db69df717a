"""Two copies of the package in one process (an installed one and a vendored one): a tool or
toolkit made by one and handed to the other is refused with a message that names both."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolnexus
from cli_helpers import child_env
from toolnexus import Toolkit, tool


@pytest.fixture
def vendored(tmp_path: Path) -> Path:
    """A folder holding `_vendor/toolnexus`, a copy of this package, as an application
    that vendors it would have."""
    package = Path(toolnexus.__file__).resolve().parent
    (tmp_path / "_vendor").mkdir()
    (tmp_path / "_vendor" / "__init__.py").write_text("")
    shutil.copytree(
        package, tmp_path / "_vendor" / "toolnexus", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def run_python(folder: Path, source: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        cwd=folder,
        env=child_env(),
        timeout=60,
    )


def test_a_tool_from_another_copy_is_refused_naming_both_copies(vendored: Path) -> None:
    out = run_python(
        vendored,
        """
        import _vendor.toolnexus as theirs
        from toolnexus import Toolkit

        @theirs.tool
        def summarize(text: str) -> str:
            '''Summarize a text.'''
            return text[:10]

        try:
            Toolkit([summarize])
        except TypeError as exc:
            print(exc)
        else:
            print("accepted:", [t.name for t in Toolkit([summarize]).tools()])
    """,
    )
    assert out.returncode == 0, out.stderr
    message = out.stdout.strip()
    assert message.startswith(
        "this Tool comes from another copy of toolnexus: '_vendor.toolnexus' at "
    ), message
    assert str(vendored / "_vendor" / "toolnexus") in message
    assert "while this code is 'toolnexus' at" in message
    assert message.endswith("two copies are loaded: import tool and Toolkit from the same one")


def test_a_toolkit_from_another_copy_is_refused_by_tool(vendored: Path) -> None:
    out = run_python(
        vendored,
        """
        import _vendor.toolnexus as theirs
        import toolnexus

        kit = theirs.Toolkit([])
        try:
            toolnexus.tool(kit)
        except TypeError as exc:
            print(exc)
    """,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("this Toolkit comes from another copy of toolnexus"), out.stdout


def test_a_view_from_another_copy_is_refused_by_host(vendored: Path) -> None:
    out = run_python(
        vendored,
        """
        import _vendor.toolnexus as theirs
        import toolnexus

        view = theirs.Toolkit([]).view()
        try:
            toolnexus.Host(view)
        except TypeError as exc:
            print(exc)
    """,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("this ToolView comes from another copy of toolnexus"), out.stdout


def test_the_cli_of_one_copy_refuses_a_toolkit_of_the_other(vendored: Path) -> None:
    (vendored / "mytools.py").write_text(
        textwrap.dedent("""
        import _vendor.toolnexus as theirs

        @theirs.tool
        def add(a: int, b: int) -> int:
            '''Add two integers.'''
            return a + b

        single = add
    """)
    )
    out = subprocess.run(
        [sys.executable, "-m", "toolnexus", "list", "mytools:single"],
        capture_output=True,
        text=True,
        cwd=vendored,
        env=child_env(),
        timeout=60,
    )
    assert out.returncode == 2
    assert "this Tool comes from another copy of toolnexus" in out.stderr, out.stderr
    assert "is a Toolkit, not a tool" not in out.stderr


def test_tools_of_one_copy_still_work_with_that_copy() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    assert Toolkit([add]).execute("add", {"a": 2, "b": 3}).output == "5"
