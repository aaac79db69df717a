"""Search quality on a real catalog, kept in CI: the committed sample of the GitHub REST
API's operations (benchmarks/tool_search_sample.json: ids, summaries, parameter names) and
the committed query set (benchmarks/tool_search_queries.json). The full benchmark, on the
whole description with descriptions, is benchmarks/tool_search.py; this pins that the
default ranking keeps its lead over plain BM25 where users word a task otherwise than
the API does."""

from __future__ import annotations

import json
from pathlib import Path

from toolnexus import Tool, Toolkit, ToolResult
from toolnexus._search import SearchIndex

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def catalog() -> list[Tool]:
    data = json.loads((BENCH / "tool_search_sample.json").read_text(encoding="utf-8"))
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


def recall_at_5(rank, kind: str | None = None) -> float:
    chosen = [q for q in queries() if kind is None or q["kind"] == kind]
    hits = 0
    for query in chosen:
        wanted = {each.replace("/", "_") for each in query["expected"]}
        hits += bool(wanted & set(rank(query["query"])[:5]))
    return hits / len(chosen)


def test_the_query_set_is_large_mostly_far_worded_and_every_answer_is_in_the_sample():
    names = {each.name for each in catalog()}
    found = queries()
    assert len(found) >= 200
    assert sum(1 for q in found if q["kind"] == "far") > len(found) / 2
    for query in found:
        assert {e.replace("/", "_") for e in query["expected"]} <= names, query


def test_the_default_ranking_beats_plain_bm25_where_users_use_other_words():
    tools = catalog()
    toolkit = Toolkit(tools)
    plain = SearchIndex(plain=True)
    for each in tools:
        plain.add(each)
    default_far = recall_at_5(lambda q: [t.name for t in toolkit.search(q, 5)], "far")
    plain_far = recall_at_5(lambda q: plain.rank(q, 5), "far")
    assert default_far >= 1.5 * plain_far, (default_far, plain_far)
    # a floor under today's figure on this sample, so a change that loses quality shows
    assert recall_at_5(lambda q: [t.name for t in toolkit.search(q, 5)]) >= 0.75
