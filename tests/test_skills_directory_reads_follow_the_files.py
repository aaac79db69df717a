"""``resources/directory/read`` lists what ``resources/read`` serves, by the one rule that
makes a skill's files: a link back up (a cycle) is walked once and never listed again,
so a directory walk ends, and a listing never offers a URI that a read refuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_mcp_resources_prompts import drive, error_of, legacy, modern, result_of
from toolnexus import SkillError, Toolkit
from toolnexus.mcp import ServerSession

CYCLE = "---\nname: cycle\ndescription: a skill with a link back up\n---\nFollow the loop.\n"


def cycle_skill(tmp_path: Path) -> Path:
    folder = tmp_path / "skills" / "cycle"
    (folder / "sub").mkdir(parents=True)
    (folder / "SKILL.md").write_text(CYCLE, encoding="utf-8")
    (folder / "sub" / "notes.md").write_text("notes\n", encoding="utf-8")
    os.symlink("..", folder / "sub" / "up")  # sub/up is the skill's folder again
    return folder


def session(tmp_path: Path, era: str) -> ServerSession:
    toolkit = Toolkit()
    toolkit.add_skills(cycle_skill(tmp_path))
    return legacy(toolkit) if era == "legacy" else modern(toolkit)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_directory_walk_over_a_cycle_ends_and_offers_only_readable_files(
    tmp_path: Path, era: str
) -> None:
    server = session(tmp_path, era)
    (entry,) = result_of(drive(server, "skills/list"))["skills"]
    listed = {each["uri"] for each in entry["resources"]}
    assert listed == {"skill://cycle/SKILL.md", "skill://cycle/sub/notes.md"}
    offered: set[str] = set()
    folders = ["skill://cycle"]
    while folders:
        assert len(offered) < 20, f"the directory walk does not end: {sorted(offered)}"
        folder = folders.pop()
        for child in result_of(drive(server, "resources/directory/read", {"uri": folder}))[
            "resources"
        ]:
            offered.add(child["uri"])
            if child["mimeType"] == "inode/directory":
                folders.append(child["uri"])
            else:  # every file a listing offers, a read serves
                read = result_of(drive(server, "resources/read", {"uri": child["uri"]}))
                assert read["contents"][0]["uri"] == child["uri"]
    assert offered == {"skill://cycle/SKILL.md", "skill://cycle/sub", "skill://cycle/sub/notes.md"}


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_link_back_up_is_not_a_directory_of_the_skill(tmp_path: Path, era: str) -> None:
    server = session(tmp_path, era)
    for uri in ["skill://cycle/sub/up", "skill://cycle/sub/up/sub/up/sub"]:
        problem = error_of(drive(server, "resources/directory/read", {"uri": uri}))
        assert problem["code"] == -32602, uri
    problem = error_of(drive(server, "resources/read", {"uri": "skill://cycle/sub/up/SKILL.md"}))
    assert problem["code"] == -32602


def test_a_skills_children_are_its_files_and_their_folders(tmp_path: Path) -> None:
    toolkit = Toolkit()
    toolkit.add_skills(cycle_skill(tmp_path))
    skill = toolkit.get_skill("cycle")
    assert skill.files() == ["SKILL.md", "sub/notes.md"]
    assert skill.children("") == [("SKILL.md", False), ("sub", True)]
    assert skill.children("sub") == [("notes.md", False)]  # no 'up': walked once, as root
    with pytest.raises(SkillError, match="not a directory of the skill"):
        skill.children("sub/up")
