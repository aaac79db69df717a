"""What ECMA-262 ``pattern`` checks cost, and that a hostile one stalls nobody.

Run: ``python benchmarks/pattern_speed.py`` (``--quick`` for fewer rounds). Prints medians:

0. every example pattern of the table in ``docs/patterns.md`` (read from the page) against a
   string of a million characters built to make it read the whole string, in CPU time
   (target: at most 10 ms each), then a few other linear patterns and a ReDoS shape;
1. the issue's ReDoS reproduction ``^(a+)+$`` against ``"a"*28 + "!"``, decided by
   :func:`toolnexus._ecma.compile_pattern`, beside Python's ``re`` on shorter inputs (it
   doubles per character: 28 characters took 24 s);
2. common deterministic patterns on short strings, against ``re.compile(p).search`` (the
   baseline: what validation.py ran before), as a ratio;
3. the linear engine's throughput on long inputs (ns per character);
4. ping latency over ``toolnexus serve`` (stdio) while a tool call's argument is checked
   against ``^(a+)+$`` (the module doubles as the served tool module), beside an idle ping.
"""

from __future__ import annotations

import json
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from toolnexus import Toolkit, tool  # noqa: E402
from toolnexus._ecma import _compile, compile_pattern  # noqa: E402

REDOS = "^(a+)+$"
MILLION = 1_000_000

