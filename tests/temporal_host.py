"""A host process of its own for tests/test_temporal.py: it asks, exits, and another one
answers — a question that outlives the host that asked it.

usage::

    python tests/temporal_host.py ask ADDRESS QUEUE KEY STORE PENDING_FILE
        call approve(env="prod") on the fleet; write the pending result to PENDING_FILE
    python tests/temporal_host.py answer ADDRESS QUEUE KEY STORE PENDING_FILE
        resume it with an approval; print the result as JSON
    python tests/temporal_host.py cancel ADDRESS QUEUE LABEL
        call stubborn(label=LABEL), cancel it once it started on a worker, print the result,
        and exit while the call still waits for Temporal (stubborn ignores its token)
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from temporal_tools import toolkit
from toolnexus import Answer, CancellationTokenSource, Host, ToolResult
from toolnexus.stores import open_store
from toolnexus.temporal import TemporalRunner


def main(command: str, address: str, queue: str, *rest: str) -> int:
    runner = TemporalRunner(address, task_queue=queue, heartbeat_ms=1000)
    if command == "cancel":
        label = rest[0]
        source = CancellationTokenSource()
        runs = Path(os.environ["TOOLNEXUS_TEST_RUNS"])

        def cancel_once_started() -> None:
            while not list(runs.glob(f"started-{label}-*")):
                source.token.wait(0.02)
            source.cancel()

        threading.Thread(target=cancel_once_started, daemon=True).start()
        with Host(toolkit, runner=runner) as host:
            call = host.call(
                "stubborn", {"label": label}, timeout_ms=60_000, cancellation_token=source.token
            )
            print(call.output)
        return 0
    key, store, pending = rest
    with Host(toolkit, runner=runner, secret=key, answer_store=open_store(store)) as host:
        if command == "ask":
            asked = host.call("approve", {"env": "prod"})
            Path(pending).write_text(asked.to_json())
            return 0 if asked.is_pending else 1
        parked = ToolResult.from_json(Path(pending).read_text())
        request = ToolResult.pending_of(parked)
        assert request is not None
        print(host.resume("approve", {"env": "prod"}, parked, Answer.accept(request)).to_json())
        return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
