"""``mcp.json``: the MCP servers a user already configured, as one toolkit.

:class:`McpSource` reads the configuration format MCP clients share — the ``mcpServers``
object of Claude Desktop and its many followers, VS Code's ``servers``, or an ``mcp``
wrapper around either — starts or connects to every enabled server at once (each phase
bounded by that server's ``timeout``), and gathers their tools in one
:class:`~toolnexus.Toolkit`, named ``<server>_<tool>``. A server that cannot be used never
breaks the others: its status says ``failed`` and why.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._log import LazyLogger
from ...errors import InvalidTypeError, InvalidValueError, McpError

if TYPE_CHECKING:
    from ..._adapters import HostedMcp
    from ..._result import ToolResult
    from ..._skills import Skill
    from ..._toolkit import Toolkit
    from ..._tools import Tool
    from ._mcp_client import McpClient
    from ._oauth import OAuth
    from ._oauth_exchange import UpstreamExchange

__all__ = ["McpServerStatus", "McpSource", "load_mcp_json", "relist_at"]

_log = LazyLogger("mcp.client")  # the package's: it never prints on its own

_DEFAULT_TIMEOUT_MS = 30_000
# Each server's bounded queue of calls (maxInFlight, maxQueued): a slow server holds at most
# these of its client's own threads, none of the gateway's workers; its other calls are
# refused at once ("busy").
_DEFAULT_LIMITS = {"max_in_flight": 32, "max_queued": 16}
_SKILL_SCHEME = "skill://"  # a skill's URI (the skills extension's scheme)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")  # a URI's literal scheme


def has_scheme(uri: str) -> bool:
    """Whether ``uri`` begins with a literal scheme (``file:``, ``demo:``): the part a
    server's prefix is written into, so the federated URI reads back to its server."""
    return _SCHEME.match(uri) is not None


# ${NAME} or ${env:NAME}, from the environment; and VS Code's ${input:id}, a value its user
# is asked for, here read from the environment as TOOLNEXUS_INPUT_<ID> (_input_variable).
_VARIABLE = re.compile(r"\$\{(?:input:([^}]*)|(?:env:)?([A-Za-z_][A-Za-z0-9_]*))\}")
_KNOWN_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "type",
        "transport",
        "disabled",
        "enabled",
        "timeout",
        "includeTools",
        "excludeTools",
        "prefix",
        "description",
        "defer",
        "envFile",
        "auth",
        "document",
        "baseUrl",
        "credentials",
        "tags",
        "outputSchemas",
        "scopes",
        "toolScopes",
        "maxInFlight",
        "maxQueued",
        "skills",
    }
)
# An "auth" object's keys, and the OAuth field each sets.
_OAUTH_KEYS = {
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "scopes": "scopes",
    "redirectUri": "redirect_uri",
    "clientMetadataUrl": "client_metadata_url",
    "tokenEndpointAuthMethod": "token_endpoint_auth_method",
    "allowPrivateNetwork": "allow_private_network",
    "grant": "grant",
    "privateKeyFile": "private_key_file",
    "signingAlgorithm": "signing_algorithm",
    "assertionFile": "assertion_file",
    "idpTokenEndpoint": "idp_token_endpoint",
    "idpClientId": "idp_client_id",
    "idpClientSecret": "idp_client_secret",
    "dpop": "dpop",
}
_OAUTH_FLAGS = ("allowPrivateNetwork", "dpop")  # true or false, never a variable


@dataclass(frozen=True)
class McpServerStatus:
    """Where one configured server stands.

    Attributes:
        name: the server's key in ``mcp.json``.
        status: ``"connected"``, ``"disabled"`` (switched off in the file) or
            ``"failed"``.
        reason: why it failed (or is disabled); ``None`` when connected.
        tools: the names of the tools it contributes to the toolkit.
        skills: the names of the skills it contributes to the toolkit's ``skill`` tool.

    Example::

        for status in source.status().values():
            print(status.name, status.status, status.reason or "")
    """

    name: str
    status: str
    reason: str | None = None
    tools: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()


class _Server:
    def __init__(
        self, name: str, options: dict[str, Any], include: Any, exclude: Any, where: str = ""
    ) -> None:
        self.name = name
        self.where = where  # its place in the file, for messages: "mcp.json: mcpServers.x"
        self.options = options
        self.include = include
        self.exclude = exclude
        self.client: McpClient | None = None
        self.status = McpServerStatus(name, "failed", "not connected yet")
        self.tools: list[Tool] = []
        self.skills: list[Skill] = []  # its skills (SEP-2640), URIs as this source offers them
        self.specs: list[dict[str, Any]] = []  # its tools/list answer, as last fetched
        self.scopes: frozenset[str] = frozenset()  # a caller needs these to see any of it
        self.tool_scopes: dict[str, frozenset[str]] = {}  # and these for one tool
        self.exchange: UpstreamExchange | None = None  # auth.exchange: each caller's token
        # an openapi entry's tools: tool name -> (namespace, its description, its defer)
        self.homes: dict[str, tuple[str, str, bool | None]] = {}
        # one refresh of its lists at a time: a list_changed heard twice (a stream and a
        # poll, say) re-lists after the other, never interleaved with it
        self.refreshing = threading.Lock()
        # Held from when a refused call decides its tools must be listed again until a
        # thread has (see McpSource._stale): one such thread at a time.
        self.relist_slot = threading.Lock()
        self.timed = False  # a ttlMs timer will look at its tool list again
        self.relisted = -1e9  # when a call found its tool list stale (time.monotonic())


