"""Through the gateway, a caller's task *is* the upstream's task: the caller that declares
the tasks extension and calls a federated tool its upstream may run as a task gets the
upstream's task under an id naming both (``tt+tsk-…``); its ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` reach that task — after the gateway restarted too.
A task id the caller did not make (another principal's, forged, of an unknown upstream) is
"no task", named, and the other upstreams keep working.

The upstream is ``tests/task_tools.py``'s toolkit on an embedded HTTP server in this
process (``build`` holds until the test opens its gate; ``release_later`` asks a question
once it is a task); the gateway is an ``McpSource`` federated and served on another.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import task_tools
from test_mcp_tasks import caps, rpc, wait_status
from timing import wait_until
from toolnexus.mcp import HttpServer, McpSource, ServerOptions, federate
from toolnexus.stores import MemoryTaskStore, SqliteTaskStore, TaskRecord


class _Kept(MemoryTaskStore):
    """The upstream's task store, which keeps each task's target as it is made (an ended
    task keeps no state): a task cancelled before its tool ran is found too."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: dict[str, str] = {}

    def create(self, record: TaskRecord) -> None:
        super().create(record)
        state = record.state or {}
        self.targets[record.task_id] = str((state.get("arguments") or {}).get("target"))

    def status_of(self, target: str) -> str | None:
        for task_id, made_for in list(self.targets.items()):
            found = self.get(task_id) if made_for == target else None
            if found is not None:
                return found.status
        return None


UPSTREAM_TASKS = _Kept()


@pytest.fixture
def upstream() -> Iterator[HttpServer]:
    global UPSTREAM_TASKS
    task_tools.BUILDS.clear()
    task_tools.CANCELLED.clear()
    task_tools.GATES.clear()
    UPSTREAM_TASKS = _Kept()
    options = ServerOptions(task_after_ms=0, task_store=UPSTREAM_TASKS)
    with HttpServer(task_tools.toolkit, options, port=0) as running:
        running.start()
        try:
            yield running
        finally:  # a build still held ends before its server does
            for gate in list(task_tools.GATES.values()):
                gate.set()


@contextlib.contextmanager
def gateway(upstream: HttpServer, options: ServerOptions | None = None) -> Iterator[HttpServer]:
    """A gateway in front of ``upstream`` (named ``tt``), served over HTTP."""
    config = {"mcpServers": {"tt": {"url": upstream.url}}}
    with McpSource(config) as source:
        source.connect()
        federate(source)
        with HttpServer(source.toolkit, options or ServerOptions(), port=0) as running:
            running.start()
            yield running


def open_gate(target: str) -> None:
    """Let the build of ``target`` end (made here if the build has not started yet)."""
    task_tools.GATES.setdefault(target, threading.Event()).set()


def result_text(task: dict[str, Any]) -> str:
    (block,) = task["result"]["content"]
    return str(block["text"])


def test_a_callers_task_is_the_upstreams_and_outlives_a_gateway_restart(
    upstream: HttpServer,
) -> None:
    with gateway(upstream) as first:
        created = rpc(first, "tools/call", {"name": "tt_build", "arguments": {"target": "a"}})
        created = created["result"]
        # build is an optional task tool upstream: the caller took tasks, so did the upstream
        assert created["resultType"] == "task" and created["status"] == "working"
        mapped = created["taskId"]
        assert mapped.startswith("tt+tsk-")
        # One to one: the upstream's own task, under the id after the "+".
        upstream_id = mapped.split("+", 1)[1]
        assert rpc(upstream, "tasks/get", {"taskId": upstream_id})["result"]["status"] == "working"
    # The gateway is gone (its memory task store with it); a new one serves the same
    # upstream, and the caller's id still reaches the task.
    with gateway(upstream) as second:
        assert rpc(second, "tasks/get", {"taskId": mapped})["result"]["status"] == "working"
        open_gate("a")
        done = wait_status(second, mapped, ("completed",))
    assert done["taskId"] == mapped
    assert result_text(done) == "a built"
    assert task_tools.BUILDS == ["a"]  # made once, upstream: never run by the gateway


