"""Tool search in the toolkit: the ranking, exact names and regex queries, the index kept
current, a pluggable ranker, bad queries — and the views (namespaces, filters, deferral)
over which every search and every provider's definitions are made."""

from __future__ import annotations

import logging

import pytest

import toolnexus._search
import toolnexus._toolkit
from doctests import run_doctests
from toolnexus import EcmaPatternError, Tool, Toolkit, ToolResult, tool
from toolnexus._search import SearchIndex, stem, terms


def make(name: str, description: str, **params: str) -> Tool:
    """A tool with string parameters, each with a description."""
    schema = {
        "type": "object",
        "properties": {
            key: {"type": "string", "description": text} for key, text in params.items()
        },
    }
    return Tool(name, description, schema, lambda args, ctx=None: ToolResult.ok(name))


def names(tools: list[Tool]) -> list[str]:
    return [each.name for each in tools]


CATALOG = [
    make("repos_delete", "Delete a repository", owner="The account owner", repo="The name"),
    make("issues_create", "Create an issue", title="The title of the issue"),
    make("issues_list_comments", "List issue comments", issue_number="The issue number"),
    make("listReposForOrg", "Lists repositories for the specified organization", org="org"),
    make("users_get_authenticated", "Get the authenticated user"),
    make("activity_star_repo", "Star a repository for the authenticated user"),
]


@pytest.fixture
def toolkit() -> Toolkit:
    return Toolkit(CATALOG)


# --------------------------------------------------------------------------- the ranking


def test_names_split_on_underscores_dashes_dots_and_camel_case():
    assert terms("getUserById") == ["get", "user", "id"]
    assert terms("git.create-tree_v2") == ["git", "creat", "tree", "v", "2"]
    assert terms("HTTPServer URLs") == ["http", "server", "url"]


def test_abbreviations_are_written_out_on_both_sides():
    assert terms("listReposForOrg") == ["list", "repository", "organizat"]
    assert terms("open PRs") == ["open", "pull", "request"]


def test_the_stemmer_meets_the_forms_of_one_word():
    assert {stem(w) for w in ("repositories", "repository")} == {"repository"}
    assert {stem(w) for w in ("deleting", "deleted", "delete", "deletion")} == {"delet"}
    assert stem("starred") == stem("star") == "star"


def test_british_and_american_spellings_meet():
    for british, american in [
        ("organisation", "organization"),
        ("authorise", "authorize"),
        ("favourites", "favorites"),
        ("colour", "color"),
        ("cancelled", "canceled"),
        ("licence", "license"),
        ("analysed", "analyzed"),
    ]:
        assert stem(british) == stem(american), british
    tools = [make("app_delete", "Delete an app"), make("authorize_app", "Authorize an app")]
    assert names(Toolkit(tools).search("authorise the app", 1)) == ["authorize_app"]


def test_a_camel_case_name_is_found_by_its_words(toolkit):
    assert names(toolkit.search("repos for an org", 1)) == ["listReposForOrg"]


def test_synonyms_find_a_tool_worded_otherwise_where_plain_bm25_finds_nothing(toolkit):
    assert names(toolkit.search("remove a project", 1)) == ["repos_delete"]
    assert names(toolkit.search("open a new ticket", 1)) == ["issues_create"]
    plain = SearchIndex(plain=True)
    for each in CATALOG:
        plain.add(each)
    assert plain.rank("remove project", 5) == []  # the baseline the synonyms beat


def test_a_rare_synonym_does_not_outweigh_the_common_word_the_query_said():
    # "repository" is in many tools, its synonym "project" in one: weighed as one term
    # (one IDF for the group), the tool that says "repository" wins a query saying it,
    # where the rare synonym's own IDF used to put the project tool first.
    tools = [make(f"repos_list_{i}", f"List repository thing {i}") for i in range(30)]
    tools += [make("repos_get", "Get a repository"), make("projects_get", "Get a project")]
    assert names(Toolkit(tools).search("get a repository", 1)) == ["repos_get"]
    # the synonym still finds the other tool where the query's word is not used
    assert names(Toolkit(tools[-1:]).search("get a repository", 1)) == ["projects_get"]


