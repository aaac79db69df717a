"""The client's bounded pipe writer (``PipeWriter``): a send never blocks, what the pipe
takes goes at once, and the rest keeps its order behind what waits."""

from __future__ import annotations

import os
import select
import sys
import threading

import pytest

from timing import TIMEOUT
from toolnexus.mcp._shared._peer import PipeWriter

pytestmark = pytest.mark.skipif(
    not hasattr(select, "poll") or sys.platform == "win32", reason="needs select.poll"
)


def writer_on_a_pipe(stall_s: float = TIMEOUT) -> tuple[PipeWriter, int, list[str]]:
    read_end, write_end = os.pipe()
    stalls: list[str] = []
    writer = PipeWriter(
        write_end, stall_s=stall_s, max_bytes=1 << 24, on_stalled=stalls.append, label="t"
    )
    return writer, read_end, stalls


def read_exactly(fd: int, size: int) -> bytes:
    os.set_blocking(fd, True)
    chunks = b""
    while len(chunks) < size:
        chunks += os.read(fd, size - len(chunks))
    return chunks


def test_a_send_the_pipe_has_room_for_is_in_the_pipe_when_send_returns():
    writer, read_end, _ = writer_on_a_pipe()
    try:
        os.set_blocking(read_end, False)
        for n in range(50):
            line = f"message {n}\n".encode()
            writer.send(line)
            # Written by send itself: no hand-off to the writer thread to wait for.
            assert os.read(read_end, 100) == line
    finally:
        writer.close()
        os.close(read_end)


def test_what_the_pipe_cannot_take_yet_keeps_its_order_behind_what_waits():
    writer, read_end, stalls = writer_on_a_pipe()
    try:
        big = b"a" * (1 << 20)  # far more than a pipe holds: most of it waits
        writer.send(big)
        sent = [big] + [f"then {n}\n".encode() for n in range(200)]
        for line in sent[1:]:
            writer.send(line)  # queued behind the rest of big, never written ahead of it
        expected = b"".join(sent)
        assert read_exactly(read_end, len(expected)) == expected
        assert stalls == []
    finally:
        writer.close()
        os.close(read_end)


def test_sends_from_many_threads_arrive_whole_and_each_thread_in_its_order():
    writer, read_end, _ = writer_on_a_pipe()
    lines_per_thread, threads = 300, 8
    received: list[bytes] = []
    total = sum(
        len(f"{t}:{n}:{'x' * (n % 7) * 500}\n")
        for t in range(threads)
        for n in range(lines_per_thread)
    )

    def read_all() -> None:
        received.append(read_exactly(read_end, total))

    reader = threading.Thread(target=read_all)
    reader.start()

    def send(t: int) -> None:
        for n in range(lines_per_thread):
            writer.send(f"{t}:{n}:{'x' * (n % 7) * 500}\n".encode())

    senders = [threading.Thread(target=send, args=(t,)) for t in range(threads)]
    for each in senders:
        each.start()
    for each in senders:
        each.join(TIMEOUT)
    reader.join(TIMEOUT)
    try:
        assert received, "the reader did not get every byte"
        seen: dict[int, list[int]] = {t: [] for t in range(threads)}
        for line in received[0].decode().splitlines():
            t, n, pad = line.split(":")
            assert pad == "x" * (int(n) % 7) * 500  # whole: no other line inside it
            seen[int(t)].append(int(n))
        assert all(order == list(range(lines_per_thread)) for order in seen.values())
    finally:
        writer.close()
        os.close(read_end)
