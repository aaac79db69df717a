"""The command line: ``python -m toolnexus …`` and the ``toolnexus`` console script.

Everything that touches a terminal lives here: finding tools by reference (``REF``),
running one call through the :class:`~toolnexus.Host` with Ctrl-C and a spinner,
answering a suspension at the prompt, and the exit codes scripts rely on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, NoReturn

from ._wire import describe, refuse_json_constant
from .errors import McpError, RefError, ToolnexusError

if TYPE_CHECKING:
    from types import ModuleType
    from typing import TypeAlias

    _Keys: TypeAlias = tuple["tuple[bytes, ...] | None", "AnswerStore | None"]

    from ._host import ToolEvent
    from ._parts import Part
    from ._result import ToolResult
    from ._suspension import Answer, Request
    from ._toolkit import Toolkit
    from .mcp import McpClient
    from .stores import AnswerStore

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_TIMEOUT",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "RefError",
    "load_toolkit",
    "main",
]

EXIT_OK = 0
"""The call succeeded (or the command did its job)."""
EXIT_TOOL_ERROR = 1
"""The tool returned an error result (including a declined question)."""
EXIT_USAGE = 2
"""The command line was wrong: bad REF, unknown tool, bad JSON, invalid arguments."""
EXIT_PENDING = 3
"""``--no-input``: the tool asked a question; the request was printed as JSON."""
EXIT_TIMEOUT = 124
"""The call ran out of its ``--timeout`` (the number ``timeout(1)`` uses)."""
EXIT_CANCELLED = 130
"""The call was cancelled with Ctrl-C (128 + SIGINT, as shells report it)."""

_OUTCOME_CODES = {
    "ok": EXIT_OK,
    "error": EXIT_TOOL_ERROR,
    "pending": EXIT_PENDING,
    "timeout": EXIT_TIMEOUT,
    "cancelled": EXIT_CANCELLED,
}

_EXIT_CODES_HELP = """\
exit codes:
  0    ok
  1    the tool returned an error (a declined question too); a resource
       or prompt failed
  2    usage error: bad REF, unknown tool, resource or prompt, bad JSON,
       invalid arguments (a URI's too), an --answer whose data fails the
       request's schema
  3    pending: --no-input and the tool asked a question (printed as JSON)
  124  timed out (--timeout)
  130  cancelled (Ctrl-C; a second Ctrl-C exits at once)"""

_LOG_LEVELS = ("debug", "info", "warning", "error", "critical")

_REF_ARG = "the tools: module:attr, file.py:attr or mcp.json"

_REF_HELP = """\
REF names the tools: module:attr or path/to/file.py:attr, where attr is a
function, a Tool, a Toolkit or a module; module (or file.py) alone means
every @tool in it. The current directory is importable. A path ending in
.json is an mcp.json: the tools of the MCP servers it configures, named
SERVER_TOOL (serve it, and the process is a gateway to them)."""


def _package() -> str:
    """The import path of this copy of the package: ``toolnexus``, or e.g.
    ``_vendor.toolnexus`` when an application vendors it."""
    return __name__.rpartition(".")[0]


def _localize(text: str) -> str:
    """Make help and hints name the command and the demo REF this copy actually runs under.

    The texts are written for the installed ``toolnexus`` console script; a vendored copy
    has no console script and its demo lives under its own import path.
    """
    package = _package()
    if package == "toolnexus":
        return text
    import re

    text = re.sub(r"(?<![\w.])toolnexus\.demo:", f"{package}.demo:", text)
    return re.sub(r"(?<![\w.@/-])toolnexus (?=[a-zA-Z-])", f"python -m {package} ", text)


def _localize_parser(parser: argparse.ArgumentParser) -> None:
    parser.usage = None if parser.usage is None else _localize(parser.usage)
    parser.description = None if parser.description is None else _localize(parser.description)
    parser.epilog = None if parser.epilog is None else _localize(parser.epilog)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _localize_parser(sub)


# --------------------------------------------------------------------------- REF loading


def load_toolkit(ref: str, *, sign_in: bool = True) -> Toolkit:
    """Load the tools ``ref`` names and return them as a :class:`~toolnexus.Toolkit`.

    ``ref`` is ``module:attr`` or ``path/to/file.py:attr``; ``attr`` may be dotted and
    may name a function (wrapped with ``@tool``), a ``Tool``, a ``Toolkit``, a list of
    tools, or a module. A module (also ``module`` or ``file.py`` with no ``:attr``)
    contributes every ``Tool`` it defines (only the names in its ``__all__`` when it has
    one); plain functions in it are helpers, not tools. The current directory is put on
    ``sys.path`` (as ``python -m`` does), and a file's own folder too, so it can import
    its neighbours.

    Raises :class:`RefError` with a one-line message naming the fix when the module
    cannot be imported, the attribute is missing, or it holds no tools.

    Example::

        toolkit = load_toolkit("toolnexus.demo:toolkit")
        print([t.name for t in toolkit])
    """
    if not isinstance(ref, str) or not ref.strip():
        raise RefError(str(ref), "empty REF; expected module:attr or path/to/file.py:attr")
    if ref.endswith(".json"):
        return _remote_toolkit(ref, sign_in)
    if _is_server_url(ref):
        return _server_toolkit(ref)
    target, attr = _split_ref(ref)
    module = _import_target(ref, target)
    if attr is None:
        return _toolkit_of(ref, module)
    value: Any = module
    walked = []
    for part in attr.split("."):
        walked.append(part)
        try:
            value = getattr(value, part)
        except AttributeError:
            raise RefError(ref, _missing_attribute(target, value, ".".join(walked))) from None
    return _toolkit_of(ref, value)


def _union(refs: list[str]) -> Toolkit:
    """The tools (and resources and prompts) of every REF, served as one toolkit:
    ``serve mcp.json tools.py:toolkit`` is a gateway that also offers local tools. An
    ``mcp.json`` (at most one) keeps its toolkit, so its servers' list changes still reach
    the clients; the others' entries join it. A name two REFs share is a RefError naming
    both."""
    jsons = [ref for ref in refs if ref.endswith(".json")]
    if len(jsons) > 1:
        raise RefError(
            jsons[1], f"serve takes one mcp.json; put the servers of {jsons[1]!r} in {jsons[0]!r}"
        )
    if len(refs) == 1:
        return load_toolkit(refs[0])
    from ._toolkit import Toolkit

    # The mcp.json first: its toolkit (made for this process) is the live one the rest
    # joins; local toolkits are copied, never changed.
    ordered = sorted(refs, key=lambda ref: not ref.endswith(".json"))
    union: Toolkit | None = None if jsons else Toolkit()
    owners: dict[tuple[str, str], str] = {}
    for ref in ordered:
        toolkit = load_toolkit(ref)
        entries: list[tuple[str, str, Any]] = [("tool", tool.name, tool) for tool in toolkit]
        entries += [("resource", entry.uri, entry) for entry in toolkit.resources()]
        entries += [("prompt", entry.name, entry) for entry in toolkit.prompts()]
        for kind, key, _ in entries:
            if (kind, key) in owners:
                raise RefError(
                    ref,
                    f"{ref!r} and {owners[kind, key]!r} both offer the {kind} {key!r}; serve "
                    "one of them, or rename one (a server's tools take a prefix in mcp.json)",
                )
            owners[kind, key] = ref
        if union is None:
            union = toolkit
        else:
            union.register(*(entry for _, _, entry in entries))
    assert union is not None
    return union


def _remote_toolkit(ref: str, sign_in: bool = True) -> Toolkit:
    """The tools of the MCP servers an ``mcp.json`` configures (``toolnexus.mcp``'s
    McpSource); servers that fail are named on stderr, the others serve. A server that
    asks for an OAuth sign-in prints its URL and waits for the redirect (unless
    ``sign_in`` is false: ``--no-input``); tokens are kept in the per-user token file."""
    from .mcp import McpSource

    try:
        source = McpSource(ref, oauth=_cli_oauth(sign_in)).connect()
    except (ValueError, TypeError) as exc:
        raise RefError(ref, str(exc)) from None
    for status in source.status().values():
        if status.status == "failed":
            print(f"toolnexus: MCP server {status.name!r} failed: {status.reason}", file=sys.stderr)
    if not len(source.toolkit):
        raise RefError(ref, f"{ref!r}: no MCP server in it offers a tool (see above)")
    return source.toolkit


def _is_server_url(ref: str) -> bool:
    """Whether REF is the URL of a Streamable HTTP MCP server (every command takes one)."""
    return ref.startswith(("http://", "https://"))


def _server(url: str) -> McpClient:
    """The client every command reaches a server URL with: ``list``, ``schema``, ``call``,
    ``read`` and ``get`` resolve such a REF here, and only here."""
    from .mcp import McpClient

    return McpClient(url=url)


def _server_toolkit(url: str) -> Toolkit:
    """The tools of the MCP server at ``url``, under the server's own names; the client
    stays open for the calls (the process ends it)."""
    from ._toolkit import Toolkit

    client = _server(url)
    try:
        return Toolkit(client.tools(prefix=""))
    except McpError as exc:
        client.close()
        raise RefError(url, str(exc)) from None


TOKENS_FILE = "mcp-tokens.json"
"""The OAuth token file's name, next to the per-user key (:func:`_user_key_path`)."""


def _cli_oauth(sign_in: bool) -> Any:
    """The OAuth settings ``mcp.json`` servers with ``"auth": "oauth"`` get here: tokens
    in the per-user token file (0600), sign-ins asked on the terminal with the redirect
    received on a loopback port — or, with ``sign_in`` false, not asked at all."""
    from .mcp import FileTokenStore, OAuth

    store = FileTokenStore(os.path.join(os.path.dirname(_user_key_path()), TOKENS_FILE))
    if not sign_in:
        return OAuth(token_store=store, client_name="toolnexus")
    from .mcp._oauth_loopback import LoopbackReceiver

    receiver = LoopbackReceiver(sys.stderr)
    return OAuth(
        token_store=store,
        redirect_uri=receiver.redirect_uri,
        ask=receiver.ask,
        client_name="toolnexus",
    )


def _split_ref(ref: str) -> tuple[str, str | None]:
    if ref.endswith(".py"):
        return ref, None
    target, sep, attr = ref.rpartition(":")
    if not sep:
        return ref, None
    if not target:
        raise RefError(
            ref, f"REF {ref!r} names no module; write module:{attr} or path/to/file.py:{attr}"
        )
    if not attr:
        raise RefError(
            ref, f"REF {ref!r} ends with ':'; name an attribute after it, or drop the ':'"
        )
    if not all(part.isidentifier() for part in attr.split(".")):
        raise RefError(
            ref,
            f"{attr!r} in REF {ref!r} is not a Python name; write module:attr or "
            "path/to/file.py:attr",
        )
    return target, attr


def _is_path(target: str) -> bool:
    separators = {"/", os.sep, os.altsep or "/"}
    return target.endswith(".py") or any(sep in target for sep in separators)


def _import_target(ref: str, target: str) -> ModuleType:
    if _is_path(target):
        return _import_file(ref, target)
    return _import_module(ref, target)


def _import_module(ref: str, name: str) -> ModuleType:
    import importlib

    if not all(part.isidentifier() for part in name.split(".")):
        raise RefError(
            ref,
            f"{name!r} is neither a module name nor a .py file; write module:attr or "
            "path/to/file.py:attr",
        )
    cwd = os.getcwd()
    # `python -m` puts the current directory first; the console script does not. Do it for
    # both so `toolnexus call mytools:fn` finds ./mytools.py either way.
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            raise RefError(
                ref,
                f"cannot import {name!r}: no module named {missing!r} (looked in {cwd} "
                f"and on sys.path); run from the folder that holds it, set PYTHONPATH, or "
                f"give a file path (path/to/{name.rsplit('.', 1)[-1]}.py:attr)",
            ) from exc
        raise RefError(ref, _import_failure(name, exc)) from exc
    except (Exception, SystemExit) as exc:
        raise RefError(ref, _import_failure(name, exc)) from exc


def _import_file(ref: str, target: str) -> ModuleType:
    import importlib.util

    # os.path, not pathlib: pathlib's imports cost a server's start-up a tenth.
    path = os.path.expanduser(target)
    if os.path.isdir(path):
        raise RefError(ref, f"{target!r} is a folder; point REF at a .py file in it (file.py:attr)")
    if not os.path.isfile(path):
        raise RefError(ref, f"no such file: {target!r} (looked in {os.getcwd()}); check the path")
    if os.path.splitext(path)[1] != ".py":
        raise RefError(ref, f"{target!r} is not a .py file; REF takes path/to/file.py:attr")
    resolved = os.path.realpath(path)
    folder = os.path.dirname(resolved)
    # Let the file import its neighbours, as `python file.py` would.
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = os.path.splitext(os.path.basename(resolved))[0]
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == resolved:
        return loaded
    if not name.isidentifier() or loaded is not None:
        # A file named like a module already loaded (json.py, test.py, …) must not replace it.
        name = f"_toolnexus_ref_{abs(hash(resolved)):x}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:  # pragma: no cover - .py files always have one
        raise RefError(ref, f"cannot load {target!r} as Python source")
    module = importlib.util.module_from_spec(spec)
    # Registered before running it: dataclasses and pickling look their module up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise RefError(ref, _import_failure(target, exc)) from exc
    return module


def _import_failure(name: str, exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        return f"importing {name!r} failed: it imports {exc.name!r}, which is not installed; " + (
            _install_hint()
            if top == "toolnexus"
            else f"install the package that provides {top!r} (its name on the package "
            "index may differ) or fix the import"
        )
    if isinstance(exc, SyntaxError):
        where = f" ({exc.filename}, line {exc.lineno})" if exc.filename else ""
        return (
            f"importing {name!r} failed: {type(exc).__name__}: {exc.msg}{where}; "
            "fix the file and retry"
        )
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if "importlib" not in f.filename] or frames
    where = f" at {user[-1].filename}:{user[-1].lineno}" if user else ""
    text = str(exc).splitlines()[0] if str(exc) else ""
    described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"importing {name!r} failed: {described}{where}; run with --debug for the traceback"


def _install_hint() -> str:
    """How to install this library while it is not on the package index: from a checkout
    (this copy's own folder when it was installed from one), or from its git repository.
    The index's ``toolnexus`` is another project: never send anyone there."""
    checkout = "/path/to/toolnexus-checkout"
    try:
        from importlib import metadata

        origin = json.loads(
            metadata.distribution("toolnexus-contract").read_text("direct_url.json") or "{}"
        )
        url = origin.get("url", "")
        if url.startswith("file://") and "dir_info" in origin:
            from urllib.parse import unquote

            checkout = unquote(url[len("file://") :])
    except Exception:  # no metadata (a vendored copy), or unreadable: the generic hint
        pass
    return (
        "install this library (the distribution toolnexus-contract, not yet on the package "
        f"index) from a checkout: pip install {checkout}, or from its git repository: "
        "pip install 'toolnexus-contract @ git+https://<its repository>.git'"
    )


def _missing_attribute(target: str, owner: Any, attr: str) -> str:
    import difflib

    from ._tools import Tool

    names = [n for n in dir(owner) if not n.startswith("_")]
    leaf = attr.rsplit(".", 1)[-1]
    message = f"{target!r} has no attribute {attr!r}"
    close = difflib.get_close_matches(leaf, names, n=1)
    if close:
        message += f"; did you mean {close[0]!r}?"
    tools = [n for n in names if isinstance(getattr(owner, n, None), Tool)]
    if tools:
        message += f" (its tools: {', '.join(tools)})"
    return message


def _toolkit_of(ref: str, value: Any) -> Toolkit:
    from types import ModuleType

    from ._toolkit import Toolkit
    from ._tools import Tool, refuse_other_copy

    if isinstance(value, Toolkit):
        return value
    try:
        refuse_other_copy(value)
    except TypeError as exc:
        raise RefError(ref, f"{ref!r} cannot be served: {exc}") from exc
    if isinstance(value, ModuleType):
        return _module_toolkit(ref, value)
    if isinstance(value, type):
        raise RefError(
            ref, f"{ref!r} is a class; point REF at a function, a Tool, a Toolkit or a module"
        )
    if isinstance(value, Tool) or callable(value):
        items: list[Any] = [value]
    elif isinstance(value, (list, tuple)) and all(callable(v) for v in value):
        items = list(value)
    else:
        raise RefError(
            ref,
            f"{ref!r} is a {type(value).__name__}, not a tool; point REF at a function, "
            "a Tool, a Toolkit or a module",
        )
    try:
        return Toolkit(items)
    except (ToolnexusError, TypeError, ValueError) as exc:
        raise RefError(ref, f"cannot make tools of {ref!r}: {exc}") from exc


def _module_toolkit(ref: str, module: ModuleType) -> Toolkit:
    from ._toolkit import Toolkit
    from ._tools import Tool

    exported = getattr(module, "__all__", None)
    names = list(exported) if exported is not None else list(vars(module))
    tools: list[Any] = []  # tools, and MCP resources and prompts
    kits: list[str] = []
    from ._toolkit import served_kind

    for name in names:
        value = getattr(module, name, None)
        if (isinstance(value, Tool) or served_kind(value)) and not any(value is t for t in tools):
            tools.append(value)  # a tool, or an MCP resource or prompt
        elif isinstance(value, Toolkit):
            kits.append(name)
    if tools:
        try:
            return Toolkit(tools)
        except (ToolnexusError, TypeError, ValueError) as exc:
            raise RefError(ref, f"cannot collect the tools of {ref!r}: {exc}") from exc
    if len(kits) == 1:
        value = getattr(module, kits[0])
        assert isinstance(value, Toolkit)
        return value
    target = ref.rsplit(":", 1)[0] if not ref.endswith(".py") else ref
    if kits:
        raise RefError(
            ref,
            f"{module.__name__!r} holds {len(kits)} Toolkits ({', '.join(kits)}); "
            f"name one: {target}:{kits[0]}",
        )
    return _no_tools(ref, module)


def _no_tools(ref: str, module: ModuleType) -> NoReturn:
    import inspect

    functions = [
        name
        for name, value in vars(module).items()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and not name.startswith("_")
    ]
    hint = f" or name one function (e.g. {ref}:{functions[0]})" if functions else ""
    raise RefError(
        ref,
        f"{module.__name__!r} defines no tools; decorate its tool functions with "
        f"@toolnexus.tool{hint}",
    )


# --------------------------------------------------------------------------- arguments


class _CliError(Exception):
    """A mistake on the command line: printed as one line, exit code 2.

    Internal control flow, caught in :func:`main` only. It is not the public
    :class:`~toolnexus.errors.UsageError` (calling code that is wrong), so a Python caller
    of ``main()`` never has to tell the two apart: it only ever sees an exit code.
    ``code`` is that exit code: :data:`EXIT_USAGE` unless the line reports a failure
    (a server's resource or prompt that failed, :data:`EXIT_TOOL_ERROR`).
    """

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def _read_json_option(option: str, text: str) -> Any:
    """Parse an option's JSON, inline or ``@file.json``."""
    source = text
    if text.startswith("@"):
        path = text[1:]
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
        except OSError as exc:
            raise _CliError(f"{option}: cannot read {path!r}: {exc.strerror or exc}") from None
    try:
        return json.loads(source, parse_constant=refuse_json_constant)
    except ValueError as exc:
        where = f" in {text[1:]!r}" if text.startswith("@") else ""
        raise _CliError(
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
            raise _CliError(
                f"--args must be a JSON object, got {describe(parsed)}; "
                "write e.g. --args '{\"steps\": 3}'"
            )
        args.update(parsed)
    properties = toolkit.get(name).input_schema.get("properties") or {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise _CliError(f"expected key=value, got {pair!r}")
        prop = properties.get(key)
        args[key] = _parse_value(text, prop if isinstance(prop, Mapping) else None)
    return args


def _split_name(toolkit: Toolkit, ref: str, rest: Sequence[str]) -> tuple[str, list[str]]:
    """The tool NAME (first word without '=') and the key=value pairs after it."""
    words = list(rest)
    if words and "=" not in words[0]:
        name = words.pop(0)
        _check_name(toolkit, name)
        return name, words
    tools = toolkit.tools()
    if len(tools) == 1:
        return tools[0].name, words
    listed = ", ".join(t.name for t in tools)
    raise _CliError(
        f"{ref!r} has {len(tools)} tools ({listed}); name one, e.g. "
        f"toolnexus call {ref} {tools[0].name} …"
        if tools
        else f"{ref!r} has no tools"
    )


def _check_name(toolkit: Toolkit, name: str) -> None:
    try:
        toolkit.get(name)
    except LookupError as exc:
        raise _CliError(str(exc)) from None


def _check_args(toolkit: Toolkit, name: str, args: Mapping[str, Any], ref: str) -> None:
    """Refuse invalid arguments before running anything: the caller's mistake, exit 2.

    The tool's own admission check, the one ``Host.call`` runs: every problem at once (the
    schema's, and values that do not convert, a date-time say), worded as a model reads it."""
    refusal = toolkit.get(name)._admit(args)[1]
    if refusal is not None:
        raise _CliError(f"{refusal.output} (see: toolnexus schema {ref} {name})")


# --------------------------------------------------------------------------- the terminal


class _Terminal:
    """Reads answers from stdin line by line and writes prompts to stderr."""

    def __init__(self, stdin: IO[str] | None, stderr: IO[str]) -> None:
        self.stdin = stdin
        self.stderr = stderr
        # Piped answers do not echo; write them back so the transcript reads as a dialogue.
        self.echo = stdin is not None and not _isatty(stdin)
        self.mid_line = False  # a prompt label is waiting for its answer

    def say(self, text: str) -> None:
        if self.mid_line:
            text = "\n" + text
            self.mid_line = False
        self.stderr.write(text + "\n")
        self.stderr.flush()

    def ask(self, label: str) -> str | None:
        """One line of input without its newline; None at end of input."""
        self.stderr.write(label)
        self.stderr.flush()
        self.mid_line = True
        line = self.stdin.readline() if self.stdin is not None else ""
        if not line:
            self.say("  (end of input: declined)")
            return None
        self.mid_line = False
        text = line.rstrip("\r\n")
        if self.echo:
            self.stderr.write(text + "\n")
            self.stderr.flush()
        return text


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _answer_at_prompt(term: _Terminal, request: Request) -> Answer:
    """Ask the human ``request`` at the terminal; end of input declines."""
    from ._suspension import Answer

    term.say(f"? {request.prompt}" if request.prompt else f"? the tool asks ({request.kind})")
    if request.url:
        term.say(f"  {request.url}")
    if request.expires_at:
        term.say(f"  (answer before {request.expires_at})")
    schema = (request.data or {}).get("schema")
    fields = schema if isinstance(schema, Mapping) and schema.get("properties") else None
    if request.kind == "approval":
        if not _ask_yes_no(term, "  approve? [y/N] "):
            return Answer.decline(request)
        if fields is None:
            return Answer.accept(request)
    elif request.kind == "authorization":
        text = term.ask("  open the url above, finish there, then press Enter (n to decline): ")
        if text is None or text.strip().lower() in ("n", "no"):
            return Answer.decline(request)
        return Answer.accept(request)
    if fields is not None:
        data = _ask_fields(term, fields)
        return Answer.decline(request) if data is None else Answer.accept(request, data)
    text = term.ask("  > ")
    if text is None:
        return Answer.decline(request)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return Answer.accept(request, parsed if isinstance(parsed, dict) else {"answer": text})


def _ask_yes_no(term: _Terminal, label: str) -> bool:
    while True:
        text = term.ask(label)
        if text is None:
            return False
        word = text.strip().lower()
        if word in ("y", "yes"):
            return True
        if word in ("", "n", "no"):
            return False
        term.say("  please answer y or n")


_FORM_ROUNDS = 3
"""How many times a form whose fields each pass, but not the whole, is asked from the start."""


def _ask_fields(term: _Terminal, schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """Ask each property of a flat object schema; None when input ends (a decline).

    A required key the schema does not describe is asked too (any JSON value, or the text
    itself): without it no answer could ever fit. A whole answer that still does not fit
    (a rule across fields) is asked again from the start, at most :data:`_FORM_ROUNDS`
    times; then the question is declined, saying why."""
    from .validation import validate

    properties: dict[str, Any] = dict(schema.get("properties") or {})
    required = [key for key in schema.get("required") or () if isinstance(key, str)]
    for key in required:
        properties.setdefault(key, {})
    for round_ in range(1, _FORM_ROUNDS + 1):
        data: dict[str, Any] = {}
        for key, prop in properties.items():
            prop = prop if isinstance(prop, Mapping) else {}
            label = _field_label(key, prop, key in required)
            while True:
                text = term.ask(label)
                if text is None:
                    return None
                if text == "":
                    if "default" in prop:
                        data[key] = prop["default"]
                        break
                    if key in required:
                        term.say("  a value is required (end of input declines)")
                        continue
                    break
                value = _field_value(text, prop)
                problems = validate(prop, value)
                if not problems:
                    data[key] = value
                    break
                term.say(f"  invalid: {'; '.join(problems)}; try again")
        problems = validate(schema, data)
        if not problems:
            return data
        if round_ == _FORM_ROUNDS:
            term.say(
                f"  invalid: {'; '.join(problems)}; no answer fitted the question's schema in "
                f"{_FORM_ROUNDS} tries: declined"
            )
            return None
        term.say(f"  invalid: {'; '.join(problems)}; once more from the start")
    return None  # pragma: no cover - the loop returns on its last round


def _field_label(key: str, prop: Mapping[str, Any], required: bool) -> str:
    parts = [_type_words(prop)]
    choices = _choices(prop)
    if choices:
        parts.append(
            "one of: "
            + ", ".join(_show(value) + (f" ({title})" if title else "") for value, title in choices)
        )
    if not required and "default" not in prop:
        parts.append("optional")
    about = prop.get("title") or prop.get("description")
    label = f"  {key}" + (f" — {about}" if isinstance(about, str) and about else "")
    words = "; ".join(p for p in parts if p)
    label += f" ({words})" if words else ""
    if "default" in prop:
        label += f" [{_show(prop['default'])}]"
    return label + ": "


def _type_words(prop: Mapping[str, Any]) -> str:
    kind = prop.get("type")
    if kind == "boolean":
        return "yes/no"
    words = kind if isinstance(kind, str) else ""
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        words += f", {_show(low)} to {_show(high)}"
    elif low is not None:
        words += f", at least {_show(low)}"
    elif high is not None:
        words += f", at most {_show(high)}"
    return words


def _choices(prop: Mapping[str, Any]) -> list[tuple[Any, str | None]]:
    """The values a field takes, each with its title when the schema gives one: an
    ``enum``, or a ``oneOf``/``anyOf`` of ``const`` (+ ``title``) — MCP's titled choices,
    which a legacy ``enumNames`` list also becomes on arrival."""
    enum = prop.get("enum")
    if isinstance(enum, list):
        return [(value, None) for value in enum]
    for keyword in ("oneOf", "anyOf"):
        options = prop.get(keyword)
        if not isinstance(options, list) or not options:
            continue
        if all(isinstance(option, Mapping) and "const" in option for option in options):
            return [(option["const"], _title(option)) for option in options]
    return []


def _title(option: Mapping[str, Any]) -> str | None:
    title = option.get("title")
    return title if isinstance(title, str) else None


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _field_value(text: str, prop: Mapping[str, Any]) -> Any:
    """Turn one typed line into the value a field expects (validation judges it after)."""
    choices = _choices(prop)
    for value, _ in choices:
        if text == _show(value):
            return value
    # A value or a title, in any case: "production" picks the choice titled "Production".
    word = text.strip().lower()
    folded = [
        value
        for value, title in choices
        if (isinstance(value, str) and value.lower() == word) or (title or "").lower() == word
    ]
    if len(folded) == 1:
        return folded[0]
    kind = prop.get("type")
    if kind == "string":
        return text
    if kind == "boolean":
        word = text.strip().lower()
        if word in ("y", "yes", "true"):
            return True
        if word in ("n", "no", "false"):
            return False
        return text
    try:
        return json.loads(text, parse_constant=refuse_json_constant)
    except ValueError:
        return text


class _Spinner:
    """Elapsed time (and progress) on one stderr line, only when stderr is a terminal."""

    FRAMES = "|/-\\"
    DELAY = 0.25  # seconds before showing: quick calls print nothing

    def __init__(self, stream: IO[str], label: str) -> None:
        import time

        self.stream = stream
        self.label = label
        self.enabled = _isatty(stream)
        self.started = time.monotonic()
        self.frame = 0
        self.width = 0
        self.note = ""

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        # Called from the tool's thread; one str assignment is atomic enough for a display.
        amount = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        self.note = f"{amount} {message}" if message else amount

    def tick(self) -> None:
        import time

        elapsed = time.monotonic() - self.started
        if not self.enabled or elapsed < self.DELAY:
            return
        self.frame = (self.frame + 1) % len(self.FRAMES)
        text = f"{self.FRAMES[self.frame]} {self.label} {elapsed:.1f}s"
        if self.note:
            text += f"  {self.note}"
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


# --------------------------------------------------------------------------- one call


def _run_call(
    toolkit: Toolkit,
    name: str,
    args: dict[str, Any],
    *,
    timeout_ms: int | None,
    ask: bool,
    term: _Terminal,
    resume: tuple[Request | ToolResult, Answer] | None = None,
    keys: _Keys | None = None,
) -> tuple[ToolResult, str]:
    """Run one call on a worker thread; the main thread prompts, spins and takes Ctrl-C.

    Returns the result and its outcome (``ok``, ``error``, ``pending``, ``timeout``,
    ``cancelled``). A second Ctrl-C ends the process at once with code 130.
    """
    import queue
    import threading

    from ._cancellation import CancellationTokenSource
    from ._host import Host
    from ._suspension import Answer

    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
    events: list[ToolEvent] = []
    source = CancellationTokenSource()
    spinner = _Spinner(term.stderr, name)

    def wait_for(request: Request) -> Answer:
        # Runs on the host's thread; the human is asked on the main thread, which alone
        # receives Ctrl-C, so an interrupt can always cancel and unblock us.
        reply: queue.Queue[Answer] = queue.Queue()
        inbox.put(("ask", (request, reply)))
        return reply.get()

    # At the terminal a tool's own "cancelled after N step(s)" is worth a moment's wait.
    secret, store = keys if keys is not None else (None, None)
    host = Host(
        toolkit,
        wait_for=wait_for if ask else None,
        on_event=events.append,
        cancel_grace_ms=100,
        secret=secret,
        answer_store=store,
    )

    def work() -> None:
        try:
            if resume is None:
                result = host.call(
                    name,
                    args,
                    timeout_ms=timeout_ms,
                    cancellation_token=source.token,
                    progress=spinner.progress,
                )
            else:
                result = host.resume(
                    name,
                    args,
                    resume[0],
                    resume[1],
                    timeout_ms=timeout_ms,
                    cancellation_token=source.token,
                    progress=spinner.progress,
                )
        except BaseException as exc:  # handed to the main thread, which re-raises it
            inbox.put(("crash", exc))
        else:
            inbox.put(("done", result))

    worker = threading.Thread(target=work, name="toolnexus-cli-call", daemon=True)
    interrupted = False
    asking: tuple[Request, queue.Queue[Answer]] | None = None
    while True:
        try:
            if worker.ident is None:
                # Started inside the try: a Ctrl-C that lands as soon as the tool runs
                # (before this thread is back in the loop) still cancels the call.
                worker.start()
            try:
                # A short poll, not a blocking get: the spinner ticks and Ctrl-C is seen
                # promptly on every platform.
                kind, payload = inbox.get(timeout=0.1)
            except queue.Empty:
                spinner.tick()
                continue
            if kind == "ask":
                spinner.clear()
                asking = payload
                request, reply = payload
                reply.put(_answer_at_prompt(term, request))
                asking = None
                continue
            spinner.clear()
            if kind == "crash":
                raise payload
            result: ToolResult = payload
            break
        except KeyboardInterrupt:
            spinner.clear()
            if interrupted:
                term.say("interrupted")
                sys.stdout.flush()
                os._exit(EXIT_CANCELLED)
            interrupted = True
            source.cancel()
            term.say("cancelling… (Ctrl-C again to exit at once)")
            if asking is not None:
                asking[1].put(Answer.decline(asking[0], "cancelled"))
                asking = None
    _after_the_call()
    host_close = getattr(host, "close", None)
    if host_close is not None:
        host_close()
    outcome = events[-1].outcome if events else _outcome_of(result)
    if interrupted and result.is_error and outcome not in ("timeout",):
        outcome = "cancelled"
    return result, outcome


def _after_the_call() -> None:
    """The call is over: from here on Ctrl-C cannot change its outcome, so it no longer
    raises. Without this, a Ctrl-C landing after the result was printed (or while the
    interpreter exits) escaped as an uncaught KeyboardInterrupt, and Python ends such a
    process by the signal itself (exit -2, neither the call's code nor 130). A second
    Ctrl-C still exits at once with 130, as it does during the call."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _late_interrupt)


_late_interrupts: list[int] = []


def _late_interrupt(signum: int, frame: object) -> None:
    if _late_interrupts:
        os._exit(EXIT_CANCELLED)
    _late_interrupts.append(signum)


def _outcome_of(result: ToolResult) -> str:
    if result.is_pending:
        return "pending"
    return "error" if result.is_error else "ok"


def _print_result(result: ToolResult, *, as_json: bool) -> None:
    """The result's text on stdout, then every text part's (an MCP result's later text
    blocks), each on its own line; ``as_json``: the whole result as wire JSON."""
    if as_json:
        _write_out(result.to_json())
        return
    texts = [result.output, *(part.text for part in result.parts if part.type == "text")]
    for text in texts:
        if text:
            _write_out(text)


def _write_out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------- commands


def _cmd_list(options: argparse.Namespace) -> int:
    toolkit = load_toolkit(options.ref)
    tools = toolkit.tools()
    width = max((len(t.name) for t in tools), default=0)
    for item in tools:
        _write_out(f"{item.name.ljust(width)}  {_first_line(item.description)}".rstrip())
    if _is_server_url(options.ref):
        sections = _from_server(options.ref, _server_sections)
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
        _write_out(f"\n{title}:")
        width = max(len(key) for key, _ in rows)
        for key, description in rows:
            _write_out(f"  {key.ljust(width)}  {_first_line(description)}".rstrip())
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


def _first_line(text: str | None) -> str:
    stripped = (text or "").strip()
    return stripped.splitlines()[0] if stripped else ""


# --------------------------------------------------------------------------- read, get


def _cmd_read(options: argparse.Namespace) -> int:
    if _is_server_url(options.ref):
        contents = _from_server(options.ref, lambda client: client.read_resource(options.uri))
        return _show_contents(options, contents)
    toolkit = load_toolkit(options.ref)
    found = toolkit.find_resource(options.uri)
    if found is None:
        known = ", ".join(r.uri for r in toolkit.resources()) or "none"
        raise _CliError(
            f"no resource of {options.ref!r} serves {options.uri!r} (resources: {known})"
        )
    # A template variable that does not read as its type is the caller's mistake, as a
    # prompt's or a tool's argument is: exit 2, before anything runs.
    problem = found[0].problem(options.uri)
    if problem is not None:
        raise _CliError(f"{options.uri!r} does not fit {found[0].uri!r}: {problem}")
    result = _run_served(options, toolkit, "resources/read", {"uri": options.uri})
    if result.is_error:
        return _failed(options, result)
    from .mcp._resources import CONTENTS_KEY

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
            raise _CliError(f"prompt arguments are key=value pairs, got {pair!r}")
        arguments[key] = value  # prompt arguments are strings, as MCP sends them
    if _is_server_url(options.ref):
        rendered = _from_server(
            options.ref, lambda client: client.get_prompt(options.name, arguments)
        )
        return _show_prompt(options, rendered)
    toolkit = load_toolkit(options.ref)
    try:
        prompt = toolkit.get_prompt(options.name)
    except LookupError as exc:
        raise _CliError(str(exc)) from None
    problem = prompt.problem(arguments)
    if problem is not None:
        raise _CliError(problem)
    result = _run_served(
        options, toolkit, "prompts/get", {"name": options.name, "arguments": arguments}
    )
    if result.is_error:
        return _failed(options, result)
    from .mcp._prompts import PROMPT_KEY

    return _show_prompt(options, dict(result.metadata.get(PROMPT_KEY) or {}))


def _run_served(
    options: argparse.Namespace, toolkit: Toolkit, method: str, params: dict[str, Any]
) -> ToolResult:
    """A resource read or a prompt rendered on a host, as ``call`` runs a tool: its
    questions answered at the prompt, Ctrl-C cancels, ``--timeout`` holds."""
    term = _Terminal(sys.stdin, sys.stderr)
    result, _ = _run_call(toolkit, method, params, timeout_ms=options.timeout, ask=True, term=term)
    return result


def _failed(options: argparse.Namespace, result: ToolResult) -> int:
    _print_result(result, as_json=options.json)
    return _OUTCOME_CODES.get(_outcome_of(result), EXIT_TOOL_ERROR)


def _from_server(url: str, ask: Callable[[Any], Any]) -> Any:
    """Ask the MCP server at ``url`` (over Streamable HTTP, with this module's client)."""
    try:
        with _server(url) as client:
            return ask(client)
    except McpError as exc:
        # The server's own failure (JSON-RPC internal error: the resource or prompt raised)
        # is exit 1, as when it runs here; a request it refuses (an unknown URI or prompt,
        # a wrong argument: -32602) or a server that cannot be reached is exit 2.
        failed = str(exc).endswith(f"({_INTERNAL_ERROR})")
        raise _CliError(str(exc), EXIT_TOOL_ERROR if failed else EXIT_USAGE) from None


_INTERNAL_ERROR = -32603
"""JSON-RPC's code for a server that failed doing what it was asked; the client's
McpError ends its message with the code."""


def _show_contents(options: argparse.Namespace, contents: list[dict[str, Any]]) -> int:
    """Print text contents; write blobs to ``--save DIR`` (else name them on stderr)."""
    import base64

    if options.json:
        _write_out(json.dumps({"contents": contents}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for index, content in enumerate(contents):
        if "text" in content:
            _write_out(str(content["text"]))
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
        _write_out(json.dumps(rendered, indent=2, ensure_ascii=False))
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
        _write_out(f"{message.get('role')}: {shown}")
    return EXIT_OK


def _cmd_schema(options: argparse.Namespace) -> int:
    from ._toolkit import Toolkit

    toolkit = load_toolkit(options.ref)
    if options.name is not None:
        _check_name(toolkit, options.name)
        toolkit = Toolkit([toolkit.get(options.name)])
    adapters: dict[str, Callable[[], Any]] = {
        "openai": toolkit.to_openai,
        "anthropic": toolkit.to_anthropic,
        "gemini": toolkit.to_gemini,
        "mcp": toolkit.to_mcp,
    }
    _write_out(json.dumps(adapters[options.format](), indent=2, ensure_ascii=False))
    return EXIT_OK


def _cmd_call(options: argparse.Namespace) -> int:
    toolkit = load_toolkit(options.ref, sign_in=not options.no_input)
    name, pairs = _split_name(toolkit, options.ref, options.rest)
    args = _build_args(toolkit, name, options.args, pairs)
    _check_args(toolkit, name, args, options.ref)
    term = _Terminal(sys.stdin, sys.stderr)
    keys = _keys(options, consumes=False, user_key="create" if options.no_input else None)
    result, outcome = _run_call(
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
    from ._result import ToolResult

    parked = _load_request(options.request)
    request = ToolResult.pending_of(parked) if isinstance(parked, ToolResult) else parked
    assert request is not None
    keys = _keys(options, user_key="read")
    term = _Terminal(sys.stdin, sys.stderr)
    if options.answer is not None:
        answer = _load_answer(options.answer, request)
        from ._loop_rule import schema_problem

        # Data that fails the request's schema is bad input, like invalid arguments: exit 2
        # before anything runs (at the prompt, such data is asked again instead).
        problem = schema_problem(request, answer) if answer.ok else None
        if problem is not None:
            raise _CliError(
                f"--answer: {problem}; give data that matches the request's data.schema"
            )
    elif options.no_input:
        raise _CliError("--answer is required with --no-input; write e.g. --answer @ans.json")
    else:
        try:
            answer = _answer_at_prompt(term, request)
        except KeyboardInterrupt:
            term.say("\ncancelled before resuming; nothing ran")
            return EXIT_CANCELLED
    result, outcome = _run_call(
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


def _keys(
    options: argparse.Namespace, *, consumes: bool = True, user_key: str | None = None
) -> _Keys:
    """The signing keys and where used answers are kept.

    The keys: --secret-file, else TOOLNEXUS_SECRET, else (``user_key`` ``"create"`` for
    `call --no-input`, ``"read"`` for `resume`) the per-user key file (:func:`_user_key`),
    so the request one command prints is one a later `resume` can use. The store: the one
    --store (or --answers-db, or TOOLNEXUS_STORE) names; else, with a key, an SQLite file
    shared by every process (in the user's cache folder), so an answer resumes once across
    processes too. A command that never takes an answer from elsewhere (``consumes`` false:
    `call`) opens no default file."""
    from ._binding import load_secret, read_secret_file
    from .stores._answers import SqliteAnswerStore

    path = getattr(options, "secret_file", None)
    try:
        keys = read_secret_file(path) if path is not None else load_secret()
    except OSError as exc:
        raise _CliError(f"--secret-file: cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise _CliError(str(exc)) from None
    if not keys and user_key is not None:
        keys = _user_key(create=user_key == "create") or ()
    named = _store_url(options)
    if named is not None:
        return keys or None, _open_store(*named)
    if not keys:
        return None, None
    if not consumes:  # it answers only its own questions: this process's memory, on purpose
        from .stores._answers import MemoryAnswerStore

        return keys, MemoryAnswerStore()
    db = _default_answers_db()
    try:
        os.makedirs(os.path.dirname(os.path.abspath(db)), exist_ok=True)
        return keys, SqliteAnswerStore(db)
    except (OSError, ImportError) as exc:
        raise _CliError(
            f"cannot use the default answers file {db}: {exc}; choose another "
            "with --store sqlite:PATH"
        ) from None


def _store_url(options: argparse.Namespace) -> tuple[str, str] | None:
    """(URL, where it came from) of the store the command line or the environment names."""
    from .stores._common import STORE_ENV

    url = getattr(options, "store", None)
    db = getattr(options, "answers_db", None)
    if url is not None and db is not None:
        raise _CliError(
            "give --store or --answers-db, not both (--answers-db PATH is --store sqlite:PATH)"
        )
    if url is not None:
        return url, "--store"
    if db is not None:
        return f"sqlite:{db}", "--answers-db"
    url = os.environ.get(STORE_ENV, "").strip()
    return (url, STORE_ENV) if url else None


def _open_store(url: str, where: str, *, tasks: bool = False) -> Any:
    """The answer store (or, with ``tasks``, the task store) ``url`` names."""
    from .errors import InvalidValueError
    from .stores._open import open_named, open_task_named

    try:
        return (open_task_named if tasks else open_named)(url, where)
    except InvalidValueError as exc:
        raise _CliError(str(exc)) from None
    except (ImportError, OSError) as exc:  # a missing extra; StoreUnavailableError
        raise _CliError(f"{where}: {exc}") from exc


USER_KEY_FILE = "secret"
"""The per-user key's file name, in :func:`_user_key_path`'s folder."""


def _user_key_path() -> str:
    """Where the per-user key lives: ``$XDG_CONFIG_HOME/toolnexus/secret`` (else
    ``~/.config/toolnexus/secret``; on Windows ``%APPDATA%\\toolnexus\\secret``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or (
        os.environ.get("APPDATA") if os.name == "nt" else None
    )
    base = base or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "toolnexus", USER_KEY_FILE)


def _user_key(*, create: bool) -> tuple[bytes, ...] | None:
    """The per-user key that binds `call --no-input` requests to a later `resume` when no
    key is configured: read from :func:`_user_key_path`, or (``create``) made there on
    first use — 32 random bytes, the file private to the user (0600, its folder 0700),
    published atomically so two first calls at once agree on one key. None when it does
    not exist and ``create`` is false.

    A key file others can read is refused (anyone who can read it can forge answers), with
    the command that fixes it; so is one that cannot be created, with the option that
    names another."""
    from ._binding import read_secret_file

    path = _user_key_path()
    if not os.path.exists(path):
        if not create:
            return None
        try:
            _create_user_key(path)
        except OSError as exc:
            raise _CliError(
                f"no key is configured and the per-user key cannot be created at {path} "
                f"({exc.strerror or exc}), so no later `resume` could use this request; give "
                "one: --secret-file PATH (a file with one random line of 16+ bytes, made e.g. "
                "with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > PATH; "
                "chmod 600 PATH), or set TOOLNEXUS_SECRET"
            ) from None
    if os.name != "nt":
        info = os.stat(path)
        if info.st_mode & 0o077 or info.st_uid != os.getuid():
            raise _CliError(
                f"the per-user key {path} is readable or writable by others (mode "
                f"{info.st_mode & 0o777:04o}), so they could answer your questions; make it "
                f"yours alone: chmod 600 {path}"
                + (" (and own it)" if info.st_uid != os.getuid() else "")
            )
    try:
        return read_secret_file(path)
    except OSError as exc:
        raise _CliError(f"cannot read the per-user key {path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise _CliError(f"{exc}; delete {path} and a new key is made on the next call") from None


def _create_user_key(path: str) -> None:
    import secrets
    import tempfile

    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)  # makedirs' mode is subject to the umask
    handle, draft = tempfile.mkstemp(prefix=".secret-", dir=folder)  # created 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(
                "# toolnexus: the key that binds `call --no-input` requests to `resume`.\n"
                "# Keep it private (mode 0600). Delete it to start over (pending requests\n"
                "# then cannot be resumed).\n"
                f"{secrets.token_urlsafe(32)}\n"
            )
        try:
            os.link(draft, path)  # never replaces a key another process made first
        except FileExistsError:
            pass
        except OSError:  # no hard links here: exclusive rename is the next best thing
            if not os.path.exists(path):
                os.replace(draft, path)
    finally:
        if os.path.exists(draft):
            os.unlink(draft)


def _default_answers_db() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "toolnexus", "used-answers.sqlite3")


def _finish(
    options: argparse.Namespace,
    name: str,
    args: Mapping[str, Any],
    result: ToolResult,
    outcome: str,
    keys: _Keys,
) -> int:
    request = result.pending_of(result)
    if request is not None and not options.json:
        import shlex

        # The whole pending result: the request and, beside it, the binding `resume` checks.
        _write_out(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        shown_args = f" --args {shlex.quote(json.dumps(args, ensure_ascii=False))}" if args else ""
        key_file = getattr(options, "secret_file", None)
        shown_key = f" --secret-file {shlex.quote(key_file)}" if key_file else ""
        named = _store_url(options)
        if named is not None and named[1] in ("--store", "--answers-db"):
            from .stores._common import redact

            # The same store, so the answer counts once; never its password, on a terminal.
            shown_key += f" --store {shlex.quote(redact(named[0]))}"
        sys.stderr.write(
            _localize(
                f"pending: {request.prompt}\nresume it with: toolnexus resume "
                f"{shlex.quote(options.ref)} {name}{shown_args} --request @req.json "
                f"--answer @ans.json{shown_key}\n(req.json: the pending result printed on stdout; "
                'ans.json: e.g. {"ok": true, "data": {…}})\n'
            )
        )
        if keys[0] is None:
            sys.stderr.write(
                _localize(
                    "note: no key is configured, so only this process could resume it; give "
                    "`call` and `resume` the same --secret-file PATH (or TOOLNEXUS_SECRET)\n"
                )
            )
        elif key_file is None and not os.environ.get("TOOLNEXUS_SECRET", "").strip():
            sys.stderr.write(
                f"(bound to this call with your per-user key, {_user_key_path()}; `resume` "
                "reads it from there)\n"
            )
    else:
        _print_result(result, as_json=options.json)
        if result.parts:
            _report_parts(result, getattr(options, "save_parts", None), as_json=options.json)
    return _OUTCOME_CODES.get(outcome, EXIT_TOOL_ERROR)


def _report_parts(result: ToolResult, directory: str | None, *, as_json: bool) -> None:
    """Write the result's parts into ``directory``, one file each, saying so on stderr; or,
    without a directory, name them and the option that saves them."""
    parts = result.parts
    if directory is None:
        if not as_json:  # the JSON on stdout already carries them
            listed = ", ".join(part.describe() for part in parts)
            sys.stderr.write(
                _localize(
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
    from ._parts import EXTENSIONS

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
    from ._result import PENDING_KEY, ToolResult
    from ._suspension import Request

    value = _read_json_option("--request", text)
    try:
        if isinstance(value, dict) and "isError" in value and "output" in value:
            parked = ToolResult.from_dict(value)
            if not parked.is_pending:
                raise _CliError(
                    f"--request: that result is not pending (no metadata.{PENDING_KEY})"
                )
            return parked
        return Request.from_dict(value)
    except (ValueError, TypeError) as exc:
        raise _CliError(
            f"--request: {exc}; give the JSON that `toolnexus call --no-input` printed"
        ) from None


def _load_answer(text: str, request: Request) -> Answer:
    from ._suspension import Answer

    value = _read_json_option("--answer", text)
    if isinstance(value, dict) and "id" not in value:
        # The request is given alongside, so its id is implied; a wrong id is still refused.
        value = {"id": request.id, **value}
    try:
        return Answer.from_dict(value)
    except (ValueError, TypeError) as exc:
        raise _CliError(
            f'--answer: {exc}; write e.g. --answer \'{{"ok": true, "data": {{…}}}}\''
        ) from None


def _cmd_serve(options: argparse.Namespace) -> int:
    import contextlib

    # stdout is the protocol channel: whatever the tools' module prints while it loads
    # goes to stderr instead.
    with contextlib.redirect_stdout(sys.stderr):
        toolkit = _union(options.ref)
    try:
        from .mcp import ServerOptions, serve_stdio
    except ImportError as exc:
        raise _CliError(f"the MCP server is not available in this build ({exc})") from None
    settings: dict[str, Any] = {"timeout_ms": options.timeout, "max_rounds": options.max_rounds}
    if options.name is not None:
        settings["name"] = options.name
    if options.version is not None:
        settings["version"] = options.version
    secret, store = _keys(options)
    if secret is not None:
        settings["secret"] = secret
    if store is not None:
        settings["answer_store"] = store
    named = _store_url(options)
    if named is not None:  # the same place keeps the tasks replicas share
        settings["task_store"] = _open_store(*named, tasks=True)
    if options.max_inflight_bytes is not None:
        settings["max_inflight_bytes"] = options.max_inflight_bytes
    if options.http is not None:
        return _serve_http(toolkit, options, settings)
    if (
        options.token_file
        or options.allow_host
        or options.allow_origin
        or options.insecure_no_auth
        or options.oauth_issuer
    ):
        raise _CliError(
            "--token-file, --oauth-issuer, --allow-host, --allow-origin and --insecure-no-auth "
            "need --http"
        )
    return int(serve_stdio(toolkit, ServerOptions(**settings)))


def _serve_http(toolkit: Any, options: argparse.Namespace, settings: dict[str, Any]) -> int:
    from .mcp import ServerOptions, serve_http

    host, port = options.http
    token = None
    if options.token_file is not None:
        try:
            with open(options.token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            raise _CliError(
                f"--token-file: cannot read {options.token_file!r} ({exc.strerror})"
            ) from None
        if not token:
            raise _CliError(f"--token-file: {options.token_file!r} is empty; put the token in it")
    elif os.environ.get(_TOKEN_ENV, "").strip():
        token = os.environ[_TOKEN_ENV].strip()
    if options.oauth_issuer:
        if token is not None:
            raise _CliError(
                "--oauth-issuer and a bearer token (--token-file or "
                f"${_TOKEN_ENV}) exclude each other: give one"
            )
        settings["auth"] = _protected_resource(options)
    else:
        _no_oauth_options(options)
        settings["token"] = token
    settings["insecure_no_auth"] = options.insecure_no_auth
    if options.allow_host:
        settings["allowed_hosts"] = options.allow_host
    if options.allow_origin:
        settings["allowed_origins"] = options.allow_origin

    def ready(server: Any) -> None:
        if options.oauth_issuer:
            auth = "OAuth access tokens from " + ", ".join(options.oauth_issuer)
        elif token is not None:
            auth = "bearer token required"
        elif options.insecure_no_auth:
            auth = "NO AUTHENTICATION: anyone who can reach this address can call every tool"
        else:
            auth = "no token: loopback only"
        print(
            f"toolnexus: MCP over HTTP at {server.url} ({auth}); Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )

    try:
        server_options = ServerOptions(**settings)
        return int(serve_http(toolkit, server_options, host=host, port=port, ready=ready))
    except OSError as exc:
        raise _CliError(f"--http: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    except ValueError as exc:  # an unauthenticated network address, a token no header carries
        message = str(exc).replace(
            "ServerOptions(insecure_no_auth=True) (--insecure-no-auth)", "--insecure-no-auth"
        )
        raise _CliError(f"--http: {message}") from None


_TOKEN_ENV = "TOOLNEXUS_MCP_TOKEN"
_OAUTH_SECRET_ENV = "TOOLNEXUS_OAUTH_CLIENT_SECRET"


def _protected_resource(options: argparse.Namespace) -> Any:
    """The ``ProtectedResource`` the ``--oauth-*`` options describe."""
    from .mcp import IntrospectionVerifier, JwtVerifier, ProtectedResource

    issuers: list[str] = options.oauth_issuer
    verifier: Any
    try:
        if options.oauth_introspect:
            secret = None
            if options.oauth_client_secret_file:
                try:
                    with open(options.oauth_client_secret_file, encoding="utf-8") as handle:
                        secret = handle.read().strip()
                except OSError as exc:
                    raise _CliError(
                        f"--oauth-client-secret-file: cannot read "
                        f"{options.oauth_client_secret_file!r} ({exc.strerror})"
                    ) from None
            elif os.environ.get(_OAUTH_SECRET_ENV, "").strip():
                secret = os.environ[_OAUTH_SECRET_ENV].strip()
            if (options.oauth_client_id is None) != (secret is None):
                raise _CliError(
                    "--oauth-introspect: give --oauth-client-id and its secret "
                    f"(--oauth-client-secret-file or ${_OAUTH_SECRET_ENV}) together, or neither"
                )
            verifier = IntrospectionVerifier(
                options.oauth_introspect, client_id=options.oauth_client_id, client_secret=secret
            )
        else:
            if options.oauth_client_id or options.oauth_client_secret_file:
                raise _CliError("--oauth-client-id and its secret are for --oauth-introspect")
            if len(issuers) != 1:
                raise _CliError(
                    "verifying tokens as JWTs takes one --oauth-issuer; for several, verify "
                    "them by --oauth-introspect"
                )
            verifier = JwtVerifier(issuers[0], jwks_url=options.oauth_jwks)
        tool_scopes: dict[str, list[str]] = {}
        for entry in options.oauth_tool_scope or []:
            name, _, scopes = entry.partition("=")
            if not name or not scopes.strip():
                raise _CliError(
                    f"--oauth-tool-scope: expected TOOL=SCOPE[,SCOPE...], got {entry!r}"
                )
            tool_scopes.setdefault(name, []).extend(scopes.replace(",", " ").split())
        return ProtectedResource(
            authorization_servers=issuers,
            verifier=verifier,
            resource=options.oauth_resource,
            audience=options.oauth_audience or None,
            required_scopes=options.oauth_scope or (),
            tool_scopes=tool_scopes,
        )
    except ImportError as exc:
        raise _CliError(f"--oauth-issuer: {exc}") from None
    except ValueError as exc:
        raise _CliError(f"--oauth-*: {exc}") from None


def _no_oauth_options(options: argparse.Namespace) -> None:
    given = [
        flag
        for flag, value in (
            ("--oauth-resource", options.oauth_resource),
            ("--oauth-audience", options.oauth_audience),
            ("--oauth-jwks", options.oauth_jwks),
            ("--oauth-introspect", options.oauth_introspect),
            ("--oauth-client-id", options.oauth_client_id),
            ("--oauth-client-secret-file", options.oauth_client_secret_file),
            ("--oauth-scope", options.oauth_scope),
            ("--oauth-tool-scope", options.oauth_tool_scope),
        )
        if value
    ]
    if given:
        raise _CliError(f"{', '.join(given)} need --oauth-issuer (the authorization server)")


def _http_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` for ``--http``; the host defaults to 127.0.0.1."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected [HOST:]PORT with PORT in 0..65535, got {text!r} (e.g. 8000 or 0.0.0.0:8000)"
        )
    return host, int(port)


def _cmd_demo(options: argparse.Namespace) -> int:
    from . import _demo as demo

    return demo.run(lambda line: print(_localize(line)))


# --------------------------------------------------------------------------- worker


def _cmd_worker(options: argparse.Namespace) -> int:
    """``toolnexus worker REF --temporal HOST:PORT --task-queue Q``: REF's tools as
    Temporal activities, until SIGINT or SIGTERM (see :mod:`toolnexus.temporal`)."""
    toolkit = load_toolkit(options.ref)
    try:
        from .errors import TemporalUnavailableError
        from .temporal import serve_worker
        from .temporal._runner import import_temporalio

        import_temporalio()
    except ImportError as exc:
        raise _CliError(str(exc)) from None

    def ready() -> None:
        count = len(toolkit)
        print(
            f"toolnexus: worker for {count} tool{'' if count == 1 else 's'} on task queue "
            f"{options.task_queue!r} at {options.temporal}; Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )

    try:
        return serve_worker(
            toolkit,
            options.temporal,
            task_queue=options.task_queue,
            namespace=options.namespace,
            max_concurrent=options.max_concurrent,
            ready=ready,
        )
    except TemporalUnavailableError as exc:
        raise _CliError(f"--temporal: {exc}") from None


def _add_worker(commands: Any, common: argparse.ArgumentParser) -> None:
    worker = commands.add_parser(
        "worker",
        parents=[common],
        formatter_class=_Formatter,
        help="run the tools as Temporal activities, a worker of a fleet",
        description="Run REF's tools on a Temporal task queue, until Ctrl-C or SIGTERM: each "
        "tool is an\nactivity, and calls a host starts with "
        "Host(toolkit, runner=TemporalRunner(...))\nrun here (start as many workers as you "
        "like). Needs the temporalio SDK.",
        epilog=f"{_REF_HELP}\n\nexample:\n"
        "  toolnexus worker tools.py:toolkit --temporal localhost:7233 --task-queue tools",
    )
    worker.add_argument("ref", metavar="REF", help=_REF_ARG)
    worker.add_argument(
        "--temporal", required=True, metavar="HOST:PORT", help="the Temporal frontend's address"
    )
    worker.add_argument(
        "--task-queue", required=True, metavar="QUEUE", help="the task queue hosts send calls to"
    )
    worker.add_argument(
        "--namespace", default="default", help="the Temporal namespace (default: default)"
    )
    worker.add_argument(
        "--max-concurrent",
        type=_whole_number(1, "a whole number of calls", "--max-concurrent 8"),
        metavar="N",
        help="the most calls this worker runs at once (default: Temporal's)",
    )
    worker.add_argument(
        "--log-level",
        type=str.lower,
        default="warning",
        choices=_LOG_LEVELS,
        help="what the worker logs to stderr (default: warning; --debug means debug)",
    )
    worker.set_defaults(handler=_cmd_worker)


# --------------------------------------------------------------------------- the parser


def _whole_number(
    minimum: int, expected: str, example: str, unit: str = ""
) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number >= ``minimum``, whose errors say what was
    ``expected`` and show an ``example``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {expected}, got {text!r} (e.g. {example})"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}{unit}, got {value}")
        return value

    return parse


_timeout = _whole_number(0, "whole milliseconds", "--timeout 5000", " milliseconds")
_rounds = _whole_number(1, "a whole number of rounds", "--max-rounds 3")


_SIZE_UNITS = {
    "": 1,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
}


def _byte_size(text: str) -> int:
    number = text.strip().lower()
    digits = number[: len(number) - len(number.lstrip("0123456789"))] or "x"
    unit = _SIZE_UNITS.get(number[len(digits) :])
    if not digits.isdigit() or unit is None or int(digits) * unit < 1:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of bytes, optionally with K, M or G, got {text!r} "
            "(e.g. --max-inflight-bytes 256M)"
        )
    return int(digits) * unit


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=28)


def _build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show tracebacks (import errors, tool exceptions)",
    )
    parser = argparse.ArgumentParser(
        prog="toolnexus" if _package() == "toolnexus" else f"python -m {_package()}",
        formatter_class=_Formatter,
        description="Call tools from a shell, answer their questions at the prompt, "
        "print their schemas, serve them over MCP.",
        epilog=f"{_REF_HELP}\n\nexamples:\n"
        "  toolnexus demo\n"
        "  toolnexus list toolnexus.demo:toolkit\n"
        "  toolnexus call toolnexus.demo:toolkit crunch steps=3\n\n"
        f"{_EXIT_CODES_HELP}\n\n"
        "toolnexus COMMAND --help shows a command's options.",
    )
    from ._version import __version__

    parser.add_argument("--version", action="version", version=f"toolnexus {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        parents=[common],
        formatter_class=_Formatter,
        help="run the bundled example tools through their scenarios",
        description="Run the bundled example toolkit (toolnexus.demo:toolkit) through a plain "
        "call, a cancelled call, a timeout and a question answered, printing each step.",
        epilog="example:\n  toolnexus demo",
    )
    demo.set_defaults(handler=_cmd_demo)

    listing = commands.add_parser(
        "list",
        parents=[common],
        formatter_class=_Formatter,
        help="list tools (and resources, prompts): names and one-line descriptions",
        description="Print each tool's name and the first line of its description; then the\n"
        "toolkit's resources, resource templates and prompts, if it has any.",
        epilog=f"{_REF_HELP}\n\nexamples:\n  toolnexus list toolnexus.demo:toolkit\n"
        "  toolnexus list examples/weather.py",
    )
    listing.add_argument("ref", metavar="REF", help=_REF_ARG)
    listing.set_defaults(handler=_cmd_list)

    read = commands.add_parser(
        "read",
        parents=[common],
        formatter_class=_Formatter,
        help="read an MCP resource (of a toolkit, or of a server)",
        usage="toolnexus read REF URI [--json] [--save DIR] [--timeout MS]",
        description="Read the resource at URI and print its text (binary contents are\n"
        "named on stderr; --save DIR writes them to files; --json prints the contents).\n"
        "REF is a toolkit (as for call), or the URL of a Streamable HTTP MCP server.",
        epilog="examples:\n  toolnexus read tests/served_tools.py:toolkit notes://readme\n"
        "  toolnexus read http://127.0.0.1:8000/mcp notes://items/42 --json",
    )
    read.add_argument("ref", metavar="REF", help=_REF_ARG + ", or a server's URL")
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    read.add_argument("--json", action="store_true", help="print the contents as JSON")
    read.add_argument("--save", metavar="DIR", help="write binary contents to files in DIR")
    read.add_argument(
        "--timeout", type=_timeout, metavar="MS", help="the read's deadline (exit 124)"
    )
    read.set_defaults(handler=_cmd_read)

    get = commands.add_parser(
        "get",
        parents=[common],
        formatter_class=_Formatter,
        help="get an MCP prompt, rendered with its arguments",
        usage="toolnexus get REF NAME [key=value ...] [--json] [--timeout MS]",
        description="Render the prompt NAME and print its messages (role: text). Arguments\n"
        "are key=value pairs, strings as MCP sends them. REF is a toolkit (as for call),\n"
        "or the URL of a Streamable HTTP MCP server.",
        epilog="examples:\n  toolnexus get tests/served_tools.py:toolkit review code='x = 1'\n"
        "  toolnexus get http://127.0.0.1:8000/mcp review code='x = 1' --json",
    )
    get.add_argument("ref", metavar="REF", help=_REF_ARG + ", or a server's URL")
    get.add_argument("name", metavar="NAME", help="the prompt's name")
    get.add_argument("rest", nargs="*", metavar="key=value", help="the prompt's arguments")
    get.add_argument("--json", action="store_true", help="print the rendered prompt as JSON")
    get.add_argument(
        "--timeout", type=_timeout, metavar="MS", help="the prompt's deadline (exit 124)"
    )
    get.set_defaults(handler=_cmd_get)

    schema = commands.add_parser(
        "schema",
        parents=[common],
        formatter_class=_Formatter,
        help="print the tools' schemas as a model provider wants them",
        description="Print the tools' schemas as pretty JSON, in one provider's shape.",
        epilog=f"{_REF_HELP}\n\nexamples:\n  toolnexus schema toolnexus.demo:toolkit\n"
        "  toolnexus schema toolnexus.demo:toolkit crunch --format anthropic",
    )
    schema.add_argument("ref", metavar="REF", help=_REF_ARG)
    schema.add_argument("name", metavar="NAME", nargs="?", help="only this tool")
    schema.add_argument(
        "--format",
        choices=("openai", "anthropic", "gemini", "mcp"),
        default="openai",
        help="whose shape (default: openai)",
    )
    schema.set_defaults(handler=_cmd_schema)

    call = commands.add_parser(
        "call",
        parents=[common],
        formatter_class=_Formatter,
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
        f"{_EXIT_CODES_HELP}",
    )
    _add_call_options(call)
    call.set_defaults(handler=_cmd_call)

    resume = commands.add_parser(
        "resume",
        parents=[common],
        formatter_class=_Formatter,
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
        f"{_EXIT_CODES_HELP}",
    )
    _add_call_options(resume)
    resume.add_argument(
        "--request",
        required=True,
        metavar="JSON|@FILE",
        help="the pending request (as `call --no-input` printed it)",
    )
    resume.add_argument(
        "--answer",
        metavar="JSON|@FILE",
        help='the answer, e.g. \'{"ok": true, "data": {...}}\' (default: ask at the prompt)',
    )
    resume.set_defaults(handler=_cmd_resume)

    serve = commands.add_parser(
        "serve",
        parents=[common],
        formatter_class=_Formatter,
        help="serve the tools over MCP (stdin/stdout, or HTTP with --http)",
        description="Run an MCP server on stdin/stdout offering REF's tools, until stdin "
        "closes.\nPoint an MCP client's configuration at this command. With --http, serve "
        "Streamable HTTP at http://HOST:PORT/mcp until Ctrl-C or SIGTERM. Several REFs are "
        "served as one (an mcp.json and local tools: a gateway that adds its own).",
        epilog=f"{_REF_HELP}\n\nexamples:\n"
        "  toolnexus serve toolnexus.demo:toolkit --name demo --timeout 30000\n"
        "  toolnexus serve toolnexus.demo:toolkit --http 8000 --token-file token.txt\n"
        "  toolnexus serve mcp.json mytools.py:toolkit\n\n"
        f"With --http the token may also come from ${_TOKEN_ENV}.",
    )
    serve.add_argument("ref", metavar="REF", nargs="+", help=_REF_ARG + " (several: served as one)")
    serve.add_argument("--name", help="the server name clients see (default: toolnexus)")
    serve.add_argument("--version", help="the server version clients see")
    serve.add_argument(
        "--timeout", type=_timeout, metavar="MS", help="deadline for each call, milliseconds"
    )
    serve.add_argument(
        "--log-level",
        type=str.lower,
        default="warning",
        choices=_LOG_LEVELS,
        help="what the server logs to stderr (default: warning; --debug means debug)",
    )
    serve.add_argument(
        "--max-rounds",
        type=_rounds,
        default=1,
        metavar="N",
        help="how many answers one call may take (default 1: a retry that asks again is "
        "'unresolved: <prompt>')",
    )
    serve.add_argument(
        "--max-inflight-bytes",
        type=_byte_size,
        metavar="BYTES",
        help="the most bytes of tool-call requests running at once (default 64M, stdio "
        "and --http); a request beyond it is answered 'server overloaded'",
    )
    _add_key_options(serve)
    serve.add_argument(
        "--http",
        type=_http_address,
        metavar="[HOST:]PORT",
        help="serve Streamable HTTP at /mcp instead of stdio (host: 127.0.0.1)",
    )
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help=f"require 'Authorization: Bearer <token>' with the token in FILE (or ${_TOKEN_ENV})",
    )
    oauth = serve.add_argument_group(
        "OAuth (with --http)",
        "Take OAuth 2.1 access tokens from an authorization server (see docs/auth.md).",
    )
    oauth.add_argument(
        "--oauth-issuer",
        action="append",
        metavar="URL",
        help="accept access tokens issued by this authorization server (its issuer URL)",
    )
    oauth.add_argument(
        "--oauth-resource",
        metavar="URL",
        help="this server's public URL, e.g. https://mcp.example.com/mcp: the resource "
        "tokens must be issued for (default: the URL of the --http address, never a "
        "request's Host; required on 0.0.0.0)",
    )
    oauth.add_argument(
        "--oauth-audience",
        action="append",
        metavar="AUD",
        help="accept tokens whose aud names AUD instead of the resource (repeatable)",
    )
    oauth.add_argument(
        "--oauth-jwks",
        metavar="URL",
        help="the issuer's key set (default: the jwks_uri of its metadata)",
    )
    oauth.add_argument(
        "--oauth-introspect",
        metavar="URL",
        help="verify tokens by asking this RFC 7662 introspection endpoint (instead of "
        "checking them as JWTs)",
    )
    oauth.add_argument(
        "--oauth-client-id",
        metavar="ID",
        help="with --oauth-introspect: this server's client id there",
    )
    oauth.add_argument(
        "--oauth-client-secret-file",
        metavar="FILE",
        help=f"with --oauth-introspect: its client secret (or ${_OAUTH_SECRET_ENV})",
    )
    oauth.add_argument(
        "--oauth-scope",
        action="append",
        metavar="SCOPE",
        help="a scope every request needs (repeatable)",
    )
    oauth.add_argument(
        "--oauth-tool-scope",
        action="append",
        metavar="TOOL=SCOPE",
        help="scopes a call of TOOL needs, comma-separated (repeatable): a call without "
        "them is refused 403 insufficient_scope",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="with --http on an address other than loopback: serve without a token "
        "(anyone who can reach it can call every tool); refused otherwise",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST",
        help="a Host header to answer besides localhost (repeatable; '*' for any)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="an Origin to accept besides localhost, e.g. https://app.example (repeatable)",
    )
    serve.set_defaults(handler=_cmd_serve)
    _add_worker(commands, common)
    _localize_parser(parser)
    return parser


def _add_call_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help=_REF_ARG)
    sub.add_argument(
        "rest",
        metavar="NAME key=value",
        nargs="*",
        help="the tool (optional when REF holds one) and its arguments",
    )
    sub.add_argument(
        "--args", metavar="JSON|@FILE", help="the arguments as a JSON object, inline or from a file"
    )
    sub.add_argument(
        "--timeout", type=_timeout, metavar="MS", help="give up after MS milliseconds (exit 124)"
    )
    sub.add_argument("--json", action="store_true", help="print the whole ToolResult as wire JSON")
    sub.add_argument(
        "--save-parts",
        metavar="DIR",
        help="write the result's parts (images, files, audio) into DIR, one file each",
    )
    sub.add_argument(
        "--no-input",
        action="store_true",
        help="never ask: print the pending result (request and binding) as JSON and exit 3",
    )
    _add_key_options(sub)


def _add_key_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--secret-file",
        metavar="PATH",
        help="the key(s) that bind a question to its call, one per line, newest first "
        "(default: $TOOLNEXUS_SECRET; for call --no-input and resume, then your per-user "
        "key, ~/.config/toolnexus/secret); the same key lets another process resume",
    )
    sub.add_argument(
        "--store",
        metavar="URL",
        help="where answers already used are kept, shared by every process that names it: "
        "memory:, sqlite:PATH, postgresql://USER:PASSWORD@HOST/DB or redis://HOST:6379/0 "
        "(default: $TOOLNEXUS_STORE, else with a key "
        "sqlite:~/.cache/toolnexus/used-answers.sqlite3)",
    )
    sub.add_argument(
        "--answers-db",
        metavar="PATH",
        help="the same as --store sqlite:PATH",
    )


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Usage errors exit through ``argparse`` (``SystemExit(2)``) or return
    :data:`EXIT_USAGE` after one line on stderr. ``call`` and ``resume`` own Ctrl-C while
    they run (the first cancels the call, a second exits at once with 130); once the call is
    over Ctrl-C no longer raises, so the process ends with the call's code (or 130), never
    by the signal. Called with an ``argv``, the caller's own SIGINT handler is put back.

    Example::

        code = main(["list", "toolnexus.demo:toolkit"])
    """
    parser = _build_parser()
    options, extras = parser.parse_known_args(argv)
    if extras:
        # Words after an option (`call REF --timeout 5 crunch n=3`) belong to NAME key=value.
        if options.command in ("call", "resume") and not any(w.startswith("-") for w in extras):
            options.rest = [*options.rest, *extras]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
    debug = bool(getattr(options, "debug", False))
    _configure_logging("debug" if debug else getattr(options, "log_level", None))
    _reconfigure_streams()
    import signal
    import threading

    owns_sigint = options.command in ("call", "resume") and (
        threading.current_thread() is threading.main_thread()
    )
    previous: Any = None
    try:
        if owns_sigint:
            # A parent that ignored SIGINT (a background job) would leave Ctrl-C dead here;
            # this command promises Ctrl-C cancels, so take it back.
            previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            code: int = options.handler(options)
        finally:
            if owns_sigint:
                _after_the_call()  # before anything else: no Ctrl-C may escape main()
    except KeyboardInterrupt:
        # Ctrl-C outside a running call (while importing REF, say): nothing to cancel.
        sys.stderr.write("\ninterrupted\n")
        code = EXIT_CANCELLED
    except (RefError, _CliError) as exc:
        if debug and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(
                type(exc.__cause__), exc.__cause__, exc.__cause__.__traceback__
            )
        sys.stderr.write(_localize(f"toolnexus {options.command}: error: {exc}\n"))
        code = exc.code if isinstance(exc, _CliError) else EXIT_USAGE
    if owns_sigint:
        if argv is not None and previous is not None:
            # Called from Python with its own argv: the process goes on, with its own Ctrl-C.
            signal.signal(signal.SIGINT, previous)
        elif argv is None:
            # Run as the program, it exits now. While the interpreter finalizes it puts back
            # SIG_DFL for a Python-level handler (Ctrl-C there would kill the process by the
            # signal) but leaves SIG_IGN alone: ignore it for the last few milliseconds.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def _configure_logging(level: str | None) -> None:
    """Send the package's log records to stderr at ``level``; ``None`` keeps the library
    silent (a tool's exception is already in its error result)."""
    from ._log import when_first_used

    # Done when the package first logs: a server that never logs never loads logging.
    when_first_used(lambda: _configure_logging_now(level))


def _configure_logging_now(level: str | None) -> None:
    import logging

    logger = logging.getLogger("toolnexus")
    for old in [h for h in logger.handlers if getattr(h, "_toolnexus_cli", False)]:
        logger.removeHandler(old)  # main() may run more than once in a process
    if level is None:
        return
    # stderr, never stdout: under `serve`, stdout is the protocol channel.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # A failed MCP server is named once, by _remote_toolkit: not again in the log.
    handler.addFilter(lambda record: not hasattr(record, "mcp_server_status"))
    handler._toolnexus_cli = True  # type: ignore[attr-defined]
    logger.setLevel(level.upper())
    logger.addHandler(handler)


def _reconfigure_streams() -> None:
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            # A tool's non-ASCII output must not crash a narrow-encoding console.
            with contextlib.suppress(ValueError, OSError, TypeError):
                reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    sys.exit(main())