def test_a_callers_task_result_links_to_the_federated_uris(upstream: HttpServer) -> None:
    with gateway(upstream) as server:
        arguments = {"target": "f", "link": True}
        created = rpc(server, "tools/call", {"name": "tt_build", "arguments": arguments})
        mapped = created["result"]["taskId"]
        open_gate("f")
        done = wait_status(server, mapped, ("completed",))
    links = [block for block in done["result"]["content"] if block["type"] == "resource_link"]
    assert [link["uri"] for link in links] == ["tt+https://builds.example.test/f.pdf"]


def test_a_question_the_upstream_task_asks_is_the_callers_and_its_answer_reaches_it(
    upstream: HttpServer,
) -> None:
    with gateway(upstream) as server:
        created = rpc(
            server,
            "tools/call",
            {"name": "tt_release_later", "arguments": {"version": "4.0"}},
            caps(elicitation={}),
        )
        mapped = created["result"]["taskId"]
        assert mapped.startswith("tt+tsk-")
        asked = wait_status(server, mapped, ("input_required",), capabilities=caps(elicitation={}))
        upstream_id = mapped.split("+", 1)[1]
        upstreams = rpc(upstream, "tasks/get", {"taskId": upstream_id})["result"]
        assert upstreams["status"] == "input_required"
        assert asked["inputRequests"] == upstreams["inputRequests"]  # as the upstream asks
        (key,) = asked["inputRequests"]
        assert asked["inputRequests"][key]["params"]["message"] == "Where should 4.0 go?"
        answer = {key: {"action": "accept", "content": {"env": "eu"}}}
        updated = rpc(server, "tasks/update", {"taskId": mapped, "inputResponses": answer})
        assert "error" not in updated, updated
        done = wait_status(server, mapped, ("completed",))
    assert result_text(done) == "4.0 released to eu"


def test_cancelling_the_callers_task_cancels_the_upstreams(upstream: HttpServer) -> None:
    with gateway(upstream) as server:
        created = rpc(server, "tools/call", {"name": "tt_build", "arguments": {"target": "c"}})
        mapped = created["result"]["taskId"]
        assert "error" not in rpc(server, "tasks/cancel", {"taskId": mapped})
        assert wait_status(server, mapped, ("cancelled",))["status"] == "cancelled"
    upstream_id = mapped.split("+", 1)[1]
    assert rpc(upstream, "tasks/get", {"taskId": upstream_id})["result"]["status"] == "cancelled"


def test_a_task_id_the_caller_did_not_make_is_no_task_and_named(upstream: HttpServer) -> None:
    # One unfinished task per caller at most: a forged id must not take that place.
    with gateway(upstream, ServerOptions(max_stored_tasks_per_owner=1)) as server:
        for forgery in ("tt+tsk-forged", "tt+tsk-forged-2", "tt+tsk-forged-3"):
            forged = rpc(server, "tasks/get", {"taskId": forgery})["error"]
            assert forged["code"] == -32602
            assert "MCP server 'tt' does not know it" in forged["message"]
        created = rpc(server, "tools/call", {"name": "tt_build", "arguments": {"target": "g"}})
        assert created["result"]["taskId"].startswith("tt+tsk-"), created
        unknown = rpc(server, "tasks/get", {"taskId": "nope+tsk-1"})["error"]
        assert unknown["code"] == -32602
        assert "it is MCP server 'nope''s" in unknown["message"]
        # The upstream keeps working.
        open_gate("d")
        plain = rpc(
            server,
            "tools/call",
            {"name": "tt_build", "arguments": {"target": "d"}},
            caps(tasks=False),
        )
        assert plain["result"]["content"][0]["text"] == "d built"