# A million-character input per example of docs/patterns.md's table: each makes the
# pattern read the whole string (a run that fails at its very end, or no match at all).
INPUTS: dict[str, Callable[[int], str]] = {
    "^[a-z0-9_]+$": lambda n: "a" * n + "!",
    "^.*\\.py$": lambda n: "a/" * (n // 2) + "x",
    "^\\d+$": lambda n: "1" * n + "x",
    "^[\\w.-]+$": lambda n: "w" * n + "!",
    "\\bfoo\\b": lambda n: "foox" * (n // 4),
    "^\\S+$": lambda n: "a" * n + " ",
    "^\\p{L}+$": lambda n: "\u00e9" * n + "1",
    "\\p{Lu}": lambda n: "a" * n,
    "^[^\\u0000-\\u001F]*$": lambda n: "a" * n + "\x01",
    "^(?<q>[\"'])[^\"']*\\k<q>$": lambda n: "'" + "a" * n + '"',
    "(?<=@)example\\.com$": lambda n: "@example.co" * (n // 11),
    "^(?=.*\\d)(?=.*[a-z])(?=.*[A-Z]).{8,}$": lambda n: "x" * n,
    "^(?=.*a)(?=.*b)(?=.*c).*$": lambda n: "x" * n,
}
# Linear too, outside the table: what an email-like pattern and a costlier continuation
# cost, then a text with a letter past U+FFFF (the pattern as written, not its BMP copy),
# and the ReDoS shape on the linear matcher.
OTHERS: list[tuple[str, Callable[[int], str], str]] = [
    ("^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", lambda n: "a@" + "a." * (n // 2), ""),
    ("^\\d+(?:\\.\\d{1,2})?$", lambda n: "1" * n + "x", "re gives back each digit"),
    ("^\\p{L}+$", lambda n: "\u00e9" * n + "\U0001d400!", "one astral letter"),
    (REDOS, lambda n: "a" * n + "!", "ambiguous in a loop"),
]


def docs_table_patterns() -> list[str]:
    """The example patterns of docs/patterns.md's syntax table, in order."""
    page = (ROOT / "docs" / "patterns.md").read_text(encoding="utf-8")
    patterns: list[str] = []
    for line in page.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| `") and len(cells) == 3:
            patterns.extend(re.findall(r"`([^`]+)`", cells[2]))
    return patterns


def cpu_median(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def million_table(rounds: int) -> None:
    print(
        f"0. docs/patterns.md's examples against {MILLION:,} characters (CPU time; target <= 10 ms)"
    )
    print(f"   {'pattern':<44} {'engine':<7} {'median':>9}  verdict")
    for pattern in docs_table_patterns():
        text = INPUTS[pattern](MILLION)
        check = compile_pattern(pattern)
        seconds = cpu_median(lambda c=check, t=text: c(t), rounds)
        engine = _compile(pattern).engine
        print(f"   {pattern:<44} {engine:<7} {seconds * 1e3:>6.1f} ms  {check(text)}")
    print("   other patterns")
    for pattern, build, note in OTHERS:
        text = build(MILLION)
        check = compile_pattern(pattern)
        seconds = cpu_median(lambda c=check, t=text: c(t), max(1, rounds // 2))
        engine = _compile(pattern).engine
        print(f"   {pattern:<44} {engine:<7} {seconds * 1e3:>6.1f} ms  {note}")


@tool(
    input_schema={
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": REDOS}},
        "required": ["word"],
    }
)
def spell(args: dict[str, Any]) -> str:
    """Accept a word of a's (a schema pattern that backtracking engines choke on)."""
    return "ok"


toolkit = Toolkit([spell])


def median_seconds(run: Callable[[], object], rounds: int, inner: int = 1) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(inner):
            run()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


def redos_table(rounds: int) -> None:
    print("\n1. ReDoS reproduction ^(a+)+$ against 'a'*n + '!'")
    print(f"   {'engine':<34} {'n':>7} {'median':>12}")
    backtracking = re.compile(REDOS)
    for n in (14, 16, 18):
        text = "a" * n + "!"
        seconds = median_seconds(lambda t=text: backtracking.search(t), max(3, rounds // 3))
        print(f"   {'python re (backtracking)':<34} {n:>7} {seconds * 1e3:>9.2f} ms")
    check = compile_pattern(REDOS)
    engine = _compile(REDOS).engine
    for n in (28, 1_000, 100_000):
        text = "a" * n + "!"
        inner = 50 if n < 10_000 else 1
        seconds = median_seconds(lambda t=text: check(t), rounds, inner)
        print(f"   {'compile_pattern (' + engine + ' engine)':<34} {n:>7} {seconds * 1e3:>9.3f} ms")


COMMON = [
    ("^[a-z]+$", "hello"),
    ("^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", "ada@example.org"),
    ("^\\d{4}-\\d{2}-\\d{2}$", "2026-12-03"),
    ("^[A-Za-z_][A-Za-z0-9_]*$", "snake_case_name"),
    ("\\p{L}", "42 \u00e9"),
    ("^.*\\.py$", "src/toolnexus/_ecma.py"),
]


def common_table(rounds: int) -> None:
    print("\n2. common patterns on short strings (baseline: re.compile(p).search)")
    print(f"   {'pattern':<42} {'engine':<7} {'re':>9} {'ecma':>9} {'ratio':>6}")
    for pattern, text in COMMON:
        search = re.compile(pattern.replace("\\p{L}", "[^\\W\\d_]")).search
        check = compile_pattern(pattern)
        base = median_seconds(lambda s=search, t=text: s(t) is not None, rounds, 20_000)
        ours = median_seconds(lambda c=check, t=text: c(t), rounds, 20_000)
        print(
            f"   {pattern:<42} {_compile(pattern).engine:<7} {base * 1e9:>6.0f} ns "
            f"{ours * 1e9:>6.0f} ns {ours / base:>5.2f}x"
        )


def linear_table(rounds: int) -> None:
    print("\n3. the linear engine on long inputs")
    print(f"   {'pattern':<22} {'n':>8} {'median':>10} {'per char':>10}")
    cases = [
        (REDOS, "a" * 100_000 + "!"),
        ("^(\\w+\\s?)*$", "word " * 20_000 + "!"),
        ("^(?=.*\\d)(a|ab)*c", "ab" * 50_000),
    ]
    for pattern, text in cases:
        matcher = _compile(pattern)
        assert matcher.engine == "linear", pattern
        seconds = median_seconds(lambda m=matcher, t=text: m(t), max(3, rounds // 2))
        per_char = seconds / len(text) * 1e9
        print(f"   {pattern:<22} {len(text):>8} {seconds * 1e3:>7.1f} ms {per_char:>7.0f} ns")


class _Client:
    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolnexus", "serve", "benchmarks/pattern_speed.py:toolkit"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.lines: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put((time.perf_counter(), json.loads(line)))

    def send(self, message: dict[str, Any]) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return time.perf_counter()

    def wait_for(self, rid: str) -> float:
        while True:
            arrived, message = self.lines.get(timeout=120)
            if message.get("id") == rid:
                return arrived

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def ping_table(rounds: int) -> None:
    print("\n4. over toolnexus serve (stdio): a ping sent while a call's pattern is checked")
    client = _Client()
    client.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                 "params": {"protocolVersion": "2025-11-25", "capabilities": {}}})  # fmt: skip
    client.wait_for("init")
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    idle, busy, call = [], [], []
    for number in range(rounds):
        sent = client.send({"jsonrpc": "2.0", "id": f"idle{number}", "method": "ping"})
        idle.append(client.wait_for(f"idle{number}") - sent)
        word = "a" * 200_000 + "!"
        call_sent = client.send(
            {"jsonrpc": "2.0", "id": f"call{number}", "method": "tools/call",
             "params": {"name": "spell", "arguments": {"word": word}}}
        )  # fmt: skip
        ping_sent = client.send({"jsonrpc": "2.0", "id": f"ping{number}", "method": "ping"})
        busy.append(client.wait_for(f"ping{number}") - ping_sent)
        call.append(client.wait_for(f"call{number}") - call_sent)
    client.close()
    print(f"   {'what':<52} {'median':>10}")
    print(f"   {'ping, idle server':<52} {statistics.median(idle) * 1e3:>7.2f} ms")
    label = "ping, during the check of a 200k-character argument"
    print(f"   {label:<52} {statistics.median(busy) * 1e3:>7.2f} ms")
    print(f"   {'the call itself (^(a+)+$ decided on the linear engine)':<52} "
          f"{statistics.median(call) * 1e3:>7.1f} ms")  # fmt: skip
    ratio = statistics.median(busy) / statistics.median(idle)
    print(f"   busy/idle ping ratio: {ratio:.1f}x (done when: the busy ping within 100 ms)")


def main() -> None:
    rounds = 3 if "--quick" in sys.argv else 9
    million_table(5 if rounds < 9 else rounds)
    redos_table(rounds)
    common_table(rounds)
    linear_table(rounds)
    ping_table(rounds)


if __name__ == "__main__":
    main()
