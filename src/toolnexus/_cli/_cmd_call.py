"""``toolnexus call`` and ``toolnexus resume``: one tool call from the shell — its
arguments from ``key=value`` words and ``--args``, its questions answered at the prompt (or,
``--no-input``, printed as a pending result that a later ``resume`` answers)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._wire import describe, refuse_json_constant
from ._answer_keys import KEY_ARGS, load_keys, store_url, user_key_path
from ._common import (
    EXIT_CANCELLED,
    EXIT_CODES_HELP,
    EXIT_TOOL_ERROR,
    OUTCOME_CODES,
    REF_ARG,
    CliError,
    localize,
    print_result,
    write_out,
)
from ._parser import Command, argument, milliseconds
from ._refs import check_name, load_toolkit
from ._terminal import Terminal, answer_at_prompt, run_call

if TYPE_CHECKING:
    import argparse

    from .._parts import Part
    from .._result import ToolResult
    from .._suspension import Answer, Request
    from .._toolkit import Toolkit
    from ._answer_keys import Keys


def _read_json_option(option: str, text: str) -> Any:
    """Parse an option's JSON, inline or ``@file.json``."""
    source = text
    if text.startswith("@"):
        path = text[1:]
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
        except OSError as exc:
            raise CliError(f"{option}: cannot read {path!r}: {exc.strerror or exc}") from None
    try:
        return json.loads(source, parse_constant=refuse_json_constant)
    except ValueError as exc:
        where = f" in {text[1:]!r}" if text.startswith("@") else ""
        raise CliError(
            f"{option}: not valid JSON{where}: {exc}; write e.g. {option} '{{\"steps\": 3}}' "
            "or key=value pairs"
            if option == "--args"
            else f"{option}: not valid JSON{where}: {exc}"
        ) from None


def _parse_value(text: str, schema: Mapping[str, Any] | None) -> Any:
    """``key=value``: the value is JSON when it parses, else the text itself.

    For a property whose schema type is ``"string"`` a bare word stays text even when it
    would parse as JSON (``name=123`` gives ``"123"``), so the call is not refused for it.
    """
    try:
        value = json.loads(text, parse_constant=refuse_json_constant)
    except ValueError:
        return text
    if schema is not None and schema.get("type") == "string" and not isinstance(value, str):
        return text
    return value