def test_another_principals_task_is_unknown_even_after_a_restart(
    upstream: HttpServer, tmp_path: Path
) -> None:
    def options() -> ServerOptions:
        return ServerOptions(
            verify_token=lambda token: token in ("alice", "bob"),
            task_store=SqliteTaskStore(tmp_path / "tasks.db"),
        )

    with gateway(upstream, options()) as first:
        created = rpc(
            first, "tools/call", {"name": "tt_build", "arguments": {"target": "e"}}, token="alice"
        )
        mapped = created["result"]["taskId"]
        other = rpc(first, "tasks/get", {"taskId": mapped}, token="bob")["error"]
        assert other["code"] == -32602 and "belongs to another client" in other["message"]
    with gateway(upstream, options()) as second:
        other = rpc(second, "tasks/cancel", {"taskId": mapped}, token="bob")["error"]
        assert other["code"] == -32602
        assert (
            rpc(second, "tasks/get", {"taskId": mapped}, token="alice")["result"]["status"]
            == "working"
        )
        open_gate("e")
        done = wait_status(second, mapped, ("completed",), token="alice")
    assert result_text(done) == "e built"


def test_a_task_the_gateway_cannot_keep_is_refused_and_cancelled_upstream(
    upstream: HttpServer,
) -> None:
    with gateway(upstream, ServerOptions(max_stored_tasks_per_owner=1)) as server:
        first = rpc(server, "tools/call", {"name": "tt_build", "arguments": {"target": "h1"}})
        assert first["result"]["taskId"].startswith("tt+tsk-")
        # A second unfinished task is past the bound: refused, named, and the upstream's
        # task it would have been is cancelled (nobody could reach it).
        second = rpc(server, "tools/call", {"name": "tt_build", "arguments": {"target": "h2"}})
        assert second["error"]["code"] == -32603
        assert "server overloaded" in second["error"]["message"]
        # (Cancelled before its build ran, or while it ran: the upstream's task says so.)
        assert wait_until(lambda: UPSTREAM_TASKS.status_of("h2") == "cancelled")
        assert "h1" not in task_tools.CANCELLED  # the caller's own task goes on
        assert UPSTREAM_TASKS.status_of("h1") == "working"


class HeldForwards:
    """Holds each ``tasks/*`` the gateway forwards to upstream ``client`` until
    :attr:`release` is set, counting them: :attr:`now` held, at :attr:`most` at once,
    :attr:`all` in all (a slow upstream, as the gateway meets one)."""

    def __init__(self, client: Any) -> None:
        self.forward = client._forward_task
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.now = self.most = self.all = 0
        client._forward_task = self._held

    def _held(self, method: str, params: dict[str, Any], exchange: Any = None) -> Any:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.all += 1
        try:
            assert self.release.wait(60), "the test never released the upstream"
            return self.forward(method, params, exchange)
        finally:
            with self.lock:
                self.now -= 1


