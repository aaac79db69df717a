"""`toolnexus call` with a result that has parts: the text on stdout, the parts named on
stderr, written to files with --save-parts DIR, and carried in full by --json."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run
from toolnexus import ToolResult

TOOLS = '''
from toolnexus import Part, Toolkit, ToolResult, tool


@tool
def chart() -> ToolResult:
    """A chart, its data and a caption."""
    return ToolResult.ok("the chart", parts=[
        Part.image(b"GIF89a", "image/gif", name="../../escape.gif"),
        Part.image(b"GIF89a!", "image/gif", name="escape.gif"),
        Part.file(b"a,b\\n1,2\\n", "text/csv"),
        Part.file("https://example.test/report.pdf"),
        Part.from_text("one caption"),
    ])


toolkit = Toolkit([chart])
'''


def write_tools(tmp_path: Path) -> None:
    (tmp_path / "charts.py").write_text(TOOLS)


def test_call_prints_the_text_and_names_the_parts_on_stderr(tmp_path):
    write_tools(tmp_path)
    done = run("call", "charts.py:toolkit", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the chart\none caption\n"  # a text part is shown, not hidden
    assert "+5 part(s): image (image/gif, 6 bytes), image (image/gif, 7 bytes)" in done.stderr
    assert "--save-parts DIR" in done.stderr
    assert "R0lGODlh" not in done.stderr  # never the data


def test_save_parts_writes_one_file_per_part_inside_the_directory(tmp_path):
    write_tools(tmp_path)
    done = run("call", "charts.py:toolkit", "--save-parts", "out/parts", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the chart\none caption\n"
    saved = tmp_path / "out" / "parts"
    # A name never leads out of the directory; a repeated name gets a number.
    assert sorted(p.name for p in saved.iterdir()) == [
        "escape-2.gif",
        "escape.gif",
        "part-3.bin",
        "part-5.txt",
    ]
    assert (saved / "escape.gif").read_bytes() == b"GIF89a"
    assert (saved / "escape-2.gif").read_bytes() == b"GIF89a!"
    assert (saved / "part-3.bin").read_bytes() == b"a,b\n1,2\n"
    assert (saved / "part-5.txt").read_text() == "one caption"
    assert not (tmp_path / "escape.gif").exists()
    assert (
        "part 4: file (application/pdf, 0 bytes) at https://example.test/report.pdf" in done.stderr
    )


def test_json_prints_the_whole_result_with_its_parts(tmp_path):
    write_tools(tmp_path)
    done = run("call", "charts.py:toolkit", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = ToolResult.from_json(done.stdout)
    assert result.output == "the chart" and len(result.parts) == 5
    assert json.loads(done.stdout)["parts"][0] == {
        "type": "image",
        "mimeType": "image/gif",
        "data": "R0lGODlh",
        "name": "../../escape.gif",
    }
    assert "part(s)" not in done.stderr
