"""The command line: ``python -m toolnexus …`` / ``toolnexus …``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = argparse.ArgumentParser(prog="toolnexus", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "demo", help="run the bundled example scenarios",
        description="Run the bundled example tools through their scenarios.",
        epilog="example: toolnexus demo",
    )
    options = parser.parse_args(argv)
    if options.command == "demo":
        from . import demo

        return demo.run()
    parser.error(f"unknown command {options.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