def test_a_slow_upstreams_tasks_get_holds_up_nothing_else_of_a_stdio_session(
    upstream: HttpServer,
) -> None:
    # A caller over stdio polls its task on an upstream that answers tasks/get slowly; the
    # same session's call to another upstream is answered meanwhile (the poll waits off
    # the thread that reads the session), a burst of polls reaches the slow upstream a
    # few at a time, and every poll is answered once it answers.
    from test_mcp_tasks import PipedTasksClient
    from toolnexus import Toolkit, tool
    from toolnexus.mcp._server._bridge import DETACHED_AT_ONCE

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def detached() -> int:
        return sum(t.name == "toolnexus-mcp-detached" for t in threading.enumerate())

    config = {"mcpServers": {"tt": {"url": upstream.url}}}
    with HttpServer(Toolkit([add]), port=0) as fast:
        fast.start()
        config["mcpServers"]["fast"] = {"url": fast.url}
        with McpSource(config) as source:
            source.connect()
            federate(source)
            client = PipedTasksClient(source.toolkit)
            held = None
            try:
                arguments = {"name": "tt_build", "arguments": {"target": "s"}}
                mapped = client.request(1, "tools/call", arguments)["result"]["taskId"]
                assert mapped.startswith("tt+tsk-")
                held = HeldForwards(source.client("tt"))
                polls = range(10, 22)
                for rid in polls:
                    client.send(rid, "tasks/get", {"taskId": mapped})
                assert wait_until(lambda: held is not None and held.now == DETACHED_AT_ONCE)
                arguments = {"name": "fast_add", "arguments": {"a": 2, "b": 3}}
                answered = client.request(99, "tools/call", arguments)
                assert answered["result"]["content"][0]["text"] == "5"
                assert not [note for note in client.notes if note.get("id") in polls]
                assert (held.now, held.all) == (DETACHED_AT_ONCE, DETACHED_AT_ONCE)
                assert detached() == DETACHED_AT_ONCE
                held.release.set()
                replies: dict[Any, dict[str, Any]] = {}
                while len(replies) < len(polls):  # in whatever order the upstream answers
                    message = client.messages.get(timeout=15)  # queue.Empty: a poll was lost
                    replies[message.get("id")] = message
                got = [replies[rid]["result"] for rid in polls]
                assert [g["taskId"] for g in got] == [mapped] * len(polls)
                assert {g["status"] for g in got} == {"working"}
                assert (held.most, held.all) == (DETACHED_AT_ONCE, len(polls))
                assert wait_until(lambda: detached() == 0)
            finally:
                if held is not None:
                    held.release.set()
                open_gate("s")
                client.close()


@contextlib.contextmanager
def stdio_poll(
    upstream: HttpServer, target: str, **options: Any
) -> Iterator[tuple[Any, str, HeldForwards]]:
    """A gateway in front of ``upstream`` served over stdio (``serve_stdio`` with
    ``options``) to a modern client, the client's task of building ``target`` made, and
    the gateway's ``tasks/*`` to the upstream held from then on: ``(client, task id,
    held)``. Everything is released and closed on the way out."""
    from test_mcp_tasks import PipedTasksClient

    with McpSource({"mcpServers": {"tt": {"url": upstream.url}}}) as source:
        source.connect()
        federate(source)
        client = PipedTasksClient(source.toolkit, **options)
        held = None
        try:
            arguments = {"name": "tt_build", "arguments": {"target": target}}
            mapped = client.request(1, "tools/call", arguments)["result"]["taskId"]
            held = HeldForwards(source.client("tt"))
            yield client, mapped, held
        finally:
            if held is not None:
                held.release.set()
            open_gate(target)
            client.close()


def test_a_tasks_get_read_just_before_stdin_closes_is_still_answered(
    upstream: HttpServer,
) -> None:
    # The stdio server's grace period at the end of its input covers a request answered
    # off the reading thread, as it covers a running call.
    with stdio_poll(upstream, "z", grace_ms=60_000) as (client, mapped, held):
        client.send(2, "tasks/get", {"taskId": mapped})
        assert wait_until(lambda: held.all == 1)
        client._to.close()  # the end of the server's input, the poll still waiting
        held.release.set()
        got = client.answer(2)["result"]
        assert (got["taskId"], got["status"]) == (mapped, "working")


def test_polls_waiting_on_a_slow_upstream_count_against_the_in_flight_byte_cap(
    upstream: HttpServer,
) -> None:
    # A poll that waits on its upstream holds its request's bytes, as a running call
    # does: past the cap one is refused at once, named; once answered, its bytes are free.
    with stdio_poll(upstream, "w", max_inflight_bytes=6_000) as (client, mapped, held):
        padded = {"taskId": mapped, "pad": "x" * 4_000}  # about 4.3 kB a line
        client.send(2, "tasks/get", padded)
        assert wait_until(lambda: held.all == 1)
        refused = client.request(3, "tasks/get", padded)["error"]
        assert refused["code"] == -32603
        assert refused["message"].startswith("server overloaded: ")
        assert "requests that wait on another server" in refused["message"]
        assert held.all == 1  # the refused poll never reached the upstream
        held.release.set()
        assert client.answer(2)["result"]["status"] == "working"
        again = client.request(4, "tasks/get", padded)["result"]
        assert (again["taskId"], again["status"]) == (mapped, "working")


