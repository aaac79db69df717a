"""A skill whose name differs from its folder's name never takes that name from the skill
whose folder has it: the one named as its folder wins, locally and over MCP (which serves
only such a skill), and the one left out is an error naming both files."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_mcp_resources_prompts import drive, legacy, modern, result_of
from toolnexus import Toolkit


def write(folder: Path, name: str, description: str) -> Path:
    folder.mkdir(parents=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\nBody.\n", "utf-8")
    return path


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "sk"
    misnamed = write(root / "dup", "good", "the copy in the wrong folder")
    good = write(root / "good", "good", "the real one")
    return root, misnamed, good


def test_the_skill_named_as_its_folder_wins_and_the_other_is_named_with_it(
    twins: tuple[Path, Path, Path],
) -> None:
    root, misnamed, good = twins
    toolkit = Toolkit()
    added = toolkit.add_skills(root)
    assert [skill.location for skill in added] == [str(good)]
    assert toolkit.get_skill("good").description == "the real one"
    (problem,) = toolkit.skill_errors
    assert problem.path == str(misnamed)
    assert "already has the name 'good'" in problem.problem
    assert str(good) in problem.problem  # where the other one is


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_server_serves_the_valid_skill(twins: tuple[Path, Path, Path], era: str) -> None:
    toolkit = Toolkit()
    toolkit.add_skills(twins[0])
    session = legacy(toolkit) if era == "legacy" else modern(toolkit)
    listed = result_of(drive(session, "skills/list"))["skills"]
    assert [entry["uri"] for entry in listed] == ["skill://good/SKILL.md"]
    assert listed[0]["frontmatter"]["description"] == "the real one"


def test_twins_whose_folders_both_fit_keep_the_first_found_and_name_it(tmp_path: Path) -> None:
    first = write(tmp_path / "a" / "good", "good", "first")
    second = write(tmp_path / "b" / "good", "good", "second")
    toolkit = Toolkit()
    toolkit.add_skills(tmp_path)
    assert toolkit.get_skill("good").location == str(first)
    (problem,) = toolkit.skill_errors
    assert problem.path == str(second) and str(first) in problem.problem
