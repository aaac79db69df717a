"""Tool text in any script is indexed: letters and digits of every script form words,
accents are taken off on both sides, and a run of CJK characters gives its overlapping
pairs. And a custom ranker may answer with the candidate Tools themselves; an answer of
nothing usable falls back to the default ranking."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from toolnexus import Tool, Toolkit, tool
from toolnexus._search import terms

SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


def make(name: str, description: str) -> Tool:
    return Tool(name, description, SCHEMA, lambda a: "x")


@pytest.fixture
def kit() -> Toolkit:
    return Toolkit(
        [
            make("pay_a", "Удалить платёж клиента."),
            make("pay_b", "Создать счёт для клиента."),
            make("mail_c", "电子邮件发送"),
            make("fr_d", "Éditer la réservation."),
            make("de_e", "Die ÜberPrüfung starten."),
            make("jp_f", "ファイルをアップロードする"),
        ]
    )


def names(tools: list[Tool]) -> list[str]:
    return [each.name for each in tools]


def test_words_of_any_script_are_terms() -> None:
    assert terms("Удалить платёж") == ["удалить", "платеж"]
    assert terms("réservation") == terms("reservation")
    assert terms("Éditer") == ["editer"]
    assert terms("ÜberPrüfung") == ["uber", "prufung"]  # camelCase beyond ASCII too
    assert terms("\uff47\uff45\uff54 \ufb01les") == terms("get files")  # compatibility forms folded
    assert terms("हिन्दी") == ["हिन्दी"]  # combining vowel signs stay in the word
    assert terms("电子邮件") == ["电子", "子邮", "邮件"]
    assert terms("件") == ["件"]
    # ASCII text keeps its terms
    assert terms("listReposForOrg: lists the PRs") == [
        "list",
        "repository",
        "organizat",
        "list",
        "pull",
        "request",
    ]
    assert terms("HTTPServer URLs v2") == ["http", "server", "url", "v", "2"]


def test_search_finds_tools_described_beyond_ascii(kit: Toolkit) -> None:
    assert names(kit.search("удалить платёж", 1)) == ["pay_a"]
    assert names(kit.search("платеж", 1)) == ["pay_a"]  # without the diaeresis
    assert names(kit.search("счёт", 1)) == ["pay_b"]
    assert names(kit.search("电子邮件", 1)) == ["mail_c"]
    assert names(kit.search("发送", 1)) == ["mail_c"]
    assert names(kit.search("アップロード", 1)) == ["jp_f"]
    assert names(kit.search("reservation", 1)) == ["fr_d"]
    assert names(kit.search("éditer", 1)) == ["fr_d"]
    assert names(kit.search("Prüfung", 1)) == ["de_e"]


def test_a_ranker_may_answer_with_the_candidate_tools(kit: Toolkit) -> None:
    def tools_back(query: str, candidates: Sequence[Tool], limit: int) -> list[Tool]:
        return list(reversed(candidates))[:limit]

    assert names(kit.search("anything", 2, ranker=tools_back)) == ["jp_f", "de_e"]


def test_a_ranker_whose_answer_holds_nothing_usable_falls_back(
    kit: Toolkit, caplog: pytest.LogCaptureFixture
) -> None:
    stranger = make("pay_a", "Not the registered one.")

    def unknown_names(query: str, candidates: Sequence[Tool], limit: int) -> list[object]:
        return ["nope", 42, stranger]

    with caplog.at_level(logging.WARNING, logger="toolnexus.search"):
        found = kit.search("удалить платёж", 1, ranker=unknown_names)
    assert names(found) == ["pay_a"] and found[0] is not stranger
    assert "the default ranking answers" in caplog.text

    def nothing(query: str, candidates: Sequence[Tool], limit: int) -> list[str]:
        return []

    assert kit.search("удалить платёж", ranker=nothing) == []  # its answer: nothing fits


def test_the_characters_searches_meet_do_not_grow_memory_without_bound() -> None:
    # Queries come from clients and models: 4,000 distinct characters a query, again and
    # again, kept a table of every one of them for the life of the process.
    from toolnexus import _search

    toolkit = Toolkit([tool(name="pay_refund", description="Удалить платёж клиента.")(lambda: "")])
    for start in range(0x4E00 + 0x10000, 0x4E00 + 0x10000 + 40_000, 4_000):
        query = "".join(chr(code) for code in range(start, start + 4_000))
        toolkit.search(query[:200])  # (a query's own bound) and the rest through terms
        _search._words(query)
    assert len(_search._SHAPES) <= _search._SHAPES_KEPT
    assert [each.name for each in toolkit.search("удалить платёж")] == ["pay_refund"]
