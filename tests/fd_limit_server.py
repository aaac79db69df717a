"""A child process for the file-descriptor tests: the embedded server under a low
``RLIMIT_NOFILE``, driven line by line on stdin.

    python fd_limit_server.py LIMIT TOKEN logging|no-logging

It sets the soft limit, starts an ``HttpServer`` (that token) and prints ``port N``. With
``logging`` it imports :mod:`logging` first and counts the package's warnings. Commands:

- ``hog``: open descriptors until none is left (as the rest of a program might), print
  ``hogged``;
- ``hold N``: hold the descriptors until accept() failed N times (the attack), close them,
  print ``freed FAILURES PAUSES`` (PAUSES: the warnings that say accepting pauses);
- ``end``: shut down, print ``alive`` or ``dead`` (whether the loop thread still ran).
"""

from __future__ import annotations

import os
import resource
import socket
import sys
import threading

limit, token, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
warnings = 0
failures = 0
failed = threading.Condition()  # guards both counts; notified when either grows
if mode == "logging":
    import logging

    class Counting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            global warnings
            if record.levelno >= logging.WARNING and "not accepting for" in record.getMessage():
                with failed:
                    warnings += 1
                    failed.notify_all()

    logging.getLogger("toolnexus").addHandler(Counting())

from toolnexus import Toolkit, tool  # noqa: E402
from toolnexus.mcp import HttpServer, ServerOptions  # noqa: E402


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
server = HttpServer(Toolkit([add]), ServerOptions(token=token), port=0)


class CountingListener(socket.socket):
    """The server's listening socket, counting the accept() calls that fail."""

    __slots__ = ()

    def accept(self) -> tuple[socket.socket, object]:
        global failures
        try:
            return super().accept()
        except BlockingIOError:
            raise
        except OSError:
            with failed:
                failures += 1
                failed.notify_all()
            raise


server._loop.listener.__class__ = CountingListener
server.start()
print("port", server.address[1], flush=True)
hogged: list[int] = []
for line in sys.stdin:
    command, _, argument = line.strip().partition(" ")
    if command == "hog":
        try:
            while True:
                hogged.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        print("hogged", flush=True)
    elif command == "hold":
        wanted = int(argument)
        with failed:  # the attack lasts until accept() failed that often
            # A failed accept() is counted before the loop writes its warning: with logging,
            # wait for the warning of the last failure too, then take both counts at once.
            failed.wait_for(
                lambda wanted=wanted: (
                    failures >= wanted and (mode != "logging" or warnings >= failures)
                ),
                timeout=60,
            )
            counts = (failures, warnings)
        for fd in hogged:
            os.close(fd)
        hogged.clear()
        print("freed", *counts, flush=True)
    elif command == "end":
        alive = server._thread is not None and server._thread.is_alive()
        server.shutdown()
        print("alive" if alive else "dead", flush=True)
        break
