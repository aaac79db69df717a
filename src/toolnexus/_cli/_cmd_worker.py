"""``toolnexus worker``: REF's tools as Temporal activities (see :mod:`toolnexus.temporal`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ._common import LOG_LEVELS, REF_ARG, REF_HELP, CliError
from ._parser import Command, argument, whole_number
from ._refs import load_toolkit

if TYPE_CHECKING:
    import argparse


def _cmd_worker(options: argparse.Namespace) -> int:
    """``toolnexus worker REF --temporal HOST:PORT --task-queue Q``: REF's tools as
    Temporal activities, until SIGINT or SIGTERM (see :mod:`toolnexus.temporal`)."""
    toolkit = load_toolkit(options.ref)
    try:
        from ..errors import TemporalUnavailableError
        from ..temporal import serve_worker
        from ..temporal._runner import import_temporalio

        import_temporalio()
    except ImportError as exc:
        raise CliError(str(exc)) from None

    def ready() -> None:
        count = len(toolkit)
        print(
            f"toolnexus: worker for {count} tool{'' if count == 1 else 's'} on task queue "
            f"{options.task_queue!r} at {options.temporal}; Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )

    try:
        return serve_worker(
            toolkit,
            options.temporal,
            task_queue=options.task_queue,
            namespace=options.namespace,
            max_concurrent=options.max_concurrent,
            ready=ready,
        )
    except TemporalUnavailableError as exc:
        raise CliError(f"--temporal: {exc}") from None


WORKER = Command(
    "worker",
    help="run the tools as Temporal activities, a worker of a fleet",
    description="Run REF's tools on a Temporal task queue, until Ctrl-C or SIGTERM: each "
    "tool is an\nactivity, and calls a host starts with "
    "Host(toolkit, runner=TemporalRunner(...))\nrun here (start as many workers as you "
    "like). Needs the temporalio SDK.",
    epilog=f"{REF_HELP}\n\nexample:\n"
    "  toolnexus worker tools.py:toolkit --temporal localhost:7233 --task-queue tools",
    arguments=(
        argument("ref", metavar="REF", help=REF_ARG),
        argument(
            "--temporal", required=True, metavar="HOST:PORT", help="the Temporal frontend's address"
        ),
        argument(
            "--task-queue",
            required=True,
            metavar="QUEUE",
            help="the task queue hosts send calls to",
        ),
        argument(
            "--namespace", default="default", help="the Temporal namespace (default: default)"
        ),
        argument(
            "--max-concurrent",
            type=whole_number(1, "a whole number of calls", "--max-concurrent 8"),
            metavar="N",
            help="the most calls this worker runs at once (default: Temporal's)",
        ),
        argument(
            "--log-level",
            type=str.lower,
            default="warning",
            choices=LOG_LEVELS,
            help="what the worker logs to stderr (default: warning; --debug means debug)",
        ),
    ),
    handler=_cmd_worker,
)
