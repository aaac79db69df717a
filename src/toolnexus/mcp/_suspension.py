"""How a suspension travels over MCP: elicitation requests, their answers, signed state.

A tool's :class:`~toolnexus.Request` becomes an ``elicitation/create`` request (sent to a
legacy client, or embedded in a modern ``InputRequiredResult``); the client's
``accept | decline | cancel`` becomes an :class:`~toolnexus.Answer`. On modern
connections the server keeps nothing between the two requests, so everything the retry
needs rides in ``requestState``, HMAC-signed with a per-process secret: a state this
process did not issue, or one that was changed, never verifies.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from typing import Any

from .._frozen import thaw
from ..suspension import Answer, Request

__all__ = [
    "APPROVAL_FIELD",
    "ANSWER_FIELD",
    "ElicitationShape",
    "answer_from_elicitation",
    "arguments_digest",
    "elicitation_params",
    "open_state",
    "sign_state",
]

APPROVAL_FIELD = "approved"
"""The one boolean field of the form an ``approval`` request is asked with."""

ANSWER_FIELD = "answer"
"""The one text field of the form a request without ``data.schema`` is asked with."""

ElicitationShape = str
"""How a request was asked, so its answer can be read back: ``"schema"`` (the request's
own ``data.schema``), ``"approval"`` (one boolean), ``"answer"`` (one text field) or
``"url"`` (URL mode: the interaction happens out of band)."""

_STATE_VERSION = "v1"
_secret: bytes | None = None
_secret_lock = threading.Lock()


def _process_secret() -> bytes:
    # Created on first use: a server that never suspends never pays for `secrets`.
    global _secret
    with _secret_lock:
        if _secret is None:
            import secrets

            _secret = secrets.token_bytes(32)
        return _secret


def elicitation_params(
    request: Request,
    message: str,
    *,
    form: bool,
    url: bool,
    with_mode: bool,
    with_elicitation_id: bool,
) -> tuple[dict[str, Any], ElicitationShape] | None:
    """The ``elicitation/create`` params that ask ``request``, and how it was asked.

    ``form`` / ``url`` say which modes the client declared; ``with_mode`` adds the
    ``mode`` field (2025-11-25 and later), ``with_elicitation_id`` the URL-mode
    ``elicitationId`` (2025-11-25 only). ``message`` is what a form shows (the pending
    result's output: the prompt, plus the url when there is one). Returns ``None`` when
    the client cannot be asked this question (an ``authorization`` request needs URL
    mode; everything else needs form mode).
    """
    if request.kind == "authorization" and request.url is not None:
        if not url:
            return None
        params: dict[str, Any] = {"mode": "url", "message": request.prompt, "url": request.url}
        if with_elicitation_id:
            params["elicitationId"] = request.id
        return params, "url"
    if not form:
        return None
    schema = _declared_schema(request)
    shape: ElicitationShape = "schema"
    if schema is None:
        if request.kind == "approval":
            shape = "approval"
            schema = {
                "type": "object",
                "properties": {
                    APPROVAL_FIELD: {
                        "type": "boolean",
                        "title": "Approve",
                        "description": request.prompt,
                    }
                },
                "required": [APPROVAL_FIELD],
            }
        else:
            shape = "answer"
            schema = {
                "type": "object",
                "properties": {
                    ANSWER_FIELD: {
                        "type": "string",
                        "title": "Answer",
                        "description": request.prompt,
                    }
                },
                "required": [ANSWER_FIELD],
            }
    params = {"message": message, "requestedSchema": schema}
    if with_mode:
        params = {"mode": "form", **params}
    return params, shape


def _declared_schema(request: Request) -> dict[str, Any] | None:
    data = request.data
    if data is None:
        return None
    schema = data.get("schema")
    if (
        isinstance(schema, Mapping)
        and schema.get("type") == "object"
        and isinstance(schema.get("properties"), Mapping)
    ):
        return dict(thaw(schema))
    return None


def answer_from_elicitation(request: Request, shape: ElicitationShape, result: Any) -> Answer:
    """Read an ``ElicitResult`` (``{"action": ..., "content": ...}``) as the answer to
    ``request``.

    ``accept`` is an ok answer carrying ``content`` as its data (an ``approval`` asked
    with the one boolean field is ok only when that field is true); ``decline`` and
    ``cancel`` are refusals with reason ``"declined"`` / ``"cancelled"``. Raises
    ``ValueError`` saying what is wrong when ``result`` is not an ``ElicitResult``.
    """
    if not isinstance(result, Mapping):
        raise ValueError(f"an elicitation result must be an object, got {_json_type(result)}")
    action = result.get("action")
    if action == "decline":
        return Answer(request.id, False, None, "declined")
    if action == "cancel":
        return Answer(request.id, False, None, "cancelled")
    if action != "accept":
        raise ValueError(
            f"elicitation action must be 'accept', 'decline' or 'cancel', got {action!r}"
        )
    content = result.get("content")
    if content is not None and not isinstance(content, Mapping):
        raise ValueError(f"elicitation content must be an object, got {_json_type(content)}")
    if shape == "url":
        return Answer(request.id, True)
    if shape == "approval":
        if content is not None and content.get(APPROVAL_FIELD) is True:
            return Answer(request.id, True, content)
        return Answer(request.id, False, None, "declined")
    return Answer(request.id, True, content if content is not None else {})


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """A SHA-256 hex digest of ``arguments`` as canonical JSON (sorted keys, compact)."""
    import hashlib

    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sign_state(payload: Mapping[str, Any], secret: bytes | None = None) -> str:
    """Encode ``payload`` (a JSON object) as an opaque, HMAC-SHA256-signed string.

    The text is ``v1.<base64url payload>.<base64url tag>``; :func:`open_state` gives the
    payload back only when the tag verifies under the same secret.
    """
    import base64
    import hashlib
    import hmac

    key = secret if secret is not None else _process_secret()
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body = base64.urlsafe_b64encode(raw.encode("utf-8")).rstrip(b"=")
    signed = _STATE_VERSION.encode("ascii") + b"." + body
    tag = base64.urlsafe_b64encode(hmac.new(key, signed, hashlib.sha256).digest()).rstrip(b"=")
    return (signed + b"." + tag).decode("ascii")


def open_state(text: str, secret: bytes | None = None) -> dict[str, Any] | None:
    """The payload :func:`sign_state` put in ``text``, or ``None`` when ``text`` was not
    issued under this secret or was changed in any way."""
    import base64
    import binascii
    import hashlib
    import hmac

    key = secret if secret is not None else _process_secret()
    try:
        raw_text = text.encode("ascii")
    except UnicodeEncodeError:
        return None
    version, _, rest = raw_text.partition(b".")
    body, _, tag = rest.partition(b".")
    if version != _STATE_VERSION.encode("ascii") or not body or not tag:
        return None
    expected = base64.urlsafe_b64encode(
        hmac.new(key, version + b"." + body, hashlib.sha256).digest()
    ).rstrip(b"=")
    if not hmac.compare_digest(expected, tag):
        return None
    try:
        decoded = base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
        payload = json.loads(decoded.decode("utf-8"))
    except (binascii.Error, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def is_finite_number(value: Any) -> bool:
    """True for an int or float that JSON can carry (not a bool, not NaN or infinite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def _json_type(value: Any) -> str:
    from .._wire import describe

    return describe(value)
