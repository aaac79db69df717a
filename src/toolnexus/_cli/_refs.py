"""Finding tools by reference (``REF``): a module or file and an attribute, an
``mcp.json`` (the servers it configures), or the URL of a Streamable HTTP MCP server."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import McpError, RefError, ToolnexusError
from ._answer_keys import user_key_path
from ._common import EXIT_TOOL_ERROR, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from types import ModuleType

    from .._toolkit import Toolkit
    from ..mcp import McpClient


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
    if is_openapi_ref(ref):
        return _openapi_toolkit(ref)
    if ref.endswith(".json"):
        return _remote_toolkit(ref, sign_in)
    if is_server_url(ref):
        return _server_toolkit(ref)
    if is_skills_ref(ref):
        return _skills_toolkit(ref)
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


def load_union(refs: list[str]) -> Toolkit:
    """The tools (and resources and prompts) of every REF, served as one toolkit:
    ``serve mcp.json tools.py:toolkit`` is a gateway that also offers local tools. An
    ``mcp.json`` (at most one) keeps its toolkit, so its servers' list changes still reach
    the clients; the others' entries join it. A name two REFs share is a RefError naming
    both."""
    jsons = [ref for ref in refs if ref.endswith(".json") and not is_openapi_ref(ref)]
    if len(jsons) > 1:
        raise RefError(
            jsons[1], f"serve takes one mcp.json; put the servers of {jsons[1]!r} in {jsons[0]!r}"
        )
    if len(refs) == 1:
        return load_toolkit(refs[0])
    from .._toolkit import Toolkit

    # The mcp.json first: its toolkit (made for this process) is the live one the rest
    # joins; local toolkits are copied, never changed.
    ordered = sorted(refs, key=lambda ref: ref not in jsons)
    union: Toolkit | None = None if jsons else Toolkit()
    owners: dict[tuple[str, str], str] = {}
    for ref in ordered:
        toolkit = load_toolkit(ref)
        # the skill tool is each toolkit's loader of its own skills: the union has one,
        # which loads all of them
        entries: list[tuple[str, str, Any]] = [
            ("tool", tool.name, tool) for tool in toolkit if tool.source != "skill"
        ]
        entries += [("resource", entry.uri, entry) for entry in toolkit.resources()]
        entries += [("prompt", entry.name, entry) for entry in toolkit.prompts()]
        entries += [("skill", entry.name, entry) for entry in toolkit.skills()]
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
    from ..mcp import McpSource

    try:
        source = McpSource(ref, oauth=_cli_oauth(sign_in)).connect()
    except (ValueError, TypeError) as exc:
        raise RefError(ref, str(exc)) from None
    for status in source.status().values():
        if status.status == "failed":
            print(f"toolnexus: MCP server {status.name!r} failed: {status.reason}", file=sys.stderr)
    from ..mcp import federate

    federate(source)  # resources, templates and prompts too, prefixed as the tools are
    toolkit = source.toolkit
    if not (len(toolkit) or toolkit.resources() or toolkit.prompts()):
        raise RefError(ref, f"{ref!r}: no MCP server in it offers a tool (see above)")
    return toolkit


def is_skills_ref(ref: str) -> bool:
    """Whether REF is a skills folder (a folder that is not a Python package) or a
    ``SKILL.md``: such a REF is a toolkit of skills, the ``skill`` tool their loader."""
    if os.path.basename(ref.rstrip("/" + os.sep)) == "SKILL.md":
        return os.path.isfile(ref)
    return os.path.isdir(ref) and not os.path.exists(os.path.join(ref, "__init__.py"))


def _skills_toolkit(ref: str) -> Toolkit:
    """A toolkit of the skills under ``ref``; a skill that cannot be read is left out and
    kept in its ``skill_errors`` (the commands name them); none at all is a RefError."""
    from .._toolkit import Toolkit

    toolkit = Toolkit()
    toolkit.add_skills(ref)
    if not toolkit.skills():
        problems = "; ".join(str(each) for each in toolkit.skill_errors[:3])
        found = f": {problems}" if problems else ""
        raise RefError(ref, f"no usable skill (a folder with a SKILL.md) in it{found}")
    return toolkit


def is_openapi_ref(ref: str) -> bool:
    """Whether REF is an OpenAPI document: a ``.yaml``/``.yml`` file, or a ``.json`` file
    whose object has an ``openapi`` (or ``swagger``) field — an ``mcp.json`` has none."""
    if ref.endswith((".yaml", ".yml")):
        return True
    if not ref.endswith(".json"):
        return False
    try:
        with open(ref, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return False  # the mcp.json reader says what is wrong with it
    # A top-level field: an mcp.json may well name a server "openapi".
    return isinstance(document, dict) and ("openapi" in document or "swagger" in document)


def _openapi_toolkit(ref: str) -> Toolkit:
    """The tools of an OpenAPI document (one per operation); operations that do not load
    are named on stderr, the others serve."""
    from .._openapi import load_openapi
    from .._toolkit import Toolkit

    try:
        imported = load_openapi(ref)
    except (ValueError, TypeError) as exc:
        raise RefError(ref, str(exc)) from None
    for problem in imported.problems:
        print(f"toolnexus: {problem}", file=sys.stderr)
    if not imported.tools:
        raise RefError(ref, f"{ref!r}: no operation in it could be made a tool (see above)")
    return Toolkit._of_import(imported, None)  # a namespace per tag, deferred above 30


def is_server_url(ref: str) -> bool:
    """Whether REF is the URL of a Streamable HTTP MCP server (every command takes one)."""
    return ref.startswith(("http://", "https://"))


def _server(url: str) -> McpClient:
    """The client every command reaches a server URL with: ``list``, ``schema``, ``call``,
    ``read`` and ``get`` resolve such a REF here, and only here."""
    from ..mcp import McpClient

    return McpClient(url=url)


def _server_toolkit(url: str) -> Toolkit:
    """The tools of the MCP server at ``url``, under the server's own names; the client
    stays open for the calls (the process ends it)."""
    from .._toolkit import Toolkit

    client = _server(url)
    try:
        return Toolkit(client.tools(prefix=""))
    except McpError as exc:
        client.close()
        raise RefError(url, str(exc)) from None


def from_server(url: str, ask: Callable[[Any], Any]) -> Any:
    """Ask the MCP server at ``url`` (over Streamable HTTP, with this module's client)."""
    try:
        with _server(url) as client:
            return ask(client)
    except McpError as exc:
        # The server's own failure (JSON-RPC internal error: the resource or prompt raised)
        # is exit 1, as when it runs here; a request it refuses (an unknown URI or prompt,
        # a wrong argument: -32602) or a server that cannot be reached is exit 2.
        failed = str(exc).endswith(f"({_INTERNAL_ERROR})")
        raise CliError(str(exc), EXIT_TOOL_ERROR if failed else EXIT_USAGE) from None


_INTERNAL_ERROR = -32603
"""JSON-RPC's code for a server that failed doing what it was asked; the client's
McpError ends its message with the code."""


TOKENS_FILE = "mcp-tokens.json"
"""The OAuth token file's name, next to the per-user key (:func:`user_key_path`)."""


def _cli_oauth(sign_in: bool) -> Any:
    """The OAuth settings ``mcp.json`` servers with ``"auth": "oauth"`` get here: tokens
    in the per-user token file (0600), sign-ins asked on the terminal with the redirect
    received on a loopback port — or, with ``sign_in`` false, not asked at all."""
    from ..mcp import FileTokenStore, OAuth

    store = FileTokenStore(os.path.join(os.path.dirname(user_key_path()), TOKENS_FILE))
    if not sign_in:
        return OAuth(token_store=store, client_name="toolnexus")
    from ..mcp._client._oauth_loopback import LoopbackReceiver

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

    from .._tools import Tool

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

    from .._toolkit import Toolkit
    from .._tools import Tool, refuse_other_copy

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
    from .._toolkit import Toolkit
    from .._tools import Tool

    exported = getattr(module, "__all__", None)
    names = list(exported) if exported is not None else list(vars(module))
    tools: list[Any] = []  # tools, and MCP resources and prompts
    kits: list[str] = []
    from .._toolkit import served_kind

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


def check_name(toolkit: Toolkit, name: str) -> None:
    try:
        toolkit.get(name)
    except LookupError as exc:
        raise CliError(str(exc)) from None