def test_a_tool_that_says_the_word_of_a_wide_group_outranks_one_that_says_a_synonym():
    # "file" shares a group with "content" and "path", which every tool here says: with
    # the group's IDF alone, "file" weighed next to nothing and the tool that only says
    # "content" and "path" came first; a tool that says the word keeps part of its IDF.
    tools = [
        make(f"get_content_{i}", "Get the content at a path, with its permissions")
        for i in range(30)
    ]
    tools += [
        make("file_info", "Information about a file: its size and permissions."),
        make("set_permissions", "Set the permissions of the content at a path."),
    ]
    assert names(Toolkit(tools).search("file permissions", 1)) == ["file_info"]
    # the synonym still finds the tool where no tool says the word itself
    assert names(Toolkit(tools[-1:]).search("file permissions", 1)) == ["set_permissions"]


def test_a_name_of_the_words_the_query_said_outranks_a_name_of_their_synonyms():
    # Both names are covered by the query, one in its own words and one through
    # synonyms; the other tool's description says the query's words, but a name the
    # query said outright is the better answer.
    tools = [make(f"thing_{i}", f"Do thing {i}") for i in range(20)]
    tools += [
        make("delete_comment", "Returns nothing."),
        make("remove_remark", "Delete a comment: removes the remark."),
    ]
    assert names(Toolkit(tools).search("delete a comment", 2)) == [
        "delete_comment",
        "remove_remark",
    ]


def test_a_word_undone_by_un_is_found_by_removing_that_word():
    gists = [
        make("gists_star", "Star a gist"),
        make("gists_unstar", "Unstar a gist"),
        make("gists_delete", "Delete a gist"),
    ]
    assert names(Toolkit(gists).search("remove the star from a gist", 1)) == ["gists_unstar"]
    assert names(Toolkit(gists).search("star a gist", 1)) == ["gists_star"]
    assert terms("unlock") == ["unlock", "remov", "lock"]
    assert terms("under unique") == ["under", "uniqu"]  # no word of the table after "un"


def test_my_means_the_authenticated_user(toolkit):
    assert names(toolkit.search("show my profile", 1)) == ["users_get_authenticated"]


def test_a_word_in_the_name_outweighs_the_same_word_in_a_parameter_description():
    in_name = make("archive_run", "Archive it")
    in_parameter = make("get_run", "Get it", mode="whether to archive the run afterwards")
    found = Toolkit([in_parameter, in_name]).search("archive", 2)
    assert names(found) == ["archive_run", "get_run"]


def test_an_exact_name_comes_first(toolkit):
    busy = make(
        "list_issue_comments_list",
        "List issue comments: list the comments of issues",
        issue="the issue whose comments to list",
        comments="which comments to list",
    )
    toolkit.register(busy)
    # by its words alone the busier tool ranks first; the exact name still wins
    assert toolkit._search_index().rank("issues_list_comments", 1) == [busy.name]
    found = toolkit.search("issues_list_comments", 3)
    assert found[0] is toolkit.get("issues_list_comments")


def test_limit_bounds_the_results_and_only_matching_tools_are_returned(toolkit):
    assert len(toolkit.search("repository", 2)) == 2
    assert toolkit.search("zebra crossing", 5) == []


# --------------------------------------------------------------------------- regex


def test_a_regex_query_matches_names_first_then_descriptions(toolkit):
    found = toolkit.search("^issues_", regex=True)
    assert names(found) == ["issues_create", "issues_list_comments"]
    by_description = toolkit.search("authenticated user$", regex=True)
    assert names(by_description) == ["users_get_authenticated", "activity_star_repo"]


def test_a_regex_is_ecma_262_and_a_python_only_pattern_is_refused(toolkit):
    with pytest.raises(EcmaPatternError):
        toolkit.search("(?P<x>issue)", regex=True)
    with pytest.raises(ValueError, match="at most 200"):
        toolkit.search("a" * 201, regex=True)


def test_a_backtracking_regex_runs_on_the_bounded_engine(toolkit):
    toolkit.register(make("a" * 60 + "b", "aaaa"))
    # Python's re would take exponential time on this name; the ECMA engine decides it
    # linearly (the assertion is the answer: it returns at all, and correctly).
    assert toolkit.search("^(a+)+$", regex=True) == []


# --------------------------------------------------------------------------- the index


