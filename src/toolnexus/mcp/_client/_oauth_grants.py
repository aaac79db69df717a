"""What the MCP client's machine grants need: keys, assertions, grant names.

For an agent that signs in with nobody at a browser (:class:`~toolnexus.mcp.OAuth` with
``grant=`` other than the authorization code): a private key for ``private_key_jwt``
(RFC 7523 §2.2: the client's own signed JWT instead of a secret), read from a PEM file or
a function of the caller's each time it is used (a rotated key is picked up), and the
assertion a workload identity or an enterprise identity provider hands over (read the same
way: a Kubernetes projected token file changes under the process).

Signing comes from the ``jwt`` extra (PyJWT with ``cryptography``); nothing here signs by
hand, and no key, secret or assertion reaches a log line or an error message.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from typing import Any

from .._shared._dpop import require_jwt

__all__ = [
    "GRANTS",
    "ID_JAG",
    "ID_TOKEN",
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "client_assertion",
    "read_secret",
]

GRANTS = ("authorization_code", "client_credentials", "jwt_bearer", "id_jag")
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_ASSERTION_LIFETIME_S = 60  # a client assertion is good for one request: a minute


class _GrantProblem(Exception):
    """A key or an assertion could not be read: ``problem`` says which and why (never
    the secret itself)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def read_secret(path: str | None, source: Callable[[], Any] | None, what: str) -> str:
    """The text of ``path`` (read now: a rotated file is picked up) or what ``source()``
    returns (``str`` or ``bytes``), stripped. Raises :class:`_GrantProblem` naming ``what``
    and the file, never the content."""
    if path is not None:
        path = os.path.expanduser(path)
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise _GrantProblem(f"cannot read the {what} file {path}: {reason}") from None
        if not text:
            raise _GrantProblem(f"the {what} file {path} is empty")
        return text
    assert source is not None
    try:
        value = source()
    except Exception as exc:
        raise _GrantProblem(f"the function giving the {what} raised {type(exc).__name__}") from None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str) or not value.strip():
        raise _GrantProblem(f"the function giving the {what} returned no text")
    return value.strip()


def _algorithm(key: Any, preferred: str | None) -> str:
    """The JWS algorithm for ``key``: ``preferred`` when given, else by the key's type."""
    if preferred is not None:
        return preferred
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {"secp384r1": "ES384", "secp521r1": "ES512"}.get(key.curve.name, "ES256")
    raise _GrantProblem(f"the private key is a {type(key).__name__}: use an RSA, EC or Ed25519 key")


def client_assertion(pem: str, client_id: str, audience: str, algorithm: str | None) -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 §3): ``iss`` and ``sub`` the client
    id, ``aud`` the authorization server's issuer, a fresh ``jti``, valid for a minute.
    Raises :class:`_GrantProblem` for a key that cannot be read or used."""
    require_jwt("private_key_jwt")
    import jwt
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise _GrantProblem(
            "the private key is not an unencrypted PEM private key (PKCS#8 or PKCS#1)"
        ) from None
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if not isinstance(
        key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey)
    ):
        raise _GrantProblem(
            f"the private key is a {type(key).__name__}: use an RSA, EC or Ed25519 key"
        )
    alg = _algorithm(key, algorithm)
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": secrets.token_urlsafe(16),
        "iat": now,
        "exp": now + _ASSERTION_LIFETIME_S,
    }
    try:
        return str(jwt.encode(claims, key, algorithm=alg))
    except (jwt.PyJWTError, ValueError, TypeError, NotImplementedError) as exc:
        raise _GrantProblem(
            f"the private key cannot sign with {alg} ({type(exc).__name__}); set "
            "OAuth(signing_algorithm=...) to one that fits the key"
        ) from None
