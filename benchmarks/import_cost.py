"""What `import toolnexus` and the contract's values cost, against same-run baselines.

Run it from a checkout (it measures the package in ``src/``, not an installed copy):

    python benchmarks/import_cost.py            # 15 runs per import figure
    python benchmarks/import_cost.py --runs 31

Three tables:

1. Import cost, from ``python -X importtime`` in fresh interpreters: the cumulative time of
   everything ``import toolnexus`` loads, against importing ``dataclasses``, ``threading`` and
   ``json`` (the issue's baseline; the target is at most 2x). Compiled bytecode is written
   first, so no run pays for compiling.
2. Whole-process wall time: ``python -c "import toolnexus"`` against a bare interpreter
   (``python -c pass``), plus how many threads the import left running (the promise: none).
3. Building a ``ToolContext`` and a ``ToolResult`` against a bare function call (``timeit``).

Every figure is a median of several runs; ratios compare figures from this run only, so a
busy machine shifts both sides alike. Nothing here asserts: it prints numbers to read.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
MARK = "--toolnexus-benchmark-mark--"
TARGET_RATIO = 2.0


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def ensure_bytecode() -> None:
    """Compile the package (and warm the stdlib caches) so no measured run compiles."""
    compileall.compile_dir(str(SRC / "toolnexus"), quiet=1)
    # One throw-away import writes any missing stdlib .pyc files too.
    subprocess.run(
        [sys.executable, "-c", "import dataclasses, threading, json, toolnexus"],
        env=child_env(),
        check=True,
    )


def importtime_us(statement: str) -> float:
    """Cumulative microseconds `-X importtime` reports for the modules `statement` imports.

    Lines before the marker belong to interpreter start-up (site, encodings) and are skipped;
    after it, the top-level lines (no indentation) are exactly the imports `statement` made,
    and their cumulative figures add up to its whole cost.
    """
    code = f"import sys; sys.stderr.write({MARK!r} + '\\n'); {statement}"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=child_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    lines = proc.stderr.splitlines()
    total = 0
    for line in lines[lines.index(MARK) + 1 :]:
        if not line.startswith("import time:"):
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if cumulative.strip().isdigit() and not name.startswith("  "):
            total += int(cumulative)
    return float(total)


def wall_ms(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], env=child_env(), check=True)
    return (time.perf_counter() - start) * 1000


def threads_after_import() -> str:
    code = (
        "import threading; before = threading.active_count(); import toolnexus; "
        "print(threading.active_count() - before)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def construction_ns(runs: int) -> list[tuple[str, float]]:
    sys.path.insert(0, str(SRC))
    from toolnexus import CancellationTokenSource, Request, ToolContext, ToolResult

    def noop(*args: object, **kwargs: object) -> None:
        return None

    token = CancellationTokenSource().token
    request = Request("input", "Which environment?")
    namespace = {
        "noop": noop,
        "ToolContext": ToolContext,
        "ToolResult": ToolResult,
        "Request": Request,
        "token": token,
        "request": request,
    }
    cases = [
        ("bare function call  noop(5000)", "noop(5000)"),
        ("ToolContext(5000)", "ToolContext(5000)"),
        ("ToolContext(5000, token)", "ToolContext(5000, token)"),
        ('ToolResult.ok("done")', 'ToolResult.ok("done")'),
        ('ToolResult.ok("done", {"n": 1})', 'ToolResult.ok("done", {"n": 1})'),
        ("ToolResult.pending(request)", "ToolResult.pending(request)"),
        ('Request("input", "Which?")', 'Request("input", "Which?")'),
    ]
    results = []
    for label, stmt in cases:
        timer = timeit.Timer(stmt, globals=namespace)
        number, _ = timer.autorange()
        samples = timer.repeat(repeat=runs, number=number)
        results.append((label, statistics.median(samples) / number * 1e9))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median taken)")
    runs = parser.parse_args(argv).runs

    print(f"python {sys.version.split()[0]} ({sys.executable}); {runs} runs per figure, medians")
    ensure_bytecode()

    baseline_stmt = "import dataclasses, threading, json"
    package_stmt = "import toolnexus"
    base_samples, package_samples = [], []
    for _ in range(runs):  # interleaved, so drift in machine load hits both alike
        base_samples.append(importtime_us(baseline_stmt))
        package_samples.append(importtime_us(package_stmt))
    base_us = statistics.median(base_samples)
    package_us = statistics.median(package_samples)
    ratio = package_us / base_us

    print()
    print("1. import cost (-X importtime, cumulative, fresh interpreter, bytecode compiled)")
    print(f"   {'what':<40} {'median':>10} {'ratio':>8}")
    print(f"   {baseline_stmt:<40} {base_us / 1000:>8.2f}ms {1.0:>7.2f}x")
    print(f"   {package_stmt:<40} {package_us / 1000:>8.2f}ms {ratio:>7.2f}x")
    verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
    print(f"   -> import toolnexus {verdict} the target (<= {TARGET_RATIO:.1f}x the baseline)")

    walls: dict[str, list[float]] = {"pass": [], baseline_stmt: [], package_stmt: []}
    for _ in range(runs):  # interleaved, as above
        for statement, samples in walls.items():
            samples.append(wall_ms(statement))
    bare, base_wall, package_wall = (statistics.median(samples) for samples in walls.values())
    print()
    print("2. whole process wall time (python -c ...)")
    print(f"   {'what':<40} {'median':>10} {'vs bare':>8}")
    print(f"   {'pass  (bare interpreter)':<40} {bare:>8.2f}ms {1.0:>7.2f}x")
    print(f"   {baseline_stmt:<40} {base_wall:>8.2f}ms {base_wall / bare:>7.2f}x")
    print(f"   {package_stmt:<40} {package_wall:>8.2f}ms {package_wall / bare:>7.2f}x")
    print(f"   threads started by import toolnexus: {threads_after_import()}")

    print()
    print("3. building values (timeit, per call)")
    rows = construction_ns(runs)
    call_ns = rows[0][1]
    print(f"   {'what':<40} {'median':>10} {'vs call':>8}")
    for label, ns in rows:
        print(f"   {label:<40} {ns:>8.0f}ns {ns / call_ns:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