def test_a_request_reusing_the_id_of_a_poll_in_flight_is_refused(upstream: HttpServer) -> None:
    # A poll that waits on its upstream off the reading thread keeps its id in flight, as
    # a running call does: a second request with that id is refused, and only the first
    # is answered under it.
    with stdio_poll(upstream, "r") as (client, mapped, held):
        client.send(2, "tasks/get", {"taskId": mapped})
        assert wait_until(lambda: held.all == 1)
        refused = client.request(2, "tasks/get", {"taskId": mapped})["error"]
        assert refused["code"] == -32600 and "id 2 is already in use" in refused["message"]
        assert held.all == 1  # the second never reached the upstream
        held.release.set()
        got = client.answer(2)["result"]
        assert (got["taskId"], got["status"]) == (mapped, "working")
        again = client.request(2, "tasks/get", {"taskId": mapped})["result"]  # free again
        assert (again["taskId"], held.all) == (mapped, 2)


def test_a_poll_its_client_cancelled_is_not_answered(upstream: HttpServer) -> None:
    # A cancel finds a poll that waits on its upstream: when the upstream answers, the
    # poll's answer is not sent (a cancelled request gets none), and its id is free.
    def detached() -> int:
        return sum(t.name == "toolnexus-mcp-detached" for t in threading.enumerate())

    with stdio_poll(upstream, "k") as (client, mapped, held):
        client.send(2, "tasks/get", {"taskId": mapped})
        assert wait_until(lambda: held.all == 1)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        client._to.write(json.dumps(cancel).encode() + b"\n")
        client._to.flush()
        assert "tools" in client.request(3, "tools/list", {})["result"]  # read past the cancel
        held.release.set()
        assert wait_until(lambda: detached() == 0)  # the upstream answered, and the poll ended
        answered = client.request(4, "tasks/get", {"taskId": mapped})["result"]
        assert answered["taskId"] == mapped
        assert not [message for message in client.notes if message.get("id") == 2]
        assert client.request(2, "tasks/get", {"taskId": mapped})["result"]["taskId"] == mapped


def test_a_forwarded_tasks_get_is_answered_through_the_asgi_app(upstream: HttpServer) -> None:
    # The ASGI app drains a request's answer on its event loop: one that a detached
    # thread files (the upstream's answer to a forwarded poll) reaches it too.
    import asyncio
    import json

    from test_mcp_asgi import request
    from test_mcp_tasks import tasks_meta
    from toolnexus.mcp import asgi_app

    async def post(app: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        meta = tasks_meta()
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        _, body = await request(app, message, accept=b"application/json")
        return dict(json.loads(body))

    with McpSource({"mcpServers": {"tt": {"url": upstream.url}}}) as source:
        source.connect()
        federate(source)
        app = asgi_app(source.toolkit, ServerOptions())
        held = HeldForwards(source.client("tt"))

        def asked() -> bool:
            return held.all == 1

        try:

            async def main() -> tuple[str, dict[str, Any]]:
                arguments = {"name": "tt_build", "arguments": {"target": "q"}}
                mapped = (await post(app, "tools/call", arguments))["result"]["taskId"]
                poll = asyncio.ensure_future(post(app, "tasks/get", {"taskId": mapped}))
                reached = asyncio.get_running_loop().run_in_executor(None, wait_until, asked)
                assert await reached, "the poll never reached the upstream"
                assert not poll.done()  # it waits on the upstream, off the loop
                held.release.set()
                return mapped, await asyncio.wait_for(poll, 60)

            mapped, got = asyncio.run(main())
        finally:
            held.release.set()
            open_gate("q")
            app.close()
    assert (got["result"]["taskId"], got["result"]["status"]) == (mapped, "working")
