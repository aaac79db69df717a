"""The HTTP server as an OAuth 2.1 protected resource: :class:`ProtectedResource`.

What the MCP authorization specification asks of a server, in one place for both HTTP
transports (the embedded server and the ASGI app):

- **protected-resource metadata** (RFC 9728) at the well-known path for the endpoint
  (``/.well-known/oauth-protected-resource/mcp``): the resource, its authorization servers
  and scopes;
- a request without a usable token gets ``401`` with ``WWW-Authenticate: Bearer`` naming
  that metadata (``resource_metadata``) and, where it helps, the ``scope`` to ask for;
- **audience binding** (RFC 8707): a token issued for another resource is refused, however
  valid its signature. The resource is the configured one, or the embedded server's own
  URL from the address it listens on — never a request's ``Host``: an attacker chooses
  that, and with it would choose which server's tokens are accepted;
- **scopes**: ones every request needs, and ones per tool — a call without them gets
  ``403`` with ``error="insufficient_scope"`` naming what is missing, so a client can step
  up;
- the verified :class:`~toolnexus.Principal` reaches the tool as ``ctx.principal``.

Verification itself is the caller's choice of verifier — a function, or
:class:`~toolnexus.mcp.JwtVerifier` (local, against the authorization server's keys) or
:class:`~toolnexus.mcp.IntrospectionVerifier` (RFC 7662). Expiry and audience are
checked here, the same for all of them. A token is never logged, and never echoed.

A verifier may wait on the network, so it runs on threads of its own (``_CHECK_THREADS``,
never an event loop's default executor nor the tools' workers). What a client without a
valid token may hold is capped: at most ``_MAX_CHECKS`` checks of tokens never accepted are
queued or run (one per token, however many requests carry it; and no more than half the
embedded server's request threads), at most ``max_checks_per_peer`` of them from one
address, and the queued checks are taken from each address in turn — one more is answered
503 at once. Both outcomes are remembered for
``cache_ms``, by a digest of the token: a client whose token was accepted is served from
memory without waiting behind anyone's check, and a token refused once is refused again
without asking. A token accepted before stays known (by digest, until it expires, at most
``_MAX_REMEMBERED`` of them): when its ``cache_ms`` runs out it is checked again ahead of
every unknown token, within a bound of its own, and served from its last good check
meanwhile for at most another ``cache_ms``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from ..._frozen import FrozenDict, sealed
from ..._log import LazyLogger
from ..._pool import Pool
from ...errors import InvalidTypeError, InvalidValueError
from .._shared._dpop import ALGORITHMS
from .._shared._oauth_common import PRM_WELL_KNOWN, challenge, protected_resource_metadata_url
from .._shared._protocol import authority
from ._exchange import Reply

if TYPE_CHECKING:
    from ..._principal import Principal
    from ._dpop import ProofChecker

__all__ = ["ProtectedResource", "ResourceGuard", "Verifier"]

_log = LazyLogger("mcp.auth")
_CHECK_THREADS = 8  # tokens verified at once, per endpoint
_MAX_CHECKS = 32  # checks of new tokens queued or running; one more gets 503 at once
_MAX_REMEMBERED = 10_000  # outcomes remembered, of each kind (accepted, refused)
_KNOWN_S = 3600.0  # how long a token that names no expiry is remembered as accepted

_UNKNOWN = object()  # no outcome remembered for a token


def _clock() -> float:
    """Now, in seconds since the epoch: the one clock of the guard's memory and expiry."""
    return time.time()


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
            (``https://mcp.example.com/mcp``). ``None``: the embedded server's own URL,
            from the address it listens on (``http://127.0.0.1:8000/mcp``, and for a
            loopback address ``http://localhost:8000/mcp`` too) — never from a request's
            ``Host``. Required by the ASGI app (which cannot know its address) and for a
            server listening on every interface (``0.0.0.0``); set it behind a proxy or
            with TLS.
        audience: the values a token's ``aud`` must include one of; ``None``: the
            resource. (Some identity providers put an API id there instead of a URL.)
        required_scopes: scopes every request needs.
        tool_scopes: scopes a ``tools/call`` of that tool needs, by tool name.
        scopes_supported: the scopes the metadata advertises; ``None``: the required
            scopes and every tool's.
        resource_name: a name for people, in the metadata; ``None``: the server's name.
        leeway_ms: how late an expired token is still accepted (clock skew).
        cache_ms: how long the outcome of checking one token is reused: an accepted
            token for at most this long (never past its expiry), a refused one for this
            long; ``0`` asks the verifier every time. Once it runs out, an accepted token
            is checked again in the background, ahead of tokens never seen, and served
            from its last good check meanwhile — for at most another ``cache_ms`` (a
            token the verifier refuses then is refused from that moment).
        max_checks_per_peer: how many checks of tokens this server has not accepted
            before one client address may have queued or running at once (one more gets
            ``503`` with ``Retry-After: 1``); a request whose token is being checked
            already waits on that check and takes no place, and tokens accepted before
            never count. So one address sending made-up tokens to a slow verifier cannot
            take the checks every other client needs.
        dpop: accept DPoP-bound access tokens (RFC 9449): ``Authorization: DPoP <token>``
            with a ``DPoP`` proof, checked — signed by the key the token's ``cnf.jkt``
            names, for this request's method and URL, carrying the token's hash, fresh
            (``dpop_lifetime_ms``) and never seen before. Bearer tokens are still
            accepted; a bound token presented as a Bearer one never is (with or without
            this).
        dpop_nonce: also require a nonce of this server's in each proof (RFC 9449 §9):
            a proof without a current one gets ``401 use_dpop_nonce`` and the nonce to use
            in ``DPoP-Nonce``; nonces change every ``dpop_lifetime_ms``.
        dpop_lifetime_ms: how old a proof may be (its ``iat``); a proof is remembered
            that long (plus ``leeway_ms``), so a replay within it is refused.

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
    cache_ms: int = 10_000
    max_checks_per_peer: int = 4
    dpop: bool = False
    dpop_nonce: bool = False
    dpop_lifetime_ms: int = 60_000

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
        cache = self.cache_ms
        if isinstance(cache, bool) or not isinstance(cache, int) or cache < 0:
            raise InvalidValueError(
                f"ProtectedResource.cache_ms must be an int >= 0 (milliseconds), got {cache!r}"
            )
        per_peer = self.max_checks_per_peer
        if isinstance(per_peer, bool) or not isinstance(per_peer, int) or per_peer < 1:
            raise InvalidValueError(
                "ProtectedResource.max_checks_per_peer must be an int >= 1 (requests from one "
                f"address waiting for a token check), got {per_peer!r}"
            )
        for label in ("dpop", "dpop_nonce"):
            if not isinstance(getattr(self, label), bool):
                raise InvalidTypeError(f"ProtectedResource.{label} must be True or False")
        if self.dpop_nonce and not self.dpop:
            raise InvalidValueError("ProtectedResource.dpop_nonce needs dpop=True")
        lifetime = self.dpop_lifetime_ms
        if isinstance(lifetime, bool) or not isinstance(lifetime, int) or lifetime <= 0:
            raise InvalidValueError(
                "ProtectedResource.dpop_lifetime_ms must be an int > 0 (milliseconds), got "
                f"{lifetime!r}"
            )
        if self.dpop:
            from .._shared._dpop import require_jwt

            require_jwt("ProtectedResource(dpop=True)")  # now, not at the first request


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


class Unverified:
    """Why a token could not be checked now: the ``503`` its request gets."""

    __slots__ = ("retry_after", "text")

    def __init__(self, retry_after: str, text: str) -> None:
        self.retry_after = retry_after
        self.text = text


_DOWN = Unverified("5", "service unavailable: the access token cannot be verified now; retry later")
_BUSY = Unverified(
    "1",
    "service unavailable: too many access tokens are being verified at once; retry in a moment",
)


class _Check:
    """One token's check, queued or running, and the requests counted waiting for it."""

    __slots__ = ("digest", "future", "known", "token", "waiting")

    def __init__(self, token: str, digest: bytes, *, known: bool) -> None:
        self.token = token
        self.digest = digest
        self.known = known  # the token was accepted before: checked ahead of the others
        self.future: Future[Any] = Future()
        self.waiting: list[str | None] = []  # the address of each request counted


_V = TypeVar("_V")


def _keep(
    table: dict[bytes, _V], digest: bytes, value: _V, now: float, end: Callable[[_V], float]
) -> None:
    """Put ``value`` in ``table`` as its newest entry; a full table first loses the
    entries whose ``end`` passed, then its oldest."""
    table.pop(digest, None)
    if len(table) >= _MAX_REMEMBERED:
        for key in [key for key, held in table.items() if end(held) <= now]:
            del table[key]
        while len(table) >= _MAX_REMEMBERED:
            del table[next(iter(table))]  # the oldest goes
    table[digest] = value


Checked = tuple["Reply | None", "Principal | None"]
"""The refusal for a request (or ``None``) and, when it is accepted, its principal."""


def then(future: Future[Any], step: Callable[[Any], Any]) -> Future[Any]:
    """A future of ``step(result)`` once ``future`` is done: its own, so that cancelling it
    (a client gone) leaves ``future`` to whoever else waits on it."""
    chained: Future[Any] = Future()

    def done(finished: Future[Any]) -> None:
        if not chained.set_running_or_notify_cancel():
            return  # the waiter went away
        try:
            chained.set_result(step(finished.result()))
        except BaseException as exc:  # handed to the waiter, who raises it
            chained.set_exception(exc)

    future.add_done_callback(done)
    return chained


class ResourceGuard:
    """A :class:`ProtectedResource` at work for one endpoint (``path``): the checks the
    :class:`~toolnexus.mcp._server._endpoint.Endpoint` runs for each request, and the metadata."""

    def __init__(
        self, auth: ProtectedResource, path: str, name: str, request_threads: int = 64
    ) -> None:
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
        self._cache_s = auth.cache_ms / 1000
        # This server's URLs, the first the canonical one: the configured resource, else
        # the embedded server's own (see listening()).
        self._resources: tuple[str, ...] = () if auth.resource is None else (auth.resource,)
        self._lock = threading.Lock()
        # Accepted and refused tokens apart, by digest: a flood of made-up tokens never
        # pushes an accepted one out. Accepted: (fresh until, forgotten at, principal);
        # refused: until when.
        self._accepted: dict[bytes, tuple[float, float, Principal]] = {}
        self._refused: dict[bytes, float] = {}
        self._checking: dict[bytes, _Check] = {}  # digest -> its check, queued or running
        self._urgent: deque[_Check] = deque()  # checks of tokens accepted before: first
        # The other checks, by the address that asked first: taken from each in turn.
        self._queued: OrderedDict[str | None, deque[_Check]] = OrderedDict()
        self._known_checks = 0  # checks of tokens accepted before, queued or running
        # A request waiting for its token's check holds a request thread of the embedded
        # server: at most half of them wait, the others serve tokens already accepted;
        # and at most max_checks_per_peer of them come from one address.
        self._max_checks = max(1, min(_MAX_CHECKS, request_threads // 2))
        self._max_per_peer = auth.max_checks_per_peer
        self._waiting = 0  # requests waiting on checks of tokens not accepted before
        self._per_peer: dict[str, int] = {}  # ... by address
        self._pool: Pool | None = None
        self._proofs: ProofChecker | None = None
        if auth.dpop:
            from ._dpop import ProofChecker

            self._proofs = ProofChecker(
                auth.dpop_lifetime_ms / 1000, self._leeway_s, auth.dpop_nonce
            )

    # ------------------------------------------------------------------ which resource

    def listening(self, address: tuple[str, int] | None, scheme: str = "http") -> None:
        """Learn the address the endpoint listens on (``None``: it cannot know, as an ASGI
        app) and, without a configured resource, take the resource from it.

        Raises ``ValueError`` naming ``ProtectedResource(resource=...)`` when no resource
        is configured and none can be derived: an unknown address, or every interface."""
        if self.auth.resource is not None:
            return
        host = address[0] if address is not None else None
        ip = None
        if host is not None:
            try:
                ip = ipaddress.ip_address(host.strip("[]"))
            except ValueError:
                ip = None
        if address is None or ip is None or ip.is_unspecified:
            where = (
                "the ASGI app cannot know the URL its clients reach it by"
                if address is None
                else f"a server listening on {host!r} cannot know which of its names clients use"
            )
            raise InvalidValueError(
                f"ProtectedResource(resource=...) is required here: {where}, and taking "
                "it from each request's Host header would let in tokens issued for another "
                "server. Set resource to the URL clients connect to, e.g. "
                "resource='https://mcp.example.com/mcp' (toolnexus serve: --oauth-resource)"
            )
        port = address[1]
        names = [f"[{ip}]" if ip.version == 6 else str(ip)]
        if ip.is_loopback:
            names.append("localhost")  # what people type; on this machine, this port
        self._resources = tuple(f"{scheme}://{name}:{port}{self.path}" for name in names)

    def resource(self, headers: Mapping[str, str], scheme: str) -> str:
        """The resource a request is for: the configured one; else of this server's own
        URLs the one whose host and port the request's ``Host`` names, or the first. The
        ``Host`` only picks among them: it never makes one up."""
        resources = self._resources
        assert resources, "the endpoint learns its resource in listening(), before serving"
        if len(resources) > 1:
            wanted = authority(headers.get("host") or "", scheme)
            for resource in resources:
                parts = urlsplit(resource)
                if authority(parts.netloc, parts.scheme) == wanted:
                    return resource
        return resources[0]

    def metadata_url(self, headers: Mapping[str, str], scheme: str) -> str:
        return protected_resource_metadata_url(self.resource(headers, scheme))

    # ------------------------------------------------------------------ who is it

    def check(
        self,
        token: str | None,
        headers: Mapping[str, str],
        scheme: str,
        *,
        wait: bool = True,
        method: str = "POST",
        dpop: bool = False,
        peer: str | None = None,
    ) -> Checked | Future[Checked]:
        """The refusal for a request with ``token`` (``None``: none was sent), or ``None``
        and the principal it speaks for. ``dpop``: the token came as ``Authorization:
        DPoP`` (its proof is then checked for ``method`` and this resource's URL).
        ``peer``: the client's address, for ``max_checks_per_peer`` (``None``: not known,
        only the bound on all checks applies).

        A token checked lately is judged from memory at once. Otherwise the verifier runs
        on the guard's threads: ``wait`` waits for it; without ``wait`` the answer is a
        :class:`~concurrent.futures.Future` of it (an event loop awaits that)."""
        if token is None:
            return self.judge(None, None, headers, scheme)
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found, check, new = self._look(token, digest, peer)
        if new:
            self._submit()
        if found is not _UNKNOWN:
            return self.judge(token, found, headers, scheme, method=method, dpop=dpop)
        if check is None:
            return self.judge(token, _BUSY, headers, scheme)
        if wait:
            verdict = check.future.result()
            return self.judge(token, verdict, headers, scheme, method=method, dpop=dpop)
        return then(
            check.future,
            lambda verdict: self.judge(token, verdict, headers, scheme, method=method, dpop=dpop),
        )

    def judge(
        self,
        token: str | None,
        verdict: Any,
        headers: Mapping[str, str],
        scheme: str,
        *,
        method: str = "POST",
        dpop: bool = False,
    ) -> Checked:
        """Judge what the verifier said of ``token`` (``verdict``) for this request:
        expiry, audience and the required scopes, the same for every verifier; then its
        binding (DPoP): a bound token only with a good proof of its key."""
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
        if isinstance(verdict, Unverified):
            return Reply(
                503,
                [
                    ("content-type", "text/plain; charset=utf-8"),
                    ("retry-after", verdict.retry_after),
                ],
                verdict.text.encode("utf-8") + b"\n",
            ), None
        if verdict is None:
            return self._invalid("the access token was not accepted", metadata), None
        principal: Principal = verdict
        expires = principal.expires_at
        if expires is not None and expires + self._leeway_s <= _clock():
            return self._invalid("the access token expired", metadata), None
        audience = self.auth.audience or self._resources
        if not any(value in principal.audience for value in audience):
            return self._invalid(
                "the access token was issued for another resource (its audience does not "
                f"name {audience[0]})",
                metadata,
            ), None
        missing = [scope for scope in required if scope not in principal.scopes]
        if missing:
            return self._insufficient(missing, required, metadata), None
        assert token is not None
        refused = self._bound(principal, token, headers, scheme, method, dpop, metadata)
        if refused is not None:
            return refused, None
        return None, principal

    def _bound(
        self,
        principal: Principal,
        token: str,
        headers: Mapping[str, str],
        scheme: str,
        method: str,
        dpop: bool,
        metadata: str,
    ) -> Reply | None:
        """The refusal of a request whose token and proof do not go together (RFC 9449
        §7): a bound token (``cnf.jkt``) presented as a Bearer one, a Bearer token
        presented as a DPoP one, or a proof that fails :class:`ProofChecker`."""
        cnf = principal.claims.get("cnf")
        jkt = cnf.get("jkt") if isinstance(cnf, Mapping) else None
        if not dpop:
            if jkt is None:
                return None
            return self._invalid(
                "the access token is bound to a DPoP key: present it as 'Authorization: "
                "DPoP <token>' with a DPoP proof",
                metadata,
            )
        proofs = self._proofs
        if proofs is None:
            return self._invalid(
                "this server does not take DPoP-bound tokens: present a Bearer token", metadata
            )
        if not isinstance(jkt, str):
            return self._dpop_refused("the access token is not bound to a DPoP key (no cnf.jkt)")
        from ._dpop import _ProofRefused

        try:
            proofs.check(headers.get("dpop"), method, self.resource(headers, scheme), token, jkt)
        except _ProofRefused as refused:
            return self._dpop_refused(refused.why, refused.nonce)
        return None

    def _dpop_refused(self, why: str, nonce: str | None = None) -> Reply:
        """``401`` with a ``DPoP`` challenge: ``use_dpop_nonce`` and the nonce to use, or
        ``invalid_dpop_proof`` saying what was wrong (RFC 9449 §7.1, §9)."""
        error = "use_dpop_nonce" if nonce is not None else "invalid_dpop_proof"
        params = {
            "error": error,
            "error_description": why,
            "algs": " ".join(ALGORITHMS),
        }
        headers = [
            ("content-type", "text/plain; charset=utf-8"),
            ("www-authenticate", challenge(params, "DPoP")),
        ]
        if nonce is not None:
            headers.append(("dpop-nonce", nonce))
        return Reply(401, headers, f"unauthorized: {why}\n".encode())

    # ------------------------------------------------------------------ checks, remembered

    def _look(self, token: str, digest: bytes, peer: str | None) -> tuple[Any, _Check | None, bool]:
        """What memory says of the token of ``digest`` (its principal, ``None`` when it
        was refused, or ``_UNKNOWN``); the check to wait for when it says nothing (``None``
        when no more may wait); and whether that check is new (to hand to a thread).

        A token accepted before whose ``cache_ms`` ran out is checked again ahead of every
        other (its own queue, its own bound) and served from its last good check meanwhile,
        for at most another ``cache_ms``. Any other token waits its turn: the checks are
        taken from each address in turn, and a request that would pass the bound on waiting
        requests (``_max_checks``, or ``max_checks_per_peer`` for its address) is told the
        checks are full."""
        now = _clock()
        with self._lock:
            held = self._accepted.get(digest)
            if held is not None:
                fresh, forget, principal = held
                if now >= forget:
                    del self._accepted[digest]
                elif now < fresh:
                    return principal, None, False
                else:
                    check, new = self._check_again(token, digest)
                    if now < fresh + self._cache_s:
                        return principal, check, new  # its last good check, while it runs
                    return _UNKNOWN, check, new
            until = self._refused.get(digest)
            if until is not None:
                if now < until:
                    return None, None, False
                del self._refused[digest]
            check = self._checking.get(digest)
            if check is not None:
                # One check per token, however many ask: a client's concurrent calls with
                # its new token wait on it, and take no place of their own.
                return _UNKNOWN, check, False
            if self._waiting >= self._max_checks:
                return _UNKNOWN, None, False
            if peer is not None and self._per_peer.get(peer, 0) >= self._max_per_peer:
                return _UNKNOWN, None, False
            check = _Check(token, digest, known=False)
            self._checking[digest] = check
            queue = self._queued.get(peer)
            if queue is None:
                queue = self._queued[peer] = deque()
            queue.append(check)
            check.waiting.append(peer)  # counted until the check ends
            self._waiting += 1
            if peer is not None:
                self._per_peer[peer] = self._per_peer.get(peer, 0) + 1
            return _UNKNOWN, check, True

    def _check_again(self, token: str, digest: bytes) -> tuple[_Check | None, bool]:
        """The check of a token accepted before: the one running, or a new one at the head
        of the line (``None`` when ``_max_checks`` of them are queued or run already). The
        lock is held."""
        check = self._checking.get(digest)
        if check is not None:
            return check, False
        if self._known_checks >= self._max_checks:
            return None, False
        check = _Check(token, digest, known=True)
        self._checking[digest] = check
        self._urgent.append(check)
        self._known_checks += 1
        return check, True

    def _next(self) -> _Check | None:
        """The check to run next: a token accepted before first, else the oldest of the
        next address in turn. The lock is held."""
        if self._urgent:
            return self._urgent.popleft()
        for peer, queue in self._queued.items():
            check = queue.popleft()
            if queue:
                self._queued.move_to_end(peer)
            else:
                del self._queued[peer]
            return check
        return None

    def _submit(self) -> None:
        """Hand one queued check to the guard's threads (each job runs the next check in
        line: see :meth:`_next`)."""
        with self._lock:
            if self._pool is None:
                self._pool = Pool(_CHECK_THREADS, 0, "toolnexus-token-check", 30.0)
            pool = self._pool
        if pool.submit(self._work) is None:
            return
        # Closed, or no thread could start: one queued check will never run.
        with self._lock:
            check = self._next()
            if check is not None:
                self._ended(check)
        if check is not None:
            check.future.set_result(_DOWN)

    def _work(self) -> None:
        with self._lock:
            check = self._next()
        if check is None:
            return
        verdict = self._verify(check.token)
        with self._lock:
            self._remember(check.digest, verdict)
            self._ended(check)
        check.future.set_result(verdict)

    def _ended(self, check: _Check) -> None:
        """``check`` ran (or never will): its requests no longer count. The lock is held."""
        if self._checking.get(check.digest) is check:
            del self._checking[check.digest]
        if check.known:
            self._known_checks -= 1
        for peer in check.waiting:
            self._waiting -= 1
            if peer is not None:
                left = self._per_peer[peer] - 1
                if left:
                    self._per_peer[peer] = left
                else:
                    del self._per_peer[peer]
        check.waiting.clear()

    def _verify(self, token: str) -> Any:
        """Ask the verifier: its principal, ``None``, or ``_DOWN`` when it raised."""
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
            return _DOWN
        if principal is None:
            return None
        from ..._principal import Principal

        if not isinstance(principal, Principal):
            _log.error(
                "toolnexus mcp auth: the verifier returned %s, not a Principal or None; "
                "refusing the token",
                type(principal).__name__,
            )
            return None
        return principal

    def _remember(self, digest: bytes, verdict: Any) -> None:
        """Keep an outcome: a refusal for ``cache_ms``; an acceptance as fresh for
        ``cache_ms`` and as accepted before until the token expires (``_KNOWN_S`` for one
        that names no expiry). "Cannot tell now" changes nothing: a token accepted before
        keeps its last good check, for its time. The lock is held."""
        if isinstance(verdict, Unverified):
            return
        now = _clock()
        if verdict is None:
            self._accepted.pop(digest, None)  # refused now: never served from memory again
            if self._cache_s > 0:
                _keep(self._refused, digest, now + self._cache_s, now, lambda until: until)
            return
        expires = verdict.expires_at
        forget = now + _KNOWN_S if expires is None else expires + self._leeway_s
        if forget <= now:
            self._accepted.pop(digest, None)
            return
        held = (min(now + self._cache_s, forget), forget, verdict)
        _keep(self._accepted, digest, held, now, lambda kept: kept[1])

    def close(self) -> None:
        """Stop the guard's threads (a check running finishes on its own)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(0)

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

        document: dict[str, Any] = {
            "resource": self.resource(headers, scheme),
            "authorization_servers": list(self.auth.authorization_servers),
            "bearer_methods_supported": ["header"],
            "resource_name": self.name,
        }
        if self._proofs is not None:
            document["dpop_signing_alg_values_supported"] = list(ALGORITHMS)
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
