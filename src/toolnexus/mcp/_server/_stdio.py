"""The stdio transport: a :class:`~toolnexus.mcp.ServerSession` on stdin/stdout.

Everything that touches a stream or a thread on the MCP stdio side lives here; calls go
through the :class:`~toolnexus.mcp._server._bridge.CallBridge` every transport shares. The thread
that calls :func:`serve_stdio` starts a reading thread that reads newline-delimited JSON
from stdin, feeds the session and starts each tool call on the host without waiting for it;
whoever settles a call (the worker that ran it, or the host at a deadline or cancel)
writes its answer. So reading never waits for a tool, and pings and cancellations are
answered while tools run. All output goes through one lock, the bridge's, which also guards
the session, so messages never interleave and a call's progress notifications are always
written before its response. stdout carries protocol JSON only: while serving, whatever a
tool prints goes to stderr.

The promises a hostile or unlucky client cannot break:

- the server never goes deaf: whatever fails while a line is read, parsed or dispatched
  answers that request (``-32602``/``-32603``; a notification is dropped) and reading goes
  on; a line over ``max_message_bytes`` is refused without being buffered;
- the bytes of tool-call arguments held by calls in flight (and of requests that wait on
  another server) have a cap (``max_inflight_bytes``): a request beyond it is answered
  ``-32603 server overloaded``;
- SIGINT and SIGTERM end the server cleanly (exit codes 130 and 143) when it runs on the
  main thread: the signal stops the reader at a line boundary, running calls are
  cancelled and the host's threads ended. Protocol output is written unbuffered (no daemon
  thread ever holds a buffered stream's lock when the interpreter exits);
- when stdin closes, calls still running get ``grace_ms`` to answer, then are cancelled;
  :func:`serve_stdio` returns with every thread it started ended.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

from ..._log import LazyLogger
from ._bridge import CallBridge, CallEntry, InflightBytes, Later, LazyHost
from ._feature_tools import make_tasks
from ._options import ServerOptions, resolve
from ._session import CancelCall, Detached, Send, ServerSession

if TYPE_CHECKING:
    from ..._host import Call
    from ..._toolkit import Toolkit
    from ._tasks import Tasks

__all__ = ["EXIT_SIGINT", "EXIT_SIGTERM", "serve_stdio"]

_log = LazyLogger()  # logging loads with the first record, not with the server

EXIT_SIGINT = 130
"""What :func:`serve_stdio` returns after SIGINT (128 + the signal, as shells report it)."""
EXIT_SIGTERM = 143
"""What :func:`serve_stdio` returns after SIGTERM."""

_CHUNK = 1 << 16  # how much stdin one read takes at most
_FLUSH_BYTES = 1 << 16  # deferred answers are written once they reach this many bytes
_CLOSE_WAIT_S = 1.0  # at the end, how long to wait for a writer, or a reading thread
_QUICK_S = 0.001  # a tool whose last call took less than this runs on the reader itself
_RELIEF_S = 0.005  # an inline tool running this long hands the reading to the spare thread
_SIGNAL_POLL_S = 0.1  # how often the serving thread looks for a signal another thread took
_ACTIVE_S = 0.1  # the spare looks every _RELIEF_S while calls ran inline this recently


def serve_stdio(
    toolkit: Toolkit,
    options: ServerOptions | None = None,
    *,
    stdin: IO[Any] | None = None,
    stdout: IO[Any] | None = None,
) -> int:
    """Serve ``toolkit`` over MCP on stdin/stdout until stdin closes; return the exit code.

    Both protocol eras are spoken: modern (2026-07-28, stateless) and legacy
    (``initialize``, 2024-11-05 … 2025-11-25). ``options`` (a
    :class:`~toolnexus.mcp.ServerOptions`) names the server and sets each call's deadline,
    the signing key and answer store, the limits and the grace period.

    ``stdin``/``stdout`` default to the process's own streams; binary or text streams
    both work. While serving, ``sys.stdout`` points at stderr (and, for the process's own
    stdout, so does file descriptor 1), so a tool's ``print`` cannot corrupt the
    protocol. A line longer than ``max_message_bytes`` is refused without being buffered.
    A ``tools/call`` whose line would take the bytes of calls in flight over
    ``max_inflight_bytes`` is answered ``-32603`` (server overloaded) instead of run. A
    line whose handling fails in any way is answered (``-32602``/``-32603``) and reading
    goes on. When stdin closes, calls still running get ``grace_ms`` to answer; then they
    are cancelled and the function returns, every thread it started ended.

    Called on the main thread, SIGINT and SIGTERM stop the server (when their handlers
    are Python's defaults): running calls are cancelled and it returns 130 or 143.

    Returns 0 after stdin closed, 1 when stdout could not be written (the client went
    away), 130 after SIGINT (or ``KeyboardInterrupt``), 143 after SIGTERM.

    Example::

        from toolnexus import Toolkit, tool
        from toolnexus.mcp import ServerOptions, serve_stdio

        @tool
        def add(a: int, b: int) -> int:
            "Add two numbers."
            return a + b

        if __name__ == "__main__":
            raise SystemExit(serve_stdio(Toolkit([add]), ServerOptions(name="calculator")))
    """
    options = resolve(options)
    # The session and the host share the key and the used answers: a question asked before
    # a restart is resumed after it (same key), and each answer is used once.
    host = LazyHost(toolkit, options.host)
    tasks = make_tasks(options.tasks)
    session = ServerSession(toolkit, options, _tasks=tasks)
    with _protocol_streams(stdin, stdout, options.max_message_bytes) as (lines, write):
        server = _StdioServer(session, host, lines, write, options, tasks)
        # A change of the toolkit (a tool, resource or prompt added or removed, a
        # resource's content) is told to the client, as the session decides.
        unwatch = toolkit._watch(
            lambda kind, uri: server._bridge.feed(session.toolkit_changed, kind, uri)
        )
        unwatch_tasks = tasks.watch(
            lambda record: server._bridge.feed(session.task_changed, record),
            wants=lambda: session.listening_for_tasks,
        )
        try:
            return server.run()
        finally:
            unwatch()
            unwatch_tasks()


# --------------------------------------------------------------------------- streams

Write = Callable[[bytes], None]


@contextlib.contextmanager
def _protocol_streams(
    stdin: IO[Any] | None, stdout: IO[Any] | None, limit: int
) -> Iterator[tuple[_Input, Write]]:
    """The protocol's input and writer; stdout is kept for protocol JSON only."""
    lines = _Input(stdin if stdin is not None else sys.stdin, limit)
    saved_stdout = sys.stdout
    protocol_fd = -1
    if stdout is not None:
        write = _writer(stdout)
    else:
        # Our own stdout: keep a private copy of fd 1 for the protocol and point fd 1 at
        # stderr, so even output that bypasses sys.stdout (C code, child processes) misses
        # it.
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        try:
            protocol_fd = os.dup(1)
            os.dup2(2, 1)
        except OSError:
            protocol_fd = -1
        write = _raw_writer(protocol_fd) if protocol_fd >= 0 else _writer(sys.stdout)
    sys.stdout = sys.stderr
    try:
        yield lines, write
    finally:
        sys.stdout = saved_stdout
        lines.close()
        if protocol_fd >= 0:
            with contextlib.suppress(Exception):
                saved_stdout.flush()
            with contextlib.suppress(OSError):
                os.dup2(protocol_fd, 1)
            with contextlib.suppress(OSError):
                os.close(protocol_fd)


class _Input:
    """stdin as whole lines, read a chunk at a time.

    Reading in chunks tells the server whether another whole line is already here, so the
    answers to a burst of requests go out in one write, just before reading would block. A
    line longer than ``limit`` (without its newline) is skipped as it arrives, never
    buffered whole: :meth:`next_line` returns its length instead. Once the first chunk is in,
    a blocking read waits in ``select`` beside a wake-up pipe, so :meth:`wake` can stop a
    reader at once (where the stream has a file descriptor and the platform can select on
    it). Only the thread that holds the reading role uses it (see ``_StdioServer``).
    """

    def __init__(self, stream: IO[Any] | None, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._pos = 0
        self._skipped = -1  # >= 0: inside an over-long line; its bytes so far
        self._failed = False  # the line being skipped could not be read (out of memory)
        self._eof = False
        self._fd = -1
        self._selected = False  # the stream's own buffer is drained: select on its fd is true
        self._wake_r = self._wake_w = -1
        self.stuck = False  # a reader is blocked where wake() cannot reach it
        # After next_line: what has_line() said then (the reader's own buffer: valid until
        # it reads again), without the call.
        self.more = False
        self._read = self._chunk_reader(stream)

    def _chunk_reader(self, stream: IO[Any] | None) -> Callable[[], bytes]:
        if stream is None:
            return lambda: b""
        binary = (
            stream if not isinstance(stream, io.TextIOBase) else getattr(stream, "buffer", None)
        )
        if binary is None:
            text = stream

            def read_text() -> bytes:
                # A text stream without a buffer (io.StringIO): a line (or a piece of one).
                return str(text.readline(_CHUNK)).encode("utf-8", "surrogateescape")

            return read_text
        with contextlib.suppress(Exception):
            fd = binary.fileno()
            if isinstance(fd, int) and fd >= 0:
                self._fd = fd
        read1 = getattr(binary, "read1", None)
        if read1 is not None:  # one read of the raw stream at most: what is there now
            return lambda: bytes(read1(_CHUNK))
        read = binary.read
        return lambda: bytes(read(_CHUNK) or b"")

    def has_line(self) -> bool:
        """True when a whole line (or the end of the input) is already buffered."""
        return self._buf.find(b"\n", self._pos) >= 0 or self._eof

    def next_line(self) -> bytearray | bytes | int | None:
        """The next whole line (a copy, decoded as it is: no copy to ``bytes`` first); the
        length of a line over the limit (it was skipped); the last bytes before the end of
        the input (no newline); ``b""`` once the input ended; None when more must be read
        first (:meth:`fill`)."""
        buf, pos = self._buf, self._pos
        end = buf.find(b"\n", pos)
        if self._skipped >= 0:
            if end < 0 and not self._eof:
                self._skipped += len(buf) - pos
                self._buf, self._pos = bytearray(), 0
                return None
            length = self._skipped + ((end + 1) if end >= 0 else len(buf)) - pos
            self._pos = end + 1 if end >= 0 else len(buf)
            self._skipped = -1
            if self._failed:
                self._failed = False
                return -length
            return length
        if end >= 0:
            self._pos = end + 1
            self.more = buf.find(b"\n", end + 1) >= 0 or self._eof
            if end - pos > self.limit:
                return end + 1 - pos
            return buf[pos : end + 1]
        if len(buf) - pos > self.limit:  # over the limit, no newline yet: skip as it comes
            self._skipped = len(buf) - pos
            self._buf, self._pos = bytearray(), 0
            return None
        if self._eof:
            if pos < len(buf):
                self._pos = len(buf)
                self.more = True  # what has_line() says at the end of the input
                return buf[pos:]
            return b""
        return None

    def fill(self) -> None:
        """Read one chunk (blocking); at the end of the input mark it ended. Raises
        ``OSError``/``ValueError`` when the stream fails, ``_Woken`` when :meth:`wake`
        was called, and ``MemoryError`` (the line being read is then skipped)."""
        if self._selected and self._wake_r >= 0:
            try:
                ready, _, _ = select.select([self._fd, self._wake_r], [], [])
            except (OSError, ValueError):
                ready = [self._fd]
                self._wake_r = -1  # this platform cannot select on it: plain reads from now
            if self._wake_r in ready:
                raise _Woken
        else:
            self.stuck = True  # a read nothing can wake (the first one, or no select here)
        try:
            chunk = self._read()
        except MemoryError:
            self._buf, self._pos = bytearray(), 0
            self._skipped, self._failed = 0, True
            raise
        finally:
            self.stuck = False
        if self._fd >= 0 and not self._selected:
            self._selected = True
            if self._wake_r < 0:
                with contextlib.suppress(OSError):
                    self._wake_r, self._wake_w = os.pipe()
        if not chunk:
            self._eof = True
            return
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += chunk

    def wake(self) -> None:
        """Make a reader blocked in :meth:`fill` raise ``_Woken`` (when it selects)."""
        if self._wake_w >= 0:
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"!")

    def close(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._wake_r = self._wake_w = -1


class _Woken(Exception):
    """:meth:`_Input.fill` was woken: the server stops reading."""


def _raw_writer(fd: int) -> Write:
    """Whole messages straight to the file descriptor: no buffer, so no buffer lock that a
    thread could still hold when the interpreter exits (CPython aborts on that)."""

    def write(data: bytes) -> None:
        written = os.write(fd, data)  # a blocking pipe takes it whole unless interrupted
        if written < len(data):
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view) :]

    return write


