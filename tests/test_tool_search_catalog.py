"""Search quality on a real catalog, kept in CI: the committed sample of the GitHub REST
API's operations (benchmarks/tool_search_sample.json: ids, summaries, parameter names) and
the committed query set (benchmarks/tool_search_queries.json). The full benchmark, on the
whole description with descriptions, is benchmarks/tool_search.py; this pins that the
default ranking keeps its lead over plain BM25 where users word a task otherwise than
the API does."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import toolnexus._search
from toolnexus import Tool, Toolkit, ToolResult
from toolnexus._search import SearchIndex

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def catalog() -> list[Tool]:
    data = json.loads((BENCH / "tool_search_sample.json").read_text(encoding="utf-8"))
    return [*github(data), *mcp_servers()]


def mcp_servers() -> list[Tool]:
    """The tools real MCP servers from npm listed (package and version in the file)."""
    data = json.loads((BENCH / "tool_search_mcp_servers.json").read_text(encoding="utf-8"))
    return [
        Tool(
            f"{server['namespace']}_{tool['name']}",
            tool["description"],
            tool["inputSchema"],
            lambda args, ctx=None: ToolResult.ok("ok"),
        )
        for server in data["servers"]
        for tool in server["tools"]
    ]


def github(data: dict) -> list[Tool]:
    return [
        Tool(
            op["id"],
            op["summary"],
            {
                "type": "object",
                "properties": {name: {"type": "string"} for name in op["parameters"]},
            },
            lambda args, ctx=None: ToolResult.ok("ok"),
        )
        for op in data["operations"]
    ]


def queries() -> list[dict]:
    return json.loads((BENCH / "tool_search_queries.json").read_text(encoding="utf-8"))["queries"]


def recall_at_5(rank, kind: str | None = None, *, judged: bool = True) -> float:
    """Judged: any tool a query's "expected" lists answers it; strict: the first only."""
    chosen = [
        q for q in queries() if kind is None or kind in (q["kind"], q["split"], q.get("catalog"))
    ]
    hits = 0
    for query in chosen:
        listed = query["expected"] if judged else query["expected"][:1]
        wanted = {each.replace("/", "_") for each in listed}
        hits += bool(wanted & set(rank(query["query"])[:5]))
    return hits / len(chosen)


def test_the_query_set_is_large_mostly_far_worded_and_every_answer_is_in_the_sample():
    names = {each.name for each in catalog()}
    found = queries()
    assert len(found) >= 200
    assert sum(1 for q in found if q["kind"] == "far") > len(found) / 2
    for query in found:
        assert {e.replace("/", "_") for e in query["expected"]} <= names, query
    # Tools of real MCP servers, each server's package and version kept with its tools.
    servers = json.loads((BENCH / "tool_search_mcp_servers.json").read_text(encoding="utf-8"))
    assert all(s["package"].startswith("@") and s["version"] for s in servers["servers"])
    assert sum(1 for q in found if q.get("catalog") == "mcp") >= 40


def test_a_query_lists_more_than_one_tool_only_as_the_judging_rule_says():
    # The rule is written where the queries are; a second tool is an alternate a reader
    # of the query alone could not tell from the first, never a replacement for it.
    data = json.loads((BENCH / "tool_search_queries.json").read_text(encoding="utf-8"))
    assert "could not prefer the first" in data["judging"]
    for query in data["queries"]:
        assert len(set(query["expected"])) == len(query["expected"]), query
    judged = sum(len(q["expected"]) > 1 for q in data["queries"])
    assert judged <= len(data["queries"]) // 10  # alternates stay the exception


def test_the_query_set_has_a_fixed_tuning_half_and_a_held_out_half():
    found = queries()
    for query in found:
        digit = int(hashlib.sha256(query["query"].encode()).hexdigest(), 16) % 2
        assert query["split"] == ("tune", "held-out")[digit], query
    held = sum(1 for q in found if q["split"] == "held-out")
    assert 0.4 < held / len(found) < 0.6


def test_the_default_ranking_beats_plain_bm25_where_users_use_other_words():
    tools = catalog()
    toolkit = Toolkit(tools)
    plain = SearchIndex(plain=True)
    for each in tools:
        plain.add(each)
    default_far = recall_at_5(lambda q: [t.name for t in toolkit.search(q, 5)], "far")
    plain_far = recall_at_5(lambda q: plain.rank(q, 5), "far")
    assert default_far >= 1.5 * plain_far, (default_far, plain_far)

    def default(query: str) -> list[str]:
        return [t.name for t in toolkit.search(query, 5)]

    # floors under today's figures on this sample (judged 0.780, strict 0.774; held-out
    # 0.763; the MCP servers' tools 0.750), so a change that loses quality shows
    assert recall_at_5(default) >= 0.77
    assert recall_at_5(default, judged=False) >= 0.76
    # a word of a wide synonym group ("file": content, path, folder...) keeps part of
    # its own weight: with the group's alone this row read 0.708
    assert recall_at_5(default, "mcp") >= 0.72
    # the held-out half, never tuned on, keeps a floor of its own
    assert recall_at_5(default, "held-out") >= 0.75


def test_pruning_postings_when_weighing_keeps_each_words_best_tools(monkeypatch):
    # Each term keeps its best _KEEP tools when the collection is weighed, and a word of
    # the synonym table the best _KEEP of its terms' maximum: those must be the best
    # _KEEP of what the word finds over the unpruned postings.
    tools = catalog()
    monkeypatch.setattr(toolnexus._search, "_KEEP", 10**6)
    whole = SearchIndex()
    for each in tools:
        whole.add(each)
    unpruned = whole._weigh()
    monkeypatch.setattr(toolnexus._search, "_KEEP", 40)
    pruned = SearchIndex()
    for each in tools:
        pruned.add(each)
    finds = pruned._weigh()
    checked = 0
    for word, found in unpruned.items():
        if len(found) <= 40:
            assert finds[word] == found, word
            continue
        checked += 1
        assert len(finds[word]) == 40, word
        cut = min(finds[word].values())
        # the kept tools are the strongest, with their unpruned weights
        assert all(found[name] == value for name, value in finds[word].items()), word
        assert sum(1 for value in found.values() if value > cut) < 40, word
    assert checked > 20  # the common words and the synonym groups were pruned
