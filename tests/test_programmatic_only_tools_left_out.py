"""A toolkit's Chat Completions and Gemini lists leave out the tools only code may call
(``allowed_callers=["programmatic"]``): those providers have no programmatic tool
calling, so the model could never call them. The Responses API and Anthropic lists keep
them. The same rule (``_adapters.offered``) holds for a view's lists, deferred tools
included."""

from __future__ import annotations

from toolnexus import Toolkit, tool


@tool(allowed_callers=["programmatic"])
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed to {env}"


@tool
def ping() -> str:
    """Ping."""
    return "pong"


@tool(allowed_callers=["programmatic"], defer=True)
def bulk(n: int) -> int:
    """Only for code, and held back."""
    return n


def test_chat_completions_and_gemini_lists_leave_a_programmatic_only_tool_out() -> None:
    kit = Toolkit([deploy, ping])
    assert [entry["function"]["name"] for entry in kit.to_openai()] == ["ping"]
    assert [d["name"] for d in kit.to_gemini()[0]["functionDeclarations"]] == ["ping"]
    assert [d["name"] for d in kit.to_gemini(schema="subset")[0]["functionDeclarations"]] == [
        "ping"
    ]


def test_the_styles_with_programmatic_calling_keep_it() -> None:
    kit = Toolkit([deploy, ping])
    assert [entry["name"] for entry in kit.to_openai(api="responses")] == ["deploy", "ping"]
    assert [entry["name"] for entry in kit.to_anthropic()] == ["deploy", "ping"]


def test_a_views_lists_follow_the_same_rule() -> None:
    kit = Toolkit([deploy, ping, bulk])
    chat = [entry["function"]["name"] for entry in kit.to_openai()]
    assert "deploy" not in chat and "bulk" not in chat and "ping" in chat
    chat = [entry["function"]["name"] for entry in kit.to_openai(revealed=["bulk"])]
    assert "bulk" not in chat
    gemini = [d["name"] for d in kit.to_gemini(revealed=["bulk"])[0]["functionDeclarations"]]
    assert "deploy" not in gemini and "bulk" not in gemini
    hosted = [e.get("name") for e in kit.to_openai(api="responses", search="hosted")]
    assert "deploy" in hosted and "bulk" in hosted
