"""``toolnexus demo``: the bundled example toolkit through its scenarios."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import localize, write_out
from ._parser import Command

if TYPE_CHECKING:
    import argparse


def _cmd_demo(options: argparse.Namespace) -> int:
    from .. import _demo as demo

    return demo.run(lambda line: write_out(localize(line)))


DEMO = Command(
    "demo",
    help="run the bundled example tools through their scenarios",
    description="Run the bundled example toolkit (toolnexus.demo:toolkit) through a plain "
    "call, a cancelled call, a timeout and a question answered, printing each step.",
    epilog="example:\n  toolnexus demo",
    handler=_cmd_demo,
)
