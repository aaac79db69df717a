"""Skills: ``SKILL.md`` folders as the toolnexus family defines them (SPEC §3) — finding
them, reading them (:class:`Skill`), the one ``skill`` tool that loads a skill by name,
and the prompt fragment that lists them; plus the file access an MCP server needs to
serve a skill (its manifest of files with digests, bounded reads inside its folder).

Everything that touches a skill's folder on disk lives here. The text the model sees —
the ``skill`` tool's description and output, its error, the prompt fragment — follows
the family's reference byte for byte (tests/test_skills_reference.py compares them).
"""

from __future__ import annotations

import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ._frontmatter import _YamlError, key_line, opens_frontmatter, parse_yaml, split_frontmatter
from ._frozen import freeze
from ._log import LazyLogger
from ._result import ToolResult
from ._tools import Tool
from .errors import InvalidTypeError, InvalidValueError, SkillError

__all__ = [
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "SKILL_FILE",
    "Skill",
    "SkillError",
    "SkillFile",
    "directory_children",
    "discover_skills",
    "duplicate_skill_error",
    "extension_name_problem",
    "make_skill_tool",
    "skills_prompt",
]

_log = LazyLogger()

SKILL_FILE = "SKILL.md"  # (mcp/_server/_feature_skills.py names it too, not to load this)
MAX_SKILL_BYTES = 16 * 1024 * 1024
"""The most a skill's files may hold together (the skills extension's limit): no file
bigger is read, and an MCP server does not serve a skill above it."""
MAX_SKILL_FILES = 512
"""The most files a skill may have (``SKILL.md`` included) to be served over MCP."""
MAX_MANIFEST_BYTES = 1024 * 1024
"""The biggest ``SKILL.md`` read: instructions for a model, not data."""

_SKIPPED_DIRS = ("node_modules", ".git")
_NAME_RULE = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
_SAMPLE_LIMIT = 10

