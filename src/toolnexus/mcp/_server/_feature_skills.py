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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._log import LazyLogger
from ...errors import SkillError
from .._shared._codec import INVALID_PARAMS
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
    "is_skill_uri",
    "listed_manifests",
    "read",
]

_log = LazyLogger()

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
SKILL_FILE = "SKILL.md"  # the skills module's, which loads only when skills are served
DIRECTORY = "inode/directory"
_warned: set[tuple[str, str, str]] = set()  # (name, location, problem): warned once


def has_skills(context: ServerContext) -> bool:
    """Whether the toolkit has skills this server could serve (local ones)."""
    return any(skill.folder is not None for skill in context.toolkit.skills())


def is_skill_uri(uri: str) -> bool:
    return uri.startswith(SCHEME)


def _served(context: ServerContext) -> list[tuple[Skill, list[SkillFile]]]:
    """The skills served, each with its manifest; the others warned about once."""
    from ..._skills import extension_name_problem

    served: list[tuple[Skill, list[SkillFile]]] = []
    for skill in context.toolkit.skills():
        if skill.folder is None:
            continue  # a remote skill: its own server serves it
        problem = extension_name_problem(skill)
        files: list[SkillFile] = []
        if problem is None:
            try:
                files = skill.manifest()
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
        served.append((skill, files))
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
            "uri": _uri(skill),
            "name": skill.name,
            "description": skill.description or "",
            "mimeType": "text/markdown",
        }
        for skill, _ in _served(context)
    ]


def _mime_type(path: str) -> str:
    if path.endswith(".md"):
        return "text/markdown"
    import mimetypes

    guessed, _ = mimetypes.guess_type(path, strict=False)
    return guessed or "application/octet-stream"


def _locate(context: ServerContext, uri: str) -> tuple[Skill, list[SkillFile], str] | None:
    """The served skill ``uri`` names and the path in it (``""``: its root), or None."""
    if not is_skill_uri(uri):
        return None
    from urllib.parse import unquote

    name, _, rest = uri[len(SCHEME) :].partition("/")
    for skill, files in _served(context):
        if skill.name == name:
            return skill, files, unquote(rest)
    return None


def read(context: ServerContext, uri: str) -> dict[str, Any]:
    """The ``resources/read`` answer's content for a skill file: text for UTF-8 text, a
    blob otherwise. Raises :class:`Reject` (``-32602``) for a file the server does not
    serve — only listed files are, read now, bounded by the skill's limit."""
    found = _locate(context, uri)
    if found is None or found[2] not in {each.path for each in found[1]}:
        raise Reject(
            INVALID_PARAMS,
            f"Resource not found: {uri!r}; skills/list says which skill files this server serves",
            {"uri": uri},
        )
    skill, _, path = found
    try:
        data = skill.read(path)
    except SkillError as exc:
        _log.warning("%s", exc)
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
    def entries(page: list[tuple[Skill, list[SkillFile]]]) -> list[Any]:
        return [_entry(skill, files) for skill, files in page]

    body = context.page("skills", _served(context), entries, params, client)
    return [context.reply(request_id, client, body)]


def _get(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    uri = _uri_param(params)
    found = _locate(context, uri)
    if found is None or found[2] != SKILL_FILE:
        raise Reject(
            INVALID_PARAMS,
            f"No skill is served at {uri}; skills/list says which skills this server serves",
            {"uri": uri},
        )
    skill, files, _ = found
    body = context.cache_hints({"skill": _entry(skill, files)}, client)
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
        skill, _, path = found
        try:
            children = skill.children(path)
        except SkillError:
            children = None
    if found is None or children is None:
        raise Reject(
            INVALID_PARAMS,
            f"{uri} is not a directory resource of this server (a skill's folder is "
            "skill://<name>, a subfolder skill://<name>/<path>, no trailing slash)",
            {"uri": uri},
        )
    skill, _, path = found
    prefix = f"{path}/" if path else ""

    def entries(page: list[tuple[str, bool]]) -> list[Any]:
        return [
            {
                "uri": _uri(skill, prefix + name),
                "name": name,
                "mimeType": DIRECTORY if is_dir else _mime_type(name),
            }
            for name, is_dir in page
        ]

    body = context.page("resources", children, entries, params, client)
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