def _writer(stream: IO[Any]) -> Write:
    if isinstance(stream, io.TextIOBase):
        binary = getattr(stream, "buffer", None)
        if binary is None:
            text_stream = stream

            def write_text(data: bytes) -> None:
                text_stream.write(data.decode("utf-8"))
                text_stream.flush()

            return write_text
        with contextlib.suppress(Exception):
            stream.flush()
        stream = binary
    target = stream

    def write(data: bytes) -> None:
        target.write(data)
        target.flush()

    return write


# --------------------------------------------------------------------------- the server


class _Stop(BaseException):
    """Raised by the server's signal handler on the serving thread: stop serving."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Output:
    """stdout, whole messages at a time (callers hold the bridge's lock).

    The reader defers answers while another whole line is already buffered, and flushes
    before reading would block: the answers to a burst of requests go out in one write.
    """

    __slots__ = ("_out", "_size", "_write", "broken", "deferring", "ended", "on_broken")

    def __init__(self, write: Write, on_broken: Callable[[], None]) -> None:
        self._write = write
        self.on_broken = on_broken
        self._out: list[bytes] = []
        self._size = 0
        self.deferring = False
        self.broken = False  # stdout could not be written
        self.ended = False  # the server is done: write nothing more

    def queue(self, data: bytes) -> None:
        """Queue encoded lines; written at once unless the reader defers."""
        if self.broken or self.ended or not data:
            return
        self._out.append(data)
        self._size += len(data)
        if not self.deferring or self._size >= _FLUSH_BYTES:
            self.flush()

    @property
    def pending(self) -> bool:
        return bool(self._out)

    def flush(self) -> None:
        """Write what is queued, in one go."""
        if not self._out:
            return
        data = self._out[0] if len(self._out) == 1 else b"".join(self._out)
        self._out.clear()
        self._size = 0
        if self.broken or self.ended:
            return
        try:
            self._write(data)
        except (OSError, ValueError) as exc:
            _log.warning("toolnexus mcp: cannot write to stdout (%s); stopping", exc)
            self.broken = True
            self.on_broken()


class _StdioCall(CallEntry):
    """A stdio call's entry in the bridge's table, and so its done callback: it reports
    the answer, notes what the tool took, and ends an inline run with the answer. Its own
    fields are set as the call starts (:meth:`_StdioServer._start_call`)."""

    __slots__ = ("began", "inline", "returned", "runner")

    bridge: _StdioBridge
    began: float
    inline: bool
    runner: int  # the thread running it inline, else 0
    returned: bool  # the inline tool returned and its answer is written

    def __call__(self, call: Call) -> None:
        # Inline, this is what the tool took; on a worker it adds the time queued, so it
        # only ever shows a tool is quick.
        took = time.monotonic() - self.began
        inline = self.inline
        bridge = self.bridge
        server = bridge.server
        if inline or took < _QUICK_S:
            server._roles.took[self.action.name] = took
        # On the thread that ran the tool inline, the tool has returned: the inline run
        # ends with its answer, under the same lock.
        here = inline and threading.get_ident() == self.runner
        bridge.report(self.call_id, call.result(), server._inline_ended if here else None)
        self.returned = here


class _StdioBridge(CallBridge):
    """The call bridge whose messages all go to stdout."""

    entry_type = _StdioCall

    def __init__(
        self,
        session: ServerSession,
        host: LazyHost,
        inflight: InflightBytes,
        output: _Output,
        server: _StdioServer,
        tasks: Tasks | None = None,
    ) -> None:
        super().__init__(session, host, inflight, tasks)
        self.output = output
        self.server = server

    def _deliver(self, send: Send, where: Any) -> None:
        line = send._line  # a text answer, written as it was made: no frame of to_bytes
        # (to_bytes answers a message it cannot encode)
        self.output.queue(line if line is not None else send.to_bytes())


class _Roles:
    """Who reads stdin, and which calls run on the reader itself (the inline policy).

    **The invariant: at most one thread is ever held by an inline tool, and reading never
    waits for one longer than** ``_RELIEF_S``. Two threads share the input: one *reads*
    (``reading`` is its ident) and handles lines, the other is *spare*. The reader runs a
    call inline — on itself, no hand-off to a worker — only when the spare is free (waiting
    in :meth:`relieve`) and the tool's last call took less than ``_QUICK_S``; anything else
    goes to the host's workers. When an inline tool has run for ``_RELIEF_S``, the spare
    takes the reading role over, and the old reader becomes the spare once its tool
    returns. While it is still inside its tool the spare is not free, so nothing else runs
    inline. Every field changes under the bridge's lock (``wake`` is a condition of it);
    tests/test_mcp_stdio_reader.py pins the invariant.
    """

    __slots__ = (
        "asleep",
        "free",
        "inline_since",
        "input_done",
        "last_inline",
        "reading",
        "threads",
        "took",
        "wake",
    )

    def __init__(self, lock: threading.Lock) -> None:
        self.threads: list[threading.Thread] = []
        self.reading = 0  # the ident of the thread that reads now
        self.input_done = False  # the input ended, or reading stopped
        self.inline_since: float | None = None  # the reader runs a tool inline since then
        self.last_inline = 0.0
        self.free = False  # the spare waits in relieve(), ready to take reading over
        self.asleep = False  # ... without a timeout (no inline call lately)
        self.wake = threading.Condition(lock)
        self.took: dict[str, float] = {}  # each tool's last call: seconds it took

    def relieve(self, stopping: Callable[[], bool]) -> bool:
        """The spare's wait (the lock is held): True once it took reading over from a
        reader held by an inline tool for ``_RELIEF_S``; False when reading is over."""
        me = threading.get_ident()
        self.free = True
        try:
            while not (self.input_done or stopping()):
                since = self.inline_since
                now = time.monotonic()
                if since is not None:
                    if now - since >= _RELIEF_S:
                        self.reading = me
                        return True
                    self.wake.wait(since + _RELIEF_S - now)
                elif now - self.last_inline < _ACTIVE_S:
                    self.wake.wait(_RELIEF_S)  # calls run inline: look again soon
                else:
                    self.asleep = True  # the reader wakes us when it inlines
                    if self.inline_since is None:
                        self.wake.wait()
                    self.asleep = False
            return False
        finally:
            self.free = False


class _StdioServer:
    """The threads of one stdio server: the serving thread (waits, takes signals), the
    reader and the spare (see :class:`_Roles`), and the shut-down."""

    def __init__(
        self,
        session: ServerSession,
        host: LazyHost,
        lines: _Input,
        write: Write,
        options: ServerOptions,
        tasks: Tasks | None = None,
    ) -> None:
        self._session = session
        self._host = host
        self._lines = lines
        self._grace = options.grace_ms / 1000
        self._output = _Output(write, self._on_broken)
        self._bridge = _StdioBridge(
            session,
            host,
            InflightBytes(options.max_inflight_bytes, guarded=True),  # by the bridge's lock
            self._output,
            self,
            tasks,
        )
        # One lock for the session, the output and the reading roles: what the session says
        # is written in the order it said it, before anyone else may talk to it.
        self._lock = self._bridge.lock
        self._roles = _Roles(self._lock)
        # The serving thread never waits on a condition of self._lock: its signal handler
        # may raise while it waits, and a Condition.wait interrupted while taking its lock
        # back leaves with the lock not held, so the ``with`` around it would release the
        # lock another thread holds. It naps on a lock of its own instead (a released
        # ``_poked`` means "look again"), where an interrupted acquire leaves nothing behind.
        self._poked = threading.Lock()
        self._poked.acquire()
        self._warmed = False
        # Signals: a code once one arrived; the handler raises only while the serving
        # thread waits, so nothing is ever half-handled.
        self._stop_code: int | None = None
        self._interruptible = False
        self._ending = False  # _end has begun: a signal changes nothing any more

    def run(self) -> int:
        code = 0
        with self._signals():
            try:
                try:
                    self._serve()
                finally:
                    self._shut_down()
            except _Stop as stop:
                code = stop.code
            except KeyboardInterrupt:  # a SIGINT handler of the application's own
                code = EXIT_SIGINT
            finally:
                self._end()
        if self._stop_code is not None:
            return self._stop_code
        return code or (1 if self._output.broken else 0)

    def _stopping(self) -> bool:
        return self._output.ended or self._stop_code is not None

    def _on_broken(self) -> None:
        self._lines.wake()
        self._poke()

    # ------------------------------------------------------------------ signals

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        """SIGINT and SIGTERM stop the server, when it runs on the main thread and their
        handlers are Python's defaults; the old handlers come back afterwards."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        import signal

        saved: list[tuple[int, Any]] = []
        for signum, default in (
            (signal.SIGINT, signal.default_int_handler),
            (getattr(signal, "SIGTERM", None), signal.SIG_DFL),
        ):
            if signum is None:
                continue
            with contextlib.suppress(ValueError, OSError):
                if signal.getsignal(signum) is default:
                    signal.signal(signum, self._on_signal)
                    saved.append((signum, default))
        try:
            yield
        finally:
            for signum, old in saved:
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(signum, old)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._ending:
            return  # already ending: nothing left to interrupt, and _end must not be
        first = self._stop_code is None
        if first:
            self._stop_code = 128 + signum
        self._lines.wake()  # the reader stops at a line boundary
        self._poke()
        # A second signal stops at once, wherever the serving thread is.
        if self._interruptible or not first:
            raise _Stop(self._stop_code or 128 + signum)

    def _poke(self) -> None:
        """Make the serving thread look at the state again (any thread, lock held or not)."""
        with contextlib.suppress(RuntimeError):  # already poked
            self._poked.release()

    def _nap(self, seconds: float) -> None:
        """The serving thread's wait: until poked, for ``seconds`` at most. The one place
        where a first signal raises ``_Stop``; an acquire it interrupts took nothing."""
        self._interruptible = True
        try:
            self._poked.acquire(timeout=seconds)
        finally:
            self._interruptible = False

    def _take_lock(self) -> bool:
        """Take ``self._lock`` on the serving thread, in slices so a signal is seen; after a
        signal, give up (False) after ``_CLOSE_WAIT_S``: the holder may be a writer stuck on
        a pipe the client no longer reads."""
        given_up_at: float | None = None
        while not self._lock.acquire(timeout=_SIGNAL_POLL_S):
            if self._stop_code is not None or self._output.broken:
                now = time.monotonic()
                if given_up_at is None:
                    given_up_at = now + _CLOSE_WAIT_S
                elif now >= given_up_at:
                    return False
        return True

    # ------------------------------------------------------------------ the roles

    def _serve(self) -> None:
        """Start the reader; wait (taking signals) until the input ends."""
        reader = self._start_thread("toolnexus-mcp-reader", reading=True)
        if reader is None:  # no thread could be started: read here instead
            self._roles.reading = threading.get_ident()
            self._read()
            return
        roles = self._roles
        while not (roles.input_done or self._output.broken or self._stop_code is not None):
            # In slices: a signal the kernel gave another thread does not wake this wait;
            # its handler runs (on this thread) when the slice ends.
            self._nap(_SIGNAL_POLL_S)

    def _start_thread(self, name: str, *, reading: bool) -> threading.Thread | None:
        thread = threading.Thread(target=self._take_turns, args=(reading,), name=name, daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # out of threads: the caller goes on without it
            _log.warning("toolnexus mcp: cannot start a thread (%s)", exc)
            return None
        self._roles.threads.append(thread)
        return thread

    def _take_turns(self, reading: bool) -> None:
        """A reading thread's life: read until relieved, then be the spare until needed."""
        if reading:
            self._roles.reading = threading.get_ident()
        try:
            while True:
                if reading:
                    if self._read():
                        return
                else:
                    with self._lock:
                        relieved = self._roles.relieve(self._stopping)
                        if relieved:
                            self._output.deferring = False
                    if not relieved:
                        return
                reading = not reading
        except BaseException:  # never leave the serving thread waiting for nobody
            _log.exception("toolnexus mcp: the reading thread failed")
            self._stop_reading()

    def _stop_reading(self) -> None:
        with self._lock:
            self._roles.input_done = True
            self._output.deferring = False
            self._output.flush()
            self._roles.wake.notify_all()
        self._poke()

    # ------------------------------------------------------------------ reading

    def _read(self) -> bool:
        """Read and handle lines while this thread holds the reading role. True when the
        input ended (or the server stops); False when the spare took reading over while
        this thread ran a tool inline."""
        me = threading.get_ident()
        lines = self._lines
        roles = self._roles
        output = self._output
        while True:
            if roles.reading != me:
                return False
            if output.broken or output.ended or self._stop_code is not None:
                self._stop_reading()
                return True
            try:
                line = lines.next_line()
                if line is None:
                    if output.pending:
                        with self._lock:
                            output.deferring = False
                            output.flush()
                    lines.fill()
                    continue
            except (OSError, ValueError, _Woken) as exc:  # stdin vanished, or a stop
                _log.debug("toolnexus mcp: stopped reading stdin: %r", exc)
                self._stop_reading()
                return True
            except MemoryError:
                continue  # the line is skipped; it is answered once its end is read
            if line == b"":
                self._stop_reading()
                return True
            output.deferring = lines.more if line.__class__ is bytearray else lines.has_line()
            try:
                if isinstance(line, int):
                    if line < 0:
                        self._bridge.feed(
                            self._session.line_failed, "out of memory reading the line"
                        )
                    else:
                        self._bridge.feed(self._session.line_too_long, line, lines.limit)
                else:
                    self._on_line(line)
            except Exception as exc:  # the session answers its own failures: a last guard
                _log.exception("toolnexus mcp: handling a line failed")
                with contextlib.suppress(Exception):
                    self._bridge.feed(self._session.line_failed, f"{type(exc).__name__}: {exc}")

    def _on_line(self, line: bytes | bytearray) -> None:
        with self._lock:
            later = self._bridge.dispatch(self._session.receive_line(line), None, len(line))
        if later:
            first = later[0]
            if len(later) == 1 and isinstance(first, _StdioCall):
                self._start_call(first, True)  # the usual line: _carry_out's one start
            else:
                self._carry_out(later, reader=True)
        if not self._warmed:
            # The host (and the event loop machinery it imports) loads once the first
            # answer is out, while the client reads it: start-up is not kept waiting.
            self._warmed = True
            self._host.warm_up()

    # ------------------------------------------------------------------ calls

    def _carry_out(self, later: Later, reader: bool = False) -> None:
        """Start and cancel calls, and start detached requests (outside the lock:
        cancelling runs the tool's callbacks, which may report progress)."""
        for item in later:
            if isinstance(item, CancelCall):
                self._bridge.cancel(item.call_id)
            elif isinstance(item, Detached):
                self._bridge.detach(item)
            else:
                assert isinstance(item, _StdioCall)  # (the bridge's entry_type)
                self._start_call(item, reader)

    def _start_call(self, entry: _StdioCall, reader: bool) -> None:
        """Start the call of ``entry`` (the bridge's table holds it) through the bridge; the
        reader runs a quick tool itself."""
        name = entry.action.name
        roles = self._roles
        inline = False
        if reader:
            if roles.free:  # the inline policy (see _Roles): the spare is free, the tool quick
                inline = roles.took.get(name, 0.0) < _QUICK_S  # unknown: try it inline
            elif len(roles.threads) == 1 and not self._output.ended:
                self._start_thread("toolnexus-mcp-spare", reading=False)
        entry.inline = inline
        entry.began = began = time.monotonic()
        entry.runner = threading.get_ident() if inline else 0
        entry.returned = False
        if inline:
            self._output.deferring = False
            roles.inline_since = began
            if roles.asleep:
                with self._lock:
                    roles.wake.notify()
        try:
            self._bridge.start(entry, inline)
        finally:
            if inline and not entry.returned:  # settled elsewhere (a deadline) or a failure
                with self._lock:
                    self._inline_ended()

    def _inline_ended(self) -> None:
        """This thread's inline tool returned (the lock is held): reading may defer again.

        Only the thread that still reads defers: its "another line is buffered" is true of
        the buffer it reads. Checked under the lock: unlocked, the spare could take reading
        over between the check and the store, read those lines and block, leaving the next
        answer deferred for good."""
        roles = self._roles
        roles.inline_since = None
        roles.last_inline = time.monotonic()
        if roles.reading == threading.get_ident():
            self._output.deferring = self._lines.more

    # ------------------------------------------------------------------ the end

    def _shut_down(self) -> None:
        """stdin closed (or a signal came): let running calls (and detached requests)
        answer within the grace period (not after a signal), then cancel what still
        runs."""
        deadline = time.monotonic() + self._grace
        while self._stop_code is None and not self._output.broken:
            if not self._take_lock():
                break
            try:
                # Only the shut-down waits for calls to be reported: from now on each
                # reported call pokes it.
                self._bridge.on_reported = self._poke
                running = self._session.running_calls or self._bridge.busy
            finally:
                self._lock.release()
            remaining = deadline - time.monotonic()
            if not running or remaining <= 0:
                break
            self._nap(min(remaining, _SIGNAL_POLL_S))  # a reported call pokes
        if not self._take_lock():
            return  # a writer is stuck: _end does not wait for it long either
        try:
            self._output.deferring = False
            later = self._bridge.dispatch(self._session.close())
            self._output.flush()
        finally:
            self._lock.release()
        self._carry_out(later)

    def _end(self) -> None:
        """Write nothing more, and end every thread this server started (the host's too)."""
        self._ending = True
        # Taking the lock waits for a writer mid-message; a writer stuck on a full pipe is
        # not waited for long.
        locked = self._lock.acquire(timeout=_CLOSE_WAIT_S)
        if locked:
            self._output.deferring = False
            with contextlib.suppress(Exception):
                self._output.flush()
            self._output.ended = True
            self._roles.wake.notify_all()
            self._lock.release()
        self._output.ended = True
        self._lines.wake()
        self._host.close()  # waits for a warm-up under way; a host made later is closed
        # The reading threads end at once, but for one still inside a tool that ignores
        # its token: that one is left to finish (its late answer is never written).
        # A reader blocked in a read nothing can wake (stdin's very first read, where it
        # cannot be selected on) ends with the process, or when its read returns.
        for thread in self._roles.threads:
            if thread is not threading.current_thread() and not self._lines.stuck:
                thread.join(_CLOSE_WAIT_S)
