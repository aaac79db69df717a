"""Each skills error says what is wrong where, in the terms of what was asked: a name
that is not text, a frontmatter that is not closed, a path that is not a path, a skills
cursor, a directory URI (gateway URIs carry a prefix, so no ``skill://<name>`` shape)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_mcp_resources_prompts import drive, error_of, modern
from toolnexus import InvalidTypeError, Toolkit
from toolnexus.mcp import ServerSession

FIXTURES = Path(__file__).parent / "skill_fixtures"


def left_out(tmp_path: Path, text: str) -> tuple[str, int | None]:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    toolkit = Toolkit()
    toolkit.add_skills(folder)
    (problem,) = toolkit.skill_errors
    return problem.problem, problem.line


def test_a_name_that_is_a_list_is_said_to_be_one(tmp_path: Path) -> None:
    problem, line = left_out(tmp_path, "---\ndescription: d\nname: [a, b]\n---\nBody.\n")
    assert "'name' must be text, got a list" in problem
    assert line == 3


def test_an_unclosed_frontmatter_is_said_to_be_unclosed(tmp_path: Path) -> None:
    problem, line = left_out(tmp_path, "---\nname: bad\ndescription: d\nBody.\n")
    assert "not closed" in problem and "no frontmatter" not in problem
    assert line == 1


@pytest.mark.parametrize("path", [5, None, b"skills"])
def test_add_skills_names_itself_and_what_it_takes(path: object) -> None:
    with pytest.raises(InvalidTypeError) as caught:
        Toolkit().add_skills(path)  # type: ignore[arg-type]
    assert "add_skills(path)" in str(caught.value)
    assert "str or os.PathLike" in str(caught.value)
    assert isinstance(caught.value, TypeError)


def served() -> ServerSession:
    toolkit = Toolkit()
    toolkit.add_skills(FIXTURES)
    return modern(toolkit)


def test_a_bad_skills_cursor_speaks_of_the_skill_list() -> None:
    message = error_of(drive(served(), "skills/list", {"cursor": "nope"}))["message"]
    assert "skill list changed" in message and "tool list" not in message


def test_a_bad_directory_cursor_speaks_of_the_folder() -> None:
    params = {"uri": "skill://pdf-processing", "cursor": "nope"}
    message = error_of(drive(served(), "resources/directory/read", params))["message"]
    assert "folder's files changed" in message and "tool list" not in message


def test_a_directory_refusal_points_at_skills_list_not_a_uri_shape() -> None:
    """Through a gateway a skill's folder is skill://<prefix>/<name>: the refusal says
    where its URI comes from instead of a shape that is wrong there."""
    toolkit = Toolkit()
    toolkit.add_skills(FIXTURES)
    session = modern(toolkit)
    message = error_of(drive(session, "resources/directory/read", {"uri": "skill://nope"}))[
        "message"
    ]
    assert "skill://<name>" not in message
    assert "SKILL.md URI from skills/list without '/SKILL.md'" in message
