"""Ctrl-C during `toolnexus call`: SIGINT is sent to the child once it is known to be
running (it says so on stderr); the call's token is cancelled, the cancelled result is
printed and the exit code is 130."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cli_helpers import child_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")

ROOT = Path(__file__).resolve().parent.parent
SLOW = str(ROOT / "examples" / "slow.py")
DEMO = "toolnexus.demo:toolkit"


class Child:
    """A `python -m toolnexus` child whose stderr is read line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolnexus", *args],
            cwd=ROOT,
            env=child_env(),
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.out: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        # stdout on a thread too: a child that never exits fails the test, never hangs it
        self.out_reader = threading.Thread(target=self._read_out, daemon=True)
        self.out_reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line)
        self.lines.put("")  # end of stream

    def _read_out(self) -> None:
        assert self.process.stdout is not None
        self.out.append(self.process.stdout.read())

    def wait_for_line(self, text: str, timeout: float = 20.0) -> None:
        """Block until a stderr line contains ``text`` (the upper bound is generous)."""
        while True:
            line = self.lines.get(timeout=timeout)
            self.seen.append(line)
            if not line:
                raise AssertionError(f"stderr ended before {text!r}: {''.join(self.seen)}")
            if text in line:
                return

    def finish(self, timeout: float = 20.0) -> tuple[int, str, str]:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)
            raise AssertionError(f"the child did not exit: {''.join(self.seen)}") from None
        self.out_reader.join(timeout)
        self.reader.join(timeout)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code, "".join(self.out), "".join(self.seen)


def test_ctrl_c_cancels_the_running_call_prints_its_cancelled_result_and_exits_130():
    child = Child("call", SLOW, "count", "to=100000")
    child.wait_for_line("count: started")
    child.process.send_signal(signal.SIGINT)
    code, stdout, stderr = child.finish()
    assert code == 130, stderr
    # The tool's own cancelled result, not a host stand-in.
    assert stdout.startswith("cancelled after "), stdout
    assert "cancelling… (Ctrl-C again to exit at once)" in stderr
    assert "Traceback" not in stderr
    assert "KeyboardInterrupt" not in stderr


def test_ctrl_c_returns_at_once_even_when_the_tool_ignores_its_token():
    child = Child("call", SLOW, "stubborn", "seconds=60", "--json")
    child.wait_for_line("stubborn: started")
    child.process.send_signal(signal.SIGINT)
    code, stdout, stderr = child.finish(timeout=20.0)
    assert code == 130, stderr
    assert '"isError":true' in stdout
    assert '"output":"cancelled' in stdout


def test_ctrl_c_at_a_prompt_cancels_the_call_and_exits_130():
    child = Child("call", DEMO, "deploy")
    child.wait_for_line("? Which environment?")
    child.process.send_signal(signal.SIGINT)
    code, stdout, stderr = child.finish()
    assert code == 130, stderr
    assert "deployed" not in stdout
    assert "cancelling…" in stderr
    assert "Traceback" not in stderr


def test_a_second_ctrl_c_exits_130_at_once():
    child = Child("call", SLOW, "count", "to=100000")
    child.wait_for_line("count: started")
    child.process.send_signal(signal.SIGINT)
    child.process.send_signal(signal.SIGINT)
    code, _stdout, stderr = child.finish()
    assert code == 130, stderr
    assert "Traceback" not in stderr


@pytest.mark.slow  # twelve interpreters, one after another: the race shows in few runs
def test_ctrl_c_after_the_result_is_printed_never_kills_the_process_by_the_signal():
    # The window at the very end: the result is on stdout, the interpreter is exiting.
    # Before, 2 in 60 such runs (33 in 40 sent right after the line) died by SIGINT (-2).
    codes = []
    for run in range(12):
        child = subprocess.Popen(
            [sys.executable, "-m", "toolnexus", "call", DEMO, "crunch", "steps=1"],
            cwd=ROOT,
            env=child_env(),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert child.stdout is not None
        watchdog = threading.Timer(60, child.kill)  # a hung child fails the test, not hangs it
        watchdog.start()
        try:
            assert child.stdout.readline() == "completed 1 step(s)\n"
        finally:
            watchdog.cancel()
        child.send_signal(signal.SIGINT)
        if run % 2:  # a second one, too: it may exit at once (130), never by the signal
            child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=20)
        codes.append(child.returncode)
        assert "Traceback" not in stderr
    assert set(codes[0::2]) == {0}, codes  # the call was over: its own code
    assert set(codes) <= {0, 130}, codes
