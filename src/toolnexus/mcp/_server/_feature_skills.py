"""The skills extension of a server session (SEP-2640, ``io.modelcontextprotocol/skills``):
``skills/list``, ``skills/get``, ``resources/directory/read``, and the ``skill://`` files
that ``resources/read`` and ``resources/list`` serve (the resources feature asks here).

A toolkit's local skills are served at ``skill://<name>/SKILL.md``, each of their files
at ``skill://<name>/<path>``. A skill whose name breaks the extension's naming rules,
differs from its folder's name, lacks a description, or whose files break the limits, is
not served, with a warning naming it (the toolkit's own ``skill`` tool still loads it).
Files are read when a client asks for one — never more than the skill's byte limit, never
outside its folder — and each list or get hashes only files that changed since it last did.

Both eras get the same methods and entries. A modern (2026-07-28) client's results say
``resultType: complete`` and carry the cache hints (``ttlMs``, ``cacheScope``), as every
cacheable result of that revision does; a legacy client's do not, as its revision has no
cacheable results. Changes are announced as a change of the resource list (the extension
defines no notification of its own: each ``SKILL.md`` is a listed resource).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._log import LazyLogger
from ...errors import SkillError
from .._shared._codec import INTERNAL_ERROR, INVALID_PARAMS
from .._shared._protocol import describe
from ._context import BOTH, Feature, Method, ServerContext
from ._types import Action, ClientView, Reject

if TYPE_CHECKING:
    from ..._skills import Skill, SkillFile

__all__ = [
    "FEATURE",
    "SCHEME",
    "SKILLS_EXTENSION",
    "has_skills",
    "listed_manifests",
    "read",
    "serves",
]

_log = LazyLogger()

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
SKILL_FILE = "SKILL.md"  # the skills module's, which loads only when skills are served
DIRECTORY = "inode/directory"
_warned: set[tuple[str, str, str]] = set()  # (name, location, problem): warned once


def has_skills(context: ServerContext) -> bool:
    """Whether the toolkit has skills this server could serve: local ones, and remote
    ones it re-exports (a gateway's)."""
    return any(_servable(skill) for skill in context.toolkit.skills())


def _servable(skill: Skill) -> bool:
    return skill.folder is not None or skill._entry is not None


@dataclass(frozen=True)
class _Offer:
    """A skill this server serves: the skill, its entry as listed, and its root URI
    (the ``SKILL.md`` URI without ``/SKILL.md``)."""

    skill: Skill
    entry: dict[str, Any]
    root: str

    def listed(self) -> set[str] | None:
        """The URIs of its files, or None for a skill whose files are ``dynamic``."""
        resources = self.entry["resources"]
        return None if resources == "dynamic" else {each["uri"] for each in resources}


def quote(text: str) -> str:
    from urllib.parse import quote  # a server without skills never loads it

    return quote(text, safe="/")


def unquote(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text)


def _served(context: ServerContext) -> list[_Offer]:
    """The skills served, each with its entry; the others warned about once. A remote
    skill (a gateway's) is served with the entry its server listed, under the URIs the
    toolkit offers it at: its files are read from that server when a client asks."""
    from ..._frozen import thaw
    from ..._skills import extension_name_problem
    from .._shared._catalog import view

    served: list[_Offer] = []
    for skill in view(context.toolkit).skills():  # those the caller may see
        if not _servable(skill):
            continue
        problem = extension_name_problem(skill)
        entry: dict[str, Any] = {}
        if problem is None and skill._entry is not None:
            entry = thaw(skill._entry)
        elif problem is None:
            try:
                entry = _entry(skill, skill.manifest())
            except SkillError as exc:
                problem = str(exc)
        if problem is not None:
            key = (skill.name, skill.location, problem)
            if key not in _warned:
                _warned.add(key)
                _log.warning(
                    "skill %r (%s) is not served over MCP: %s", skill.name, skill.location, problem
                )
            continue
        served.append(_Offer(skill, entry, entry["uri"][: -len("/" + SKILL_FILE)]))
    return served


def _uri(skill: Skill, path: str = SKILL_FILE) -> str:
    from urllib.parse import quote  # a server without skills never loads it

    return f"{SCHEME}{skill.name}/{quote(path, safe='/')}" if path else f"{SCHEME}{skill.name}"


def _entry(skill: Skill, files: list[SkillFile]) -> dict[str, Any]:
    from ..._frozen import thaw

    return {
        "uri": _uri(skill),
        "frontmatter": thaw(skill.frontmatter),
        "resources": [
            {"uri": _uri(skill, each.path), "digest": each.digest, "size": each.size}
            for each in files
        ],
    }


def listed_manifests(context: ServerContext) -> list[dict[str, Any]]:
    """The ``SKILL.md`` of each served skill as ``resources/list`` shows it."""
    return [
        {
            "uri": offer.entry["uri"],
            "name": str(offer.entry["frontmatter"].get("name")),
            "description": offer.skill.description or "",
            "mimeType": "text/markdown",
        }
        for offer in _served(context)
    ]


def _mime_type(path: str) -> str:
    if path.endswith(".md"):
        return "text/markdown"
    import mimetypes

    guessed, _ = mimetypes.guess_type(path, strict=False)
    return guessed or "application/octet-stream"


def _locate(context: ServerContext, uri: str) -> tuple[_Offer, str] | None:
    """The served skill ``uri`` names and the path in it (``""``: its root), or None.
    The deepest root wins: a nested skill's files are its own."""
    best: tuple[_Offer, str] | None = None
    for offer in _served(context):
        if uri == offer.root:
            rest = ""
        elif uri.startswith(offer.root + "/"):
            rest = uri[len(offer.root) + 1 :]
        else:
            continue
        if best is None or len(offer.root) > len(best[0].root):
            best = (offer, rest)
    return best


def serves(context: ServerContext, uri: str) -> bool:
    """Whether ``uri`` is a file of a skill this server serves (``resources/read`` asks
    :func:`read` for it)."""
    found = _locate(context, uri)
    if found is None:
        return False
    listed = found[0].listed()
    return bool(found[1]) if listed is None else uri in listed


def remote(context: ServerContext, uri: str) -> str | None:
    """The name of the re-exported skill whose file ``uri`` is (:func:`read` reads it from
    that skill's server), or None."""
    found = _locate(context, uri)
    if found is None or found[0].skill._entry is None:
        return None
    return found[0].skill.name


def read(context: ServerContext, uri: str) -> dict[str, Any]:
    """The ``resources/read`` answer's content for a skill file: text for UTF-8 text, a
    blob otherwise. Raises :class:`Reject` (``-32602``) for a file the server does not
    serve — only listed files are, read now, bounded by the skill's limit; a re-exported
    skill's file is read from its server and verified (``-32603`` naming the skill and
    the file when it no longer matches the entry: it is not passed on)."""
    found = _locate(context, uri)
    if found is None or not serves(context, uri):
        raise Reject(
            INVALID_PARAMS,
            f"Resource not found: {uri!r}; skills/list says which skill files this server serves",
            {"uri": uri},
        )
    offer, path = found
    remote = offer.skill._entry is not None
    try:
        data = offer.skill.read(uri if remote else unquote(path))
    except SkillError as exc:
        _log.warning("%s", exc)
        if remote:
            raise Reject(INTERNAL_ERROR, str(exc), {"uri": uri}) from None
        raise Reject(
            INVALID_PARAMS, f"Resource not found: {uri!r} ({exc.problem})", {"uri": uri}
        ) from None
    mime_type = _mime_type(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\0" in text:
        import base64

        blob = base64.b64encode(data).decode("ascii")
        return {"uri": uri, "mimeType": mime_type, "blob": blob}
    return {"uri": uri, "mimeType": mime_type, "text": text}


def _children(offer: _Offer, path: str) -> list[tuple[str, bool]] | None:
    """The children of the skill's folder ``path`` as (name, is a directory), or None
    when it is not one. They come from the files the skill's entry lists — the files
    ``resources/read`` serves, by the rule that makes a skill's files (a link back up is
    walked once) — so a listing never offers a URI a read refuses; a re-exported skill's
    server is not asked. A skill whose files are ``dynamic`` has no directories to read."""
    from ..._skills import directory_children

    listed = offer.listed()
    if listed is None:
        return None
    inside = offer.root + "/"
    files = [unquote(each[len(inside) :]) for each in listed if each.startswith(inside)]
    return directory_children(files, unquote(path))


def _declare(context: ServerContext, modern: bool) -> dict[str, Any] | None:
    if not has_skills(context):
        return None
    return {"extensions": {SKILLS_EXTENSION: {"directoryRead": True}}}


def _uri_param(params: Mapping[str, Any]) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise Reject(INVALID_PARAMS, f"invalid params: uri must be a string, got {describe(uri)}")
    return uri


def _list(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    def entries(page: list[_Offer]) -> list[Any]:
        return [offer.entry for offer in page]

    body = _page(context, "skills", _served(context), entries, params, client, "skill list")
    return [context.reply(request_id, client, body)]


def _page(
    context: ServerContext,
    key: str,
    items: list[Any],
    entries: Callable[[list[Any]], list[Any]],
    params: Mapping[str, Any],
    client: ClientView,
    what: str,
) -> dict[str, Any]:
    """:meth:`ServerContext.page`; a refused cursor's message names what is listed (``what``)."""
    try:
        return context.page(key, items, entries, params, client)
    except Reject as exc:
        raise Reject(
            exc.code,
            f"invalid params: cursor {describe(params.get('cursor'))} was not issued by this "
            f"server (or the {what} changed since); list again without a cursor",
            exc.data,
        ) from None


def _get(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    uri = _uri_param(params)
    found = _locate(context, uri)
    if found is None or found[0].entry["uri"] != uri:
        raise Reject(
            INVALID_PARAMS,
            f"No skill is served at {uri}; skills/list says which skills this server serves",
            {"uri": uri},
        )
    body = context.cache_hints({"skill": found[0].entry}, client)
    return [context.reply(request_id, client, body)]


def _read_directory(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    uri = _uri_param(params)
    found = _locate(context, uri)
    children: list[tuple[str, bool]] | None = None
    if found is not None and not uri.endswith("/"):
        children = _children(*found)
    if found is None or children is None:
        raise Reject(
            INVALID_PARAMS,
            f"{uri} is not a directory resource of this server: a skill's folder is its "
            "SKILL.md URI from skills/list without '/SKILL.md', a subfolder that URI and "
            "'/<path>', with no trailing slash",
            {"uri": uri},
        )

    def entries(page: list[tuple[str, bool]]) -> list[Any]:
        return [
            {
                "uri": f"{uri}/{quote(name)}",
                "name": name,
                "mimeType": DIRECTORY if is_dir else _mime_type(name),
            }
            for name, is_dir in page
        ]

    body = _page(context, "resources", children, entries, params, client, "folder's files")
    body.pop("ttlMs", None)  # a directory read is not a cacheable result
    body.pop("cacheScope", None)
    return [context.reply(request_id, client, body)]


FEATURE = Feature(
    "skills",
    _declare,
    {
        "skills/list": Method(_list, BOTH),
        "skills/get": Method(_get, BOTH),
        "resources/directory/read": Method(_read_directory, BOTH),
    },
)
"""The skills extension: declared when the toolkit has local skills."""
