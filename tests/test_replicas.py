"""Three `toolnexus serve --http` replicas that share a key and an answer store, and nothing
else, behind a small round-robin TCP proxy: they behave as one server for modern-era
clients, and a replica killed or a database restarted does what docs/scale-out.md says.

The replicas are separate processes (``tests/replica_tools.py`` is what they serve); the
proxy sends each new connection to the next replica in turn, skipping one that refuses the
connection, and records which one it chose. The store is a SQLite file (replicas on one
machine), PostgreSQL or Redis: the servers are named as in tests/test_stores.py
(TOOLNEXUS_TEST_POSTGRES_URL, TOOLNEXUS_TEST_REDIS_URL; without them those cases skip, or
fail under TOOLNEXUS_REQUIRE_STORES=1). The restart test also needs
TOOLNEXUS_TEST_*_RESTART: run it serially, as .ci/run does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import ROOT, child_env
from extras import server_url
from http_helpers import post, sse_events
from timing import wait_until

REQUIRE = "TOOLNEXUS_REQUIRE_STORES"
SERVERS = {
    "postgres": ("TOOLNEXUS_TEST_POSTGRES_URL", "postgres", ("psycopg", "psycopg_pool")),
    "redis": ("TOOLNEXUS_TEST_REDIS_URL", "redis", ("redis",)),
}
TESTS = Path(__file__).resolve().parent
MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {},
        "extensions": {TASKS: {}},
    },
}
UNAVAILABLE = "the answer store is unavailable"

pytestmark = pytest.mark.slow  # three interpreters per test, and real servers


# --------------------------------------------------------------------------- the proxy


class RoundRobinProxy:
    """A TCP proxy on 127.0.0.1: each new connection goes to the next backend in turn (a
    backend that refuses it is skipped); bytes are copied both ways until either side
    closes. ``served`` lists the backend index each connection went to."""

    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self.backends = backends
        self.served: list[int] = []
        self._next = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with self._lock:
            first = self._next
            self._next = (first + 1) % len(self.backends)
        upstream = None
        for offset in range(len(self.backends)):
            index = (first + offset) % len(self.backends)
            try:
                upstream = socket.create_connection(self.backends[index], timeout=5)
                break
            except OSError:
                continue  # that replica is down: the next one
        if upstream is None:
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            self.served.append(index)
            self._next = (index + 1) % len(self.backends)
            self._sockets += [client, upstream]
        copier = threading.Thread(target=self._copy, args=(upstream, client), daemon=True)
        copier.start()
        self._copy(client, upstream)
        copier.join()
        client.close()
        upstream.close()

    @staticmethod
    def _copy(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)  # the other side learns this one closed

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for each in self._sockets:
                with contextlib.suppress(OSError):
                    each.close()


# --------------------------------------------------------------------------- the replicas


class Replicas:
    """Three `serve --http` processes with one key and one store URL, behind a proxy."""

    def __init__(self, store_url: str, folder: Path) -> None:
        self.runs = folder / "runs"
        self.runs.mkdir()
        key_file = folder / "key"
        key_file.write_text(uuid.uuid4().hex + uuid.uuid4().hex + "\n")
        env = child_env()
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env["PYTHONPATH"]])
        env["TOOLNEXUS_TEST_RUNS"] = str(self.runs)
        env.pop("TOOLNEXUS_STORE", None)
        self.logs = [folder / f"replica-{n}.log" for n in (1, 2, 3)]
        self.processes: list[subprocess.Popen[bytes]] = []
        for log in self.logs:
            with open(log, "wb") as sink:
                self.processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "toolnexus",
                            "serve",
                            "replica_tools:toolkit",
                            "--http",
                            "0",
                            "--secret-file",
                            str(key_file),
                            "--store",
                            store_url,
                        ],
                        cwd=ROOT,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=sink,
                    )
                )
        backends = [self._address(n) for n in range(3)]
        self.pids = [p.pid for p in self.processes]
        self.proxy = RoundRobinProxy(backends)

    def _address(self, n: int) -> tuple[str, int]:
        found: list[tuple[str, int]] = []

        def listening() -> bool:
            assert self.processes[n].poll() is None, self.logs[n].read_text()
            text = self.logs[n].read_text()
            marker = "MCP over HTTP at http://"
            if marker not in text:
                return False
            host, _, port = text.split(marker)[1].split("/mcp")[0].rpartition(":")
            found.append((host, int(port)))
            return True

        assert wait_until(listening), self.logs[n].read_text()
        return found[0]

    def kill(self, n: int) -> None:
        """SIGKILL replica ``n`` (0-based) and wait until it is gone."""
        self.processes[n].send_signal(signal.SIGKILL)
        self.processes[n].wait(30)

    def close(self) -> None:
        self.proxy.close()
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:  # pragma: no cover - a hung replica
                process.kill()
                process.wait(30)

    # ----------------------------------------------------------------- a client

    def post(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one JSON-RPC message on a connection of its own (so the proxy picks the next
        replica) and return the reply's ``result`` (or ``error``) object. Raises
        ``http.client.RemoteDisconnected`` (or another ``OSError``) when the connection
        closes with no reply."""
        extra = {"Connection": "close", **message.pop("headers", {})}
        status, headers, body = post(self.proxy, message, extra)
        if headers.get("content-type") == "text/event-stream":
            reply = sse_events(body)[-1]
        else:
            reply = json.loads(body) if body else {}
        return reply.get("result", reply.get("error", {"status": status}))

    def call(self, name: str, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
        """A modern-era ``tools/call`` (``params`` adds requestState, inputResponses)."""
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META, **params},
        }
        return self.post(message)

    def task(self, method: str, task_id: str, **params: Any) -> dict[str, Any]:
        """A modern-era ``tasks/*`` request about ``task_id``."""
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {"taskId": task_id, "_meta": META, **params},
        }
        return self.post(message)

    def answer(self, name: str, arguments: dict[str, Any], asked: dict[str, Any], env: str):
        """Retry ``asked`` (an input_required result) with the answer ``env``."""
        (request_id,) = asked["inputRequests"]
        return self.call(
            name,
            arguments,
            requestState=asked["requestState"],
            inputResponses={request_id: {"action": "accept", "content": {"env": env}}},
        )

    def send_in_background(
        self, send: Callable[[], dict[str, Any]]
    ) -> Callable[[], dict[str, Any] | OSError]:
        """Start ``send()`` on a thread; the returned function waits for its reply, or the
        ``OSError`` it met (a connection closed with no reply)."""
        outcome: list[dict[str, Any] | OSError] = []

        def run() -> None:
            try:
                outcome.append(send())
            except OSError as exc:  # http.client.RemoteDisconnected, a reset connection
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()

        def join() -> dict[str, Any] | OSError:
            thread.join(60)
            assert outcome, "no reply and no error within 60 s"
            return outcome[0]

        return join

    def ran(self, release: str) -> list[str]:
        """The runs of ``deploy(release)`` that finished with an answer."""
        return sorted(p.name for p in self.runs.glob(f"ran-{release}-*"))


