"""The package surface: what `import toolnexus` exports and what it costs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolnexus


def test_all_is_sorted_and_every_name_resolves():
    assert list(toolnexus.__all__) == sorted(toolnexus.__all__)
    for name in toolnexus.__all__:
        assert getattr(toolnexus, name) is not None, name


def test_every_public_name_has_a_docstring_with_an_example():
    for name in toolnexus.__all__:
        value = getattr(toolnexus, name)
        doc = getattr(value, "__doc__", None) or ""
        if name == "ProgressReporter":
            continue  # a type alias; documented in context.py and docs/
        assert "xample" in doc or ">>>" in doc, f"{name} has no example in its docstring"


def test_import_starts_no_thread():
    code = "import threading, toolnexus; print(threading.active_count())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_importing_host_loads_no_typing_asyncio_logging_or_parts():
    # Each would add a good share to what importing Host costs (benchmarks/host_overhead.py,
    # table 7): names only a type checker needs sit under TYPE_CHECKING, asyncio loads with
    # the first async call, logging with the first record, parts.py with the first result
    # that has parts. -S: no site hook may load any of them first.
    code = (
        "import sys, toolnexus; from toolnexus import Host; print(sorted(m for m in "
        "('asyncio', 'logging', 'toolnexus._parts', 'typing') if m in sys.modules))"
    )
    root = str(Path(toolnexus.__file__).parent.parent)
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert out.stdout.strip() == "[]"


def test_the_answer_stores_live_in_their_public_namespace():
    from toolnexus.stores import (
        AnswerStore,
        MemoryAnswerStore,
        PostgresAnswerStore,
        RedisAnswerStore,
        SqliteAnswerStore,
        open_store,
    )

    for name in (
        AnswerStore,
        MemoryAnswerStore,
        PostgresAnswerStore,
        RedisAnswerStore,
        SqliteAnswerStore,
        open_store,
    ):
        assert name.__module__ == "toolnexus.stores"
    assert isinstance(MemoryAnswerStore(), AnswerStore)
    assert not isinstance(object(), AnswerStore)


def test_importing_the_stores_imports_no_database_driver():
    # psycopg and redis load with the first store that needs them; naming the classes
    # (even for isinstance checks) costs nothing.
    code = (
        "import sys; import toolnexus.stores as s; s.PostgresAnswerStore; s.RedisAnswerStore; "
        "print(sorted(m for m in ('psycopg', 'psycopg_pool', 'redis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_package_ships_py_typed():
    from importlib.resources import files

    assert files("toolnexus").joinpath("py.typed").is_file()


def test_the_distribution_has_a_name_of_its_own_so_no_other_project_upgrades_it():
    # The index's `toolnexus` is another project: `pip install -U toolnexus` or
    # `pip list --outdated` must never take it for this library.
    from importlib.metadata import metadata, packages_distributions

    assert "toolnexus-contract" in packages_distributions()["toolnexus"]
    assert metadata("toolnexus-contract")["Name"] == "toolnexus-contract"


def test_no_install_hint_sends_users_to_the_index_while_the_package_is_not_published():
    # `pip install toolnexus-contract` fails until the distribution is on the index: the
    # README, the docs and every hint in the code say how to install from a checkout or git.
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    files = [root / "README.md", *(root / "docs").glob("*.md"), *(root / "src").rglob("*.py")]
    offenders = [
        f"{path.name}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "pip install toolnexus-contract" in line or "pip install 'toolnexus-contract[" in line
    ]
    assert offenders == []


def test_a_missing_framework_is_named_with_the_packages_pip_can_install():
    from toolnexus.bridges._common import require

    with pytest.raises(ImportError) as caught:
        require("toolnexus_no_such_framework.tools", "LangChain", "langchain")
    assert str(caught.value) == (
        "the LangChain bridge needs 'toolnexus_no_such_framework', which is not installed: "
        "pip install 'langchain-core>=1.0' 'langgraph>=1.0' (the 'langchain' extra)"
    )


def test_install_hints_have_running_examples():
    import toolnexus._extras
    from doctests import run_doctests

    failed, attempted = run_doctests(toolnexus._extras)
    assert (failed, attempted >= 2) == (0, True)


def test_no_module_imports_a_private_name_of_another_module():
    # Layers talk through public names: a helper another module needs gets a public name
    # (private *modules*, _wire.py and the like, are the package's internal seams and fine).
    # Only a private exception class may be shared: internal control flow keeps a private
    # name (test_errors.py), and a package's modules may raise it in one, catch it in another.
    import ast
    import importlib
    from pathlib import Path
    from types import ModuleType

    src = Path(toolnexus.__file__).parent
    offenders = []
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        package = parts[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level > 0 and node.module:
                private = [
                    alias.name
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
                if not private:
                    continue
                base = package[: len(package) - (node.level - 1)]
                module = importlib.import_module(".".join((*base, node.module)))
                offenders += [
                    f"{path.relative_to(src)}:{node.lineno} imports {node.module}.{name}"
                    for name in private
                    if not _is_exception_class(getattr(module, name, None))
                    and not isinstance(getattr(module, name, None), ModuleType)  # a module
                ]
    assert offenders == []


def test_the_readme_names_every_extra_with_what_it_is_for():
    # A new user reads the README, not pyproject.toml: each extra the package declares has
    # a row in its table of extras, and the table names no extra that does not exist.
    import re
    from importlib.metadata import metadata

    declared = set(metadata("toolnexus-contract").get_all("Provides-Extra") or ())
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (.+) \|$", readme, re.MULTILINE)
    assert {name for name, _ in rows} == declared
    assert all(len(about.strip()) > 10 for _, about in rows)


def _is_exception_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)
