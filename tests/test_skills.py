"""Local skills: ``Toolkit.add_skills``, the ``skill`` tool, the prompt fragment, the
frontmatter reader, and every kind of bad input — each a clear error naming the skill,
the file and (where one is to blame) the line, while the other skills keep working.
(The texts a model sees are compared with the family's reference in
tests/test_skills_reference.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolnexus import DuplicateToolError, InvalidValueError, SkillError, Toolkit, tool
from toolnexus._frontmatter import _YamlError, parse_yaml
from toolnexus._skills import MAX_SKILL_BYTES, extension_name_problem

FIXTURES = Path(__file__).parent / "skill_fixtures"


def write_skill(folder: Path, text: str | bytes, name: str | None = None) -> Path:
    skill = folder / (name or "good")
    skill.mkdir(parents=True, exist_ok=True)
    path = skill / "SKILL.md"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


GOOD = "---\nname: good\ndescription: a good skill\n---\nDo the good thing.\n"


def add(folder: Path) -> Toolkit:
    toolkit = Toolkit()
    toolkit.add_skills(folder)
    return toolkit


def test_add_skills_finds_a_folder_of_skills_and_adds_the_skill_tool() -> None:
    toolkit = Toolkit()
    added = toolkit.add_skills(FIXTURES)
    assert [s.name for s in added] == [
        "Data_Cleanup",
        "no-description",
        "pdf-processing",
        "release-notes",
        "report-writer",
    ]
    assert "skill" in toolkit
    assert toolkit.get("skill").source == "skill"
    assert toolkit.skill_errors == []
    result = toolkit.execute("skill", {"name": "pdf-processing"})
    assert not result.is_error
    assert "Read `references/FORMS.md` before filling a form" in result.output
    assert result.metadata["name"] == "pdf-processing"


def test_add_skills_takes_one_skill_folder_or_its_skill_md() -> None:
    assert [s.name for s in Toolkit().add_skills(FIXTURES / "release-notes")] == ["release-notes"]
    one = Toolkit().add_skills(FIXTURES / "release-notes" / "SKILL.md")
    assert [s.name for s in one] == ["release-notes"]


def test_add_skills_refuses_a_path_that_is_neither_folder_nor_skill_md(tmp_path: Path) -> None:
    with pytest.raises(InvalidValueError, match=r"neither a folder nor a SKILL\.md"):
        Toolkit().add_skills(tmp_path / "missing")


def test_a_skill_keeps_its_whole_frontmatter_as_json_data() -> None:
    skill = Toolkit().add_skills(FIXTURES / "pdf-processing")[0]
    assert skill.frontmatter == {
        "name": "pdf-processing",
        "description": "Extract, fill, and assemble PDF documents",
        "license": "Apache-2.0",
        "metadata": {"version": "2.1.0"},
    }
    notes = Toolkit().add_skills(FIXTURES / "release-notes")[0]
    assert notes.frontmatter["allowed-tools"] == ["Read", "Grep"]
    assert notes.description == (
        "Write release notes from merged pull requests, grouped by area and ordered by impact."
    )


def test_the_prompt_fragment_lists_described_skills_only() -> None:
    prompt = add(FIXTURES).skills_prompt()
    assert "- **pdf-processing**: Extract, fill, and assemble PDF documents" in prompt
    assert "no-description" not in prompt
    toolkit = Toolkit()
    toolkit.add_skills(FIXTURES / "no-description")
    assert toolkit.skills_prompt() == "No skills are currently available."


def test_a_skill_without_frontmatter_is_left_out_naming_skill_file_and_line(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path, GOOD)
    bad = write_skill(tmp_path, "# Just markdown\n", "plain")
    toolkit = add(tmp_path)
    assert [s.name for s in toolkit.skills()] == ["good"]
    [problem] = toolkit.skill_errors
    assert (problem.skill, problem.path, problem.line) == ("plain", str(bad), 1)
    assert "has no frontmatter" in str(problem)
    assert not toolkit.execute("skill", {"name": "good"}).is_error  # the others work


def test_malformed_yaml_names_the_line_in_the_file(tmp_path: Path) -> None:
    write_skill(tmp_path, "---\nname: broken\ndescription: [open\n---\nBody\n", "broken")
    [problem] = add(tmp_path).skill_errors
    assert problem.line == 3
    assert "broken" in str(problem) and "SKILL.md, line 3" in str(problem)


def test_non_utf8_text_names_the_line_of_the_bad_byte(tmp_path: Path) -> None:
    write_skill(tmp_path, b"---\nname: latin\ndescription: caf\xe9\n---\n", "latin")
    [problem] = add(tmp_path).skill_errors
    assert problem.line == 3
    assert "not UTF-8" in problem.problem and "0xe9" in problem.problem


def test_a_binary_skill_md_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path, b"---\nname: bin\n---\n\x00\x01\x02", "bin")
    [problem] = add(tmp_path).skill_errors
    assert "binary" in problem.problem


def test_a_100_mb_skill_md_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = write_skill(tmp_path, GOOD, "huge")
    with open(path, "r+b") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: the disk holds almost nothing
    write_skill(tmp_path, GOOD)
    toolkit = add(tmp_path)
    [problem] = toolkit.skill_errors
    assert problem.skill == "huge" and "1 MiB" in problem.problem
    assert [s.name for s in toolkit.skills()] == ["good"]


def test_a_100_mb_file_in_a_skill_cannot_be_served_but_the_skill_still_loads(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path, GOOD)
    big = tmp_path / "good" / "data.bin"
    with open(big, "wb") as handle:
        handle.truncate(100 * 1024 * 1024)
    toolkit = add(tmp_path)
    skill = toolkit.get_skill("good")
    with pytest.raises(SkillError, match="more than 16777216 bytes") as caught:
        skill.manifest()
    assert caught.value.path == str(big) and caught.value.skill == "good"
    with pytest.raises(SkillError, match="16 MiB"):
        skill.read("data.bin")
    assert "data.bin" in toolkit.execute("skill", {"name": "good"}).output


def test_a_frontmatter_without_a_name_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path, "---\ndescription: nameless\n---\n", "nameless")
    [problem] = add(tmp_path).skill_errors
    assert "no 'name'" in problem.problem and problem.skill == "nameless"


def test_the_first_skill_of_a_name_wins_and_the_twin_is_reported(tmp_path: Path) -> None:
    write_skill(tmp_path, GOOD)
    twin = write_skill(tmp_path / "deeper", GOOD)
    toolkit = add(tmp_path)
    assert toolkit.get_skill("good").location == str(tmp_path / "good" / "SKILL.md")
    [problem] = toolkit.skill_errors
    assert problem.path == str(twin) and "already has the name" in problem.problem


def test_strict_raises_the_first_problem_and_adds_nothing(tmp_path: Path) -> None:
    write_skill(tmp_path, GOOD)
    write_skill(tmp_path, "no fences", "plain")
    toolkit = Toolkit()
    with pytest.raises(SkillError, match="plain"):
        toolkit.add_skills(tmp_path, strict=True)
    assert toolkit.skills() == [] and "skill" not in toolkit


def test_a_symlink_out_of_the_folder_is_never_listed_nor_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("password", encoding="utf-8")
    write_skill(tmp_path / "skills", GOOD)
    os.symlink(secret, tmp_path / "skills" / "good" / "leak.txt")
    os.symlink(tmp_path, tmp_path / "skills" / "good" / "up")
    skill = add(tmp_path / "skills").get_skill("good")
    assert skill.files() == ["SKILL.md"]
    assert [f.path for f in skill.manifest()] == ["SKILL.md"]
    with pytest.raises(SkillError, match="outside the skill's folder"):
        skill.read("leak.txt")
    with pytest.raises(SkillError, match="not a path inside"):
        skill.read("../secret.txt")
    assert "leak.txt" not in add(tmp_path / "skills").execute("skill", {"name": "good"}).output


def test_a_link_cycle_is_walked_once(tmp_path: Path) -> None:
    write_skill(tmp_path, GOOD)
    (tmp_path / "good" / "docs").mkdir()
    (tmp_path / "good" / "docs" / "a.md").write_text("a", encoding="utf-8")
    os.symlink("..", tmp_path / "good" / "docs" / "loop")
    os.symlink(tmp_path, tmp_path / "good" / "docs" / "outer")
    toolkit = add(tmp_path)  # discovery ends too
    assert toolkit.get_skill("good").files() == ["SKILL.md", "docs/a.md"]


def test_the_local_tool_loads_a_name_the_extension_refuses() -> None:
    toolkit = add(FIXTURES)
    skill = toolkit.get_skill("Data_Cleanup")
    assert "naming rules" in (extension_name_problem(skill) or "")
    assert not toolkit.execute("skill", {"name": "Data_Cleanup"}).is_error
    assert extension_name_problem(toolkit.get_skill("pdf-processing")) is None


def test_a_name_that_differs_from_its_folder_is_refused_by_the_extension_only(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path, "---\nname: other\ndescription: d\n---\n", "folder-name")
    toolkit = add(tmp_path)
    assert "differs from its folder" in (extension_name_problem(toolkit.get_skill("other")) or "")
    assert not toolkit.execute("skill", {"name": "other"}).is_error


def test_an_unknown_skill_is_an_error_result_listing_the_skills() -> None:
    result = add(FIXTURES).execute("skill", {"name": "pdf"})
    assert result.is_error
    assert result.output.startswith('Skill "pdf" not found. Available skills: Data_Cleanup, ')


def test_a_tool_of_another_kind_named_skill_is_a_duplicate() -> None:
    @tool(name="skill")
    def other() -> str:
        """Something else."""
        return "x"

    toolkit = Toolkit([other])
    with pytest.raises(DuplicateToolError):
        toolkit.add_skills(FIXTURES / "release-notes")
    assert toolkit.skills() == []


def test_adding_skills_tells_watchers_the_skills_and_tools_changed() -> None:
    toolkit = Toolkit()
    seen: list[tuple[str, str | None]] = []
    toolkit._watch(lambda kind, uri: seen.append((kind, uri)))
    toolkit.add_skills(FIXTURES / "release-notes")
    assert sorted(seen) == [("skills", None), ("tools", None)]
    seen.clear()
    toolkit.add_skills(FIXTURES / "pdf-processing")
    assert seen == [("skills", None)]
    toolkit.remove(toolkit.get_skill("pdf-processing"))
    assert seen[-1] == ("skills", None)


# --------------------------------------------------------------------------- frontmatter


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("d: >\n  a\n  b\n\n  c\n", {"d": "a b\nc\n"}),
        ("d: |\n  a\n  b\n", {"d": "a\nb\n"}),
        ("d: |-\n  a\n", {"d": "a"}),
        ("d: >+\n  a\n\n", {"d": "a\n\n"}),
        ("d: plain\n  continued\n", {"d": "plain continued"}),
        ("l:\n  - a\n  - b: 1\n    c: true\n", {"l": ["a", {"b": 1, "c": True}]}),
        ("l:\n- a\n- b\n", {"l": ["a", "b"]}),
        ("f: [a, 'b c', 3]\nm: {k: v}\n", {"f": ["a", "b c", 3], "m": {"k": "v"}}),
        ("q: 'it''s # not a comment'\n", {"q": "it's # not a comment"}),
        ('q: "tab\\there"  # comment\n', {"q": "tab\there"}),
        ("# only\nn: ~\nx: 1.5\ny: 0x10\n", {"n": None, "x": 1.5, "y": 16}),
        ("v: '1.0'\nw: 1.0\n", {"v": "1.0", "w": 1.0}),
    ],
)
def test_the_frontmatter_reader_reads_what_real_skills_contain(text: str, value: object) -> None:
    assert parse_yaml(text) == value


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("a: 1\n  b: 2\n", 2, "indented more"),
        ("a: [1, 2\n", 1, "not closed"),
        ("a: 'open\n", 1, "not closed"),
        ("a: 1\n\tb: 2\n", 2, "tab"),
    ],
)
def test_the_frontmatter_reader_names_the_line_it_cannot_read(
    text: str, line: int, problem: str
) -> None:
    with pytest.raises(_YamlError, match=problem) as caught:
        parse_yaml(text)
    assert caught.value.line == line


def test_yaml_the_reader_does_not_implement_asks_for_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)  # the extra not installed
    with pytest.raises(_YamlError, match=r"yaml extra") as caught:
        parse_yaml("a: 1\nb: &anchor x\n", first_line=2)
    assert caught.value.line == 3


def test_max_skill_bytes_is_the_extensions_limit() -> None:
    assert MAX_SKILL_BYTES == 16 * 1024 * 1024


def test_the_toolkits_repr_counts_its_skills() -> None:
    toolkit = Toolkit()
    toolkit.add_skills(FIXTURES / "release-notes")
    assert repr(toolkit) == "<Toolkit 1 tool: skill, 1 skill>"
    toolkit.add_skills(FIXTURES / "pdf-processing")
    assert repr(toolkit) == "<Toolkit 1 tool: skill, 2 skills>"


def test_a_fifo_in_a_skill_is_refused_without_blocking(tmp_path: Path) -> None:
    write_skill(tmp_path, GOOD)
    os.mkfifo(tmp_path / "good" / "pipe")
    skill = add(tmp_path).get_skill("good")
    assert skill.files() == ["SKILL.md"]  # not a file: not listed
    with pytest.raises(SkillError, match="not a regular file"):
        skill.read("pipe")


def test_yaml_the_reader_does_not_implement_goes_to_pyyaml_when_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the yaml extra, PyYAML's safe_load reads the block (a stand-in module here,
    so the test says what is asked of it); dates come back as their ISO text."""
    import datetime
    import sys
    import types

    asked: list[str] = []
    fake = types.ModuleType("yaml")

    class YAMLError(Exception):
        pass

    def safe_load(text: str) -> object:
        asked.append(text)
        return {"a": 1, "b": "x", "when": datetime.date(2026, 1, 2)}

    fake.YAMLError = YAMLError  # type: ignore[attr-defined]
    fake.safe_load = safe_load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "yaml", fake)
    block = "a: 1\nb: &anchor x\nwhen: 2026-01-02\n"
    assert parse_yaml(block) == {"a": 1, "b": "x", "when": "2026-01-02"}
    assert asked == [block]
