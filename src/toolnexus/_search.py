"""Tool search on the standard library: the index, the default ranking, regex queries.

This module owns what a search query means. :class:`SearchIndex` keeps, for each tool, the
terms of its fields — the name split on ``_ - .`` and camelCase, the title, the
description, the parameters' names and descriptions — each field with its weight, and
answers a query with a BM25F ranking (Robertson's BM25 over weighted field frequencies).
What lexical search can do for a query worded otherwise than the tool is done here: a
light suffix stemmer (``repositories``, ``repository`` → ``repository``; ``deleting``,
``deleted``, ``delete`` → ``delet``) and a table of the verbs and nouns APIs use
(:data:`SYNONYMS`: "remove" finds "delete", "ticket" finds "issue"), whose matches count
half of a word's own.

A tool's terms are read once, when it is added; the weights that depend on the whole
collection (each term's IDF, the average length) are worked out again on the first search
after the collection changed. A regex query runs on the project's ECMA engine
(:mod:`toolnexus._ecma`), whose cost is bounded, so a pattern from a model cannot stall a
host.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ._ecma import compile_pattern
from ._log import LazyLogger
from .errors import InvalidTypeError, InvalidValueError

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_REGEX_CHARS",
    "SYNONYMS",
    "Ranker",
    "SearchIndex",
    "check_query",
    "regex_matches",
    "stem",
    "terms",
]

_log = LazyLogger("search")

MAX_QUERY_CHARS = 4096
"""The longest query :meth:`Toolkit.search <toolnexus.Toolkit.search>` takes (a search is
a few keywords; a 10 kB "query" is a mistake, or an attack on the latency)."""

MAX_REGEX_CHARS = 200
"""The longest regex query (what Anthropic's regex tool search allows too)."""

MAX_LIMIT = 100

Ranker = Callable[[str, Sequence[Any], int], Sequence[str]]
"""A pluggable ranking: ``ranker(query, candidates, limit) -> names``, best first.

``candidates`` are the :class:`~toolnexus.Tool` objects the caller's view holds; the names
returned must be theirs (others are dropped, with a warning in the log: a ranker never
reveals a tool outside the view). A ranker that raises, or returns something that is not
a list of names, is logged and the default ranking answers instead."""

# Field weights (BM25F): a word in the name says more than one in a parameter's
# description. Tuned on benchmarks/tool_search_queries.json.
_WEIGHTS = {
    "name": 3.0,
    "title": 2.0,
    "description": 1.0,
    "parameter": 1.0,
    "parameter_description": 0.3,
}
_K1 = 1.2
_B = 0.75
_SYNONYM_WEIGHT = 0.5
_MAX_TERMS = 64  # a query's distinct terms that count; the rest are ignored

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PLAIN_WORDS = re.compile(r"\w+")

_STOPWORDS = frozenset(
    """a an and are as at be by can could do does for from has have how i if in into is
    it its me my of on or our please should so some that the their them then there
    these this those to up us want was we were what when where which who will with
    would you your""".split()  # noqa: SIM905 - words read best as words
)


def stem(word: str) -> str:
    """A light suffix stemmer for API words (lower case in, lower case out): plurals,
    ``-ing``, ``-ed``, ``-ion`` and a final ``e`` go, so the forms of one word meet.

    Example::

        >>> [stem(w) for w in ("repositories", "deleting", "deleted", "delete", "deletion")]
        ['repository', 'delet', 'delet', 'delet', 'delet']
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ion", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # starred -> star, running -> run
            break
    if word.endswith("e") and not word.endswith("ee") and len(word) > 3:
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The index terms of ``text``: words split on anything but letters and digits and on
    camelCase, lower-cased, stop words dropped, stemmed.

    Example::

        >>> terms("listReposForOrg: lists the repositories")
        ['list', 'repo', 'org', 'list', 'repository']
    """
    out = []
    for word in _WORDS.findall(text):
        lowered = word.lower()
        if lowered not in _STOPWORDS:
            out.append(stem(lowered))
    return out


def _plain_terms(text: str) -> list[str]:
    """Plain BM25's terms (the benchmark's baseline): ``\\w+`` words, lower-cased."""
    return [word.lower() for word in _PLAIN_WORDS.findall(text)]


# The verbs and nouns APIs use, and the words people use for them. Each line is one group:
# a query word finds the tools that use any word of its group.
_GROUPS = """
get fetch retrieve read show view see display lookup look obtain inspect detail info
information describe check
list all enumerate browse every many
create add new make open start post submit insert generate register
update edit modify change patch alter adjust tweak rename replace
delete remove destroy drop erase discard purge unset clear revoke rid wipe
repository repo project codebase
issue ticket bug problem
pull pr merge
user person account people someone developer profile member
organization org company enterprise
comment reply note remark
star favorite bookmark like
watch subscribe subscription follow follower notify notification watcher
commit revision sha
release version
tag label category
workflow action pipeline ci job
secret credential token password
milestone deadline due
search find query
fork clone copy
invite invitation
gist snippet paste
webhook hook callback event
deploy deployment ship rollout
download export archive
upload attach
file content document path
review approve approval reviewer
assign assignee responsible
permission access role privilege right allow
key ssh gpg
package artifact container registry
email mail address
reaction emoji react
run execute trigger dispatch launch rerun retry
log logs output
stat statistic statistics count metric number traffic insight
vulnerability security alert advisory dependabot
codespace devcontainer
protection protect rule ruleset policy
discussion forum thread
lock freeze block prevent restrict
unlock unblock unfreeze
authenticated me my mine myself current
branch ref
status state
setting settings config configuration preference option
team group squad
collaborator contributor maintainer
cancel stop abort halt
rate limit quota throttle
license copyright
topic keyword
page pages site website
"""


def _synonym_table(groups: str) -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for line in groups.strip().splitlines():
        stems = {stem(word) for word in line.split()}
        for each in stems:
            table.setdefault(each, set()).update(stems - {each})
    return {key: frozenset(value) for key, value in table.items()}


SYNONYMS: Mapping[str, frozenset[str]] = _synonym_table(_GROUPS)
"""Each stemmed word's synonyms (stemmed): what a query term also finds, at half weight."""


def _parameters(schema: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for key, value in properties.items():
        described = value.get("description") if isinstance(value, Mapping) else None
        yield str(key), described if isinstance(described, str) else ""


def fields_of(tool: Any) -> dict[str, str]:
    """A tool's searchable text by field (what both rankings and regex queries read)."""
    parameters = list(_parameters(tool.input_schema))
    return {
        "name": tool.name,
        "title": tool.title or "",
        "description": tool.description,
        "parameter": " ".join(name for name, _ in parameters),
        "parameter_description": " ".join(text for _, text in parameters),
    }


def check_query(query: object, limit: object) -> str:
    """``query`` stripped, or the error saying what is wrong with it or ``limit``."""
    if not isinstance(query, str):
        raise InvalidTypeError(f"search() takes the query as a str, got {type(query).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidValueError(f"limit must be an int from 1 to {MAX_LIMIT}, got {limit!r}")
    stripped = query.strip()
    if not stripped:
        raise InvalidValueError(
            "the search query is empty: give a few words saying what the tool should do "
            "(e.g. 'refund a payment')"
        )
    if len(stripped) > MAX_QUERY_CHARS:
        raise InvalidValueError(
            f"the search query is {len(stripped)} characters long; at most "
            f"{MAX_QUERY_CHARS} are taken: search with a few words saying what the tool "
            "should do"
        )
    return stripped


def regex_matches(pattern: str, tools: Iterable[Any]) -> list[Any]:
    """The tools whose name, title, description or parameters match ``pattern`` (ECMA-262,
    unanchored, bounded in cost): those whose name matches first, then the others, each
    in the order given.

    Raises :class:`~toolnexus.errors.EcmaPatternError` (a ``ValueError``) for a pattern
    that is not ECMA-262, and ``ValueError`` for one longer than :data:`MAX_REGEX_CHARS`.
    """
    if len(pattern) > MAX_REGEX_CHARS:
        raise InvalidValueError(
            f"the regex query is {len(pattern)} characters long; at most {MAX_REGEX_CHARS}"
        )
    matches = compile_pattern(pattern)
    by_name, by_text = [], []
    for tool in tools:
        fields = fields_of(tool)
        if matches(fields["name"]):
            by_name.append(tool)
        elif matches("\n".join(text for text in fields.values() if text)):
            by_text.append(tool)
    return by_name + by_text


class SearchIndex:
    """A BM25F index over tools, kept current one tool at a time.

    ``plain=True`` gives the baseline the benchmark compares with: plain BM25 (``\\w+``
    words, one weight for every field, no stemming, no synonyms).

    Example::

        index = SearchIndex()
        for each in toolkit.tools():
            index.add(each)
        names = index.rank("delete a repo", 5)
    """

    __slots__ = ("_avg", "_docs", "_idf", "_lengths", "_plain", "_postings", "_weights")

    def __init__(self, *, plain: bool = False) -> None:
        self._plain = plain
        self._docs: dict[str, dict[str, float]] = {}  # name -> term -> weighted frequency
        self._lengths: dict[str, float] = {}
        self._postings: dict[str, dict[str, float]] = {}  # term -> name -> frequency
        self._weights: dict[str, dict[str, float]] | None = None  # term -> name -> BM25
        self._idf: dict[str, float] = {}
        self._avg = 1.0

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, tool: Any) -> None:
        """Index ``tool`` (replacing a tool of the same name)."""
        self.discard(tool.name)
        frequencies: dict[str, float] = {}
        length = 0.0
        for field_name, text in fields_of(tool).items():
            if self._plain:
                weight, words = 1.0, _plain_terms(text)
            else:
                weight, words = _WEIGHTS[field_name], terms(text)
            for word in words:
                frequencies[word] = frequencies.get(word, 0.0) + weight
            length += weight * len(words)
        self._docs[tool.name] = frequencies
        self._lengths[tool.name] = length
        for word, frequency in frequencies.items():
            self._postings.setdefault(word, {})[tool.name] = frequency
        self._weights = None

    def discard(self, name: str) -> None:
        """Forget the tool ``name``; nothing happens when it is not indexed."""
        frequencies = self._docs.pop(name, None)
        if frequencies is None:
            return
        del self._lengths[name]
        for word in frequencies:
            posting = self._postings[word]
            del posting[name]
            if not posting:
                del self._postings[word]
        self._weights = None

    def _weigh(self) -> dict[str, dict[str, float]]:
        """Each term's BM25 weight per tool, for the collection as it is now."""
        count = len(self._docs)
        self._avg = (sum(self._lengths.values()) / count) if count else 1.0
        norms = {
            name: _K1 * (1 - _B + _B * length / self._avg) for name, length in self._lengths.items()
        }
        weights = {}
        for word, posting in self._postings.items():
            idf = math.log(1 + (count - len(posting) + 0.5) / (len(posting) + 0.5))
            weights[word] = {
                name: idf * frequency * (_K1 + 1) / (frequency + norms[name])
                for name, frequency in posting.items()
            }
        self._weights = weights
        return weights

    def _query_terms(self, query: str) -> dict[str, dict[str, float]]:
        """Each query term and what it finds, with weights: itself (1) and its synonyms."""
        words = _plain_terms(query) if self._plain else terms(query)
        expanded: dict[str, dict[str, float]] = {}
        for word in words:
            if word in expanded:
                continue
            if len(expanded) == _MAX_TERMS:
                break
            found = {word: 1.0}
            if not self._plain:
                for other in SYNONYMS.get(word, ()):
                    found.setdefault(other, _SYNONYM_WEIGHT)
            expanded[word] = found
        return expanded

    def scores(self, query: str) -> dict[str, float]:
        """Every tool that shares a term with ``query``, with its score."""
        weights = self._weights if self._weights is not None else self._weigh()
        scores: dict[str, float] = {}
        for found in self._query_terms(query).values():
            best: dict[str, float] = {}
            for word, factor in found.items():
                posting = weights.get(word)
                if posting is None:
                    continue
                for name, weight in posting.items():
                    value = factor * weight
                    if value > best.get(name, 0.0):
                        best[name] = value
            for name, value in best.items():
                scores[name] = scores.get(name, 0.0) + value
        return scores

    def rank(
        self, query: str, limit: int, allowed: Callable[[str], bool] | None = None
    ) -> list[str]:
        """The names of the ``limit`` best tools for ``query`` (those ``allowed`` says
        may be shown, when given), best first; ties in name order."""
        scored = self.scores(query)
        pairs = [
            (-score, name) for name, score in scored.items() if allowed is None or allowed(name)
        ]
        pairs.sort()
        return [name for _, name in pairs[:limit]]
