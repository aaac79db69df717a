"""A tool only code may call (``allowed_callers=["programmatic"]``) is offered only where
the provider has programmatic tool calling — the OpenAI Responses API and Anthropic. One
rule (``_tool_use.PROGRAMMATIC_STYLES``) says so for the adapters and the turn styles:
describing such a tool alone for Chat Completions or Gemini is a clear error (every call
the model made to it would fail), and in those styles a call to it is refused like any
direct call."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Host, Toolkit, tool
from toolnexus._adapters import offered, openai_style
from toolnexus._tool_use import PROGRAMMATIC_STYLES, offered_in
from toolnexus._turns import STYLES


@tool(allowed_callers=["programmatic"])
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed to {env}"


@tool(allowed_callers=["direct", "programmatic"])
def total(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_describing_a_programmatic_only_tool_for_chat_completions_is_refused() -> None:
    with pytest.raises(ValueError) as refused:
        deploy.to_openai()
    message = str(refused.value)
    assert "'deploy'" in message and "allowed_callers=['programmatic']" in message
    assert "Chat Completions has no programmatic tool calling" in message
    # It says where the tool can go, and the other way out.
    assert "to_openai(api='responses')" in message and "to_anthropic()" in message
    assert "add 'direct'" in message


def test_describing_a_programmatic_only_tool_for_gemini_is_refused() -> None:
    for schema in ("json", "subset"):
        with pytest.raises(ValueError, match=r"Gemini has no programmatic tool calling"):
            deploy.to_gemini(schema=schema)


def test_a_grammar_tool_only_code_may_call_is_refused_for_chat_completions_too() -> None:
    from toolnexus import Grammar

    @tool(grammar=Grammar("regex", r"^[a-z]+$"), allowed_callers=["programmatic"])
    def word(input: str) -> str:
        """A word."""
        return input

    with pytest.raises(ValueError, match="Chat Completions has no programmatic"):
        word.to_openai()
    assert word.to_openai(api="responses")["allowed_callers"] == ["programmatic"]


def test_the_styles_with_programmatic_calling_still_describe_it() -> None:
    assert deploy.to_openai(api="responses")["allowed_callers"] == ["programmatic"]
    assert deploy.to_anthropic()["allowed_callers"] == ["code_execution_20260120"]
    # A tool the model may call directly is described everywhere, as before.
    assert total.to_openai()["function"]["name"] == "total"
    assert total.to_gemini()["name"] == "total"


def test_one_rule_says_which_styles_offer_a_programmatic_only_tool() -> None:
    assert set(PROGRAMMATIC_STYLES) == {"responses", "anthropic"}
    assert set(PROGRAMMATIC_STYLES) <= set(STYLES)
    for style in STYLES:
        assert offered_in(("programmatic",), style) == (style in PROGRAMMATIC_STYLES)
        assert offered_in(("direct",), style) and offered_in(("direct", "programmatic"), style)
    assert [openai_style("chat"), openai_style("responses")] == ["openai", "responses"]
    # The list filter the toolkit's lists use follows the same rule.
    assert [t.name for t in offered([deploy, total], "openai")] == ["total"]
    assert [t.name for t in offered([deploy, total], "gemini")] == ["total"]
    assert [t.name for t in offered([deploy, total], "responses")] == ["deploy", "total"]
    assert [t.name for t in offered([deploy, total], "anthropic")] == ["deploy", "total"]


def _caller_call(style: str) -> Any:
    """A call to ``deploy`` in ``style``'s shape that carries a programmatic caller where
    the provider's call has such a field — and the same key elsewhere, which no provider
    without programmatic calling sends."""
    program = {"type": "program", "caller_id": "p1"}
    if style == "openai":
        return [{"id": "c1", "type": "function", "caller": program,
                 "function": {"name": "deploy", "arguments": '{"env": "x"}'}}]  # fmt: skip
    if style == "responses":
        return [{"type": "function_call", "call_id": "c1", "name": "deploy",
                 "arguments": '{"env": "x"}', "caller": program}]  # fmt: skip
    if style == "anthropic":
        code = {"type": "code_execution_20260120", "tool_id": "srvtoolu_1"}
        return [{"type": "tool_use", "id": "c1", "name": "deploy", "input": {"env": "x"},
                 "caller": code}]  # fmt: skip
    return [{"functionCall": {"id": "c1", "name": "deploy", "args": {"env": "x"}},
             "caller": program}]  # fmt: skip


@pytest.mark.parametrize("style", sorted(STYLES))
def test_turn_styles_read_a_caller_exactly_where_programmatic_calling_exists(
    style: str,
) -> None:
    with Host(Toolkit([deploy])) as host:
        turn = host.run_turn(_caller_call(style), style=style)
    (call,) = turn.calls
    if style in PROGRAMMATIC_STYLES:
        assert call.caller is not None
        assert call.result.output == "deployed to x"
    else:  # no programmatic calling: the model called it, and it only takes code's calls
        assert call.caller is None
        assert call.result.is_error
        assert "cannot be called directly by the model" in call.result.output
