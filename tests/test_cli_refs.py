"""Finding tools by reference (REF): `module:attr`, `path/to/file.py:attr`, and the one-line
errors a newcomer gets when a REF is wrong — in-process through `load_toolkit` and as a
subprocess through `toolnexus list`."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

import toolnexus
from cli_helpers import run
from toolnexus._cli import RefError, load_toolkit

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _restore_import_state(monkeypatch):
    """Loading a file REF puts its folder on sys.path; keep that out of later tests."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


TOOLS_MODULE = """
    from toolnexus import Toolkit, tool

    @tool
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    @tool
    def shout(text: str) -> str:
        '''Upper-case a text.'''
        return text.upper()

    def helper(x):
        return x

    kit = Toolkit([add])
    number = 42
"""


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    return write(tmp_path, "mytools.py", TOOLS_MODULE)


def names(ref: str) -> list[str]:
    return [t.name for t in load_toolkit(ref)]


def test_a_file_path_alone_loads_every_tool_in_it_but_not_its_plain_functions(tools_file):
    assert names(str(tools_file)) == ["add", "shout"]


def test_a_file_path_with_attr_loads_a_tool_a_toolkit_or_a_module(tools_file):
    assert names(f"{tools_file}:shout") == ["shout"]
    assert names(f"{tools_file}:kit") == ["add"]


def test_a_plain_function_is_wrapped_as_a_tool(tools_file):
    toolkit = load_toolkit(f"{tools_file}:helper")
    assert [t.name for t in toolkit] == ["helper"]


def test_module_attr_refs_import_from_the_current_directory(tools_file, monkeypatch):
    monkeypatch.chdir(tools_file.parent)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    monkeypatch.delitem(sys.modules, "mytools", raising=False)
    assert names("mytools:add") == ["add"]
    assert names("mytools") == ["add", "shout"]


def test_a_package_attribute_path_and_a_dotted_attr_resolve():
    assert names("toolnexus.demo:toolkit") == ["crunch", "fetchish", "deploy", "nap", "stubborn"]


def test_a_missing_module_says_where_it_looked_and_how_to_fix_it():
    with pytest.raises(
        RefError,
        match=r"cannot import 'no_such_mod_xyz': no module named "
        r"'no_such_mod_xyz' .*run from the folder that holds it",
    ):
        load_toolkit("no_such_mod_xyz:tools")


def test_a_missing_dependency_of_the_module_is_named_with_the_install_fix(tmp_path):
    path = write(tmp_path, "needs.py", "import not_installed_pkg_xyz\n")
    with pytest.raises(
        RefError,
        match=r"it imports 'not_installed_pkg_xyz', which is not "
        r"installed; install the package that provides 'not_installed_pkg_xyz' "
        r"\(its name on the package index may differ\)",
    ):
        load_toolkit(f"{path}:x")


def test_a_missing_toolnexus_is_named_with_this_librarys_distribution_not_the_other_project(
    tmp_path,
):
    # The package index's `toolnexus` is a different project: the hint must never point there.
    # What `import toolnexus` raises in an environment where this library is not installed.
    path = write(
        tmp_path,
        "needs_us.py",
        "raise ModuleNotFoundError(\"No module named 'toolnexus'\", name='toolnexus')\n",
    )
    with pytest.raises(RefError) as caught:
        load_toolkit(f"{path}:x")
    error = str(caught.value)
    assert "it imports 'toolnexus', which is not installed" in error
    # Not on the package index yet: the hint says how to install from a checkout or git.
    assert "not yet on the package index" in error
    assert "from a checkout: pip install /" in error
    assert "pip install 'toolnexus-contract @ git+https://" in error
    assert "pip install toolnexus-contract " not in error
    assert "pip install toolnexus " not in error and not error.endswith("pip install toolnexus")


def test_a_missing_attribute_suggests_the_close_name_and_lists_the_tools(tools_file):
    with pytest.raises(
        RefError,
        match=r"has no attribute 'ad'; did you mean 'add'\? "
        r"\(its tools: add, shout\)",
    ):
        load_toolkit(f"{tools_file}:ad")


def test_a_missing_file_and_a_folder_are_told_apart(tmp_path):
    with pytest.raises(RefError, match=r"no such file: .*nothere\.py.*check the path"):
        load_toolkit(f"{tmp_path / 'nothere.py'}:x")
    with pytest.raises(RefError, match=r"is a folder; point REF at a \.py file"):
        load_toolkit(f"{tmp_path}/:x")


def test_a_value_that_is_not_a_tool_is_refused_with_what_to_point_at(tools_file):
    with pytest.raises(
        RefError,
        match=r"is a int, not a tool; point REF at a function, a Tool, "
        r"a Toolkit or a module",
    ):
        load_toolkit(f"{tools_file}:number")


def test_a_module_without_tools_suggests_decorating_or_naming_a_function(tmp_path):
    path = write(tmp_path, "plain.py", "def area(w: int, h: int) -> int:\n    return w * h\n")
    with pytest.raises(
        RefError,
        match=r"defines no tools; decorate its tool functions with "
        r"@toolnexus.tool or name one function \(e.g. .*plain.py:area\)",
    ):
        load_toolkit(str(path))


def test_an_exception_while_importing_names_the_type_the_place_and_debug(tmp_path):
    path = write(tmp_path, "broken.py", "x = 1\nraise RuntimeError('no config found')\n")
    with pytest.raises(
        RefError,
        match=r"importing .*broken.py' failed: RuntimeError: no config "
        r"found at .*broken.py:2; run with --debug for the traceback",
    ):
        load_toolkit(str(path))


def test_malformed_refs_are_refused_before_importing_anything():
    with pytest.raises(RefError, match="empty REF"):
        load_toolkit("")
    with pytest.raises(RefError, match="names no module"):
        load_toolkit(":tools")
    with pytest.raises(RefError, match="ends with ':'"):
        load_toolkit("toolnexus.demo:")
    with pytest.raises(RefError, match="is not a Python name"):
        load_toolkit("toolnexus.demo:not-a-name")


def test_a_file_named_like_a_loaded_module_does_not_replace_it(tmp_path):
    path = write(
        tmp_path,
        "json.py",
        "from toolnexus import tool\n\n@tool\ndef j() -> str:\n    '''J.'''\n    return 'j'\n",
    )
    assert names(str(path)) == ["j"]
    import json

    assert hasattr(json, "dumps")


def test_ref_errors_are_valueerrors_of_the_toolnexus_family():
    assert issubclass(RefError, toolnexus.ToolnexusError)
    assert issubclass(RefError, ValueError)


# ------------------------------------------------------------------ as the command line


def test_a_bad_ref_on_the_command_line_is_one_line_and_exit_code_2():
    out = run("list", "no_such_mod_xyz:tools")
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("toolnexus list: error: cannot import 'no_such_mod_xyz'")
    assert "Traceback" not in out.stderr


def test_an_import_error_shows_its_traceback_only_with_debug(tmp_path):
    write(tmp_path, "broken.py", "raise RuntimeError('no config found')\n")
    plain = run("list", "broken.py", cwd=tmp_path)
    assert plain.returncode == 2
    assert "Traceback" not in plain.stderr
    assert "run with --debug" in plain.stderr
    debug = run("list", "broken.py", "--debug", cwd=tmp_path)
    assert debug.returncode == 2
    assert "Traceback (most recent call last)" in debug.stderr
    assert "RuntimeError: no config found" in debug.stderr


def test_a_module_ref_from_the_current_directory_works_on_the_command_line(tools_file):
    out = run("list", "mytools", cwd=tools_file.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["add    Add two integers.", "shout  Upper-case a text."]
