"""What one client's tasks may take (issue 36, tasks bounded; a follow-up audit):

- ``max_running_tasks_per_owner``: one client's burst of task-making calls took every
  host worker (320 tasks of a 6 s tool; another client's ``add`` waited 27.9 s). Beyond its
  share a client's call stays a plain call, answered in its request; other clients keep
  their own share.
- ``max_stored_result_bytes``: the stored-task bound counted records, not bytes (2,400
  results of 100 kB took 400 MB). The oldest finished results are evicted for a new one;
  a result larger than the whole bound is kept as an error result saying so.
"""

from __future__ import annotations

import collections
import json
import queue
import threading
from typing import Any

import pytest

from http_helpers import post
from timing import TIMEOUT, wait_until
from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.mcp import HttpServer, ServerOptions, TaskOptions

TASKS = "io.modelcontextprotocol/tasks"
gate = threading.Event()  # what `hold` waits for
entered = threading.Semaphore(0)  # one permit per `hold` that started


@tool
def hold() -> str:
    """Runs until the test lets it end."""
    entered.release()
    gate.wait(TIMEOUT)
    return "done"


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool(task_support="required")
def big(n: int) -> str:
    """A large answer, only ever as a task."""
    return "x" * n


may_ask = threading.Event()  # what `asks` waits for before it asks


@tool
def asks(ctx: ToolContext) -> ToolResult:
    """Asks once (when the test lets it: by then its call is a task), then says it was
    answered."""
    if ctx.answer is None:
        may_ask.wait(TIMEOUT)
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        return ToolResult.pending(Request("input", "Sure?", id="one", data={"schema": schema}))
    return ToolResult.ok("answered")


TOOLKIT = Toolkit([hold, add, big, asks])


def rpc(server: HttpServer, method: str, params: dict[str, Any], token: str) -> dict[str, Any]:
    """A modern request by a client that takes tasks (and answers questions); the
    JSON-RPC answer."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {TASKS: {}},
            "elicitation": {"form": {}},
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    _, _, answer = post(server, body, {"Authorization": f"Bearer {token}"})
    return dict(json.loads(answer))


def kind(answer: dict[str, Any]) -> str:
    """``task`` for an answer that made the call a task, ``plain`` for a tool's result."""
    result = answer["result"]
    return "task" if result.get("resultType") == "task" else "plain"


@pytest.fixture
def opened() -> Any:
    gate.clear()
    while entered.acquire(blocking=False):
        pass
    yield
    gate.set()


def test_one_client_runs_at_most_its_share_of_tasks_and_others_keep_theirs(opened: Any) -> None:
    options = ServerOptions(
        verify_token=lambda token: token in ("alice", "bob"),
        tasks=TaskOptions(task_after_ms=0, max_running_tasks_per_owner=2),
    )
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        answers: queue.Queue[dict[str, Any]] = queue.Queue()
        threads = [
            threading.Thread(
                target=lambda: answers.put(rpc(server, "tools/call", {"name": "hold"}, "alice")),
                daemon=True,
            )
            for _ in range(5)
        ]
        for thread in threads:
            thread.start()
        for _ in range(5):  # all five run
            assert entered.acquire(timeout=TIMEOUT)
        first = [answers.get(timeout=TIMEOUT) for _ in range(2)]
        assert [kind(answer) for answer in first] == ["task", "task"]
        # Her other three calls stay in their requests: no third task comes while they
        # run (a bounded wait for what must not happen).
        with pytest.raises(queue.Empty):
            answers.get(timeout=1.0)
        # Another client is served at once, and has a share of its own.
        added = rpc(server, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, "bob")
        assert "result" in added  # answered (as a task or not: task_after_ms is 0)
        assert kind(rpc(server, "tools/call", {"name": "hold"}, "bob")) == "task"
        gate.set()
        rest = [answers.get(timeout=TIMEOUT) for _ in range(3)]
        assert collections.Counter(kind(answer) for answer in rest) == {"plain": 3}
        assert all(answer["result"]["content"][0]["text"] == "done" for answer in rest)
        for thread in threads:
            thread.join(TIMEOUT)


def test_a_finished_task_frees_its_place_in_the_share(opened: Any) -> None:
    options = ServerOptions(
        verify_token=lambda token: token == "alice",
        tasks=TaskOptions(task_after_ms=0, max_running_tasks_per_owner=1),
    )
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        made = rpc(server, "tools/call", {"name": "hold"}, "alice")
        assert kind(made) == "task"
        gate.set()
        task_id = made["result"]["taskId"]
        assert wait_until(
            lambda: (
                rpc(server, "tasks/get", {"taskId": task_id}, "alice")["result"]["status"]
                == "completed"
            )
        )
        gate.clear()
        assert kind(rpc(server, "tools/call", {"name": "hold"}, "alice")) == "task"