def text_of(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result.get("content", []))


def url_of(kind: str, tmp_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:{tmp_path / 'used.db'}"
    env, extra, modules = SERVERS[kind]
    return server_url(env, REQUIRE, extra, *modules)


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def replicas(request, tmp_path: Path) -> Iterator[Replicas]:
    running = Replicas(url_of(request.param, tmp_path), tmp_path)
    try:
        yield running
    finally:
        running.close()


# --------------------------------------------------------------------------- one server


def test_a_question_asked_on_one_replica_is_answered_on_another_and_refused_on_a_third(
    replicas: Replicas,
) -> None:
    args = {"release": "v1"}
    asked = replicas.call("deploy", args)
    assert asked["resultType"] == "input_required"
    done = replicas.answer("deploy", args, asked, "prod")
    assert text_of(done) == f"v1 deployed to prod by {replicas.pids[1]}"
    replay = replicas.answer("deploy", args, asked, "staging")
    assert replay["isError"] is True
    assert text_of(replay).startswith("already answered: this requestState")
    assert replicas.proxy.served == [0, 1, 2]  # asked on 1, answered on 2, replayed on 3
    assert len(replicas.ran("v1")) == 1


def test_a_legacy_session_lives_on_the_replica_that_opened_it(replicas: Replicas) -> None:
    # Why docs/scale-out.md says to route legacy-era clients by Mcp-Session-Id.
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    _, headers, _ = post(replicas.proxy, init)
    session = headers.get("mcp-session-id")
    assert session
    listing = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "headers": {"Mcp-Session-Id": session},
    }
    unknown = replicas.post(listing)  # on another replica
    assert unknown["message"].startswith("session not found")
    assert replicas.proxy.served == [0, 1]


def test_a_task_created_on_one_replica_is_polled_on_another_and_fetched_on_a_third(
    replicas: Replicas,
) -> None:
    created = replicas.call("long_job", {"label": "t"})  # replica 1 runs it
    assert created["resultType"] == "task" and created["status"] == "working"
    task_id = created["taskId"]
    assert replicas.task("tasks/get", task_id)["status"] == "working"  # replica 2
    (replicas.runs / "go-t").touch()
    fetched: list[dict[str, Any]] = []

    def completed() -> bool:
        fetched.append(replicas.task("tasks/get", task_id))
        return fetched[-1]["status"] == "completed"

    assert wait_until(completed)
    assert fetched[-1]["result"]["content"][0]["text"] == f"t done by {replicas.pids[0]}"
    assert {0, 1, 2} <= set(replicas.proxy.served)  # polled and fetched elsewhere too


def test_a_task_cancelled_on_another_replica_stops_its_call_where_it_runs(
    replicas: Replicas,
) -> None:
    created = replicas.call("long_job", {"label": "c"})  # replica 1 runs it
    task_id = created["taskId"]
    assert replicas.task("tasks/cancel", task_id)["resultType"] == "complete"  # replica 2
    got = replicas.task("tasks/get", task_id)  # replica 3
    assert got["status"] == "cancelled"
    # The call itself stops on replica 1, which learns of the cancel from the store.
    assert wait_until((replicas.runs / f"cancelled-c-{replicas.pids[0]}").exists)
    assert replicas.task("tasks/get", task_id)["status"] == "cancelled"
    assert replicas.proxy.served[:3] == [0, 1, 2]


