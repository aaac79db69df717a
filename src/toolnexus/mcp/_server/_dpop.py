"""A protected MCP server's side of DPoP (RFC 9449): :class:`ProofChecker`.

For each request that presents ``Authorization: DPoP <token>``, the proof in its ``DPoP``
header must be well formed and signed by the key the token is bound to (``cnf.jkt``), for
this request's method and URL, carry the token's hash (``ath``), be fresh, and — with
``ProtectedResource(dpop_nonce=True)`` — carry a nonce this server issued. A proof is
remembered for its lifetime: the same proof sent again (a replay by whoever saw it) is
refused. The memory is bounded: past ``_MAX_SEEN`` proofs alive at once, a new one is
refused (``invalid_dpop_proof``: the client makes a fresh one and tries again later)
rather than letting an old one be forgotten and replayed.

Nonces need no memory: one is the current time window and an HMAC of it under a key
this process made (stdlib :mod:`hmac`); the current and the previous window's are accepted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict

from .._shared._dpop import _ProofError, check_proof

__all__ = ["ProofChecker"]

_MAX_SEEN = 100_000  # proofs remembered at once (each lives dpop_lifetime_ms)


class _ProofRefused(Exception):
    """A request's DPoP proof was refused: ``why`` (for the client; never the proof),
    and ``nonce``: the nonce to retry with when that is what was missing."""

    def __init__(self, why: str, nonce: str | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.nonce = nonce


class ProofChecker:
    """Checks proofs for one endpoint, remembering those it accepted (thread-safe)."""

    def __init__(self, lifetime_s: float, leeway_s: float, nonces: bool) -> None:
        self._lifetime_s = lifetime_s
        self._leeway_s = leeway_s
        self._nonces = nonces
        self._secret = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._seen: OrderedDict[bytes, float] = OrderedDict()  # digest -> forget after

    def check(self, proof: str | None, method: str, url: str, token: str, jkt: str) -> None:
        """Accept the proof for this request, or raise :class:`_ProofRefused`."""
        if not proof:
            raise _ProofRefused("a DPoP-bound token needs a DPoP proof (the DPoP header)")
        try:
            jti, key, iat = check_proof(
                proof,
                method,
                url,
                access_token=token,
                max_age_s=self._lifetime_s,
                leeway_s=self._leeway_s,
                nonce=self.nonce() if self._nonces else None,
            )
        except _ProofError as refused:
            if refused.nonce and self._nonces and self._previous_nonce_ok(proof):
                jti, key, iat = self._recheck(proof, method, url, token)
            else:
                raise _ProofRefused(
                    refused.reason, self.nonce() if refused.nonce else None
                ) from None
        if not hmac.compare_digest(key.encode(), jkt.encode("utf-8", "replace")):
            raise _ProofRefused(
                "the DPoP proof is signed by another key than the one the token is bound to"
            )
        digest = hashlib.sha256(f"{key}\0{jti}".encode()).digest()
        now = time.time()
        with self._lock:
            while self._seen:
                oldest, until = next(iter(self._seen.items()))
                if until > now:
                    break
                del self._seen[oldest]
            if digest in self._seen:
                raise _ProofRefused("the DPoP proof was used before (a replay): make a fresh one")
            if len(self._seen) >= _MAX_SEEN:
                raise _ProofRefused("too many DPoP proofs at once: try again with a fresh one")
            self._seen[digest] = max(now, iat) + self._lifetime_s + 2 * self._leeway_s

    def _previous_nonce_ok(self, proof: str) -> bool:
        """Whether the proof's nonce is the previous window's (made just before a change)."""
        import jwt

        try:
            nonce = jwt.decode(proof, options={"verify_signature": False}).get("nonce")
        except jwt.PyJWTError:
            return False
        return isinstance(nonce, str) and hmac.compare_digest(
            nonce, self._nonce_for(self._window() - 1)
        )

    def _recheck(self, proof: str, method: str, url: str, token: str) -> tuple[str, str, float]:
        try:
            return check_proof(
                proof,
                method,
                url,
                access_token=token,
                max_age_s=self._lifetime_s,
                leeway_s=self._leeway_s,
                nonce=self._nonce_for(self._window() - 1),
            )
        except _ProofError as refused:
            raise _ProofRefused(refused.reason, self.nonce() if refused.nonce else None) from None

    def _window(self) -> int:
        return int(time.time() // self._lifetime_s)

    def _nonce_for(self, window: int) -> str:
        mac = hmac.new(self._secret, str(window).encode(), hashlib.sha256).digest()
        return f"{window}.{base64.urlsafe_b64encode(mac[:18]).decode('ascii')}"

    def nonce(self) -> str:
        """The nonce clients should use now (RFC 9449 §9)."""
        return self._nonce_for(self._window())
