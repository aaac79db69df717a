"""The stdio client transport: an MCP server run as a child process.

:class:`StdioTransport` spawns the server (``command`` and ``args``, ``env`` merged over
this process's environment, ``cwd``), writes one JSON-RPC message per line to its stdin,
and reads its stdout on one reader thread, handing each decoded message to the client. The
child's stderr is read on a second thread into a bounded tail (never mixed into ours), so a
server that fails can be described with its own last words. :meth:`StdioTransport.close`
ends the child and its process group (``SIGTERM``, then ``SIGKILL`` after a grace) and
joins both threads.
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import McpError
from . import _codec as codec

__all__ = ["StdioTransport"]

_STDERR_TAIL = 4096
"""How many characters of a server's stderr are kept to describe its failure."""


class StdioTransport:
    """One child process speaking MCP on its stdin/stdout.

    ``on_message(message)`` is called on the reader thread for each decoded message;
    ``on_problem(kind, text)`` for a line that cannot be read (``kind`` is ``"garbage"`` —
    not JSON — or ``"too deep"``, with the ``id`` recovered by a scan when it can be, or
    ``"too long"``, which ends the connection); ``on_closed(reason)`` once, when stdout
    ends or :meth:`close` ran.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None,
        cwd: str | None,
        on_message: Callable[[Any], None],
        on_problem: Callable[[str, str, Any], None],
        on_closed: Callable[[str], None],
        max_message_bytes: int,
        label: str,
    ) -> None:
        environment = dict(os.environ)
        if env:
            environment.update(env)
        popen: dict[str, Any] = {}
        if os.name == "posix":
            popen["start_new_session"] = True  # its own process group: close ends the tree
        else:  # pragma: no cover - Windows
            popen["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        self._process = subprocess.Popen(
            [command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            cwd=cwd,
            bufsize=0,
            **popen,
        )
        self._on_message = on_message
        self._on_problem = on_problem
        self._on_closed = on_closed
        self._limit = max_message_bytes
        self._label = label
        self._write_lock = threading.Lock()
        self._stderr: collections.deque[str] = collections.deque()
        self._stderr_size = 0
        self._closed = False
        self._close_lock = threading.Lock()
        self._reader = threading.Thread(
            target=self._read, name=f"toolnexus-mcp-client-{label}", daemon=True
        )
        self._errors = threading.Thread(
            target=self._read_stderr, name=f"toolnexus-mcp-client-{label}-stderr", daemon=True
        )
        self._reader.start()
        self._errors.start()

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    @property
    def is_alive(self) -> bool:
        """True while the child runs and the transport is open."""
        return not self._closed and self._process.poll() is None

    def stderr_tail(self) -> str:
        """The last few KiB the child wrote to stderr (stripped)."""
        return "".join(self._stderr).strip()

    def exit_description(self) -> str:
        """How the child ended, with the tail of its stderr: for error messages."""
        code = self._process.poll()
        text = "is still running" if code is None else f"exited with code {code}"
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                text = f"was killed by {signal.Signals(-code).name}"
        tail = self.stderr_tail()
        if tail:
            text += f"; its stderr ends: {tail[-500:]}"
        return text

    def send(self, data: bytes) -> None:
        """Write one message line. Raises ``OSError`` when the pipe is broken, and
        :class:`McpError` once the transport is closed."""
        stdin = self._process.stdin
        assert stdin is not None
        with self._write_lock:
            if self._closed:
                raise McpError(self._label, "the connection to the server is closed")
            stdin.write(data)

    # ------------------------------------------------------------------ reading

    def _read(self) -> None:
        raw = self._process.stdout
        assert raw is not None
        # The pipe is unbuffered (bufsize=0, for stdin's sake); readline on it would read
        # one byte per system call.
        stdout = io.BufferedReader(raw, 1 << 16)  # type: ignore[type-var]
        reason = "the server closed its stdout"
        limit = self._limit
        try:
            while True:
                line = stdout.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit and not line.endswith(b"\n"):
                    reason = (
                        f"the server sent a message over {limit} bytes "
                        "(max_message_bytes); the connection was closed"
                    )
                    self._on_problem("too long", reason, None)
                    # The rest of that line would still block the child: end it now.
                    self._signal(getattr(signal, "SIGKILL", signal.SIGTERM))
                    break
                text = line.strip()
                if not text:
                    continue
                try:
                    message = codec.decode(text.decode("utf-8"))
                except RecursionError:
                    stand_in = codec.stand_in(text.decode("utf-8", "replace")) or {}
                    self._on_problem("too deep", codec.TOO_DEEP, stand_in.get("id"))
                    continue
                except (ValueError, UnicodeDecodeError):
                    shown = text[:200].decode("utf-8", "replace")
                    self._on_problem("garbage", shown, None)
                    continue
                self._on_message(message)
        except (OSError, ValueError):  # closed under us by close()
            pass
        except Exception as exc:  # MemoryError on a huge line: the connection cannot go on
            reason = f"reading from the server failed: {type(exc).__name__}: {exc}"
        if not self._closed and self._process.poll() is None:
            # Wait briefly for the exit status, so the reason can say how it ended.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=0.5)
        if self._process.poll() is not None and reason.startswith("the server closed"):
            reason = f"the server process {self.exit_description()}"
        self._on_closed(reason)

    def _read_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        try:
            while True:
                chunk = stderr.read(4096)
                if not chunk:
                    break
                text = chunk.decode("utf-8", "replace")
                self._stderr.append(text)
                self._stderr_size += len(text)
                while self._stderr_size > _STDERR_TAIL and len(self._stderr) > 1:
                    self._stderr_size -= len(self._stderr.popleft())
        except (OSError, ValueError):
            pass

    # ------------------------------------------------------------------ closing

    def close(self, grace: float = 2.0) -> None:
        """End the child and its process group and join the threads. Idempotent."""
        with self._close_lock:
            if self._closed and not self._reader.is_alive():
                return
            self._closed = True
        process = self._process
        try:
            if process.stdin is not None:
                process.stdin.close()  # a well-behaved server exits on EOF
        except OSError:
            pass
        try:
            process.wait(timeout=min(grace, 0.5))
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self._signal(getattr(signal, "SIGKILL", signal.SIGTERM))
                process.wait()
        # Whatever the group still holds (a grandchild the server left behind) goes too.
        self._signal(getattr(signal, "SIGKILL", signal.SIGTERM), group_only=True)
        for stream in (process.stdout, process.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        current = threading.current_thread()
        for thread in (self._reader, self._errors):
            if thread is not current:
                thread.join(timeout=5)

    def _signal(self, number: int, group_only: bool = False) -> None:
        process = self._process
        if os.name == "posix":
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(process.pid, number)
        elif not group_only:  # pragma: no cover - Windows
            with contextlib.suppress(OSError):
                process.kill()

    def __repr__(self) -> str:
        state = "open" if self.is_alive else "closed"
        return f"<StdioTransport pid={self._process.pid} {state}>"