# The family's texts (SPEC §3), identical in every port: models see them.
SKILL_TOOL_DESCRIPTION = (
    "Load a specialized skill when the task at hand matches one of the skills listed in "
    "the system prompt.\n\nUse this tool to inject the skill's instructions and resources "
    "into current conversation. The output may contain detailed workflow guidance as well "
    "as references to scripts, files, etc in the same directory as the skill.\n\nThe skill "
    "name must match one of the skills listed in your system prompt."
)
_PROMPT_HEAD = (
    "Skills provide specialized instructions and workflows for specific tasks.\n"
    "Use the skill tool to load a skill when a task matches its description."
)
_NO_SKILLS = "No skills are currently available."
_SKILL_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The name of the skill to load"}},
    "required": ["name"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill as an MCP server lists it: its path in the skill's folder
    (``/``-separated), its size in bytes and ``sha256:<hex>`` digest.

    Example::

        [f.path for f in skill.manifest()]   # ['SKILL.md', 'references/FORMS.md']
    """

    path: str
    size: int
    digest: str


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill: a name and description for the catalog, the frontmatter it was declared
    with, and where its instructions and files come from (a folder, or an MCP server).

    Attributes:
        name: the name the ``skill`` tool loads it by (its frontmatter ``name``).
        description: its frontmatter ``description`` (None: it is not listed in the
            prompt fragment, but still loads).
        frontmatter: the whole frontmatter, read-only JSON data.
        location: the ``SKILL.md`` file's path, or its URI for a remote skill.
        folder: the skill's folder (None for a remote skill).
        source: ``"local"`` or ``"mcp"``.

    Build local ones with :meth:`Toolkit.add_skills <toolnexus.Toolkit.add_skills>`,
    remote ones with :meth:`McpClient.skills <toolnexus.mcp.McpClient.skills>`.

    Example::

        skill = toolkit.get_skill("pdf-processing")
        print(skill.description, skill.body())
    """

    _kit_kind: ClassVar[str] = "skill"  # what a Toolkit keeps it as (served_kind)

    name: str
    description: str | None
    frontmatter: Mapping[str, Any] = field(repr=False)  # the name and description show it
    location: str
    folder: Path | None = None
    source: str = "local"
    _body: str | None = field(default=None, repr=False, compare=False)
    # a remote skill's loader: (skill) -> (body, base, files); None for a local skill
    _load: Callable[[Skill], tuple[str, str, list[str]]] | None = field(
        default=None, repr=False, compare=False
    )
    # a remote skill's file reader: (path or URI) -> verified bytes
    _fetch: Callable[[str], bytes] | None = field(default=None, repr=False, compare=False)
    _digests: dict[str, tuple[int, int, str]] = field(
        default_factory=dict, repr=False, compare=False
    )
    # a remote skill's entry as this host offers it (read-only JSON: uri, frontmatter,
    # resources), what a server re-exporting it lists; None for a local skill
    _entry: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "frontmatter", freeze(dict(self.frontmatter)))

    def body(self) -> str:
        """The skill's instructions: its ``SKILL.md`` after the frontmatter. A remote
        skill's are fetched (and verified) now, on each call.

        Raises :class:`SkillError` when a remote skill's file does not match its entry.
        """
        if self._load is not None:
            return self._load(self)[0]
        return self._body or ""

    # ------------------------------------------------------------------ the files

    def files(self) -> list[str]:
        """The paths of the skill's files (``/``-separated, relative to its folder),
        ``SKILL.md`` first, then in code-point order; only files inside the folder
        (a symlink that leaves it is left out). A local skill only; ``[]`` otherwise."""
        if self.folder is None:
            return []
        return [relative for relative, _ in self._walk()]

    def _walk(self) -> list[tuple[str, Path]]:
        """Every file in the folder, as (relative path, path), ``SKILL.md`` first, then in
        code-point order — the one rule of what a skill's files are (its listing, its
        manifest, its directories). Only what stays inside the folder; a directory
        reached by more than one path (a link, a link back up: a cycle) is walked once,
        at its shallowest path (first in code-point order among those), so the listing
        is the same on every machine."""
        assert self.folder is not None
        root = Path(os.path.realpath(self.folder))
        found: list[tuple[str, Path]] = []
        seen: set[str] = {str(root)}
        queue: deque[tuple[str, Path]] = deque([("", self.folder)])
        while queue:
            prefix, current = queue.popleft()
            try:
                with os.scandir(current) as listing:
                    entries = sorted(listing, key=lambda each: each.name)
            except OSError:
                continue
            for entry in entries:
                real = os.path.realpath(entry.path)
                if not _inside(real, root):
                    continue  # a symlink out of the folder: never read, never listed
                try:
                    is_dir = entry.is_dir(follow_symlinks=True)
                    is_file = entry.is_file(follow_symlinks=True)
                except OSError:
                    continue
                relative = prefix + entry.name
                if is_dir:
                    if entry.name in _SKIPPED_DIRS or real in seen:
                        continue
                    seen.add(real)
                    queue.append((relative + "/", Path(entry.path)))
                elif is_file:
                    found.append((relative, Path(entry.path)))
        found.sort(key=lambda pair: (pair[0] != SKILL_FILE, pair[0]))
        return found

    def manifest(self) -> list[SkillFile]:
        """Every file of the skill with its size and digest, ``SKILL.md`` first — what
        an MCP server lists. Digests are recomputed only for a file whose size or
        modification time changed.

        Raises :class:`SkillError` naming the file when the skill cannot be served: more
        than :data:`MAX_SKILL_FILES` files, more than :data:`MAX_SKILL_BYTES` in all, or
        a file that cannot be read.
        """
        if self.folder is None:
            raise InvalidValueError(f"skill {self.name!r} is not a local skill")
        files = self._walk()
        if len(files) > MAX_SKILL_FILES:
            raise SkillError(
                self.name,
                str(self.folder),
                f"it has {len(files)} files; a skill served over MCP may have at most "
                f"{MAX_SKILL_FILES}: move data out of the skill's folder",
            )
        listed: list[SkillFile] = []
        total = 0
        for relative, path in files:
            try:
                info = path.stat()
            except OSError as exc:
                raise SkillError(self.name, str(path), f"cannot be read: {exc}") from None
            total += info.st_size
            if total > MAX_SKILL_BYTES:
                raise SkillError(
                    self.name,
                    str(path),
                    f"the skill's files hold more than {MAX_SKILL_BYTES} bytes (16 MiB), the "
                    f"most a skill served over MCP may hold (this file is {info.st_size} "
                    "bytes): move large data out of the skill's folder",
                )
            known = self._digests.get(relative)
            if known is not None and known[:2] == (info.st_mtime_ns, info.st_size):
                digest = known[2]
            else:
                import hashlib  # only a server listing skills hashes

                digest = "sha256:" + hashlib.sha256(self.read(relative)).hexdigest()
                self._digests[relative] = (info.st_mtime_ns, info.st_size, digest)
            listed.append(SkillFile(relative, info.st_size, digest))
        return listed

    def read(self, relative: str) -> bytes:
        """The bytes of the skill's file at ``relative`` (``/``-separated; a remote skill
        also takes the file's URI).

        Raises :class:`SkillError` when the path leaves the skill's folder (``..``, an
        absolute path, a symlink out), names no regular file, or holds more than
        :data:`MAX_SKILL_BYTES`; for a remote skill, when the file is not one its entry
        lists or its bytes do not match the entry (the file is read from the server now).
        """
        if self._fetch is not None:
            return self._fetch(relative)
        path = self._inside_path(relative)
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open
                raise SkillError(self.name, str(path), "is not a regular file")
            with open(path, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise SkillError(self.name, str(path), "is not a regular file")
                data = handle.read(MAX_SKILL_BYTES + 1)
        except OSError as exc:
            raise SkillError(self.name, str(path), f"cannot be read: {exc}") from None
        if len(data) > MAX_SKILL_BYTES:
            raise SkillError(
                self.name,
                str(path),
                f"holds more than {MAX_SKILL_BYTES} bytes (16 MiB), the most a skill's file "
                "may hold: move large data out of the skill's folder",
            )
        return data

    def children(self, relative: str) -> list[tuple[str, bool]]:
        """The direct children of the skill's folder ``relative`` (``""``: its root), as
        (name, is a directory), in code-point order: the files of :meth:`files` there,
        and the folders that hold some of them (the same rule, so every child is a file
        :meth:`read` reads or a folder this lists).

        Raises :class:`SkillError` when ``relative`` is not such a directory of the skill.
        """
        found = directory_children(self.files(), relative)
        if found is None:
            raise SkillError(
                self.name,
                relative or str(self._folder()),
                "is not a directory of the skill (a folder holding some of its files)",
            )
        return found

    def _folder(self) -> Path:
        if self.folder is None:
            raise InvalidValueError(f"skill {self.name!r} is not a local skill")
        return self.folder

    def _inside_path(self, relative: str) -> Path:
        folder = self._folder()
        parts = relative.split("/")
        if not relative or relative.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise SkillError(
                self.name, relative, "is not a path inside the skill's folder (a/b.md, no '..')"
            )
        path = folder.joinpath(*parts)
        root = os.path.realpath(folder)
        if not _inside(os.path.realpath(path), Path(root)):
            raise SkillError(self.name, str(path), "leads outside the skill's folder")
        return path


def directory_children(paths: Iterable[str], relative: str) -> list[tuple[str, bool]] | None:
    """The direct children of the directory ``relative`` (``""``: the root) among the
    ``/``-separated file ``paths``, as (name, is a directory) in code-point order; None
    when no path is inside it (it is not a directory of those files)."""
    prefix = f"{relative}/" if relative else ""
    found: dict[str, bool] = {}
    for path in paths:
        if path.startswith(prefix):
            name, slash, _ = path[len(prefix) :].partition("/")
            found[name] = found.get(name, False) or bool(slash)
    return sorted(found.items()) if found else None


def _inside(real: str, root: Path) -> bool:
    return real == str(root) or real.startswith(str(root) + os.sep)


def extension_name_problem(skill: Skill) -> str | None:
    """Why the skills extension (SEP-2640) refuses to serve ``skill`` under its name —
    the Agent Skills naming rules, and the name equal to its folder's — or None. A remote
    skill is judged by its frontmatter name (the host's name for it carries a prefix)."""
    name = skill.name if skill._entry is None else str(skill.frontmatter.get("name"))
    if not _NAME_RULE.fullmatch(name):
        return (
            f"its name {name!r} breaks the Agent Skills naming rules (1-64 lowercase "
            "letters, digits and hyphens; no hyphen first, last or twice in a row)"
        )
    if skill.folder is not None and skill.folder.name != skill.name:
        return f"its name {skill.name!r} differs from its folder's name {skill.folder.name!r}"
    if not isinstance(skill.frontmatter.get("description"), str) or not skill.description:
        return "its frontmatter has no description (the Agent Skills specification requires one)"
    return None


# --------------------------------------------------------------------------- discovery


def discover_skills(
    path: str | os.PathLike[str], taken: Mapping[str, Skill] | None = None
) -> tuple[list[Skill], list[SkillError]]:
    """The skills under ``path`` — a folder of skill folders, one skill's folder, or a
    ``SKILL.md`` — and the errors of those that cannot be used, in discovery order:
    shallower first, then by path in code-point order (the family's order).

    One skill per name: a name in ``taken`` (the skills a toolkit has) stays with that
    skill; among the skills found, the first whose folder has the name wins, else the
    first found — so a skill whose name differs from its folder's never takes the name
    from the one whose folder matches (which the skills extension would serve). Each
    skill left out is an error naming both files.

    Raises :class:`~toolnexus.errors.InvalidValueError` when ``path`` is neither a
    folder nor a ``SKILL.md``, :class:`~toolnexus.errors.InvalidTypeError` when it is
    not a path.
    """
    where = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(where, str):
        raise InvalidTypeError(
            "add_skills(path): path must be a folder of skill folders, one skill's folder "
            f"or a SKILL.md file, as a str or os.PathLike; got {type(path).__name__} "
            f"{path!r:.60}"
        )
    root = Path(os.path.abspath(where))
    if root.is_file() and root.name == SKILL_FILE:
        candidates = [root]
    elif root.is_dir():
        candidates = _find_skill_files(root)
    else:
        raise InvalidValueError(f"add_skills(): {where!r} is neither a folder nor a SKILL.md file")
    found: list[Skill] = []
    errors: list[SkillError] = []
    for candidate in candidates:
        try:
            found.append(read_skill(candidate))
        except SkillError as exc:
            errors.append(exc)
    owners: dict[str, Skill] = dict(taken or {})
    for skill in found:
        owner = owners.get(skill.name)
        if owner is None:
            owners[skill.name] = skill
        elif taken is not None and skill.name in taken:
            errors.append(duplicate_skill_error(owner, skill))
        elif _named_as_folder(skill) and not _named_as_folder(owner):
            owners[skill.name] = skill
            errors.append(duplicate_skill_error(skill, owner))
        else:
            errors.append(duplicate_skill_error(owner, skill))
    return [skill for skill in found if owners[skill.name] is skill], errors


def _named_as_folder(skill: Skill) -> bool:
    return skill.folder is not None and skill.folder.name == skill.name


def duplicate_skill_error(kept: Skill, dropped: Skill) -> SkillError:
    """The error of ``dropped``, left out because ``kept`` has its name: naming both."""
    why = "the first one found is kept"
    if _named_as_folder(kept) and not _named_as_folder(dropped) and dropped.folder is not None:
        folder = dropped.folder.name
        why = f"that one is kept, as its folder has the name and this one's ({folder!r}) does not"
    return SkillError(
        dropped.name,
        dropped.location,
        f"another skill already has the name {dropped.name!r} ({kept.location}); {why}: "
        "rename one of them (a skill's name should be its folder's name)",
    )


def _find_skill_files(root: Path) -> list[Path]:
    found: list[Path] = []
    seen: set[str] = {os.path.realpath(root)}
    queue: deque[Path] = deque([root])
    while queue:
        current = queue.popleft()
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=lambda each: each.name)
        except OSError:
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = entry.is_file(follow_symlinks=True)
            except OSError:
                continue
            if is_dir:
                real = os.path.realpath(entry.path)
                if entry.name in _SKIPPED_DIRS or real in seen:
                    continue  # a link back up (a cycle) is walked once, at its shallowest
                seen.add(real)
                queue.append(Path(entry.path))
            elif is_file and entry.name == SKILL_FILE:
                found.append(Path(entry.path))

    def order(path: Path) -> tuple[int, str]:
        relative = os.path.relpath(path, root)
        return len(relative.split(os.sep)), relative

    return sorted(found, key=order)


