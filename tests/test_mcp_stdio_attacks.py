"""Attacks on the stdio server's threads and signals, each pinning what broke once.

- SIGINT while a writer blocks on a stdout the client does not read: the serving thread
  used to wait on a condition of the server's lock; the signal interrupted it while it took
  the lock back, so it left without the lock and released the one the writer held (two
  writers at once, and ``RuntimeError: release unlocked lock`` when the writer finished).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from cli_helpers import child_env
from timing import TIMEOUT

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# Runs serve_stdio on its own main thread (where it takes signals), over pipes whose reading
# end nobody reads until the server returned; prints what it saw as one JSON line.
_BLOCKED_WRITER = textwrap.dedent(
    """
    import fcntl, json, logging, os, signal, struct, sys, termios, threading

    from toolnexus import Toolkit, tool
    from toolnexus.mcp import serve_stdio

    failures = []

    class Keep(logging.Handler):
        def emit(self, record):
            error = record.exc_info[1] if record.exc_info else None
            failures.append(f"{record.getMessage()} {error!r}")

    logging.getLogger("toolnexus").addHandler(Keep(logging.ERROR))
    threading.excepthook = lambda hook: failures.append(repr(hook.exc_value))

    @tool
    def big() -> str:
        "An answer far larger than a pipe holds."
        return "x" * (1 << 20)

    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "big", "arguments": {}}},
    ]
    os.write(write_in, b"".join(json.dumps(r).encode() + b"\\n" for r in requests))

    def waiting() -> int:
        return struct.unpack("i", fcntl.ioctl(read_out, termios.FIONREAD, b"    "))[0]

    def interrupt() -> None:
        while waiting() <= 200:  # past the first answer: the big one is being written,
            threading.Event().wait(0.01)  # and its writer blocks, holding the server's lock
        # Not an assertion: a moment for the serving thread to reach that lock, where the
        # signal used to break it. Passing never depends on it.
        threading.Event().wait(0.5)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt).start()
    stdin, stdout = open(read_in, "rb"), open(write_out, "wb")
    code = serve_stdio(Toolkit([big]), stdin=stdin, stdout=stdout)
    # Now read: the writer finishes and lets go of the lock.
    with open(read_out, "rb") as from_server:
        lines = [from_server.readline(), from_server.readline()]
        for thread in threading.enumerate():
            if thread is not threading.current_thread():
                thread.join(60)
    print(json.dumps({"code": code, "ids": [json.loads(line)["id"] for line in lines],
                      "failures": failures}))
    """
)


@pytest.mark.slow  # the server gives a stuck writer 1 s at each of three places
@posix_only
def test_sigint_while_a_writer_blocks_on_a_full_stdout_leaves_the_lock_to_its_holder() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_WRITER],
        capture_output=True,
        env=child_env(),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr.decode()
    verdict = json.loads(done.stdout.decode().splitlines()[-1])
    assert verdict == {"code": 130, "ids": [0, 1], "failures": []}, done.stderr.decode()
