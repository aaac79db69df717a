"""The skills extension (SEP-2640) on the server: skills/list, skills/get,
resources/directory/read, skill:// files through resources/read and resources/list,
in both eras; skills the extension refuses, files out of bounds, changes announced."""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import shutil
from pathlib import Path

import pytest

from test_mcp_resources_prompts import drive, error_of, legacy, modern, result_of
from toolnexus import Toolkit, tool
from toolnexus.mcp import ServerOptions, ServerSession

FIXTURES = Path(__file__).parent / "skill_fixtures"
EXTENSION = "io.modelcontextprotocol/skills"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    copy = tmp_path / "skills"
    shutil.copytree(FIXTURES, copy)
    return copy


def served(folder: Path) -> Toolkit:
    toolkit = Toolkit()
    toolkit.add_skills(folder)
    return toolkit


def session_of(kit: Toolkit, era: str) -> ServerSession:
    return legacy(kit) if era == "legacy" else modern(kit)


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


ERAS = ["legacy", "modern"]


@pytest.mark.parametrize("era", ERAS)
def test_skills_are_declared_with_directory_reads_and_resources(era: str, folder: Path) -> None:
    kit = served(folder)
    if era == "legacy":
        session = ServerSession(kit)
        reply = session.receive(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
        )  # fmt: skip
        capabilities = reply[0].message["result"]["capabilities"]
    else:
        capabilities = result_of(drive(modern(kit), "server/discover"))["capabilities"]
    assert capabilities["extensions"][EXTENSION] == {"directoryRead": True}
    assert "resources" in capabilities
    bare = result_of(drive(modern(Toolkit()), "server/discover"))["capabilities"]
    assert "extensions" not in bare or EXTENSION not in bare["extensions"]


@pytest.mark.parametrize("era", ERAS)
def test_skills_list_gives_each_served_skill_with_every_file_digest_and_size(
    era: str, folder: Path
) -> None:
    result = result_of(drive(session_of(served(folder), era), "skills/list"))
    uris = [entry["uri"] for entry in result["skills"]]
    # Data_Cleanup breaks the naming rules, no-description has none, report-writer's
    # folder is its name: the extension serves the rest.
    assert uris == [
        "skill://pdf-processing/SKILL.md",
        "skill://release-notes/SKILL.md",
        "skill://report-writer/SKILL.md",
    ]
    pdf = result["skills"][0]
    assert pdf["frontmatter"] == {
        "name": "pdf-processing",
        "description": "Extract, fill, and assemble PDF documents",
        "license": "Apache-2.0",
        "metadata": {"version": "2.1.0"},
    }
    root = folder / "pdf-processing"
    assert pdf["resources"] == [
        {"uri": f"skill://pdf-processing/{path}", "digest": digest(root / path),
         "size": (root / path).stat().st_size}
        for path in ["SKILL.md", "references/FORMS.md", "scripts/extract.sh",
                     "templates/invoice.md", "templates/regional/eu-invoice.md"]
    ]  # fmt: skip
    if era == "modern":
        assert result["resultType"] == "complete" and "ttlMs" in result
        assert result["cacheScope"] == "public"
    else:
        assert "ttlMs" not in result and "resultType" not in result


def test_skills_list_pages_keep_each_entry_whole(folder: Path) -> None:
    session = ServerSession(served(folder), ServerOptions(page_size=1))
    seen = []
    cursor = None
    while True:
        result = result_of(drive(session, "skills/list", {"cursor": cursor} if cursor else {}))
        assert len(result["skills"]) == 1
        seen.append(result["skills"][0]["uri"])
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert len(seen) == 3 == len(set(seen))


@pytest.mark.parametrize("era", ERAS)
def test_skills_get_answers_one_entry_or_minus_32602(era: str, folder: Path) -> None:
    session = session_of(served(folder), era)
    listed = result_of(drive(session, "skills/list"))["skills"][1]
    got = result_of(drive(session, "skills/get", {"uri": "skill://release-notes/SKILL.md"}))
    assert got["skill"] == listed and "nextCursor" not in got
    for uri in ["skill://nope/SKILL.md", "skill://Data_Cleanup/SKILL.md",
                "skill://pdf-processing/references/FORMS.md"]:  # fmt: skip
        problem = error_of(drive(session, "skills/get", {"uri": uri}))
        assert problem["code"] == -32602 and uri in problem["message"]
    assert error_of(drive(session, "skills/get", {"uri": 3}))["code"] == -32602


@pytest.mark.parametrize("era", ERAS)
def test_skill_files_are_resources_and_the_manifest_is_markdown(era: str, folder: Path) -> None:
    session = session_of(served(folder), era)
    listed = result_of(drive(session, "resources/list"))["resources"]
    assert {
        "uri": "skill://pdf-processing/SKILL.md",
        "name": "pdf-processing",
        "description": "Extract, fill, and assemble PDF documents",
        "mimeType": "text/markdown",
    } in listed
    read = result_of(drive(session, "resources/read", {"uri": "skill://pdf-processing/SKILL.md"}))
    [content] = read["contents"]
    assert content["mimeType"] == "text/markdown"
    assert content["text"] == (folder / "pdf-processing" / "SKILL.md").read_text(encoding="utf-8")
    script = result_of(
        drive(session, "resources/read", {"uri": "skill://pdf-processing/scripts/extract.sh"})
    )["contents"][0]
    assert script["text"] == "#!/bin/sh\necho extract\n"


