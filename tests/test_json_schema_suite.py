"""The official JSON-Schema-Test-Suite (draft 2020-12) against the validator.

The suite is not copied into this repository: ``.ci/run`` downloads the ``jsonschema``
source distribution (which ships it under ``json/``) and the ``jsonschema-specifications``
one (the 2020-12 meta-schemas, which two required tests reference), unpacks both and names
them in ``TOOLNEXUS_JSON_SCHEMA_SUITE`` (the ``json`` folder) and
``TOOLNEXUS_JSON_SCHEMA_METASCHEMAS`` (the ``draft202012`` folder). Without them these tests
skip, except under ``TOOLNEXUS_REQUIRE_JSON_SCHEMA_SUITE=1`` (set by CI), where a missing
suite is a failure.

Every test of the suite checks both ``is_valid`` and ``errors`` (which must agree). Remote
references (``refRemote.json``) resolve through a registry built from the suite's
``remotes/`` folder, served at ``http://localhost:1234/`` as the suite expects; nothing is
fetched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from toolnexus.validation import Validator

SUITE = os.environ.get("TOOLNEXUS_JSON_SCHEMA_SUITE", "")
METASCHEMAS = os.environ.get("TOOLNEXUS_JSON_SCHEMA_METASCHEMAS", "")
REQUIRED = os.environ.get("TOOLNEXUS_REQUIRE_JSON_SCHEMA_SUITE") == "1"

# Meta-schema vocabularies ($vocabulary) decide which keywords a custom meta-schema turns
# on; the validator always applies all of 2020-12, so this one file is out of scope.
SKIPPED_FILES = {"vocabulary.json"}
OPTIONAL_FILES = ["ecmascript-regex.json"]
FORMAT_FILES = [
    "date-time.json", "date.json", "time.json", "duration.json", "email.json",
    "hostname.json", "ipv4.json", "ipv6.json", "uri.json", "uri-reference.json",
    "uuid.json", "regex.json", "json-pointer.json",
]  # fmt: skip


def _suite_root() -> Path | None:
    root = Path(SUITE) if SUITE else None
    if root is not None and (root / "tests" / "draft2020-12").is_dir():
        return root
    return None


def _cases(files: list[Path], format_assertion: bool) -> list[Any]:
    cases = []
    for path in files:
        for group in json.loads(path.read_text(encoding="utf-8")):
            for test in group["tests"]:
                name = f"{path.name}: {group['description']}: {test['description']}"
                cases.append(
                    pytest.param(
                        group["schema"], test["data"], test["valid"], format_assertion, id=name
                    )
                )
    return cases


def _collect() -> list[Any]:
    root = _suite_root()
    if root is None:
        return []
    draft = root / "tests" / "draft2020-12"
    required = sorted(p for p in draft.glob("*.json") if p.name not in SKIPPED_FILES)
    optional = [draft / "optional" / name for name in OPTIONAL_FILES]
    formats = [draft / "optional" / "format" / name for name in FORMAT_FILES]
    return [*_cases(required + optional, False), *_cases(formats, True)]


def _registry() -> dict[str, Any]:
    root = _suite_root()
    assert root is not None
    registry: dict[str, Any] = {}
    remotes = root / "remotes"
    for path in sorted(remotes.rglob("*.json")):
        registry["http://localhost:1234/" + path.relative_to(remotes).as_posix()] = json.loads(
            path.read_text(encoding="utf-8")
        )
    if METASCHEMAS and Path(METASCHEMAS).is_dir():
        for path in sorted(Path(METASCHEMAS).rglob("*")):
            if path.is_file():
                document = json.loads(path.read_text(encoding="utf-8"))
                registry[document["$id"]] = document
    return registry


CASES = _collect()
_REGISTRY: dict[str, Any] = {}


def test_the_suite_is_present_when_ci_requires_it() -> None:
    if not REQUIRED:
        pytest.skip("set TOOLNEXUS_JSON_SCHEMA_SUITE to the suite's json/ folder to run it")
    assert _suite_root() is not None, f"no draft2020-12 suite under {SUITE!r}"
    assert METASCHEMAS and Path(METASCHEMAS).is_dir(), f"no meta-schemas at {METASCHEMAS!r}"
    assert len(CASES) > 1000


@pytest.mark.skipif(not CASES, reason="the JSON-Schema-Test-Suite is not available")
@pytest.mark.parametrize(
    ("schema", "data", "valid", "format_assertion"), CASES or [(None, None, True, False)]
)
def test_suite(schema: Any, data: Any, valid: bool, format_assertion: bool) -> None:
    if not _REGISTRY:
        _REGISTRY.update(_registry())
    validator = Validator(schema, registry=_REGISTRY, format_assertion=format_assertion)
    errors = validator.errors(data)
    assert validator.is_valid(data) is valid, errors
    assert (errors == []) is valid, errors
