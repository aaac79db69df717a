"""The parser, from a table: each command module declares a :class:`Command` (its name,
help, arguments and handler) and :func:`build_parser` turns the table into ``argparse``.
Also the types an argument's value is read with (argparse reports their errors as
``argument --timeout: <message>``, exit code 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._common import EXIT_CODES_HELP, REF_HELP, localize, package_name


@dataclass(frozen=True, eq=False)
class Argument:
    """One argument of a command: what ``add_argument`` takes (its name or flags, and its
    keyword options)."""

    flags: tuple[str, ...]
    options: Mapping[str, Any]


def argument(*flags: str, **options: Any) -> Argument:
    """An :class:`Argument`, written as the ``add_argument`` call it stands for.

    Example::

        argument("--timeout", type=milliseconds, metavar="MS", help="the call's deadline")
    """
    return Argument(flags, options)


@dataclass(frozen=True, eq=False)
class Group:
    """Arguments shown under their own title in the command's help."""

    title: str
    description: str
    arguments: tuple[Argument, ...]


@dataclass(frozen=True, eq=False)
class Command:
    """One command of the table: ``toolnexus NAME ...`` runs ``handler(options)``, whose
    return value is the exit code. ``runs_a_tool_call`` (``call``, ``resume``): the command
    owns Ctrl-C while it runs (:func:`toolnexus._cli.main`), and words after an option still
    belong to its ``NAME key=value`` (``call REF --timeout 5 crunch n=3``)."""

    name: str
    help: str
    description: str
    handler: Callable[[argparse.Namespace], int]
    arguments: tuple[Argument | Group, ...] = ()
    usage: str | None = None
    epilog: str | None = None
    runs_a_tool_call: bool = False


# --------------------------------------------------------------------------- value types


def whole_number(minimum: int, expected: str, example: str, unit: str = "") -> Callable[[str], int]:
    """An argparse ``type`` for a whole number >= ``minimum``, whose errors say what was
    ``expected`` and show an ``example``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {expected}, got {text!r} (e.g. {example})"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}{unit}, got {value}")
        return value

    return parse


milliseconds = whole_number(0, "whole milliseconds", "--timeout 5000", " milliseconds")
rounds = whole_number(1, "a whole number of rounds", "--max-rounds 3")


_SIZE_UNITS = {
    "": 1,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
}


def byte_size(text: str) -> int:
    number = text.strip().lower()
    digits = number[: len(number) - len(number.lstrip("0123456789"))] or "x"
    unit = _SIZE_UNITS.get(number[len(digits) :])
    if not digits.isdigit() or unit is None or int(digits) * unit < 1:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of bytes, optionally with K, M or G, got {text!r} "
            "(e.g. --max-inflight-bytes 256M)"
        )
    return int(digits) * unit


def http_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` for ``--http``; the host defaults to 127.0.0.1."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected [HOST:]PORT with PORT in 0..65535, got {text!r} (e.g. 8000 or 0.0.0.0:8000)"
        )
    return host, int(port)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=28)


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    """The command line's parser: one subcommand for each of ``commands``, in order; its
    texts name the command this copy of the package runs under (:func:`localize`)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show tracebacks (import errors, tool exceptions)",
    )
    parser = argparse.ArgumentParser(
        prog="toolnexus" if package_name() == "toolnexus" else f"python -m {package_name()}",
        formatter_class=_Formatter,
        description="Call tools from a shell, answer their questions at the prompt, "
        "print their schemas, serve them over MCP.",
        epilog=localize(
            f"{REF_HELP}\n\nexamples:\n"
            "  toolnexus demo\n"
            "  toolnexus list toolnexus.demo:toolkit\n"
            "  toolnexus call toolnexus.demo:toolkit crunch steps=3\n\n"
            f"{EXIT_CODES_HELP}\n\n"
            "toolnexus COMMAND --help shows a command's options."
        ),
    )
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"toolnexus {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        sub = subparsers.add_parser(
            command.name,
            parents=[common],
            formatter_class=_Formatter,
            help=command.help,
            usage=None if command.usage is None else localize(command.usage),
            description=localize(command.description),
            epilog=None if command.epilog is None else localize(command.epilog),
        )
        for entry in command.arguments:
            if isinstance(entry, Group):
                group = sub.add_argument_group(entry.title, entry.description)
                for each in entry.arguments:
                    group.add_argument(*each.flags, **each.options)
            else:
                sub.add_argument(*entry.flags, **entry.options)
        sub.set_defaults(handler=command.handler)
    return parser
