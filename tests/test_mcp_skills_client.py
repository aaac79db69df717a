"""The skills extension (SEP-2640) on the client: McpClient lists and gets a server's
skills without reading a file, loads a skill only when asked, checks every file it
reads against the held entry (size, digest, frontmatter) and never uses one that
differs; remote skills join the toolkit's skill tool beside local ones."""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import SkillError, Toolkit, tool
from toolnexus.mcp import HttpServer, McpClient
from toolnexus.mcp._client._skills import usable_entry, verify

FIXTURES = Path(__file__).parent / "skill_fixtures"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    copy = tmp_path / "skills"
    shutil.copytree(FIXTURES / "pdf-processing", copy / "pdf-processing")
    shutil.copytree(FIXTURES / "release-notes", copy / "release-notes")
    return copy


@pytest.fixture
def server(folder: Path) -> Iterator[HttpServer]:
    kit = Toolkit()
    kit.add_skills(folder)
    with HttpServer(kit, port=0) as running:
        running.start()
        yield running


@pytest.fixture(params=["modern", "legacy"])
def client(request: pytest.FixtureRequest, server: HttpServer) -> Iterator[McpClient]:
    version = "2025-11-25" if request.param == "legacy" else None
    with McpClient(url=server.url, name="docs", protocol_version=version) as connected:
        yield connected


