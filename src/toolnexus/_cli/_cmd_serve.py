"""``toolnexus serve``: REF's tools as an MCP server, on stdin/stdout or (``--http``) over
Streamable HTTP; several REFs (an ``mcp.json`` among them: a gateway) served as one."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ._answer_keys import KEY_ARGS, load_keys, open_store, store_url
from ._common import LOG_LEVELS, REF_ARG, REF_HELP, CliError
from ._parser import Command, Group, argument, byte_size, http_address, milliseconds, rounds
from ._refs import load_union

if TYPE_CHECKING:
    import argparse

    from ..mcp import ServerOptions

_TOKEN_ENV = "TOOLNEXUS_MCP_TOKEN"
_OAUTH_SECRET_ENV = "TOOLNEXUS_OAUTH_CLIENT_SECRET"


def _cmd_serve(options: argparse.Namespace) -> int:
    import contextlib

    # stdout is the protocol channel: whatever the tools' module prints while it loads
    # goes to stderr instead.
    with contextlib.redirect_stdout(sys.stderr):
        toolkit = load_union(options.ref)
    try:
        from ..mcp import serve_stdio
    except ImportError as exc:
        raise CliError(f"the MCP server is not available in this build ({exc})") from None
    if options.http is not None:
        return _serve_http(toolkit, options)
    return int(serve_stdio(toolkit, _server_options(options)))


def _server_options(options: argparse.Namespace) -> ServerOptions:
    """The :class:`~toolnexus.mcp.ServerOptions` the ``serve`` command line describes:
    every field it sets is set here."""
    from ..mcp import ServerOptions

    settings: dict[str, Any] = {"timeout_ms": options.timeout, "max_rounds": options.max_rounds}
    if options.name is not None:
        settings["name"] = options.name
    if options.version is not None:
        settings["version"] = options.version
    secret, store = load_keys(options)
    if secret is not None:
        settings["secret"] = secret
    if store is not None:
        settings["answer_store"] = store
    named = store_url(options)
    if named is not None:  # the same place keeps the tasks replicas share
        settings["task_store"] = open_store(*named, tasks=True)
    if options.max_inflight_bytes is not None:
        settings["max_inflight_bytes"] = options.max_inflight_bytes
    if options.search:
        settings["search"] = True
    if options.http is None:
        given = [
            flag
            for flag, value in (
                ("--token-file", options.token_file),
                ("--oauth-issuer", options.oauth_issuer),
                *_oauth_flags(options),
                ("--allow-host", options.allow_host),
                ("--allow-origin", options.allow_origin),
                ("--insecure-no-auth", options.insecure_no_auth),
            )
            if value
        ]
        if given:
            raise CliError(
                f"{_flags(given)} without --http: --token-file, the --oauth-* options, "
                "--allow-host, --allow-origin and --insecure-no-auth need --http (they "
                "set up the HTTP server)"
            )
        return ServerOptions(**settings)
    token = _bearer_token(options)
    if options.oauth_issuer:
        if token is not None:
            raise CliError(
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
    try:
        return ServerOptions(**settings)
    except ValueError as exc:  # a token no header carries
        raise CliError(_http_refusal(exc)) from None


def _bearer_token(options: argparse.Namespace) -> str | None:
    """The token ``--http`` requires: from ``--token-file``, else the environment."""
    if options.token_file is not None:
        try:
            with open(options.token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            raise CliError(
                f"--token-file: cannot read {options.token_file!r} ({exc.strerror})"
            ) from None
        if not token:
            raise CliError(f"--token-file: {options.token_file!r} is empty; put the token in it")
        return token
    if os.environ.get(_TOKEN_ENV, "").strip():
        return os.environ[_TOKEN_ENV].strip()
    return None


def _serve_http(toolkit: Any, options: argparse.Namespace) -> int:
    from ..mcp import serve_http

    host, port = options.http
    server_options = _server_options(options)

    def ready(server: Any) -> None:
        if options.oauth_issuer:
            auth = "OAuth access tokens from " + ", ".join(options.oauth_issuer)
        elif server_options.access.token is not None:
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
        return int(serve_http(toolkit, server_options, host=host, port=port, ready=ready))
    except OSError as exc:
        raise CliError(f"--http: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    except ValueError as exc:  # an unauthenticated network address
        raise CliError(_http_refusal(exc)) from None


def _http_refusal(exc: ValueError) -> str:
    """The line for a setting ``--http`` cannot serve with, in the command line's words."""
    message = str(exc).replace(
        "ServerOptions(insecure_no_auth=True) (--insecure-no-auth)", "--insecure-no-auth"
    )
    return f"--http: {message}"


