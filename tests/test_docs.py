"""Every page in docs/ (and the README) holds examples that run.

A page's ```python blocks run in order, in one namespace per page, as a script would;
its ```pycon blocks are doctests in that same namespace. A block fenced ```python no-run
is shown, not run (for snippets that need a terminal or a network). A block fenced
```python requires=mod_a,mod_b runs only where those modules import (the bridges' frameworks,
or the OpenTelemetry SDK, from a test-only extra); with TOOLNEXUS_REQUIRE_BRIDGES=1, as CI
sets where it installs them, a missing one is a failure.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def blocks(page: Path) -> list[tuple[str, str, int]]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        lang, info, body = match.group(1), match.group(2), match.group(3)
        if "no-run" in info:
            continue
        line = text.count("\n", 0, match.start()) + 2
        found.append((lang, body, line))
    return found


# Pages whose examples set process-wide state (an OpenTelemetry provider, which turns
# tracing on for every host after it): each runs in a fresh interpreter of its own.
ISOLATED = {"tracing.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_examples_run(page: Path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if page.name in ISOLATED:
        run_isolated(page, tmp_path)
        return
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    ran = 0
    missing: list[str] = []
    for lang, body, line in blocks(page):
        unmet = unmet_requirements(body_info(page, line))
        if unmet:
            missing += unmet
            continue
        if lang == "python":
            code = compile(body, f"{page.name}:{line}", "exec", dont_inherit=True)
            exec(code, namespace)  # running the page's own example is the test
            ran += 1
        elif lang == "pycon":
            test = parser.get_doctest(body, namespace, page.name, str(page), line)
            result = runner.run(test, clear_globs=False)
            namespace.update(test.globs)  # DocTest runs on a copy: carry its names forward
            assert result.failed == 0, f"{page.name}:{line}: doctest failed (see output above)"
            ran += 1
    # CI installs the frameworks and the OpenTelemetry SDK where it sets this flag.
    if missing and os.environ.get("TOOLNEXUS_REQUIRE_BRIDGES") == "1":
        pytest.fail(f"{page.name}: examples need {sorted(set(missing))}, which do not import")
    if ran == 0 and missing:
        pytest.skip(f"{page.name}: its examples need {sorted(set(missing))} (a test-only extra)")
    if page.name != "architecture.md":
        assert ran > 0, f"{page.name} has no runnable example"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_block_that_imports_from_toolnexus_imports_every_name_of_it_it_uses(page: Path):
    """The blocks of a page run in one namespace, so a block that forgot an import still
    ran on the name an earlier block imported: a reader who copies it alone gets a
    NameError. A block with its own ``from toolnexus… import`` line is one to copy; it
    must import each of the package's names it uses (a block without such a line builds
    on the ones before it, and may)."""
    import ast

    import toolnexus

    public = set(toolnexus.__all__)
    forgotten = []
    for lang, body, line in blocks(page):
        if lang != "python":
            continue
        tree = ast.parse(body)
        imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        if not any((node.module or "").split(".")[0] == "toolnexus" for node in imports):
            continue
        imported = {alias.asname or alias.name for node in imports for alias in node.names}
        defined = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        names = [node for node in ast.walk(tree) if isinstance(node, ast.Name)]
        defined |= {node.id for node in names if not isinstance(node.ctx, ast.Load)}
        used = {node.id for node in names if isinstance(node.ctx, ast.Load)}
        missing = sorted((used & public) - imported - defined)
        if missing:
            forgotten.append(f"{page.name}:{line} uses {', '.join(missing)} without importing")
    assert not forgotten, "; ".join(forgotten)


def body_info(page: Path, line: int) -> str:
    """The info string after the language on the fence that opens the block at ``line``."""
    fence = page.read_text(encoding="utf-8").splitlines()[line - 2]
    return fence[3:].partition(" ")[2]


def unmet_requirements(info: str) -> list[str]:
    for word in info.split():
        if word.startswith("requires="):
            names = [n for n in word[len("requires=") :].split(",") if n]
            return [n for n in names if not _importable(n)]
    return []


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def run_isolated(page: Path, tmp_path: Path) -> None:
    """Run the page's python blocks as one script in a fresh interpreter."""
    import subprocess
    import sys

    parts = []
    missing: list[str] = []
    for lang, body, line in blocks(page):
        unmet = unmet_requirements(body_info(page, line))
        missing += unmet
        if lang == "python" and not unmet:
            parts.append(f"# --- {page.name}:{line}\n{body}")
    if missing and os.environ.get("TOOLNEXUS_REQUIRE_BRIDGES") == "1":
        pytest.fail(f"{page.name}: examples need {sorted(set(missing))}, which do not import")
    if not parts:
        pytest.skip(f"{page.name}: its examples need {sorted(set(missing))} (a test-only extra)")
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(parts)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{page.name}: its examples failed:\n{done.stderr}"
