"""DPoP (RFC 9449) for both sides: a proof made by the client, checked by the server.

A DPoP proof is a JWT the client signs with a key of its own for each HTTP request: its
header carries the public key (``jwk``) and ``typ: dpop+jwt``, its claims the request's
method (``htm``) and URL without query (``htu``), a unique ``jti``, ``iat``, and — with an
access token — ``ath``, the token's SHA-256. An access token bound to that key names its
thumbprint (RFC 7638) as ``cnf.jkt``; a server then serves it only with a fresh proof of
that key, so a stolen token alone is worth nothing.

The signatures and keys come from the ``jwt`` extra (PyJWT with ``cryptography``),
imported on first use; nothing here signs or verifies by hand. What is computed here is
format only: the thumbprint's and ``ath``'s SHA-256 over their defined inputs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ...errors import InvalidValueError

__all__ = [
    "ALGORITHMS",
    "DpopKey",
    "access_token_hash",
    "check_proof",
    "require_jwt",
    "target_uri",
    "thumbprint",
]

ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
"""Asymmetric algorithms a proof may be signed with (never ``none``, never a shared secret)."""
_TYP = "dpop+jwt"
# RFC 7638 §3.2: the members of a public key that its thumbprint covers.
_REQUIRED = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}


class _ProofError(Exception):
    """A DPoP proof was refused: ``reason`` says why (safe to show: never the proof)."""

    def __init__(self, reason: str, *, nonce: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.nonce = nonce  # the refusal is for a missing or stale nonce: use_dpop_nonce


def require_jwt(what: str) -> None:
    """Raise ``ImportError`` with the install hint when PyJWT's crypto backend is missing."""
    try:
        import jwt  # noqa: F401
        from jwt.algorithms import has_crypto
    except ImportError:
        has_crypto = False
    if not has_crypto:
        from ..._extras import install_hint

        raise ImportError(
            f"{what} needs PyJWT with its crypto backend: "
            + install_hint("jwt", "PyJWT[crypto]>=2.8")
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (base64url): what ``cnf.jkt`` names.

    Example::

        >>> thumbprint({"kty": "EC", "crv": "P-256", "x": "a", "y": "b", "kid": "ignored"})
        'RDgNRYDb79jbk-P-ajJnMZumfDir5astRaQ6H-xiOCM'
    """
    kty = jwk.get("kty")
    members = _REQUIRED.get(kty if isinstance(kty, str) else "")
    if members is None or not all(isinstance(jwk.get(m), str) for m in members):
        raise _ProofError(f"the proof's jwk is not a public EC, RSA or OKP key (kty {kty!r})")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(canonical.encode("utf-8")).digest())


def access_token_hash(token: str) -> str:
    """``ath``: the base64url SHA-256 of the access token's ASCII (RFC 9449 §4.2)."""
    return _b64(hashlib.sha256(token.encode("ascii")).digest())


def target_uri(url: str) -> str:
    """``htu``: the URL without query and fragment, scheme and host lower-cased."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", "", ""))


class DpopKey:
    """A client's DPoP key pair (ES256 on P-256): makes proofs; kept as PEM in the
    client's token store with the tokens bound to it."""

    __slots__ = ("_key", "jkt", "jwk")

    def __init__(self, pem: str | None = None) -> None:
        require_jwt("DPoP")
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from jwt.algorithms import ECAlgorithm

        if pem is None:
            self._key = ec.generate_private_key(ec.SECP256R1())
        else:
            loaded = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
            if not isinstance(loaded, ec.EllipticCurvePrivateKey) or not isinstance(
                loaded.curve, ec.SECP256R1
            ):
                raise InvalidValueError("the stored DPoP key is not a P-256 key")
            self._key = loaded
        self.jwk: dict[str, Any] = json.loads(ECAlgorithm.to_jwk(self._key.public_key()))
        self.jwk.pop("kid", None)
        self.jkt = thumbprint(self.jwk)

    def pem(self) -> str:
        """The private key as unencrypted PKCS#8 PEM (for the token store, ``0600``)."""
        from cryptography.hazmat.primitives import serialization

        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")

    def proof(
        self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh proof for one request: its own ``jti``, now as ``iat``."""
        import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": target_uri(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": _TYP, "jwk": self.jwk}
        return str(jwt.encode(claims, self._key, algorithm="ES256", headers=headers))

    def __repr__(self) -> str:
        return f"<DpopKey {self.jkt}>"


def check_proof(
    proof: str,
    method: str,
    url: str,
    *,
    access_token: str | None,
    max_age_s: float,
    leeway_s: float,
    nonce: str | None = None,
) -> tuple[str, str, float]:
    """Check one DPoP proof for a request (RFC 9449 §4.3): its form, signature (with the
    key it carries), ``htm``/``htu``, ``iat`` within ``max_age_s`` (and ``leeway_s`` ahead),
    ``ath`` for ``access_token``, and ``nonce`` when one is required.

    Returns ``(jti, jkt, iat)``: the replay cache's key, the key's thumbprint (to compare
    with the token's ``cnf.jkt``) and when it was made. Raises :class:`_ProofError`."""
    import jwt

    if not isinstance(proof, str) or "," in proof or proof.count(".") != 2:
        raise _ProofError("the DPoP header is not one proof (a JWT)")
    try:
        header = jwt.get_unverified_header(proof)
    except jwt.PyJWTError:
        raise _ProofError("the DPoP proof is not a well-formed JWT") from None
    if header.get("typ") != _TYP:
        raise _ProofError("the DPoP proof's typ is not dpop+jwt")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise _ProofError(f"the DPoP proof's alg {alg!r} is not an asymmetric one accepted here")
    jwk = header.get("jwk")
    if not isinstance(jwk, dict) or any(m in jwk for m in ("d", "p", "q", "dp", "dq", "qi")):
        raise _ProofError("the DPoP proof must carry its public key (jwk), and no private part")
    jkt = thumbprint(jwk)
    try:
        key = jwt.PyJWK(jwk, algorithm=alg).key
        claims = jwt.decode(
            proof,
            key,
            algorithms=[alg],
            options={"verify_aud": False, "verify_exp": False, "verify_iat": False},
        )
    except (jwt.PyJWTError, ValueError, TypeError):
        raise _ProofError("the DPoP proof's signature does not verify with its jwk") from None
    jti = claims.get("jti")
    if not isinstance(jti, str) or not 8 <= len(jti) <= 256:
        raise _ProofError("the DPoP proof has no usable jti")
    if claims.get("htm") != method.upper():
        raise _ProofError(f"the DPoP proof was made for another method, not {method.upper()}")
    htu = claims.get("htu")
    if not isinstance(htu, str) or "?" in htu or "#" in htu:
        raise _ProofError("the DPoP proof's htu is missing, or has a query or fragment")
    if target_uri(htu).rstrip("/") != target_uri(url).rstrip("/"):
        raise _ProofError(f"the DPoP proof was made for another URL, not {target_uri(url)}")
    iat = claims.get("iat")
    now = time.time()
    if isinstance(iat, bool) or not isinstance(iat, (int, float)):
        raise _ProofError("the DPoP proof has no iat")
    if iat > now + leeway_s or iat < now - max_age_s - leeway_s:
        raise _ProofError("the DPoP proof is expired or not yet valid (its iat)", nonce=False)
    if access_token is not None and claims.get("ath") != access_token_hash(access_token):
        raise _ProofError("the DPoP proof's ath does not match the access token")
    if nonce is not None and claims.get("nonce") != nonce:
        raise _ProofError("a fresh DPoP nonce is required", nonce=True)
    return jti, jkt, float(iat)
