"""The answer stores' contract, one suite every store passes: memory, sqlite, Postgres, Redis.

The Postgres and Redis cases run against real servers named by TOOLNEXUS_TEST_POSTGRES_URL
and TOOLNEXUS_TEST_REDIS_URL (``python tests/store_servers.py start DIR`` starts both from
wheels and prints them; so does ``.ci/run``); without them those cases skip, except under
TOOLNEXUS_REQUIRE_STORES=1, where a missing server or driver fails the run. The restart
tests also need TOOLNEXUS_TEST_*_RESTART, a command that restarts the server: run them
serially (not under -n), since other tests' connections see the restart too.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import pytest

from extras import server_url
from sqlite_counted import Counted
from store_faults import Lost
from store_workers import FAR, consume_together
from timing import wait_until
from toolnexus import (
    Answer,
    Host,
    Request,
    StoreUnavailableError,
    ToolContext,
    Toolkit,
    ToolResult,
    tool,
)
from toolnexus.stores import AnswerStore, open_store

REQUIRE = "TOOLNEXUS_REQUIRE_STORES"
SERVERS = {
    "postgres": ("TOOLNEXUS_TEST_POSTGRES_URL", "postgres", ("psycopg", "psycopg_pool")),
    "redis": ("TOOLNEXUS_TEST_REDIS_URL", "redis", ("redis",)),
}
KINDS = ["memory", "sqlite", "postgres", "redis"]
SHARED = ["sqlite", "postgres", "redis"]  # two stores opened on one URL see each other's keys


def url_of(kind: str, tmp_path) -> str:
    if kind == "memory":
        return "memory:"
    if kind == "sqlite":
        return f"sqlite:{tmp_path / 'used.db'}"
    env, extra, modules = SERVERS[kind]
    return server_url(env, REQUIRE, extra, *modules)


def close(store: object) -> None:
    closer = getattr(store, "close", None)
    if closer is not None:
        closer()


@pytest.fixture(params=KINDS)
def url(request, tmp_path) -> str:
    return url_of(request.param, tmp_path)


@pytest.fixture(params=SHARED)
def shared_url(request, tmp_path) -> str:
    return url_of(request.param, tmp_path)


@pytest.fixture(params=list(SERVERS))
def server(request) -> str:
    return request.param


@pytest.fixture
def store(url) -> Iterator[AnswerStore]:
    opened = open_store(url)
    yield opened
    close(opened)


def new_key(label: str = "") -> str:
    """A key no earlier run used (the servers outlive a test run)."""
    return f"{uuid.uuid4().hex}{label}"[:64]


# --------------------------------------------------------------------------- the contract


def test_the_first_consume_wins_and_a_replay_is_refused(store):
    key, other = new_key(), new_key()
    assert isinstance(store, AnswerStore)
    assert store.consume(key, FAR) is True
    assert store.consume(key, FAR) is False
    assert store.consume(other, FAR) is True
    assert store.consume(key, FAR) is False


def test_a_released_key_is_consumed_anew_and_only_that_key(store):
    key, other = new_key(), new_key()
    assert store.consume(key, FAR) is True and store.consume(other, FAR) is True
    store.release(key)
    assert store.consume(key, FAR) is True
    assert store.consume(key, FAR) is False
    assert store.consume(other, FAR) is False
    store.release(new_key())  # a key never consumed: nothing to forget, no error


def test_keys_of_up_to_64_ascii_characters_are_kept_apart(store):
    printable = "".join(chr(c) for c in range(32, 127))  # quotes, %, _, \\, space, ...
    stem = new_key()[:32]
    keys = [stem + printable[i : i + 31] + printable[-1 - i] for i in range(0, 64, 2)]
    keys += [new_key()[:6], stem + "'; DROP TABLE toolnexus_used_answers; --"[:32]]
    assert all(0 < len(k) <= 64 and k.isascii() for k in keys) and len(set(keys)) == len(keys)
    assert [store.consume(k, FAR) for k in keys] == [True] * len(keys)
    assert [store.consume(k, FAR) for k in keys] == [False] * len(keys)


def test_a_key_is_forgotten_once_it_expires_and_not_before(url):
    key = new_key()
    if url.startswith("redis"):
        # Redis forgets by the key's time to live, on the server's clock: a real short one.
        store = open_store(url)
        expires_at = time.time() + 0.3
        assert store.consume(key, expires_at) is True
        granted_at: list[float] = []

        def granted_again() -> bool:
            if store.consume(key, FAR):
                granted_at.append(time.time())
                return True
            return False

        assert wait_until(granted_again)
        assert granted_at[0] >= expires_at
    else:
        # The others decide on their own clock: a fake one.
        now = [1000.0]
        store = with_clock(url, lambda: now[0])
        assert store.consume(key, 1010.0) is True
        now[0] = 1009.9
        assert store.consume(key, 2000.0) is False
        now[0] = 1010.0
        assert store.consume(key, 2000.0) is True  # forgotten at its expiry, taken anew
    assert store.consume(key, FAR) is False
    close(store)


def with_clock(url: str, clock: Callable[[], float]) -> AnswerStore:
    """The store ``url`` names, made with ``clock``."""
    from toolnexus.stores import MemoryAnswerStore, PostgresAnswerStore, SqliteAnswerStore

    if url == "memory:":
        return MemoryAnswerStore(clock=clock)
    if url.startswith("sqlite:"):
        return SqliteAnswerStore(url.removeprefix("sqlite:"), clock=clock)
    return PostgresAnswerStore(url, clock=clock)


def test_two_stores_on_one_url_share_their_keys(shared_url):
    one, two = open_store(shared_url), open_store(shared_url)
    try:
        key = new_key()
        assert one.consume(key, FAR) is True
        assert two.consume(key, FAR) is False
    finally:
        close(one)
        close(two)


@pytest.mark.slow  # starts 8 interpreters
def test_1000_concurrent_consumes_of_one_key_from_8_processes_exactly_one_wins(url):
    key = new_key()
    if url == "memory:":
        # A memory store lives in one process: its 8 contenders are threads.
        store = open_store(url)
        start = threading.Barrier(8)

        def contend(_: int) -> int:
            start.wait()
            return sum(store.consume(key, FAR) for _ in range(125))

        with ThreadPoolExecutor(8) as pool:
            assert sum(pool.map(contend, range(8))) == 1
        return
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(8)
    results = context.Queue()
    processes = [
        context.Process(target=consume_together, args=(url, key, 125, start, results))
        for _ in range(8)
    ]
    for process in processes:
        process.start()
    wins = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert sum(wins) == 1


# --------------------------------------------------------------------------- with a host


@tool
def confirm(what: str, ctx: ToolContext) -> ToolResult:
    """Do ``what`` once someone approves."""
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", f"{what}?"))
    return ToolResult.ok(f"confirmed {what}")


def test_a_host_on_a_shared_store_refuses_a_replay_from_another_host(shared_url):
    key = "store-test-key-0123456789abcdef"
    toolkit = Toolkit([confirm])
    first = open_store(shared_url)
    with Host(toolkit, secret=key, answer_store=first) as asker:
        pending = asker.call("confirm", {"what": "deploy"})
    close(first)
    request = ToolResult.pending_of(pending)
    assert request is not None
    results = []
    for _ in range(2):
        store = open_store(shared_url)
        with Host(toolkit, secret=key, answer_store=store) as fresh:
            results.append(
                fresh.resume(
                    "confirm", {"what": "deploy"}, pending.to_json(), Answer.accept(request)
                )
            )
        close(store)
    assert results[0].output == "confirmed deploy"
    assert "already answered" in results[1].output


# --------------------------------------------------------------------------- servers


def test_a_server_that_is_down_gives_a_clear_error_naming_the_url_without_its_password(server):
    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    parts = urlsplit(url)
    password = parts.password
    assert password  # the test servers ask for one
    nobody_there = urlunsplit(
        parts._replace(netloc=f"{parts.netloc.rpartition(':')[0]}:{free_port()}")
    )
    with pytest.raises(StoreUnavailableError) as caught:
        open_store(nobody_there)
    message = str(caught.value)
    assert password not in message and ":***@" in message
    assert "refused" in message.lower() and "is the server running" in message
    assert caught.value.store in message


def test_the_command_line_names_a_store_that_is_down_without_its_password(server, tmp_path):
    from cli_helpers import run

    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    parts = urlsplit(url)
    host = parts.netloc.rpartition(":")[0]
    down = urlunsplit(parts._replace(netloc=f"{host}:{free_port()}"))
    out = run("call", "toolnexus.demo:toolkit", "crunch", "steps=1", "--store", down)
    assert out.returncode == 2
    assert out.stderr.startswith("toolnexus call: error: --store: answer store ")
    assert "refused" in out.stderr.lower() and parts.password not in out.stderr


def test_a_wrong_password_is_a_clear_error_that_does_not_show_it(server):
    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    wrong = url.replace(f":{urlsplit(url).password}@", ":not-the-password@", 1)
    with pytest.raises(StoreUnavailableError, match="password") as caught:
        open_store(wrong)
    assert "not-the-password" not in str(caught.value)


def test_a_store_whose_server_goes_down_refuses_clearly_and_recovers_when_it_is_back(server):
    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    parts = urlsplit(url)
    relay = Relay(parts.hostname or "127.0.0.1", parts.port or 0)
    try:
        through = urlunsplit(
            parts._replace(netloc=f"{parts.netloc.rpartition('@')[0]}@127.0.0.1:{relay.port}")
        )
        kind = {"postgres": "PostgresAnswerStore", "redis": "RedisAnswerStore"}[server]
        import toolnexus.stores

        store = getattr(toolnexus.stores, kind)(through, timeout_ms=1000)
        before = new_key()
        assert store.consume(before, FAR) is True
        relay.cut()
        relay.mend()  # a blink: every pooled connection is broken, the server is back
        assert store.consume(before, FAR) is False  # retried on a fresh one: not ours
        relay.cut()
        with pytest.raises(StoreUnavailableError, match="refused") as caught:
            store.consume(new_key(), FAR)
        assert parts.password not in str(caught.value)
        relay.mend()
        after = new_key()
        assert store.consume(after, FAR) is True  # a fresh connection, with no restart of ours
        assert store.consume(after, FAR) is False
        assert store.consume(before, FAR) is False
        close(store)
    finally:
        relay.cut()


def test_a_restart_of_the_server_mid_run_grants_no_answer_twice_and_later_consumes_work(server):
    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    restart = server_url(env.replace("_URL", "_RESTART"), REQUIRE, extra)
    store = open_store(url)
    before = [new_key("b") for _ in range(20)]
    assert [store.consume(k, FAR) for k in before] == [True] * 20
    outcomes: dict[str, list[object]] = {}
    lock = threading.Lock()
    stop = threading.Event()
    restarted = threading.Event()
    after_restart = [0]

    def consume(key: str) -> object:
        try:
            return store.consume(key, FAR)
        except StoreUnavailableError as exc:
            return exc

    def churn(worker: int) -> None:
        n = 0
        while not stop.is_set():
            key = new_key(f"w{worker}n{n}")
            first, replay, old = consume(key), consume(key), consume(before[n % 20])
            with lock:
                outcomes[key] = [first, replay]
                outcomes.setdefault(before[n % 20], []).append(old)
                if restarted.is_set() and first is True:
                    after_restart[0] += 1
            n += 1

    workers = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
    for worker in workers:
        worker.start()
    try:
        assert wait_until(lambda: len(outcomes) > 40)  # the churn is under way
        subprocess.run(shlex.split(restart), check=True, timeout=120)
        restarted.set()
        assert wait_until(lambda: after_restart[0] >= 40)  # consumes work again, unaided
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=60)
    fresh = [new_key("a") for _ in range(20)]
    assert [store.consume(k, FAR) for k in fresh] == [True] * 20
    assert [store.consume(k, FAR) for k in fresh + before] == [False] * 40
    close(store)
    for key, seen in outcomes.items():
        assert sum(result is True for result in seen) <= (0 if key in before else 1), (key, seen)
        assert all(isinstance(r, (bool, StoreUnavailableError)) for r in seen)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_store_opened_before_a_fork_works_in_the_child_and_the_parent(server):
    env, extra, modules = SERVERS[server]
    url = server_url(env, REQUIRE, extra, *modules)
    store = open_store(url)
    assert store.consume(new_key(), FAR) is True
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    key = new_key("child")
    child = context.Process(
        target=lambda: results.put((store.consume(key, FAR), store.consume(key, FAR)))
    )
    child.start()
    assert results.get(timeout=60) == (True, False)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert store.consume(key, FAR) is False  # the child's consume counts here too
    fresh = new_key()
    assert store.consume(fresh, FAR) is True  # and the parent's connections still work
    close(store)


def test_a_consume_whose_reply_was_lost_is_retried_and_counts_once(server):
    # The statement reached the server and took the key, then the connection broke before
    # the reply came back: the retry must see the key is its own (granted, once).
    env, extra, modules = SERVERS[server]
    store = open_store(server_url(env, REQUIRE, extra, *modules))
    lost = Lost(store)
    key = new_key()
    assert store.consume(key, FAR) is True
    assert lost.times == 1  # the reply of the first attempt was indeed lost
    assert store.consume(key, FAR) is False
    other = new_key()
    assert store.consume(other, FAR) is True and store.consume(other, FAR) is False
    close(store)


def test_a_server_store_refuses_keys_the_contract_does_not_allow(server):
    env, extra, modules = SERVERS[server]
    store = open_store(server_url(env, REQUIRE, extra, *modules))
    for bad in ("", "k" * 65, "clé"):
        with pytest.raises(ValueError, match="1 to 64 ASCII characters"):
            store.consume(bad, FAR)
    close(store)


# --------------------------------------------------------------------------- one URL


def test_open_store_reads_each_embedded_scheme(tmp_path, monkeypatch):
    from toolnexus.stores import MemoryAnswerStore, SqliteAnswerStore

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert isinstance(open_store("memory:"), MemoryAnswerStore)
    assert isinstance(open_store(" MEMORY:// "), MemoryAnswerStore)
    for url, file in (
        ("sqlite:rel.db", tmp_path / "rel.db"),
        (f"sqlite:{tmp_path}/abs.db", tmp_path / "abs.db"),
        (f"sqlite://{tmp_path}/url.db", tmp_path / "url.db"),
        (f"sqlite://localhost{tmp_path}/host.db", tmp_path / "host.db"),
        ("sqlite:~/home.db", tmp_path / "home.db"),
    ):
        store = open_store(url)
        assert isinstance(store, SqliteAnswerStore) and file.exists(), url
        assert store.consume("k", FAR) and not open_store(url).consume("k", FAR)


@pytest.mark.parametrize(
    ("url", "error", "message"),
    [
        (b"memory:", TypeError, "a store URL must be a str, got bytes"),
        ("used.db", ValueError, "'used.db' is not a store URL; use one of memory:, sqlite:PATH"),
        ("memory:x", ValueError, "write just 'memory:'"),
        ("sqlite:", ValueError, "'sqlite:' names no file; write sqlite:PATH"),
        ("sqlite://db.internal/x.db", ValueError, "an SQLite file is on this machine"),
        (
            "mysql://app:hunter2@db/app",
            ValueError,
            "unknown store scheme 'mysql' in 'mysql://app:***@db/app'",
        ),
    ],
)
def test_a_url_open_store_cannot_read_says_what_to_write(url, error, message):
    with pytest.raises(error, match=re.escape(message)) as caught:
        open_store(url)
    assert "hunter2" not in str(caught.value)


def test_a_file_sqlite_cannot_open_is_a_store_unavailable_error(tmp_path):
    with pytest.raises(StoreUnavailableError, match="in a folder that exists") as caught:
        open_store(f"sqlite:{tmp_path}/no/such/folder/used.db")
    assert caught.value.store == f"sqlite:{tmp_path}/no/such/folder/used.db"


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [("postgresql://db/app", "psycopg", "postgres"), ("redis://cache:6379/0", "redis", "redis")],
)
def test_a_missing_driver_names_the_extra_that_installs_it(url, module, extra, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # import fails, as when not installed
    # The extra's own packages: the distribution itself is not on the package index yet.
    with pytest.raises(ImportError, match=re.escape(f"(the '{extra}' extra)")):
        open_store(url)


# --------------------------------------------------------------------------- sqlite's connections


def test_a_sqlite_store_keeps_one_connection_per_thread(tmp_path, monkeypatch):
    from toolnexus.stores import SqliteAnswerStore

    counted = Counted(monkeypatch)
    store = SqliteAnswerStore(tmp_path / "used.db")
    assert [store.consume(f"k{i}", FAR) for i in range(50)] == [True] * 50
    assert counted.connections == 1  # the one that made the table, kept
    other = ThreadPoolExecutor(1)
    assert other.submit(lambda: [store.consume(f"t{i}", FAR) for i in range(50)]).result()
    assert counted.connections == 2  # the other thread's own
    other.shutdown()
    store.close()
    assert store.consume("after-close", FAR) is True and counted.connections == 3


def test_a_sqlite_replay_is_refused_by_one_statement_and_a_new_key_taken_by_one(
    tmp_path, monkeypatch
):
    from toolnexus.stores import SqliteAnswerStore

    counted = Counted(monkeypatch)
    store = SqliteAnswerStore(tmp_path / "used.db")
    store.consume("warm", FAR)  # the first consume also deletes expired rows
    counted.statements.clear()
    assert store.consume("key", FAR) is True
    assert len(counted.statements) == 1, counted.statements
    counted.statements.clear()
    assert store.consume("key", FAR) is False
    assert len(counted.statements) == 1, counted.statements
    store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_sqlite_store_used_before_a_fork_opens_its_own_connection_in_the_child(tmp_path):
    from toolnexus.stores import SqliteAnswerStore

    store = SqliteAnswerStore(tmp_path / "used.db")
    assert store.consume("before", FAR) is True  # the parent's connection, in use
    inherited = store._connections._local.db
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, never return into pytest
        code = 1
        try:
            seen = (store.consume("child", FAR), store.consume("child", FAR))
            kept = store._connections
            fresh = kept._local.db is not inherited and kept._stale == [inherited]
            os.write(write, repr((seen, fresh)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    assert os.waitpid(pid, 0)[1] == 0
    assert answer == "((True, False), True)"
    assert store._connections._local.db is inherited  # the parent goes on with its own connection
    assert store.consume("child", FAR) is False  # the child's consume counts here too
    assert store.consume("after", FAR) is True
    store.close()


@pytest.mark.parametrize("name", ["_open", "_common", "_answers", "_sqlite"])
def test_the_stores_module_examples_run(name):
    import importlib

    from doctests import run_doctests

    failed, attempted = run_doctests(importlib.import_module(f"toolnexus.stores.{name}"))
    assert attempted > 0 and failed == 0


# --------------------------------------------------------------------------- helpers


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Relay:
    """A TCP relay on 127.0.0.1 to a server. ``cut()`` drops every connection and refuses
    new ones (to a store, the server went down); ``mend()`` accepts again on the same port."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.mend()

    def mend(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        with self._lock:
            doomed, self._sockets = self._sockets, []
        if listener is not None:
            doomed.append(listener)
        for sock in doomed:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept or recv
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
