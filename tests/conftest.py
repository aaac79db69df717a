"""Set-up shared by the whole session: compiled modules are cached, as Python does by default.

Where ``PYTHONDONTWRITEBYTECODE`` is set (some development environments set it), nothing
caches compiled modules, and the suite paid for it twice on every run: pytest rewrote and
compiled every test module again (about 2 s of CPU per process, per xdist worker too), and
each of the ~270 child interpreters the tests start (``python -m toolnexus ...``, a served
tool module) compiled the whole package again (about 70 ms each, some 20 s per run). For
the session, this process writes its caches as a default Python would, and the package and
the tests' helper modules are compiled once, up front, for the children (they keep the
variable, and read what is cached).
"""

from __future__ import annotations

import compileall
import contextlib
import sys
from pathlib import Path

import pytest

import toolnexus

_DONT_WRITE_BYTECODE = sys.dont_write_bytecode


def pytest_configure(config: pytest.Config) -> None:
    if not _DONT_WRITE_BYTECODE:
        return  # imports write the caches themselves
    sys.dont_write_bytecode = False
    for folder in (Path(toolnexus.__file__).parent, Path(__file__).parent):
        with contextlib.suppress(OSError):  # a read-only install: children compile, as before
            compileall.compile_dir(folder, quiet=2)


def pytest_unconfigure(config: pytest.Config) -> None:
    sys.dont_write_bytecode = _DONT_WRITE_BYTECODE
