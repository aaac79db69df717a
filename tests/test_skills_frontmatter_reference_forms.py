"""Frontmatter the family's reference (``toolnexus`` 0.21, which reads it with PyYAML's
``safe_load``) loads, loads here too, with the same values, with or without the ``yaml``
extra: a flow collection over several lines, a ``...`` line ending the document, a key
given twice (the last value kept, with a warning), and plain scalars resolved as YAML
1.1 resolves them (``012`` is 10, ``yes`` is true, ``1e3`` is text). What the reader
cannot read goes to PyYAML when it is installed; without it, the error says how to fix.
"""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from test_skills_reference import run_ours, run_reference
from toolnexus import Toolkit
from toolnexus._frontmatter import _YamlError, parse_yaml


@pytest.fixture
def no_pyyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # the built-in reader, alone


@pytest.mark.parametrize(
    ("block", "value"),
    [
        ("tags: [a,\n  b]\nname: x\n", {"tags": ["a", "b"], "name": "x"}),
        ("m: {k: v,\n  j: [1,\n    2]}\n", {"m": {"k": "v", "j": [1, 2]}}),
        ("t: [a, # one\n  'b c'\n  ]\n", {"t": ["a", "b c"]}),
        ("name: x\ndescription: y\n...\n", {"name": "x", "description": "y"}),
        ("name: x\n...\n# a comment\n", {"name": "x"}),
        ("d: first\nd: second\n", {"d": "second"}),
        ("v: 012\nw: 08\nx: 0x1F\n", {"v": 10, "w": "08", "x": 31}),
        ("y: 1_000\nz: 1:30\n", {"y": 1000, "z": 90}),
        ("a: yes\nb: off\nc: On\nd: y\n", {"a": True, "b": False, "c": True, "d": "y"}),
        ("a: 1e3\nb: 1.5e+3\nc: .5\n", {"a": "1e3", "b": 1500.0, "c": 0.5}),
        ("d: 1.\ne: 0o12\n", {"d": 1.0, "e": "0o12"}),
    ],
)  # fmt: skip
def test_the_reader_reads_what_pyyaml_reads_with_its_values(
    no_pyyaml: None, block: str, value: object
) -> None:
    assert parse_yaml(block) == value


def test_a_key_given_twice_keeps_the_last_value_and_warns_with_the_line(
    tmp_path: Path, no_pyyaml: None, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "twice"
    folder.mkdir()
    text = "---\nname: twice\ndescription: first\ndescription: second\n---\nBody.\n"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    toolkit = Toolkit()
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        toolkit.add_skills(folder)
    assert toolkit.get_skill("twice").description == "second"
    assert toolkit.skill_errors == []
    assert any(
        "line 4" in record.getMessage() and "'description'" in record.getMessage()
        for record in caplog.records
    ), [record.getMessage() for record in caplog.records]


def test_an_unclosed_flow_collection_says_how_to_fix_it(no_pyyaml: None) -> None:
    with pytest.raises(_YamlError) as caught:
        parse_yaml("name: x\ntags: [a,\n  b\n", first_line=2)
    assert caught.value.line == 3  # where it opens
    assert "end it with ']'" in caught.value.problem


def test_a_block_the_reader_refuses_goes_to_pyyaml_when_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the yaml extra, PyYAML has the last word on any block the reader does not
    read (a stand-in module here, so the test says what is asked of it)."""
    asked: list[str] = []
    fake = types.ModuleType("yaml")

    class YAMLError(Exception):
        pass

    def safe_load(text: str) -> object:
        asked.append(text)
        return {"tags": ["a"]}

    fake.YAMLError = YAMLError  # type: ignore[attr-defined]
    fake.safe_load = safe_load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "yaml", fake)
    block = "tags: [a,\nname: x\n"  # the reader calls it unclosed
    assert parse_yaml(block) == {"tags": ["a"]}
    assert asked == [block]


# The family's reference on the same skills: names, descriptions, the prompt, the loaded
# text. Each SKILL.md holds one form the reader refused before.
FORMS = {
    "flow-lines": "name: flow-lines\ndescription: Tags over two lines\ntags: [a,\n  b]\n",
    "doc-end": "name: doc-end\ndescription: Ends with three dots\n...\n",
    "twice": "name: twice\ndescription: first\ndescription: the last one\n",
    "octal": "name: octal\ndescription: 012\nversion: 012\n",
    "yes-no": "name: yes-no\ndescription: yes\n",
    "exponent": "name: exponent\ndescription: 1e3\n",
    "underscored": "name: underscored\ndescription: 1_000\n",
}


def test_these_forms_load_as_the_family_reference_loads_them(
    tmp_path: Path, no_pyyaml: None
) -> None:
    folder = tmp_path / "skills"
    for name, frontmatter in FORMS.items():
        (folder / name).mkdir(parents=True)
        text = f"---\n{frontmatter}---\nThe {name} body.\n"
        (folder / name / "SKILL.md").write_text(text, encoding="utf-8")
    names = sorted(FORMS)
    ours = run_ours(folder, names)
    assert ours["names"] == names  # none left out, with the built-in reader alone
    described = dict(line.split("**: ", 1) for line in ours["prompt"].splitlines()[4:])
    assert described["- **octal"] == "10" and described["- **yes-no"] == "True"
    theirs = run_reference(folder, names)
    assert ours["names"] == theirs["names"]
    assert ours["prompt"] == theirs["prompt"]
    assert ours["outputs"] == theirs["outputs"]


def test_a_flow_collection_over_many_lines_is_read_once_not_once_a_line(
    monkeypatch: pytest.MonkeyPatch, no_pyyaml: None
) -> None:
    # Reading it again with each line joined made a 16,000-line list take minutes.
    from toolnexus import _frontmatter

    reads: list[int] = []
    flow = _frontmatter._Reader.flow

    def counted(self: Any, text: str, at: int) -> Any:
        if at == 0:
            reads.append(len(text))
        return flow(self, text, at)

    monkeypatch.setattr(_frontmatter._Reader, "flow", counted)
    block = "name: x\ntags: [\n" + "  a,\n" * 2_000 + "  'b ] c',\n  \"d } e\"]\n"
    value = parse_yaml(block)
    assert value["tags"] == ["a"] * 2_000 + ["b ] c", "d } e"]
    assert len(reads) == 1


def test_frontmatter_nested_past_any_use_is_a_named_error_not_a_crash() -> None:
    with pytest.raises(_YamlError, match="nests too deeply"):
        parse_yaml("x: " + "[" * 5_000 + "]" * 5_000 + "\n")
