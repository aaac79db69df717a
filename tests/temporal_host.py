"""A host process of its own for tests/test_temporal.py: it asks, exits, and another one
answers — a question that outlives the host that asked it.

usage::

    python tests/temporal_host.py ask ADDRESS QUEUE KEY STORE PENDING_FILE
        call approve(env="prod") on the fleet; write the pending result to PENDING_FILE
    python tests/temporal_host.py answer ADDRESS QUEUE KEY STORE PENDING_FILE
        resume it with an approval; print the result as JSON
"""

from __future__ import annotations

import sys
from pathlib import Path

from temporal_tools import toolkit
from toolnexus import Answer, Host, ToolResult
from toolnexus.stores import open_store
from toolnexus.temporal import TemporalRunner


def main(command: str, address: str, queue: str, key: str, store: str, pending: str) -> int:
    runner = TemporalRunner(address, task_queue=queue, heartbeat_ms=1000)
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
