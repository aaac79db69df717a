"""The tasks extension (SEP-2663): task records and their stores, a Host's calls kept by
id, and tasks over HTTP — a long call becomes a task, is polled, asks, is answered,
cancelled, survives its client and (with a shared store) its server; bad input included."""

from __future__ import annotations

import http.client
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from http_helpers import post, sse_events
from toolnexus import Host, NotFoundError, Request, ToolContext, Toolkit, ToolResult, tool
from toolnexus.mcp import HttpServer, ServerOptions, ServerSession
from toolnexus.mcp._server._bridge import LazyHost
from toolnexus.mcp._server._feature_tasks import _client_state
from toolnexus.mcp._server._feature_tools import make_tasks
from toolnexus.mcp._server._types import ClientView
from toolnexus.mcp._shared import _codec as codec
from toolnexus.stores import MemoryTaskStore, SqliteTaskStore, TaskRecord, TaskStore, open_store

TASKS = "io.modelcontextprotocol/tasks"
released = threading.Event()  # set by a test to let `hold` finish
held = threading.Event()


@tool(task_support="forbidden")
def quick() -> str:
    """Answers at once, never as a task."""
    return "quick"


@tool
def hold(ctx: ToolContext) -> str:
    """Runs until released (or cancelled)."""
    held.set()
    while not released.is_set():
        if ctx.cancellation_token.wait(0.02):
            return "stopped"
    return "released"


@tool
def instant() -> str:
    """Answers at once (a task only when it takes long)."""
    return "instant"


@tool(task_support="required")
def only_task() -> str:
    """Answers only through a task."""
    return "done as a task"


_CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@tool
def confirm(ctx: ToolContext) -> ToolResult:
    """Waits until released, then asks two questions; reports the answers."""
    one = Request("input", "Sure?", id="one", data={"schema": _CONFIRM})
    two = Request("input", "Really sure?", id="two", data={"schema": _CONFIRM})
    if ctx.answer is None:
        released.wait(10)
        return ToolResult.pending(Request.several(one, two))
    answers = [ctx.answer.answer_to(each) for each in (one, two)]
    return ToolResult.ok(" ".join(str((a.data or {}).get("ok")) for a in answers if a))


resumed = threading.Event()  # set by `ask_then_hold` once it runs again with its answer
stopped = threading.Event()  # ... and once its cancellation reached it


@tool
def ask_then_hold(ctx: ToolContext) -> ToolResult:
    """Asks once released (a task by then); run again with the answer, holds until
    cancelled."""
    question = Request("input", "Go on?", id="go", data={"schema": _CONFIRM})
    if ctx.answer is None:
        released.wait(10)
        return ToolResult.pending(question)
    resumed.set()
    if ctx.cancellation_token.wait(30):
        stopped.set()
        return ToolResult.ok("stopped")
    return ToolResult.ok("never cancelled")


TOOLKIT = Toolkit([quick, hold, instant, only_task, confirm])


# --------------------------------------------------------------------------- stores


def record(task_id: str = "tsk-1", now: float = 1000.0, ttl_ms: int = 60_000) -> TaskRecord:
    return TaskRecord(task_id, None, "working", now, now, ttl_ms)


