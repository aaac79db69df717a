"""Answers bound to their question: what a resume must match, and that it happens once.

Everything about binding lives here:

- the **canonical digest** of a call's arguments and of a request;
- the **binding**: a short signed string a host hands out *beside* a pending request (in the
  pending result's ``metadata["binding"]``), naming the tool, the arguments' digest, the
  request's digest, the round and an expiry. The :class:`~toolnexus.Request` wire form stays
  exactly what every port writes; the binding never goes inside it;
- the **keys** that sign bindings: ``Host(secret=...)``, else the environment variable
  ``TOOLNEXUS_SECRET``, else a random key made once per process (enough to resume in the
  same process; a binding from elsewhere is then refused with a message saying how to set
  a key). Several keys may be given: the first signs, all verify, so keys can rotate;
- the **consumed-answers stores** (:class:`AnswerStore`): an answer that passed its checks
  is recorded under its binding, and a second one is refused as ``already answered``.
  :class:`MemoryAnswerStore` (one per process by default, or the store the environment
  variable ``TOOLNEXUS_STORE`` names) and :class:`SqliteAnswerStore` (for resumes across
  processes on one machine) are built here; Postgres and Redis live in
  :mod:`toolnexus.stores`; anything with a ``consume`` method can be plugged in. A store
  that fails (its server is down) refuses the resume and uses nothing up.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from ._log import LazyLogger
from ._result import PENDING_KEY, ToolResult
from .errors import InvalidTypeError, InvalidValueError, StoreUnavailableError, WireFormatError
from .stores._open import process_store

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing costs as much to import as Host
if TYPE_CHECKING:
    import os
    from typing import Any

    from ._suspension import Answer, Request
    from .stores._protocol import AnswerStore

__all__ = [
    "BINDING_KEY",
    "DEFAULT_TTL_S",
    "SECRET_ENV",
    "Binder",
    "arguments_digest",
    "load_secret",
    "read_secret_file",
    "request_digest",
    "store_failed",
]

BINDING_KEY = "binding"
"""The metadata key of a pending result under which its binding travels."""

SECRET_ENV = "TOOLNEXUS_SECRET"
"""The environment variable a host reads its key(s) from when none is given."""

DEFAULT_TTL_S = 7 * 24 * 3600
"""How long a binding stays valid when its request sets no ``expires_at`` (seconds)."""

MIN_KEY_BYTES = 16

_PREFIX = "tnb1"
_log = LazyLogger()  # logging loads with the first record, not with Host
_SCHEME = "tnb1."


# --------------------------------------------------------------------------- digests


def _canonical(value: Any) -> Any:
    # 3 and 3.0 are one JSON number: a resume whose arguments went through another JSON
    # library must not look like another call.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    return value


def _digest_json(value: Any) -> str:
    import hashlib
    import json

    try:
        text = json.dumps(
            _canonical(value),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
            allow_nan=False,
            default=repr,
        )
    except (ValueError, RecursionError) as exc:
        # Unbindable arguments can never match: the digest says so instead of raising.
        text = f"unbindable:{type(exc).__name__}:{id(value)}:{time.monotonic_ns()}"
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def arguments_digest(args: Mapping[str, Any] | str | bytes | None) -> str:
    """A SHA-256 hex digest of a call's arguments as canonical JSON.

    Keys are sorted, whitespace dropped, integral floats written as integers; JSON text is
    parsed first and ``None`` counts as ``{}``, so the same arguments give the same digest
    however they were spelled.

    Example::

        >>> arguments_digest({"b": 1, "a": 2.0}) == arguments_digest('{"a": 2, "b": 1}')
        True
    """
    if args is None:
        return _digest_json({})
    if isinstance(args, (str, bytes, bytearray)):
        import json

        text = args if isinstance(args, str) else bytes(args).decode("utf-8", "replace")
        try:
            return _digest_json(json.loads(text))
        except (ValueError, RecursionError):
            return _digest_json({"unparsed": text})
    return _digest_json(args)


def request_digest(request: Request) -> str:
    """A SHA-256 hex digest of the whole request as issued (every wire field).

    Example::

        >>> from toolnexus import Request
        >>> a = Request("approval", "Deploy?", id="pnd-1")
        >>> request_digest(a) == request_digest(Request("approval", "Deploy!", id="pnd-1"))
        False
    """
    return _digest_json(request.to_dict())


# --------------------------------------------------------------------------- keys


def _as_key(value: object, where: str) -> bytes:
    if isinstance(value, str):
        value = value.strip().encode("utf-8")
    if not isinstance(value, (bytes, bytearray)):
        raise InvalidTypeError(f"{where}: a key must be bytes or str, got {type(value).__name__}")
    if len(value) < MIN_KEY_BYTES:
        raise InvalidValueError(
            f"{where}: a key must be at least {MIN_KEY_BYTES} bytes, got {len(value)}; make one "
            "with: python -c 'import secrets; print(secrets.token_hex(32))'"
        )
    return bytes(value)


def load_secret(
    secret: bytes | str | Sequence[bytes | str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> tuple[bytes, ...]:
    """The signing keys: ``secret`` when given, else those in ``TOOLNEXUS_SECRET``, else ().

    ``secret`` is one key (``bytes`` or ``str``) or a sequence of keys, newest first: the
    first signs, all verify. The variable holds one key or several separated by commas.
    Raises ``ValueError`` naming the source when a key is shorter than 16 bytes.

    Example::

        >>> load_secret(["new-key-0123456789", "old-key-0123456789"], environ={})[0]
        b'new-key-0123456789'
        >>> load_secret(environ={})
        ()
    """
    if secret is None:
        env = environ if environ is not None else _environ()
        text = env.get(SECRET_ENV, "").strip()
        if not text:
            return ()
        return tuple(_as_key(part, SECRET_ENV) for part in text.split(",") if part.strip())
    if isinstance(secret, (bytes, bytearray, str)):
        return (_as_key(secret, "secret"),)
    keys = tuple(_as_key(item, f"secret[{index}]") for index, item in enumerate(secret))
    if not keys:
        raise InvalidValueError("secret: an empty list of keys; give at least one, or None")
    return keys


def read_secret_file(path: str | os.PathLike[str]) -> tuple[bytes, ...]:
    """The keys in a file: one per line, newest first; blank lines and ``#`` comments skipped.

    Raises ``OSError`` when the file cannot be read and ``ValueError`` when it holds no key
    or a key is too short.

    Example::

        keys = read_secret_file("/run/secrets/toolnexus")
    """
    from pathlib import Path

    lines = Path(path).read_text(encoding="utf-8").splitlines()
    keys = tuple(
        _as_key(line, f"{path}, line {number}")
        for number, line in enumerate(lines, 1)
        if line.strip() and not line.lstrip().startswith("#")
    )
    if not keys:
        raise InvalidValueError(f"{path}: no key found; write one key per line (newest first)")
    return keys


def _environ() -> Mapping[str, str]:
    return os.environ


_process_key: bytes | None = None
_process_key_lock = threading.Lock()


def _random_process_key() -> bytes:
    # Made on first use, from the OS's random source (what secrets.token_bytes reads;
    # importing secrets would cost a server's start-up more than the rest of the session).
    global _process_key
    with _process_key_lock:
        if _process_key is None:
            _process_key = os.urandom(32)
        return _process_key


def sign(payload: Mapping[str, Any], key: bytes, prefix: str = _PREFIX) -> str:
    """``prefix.<base64url JSON>.<base64url HMAC-SHA256>``: opaque, ASCII, tamper-evident."""
    import base64
    import hashlib
    import hmac
    import json

    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    body = base64.urlsafe_b64encode(raw.encode("ascii")).rstrip(b"=")
    signed = prefix.encode("ascii") + b"." + body
    tag = base64.urlsafe_b64encode(hmac.new(key, signed, hashlib.sha256).digest()).rstrip(b"=")
    return (signed + b"." + tag).decode("ascii")


def open_signed(
    text: object, keys: Sequence[bytes], prefix: str = _PREFIX
) -> dict[str, Any] | None:
    """The payload :func:`sign` put in ``text`` under one of ``keys``; None when it does not
    verify (another key, another prefix, or changed in any way)."""
    import base64
    import binascii
    import hashlib
    import hmac
    import json

    if not isinstance(text, str) or not text.isascii():
        return None
    version, _, rest = text.encode("ascii").partition(b".")
    body, _, tag = rest.partition(b".")
    if version != prefix.encode("ascii") or not body or not tag:
        return None
    signed = version + b"." + body
    for key in keys:
        expected = base64.urlsafe_b64encode(hmac.new(key, signed, hashlib.sha256).digest())
        if hmac.compare_digest(expected.rstrip(b"="), tag):
            break
    else:
        return None
    try:
        decoded = base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
        payload = json.loads(decoded.decode("ascii"))
    except (binascii.Error, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


# --------------------------------------------------------------------------- the binder


class Refusal:
    """Why a resume was refused before the tool ran.

    ``result`` is the error result to return. ``spent`` is True when the answer was used up
    (a decline, an expiry): the call is over. False when nothing was accepted (a forged,
    edited, foreign, replayed or malformed answer): the question still waits for a right one.
    """

    __slots__ = ("result", "spent")

    def __init__(self, result: ToolResult, *, spent: bool) -> None:
        self.result = result
        self.spent = spent

    def __repr__(self) -> str:
        return f"<Refusal {'spent' if self.spent else 'unspent'} {self.result.output!r}>"


class Accepted:
    """A resume that passed every check: run the tool with ``answer`` (round ``round``).
    ``key``: what the answer store recorded it under (see :meth:`Binder.release`)."""

    __slots__ = ("answer", "key", "request", "round")

    def __init__(
        self, request: Request, answer: Answer, round: int, key: str | None = None
    ) -> None:
        self.request = request
        self.answer = answer
        self.round = round
        self.key = key


ANSWER_UNUSED = "unused"
"""``ToolResult.metadata["answer"]`` of a resumed call whose tool did not use its answer —
it handed it on, and the one it handed it to refused it unused (an MCP server whose store
was down): the host then forgets the answer was used, so the same answer may come again."""


def _refused(text: str) -> Refusal:
    return Refusal(ToolResult.error(f"cannot resume: {text} (the tool was not run)"), spent=False)


STORE_FAILED = (
    "the answer store is unavailable, so the answer could not be checked for single use; "
    "it was not used: send it again once the store is back"
)
"""What a caller (a model, an MCP client) reads when the store failed; the store's URL and
error go to the log only."""


def store_failed(exc: BaseException, what: str) -> Refusal:
    """The refusal of a resume whose answer store raised ``exc``: nothing was used up, so
    the same answer may come again; the details (the store, its error) go to the log."""
    level = _log.warning if isinstance(exc, StoreUnavailableError) else _log.error
    level("cannot resume %s: %s", what, exc, exc_info=not isinstance(exc, StoreUnavailableError))
    return _refused(STORE_FAILED)


class Binder:
    """Issues bindings for pending results and checks resumes against them.

    Args:
        secret: the key(s), newest first (see :func:`load_secret`); ``None`` reads
            ``TOOLNEXUS_SECRET``, and without it a random key made once per process signs.
        store: where used answers are remembered (default: the store the environment
            variable ``TOOLNEXUS_STORE`` names, else one :class:`MemoryAnswerStore` per
            process).
        ttl_s: how long a binding stays valid when its request sets no ``expires_at``.
        clock: returns the time in seconds (``time.time``); tests inject one.

    Example::

        >>> from toolnexus import Answer, Request
        >>> from toolnexus.stores import MemoryAnswerStore
        >>> binder = Binder("a-key-of-at-least-16-bytes", store=MemoryAnswerStore())
        >>> req = Request("approval", "Deploy?")
        >>> parked = binder.bind("deploy", {"env": "prod"}, ToolResult.pending(req))
        >>> binder.check("deploy", {"env": "prod"}, parked, Answer.accept(req)).answer.ok
        True
        >>> print(binder.check("deploy", {"env": "prod"}, parked,
        ...                    Answer.accept(req)).result.output)  # doctest: +ELLIPSIS
        cannot resume: request 'pnd-...' was already answered; ...
    """

    def __init__(
        self,
        secret: bytes | str | Sequence[bytes | str] | None = None,
        *,
        store: AnswerStore | None = None,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        keys = load_secret(secret)
        self.is_configured = bool(keys)
        """True when the keys were given (or came from ``TOOLNEXUS_SECRET``), False when a
        random per-process key signs."""
        self._keys = keys if keys else (_random_process_key(),)
        if store is not None and not callable(getattr(store, "consume", None)):
            raise InvalidTypeError(
                f"store must have a consume(key, expires_at) method (an AnswerStore), "
                f"got {type(store).__name__}"
            )
        self._store: AnswerStore = store if store is not None else process_store()
        if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)) or ttl_s <= 0:
            raise InvalidValueError(f"ttl_s must be a number of seconds > 0, got {ttl_s!r}")
        self._ttl_s = ttl_s
        self._clock = clock

    @property
    def keys(self) -> tuple[bytes, ...]:
        """The keys that verify, newest (the signing one) first."""
        return self._keys

    @property
    def store(self) -> AnswerStore:
        """Where used answers are remembered."""
        return self._store

    # ----------------------------------------------------------------- issuing

    def issue(self, tool: str, args: Any, request: Request, *, round: int = 1) -> str:
        """The binding of ``request`` to the call ``tool(args)``, as a signed string."""
        exp = self._expiry(request)
        payload = {
            "t": tool,
            "a": arguments_digest(args),
            "r": request_digest(request),
            "i": request.id,
            "e": exp,
            "n": round,
            "x": os.urandom(8).hex(),
        }
        token = sign(payload, self._keys[0])
        _remember(request.id, token, exp)
        return token

    def bind(self, tool: str, args: Any, result: ToolResult, *, round: int = 1) -> ToolResult:
        """``result`` with its binding in ``metadata["binding"]`` (not pending: as is)."""
        request = ToolResult.pending_of(result)
        if request is None:
            return result
        token = self.issue(tool, args, request, round=round)
        metadata = dict(result.metadata)
        metadata[BINDING_KEY] = token
        return ToolResult(result.output, True, metadata)

    def hand_back(
        self, tool: str, args: Any, result: ToolResult, round: int, max_rounds: int
    ) -> ToolResult:
        """Loop rule 2's last step for a result handed back to the caller.

        Not pending: as is. Pending after a fresh call (``round`` 0) or after an answer of a
        round below ``max_rounds``: bound to the call for the next round. Pending after the
        last round: ``unresolved: <prompt>``.
        """
        if not result.is_pending:
            return result
        from ._loop_rule import may_ask_again, unresolved

        if not may_ask_again(round, max_rounds):
            return unresolved(result)
        return self.bind(tool, args, result, round=round + 1)

    def _expiry(self, request: Request) -> int:
        if request.expires_at is not None:
            from ._suspension import parse_rfc3339

            return int(parse_rfc3339(request.expires_at).timestamp()) + 1
        return int(self._clock() + self._ttl_s)

    # ----------------------------------------------------------------- checking

    def check(self, tool: str, args: Any, request: object, answer: object) -> Refusal | Accepted:
        """Check a resume of ``tool(args)`` with ``answer`` to ``request``.

        ``request`` is the pending result the host handed out (its binding rides in its
        metadata), its wire dict or JSON, or the bare :class:`Request` (then the binding
        this process issued for that id is used). In order: the binding must verify under
        one of the keys and name this tool, these arguments and this very request; the
        answer must echo the request's id; a request or binding past its expiry is
        refused; an ok answer must fit ``data["schema"]``. Then the answer is consumed —
        a second one for the same binding is refused as ``already answered`` — and a "no"
        (:func:`~toolnexus.decline_reason`) ends the call with
        ``declined/expired: <prompt>``.

        Returns :class:`Accepted` or a :class:`Refusal`; never raises for bad input.
        """
        parsed = _read_parked(request)
        if isinstance(parsed, str):
            return _refused(parsed)
        req, token = parsed
        ans = _read_answer(answer)
        if isinstance(ans, str):
            return _refused(ans)
        if token is None:
            token = _recall(req.id)
            if token is None:
                return _refused(
                    f"request {req.id!r} has no binding and this process did not ask it; "
                    "resume with the pending result the host returned (its "
                    f"metadata[{BINDING_KEY!r}] binds the answer to the call), not a bare or "
                    "made-up request"
                )
        payload = open_signed(token, self._keys)
        if payload is None:
            return _refused(self._foreign(req))
        if payload.get("i") != req.id or payload.get("r") != request_digest(req):
            return _refused(
                f"request {req.id!r} is not the request this binding was issued for (it was "
                "changed, or the binding belongs to another question); resume with the "
                "pending result exactly as the host returned it"
            )
        if payload.get("t") != tool:
            return _refused(
                f"request {req.id!r} was asked by {payload.get('t')!r}, not {tool!r}; an answer "
                "resumes only the tool that asked"
            )
        if payload.get("a") != arguments_digest(args):
            return _refused(
                f"the arguments differ from those of the call that asked {req.id!r}; an answer "
                "resumes only the call that asked, with the same arguments"
            )
        if ans.id != req.id:
            return _refused(
                f"answer id {ans.id!r} does not match request id {req.id!r}; an answer must "
                "echo the id of the request it resolves"
            )
        exp = payload.get("e")
        round_ = payload.get("n")
        if not isinstance(exp, int) or not isinstance(round_, int):
            return _refused(f"the binding of request {req.id!r} is unreadable")
        if req.is_expired() or exp <= self._clock():
            when = req.expires_at if req.expires_at is not None else f"{exp} (Unix time)"
            return Refusal(
                ToolResult.error(
                    f"cannot resume: request {req.id!r} expired at {when}; the answer came too "
                    "late (the tool was not run)",
                    {"reason": "expired"},
                ),
                spent=True,
            )
        from ._loop_rule import declined, schema_problem
        from ._suspension import decline_reason

        reason = decline_reason(req, ans)
        if reason is None:
            problem = schema_problem(req, ans)
            if problem is not None:
                return Refusal(ToolResult.error(problem), spent=False)
        try:
            first = self._store.consume(_consumed_key(token), float(exp))
        except Exception as exc:  # the store's own failure: refuse, never use the answer
            return store_failed(exc, f"request {req.id!r}")
        if not first:
            return _refused(
                f"request {req.id!r} was already answered; an answer resumes a call once. "
                "Call the tool again to ask anew"
            )
        if reason is not None:
            return Refusal(declined(req, reason), spent=True)
        return Accepted(req, ans, round_, _consumed_key(token))

    def release(self, accepted: Accepted, result: ToolResult) -> None:
        """Forget that ``accepted``'s answer was used when the tool's ``result`` says it
        did not use it (``metadata["answer"] == "unused"``), so the same answer may resume
        the call again. A store without ``release`` (one of your own) keeps it used; a
        store that fails is logged, and the answer stays used."""
        if result.metadata.get("answer") != ANSWER_UNUSED or accepted.key is None:
            return
        release = getattr(self._store, "release", None)
        if release is None:
            return
        try:
            release(accepted.key)
        except Exception as exc:  # the store's own failure: the answer stays used
            _log.warning("cannot release the answer to %r: %s", accepted.request.id, exc)

    def _foreign(self, request: Request) -> str:
        if not self.is_configured:
            return (
                f"the binding of request {request.id!r} was not issued by this process (or was "
                "changed), and no key is configured to verify one from elsewhere; give every "
                f"process the same key: Host(secret=...) or the environment variable "
                f"{SECRET_ENV} (the CLI: --secret-file PATH)"
            )
        return (
            f"the binding of request {request.id!r} does not verify under this host's key(s): "
            "it was signed with another key, or changed. Resume where the same key is "
            f"configured (Host(secret=...) or {SECRET_ENV}; to rotate keys, list the new key "
            "first and keep the old one after it)"
        )

    def __repr__(self) -> str:
        source = "configured key" if self.is_configured else "per-process key"
        return f"<Binder {source}, {len(self._keys)} key(s), store={self._store!r}>"


def _consumed_key(token: str) -> str:
    # The tag alone identifies the binding (its payload has a nonce); 43 ASCII characters.
    return token.rpartition(".")[2]


def _read_parked(value: object) -> tuple[Request, str | None] | str:
    """(request, binding or None) from what a caller resumes with, or the problem."""
    from ._suspension import Request

    if isinstance(value, Request):
        return value, None
    if isinstance(value, ToolResult):
        request = ToolResult.pending_of(value)
        if request is None:
            return "that result is not pending (no metadata.pending): there is nothing to resume"
        token = value.metadata.get(BINDING_KEY)
        return request, token if isinstance(token, str) else None
    try:
        if isinstance(value, (str, bytes, bytearray)):
            from . import _wire

            value = _wire.loads_object(value, "Request")
        if not isinstance(value, Mapping):
            raise InvalidTypeError(
                f"request must be the pending ToolResult, a Request, their wire dict or JSON; "
                f"got {type(value).__name__}"
            )
        metadata = value.get("metadata")
        if "isError" in value or (isinstance(metadata, Mapping) and PENDING_KEY in metadata):
            return _read_parked(ToolResult.from_dict(value))
        return Request.from_dict(value), None
    except WireFormatError as exc:
        return str(exc)


def _read_answer(value: object) -> Answer | str:
    """The answer (read by :func:`~toolnexus._loop_rule.coerce_answer`, the one reader), or
    the problem with its wire form; ``TypeError`` for another type."""
    from ._loop_rule import coerce_answer

    try:
        return coerce_answer(value)
    except WireFormatError as exc:
        return str(exc)


# The bindings this process issued, by request id: a caller may resume in-process with the
# bare Request (``ToolResult.pending_of(result)``). Bounded; the oldest go first.
_ISSUED_MAX = 10_000
_issued: dict[str, tuple[str, int]] = {}
_issued_lock = threading.Lock()


def _remember(request_id: str, token: str, exp: int) -> None:
    with _issued_lock:
        _issued.pop(request_id, None)
        _issued[request_id] = (token, exp)
        if len(_issued) > _ISSUED_MAX:
            del _issued[next(iter(_issued))]


def _recall(request_id: str) -> str | None:
    with _issued_lock:
        entry = _issued.get(request_id)
    return None if entry is None else entry[0]