class McpSource:
    """The servers of an ``mcp.json`` (a path, or the parsed object) as one toolkit.

    :meth:`connect` starts every enabled server at once; :attr:`toolkit` then holds their
    tools, named ``<server>_<tool>`` (sanitised) unless ``prefix`` maps a server to
    another prefix (``""`` keeps the server's own names). Two servers that name a tool the
    same: the first one listed keeps it, the other's is skipped with a warning. A tool
    list change (``notifications/tools/list_changed``) refreshes that server's tools in
    the toolkit. :meth:`close` (also at interpreter exit) ends every server.

    What a server entry may say: ``command`` + ``args`` (+ ``env``, ``cwd``) for stdio, or
    ``url`` (+ ``headers``) for Streamable HTTP; ``type`` (``stdio``, ``http``,
    ``streamable-http``); ``disabled: true`` / ``enabled: false``; ``timeout`` (ms, each
    phase of connecting); ``includeTools`` / ``excludeTools`` (the server's tool names);
    ``prefix``; ``skills: false`` to leave the server's skills (the skills extension)
    out of the toolkit's ``skill`` tool; ``scopes`` / ``toolScopes`` (what a caller of a
    gateway needs to see the server's items, or one tool: a catalog per principal);
    ``maxInFlight`` (32) / ``maxQueued`` (16), the server's bounded queue of calls;
    ``auth``: ``"oauth"`` to sign in with OAuth 2.1 (or ``{"type": "oauth",
    "clientId": …, "clientSecret": …, "scopes": […], "redirectUri": …,
    "clientMetadataUrl": …, "allowPrivateNetwork": true, "grant": …, "privateKeyFile": …,
    "assertionFile": …, "idpTokenEndpoint": …, "dpop": true}``), on the ``oauth`` settings
    given here (where tokens live, who asks the user); in a gateway, ``"exchange": true``
    (or ``{"tokenEndpoint", "clientId", "clientSecret", "resource", "scopes"}``) in it
    sends each call made for a verified caller with the caller's token exchanged for
    the server (RFC 8693; docs/auth.md). ``${NAME}`` (or ``${env:NAME}``)
    in ``args``, ``env``, ``cwd``, ``url``, ``headers`` and ``auth`` is read from the
    environment; header values and secrets are never logged. VS Code's ``envFile``
    (``KEY=VALUE`` lines, relative to the file) fills a stdio server's environment under
    its ``env``; its ``${input:ID}`` is read from ``TOOLNEXUS_INPUT_<ID>`` (else the
    input's ``default``), or fails the server saying so.

    An entry of ``"type": "openapi"`` is no server but an OpenAPI document's operations
    (``Toolkit.from_openapi``): ``document`` (a path, relative to the file, or a URL),
    ``baseUrl``, ``headers``, ``credentials`` (a secret per security scheme; ``${NAME}``
    expands at each call; an object — ``{"type": "oauth", "grant":
    "client_credentials", "clientId": …, "clientSecret": …}``, as ``auth`` — is an
    ``oauth2`` scheme's client credentials, ``OpenApiOAuth``), ``tags``, ``timeout``,
    ``outputSchemas`` (``false``: none),
    ``includeTools``/``excludeTools``, ``prefix`` (``<entry>_`` by default, as a
    server's; ``""`` keeps the operations' own names), ``description``,
    ``defer`` (left out: held back above 30 operations). Each tag is a namespace named
    ``<entry>_<tag>``; an operation with no tag is in the entry's namespace.

    Raises ``ValueError``/``TypeError`` naming the place for a file that is not such a
    configuration (``servers.db.args: must be a list of strings``), an ``auth`` among
    them whose settings do not fit together (``mcpServers.crm.auth.clientSecret: is
    missing: ...``; a ``${NAME}`` is read at connect); a server that merely fails to
    start is a status, never an exception.

    Example::

        from toolnexus import Host
        from toolnexus.mcp import McpSource

        with McpSource("mcp.json").connect() as source:
            print({name: s.status for name, s in source.status().items()})
            with Host(source.toolkit, timeout_ms=30_000) as host:
                print(host.call("files_read_file", {"path": "README.md"}).output)
    """

    def __init__(
        self,
        config: Mapping[str, Any] | str | os.PathLike[str],
        *,
        prefix: Mapping[str, str] | None = None,
        timeout_ms: int = _DEFAULT_TIMEOUT_MS,
        idle_timeout_ms: int | None = None,
        elicitation: bool = True,
        client_name: str = "toolnexus",
        oauth: OAuth | None = None,
    ) -> None:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise InvalidValueError(f"timeout_ms must be an int > 0, got {timeout_ms!r}")
        self._where = "mcp.json"
        # What a relative envFile is relative to: the configuration file's folder.
        self._folder = os.getcwd()
        if isinstance(config, Mapping):
            document: Any = config
        else:
            self._where = os.fspath(config)
            self._folder = os.path.dirname(os.path.abspath(self._where))
            try:
                with open(config, encoding="utf-8") as handle:
                    document = json.load(handle)
            except OSError as exc:
                raise InvalidValueError(
                    f"cannot read {self._where!r}: {exc.strerror or exc}"
                ) from None
            except ValueError as exc:
                raise InvalidValueError(f"{self._where!r} is not JSON: {exc}") from None
        if oauth is not None:
            from ._oauth import OAuth

            if not isinstance(oauth, OAuth):
                raise InvalidTypeError(
                    f"oauth must be a toolnexus.mcp.OAuth, got {type(oauth).__name__}"
                )
        self._oauth = oauth
        self._prefix = dict(prefix or {})
        self._defaults: dict[str, Any] = {
            "timeout_ms": timeout_ms,
            "idle_timeout_ms": idle_timeout_ms,
            "elicitation": elicitation,
            "client_name": client_name,
        }
        self._servers = self._read(document)
        self._lock = threading.Lock()
        from ..._toolkit import Toolkit  # (loaded with the package already)

        self.toolkit: Toolkit = Toolkit()
        """Every connected server's tools (kept up to date on list changes)."""
        self._closed = False
        self._links = False  # rewrite resource links in tool results (rewrite_links)

    # ------------------------------------------------------------------ reading

    def _read(self, document: Any) -> dict[str, _Server]:
        where = self._where
        if not isinstance(document, Mapping):
            raise InvalidTypeError(f"{where}: must be a JSON object with an mcpServers object")
        servers: Any = None
        path = ""
        holder: Any = document  # where VS Code's "inputs" sit: beside the servers
        for key in ("mcpServers", "servers"):
            if key in document:
                servers, path = document[key], key
                break
        else:
            if "mcp" in document:
                inner = document["mcp"]
                path = "mcp"
                servers = inner
                if isinstance(inner, Mapping):
                    holder = inner
                    for key in ("servers", "mcpServers"):
                        if key in inner:
                            servers, path = inner[key], f"mcp.{key}"
                            break
        self._inputs = _read_inputs(
            holder.get("inputs", []), f"{where}: {'mcp.' if holder is not document else ''}inputs"
        )
        if servers is None:
            raise InvalidValueError(
                f"{where}: no servers found; write "
                '{"mcpServers": {"name": {"command": ..., "args": [...]}}} (or "servers", '
                'or "mcp": {"servers": ...})'
            )
        if not isinstance(servers, Mapping):
            raise InvalidTypeError(f"{where}: {path} must be an object of servers by name")
        return {
            name: self._read_server(name, entry, f"{where}: {path}.{name}")
            for name, entry in servers.items()
        }

    def _read_server(self, name: str, entry: Any, where: str) -> _Server:
        if not isinstance(entry, Mapping):
            raise InvalidTypeError(f"{where}: must be an object, got {type(entry).__name__}")
        unknown = sorted(set(entry) - _KNOWN_KEYS)
        if unknown:
            _log.debug("%s: ignoring %s", where, ", ".join(unknown))
        options: dict[str, Any] = {}
        kind = entry.get("type", entry.get("transport"))
        if kind is not None and kind not in ("stdio", "http", "streamable-http", "sse", "openapi"):
            raise InvalidValueError(
                f"{where}.type: must be stdio, http, streamable-http or openapi, got {kind!r}"
            )
        if kind == "openapi":
            return self._read_openapi(name, entry, where)
        command = entry.get("command")
        url = entry.get("url")
        if (command is None) == (url is None):
            raise InvalidValueError(
                f"{where}: give either command (+ args) for a stdio server or url for an HTTP "
                "server"
            )
        if command is not None and "auth" in entry:
            raise InvalidValueError(
                f"{where}.auth: OAuth is for an HTTP server (url); a stdio server gets its "
                "credentials from env"
            )
        if url is not None and "envFile" in entry:
            raise InvalidValueError(
                f"{where}.envFile: an env file is for a stdio server (command); an HTTP "
                "server's credentials go in headers"
            )
        if command is not None:
            _text(command, f"{where}.command")
            if "envFile" in entry:
                options["env_file"] = _text(entry["envFile"], f"{where}.envFile")
            options["command"] = command
            options["args"] = _texts(entry.get("args", []), f"{where}.args")
            options["env"] = _text_map(entry.get("env", {}), f"{where}.env")
            if "cwd" in entry:
                options["cwd"] = _text(entry["cwd"], f"{where}.cwd")
        else:
            options["url"] = _text(url, f"{where}.url")
            options["headers"] = _text_map(entry.get("headers", {}), f"{where}.headers")
            options["sse"] = kind == "sse"
            if "auth" in entry:
                auth = entry["auth"]
                if isinstance(auth, Mapping) and "exchange" in auth:
                    exchange = _read_exchange(auth["exchange"], f"{where}.auth.exchange")
                    options["exchange"] = exchange
                    auth = {key: value for key, value in auth.items() if key != "exchange"}
                options["auth"] = _read_auth(auth, f"{where}.auth", self._oauth)
        include, exclude = _read_listing(entry, where, options, "the server's tools")
        skills = entry.get("skills", True)
        if not isinstance(skills, bool):
            raise InvalidValueError(
                f"{where}.skills: must be true or false (false: leave the server's skills "
                f"out of the toolkit), got {skills!r}"
            )
        options["skills"] = skills
        description = entry.get("description")
        options["description"] = description if isinstance(description, str) else None
        for key, field in (("maxInFlight", "max_in_flight"), ("maxQueued", "max_queued")):
            value = entry.get(key, _DEFAULT_LIMITS[field])
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidValueError(f"{where}.{key}: must be a count >= 0, got {value!r}")
            options[field] = value
        if options["max_in_flight"] < 1:
            raise InvalidValueError(f"{where}.maxInFlight: must be at least 1, got 0")
        server = _Server(name, options, include, exclude, where)
        server.scopes = _scopes(entry.get("scopes", []), f"{where}.scopes")
        tool_scopes = entry.get("toolScopes", {})
        if not isinstance(tool_scopes, Mapping):
            raise InvalidTypeError(
                f"{where}.toolScopes: must map the server's tool names to scopes, such as "
                '{"delete_file": ["files:admin"]}'
            )
        server.tool_scopes = {
            tool: _scopes(needed, f"{where}.toolScopes.{tool}")
            for tool, needed in tool_scopes.items()
        }
        return server

    # ------------------------------------------------------------------ hosted MCP

    def hosted(self, *, require_approval: str = "always") -> list[HostedMcp]:
        """This configuration's HTTP servers as hosted-MCP entries, for a provider to call
        itself: :class:`~toolnexus.HostedMcp` (``to_openai()`` gives OpenAI's ``{"type":
        "mcp"}`` tool; ``to_anthropic_server()`` and ``to_anthropic_toolset()`` Anthropic's
        MCP connector). Nothing is connected. Each keeps its server's ``includeTools``
        less its ``excludeTools`` (as ``allowed_tools``) and ``headers``; an
        ``Authorization: Bearer`` header is passed as the token, and ``${NAME}`` variables
        are read from the environment (an unset one raises
        :class:`~toolnexus.errors.McpError` naming it). Disabled servers, stdio servers (a
        provider cannot start a process here) and ``openapi`` entries are left out.

        Raises :class:`~toolnexus.errors.InvalidValueError`, naming the server's key, for
        a server a provider cannot be told to use as the file says: ``excludeTools``
        without ``includeTools`` (a provider takes a list of the tools allowed, never of
        those refused: list them in ``includeTools``), or ``auth`` (an OAuth sign-in is
        toolnexus's own; a provider's call cannot carry it: give the token as an
        ``Authorization: Bearer ${TOKEN}`` header instead, or connect the server with
        :meth:`connect`).

        Example::

            source = McpSource({"mcpServers": {"docs": {"url": "https://mcp.example.com/mcp"}}})
            tools = [entry.to_openai() for entry in source.hosted()]
        """
        from ..._adapters import HostedMcp

        entries = []
        for server in self._servers.values():
            options = server.options
            if options.get("disabled") or "url" not in options or options.get("sse"):
                continue
            exclude = server.exclude
            if exclude and server.include is None:
                raise InvalidValueError(
                    f"{server.where}.excludeTools: a provider's hosted MCP takes the tools it "
                    "may use, never those it may not, so excluding "
                    f"{', '.join(map(repr, exclude))} cannot be passed on; list the tools to "
                    f"allow in {server.where.rpartition(': ')[2]}.includeTools instead"
                )
            if "auth" in options:
                raise InvalidValueError(
                    f"{server.where}.auth: a provider's hosted MCP connects to the server "
                    "itself and cannot sign in with toolnexus's OAuth; give the server's "
                    'token as a header ("headers": {"Authorization": "Bearer ${TOKEN}"}) '
                    "in place of auth, or connect the server with McpSource.connect()"
                )
            # ${NAME} read from the environment; an unset one raises McpError naming it.
            expanded = _expand(options, server.name, self._inputs)
            headers = dict(expanded.get("headers") or {})
            token = None
            for key in list(headers):
                value = headers[key]
                if key.lower() == "authorization" and value.lower().startswith("bearer "):
                    token = value[len("bearer ") :]
                    del headers[key]
            include = server.include
            allowed = None if include is None else tuple(t for t in include if t not in exclude)
            entries.append(
                HostedMcp(
                    server.name,
                    expanded["url"],
                    require_approval=require_approval,
                    allowed_tools=allowed,
                    headers=headers or None,
                    authorization=token,
                )
            )
        return entries

    def _read_openapi(self, name: str, entry: Mapping[str, Any], where: str) -> _Server:
        """An ``openapi`` entry: an OpenAPI document's operations as tools (no MCP server)."""
        document = entry.get("document", entry.get("url"))
        if not isinstance(document, str) or not document:
            raise InvalidValueError(
                f"{where}.document: an openapi entry needs the document's path or URL, "
                'e.g. "document": "petstore.json"'
            )
        if not document.startswith(("http://", "https://")):
            document = os.path.join(self._folder, document)
        options: dict[str, Any] = {"openapi": document}
        if "baseUrl" in entry:
            options["base_url"] = _text(entry["baseUrl"], f"{where}.baseUrl")
        options["headers"] = _text_map(entry.get("headers", {}), f"{where}.headers")
        # Kept as written: ${NAME} in a credential expands at each call, never stored. An
        # object is an oauth2 scheme's client credentials, as a server's "auth" says them.
        given = entry.get("credentials", {})
        if not isinstance(given, Mapping):
            raise InvalidTypeError(f"{where}.credentials: must be an object")
        options["credentials"] = _text_map(
            {k: v for k, v in given.items() if not isinstance(v, Mapping)},
            f"{where}.credentials",
        )
        options["oauth_credentials"] = {
            k: _read_auth(v, f"{where}.credentials.{k}", self._oauth, machine=True)
            for k, v in given.items()
            if isinstance(v, Mapping)
        }
        if "tags" in entry:
            options["tags"] = _texts(entry["tags"], f"{where}.tags")
        output_schemas = entry.get("outputSchemas", True)
        if not isinstance(output_schemas, bool):
            raise InvalidTypeError(f"{where}.outputSchemas: must be true or false")
        options["output_schemas"] = output_schemas
        include, exclude = _read_listing(
            entry, where, options, "the document's operations", "; left out: held back above 30"
        )
        description = entry.get("description")
        options["description"] = description if isinstance(description, str) else None
        return _Server(name, options, include, exclude, where)

    def _connect_openapi(self, server: _Server) -> None:
        """Load an ``openapi`` entry's tools; a document that fails is the entry's status."""
        from ..._openapi import load_openapi

        options = server.options
        prefix = self.tool_prefix(server.name)  # <entry>_ unless prefix says otherwise
        try:
            credentials: dict[str, Any] = dict(options["credentials"])
            if options["oauth_credentials"]:
                from ._oauth import OAuth, OpenApiOAuth

                for scheme, fields in options["oauth_credentials"].items():
                    expanded = _expand(
                        {"auth": fields}, server.name, self._inputs, f"credentials.{scheme}"
                    )["auth"]
                    oauth = dataclasses.replace(self._oauth or OAuth(), **expanded)
                    credentials[scheme] = OpenApiOAuth(oauth)
            imported = load_openapi(
                options["openapi"],
                base_url=options.get("base_url"),
                headers=options["headers"],
                credentials=credentials,
                tags=options.get("tags"),
                timeout_ms=options["timeout_ms"],
                output_schemas=options["output_schemas"],
            )
        except (McpError, ValueError, TypeError, ImportError) as exc:  # (an extra missing)
            reason = getattr(exc, "problem", None) or str(exc)
            server.status = McpServerStatus(server.name, "failed", reason)
            _log.warning("OpenAPI entry %s failed: %s", server.name, reason)
            return
        from ..._views import check_namespace_name  # loaded with the toolkit already

        held = imported.namespace_defer(options["defer"])
        if options["description"] is None and imported.title:
            options["description"] = f"The operations of {imported.title}."
        options["defer"] = held  # the entry's own namespace (tools with no tag) too
        tools = []
        for tool in imported.tools:
            if server.include is not None and tool.name not in server.include:
                continue
            if tool.name in server.exclude:
                continue
            tag = imported.namespaces.get(tool.name)
            if prefix:  # sanitised as it is made, as an MCP server's tool names are
                tool = dataclasses.replace(tool, name=prefix + tool.name)
            name = tool.name
            tools.append(tool)
            if tag is None:
                continue
            # a tag's namespace, named after the entry too: two documents may share a tag
            try:
                home = check_namespace_name(f"{server.name}_{tag}")
            except ValueError:
                continue  # the entry's own namespace, as a tool with no tag
            server.homes[name] = (home, imported.descriptions.get(tag, ""), held)
        server.tools = tools
        server.status = McpServerStatus(server.name, "connected")

    # ------------------------------------------------------------------ connecting

    def connect(self) -> McpSource:
        """Connect every enabled server at once and gather their tools; returns ``self``.
        Never raises for a server that fails: see :meth:`status`."""
        threads = []
        for server in self._servers.values():
            if server.options["disabled"]:
                server.status = McpServerStatus(server.name, "disabled", "disabled in the file")
                continue
            thread = threading.Thread(
                target=self._connect_one,
                args=(server,),
                name=f"toolnexus-mcp-connect-{server.name}",
                daemon=True,
            )
            threads.append(thread)
            thread.start()
        for thread in threads:
            thread.join()
        # Registered in file order, whoever connected first: the first server listed keeps
        # a name two servers share.
        for server in self._servers.values():
            self._register(server)
        return self

    def _connect_one(self, server: _Server) -> None:
        from ._mcp_client import McpClient

        options = server.options
        if "openapi" in options:
            self._connect_openapi(server)
            return
        try:
            if options.get("sse"):
                raise McpError(
                    server.name,
                    "the legacy HTTP+SSE transport (type: sse) is not supported; use the "
                    "server's Streamable HTTP endpoint (type: http)",
                )
            expanded = _expand(options, server.name, self._inputs)
            endpoint = expanded.get("exchange", {}).get("token_endpoint")
            if endpoint is not None:  # what a variable held, checked as a written one is
                _check_url(endpoint, "auth.exchange.tokenEndpoint", "secret")
            if "env_file" in expanded:
                path = os.path.join(self._folder, expanded["env_file"])
                # The file's values first: the entry's own env wins, as in VS Code.
                expanded["env"] = {**_read_env_file(path, server.name), **expanded["env"]}
            timeout = options["timeout_ms"] or self._defaults["timeout_ms"]
            auth = None
            if "auth" in expanded:
                from ._oauth import OAuth

                auth = dataclasses.replace(self._oauth or OAuth(), **expanded["auth"])
            client = McpClient(
                expanded.get("command"),
                expanded.get("args", ()),
                url=expanded.get("url"),
                headers=expanded.get("headers"),
                env=expanded.get("env"),
                cwd=expanded.get("cwd"),
                name=server.name,
                timeout_ms=timeout,
                idle_timeout_ms=self._defaults["idle_timeout_ms"],
                elicitation=self._defaults["elicitation"],
                client_name=self._defaults["client_name"],
                auth=auth,
                max_in_flight=options["max_in_flight"],
                max_queued=options["max_queued"],
            )
            server.client = client
            server.specs = client.list_tools()
            if "exchange" in expanded:
                from ._oauth_exchange import ExchangeSettings, UpstreamExchange

                server.exchange = UpstreamExchange(
                    server.name,
                    expanded["url"],
                    ExchangeSettings(**expanded["exchange"]),
                    auth,
                    client._http.auth if client._http is not None else None,
                )
            server.tools = self._tools_of(server, server.specs)
            client.on_tools_changed(lambda: self._refresh(server))
            if options["skills"]:
                server.skills = self._skills_of(server)
                client.on_notification(
                    lambda method, params: (
                        self._refresh_skills(server)
                        if method == "notifications/resources/list_changed"
                        else None
                    )
                )
            server.status = McpServerStatus(server.name, "connected")
            self._expire_later(server)
        except (McpError, ValueError, TypeError, ImportError) as exc:  # (an extra missing)
            reason = exc.problem if isinstance(exc, McpError) else str(exc)
            server.status = McpServerStatus(server.name, "failed", reason)
            # The record carries the status: a program that shows it itself (the command
            # line does) can leave this record out of its log.
            _log.warning(
                "MCP server %s failed: %s",
                server.name,
                reason,
                extra={"mcp_server_status": server.status},
            )
            if server.client is not None:
                server.client.close()
                server.client = None

    def _namespace(self, server: _Server) -> str | None:
        """The namespace of ``server``'s tools in the gateway's toolkit (its name, made on
        first use), or None for a server whose name cannot name one (docs/tool-search.md)."""
        from ..._views import check_namespace_name  # loaded with the toolkit already

        try:
            name = check_namespace_name(server.name)
        except ValueError:
            return None
        if all(each.name != name for each in self.toolkit.namespaces()):
            about = server.options.get("description") or f"The tools of the MCP server {name!r}."
            self.toolkit.namespace(name, about, defer=server.options.get("defer"))
        return name

    def _skills_of(self, server: _Server) -> list[Skill]:
        """The server's skills (none when it does not serve the extension), named as its
        tools are and offered under its prefixed URIs; a listing that fails is a warning,
        never the server's failure."""
        assert server.client is not None
        name = server.name

        def rename(uri: str) -> str:
            return self.federated_uri(name, uri) or uri

        try:
            skills = server.client._remote_skills(self.tool_prefix(name), rename)
        except McpError as exc:
            _log.warning("MCP server %s: listing its skills failed: %s", name, exc.problem)
            return []
        from .._shared._catalog import gate

        for skill in skills:  # a caller of the gateway needs the server's scopes to see it
            gate(skill._fetch, server.scopes)
        return skills

    def _refresh_skills(self, server: _Server) -> None:
        """The server's resources changed (its skills are resources): list its skills
        again and put the new ones in the toolkit in place of the old."""
        with server.refreshing:
            if server.client is None or self._closed:
                return
            self._register(server, skills=self._skills_of(server))

    def _register(
        self, server: _Server, *, tools: list[Tool] | None = None, skills: list[Skill] | None = None
    ) -> None:
        """Put the server's tools and skills in the toolkit (``tools`` / ``skills``: its new
        lists, in place of those it holds). A name the server held moves from its old item
        to its new one in place, so a reader of the toolkit never finds it missing; one it
        no longer serves goes after; a name another server holds is skipped, with a warning.
        The toolkit's servers are told once per list that changed."""
        with self._lock, self.toolkit._told_once():
            held_tools = set(server.status.tools)
            held = {id(each) for each in self.toolkit.skills()}
            held_skills = [each for each in server.skills if id(each) in held]
            if tools is not None:
                server.tools = tools
                self._relink(server)
            if skills is not None:
                server.skills = skills
            # its tools (those of no openapi tag) and its skills share the server's
            # namespace (a view's filter)
            homeless = any(tool.name not in server.homes for tool in server.tools)
            namespace = self._namespace(server) if homeless or server.skills else None
            for space, about, defer in dict.fromkeys(server.homes.values()):
                if all(each.name != space for each in self.toolkit.namespaces()):
                    self.toolkit.namespace(space, about, defer=defer)
            kept: list[str] = []
            for tool in server.tools:
                mine = tool.name in held_tools
                if tool.name in self.toolkit and not mine:
                    owner = self._owner(tool.name)
                    _log.warning(
                        "MCP server %s: tool %r skipped: server %s already has a tool of that "
                        "name (give one of them a prefix)",
                        server.name,
                        tool.name,
                        owner,
                    )
                    continue
                if not (mine and tool.name in self.toolkit and self.toolkit.get(tool.name) is tool):
                    home = server.homes.get(tool.name)
                    self.toolkit.register(
                        tool, namespace=home[0] if home else namespace, replace=mine
                    )
                kept.append(tool.name)
            for name in held_tools.difference(kept):
                if name in self.toolkit:
                    self.toolkit.remove(name)
            named = {skill.name: skill for skill in held_skills}
            kept_skills: list[str] = []
            for skill in server.skills:
                old = named.pop(skill.name, None)
                if old is skill:  # registered before (its tools were refreshed)
                    kept_skills.append(skill.name)
                    continue
                try:
                    self.toolkit.register(skill, namespace=namespace, replace=old is not None)
                except ValueError as exc:  # a name taken, or a tool named "skill"
                    _log.warning(
                        "MCP server %s: skill %r skipped: %s (give the server another prefix)",
                        server.name,
                        skill.name,
                        exc,
                    )
                    continue
                kept_skills.append(skill.name)
            for gone in named.values():
                self.toolkit.remove(gone)
            if server.status.status == "connected":
                server.status = McpServerStatus(
                    server.name, "connected", None, tuple(kept), tuple(kept_skills)
                )

    def _owner(self, tool_name: str) -> str:
        for server in self._servers.values():
            if tool_name in server.status.tools:
                return server.name
        return "another server"

    def _tools_of(self, server: _Server, specs: list[dict[str, Any]]) -> list[Tool]:
        from .._shared._catalog import gate
        from ._remote import RemoteTool, remote_tool_list

        assert server.client is not None
        prefix = self.tool_prefix(server.name)
        tools = remote_tool_list(server.client, specs, prefix, server.include, server.exclude)
        for tool in tools:
            fn = tool.fn
            if isinstance(fn, RemoteTool):
                gate(fn, server.scopes | server.tool_scopes.get(fn.remote, frozenset()))
                fn.exchange = server.exchange
                fn.stale = functools.partial(self._stale, server)
        return tools

    def _stale(
        self,
        server: _Server,
        remote: str,
        result: ToolResult,
        quick: bool = False,
        slot: bool = False,
    ) -> ToolResult | None:
        """A call of ``server``'s listed tool ``remote`` that the server refused as if it
        did not know the tool (``result``): its tool list may have changed without a
        notification. Its tools are listed again (at most once a second, never in a loop)
        and the toolkit takes the new list (its clients are told); a tool it no longer
        lists is a clear error naming the staleness, anything else ``result``.

        ``quick`` (a call ended on the thread that reads the server): None when a listing
        is due and this caller took the one place to make it (it lists on a thread of its
        own, then calls again with ``slot``, which gives the place back); else the answer
        by the list as it is, at once — no thread per refused call."""
        import time

        client = server.client
        if quick:
            due = client is not None and not self._closed
            if (
                due
                and time.monotonic() >= server.relisted + 1.0
                and server.relist_slot.acquire(blocking=False)
            ):
                return None
            return self._judged(server, remote, result)
        try:
            with server.refreshing:
                now = time.monotonic()
                if client is not None and not self._closed and now >= server.relisted + 1.0:
                    server.relisted = now
                    client._forget_lists("tools/list")
                    try:
                        specs = client.list_tools()
                    except McpError as exc:
                        _log.warning(
                            "MCP server %s: listing its tools failed: %s", server.name, exc
                        )
                        return result
                    if specs != server.specs:
                        server.specs = specs
                        self._register(server, tools=self._tools_of(server, specs))
                        _log.info(
                            "MCP server %s: its tool list changed without notice; tools now %s",
                            server.name,
                            ", ".join(server.status.tools),
                        )
        finally:
            if slot:
                server.relist_slot.release()
        return self._judged(server, remote, result)

    @staticmethod
    def _judged(server: _Server, remote: str, result: ToolResult) -> ToolResult:
        """``result`` when ``server`` lists ``remote``, else the error naming the change."""
        from ..._result import ToolResult

        if any(spec.get("name") == remote for spec in server.specs):
            return result
        return ToolResult(
            f"MCP server {server.name} no longer offers the tool {remote!r} (its tool list "
            "changed without notice); the gateway read its tools again: list them again",
            True,
        )

    def exchange_of(self, name: str) -> UpstreamExchange | None:
        """How a request to server ``name`` made for a caller gets its token (its
        ``auth.exchange``), or ``None``: with the gateway's own credentials.

        Example::

            source.exchange_of("crm")  # <UpstreamExchange for MCP server 'crm'>
        """
        server = self._servers.get(name)
        return server.exchange if server is not None else None

    def scopes_of(self, name: str) -> frozenset[str]:
        """The scopes a caller needs to see anything of server ``name`` (its ``scopes``
        in ``mcp.json``; ``toolScopes`` adds some for single tools).

        Example::

            source.scopes_of("files")  # frozenset({'files:read'})
        """
        server = self._servers.get(name)
        return server.scopes if server is not None else frozenset()

    def _expire_later(self, server: _Server) -> None:
        """When the server's tool list has a ``ttlMs``, look again once it runs out: a
        list that changed without a notification (a stateless server sends none) is
        seen then; one that did not change touches nothing."""
        client = server.client
        until = client.cached_until("tools/list") if client is not None else None
        if until is None or until == float("inf") or self._closed or server.timed:
            return  # (one timer at a time: a list_changed refreshes it meanwhile)
        server.timed = True
        from ..._timers import schedule

        def again() -> None:
            server.timed = False
            self._refresh(server, unless_same=True)

        schedule(relist_at(until), again)

    def _refresh(self, server: _Server, unless_same: bool = False) -> None:
        with server.refreshing:
            client = server.client
            if client is None or self._closed:
                return
            try:
                specs = client.list_tools()
            except McpError as exc:
                _log.warning("MCP server %s: refreshing its tools failed: %s", server.name, exc)
                return
            self._expire_later(server)
            if unless_same and specs == server.specs:
                return
            server.specs = specs
            self._register(server, tools=self._tools_of(server, specs))
        _log.info("MCP server %s: tools now %s", server.name, ", ".join(server.status.tools))

    # ------------------------------------------------------------------ names and URIs

    def tool_prefix(self, name: str) -> str:
        """What server ``name``'s tools (and prompts) are prefixed with: the ``prefix``
        given to this source or in the file, else ``"<name>_"``.

        Example::

            source.tool_prefix("every")  # 'every_'
        """
        server = self._servers.get(name)
        options = server.options if server is not None else {}
        prefix = self._prefix.get(name, options.get("prefix"))
        return f"{name}_" if prefix is None else prefix

    def uri_prefix(self, name: str) -> str:
        """The scheme prefix of server ``name``'s resource URIs: its tool prefix without
        the trailing ``_``, each character a URI scheme cannot hold made ``-`` (``""``
        when its tools keep their own names: its URIs keep theirs too). A federated URI
        is ``<uri prefix>+<the server's URI>``, so ``every+demo://resource/1`` is
        ``demo://resource/1`` on server ``every``. A ``skill://`` URI takes the prefix as
        its first path segment instead (``skill://every/pdf/SKILL.md``), so it stays a
        skill URI that ends in the skill's name (docs/skills.md).

        Example::

            source.uri_prefix("every")  # 'every'
        """
        text = re.sub(r"[^A-Za-z0-9.\-]", "-", self.tool_prefix(name).rstrip("_"))
        if text and not text[0].isalpha():
            text = "mcp-" + text  # a scheme starts with a letter
        return text

    def federated_uri(self, name: str, uri: str) -> str | None:
        """Server ``name``'s URI (or URI template) ``uri`` as this source offers it, or
        ``None`` when it cannot be prefixed reversibly: it does not begin with a literal
        scheme (``{+base}/x`` — a template whose scheme is a variable).

        A skill's URI (``skill://<skill-path>/<file>``) takes the prefix as the first
        segment of its skill path instead: the skills extension wants ``skill://`` URIs
        whose path ends in the skill's name, and a prefix there keeps both (the name and
        the skill's files are left as the server wrote them, digests included).

        Example::

            source.federated_uri("every", "demo://resource/1")  # 'every+demo://resource/1'
            source.federated_uri("every", "skill://pdf/SKILL.md")  # 'skill://every/pdf/SKILL.md'
        """
        prefix = self.uri_prefix(name)
        if not prefix:
            return uri
        if uri.startswith(_SKILL_SCHEME):
            return f"{_SKILL_SCHEME}{prefix}/{uri[len(_SKILL_SCHEME) :]}"
        if not has_scheme(uri):
            return None
        return f"{prefix}+{uri}"

    def upstream_uri(self, uri: str) -> tuple[str, str] | None:
        """The server and its own URI behind the federated ``uri`` (the reverse of
        :meth:`federated_uri`), or ``None`` when no prefixed server's URIs start so.

        Example::

            source.upstream_uri("every+demo://resource/1")  # ('every', 'demo://resource/1')
        """
        for name in self._servers:
            prefix = self.uri_prefix(name)
            if prefix and uri.startswith(prefix + "+"):
                return name, uri[len(prefix) + 1 :]
            skill = f"{_SKILL_SCHEME}{prefix}/"
            if prefix and uri.startswith(skill):
                return name, _SKILL_SCHEME + uri[len(skill) :]
        return None

    def rewrite_links(self) -> None:
        """From now on, a resource link in a tool's result names the federated URI
        (:meth:`federated_uri`): what a gateway that serves the servers' resources
        under prefixed URIs does, so a client of it can read what a tool points at."""
        self._links = True
        with self._lock:
            for server in self._servers.values():
                self._relink(server)

    def _relink(self, server: _Server) -> None:
        if not self._links:
            return
        from ._remote import RemoteTool

        name = server.name

        def links(uri: str) -> str:
            return self.federated_uri(name, uri) or uri

        for tool in server.tools:
            fn = tool.fn
            if isinstance(fn, RemoteTool):
                fn.links = links

    # ------------------------------------------------------------------ state

    def status(self) -> dict[str, McpServerStatus]:
        """Each configured server's status, by name, in file order."""
        return {name: server.status for name, server in self._servers.items()}

    def client(self, name: str) -> McpClient:
        """The connected client of server ``name``. Raises
        :class:`~toolnexus.errors.McpError` naming the connected servers when ``name`` is
        not one of them (an ``openapi`` entry is no MCP server: it has no client)."""
        server = self._servers.get(name)
        if server is None or server.client is None:
            connected = ", ".join(self.clients()) or "none"
            if server is not None and "openapi" in server.options:
                state = "an openapi entry (an OpenAPI document's operations), not an MCP server"
            elif server is None:
                state = "not configured"
            else:
                state = f"{server.status.status}, not connected"
            raise McpError(name, f"{state}; MCP servers connected: {connected}")
        return server.client

    def clients(self) -> dict[str, McpClient]:
        """The client of each connected MCP server, by name, in file order. An entry that
        is no MCP server (``"type": "openapi"``) has none, connected or not.

        Example::

            for name, client in source.clients().items():
                print(name, client.server_capabilities.keys())
        """
        return {
            name: server.client
            for name, server in self._servers.items()
            if server.client is not None and server.status.status == "connected"
        }

    def close(self) -> None:
        """Close every server's client (ending its process or session). Idempotent."""
        self._closed = True
        clients = [s.client for s in self._servers.values() if s.client is not None]
        threads = [
            threading.Thread(target=client.close, name="toolnexus-mcp-close", daemon=True)
            for client in clients
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def __enter__(self) -> McpSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for server in self._servers.values():
            counts[server.status.status] = counts.get(server.status.status, 0) + 1
        shown = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no servers"
        return f"<McpSource {self._where!r}: {shown}, {len(self.toolkit)} tools>"


def relist_at(until: float) -> float:
    """When a list cached until ``until`` (``time.monotonic()``) is looked at again: then,
    but at most once a second, whatever a server asks — its ``ttlMs`` is no reason to be
    polled.

    Example::

        schedule(relist_at(client.cached_until("tools/list")), refresh)
    """
    import time

    return max(until, time.monotonic() + 1.0)


def load_mcp_json(config: Mapping[str, Any] | str | os.PathLike[str], **options: Any) -> McpSource:
    """Read ``config`` (an ``mcp.json`` path or its parsed object) and connect its servers:
    ``McpSource(config, **options).connect()``.

    Example::

        source = load_mcp_json("mcp.json")
        toolkit = source.toolkit
    """
    return McpSource(config, **options).connect()


# ---------------------------------------------------------------------- helpers


def _text(value: Any, where: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty):
        raise InvalidTypeError(f"{where}: must be a non-empty string, got {value!r}")
    return value


def _texts(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidTypeError(f"{where}: must be a list of strings")
    return list(value)


def _text_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidTypeError(f"{where}: must be an object of strings")
    return dict(value)


def _scopes(value: Any, where: str) -> frozenset[str]:
    """A list of scopes, or one space-separated string of them."""
    if isinstance(value, str):
        return frozenset(value.split())
    return frozenset(_texts(value, where))


def _read_auth(
    value: Any, where: str, base: OAuth | None = None, *, machine: bool = False
) -> dict[str, Any]:
    """An entry's ``auth``: the OAuth fields it sets (``"oauth"`` alone sets none), its
    settings checked against each other (:func:`_check_auth`) on top of ``base`` (the
    source's ``oauth``); ``machine``: an OpenAPI credential, a grant without a user."""
    if value == "oauth":
        return {}
    if not isinstance(value, Mapping) or value.get("type") != "oauth":
        raise InvalidValueError(
            f'{where}: must be "oauth" or {{"type": "oauth", "clientId": ..., ...}}, got {value!r}'
        )
    unknown = sorted(set(value) - set(_OAUTH_KEYS) - {"type"})
    if unknown:
        raise InvalidValueError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_OAUTH_KEYS)}"
        )
    fields: dict[str, Any] = {}
    for key, field in _OAUTH_KEYS.items():
        if key not in value:
            continue
        item = value[key]
        if key == "scopes":
            fields[field] = (
                item.split() if isinstance(item, str) else _texts(item, f"{where}.scopes")
            )
        elif key in _OAUTH_FLAGS:
            if not isinstance(item, bool):
                raise InvalidTypeError(f"{where}.{key}: must be true or false, got {item!r}")
            fields[field] = item
        else:
            fields[field] = _text(item, f"{where}.{key}")
    _check_auth(value, where, base, machine)
    if not any(isinstance(item, str) and _VARIABLE.search(item) for item in value.values()):
        # Whatever else OAuth refuses, refused now too (variables are read at connect).
        from ._oauth import OAuth

        try:
            dataclasses.replace(base or OAuth(), **fields)
        except ImportError:
            pass  # an extra that is missing (dpop, a private key): the server's status
        except (InvalidValueError, InvalidTypeError) as exc:
            raise InvalidValueError(f"{where}: {exc}") from None
    return fields


