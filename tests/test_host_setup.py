"""Building a Host: what it refuses at once, and what it warns about."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from test_two_copies import run_python, vendored  # noqa: F401 - vendored is a fixture
from toolnexus import Host, Toolkit, tool
from toolnexus.stores import MemoryAnswerStore, SqliteAnswerStore

KEY = "host-setup-test-key-0123456789abcdef"
MEMORY_ONLY = "used answers are remembered only in this process's memory"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def warnings_of(make: Callable[[], Host]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make().close()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.fixture
def no_key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLNEXUS_SECRET", raising=False)
    monkeypatch.delenv("TOOLNEXUS_STORE", raising=False)


def test_a_key_with_the_per_process_memory_store_warns_how_to_share_used_answers(
    no_key_in_env: None,
) -> None:
    with pytest.warns(UserWarning, match=MEMORY_ONLY) as caught:
        Host(Toolkit([add]), secret=KEY).close()
    message = str(caught[0].message)
    assert "open_store('sqlite:" in message and "TOOLNEXUS_STORE" in message
    assert caught[0].filename == __file__  # it points at the line that built the host


def test_a_key_from_the_environment_warns_too(
    no_key_in_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLNEXUS_SECRET", KEY)
    assert any(MEMORY_ONLY in text for text in warnings_of(lambda: Host(Toolkit([add]))))


def test_no_warning_without_a_key_with_a_shared_store_or_a_memory_store_chosen_on_purpose(
    no_key_in_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert warnings_of(lambda: Host(Toolkit([add]))) == []
    assert (
        warnings_of(lambda: Host(Toolkit([add]), secret=KEY, answer_store=MemoryAnswerStore()))
        == []
    )
    shared = SqliteAnswerStore(tmp_path / "used.db")
    assert warnings_of(lambda: Host(Toolkit([add]), secret=KEY, answer_store=shared)) == []
    monkeypatch.setenv("TOOLNEXUS_STORE", f"sqlite:{tmp_path / 'env.db'}")
    assert warnings_of(lambda: Host(Toolkit([add]), secret=KEY)) == []


def test_a_toolkit_from_another_copy_is_refused_when_the_host_is_built(
    vendored: Path,  # noqa: F811 - the fixture
) -> None:
    out = run_python(
        vendored,
        """
        import _vendor.toolnexus as theirs
        from toolnexus import Host

        @theirs.tool
        def summarize(text: str) -> str:
            '''Summarize a text.'''
            return text[:10]

        try:
            Host(theirs.Toolkit([summarize]))
        except TypeError as exc:
            print(exc)
        else:
            print("accepted")
    """,
    )
    assert out.returncode == 0, out.stderr
    message = out.stdout.strip()
    assert message.startswith(
        "this Toolkit comes from another copy of toolnexus: '_vendor.toolnexus' at "
    ), message
    assert str(vendored / "_vendor" / "toolnexus") in message
