"""``toolnexus.Principal``: who made a call, as a server verified it — read from token
claims, frozen, shown without its claims, on ``ctx.principal`` (also for a unit test
that builds the context itself), and loaded only when used."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest

import toolnexus._principal as module
from doctests import run_doctests
from toolnexus import Principal, ToolContext


def test_the_docstring_examples_run() -> None:
    failed, attempted = run_doctests(module)
    assert attempted > 0 and failed == 0


def test_claims_of_a_jwt_or_an_introspection_answer_become_a_principal() -> None:
    principal = Principal.from_claims(
        {
            "sub": "alice",
            "scope": "files:read files:write",
            "azp": "desktop",
            "iss": "https://login.example.com",
            "aud": ["https://mcp.example.com/mcp", "api"],
            "exp": 1_900_000_000,
            "email": "alice@example.com",
        }
    )
    assert principal.subject == "alice"
    assert principal.scopes == {"files:read", "files:write"}
    assert principal.client_id == "desktop"
    assert principal.issuer == "https://login.example.com"
    assert principal.audience == ("https://mcp.example.com/mcp", "api")
    assert principal.expires_at == 1_900_000_000
    assert principal.claims["email"] == "alice@example.com"


def test_scp_lists_and_client_id_claims_are_read_too() -> None:
    principal = Principal.from_claims({"scp": ["a", "b"], "client_id": "cli", "aud": "x"})
    assert principal.scopes == {"a", "b"} and principal.client_id == "cli"
    assert principal.subject is None and principal.audience == ("x",)


def test_claims_of_the_wrong_type_are_left_out() -> None:
    principal = Principal.from_claims({"sub": 7, "scope": 3, "exp": "soon", "aud": {"a": 1}})
    assert principal.subject is None and principal.scopes == frozenset()
    assert principal.expires_at is None and principal.audience == ()


def test_a_principal_is_frozen_and_its_claims_read_only() -> None:
    principal = Principal("alice", claims={"groups": ["admins"]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        principal.subject = "mallory"  # type: ignore[misc]
    with pytest.raises(TypeError):
        principal.claims["groups"].append("everyone")
    assert dataclasses.replace(principal, subject="bob").subject == "bob"


def test_the_repr_shows_who_but_never_the_claims() -> None:
    principal = Principal("alice", scopes=["b", "a"], claims={"email": "alice@example.com"})
    assert repr(principal) == "<Principal 'alice' scopes=['a', 'b']>"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"subject": 1}, "subject must be a str or None"),
        ({"scopes": ["two words"]}, "space-separated str or strings without spaces"),
        ({"scopes": 3}, "space-separated str"),
        ({"audience": 3}, "audience must be a str or a sequence"),
        ({"expires_at": "soon"}, "expires_at must be seconds since the epoch"),
        ({"claims": []}, "claims must be a mapping"),
    ],
)
def test_bad_fields_are_refused_naming_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        Principal(**fields)


def test_a_unit_test_can_hand_a_tool_its_principal() -> None:
    def whoami(args: dict[str, Any], ctx: ToolContext | None = None) -> str:
        assert ctx is not None and ctx.principal is not None
        return ctx.principal.subject or ""

    assert whoami({}, ToolContext(principal=Principal("alice"))) == "alice"
    with pytest.raises(TypeError, match=r"principal must be a toolnexus\.Principal"):
        ToolContext(principal="alice")  # type: ignore[arg-type]


def test_import_toolnexus_does_not_load_it() -> None:
    code = "import sys, toolnexus; print('toolnexus._principal' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert shown.stdout.strip() == "False"