@pytest.fixture(params=["memory", "sqlite"])
def store_maker(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    def make(clock: Any) -> TaskStore:
        if request.param == "memory":
            return MemoryTaskStore(clock=clock)
        return SqliteTaskStore(tmp_path / "tasks.db", clock=clock)

    return make


def test_a_store_keeps_records_updates_them_once_per_version_and_expires_them(
    store_maker: Any,
) -> None:
    now = [1000.0]
    store = store_maker(lambda: now[0])
    store.create(record())
    with pytest.raises(ValueError, match="exists already"):
        store.create(record())
    stored = store.get("tsk-1")
    assert stored == record()
    done = stored.evolve(status="completed", updated_at=1010.0, result={"content": []})
    assert store.update(done) is True
    assert store.update(stored.evolve(status="failed")) is False  # a stale version loses
    assert store.get("tsk-1").status == "completed"
    now[0] = 1010.0 + 60.0  # ttl after the last change
    assert store.get("tsk-1") is None
    assert store.update(done.evolve(status="cancelled")) in (False, True)
    assert store.purge() == 1 and store.purge() == 0
    assert store.get("unknown") is None


def test_a_record_refuses_an_unknown_status_and_round_trips_as_json() -> None:
    with pytest.raises(ValueError, match="status must be one of"):
        TaskRecord("tsk-1", None, "paused", 1.0, 1.0, 10)
    full = record().evolve(
        status="input_required",
        input_requests={"k": {"method": "elicitation/create", "params": {}}},
        state={"name": "x"},
    )
    assert TaskRecord.from_dict(json.loads(json.dumps(full.to_dict()))) == full
    assert full.expires_at == 1060.0 and not full.is_terminal


def test_the_memory_store_sweeps_expired_records_as_new_ones_come() -> None:
    now = [1000.0]
    store = MemoryTaskStore(clock=lambda: now[0])
    for i in range(1000):
        store.create(record(f"old-{i}", ttl_ms=1_000))
    assert len(store) == 1000  # nothing expired yet: every sweep kept them all
    now[0] += 2.0
    for i in range(600):  # a sweep comes within half the records kept (500) creations
        store.create(record(f"new-{i}", now=now[0], ttl_ms=60_000))
    assert len(store) <= 600
    assert all(store.get(f"new-{i}") is not None for i in range(600))


def test_ten_thousand_abandoned_tasks_leave_nothing_behind_after_their_ttl() -> None:
    now = [1000.0]
    clock = lambda: now[0]  # noqa: E731 - a fake clock
    options = ServerOptions(
        task_ttl_ms=1_000,
        task_store=MemoryTaskStore(clock=clock),
        max_stored_tasks=10_000,
        max_stored_tasks_per_owner=10_000,
    )
    tasks = make_tasks(options.tasks)
    tasks._clock = clock
    for _ in range(10_000):
        tasks.create(None, {"name": "instant"}, result=ToolResult.ok("done"))
    store = options.tasks.task_store
    assert isinstance(store, MemoryTaskStore) and len(store) == 10_000
    assert tasks.running == 0
    now[0] += 2.0
    store.purge()
    assert len(store) == 0


def bounded_tasks(per_owner: int, in_all: int) -> tuple[Any, MemoryTaskStore, LazyHost]:
    store = MemoryTaskStore()
    options = ServerOptions(
        task_store=store, max_stored_tasks=in_all, max_stored_tasks_per_owner=per_owner
    )
    host = LazyHost(TOOLKIT, options.host)
    return make_tasks(options.tasks), store, host


def test_finished_tasks_are_bounded_per_owner_and_in_all_the_oldest_evicted_first() -> None:
    # 4,000 finished tasks of one client used to stay for task_ttl_ms (an hour) each.
    tasks, store, host = bounded_tasks(per_owner=100, in_all=250)
    made = [
        tasks.create("alice", {"name": "instant"}, result=ToolResult.ok("x" * 1000)).task_id
        for _ in range(4_000)
    ]
    assert len(store) == 100  # alice's bound, running and finished
    assert len(tasks._texts) == 100  # a result's kept text goes with its task
    assert all(store.get(each) is None for each in made[:-100])  # the oldest went first
    assert all(store.get(each) is not None for each in made[-100:])
    for owner in ("bob", "carol", "dave"):
        for _ in range(100):
            tasks.create(owner, {"name": "instant"}, result=ToolResult.ok("done"))
    assert len(store) == 250  # the bound in all
    host.close()


def test_an_evicted_task_reads_evicted_to_its_owner_and_unknown_to_others() -> None:
    tasks, _, host = bounded_tasks(per_owner=2, in_all=10)
    first = tasks.create("alice", {"name": "instant"}, result=ToolResult.ok("done")).task_id
    for _ in range(2):
        tasks.create("alice", {"name": "instant"}, result=ToolResult.ok("done"))
    evicted = tasks.find(first, "alice")
    assert evicted.code == -32602 and "was evicted" in evicted.message
    assert evicted.data == {"taskId": first, "reason": "evicted"}
    other = tasks.find(first, "bob")
    assert other.code == -32602 and "evicted" not in other.message
    host.close()


def test_a_new_task_is_refused_only_when_unfinished_ones_fill_the_bound() -> None:
    tasks, store, host = bounded_tasks(per_owner=3, in_all=5)
    calls = [host.get().submit("hold", {}) for _ in range(3)]
    try:
        running = [tasks.create("alice", {"name": "hold"}, call=each) for each in calls]
        assert all(not hasattr(each, "code") for each in running)
        refused = tasks.create("alice", {"name": "instant"}, result=ToolResult.ok("done"))
        assert refused.code == -32603 and "3 of this client's tasks are unfinished" in (
            refused.message
        )
        assert len(store) == 3  # nothing running was evicted
        assert tasks.create("bob", {"name": "instant"}, result=ToolResult.ok("done")).task_id
        tasks.cancel(running[0].task_id, "alice")  # one finishes: its room is taken next
        again = tasks.create("alice", {"name": "instant"}, result=ToolResult.ok("done"))
        assert again.task_id and store.get(running[0].task_id) is None
        assert all(store.get(each.task_id) is not None for each in running[1:])
    finally:
        released.set()
        host.close()


class _CountingStore(MemoryTaskStore):
    """A memory store that lists each write (its kind and the record's status)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[str, str]] = []

    def create(self, record: TaskRecord) -> None:
        self.writes.append(("create", record.status))
        super().create(record)

    def update(self, record: TaskRecord) -> bool:
        self.writes.append(("update", record.status))
        return super().update(record)


def test_a_task_is_built_once_as_it_ends_and_an_ended_task_keeps_no_state() -> None:
    # A task made settled was built working, then rebuilt (and its state frozen again)
    # as it ended; an ended task kept the state only resuming it needs.
    store = _CountingStore()
    options = ServerOptions(task_store=store)
    tasks = make_tasks(options.tasks)
    state = {"method": "tools/call", "name": "instant", "arguments": {"n": [1, 2]}}
    made = tasks.create(None, state, result=ToolResult.ok("done"))
    assert isinstance(made, TaskRecord) and store.writes == [("create", "completed")]
    assert made.version == 0 and made.state is None  # built once, as it ended
    assert re.fullmatch(r"tsk-[0-9a-f]{32}", made.task_id)  # 128 random bits, in hex
    assert store.get(made.task_id) is made
    assert tasks.detailed(made)["result"]["content"] == [{"type": "text", "text": "done"}]
    released.clear()
    host = LazyHost(TOOLKIT, options.host)
    call = host.get().submit("hold", {})
    try:
        working = tasks.create(None, state, call=call)
        assert isinstance(working, TaskRecord) and working.state == state  # kept to resume it
        tasks.settle(working.task_id, ToolResult.ok("late"), call)
        ended = store.get(working.task_id)
        assert ended is not None and ended.status == "completed" and ended.state is None
        assert store.writes[1:] == [("create", "working"), ("update", "completed")]
    finally:
        released.set()
        host.close()


def tasks_meta() -> dict[str, Any]:
    """The ``_meta`` of a modern request by a client that takes tasks."""
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps(),
    }


def start_only_task(session: ServerSession) -> list[Any]:
    """The actions of a modern ``tools/call`` of ``only_task`` by a client that takes
    tasks (the first: the call to start)."""
    call = {"name": "only_task", "arguments": {}, "_meta": tasks_meta()}
    return session.receive({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})


@pytest.mark.parametrize("shared", [False, True])
def test_a_finished_task_s_result_is_encoded_once_and_each_tasks_get_writes_that_text(
    shared: bool, tmp_path: Path
) -> None:
    # Each tasks/get deep-copied the task's result and encoded it again.
    store: TaskStore = SqliteTaskStore(tmp_path / "tasks.db") if shared else MemoryTaskStore()
    options = ServerOptions(task_store=store)
    tasks = make_tasks(options.tasks)
    session = ServerSession(TOOLKIT, options, _tasks=tasks)
    start = start_only_task(session)
    result = ToolResult('done "é" ✓', False, {"structuredContent": {"n": [1, 2.5, None]}})
    made = session.complete_call(start[0].call_id, result)[0].message["result"]
    assert made["status"] == "completed"
    get = {"taskId": made["taskId"], "_meta": tasks_meta()}
    for request_id in (2, "get ✓"):
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tasks/get", "params": get}
        (answer,) = session.receive(message)
        written = answer.to_bytes()
        assert written == codec.encode(json.loads(written))  # exactly the plain path's bytes
        assert json.loads(written)["result"]["result"]["structuredContent"] == {"n": [1, 2.5, None]}
        # This process's memory hands back the record it ended: its kept text is written.
        # A shared store's record is read back anew: its result encoded as any answer's.
        assert answer._line is not None  # written from the codec's template either way
        record = tasks.store.get(made["taskId"])
        assert record is not None and (tasks.result_text(record) is not None) is not shared


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(
    "result",
    [
        ToolResult.ok("done"),
        ToolResult('done "é"', False, {"structuredContent": {"n": [1, 2.5, None]}}),
        ToolResult.error("it broke"),
    ],
    ids=["text", "structured", "error"],
)
def test_a_task_made_ended_writes_its_result_for_the_client_at_hand_as_its_state_names_it(
    version: str, result: ToolResult
) -> None:
    # A task made already ended wrote its client into its state, then read it back from
    # there to write the result; the client at hand must write the very same result.
    tasks = make_tasks(ServerOptions(task_store=MemoryTaskStore()).tasks)
    client = ClientView(version, True, True, False, sampling=True, tasks=True)
    state = {"method": "tools/call", "name": "instant", "arguments": {}}
    state["client"] = _client_state(client)
    read_back = tasks.create(None, state, result=result)
    at_hand = tasks.create(None, state, result=result, client=client)
    assert isinstance(read_back, TaskRecord) and isinstance(at_hand, TaskRecord)
    assert at_hand.result == read_back.result and at_hand.status == read_back.status
    assert tasks.result_text(at_hand) == tasks.result_text(read_back)


def test_a_task_made_ended_keeps_its_results_read_only_parts_without_copying_them() -> None:
    # The result a task records is frozen; its structuredContent is frozen already (the
    # result's own) and its text content is written read-only, so the record takes them as
    # they are rather than copying each again. What it records and writes is unchanged.
    tasks = make_tasks(ServerOptions(task_store=MemoryTaskStore()).tasks)
    client = ClientView("2026-07-28", True, False, False, tasks=True)
    state = {"method": "tools/call", "name": "instant", "arguments": {}}
    result = ToolResult('done "é"', False, {"structuredContent": {"n": [1, 2.5, None]}})
    record = tasks.create(None, state, result=result, client=client)
    assert isinstance(record, TaskRecord) and record.result is not None
    assert record.result["structuredContent"] is result.metadata["structuredContent"]
    content = record.result["content"]
    assert content == [{"type": "text", "text": 'done "é"'}]
    assert record.result == tasks.written(client, result)
    with pytest.raises(TypeError):
        content[0]["text"] = "changed"  # type: ignore[index]
    assert json.loads(tasks.result_text(record) or "null") == {
        "content": [{"type": "text", "text": 'done "é"'}],
        "isError": False,
        "structuredContent": {"n": [1, 2.5, None]},
    }


def test_a_tools_call_made_a_task_already_ended_does_not_read_its_client_back() -> None:
    # The session passes the client it has: nothing rebuilds it from the task's state.
    options = ServerOptions(task_store=MemoryTaskStore())
    tasks = make_tasks(options.tasks)
    read: list[object] = []
    client_of = tasks._client_of
    tasks._client_of = lambda state: read.append(state) or client_of(state)
    session = ServerSession(TOOLKIT, options, _tasks=tasks)
    start = start_only_task(session)
    made = session.complete_call(start[0].call_id, ToolResult.ok("done"))[0].message["result"]
    assert made["status"] == "completed" and read == []


def test_watchers_hear_each_change_and_nothing_while_nobody_listens() -> None:
    options = ServerOptions(task_store=MemoryTaskStore())
    tasks = make_tasks(options.tasks)
    listening = [False]
    heard: list[tuple[str, str]] = []
    all_heard = threading.Event()

    def watcher(record: TaskRecord) -> None:
        heard.append((record.task_id, record.status))
        if len(heard) == 3:
            all_heard.set()

    stop = tasks.watch(watcher, wants=lambda: listening[0])
    quiet = tasks.create(None, {"name": "instant"}, result=ToolResult.ok("done"))
    listening[0] = True
    made = [tasks.create(None, {"name": "instant"}, result=ToolResult.ok("done")) for _ in range(3)]
    assert all_heard.wait(10), heard
    assert isinstance(quiet, TaskRecord) and all(isinstance(m, TaskRecord) for m in made)
    assert quiet.task_id not in {task_id for task_id, _ in heard}  # nobody was listening
    for record in made:  # made settled: stored and told once, as it ends
        assert isinstance(record, TaskRecord) and record.status == "completed"
        assert [s for t, s in heard if t == record.task_id] == ["completed"]
    stop()


# --------------------------------------------------------------------------- Host.find


def test_a_host_keeps_a_submitted_call_by_id_for_another_thread() -> None:
    released.set()
    with Host(TOOLKIT) as host:
        call = host.submit("instant", {}, keep_ms=60_000)
        found: list[str] = []
        thread = threading.Thread(
            target=lambda: found.append(host.find(call.id).result(timeout=5).output)
        )
        thread.start()
        thread.join(10)
        assert found == ["instant"]
        assert host.find(call.id) is call and call.id.startswith("call-")
        with pytest.raises(NotFoundError, match="unknown call 'call-nope'"):
            host.find("call-nope")
        plain = host.submit("instant", {})
        plain.result(timeout=5)
        with pytest.raises(NotFoundError):
            host.find(plain.id)  # not kept


def test_a_kept_call_is_forgotten_keep_ms_after_it_ends() -> None:
    with Host(TOOLKIT) as host:
        call = host.submit("instant", {}, keep_ms=0)
        call.result(timeout=5)
        deadline = time.monotonic() + 10
        while call.id in host._kept:  # the timer forgets it
            assert time.monotonic() < deadline
            threading.Event().wait(0.01)
        with pytest.raises(NotFoundError):
            host.find(call.id)
        with pytest.raises(ValueError, match="keep_ms"):
            host.submit("instant", {}, keep_ms=-1)


# --------------------------------------------------------------------------- over HTTP


def caps(tasks: bool = True, **more: Any) -> dict[str, Any]:
    declared: dict[str, Any] = dict(more)
    if tasks:
        declared["extensions"] = {TASKS: {}}
    return declared


def rpc(
    server: HttpServer,
    method: str,
    params: dict[str, Any],
    capabilities: dict[str, Any] | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities
                if capabilities is not None
                else caps(),
            },
        },
    }
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    _, _, answer = post(server, body, headers)
    message = json.loads(answer)
    return dict(message)


def wait_status(
    server: HttpServer, task_id: str, wanted: tuple[str, ...], **kw: Any
) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while True:
        got = rpc(server, "tasks/get", {"taskId": task_id}, **kw)["result"]
        if got["status"] in wanted:
            return dict(got)
        assert time.monotonic() < deadline, got
        threading.Event().wait(0.02)


@pytest.fixture
def server() -> Iterator[HttpServer]:
    released.clear()
    held.clear()
    options = ServerOptions(task_after_ms=50, task_poll_ms=250, task_ttl_ms=120_000)
    with HttpServer(TOOLKIT, options, port=0) as running:
        running.start()
        yield running
    released.set()


def test_a_long_call_becomes_a_task_that_is_polled_to_its_result(server: HttpServer) -> None:
    created = rpc(server, "tools/call", {"name": "hold"})["result"]
    assert created["resultType"] == "task"
    assert set(created) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"}
    assert (created["status"], created["ttlMs"], created["pollIntervalMs"]) == (
        "working",
        120_000,
        250,
    )
    assert not {"result", "requestState", "inputRequests", "task"} & created.keys()
    working = rpc(server, "tasks/get", {"taskId": created["taskId"]})["result"]
    assert working["status"] == "working" and "result" not in working
    released.set()
    done = wait_status(server, created["taskId"], ("completed",))
    assert done["result"]["content"] == [{"type": "text", "text": "released"}]
    assert done["resultType"] == "complete"


def test_a_quick_call_and_a_forbidden_tool_are_answered_in_their_request() -> None:
    # 5 s before a call becomes a task: "quick" on a starved machine is still quick (the
    # shared fixture's 50 ms is for the tests that hold a call until it is a task).
    options = ServerOptions(task_after_ms=5_000, task_poll_ms=250, task_ttl_ms=120_000)
    with HttpServer(TOOLKIT, options, port=0) as server:
        server.start()
        instant = rpc(server, "tools/call", {"name": "instant"})["result"]
        quick = rpc(server, "tools/call", {"name": "quick"})["result"]
        listed = rpc(server, "tools/list", {})["result"]["tools"]
    assert instant["content"][0]["text"] == "instant"
    assert quick["resultType"] == "complete"
    support = {entry["name"]: entry["execution"]["taskSupport"] for entry in listed}
    assert support == {
        "quick": "forbidden",
        "hold": "optional",
        "instant": "optional",
        "only_task": "required",
        "confirm": "optional",
    }


def test_a_client_without_the_extension_never_gets_a_task(server: HttpServer) -> None:
    call: list[dict[str, Any]] = []
    thread = threading.Thread(
        target=lambda: call.append(rpc(server, "tools/call", {"name": "hold"}, caps(False)))
    )
    thread.start()
    assert held.wait(10)
    released.set()
    thread.join(10)
    assert call[0]["result"]["content"][0]["text"] == "released"
    refused = rpc(server, "tasks/get", {"taskId": "tsk-x"}, caps(False))["error"]
    assert refused["code"] == -32021
    assert refused["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    required = rpc(server, "tools/call", {"name": "only_task"}, caps(False))["error"]
    assert required["code"] == -32021 and "runs only as a task" in required["message"]


def test_a_required_task_that_finishes_at_once_is_a_task_already_done(server: HttpServer) -> None:
    created = rpc(server, "tools/call", {"name": "only_task"})["result"]
    assert created["resultType"] == "task" and created["status"] == "completed"
    got = rpc(server, "tasks/get", {"taskId": created["taskId"]})["result"]
    assert got["result"]["content"][0]["text"] == "done as a task"


@pytest.mark.parametrize("task_id", ["tsk-unknown", "", 5])
def test_an_unknown_task_is_invalid_params(server: HttpServer, task_id: Any) -> None:
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):
        error = rpc(server, method, {"taskId": task_id})["error"]
        assert error["code"] == -32602, (method, error)


def test_removed_methods_are_not_found(server: HttpServer) -> None:
    for method in ("tasks/result", "tasks/list"):
        assert rpc(server, method, {})["error"]["code"] == -32601


def test_cancelling_a_task_stops_its_call_and_is_idempotent(server: HttpServer) -> None:
    task_id = rpc(server, "tools/call", {"name": "hold"})["result"]["taskId"]
    assert held.wait(10)
    ack = rpc(server, "tasks/cancel", {"taskId": task_id})["result"]
    assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
    got = rpc(server, "tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "cancelled" and "result" not in got
    assert rpc(server, "tasks/cancel", {"taskId": task_id})["result"]["resultType"] == "complete"


def test_a_task_outlives_the_connection_that_made_it(server: HttpServer) -> None:
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=20)
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "hold",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps(),
            },
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "hold",
    }
    connection.request("POST", "/mcp", json.dumps(body), headers)
    task_id = json.loads(connection.getresponse().read())["result"]["taskId"]
    connection.close()  # the client goes away
    released.set()
    done = wait_status(server, task_id, ("completed",))
    assert done["result"]["content"][0]["text"] == "released"


def test_a_task_that_asks_waits_answered_in_parts_then_runs_again(server: HttpServer) -> None:
    task_id = rpc(server, "tools/call", {"name": "confirm"}, caps(elicitation={}))["result"][
        "taskId"
    ]
    released.set()
    asking = wait_status(server, task_id, ("input_required",), capabilities=caps(elicitation={}))
    assert set(asking["inputRequests"]) == {"one", "two"}
    assert asking["inputRequests"]["one"]["method"] == "elicitation/create"
    assert "requestState" not in asking
    bad = rpc(
        server,
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {"one": {"action": "accept", "content": {"ok": "yes"}}},
        },
    )["error"]
    assert bad["code"] == -32602 and "ok" in bad["message"]
    ack = rpc(
        server,
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {
                "one": {"action": "accept", "content": {"ok": True}},
                "stray": {"action": "accept"},
            },
        },
    )["result"]
    assert ack["resultType"] == "complete" and "status" not in ack
    partly = rpc(server, "tasks/get", {"taskId": task_id})["result"]
    assert partly["status"] == "input_required" and list(partly["inputRequests"]) == ["two"]
    rpc(
        server,
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {"two": {"action": "accept", "content": {"ok": False}}},
        },
    )
    done = wait_status(server, task_id, ("completed",))
    assert done["result"]["content"][0]["text"] == "True False"


@pytest.fixture
def asking_server() -> Iterator[HttpServer]:
    released.clear()
    resumed.clear()
    stopped.clear()
    options = ServerOptions(task_after_ms=50)
    with HttpServer(Toolkit([ask_then_hold]), options, port=0) as running:
        running.start()
        yield running
    released.set()


def test_a_resumed_task_runs_through_the_call_bridge_charged_in_flight_and_cancellable(
    asking_server: HttpServer,
) -> None:
    server = asking_server
    # The call that runs a task again after tasks/update is a call like any other: in the
    # bridge's call table (a tasks/cancel reaches it) and charged against the in-flight cap
    # while it runs (it used to start on the host directly, charged nothing).
    asks = caps(elicitation={})
    created = rpc(server, "tools/call", {"name": "ask_then_hold"}, asks)
    task_id = created["result"]["taskId"]
    released.set()
    wait_status(server, task_id, ("input_required",), capabilities=asks)
    assert server.endpoint.inflight[0] == 0  # nothing runs: nothing is charged
    answer = {"go": {"action": "accept", "content": {"ok": True}}}
    rpc(server, "tasks/update", {"taskId": task_id, "inputResponses": answer}, asks)
    assert resumed.wait(10)
    assert server.endpoint.inflight[0] > 0  # the resumed call holds its request's bytes
    assert stopped.is_set() is False
    rpc(server, "tasks/cancel", {"taskId": task_id}, asks)
    assert stopped.wait(10)
    assert wait_status(server, task_id, ("cancelled",))["status"] == "cancelled"
    deadline = time.monotonic() + 15
    while server.endpoint.inflight[0] != 0:  # given back as the call's end is reported
        assert time.monotonic() < deadline, server.endpoint.inflight
        threading.Event().wait(0.02)


def test_a_task_that_asks_what_the_client_cannot_answer_fails_saying_so(
    server: HttpServer,
) -> None:
    task_id = rpc(server, "tools/call", {"name": "confirm"})["result"]["taskId"]
    released.set()
    failed = wait_status(server, task_id, ("failed",))
    assert failed["error"]["code"] == -32021
    assert failed["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert "result" not in failed


def test_a_task_belongs_to_the_credential_that_made_it() -> None:
    def verify(token: str) -> bool:
        return token in ("alice-token", "bob-token")

    options = ServerOptions(task_after_ms=0, verify_token=verify)
    with HttpServer(Toolkit([only_task]), options, port=0) as running:
        running.start()
        task_id = rpc(running, "tools/call", {"name": "only_task"}, token="alice-token")["result"][
            "taskId"
        ]
        assert rpc(running, "tasks/get", {"taskId": task_id}, token="alice-token")["result"]
        other = rpc(running, "tasks/get", {"taskId": task_id}, token="bob-token")["error"]
        assert other["code"] == -32602 and "belongs to another client" in other["message"]


def test_with_a_shared_store_a_question_outlives_the_server_that_asked(tmp_path: Path) -> None:
    key = b"the-same-key-for-both-servers-0123"

    def options() -> ServerOptions:
        return ServerOptions(
            task_after_ms=50,
            secret=key,
            answer_store=open_store(f"sqlite:{tmp_path / 'used.db'}"),
            task_store=SqliteTaskStore(tmp_path / "tasks.db"),
        )

    released.clear()
    with HttpServer(TOOLKIT, options(), port=0) as first:
        first.start()
        task_id = rpc(first, "tools/call", {"name": "confirm"}, caps(elicitation={}))["result"][
            "taskId"
        ]
        released.set()
        wait_status(first, task_id, ("input_required",))
    with HttpServer(TOOLKIT, options(), port=0) as second:
        second.start()
        asking = rpc(second, "tasks/get", {"taskId": task_id})["result"]
        assert asking["status"] == "input_required"
        answers = {
            "one": {"action": "accept", "content": {"ok": True}},
            "two": {"action": "accept", "content": {"ok": True}},
        }
        rpc(second, "tasks/update", {"taskId": task_id, "inputResponses": answers})
        done = wait_status(second, task_id, ("completed",))
        assert done["result"]["content"][0]["text"] == "True True"


def test_a_task_store_that_fails_is_an_error_and_the_call_is_answered_in_its_request() -> None:
    class Broken(MemoryTaskStore):
        def create(self, record: TaskRecord) -> None:
            raise RuntimeError("disk full")

    options = ServerOptions(task_after_ms=0, task_store=Broken())
    with HttpServer(Toolkit([only_task, instant]), options, port=0) as running:
        running.start()
        error = rpc(running, "tools/call", {"name": "only_task"})["error"]
        assert error["code"] == -32603
        assert error["message"] == "the task store is unavailable; try again"


def test_a_task_store_failure_keeps_its_url_and_reason_in_the_server_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The client used to read the store's URL (and "answer store"): only the log has it.
    from toolnexus import StoreUnavailableError

    class Down(MemoryTaskStore):
        def get(self, task_id: str) -> TaskRecord | None:
            raise StoreUnavailableError("redis://:***@cache.internal:6379/0", "refused")

    options = ServerOptions(task_after_ms=0, task_store=Down())
    logs = caplog.at_level(logging.ERROR, logger="toolnexus")
    with logs, HttpServer(Toolkit([only_task]), options, port=0) as running:
        running.start()
        for method in ("tasks/get", "tasks/cancel", "tasks/update"):
            error = rpc(running, method, {"taskId": "tsk-1"})["error"]
            assert error == {
                "code": -32603,
                "message": "the task store is unavailable; try again",
            }, method
    logged = [r.getMessage() for r in caplog.records if r.name == "toolnexus"]
    assert len(logged) == 3 and all("cache.internal" in line for line in logged)


def test_a_listen_stream_that_asks_for_tasks_hears_each_change_of_its_clients_tasks(
    server: HttpServer,
) -> None:
    import socket

    message = {
        "jsonrpc": "2.0",
        "id": 21,
        "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps(),
            },
            "notifications": {"tasks": True},
        },
    }
    body = json.dumps(message).encode()
    host, port = server.address
    stream = socket.create_connection((host, port), timeout=10)
    stream.sendall(
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
        b"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
    )
    seen = b""

    def events() -> list[dict[str, Any]]:
        return sse_events(seen)

    def read_until(wanted: Any) -> list[dict[str, Any]]:
        nonlocal seen
        deadline = time.monotonic() + 15
        while not any(wanted(event) for event in events()):
            assert time.monotonic() < deadline, seen
            seen += stream.recv(65536)
        return events()

    read_until(lambda e: e.get("method") == "notifications/subscriptions/acknowledged")
    assert events()[0]["params"]["notifications"] == {"tasks": True}
    task_id = rpc(server, "tools/call", {"name": "hold"})["result"]["taskId"]
    released.set()
    told = read_until(lambda e: e.get("params", {}).get("status") == "completed")
    statuses = [e["params"]["status"] for e in told if e.get("method") == "notifications/tasks"]
    assert statuses[0] == "working" and statuses[-1] == "completed"
    last = told[-1]["params"]
    assert last["taskId"] == task_id
    assert last["result"]["content"][0]["text"] == "released"
    assert last["_meta"] == {"io.modelcontextprotocol/subscriptionId": 21}
    stream.close()


# --------------------------------------------------------------------------- over stdio


class PipedTasksClient:
    """A modern client declaring the tasks extension, talking to ``serve_stdio`` in a thread
    over pipes (serving ``toolkit``, this file's by default); every wait is bounded, so a
    server that hangs fails the test."""

    def __init__(self, toolkit: Toolkit | None = None, **options: Any) -> None:
        import os
        import queue

        from toolnexus.mcp import serve_stdio

        read_in, write_in = os.pipe()
        read_out, write_out = os.pipe()
        stdin, stdout = open(read_in, "rb"), open(write_out, "wb")  # noqa: SIM115
        self._to = open(write_in, "wb")  # noqa: SIM115
        self._from = open(read_out, "rb")  # noqa: SIM115
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notes: list[dict[str, Any]] = []

        def serve() -> None:
            try:
                served = TOOLKIT if toolkit is None else toolkit
                serve_stdio(served, ServerOptions(**options), stdin=stdin, stdout=stdout)
            finally:
                stdout.close()
                stdin.close()

        def read() -> None:
            for line in self._from:
                self.messages.put(json.loads(line))

        self.server = threading.Thread(target=serve, daemon=True)
        self.server.start()
        threading.Thread(target=read, daemon=True).start()

    def send(self, rid: int, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        message["params"] = {**params, "_meta": tasks_meta()}
        self._to.write(json.dumps(message).encode() + b"\n")
        self._to.flush()

    def answer(self, rid: int) -> dict[str, Any]:
        """The response to ``rid``; notifications seen meanwhile go to ``notes``."""
        while True:
            message = self.messages.get(timeout=15)  # queue.Empty: the server hangs
            if message.get("id") == rid and "method" not in message:
                return message
            self.notes.append(message)

    def told(self, until: tuple[str, str]) -> list[tuple[str, str]]:
        """The ``(taskId, status)`` of each task notification, read until ``until`` came."""
        while True:
            told = [
                (note["params"]["taskId"], note["params"]["status"])
                for note in self.notes
                if note.get("method") == "notifications/tasks"
            ]
            if until in told:
                return told
            self.notes.append(self.messages.get(timeout=15))  # queue.Empty: never told

    def request(self, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send(rid, method, params)
        return self.answer(rid)

    def close(self) -> None:
        self._to.close()
        self.server.join(15)
        assert not self.server.is_alive()


def test_over_stdio_a_task_is_made_polled_and_its_status_told_without_a_hang() -> None:
    released.clear()
    client = PipedTasksClient(task_after_ms=50, task_poll_ms=250)
    try:
        client.send(1, "subscriptions/listen", {"notifications": {"tasks": True}})
        # a tool that runs only as a task: the call is answered with the task, settled
        made = client.request(2, "tools/call", {"name": "only_task"})["result"]
        assert made["resultType"] == "task"
        got = client.request(3, "tasks/get", {"taskId": made["taskId"]})["result"]
        assert got["status"] == "completed"
        assert got["result"]["content"][0]["text"] == "done as a task"
        # a long call becomes a task; released, it completes; cancelled, one ends cancelled
        long = client.request(4, "tools/call", {"name": "hold"})["result"]
        assert (long["resultType"], long["status"]) == ("task", "working")
        released.set()
        deadline = time.monotonic() + 15
        while True:
            got = client.request(5, "tasks/get", {"taskId": long["taskId"]})["result"]
            if got["status"] != "working":
                break
            assert time.monotonic() < deadline, got
            held.wait(0.05)  # a poll interval (held is set already: this only paces)
        assert got["status"] == "completed"
        assert got["result"]["content"][0]["text"] == "released"
        # each task's status is told on the listen stream, in the order it changed (a task
        # made settled is told once, as it ends)
        told = client.told(until=(long["taskId"], "completed"))
        for task, statuses in ((made, ["completed"]), (long, ["working", "completed"])):
            mine = [status for task_id, status in told if task_id == task["taskId"]]
            assert mine == statuses, told
    finally:
        released.set()
        client.close()


def test_a_task_s_times_are_written_as_datetime_writes_them_to_the_millisecond() -> None:
    # iso_time formats without datetime (a third of its cost): pinned to datetime's text,
    # rounding included (a timestamp's microseconds, half to even, then cut to milliseconds).
    import math
    import random
    from datetime import datetime, timezone

    from toolnexus.mcp._server._tasks import iso_time

    def plain(seconds: float) -> str:
        moment = datetime.fromtimestamp(seconds, timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    now = 1_765_065_600.0
    edges = [0.0, 1.0, 1.0005, 1.0004999, 1.9999995, 1.9999994, -1.5, -0.0000001]
    edges += [now + 0.9995, now + 0.9999999, now + 0.0009995, 253_402_300_799.999]
    edges += [math.floor(now) + k / 1e6 + d for k in range(0, 10**6, 997) for d in (0, 5e-7)]
    picked = random.Random(37)
    edges += [now + picked.uniform(-3e9, 3e9) for _ in range(20_000)]
    assert [iso_time(each) for each in edges] == [plain(each) for each in edges]