def count_reads(client: McpClient, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = client.read_resource

    def counting(uri: str) -> list[dict[str, Any]]:
        reads.append(uri)
        return original(uri)

    monkeypatch.setattr(client, "read_resource", counting)
    return reads


def test_skills_are_listed_without_reading_a_file(
    client: McpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = count_reads(client, monkeypatch)
    skills = client.skills()
    assert [s.name for s in skills] == ["docs_pdf-processing", "docs_release-notes"]
    assert skills[0].source == "mcp" and skills[0].location == "skill://pdf-processing/SKILL.md"
    assert skills[0].frontmatter["metadata"] == {"version": "2.1.0"}
    toolkit = Toolkit()
    toolkit.register(*skills)
    assert "docs_pdf-processing" in toolkit.skills_prompt()
    assert reads == []  # listing, registering, the prompt: nothing fetched


def test_a_remote_skill_loads_through_the_skill_tool_beside_local_ones(
    client: McpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    toolkit = Toolkit()
    toolkit.add_skills(FIXTURES / "release-notes")  # a local skill of the same name
    toolkit.register(*client.skills())
    reads = count_reads(client, monkeypatch)
    result = toolkit.execute("skill", {"name": "docs_pdf-processing"})
    assert not result.is_error, result.output
    assert "Read `references/FORMS.md` before filling a form" in result.output
    assert "Base directory for this skill: skill://pdf-processing/" in result.output
    assert "<file>skill://pdf-processing/references/FORMS.md</file>" in result.output
    assert reads == ["skill://pdf-processing/SKILL.md"]  # the manifest only
    assert toolkit.get_skill("release-notes").source == "local"  # not shadowed


def test_a_remote_skills_file_is_read_when_asked_and_checked(client: McpClient) -> None:
    skill = client.skills()[0]
    assert (
        skill.read("references/FORMS.md")
        == (FIXTURES / "pdf-processing" / "references" / "FORMS.md").read_bytes()
    )
    with pytest.raises(SkillError, match="unlisted file"):
        skill.read("references/OTHER.md")


def test_a_file_changed_after_the_listing_is_not_used(
    client: McpClient, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    skills = client.skills()
    (folder / "pdf-processing" / "SKILL.md").write_text(
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n"
        'license: Apache-2.0\nmetadata:\n  version: "2.1.0"\n---\nEvil body!!\n',
        encoding="utf-8",
    )
    toolkit = Toolkit()
    toolkit.register(*skills)
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = toolkit.execute("skill", {"name": "docs_pdf-processing"})
    assert result.is_error and "Evil" not in result.output
    assert "skill://pdf-processing/SKILL.md" in result.output and "bytes" in result.output
    assert "docs_pdf-processing" in caplog.text
    # the other skill keeps working
    assert not toolkit.execute("skill", {"name": "docs_release-notes"}).is_error
    # listing again takes the change
    fresh = Toolkit()
    fresh.register(*client.skills())
    assert "Evil body!!" in fresh.execute("skill", {"name": "docs_pdf-processing"}).output


def test_get_skill_returns_one_entry_and_refuses_an_unknown_one(client: McpClient) -> None:
    entry = client.get_skill("skill://release-notes/SKILL.md")
    assert entry["frontmatter"]["name"] == "release-notes"
    from toolnexus import McpError

    with pytest.raises(McpError, match="No skill is served"):
        client.get_skill("skill://nope/SKILL.md")


def test_a_server_without_the_extension_has_no_skills() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with HttpServer(Toolkit([add]), port=0) as running:
        running.start()
        with McpClient(url=running.url) as client:
            assert not client.offers_skills
            assert client.skills() == []


# --------------------------------------------------------------------------- the checks

SKILL_MD = b"---\nname: pdf\ndescription: Fill forms\n---\nBody.\n"


def entry_for(data: bytes, **frontmatter: Any) -> dict[str, Any]:
    return {
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Fill forms", **frontmatter},
        "resources": [
            {
                "uri": "skill://pdf/SKILL.md",
                "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
        ],
    }


def test_the_checks_pass_a_file_that_matches_its_entry() -> None:
    verify(entry_for(SKILL_MD), "skill://pdf/SKILL.md", SKILL_MD)


def test_a_size_mismatch_is_a_named_error_before_any_digest() -> None:
    size = len(SKILL_MD)
    expected = f"is {size + 3} bytes, but the skill's entry says {size}"
    with pytest.raises(SkillError, match=expected) as caught:
        verify(entry_for(SKILL_MD), "skill://pdf/SKILL.md", SKILL_MD + b"ext")
    assert (caught.value.skill, caught.value.path) == ("pdf", "skill://pdf/SKILL.md")


def test_a_digest_mismatch_is_a_named_error() -> None:
    tampered = SKILL_MD.replace(b"Body.", b"Evil.")
    with pytest.raises(SkillError, match="has the digest sha256:"):
        verify(entry_for(SKILL_MD), "skill://pdf/SKILL.md", tampered)


def test_a_frontmatter_that_differs_from_the_entry_is_not_loaded() -> None:
    lying = SKILL_MD.replace(b"Fill forms", b"Exfiltrate credentials")
    entry = entry_for(lying)
    entry["frontmatter"]["description"] = "Fill forms"  # the entry says one thing...
    with pytest.raises(SkillError, match=r"frontmatter differs .* 'description'"):
        verify(entry, "skill://pdf/SKILL.md", lying)  # ...the file another


def test_a_dynamic_skill_is_checked_for_its_frontmatter_only() -> None:
    entry = entry_for(SKILL_MD)
    entry["resources"] = "dynamic"
    verify(entry, "skill://pdf/SKILL.md", SKILL_MD)
    with pytest.raises(SkillError, match="frontmatter differs"):
        verify(entry, "skill://pdf/SKILL.md", SKILL_MD.replace(b"Fill", b"Fold"))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"resources": None}, "neither a list nor 'dynamic'"),
        ({"uri": "skill://pdf/README.md"}, "does not end in"),
        ({"frontmatter": {"name": "other", "description": "d"}}, "is not the uri's"),
        ({"resources": [{"uri": "skill://pdf/SKILL.md", "digest": "md5:1", "size": 1}]}, "digest"),
        ({"resources": []}, "does not list its SKILL.md"),
    ],
)
def test_an_entry_a_host_must_not_load_is_refused(change: dict[str, Any], problem: str) -> None:
    entry = {**entry_for(SKILL_MD), **change}
    assert problem in (usable_entry("s", entry) or "")
    assert usable_entry("s", entry_for(SKILL_MD)) is None
