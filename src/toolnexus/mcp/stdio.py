"""The stdio driver: a :class:`~toolnexus.mcp.ServerSession` on stdin/stdout.

Everything that touches a stream or a thread on the MCP side lives here. The thread that
calls :func:`serve_stdio` reads newline-delimited JSON from stdin, feeds the session and
starts each tool call on the :class:`~toolnexus.host.Host` (``Host.submit``) without
waiting for it; whoever settles a call (the worker that ran it, or the host at a deadline
or cancel) writes its answer. So reading never waits for a tool, and pings and
cancellations are answered while tools run. All output goes through one lock, the same one
that guards the session, so messages never interleave and a call's progress notifications
are always written before its response. stdout carries protocol JSON only: while serving,
whatever a tool prints goes to stderr.

The promises a hostile or unlucky client cannot break:

- the server never goes deaf: whatever fails while a line is read, parsed or dispatched
  answers that request (``-32602``/``-32603``; a notification is dropped) and reading goes
  on; a line over ``max_line_bytes`` is refused without being buffered;
- the bytes of tool-call arguments held by calls in flight have a cap
  (``max_inflight_bytes``): a request beyond it is answered ``-32603 server overloaded``;
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
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from ..cancellation import CancellationTokenSource
from ..errors import InvalidValueError
from ..result import ToolResult
from .session import INTERNAL_ERROR, Action, CancelCall, Send, ServerSession, StartCall

if TYPE_CHECKING:
    from ..binding import AnswerStore
    from ..host import Host
    from ..toolkit import Toolkit

__all__ = [
    "DEFAULT_GRACE_MS",
    "DEFAULT_MAX_INFLIGHT_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "serve_stdio",
]

_log = logging.getLogger("toolnexus")

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest message (one line) the stdio server reads; longer ones are refused."""

DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
"""The most bytes of ``tools/call`` request lines whose calls may run at once.

Parsed arguments take several times their JSON size in memory (measured: 4.6x for a list
of numbers, 10x for a list of short strings), so this bounds what a client can pin to a few
hundred MiB. It admits four calls of the largest line (:data:`DEFAULT_MAX_LINE_BYTES`) at
once, or tens of thousands of ordinary ones; a request beyond it is answered ``-32603``
(server overloaded), never lost."""

DEFAULT_GRACE_MS = 1000
"""How long calls still running when stdin closes get to answer before being cancelled."""

EXIT_SIGINT = 130
"""What :func:`serve_stdio` returns after SIGINT (128 + the signal, as shells report it)."""
EXIT_SIGTERM = 143
"""What :func:`serve_stdio` returns after SIGTERM."""

_DRAIN_CHUNK = 1 << 16
_CLOSE_WAIT_S = 1.0  # at the end, how long to wait for a writer before closing stdout


