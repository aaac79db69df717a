"""The client's rules for the skills extension (SEP-2640), without I/O: which listed
entries can be used, and whether a file read from the server is what its entry
described — size, digest, and for a ``SKILL.md`` its frontmatter. A file that fails is
never used: the check raises :class:`~toolnexus.errors.SkillError` naming the skill and
the file. ``McpClient`` (the I/O) asks here; the remote :class:`~toolnexus.Skill` it
builds fetches a file only when the skill is loaded or the file read (never ahead).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..._frontmatter import _YamlError, parse_yaml, split_frontmatter
from ..._frozen import freeze
from ..._log import LazyLogger
from ..._skills import SKILL_FILE, Skill
from ...errors import McpError, SkillError

__all__ = ["EXTENSION", "content_bytes", "remote_skill", "usable_entry", "verify"]

_log = LazyLogger()

EXTENSION = "io.modelcontextprotocol/skills"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _name_of(uri: str) -> str:
    """The skill name a ``.../<name>/SKILL.md`` URI ends in ("" when it does not)."""
    parts = [part for part in uri.partition("://")[2].split("/") if part]
    return parts[-2] if len(parts) >= 2 and parts[-1] == SKILL_FILE else ""


def usable_entry(server: str, entry: Any) -> str | None:
    """Why the listed ``entry`` cannot be used (the extension says a host must not load
    it), or None."""
    if not isinstance(entry, Mapping):
        return "an entry that is not an object"
    uri = entry.get("uri")
    if not isinstance(uri, str) or not _name_of(uri):
        return f"an entry whose uri {uri!r} does not end in /<name>/SKILL.md"
    frontmatter = entry.get("frontmatter")
    if not isinstance(frontmatter, Mapping) or not isinstance(frontmatter.get("name"), str):
        return f"{uri}: its frontmatter has no name"
    if frontmatter["name"] != _name_of(uri):
        return f"{uri}: its frontmatter name {frontmatter['name']!r} is not the uri's"
    resources = entry.get("resources")
    if resources == "dynamic":
        return None
    if not isinstance(resources, list):
        return f"{uri}: resources is neither a list nor 'dynamic'"
    for each in resources:
        if not isinstance(each, Mapping) or not isinstance(each.get("uri"), str):
            return f"{uri}: a resources entry has no uri"
        size = each.get("size")
        if not isinstance(each.get("digest"), str) or not _DIGEST.fullmatch(each["digest"]):
            return f"{uri}: {each['uri']} has no sha256:<64 hex> digest"
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            return f"{uri}: {each['uri']} has no size"
    if not any(each["uri"] == uri for each in resources):
        return f"{uri}: resources does not list its SKILL.md"
    return None


def content_bytes(server: str, uri: str, contents: list[dict[str, Any]]) -> bytes:
    """The raw bytes of a ``resources/read`` answer for ``uri``: its text as UTF-8, or its
    blob decoded."""
    for content in contents:
        if content.get("uri", uri) != uri:
            continue
        if isinstance(content.get("text"), str):
            return str(content["text"]).encode("utf-8")
        if isinstance(content.get("blob"), str):
            import base64
            import binascii

            try:
                return base64.b64decode(content["blob"], validate=True)
            except (binascii.Error, ValueError):
                break
    raise SkillError(_name_of(uri) or uri, uri, f"the server {server!r} sent no content for it")


def verify(entry: Mapping[str, Any], uri: str, data: bytes, label: str | None = None) -> None:
    """Check ``data``, read from ``uri``, against the held ``entry``: the file must be
    listed, its size and digest those listed, and a ``SKILL.md``'s frontmatter the
    entry's, field by field. Raises :class:`SkillError` on any difference, naming the
    skill as ``label`` (the host's name for it) or its frontmatter name."""
    name = label or str(entry["frontmatter"].get("name"))
    resources = entry["resources"]
    if resources != "dynamic":
        listed = [each for each in resources if each["uri"] == uri]
        if not listed:
            raise SkillError(name, uri, "is not a file of the skill's entry (an unlisted file)")
        expected = listed[0]
        if len(data) != expected["size"]:
            raise SkillError(
                name,
                uri,
                f"is {len(data)} bytes, but the skill's entry says {expected['size']}: "
                "not used (list the skills again if the skill changed)",
            )
        import hashlib

        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if digest != expected["digest"]:
            raise SkillError(
                name,
                uri,
                f"has the digest {digest}, but the skill's entry says {expected['digest']}: "
                "not used (list the skills again if the skill changed)",
            )
    if uri == entry["uri"]:
        _verify_frontmatter(name, entry, uri, data)


def _verify_frontmatter(name: str, entry: Mapping[str, Any], uri: str, data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(name, uri, "is not UTF-8 text") from None
    split = split_frontmatter(text.removeprefix("\ufeff"))
    if split is None:
        raise SkillError(name, uri, "has no frontmatter", 1)
    try:
        found = parse_yaml(split[0], first_line=2)
    except _YamlError as exc:
        raise SkillError(name, uri, f"frontmatter: {exc.problem}", exc.line) from None
    held = entry["frontmatter"]
    if not isinstance(found, dict):
        raise SkillError(name, uri, "frontmatter is not a mapping", 2)
    differ = sorted(key for key in {*found, *held} if not _same(found.get(key), held.get(key)))
    if differ:
        raise SkillError(
            name,
            uri,
            "its frontmatter differs from the skill's entry in "
            + ", ".join(repr(key) for key in differ)
            + ": not loaded",
        )


def _same(left: Any, right: Any) -> bool:
    """JSON equality (1 == 1.0, but True is not 1)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right or (math.isnan(left) and math.isnan(right))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return type(left) is type(right) and left == right


def remote_skill(
    entry: Mapping[str, Any],
    prefix: str,
    fetch: Callable[[str], bytes],
    stale: Callable[[], object] | None = None,
    rename: Callable[[str], str] | None = None,
) -> Skill:
    """A :class:`Skill` for a listed ``entry``, named ``prefix + name``; ``fetch(uri)``
    reads a file's bytes from its server when the skill is loaded or a file read;
    ``stale()`` is told when a file no longer matches the entry (the listing is old).
    ``rename(uri)`` gives each of the server's URIs as this host offers it (a gateway's
    prefixed URI): the skill's location, files and entry use those, and a read of one
    reaches the server's own URI."""
    uri = str(entry["uri"])
    frontmatter = dict(entry["frontmatter"])
    description = frontmatter.get("description")
    resources = entry["resources"]
    base = uri[: -len(SKILL_FILE)]
    offered = rename or (lambda each: each)
    # the offered URI of each listed file -> the server's own URI
    upstream = {uri: uri, offered(uri): uri}
    if isinstance(resources, list):
        upstream.update({offered(str(each["uri"])): str(each["uri"]) for each in resources})
    offered_base = offered(uri)[: -len(SKILL_FILE)]
    files = (
        [offered(str(each["uri"])) for each in resources if each["uri"] != uri]
        if isinstance(resources, list)
        else []
    )
    name = prefix + str(frontmatter["name"])  # the name the host knows it by

    def server_uri(relative_or_uri: str) -> str:
        if relative_or_uri in upstream:
            return upstream[relative_or_uri]
        if "://" not in relative_or_uri:
            return base + relative_or_uri
        if relative_or_uri.startswith(offered_base):
            return base + relative_or_uri[len(offered_base) :]
        return relative_or_uri

    def read(relative_or_uri: str) -> bytes:
        target = server_uri(relative_or_uri)
        shown = offered(target)
        if isinstance(resources, list) and not any(each["uri"] == target for each in resources):
            # never asked for: the held entry is all a host may read of the skill
            raise SkillError(name, shown, "is not a file of the skill's entry (an unlisted file)")
        try:
            data = fetch(target)
        except McpError as exc:
            raise SkillError(
                name, shown, f"cannot be read from its server: {exc.problem}"
            ) from None
        try:
            verify(entry, target, data, name)
        except SkillError as exc:
            if stale is not None:
                stale()  # the entry is out of date: the next listing asks the server
            if shown == target:
                raise
            raise SkillError(name, shown, exc.problem, exc.line) from None
        return data

    def load(skill: Skill) -> tuple[str, str, list[str]]:
        text = read(uri).decode("utf-8")
        split = split_frontmatter(text.removeprefix("\ufeff"))
        body = split[1] if split is not None else text
        return body, offered_base, files

    listed: Any = (
        [
            {"uri": offered(str(each["uri"])), "digest": each["digest"], "size": each["size"]}
            for each in resources
        ]
        if isinstance(resources, list)
        else "dynamic"
    )
    return Skill(
        name,
        description.strip() if isinstance(description, str) else None,
        frontmatter,
        offered(uri),
        None,
        "mcp",
        _load=load,
        _fetch=read,
        _entry=freeze({"uri": offered(uri), "frontmatter": frontmatter, "resources": listed}),
    )
