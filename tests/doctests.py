"""Run the docstring examples of a package module, also those of the names it exports
under a public home (``__module__ = "toolnexus"``), which ``doctest.testmod`` would skip."""

from __future__ import annotations

import ast
import doctest
from pathlib import Path
from types import ModuleType


def run_doctests(module: ModuleType) -> tuple[int, int]:
    """``(failed, attempted)`` over every example in ``module``'s docstrings."""
    finder = doctest.DocTestFinder()
    globs = dict(module.__dict__)
    tests = {test.name: test for test in finder.find(module, globs=globs)}
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    defined = [
        node.name
        for node in tree.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for name in defined:
        value = module.__dict__.get(name)
        if getattr(value, "__module__", module.__name__) != module.__name__:
            for test in finder.find(value, f"{module.__name__}.{name}", module=False, globs=globs):
                tests.setdefault(test.name, test)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(optionflags=flags)
    for test in tests.values():
        runner.run(test)
    result = runner.summarize(verbose=False)
    return result.failed, result.attempted