def serve_stdio(
    toolkit: Toolkit,
    *,
    name: str = "toolnexus",
    version: str | None = None,
    timeout_ms: int | None = None,
    stdin: IO[Any] | None = None,
    stdout: IO[Any] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES,
    grace_ms: int = DEFAULT_GRACE_MS,
    secret: bytes | str | Sequence[bytes | str] | None = None,
    answer_store: AnswerStore | None = None,
    max_rounds: int = 1,
) -> int:
    """Serve ``toolkit`` over MCP on stdin/stdout until stdin closes; return the exit code.

    Both protocol eras are spoken: modern (2026-07-28, stateless) and legacy
    (``initialize``, 2024-11-05 … 2025-11-25). Each call runs on a
    :class:`~toolnexus.host.Host` with ``timeout_ms`` as its deadline (``None``: no
    deadline). ``name`` and ``version`` (default: the toolnexus version) are the identity
    clients see. ``secret`` (else ``TOOLNEXUS_SECRET``) signs the binding of each question
    to its call and the modern ``requestState``: the same key lets a restarted server resume
    what it asked before. ``answer_store`` remembers used answers (default: in memory).
    ``max_rounds`` is how many answers one call may take (1, the loop rule: a retry that
    asks again is ``unresolved: <prompt>``; more lets the retry's question be asked).

    ``stdin``/``stdout`` default to the process's own streams; binary or text streams
    both work. While serving, ``sys.stdout`` points at stderr (and, for the process's own
    stdout, so does file descriptor 1), so a tool's ``print`` cannot corrupt the
    protocol. A line longer than ``max_line_bytes`` is refused without being buffered. A
    ``tools/call`` whose line would take the bytes of calls in flight over
    ``max_inflight_bytes`` is answered ``-32603`` (server overloaded) instead of run. A
    line whose handling fails in any way is answered (``-32602``/``-32603``) and reading
    goes on. When stdin closes, calls still running get ``grace_ms`` to answer; then they
    are cancelled and the function returns, every thread it started ended.

    Called on the main thread, SIGINT and SIGTERM stop the server (when their handlers
    are Python's defaults): running calls are cancelled and it returns 130 or 143.

    Returns 0 after stdin closed, 1 when stdout could not be written (the client went
    away), 130 after SIGINT (or ``KeyboardInterrupt``), 143 after SIGTERM. Raises
    ``ValueError`` for a bad argument.

    Example::

        from toolnexus import Toolkit, tool
        from toolnexus.mcp import serve_stdio

        @tool
        def add(a: int, b: int) -> int:
            "Add two numbers."
            return a + b

        if __name__ == "__main__":
            raise SystemExit(serve_stdio(Toolkit([add]), name="calculator"))
    """
    if (
        isinstance(max_line_bytes, bool)
        or not isinstance(max_line_bytes, int)
        or max_line_bytes < 64
    ):
        raise InvalidValueError(f"max_line_bytes must be an int >= 64, got {max_line_bytes!r}")
    if (
        isinstance(max_inflight_bytes, bool)
        or not isinstance(max_inflight_bytes, int)
        or max_inflight_bytes < 1
    ):
        raise InvalidValueError(
            f"max_inflight_bytes must be an int >= 1 (bytes), got {max_inflight_bytes!r}"
        )
    if isinstance(grace_ms, bool) or not isinstance(grace_ms, int) or grace_ms < 0:
        raise InvalidValueError(f"grace_ms must be an int >= 0 (milliseconds), got {grace_ms!r}")
    if timeout_ms is not None and (
        isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0
    ):
        raise InvalidValueError(
            f"timeout_ms must be None or an int >= 0 (milliseconds), got {timeout_ms!r}"
        )
    # The session and the host share the key and the used answers: a question asked before
    # a restart is resumed after it (same key), and each answer is used once.
    session = ServerSession(toolkit, name=name, version=version, secret=secret,
                            answer_store=answer_store, max_rounds=max_rounds)

    def make_host() -> Host:
        from ..host import Host

        return Host(toolkit, timeout_ms=timeout_ms, secret=secret, answer_store=answer_store,
                    max_rounds=max_rounds)

    with _protocol_streams(stdin, stdout) as (read_line, write):
        server = _StdioServer(session, make_host, read_line, write, max_line_bytes,
                              max_inflight_bytes, grace_ms)
        return server.run()


# --------------------------------------------------------------------------- streams

ReadLine = Callable[[int], bytes]
Write = Callable[[bytes], None]


@contextlib.contextmanager
def _protocol_streams(
    stdin: IO[Any] | None, stdout: IO[Any] | None
) -> Iterator[tuple[ReadLine, Write]]:
    """The protocol's line reader and writer; stdout is kept for protocol JSON only."""
    read_line = _reader(stdin if stdin is not None else sys.stdin)
    saved_stdout = sys.stdout
    if stdout is not None:
        write = _writer(stdout)
        sys.stdout = sys.stderr
        try:
            yield read_line, write
        finally:
            sys.stdout = saved_stdout
        return
    # Our own stdout: keep a private copy of fd 1 for the protocol and point fd 1 at
    # stderr, so even output that bypasses sys.stdout (C code, child processes) misses it.
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        protocol_fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        protocol_fd = -1
    if protocol_fd < 0:
        write = _writer(sys.stdout)
        sys.stdout = sys.stderr
        try:
            yield read_line, write
        finally:
            sys.stdout = saved_stdout
        return
    sys.stdout = sys.stderr
    try:
        yield read_line, _raw_writer(protocol_fd)
    finally:
        sys.stdout = saved_stdout
        with contextlib.suppress(Exception):
            saved_stdout.flush()
        with contextlib.suppress(OSError):
            os.dup2(protocol_fd, 1)
        with contextlib.suppress(OSError):
            os.close(protocol_fd)


def _reader(stream: IO[Any] | None) -> ReadLine:
    if stream is None:
        return lambda limit: b""
    binary = stream if not isinstance(stream, io.TextIOBase) else getattr(stream, "buffer", None)
    if binary is not None:
        readline = binary.readline
        return lambda limit: bytes(readline(limit))

    def read_text(limit: int) -> bytes:
        # A text stream without a buffer (io.StringIO): its limit counts characters.
        line = stream.readline(limit)
        return line.encode("utf-8", "surrogateescape")

    return read_text