def test_the_index_follows_register_replace_and_remove(toolkit):
    assert toolkit.search("weather forecast") == []  # builds the index
    toolkit.register(make("forecast", "Weather forecast for a city"))
    assert names(toolkit.search("weather forecast", 1)) == ["forecast"]
    toolkit.register(make("forecast", "Tide tables for a harbour"), replace=True)
    assert toolkit.search("weather") == []
    assert names(toolkit.search("tide", 1)) == ["forecast"]
    toolkit.remove("forecast")
    assert toolkit.search("tide") == []


def test_the_index_is_built_once(toolkit, monkeypatch):
    toolkit.search("repository")
    added = []
    monkeypatch.setattr(SearchIndex, "add", lambda self, each: added.append(each.name))
    toolkit.search("issue")
    toolkit.search("user")
    assert added == []  # no tool is read again for a search


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("query", "limit", "error", "match"),
    [
        ("", 5, ValueError, "the search query is empty"),
        ("   ", 5, ValueError, "the search query is empty"),
        ("x" * 10_240, 5, ValueError, "10240 characters long; at most 4096"),
        ("issue", 0, ValueError, "limit must be an int from 1 to 100"),
        ("issue", True, ValueError, "limit must be an int"),
        (None, 5, TypeError, "takes the query as a str"),
    ],
)
def test_a_bad_query_is_a_clear_error(toolkit, query, limit, error, match):
    with pytest.raises(error, match=match):
        toolkit.search(query, limit)


def test_a_custom_ranker_orders_the_results(toolkit):
    def backwards(query, candidates, limit):
        return [each.name for each in reversed(candidates)][:limit]

    assert names(toolkit.search("anything", 2, ranker=backwards)) == [
        "activity_star_repo",
        "users_get_authenticated",
    ]


def test_a_ranker_that_raises_falls_back_to_the_default_ranking(toolkit, caplog):
    def broken(query, candidates, limit):
        raise RuntimeError("model not loaded")

    with caplog.at_level(logging.WARNING, logger="toolnexus.search"):
        found = toolkit.search("remove a project", 1, ranker=broken)
    assert names(found) == ["repos_delete"]
    assert "the ranker failed (RuntimeError: model not loaded)" in caplog.text


def test_a_ranker_that_returns_no_list_falls_back_too(toolkit, caplog):
    with caplog.at_level(logging.WARNING, logger="toolnexus.search"):
        found = toolkit.search("remove a project", 1, ranker=lambda q, c, n: "repos_delete")
    assert names(found) == ["repos_delete"]
    assert "not a list of names" in caplog.text


def test_a_ranker_never_reveals_a_tool_outside_the_view(toolkit, caplog):
    view = toolkit.view(filter=lambda t: not t.name.startswith("repos"))
    sneaky = view.__class__(toolkit, filter=view._filter, ranker=lambda q, c, n: ["repos_delete"])
    with caplog.at_level(logging.WARNING, logger="toolnexus.search"):
        assert sneaky.search("delete") == []
    assert "'repos_delete', not a tool of the view; dropped" in caplog.text
    spoofed = toolkit.view(
        filter=lambda t: t.name == "issues_create", ranker=lambda q, c, n: ["nope", "issues_create"]
    )
    assert names(spoofed.search("x")) == ["issues_create"]


# --------------------------------------------------------------------------- views


def test_a_namespace_groups_tools_and_a_view_of_it_searches_only_them():
    toolkit = Toolkit()
    github = toolkit.namespace("github", "GitHub's REST API")
    github.register(make("delete_repo", "Delete a repository"))
    toolkit.register(make("delete_file", "Delete a file"))
    assert names(github.tools()) == ["delete_repo"]
    assert toolkit.namespace_of("delete_repo") is github
    assert toolkit.namespace_of("delete_file") is None
    assert names(toolkit.search("delete", 5)) == ["delete_file", "delete_repo"]
    assert names(toolkit.view(namespaces=["github"]).search("delete", 5)) == ["delete_repo"]


def test_two_namespaces_with_one_name_are_refused():
    toolkit = Toolkit()
    toolkit.namespace("github", "GitHub")
    with pytest.raises(ValueError, match="a namespace named 'github' exists already"):
        toolkit.namespace("github", "Another GitHub")
    with pytest.raises(ValueError, match="1 to 64 of"):
        toolkit.namespace("git hub", "spaces")
    with pytest.raises(LookupError, match="unknown namespace 'gitlab'"):
        toolkit.register(make("x", "x"), namespace="gitlab")


