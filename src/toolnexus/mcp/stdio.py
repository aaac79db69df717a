"""The stdio driver: a :class:`~toolnexus.mcp.ServerSession` on stdin/stdout.

Everything that touches a stream or a thread on the MCP side lives here. One thread at a
time reads newline-delimited JSON from stdin and feeds the session; the reader that gets a
tool call runs it itself, on a worker place the :class:`~toolnexus.host.Host` lends it, and
writes the answer: no thread hand-off per call. A call still running a millisecond or two
later has reading passed to a follower thread, so cancellations and pings are answered while
tools run; the host's watchdog answers at a deadline. All output goes through one
lock, the same one that guards the session, so messages never interleave and a call's
progress notifications are always written before its response. stdout carries protocol
JSON only: while serving, whatever a tool prints goes to stderr.
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
from .session import Action, CancelCall, Send, ServerSession, StartCall

if TYPE_CHECKING:
    from ..binding import AnswerStore
    from ..host import Host
    from ..toolkit import Toolkit

__all__ = ["DEFAULT_GRACE_MS", "DEFAULT_MAX_LINE_BYTES", "serve_stdio"]

_log = logging.getLogger("toolnexus")

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest message (one line) the stdio server reads; longer ones are refused."""

DEFAULT_GRACE_MS = 1000
"""How long calls still running when stdin closes get to answer before being cancelled."""

_DRAIN_CHUNK = 1 << 16
_RESCUER_TICK_S = 0.001
_RESCUER_QUIET_TICKS = 200  # about 0.2 s without calls: the rescuer sleeps


