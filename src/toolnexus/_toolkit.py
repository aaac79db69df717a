"""The registry: :class:`Toolkit` — tools by name, calls by name, schemas per provider.

A host hands a model ``toolkit.to_openai()`` (or the Anthropic, Gemini, MCP shape), then
runs each call the model makes with ``toolkit.execute(name, args)``. Everything a model
can get wrong — an unknown name, arguments that are not JSON or not an object, arguments
that do not match the schema — comes back as an error :class:`ToolResult` that says how
to fix it; nothing raises.

A toolkit served over MCP may also hold resources and prompts
(:class:`toolnexus.mcp.Resource`, :class:`toolnexus.mcp.Prompt`): the toolkit keeps them
by URI and name, tells servers when any of its lists changes, and resolves the MCP methods
that run their functions (``resources/read``, ``prompts/get``, ``completion/complete``)
like tool names, so a host runs them as calls. It knows them only as registered objects:
``toolnexus.mcp`` is imported by whoever made them, never by this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import _wire
from ._context import ToolContext
from ._log import LazyLogger
from ._result import ToolResult
from ._search import Ranker, SearchIndex
from ._tools import Tool, make_tool
from ._views import META_TOOLS, Namespace, ToolView, check_namespace_name
from .errors import (
    DuplicateToolError,
    InvalidTypeError,
    InvalidValueError,
    NotFoundError,
    SkillError,
    StrictSchemaError,
    UnknownToolError,
)

if TYPE_CHECKING:
    from ._openapi import OpenApiImport, TokenSource
    from ._skills import Skill

__all__ = [
    "DuplicateToolError",
    "Namespace",
    "StrictSchemaError",
    "ToolView",
    "Toolkit",
    "UnknownToolError",
]

_log = LazyLogger()

KEPT_VALUES = 1024
"""How many derived values a toolkit keeps at most (:meth:`Toolkit._derived`): a server's
list pages, per client shape, caller and page."""


class Toolkit:
    """Tools by name: register them, look them up, run a model's calls, export schemas.

    Accepts :class:`Tool` objects and plain functions (made into tools with
    :func:`~toolnexus.tool`), and — for an MCP server — resources and prompts
    (:func:`toolnexus.mcp.resource`, :func:`toolnexus.mcp.prompt`). Iteration, :meth:`tools`
    and the adapters (tools only) keep registration order.

    Example::

        >>> from toolnexus import Toolkit, tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> toolkit = Toolkit([add])
        >>> toolkit.execute("add", '{"a": 2, "b": 3}')
        <ToolResult ok '5'>
        >>> toolkit.execute("ad", {"a": 2, "b": 3}).output
        "unknown tool 'ad'; did you mean 'add'?"
    """

    __slots__ = (
        "_calls",
        "_defer",
        "_described",
        "_held",
        "_homes",
        "_index",
        "_kept",
        "_kept_lock",
        "_namespaces",
        "_prompts",
        "_resources",
        "_skill_errors",
        "_skill_homes",
        "_skills",
        "_tools",
        "_version",
        "_view",
        "_watchers",
    )

    def __init__(
        self, tools: Iterable[Tool | Callable[..., Any] | Any] = (), *, defer: bool = False
    ) -> None:
        if not isinstance(defer, bool):
            raise InvalidTypeError(f"Toolkit(defer=...) takes True or False, got {defer!r}")
        self._defer = defer
        self._namespaces: dict[str, Namespace] = {}
        self._homes: dict[str, Namespace] = {}  # tool name -> its namespace
        self._index: SearchIndex | None = None  # built with the first search
        self._view: ToolView | None = None
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Any] = {}  # by URI (or URI template)
        self._prompts: dict[str, Any] = {}  # by name
        # the calls that run a resource's or a prompt's function, by the name a host is
        # given, as the registered items declare them (this module knows none of them)
        self._calls: dict[str, Callable[[Toolkit, str, Any], Any]] = {}
        self._watchers: list[Callable[[str, str | None], object]] = []
        self._held: Any = None  # a threading.local: the changes held in _told_once, per thread
        self._skills: dict[str, Skill] = {}  # by name; the skill tool reads it at each call
        self._skill_errors: list[SkillError] = []
        self._skill_homes: dict[str, Namespace] = {}  # skill name -> its namespace
        self._described: dict[str, tuple[Tool, dict[Hashable, Any]]] = {}  # _mcp_entry's
        # What _derived keeps: values made from the contents, each with the version it
        # was made at; the version counts the changes (see _touched).
        self._version = 0
        self._kept: dict[Hashable, tuple[int, Any]] = {}
        self._kept_lock = threading.Lock()
        frame = sys._getframe(1)
        for each in tools:
            self._add(self._as_item(each, frame), replace=False)

    # ----------------------------------------------------------------- registry

    @staticmethod
    def _as_item(item: Any, frame: Any) -> Any:
        if isinstance(item, Tool) or served_kind(item) is not None:
            return item
        if not callable(item):
            raise InvalidTypeError(
                f"Toolkit takes Tool objects or functions (and MCP resources and prompts), "
                f"got {type(item).__name__}"
            )
        return make_tool(item, _NO_OPTIONS, frame)

    def _skill_tool_over(self, skills: Callable[[], Mapping[str, Skill]]) -> Tool:
        """Package-internal: a ``skill`` tool that loads from ``skills()`` (read at each
        call) — the toolkit's own over all its skills, a view's over its own."""
        from ._skills import make_skill_tool

        return make_skill_tool(skills)

    def _table(self, item: Any) -> tuple[dict[str, Any], str, str]:
        """Where ``item`` is kept, its key there, and its kind."""
        kind = served_kind(item)
        if kind == "skill":
            return self._skills, item.name, kind
        if kind == "resource":
            return self._resources, item.uri, kind
        if kind == "prompt":
            return self._prompts, item.name, kind
        return self._tools, item.name, "tool"

    def _add(self, item: Any, *, replace: bool, namespace: Namespace | None = None) -> None:
        table, key, kind = self._table(item)
        if key in table and not replace:
            raise _duplicate(kind, key)
        table[key] = item
        if kind == "skill":
            if "skill" not in self._tools:
                loader = self._skill_tool_over(lambda: self._skills)
                self._tools["skill"] = loader
                if self._index is not None:
                    self._index.add(loader)
            elif self._tools["skill"].source != "skill":
                del table[key]
                raise DuplicateToolError("skill")
            # a skill is no tool: the search index holds the skill tool, never a skill
            if namespace is None:
                self._skill_homes.pop(key, None)
            else:
                self._skill_homes[key] = namespace
            return
        if kind != "tool":
            self._calls.update(type(item)._kit_calls)
            return
        if namespace is None:
            self._homes.pop(key, None)
        else:
            self._homes[key] = namespace
        if self._index is not None:
            self._index.add(item)

    def register(
        self,
        *tools: Tool | Callable[..., Any] | Any,
        replace: bool = False,
        namespace: str | None = None,
    ) -> None:
        """Add tools (or functions, made into tools), resources and prompts. All or nothing.
        Servers serving this toolkit tell their clients the lists changed.

        Raises :class:`DuplicateToolError` (a ``ValueError``) when a name is taken —
        by a registered tool or by another in the same call — unless ``replace=True``,
        which replaces the registered tool in its place; likewise (``ValueError``) for a
        resource's URI or a prompt's name. ``namespace`` puts the tools (and skills: a
        view's ``namespaces`` then admit them) in a namespace made with :meth:`namespace`
        (``LookupError`` for one that was not).

        Example::

            toolkit.register(add, search)
            toolkit.register(better_search, replace=True)
            toolkit.register(list_issues, namespace="github")
        """
        home = None
        if namespace is not None:
            home = self._namespaces.get(namespace) if isinstance(namespace, str) else None
            if home is None:
                raise _not_found("namespace", namespace, list(self._namespaces))
        frame = sys._getframe(1)
        made = [self._as_item(each, frame) for each in tools]
        seen: set[tuple[str, str]] = set()
        for item in made:
            table, key, kind = self._table(item)
            if (kind, key) in seen or (key in table and not replace):
                raise _duplicate(kind, key)
            seen.add((kind, key))
        if any(kind == "skill" for kind, _ in seen):
            held = self._tools.get("skill")
            if held is not None and held.source != "skill":
                raise DuplicateToolError("skill")
        had_tool = "skill" in self._tools
        try:
            for item in made:
                self._add(item, replace=replace, namespace=home)
        finally:
            self._touched()
        kinds = {kind for kind, _ in seen}
        if "skill" in kinds and not had_tool:
            kinds.add("tool")  # the skill tool came with the first skill
        self._changed(kinds)

    def get(self, name: str) -> Tool:
        """The tool registered as ``name`` — or, unless a tool of that name is registered,
        the search meta-tool ``search_tools``, ``call_tool`` or ``tool_search``
        (docs/tool-search.md).

        Raises :class:`UnknownToolError` (a ``LookupError``) listing the closest names.

        Example::

            toolkit.get("add")({"a": 1, "b": 2})
        """
        found = self._tools.get(name) if isinstance(name, str) else None
        if found is None and name in META_TOOLS:
            found = self._whole().meta_tools()[name]
        if found is None:
            raise self._unknown(name)
        return found

    def _unknown(self, name: Any, among: list[str] | None = None) -> UnknownToolError:
        """The error for a name no tool has, suggesting the closest of ``among`` (the
        caller's names; default: every registered tool)."""
        import difflib  # only a miss pays for it

        known = list(self._tools) if among is None else among
        text = name if isinstance(name, str) else repr(name)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(text)
        scored = []
        for candidate in known:
            matcher.set_seq1(candidate)
            score = matcher.ratio()
            if score >= 0.6:
                scored.append((score, candidate))
        scored.sort(key=lambda pair: -pair[0])
        # Only names about as close as the best: 'serch' suggests 'search', not 'fetch' too.
        best = scored[0][0] if scored else 0.0
        suggestions = [candidate for score, candidate in scored[:3] if score >= best - 0.1]
        return UnknownToolError(text, suggestions, known)

    def remove(self, name: str | Any) -> Any:
        """Unregister the tool ``name`` (or the tool, resource or prompt object given) and
        return it. Servers serving this toolkit tell their clients the list changed.
        Raises :class:`UnknownToolError` for an unknown tool name, :class:`NotFoundError`
        (its parent) for a resource or prompt that is not registered.

        Example::

            toolkit.remove("add")
            toolkit.remove(readme)        # a resource
        """
        if isinstance(name, str):
            self.get(name)
            removed: Any = self._tools.pop(name)
            kind = "tool"
        else:
            table, key, kind = self._table(name)
            if table.get(key) is not name:
                raise NotFoundError(kind, key, known=list(table))
            removed = table.pop(key)
            if kind == "skill":
                self._skill_homes.pop(key, None)
        if kind == "tool":
            self._homes.pop(removed.name, None)
            self._described.pop(removed.name, None)  # its kept entry goes with it
            if self._index is not None:
                self._index.discard(removed.name)
        self._touched()
        self._changed({kind})
        return removed

    # ----------------------------------------------------------------- skills

    def add_skills(self, path: str | os.PathLike[str], *, strict: bool = False) -> list[Skill]:
        """Add the skills found under ``path`` — a folder of skill folders (searched
        deeply, as the toolnexus family does), one skill's folder, or a ``SKILL.md`` —
        and return them, in the family's discovery order. One skill per name: a skill
        the toolkit has keeps its name; among those found here, one whose folder has
        the name beats one whose folder does not, else the first found wins. A skill left
        out is an error naming both files.

        The toolkit gains the ``skill`` tool (one tool that loads any of its skills by
        name: the family's) with the first skill; :meth:`skills_prompt` lists them for a
        system prompt. A skill that cannot be read — no frontmatter, malformed YAML, not
        UTF-8, too big, a name taken — is left out with a warning, and its
        :class:`~toolnexus.errors.SkillError` (naming the skill, the file and the line)
        is kept in :attr:`skill_errors`; ``strict=True`` raises the first one instead,
        adding nothing. Servers serving this toolkit tell their clients the list changed.

        Raises :class:`~toolnexus.errors.InvalidValueError` when ``path`` is neither a
        folder nor a ``SKILL.md``, :class:`DuplicateToolError` when a tool of another
        kind is named ``skill``.

        Example::

            toolkit = Toolkit()
            toolkit.add_skills("skills/")
            system_prompt = "You are a helpful agent.\n\n" + toolkit.skills_prompt()
        """
        from ._skills import discover_skills

        # One skill per name (discover_skills' rule): the toolkit's own keep theirs.
        added, errors = discover_skills(path, taken=self._skills)
        if strict and errors:
            raise errors[0]
        if added:
            self.register(*added)
        for problem in errors:
            _log.warning("skill left out: %s", problem)
        self._skill_errors += errors
        return added

    def skills(self) -> list[Skill]:
        """The skills the ``skill`` tool loads, local and remote, in the order they were
        added (a new list).

        Example::

            [s.name for s in toolkit.skills()]
        """
        return list(self._skills.values())

    def get_skill(self, name: str) -> Skill:
        """The skill named ``name``. Raises :class:`NotFoundError` (a ``LookupError``)
        naming the closest skills there are.

        Example::

            toolkit.get_skill("pdf-processing").body()
        """
        found = self._skills.get(name) if isinstance(name, str) else None
        if found is None:
            raise _not_found("skill", name, list(self._skills))
        return found

    def skills_prompt(self) -> str:
        """The fragment of a system prompt that tells a model which skills it can load
        with the ``skill`` tool: those with a description, by name in code-point order —
        the toolnexus family's text, the same in every port. A toolkit whose skills have
        no description gives ``"No skills are currently available."``.

        Example::

            system = base_prompt + "\n\n" + toolkit.skills_prompt()
        """
        return self._skills_prompt_of(list(self._skills.values()))

    def _skills_prompt_of(self, skills: list[Skill]) -> str:
        """The prompt fragment of ``skills`` (a view's, or all of them)."""
        from ._skills import skills_prompt

        return skills_prompt(skills)

    @property
    def skill_errors(self) -> list[SkillError]:
        """The skills :meth:`add_skills` left out, each a
        :class:`~toolnexus.errors.SkillError` naming the skill, the file and what is
        wrong (a new list).

        Example::

            for problem in toolkit.skill_errors:
                print(problem)
        """
        return list(self._skill_errors)

    # ----------------------------------------------------------------- search and views

    @property
    def defer(self) -> bool:
        """Whether this toolkit's tools are deferred unless their namespace or they
        themselves say otherwise (``Toolkit(defer=True)``; docs/tool-search.md)."""
        return self._defer

    def namespace(self, name: str, description: str, *, defer: bool | None = None) -> Namespace:
        """Make a namespace: a named group of tools with a description, which may defer
        them all (``defer=True``). Register its tools with :meth:`Namespace.register` or
        ``register(..., namespace=name)``.

        Raises ``ValueError`` when the name is taken by another namespace (two groups of
        one name would merge in a provider's ``namespace`` form) or is not 1 to 64 of
        ``[a-zA-Z0-9_-]``.

        Example::

            github = toolkit.namespace("github", "GitHub's REST API", defer=True)
            github.register(list_issues, create_issue)
        """
        check_namespace_name(name)
        if name in self._namespaces:
            raise InvalidValueError(
                f"a namespace named {name!r} exists already; give the new one another name "
                f"or register into the existing one (toolkit.register(..., namespace={name!r}))"
            )
        made = Namespace(self, name, description, defer)
        self._namespaces[name] = made
        self._touched()
        return made

    def namespaces(self) -> list[Namespace]:
        """The namespaces, in the order they were made (a new list).

        Example::

            [ns.name for ns in toolkit.namespaces()]
        """
        return list(self._namespaces.values())

    def namespace_of(self, name: str) -> Namespace | None:
        """The namespace the tool ``name`` was registered in, or None.

        Example::

            toolkit.namespace_of("list_issues")       # <Namespace 'github' defer=True>
        """
        return self._homes.get(name)

    def _skill_home(self, name: str) -> Namespace | None:
        """The namespace the skill ``name`` was registered in (a view's filter), or None."""
        return self._skill_homes.get(name)

    def is_deferred(self, name: str) -> bool:
        """True when the tool ``name`` is held back until a search finds it: its own
        ``defer``, else its namespace's, else the toolkit's says so. False for an unknown
        name.

        Example::

            toolkit.is_deferred("list_issues")
        """
        return self._whole().is_deferred(name)

    def view(
        self,
        *,
        namespaces: Iterable[str] | None = None,
        filter: Callable[[Tool], bool] | None = None,
        defer: bool | None = None,
        ranker: Ranker | None = None,
    ) -> ToolView:
        """A live view of this toolkit: the tools of ``namespaces`` (all when None) that
        ``filter(tool)`` admits, with ``defer`` in place of the toolkit's default (a tool's
        or namespace's own setting still wins), searched with ``ranker``. Not a copy: what
        is registered later is in it at once — a namespace made later too, so a name in
        ``namespaces`` that no namespace has yet is kept, with a ``UserWarning`` naming
        the known namespaces and the closest one (a misspelt name would be an empty
        view).

        Example::

            view = toolkit.view(filter=lambda t: t.source == "native", defer=True)
            view.to_openai()
        """
        made = ToolView(self, namespaces=namespaces, filter=filter, defer=defer, ranker=ranker)
        self._warn_unknown_namespaces(made._namespaces)
        return made

    def _warn_unknown_namespaces(self, names: Iterable[str] | None) -> None:
        unknown = sorted((n for n in names or () if n not in self._namespaces), key=repr)
        if not unknown:
            return
        import difflib
        import warnings

        known = list(self._namespaces)
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, known, n=1) if isinstance(name, str) else []
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        warnings.warn(
            f"toolkit.view(namespaces=...): no namespace named {', '.join(hints)}; the view "
            "holds none of its tools until toolkit.namespace() makes it. Known namespaces: "
            f"{', '.join(map(repr, known)) or 'none'}",
            UserWarning,
            stacklevel=3,
        )

    def _whole(self) -> ToolView:
        if self._view is None:
            self._view = ToolView(self)
        return self._view

    def _search_index(self) -> SearchIndex:
        """Package-internal, for views: the index, built on first use and kept current."""
        if self._index is None:
            index = SearchIndex()
            for each in self._tools.values():
                index.add(each)
            self._index = index
        return self._index

    def search(
        self,
        query: str,
        limit: int = 5,
        *,
        regex: bool = False,
        ranker: Ranker | None = None,
    ) -> list[Tool]:
        """The tools that best fit ``query``, best first (at most ``limit``), deferred or not.

        The default ranking is BM25 over each tool's name (split on ``_ - .`` and
        camelCase), title, description and parameters, with field weights, stemming and
        a table of synonyms for the words APIs use (docs/tool-search.md). A query that is a
        tool's exact name finds it first; ``regex=True`` reads the query as an ECMA-262
        pattern (bounded in cost). ``ranker(query, tools, limit) -> names`` ranks instead
        (an embedding model, a classifier); it cannot be given with ``regex=True``
        (``ValueError``: a pattern matches, it is not ranked). See :meth:`ToolView.search`
        for what else is refused and the fallbacks.

        Example::

            >>> from toolnexus import Toolkit, tool
            >>> def delete_repo(owner: str, repo: str) -> str:
            ...     return "deleted"
            >>> def create_issue(title: str) -> str:
            ...     return "opened"
            >>> toolkit = Toolkit([
            ...     tool(delete_repo, description="Delete a repository."),
            ...     tool(create_issue, description="Open an issue."),
            ... ])
            >>> [t.name for t in toolkit.search("remove a project", 1)]
            ['delete_repo']
        """
        if ranker is not None and regex:
            raise InvalidValueError(
                "search() takes regex=True or a ranker, not both: a regex query matches "
                "tools by pattern and ranks nothing (drop ranker=, or search words "
                "without regex=True)"
            )
        view = self._whole() if ranker is None else self.view(ranker=ranker)
        return view.search(query, limit, regex=regex)

    # ----------------------------------------------------------------- resources, prompts

    def resources(self) -> list[Any]:
        """The registered resources (:class:`toolnexus.mcp.Resource`), fixed URIs and
        templates, in registration order (a new list).

        Example::

            [r.uri for r in toolkit.resources()]
        """
        return list(self._resources.values())

    def prompts(self) -> list[Any]:
        """The registered prompts (:class:`toolnexus.mcp.Prompt`), in registration order.

        Example::

            [p.name for p in toolkit.prompts()]
        """
        return list(self._prompts.values())

    def get_prompt(self, name: str) -> Any:
        """The prompt registered as ``name``. Raises :class:`NotFoundError` (a
        ``LookupError``) naming the closest prompts there are.

        Example::

            toolkit.get_prompt("review").render({"code": "x = 1"})
        """
        found = self._prompts.get(name) if isinstance(name, str) else None
        if found is None:
            raise _not_found("prompt", name, list(self._prompts))
        return found

    def find_resource(self, uri: str) -> tuple[Any, dict[str, str]] | None:
        """The resource that serves ``uri`` and the template variables it gives (``{}``
        for a fixed URI), or None. A fixed URI wins; then templates, in registration order.

        Example::

            found = toolkit.find_resource("test://template/123/data")
            if found is not None:
                resource, params = found
        """
        if not isinstance(uri, str):
            return None
        fixed = self._resources.get(uri)
        if fixed is not None and not fixed.is_template:
            return fixed, {}
        for item in self._resources.values():
            if item.is_template:
                params = item.match(uri)
                if params is not None:
                    return item, params
        return None

    def resource_changed(self, uri: str) -> None:
        """Say that the content of the resource at ``uri`` changed: servers serving this
        toolkit send ``notifications/resources/updated`` to the clients subscribed to it.

        Example::

            save_notes(text)
            toolkit.resource_changed("file:///notes.txt")
        """
        if not isinstance(uri, str):
            raise InvalidTypeError(f"resource_changed() takes a URI str, got {type(uri).__name__}")
        for watcher in list(self._watchers):
            watcher("resource", uri)

    def _watch(self, watcher: Callable[[str, str | None], object]) -> Callable[[], None]:
        """Package-internal, for servers: ``watcher(kind, uri)`` is told of every change —
        ``("tools"|"resources"|"prompts", None)`` when a list changed, ``("resource", uri)``
        when a resource's content did. Returns the function that stops watching."""
        self._watchers.append(watcher)

        def stop() -> None:
            with contextlib.suppress(ValueError):  # stopped already
                self._watchers.remove(watcher)

        return stop

    def _changed(self, kinds: set[str]) -> None:
        held = self._held
        if held is not None and getattr(held, "kinds", None) is not None:
            held.kinds.update(kinds)  # told once, as _told_once ends
            return
        for kind in sorted(kinds):
            for watcher in list(self._watchers):
                watcher(kind + "s", None)

    @contextlib.contextmanager
    def _told_once(self) -> Iterator[None]:
        """Package-internal. Within: this thread's changes are told to the toolkit's
        watchers (its servers) once per list, at the end — a list that swapped many items
        (a gateway re-reading a server's) is one ``list_changed``."""
        held = self._held
        if held is None:
            with self._kept_lock:  # (a lock the toolkit has: this is made once)
                held = self._held
                if held is None:
                    held = self._held = threading.local()
        if getattr(held, "kinds", None) is not None:
            yield  # within another on this thread: that one tells them
            return
        held.kinds = set()
        try:
            yield
        finally:
            kinds, held.kinds = held.kinds, None
            if kinds:
                self._changed(kinds)

    def tools(self) -> list[Tool]:
        """The registered tools, in registration order (a new list).

        Example::

            [t.name for t in toolkit.tools()]
        """
        return list(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Tool):
            return self._tools.get(item.name) is item
        return isinstance(item, str) and item in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __repr__(self) -> str:
        names = ", ".join(self._tools)
        count = len(self._tools)
        extra = ""
        if self._resources:
            extra += f", {len(self._resources)} resource{'' if len(self._resources) == 1 else 's'}"
        if self._prompts:
            extra += f", {len(self._prompts)} prompt{'' if len(self._prompts) == 1 else 's'}"
        if self._skills:
            extra += f", {len(self._skills)} skill{'' if len(self._skills) == 1 else 's'}"
        return (
            f"<Toolkit {count} tool{'' if count == 1 else 's'}"
            f"{': ' + names if names else ''}{extra}>"
        )

    # ----------------------------------------------------------------- OpenAPI

    @classmethod
    def from_openapi(
        cls,
        document: Mapping[str, Any] | str | os.PathLike[str],
        *,
        base_url: str | None = None,
        server_variables: Mapping[str, str] | None = None,
        tags: Iterable[str] | None = None,
        paths: Iterable[str] | None = None,
        methods: Iterable[str] | None = None,
        credentials: Mapping[str, str | Callable[[], str] | TokenSource] | None = None,
        headers: Mapping[str, str] | None = None,
        prefix: str = "",
        timeout_ms: int | None = None,
        max_response_bytes: int | None = None,
        max_redirects: int | None = None,
        strict: bool = False,
        defer: bool | None = None,
        namespace: str | None = "tag",
        output_schemas: bool = True,
    ) -> Toolkit:
        """A toolkit with one HTTP tool per operation of an OpenAPI 3.0 or 3.1 document.

        ``document`` is a dict, a file path or an http(s) URL; the options are those of
        :func:`~toolnexus.load_openapi`, which says what each does. An operation that
        cannot be made a tool is left out and logged as a warning naming it — or, with
        ``strict=True``, :class:`~toolnexus.errors.OpenApiError` lists every one.
        Each tag is a namespace (:meth:`namespace`) described by the document's ``tags``
        entry (``namespace="tag"``; a string puts every tool in that one, ``None`` in
        none); ``defer`` (``None``: True above 30 operations) holds them back for tool
        search (docs/http-tools.md, docs/tool-search.md).

        Raises :class:`~toolnexus.errors.OpenApiError` when the document cannot be read,
        is not OpenAPI 3.x or names no server (pass ``base_url``).

        Example::

            toolkit = Toolkit.from_openapi(
                "openapi.json",
                base_url="https://api.example.com",
                credentials={"bearerAuth": "${API_TOKEN}"},
            )
            print([tool.name for tool in toolkit])
        """
        from ._openapi import load_openapi
        from .errors import OpenApiError

        imported = load_openapi(
            document,
            base_url=base_url,
            server_variables=server_variables,
            tags=tags,
            paths=paths,
            methods=methods,
            credentials=credentials,
            headers=headers,
            prefix=prefix,
            timeout_ms=timeout_ms,
            defer=defer,
            namespace=namespace,
            output_schemas=output_schemas,
            # None: load_openapi's own default (10 MiB, 5), written once, there
            **{
                key: value
                for key, value in (
                    ("max_response_bytes", max_response_bytes),
                    ("max_redirects", max_redirects),
                )
                if value is not None
            },
        )
        if strict and imported.problems:
            raise OpenApiError(
                "the document",
                f"{len(imported.problems)} operation(s) did not load: "
                + "; ".join(imported.problems),
            )
        return cls._of_import(imported, defer)

    @classmethod
    def _of_import(cls, imported: OpenApiImport, defer: bool | None) -> Toolkit:
        """A toolkit of an OpenAPI import's tools: a namespace per tag (described by the
        document's ``tags``), deferred as :meth:`OpenApiImport.namespace_defer` says; a
        tool in no namespace carries that ``defer`` itself."""
        toolkit = cls()
        held = imported.namespace_defer(defer)
        for tool in imported.tools:
            home = imported.namespaces.get(tool.name)
            if home is None:
                toolkit.register(tool if held is None else dataclasses.replace(tool, defer=held))
                continue
            if home not in toolkit._namespaces:
                toolkit.namespace(home, imported.descriptions.get(home, ""), defer=held)
            toolkit.register(tool, namespace=home)
        return toolkit

    # ----------------------------------------------------------------- calls

    def resolve(
        self, name: str, args: Mapping[str, Any] | str | bytes | None
    ) -> tuple[Tool, dict[str, Any]] | ToolResult:
        """Look the tool up and read its arguments, or say what is wrong with the call.

        ``args`` may be a mapping, JSON text (what OpenAI-style providers send; empty text
        means no arguments) or None. Returns ``(tool, args_dict)``, or an error
        :class:`ToolResult` for an unknown name, malformed JSON or a non-object — never
        raises. The arguments are not validated here: the tool does that when called.

        In a toolkit with resources or prompts, the MCP methods that run their functions
        resolve too, with the method's params as ``args``: ``"resources/read"``
        (``{"uri"}``), ``"prompts/get"`` (``{"name", "arguments"}``) and
        ``"completion/complete"`` (``{"ref", "argument", "context"}``) — no tool can have
        those names, so a host runs them as calls like any other.

        Example::

            resolved = toolkit.resolve("add", '{"a": 1, "b": 2}')
            if isinstance(resolved, ToolResult):
                return resolved           # tell the model what was wrong
            tool, args = resolved
        """
        found = self._tools.get(name) if isinstance(name, str) else None
        if found is None and name in META_TOOLS:
            found = self._whole().meta_tools()[name]
        if found is None:
            served = self._calls.get(name) if self._resources or self._prompts else None
            if served is not None:
                result: tuple[Tool, dict[str, Any]] | ToolResult = served(self, name, args)
                return result
            return ToolResult(str(self._unknown(name)), True)
        if args is None:
            return found, {}
        if isinstance(args, dict):
            return found, args
        return self._with_arguments(found, args)

    def _serves(self, name: object) -> bool:
        """Package-internal, for views: True when :meth:`resolve` answers ``name`` with a
        resource's or a prompt's call (``resources/read``, ...), which no tool is named."""
        return (
            bool(self._resources or self._prompts)
            and isinstance(name, str)
            and (name in self._calls)
        )

    def _with_arguments(
        self, found: Tool, args: Mapping[str, Any] | str | bytes | None
    ) -> tuple[Tool, dict[str, Any]] | ToolResult:
        """Package-internal (:meth:`resolve`, and a view's): ``found`` with its arguments
        read from ``args``, or the error result saying what is wrong with them."""
        if args is None:
            return found, {}
        if isinstance(args, dict):
            return found, args
        if isinstance(args, Mapping):
            return found, dict(args)
        if isinstance(args, (str, bytes, bytearray)):
            if not args.strip():
                return found, {}
            try:
                value = json.loads(args)
            except RecursionError:
                return ToolResult(
                    f"invalid arguments for {found.name!r}: the JSON is nested too deeply; "
                    f"send {_shape_hint(found)}",
                    True,
                )
            except ValueError as exc:
                return ToolResult(
                    f"invalid arguments for {found.name!r}: not valid JSON ({exc}); "
                    f"send {_shape_hint(found)}",
                    True,
                )
            if not isinstance(value, dict):
                return ToolResult(
                    f"invalid arguments for {found.name!r}: expected a JSON object, got "
                    f"{_wire.describe(value)}; send {_shape_hint(found)}",
                    True,
                )
            return found, value
        return ToolResult(
            f"invalid arguments for {found.name!r}: expected a JSON object, got "
            f"{type(args).__name__}; send {_shape_hint(found)}",
            True,
        )

    def execute(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        ctx: ToolContext | None = None,
    ) -> ToolResult:
        """Run one call by name: resolve, validate, call, normalise. Never raises for
        anything a model can cause (see :meth:`resolve` and :class:`Tool`).

        An ``async def`` tool runs to completion on a private event loop; in async code
        prefer :meth:`aexecute`.

        Example::

            result = toolkit.execute("add", '{"a": 1, "b": 2}')
        """
        resolved = self.resolve(name, args)
        if isinstance(resolved, ToolResult):
            return resolved
        tool, arguments = resolved
        return tool(arguments, ctx)

    async def aexecute(
        self,
        name: str,
        args: Mapping[str, Any] | str | bytes | None = None,
        ctx: ToolContext | None = None,
    ) -> ToolResult:
        """The async twin of :meth:`execute`: awaits an ``async def`` tool natively (a sync
        tool is called inline).

        Example::

            result = await toolkit.aexecute("fetch", {"url": "https://example.com"})
        """
        resolved = self.resolve(name, args)
        if isinstance(resolved, ToolResult):
            return resolved
        tool, arguments = resolved
        return await tool.acall(arguments, ctx)

    # ----------------------------------------------------------------- adapters

    def to_openai(
        self,
        *,
        strict: bool = False,
        api: str = "chat",
        search: str = "local",
        revealed: Iterable[str] = (),
        programmatic: bool = False,
    ) -> list[dict[str, Any]]:
        """Tool definitions for OpenAI: the Chat Completions ``tools`` parameter, or with
        ``api="responses"`` the Responses API's.

        Chat Completions: ``{"type": "function", "function": {name, description,
        parameters}}``. Responses API: ``{"type": "function", name, description, parameters,
        strict}`` — flat, and ``strict`` always written (that API reads a missing one as
        true). With ``strict=True`` each schema is rewritten as strict mode requires: every
        property is listed in ``required``, an optional one becomes nullable (a ``null``
        argument then reads as "not given"), every object is closed, and ``default``,
        ``uniqueItems``, ``prefixItems``, ``contentEncoding`` and formats strict mode does not
        know (``path``, ``decimal``) are dropped — the tool still enforces them when called.
        Raises :class:`StrictSchemaError` for a schema with an open object (one that takes
        arbitrary keys), which strict mode cannot express, and ValueError for another
        ``api``.

        Deferred tools (:meth:`is_deferred`) are held back: with ``search="local"`` the
        list has the loaded tools, those named in ``revealed``, and ``search_tools`` and
        ``call_tool``; the Responses API takes ``search="hosted"`` or ``"client"`` too
        (:meth:`ToolView.to_openai`, docs/tool-search.md). Nothing deferred, nothing changes.

        A tool only code may call (``allowed_callers=["programmatic"]``) is left out of a
        Chat Completions list: that API has no programmatic tool calling.

        With ``programmatic=True`` (Responses API only) the list starts with the provider's
        ``{"type": "programmatic_tool_calling"}`` tool when a tool allows programmatic
        callers, so the model can call those tools from code; with none, nothing is added.

        Example::

            client.chat.completions.create(model=..., messages=..., tools=toolkit.to_openai())
            client.responses.create(model=..., input=..., tools=toolkit.to_openai(api="responses"))
        """
        if programmatic and api != "responses":
            raise InvalidValueError(
                "programmatic=True needs api='responses': Chat Completions has no "
                "programmatic tool calling"
            )
        if search == "local" and not revealed and not self._holds_back():
            from ._adapters import offered, openai_style

            tools = offered(self._tools.values(), openai_style(api))
            entries = [item.to_openai(strict=strict, api=api) for item in tools]
        else:
            entries = self._whole().to_openai(
                strict=strict, api=api, search=search, revealed=revealed
            )
        return self._with_programmatic(entries, programmatic, "openai")

    def to_anthropic(
        self,
        *,
        strict: bool = False,
        code_execution: str = "code_execution_20260120",
        cache_control: Mapping[str, Any] | None = None,
        search: str = "local",
        revealed: Iterable[str] = (),
        programmatic: bool = False,
    ) -> list[dict[str, Any]]:
        """Tool definitions for Anthropic's Messages API: ``{name, description,
        input_schema}``, plus each tool's ``allowed_callers`` (``"programmatic"`` written as
        the ``code_execution`` tool version), ``input_examples`` and
        ``eager_input_streaming``; ``cache_control`` marks the last tool as a cache
        breakpoint (the tools before it are cached with it).

        With ``strict=True`` each also says ``"strict": true`` (strict tool use) and its
        schema is kept within that mode's subset: every object is closed, ``oneOf`` becomes
        ``anyOf``, fixed tuples become arrays, and numeric and length bounds, ``uniqueItems``,
        ``minItems`` above 1 and unknown formats are dropped — the tool still enforces them.
        Raises :class:`StrictSchemaError` for an open object or a recursive schema.

        Deferred tools are held back as :meth:`to_openai` says; ``search="bm25"``,
        ``"regex"`` or ``"client"`` gives Anthropic's native forms instead
        (:meth:`ToolView.to_anthropic`, docs/tool-search.md).

        With ``programmatic=True`` the list starts with the code-execution tool itself,
        ``{"type": code_execution, "name": "code_execution"}``, when a tool allows
        programmatic callers (first, so a ``cache_control`` breakpoint caches it too); with
        none, nothing is added.

        Example::

            client.messages.create(model=..., messages=..., tools=toolkit.to_anthropic())
        """
        if search == "local" and not revealed and not self._holds_back():
            tools = list(self._tools.values())
            entries = [
                item.to_anthropic(
                    strict=strict,
                    code_execution=code_execution,
                    cache_control=cache_control if index == len(tools) - 1 else None,
                )
                for index, item in enumerate(tools)
            ]
        else:
            entries = self._whole().to_anthropic(
                strict=strict,
                code_execution=code_execution,
                cache_control=cache_control,
                search=search,
                revealed=revealed,
            )
        return self._with_programmatic(
            entries, programmatic, "anthropic", code_execution=code_execution
        )

    def _with_programmatic(
        self,
        entries: list[dict[str, Any]],
        wanted: bool,
        provider: str,
        *,
        code_execution: str = "code_execution_20260120",
    ) -> list[dict[str, Any]]:
        """``entries`` led by the provider's programmatic-calling tool when ``wanted`` and a
        tool allows programmatic callers (``to_openai``/``to_anthropic(programmatic=True)``)."""
        if not wanted or not any(
            "programmatic" in item.allowed_callers for item in self._tools.values()
        ):
            return entries
        from ._adapters import CODE_EXECUTION_NAME, programmatic_entry

        if provider == "anthropic" and CODE_EXECUTION_NAME in self._tools:
            raise InvalidValueError(
                f"programmatic=True adds Anthropic's code-execution tool, named "
                f"{CODE_EXECUTION_NAME!r}, but a tool of this toolkit has that name; rename "
                "the tool"
            )
        return [programmatic_entry(provider, code_execution=code_execution), *entries]

    def to_gemini(
        self, *, schema: str = "json", search: str = "local", revealed: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Tool definitions for the Gemini API: ``[{"functionDeclarations": [...]}]``.

        By default each declaration carries its tool's JSON Schema unmodified as
        ``parametersJsonSchema`` (``$ref``, ``$defs``, ``anyOf`` and all). With
        ``schema="subset"`` (models that take only ``parameters``), each schema is mapped
        onto that OpenAPI 3.0 subset:
        ``$ref`` is inlined (a recursive reference becomes a plain object), ``T | None``
        becomes ``T`` with ``"nullable": true``, a list of types becomes ``anyOf``,
        ``oneOf`` becomes ``anyOf``, ``const`` a one-value ``enum``, an enum of numbers
        becomes its type with the values' bounds and the values listed in the description
        (Gemini's enums hold strings, and a model answering one with a string would be
        refused), string formats other than ``date-time`` move to the description, fixed
        tuples become arrays with bounds, and keywords Gemini refuses
        (``additionalProperties``, ``uniqueItems``, ``multipleOf``, ``not``, exclusive
        bounds made inclusive, ...) are dropped — the tool still enforces them when called.
        A tool without arguments has no ``parameters``. A tool only code may call
        (``allowed_callers=["programmatic"]``) is left out: Gemini has no programmatic tool
        calling. Deferred tools are held back as :meth:`to_openai` says (Gemini has no
        native tool search: ``search`` takes ``"local"`` only).

        Example::

            config = {"tools": toolkit.to_gemini()}
        """
        if search == "local" and not revealed and not self._holds_back():
            from ._adapters import offered

            tools = offered(self._tools.values(), "gemini")
            declarations = [item.to_gemini(schema=schema) for item in tools]
            return [{"functionDeclarations": declarations}]
        return self._whole().to_gemini(schema=schema, search=search, revealed=revealed)

    def to_mcp(
        self, *, search: str = "local", revealed: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Tool definitions for an MCP ``tools/list`` reply: ``{name, description,
        inputSchema}``, plus ``title``, ``outputSchema`` and ``annotations`` when set.

        A tool whose entry JSON cannot carry is left out, with a warning naming it, so the
        others are still listed (a :class:`Tool` refuses such a schema when it is defined).
        Deferred tools are held back as :meth:`to_openai` says (``search`` takes
        ``"local"`` only: MCP has no native tool search).

        Example::

            reply = {"tools": toolkit.to_mcp()}
        """
        from ._adapters import keep_listable

        if search == "local" and not revealed and not self._holds_back():
            return keep_listable([item.to_mcp() for item in self._tools.values()])
        return self._whole().to_mcp(search=search, revealed=revealed)

    def _holds_back(self) -> bool:
        """True when a tool may be deferred (the toolkit's, a namespace's or a tool's
        setting): only then do the adapters ask the view."""
        return (
            self._defer
            or any(each.defer for each in self._namespaces.values())
            or any(each.defer for each in self._tools.values())
        )

    # ----------------------------------------------------------------- kept descriptions

    def _mcp_entry(self, tool: Tool, shape: Hashable, describe: Callable[[Tool], Any]) -> Any:
        """``tool``'s entry in a ``tools/list`` reply for the clients of one ``shape``
        (what their revision reads of an entry; the server keeps the entry with its
        encoding): ``describe(tool)`` the first time, then the same entry (never changed
        by those who read it) until another tool is registered under its name. None:
        ``describe`` left it out of lists."""
        kept = self._described.get(tool.name)
        if kept is None or kept[0] is not tool:
            kept = self._described[tool.name] = (tool, {})
        entries = kept[1]
        if shape in entries:
            return entries[shape]
        entry = entries[shape] = describe(tool)
        return entry

    def _touched(self) -> None:
        """Package-internal: the contents changed (a tool, skill, resource or prompt
        registered, replaced or removed; a namespace made or its ``defer`` set). Called
        after the change: every value :meth:`_derived` kept is stale from now on."""
        with self._kept_lock:
            self._version += 1
            self._kept.clear()

    def _derived(self, key: Hashable, make: Callable[..., Any], *args: Any) -> Any:
        """Package-internal, for servers: ``make(*args)``, kept under ``key`` until the
        toolkit changes (:meth:`_touched`) — so ``key`` names all else the value depends
        on (a client's shape, a caller's scopes, a page's offset). At most
        :data:`KEPT_VALUES` values are kept; the oldest goes first.

        The version is read before ``make`` reads the contents, so a value made while
        a change lands is kept at the version before it, and never served after it."""
        version = self._version
        kept = self._kept.get(key)
        if kept is not None and kept[0] == version:
            return kept[1]
        value = make(*args)
        with self._kept_lock:
            if version == self._version:
                kept_values = self._kept
                if key not in kept_values and len(kept_values) >= KEPT_VALUES:
                    del kept_values[next(iter(kept_values))]  # the oldest
                kept_values[key] = (version, value)
        return value


def served_kind(item: Any) -> str | None:
    """``"resource"`` or ``"prompt"`` for an MCP resource or prompt, ``"skill"`` for a
    :class:`~toolnexus.Skill`, else None: what the item's class declares (``_kit_kind``,
    with ``_kit_calls``, the calls that run it), so this layer needs no import of the MCP
    layer that makes them (nor of the skills module, until skills are used)."""
    kind = getattr(type(item), "_kit_kind", None)
    return kind if kind in ("resource", "prompt", "skill") else None


def _duplicate(kind: str, key: str) -> InvalidValueError:
    if kind == "tool":
        return DuplicateToolError(key)
    what = "URI" if kind == "resource" else "name"
    return InvalidValueError(
        f"a {kind} with the {what} {key!r} is already registered; pass replace=True to replace it"
    )


def _not_found(kind: str, name: Any, known: list[str]) -> NotFoundError:
    import difflib

    text = name if isinstance(name, str) else repr(name)
    close = difflib.get_close_matches(text, known, n=3, cutoff=0.6)
    return NotFoundError(kind, text, close, known)


_NO_OPTIONS: dict[str, Any] = {
    "name": None,
    "description": None,
    "input_schema": None,
    "title": None,
    "output_schema": None,
    "defer": None,
    "hints": {},
}


def _shape_hint(item: Tool) -> str:
    properties = item.input_schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        keys = ", ".join(properties)
        return f"one JSON object with the keys {keys}"
    return "one JSON object"
