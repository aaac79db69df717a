"""The HTTP server as an OAuth 2.1 protected resource: :class:`ProtectedResource`.

What the MCP authorization specification asks of a server, in one place for both HTTP
transports (the embedded server and the ASGI app):

- **protected-resource metadata** (RFC 9728) at the well-known path for the endpoint
  (``/.well-known/oauth-protected-resource/mcp``): the resource, its authorization servers
  and scopes;
- a request without a usable token gets ``401`` with ``WWW-Authenticate: Bearer`` naming
  that metadata (``resource_metadata``) and, where it helps, the ``scope`` to ask for;
- **audience binding** (RFC 8707): a token issued for another resource is refused, however
  valid its signature;
- **scopes**: ones every request needs, and ones per tool — a call without them gets
  ``403`` with ``error="insufficient_scope"`` naming what is missing, so a client can step
  up;
- the verified :class:`~toolnexus.Principal` reaches the tool as ``ctx.principal``.

Verification itself is the caller's choice of verifier — a function, or
:class:`~toolnexus.mcp.JwtVerifier` (local, against the authorization server's keys) or
:class:`~toolnexus.mcp.IntrospectionVerifier` (RFC 7662). Expiry and audience are
checked here, the same for all of them. A token is never logged, and never echoed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .._frozen import FrozenDict, sealed
from .._log import LazyLogger
from ..errors import InvalidTypeError, InvalidValueError
from ._oauth_common import PRM_WELL_KNOWN, challenge, protected_resource_metadata_url

if TYPE_CHECKING:
    from .._principal import Principal
    from ._endpoint import Reply

__all__ = ["ProtectedResource", "ResourceGuard", "Verifier"]

_log = LazyLogger("mcp.auth")

Verifier = Callable[[str], "Principal | None"]
"""``verify(token) -> Principal | None``: who a bearer token speaks for, or ``None`` when it
is not valid. Raising means "cannot tell now" (the client gets 503, the error is logged)."""


@sealed
@dataclass(frozen=True, slots=True)
class ProtectedResource:
    """How an MCP HTTP server checks OAuth access tokens: ``ServerOptions(auth=...)``.

    Attributes:
        authorization_servers: the issuer URL(s) of the authorization server(s) whose
            tokens are accepted, as clients should discover them (published in the
            protected-resource metadata).
        verifier: ``verify(token) -> Principal | None`` — a function of yours,
            :class:`~toolnexus.mcp.JwtVerifier` or
            :class:`~toolnexus.mcp.IntrospectionVerifier`.
        resource: this server's canonical URL, the resource tokens are issued for
            (``https://mcp.example.com/mcp``). ``None`` takes it from each request's
            ``Host`` — fine on a laptop; behind a proxy or with TLS, set it.
        audience: the values a token's ``aud`` must include one of; ``None``: the
            resource. (Some identity providers put an API id there instead of a URL.)
        required_scopes: scopes every request needs.
        tool_scopes: scopes a ``tools/call`` of that tool needs, by tool name.
        scopes_supported: the scopes the metadata advertises; ``None``: the required
            scopes and every tool's.
        resource_name: a name for people, in the metadata; ``None``: the server's name.
        leeway_ms: how late an expired token is still accepted (clock skew).

    Raises ``ValueError``/``TypeError`` naming the field for a bad value.

    Example::

        from toolnexus.mcp import JwtVerifier, ProtectedResource, ServerOptions

        auth = ProtectedResource(
            authorization_servers=["https://login.example.com"],
            verifier=JwtVerifier("https://login.example.com"),
            resource="https://mcp.example.com/mcp",
            required_scopes=["mcp:tools"],
            tool_scopes={"deploy": ["deploy:write"]},
        )
        options = ServerOptions(auth=auth)
    """

    authorization_servers: Sequence[str]
    verifier: Verifier
    resource: str | None = None
    audience: Sequence[str] | None = None
    required_scopes: Sequence[str] = ()
    tool_scopes: Mapping[str, Sequence[str]] = field(default_factory=FrozenDict)
    scopes_supported: Sequence[str] | None = None
    resource_name: str | None = None
    leeway_ms: int = 10_000

    def __post_init__(self) -> None:
        servers = self.authorization_servers
        if isinstance(servers, str):
            servers = [servers]
        servers = tuple(servers) if isinstance(servers, Iterable) else ()
        if not servers:
            raise InvalidValueError(
                "ProtectedResource.authorization_servers must name at least one issuer URL, "
                "e.g. ['https://login.example.com']"
            )
        for issuer in servers:
            _url(issuer, "ProtectedResource.authorization_servers")
        object.__setattr__(self, "authorization_servers", servers)
        if not callable(self.verifier):
            raise InvalidTypeError(
                "ProtectedResource.verifier must be callable (token -> Principal | None), "
                f"got {type(self.verifier).__name__}"
            )
        if self.resource is not None:
            _url(self.resource, "ProtectedResource.resource")
        if self.audience is not None:
            object.__setattr__(
                self, "audience", _strings(self.audience, "ProtectedResource.audience")
            )
        object.__setattr__(
            self,
            "required_scopes",
            _scopes(self.required_scopes, "ProtectedResource.required_scopes"),
        )
        if not isinstance(self.tool_scopes, Mapping):
            raise InvalidTypeError(
                "ProtectedResource.tool_scopes must map tool names to lists of scopes"
            )
        object.__setattr__(
            self,
            "tool_scopes",
            FrozenDict(
                {
                    str(name): _scopes(scopes, f"ProtectedResource.tool_scopes[{name!r}]")
                    for name, scopes in self.tool_scopes.items()
                }
            ),
        )
        if self.scopes_supported is not None:
            object.__setattr__(
                self,
                "scopes_supported",
                _scopes(self.scopes_supported, "ProtectedResource.scopes_supported"),
            )
        if self.resource_name is not None and not isinstance(self.resource_name, str):
            raise InvalidTypeError("ProtectedResource.resource_name must be a str or None")
        leeway = self.leeway_ms
        if isinstance(leeway, bool) or not isinstance(leeway, int) or leeway < 0:
            raise InvalidValueError(
                f"ProtectedResource.leeway_ms must be an int >= 0 (milliseconds), got {leeway!r}"
            )


def _url(value: Any, label: str) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{label} must hold URL strings, got {type(value).__name__}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise InvalidValueError(
            f"{label}: {value!r} is not an absolute http(s) URL without a fragment "
            "(e.g. 'https://mcp.example.com/mcp')"
        )
    return value


def _strings(value: Any, label: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable) or not all(isinstance(v, str) and v for v in value):
        raise InvalidTypeError(f"{label} must be a list of non-empty strings")
    return tuple(value)


def _scopes(value: Any, label: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split()
    items = _strings(value, label)
    for item in items:
        if any(char in item for char in ' "\\') or not item.isprintable():
            raise InvalidValueError(f"{label}: {item!r} is not a scope (no spaces or quotes)")
    return tuple(dict.fromkeys(items))


# --------------------------------------------------------------------------- the guard


class ResourceGuard:
    """A :class:`ProtectedResource` at work for one endpoint (``path``): the checks the
    :class:`~toolnexus.mcp._endpoint.Endpoint` runs for each request, and the metadata."""

    def __init__(self, auth: ProtectedResource, path: str, name: str) -> None:
        self.auth = auth
        self.path = path
        self.name = auth.resource_name or name
        supported = auth.scopes_supported
        if supported is None:
            every = [*auth.required_scopes]
            for scopes in auth.tool_scopes.values():
                every.extend(scopes)
            supported = tuple(dict.fromkeys(every))
        self.scopes_supported: tuple[str, ...] = tuple(supported)
        paths = {PRM_WELL_KNOWN + path.rstrip("/")}
        if auth.resource is not None:
            paths.add(urlsplit(protected_resource_metadata_url(auth.resource)).path)
        self.metadata_paths = frozenset(paths)
        self._leeway_s = auth.leeway_ms / 1000

    # ------------------------------------------------------------------ who is it

    def resource(self, headers: Mapping[str, str], scheme: str) -> str:
        """The resource a request is for: the configured one, else ``scheme://Host/path``."""
        configured = self.auth.resource
        if configured is not None:
            return configured
        host = (headers.get("host") or "localhost").strip()
        return urlunsplit((scheme, host, self.path, "", ""))

    def metadata_url(self, headers: Mapping[str, str], scheme: str) -> str:
        return protected_resource_metadata_url(self.resource(headers, scheme))

    def check(
        self, token: str | None, headers: Mapping[str, str], scheme: str
    ) -> tuple[Reply | None, Principal | None]:
        """The refusal for a request with ``token`` (``None``: none was sent), or ``None``
        and the principal it speaks for."""
        metadata = self.metadata_url(headers, scheme)
        required = self.auth.required_scopes
        if token is None:
            return self._refuse(
                401,
                "unauthorized: this server needs an OAuth access token ('Authorization: "
                "Bearer <token>'); its authorization servers are named at " + metadata,
                metadata,
                scope=required,
            ), None
        try:
            principal = self.auth.verifier(token)
        except Exception as exc:
            # The message may quote what was presented (a verifier of the caller's): never log it.
            text = str(exc).replace(token, "<token>") if token else str(exc)
            _log.warning(
                "toolnexus mcp auth: the token verifier failed (%s: %s); answering 503",
                type(exc).__name__,
                text[:300],
            )
            from ._endpoint import Reply

            return Reply(
                503,
                [("content-type", "text/plain; charset=utf-8"), ("retry-after", "5")],
                b"service unavailable: the access token cannot be verified now; retry later\n",
            ), None
        if principal is None:
            return self._invalid("the access token was not accepted", metadata), None
        from .._principal import Principal

        if not isinstance(principal, Principal):
            _log.error(
                "toolnexus mcp auth: the verifier returned %s, not a Principal or None; "
                "refusing the token",
                type(principal).__name__,
            )
            return self._invalid("the access token was not accepted", metadata), None
        expires = principal.expires_at
        if expires is not None and expires + self._leeway_s <= time.time():
            return self._invalid("the access token expired", metadata), None
        audience = self.auth.audience or (self.resource(headers, scheme),)
        if not any(value in principal.audience for value in audience):
            return self._invalid(
                "the access token was issued for another resource (its audience does not "
                f"name {audience[0]})",
                metadata,
            ), None
        missing = [scope for scope in required if scope not in principal.scopes]
        if missing:
            return self._insufficient(missing, required, metadata), None
        return None, principal

    def check_tool(
        self, principal: Principal, tool: str, headers: Mapping[str, str], scheme: str
    ) -> Reply | None:
        """The 403 for a call of ``tool`` that ``principal``'s scopes do not cover."""
        needed = self.auth.tool_scopes.get(tool)
        if not needed:
            return None
        missing = [scope for scope in needed if scope not in principal.scopes]
        if not missing:
            return None
        wanted = tuple(dict.fromkeys([*self.auth.required_scopes, *needed]))
        return self._insufficient(
            missing, wanted, self.metadata_url(headers, scheme), what=f"calling '{tool}'"
        )

    @staticmethod
    def key(principal: Principal) -> str:
        """Who owns a legacy session: the same person through the same client, whatever
        token (a refreshed one too) they present."""
        who = "\0".join(
            [principal.issuer or "", principal.subject or "", principal.client_id or ""]
        )
        return "p:" + hashlib.sha256(who.encode("utf-8")).hexdigest()

    # ------------------------------------------------------------------ answers

    def metadata(self, headers: Mapping[str, str], scheme: str) -> Reply:
        """The protected-resource metadata document (RFC 9728 §2)."""
        from ._endpoint import Reply

        document: dict[str, Any] = {
            "resource": self.resource(headers, scheme),
            "authorization_servers": list(self.auth.authorization_servers),
            "bearer_methods_supported": ["header"],
            "resource_name": self.name,
        }
        if self.scopes_supported:
            document["scopes_supported"] = list(self.scopes_supported)
        body = json.dumps(document, separators=(",", ":")).encode("utf-8")
        return Reply(200, [("content-type", "application/json")], body)

    def _refuse(
        self,
        status: int,
        text: str,
        metadata: str,
        *,
        error: str | None = None,
        description: str | None = None,
        scope: Sequence[str] = (),
    ) -> Reply:
        from ._endpoint import Reply

        params = {
            "resource_metadata": metadata,
            "scope": " ".join(scope) or None,
            "error": error,
            "error_description": description,
        }
        return Reply(
            status,
            [
                ("content-type", "text/plain; charset=utf-8"),
                ("www-authenticate", challenge(params)),
            ],
            text.encode("utf-8") + b"\n",
        )

    def _invalid(self, why: str, metadata: str) -> Reply:
        return self._refuse(
            401,
            f"unauthorized: {why}; get a new one from the authorization server",
            metadata,
            error="invalid_token",
            description=why,
            scope=self.auth.required_scopes,
        )

    def _insufficient(
        self, missing: Sequence[str], wanted: Sequence[str], metadata: str, what: str = ""
    ) -> Reply:
        names = " ".join(missing)
        doing = f" for {what}" if what else ""
        return self._refuse(
            403,
            f"forbidden: the access token lacks the scope(s) {names}{doing}; authorize "
            f"again asking for: {' '.join(wanted)}",
            metadata,
            error="insufficient_scope",
            description=f"missing scope(s){doing}: {names}",
            scope=wanted,
        )