def _build_args(
    toolkit: Toolkit, name: str, args_option: str | None, pairs: Sequence[str]
) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if args_option is not None:
        parsed = _read_json_option("--args", args_option)
        if not isinstance(parsed, dict):
            raise CliError(
                f"--args must be a JSON object, got {describe(parsed)}; "
                "write e.g. --args '{\"steps\": 3}'"
            )
        args.update(parsed)
    properties = toolkit.get(name).input_schema.get("properties") or {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise CliError(f"expected key=value, got {pair!r}")
        prop = properties.get(key)
        args[key] = _parse_value(text, prop if isinstance(prop, Mapping) else None)
    return args


def _split_name(toolkit: Toolkit, ref: str, rest: Sequence[str]) -> tuple[str, list[str]]:
    """The tool NAME (first word without '=') and the key=value pairs after it."""
    words = list(rest)
    if words and "=" not in words[0]:
        name = words.pop(0)
        check_name(toolkit, name)
        return name, words
    tools = toolkit.tools()
    if len(tools) == 1:
        return tools[0].name, words
    listed = ", ".join(t.name for t in tools)
    raise CliError(
        f"{ref!r} has {len(tools)} tools ({listed}); name one, e.g. "
        f"toolnexus call {ref} {tools[0].name} …"
        if tools
        else f"{ref!r} has no tools"
    )


def _check_args(toolkit: Toolkit, name: str, args: Mapping[str, Any], ref: str) -> None:
    """Refuse invalid arguments before running anything: the caller's mistake, exit 2.

    The tool's own admission check, the one ``Host.call`` runs: every problem at once (the
    schema's, and values that do not convert, a date-time say), worded as a model reads it."""
    refusal = toolkit.get(name)._admit(args)[1]
    if refusal is not None:
        raise CliError(f"{refusal.output} (see: toolnexus schema {ref} {name})")


def _cmd_call(options: argparse.Namespace) -> int:
    toolkit = load_toolkit(options.ref, sign_in=not options.no_input)
    name, pairs = _split_name(toolkit, options.ref, options.rest)
    args = _build_args(toolkit, name, options.args, pairs)
    _check_args(toolkit, name, args, options.ref)
    term = Terminal(sys.stdin, sys.stderr)
    keys = load_keys(options, consumes=False, user_key="create" if options.no_input else None)
    result, outcome = run_call(
        toolkit,
        name,
        args,
        timeout_ms=options.timeout,
        ask=not options.no_input,
        term=term,
        keys=keys,
    )
    return _finish(options, name, args, result, outcome, keys)


def _cmd_resume(options: argparse.Namespace) -> int:
    toolkit = load_toolkit(options.ref)
    name, pairs = _split_name(toolkit, options.ref, options.rest)
    args = _build_args(toolkit, name, options.args, pairs)
    _check_args(toolkit, name, args, options.ref)
    from .._result import ToolResult

    parked = _load_request(options.request)
    request = ToolResult.pending_of(parked) if isinstance(parked, ToolResult) else parked
    assert request is not None
    keys = load_keys(options, user_key="read")
    term = Terminal(sys.stdin, sys.stderr)
    if options.answer is not None:
        answer = _load_answer(options.answer, request)
        from .._loop_rule import schema_problem

        # Data that fails the request's schema is bad input, like invalid arguments: exit 2
        # before anything runs (at the prompt, such data is asked again instead).
        problem = schema_problem(request, answer) if answer.ok else None
        if problem is not None:
            raise CliError(f"--answer: {problem}; give data that matches the request's data.schema")
    elif options.no_input:
        raise CliError("--answer is required with --no-input; write e.g. --answer @ans.json")
    else:
        try:
            answer = answer_at_prompt(term, request)
        except KeyboardInterrupt:
            term.say("\ncancelled before resuming; nothing ran")
            return EXIT_CANCELLED
    result, outcome = run_call(
        toolkit,
        name,
        args,
        timeout_ms=options.timeout,
        ask=not options.no_input,
        term=term,
        resume=(parked, answer),
        keys=keys,
    )
    return _finish(options, name, args, result, outcome, keys)


def _finish(
    options: argparse.Namespace,
    name: str,
    args: Mapping[str, Any],
    result: ToolResult,
    outcome: str,
    keys: Keys,
) -> int:
    request = result.pending_of(result)
    if request is not None and not options.json:
        import shlex

        # The whole pending result: the request and, beside it, the binding `resume` checks.
        write_out(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        shown_args = f" --args {shlex.quote(json.dumps(args, ensure_ascii=False))}" if args else ""
        key_file = getattr(options, "secret_file", None)
        shown_key = f" --secret-file {shlex.quote(key_file)}" if key_file else ""
        named = store_url(options)
        if named is not None and named[1] in ("--store", "--answers-db"):
            from ..stores._common import redact

            # The same store, so the answer counts once; never its password, on a terminal.
            shown_key += f" --store {shlex.quote(redact(named[0]))}"
        sys.stderr.write(
            localize(
                f"pending: {request.prompt}\nresume it with: toolnexus resume "
                f"{shlex.quote(options.ref)} {name}{shown_args} --request @req.json "
                f"--answer @ans.json{shown_key}\n(req.json: the pending result printed on stdout; "
                'ans.json: e.g. {"ok": true, "data": {…}})\n'
            )
        )
        if keys[0] is None:
            sys.stderr.write(
                localize(
                    "note: no key is configured, so only this process could resume it; give "
                    "`call` and `resume` the same --secret-file PATH (or TOOLNEXUS_SECRET)\n"
                )
            )
        elif key_file is None and not os.environ.get("TOOLNEXUS_SECRET", "").strip():
            sys.stderr.write(
                f"(bound to this call with your per-user key, {user_key_path()}; `resume` "
                "reads it from there)\n"
            )
    else:
        print_result(result, as_json=options.json)
        if result.parts:
            _report_parts(result, getattr(options, "save_parts", None), as_json=options.json)
    return OUTCOME_CODES.get(outcome, EXIT_TOOL_ERROR)


def _report_parts(result: ToolResult, directory: str | None, *, as_json: bool) -> None:
    """Write the result's parts into ``directory``, one file each, saying so on stderr; or,
    without a directory, name them and the option that saves them."""
    parts = result.parts
    if directory is None:
        if not as_json:  # the JSON on stdout already carries them
            listed = ", ".join(part.describe() for part in parts)
            sys.stderr.write(
                localize(
                    f"+{len(parts)} part(s): {listed}; write them to files with --save-parts DIR\n"
                )
            )
        return
    os.makedirs(directory, exist_ok=True)
    used: set[str] = set()
    for index, part in enumerate(parts, 1):
        if part.url is not None:
            sys.stderr.write(f"part {index}: {part.describe()} at {part.url} (not downloaded)\n")
            continue
        filename = _part_filename(part, index, used)
        path = os.path.join(directory, filename)
        with open(path, "wb") as out:
            out.write(part.to_bytes())
        sys.stderr.write(f"part {index}: {part.describe()} -> {path}\n")


def _part_filename(part: Part, index: int, used: set[str]) -> str:
    from .._parts import EXTENSIONS

    # Only a plain file name from the part: never a path it names (../x, /etc/x).
    name = os.path.basename((part.name or "").replace("\\", "/")).strip()
    if name in ("", ".", ".."):
        extension = next(
            (ext for ext, (_, mime) in EXTENSIONS.items() if mime == part.mime_type),
            "txt" if part.type == "text" else "bin",
        )
        name = f"part-{index}.{extension}"
    stem, dot, extension = name.rpartition(".")
    if not dot:
        stem, extension = name, ""
    candidate, count = name, 1
    while candidate in used:
        count += 1
        candidate = f"{stem}-{count}{dot}{extension}"
    used.add(candidate)
    return candidate


def _load_request(text: str) -> Request | ToolResult:
    """The pending result `call --no-input` printed (request and binding), or a bare request
    (which only the process that asked could resume)."""
    from .._result import PENDING_KEY, ToolResult
    from .._suspension import Request

    value = _read_json_option("--request", text)
    try:
        if isinstance(value, dict) and "isError" in value and "output" in value:
            parked = ToolResult.from_dict(value)
            if not parked.is_pending:
                raise CliError(f"--request: that result is not pending (no metadata.{PENDING_KEY})")
            return parked
        return Request.from_dict(value)
    except (ValueError, TypeError) as exc:
        raise CliError(
            f"--request: {exc}; give the JSON that `toolnexus call --no-input` printed"
        ) from None


def _load_answer(text: str, request: Request) -> Answer:
    from .._suspension import Answer

    value = _read_json_option("--answer", text)
    if isinstance(value, dict) and "id" not in value:
        # The request is given alongside, so its id is implied; a wrong id is still refused.
        value = {"id": request.id, **value}
    try:
        return Answer.from_dict(value)
    except (ValueError, TypeError) as exc:
        raise CliError(
            f'--answer: {exc}; write e.g. --answer \'{{"ok": true, "data": {{…}}}}\''
        ) from None


CALL_ARGS = (
    argument("ref", metavar="REF", help=REF_ARG),
    argument(
        "rest",
        metavar="NAME key=value",
        nargs="*",
        help="the tool (optional when REF holds one) and its arguments",
    ),
    argument(
        "--args", metavar="JSON|@FILE", help="the arguments as a JSON object, inline or from a file"
    ),
    argument(
        "--timeout",
        type=milliseconds,
        metavar="MS",
        help="give up after MS milliseconds (exit 124)",
    ),
    argument("--json", action="store_true", help="print the whole ToolResult as wire JSON"),
    argument(
        "--save-parts",
        metavar="DIR",
        help="write the result's parts (images, files, audio) into DIR, one file each",
    ),
    argument(
        "--no-input",
        action="store_true",
        help="never ask: print the pending result (request and binding) as JSON and exit 3",
    ),
    *KEY_ARGS,
)
"""What ``call`` and ``resume`` both take: REF, the tool and its arguments, and the keys."""

CALL = Command(
    "call",
    help="run one tool call (answering its questions at the prompt)",
    usage="toolnexus call REF [NAME] [key=value ...] [--args JSON|@file.json] "
    "[--timeout MS] [--json] [--save-parts DIR] [--no-input] [--debug]",
    description="Run one call through the host runtime and print the result's text.\n"
    "Its parts (images, files, audio) are listed on stderr; --save-parts DIR writes\n"
    "them to files, --json prints the whole result with them as wire JSON.\n\n"
    "Arguments: key=value pairs (the value is JSON when it parses: n=3 is a number,\n"
    "flag=true a boolean, name=Ada a string) and/or --args with a JSON object.\n"
    "NAME may be left out when REF holds a single tool.\n\n"
    "When the tool asks a question, it is answered at the prompt (shown on stderr;\n"
    "answers are read from stdin line by line, so they can be piped in; end of input\n"
    "declines). Ctrl-C cancels the call and prints its cancelled result; a second\n"
    "Ctrl-C exits at once.",
    epilog="examples:\n"
    "  toolnexus call toolnexus.demo:toolkit crunch steps=3\n"
    "  toolnexus call toolnexus.demo:toolkit crunch --args '{\"steps\": 3}'\n"
    "  toolnexus call toolnexus.demo:toolkit deploy            # asks which environment\n"
    "  echo production | toolnexus call toolnexus.demo:toolkit deploy\n"
    "  toolnexus call toolnexus.demo:toolkit stubborn --timeout 200\n"
    "  toolnexus call toolnexus.demo:toolkit deploy --no-input > req.json\n\n"
    f"{EXIT_CODES_HELP}",
    arguments=CALL_ARGS,
    handler=_cmd_call,
    runs_a_tool_call=True,
)

RESUME = Command(
    "resume",
    help="resume a call that asked a question, with its answer",
    usage="toolnexus resume REF [NAME] [key=value ...] [--args JSON|@file.json] "
    "--request JSON|@req.json [--answer JSON|@ans.json] [--timeout MS] [--json] "
    "[--no-input] [--debug]",
    description="Run the tool again with the answer to the request it printed under\n"
    "`call --no-input`: same tool, same arguments. Without --answer the request is\n"
    'answered at the prompt. An answer without an "id" takes the request\'s.',
    epilog="example:\n"
    "  toolnexus call toolnexus.demo:toolkit deploy --no-input > req.json\n"
    '  echo \'{"ok": true, "data": {"env": "staging"}}\' > ans.json\n'
    "  toolnexus resume toolnexus.demo:toolkit deploy --request @req.json "
    "--answer @ans.json\n\n"
    f"{EXIT_CODES_HELP}",
    arguments=(
        *CALL_ARGS,
        argument(
            "--request",
            required=True,
            metavar="JSON|@FILE",
            help="the pending request (as `call --no-input` printed it)",
        ),
        argument(
            "--answer",
            metavar="JSON|@FILE",
            help='the answer, e.g. \'{"ok": true, "data": {...}}\' (default: ask at the prompt)',
        ),
    ),
    handler=_cmd_resume,
    runs_a_tool_call=True,
)
