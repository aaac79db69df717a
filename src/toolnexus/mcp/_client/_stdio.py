"""The stdio client transport: an MCP server run as a child process.

:class:`StdioTransport` spawns the server (``command`` and ``args``, ``env`` merged over
this process's environment, ``cwd``), writes one JSON-RPC message per line to its stdin,
and reads its stdout line by line, handing each decoded message to the client. The child's
stderr is read on a thread of its own into a bounded tail (never mixed into ours), so a
server that fails can be described with its own last words. :meth:`StdioTransport.close`
ends the child and its process group (``SIGTERM``, then ``SIGKILL`` after a grace) and
joins the threads.

Who reads stdout: the thread waiting for an answer reads the pipe itself
(:meth:`StdioTransport.read_until`) while no other thread reads it, so a call's answer
needs no hand-over from one thread to another — on a busy machine that wake-up costs more
than everything else a call does. One thread reads at a time (the reading role is taken
under a lock and handed on). The reader thread reads when calls overlap (a caller whose
answer came hands the pipe to it while other requests still wait) and, once no call has
read for a moment, while none is in flight: so the server's notifications and its exit
are seen between calls too. A cancel wakes a reading caller through a wake-up pipe.
Without :func:`select.poll` (Windows) the reader thread reads everything, as every thread
then waits for it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...errors import McpError
from .._shared import _codec as codec
from .._shared._peer import NOT_READING, PipeWriter

__all__ = ["StdioTransport"]

_STDERR_TAIL = 4096
"""How many characters of a server's stderr are kept to describe its failure."""

_IDLE_S = 0.05
"""How long no call may have read the pipe before the reader thread reads it."""

_CHUNK = 1 << 16
_monotonic = time.monotonic

_CAN_POLL = hasattr(select, "poll")  # not on Windows, where pipes cannot be polled


class _Ended(Exception):
    """Reading stopped for good (``StdioTransport._ended`` says why)."""


