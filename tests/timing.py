"""The time bounds of the test suite, in one place.

Every bound here is a bound for a hang, never a measured duration: a passing run never
waits one out, so a generous value costs nothing when the code is right and only turns a
hang into a failure when it is not. They are generous because the suite runs under
``pytest -n 2`` on a busy two-core machine, where a thread can wait seconds for its turn.

- ``TIMEOUT``: the upper bound for anything that should arrive — an answer, an event, a
  line from a server, a process's exit, a thread's end, a step of an interop client.
- ``wait_until``: polls for a condition within ``TIMEOUT``.
- ``STALL``: how long a tool that the test means to cut off (cancelled, timed out,
  abandoned, answered while it still blocks) would otherwise keep going — longer than
  ``TIMEOUT``, so an answer that arrives within ``TIMEOUT`` proves nobody waited for it.
  A passing run never waits it out either: the test releases the tool, or leaves it on a
  daemon thread.

A test that waits something out on purpose (a deadline that must pass, a tool's
``timeout_ms`` that must expire) names its own small value beside its reason instead: a
larger bound here must never make the suite slower.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

TIMEOUT = 60.0
STALL = 2 * TIMEOUT


def wait_until(condition: Callable[[], bool], timeout_s: float = TIMEOUT) -> bool:
    """Poll ``condition`` until it holds; False if it did not within ``timeout_s`` (for
    what no event announces: a file a child process writes, a row in a store)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        pause.wait(0.01)
    return True
