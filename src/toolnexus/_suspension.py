"""Human-in-the-loop values: the :class:`Request` a tool parks on and the :class:`Answer`.

Both are frozen, plain data with a fixed wire form, so a host can persist a question,
deliver it anywhere and resume the tool later, even from another process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from . import _wire
from ._frozen import freeze, sealed, thaw
from .errors import InvalidTypeError, InvalidValueError, WireFormatError

# typing and datetime load only where they are needed, to keep `import toolnexus` cheap.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "REASONS",
    "SEVERAL",
    "Answer",
    "Request",
    "answer_problem",
    "decline_reason",
    "new_request_id",
    "parse_rfc3339",
]

REASONS = ("declined", "cancelled", "expired")
"""Why an answer is not ok — the vocabulary every port writes in ``Answer.reason``."""

SEVERAL = "several"
"""The kind of a request that asks several questions at once (:meth:`Request.several`)."""


def new_request_id() -> str:
    """A fresh, unguessable request id: ``pnd-`` and 128 random bits in hex.

    Example::

        >>> new_request_id().startswith("pnd-")
        True
    """
    import os  # the OS's random source, as secrets.token_hex reads it

    return "pnd-" + os.urandom(16).hex()


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or a numeric offset) into an aware datetime.

    Raises ``ValueError`` naming the text when it is not RFC 3339.

    Example::

        >>> parse_rfc3339("2026-01-02T03:04:05Z").year
        2026
    """
    import re
    from datetime import datetime, timedelta, timezone

    match = re.fullmatch(
        r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
        r"(?:([Zz])|([+-])(\d{2}):(\d{2}))",
        text,
    )
    if match is None:
        raise InvalidValueError(
            f"not an RFC 3339 timestamp: {text!r}; expected e.g. '2026-01-02T03:04:05Z' "
            "or '2026-01-02T03:04:05+02:00'"
        )
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or ""
    micro = int((fraction + "000000")[:6])
    if match.group(8):
        tz = timezone.utc
    else:
        sign = -1 if match.group(9) == "-" else 1
        hours, minutes = int(match.group(10)), int(match.group(11))
        if hours > 23 or minutes > 59:
            raise InvalidValueError(f"not an RFC 3339 timestamp: {text!r}; offset out of range")
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    leap = second == 60  # RFC 3339 allows a leap second; datetime does not
    try:
        moment = datetime(year, month, day, hour, minute, 59 if leap else second, micro, tz)
    except ValueError as exc:
        raise InvalidValueError(f"not an RFC 3339 timestamp: {text!r}; {exc}") from None
    return moment + timedelta(seconds=1) if leap else moment


def _require_text(owner: str, name: str, value: object, *, allow_empty: bool) -> None:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{owner}.{name} must be a str, got {type(value).__name__}")
    if not allow_empty and not value:
        raise InvalidValueError(f"{owner}.{name} must not be empty")


def _freeze_mapping(owner: str, name: str, value: object) -> Any:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidTypeError(
            f"{owner}.{name} must be a mapping (a JSON object) or None, got {type(value).__name__}"
        )
    return freeze(value)


