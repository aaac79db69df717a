"""Tool search on the standard library: the index, the default ranking, regex queries.

This module owns what a search query means. :class:`SearchIndex` keeps, for each tool, the
terms of its fields — the name split on ``_ - .`` and camelCase, the title, the
description, the parameters' names and descriptions — each field with its weight, and
answers a query with a BM25F ranking (Robertson's BM25 over weighted field frequencies).
What lexical search can do for a query worded otherwise than the tool is done here: a
light suffix stemmer (``repositories``, ``repository`` → ``repository``; ``deleting``,
``deleted``, ``delete`` → ``delet``) and a table of the verbs and nouns APIs use
(:data:`SYNONYMS`: "remove" finds "delete", "ticket" finds "issue"): a query word and its
synonyms are weighed as one term, a synonym's occurrence counting 0.7 of the word's own
(and a tool that says the word itself keeping part of the word's own IDF).

A tool's terms are read once, when it is added; the weights that depend on the whole
collection (each term's IDF, the average length) are worked out again on the first search
after the collection changed. A regex query runs on the project's ECMA engine
(:mod:`toolnexus._ecma`), whose cost is bounded, so a pattern from a model cannot stall a
host.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
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
# description. Tuned on benchmarks/tool_search_queries.json before its split (the
# tuning half confirmed them: docs/tool-search.md).
_WEIGHTS = {
    "name": 3.0,
    "title": 2.0,
    "description": 1.0,
    "parameter": 1.0,
    "parameter_description": 0.3,
}
_K1 = 1.2
_B = 0.75
_SYNONYM_WEIGHT = 0.7
_COORD = 1.0
_NAME_COVERAGE = 4.0
_RERANK = 50
_POOL = 200
_KEEP = 500
_MAX_TERMS = 64  # a query's distinct terms that count; the rest are ignored

_WORDS = re.compile(r"[A-Z]+s?(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PLAIN_WORDS = re.compile(r"\w+")
# Text beyond ASCII is read through its *shape* (see _Shapes): the same pattern, plus
# runs of CJK characters (each written as U+4E00 in the shape).
_CJK_MARK = "\u4e00"
_SHAPE_WORDS = re.compile(r"[A-Z]+s?(?![a-z])|[A-Z]?[a-z]+|[0-9]+|\u4e00+")
_DIACRITICS = re.compile("[\u0300-\u036f]+")  # what accents decompose to (NFKD)
_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul jamo
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK ideographs, extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3134F),  # CJK ideographs, extensions B to G
)


class _Shapes(dict[int, int]):
    """A ``str.translate`` table giving each character its role in a word, so the ASCII
    word pattern reads any script: an ASCII character stays itself; another upper- or
    title-case letter becomes ``A``; a lower-case or caseless letter, or a combining mark
    (Devanagari's vowel signs), ``a``; a decimal digit ``0``; a CJK character
    (:data:`_CJK_RANGES`) U+4E00; anything else a space. Filled as characters are met,
    up to :data:`_SHAPES_KEPT` of them: queries come from clients and models, and a
    stream of new characters must not grow it for the life of the process."""

    def __missing__(self, code: int) -> int:
        if code < 128:
            shape = code
        elif any(low <= code <= high for low, high in _CJK_RANGES):
            shape = ord(_CJK_MARK)
        else:
            import unicodedata

            kind = unicodedata.category(chr(code))
            if kind in ("Lu", "Lt"):
                shape = ord("A")
            elif kind[0] == "L" or kind[0] == "M":
                shape = ord("a")
            elif kind == "Nd":
                shape = ord("0")
            else:
                shape = ord(" ")
        if len(self) < _SHAPES_KEPT:
            self[code] = shape
        return shape


_SHAPES_KEPT = 8_192  # characters whose shape is kept (a script's letters, many times over)
_SHAPES = _Shapes()


def _words(text: str) -> list[str]:
    """The words of ``text``, before lower-casing: runs of letters and digits, split on
    camelCase (``listReposForOrg``: list, Repos, For, Org) and between letters and
    digits, in any script. Accents are taken off (``réservation`` -> reservation,
    ``платёж`` -> платеж: NFKD, then the combining diacritics U+0300-U+036F dropped, so
    a query with or without them finds the same tools), and compatibility forms folded
    (full-width letters read as ASCII ones). A run of CJK characters, which no space
    divides, gives its overlapping pairs (``电子邮件`` -> 电子, 子邮, 邮件; one character
    alone is itself), as Lucene's CJK analyzer does: a query's word then finds the texts
    that hold it, wherever it stands in a run."""
    if text.isascii():
        return _WORDS.findall(text)  # (what nearly every tool and query is: fast)
    import unicodedata

    text = unicodedata.normalize("NFC", _DIACRITICS.sub("", unicodedata.normalize("NFKD", text)))
    if text.isascii():
        return _WORDS.findall(text)
    shape = text.translate(_SHAPES)
    out = []
    for match in _SHAPE_WORDS.finditer(shape):
        start, end = match.span()
        if shape[start] != _CJK_MARK:
            out.append(text[start:end])
        elif end - start == 1:
            out.append(text[start])
        else:
            out += [text[at : at + 2] for at in range(start, end - 1)]
    return out


_STOPWORDS = frozenset(
    """a about across already an and are as at be by can could do does for from has have
    how if in into is it its of on or our please should so some that the their them then
    there these this those to up us want was we were what when where who will with would
    you your""".split()  # noqa: SIM905 - words read best as words
)


# British spellings written the American way before stemming, in tool texts and queries
# alike, so the two meet: whole words, then the -our words, then the -ise/-yse families
# (applied to every word on both sides, so a word that merely ends so, like "promise",
# still meets itself).
_SPELLINGS = {
    "cancelled": "canceled",
    "cancelling": "canceling",
    "catalogue": "catalog",
    "catalogues": "catalogs",
    "centre": "center",
    "centres": "centers",
    "defence": "defense",
    "dialogue": "dialog",
    "grey": "gray",
    "judgement": "judgment",
    "labelled": "labeled",
    "labelling": "labeling",
    "licence": "license",
    "licences": "licenses",
    "modelled": "modeled",
    "modelling": "modeling",
    "programme": "program",
    "programmes": "programs",
}
_OUR_WORDS = ("behaviour", "colour", "favour", "flavour", "honour", "humour", "labour", "neighbour")
_ISE_ENDINGS = (
    ("isations", "izations"),
    ("isation", "ization"),
    ("ising", "izing"),
    ("isers", "izers"),
    ("ised", "ized"),
    ("iser", "izer"),
    ("ises", "izes"),
    ("ise", "ize"),
    ("ysing", "yzing"),
    ("ysed", "yzed"),
    ("yse", "yze"),
)


def _american(word: str) -> str:
    """``word`` (lower case) in American spelling: ``organisation`` -> organization,
    ``favourite`` -> favorite, ``cancelled`` -> canceled."""
    word = _SPELLINGS.get(word, word)
    for british in _OUR_WORDS:
        if british in word:
            return word.replace(british, british.replace("our", "or"))
    for british, american in _ISE_ENDINGS:
        if word.endswith(british) and len(word) > len(british) + 2:
            return word[: -len(british)] + american
    return word


def stem(word: str) -> str:
    """A light suffix stemmer for API words (lower case in, lower case out): British
    spellings written the American way, then plurals, ``-ing``, ``-ed``, ``-ion`` and a
    final ``e`` go, so the forms of one word meet.

    Example::

        >>> [stem(w) for w in ("repositories", "deleting", "deleted", "delete", "deletion")]
        ['repository', 'delet', 'delet', 'delet', 'delet']
        >>> [stem(w) for w in ("organisation", "organization", "colours", "color")]
        ['organizat', 'organizat', 'color', 'color']
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    word = _american(word)
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
    """The index terms of ``text``: words split on anything but letters and digits (of
    any script) and on camelCase, lower-cased, abbreviations written out
    (:data:`ABBREVIATIONS`), stop words dropped, stemmed. A word of the synonym table
    undone by ``un`` also stands for "remove" and that word (``unstar``: remove a star).
    Accents are taken off, and a run of CJK characters gives its overlapping pairs
    (:func:`_words`).

    Example::

        >>> terms("listReposForOrg: lists the PRs")
        ['list', 'repository', 'organizat', 'list', 'pull', 'request']
        >>> terms("unstar a gist")
        ['unstar', 'remov', 'star', 'gist']
        >>> terms("Удалить платёж; éditer la réservation")
        ['удалить', 'платеж', 'editer', 'la', 'reservat']
        >>> terms("发送电子邮件")
        ['发送', '送电', '电子', '子邮', '邮件']
    """
    out = []
    for word in _words(text):
        lowered = word.lower()
        for each in ABBREVIATIONS.get(lowered, (lowered,)):
            if each not in _STOPWORDS:
                out.append(stem(each))
                undone = _undone(each)
                if undone is not None:
                    out += [_REMOVE, undone]
    return out


def _undone(word: str) -> str | None:
    """The stemmed word that ``un`` undoes in ``word`` (``unstar`` -> ``star``), when it
    is one of the synonym table's; else None."""
    if not word.startswith("un") or len(word) < 6:
        return None
    rest = stem(word[2:])
    return rest if rest in SYNONYMS else None


def _plain_terms(text: str) -> list[str]:
    """Plain BM25's terms (the benchmark's baseline): ``\\w+`` words, lower-cased."""
    return [word.lower() for word in _PLAIN_WORDS.findall(text)]


# The verbs and nouns APIs use, and the words people use for them. Each line is one group:
# a query word finds the tools that use any word of its group.
_GROUPS = """
get fetch retrieve read show view see display lookup look obtain inspect detail details info
information describe
list all enumerate browse every which
create add new make open start post submit insert generate register file propose write
define
update edit modify change patch alter adjust tweak rename replace fix set
delete remove destroy drop erase discard purge unset clear revoke rid wipe throw
repository repo project codebase code
issue ticket bug problem report
pull pr request
merge land combine
user person account people someone developer profile member login
organization org company enterprise
comment reply note remark discussion feedback
star favorite bookmark
watch subscribe subscription notified notify notification
follow follower following
commit revision sha change history
release version publish ship
label tag category
workflow action pipeline ci build job run
artifact binary output
secret credential token password
variable value configuration
milestone deadline due sprint
search find query grep mention mentioning
fork copy clone
invite invitation pending
gist snippet paste
webhook hook callback http delivery
deploy deployment rollout production environment
download export archive zip tar
upload attach
file content document folder directory path
readme front
review approve approval reviewer look
assign assignee responsible give
permission access role privilege right
key ssh gpg
package container registry
email mail address
reaction emoji react thumbs heart
run execute trigger dispatch launch kick rerun retry again
log logs output
stat statistic statistics count metric traffic insight visitor views referrer
vulnerability security alert advisory dependabot
protection protect rule ruleset guard guarding
lock freeze block prevent restrict stop
unlock unblock unfreeze again
authenticated me my mine myself current logged i
branch ref reference head
status state green passing fail
check test result
setting settings configuration preference option
disable pause off
enable resume on
event activity timeline happened lately recent
sub child children parent epic
topic keyword
page pages site website
rate limit left remaining quota
zen wisdom
"""


ABBREVIATIONS: Mapping[str, tuple[str, ...]] = {
    "pr": ("pull", "request"),
    "prs": ("pull", "request"),
    "repo": ("repository",),
    "repos": ("repository",),
    "org": ("organization",),
    "orgs": ("organization",),
    "ci": ("workflow", "run"),
    "config": ("configuration",),
    "unassign": ("remove", "assignee"),
    "rollout": ("deployment",),
    "rollouts": ("deployment",),
    "spammer": ("block", "user"),
    "unpublish": ("delete", "release"),
    "retitle": ("update", "title"),
}
"""Words written out before indexing, in tool texts and queries alike (``PRs`` -> pull
request, ``repo`` -> repository)."""


def _synonym_table(groups: str) -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for line in groups.strip().splitlines():
        stems = {stem(word) for word in line.split()}
        for each in stems:
            table.setdefault(each, set()).update(stems - {each})
    return {key: frozenset(value) for key, value in table.items()}


SYNONYMS: Mapping[str, frozenset[str]] = _synonym_table(_GROUPS)
"""Each stemmed word's synonyms (stemmed): what a query term also finds (weighed with it as
one term, a synonym's occurrence counting 0.7 of the word's own)."""

_REMOVE = stem("remove")


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

    Each field's term frequencies are normalised by that field's length against its
    average (a long description does not drown a short name), weighted, summed, and
    saturated once per term (Robertson and Zaragoza's BM25F). ``plain=True`` gives the
    baseline the benchmark compares with: plain BM25 over all the text as one field
    (``\\w+`` words, no stemming, no synonyms).

    Example::

        index = SearchIndex()
        for each in toolkit.tools():
            index.add(each)
        names = index.rank("delete a repo", 5)
    """

    __slots__ = ("_docs", "_lock", "_plain", "_postings", "_state")

    def __init__(self, *, plain: bool = False) -> None:
        self._plain = plain
        # a registration on one thread while a search weighs the collection on another:
        # changes and the weighing take turns (searches themselves only read)
        self._lock = threading.Lock()
        # name -> field -> (term -> count, the field's length in terms)
        self._docs: dict[str, dict[str, tuple[dict[str, int], int]]] = {}
        self._postings: dict[str, set[str]] = {}  # term -> the names of the tools using it
        # What each query word finds, worked out for the whole collection on the first
        # search after a change (None: not yet): the tools with their BM25F weights, the
        # best _KEEP of them; and, for each word that had more, all of them, best first
        # (what a search within a view cuts from: _Weighed).
        self._state: _Weighed | None = None

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, tool: Any) -> None:
        """Index ``tool`` (replacing a tool of the same name)."""
        with self._lock:
            self._discard(tool.name)
            self._add(tool)

    def _add(self, tool: Any) -> None:
        fields: dict[str, tuple[dict[str, int], int]] = {}
        if self._plain:
            words = _plain_terms(" ".join(fields_of(tool).values()))
            fields["all"] = (_counts(words), len(words))
        else:
            for field_name, text in fields_of(tool).items():
                words = terms(text)
                fields[field_name] = (_counts(words), len(words))
        self._docs[tool.name] = fields
        for counts, _ in fields.values():
            for word in counts:
                self._postings.setdefault(word, set()).add(tool.name)
        self._state = None

    def discard(self, name: str) -> None:
        """Forget the tool ``name``; nothing happens when it is not indexed."""
        with self._lock:
            self._discard(name)

    def _discard(self, name: str) -> None:
        fields = self._docs.pop(name, None)
        if fields is None:
            return
        for counts, _ in fields.values():
            for word in counts:
                posting = self._postings.get(word)
                if posting is not None:
                    posting.discard(name)
                    if not posting:
                        del self._postings[word]
        self._state = None

    def _weigh(self) -> dict[str, dict[str, float]]:
        """What each query word finds (its best :data:`_KEEP` tools), for the collection
        as it is now."""
        return self._weighed()[0]

    def _weighed(self) -> _Weighed:
        """The collection's weighing (:data:`_Weighed`), worked out when it changed."""
        state = self._state
        if state is not None:
            return state
        with self._lock:
            return self._state or self._weigh_locked()  # (another search may have weighed)

    def _weigh_locked(self) -> _Weighed:
        count = len(self._docs)
        totals: dict[str, int] = {}
        for fields in self._docs.values():
            for field_name, (_, length) in fields.items():
                totals[field_name] = totals.get(field_name, 0) + length
        averages = {key: max(total / count, 1.0) for key, total in totals.items()}
        pseudo: dict[str, dict[str, float]] = {}  # term -> name -> weighted frequency
        for name, fields in self._docs.items():
            for field_name, (counts, length) in fields.items():
                weight = 1.0 if self._plain else _WEIGHTS[field_name]
                norm = 1 - _B + _B * length / averages[field_name]
                for word, frequency in counts.items():
                    row = pseudo.setdefault(word, {})
                    row[name] = row.get(name, 0.0) + weight * frequency / norm
        weights = {}
        complete: dict[str, dict[str, float]] = {}
        for word, row in pseudo.items():
            idf = _idf(count, len(row))
            posting = {name: idf * _saturated(value) for name, value in row.items()}
            weights[word] = _pruned(word, posting, complete)
        finds = weights
        if not self._plain:
            finds = {**weights, **_grouped(pseudo, count, complete)}
        self._state = state = (finds, complete)
        return state

    def _query_terms(self, query: str) -> dict[str, dict[str, float]]:
        """Each query term and the words it looks for, with weights: itself (1) and its
        synonyms (:data:`_SYNONYM_WEIGHT`)."""
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

    def rank(
        self, query: str, limit: int, allowed: Callable[[str], bool] | None = None
    ) -> list[str]:
        """The names of the ``limit`` best tools for ``query`` (those ``allowed`` says
        may be shown, when given), best first; ties in name order.

        The BM25F sums rank the tools; the best :data:`_POOL` are weighed again by
        coordination (a tool that answers more of the query's words ranks above one that
        matches a single rare word strongly), and the best :data:`_RERANK` of those by
        how much of each tool's name the query covers ("create a pull request" is
        pulls_create's whole name, and only part of pulls_submit-review's), a name word
        the query said counting 1 and one it found through a synonym
        :data:`_SYNONYM_WEIGHT`."""
        finds, complete = self._weighed()
        expanded = self._query_terms(query)
        if allowed is None:
            found = [finds.get(word, _NOTHING) for word in expanded]
        else:
            found = [_within(word, finds, complete, allowed) for word in expanded]
        sums: dict[str, float] = {}
        for each in found:
            for name, value in each.items():
                sums[name] = sums.get(name, 0.0) + value
        items = sums.items() if allowed is None else [p for p in sums.items() if allowed(p[0])]
        if self._plain:
            return [name for name, _ in sorted(items, key=_best_first)[:limit]]
        pool = heapq.nsmallest(max(limit, _POOL), items, key=_best_first)
        total = len(found)
        coordinated = []
        for name, score in pool:
            share = sum(1 for each in found if name in each) / total
            coordinated.append((score * share**_COORD, name))
        coordinated.sort(key=lambda pair: (-pair[0], pair[1]))
        asked: dict[str, float] = {}  # a word the query looks for -> its best weight
        for synonyms in expanded.values():
            for word, weight in synonyms.items():
                asked[word] = max(asked.get(word, 0.0), weight)
        reranked = []
        docs = self._docs
        for score, name in coordinated[: max(limit, _RERANK)]:
            fields = docs.get(name)  # None: removed by another thread since it was scored
            if fields is None:
                continue
            words = fields["name"][0]
            covered = sum(asked.get(word, 0.0) for word in words) / (len(words) or 1)
            reranked.append((-score * (1 + _NAME_COVERAGE * covered), name))
        reranked.sort()
        return [name for _, name in reranked[:limit]]


_NOTHING: Mapping[str, float] = {}

_Weighed = tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]
"""What a collection's weighing gives: each query word's best :data:`_KEEP` tools with
their weights, and for each word that had more, all of them (in no order)."""


def _pruned(
    word: str, posting: dict[str, float], complete: dict[str, dict[str, float]]
) -> dict[str, float]:
    """``posting`` cut to its best :data:`_KEEP` tools (impact-ordered pruning, done once
    per weighing: a word as common as "get" does not cost every search a pass over every
    tool); when it had more, all of it is kept in ``complete`` (as it is: a search within
    a view cuts it after the view's filter)."""
    if len(posting) <= _KEEP:
        complete.pop(word, None)  # (a synonym group's row replaces the word's own)
        return posting
    complete[word] = posting
    return dict(heapq.nlargest(_KEEP, posting.items(), key=_weight))


def _within(
    word: str,
    finds: Mapping[str, Mapping[str, float]],
    complete: Mapping[str, Mapping[str, float]],
    allowed: Callable[[str], bool],
) -> Mapping[str, float]:
    """What ``word`` finds among the tools ``allowed`` (a view's): its best :data:`_KEEP`
    of those — cut after the view's filter, so a view whose tools the whole collection's
    cut left out still finds them."""
    every = complete.get(word)
    if every is None:  # nothing was cut: the rank filters the sums
        return finds.get(word, _NOTHING)
    mine = [(name, value) for name, value in every.items() if allowed(name)]
    return dict(heapq.nlargest(_KEEP, mine, key=_weight))  # (ties as _pruned breaks them)


def _grouped(
    pseudo: Mapping[str, Mapping[str, float]],
    count: int,
    complete: dict[str, dict[str, float]],
) -> dict[str, dict[str, float]]:
    """What each word of :data:`SYNONYMS` finds: its group (the word and its synonyms) as
    one term, as Lucene's ``SynonymQuery`` does. A tool's frequency for the group is its
    weighted frequency of the word plus :data:`_SYNONYM_WEIGHT` times its synonyms', and
    the group's IDF is that of the tools using any word of it — so a rare synonym does
    not outweigh the common word the query said ("get a repository" is not about
    GitHub's Projects because "project" is rarer than "repository"). A tool that uses
    the word itself takes the geometric mean of the word's own IDF and the group's: a
    word of a wide group ("file", whose synonyms "content" and "path" a catalog may say
    everywhere) still tells the tools that say it from those that only say a synonym.
    The strongest :data:`_KEEP` only (all of them in ``complete``: :func:`_pruned`).
    Worked out with the term weights, so a search only adds up precomputed postings."""
    out = {}
    for word, synonyms in SYNONYMS.items():
        own = pseudo.get(word, _NOTHING)
        row = dict(own)
        for other in synonyms:
            for name, value in pseudo.get(other, _NOTHING).items():
                row[name] = row.get(name, 0.0) + _SYNONYM_WEIGHT * value
        if not row:
            continue
        idf = _idf(count, len(row))
        said = math.sqrt(idf * _idf(count, len(own))) if own else idf
        best = {
            name: (said if name in own else idf) * _saturated(value) for name, value in row.items()
        }
        out[word] = _pruned(word, best, complete)
    return out


def _idf(count: int, found: int) -> float:
    """Robertson-Sparck Jones IDF (the +1 keeps it positive) of a term ``found`` in
    ``found`` of ``count`` tools."""
    return math.log(1 + (count - found + 0.5) / (found + 0.5))


def _saturated(frequency: float) -> float:
    """BM25's saturation of a (weighted, length-normalised) term frequency."""
    return frequency * (_K1 + 1) / (frequency + _K1)


def _weight(pair: tuple[str, float]) -> float:
    return pair[1]


def _best_first(pair: tuple[str, float]) -> tuple[float, str]:
    return -pair[1], pair[0]


def _counts(words: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts
