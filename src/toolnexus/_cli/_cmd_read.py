"""``toolnexus read`` and ``toolnexus get``: an MCP resource read, a prompt rendered — of a
toolkit (run on a host, as ``call`` runs a tool) or of a server at a URL."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ._common import (
    EXIT_OK,
    EXIT_TOOL_ERROR,
    OUTCOME_CODES,
    REF_ARG,
    CliError,
    print_result,
    write_out,
)
from ._parser import Command, argument, milliseconds
from ._refs import from_server, is_server_url, load_toolkit
from ._terminal import Terminal, run_call

if TYPE_CHECKING:
    import argparse

    from .._result import ToolResult
    from .._toolkit import Toolkit


def _cmd_read(options: argparse.Namespace) -> int:
    if is_server_url(options.ref):
        contents = from_server(options.ref, lambda client: client.read_resource(options.uri))
        return _show_contents(options, contents)
    toolkit = load_toolkit(options.ref)
    found = toolkit.find_resource(options.uri)
    if found is None:
        known = ", ".join(r.uri for r in toolkit.resources()) or "none"
        raise CliError(
            f"no resource of {options.ref!r} serves {options.uri!r} (resources: {known})"
        )
    # A template variable that does not read as its type is the caller's mistake, as a
    # prompt's or a tool's argument is: exit 2, before anything runs.
    problem = found[0].problem(options.uri)
    if problem is not None:
        raise CliError(f"{options.uri!r} does not fit {found[0].uri!r}: {problem}")
    result, outcome = _run_served(options, toolkit, "resources/read", {"uri": options.uri})
    if result.is_error:
        return _failed(options, result, outcome)
    from ..mcp._server._resources import CONTENTS_KEY

    contents = [
        {**dict(each), "uri": each.get("uri") or options.uri}
        for each in result.metadata.get(CONTENTS_KEY) or ()
    ]
    return _show_contents(options, contents)


def _cmd_get(options: argparse.Namespace) -> int:
    arguments: dict[str, str] = {}
    for pair in options.rest:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"prompt arguments are key=value pairs, got {pair!r}")
        arguments[key] = value  # prompt arguments are strings, as MCP sends them
    if is_server_url(options.ref):
        rendered = from_server(
            options.ref, lambda client: client.get_prompt(options.name, arguments)
        )
        return _show_prompt(options, rendered)
    toolkit = load_toolkit(options.ref)
    try:
        prompt = toolkit.get_prompt(options.name)
    except LookupError as exc:
        raise CliError(str(exc)) from None
    problem = prompt.problem(arguments)
    if problem is not None:
        raise CliError(problem)
    result, outcome = _run_served(
        options, toolkit, "prompts/get", {"name": options.name, "arguments": arguments}
    )
    if result.is_error:
        return _failed(options, result, outcome)
    from ..mcp._server._prompts import PROMPT_KEY

    return _show_prompt(options, dict(result.metadata.get(PROMPT_KEY) or {}))


def _run_served(
    options: argparse.Namespace, toolkit: Toolkit, method: str, params: dict[str, Any]
) -> tuple[ToolResult, str]:
    """A resource read or a prompt rendered on a host, as ``call`` runs a tool: its
    questions answered at the prompt, Ctrl-C cancels, ``--timeout`` holds. The result and
    its outcome (``timeout``, ``cancelled``, ...: what the exit code says)."""
    term = Terminal(sys.stdin, sys.stderr)
    return run_call(toolkit, method, params, timeout_ms=options.timeout, ask=True, term=term)


def _failed(options: argparse.Namespace, result: ToolResult, outcome: str) -> int:
    """Print a failed read or prompt; its exit code says how it failed (124: timed out,
    130: cancelled, 1: it failed)."""
    print_result(result, as_json=options.json)
    return OUTCOME_CODES.get(outcome, EXIT_TOOL_ERROR)


def _show_contents(options: argparse.Namespace, contents: list[dict[str, Any]]) -> int:
    """Print text contents; write blobs to ``--save DIR`` (else name them on stderr)."""
    import base64

    if options.json:
        write_out(json.dumps({"contents": contents}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for index, content in enumerate(contents):
        if "text" in content:
            write_out(str(content["text"]))
            continue
        data = base64.b64decode(str(content.get("blob", "")))
        label = f"{content.get('uri')} ({content.get('mimeType')}, {len(data)} bytes)"
        if options.save is None:
            sys.stderr.write(f"binary content: {label}; --save DIR writes it to a file\n")
            continue
        os.makedirs(options.save, exist_ok=True)
        tail = str(content.get("uri") or "").rstrip("/").rsplit("/", 1)[-1]
        name = "".join(c if c.isalnum() or c in "._-" else "_" for c in tail) or f"content-{index}"
        path = os.path.join(options.save, name)
        with open(path, "wb") as file:
            file.write(data)
        sys.stderr.write(f"saved {label} to {path}\n")
    return EXIT_OK


def _show_prompt(options: argparse.Namespace, rendered: dict[str, Any]) -> int:
    """Print a rendered prompt: each message as ``role: text`` (other blocks described)."""
    if options.json:
        write_out(json.dumps(rendered, indent=2, ensure_ascii=False))
        return EXIT_OK
    for message in rendered.get("messages") or ():
        content = message.get("content") or {}
        kind = content.get("type")
        if kind == "text":
            shown = str(content.get("text"))
        elif kind == "resource":
            embedded = content.get("resource") or {}
            shown = f"[resource {embedded.get('uri')} ({embedded.get('mimeType')})]"
        else:
            shown = f"[{kind} {content.get('mimeType') or content.get('uri') or ''}]".rstrip()
        write_out(f"{message.get('role')}: {shown}")
    return EXIT_OK


READ = Command(
    "read",
    help="read an MCP resource (of a toolkit, or of a server)",
    usage="toolnexus read REF URI [--json] [--save DIR] [--timeout MS]",
    description="Read the resource at URI and print its text (binary contents are\n"
    "named on stderr; --save DIR writes them to files; --json prints the contents).\n"
    "REF is a toolkit (as for call), or the URL of a Streamable HTTP MCP server.",
    epilog="examples:\n  toolnexus read tests/served_tools.py:toolkit notes://readme\n"
    "  toolnexus read http://127.0.0.1:8000/mcp notes://items/42 --json",
    arguments=(
        argument("ref", metavar="REF", help=REF_ARG + ", or a server's URL"),
        argument("uri", metavar="URI", help="the resource's URI"),
        argument("--json", action="store_true", help="print the contents as JSON"),
        argument("--save", metavar="DIR", help="write binary contents to files in DIR"),
        argument(
            "--timeout", type=milliseconds, metavar="MS", help="the read's deadline (exit 124)"
        ),
    ),
    handler=_cmd_read,
)

GET = Command(
    "get",
    help="get an MCP prompt, rendered with its arguments",
    usage="toolnexus get REF NAME [key=value ...] [--json] [--timeout MS]",
    description="Render the prompt NAME and print its messages (role: text). Arguments\n"
    "are key=value pairs, strings as MCP sends them. REF is a toolkit (as for call),\n"
    "or the URL of a Streamable HTTP MCP server.",
    epilog="examples:\n  toolnexus get tests/served_tools.py:toolkit review code='x = 1'\n"
    "  toolnexus get http://127.0.0.1:8000/mcp review code='x = 1' --json",
    arguments=(
        argument("ref", metavar="REF", help=REF_ARG + ", or a server's URL"),
        argument("name", metavar="NAME", help="the prompt's name"),
        argument("rest", nargs="*", metavar="key=value", help="the prompt's arguments"),
        argument("--json", action="store_true", help="print the rendered prompt as JSON"),
        argument(
            "--timeout", type=milliseconds, metavar="MS", help="the prompt's deadline (exit 124)"
        ),
    ),
    handler=_cmd_get,
)
