"""The ``skill`` tool and the skills prompt fragment say, byte for byte, what the
toolnexus family's reference port (``toolnexus`` 0.21 on the index) says on the same
skills: names, descriptions (folded and literal), loaded bodies, listed files, the
unknown-skill error, the tool's description and schema.

The reference is a different distribution with the same import name, so it runs in a
venv of its own: ``TOOLNEXUS_SKILLS_REFERENCE`` names that venv's python (``.ci/run``
makes it and sets ``TOOLNEXUS_REQUIRE_SKILLS_REFERENCE=1``, where a missing reference
fails instead of skipping).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Toolkit

HERE = Path(__file__).parent
FIXTURES = HERE / "skill_fixtures"
RUNNER = HERE / "skills_reference" / "run_reference.py"


def reference_python() -> str:
    python = os.environ.get("TOOLNEXUS_SKILLS_REFERENCE", "").strip()
    problem = None
    if not python:
        problem = (
            "TOOLNEXUS_SKILLS_REFERENCE is not set: python3 -m venv REF && "
            "REF/bin/pip install toolnexus==0.21.0, then point it at REF/bin/python"
        )
    elif not Path(python).exists():
        problem = f"TOOLNEXUS_SKILLS_REFERENCE={python!r} does not exist"
    if problem is None:
        return python
    if os.environ.get("TOOLNEXUS_REQUIRE_SKILLS_REFERENCE") == "1":
        pytest.fail(f"TOOLNEXUS_REQUIRE_SKILLS_REFERENCE=1 but {problem}", pytrace=False)
    pytest.skip(problem)


def run_reference(folder: Path, names: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [reference_python(), str(RUNNER), str(folder), *names],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(folder),  # not the checkout: our toolnexus must not shadow the reference's
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_ours(folder: Path, names: list[str]) -> dict[str, Any]:
    toolkit = Toolkit()
    toolkit.add_skills(folder)
    tool = toolkit.get("skill")
    outputs = {}
    for name in names:
        result = toolkit.execute("skill", {"name": name})
        outputs[name] = [result.output, result.is_error]
    return {
        "prompt": toolkit.skills_prompt(),
        "description": tool.description,
        "schema": json.loads(json.dumps(tool.input_schema)),
        "names": sorted(skill.name for skill in toolkit.skills()),
        "outputs": outputs,
    }


@pytest.fixture
def skills_folder(tmp_path: Path) -> Path:
    """The fixtures, plus a skill with more files than the sample shows and a nested
    skill whose name a shallower one took (the first found wins)."""
    folder = tmp_path / "skills"
    shutil.copytree(FIXTURES, folder)
    many = folder / "many-files"
    (many / "b").mkdir(parents=True)
    (many / "SKILL.md").write_text(
        "---\nname: many-files\ndescription: 'It''s got files'\n---\nBody.\n", encoding="utf-8"
    )
    for index in range(7):
        (many / f"file-{index}.txt").write_text("x", encoding="utf-8")
        (many / "b" / f"Z{index}.md").write_text("y", encoding="utf-8")
    twin = folder / "zz" / "pdf-processing"
    twin.mkdir(parents=True)
    (twin / "SKILL.md").write_text(
        "---\nname: pdf-processing\ndescription: the nested twin\n---\nTwin.\n", encoding="utf-8"
    )
    return folder


NAMES = [
    "pdf-processing",
    "release-notes",
    "Data_Cleanup",
    "no-description",
    "report-writer",
    "many-files",
    "missing-skill",
    "",
]


def test_the_skill_tool_and_prompt_equal_the_family_reference(skills_folder: Path) -> None:
    ours = run_ours(skills_folder, NAMES)
    theirs = run_reference(skills_folder, NAMES)
    assert ours["names"] == theirs["names"]
    assert ours["prompt"] == theirs["prompt"]
    assert ours["description"] == theirs["description"]
    assert ours["schema"] == theirs["schema"]
    for name in NAMES:
        if name == "":
            continue  # ours checks the arguments first: a missing name is a schema error
        assert ours["outputs"][name] == theirs["outputs"][name], name


def test_the_comparison_covers_files_folded_text_and_a_name_the_extension_refuses(
    skills_folder: Path,
) -> None:
    """What the test above compares holds the cases the issue names (so it cannot pass
    by comparing two empty outputs)."""
    ours = run_ours(skills_folder, NAMES)
    assert "<file>" in ours["outputs"]["pdf-processing"][0]  # one with files
    assert "grouped by area and ordered by impact." in ours["prompt"]  # a folded description
    assert ours["outputs"]["Data_Cleanup"][1] is False  # a name the extension refuses
    assert ours["outputs"]["many-files"][0].count("<file>") == 10  # the sample's cap
    assert ours["outputs"]["missing-skill"] == [
        'Skill "missing-skill" not found. Available skills: Data_Cleanup, many-files, '
        "no-description, pdf-processing, release-notes, report-writer",
        True,
    ]


def test_the_runner_is_not_our_package() -> None:
    """The reference runs in its own interpreter: its toolnexus is not this one."""
    python = reference_python()
    done = subprocess.run(
        [python, "-c", "import toolnexus, sys; print(toolnexus.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() != Path(sys.modules["toolnexus"].__file__).resolve()