def _protected_resource(options: argparse.Namespace) -> Any:
    """The ``ProtectedResource`` the ``--oauth-*`` options describe."""
    from ..mcp import IntrospectionVerifier, JwtVerifier, ProtectedResource

    issuers: list[str] = options.oauth_issuer
    if options.oauth_dpop_nonce and not options.oauth_dpop:
        raise CliError(
            "--oauth-dpop-nonce needs --oauth-dpop: the nonce goes in DPoP proofs, which "
            "only --oauth-dpop takes"
        )
    verifier: Any
    try:
        if options.oauth_introspect:
            secret = None
            if options.oauth_client_secret_file:
                try:
                    with open(options.oauth_client_secret_file, encoding="utf-8") as handle:
                        secret = handle.read().strip()
                except OSError as exc:
                    raise CliError(
                        f"--oauth-client-secret-file: cannot read "
                        f"{options.oauth_client_secret_file!r} ({exc.strerror})"
                    ) from None
            elif os.environ.get(_OAUTH_SECRET_ENV, "").strip():
                secret = os.environ[_OAUTH_SECRET_ENV].strip()
            if (options.oauth_client_id is None) != (secret is None):
                raise CliError(
                    "--oauth-introspect: give --oauth-client-id and its secret "
                    f"(--oauth-client-secret-file or ${_OAUTH_SECRET_ENV}) together, or neither"
                )
            verifier = IntrospectionVerifier(
                options.oauth_introspect, client_id=options.oauth_client_id, client_secret=secret
            )
        else:
            if options.oauth_client_id or options.oauth_client_secret_file:
                raise CliError("--oauth-client-id and its secret are for --oauth-introspect")
            if len(issuers) != 1:
                raise CliError(
                    "verifying tokens as JWTs takes one --oauth-issuer; for several, verify "
                    "them by --oauth-introspect"
                )
            verifier = JwtVerifier(issuers[0], jwks_url=options.oauth_jwks)
        tool_scopes: dict[str, list[str]] = {}
        for entry in options.oauth_tool_scope or []:
            name, _, scopes = entry.partition("=")
            if not name or not scopes.strip():
                raise CliError(f"--oauth-tool-scope: expected TOOL=SCOPE[,SCOPE...], got {entry!r}")
            tool_scopes.setdefault(name, []).extend(scopes.replace(",", " ").split())
        return ProtectedResource(
            authorization_servers=issuers,
            verifier=verifier,
            resource=options.oauth_resource,
            audience=options.oauth_audience or None,
            required_scopes=options.oauth_scope or (),
            tool_scopes=tool_scopes,
            dpop=bool(options.oauth_dpop),
            dpop_nonce=bool(options.oauth_dpop_nonce),
        )
    except ImportError as exc:
        raise CliError(f"--oauth-issuer: {exc}") from None
    except ValueError as exc:
        raise CliError(f"--oauth-*: {exc}") from None


def _oauth_flags(options: argparse.Namespace) -> tuple[tuple[str, Any], ...]:
    """The ``--oauth-*`` options that describe the protected resource besides
    ``--oauth-issuer``, each with its value."""
    return (
        ("--oauth-resource", options.oauth_resource),
        ("--oauth-audience", options.oauth_audience),
        ("--oauth-jwks", options.oauth_jwks),
        ("--oauth-introspect", options.oauth_introspect),
        ("--oauth-client-id", options.oauth_client_id),
        ("--oauth-client-secret-file", options.oauth_client_secret_file),
        ("--oauth-scope", options.oauth_scope),
        ("--oauth-tool-scope", options.oauth_tool_scope),
        ("--oauth-dpop", options.oauth_dpop),
        ("--oauth-dpop-nonce", options.oauth_dpop_nonce),
    )


def _flags(given: list[str]) -> str:
    """Flags as a sentence's subject: ``--a``, ``--a and --b``, ``--a, --b and --c``."""
    return given[0] if len(given) == 1 else ", ".join(given[:-1]) + " and " + given[-1]


def _no_oauth_options(options: argparse.Namespace) -> None:
    given = [flag for flag, value in _oauth_flags(options) if value]
    if given:
        verb = "needs" if len(given) == 1 else "need"
        raise CliError(f"{_flags(given)} {verb} --oauth-issuer (the authorization server)")