def _raw_writer(fd: int) -> Write:
    """Whole messages straight to the file descriptor: no buffer, so no buffer lock that a
    thread could still hold when the interpreter exits (CPython aborts on that)."""

    def write(data: bytes) -> None:
        written = os.write(fd, data)  # a blocking pipe takes it whole unless interrupted
        if written < len(data):
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view):]

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
    """Raised by the server's signal handler on the reading thread: stop serving."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _StdioServer:
    def __init__(
        self,
        session: ServerSession,
        make_host: Callable[[], Host],
        read_line: ReadLine,
        write: Write,
        max_line_bytes: int,
        max_inflight_bytes: int,
        grace_ms: int,
    ) -> None:
        self._session = session
        self._make_host = make_host
        self._host: Host | None = None
        self._host_lock = threading.Lock()
        self._warm_up: threading.Thread | None = None
        self._read_line = read_line
        self._write_raw = write
        self._limit = max_line_bytes
        self._grace = grace_ms / 1000
        # One lock for the session and the output: what the session says is written in
        # the order it said it, before anyone else may talk to it.
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._draining = False  # set (under the lock) once _shut_down waits on _settled
        self._sources: dict[int, CancellationTokenSource] = {}
        self._broken = False  # stdout could not be written
        self._ended = False  # the server is done: write nothing more
        # The in-flight byte cap: what each running call's request line weighed.
        self._cap = max_inflight_bytes
        self._inflight = 0
        self._weights: dict[int, int] = {}
        self._newest_call = 0
        # Signals: a code once one arrived; the handler raises only while the reading
        # thread blocks (reading, or waiting at the end), so a line is never half-handled.
        self._stop_code: int | None = None
        self._interruptible = False

    def run(self) -> int:
        code = 0
        with self._signals():
            try:
                try:
                    self._read_all()
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
        return code or (1 if self._broken else 0)

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
        for signum, default in ((signal.SIGINT, signal.default_int_handler),
                                (getattr(signal, "SIGTERM", None), signal.SIG_DFL)):
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
        if self._ended:
            return  # already closing the host: nothing left to interrupt
        first = self._stop_code is None
        if first:
            self._stop_code = 128 + signum
        # A second signal stops at once, wherever the reading thread is.
        if self._interruptible or not first:
            raise _Stop(self._stop_code or 128 + signum)

    # ------------------------------------------------------------------ reading

    def _read_all(self) -> None:
        while not self._broken and self._stop_code is None:
            self._interruptible = True
            try:
                line = self._read_line(self._limit + 1)
            except (OSError, ValueError) as exc:  # stdin vanished or was closed under us
                _log.debug("toolnexus mcp: stdin read failed: %s", exc)
                return
            except MemoryError:
                self._interruptible = False
                self._drain_line()
                self._handle(self._session.line_failed, "out of memory reading the line")
                continue
            finally:
                self._interruptible = False
            if not line:
                return
            try:
                self._on_line(line)
            except Exception as exc:  # the session answers its own failures: a last guard
                _log.exception("toolnexus mcp: handling a line failed")
                with contextlib.suppress(Exception):
                    self._handle(self._session.line_failed, f"{type(exc).__name__}: {exc}")

    def _on_line(self, line: bytes) -> None:
        if len(line) > self._limit and not line.endswith(b"\n"):
            length = len(line) + self._drain_line()
            self._handle(self._session.line_too_long, length, self._limit)
            return
        with self._lock:
            later = self._send_all(self._session.receive_line(line), len(line))
        if later:
            self._carry_out(later)
        if self._warm_up is None:
            # The host (and the event loop machinery it imports) loads once the first
            # answer is out, while the client reads it: start-up is not kept waiting.
            self._warm_up = threading.Thread(
                target=self._get_host, name="toolnexus-mcp-warm-up", daemon=True
            )
            self._warm_up.start()

    def _drain_line(self) -> int:
        skipped = 0
        while True:
            try:
                chunk = self._read_line(_DRAIN_CHUNK)
            except (OSError, ValueError, MemoryError):
                return skipped
            skipped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return skipped

    def _get_host(self) -> Host:
        host = self._host
        if host is None:
            with self._host_lock:
                host = self._host
                if host is None:
                    host = self._host = self._make_host()
        return host

    # ------------------------------------------------------------------ writing

    def _handle(self, feed: Callable[..., list[Action]], *args: Any) -> None:
        with self._lock:
            later = self._send_all(feed(*args))
        if later:
            self._carry_out(later)

    def _send_all(self, actions: list[Action], weight: int = 0) -> list[Action]:
        """Write the Send actions (the lock is held); return the rest, to run unlocked.

        ``weight`` is the size of the line the actions answer: a call it starts counts that
        much against the in-flight byte cap until the host is done with it.
        """
        later: list[Action] = []
        for action in actions:
            if isinstance(action, Send):
                self._write(action)
            elif isinstance(action, StartCall):
                call_id = action.call_id
                if call_id > self._newest_call:  # a new call, its arguments in this line
                    self._newest_call = call_id
                    if weight and self._inflight + weight > self._cap:
                        for refusal in self._session.fail_call(
                            call_id, INTERNAL_ERROR, self._overloaded(weight)
                        ):
                            if isinstance(refusal, Send):
                                self._write(refusal)
                        continue
                    self._inflight += weight
                    self._weights[call_id] = weight
                # Registered under the lock, so a cancel that arrives next finds it.
                self._sources[call_id] = CancellationTokenSource()
                later.append(action)
            else:
                later.append(action)
        return later

    def _overloaded(self, weight: int) -> str:
        return (
            f"server overloaded: {self._inflight} bytes of tool-call arguments are in flight "
            f"and this request adds {weight}, over the limit of {self._cap}; retry later, or "
            "raise the limit (toolnexus serve --max-inflight-bytes, or max_inflight_bytes)"
        )

    def _write(self, action: Send) -> None:
        if self._broken or self._ended:
            return
        try:
            data = action.to_bytes()
        except Exception as exc:  # MemoryError encoding a huge result: answer it anyway
            _log.error("toolnexus mcp: cannot encode a message: %s", exc)
            message_id = action.message.get("id")
            if "method" in action.message or message_id is None:
                return  # a notification or a request of ours: nobody waits on an answer
            data = Send(_internal_error(message_id, f"cannot encode the answer: {exc!r}")
                        ).to_bytes()
        try:
            self._write_raw(data)
        except (OSError, ValueError) as exc:
            _log.warning("toolnexus mcp: cannot write to stdout (%s); stopping", exc)
            self._broken = True

    # ------------------------------------------------------------------ calls

    def _carry_out(self, actions: list[Action]) -> None:
        """Start and cancel calls (outside the lock: cancelling runs the tool's callbacks,
        which may report progress)."""
        for action in actions:
            if isinstance(action, StartCall):
                self._start_call(action, self._sources[action.call_id])
            elif isinstance(action, CancelCall):
                with self._lock:
                    cancelled = self._sources.get(action.call_id)
                if cancelled is not None:
                    cancelled.cancel()

    def _start_call(self, action: StartCall, source: CancellationTokenSource) -> None:
        """Start the call on the host; whoever settles it writes the answer.

        No thread waits per call: the thread that ran the tool (or the host, at a deadline
        or after a cancel) runs :meth:`_finish_call`.
        """
        call_id = action.call_id
        progress = None
        if action.wants_progress:

            def progress(value: float, total: float | None, message: str | None) -> None:
                self._handle(self._session.report_progress, call_id, value, total, message)

        try:
            call = self._get_host().submit(
                action.name,
                action.arguments,
                cancellation_token=source.token,
                progress=progress,
                request=action.resumes if action.answer is not None else None,
                answer=action.answer,
            )
        except Exception as exc:  # the host promises not to raise; answer anyway if it does
            _log.exception("toolnexus mcp: the host raised for %r", action.name)
            self._finish_call(
                call_id, source, ToolResult.error(f"internal error running '{action.name}': {exc}")
            )
            return
        call.add_done_callback(lambda done: self._finish_call(call_id, source, done.result()))

    def _finish_call(
        self, call_id: int, source: CancellationTokenSource, result: ToolResult
    ) -> None:
        source.close()
        with self._lock:
            if self._sources.get(call_id) is source:
                del self._sources[call_id]
            weight = self._weights.pop(call_id, 0)
            if weight:
                self._inflight -= weight
            later = self._send_all(self._session.complete_call(call_id, result))
            if self._draining:  # only the shut-down waits on it; notify_all costs ~1 us
                self._settled.notify_all()
        if later:
            self._carry_out(later)

    # ------------------------------------------------------------------ the end

    def _shut_down(self) -> None:
        """stdin closed (or a signal came): let running calls answer within the grace
        period (not after a signal), then cancel what still runs."""
        if self._stop_code is None:
            deadline = time.monotonic() + self._grace
            with self._lock:
                self._draining = True
                while self._session.running_calls and not self._broken:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._stop_code is not None:
                        break
                    self._interruptible = True
                    try:
                        self._settled.wait(remaining)
                    finally:
                        self._interruptible = False
        with self._lock:
            later = self._send_all(self._session.close())
        self._carry_out(later)

    def _end(self) -> None:
        """Write nothing more, and end every thread this server started (the host's too)."""
        # Taking the lock waits for a writer mid-message; a writer stuck on a full pipe is
        # not waited for long.
        self._ended = True
        locked = self._lock.acquire(timeout=_CLOSE_WAIT_S)
        if locked:
            self._lock.release()
        if self._warm_up is not None:
            self._warm_up.join()
        if self._host is not None:
            self._host.close()


def _internal_error(message_id: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": INTERNAL_ERROR,
                                                          "message": f"internal error: {text}"}}
