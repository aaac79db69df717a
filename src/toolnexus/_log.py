"""The package's loggers, and the one rule for them: a library never prints on its own.

The first logger handed out attaches a :class:`logging.NullHandler` to the ``toolnexus`` logger, so
an application that configured no logging sees nothing from toolnexus (Python's last-resort
handler, which writes to stderr, only runs for a logger tree with no handler at all). An
application that configures logging gets every record as usual, and chooses per logger:

- ``toolnexus.tools`` — a tool raised (``ERROR``, with the traceback as ``exc_info``) or
  returned something that is not a result (``WARNING``);
- ``toolnexus`` — everything else the package reports (stuck workers, protocol trouble).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    import logging
    from collections.abc import Callable
    from typing import Any

_handled = False  # the NullHandler is attached (with the first logger handed out)
_deferred: list[Callable[[], object]] = []  # set-ups to run with the first logger handed out


def get_logger(child: str | None = None) -> logging.Logger:
    """The ``toolnexus`` logger, or its ``toolnexus.<child>`` child."""
    import logging

    global _handled
    if not _handled:
        _handled = True
        logging.getLogger("toolnexus").addHandler(logging.NullHandler())
        while _deferred:
            _deferred.pop(0)()
    return logging.getLogger("toolnexus" if child is None else f"toolnexus.{child}")


def when_first_used(setup: Callable[[], object]) -> None:
    """Run ``setup`` (say, adding a handler) once the package first logs — at once when
    :mod:`logging` is loaded already — so a program that never logs never loads it."""
    import sys

    if _handled or "logging" in sys.modules:
        setup()
    else:
        _deferred.append(setup)


class LazyLogger:
    """Stands in for :func:`get_logger`'s logger in a module on the import path of
    ``Host``: :mod:`logging` (as costly to import as the rest of the host) loads with the
    first record, not with ``from toolnexus import Host``."""

    __slots__ = ("_child",)

    def __init__(self, child: str | None = None) -> None:
        self._child = child

    def __getattr__(self, name: str) -> Any:
        return getattr(get_logger(self._child), name)