SERVE = Command(
    "serve",
    help="serve the tools over MCP (stdin/stdout, or HTTP with --http)",
    description="Run an MCP server on stdin/stdout offering REF's tools, until stdin "
    "closes.\nPoint an MCP client's configuration at this command. With --http, serve "
    "Streamable HTTP at http://HOST:PORT/mcp until Ctrl-C or SIGTERM. Several REFs are "
    "served as one (an mcp.json and local tools: a gateway that adds its own).",
    epilog=f"{REF_HELP}\n\nexamples:\n"
    "  toolnexus serve toolnexus.demo:toolkit --name demo --timeout 30000\n"
    "  toolnexus serve toolnexus.demo:toolkit --http 8000 --token-file token.txt\n"
    "  toolnexus serve mcp.json mytools.py:toolkit\n\n"
    f"With --http the token may also come from ${_TOKEN_ENV}.",
    arguments=(
        argument("ref", metavar="REF", nargs="+", help=REF_ARG + " (several: served as one)"),
        argument("--name", help="the server name clients see (default: toolnexus)"),
        argument("--version", help="the server version clients see"),
        argument(
            "--timeout",
            type=milliseconds,
            metavar="MS",
            help="deadline for each call, milliseconds",
        ),
        argument(
            "--log-level",
            type=str.lower,
            default="warning",
            choices=LOG_LEVELS,
            help="what the server logs to stderr (default: warning; --debug means debug)",
        ),
        argument(
            "--max-rounds",
            type=rounds,
            default=1,
            metavar="N",
            help="how many answers one call may take (default 1: a retry that asks again is "
            "'unresolved: <prompt>')",
        ),
        argument(
            "--max-inflight-bytes",
            type=byte_size,
            metavar="BYTES",
            help="the most bytes of tool-call requests running at once (default 64M, stdio "
            "and --http); a request beyond it is answered 'server overloaded'",
        ),
        argument(
            "--search",
            action="store_true",
            help="list only the core tools (defer=False) and the search meta-tools "
            "search_tools and call_tool; the others are found by search "
            "(docs/tool-search.md)",
        ),
        *KEY_ARGS,
        argument(
            "--http",
            type=http_address,
            metavar="[HOST:]PORT",
            help="serve Streamable HTTP at /mcp instead of stdio (host: 127.0.0.1)",
        ),
        argument(
            "--token-file",
            metavar="FILE",
            help="require 'Authorization: Bearer <token>' with the token in FILE "
            f"(or ${_TOKEN_ENV})",
        ),
        Group(
            "OAuth (with --http)",
            "Take OAuth 2.1 access tokens from an authorization server (see docs/auth.md).",
            (
                argument(
                    "--oauth-issuer",
                    action="append",
                    metavar="URL",
                    help="accept access tokens issued by this authorization server (its "
                    "issuer URL)",
                ),
                argument(
                    "--oauth-resource",
                    metavar="URL",
                    help="this server's public URL, e.g. https://mcp.example.com/mcp: the "
                    "resource tokens must be issued for (default: the URL of the --http "
                    "address, never a request's Host; required on 0.0.0.0)",
                ),
                argument(
                    "--oauth-audience",
                    action="append",
                    metavar="AUD",
                    help="accept tokens whose aud names AUD instead of the resource (repeatable)",
                ),
                argument(
                    "--oauth-jwks",
                    metavar="URL",
                    help="the issuer's key set (default: the jwks_uri of its metadata)",
                ),
                argument(
                    "--oauth-introspect",
                    metavar="URL",
                    help="verify tokens by asking this RFC 7662 introspection endpoint "
                    "(instead of checking them as JWTs)",
                ),
                argument(
                    "--oauth-client-id",
                    metavar="ID",
                    help="with --oauth-introspect: this server's client id there",
                ),
                argument(
                    "--oauth-client-secret-file",
                    metavar="FILE",
                    help=f"with --oauth-introspect: its client secret (or ${_OAUTH_SECRET_ENV})",
                ),
                argument(
                    "--oauth-scope",
                    action="append",
                    metavar="SCOPE",
                    help="a scope every request needs (repeatable)",
                ),
                argument(
                    "--oauth-tool-scope",
                    action="append",
                    metavar="TOOL=SCOPE",
                    help="scopes a call of TOOL needs, comma-separated (repeatable): a call "
                    "without them is refused 403 insufficient_scope",
                ),
                argument(
                    "--oauth-dpop",
                    action="store_true",
                    help="also take DPoP-bound tokens (RFC 9449), each request with a fresh "
                    "proof of the token's key; needs the jwt extra",
                ),
                argument(
                    "--oauth-dpop-nonce",
                    action="store_true",
                    help="with --oauth-dpop: require a nonce of this server's in each proof",
                ),
            ),
        ),
        argument(
            "--insecure-no-auth",
            action="store_true",
            help="with --http on an address other than loopback: serve without a token "
            "(anyone who can reach it can call every tool); refused otherwise",
        ),
        argument(
            "--allow-host",
            action="append",
            metavar="HOST",
            help="a Host header to answer besides localhost (repeatable; '*' for any)",
        ),
        argument(
            "--allow-origin",
            action="append",
            metavar="ORIGIN",
            help="an Origin to accept besides localhost, e.g. https://app.example (repeatable)",
        ),
    ),
    handler=_cmd_serve,
)
