"""What a type checker sees of a tool: run by pytest for behaviour, and checked by
``mypy --strict`` in CI (``.ci/run``: ``MYPYPATH=src mypy --strict tests/typed``).

``assert_type`` fails the type check when the inferred type differs; each
``# type: ignore[...]`` marks a misuse the checker must catch (strict mode reports an
ignore that is not needed, so a regression that stops catching it fails too).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from toolnexus import Tool, Toolkit, ToolResult, tool

if TYPE_CHECKING:
    from typing_extensions import assert_type
else:

    def assert_type(value: object, expected: object) -> object:
        return value


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="greet", read_only=True)
def hello(name: str, excited: bool = False) -> str:
    """Say hello."""
    return f"Hello, {name}{'!' if excited else '.'}"


@tool
async def fetch(url: str) -> bytes:
    """Fetch a URL."""
    return url.encode()


def test_the_decorated_function_keeps_its_signature() -> None:
    plain: Callable[[int, int], int] = add.fn
    total = add.fn(a=2, b=3)
    assert_type(total, int)
    assert total == plain(2, 3) == 5
    if TYPE_CHECKING:  # misuses the checker must refuse (never run)
        add.fn("2", 3)  # type: ignore[arg-type]
        add.fn(a=2, c=3)  # type: ignore[call-arg]
        _wrong: Callable[[str], int] = add.fn  # type: ignore[assignment]


def test_a_decorator_with_options_keeps_it_too() -> None:
    text = hello.fn("Ada", excited=True)
    assert_type(text, str)
    assert text == "Hello, Ada!"
    if TYPE_CHECKING:
        hello.fn(name=1)  # type: ignore[arg-type]


def test_an_async_tool_is_typed_as_its_coroutine_function() -> None:
    coroutine: Coroutine[Any, Any, bytes] = fetch.fn("https://example.com")
    coroutine.close()
    if TYPE_CHECKING:
        _text: Coroutine[Any, Any, str] = fetch.fn("x")  # type: ignore[assignment]


def test_calling_the_tool_itself_is_the_contract() -> None:
    result = add({"a": 1, "b": 2})
    assert_type(result, ToolResult)
    assert result.output == "3"


def test_a_bare_tool_annotation_means_any_tool() -> None:
    tools: list[Tool] = [add, hello, fetch]
    kit = Toolkit(tools)
    assert [t.name for t in kit] == ["add", "greet", "fetch"]
    anything: Tool[..., Any] = add
    assert anything.name == "add"


def test_retitling_a_tool_keeps_its_types() -> None:
    renamed = tool(add, name="plus")
    assert_type(renamed.fn(a=1, b=1), int)
    assert renamed.name == "plus"
    assert renamed.fn(1, 1) == 2


def test_a_results_metadata_is_a_mapping_to_index_without_a_none_check() -> None:
    # The pattern docs/testing.md shows: no `assert result.metadata is not None` first.
    declined = ToolResult.error("declined/expired: Go?", {"reason": "declined"})
    reason: object = declined.metadata["reason"]
    assert reason == "declined"
    assert ToolResult.ok("x").metadata.get("reason") is None