def test_deferral_the_most_specific_setting_wins():
    toolkit = Toolkit(defer=True)
    loud = toolkit.namespace("loud", "always loaded", defer=False)
    quiet = toolkit.namespace("quiet", "held back")
    core = make("core", "always")
    core = Tool(core.name, core.description, core.input_schema, core.fn, defer=False)
    toolkit.register(core, make("plain", "p"))
    loud.register(make("loud_one", "l"), tool(lambda: "x", name="loud_deferred", defer=True))
    quiet.register(make("quiet_one", "q"))
    deferred = {each.name: toolkit.is_deferred(each.name) for each in toolkit.tools()}
    assert deferred == {
        "core": False,  # the tool's own False beats the toolkit's True
        "plain": True,  # the toolkit's default
        "loud_one": False,  # the namespace's False
        "loud_deferred": True,  # the tool's True beats its namespace's False
        "quiet_one": True,  # a namespace with None follows the toolkit
    }
    assert toolkit.is_deferred("no such tool") is False
    assert toolkit.view(defer=False).is_deferred("plain") is False  # a view's own default


def test_a_view_is_live_not_a_copy():
    toolkit = Toolkit()
    view = toolkit.view(filter=lambda t: t.name.startswith("a"))
    assert len(view) == 0
    toolkit.register(make("alpha", "first"), make("beta", "second"))
    assert names(view.tools()) == ["alpha"]
    assert "alpha" in view and "beta" not in view
    toolkit.remove("alpha")
    assert len(view) == 0


