"""Judge a conformance-suite run (server or client): every in-scope check must pass.

``python verdict.py RESULTS_DIR REQUIREMENTS EXPECTED_FILE`` reads the ``checks.json`` the
suite wrote for each scenario (``-o RESULTS_DIR``). A check that FAILED is fine only when
its scenario is out of scope (``OUT_OF_SCOPE`` in ``EXPECTED_FILE``: features toolnexus
does not offer) or listed as an expected failure (``scenario`` or ``scenario:check-id``,
waiting on another issue). An expected failure that passes is stale and fails too, so the
list shrinks as that work lands. Warnings (SHOULDs) are printed, never fatal. Unlike the
suite's own exit code, this also judges the scenarios a requirement set runs unscored
(``http-header-validation``, ``server-session-lifecycle``, ...): in scope is in scope.

Exit code 0 when the run is clean, 1 otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def read_list(path: Path) -> tuple[list[str], list[str]]:
    """(out-of-scope entries, expected failures) from the list file.

    Entries are ``scenario``, ``prefix-`` or ``prefix/`` (a family of scenarios) or
    ``scenario:check-id``.
    """
    out_of_scope: list[str] = []
    expected: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, name = line.partition(" ")
        if kind == "out-of-scope":
            out_of_scope.append(name.strip())
        elif kind == "expected":
            expected.append(name.strip())
        else:
            raise SystemExit(f"verdict: {path}: unknown entry {raw!r} (out-of-scope|expected)")
    return out_of_scope, expected


def covers(entry: str, scenario: str, check: str | None) -> bool:
    """Whether ``entry`` names ``scenario`` (whole) or that scenario's ``check``."""
    name, _, entry_check = entry.partition(":")
    if entry_check:
        return name == scenario and entry_check == check
    return name == scenario or (name.endswith(("-", "/")) and scenario.startswith(name))


def main(results: Path, requirements: str, list_file: Path) -> int:
    out_of_scope, expected = read_list(list_file)
    failed: dict[str, list[str]] = {}
    warnings = 0
    # A scenario's folder is its name and a time stamp; one with a slash in its name
    # (auth/metadata-default) is a folder inside a folder.
    for checks_file in sorted(results.rglob("checks.json")):
        directory = checks_file.parent
        name = directory.relative_to(results).as_posix()
        scenario = _STAMP.sub("", name).removeprefix("server-")
        failed.setdefault(scenario, [])
        for check in json.loads(checks_file.read_text(encoding="utf-8")):
            if check.get("status") == "FAILURE":
                failed[scenario].append(str(check.get("id")))
            elif check.get("status") == "WARNING":
                warnings += 1
    problems: list[str] = []
    counts = {"passed": 0, "out of scope": 0, "expected failures": 0}
    for scenario, checks in sorted(failed.items()):
        if any(covers(entry, scenario, None) for entry in out_of_scope):
            counts["out of scope"] += 1
            continue
        waiting = [entry for entry in expected if entry.partition(":")[0] == scenario]
        unexpected = [
            check
            for check in checks
            if not any(covers(entry, scenario, check) for entry in out_of_scope)
            and not any(covers(entry, scenario, check) for entry in waiting)
        ]
        problems += [f"FAIL  {scenario}: {check}" for check in unexpected]
        for entry in waiting:
            if not any(covers(entry, scenario, check) for check in checks):
                problems.append(f"STALE {entry}: passes now; take it off the expected list")
        if waiting:
            counts["expected failures"] += 1
        elif not unexpected:
            counts["passed"] += 1
    summary = ", ".join(f"{number} {label}" for label, number in counts.items())
    print(
        f"verdict {requirements}: {len(failed)} scenarios: {summary}; {warnings} warning(s); "
        f"{len(problems)} problem(s)"
    )
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit("usage: verdict.py RESULTS_DIR REQUIREMENTS LIST_FILE")
    raise SystemExit(main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])))