def serve_stdio(
    toolkit: Toolkit,
    *,
    name: str = "toolnexus",
    version: str | None = None,
    timeout_ms: int | None = None,
    stdin: IO[Any] | None = None,
    stdout: IO[Any] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    grace_ms: int = DEFAULT_GRACE_MS,
    secret: bytes | str | Sequence[bytes | str] | None = None,
    answer_store: AnswerStore | None = None,
) -> int:
    """Serve ``toolkit`` over MCP on stdin/stdout until stdin closes; return the exit code.

    Both protocol eras are spoken: modern (2026-07-28, stateless) and legacy
    (``initialize``, 2024-11-05 … 2025-11-25). Each call runs on a
    :class:`~toolnexus.host.Host` with ``timeout_ms`` as its deadline (``None``: no
    deadline). ``name`` and ``version`` (default: the toolnexus version) are the identity
    clients see. ``secret`` (else ``TOOLNEXUS_SECRET``) signs the binding of each question
    to its call and the modern ``requestState``: the same key lets a restarted server resume
    what it asked before. ``answer_store`` remembers used answers (default: in memory).

    ``stdin``/``stdout`` default to the process's own streams; binary or text streams
    both work. While serving, ``sys.stdout`` points at stderr (and, for the process's own
    stdout, so does file descriptor 1), so a tool's ``print`` cannot corrupt the
    protocol. A line longer than ``max_line_bytes`` is refused without being buffered.
    When stdin closes, calls still running get ``grace_ms`` to answer; then they are
    cancelled and the function returns.

    Returns 0 after stdin closed, 1 when stdout could not be written (the client went
    away). Raises ``ValueError`` for a bad argument.

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
                            answer_store=answer_store)

    def make_host() -> Host:
        from ..host import Host

        return Host(toolkit, timeout_ms=timeout_ms, secret=secret, answer_store=answer_store)

    with _protocol_streams(stdin, stdout) as (read_line, write):
        server = _StdioServer(session, make_host, read_line, write, max_line_bytes, grace_ms)
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
    stream = open(protocol_fd, "wb")  # noqa: SIM115 - closed in the finally below
    sys.stdout = sys.stderr
    try:
        yield read_line, _writer(stream)
    finally:
        sys.stdout = saved_stdout
        with contextlib.suppress(Exception):
            saved_stdout.flush()
        with contextlib.suppress(OSError):
            os.dup2(protocol_fd, 1)
        with contextlib.suppress(OSError):
            stream.close()


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


class _StdioServer:
    def __init__(
        self,
        session: ServerSession,
        make_host: Callable[[], Host],
        read_line: ReadLine,
        write: Write,
        max_line_bytes: int,
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
        self._broken = False
        self._baton = threading.Lock()  # held by the thread reading stdin
        self._baton.acquire()
        self._idle_lock = threading.Lock()
        self._idle = 0  # followers waiting for the baton
        self._spawned = 0
        self._finished = False
        self._done = threading.Event()
        self._inline_lock = threading.Lock()
        self._inline: object = None  # the call running on the reading thread, if any
        self._rescuer: threading.Thread | None = None
        self._rescuer_idle = True
        self._rescuer_wake = threading.Lock()
        self._rescuer_wake.acquire()

    def run(self) -> int:
        try:
            # This thread reads until the first tool call, then hands reading to a
            # follower and only waits for the end: it must be free to return even when a
            # tool never does.
            if self._lead(main=True):
                self._done.wait()
            return 1 if self._broken else 0
        finally:
            if self._warm_up is not None:
                self._warm_up.join()
            if self._host is not None:
                self._host.close()

    # Leader/followers: one thread at a time (the leader) reads stdin. A leader that reads
    # a tool call passes the reading to a follower and runs the call itself, on a worker
    # place the host lends it, then writes the answer and becomes a follower again. The
    # answer never waits for a thread to wake up: the next reader wakes while the tool runs.

    def _follow(self) -> None:
        while True:
            self._baton.acquire()
            if self._finished:
                self._baton.release()  # wake the next follower, so it exits too
                return
            if not self._lead(main=False):
                return
            with self._idle_lock:
                self._idle += 1

    def _pass_baton(self) -> None:
        with self._idle_lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # that follower will take it
            else:
                self._spawned += 1
                serial = self._spawned
        if spawn:
            threading.Thread(
                target=self._follow, name=f"toolnexus-mcp-reader-{serial}", daemon=True
            ).start()
        self._baton.release()

    def _run_inline(self, run_here: Callable[[], None]) -> bool:
        """Run a call on this (the reading) thread; True if this thread still reads after.

        A quick call costs no thread hand-off at all. A call still running at the
        rescuer's next tick (1-2 ms) gets reading passed on to a follower, so pings and
        cancels are answered while it runs.
        """
        marker = object()
        with self._inline_lock:
            self._inline = marker
            wake = self._rescuer_idle
            self._rescuer_idle = False
        if wake:
            self._start_rescuer()
        run_here()
        with self._inline_lock:
            still_reading = self._inline is marker
            if still_reading:
                self._inline = None
        return still_reading

    def _start_rescuer(self) -> None:
        if self._rescuer is None:
            self._rescuer = threading.Thread(
                target=self._rescue, name="toolnexus-mcp-rescuer", daemon=True
            )
            self._rescuer.start()
        else:
            self._rescuer_wake.release()

    def _rescue(self) -> None:
        """Tick every millisecond while calls run on the reading thread; pass reading on
        for one still running at the next tick. Sleeps when no call came for a while."""
        while not self._finished:
            quiet = 0
            seen: object = None
            while quiet < _RESCUER_QUIET_TICKS and not self._finished:
                time.sleep(_RESCUER_TICK_S)
                with self._inline_lock:
                    current = self._inline
                    rescue = current is not None and current is seen
                    if rescue:
                        self._inline = None
                    seen = current
                if rescue:
                    self._pass_baton()
                quiet = 0 if current is not None else quiet + 1
            with self._inline_lock:
                if self._inline is not None:
                    continue  # a call started while we were deciding to sleep
                self._rescuer_idle = True
            self._rescuer_wake.acquire()

    def _lead(self, *, main: bool) -> bool:
        """Read and handle lines; True once reading was passed on, False at the end."""
        while not self._broken:
            try:
                line = self._read_line(self._limit + 1)
            except (OSError, ValueError) as exc:  # stdin vanished or was closed under us
                _log.debug("toolnexus mcp: stdin read failed: %s", exc)
                break
            if not line:
                break
            if len(line) > self._limit and not line.endswith(b"\n"):
                length = len(line) + self._drain_line()
                self._handle(self._session.line_too_long, length, self._limit)
                continue
            with self._lock:
                later = self._send_all(self._session.receive_line(line))
            if self._warm_up is None:
                # The host (and the event loop machinery it imports) loads once the first
                # answer is out, while the client reads it: start-up is not kept waiting.
                self._warm_up = threading.Thread(
                    target=self._get_host, name="toolnexus-mcp-warm-up", daemon=True
                )
                self._warm_up.start()
            if not later:
                continue
            if main and any(isinstance(action, StartCall) for action in later):
                self._pass_baton()
                self._carry_out(later)
                return True
            run_here = self._carry_out(later, here=not main)
            if run_here is not None and not self._run_inline(run_here):
                return True  # the rescuer passed reading on while the call ran
        self._shut_down()
        self._finished = True
        self._done.set()
        self._baton.release()  # followers wake up and exit
        return False

    def _get_host(self) -> Host:
        host = self._host
        if host is None:
            with self._host_lock:
                host = self._host
                if host is None:
                    host = self._host = self._make_host()
        return host

    def _drain_line(self) -> int:
        skipped = 0
        while True:
            try:
                chunk = self._read_line(_DRAIN_CHUNK)
            except (OSError, ValueError):
                return skipped
            skipped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return skipped

    def _handle(self, feed: Callable[..., list[Action]], *args: Any) -> None:
        with self._lock:
            later = self._send_all(feed(*args))
        if later:
            self._carry_out(later)

    def _send_all(self, actions: list[Action]) -> list[Action]:
        """Write the Send actions (the lock is held); return the rest, to run unlocked."""
        later: list[Action] = []
        for action in actions:
            if isinstance(action, Send):
                self._write(action.to_bytes())
            elif isinstance(action, StartCall):
                # Registered under the lock, so a cancel that arrives next finds it.
                self._sources[action.call_id] = CancellationTokenSource()
                later.append(action)
            else:
                later.append(action)
        return later

    def _write(self, data: bytes) -> None:
        if self._broken:
            return
        try:
            self._write_raw(data)
        except (OSError, ValueError) as exc:
            _log.warning("toolnexus mcp: cannot write to stdout (%s); stopping", exc)
            self._broken = True

    def _carry_out(self, actions: list[Action], *, here: bool = False) -> Callable[[], None] | None:
        """Start and cancel calls (outside the lock: cancelling runs the tool's callbacks,
        which may report progress). With ``here``, the first call may be returned to run
        on this thread instead of being handed to a worker."""
        run_here = None
        for action in actions:
            if isinstance(action, StartCall):
                started = self._start_call(
                    action, self._sources[action.call_id], here and run_here is None
                )
                run_here = run_here or started
            elif isinstance(action, CancelCall):
                with self._lock:
                    cancelled = self._sources.get(action.call_id)
                if cancelled is not None:
                    cancelled.cancel()
        return run_here

    def _start_call(
        self, action: StartCall, source: CancellationTokenSource, here: bool
    ) -> Callable[[], None] | None:
        """Start the call on the host; whoever settles it writes the answer.

        No thread waits per call: the thread that ran the tool (or the host's watchdog, at
        a deadline or after a cancel) runs :meth:`_finish_call`. With ``here`` the host may
        return the call to run on this thread (see :meth:`_lead`).
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
            return None
        call.add_done_callback(lambda done: self._finish_call(call_id, source, done.result()))
        return None

    def _finish_call(
        self, call_id: int, source: CancellationTokenSource, result: ToolResult
    ) -> None:
        source.close()
        with self._lock:
            if self._sources.get(call_id) is source:
                del self._sources[call_id]
            later = self._send_all(self._session.complete_call(call_id, result))
            if self._draining:  # only the shut-down waits on it; notify_all costs ~1 us
                self._settled.notify_all()
        if later:
            self._carry_out(later)

    def _shut_down(self) -> None:
        deadline = time.monotonic() + self._grace
        with self._lock:
            self._draining = True
            while self._session.running_calls and not self._broken:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._settled.wait(remaining)
            later = self._send_all(self._session.close())
        self._carry_out(later)