def test_bad_view_and_defer_settings_are_refused():
    with pytest.raises(TypeError, match="defer of tool 'x' must be True, False or None"):
        Tool("x", "x", {"type": "object"}, lambda a, c=None: None, defer="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="namespaces takes a list of names"):
        Toolkit().view(namespaces="github")
    with pytest.raises(TypeError, match=r"Toolkit\(defer=\.\.\.\) takes True or False"):
        Toolkit(defer=1)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- definitions


def deferred_kit() -> Toolkit:
    toolkit = Toolkit(defer=True)
    ping = make("ping", "Check the service answers")
    toolkit.register(Tool(ping.name, ping.description, ping.input_schema, ping.fn, defer=False))
    github = toolkit.namespace("github", "GitHub's REST API")
    github.register(*CATALOG)
    return toolkit


def test_without_deferral_the_definitions_do_not_change(toolkit):
    assert toolkit.to_openai() == [each.to_openai() for each in CATALOG]
    assert toolkit.to_anthropic() == [each.to_anthropic() for each in CATALOG]


def test_the_local_form_sends_the_core_the_revealed_and_the_two_meta_tools():
    toolkit = deferred_kit()
    sent = [entry["function"]["name"] for entry in toolkit.to_openai()]
    assert sent == ["ping", "search_tools", "call_tool"]
    later = toolkit.to_openai(revealed=["issues_create"])
    assert [entry["function"]["name"] for entry in later] == [
        "ping",
        "issues_create",
        "search_tools",
        "call_tool",
    ]
    assert [d["name"] for d in toolkit.to_gemini()[0]["functionDeclarations"]] == sent
    assert [entry["name"] for entry in toolkit.to_mcp()] == sent
    # every tool revealed: nothing held back, no meta-tool
    every = [each.name for each in toolkit.tools()]
    assert len(toolkit.to_anthropic(revealed=every)) == len(every)


def test_the_meta_tools_are_strict_mode_clean():
    toolkit = deferred_kit()
    strict = {e["function"]["name"]: e["function"] for e in toolkit.to_openai(strict=True)}
    for name in ("search_tools", "call_tool"):
        schema = strict[name]["parameters"]
        assert strict[name]["strict"] is True
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
    toolkit.to_anthropic(strict=True)  # no StrictSchemaError


def test_anthropic_native_forms_defer_loading_and_a_search_tool():
    toolkit = deferred_kit()
    bm25 = toolkit.to_anthropic(search="bm25")
    assert bm25[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    flags = {e["name"]: e.get("defer_loading", False) for e in bm25[:-1]}
    assert flags["ping"] is False and all(v for k, v in flags.items() if k != "ping")
    regex = toolkit.to_anthropic(search="regex")
    assert regex[-1] == {
        "type": "tool_search_tool_regex_20251119",
        "name": "tool_search_tool_regex",
    }
    client = toolkit.to_anthropic(search="client")
    assert client[-1]["name"] == "tool_search" and "defer_loading" not in client[-1]
    with pytest.raises(ValueError, match="search for Anthropic must be one of"):
        toolkit.to_anthropic(search="semantic")


def test_openai_responses_native_forms_group_namespaces():
    toolkit = deferred_kit()
    hosted = toolkit.to_openai(api="responses", search="hosted")
    assert hosted[0]["name"] == "ping" and "defer_loading" not in hosted[0]
    group = hosted[1]
    assert group["type"] == "namespace" and group["name"] == "github"
    assert group["description"] == "GitHub's REST API"
    assert [e["name"] for e in group["tools"]] == names(CATALOG)
    assert all(e["defer_loading"] is True for e in group["tools"])
    assert hosted[-1] == {"type": "tool_search"}
    client = toolkit.to_openai(api="responses", search="client")
    assert client[-1]["execution"] == "client" and client[-1]["parameters"]["required"] == ["query"]
    with pytest.raises(ValueError, match="Chat Completions \\(no native tool search\\)"):
        toolkit.to_openai(search="hosted")


# --------------------------------------------------------------------------- meta-tools


def test_search_tools_lists_the_best_tools_with_their_parameters_and_reveals_them():
    toolkit = deferred_kit()
    result = toolkit.execute("search_tools", {"query": "remove a project"})
    assert not result.is_error
    assert result.metadata["revealed"][0] == "repos_delete"
    assert '"name":"repos_delete"' in result.output and '"owner"' in result.output


def test_call_tool_runs_a_tool_of_its_view_and_refuses_others():
    toolkit = deferred_kit()
    ran = toolkit.execute("call_tool", {"name": "issues_create", "arguments": '{"title": "t"}'})
    assert ran.output == "issues_create"
    unknown = toolkit.execute("call_tool", {"name": "issue_create", "arguments": "{}"})
    assert unknown.is_error and "did you mean 'issues_create'" in unknown.output
    bad = toolkit.execute("call_tool", {"name": "issues_create", "arguments": "{oops"})
    assert bad.is_error and "not valid JSON" in bad.output
    view = toolkit.view(filter=lambda t: t.name != "repos_delete")
    outside = view.meta_tools()["call_tool"]({"name": "repos_delete", "arguments": "{}"})
    assert outside.is_error and "unknown tool 'repos_delete'" in outside.output
    assert "search_tools" in outside.output and "did you mean" not in outside.output


def test_a_registered_tool_named_like_a_meta_tool_wins():
    mine = make("search_tools", "my own search")
    toolkit = Toolkit([mine], defer=True)
    assert toolkit.get("search_tools") is mine
    assert toolkit.execute("search_tools", {}).output == "search_tools"


@pytest.mark.parametrize("module", [toolnexus._search, toolnexus._toolkit])
def test_module_examples_run(module):
    failed, attempted = run_doctests(module)
    assert attempted > 0 and failed == 0


def test_the_meta_tools_show_a_gated_tool_only_to_a_caller_with_its_scopes():
    from toolnexus import Principal, ToolContext
    from toolnexus.mcp._shared._catalog import gate

    secret = make("rotate_signing_key", "Rotate the signing key of the service")
    public = make("read_signing_policy", "Read the signing policy of the service")
    gate(secret.fn, {"keys:admin"})
    toolkit = Toolkit([secret, public], defer=True)
    meta = toolkit.view().meta_tools()
    admin = ToolContext(principal=Principal("ann", scopes="keys:admin"))
    guest = ToolContext(principal=Principal("bob", scopes=""))
    query = {"query": "rotate the signing key"}
    assert meta["search_tools"](query, admin).metadata["revealed"][0] == "rotate_signing_key"
    assert meta["search_tools"](query, guest).metadata["revealed"] == ["read_signing_policy"]
    assert meta["search_tools"](query).metadata["revealed"] == ["read_signing_policy"]
    call = {"name": "rotate_signing_key", "arguments": "{}"}
    assert meta["call_tool"](call, admin).output == "rotate_signing_key"
    refused = meta["call_tool"](call, guest)
    assert refused.is_error and "unknown tool 'rotate_signing_key'" in refused.output
