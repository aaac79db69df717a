"""A view's search ranks within the view: a word the whole toolkit's cut (each word's
best 500 tools) leaves out still finds the view's tool — for a namespace view, a filter
view, and the per-caller view of the meta-tools. And the adapters of a view keep tool
names unique, take ``search="local"`` everywhere, and a misspelt namespace is said."""

from __future__ import annotations

import warnings

import pytest

from toolnexus import Tool, Toolkit, ToolResult
from toolnexus import tool as make_tool

SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


def crowded() -> Toolkit:
    """600 tools that say "widget" strongly, and one elsewhere that says it once in a
    long description: the whole toolkit's cut for "widget" keeps 500 of the 600."""
    toolkit = Toolkit()
    big = toolkit.namespace("big", "many widgets")
    for i in range(600):
        big.register(Tool(f"widget_op_{i}", f"Widget operation {i}.", SCHEMA, lambda a: "ok"))
    small = toolkit.namespace("small", "one tool")
    small.register(
        Tool(
            "archive_records",
            "Archive the records. Also usable on a widget, among many other kinds of thing "
            "you might have lying around in a big long description.",
            SCHEMA,
            lambda a: "ok",
        )
    )
    return toolkit


def names(tools: list[Tool]) -> list[str]:
    return [each.name for each in tools]


def test_a_namespace_view_finds_its_tool_past_the_whole_toolkit_s_cut() -> None:
    toolkit = crowded()
    assert "archive_records" not in names(toolkit.search("widget", 100))  # the cut
    assert names(toolkit.view(namespaces=["small"]).search("widget")) == ["archive_records"]


def test_a_filter_view_finds_its_tool_past_the_whole_toolkit_s_cut() -> None:
    toolkit = crowded()
    view = toolkit.view(filter=lambda t: not t.name.startswith("widget_op"))
    assert names(view.search("widget")) == ["archive_records"]
    # the synonym group of a word is cut after the filter too ("show" finds "get")
    toolkit.register(
        Tool("get_thing", "Get a thing." + " padding" * 50, SCHEMA, lambda a: "ok"),
        namespace="small",
    )
    for i in range(600):
        toolkit.register(Tool(f"show_{i}", f"Show item {i}.", SCHEMA, lambda a: "ok"))
    assert "get_thing" in names(toolkit.view(namespaces=["small"]).search("show"))


def test_the_meta_tools_search_within_the_caller_s_view() -> None:
    toolkit = crowded()
    view = toolkit.view(namespaces=["small"], defer=True)
    found = view.meta_tools()["search_tools"]({"query": "widget"})
    assert found.metadata["revealed"] == ["archive_records"]


def test_a_view_s_search_follows_the_toolkit_as_it_changes() -> None:
    toolkit = crowded()
    small = toolkit.view(namespaces=["small"])
    assert names(small.search("widget")) == ["archive_records"]
    toolkit.register(
        Tool("widget_sorter", "Sort each widget.", SCHEMA, lambda a: "ok"), namespace="small"
    )
    assert names(small.search("widget"))[0] == "widget_sorter"
    toolkit.remove("widget_sorter")
    assert names(small.search("widget")) == ["archive_records"]


@make_tool(defer=True)
def create_issue(title: str) -> str:
    """Create an issue."""
    return "x"


@make_tool
def tool_search(q: str) -> str:
    """My own tool search."""
    return "mine"


@make_tool
def ping() -> str:
    """Ping."""
    return "pong"


def test_a_registered_tool_search_is_never_sent_twice() -> None:
    toolkit = Toolkit([create_issue, ping, tool_search])
    for search in ("local", "bm25", "regex"):
        sent = [e.get("name") for e in toolkit.to_anthropic(search=search)]
        assert sent.count("tool_search") == 1, (search, sent)
    # search="client" would add a second tool_search, and the user's would answer the
    # model's searches: refused, saying what to do
    with pytest.raises(ValueError, match="rename that tool"):
        toolkit.to_anthropic(search="client")
    with pytest.raises(ValueError, match="rename that tool"):
        toolkit.to_openai(api="responses", search="client")
    # a view without that tool has the client form as before
    clean = toolkit.view(filter=lambda t: t.name != "tool_search")
    assert [e.get("name") for e in clean.to_anthropic(search="client")].count("tool_search") == 1


def test_a_registered_meta_tool_name_outside_the_view_leaves_the_view_its_meta_tool() -> None:
    @make_tool
    def search_tools(query: str) -> str:
        """Someone else's search."""
        return "theirs"

    toolkit = Toolkit([ping])
    toolkit.namespace("other", "elsewhere").register(search_tools)
    toolkit.namespace("github", "GitHub").register(create_issue)
    view = toolkit.view(namespaces=["github"])
    sent = [e["function"]["name"] for e in view.to_openai()]
    assert sent == ["search_tools", "call_tool"]
    resolved = view.resolve("search_tools", {"query": "issue"})
    assert not isinstance(resolved, ToolResult), resolved
    assert resolved[0] is view.meta_tools()["search_tools"]


def test_gemini_and_mcp_take_search_local_and_refuse_other_forms() -> None:
    toolkit = Toolkit([create_issue, ping])
    expected = ["ping", "search_tools", "call_tool"]
    declared = toolkit.to_gemini(search="local")[0]["functionDeclarations"]
    assert [d["name"] for d in declared] == expected
    assert [e["name"] for e in toolkit.to_mcp(search="local")] == expected
    view = toolkit.view()
    assert view.to_gemini(search="local") == toolkit.to_gemini()
    assert view.to_mcp(search="local") == toolkit.to_mcp()
    plain = Toolkit([ping])
    assert plain.to_gemini(search="local") == plain.to_gemini()
    for adapter in (toolkit.to_gemini, toolkit.to_mcp, plain.to_gemini, plain.to_mcp):
        with pytest.raises(ValueError, match="'local'"):
            adapter(search="bm25")


def test_a_misspelt_namespace_is_said_with_the_known_ones() -> None:
    toolkit = Toolkit()
    toolkit.namespace("github", "GitHub")
    with pytest.warns(UserWarning, match=r"'githb' \(did you mean 'github'\?\).*'github'"):
        view = toolkit.view(namespaces=["githb"])
    assert view.tools() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        toolkit.view(namespaces=["github"])  # a known one: nothing said


def test_regex_with_a_ranker_is_refused() -> None:
    toolkit = Toolkit([create_issue, ping])
    with pytest.raises(ValueError, match="regex=True or a ranker, not both"):
        toolkit.search("^ping$", regex=True, ranker=lambda q, c, n: [])
