"""``toolnexus skills REF`` lists skills (a folder's, a toolkit's, a server's), and a
skills folder is a REF every command takes: ``serve`` serves its skills over MCP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cli_helpers import run
from test_cli_serve import INITIALIZE, INITIALIZED, replies, session
from toolnexus import Toolkit
from toolnexus.mcp import HttpServer

FIXTURES = Path(__file__).parent / "skill_fixtures"


def test_skills_lists_a_folders_skills_with_their_descriptions() -> None:
    out = run("skills", str(FIXTURES))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Data_Cleanup    Clean a CSV file: trim cells, drop empty rows",
        "no-description",
        "pdf-processing  Extract, fill, and assemble PDF documents",
        "release-notes   Write release notes from merged pull requests, grouped by area and "
        "ordered by impact.",
        "report-writer   Write a weekly report.",
    ]


def test_skills_names_a_skill_it_left_out_and_exits_1(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "release-notes", tmp_path / "release-notes")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("no frontmatter\n", encoding="utf-8")
    out = run("skills", str(tmp_path), "--json")
    assert out.returncode == 1
    listed = json.loads(out.stdout)
    assert [s["name"] for s in listed["skills"]] == ["release-notes"]
    assert "skill 'broken'" in out.stderr and "SKILL.md, line 1" in out.stderr


def test_a_folder_without_skills_is_a_bad_ref(tmp_path: Path) -> None:
    out = run("skills", str(tmp_path))
    assert out.returncode == 2 and "no usable skill" in out.stderr


def test_skills_lists_a_servers_skills() -> None:
    kit = Toolkit()
    kit.add_skills(FIXTURES / "pdf-processing")
    with HttpServer(kit, port=0) as server:
        server.start()
        out = run("skills", server.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pdf-processing", "Extract,", "fill,", "and", "assemble",
                                  "PDF", "documents"]  # fmt: skip


def test_serve_serves_a_folders_skills_over_mcp() -> None:
    out = run(
        "serve",
        str(FIXTURES / "pdf-processing"),
        str(FIXTURES / "release-notes"),
        stdin=session(
            {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-11-25"}},
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 2, "method": "skills/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "resources/read",
                "params": {"uri": "skill://release-notes/SKILL.md"},
            },
        ),
    )
    assert out.returncode == 0, out.stderr
    by_id = replies(out.stdout)
    assert by_id[1]["result"]["capabilities"]["extensions"] == {
        "io.modelcontextprotocol/skills": {"directoryRead": True}
    }
    uris = [entry["uri"] for entry in by_id[2]["result"]["skills"]]
    assert uris == ["skill://pdf-processing/SKILL.md", "skill://release-notes/SKILL.md"]
    assert [t["name"] for t in by_id[3]["result"]["tools"]] == ["skill"]
    text = by_id[4]["result"]["contents"][0]["text"]
    assert text == (FIXTURES / "release-notes" / "SKILL.md").read_text(encoding="utf-8")
