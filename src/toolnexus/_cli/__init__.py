"""The command line: ``python -m toolnexus …`` and the ``toolnexus`` console script.

Everything that touches a terminal lives in this package: finding tools by reference
(``REF``, :mod:`._refs`), running one call through the :class:`~toolnexus.Host` with Ctrl-C
and a spinner and answering a suspension at the prompt (:mod:`._terminal`), and the exit
codes scripts rely on (:mod:`._common`). Each command is a module (``_cmd_*.py``) that
declares its :class:`~._parser.Command`; :data:`COMMANDS` is the table the parser is built
from. Commands import the shared modules, never each other, and nothing imports back up.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ..errors import RefError
from ._cmd_call import CALL, RESUME
from ._cmd_demo import DEMO
from ._cmd_list import LIST, SCHEMA
from ._cmd_read import GET, READ
from ._cmd_serve import SERVE
from ._cmd_skills import SKILLS
from ._cmd_worker import WORKER
from ._common import (
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_PIPE_CLOSED,
    EXIT_TIMEOUT,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    CliError,
    StdoutClosed,
    localize,
)
from ._parser import build_parser
from ._refs import load_toolkit
from ._terminal import after_the_call

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_TIMEOUT",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "RefError",
    "load_toolkit",
    "main",
]

COMMANDS = (DEMO, LIST, READ, GET, SCHEMA, SKILLS, CALL, RESUME, SERVE, WORKER)
"""The commands, in the order ``toolnexus --help`` lists them."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Usage errors exit through ``argparse`` (``SystemExit(2)``) or return
    :data:`EXIT_USAGE` after one line on stderr. ``call`` and ``resume`` own Ctrl-C while
    they run (the first cancels the call, a second exits at once with 130); once the call is
    over Ctrl-C no longer raises, so the process ends with the call's code (or 130), never
    by the signal. Called with an ``argv``, the caller's own SIGINT handler is put back.

    Example::

        code = main(["list", "toolnexus.demo:toolkit"])
    """
    parser = build_parser(COMMANDS)
    options, extras = parser.parse_known_args(argv)
    command = next(each for each in COMMANDS if each.name == options.command)
    if extras:
        # Words after an option (`call REF --timeout 5 crunch n=3`) belong to NAME key=value.
        if command.runs_a_tool_call and not any(w.startswith("-") for w in extras):
            options.rest = [*options.rest, *extras]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
    debug = bool(getattr(options, "debug", False))
    _configure_logging("debug" if debug else getattr(options, "log_level", None))
    _reconfigure_streams()
    import signal
    import threading

    owns_sigint = command.runs_a_tool_call and (
        threading.current_thread() is threading.main_thread()
    )
    previous: Any = None
    try:
        if owns_sigint:
            # A parent that ignored SIGINT (a background job) would leave Ctrl-C dead here;
            # this command promises Ctrl-C cancels, so take it back.
            previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            code: int = options.handler(options)
        finally:
            if owns_sigint:
                after_the_call()  # before anything else: no Ctrl-C may escape main()
    except StdoutClosed:  # `| head` read what it wanted: nothing to say, nowhere to say it
        code = EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        # Ctrl-C outside a running call (while importing REF, say): nothing to cancel.
        sys.stderr.write("\ninterrupted\n")
        code = EXIT_CANCELLED
    except (RefError, CliError) as exc:
        if debug and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(
                type(exc.__cause__), exc.__cause__, exc.__cause__.__traceback__
            )
        sys.stderr.write(localize(f"toolnexus {options.command}: error: {exc}\n"))
        code = exc.code if isinstance(exc, CliError) else EXIT_USAGE
    if owns_sigint:
        if argv is not None and previous is not None:
            # Called from Python with its own argv: the process goes on, with its own Ctrl-C.
            signal.signal(signal.SIGINT, previous)
        elif argv is None:
            # Run as the program, it exits now. While the interpreter finalizes it puts back
            # SIG_DFL for a Python-level handler (Ctrl-C there would kill the process by the
            # signal) but leaves SIG_IGN alone: ignore it for the last few milliseconds.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def _configure_logging(level: str | None) -> None:
    """Send the package's log records to stderr at ``level``; ``None`` keeps the library
    silent (a tool's exception is already in its error result)."""
    from .._log import when_first_used

    # Done when the package first logs: a server that never logs never loads logging.
    when_first_used(lambda: _configure_logging_now(level))


def _configure_logging_now(level: str | None) -> None:
    import logging

    logger = logging.getLogger("toolnexus")
    for old in [h for h in logger.handlers if getattr(h, "_toolnexus_cli", False)]:
        logger.removeHandler(old)  # main() may run more than once in a process
    if level is None:
        return
    # stderr, never stdout: under `serve`, stdout is the protocol channel.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # A failed MCP server is named once, by _remote_toolkit: not again in the log.
    handler.addFilter(lambda record: not hasattr(record, "mcp_server_status"))
    handler._toolnexus_cli = True  # type: ignore[attr-defined]
    logger.setLevel(level.upper())
    logger.addHandler(handler)


def _reconfigure_streams() -> None:
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            # A tool's non-ASCII output must not crash a narrow-encoding console.
            with contextlib.suppress(ValueError, OSError, TypeError):
                reconfigure(errors="backslashreplace")
