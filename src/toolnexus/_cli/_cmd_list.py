"""``toolnexus list`` and ``toolnexus schema``: what a REF offers, as a person and as a
model provider read it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import McpError
from ._common import EXIT_OK, REF_ARG, REF_HELP, first_line, write_out
from ._parser import Command, argument
from ._refs import check_name, from_server, is_server_url, load_toolkit

if TYPE_CHECKING:
    import argparse

    from ..mcp import McpClient


def _cmd_list(options: argparse.Namespace) -> int:
    toolkit = load_toolkit(options.ref)
    tools = toolkit.tools()
    width = max((len(t.name) for t in tools), default=0)
    for item in tools:
        write_out(f"{item.name.ljust(width)}  {first_line(item.description)}".rstrip())
    if is_server_url(options.ref):
        sections = from_server(options.ref, _server_sections)
    else:
        resources = toolkit.resources()
        sections = [
            ("resources", [(r.uri, r.description) for r in resources if not r.is_template]),
            ("resource templates", [(r.uri, r.description) for r in resources if r.is_template]),
            ("prompts", [(p.name, p.description) for p in toolkit.prompts()]),
        ]
    for title, rows in sections:
        if not rows:
            continue
        write_out(f"\n{title}:")
        width = max(len(key) for key, _ in rows)
        for key, description in rows:
            write_out(f"  {key.ljust(width)}  {first_line(description)}".rstrip())
    return EXIT_OK


def _server_sections(client: McpClient) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """A server's resources, resource templates and prompts, as ``list`` shows them; a
    list the server does not offer (it refuses the method) is empty."""
    lists: list[tuple[str, Callable[[], list[dict[str, Any]]], str]] = [
        ("resources", client.list_resources, "uri"),
        ("resource templates", client.list_resource_templates, "uriTemplate"),
        ("prompts", client.list_prompts, "name"),
    ]
    sections = []
    for title, ask, key in lists:
        try:
            entries = ask()
        except McpError:
            entries = []
        rows = [(str(entry.get(key)), entry.get("description")) for entry in entries]
        sections.append((title, rows))
    return sections


def _cmd_schema(options: argparse.Namespace) -> int:
    from .._toolkit import Toolkit

    toolkit = load_toolkit(options.ref)
    if options.name is not None:
        check_name(toolkit, options.name)
        toolkit = Toolkit([toolkit.get(options.name)])
    adapters: dict[str, Callable[[], Any]] = {
        "openai": toolkit.to_openai,
        "anthropic": toolkit.to_anthropic,
        "gemini": toolkit.to_gemini,
        "mcp": toolkit.to_mcp,
    }
    write_out(json.dumps(adapters[options.format](), indent=2, ensure_ascii=False))
    return EXIT_OK


LIST = Command(
    "list",
    help="list tools (and resources, prompts): names and one-line descriptions",
    description="Print each tool's name and the first line of its description; then the\n"
    "toolkit's resources, resource templates and prompts, if it has any.",
    epilog=f"{REF_HELP}\n\nexamples:\n  toolnexus list toolnexus.demo:toolkit\n"
    "  toolnexus list examples/weather.py",
    arguments=(argument("ref", metavar="REF", help=REF_ARG),),
    handler=_cmd_list,
)

SCHEMA = Command(
    "schema",
    help="print the tools' schemas as a model provider wants them",
    description="Print the tools' schemas as pretty JSON, in one provider's shape.",
    epilog=f"{REF_HELP}\n\nexamples:\n  toolnexus schema toolnexus.demo:toolkit\n"
    "  toolnexus schema toolnexus.demo:toolkit crunch --format anthropic",
    arguments=(
        argument("ref", metavar="REF", help=REF_ARG),
        argument("name", metavar="NAME", nargs="?", help="only this tool"),
        argument(
            "--format",
            choices=("openai", "anthropic", "gemini", "mcp"),
            default="openai",
            help="whose shape (default: openai)",
        ),
    ),
    handler=_cmd_schema,
)
