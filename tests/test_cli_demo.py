"""`toolnexus demo`: the README's first command runs the bundled toolkit through a plain
call, a cancelled call, timeouts and a question answered, from any folder."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import run
from toolnexus import _demo as demo

ROOT = Path(__file__).resolve().parent.parent


def outcomes(stdout: str) -> list[tuple[str, str]]:
    """(label, outcome) for each call line of the demo's output."""
    found = []
    for line in stdout.splitlines():
        for outcome in ("ok", "error", "pending", "timeout", "cancelled"):
            marker = f" {outcome} "
            if line.startswith("   ") and marker in line and " ms  " in line:
                found.append((line[3:].split("  ")[0].strip(), outcome))
                break
    return found


def test_the_demo_runs_from_any_folder_and_every_scenario_ends_as_shown(tmp_path):
    out = run("demo", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""
    for heading in (
        "1. A plain call",
        "2. A cancelled call",
        "3. Timeouts",
        "4. A question, answered",
    ):
        assert heading in out.stdout
    assert outcomes(out.stdout) == [
        ('crunch {"steps": 3}', "ok"),
        ('nap {"seconds": 0.05} (async)', "ok"),
        ('crunch {"steps": 100000}', "cancelled"),
        ('fetchish {"url": "/a"}, 5000 ms', "ok"),
        ('fetchish {"url": "/a"}, 10 ms', "error"),
        ('nap {"seconds": 10}, 200 ms', "timeout"),
        ('stubborn {"seconds": 1}, 200 ms', "timeout"),
        ("deploy {}", "pending"),
        ("resumed later with env=staging", "ok"),
        ("wait_for answers env=production", "ok"),
        ("wait_for declines", "error"),
    ]
    assert "deployed to production" in out.stdout
    assert "toolnexus call toolnexus.demo:toolkit deploy" in out.stdout


def test_run_returns_0_and_writes_through_the_given_function():
    lines: list[str] = []
    assert demo.run(write=lines.append) == 0, "\n".join(lines)
    assert lines[0].startswith("toolnexus demo:")
    assert any("completed 3 step(s)" in line for line in lines)


def test_the_demo_toolkit_holds_the_five_tools_one_async():
    assert [t.name for t in demo.toolkit] == ["crunch", "fetchish", "deploy", "nap", "stubborn"]
    assert [t.name for t in demo.toolkit if t.is_async] == ["nap"]


def test_the_demo_tools_follow_the_contract_without_a_host():
    assert demo.crunch({"steps": 3}).output == "completed 3 step(s)"
    assert demo.fetchish({"url": "/a"}).output == "fetched /a within 30000ms"
    assert demo.deploy({}).is_pending