@sealed
@dataclass(frozen=True, slots=True, repr=False)  # its own __repr__ below
class Request:
    """A question a tool asks by returning ``ToolResult.pending(request)``.

    Attributes:
        kind: what is asked — an open vocabulary: ``"authorization"`` (a login at
            ``url``, completed out of band), ``"approval"``, ``"input"`` (the answer's
            data is the payload), ``"question"``, ``"sampling"`` (a message from the
            client's model: ``data`` holds MCP's ``messages``, ``maxTokens``,
            ``systemPrompt``, ``modelPreferences``, ...; the answer's data is the
            message), ``"roots"`` (the client's roots: the answer's data is
            ``{"roots": [{"uri", "name"}]}``), ``"several"`` (:meth:`several`), …
        prompt: the text shown to the human (and to the model while it waits).
        id: unique and unguessable; generated (``pnd-`` + 128 random bits) when omitted.
        url: where to go, for ``authorization``.
        data: free JSON object; ``data["schema"]`` may describe the expected
            ``answer.data`` as a flat JSON Schema object (the MCP elicitation shape).
        expires_at: RFC 3339 timestamp after which an answer is no longer accepted.

    Example::

        >>> req = Request("approval", "Deploy to production?")
        >>> req.id.startswith("pnd-"), req.is_expired()
        (True, False)
    """

    kind: str
    prompt: str
    _: dataclasses.KW_ONLY
    id: str = field(default_factory=new_request_id)
    url: str | None = None
    data: Mapping[str, Any] | None = None
    expires_at: str | None = None

    def __post_init__(self) -> None:
        _require_text("Request", "kind", self.kind, allow_empty=False)
        _require_text("Request", "prompt", self.prompt, allow_empty=True)
        _require_text("Request", "id", self.id, allow_empty=False)
        if self.url is not None:
            _require_text("Request", "url", self.url, allow_empty=False)
        object.__setattr__(self, "data", _freeze_mapping("Request", "data", self.data))
        if self.expires_at is not None:
            _require_text("Request", "expires_at", self.expires_at, allow_empty=False)
            try:
                parse_rfc3339(self.expires_at)
            except ValueError as exc:
                raise InvalidValueError(f"Request.expires_at: {exc}") from None

    @classmethod
    def several(
        cls, *requests: Request, prompt: str | None = None, id: str | None = None
    ) -> Request:
        """One request that asks all of ``requests`` at once (kind ``"several"``): answered
        by one :meth:`Answer.several`, so the tool is run again once, with every answer
        (:meth:`Answer.answer_to` reads each). ``prompt`` defaults to the prompts joined.

        Raises ``ValueError`` for fewer than two requests, one that is itself several, or
        two with the same id.

        Example::

            >>> name = Request("input", "Your name?", id="name")
            >>> roots = Request("roots", "Which folders may I read?", id="roots")
            >>> both = Request.several(name, roots)
            >>> both.kind, [each.id for each in both.requests()]
            ('several', ['name', 'roots'])
        """
        if len(requests) < 2:
            raise InvalidValueError(
                f"Request.several() takes two requests or more, got {len(requests)}; "
                "return ToolResult.pending(request) to ask one"
            )
        ids: list[str] = []
        for each in requests:
            if not isinstance(each, Request):
                raise InvalidTypeError(
                    f"Request.several() takes Requests, got {type(each).__name__}"
                )
            if each.kind == SEVERAL:
                raise InvalidValueError("Request.several() takes plain requests, not several")
            if each.id in ids:
                raise InvalidValueError(
                    f"Request.several(): two requests have the id {each.id!r}; give each its own"
                )
            ids.append(each.id)
        text = prompt if prompt is not None else "\n".join(each.prompt for each in requests)
        data = {"requests": [each.to_dict() for each in requests]}
        if id is None:
            return cls(SEVERAL, text, data=data)
        return cls(SEVERAL, text, id=id, data=data)

    def requests(self) -> list[Request]:
        """The requests a ``"several"`` request asks (see :meth:`several`); ``[self]``
        for any other.

        Example::

            >>> Request("approval", "Deploy?", id="a").requests()[0].id
            'a'
        """
        if self.kind != SEVERAL:
            return [self]
        listed = self.data.get("requests") if self.data is not None else None
        if not isinstance(listed, list):
            return []
        return [Request.from_dict(each) for each in listed]

    def is_expired(self, now: datetime | None = None) -> bool:
        """True if ``expires_at`` is set and ``now`` (default: the current UTC time) is at
        or past it.

        Raises ``ValueError`` when ``now`` is a naive datetime (its zone is unknown) and
        ``TypeError`` when it is not a datetime.

        Example::

            >>> from datetime import datetime, timezone
            >>> req = Request("approval", "Deploy?", expires_at="2026-01-02T05:00:00+02:00")
            >>> req.is_expired(datetime(2026, 1, 2, 3, 0, tzinfo=timezone.utc))
            True
        """
        if self.expires_at is None:
            return False
        from datetime import datetime, timezone

        if now is None:
            now = datetime.now(timezone.utc)
        elif not isinstance(now, datetime):
            raise InvalidTypeError(
                f"is_expired(now=...) takes a datetime, got {type(now).__name__}"
            )
        elif now.tzinfo is None or now.utcoffset() is None:
            raise InvalidValueError(
                "is_expired(now=...) needs an aware datetime, e.g. datetime.now(timezone.utc)"
            )
        return now >= parse_rfc3339(self.expires_at)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: keys ``id, kind, prompt, url, data, expiresAt``, unset omitted.

        Returns fresh plain dicts and lists, safe to change.

        Example::

            >>> Request("input", "Which environment?", id="pnd-1").to_dict()
            {'id': 'pnd-1', 'kind': 'input', 'prompt': 'Which environment?'}
        """
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "prompt": self.prompt}
        if self.url is not None:
            out["url"] = self.url
        if self.data is not None:
            out["data"] = thaw(self.data)
        if self.expires_at is not None:
            out["expiresAt"] = self.expires_at
        return out

    def to_json(self) -> str:
        """Compact JSON of :meth:`to_dict`, non-ASCII kept as is (encode it as UTF-8).

        Raises :class:`WireFormatError` when ``data`` holds a value JSON cannot carry.

        Example::

            >>> print(Request("input", "Welche Umgebung?", id="pnd-1").to_json())
            {"id":"pnd-1","kind":"input","prompt":"Welche Umgebung?"}
        """
        return _wire.dumps(self.to_dict(), "Request")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Request:
        """Rebuild a request from its wire form; unknown keys are ignored.

        Raises :class:`WireFormatError` (a ``ValueError``) naming the field at fault.

        Example::

            >>> Request.from_dict({"id": "pnd-1", "kind": "input", "prompt": "?"}).kind
            'input'
        """
        data = _wire.require_object(data, "Request")
        text = "a string"
        rid = _wire.field(data, "id", str, "Request", required=True, expected=text)
        kind = _wire.field(data, "kind", str, "Request", required=True, expected=text)
        prompt = _wire.field(data, "prompt", str, "Request", required=True, expected=text)
        url = _wire.field(data, "url", str, "Request", required=False, expected=text)
        payload = _wire.field(
            data, "data", Mapping, "Request", required=False, expected="an object"
        )
        expires = _wire.field(
            data,
            "expiresAt",
            str,
            "Request",
            required=False,
            expected="an RFC 3339 timestamp string",
        )
        for key, value in (("id", rid), ("kind", kind), ("url", url)):
            if value == "":
                raise WireFormatError("Request", key, 'must be a non-empty string, got string ""')
        if expires is not None:
            try:
                parse_rfc3339(expires)
            except ValueError as exc:
                detail = str(exc).partition("; ")[2]
                if detail.startswith("expected"):
                    detail = ""  # the problem below already says what is expected
                raise WireFormatError(
                    "Request",
                    "expiresAt",
                    'must be an RFC 3339 timestamp such as "2026-01-02T03:04:05Z", '
                    f"got {_wire.describe(expires)}" + (f" ({detail})" if detail else ""),
                ) from None
        return cls(kind, prompt, id=rid, url=url, data=payload, expires_at=expires)

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> Request:
        """Parse :meth:`to_json` output (text or UTF-8 bytes).

        Raises :class:`WireFormatError` (a ``ValueError``) when the text is not JSON, not
        an object, or a field is missing or mistyped.

        Example::

            >>> Request.from_json(b'{"id":"pnd-1","kind":"input","prompt":"?"}').id
            'pnd-1'
        """
        return cls.from_dict(_wire.loads_object(text, "Request"))

    def __repr__(self) -> str:
        # State, not content: the prompt cut short, the url's origin only (a query string
        # may carry a login state or code), data's key names, never its values.
        parts = [f"<Request {self.kind} id={self.id!r} prompt={_cut(self.prompt)!r}"]
        if self.url is not None:
            parts.append(f"url={_origin(self.url)}")
        if self.data is not None:
            parts.append(f"data=[{', '.join(map(str, self.data))}]")
        if self.expires_at is not None:
            parts.append(f"expires_at={self.expires_at}")
        return " ".join(parts) + ">"


@sealed
@dataclass(frozen=True, slots=True, repr=False)  # its own __repr__ below
class Answer:
    """A human's resolution of a :class:`Request`.

    Attributes:
        id: echoes the request's id; a host refuses an answer whose id does not match.
        ok: True when the request was granted or answered.
        data: the answer's payload (for ``input``: the input itself).
        reason: advisory, only when ``ok`` is false: ``"declined"``, ``"cancelled"`` or
            ``"expired"`` (:data:`REASONS`). Anything else raises ``ValueError`` here;
            reading the wire, a reason beside ``ok: true`` is ignored and an unknown one
            reads as ``"declined"`` (a host treats every refusal alike).

    Example::

        >>> req = Request("input", "Which environment?")
        >>> Answer.accept(req, {"env": "staging"}).data["env"]
        'staging'
        >>> Answer.decline(req).reason
        'declined'
    """

    id: str
    ok: bool
    data: Mapping[str, Any] | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        _require_text("Answer", "id", self.id, allow_empty=False)
        if not isinstance(self.ok, bool):
            raise InvalidTypeError(f"Answer.ok must be a bool, got {type(self.ok).__name__}")
        object.__setattr__(self, "data", _freeze_mapping("Answer", "data", self.data))
        if self.reason is not None:
            _require_text("Answer", "reason", self.reason, allow_empty=True)
            if self.ok:
                raise InvalidValueError(
                    f"Answer.reason is only for a refusal (ok=False), got reason={self.reason!r} "
                    "with ok=True; drop the reason or set ok=False"
                )
            if self.reason not in REASONS:
                raise InvalidValueError(
                    f"Answer.reason must be one of {', '.join(map(repr, REASONS))}, "
                    f"got {self.reason!r}"
                )

    @classmethod
    def accept(cls, request: Request, data: Mapping[str, Any] | None = None) -> Answer:
        """An ok answer to ``request``, echoing its id.

        Example::

            >>> req = Request("input", "Which environment?", id="pnd-1")
            >>> Answer.accept(req, {"env": "staging"}).data
            {'env': 'staging'}
        """
        return cls(_request_id(request), True, data)

    @classmethod
    def decline(cls, request: Request, reason: str = "declined") -> Answer:
        """A refusal of ``request``, echoing its id, with an advisory ``reason``.

        Example::

            >>> Answer.decline(Request("approval", "Deploy?", id="pnd-1"), reason="expired")
            <Answer refused (expired) id='pnd-1'>
        """
        return cls(_request_id(request), False, None, reason)

    @classmethod
    def several(cls, request: Request, answers: list[Answer] | tuple[Answer, ...]) -> Answer:
        """The answer to a ``"several"`` request: one answer per request it asks (each
        echoing its own id), kept under ``data["answers"]``; it is ok as a whole, and each
        answer says yes or no for itself.

        Raises ``ValueError`` when ``request`` is not several, or an answer is for a request
        it does not ask.

        Example::

            >>> name = Request("input", "Your name?", id="name")
            >>> roots = Request("roots", "Which folders?", id="roots")
            >>> both = Request.several(name, roots)
            >>> answer = Answer.several(both, [Answer.accept(name, {"name": "Ada"}),
            ...                                Answer.decline(roots)])
            >>> answer.answer_to(name).data["name"], answer.answer_to(roots).ok
            ('Ada', False)
        """
        if not isinstance(request, Request) or request.kind != SEVERAL:
            raise InvalidValueError("Answer.several() answers a request made by Request.several()")
        asked = {each.id for each in request.requests()}
        given: dict[str, Any] = {}
        for answer in answers:
            if not isinstance(answer, Answer):
                raise InvalidTypeError(
                    f"Answer.several() takes Answers, got {type(answer).__name__}"
                )
            if answer.id not in asked:
                raise InvalidValueError(
                    f"Answer.several(): {answer.id!r} is not one of the requests asked "
                    f"({', '.join(sorted(asked))})"
                )
            given[answer.id] = answer.to_dict()
        return cls(request.id, True, {"answers": given})

    def answer_to(self, request: Request) -> Answer | None:
        """The answer this gives ``request``: itself when it echoes its id, else (for the
        answer to a ``"several"`` request) the one it holds for it; ``None`` when none.

        Example::

            >>> ask = Request("input", "Your name?", id="name")
            >>> Answer.accept(ask, {"name": "Ada"}).answer_to(ask).ok
            True
        """
        if not isinstance(request, Request):
            raise InvalidTypeError(f"answer_to() takes a Request, got {type(request).__name__}")
        if self.id == request.id:
            return self
        held = self.data.get("answers") if self.data is not None else None
        found = held.get(request.id) if isinstance(held, Mapping) else None
        if not isinstance(found, Mapping):
            return None
        try:
            return Answer.from_dict(found)
        except WireFormatError:
            return None

    def value(self, key: str, kind: type[_T], default: _T | None = None) -> _T:
        """``data[key]``, checked to be a ``kind`` — the typed way for a tool to read an answer.

        ``data`` is a ``Mapping[str, Any] | None`` (JSON from a person or a client), so
        ``answer.data["env"]`` neither type-checks nor says what went wrong when the key is
        missing. A JSON number is a ``float`` too; a boolean is never an ``int``. ``default``
        is returned when the data has no such key.

        Raises ``ValueError`` naming the key and what was there when the data has no such
        key (and no ``default`` is given) or holds another type (in a tool, that becomes an
        error result).

        Example::

            >>> req = Request("input", "Which environment?", id="pnd-1")
            >>> Answer.accept(req, {"env": "staging"}).value("env", str)
            'staging'
            >>> Answer.accept(req).value("env", str, "unknown")
            'unknown'
        """
        data = self.data or {}
        if key not in data:
            if default is not None:
                return default
            have = ", ".join(repr(k) for k in data) or "nothing"
            raise InvalidValueError(f"the answer's data has no {key!r} (it has {have})")
        found = data[key]
        if kind is float and isinstance(found, int) and not isinstance(found, bool):
            found = float(found)
        if not isinstance(found, kind) or (
            isinstance(found, bool) and kind is not bool and kind is not object
        ):
            raise InvalidValueError(
                f"the answer's {key!r} is {type(found).__name__} {found!r}, "
                f"expected {kind.__name__}"
            )
        return found

    def to_dict(self) -> dict[str, Any]:
        """The wire form: keys ``id, ok, data, reason``, unset omitted.

        Example::

            >>> Answer("pnd-1", False, reason="declined").to_dict()
            {'id': 'pnd-1', 'ok': False, 'reason': 'declined'}
        """
        out: dict[str, Any] = {"id": self.id, "ok": self.ok}
        if self.data is not None:
            out["data"] = thaw(self.data)
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    def to_json(self) -> str:
        """Compact JSON of :meth:`to_dict`, non-ASCII kept as is (encode it as UTF-8).

        Example::

            >>> print(Answer("pnd-1", True, {"env": "staging"}).to_json())
            {"id":"pnd-1","ok":true,"data":{"env":"staging"}}
        """
        return _wire.dumps(self.to_dict(), "Answer")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        """Rebuild an answer from its wire form; unknown keys are ignored.

        Raises :class:`WireFormatError` (a ``ValueError``) naming the field at fault.

        Example::

            >>> Answer.from_dict({"id": "pnd-1", "ok": False, "reason": "declined"}).reason
            'declined'
        """
        data = _wire.require_object(data, "Answer")
        rid = _wire.field(data, "id", str, "Answer", required=True, expected="a string")
        if not rid:
            raise WireFormatError("Answer", "id", 'must be a non-empty string, got string ""')
        ok = _wire.field(data, "ok", bool, "Answer", required=True, expected="a boolean")
        payload = _wire.field(data, "data", Mapping, "Answer", required=False, expected="an object")
        reason = _wire.field(data, "reason", str, "Answer", required=False, expected="a string")
        if ok:
            reason = None  # advisory and meaningful only on a refusal: the ports never write it
        elif reason is not None and reason not in REASONS:
            reason = "declined"  # every host treats a refusal alike; keep a value ports write
        return cls(rid, ok, payload, reason)

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> Answer:
        """Parse :meth:`to_json` output (text or UTF-8 bytes).

        Raises :class:`WireFormatError` (a ``ValueError``) when the text is not JSON, not
        an object, or a field is missing or mistyped.

        Example::

            >>> Answer.from_json('{"id":"pnd-1","ok":"yes"}')  # doctest: +ELLIPSIS
            Traceback (most recent call last):
              ...
            toolnexus.errors.WireFormatError: invalid Answer: field 'ok' must be a boolean, ...
        """
        return cls.from_dict(_wire.loads_object(text, "Answer"))

    def __repr__(self) -> str:
        # An answer's data may be what a human typed: its size shows, never its content.
        state = "ok" if self.ok else f"refused ({self.reason or 'declined'})"
        text = f"<Answer {state} id={self.id!r}"
        if self.data is not None:
            count = len(self.data)
            text += f" data: {count} key{'' if count == 1 else 's'}"
        return text + ">"


def decline_reason(request: Request, answer: Answer) -> str | None:
    """Why ``answer`` says no to ``request`` (``"declined"``, ``"cancelled"``,
    ``"expired"``), or ``None`` when it is a yes — the one meaning of "no" every path uses.

    A refusal (``ok`` false) says no, with its reason (``"declined"`` when it gives none).
    An ``approval`` answered ``ok`` but with ``data["approved"]`` set to anything but
    ``True`` — the form an MCP client fills in — also says no: ``"declined"``. An ok
    answer to a request whose ``expires_at`` has passed says ``"expired"``.

    Example::

        >>> req = Request("approval", "Deploy?", id="pnd-1")
        >>> decline_reason(req, Answer("pnd-1", True, {"approved": False}))
        'declined'
        >>> decline_reason(req, Answer("pnd-1", True, {"approved": True})) is None
        True
    """
    if not answer.ok:
        return answer.reason or "declined"
    data = answer.data
    if (
        request.kind == "approval"
        and data is not None
        and "approved" in data
        and data["approved"] is not True
    ):
        return "declined"
    if request.is_expired():
        return "expired"
    return None


def answer_problem(request: Request, answer: Answer) -> str | None:
    """What is wrong with the shape of an ok ``answer`` to ``request``'s kind, or ``None``:
    a ``"sampling"`` answer must be a message (``{"role": "assistant" | "user", "content":
    {"type": ...}}``, ``"model"`` a string when given), a ``"roots"`` answer
    ``{"roots": [{"uri": str, "name"?: str}, ...]}``, and a ``"several"`` answer must
    answer every request it asks, each sound in turn. A refusal has no shape to check.

    Example::

        >>> ask = Request("sampling", "Summarize", id="s", data={"messages": []})
        >>> answer_problem(ask, Answer("s", True, {"text": "hi"}))  # doctest: +ELLIPSIS
        "the answer to 'Summarize' is not a message: role must be 'assistant' or 'user', ..."
    """
    if not answer.ok:
        return None
    data = answer.data
    if request.kind == "sampling":
        problem = _message_problem(data)
        return (
            None
            if problem is None
            else f"the answer to {request.prompt!r} is not a message: {problem}"
        )
    if request.kind == "roots":
        problem = _roots_problem(data)
        return (
            None
            if problem is None
            else f"the answer to {request.prompt!r} is not a list of roots: {problem}"
        )
    if request.kind == SEVERAL:
        for each in request.requests():
            sub = answer.answer_to(each)
            if sub is None:
                return (
                    f"the answer to {request.prompt!r} has none for {each.id!r} ({each.prompt!r})"
                )
            if sub.id != each.id:
                return f"the answer for {each.id!r} echoes {sub.id!r}"
            problem = answer_problem(each, sub)
            if problem is not None:
                return problem
    return None


def _message_problem(data: Mapping[str, Any] | None) -> str | None:
    if data is None:
        return "it has no data"
    role = data.get("role")
    if role not in ("assistant", "user"):
        shown = _wire.describe(role) if role is not None else "nothing"
        return f"role must be 'assistant' or 'user', got {shown}"
    content = data.get("content")
    blocks = content if isinstance(content, (list, tuple)) else [content]
    if not blocks or not all(
        isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in blocks
    ):
        return "content must be a content block ({'type': 'text', 'text': ...}) or a list of them"
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        return f"model must be a string, got {_wire.describe(model)}"
    return None


def _roots_problem(data: Mapping[str, Any] | None) -> str | None:
    roots = data.get("roots") if data is not None else None
    if not isinstance(roots, (list, tuple)):
        return "roots must be a list"
    for index, root in enumerate(roots):
        if not isinstance(root, Mapping) or not isinstance(root.get("uri"), str):
            return f"roots[{index}] must be an object with a uri string"
        if root.get("name") is not None and not isinstance(root.get("name"), str):
            return f"roots[{index}].name must be a string"
    return None


def _request_id(request: Request) -> str:
    if not isinstance(request, Request):
        raise InvalidTypeError(f"expected a Request to answer, got {type(request).__name__}")
    return request.id


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _origin(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "..."
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    return f"{scheme}://{host}/..." if host != rest else f"{scheme}://{host}"
