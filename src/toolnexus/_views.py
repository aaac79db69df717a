"""Views of a toolkit: namespaces, filters, deferral, and what each provider is sent.

A toolkit with thousands of tools does not send them all: a tool may be *deferred* — held
back until a search finds it. This module owns that rule (:func:`is_deferred`: the tool's
own ``defer``, else its namespace's, else the view's, else the toolkit's), the named
groups (:class:`Namespace`), the live subsets (:class:`ToolView`: a filter and a
deferral over a toolkit, never a copy of it), the local search meta-tools a model without
native search uses (``search_tools``, then ``call_tool``), and the definitions each
provider is sent with each search form (docs/tool-search.md).

It sits below the toolkit: it names the few things it reads of one (:class:`_Kit`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._adapters import (
    anthropic_tool,
    gemini_declaration,
    keep_listable,
    mcp_tool,
    offered,
    openai_style,
    openai_tool,
)
from ._context import ToolContext, bound_principal
from ._log import LazyLogger
from ._result import ToolResult
from ._scopes import any_gated, visible
from ._search import Ranker, SearchIndex, check_query, regex_matches
from ._tools import Tool
from .errors import InvalidTypeError, InvalidValueError

if TYPE_CHECKING:
    from typing import Protocol

    class _Kit(Protocol):
        """What a view reads of its :class:`~toolnexus.Toolkit` (this module sits below)."""

        def tools(self) -> list[Tool]: ...
        def get(self, name: str) -> Tool: ...
        def __contains__(self, item: object) -> bool: ...
        def namespace_of(self, name: str) -> Namespace | None: ...
        def _skill_home(self, name: str) -> Namespace | None: ...
        def skills(self) -> list[Any]: ...  # Skills (_skills.py sits above this module)
        def _skills_prompt_of(self, skills: list[Any]) -> str: ...
        def _skill_tool_over(self, skills: Callable[[], Mapping[str, Any]]) -> Tool: ...
        def resolve(self, name: str, args: Any) -> tuple[Tool, dict[str, Any]] | ToolResult: ...
        def _with_arguments(
            self, tool: Tool, args: Any
        ) -> tuple[Tool, dict[str, Any]] | ToolResult: ...
        def _serves(self, name: object) -> bool: ...
        def _derived(self, key: Any, make: Callable[..., Any], *args: Any) -> Any: ...
        def _holds_back(self) -> bool: ...
        def _unknown(self, name: Any, among: list[str] | None = None) -> Exception: ...
        def register(
            self, *tools: Any, replace: bool = False, namespace: str | None = None
        ) -> None: ...
        @property
        def defer(self) -> bool: ...
        def _search_index(self) -> SearchIndex: ...
        def _touched(self) -> None: ...


__all__ = [
    "CALL_TOOL",
    "META_TOOLS",
    "NATIVE_SEARCH",
    "REVEALED_KEY",
    "SEARCH_TOOLS",
    "Namespace",
    "ToolView",
    "check_namespace_name",
    "is_deferred",
]

_log = LazyLogger("search")

SEARCH_TOOLS = "search_tools"
"""The local search meta-tool: ``{"query"}`` -> the best tools, which it reveals."""
CALL_TOOL = "call_tool"
"""The local call meta-tool: ``{"name", "arguments"}`` (arguments as JSON text)."""
NATIVE_SEARCH = "tool_search"
"""The client-executed native search (Anthropic's custom search tool answered with
``tool_reference`` blocks, OpenAI's ``tool_search`` with ``execution: "client"``)."""
META_TOOLS = (SEARCH_TOOLS, CALL_TOOL, NATIVE_SEARCH)
SKILL_TOOL = "skill"
"""The tool that loads a toolkit's skills by name (registered with the first skill)."""

REVEALED_KEY = "revealed"
"""The metadata key of a search result: the names of the tools it revealed."""

_SEARCH_LIMIT = 5
_NAMESPACE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ANTHROPIC_SEARCH = {
    "bm25": ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25"),
    "regex": ("tool_search_tool_regex_20251119", "tool_search_tool_regex"),
}


def check_namespace_name(name: object) -> str:
    """``name`` when it can name a namespace (what OpenAI's ``namespace`` accepts too)."""
    if not isinstance(name, str) or not _NAMESPACE_NAME.match(name):
        raise InvalidValueError(f"a namespace name must be 1 to 64 of [a-zA-Z0-9_-], got {name!r}")
    return name


class Namespace:
    """A named group of a toolkit's tools with a description (one per MCP server, say, or
    per OpenAPI tag), which may defer them all. Made by
    :meth:`Toolkit.namespace <toolnexus.Toolkit.namespace>`; its tools stay registered in
    the toolkit (one registry), the namespace only names them.

    Attributes:
        name: the group's name (``[a-zA-Z0-9_-]``, at most 64), unique in its toolkit.
        description: what its tools are for, shown to the model with OpenAI's
            ``namespace`` form.
        defer: True to hold its tools back until a search finds them, False to load
            them even in a deferred toolkit, None to follow the toolkit.

    Example::

        github = toolkit.namespace("github", "GitHub's REST API", defer=True)
        github.register(list_issues, create_issue)
        [t.name for t in github.tools()]
    """

    __slots__ = ("_defer", "_kit", "description", "name")

    def __init__(self, kit: _Kit, name: str, description: str, defer: bool | None) -> None:
        if not isinstance(description, str):
            raise InvalidTypeError(
                f"the description of namespace {name!r} must be a str, "
                f"got {type(description).__name__}"
            )
        self._kit = kit
        self.name = check_namespace_name(name)
        self.description = description
        self._defer = self._checked(defer)

    @property
    def defer(self) -> bool | None:
        """True to hold this namespace's tools back until a search finds them, False to
        load them even in a deferred toolkit, None to follow the toolkit. Settable: the
        toolkit's servers list the change from their next ``tools/list`` on.

        Example::

            github.defer = False   # its tools are listed again
        """
        return self._defer

    @defer.setter
    def defer(self, defer: bool | None) -> None:
        # What a server lists (with search on) changes with it: the toolkit hears of it.
        self._defer = self._checked(defer)
        self._kit._touched()

    def _checked(self, defer: object) -> bool | None:
        if defer is not None and not isinstance(defer, bool):
            raise InvalidTypeError(
                f"defer of namespace {self.name!r} must be True, False or None, got {defer!r}"
            )
        return defer

    def register(self, *tools: Tool | Callable[..., Any], replace: bool = False) -> None:
        """Register ``tools`` in the toolkit, in this namespace (as
        :meth:`Toolkit.register <toolnexus.Toolkit.register>` with ``namespace=``).

        Example::

            github.register(list_issues)
        """
        self._kit.register(*tools, replace=replace, namespace=self.name)

    def tools(self) -> list[Tool]:
        """This namespace's tools, in registration order (a new list)."""
        return [each for each in self._kit.tools() if self._kit.namespace_of(each.name) is self]

    def __repr__(self) -> str:
        defer = "" if self.defer is None else f" defer={self.defer}"
        return f"<Namespace {self.name!r}{defer}>"


def is_deferred(tool: Tool, namespace: Namespace | None, default: bool) -> bool:
    """The deferral rule, in one place: the most specific setting wins — the tool's own
    ``defer``, else its namespace's, else ``default`` (the view's, else the toolkit's)."""
    if tool.defer is not None:
        return tool.defer
    if namespace is not None and namespace.defer is not None:
        return namespace.defer
    return default


class ToolView:
    """A live subset of a toolkit: which tools a caller may see, which of them are
    deferred, and how a search over them ranks. A view holds no tools of its own — a tool
    registered in (or removed from) the toolkit is in (or out of) every view at once.

    Made by :meth:`Toolkit.view <toolnexus.Toolkit.view>`; a toolkit's own adapters and
    :meth:`~toolnexus.Toolkit.search` are those of its whole view. A
    :class:`~toolnexus.Host` made over a view (``Host(view)``) runs only its tools: one
    outside it is unknown, its meta-tools search and run the view, and its deferral is
    what a turn's revealed set follows.

    Example::

        view = toolkit.view(namespaces=["github"], defer=True)
        tools = view.to_anthropic(search="bm25")      # every tool deferred, found by search
        hits = view.search("close a ticket")          # only GitHub's tools
        host = Host(view)                             # runs GitHub's tools, and only those
    """

    __slots__ = ("_defer", "_filter", "_kit", "_meta", "_namespaces", "_ranker", "_skill_tool")

    def __init__(
        self,
        kit: _Kit,
        *,
        namespaces: Iterable[str] | None = None,
        filter: Callable[[Tool], bool] | None = None,
        defer: bool | None = None,
        ranker: Ranker | None = None,
    ) -> None:
        if filter is not None and not callable(filter):
            raise InvalidTypeError(f"filter must be callable, got {type(filter).__name__}")
        if ranker is not None and not callable(ranker):
            raise InvalidTypeError(f"ranker must be callable, got {type(ranker).__name__}")
        if defer is not None and not isinstance(defer, bool):
            raise InvalidTypeError(f"defer must be True, False or None, got {defer!r}")
        if isinstance(namespaces, str):
            raise InvalidTypeError("namespaces takes a list of names, got one str")
        self._kit = kit
        self._namespaces = None if namespaces is None else frozenset(namespaces)
        self._filter = filter
        self._defer = defer
        self._ranker = ranker
        self._meta: dict[str, Tool] | None = None
        self._skill_tool: Tool | None = None  # the skill tool over this view's skills

    # ----------------------------------------------------------------- membership

    def includes(self, tool: Tool) -> bool:
        """True when ``tool`` is in this view (its namespace and the filter admit it; the
        ``skill`` tool: the filter, and at least one skill of the view)."""
        if tool.source == "skill":
            if not self.skills():
                return False
        elif self._namespaces is not None:
            home = self._kit.namespace_of(tool.name)
            if home is None or home.name not in self._namespaces:
                return False
        return self._filter is None or bool(self._filter(tool))

    def skills(self) -> list[Any]:
        """The toolkit's skills this view offers: those registered in one of its
        ``namespaces`` (every skill when the view names none; ``filter`` judges tools
        only), in the order they were added (a new list).

        Example::

            [s.name for s in toolkit.view(namespaces=["docs"]).skills()]
        """
        skills = self._kit.skills()
        if self._namespaces is None:
            return skills
        kit = self._kit
        allowed = self._namespaces
        return [s for s in skills if getattr(kit._skill_home(s.name), "name", None) in allowed]

    def skills_prompt(self) -> str:
        """The skills prompt fragment (:meth:`Toolkit.skills_prompt
        <toolnexus.Toolkit.skills_prompt>`) of this view's skills only.

        Example::

            system = base + "\n\n" + toolkit.view(namespaces=["docs"]).skills_prompt()
        """
        return self._kit._skills_prompt_of(self.skills())

    def tools(self) -> list[Tool]:
        """The view's tools, deferred or not, in registration order (a new list)."""
        return [each for each in self._kit.tools() if self.includes(each)]

    @property
    def toolkit(self) -> Any:
        """The :class:`~toolnexus.Toolkit` this view shows part of (typed ``Any``: this
        module sits below the toolkit's)."""
        return self._kit

    def _own(self, name: object) -> bool:
        """True when a registered tool of this view is named ``name`` (a meta-tool is
        not registered; a registered tool outside the view is not this view's)."""
        kit = self._kit
        return isinstance(name, str) and name in kit and self.includes(kit.get(name))

    def _holds_back(self) -> bool:
        """True when a tool of the view may be deferred (cheap, and never False when one
        is: the view's own ``defer``, or the toolkit's, a namespace's or a tool's)."""
        return self._defer is True or self._kit._holds_back()

    def resolve(
        self, name: str, args: Mapping[str, Any] | str | bytes | None
    ) -> tuple[Tool, dict[str, Any]] | ToolResult:
        """:meth:`Toolkit.resolve <toolnexus.Toolkit.resolve>` within this view: a tool
        outside it is unknown (the error suggests the view's tools only, so it never says
        the tool is there), and ``search_tools``, ``call_tool`` and ``tool_search`` are
        this view's meta-tools (:meth:`meta_tools`: they search and run only its tools)
        unless a tool of the view has that name. Never raises.

        Example::

            resolved = view.resolve("delete_repo", {"owner": "o", "repo": "r"})
        """
        kit = self._kit
        if self._own(name):
            if name == SKILL_TOOL and self._namespaces is not None:
                # The toolkit's skill tool loads any of its skills: this view's, only its own.
                found = kit.get(name)
                if getattr(found, "source", None) == "skill":
                    return kit._with_arguments(self._skill_loader(), args)
            return kit.resolve(name, args)
        if name in META_TOOLS:
            return kit._with_arguments(self.meta_tools()[name], args)
        if kit._serves(name):  # resources/read, prompts/get: no tool's name
            return kit.resolve(name, args)
        among = [each.name for each in self.tools()]
        return ToolResult.error(str(kit._unknown(name, among)))

    def _skill_loader(self) -> Tool:
        """The ``skill`` tool as this view offers it: it loads (and names as available)
        this view's skills only. Made once per view."""
        loader = self._skill_tool
        if loader is None:
            loader = self._skill_tool = self._kit._skill_tool_over(
                lambda: {skill.name: skill for skill in self.skills()}
            )
        return loader

    def _lookup(self, name: str) -> Tool | None:
        """The tool (or meta-tool) ``name``, or None — without the toolkit's suggestions,
        which a miss here does not need."""
        if name in self._kit or name in META_TOOLS:
            return self._kit.get(name)
        return None

    def __contains__(self, item: object) -> bool:
        name = item.name if isinstance(item, Tool) else item
        if not isinstance(name, str):
            return False
        found = self._lookup(name)
        if found is None:
            return False
        return (not isinstance(item, Tool) or item is found) and self.includes(found)

    def __len__(self) -> int:
        return len(self.tools())

    def is_deferred(self, name: str) -> bool:
        """True when the tool ``name`` is in the view and deferred (:attr:`Tool.defer`)."""
        found = self._lookup(name)
        if found is None or not self.includes(found):
            return False
        default = self._kit.defer if self._defer is None else self._defer
        return is_deferred(found, self._kit.namespace_of(name), default)

    def loaded(self, revealed: Iterable[str] = ()) -> list[Tool]:
        """The tools sent up front: those not deferred, and the deferred ones named in
        ``revealed`` (found by a search earlier in the conversation)."""
        shown = set(_names(revealed))
        return [
            each for each in self.tools() if each.name in shown or not self.is_deferred(each.name)
        ]

    def has_deferred(self) -> bool:
        """True when at least one tool of the view is deferred."""
        return any(self.is_deferred(each.name) for each in self.tools())

    # ----------------------------------------------------------------- search

    def search(self, query: str, limit: int = _SEARCH_LIMIT, *, regex: bool = False) -> list[Tool]:
        """The tools of this view that best fit ``query``, best first (at most ``limit``).

        A query that is exactly a tool's name finds that tool first. ``regex=True`` reads
        the query as an ECMA-262 pattern (bounded in cost, however it is written) matched
        against each tool's name, title, description and parameters; tools whose name
        matches come first. Otherwise the view's ranker orders the tools (the default:
        BM25 over weighted fields, stemmed, with synonyms; docs/tool-search.md).

        Raises ``TypeError`` for a query that is not a str, ``ValueError`` for an empty
        query, one over 4,096 characters, a ``limit`` outside 1..100, or a regex that is not
        ECMA-262 or is over 200 characters. A custom ranker that raises, or returns
        something else than a list of names, is logged and the default ranking answers; a
        name it returns that is not in the view is dropped.

        Example::

            [t.name for t in view.search("remove a label from an issue", limit=3)]
        """
        query = check_query(query, limit)
        if regex:
            return regex_matches(query, self.tools())[:limit]
        if self._ranker is not None:
            candidates = {each.name: each for each in self.tools()}
            ranked = self._ranked(query, limit, candidates)
        else:
            names = self._kit._search_index().rank(query, limit, self._allows())
            ranked = [self._kit.get(name) for name in names]
        exact = self._exact(query)
        if exact is not None:
            ranked = [exact, *(each for each in ranked if each is not exact)][:limit]
        return ranked

    def _allows(self) -> Callable[[str], bool] | None:
        """Which names the view shows (None: every registered tool, no check needed), for
        one search: a view of namespaces only keeps its names until the toolkit changes;
        a filter is asked once per tool and search."""
        if self._namespaces is None and self._filter is None:
            return None
        kit = self._kit
        if self._filter is None:
            key = ("toolnexus.view.names", self._namespaces)
            names: frozenset[str] = kit._derived(key, self._names)
            return names.__contains__
        asked: dict[str, bool] = {}

        def allowed(name: str) -> bool:
            known = asked.get(name)
            if known is None:
                known = asked[name] = self.includes(kit.get(name))
            return known

        return allowed

    def _names(self) -> frozenset[str]:
        return frozenset(each.name for each in self.tools())

    def _exact(self, query: str) -> Tool | None:
        """The registered tool of the view named exactly ``query``, or None."""
        if not self._own(query):
            return None
        return self._kit.get(query)

    def _ranked(self, query: str, limit: int, candidates: dict[str, Tool]) -> list[Tool]:
        """The custom ranker's answer: the tools it names (by name, or by the candidate
        ``Tool`` itself), in its order. The default ranking answers instead when it
        raises, returns something other than a list, or returns a list none of whose
        items is a tool of the view; an empty list is its answer (nothing fits)."""
        assert self._ranker is not None
        try:
            names = self._ranker(query, list(candidates.values()), limit)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        else:
            if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
                problem = f"it returned {type(names).__name__}, not a list of names"
            else:
                picked = _picked(names, candidates)
                if picked or not names:
                    return picked[:limit]
                problem = "none of the names it returned is a tool of the view"
        _log.warning("tool search: the ranker failed (%s); the default ranking answers", problem)
        index = self._kit._search_index()
        return [candidates[name] for name in index.rank(query, limit, candidates.__contains__)]

    # ----------------------------------------------------------------- meta-tools

    def meta_tools(self) -> dict[str, Tool]:
        """The local search meta-tools bound to this view, by name: ``search_tools``
        (``{"query"}``: the best five tools, with their schemas, revealed for the rest of
        the conversation), ``call_tool`` (``{"name", "arguments"}``: run a tool of the
        view, its arguments as JSON text) and ``tool_search`` (the client-executed native
        search: its result names the tools found). Strict-mode clean (closed objects,
        every property required).

        Example::

            tools = view.meta_tools()
            tools["search_tools"]({"query": "open an issue"}).output
        """
        if self._meta is None:
            self._meta = {
                SEARCH_TOOLS: Tool(
                    SEARCH_TOOLS,
                    "Search the tools not listed yet: describe in a few words what you need "
                    "done. Returns the best matches with their parameters; call one with "
                    f"{CALL_TOOL}, or directly by name once it has been found.",
                    _QUERY_SCHEMA,
                    self._search_tool,
                    source="search",
                    defer=False,
                ),
                CALL_TOOL: Tool(
                    CALL_TOOL,
                    f"Call a tool found with {SEARCH_TOOLS}: its name, and its arguments as "
                    "a JSON object written as text.",
                    _CALL_SCHEMA,
                    self._call_tool,
                    source="search",
                    defer=False,
                ),
                NATIVE_SEARCH: Tool(
                    NATIVE_SEARCH,
                    "Search the deferred tools: describe in a few words what you need done.",
                    _QUERY_SCHEMA,
                    self._native_search_tool,
                    source="search",
                    defer=False,
                ),
            }
        return self._meta

    def _for_caller(self, ctx: ToolContext | None) -> ToolView:
        """This view as the caller of a meta-tool may see it: without the tools whose
        scopes it lacks (``_scopes.visible``; the caller is ``ctx.principal``, else the
        principal bound for the request) — a search never shows them, ``call_tool``
        never runs them."""
        if not any_gated():
            return self  # nothing asks for scopes: every caller sees the whole view
        principal = ctx.principal if ctx is not None else bound_principal.get()
        own = self._filter

        def shown(tool: Tool) -> bool:
            return visible(tool, principal) and (own is None or bool(own(tool)))

        return ToolView(
            self._kit,
            namespaces=self._namespaces,
            filter=shown,
            defer=self._defer,
            ranker=self._ranker,
        )

    def _found(self, args: Mapping[str, Any], ctx: ToolContext | None) -> list[Tool]:
        return self._for_caller(ctx).search(args["query"], _SEARCH_LIMIT)

    def _search_tool(self, args: Mapping[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        found = self._found(args, ctx)
        if not found:
            return ToolResult.ok(
                "no tool matched; try other words for what you need done",
                {REVEALED_KEY: []},
            )
        listing = [
            {"name": each.name, "description": each.description, "parameters": each.input_schema}
            for each in found
        ]
        return ToolResult.ok(
            json.dumps(listing, separators=(",", ":"), ensure_ascii=False),
            {REVEALED_KEY: [each.name for each in found]},
        )

    def _native_search_tool(
        self, args: Mapping[str, Any], ctx: ToolContext | None = None
    ) -> ToolResult:
        found = self._found(args, ctx)
        names = [each.name for each in found]
        text = ", ".join(names) if names else "no tool matched; try other words"
        return ToolResult.ok(
            text,
            {
                REVEALED_KEY: names,
                "definitions": [responses_definition(self._kit, each) for each in found],
            },
        )

    def _call_tool(self, args: Mapping[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        name = args["name"]
        # A name outside the caller's view gets the answer of a name that does not exist,
        # suggestions drawn from the view only: it never says the tool is there.
        caller = self._for_caller(ctx)
        if name in META_TOOLS or name not in caller:
            names = [each.name for each in caller.tools()]
            unknown = self._kit._unknown(name, names)
            return ToolResult.error(f"{unknown}; find one with {SEARCH_TOOLS} first")
        found = self._kit.resolve(name, args["arguments"])
        if isinstance(found, ToolResult):
            return found
        tool, arguments = found
        return tool(arguments, ctx)

    # ----------------------------------------------------------------- definitions

    def _search_form(self, search: str, choices: tuple[str, ...], provider: str) -> None:
        if search not in choices:
            raise InvalidValueError(
                f"search for {provider} must be one of {', '.join(map(repr, choices))}, "
                f"got {search!r}"
            )

    def listed(self, revealed: Iterable[str] = ()) -> list[Tool]:
        """The tools a model without native search is shown (the local fallback): the
        loaded ones, those in ``revealed``, then ``search_tools`` and ``call_tool`` while
        something is still held back (a registered tool of the same name wins).

        Example::

            [t.name for t in view.listed()]      # ['ping', 'search_tools', 'call_tool']
        """
        every = self.tools()
        tools = self.loaded(revealed)
        if len(tools) < len(every):
            meta = self.meta_tools()
            taken = {each.name for each in every}
            tools += [meta[name] for name in (SEARCH_TOOLS, CALL_TOOL) if name not in taken]
        return tools

    def _native_search(self, search: str, provider: str) -> Tool:
        """Our client-executed ``tool_search`` for ``search="client"``; a tool of the view
        of that name would take its calls (a registered tool wins over a meta-tool), so
        the form cannot work: say so."""
        if self._own(NATIVE_SEARCH):
            raise InvalidValueError(
                f"search={search!r} for {provider} adds a search tool named "
                f"{NATIVE_SEARCH!r}, but a tool of this view has that name (and would "
                "answer the model's searches): rename that tool, or use another search "
                "form ('local', or the provider's hosted search)"
            )
        return self.meta_tools()[NATIVE_SEARCH]

    def to_openai(
        self,
        *,
        strict: bool = False,
        api: str = "chat",
        search: str = "local",
        revealed: Iterable[str] = (),
    ) -> list[dict[str, Any]]:
        """OpenAI tool definitions for this view (see :meth:`Toolkit.to_openai
        <toolnexus.Toolkit.to_openai>` for ``strict`` and ``api``).

        ``search="local"`` (Chat Completions, or any model): the loaded tools, those in
        ``revealed``, and — while some are held back — ``search_tools`` and ``call_tool``.
        With ``api="responses"``, ``"hosted"`` sends every tool, deferred ones with
        ``"defer_loading": true`` and namespaced ones grouped in ``{"type": "namespace"}``
        entries, plus ``{"type": "tool_search"}``; ``"client"`` does the same with a
        client-executed ``tool_search`` that :meth:`Host.run_turn
        <toolnexus.Host.run_turn>` answers with ``tool_search_output``.

        Example::

            client.responses.create(model=..., input=...,
                                    tools=view.to_openai(api="responses", search="hosted"))
        """
        if api == "chat":
            self._search_form(search, ("local",), "Chat Completions (no native tool search)")
        else:
            self._search_form(search, ("local", "hosted", "client"), "the Responses API")
            if search == "client":
                self._native_search(search, "the Responses API")
        if search == "local":
            tools = offered(self.listed(revealed), openai_style(api))
            return [openai_tool(each, strict=strict, api=api) for each in tools]
        out: list[dict[str, Any]] = []
        groups: dict[str, dict[str, Any]] = {}
        for each in self.tools():
            entry = openai_tool(each, strict=strict, api=api)
            if self.is_deferred(each.name):
                entry["defer_loading"] = True
            home = self._kit.namespace_of(each.name)
            if home is None:
                out.append(entry)
                continue
            group = groups.get(home.name)
            if group is None:
                group = {
                    "type": "namespace",
                    "name": home.name,
                    "description": home.description,
                    "tools": [],
                }
                groups[home.name] = group
                out.append(group)
            group["tools"].append(entry)
        if search == "hosted":
            out.append({"type": "tool_search"})
        else:
            out.append(
                {
                    "type": "tool_search",
                    "execution": "client",
                    "description": "Search the deferred tools: describe in a few words what "
                    "you need done.",
                    "parameters": dict(_QUERY_SCHEMA),
                }
            )
        return out

    def to_anthropic(
        self,
        *,
        strict: bool = False,
        code_execution: str = "code_execution_20260120",
        cache_control: Mapping[str, Any] | None = None,
        search: str = "local",
        revealed: Iterable[str] = (),
    ) -> list[dict[str, Any]]:
        """Anthropic tool definitions for this view (``strict``, ``code_execution`` and
        ``cache_control`` as :meth:`Toolkit.to_anthropic <toolnexus.Toolkit.to_anthropic>`:
        the last tool definition carries ``cache_control``).

        ``search="local"``: the loaded tools, those in ``revealed``, and the meta-tools
        while some are held back (any model). ``"bm25"`` / ``"regex"``: every tool, deferred
        ones with ``"defer_loading": true``, plus Anthropic's ``tool_search_tool_bm25_20251119``
        or ``tool_search_tool_regex_20251119``. ``"client"``: every tool as for ``"bm25"``,
        plus a ``tool_search`` tool of ours whose results :meth:`Host.run_turn
        <toolnexus.Host.run_turn>` answers with ``tool_reference`` blocks.

        Example::

            client.beta.messages.create(model=..., messages=...,
                                        tools=view.to_anthropic(search="bm25"))
        """
        self._search_form(search, ("local", "bm25", "regex", "client"), "Anthropic")
        if search == "local":
            tools = self.listed(revealed)
        else:
            tools = self.tools()
            if search == "client":
                tools.append(self._native_search(search, "Anthropic"))
        out = []
        for index, each in enumerate(tools):
            last = index == len(tools) - 1
            entry = anthropic_tool(
                each,
                strict=strict,
                code_execution=code_execution,
                cache_control=cache_control if last else None,
            )
            if search != "local" and self.is_deferred(each.name):
                entry["defer_loading"] = True
            out.append(entry)
        if search in _ANTHROPIC_SEARCH:
            kind, name = _ANTHROPIC_SEARCH[search]
            out.append({"type": kind, "name": name})
        return out

    def to_gemini(
        self, *, schema: str = "json", search: str = "local", revealed: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Gemini definitions for this view: the local fallback (Gemini has no native tool
        search, so ``search`` takes ``"local"`` only): the loaded tools, those in
        ``revealed``, and the meta-tools (``schema`` as :meth:`Toolkit.to_gemini
        <toolnexus.Toolkit.to_gemini>`).

        Example::

            config = {"tools": view.to_gemini(revealed=turn.revealed)}
        """
        self._search_form(search, ("local",), "Gemini (no native tool search)")
        tools = offered(self.listed(revealed), "gemini")
        declarations = [gemini_declaration(t, schema=schema) for t in tools]
        return [{"functionDeclarations": declarations}]

    def to_mcp(
        self, *, search: str = "local", revealed: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """MCP ``tools/list`` entries for this view: the local fallback, as
        :meth:`to_gemini` (``search`` takes ``"local"`` only: MCP has no native search).

        Example::

            reply = {"tools": view.to_mcp()}
        """
        self._search_form(search, ("local",), "MCP (no native tool search)")
        return keep_listable([mcp_tool(each) for each in self.listed(revealed)])

    def __repr__(self) -> str:
        tools = self.tools()
        deferred = sum(1 for each in tools if self.is_deferred(each.name))
        return f"<ToolView {len(tools)} tools, {deferred} deferred>"


def responses_definition(kit: _Kit, tool: Tool) -> dict[str, Any]:
    """A tool as a Responses ``tool_search_output`` lists it: its function definition,
    inside its namespace's entry when it has one."""
    entry = openai_tool(tool, api="responses")
    home = kit.namespace_of(tool.name)
    if home is None:
        return entry
    return {
        "type": "namespace",
        "name": home.name,
        "description": home.description,
        "tools": [entry],
    }


def _picked(names: Sequence[object], candidates: Mapping[str, Tool]) -> list[Tool]:
    """The candidates a ranker's answer names, in its order, once each: an item is a
    tool's name or the candidate ``Tool`` itself; any other is dropped (logged), so a
    ranker never reveals a tool outside the view."""
    picked: list[Tool] = []
    for name in names:
        key = name.name if isinstance(name, Tool) else name
        found = candidates.get(key) if isinstance(key, str) else None
        if found is None or (isinstance(name, Tool) and name is not found):
            _log.warning(
                "tool search: the ranker returned %r, not a tool of the view; dropped", name
            )
        elif found not in picked:
            picked.append(found)
    return picked


def _names(revealed: Iterable[str]) -> list[str]:
    if isinstance(revealed, (str, bytes)):
        raise InvalidTypeError("revealed takes a list of tool names, got one str")
    names = list(revealed)
    for name in names:
        if not isinstance(name, str):
            raise InvalidTypeError(f"revealed takes tool names (str), got {name!r}")
    return names


_QUERY_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "what the tool should do, in a few words",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}
_CALL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "the tool's name, as the search gave it"},
        "arguments": {
            "type": "string",
            "description": "the tool's arguments: a JSON object, as text",
        },
    },
    "required": ["name", "arguments"],
    "additionalProperties": False,
}