def test_a_binary_file_is_read_as_a_blob(folder: Path) -> None:
    data = bytes(range(256))
    (folder / "pdf-processing" / "logo.png").write_bytes(data)
    session = modern(served(folder))
    [content] = result_of(
        drive(session, "resources/read", {"uri": "skill://pdf-processing/logo.png"})
    )["contents"]
    assert content["mimeType"] == "image/png"
    assert base64.b64decode(content["blob"]) == data


def test_reads_outside_the_listed_files_are_minus_32602(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("password", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", folder / "pdf-processing" / "leak.txt")
    session = modern(served(folder))
    for uri in [
        "skill://pdf-processing/leak.txt",  # a symlink out of the folder
        "skill://pdf-processing/../release-notes/SKILL.md",
        "skill://pdf-processing/%2e%2e/%2e%2e/secret.txt",
        "skill://Data_Cleanup/SKILL.md",  # a skill the extension does not serve
        "skill://pdf-processing/missing.md",
    ]:
        problem = error_of(drive(session, "resources/read", {"uri": uri}))
        assert problem["code"] == -32602, uri
        assert "password" not in str(problem)


def test_a_file_is_read_when_asked_not_when_listed(folder: Path) -> None:
    session = modern(served(folder))
    drive(session, "skills/list")
    forms = folder / "pdf-processing" / "references" / "FORMS.md"
    forms.write_text("changed after the listing\n", encoding="utf-8")
    [content] = result_of(
        drive(session, "resources/read", {"uri": "skill://pdf-processing/references/FORMS.md"})
    )["contents"]
    assert content["text"] == "changed after the listing\n"
    entry = result_of(drive(session, "skills/get", {"uri": "skill://pdf-processing/SKILL.md"}))
    [listed] = [r for r in entry["skill"]["resources"] if r["uri"].endswith("FORMS.md")]
    assert listed["digest"] == digest(forms)  # the entry follows the file


@pytest.mark.parametrize("era", ERAS)
def test_directory_reads_list_direct_children_and_refuse_files(era: str, folder: Path) -> None:
    session = session_of(served(folder), era)
    root = result_of(drive(session, "resources/directory/read", {"uri": "skill://pdf-processing"}))
    assert root["resources"] == [
        {"uri": "skill://pdf-processing/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"},
        {"uri": "skill://pdf-processing/references", "name": "references",
         "mimeType": "inode/directory"},
        {"uri": "skill://pdf-processing/scripts", "name": "scripts", "mimeType": "inode/directory"},
        {"uri": "skill://pdf-processing/templates", "name": "templates",
         "mimeType": "inode/directory"},
    ]  # fmt: skip
    sub = result_of(
        drive(session, "resources/directory/read", {"uri": "skill://pdf-processing/templates"})
    )
    assert [r["name"] for r in sub["resources"]] == ["invoice.md", "regional"]
    for uri in ["skill://pdf-processing/SKILL.md", "skill://nope", "skill://pdf-processing/"]:
        problem = error_of(drive(session, "resources/directory/read", {"uri": uri}))
        assert problem["code"] == -32602, uri


def test_a_skill_the_extension_refuses_is_warned_about_by_name(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        drive(modern(served(folder)), "skills/list")
    text = caplog.text
    assert "'Data_Cleanup'" in text and "naming rules" in text
    assert "'no-description'" in text and "no description" in text


def test_a_skill_over_the_size_limit_is_not_served_and_the_others_are(folder: Path) -> None:
    with open(folder / "release-notes" / "huge.bin", "wb") as handle:
        handle.truncate(100 * 1024 * 1024)
    uris = [
        entry["uri"] for entry in result_of(drive(modern(served(folder)), "skills/list"))["skills"]
    ]
    assert uris == ["skill://pdf-processing/SKILL.md", "skill://report-writer/SKILL.md"]


def test_skills_added_at_run_time_are_announced_as_a_resource_list_change(folder: Path) -> None:
    kit = Toolkit()
    session = legacy(kit)
    before = session.toolkit_changed("skills", None)
    assert [a.message["method"] for a in before] == ["notifications/resources/list_changed"]


def test_a_toolkit_without_local_skills_answers_skills_methods_minus_32601() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    problem = error_of(drive(modern(Toolkit([add])), "skills/list"))
    assert problem["code"] == -32601


def test_the_server_names_the_skill_file_as_the_skills_module_does() -> None:
    from toolnexus._skills import SKILL_FILE
    from toolnexus.mcp._server import _feature_skills

    assert _feature_skills.SKILL_FILE == SKILL_FILE


def test_the_skills_and_tasks_extensions_are_declared_side_by_side(folder: Path) -> None:
    """Two features that declare an extension share the one extensions object: neither
    replaces the other's (the tasks extension came first in the table)."""
    from toolnexus.mcp._server._feature_tools import make_tasks

    options = ServerOptions(secret="skills-and-tasks-secret-0123456789")
    session = ServerSession(served(folder), options, _tasks=make_tasks(options.tasks))
    capabilities = result_of(drive(session, "server/discover"))["capabilities"]
    assert set(capabilities["extensions"]) == {EXTENSION, "io.modelcontextprotocol/tasks"}
