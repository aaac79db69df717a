"""``toolnexus skills``: the skills a REF offers — a skills folder, a toolkit's, or an
MCP server's (SEP-2640) — as a person reads them, or as JSON; and the problems of
those that cannot be used."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from .._frozen import thaw
from ._common import EXIT_OK, EXIT_TOOL_ERROR, REF_ARG, first_line, write_out
from ._parser import Command, argument
from ._refs import from_server, is_server_url, load_toolkit

if TYPE_CHECKING:
    import argparse

    from .._skills import Skill


def _cmd_skills(options: argparse.Namespace) -> int:
    problems: list[str] = []
    if is_server_url(options.ref):
        skills: list[Skill] = from_server(options.ref, lambda client: client.skills(prefix=""))
    else:
        toolkit = load_toolkit(options.ref)
        skills = toolkit.skills()
        problems = [str(problem) for problem in toolkit.skill_errors]
    if options.json:
        rows: list[dict[str, Any]] = [
            {"name": s.name, "location": s.location, "frontmatter": thaw(s.frontmatter)}
            for s in skills
        ]
        write_out(json.dumps({"skills": rows, "problems": problems}, indent=2))
    else:
        width = max((len(s.name) for s in skills), default=0)
        for skill in skills:
            write_out(f"{skill.name.ljust(width)}  {first_line(skill.description)}".rstrip())
        if not skills:
            sys.stderr.write(f"{options.ref}: no skills\n")
    for problem in problems:
        sys.stderr.write(f"left out: {problem}\n")
    return EXIT_TOOL_ERROR if problems else EXIT_OK


SKILLS = Command(
    "skills",
    help="list the skills of a skills folder, a toolkit or a server",
    usage="toolnexus skills REF [--json]",
    description="Print each skill's name and description (--json: name, location and\n"
    "frontmatter). REF is a folder of skills (or one skill's folder, or its SKILL.md),\n"
    "a toolkit (as for call), or the URL of a Streamable HTTP MCP server serving the\n"
    "skills extension. A skill that cannot be read is named on stderr (exit 1).",
    epilog="examples:\n  toolnexus skills ./skills\n"
    "  toolnexus skills http://127.0.0.1:8000/mcp --json",
    arguments=(
        argument("ref", metavar="REF", help="a skills folder, " + REF_ARG + ", or a server's URL"),
        argument("--json", action="store_true", help="print the skills as JSON"),
    ),
    handler=_cmd_skills,
)
