"""Who made a call, as a server verified it: :class:`Principal`.

An MCP server protected by OAuth (``ServerOptions(auth=ProtectedResource(...))``) verifies
each request's access token and hands what it learnt — the subject, the scopes granted,
the client — to the tools it runs, as ``ctx.principal``. The token itself never travels
further than the check: a principal holds no secret.

Loaded on first use (``toolnexus.Principal``, or a server that verifies tokens), never
by ``import toolnexus``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._frozen import FrozenDict, freeze, sealed
from .errors import InvalidTypeError, InvalidValueError

__all__ = ["Principal"]


@sealed
@dataclass(frozen=True, slots=True, repr=False, init=False)  # own __init__ and __repr__
class Principal:
    """The verified identity behind a request: an OAuth access token's subject, scopes and
    client, as the server's verifier read them.

    Attributes:
        subject: who the token speaks for (the ``sub`` claim); ``None`` when the token
            names nobody (a client acting for itself).
        scopes: the scopes the token grants (a space-separated string is split).
        client_id: the OAuth client that obtained the token (``client_id``, ``azp`` or
            ``cid``), if known.
        issuer: the authorization server that issued it (``iss``), if known.
        audience: the resources the token is for (``aud``); the server refuses a token
            whose audience does not name it.
        expires_at: when the token expires, in seconds since the epoch (``exp``); ``None``:
            not said. A server refuses an expired one.
        claims: every claim the verifier saw (read-only), for what a tool needs beyond
            these; never shown in the repr.

    Example::

        >>> alice = Principal("alice", scopes="files:read files:write", client_id="cli")
        >>> alice.has_scopes("files:read"), alice.has_scopes("admin")
        (True, False)
        >>> alice
        <Principal 'alice' scopes=['files:read', 'files:write'] client='cli'>
    """

    subject: str | None
    scopes: frozenset[str]
    client_id: str | None
    issuer: str | None
    audience: tuple[str, ...]
    expires_at: float | None
    claims: Mapping[str, Any] = field(compare=False)

    def __init__(
        self,
        subject: str | None = None,
        scopes: str | Iterable[str] = (),
        client_id: str | None = None,
        issuer: str | None = None,
        audience: str | Iterable[str] = (),
        expires_at: float | None = None,
        claims: Mapping[str, Any] | None = None,
    ) -> None:
        for label, value in (("subject", subject), ("client_id", client_id), ("issuer", issuer)):
            if value is not None and not isinstance(value, str):
                raise InvalidTypeError(
                    f"Principal.{label} must be a str or None, got {type(value).__name__}"
                )
        if isinstance(audience, str):
            audience = (audience,)
        elif not isinstance(audience, Iterable) or isinstance(audience, Mapping):
            raise InvalidTypeError("Principal.audience must be a str or a sequence of str")
        audiences = tuple(audience)
        if not all(isinstance(item, str) for item in audiences):
            raise InvalidTypeError("Principal.audience must be a str or a sequence of str")
        if expires_at is not None and (
            isinstance(expires_at, bool) or not isinstance(expires_at, (int, float))
        ):
            raise InvalidTypeError(
                "Principal.expires_at must be seconds since the epoch (a number) or None, "
                f"got {type(expires_at).__name__}"
            )
        if claims is not None and not isinstance(claims, Mapping):
            raise InvalidTypeError(
                f"Principal.claims must be a mapping, got {type(claims).__name__}"
            )
        set_field = object.__setattr__
        set_field(self, "subject", subject)
        set_field(self, "scopes", _scopes(scopes, "Principal.scopes"))
        set_field(self, "client_id", client_id)
        set_field(self, "issuer", issuer)
        set_field(self, "audience", audiences)
        set_field(self, "expires_at", expires_at)
        set_field(self, "claims", freeze(claims) if claims is not None else FrozenDict())

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> Principal:
        """The principal a token's claims (or an RFC 7662 introspection answer) describe:
        ``sub``, ``scope`` (or ``scp``), ``client_id`` (or ``azp``, ``cid``), ``iss``,
        ``aud``, ``exp``. Claims of the wrong type are left out rather than refused.

        Example::

            >>> Principal.from_claims({"sub": "alice", "scope": "read", "azp": "app"}).client_id
            'app'
        """
        if not isinstance(claims, Mapping):
            raise InvalidTypeError(f"claims must be a mapping, got {type(claims).__name__}")
        scope = claims.get("scope", claims.get("scp"))
        if isinstance(scope, str):
            scopes: Iterable[str] = scope.split()
        elif isinstance(scope, list):
            scopes = [item for item in scope if isinstance(item, str)]
        else:
            scopes = ()
        client = next(
            (
                claims[key]
                for key in ("client_id", "azp", "cid")
                if isinstance(claims.get(key), str)
            ),
            None,
        )
        audience = claims.get("aud")
        if isinstance(audience, str):
            audiences: tuple[str, ...] = (audience,)
        elif isinstance(audience, list):
            audiences = tuple(item for item in audience if isinstance(item, str))
        else:
            audiences = ()
        expires = claims.get("exp")
        subject, issuer = claims.get("sub"), claims.get("iss")
        return cls(
            subject if isinstance(subject, str) else None,
            frozenset(scopes),
            client,
            issuer if isinstance(issuer, str) else None,
            audiences,
            expires
            if isinstance(expires, (int, float)) and not isinstance(expires, bool)
            else None,
            claims,
        )

    def has_scopes(self, *scopes: str) -> bool:
        """True when the token grants every one of ``scopes``.

        Example::

            >>> Principal("bob", scopes=["read"]).has_scopes("read", "write")
            False
        """
        return self.scopes.issuperset(scopes)

    def __repr__(self) -> str:
        client = f" client={self.client_id!r}" if self.client_id is not None else ""
        return f"<Principal {self.subject!r} scopes={sorted(self.scopes)}{client}>"


def _scopes(value: Any, label: str) -> frozenset[str]:
    """A set of scopes from a space-separated string or an iterable of strings."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        items = list(value)
        if all(isinstance(item, str) and item and " " not in item for item in items):
            return frozenset(items)
    raise InvalidValueError(
        f"{label} must be a space-separated str or strings without spaces, got {value!r}"
    )