_SIGN_IN_GRANT = "authorization_code"  # a user signs in: the default grant


def _check_auth(value: Mapping[str, Any], where: str, base: OAuth | None, machine: bool) -> None:
    """The ``auth`` settings that must fit together, said with the file's keys: the
    grant, and what it needs. A value holding a ``${NAME}`` is read at connect, so only
    whether it is there counts now. Raises ``ValueError``: ``<where>.<key>: <what is
    wrong>; <how to fix it>``."""
    from ._oauth_grants import GRANTS

    def given(key: str) -> bool:
        if key in value:
            return True
        if base is None:
            return False
        also = {"privateKeyFile": "private_key", "assertionFile": "assertion"}.get(key)
        fields = (_OAUTH_KEYS[key], also) if also else (_OAUTH_KEYS[key],)
        return any(getattr(base, field) is not None for field in fields)

    def literal(key: str) -> str | None:
        item = value.get(key)
        if isinstance(item, str) and not _VARIABLE.search(item):
            return item
        return None

    def problem(key: str, text: str) -> InvalidValueError:
        return InvalidValueError(f"{where}.{key}: {text}")

    grant: str | None = literal("grant")
    if "grant" not in value:
        grant = base.grant if base is not None else _SIGN_IN_GRANT
    if grant is not None and grant not in GRANTS:
        close = grant.replace("-", "_").lower()
        hint = f'"grant": "{close}"' if close in GRANTS else "one of them"
        raise problem(
            "grant",
            f"must be one of {', '.join(GRANTS)}, got {grant!r}; write {hint} (or leave "
            f"grant out for a user's sign-in, {_SIGN_IN_GRANT})",
        )
    if machine and grant not in (None, "client_credentials", "jwt_bearer"):
        got = f"got {grant!r}" if "grant" in value else "it is missing"
        raise problem(
            "grant",
            "an OpenAPI credential is fetched with no user to sign in, so its grant must be "
            f'"client_credentials" or "jwt_bearer", and {got}; write "grant": '
            '"client_credentials" with clientId and clientSecret (or privateKeyFile)',
        )
    if machine and value.get("dpop") is True:
        raise problem("dpop", "an OpenAPI credential's token is not DPoP-bound; drop dpop")
    method = literal("tokenEndpointAuthMethod")
    from ._oauth import AUTH_METHODS

    if method is not None and method not in AUTH_METHODS:
        raise problem(
            "tokenEndpointAuthMethod",
            f"must be one of {', '.join(AUTH_METHODS)}, got {method!r}; or leave it out "
            "for what the authorization server supports",
        )
    keyed = given("privateKeyFile")
    if given("clientSecret") and not given("clientId"):
        raise problem("clientSecret", "a secret belongs to a client: give its clientId too")
    if keyed and not given("clientId"):
        raise problem(
            "privateKeyFile", "the key signs as a registered client: give its clientId too"
        )
    if keyed and given("clientSecret"):
        raise problem(
            "clientSecret", "give clientSecret or privateKeyFile, not both; drop one of them"
        )
    if method == "private_key_jwt" and not keyed:
        raise problem(
            "tokenEndpointAuthMethod",
            '"private_key_jwt" signs with a key: give privateKeyFile (a PEM file\'s path)',
        )
    if grant == "client_credentials" and not (
        given("clientId") and (given("clientSecret") or keyed)
    ):
        missing = "clientId" if not given("clientId") else "clientSecret"
        raise problem(
            missing,
            'is missing: "grant": "client_credentials" signs in as a registered client; '
            "give clientId, and clientSecret or privateKeyFile",
        )
    if grant in ("jwt_bearer", "id_jag") and not given("assertionFile"):
        what = "workload identity token" if grant == "jwt_bearer" else "user's ID token"
        raise problem(
            "assertionFile",
            f'is missing: "grant": "{grant}" presents the {what}; give the path of the '
            "file that holds it",
        )
    if grant == "id_jag":
        for key, about in (
            ("idpTokenEndpoint", "the identity provider's token endpoint"),
            ("clientId", "this client's id at the MCP server's authorization server"),
        ):
            if not given(key):
                raise problem(key, f'is missing: "grant": "id_jag" needs it ({about})')
    if grant is not None and grant != "id_jag":
        for key in ("idpTokenEndpoint", "idpClientId", "idpClientSecret"):
            if key in value:
                raise problem(key, 'is for "grant": "id_jag" only; drop it, or set that grant')
    if grant is not None and grant not in ("jwt_bearer", "id_jag") and "assertionFile" in value:
        raise problem(
            "assertionFile",
            'is for "grant": "jwt_bearer" or "id_jag" only; drop it, or set one of those grants',
        )
    for key, kind in (
        ("idpTokenEndpoint", "secret"),
        ("clientMetadataUrl", "document"),
        ("redirectUri", "redirect"),
    ):
        url = literal(key)
        if url is not None:
            _check_url(url, f"{where}.{key}", kind)


