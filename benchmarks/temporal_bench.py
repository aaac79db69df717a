"""What benchmarks/stores.py runs on Temporal: a one-line tool, and the bare round trip it
is measured against (a workflow that runs one activity returning its argument, outside
the sandbox, as toolnexus's workflow runs). Temporal wants workflows defined at module
level, so they live here, imported only when the Temporal table is measured."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

from toolnexus import Toolkit, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


toolkit = Toolkit([add])


@activity.defn(name="bare_add")
async def bare_add(args: dict[str, int]) -> dict[str, int]:
    return args


@workflow.defn(name="BareCall", sandboxed=False)
class BareCall:
    @workflow.run
    async def run(self, args: dict[str, int]) -> dict[str, int]:
        result: dict[str, int] = await workflow.execute_activity(
            "bare_add", args, start_to_close_timeout=timedelta(seconds=30)
        )
        return result
