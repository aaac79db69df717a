"""Durable execution on Temporal: a host's calls run on a worker fleet, and outlive it.

- :class:`TemporalRunner` — give it to a host (``Host(toolkit, runner=...)``) and each call
  runs as a Temporal workflow whose activity is the tool, on whichever worker polls the
  task queue; questions wait in Temporal, surviving restarts of the host and the workers;
- :func:`run_worker` / :func:`serve_worker` — a toolkit's tools as Temporal activities on a
  worker (``toolnexus worker REF --temporal HOST:PORT --task-queue Q`` on the command line).

The contract keeps its meaning: the deadline is the activity's start-to-close timeout (and
holds on the host whatever the tool does); a cancel reaches the tool's token with the next
heartbeat; a suspension waits for its answer — bound to its call and used once — as long
as the request's ``expiresAt`` allows; only a tool marked idempotent runs again when its
worker is lost. Needs the official SDK (the ``temporal`` extra: ``pip install
'temporalio>=1.10'``); importing this module does not import it: each name imports it when
used.

Example::

    from toolnexus import Host
    from toolnexus.temporal import TemporalRunner

    runner = TemporalRunner("temporal.internal:7233", task_queue="tools")
    with Host(toolkit, runner=runner) as host:
        print(host.call("deploy", {"env": "staging"}).output)
"""

from __future__ import annotations

from ._runner import TemporalRunner
from ._worker import run_worker, serve_worker

__all__ = ["TemporalRunner", "run_worker", "serve_worker"]

for _exported in (run_worker, serve_worker):
    _exported.__module__ = __name__  # where users import them from
del _exported