# What a URL setting must be (_check_url): what it is called, and an example of one.
_URL_KINDS = {
    "http": ("an http(s) URL", "https://login.example.com/oauth2/token"),
    "secret": (
        "an https URL (plain http only to loopback: localhost, 127.0.0.1 or [::1]), as "
        "secrets are sent there",
        "https://idp.example.com/oauth2/token",
    ),
    "document": ("an https URL with a path", "https://app.example.com/client.json"),
    "redirect": ("an absolute URL", "http://127.0.0.1:8976/callback"),
}


def _check_url(url: str, where: str, kind: str = "http") -> None:
    """``url`` is a URL of ``kind`` (:data:`_URL_KINDS`) without a fragment: ``http``, an
    http(s) URL with a host; ``secret``, the same, plain http only to loopback;
    ``document``, an https URL with a path (a Client ID Metadata Document's);
    ``redirect``, any absolute URL (a redirect may go to an app). Raises ``ValueError``:
    ``<where>: must be ...; e.g. ...``."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
        parts.port  # noqa: B018 -- a port that is not a number raises ValueError
    except ValueError:
        scheme = host = ""
        parts = None
    fine = bool(scheme) if kind == "redirect" else scheme in ("http", "https") and bool(host)
    if kind == "secret" and scheme == "http":
        from ._oauth import loopback_host

        fine = fine and loopback_host(host)
    if kind == "document":
        fine = fine and scheme == "https" and parts is not None and parts.path not in ("", "/")
    if not fine or parts is None or parts.fragment:
        what, example = _URL_KINDS[kind]
        raise InvalidValueError(
            f"{where}: must be {what}, without a fragment, got {url!r}; e.g. {example!r}"
        )


# auth.exchange's keys, and the ExchangeSettings field each sets.
_EXCHANGE_KEYS = {
    "tokenEndpoint": "token_endpoint",
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "resource": "resource",
    "scopes": "scope",
}


def _read_listing(
    entry: Mapping[str, Any],
    where: str,
    options: dict[str, Any],
    what: str,
    unset: str = "",
) -> tuple[list[str] | None, list[str]]:
    """The keys every ``mcp.json`` entry shares, read into ``options`` — ``timeout``,
    ``disabled``/``enabled``, ``prefix``, ``defer`` (``what`` it holds back, and what
    leaving it out does: ``unset``) — and its ``includeTools``/``excludeTools``."""
    timeout = entry.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0
    ):
        raise InvalidValueError(f"{where}.timeout: must be milliseconds > 0, got {timeout!r}")
    options["timeout_ms"] = timeout
    options["disabled"] = (
        entry.get("disabled", False) is True or entry.get("enabled", True) is False
    )
    include = entry.get("includeTools")
    if include is not None:
        include = _texts(include, f"{where}.includeTools")
    exclude = _texts(entry.get("excludeTools", []), f"{where}.excludeTools")
    if "prefix" in entry:
        options["prefix"] = _text(entry["prefix"], f"{where}.prefix", allow_empty=True)
    defer = entry.get("defer")
    if defer is not None and not isinstance(defer, bool):
        raise InvalidValueError(
            f"{where}.defer: must be true or false (hold {what} back until a search finds "
            f"them{unset}), got {defer!r}"
        )
    options["defer"] = defer
    return include, exclude


def _read_exchange(value: Any, where: str) -> dict[str, str]:
    """An ``auth.exchange``: ``true`` (all from the gateway's sign-in to the server), or
    an object of :data:`_EXCHANGE_KEYS`; the ExchangeSettings fields it sets."""
    if value is True:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidValueError(
            f'{where}: must be true or {{"tokenEndpoint": ..., "clientId": ..., '
            f'"clientSecret": ..., "resource": ..., "scopes": [...]}}, got {value!r}'
        )
    unknown = sorted(set(value) - set(_EXCHANGE_KEYS))
    if unknown:
        raise InvalidValueError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_EXCHANGE_KEYS)}"
        )
    fields: dict[str, str] = {}
    for key, field in _EXCHANGE_KEYS.items():
        if key not in value:
            continue
        item = value[key]
        if key == "scopes":
            scopes = item.split() if isinstance(item, str) else _texts(item, f"{where}.scopes")
            fields[field] = " ".join(scopes)
        else:
            fields[field] = _text(item, f"{where}.{key}")
    endpoint = fields.get("token_endpoint")
    if endpoint is not None and not _VARIABLE.search(endpoint):
        _check_url(endpoint, f"{where}.tokenEndpoint", "secret")
    return fields


def _read_inputs(value: Any, where: str) -> dict[str, dict[str, Any]]:
    """VS Code's ``inputs``: each ``{"id", "type", "description"?, "default"?, ...}``, by id."""
    if not isinstance(value, list) or not all(
        isinstance(item, Mapping) and isinstance(item.get("id"), str) for item in value
    ):
        raise InvalidTypeError(f'{where}: must be a list of objects with an "id"')
    return {item["id"]: dict(item) for item in value}


def _input_variable(input_id: str) -> str:
    """The environment variable that gives VS Code's ``${input:ID}`` its value:
    ``TOOLNEXUS_INPUT_`` and the id in capitals, each other character an underscore."""
    return "TOOLNEXUS_INPUT_" + re.sub(r"[^A-Za-z0-9]", "_", input_id).upper()


def _read_env_file(path: str, server: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, blank lines and an ``export`` prefix allowed; a
    value in matching quotes loses them). A file that cannot be read, or a line that is
    not such a pair, fails the server, naming the file and the line (never a value)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise McpError(server, f"envFile {path!r}: cannot read it: {problem}") from None
    values: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("export "):
            text = text[len("export ") :].lstrip()
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise McpError(
                server, f"envFile {path!r}, line {number}: expected KEY=VALUE (a variable name)"
            )
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values


def _expand(
    options: Mapping[str, Any],
    server: str,
    inputs: Mapping[str, Mapping[str, Any]],
    auth_key: str = "auth",
) -> dict[str, Any]:
    """``options`` with ``${NAME}`` read from the environment, and VS Code's
    ``${input:ID}`` from ``TOOLNEXUS_INPUT_<ID>`` (else the input's ``default``). A
    variable that is not set fails the server, naming the variable (never a value) and
    the key that uses it, as the file spells it (``auth_key``: where the ``auth``
    fields were read, such as ``credentials.oauth``): nothing passes through as the
    literal ``${…}``."""

    def one(text: str, where: str) -> str:
        def value(match: re.Match[str]) -> str:
            if match.group(1) is not None:
                return asked(match.group(1))
            name = match.group(2)
            found = os.environ.get(name)
            if found is None:
                raise McpError(
                    server, f"{where} uses ${{{name}}}, which is not set in the environment"
                )
            return found

        def asked(input_id: str) -> str:
            name = _input_variable(input_id)
            found = os.environ.get(name)
            if found is not None:
                return found
            known = inputs.get(input_id)
            if known is not None and isinstance(known.get("default"), str):
                return str(known["default"])
            about = known.get("description") if known is not None else None
            what = f" ({about})" if isinstance(about, str) and about else ""
            declared = "" if known is not None else "; it is not declared in inputs either"
            raise McpError(
                server,
                f"{where} uses ${{input:{input_id}}}{what}, which needs a value: set it in the "
                f"environment as {name} (toolnexus does not prompt for inputs){declared}",
            )

        return _VARIABLE.sub(value, text)  # one pass: a value is never read for variables

    out: dict[str, Any] = dict(options)
    for key in ("command", "url", "cwd", "env_file"):
        if isinstance(out.get(key), str):
            out[key] = one(out[key], key)
    if "args" in out:
        out["args"] = [one(arg, "args") for arg in out["args"]]
    for key in ("env", "headers"):
        if key in out:
            out[key] = {name: one(text, f"{key}.{name}") for name, text in out[key].items()}
    if "auth" in out:
        auth: dict[str, Any] = {}
        keys = {field: key for key, field in _OAUTH_KEYS.items()}
        for field, value in out["auth"].items():
            where = f"{auth_key}.{keys[field]}"
            if isinstance(value, list):  # scopes: a variable may hold several
                auth[field] = [s for item in value for s in one(item, where).split()]
            elif isinstance(value, bool):  # allowPrivateNetwork, dpop: no variables
                auth[field] = value
            else:
                auth[field] = one(value, where)
        out["auth"] = auth
    if "exchange" in out:
        keys = {field: key for key, field in _EXCHANGE_KEYS.items()}
        out["exchange"] = {
            field: one(value, f"auth.exchange.{keys[field]}")
            for field, value in out["exchange"].items()
        }
    return out
