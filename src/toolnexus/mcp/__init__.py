"""Serve a toolkit over MCP (the Model Context Protocol).

:class:`ServerSession` is the protocol without I/O — JSON-RPC messages in, actions out —
for both eras: the modern stateless revision (2026-07-28: per-request ``_meta``,
``server/discover``, ``InputRequiredResult``) and the legacy ``initialize`` revisions
(2024-11-05 … 2025-11-25, server-sent ``elicitation/create``). :func:`serve_stdio` drives
it on stdin/stdout with the tools running on a :class:`~toolnexus.Host`; that is what
``toolnexus serve REF`` runs. :func:`serve_http` / :class:`HttpServer` serve Streamable HTTP
at ``/mcp`` with the standard library (``toolnexus serve REF --http PORT``), and
:func:`asgi_app` is the same endpoint as an ASGI application for uvicorn and friends.

Besides tools, a toolkit may offer resources (:func:`resource`: data by URI or URI
template) and prompts (:func:`prompt`: message templates), with completion for their
arguments. A tool, resource
or prompt that suspends (``ToolResult.pending(request)``) becomes an MCP elicitation, and
the client's answer re-runs it with ``ctx.answer``. A result's parts go out as content blocks
after its text (image, audio, an embedded resource for file bytes, a resource link for a
URL); :func:`result_from_mcp` reads an MCP ``CallToolResult`` back as a ``ToolResult``.
Every server takes its options as one :class:`ServerOptions`, its settings grouped in
small frozen values: :class:`HostOptions`, :class:`TaskOptions`, :class:`HttpOptions`,
:class:`AccessOptions`.

Example::

    from toolnexus import Toolkit, tool
    from toolnexus.mcp import ServerOptions, serve_stdio

    @tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    if __name__ == "__main__":
        raise SystemExit(serve_stdio(Toolkit([add]), ServerOptions(name="calculator")))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._server._options import AccessOptions, HostOptions, HttpOptions, ServerOptions, TaskOptions
from ._server._session import (
    LEGACY_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    Action,
    CancelCall,
    Send,
    ServerSession,
    StartCall,
)
from ._server._stdio import serve_stdio
from ._shared._content import result_from_mcp

if TYPE_CHECKING:
    from ._client._mcp_client import McpClient
    from ._client._oauth import OAuth, OpenApiOAuth
    from ._client._session import ClientSession
    from ._client._source import McpServerStatus, McpSource, load_mcp_json
    from ._client._tokens import FileTokenStore, MemoryTokenStore, TokenStore
    from ._gateway import Federation, federate
    from ._server._asgi import AsgiApp, asgi_app
    from ._server._auth import ProtectedResource
    from ._server._http_server import HttpServer, serve_http
    from ._server._prompts import Prompt, prompt
    from ._server._resources import Resource, resource
    from ._server._verifiers import IntrospectionVerifier, JwtVerifier

__all__ = [
    "LEGACY_PROTOCOL_VERSIONS",
    "MODERN_PROTOCOL_VERSIONS",
    "AccessOptions",
    "Action",
    "AsgiApp",
    "CancelCall",
    "ClientSession",
    "Federation",
    "FileTokenStore",
    "HostOptions",
    "HttpOptions",
    "HttpServer",
    "IntrospectionVerifier",
    "JwtVerifier",
    "McpClient",
    "McpServerStatus",
    "McpSource",
    "MemoryTokenStore",
    "OAuth",
    "OpenApiOAuth",
    "Prompt",
    "ProtectedResource",
    "Resource",
    "Send",
    "ServerOptions",
    "ServerSession",
    "StartCall",
    "TaskOptions",
    "TokenStore",
    "asgi_app",
    "federate",
    "load_mcp_json",
    "prompt",
    "resource",
    "result_from_mcp",
    "serve_http",
    "serve_stdio",
]


def _publish(value: object) -> object:
    """Name ``toolnexus.mcp`` as the home of what it exports (reprs, pickles, docs)."""
    if getattr(value, "__module__", "").startswith(__name__ + "._"):
        value.__module__ = __name__
    return value


for _name in __all__:
    if _name in globals():
        _publish(globals()[_name])
del _name

# The HTTP drivers load on first use: a stdio server never imports http.server.
_LAZY = {
    "HttpServer": "_server._http_server",
    "serve_http": "_server._http_server",
    "AsgiApp": "_server._asgi",
    "asgi_app": "_server._asgi",
    # The client loads on first use too: a server never imports it.
    "ClientSession": "_client._session",
    "McpClient": "_client._mcp_client",
    "McpServerStatus": "_client._source",
    "McpSource": "_client._source",
    "load_mcp_json": "_client._source",
    # The gateway's federation of resources and prompts: above both sides.
    "Federation": "_gateway",
    "federate": "_gateway",
    # Resources and prompts load with the first one made.
    "Prompt": "_server._prompts",
    "prompt": "_server._prompts",
    "Resource": "_server._resources",
    "resource": "_server._resources",
    # OAuth loads on first use: a server without it never imports it.
    "ProtectedResource": "_server._auth",
    "JwtVerifier": "_server._verifiers",
    "IntrospectionVerifier": "_server._verifiers",
    "OAuth": "_client._oauth",
    "OpenApiOAuth": "_client._oauth",
    "TokenStore": "_client._tokens",
    "MemoryTokenStore": "_client._tokens",
    "FileTokenStore": "_client._tokens",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = _publish(getattr(importlib.import_module(f"{__name__}.{module}"), name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)  # the public names, not this module's helpers or private modules