# --------------------------------------------------------------------------- failures


def test_a_replica_killed_mid_call_loses_that_call_and_the_others_serve_on(
    replicas: Replicas,
) -> None:
    # A question asked on replica 1 lives with its client, not with the replica.
    question = replicas.call("deploy", {"release": "v3"})
    assert question["resultType"] == "input_required"
    replicas.call("whoami", {})  # replica 2
    replicas.call("whoami", {})  # replica 3

    # A plain call: killed with its replica (1), its client sees the connection close with
    # no reply; sent again, another replica (2) runs it.
    lost = replicas.send_in_background(lambda: replicas.call("hold", {"label": "w"}))
    assert wait_until((replicas.runs / f"started-w-{replicas.pids[0]}").exists)
    replicas.kill(0)
    assert isinstance(lost(), OSError)
    (replicas.runs / "go-w").touch()
    assert text_of(replicas.call("hold", {"label": "w"})) == f"w held by {replicas.pids[1]}"

    # A resumed call: its answer was used up when the tool started, so after its replica
    # (2) is killed, the same answer is refused on any replica; the call did not finish.
    args = {"release": "v2", "hold": True}
    asked = replicas.call("deploy", args)  # replica 3
    lost = replicas.send_in_background(lambda: replicas.answer("deploy", args, asked, "prod"))
    assert wait_until((replicas.runs / f"started-v2-{replicas.pids[1]}").exists)
    replicas.kill(1)
    assert isinstance(lost(), OSError)
    (replicas.runs / "go-v2").touch()
    again = replicas.answer("deploy", args, asked, "prod")
    assert text_of(again).startswith("already answered")
    assert replicas.ran("v2") == []
    # Asked anew, it is answered by the replica still up, once.
    fresh = replicas.call("deploy", args)
    done = replicas.answer("deploy", args, fresh, "prod")
    assert text_of(done) == f"v2 deployed to prod by {replicas.pids[2]}"
    assert len(replicas.ran("v2")) == 1
    # The question replica 1 asked before it was killed is answered by replica 3.
    done = replicas.answer("deploy", {"release": "v3"}, question, "prod")
    assert text_of(done) == f"v3 deployed to prod by {replicas.pids[2]}"
    # The proxy skipped each replica once it was down.
    assert replicas.proxy.served == [0, 1, 2, 0, 1, 2, 1, 2, 2, 2, 2]


@pytest.fixture(params=list(SERVERS))
def server_replicas(request, tmp_path: Path) -> Iterator[tuple[Replicas, str]]:
    env, extra, _ = SERVERS[request.param]
    url = url_of(request.param, tmp_path)
    # as the URL: skipped when unset, a failure under TOOLNEXUS_REQUIRE_STORES=1
    restart = server_url(env.replace("_URL", "_RESTART"), REQUIRE, extra)
    running = Replicas(url, tmp_path)
    try:
        yield running, restart
    finally:
        running.close()


def test_the_database_restarted_mid_run_calls_after_it_work_and_none_is_answered_twice(
    server_replicas: tuple[Replicas, str],
) -> None:
    replicas, restart = server_replicas
    releases = [f"r{i}" for i in range(12)]
    answered: list[tuple[str, dict[str, Any]]] = []
    halfway = threading.Event()
    problems: list[str] = []

    def answer_until_the_store_answers(args: dict[str, Any], asked: dict[str, Any]) -> str:
        # A resume the store could not check was not used up: send it again, later.
        while True:
            text = text_of(replicas.answer("deploy", args, asked, "prod"))
            if UNAVAILABLE not in text:
                return text
            threading.Event().wait(0.05)

    def client() -> None:
        for n, release in enumerate(releases):
            if n == len(releases) // 3:
                halfway.set()
            args = {"release": release}
            asked = replicas.call("deploy", args)
            done = answer_until_the_store_answers(args, asked)
            if not done.startswith(f"{release} deployed to prod"):
                problems.append(f"{release}: {done}")
            answered.append((release, asked))
            replay = answer_until_the_store_answers(args, asked)
            if not replay.startswith("already answered"):
                problems.append(f"{release} replayed: {replay}")
        halfway.set()

    worker = threading.Thread(target=client)
    worker.start()
    assert halfway.wait(120)
    subprocess.run(shlex.split(restart), check=True, timeout=120)
    worker.join(300)
    assert not worker.is_alive()
    assert problems == []
    # Every answer ran its call once, and stays used after the restart, on every replica.
    assert [len(replicas.ran(r)) for r in releases] == [1] * len(releases)
    for release, asked in answered[:3]:
        replay = replicas.answer("deploy", {"release": release}, asked, "prod")
        assert text_of(replay).startswith("already answered"), text_of(replay)
