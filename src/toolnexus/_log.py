"""The package's loggers, and the one rule for them: a library never prints on its own.

Importing this module attaches a :class:`logging.NullHandler` to the ``toolnexus`` logger, so
an application that configured no logging sees nothing from toolnexus (Python's last-resort
handler, which writes to stderr, only runs for a logger tree with no handler at all). An
application that configures logging gets every record as usual, and chooses per logger:

- ``toolnexus.tools`` — a tool raised (``ERROR``, with the traceback as ``exc_info``) or
  returned something that is not a result (``WARNING``);
- ``toolnexus`` — everything else the package reports (stuck workers, protocol trouble).
"""

from __future__ import annotations

import logging

logging.getLogger("toolnexus").addHandler(logging.NullHandler())


def get_logger(child: str | None = None) -> logging.Logger:
    """The ``toolnexus`` logger, or its ``toolnexus.<child>`` child."""
    return logging.getLogger("toolnexus" if child is None else f"toolnexus.{child}")