class StdioTransport:
    """One child process speaking MCP on its stdin/stdout.

    ``on_message(message)`` is called for each decoded message, on the thread reading
    (a caller in :meth:`read_until`, or the reader thread); ``on_problem(kind, text)`` for
    a line that cannot be read (``kind`` is ``"garbage"`` — not JSON — or ``"too deep"``,
    with the ``id`` recovered by a scan when it can be, or ``"too long"``, which ends the
    connection); ``on_closed(reason)`` once, on the reader thread, when stdout ends or
    :meth:`close` ran. ``pending()`` says how many requests still wait for their answer:
    while some do, the pipe is never left unread.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
        on_message: Callable[[Any], None],
        on_problem: Callable[[str, str, Any], None],
        on_closed: Callable[[str], None],
        max_message_bytes: int,
        label: str,
        pending: Callable[[], int] = lambda: 0,
        write_timeout: float = 30.0,
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
        self._pending = pending
        self._limit = max_message_bytes
        self._label = label
        self._stderr: collections.deque[str] = collections.deque()
        self._stderr_size = 0
        self._closed = False
        self._close_lock = threading.Lock()
        # The reading role: who reads stdout now, and why reading stopped for good.
        stdout = self._process.stdout
        assert stdout is not None
        self._fd = stdout.fileno()
        self._buffer = bytearray()
        self._scanned = 0  # no newline in _buffer before this index
        self._at_end = False  # stdout ended (what it held last may still be read)
        self._role = threading.Lock()  # held by the thread reading stdout
        self._reading = 0  # that thread's ident (0: none, or the reader thread)
        self._state = threading.Condition(threading.Lock())  # the reader thread waits here
        self._handed = False  # a caller left requests waiting: the reader thread reads
        # When a request that no caller reads was last sent (read_for_others): the reader
        # thread keeps reading for _IDLE_S after it, so the next such answer wakes it, not
        # a hand-over first.
        self._others_at = -_IDLE_S
        self._for_others = False  # the reader thread reads for such requests now
        self._released = time.monotonic()  # when a thread last stopped reading
        self._ended: str | None = None
        self._wake_read = self._wake_write = -1
        self._poller: Any = None
        if _CAN_POLL:
            self._wake_read, self._wake_write = os.pipe()
            os.set_blocking(self._wake_read, False)
            os.set_blocking(self._wake_write, False)
            self._poller = select.poll()
            self._poller.register(self._fd, select.POLLIN)
            self._poller.register(self._wake_read, select.POLLIN)
        stdin = self._process.stdin
        assert stdin is not None
        # Writes go through a thread of their own, bounded: a server that stops reading
        # loses its connection (NOT_READING), never the thread that wanted to write.
        self._writer = PipeWriter(
            stdin.fileno(),
            stall_s=write_timeout,
            max_bytes=max_message_bytes,
            on_stalled=self._stalled,
            label=label,
        )
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
        if code is not None and self._errors is not threading.current_thread():
            # Its last words may still be in the pipe: the stderr thread reads them to the
            # end, soon once the child has exited (briefly: a grandchild may hold it open).
            self._errors.join(0.5)
        tail = self.stderr_tail()
        if tail:
            text += f"; its stderr ends: {tail[-500:]}"
        return text

    def send(self, data: bytes) -> None:
        """Queue one message line for the writer thread; never waits for the server to
        read it. Raises ``OSError`` once writing failed (a broken pipe, or a server that
        does not read its input), and :class:`McpError` once the transport is closed."""
        if self._closed:
            raise McpError(self._label, "the connection to the server is closed")
        self._writer.send(data)

    def _stalled(self, reason: str) -> None:
        """The writer gave up (on its thread, or a sender's): a server that does not read
        its input loses the connection; a broken pipe ends it as the server's exit does."""
        if not reason.startswith(NOT_READING):
            return  # the child went away: stdout ends too, and says how
        with self._state:
            if self._ended is None:
                self._ended = f"{reason}; it was stopped"
            self._state.notify_all()
            if self._role.locked() and self._wake_write >= 0:
                with contextlib.suppress(OSError):
                    os.write(self._wake_write, b"!")
        self._signal(getattr(signal, "SIGKILL", signal.SIGTERM))

    # ------------------------------------------------------------------ reading

    def read_until(self, done: Callable[[], object], timeout: float | None) -> bool | None:
        """Read and dispatch the server's messages on this thread until ``done()`` is
        true: returns True then, or False once ``timeout`` seconds passed without it.

        Returns ``None`` at once, having read nothing, when another thread reads the pipe
        (its messages are dispatched there: wait for them) or reading stopped for good
        (``on_closed`` comes, or came). :meth:`interrupt` makes it check ``done()`` again.
        """
        if self._poller is None:
            return None
        if not self._role.acquire(False):
            if self._reading != threading.get_ident():
                return None
            # This thread reads already, and waits inside what a message set off (a done
            # callback calling the same server): it reads on, or nobody would.
            return self._read_lines(done, timeout)
        self._reading = threading.get_ident()
        try:
            return self._read_lines(done, timeout)
        finally:
            self._reading = 0
            self._released = _monotonic()
            self._role.release()
            if self._ended is not None or self._pending() > 0:
                # Requests still wait (calls overlap): the reader thread reads for them.
                with self._state:
                    self._handed = True
                    self._state.notify_all()

    def _read_lines(self, done: Callable[[], object], timeout: float | None) -> bool | None:
        """:meth:`read_until`'s reading, by the thread that holds the reading role."""
        try:
            if self._ended is not None:
                return None
            deadline = None if timeout is None else _monotonic() + timeout
            while not done():
                line = self._line(deadline)
                if line is None:
                    return False
                self._dispatch(line)
            return True
        except _Ended:
            return None
        except Exception as exc:  # MemoryError on a huge line: the connection cannot go on
            self._fail(exc)
            return None

    def read_for_others(self) -> None:
        """A request was sent whose answer no caller reads (it is handed to whoever reads
        the pipe): the reader thread reads for it, and keeps reading while such requests
        come (each within :data:`_IDLE_S` of the last)."""
        with self._state:
            self._others_at = _monotonic()
            if not self._for_others:
                self._for_others = self._handed = True
                self._state.notify_all()

    def interrupt(self) -> None:
        """Wake the thread reading the pipe, so it checks ``done()`` again (a cancel)."""
        with self._state:  # close() closes the wake-up pipe under it
            if self._role.locked() and self._wake_write >= 0:
                with contextlib.suppress(OSError):  # full: a wake-up is pending anyway
                    os.write(self._wake_write, b"!")

    def _line(self, deadline: float | None) -> bytearray | None:
        """The next line from stdout (without its newline); an empty one when the
        wake-up pipe woke us; ``None`` when ``deadline`` passed first. Raises
        :class:`_Ended` when reading stops for good."""
        buffer = self._buffer
        while True:
            if buffer:
                newline = buffer.find(b"\n", self._scanned)
                if newline >= 0:
                    if newline > self._limit:
                        self._too_long()
                    line = buffer[:newline]
                    del buffer[: newline + 1]
                    self._scanned = 0
                    return line
                if len(buffer) > self._limit:
                    self._too_long()
                self._scanned = len(buffer)
            if self._ended is not None or self._at_end:
                self._end("the server closed its stdout")
            poller = self._poller
            if poller is not None:
                if deadline is None:
                    ready = poller.poll()
                else:
                    left = deadline - _monotonic()
                    if left <= 0:
                        return None
                    ready = poller.poll(left * 1000 + 1)
                if not ready:
                    return None
                if len(ready) != 1 or ready[0][0] != self._fd:  # the wake-up pipe too
                    with contextlib.suppress(OSError):
                        os.read(self._wake_read, 4096)
                    if all(fd != self._fd for fd, _ in ready):
                        return bytearray()
            size = len(buffer)
            try:
                buffer += os.read(self._fd, _CHUNK)  # one statement: a Ctrl-C loses nothing
            except OSError:  # closed under us by close()
                self._end("the server closed its stdout")
            if len(buffer) == size:
                self._at_end = True
                if buffer:  # a last message without its newline
                    line = buffer[:]
                    buffer.clear()
                    self._scanned = 0
                    return line
                self._end("the server closed its stdout")

    def _dispatch(self, line: bytearray) -> None:
        try:
            # Not stripped first: the decoder takes surrounding whitespace in its stride.
            message = codec.decode(line.decode("utf-8"))
        except RecursionError:
            stand_in = codec.stand_in(line.strip().decode("utf-8", "replace")) or {}
            self._on_problem("too deep", codec.TOO_DEEP, stand_in.get("id"))
            return
        except (ValueError, UnicodeDecodeError):
            shown = line.strip()
            if shown:  # a blank line is no message, and no problem
                self._on_problem("garbage", bytes(shown[:200]).decode("utf-8", "replace"), None)
            return
        self._on_message(message)

    def _too_long(self) -> None:
        reason = (
            f"the server sent a message over {self._limit} bytes "
            "(max_message_bytes); the connection was closed"
        )
        self._on_problem("too long", reason, None)
        # The rest of that line would still block the child: end it now.
        self._signal(getattr(signal, "SIGKILL", signal.SIGTERM))
        self._end(reason)

    def _end(self, reason: str) -> None:
        """Stop reading for good (the first reason stays); raises :class:`_Ended`."""
        with self._state:
            if self._ended is None:
                self._ended = reason
            self._state.notify_all()
        raise _Ended

    def _fail(self, exc: Exception) -> None:
        with contextlib.suppress(_Ended):
            self._end(f"reading from the server failed: {type(exc).__name__}: {exc}")

    def _read(self) -> None:
        """The reader thread: reads while calls overlap or none is in flight; then says
        why the connection ended."""
        while self._lead():
            try:
                while True:
                    watching = self._poller is None or (
                        self._pending() == 0 and not self._for_others
                    )
                    line = self._line(None if watching else _monotonic() + _IDLE_S)
                    if line:
                        self._dispatch(line)
                    if (
                        self._poller is not None
                        and self._pending() == 0
                        and self._done_for_others()
                    ):
                        break  # no call in flight: the next caller reads for itself
            except _Ended:
                break
            except Exception as exc:  # MemoryError on a huge line: the connection cannot go on
                self._fail(exc)
                break
            finally:
                self._reading = 0
                self._released = _monotonic()
                self._role.release()
        reason = self._ended or "the server closed its stdout"
        if not self._closed and self._process.poll() is None:
            # Wait briefly for the exit status, so the reason can say how it ended.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=0.5)
        if self._process.poll() is not None and reason.startswith("the server closed"):
            reason = f"the server process {self.exit_description()}"
        self._on_closed(reason)

    def _done_for_others(self) -> bool:
        """Whether the reader thread stops reading for requests no caller reads: none was
        sent for :data:`_IDLE_S` (decided under the lock :meth:`read_for_others` takes, so
        a request sent meanwhile is never left unread)."""
        if not self._for_others:
            return True
        with self._state:
            if _monotonic() - self._others_at < _IDLE_S:
                return False
            self._for_others = False
            return True

    def _lead(self) -> bool:
        """Wait until the reader thread should read, and take the reading role: False
        once reading stopped for good."""
        with self._state:
            while self._ended is None:
                wait = _IDLE_S
                if self._handed or self._poller is None:
                    if self._role.acquire(False):
                        self._handed = False
                        self._reading = threading.get_ident()
                        return True
                elif self._pending() == 0:
                    idle = _monotonic() - self._released
                    if idle >= _IDLE_S and self._role.acquire(False):
                        self._reading = threading.get_ident()
                        return True
                    wait = max(_IDLE_S - idle, 0.001)
                self._state.wait(wait)
            return False

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
            # One close releases the descriptors; another one running meanwhile (the
            # client's, and its call's that found the connection gone) ends the child
            # and joins the threads, but does not wait for the reading role it keeps.
            first = not self._closed
            self._closed = True
        process = self._process
        self._writer.close(timeout=min(grace, 0.5))
        self._close_stdin()  # a well-behaved server exits on EOF
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
        self._writer.close(timeout=1.0)  # the pipe's reader is gone: the writer ends
        self._close_stdin()
        current = threading.current_thread()
        with self._state:
            if self._ended is None:
                self._ended = "the server closed its stdout"
            self._state.notify_all()
            if self._role.locked() and self._wake_write >= 0:
                with contextlib.suppress(OSError):
                    os.write(self._wake_write, b"!")
        # Its descriptors are closed only once nobody polls them (a number closed under a
        # poll may be reused by another file); the role is kept: nobody reads again.
        if first and self._role.acquire(timeout=5):
            for stream in (process.stdout, process.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
            with self._state:
                wake_read, wake_write = self._wake_read, self._wake_write
                self._wake_read = self._wake_write = -1
            for fd in (wake_read, wake_write):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        for thread in (self._reader, self._errors):
            if thread is not current:
                thread.join(timeout=5)

    def _close_stdin(self) -> None:
        """Close the child's stdin once the writer thread no longer writes to it (a
        descriptor closed under a write may be reused by another file)."""
        stdin = self._process.stdin
        if stdin is not None and not self._writer.is_writing:
            with contextlib.suppress(OSError):
                stdin.close()

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