def test_a_task_waiting_on_an_answer_keeps_its_place_in_its_clients_share(opened: Any) -> None:
    # Its resume runs in that place: freed while it asked, a client could start as many
    # tasks as it liked, each asking, then answer them all and run them all at once.
    options = ServerOptions(
        verify_token=lambda token: token == "alice",
        tasks=TaskOptions(task_after_ms=0, max_running_tasks_per_owner=1),
    )
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        may_ask.clear()
        task_id = rpc(server, "tools/call", {"name": "asks"}, "alice")["result"]["taskId"]
        may_ask.set()
        assert wait_until(
            lambda: (
                rpc(server, "tasks/get", {"taskId": task_id}, "alice")["result"]["status"]
                == "input_required"
            )
        )
        answers: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(
            target=lambda: answers.put(rpc(server, "tools/call", {"name": "hold"}, "alice")),
            daemon=True,
        ).start()
        assert entered.acquire(timeout=TIMEOUT)  # it runs: as a plain call, in its request
        with pytest.raises(queue.Empty):  # (a bounded wait for what must not happen)
            answers.get(timeout=1.0)
        gate.set()
        assert kind(answers.get(timeout=TIMEOUT)) == "plain"
        responses = {"one": {"action": "accept", "content": {"ok": True}}}
        updated = rpc(
            server, "tasks/update", {"taskId": task_id, "inputResponses": responses}, "alice"
        )
        assert "result" in updated, updated
        assert wait_until(
            lambda: (
                rpc(server, "tasks/get", {"taskId": task_id}, "alice")["result"]["status"]
                == "completed"
            )
        )
        gate.clear()  # its place is free again: the next call is a task
        assert kind(rpc(server, "tools/call", {"name": "hold"}, "alice")) == "task"
        gate.set()


def test_stored_results_are_bounded_in_bytes_oldest_finished_first() -> None:
    options = ServerOptions(
        verify_token=lambda token: token == "alice",
        tasks=TaskOptions(task_after_ms=0, max_stored_result_bytes=250_000),
    )
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        ids = [
            rpc(server, "tools/call", {"name": "big", "arguments": {"n": 100_000}}, "alice")[
                "result"
            ]["taskId"]
            for _ in range(5)
        ]

        def settled(task_id: str) -> dict[str, Any]:
            # (task_after_ms=0: a call is a task at once, and may still be running)
            seen: list[dict[str, Any]] = []

            def ended() -> bool:
                seen[:] = [rpc(server, "tasks/get", {"taskId": task_id}, "alice")]
                return seen[0].get("result", {}).get("status") != "working"

            assert wait_until(ended)
            return seen[0]

        got = [settled(task_id) for task_id in ids]
        # Two results of 100 kB fit in 250 kB: the three oldest were evicted for them.
        for answer in got[:3]:
            assert answer["error"]["code"] == -32602
            assert "evicted" in answer["error"]["message"]
        for answer in got[3:]:
            text = answer["result"]["result"]["content"][0]["text"]
            assert text == "x" * 100_000


def test_a_result_larger_than_the_byte_bound_is_kept_as_an_error_saying_so() -> None:
    options = ServerOptions(
        verify_token=lambda token: token == "alice",
        tasks=TaskOptions(task_after_ms=0, max_stored_result_bytes=50_000),
    )
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        made = rpc(server, "tools/call", {"name": "big", "arguments": {"n": 60_000}}, "alice")
        asked = {"taskId": made["result"]["taskId"]}
        # (task_after_ms=0: a call is a task at once, and may still be running)
        assert wait_until(
            lambda: rpc(server, "tasks/get", asked, "alice")["result"]["status"] != "working"
        )
        task = rpc(server, "tasks/get", asked, "alice")["result"]
    assert task["status"] == "completed"
    result = task["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "'big' was too large for the server to keep" in text
    assert "TaskOptions.max_stored_result_bytes (50000)" in text


def test_the_new_bounds_are_options_with_sane_defaults_and_are_checked() -> None:
    defaults = TaskOptions()
    assert defaults.max_running_tasks_per_owner == 16  # a quarter of the host's 64 workers
    assert defaults.max_stored_result_bytes == 64 * 1024 * 1024
    same = ServerOptions(max_running_tasks_per_owner=4, max_stored_result_bytes=1_000)
    assert same.tasks.max_running_tasks_per_owner == 4
    assert same.tasks.max_stored_result_bytes == 1_000
    for label in ("max_running_tasks_per_owner", "max_stored_result_bytes"):
        with pytest.raises(ValueError, match=label):
            TaskOptions(**{label: 0})
