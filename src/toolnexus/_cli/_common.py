"""What every command shares: the exit codes, the help texts about REF, the one-line error,
naming this copy of the package, and writing results to stdout."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._result import ToolResult

EXIT_OK = 0
"""The call succeeded (or the command did its job)."""

EXIT_TOOL_ERROR = 1
"""The tool returned an error result (including a declined question)."""

EXIT_USAGE = 2
"""The command line was wrong: bad REF, unknown tool, bad JSON, invalid arguments."""

EXIT_PENDING = 3
"""``--no-input``: the tool asked a question; the request was printed as JSON."""

EXIT_TIMEOUT = 124
"""The call ran out of its ``--timeout`` (the number ``timeout(1)`` uses)."""

EXIT_CANCELLED = 130
"""The call was cancelled with Ctrl-C (128 + SIGINT, as shells report it)."""


OUTCOME_CODES = {
    "ok": EXIT_OK,
    "error": EXIT_TOOL_ERROR,
    "pending": EXIT_PENDING,
    "timeout": EXIT_TIMEOUT,
    "cancelled": EXIT_CANCELLED,
}


EXIT_CODES_HELP = """\
exit codes:
  0    ok
  1    the tool returned an error (a declined question too); a resource
       or prompt failed
  2    usage error: bad REF, unknown tool, resource or prompt, bad JSON,
       invalid arguments (a URI's too), an --answer whose data fails the
       request's schema
  3    pending: --no-input and the tool asked a question (printed as JSON)
  124  timed out (--timeout)
  130  cancelled (Ctrl-C; a second Ctrl-C exits at once)"""


LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


REF_ARG = "the tools: module:attr, file.py:attr or mcp.json"


REF_HELP = """\
REF names the tools: module:attr or path/to/file.py:attr, where attr is a
function, a Tool, a Toolkit or a module; module (or file.py) alone means
every @tool in it. The current directory is importable. A path ending in
.json is an mcp.json: the tools of the MCP servers it configures, named
SERVER_TOOL (serve it, and the process is a gateway to them)."""


def package_name() -> str:
    """The import path of this copy of the package: ``toolnexus``, or e.g.
    ``_vendor.toolnexus`` when an application vendors it."""
    return __name__.rsplit(".", 2)[0]  # this module is <package>._cli._common


def localize(text: str) -> str:
    """Make help and hints name the command and the demo REF this copy actually runs under.

    The texts are written for the installed ``toolnexus`` console script; a vendored copy
    has no console script and its demo lives under its own import path.
    """
    package = package_name()
    if package == "toolnexus":
        return text
    import re

    text = re.sub(r"(?<![\w.])toolnexus\.demo:", f"{package}.demo:", text)
    return re.sub(r"(?<![\w.@/-])toolnexus (?=[a-zA-Z-])", f"python -m {package} ", text)


class CliError(Exception):
    """A mistake on the command line: printed as one line, exit code 2.

    Internal control flow, caught in :func:`main` only. It is not the public
    :class:`~toolnexus.errors.UsageError` (calling code that is wrong), so a Python caller
    of ``main()`` never has to tell the two apart: it only ever sees an exit code.
    ``code`` is that exit code: :data:`EXIT_USAGE` unless the line reports a failure
    (a server's resource or prompt that failed, :data:`EXIT_TOOL_ERROR`).
    """

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def outcome_of(result: ToolResult) -> str:
    if result.is_pending:
        return "pending"
    return "error" if result.is_error else "ok"


def print_result(result: ToolResult, *, as_json: bool) -> None:
    """The result's text on stdout, then every text part's (an MCP result's later text
    blocks), each on its own line; ``as_json``: the whole result as wire JSON."""
    if as_json:
        write_out(result.to_json())
        return
    texts = [result.output, *(part.text for part in result.parts if part.type == "text")]
    for text in texts:
        if text:
            write_out(text)


EXIT_PIPE_CLOSED = 141
"""stdout was closed before everything was written (``| head``): 128 + SIGPIPE, the code
a shell reports for a program the signal ended."""


class StdoutClosed(Exception):
    """The reader of stdout went away: the command ends quietly with
    :data:`EXIT_PIPE_CLOSED`. Internal control flow, caught in :func:`main` only."""


def write_out(text: str) -> None:
    """One line (or block) of the command's output on stdout. A reader that stopped
    reading (``toolnexus list mcp.json | head -2``) ends the command quietly, as CLIs do
    (exit :data:`EXIT_PIPE_CLOSED`), never with a traceback."""
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_gone()


def _stdout_gone() -> None:
    """stdout's reader is gone: point it at the null device (so the flush at exit finds
    nothing to complain of) and exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # (a stdout without a file descriptor)
        pass
    raise StdoutClosed


def first_line(text: str | None) -> str:
    stripped = (text or "").strip()
    return stripped.splitlines()[0] if stripped else ""