def read_skill(path: Path) -> Skill:
    """The skill whose ``SKILL.md`` is ``path``. Raises :class:`SkillError` naming the
    file (and the line) when it cannot be read."""
    folder = path.parent
    label = folder.name
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise SkillError(label, str(path), f"cannot be read: {exc}") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise SkillError(
            label,
            str(path),
            f"is bigger than {MAX_MANIFEST_BYTES} bytes (1 MiB), the most a SKILL.md may hold: "
            "keep the instructions short and move data into other files of the skill",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SkillError(
            label,
            str(path),
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8",
            line,
        ) from None
    if "\0" in text:
        raise SkillError(label, str(path), "is a binary file, not markdown text", 1)
    split = split_frontmatter(text)
    if split is None and opens_frontmatter(text):
        raise SkillError(
            label,
            str(path),
            "its frontmatter is not closed: the '---' line that opens it has no '---' line "
            "after it; add one after the frontmatter's last line",
            1,
        )
    if split is None:
        raise SkillError(
            label,
            str(path),
            "has no frontmatter: a SKILL.md opens with a '---' line, then 'name: ...' and "
            "'description: ...', then a '---' line",
            1,
        )
    block, body, _ = split
    notes: list[tuple[int, str]] = []
    try:
        parsed = parse_yaml(block, first_line=2, notes=notes)
    except _YamlError as exc:
        raise SkillError(label, str(path), f"frontmatter: {exc.problem}", exc.line) from None
    if not isinstance(parsed, dict):
        raise SkillError(label, str(path), "frontmatter is not a mapping of 'key: value' lines", 2)
    given = parsed.get("name")
    name = _scalar_text(given)
    if given is not None and name is None:
        raise SkillError(
            label,
            str(path),
            f"frontmatter 'name' must be text, got a {_yaml_kind(given)}: write "
            "'name: <skill-name>' on one line",
            _key_line(block, "name"),
        )
    if not name:
        raise SkillError(
            label, str(path), "frontmatter has no 'name' (add 'name: <skill-name>')", 2
        )
    for line, note in notes:
        _log.warning("skill %r (%s, line %d): frontmatter: %s", name, path, line, note)
    description = _scalar_text(parsed.get("description"))
    return Skill(
        name,
        description,
        parsed,
        str(path),
        folder,
        _body=body,
    )


def _yaml_kind(value: Any) -> str:
    return "list" if isinstance(value, list) else "mapping" if isinstance(value, dict) else "value"


def _key_line(block: str, key: str) -> int:
    """The line (in the file: the block opens on line 2) of ``key:`` in ``block``."""
    found = key_line(block, key)
    return 2 if found is None else found + 2


def _scalar_text(value: Any) -> str | None:
    """A frontmatter scalar as the family reads it: text, trimmed; None for anything
    else (a list, a mapping, null)."""
    if isinstance(value, bool):
        return str(value)  # the reference port prints Python's True/False
    if isinstance(value, (str, int, float)):
        return str(value).strip()
    return None


# --------------------------------------------------------------------------- the skill tool


def skills_prompt(skills: list[Skill]) -> str:
    """The family's prompt fragment: the skills that have a description, by name in
    code-point order (never by locale), after a two-line preamble."""
    described = sorted((s for s in skills if s.description is not None), key=lambda s: s.name)
    if not described:
        return _NO_SKILLS
    lines = [_PROMPT_HEAD, "", "## Available Skills"]
    lines += [f"- **{s.name}**: {s.description}" for s in described]
    return "\n".join(lines)


def render_skill(skill: Skill) -> str:
    """What the ``skill`` tool answers for ``skill``: its instructions, its base
    directory and a sample of its files, in the family's layout."""
    if skill._load is not None:
        body, base, files = skill._load(skill)
        show_files = bool(files)
        files = files[:_SAMPLE_LIMIT]
        shown = files
    else:
        body = skill._body or ""
        assert skill.folder is not None
        base = skill.folder.as_uri()
        show_files = True
        relative = sorted(path for path in skill.files() if path.rsplit("/", 1)[-1] != SKILL_FILE)[
            :_SAMPLE_LIMIT
        ]
        shown = [os.path.join(str(skill.folder), *path.split("/")) for path in relative]
    lines = [
        f'<skill_content name="{skill.name}">',
        f"# Skill: {skill.name}",
        "",
        body.strip(),
        "",
        f"Base directory for this skill: {base}",
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this "
        "base directory.",
    ]
    if show_files:
        lines += [
            "Note: file list is sampled.",
            "",
            "<skill_files>",
            "\n".join(f"<file>{each}</file>" for each in shown),
            "</skill_files>",
        ]
    lines.append("</skill_content>")
    return "\n".join(lines)


def make_skill_tool(skills: Callable[[], Mapping[str, Skill]]) -> Tool[Any, Any]:
    """The ``skill`` tool: loads the skill its argument names from ``skills()`` (read at
    each call, so skills added later are found)."""

    def load(args: Mapping[str, Any], ctx: Any = None) -> ToolResult:
        name = str(args.get("name", ""))
        table = skills()
        found = table.get(name)
        if found is None:
            available = ", ".join(sorted(table)) or "none"
            return ToolResult(f'Skill "{name}" not found. Available skills: {available}', True)
        try:
            text = render_skill(found)
        except SkillError as exc:
            _log.warning("%s", exc)
            return ToolResult(f"Skill {name!r} cannot be loaded: {exc}", True)
        where = str(found.folder) if found.folder is not None else found.location
        return ToolResult(text, False, {"name": found.name, "dir": where})

    # never deferred: the skills prompt names the tool, and the skills are what is held
    # back (each one's body and files load only when the model asks for it)
    return Tool("skill", SKILL_TOOL_DESCRIPTION, _SKILL_SCHEMA, load, source="skill", defer=False)
