"""How a suspension travels over MCP: elicitation requests, their answers, signed state.

A tool's :class:`~toolnexus.Request` becomes an ``elicitation/create`` request (sent to a
legacy client, or embedded in a modern ``InputRequiredResult``); the client's
``accept | decline | cancel`` becomes an :class:`~toolnexus.Answer`. On modern
connections the server keeps nothing between the two requests, so everything the retry
needs rides in ``requestState``, HMAC-signed with the session's key (see
:mod:`toolnexus._binding`): a state issued under another key, or one that was changed,
never verifies.

What a form may ask is checked both ways: a tool's ``data.schema`` must be a flat object of
primitive fields (:func:`form_schema_problem`, refused when the tool suspends), and the
content a client sends back must fit it (:func:`content_problem`, a mismatch ends the call
with the problem instead of running the tool).

The server's rules for a question are here too, one set for a call and a task: how a
suspension is asked of a client (:func:`plan`: the fields its revision takes, what it
lacks — ``-32021`` on the modern era), and, for a session, :class:`ServerQuestions`: the
legacy era's ``elicitation/create`` (and sampling, roots) requests bound to their call,
the modern era's ``InputRequiredResult`` with its signed ``requestState``, issued and spent
once, and the answers read back into the call's retry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._frozen import thaw
from ..._log import LazyLogger
from ...errors import InputError

if TYPE_CHECKING:  # both load with the first question a server asks or a client reads
    from ..._suspension import Answer, Request

_log = LazyLogger()

__all__ = [
    "APPROVAL_FIELD",
    "ANSWER_FIELD",
    "ElicitationShape",
    "Question",
    "answer_from_elicitation",
    "answer_from_response",
    "arguments_digest",
    "content_problem",
    "elicit_result",
    "elicitation_mode",
    "elicitation_params",
    "form_of",
    "form_schema_problem",
    "open_state",
    "question_params",
    "question_problem",
    "request_from_elicitation",
    "sign_state",
]

APPROVAL_FIELD = "approved"
"""The one boolean field of the form an ``approval`` request is asked with."""

ANSWER_FIELD = "answer"
"""The one text field of the form a request without ``data.schema`` is asked with."""

ElicitationShape = str
"""How a request was asked, so its answer can be read back: ``"schema"`` (the request's
own ``data.schema``), ``"approval"`` (one boolean), ``"answer"`` (one text field) or
``"url"`` (URL mode: the interaction happens out of band) — or, for the questions that are
not elicitations, ``"sampling"`` (``sampling/createMessage``) and ``"roots"``
(``roots/list``)."""

Question = tuple[str, dict[str, Any], ElicitationShape]
"""How one request is asked over MCP: the method, its params, and its shape."""

_DEFAULT_MAX_TOKENS = 1024

_STATE_VERSION = "v1"

_PRIMITIVE_TYPES = ("string", "number", "integer", "boolean")


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
    if _declared_schema(request) is not None:
        shape: ElicitationShape = "schema"
    else:
        shape = "approval" if request.kind == "approval" else "answer"
    schema = form_of(request, shape)
    params = {"message": message, "requestedSchema": schema}
    if with_mode:
        params = {"mode": "form", **params}
    return params, shape


def question_params(
    request: Request,
    message: str,
    *,
    form: bool,
    url: bool,
    sampling: bool,
    roots: bool,
    with_mode: bool,
    with_elicitation_id: bool,
) -> Question | dict[str, Any]:
    """How to ask one plain request over MCP — ``(method, params, shape)`` — or, when the
    client did not declare what it takes, that capability (``{"sampling": {}}``,
    ``{"elicitation": {"form": {}}}``, ...) for a ``-32021`` error's
    ``requiredCapabilities``. ``"sampling"`` becomes ``sampling/createMessage``,
    ``"roots"`` ``roots/list``, anything else ``elicitation/create`` (see
    :func:`elicitation_params`)."""
    if request.kind == "sampling":
        if not sampling:
            return {"sampling": {}}
        return "sampling/createMessage", sampling_params(request), "sampling"
    if request.kind == "roots":
        if not roots:
            return {"roots": {}}
        return "roots/list", {}, "roots"
    asked = elicitation_params(
        request,
        message,
        form=form,
        url=url,
        with_mode=with_mode,
        with_elicitation_id=with_elicitation_id,
    )
    if asked is None:
        mode = "url" if request.kind == "authorization" and request.url else "form"
        return {"elicitation": {mode: {}}}
    params, shape = asked
    return "elicitation/create", params, shape


def question_problem(request: Request) -> str | None:
    """Why ``request`` cannot be asked over MCP at all, or None: a form that is not flat
    (:func:`form_schema_problem`), or a sampling request without usable ``messages``."""
    if request.kind == "sampling":
        return _sampling_problem(request)
    if request.kind == "roots":
        return None
    return form_schema_problem(request)


def sampling_params(request: Request) -> dict[str, Any]:
    """The ``sampling/createMessage`` params of a ``"sampling"`` request: its ``data`` as
    MCP writes it, with a text ``messages`` value (or a message's text ``content``) made a
    user text message (a text block) and ``maxTokens`` defaulting to 1024."""
    data = dict(thaw(request.data)) if request.data is not None else {}
    messages = data.get("messages")
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    written = []
    for message in messages or ():
        content = message.get("content")
        if isinstance(content, str):
            content = {"type": "text", "text": content}
        written.append({**message, "content": content})
    data["messages"] = written
    data.setdefault("maxTokens", _DEFAULT_MAX_TOKENS)
    return data


def _sampling_problem(request: Request) -> str | None:
    data = request.data or {}
    messages = data.get("messages")
    if isinstance(messages, str):
        return None
    if not isinstance(messages, Sequence) or not messages:
        return "data.messages must be a non-empty list of messages (or a text)"
    for index, message in enumerate(messages):
        where = f"data.messages[{index}]"
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            return f"{where} must be a message with role 'user' or 'assistant'"
        content = message.get("content")
        blocks = (
            content if isinstance(content, Sequence) and not isinstance(content, str) else [content]
        )
        if not all(isinstance(b, str) or (isinstance(b, Mapping) and "type" in b) for b in blocks):
            return f"{where}.content must be a text or content blocks"
    tokens = data.get("maxTokens")
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1
    ):
        return f"data.maxTokens must be a positive integer, got {tokens!r}"
    return None


def answer_from_response(request: Request, shape: ElicitationShape, result: Any) -> Answer:
    """Read a client's answer to one plain request asked as ``shape``: an ``ElicitResult``
    (:func:`answer_from_elicitation`), a ``CreateMessageResult`` (the answer's data is the
    message) or a ``ListRootsResult``. Raises ``ValueError`` (an
    :class:`~toolnexus.errors.InputError`) saying what is wrong with ``result``."""
    if shape not in ("sampling", "roots"):
        return answer_from_elicitation(request, shape, result)
    from ..._suspension import Answer, answer_problem

    if not isinstance(result, Mapping):
        raise InputError(f"the client's answer must be an object, got {_json_type(result)}")
    answer = Answer(request.id, True, result)
    problem = answer_problem(request, answer)
    if problem is not None:
        raise InputError(problem)
    return answer


def form_of(request: Request, shape: ElicitationShape) -> dict[str, Any] | None:
    """The form ``request`` is asked with in ``shape`` — its own ``data.schema``, the one
    boolean field of an approval, the one text field of anything else — or ``None`` for URL
    mode (no form). The answer's content is checked against the same form."""
    if shape == "schema":
        return _declared_schema(request)
    if shape == "approval":
        field, kind, title = APPROVAL_FIELD, "boolean", "Approve"
    elif shape == "answer":
        field, kind, title = ANSWER_FIELD, "string", "Answer"
    else:
        return None
    return {
        "type": "object",
        "properties": {field: {"type": kind, "title": title, "description": request.prompt}},
        "required": [field],
    }


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
    from ..._suspension import Answer

    if not isinstance(result, Mapping):
        raise InputError(f"an elicitation result must be an object, got {_json_type(result)}")
    action = result.get("action")
    if action == "decline":
        return Answer(request.id, False, None, "declined")
    if action == "cancel":
        return Answer(request.id, False, None, "cancelled")
    if action != "accept":
        raise InputError(
            f"elicitation action must be 'accept', 'decline' or 'cancel', got {action!r}"
        )
    content = result.get("content")
    if content is not None and not isinstance(content, Mapping):
        raise InputError(f"elicitation content must be an object, got {_json_type(content)}")
    if shape == "url":
        return Answer(request.id, True)
    if shape == "approval":
        if content is not None and content.get(APPROVAL_FIELD) is True:
            return Answer(request.id, True, content)
        return Answer(request.id, False, None, "declined")
    return Answer(request.id, True, content if content is not None else {})


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """The canonical digest of a call's arguments (:func:`toolnexus._binding.arguments_digest`)."""
    from ..._binding import arguments_digest as digest

    return digest(arguments)


def sign_state(payload: Mapping[str, Any], keys: Sequence[bytes]) -> str:
    """Encode ``payload`` (a JSON object) as an opaque string signed with ``keys[0]``:
    ``v1.<base64url payload>.<base64url HMAC-SHA256 tag>``."""
    from ..._binding import sign

    return sign(payload, keys[0], _STATE_VERSION)


def open_state(text: str, keys: Sequence[bytes]) -> dict[str, Any] | None:
    """The payload :func:`sign_state` put in ``text``, or ``None`` when ``text`` was not
    signed with one of ``keys`` or was changed in any way."""
    from ..._binding import open_signed

    return open_signed(text, keys, _STATE_VERSION)


def form_schema_problem(request: Request) -> str | None:
    """Why ``request.data["schema"]`` cannot be asked as an MCP form, or None when it can
    (or there is none).

    A form is a flat object: every property a ``string``, ``number``, ``integer`` or
    ``boolean`` field, or an enum of such values (``enum``, ``oneOf``/``anyOf`` of
    ``const``, or an ``array`` of such an enum for a multi-select). Anything else — a
    nested object, an array of free values, a ``$ref`` — is named by its path.
    """
    data = request.data
    if data is None or "schema" not in data:
        return None
    schema = data["schema"]
    where = "data.schema"
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return f'{where} must be an object schema ({{"type": "object", ...}})'
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return f"{where}.properties must be an object"
    for name, prop in properties.items():
        problem = _field_problem(prop)
        if problem is not None:
            return f"{where}.properties.{name} {problem}"
    return None


def _is_enum(prop: Mapping[str, Any]) -> bool:
    if isinstance(prop.get("enum"), list):
        return all(_is_primitive(v) for v in prop["enum"])
    for key in ("oneOf", "anyOf"):
        options = prop.get(key)
        if (
            isinstance(options, list)
            and options
            and all(
                isinstance(o, Mapping) and "const" in o and _is_primitive(o["const"])
                for o in options
            )
        ):
            return True
    return False


def _field_problem(prop: Any) -> str | None:
    if not isinstance(prop, Mapping):
        return "must be an object describing one field"
    if "$ref" in prop:
        return "uses $ref; MCP forms need the field spelled out"
    kind = prop.get("type")
    if kind == "array":
        items = prop.get("items")
        if isinstance(items, Mapping) and _is_enum(items):
            return None  # a multi-select of enum values
        return (
            "is an array of free values; MCP forms take only string, number, integer and "
            "boolean fields (and enums of them)"
        )
    if kind in _PRIMITIVE_TYPES or (kind is None and _is_enum(prop)):
        return None
    shown = "missing" if kind is None else repr(kind)
    return (
        f"has type {shown}; MCP forms take only string, number, integer and boolean fields "
        "(and enums of them): flatten it into several fields"
    )


def _is_primitive(value: Any) -> bool:
    return isinstance(value, (str, bool)) or is_finite_number(value)


def content_problem(request: Request, schema: Mapping[str, Any], content: Any) -> str | None:
    """Why form ``content`` a client accepted does not answer ``schema``, or None.

    Every key must be a field of the form, every value a primitive (a list of strings for a
    multi-select), and the whole must fit the schema (types, enums, required fields).
    """
    from ..._loop_rule import schema_problem
    from ..._suspension import Answer, Request

    if not isinstance(content, Mapping):
        return f"invalid answer to {request.prompt!r}: the form content must be an object"
    properties = schema.get("properties", {})
    for key, value in content.items():
        if key not in properties:
            return (
                f"invalid answer to {request.prompt!r}: {key}: not a field of the form "
                f"(fields: {', '.join(map(str, properties)) or 'none'})"
            )
        flat = _is_primitive(value) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not flat:
            return (
                f"invalid answer to {request.prompt!r}: {key}: expected a string, number or "
                f"boolean, got {_json_type(value)}"
            )
    probe = Request(request.kind, request.prompt, id=request.id, data={"schema": schema})
    return schema_problem(probe, Answer(request.id, True, content))


def is_finite_number(value: Any) -> bool:
    """True for an int or float that JSON can carry (not a bool, not NaN or infinite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def _json_type(value: Any) -> str:
    from ..._wire import describe

    return describe(value)


# ------------------------------------------------------------------ the client side

ElicitationMode = str
"""How a server asked: ``"form"`` (a schema to fill) or ``"url"`` (go to a page)."""


def elicitation_mode(shape: ElicitationShape) -> ElicitationMode:
    """The elicitation mode a question of ``shape`` is asked in (the capability a client
    declares for it): ``"url"`` for URL mode, ``"form"`` for every form."""
    return "url" if shape == "url" else "form"


def request_from_elicitation(
    params: Any, *, request_id: str, expires_at: str | None = None
) -> tuple[Request, ElicitationShape]:
    """The :class:`~toolnexus.Request` an ``elicitation/create`` from a server asks, and
    its shape — the mirror of :func:`elicitation_params`, so a question keeps its kind
    across the wire: URL mode is ``Request("authorization", message, url=url)``; the one
    boolean field of an approval (:func:`form_of`) is ``Request("approval", message)``; the
    one text field of a plain question is ``Request("question", message)`` (answered with
    ``{"answer": text}``); any other form is ``Request("input", message,
    data={"schema": requestedSchema})``. A legacy ``enumNames`` list becomes the ``oneOf``
    of titled ``const`` values it stands for. Raises :class:`~toolnexus.errors.InputError`
    saying what is wrong with ``params``.

    Example::

        >>> request, shape = request_from_elicitation(
        ...     {"message": "Your name?", "requestedSchema": {"type": "object",
        ...      "properties": {"name": {"type": "string"}}}}, request_id="pnd-1")
        >>> request.kind, request.data["schema"]["properties"]["name"], shape
        ('input', {'type': 'string'}, 'schema')
        >>> approval = {"type": "object", "required": ["approved"],
        ...             "properties": {"approved": {"type": "boolean"}}}
        >>> request, shape = request_from_elicitation(
        ...     {"message": "Deploy?", "requestedSchema": approval}, request_id="pnd-2")
        >>> request.kind, request.data, shape
        ('approval', None, 'approval')
    """
    from ..._suspension import Request

    if not isinstance(params, Mapping):
        raise InputError(f"elicitation params must be an object, got {_json_type(params)}")
    mode = params.get("mode", "form")
    message = params.get("message")
    if not isinstance(message, str):
        raise InputError(f"elicitation message must be a string, got {_json_type(message)}")
    if mode == "url":
        url = params.get("url")
        if not isinstance(url, str) or not url:
            raise InputError(f"a URL-mode elicitation needs a url, got {_json_type(url)}")
        return Request(
            "authorization", message, id=request_id, url=url, expires_at=expires_at
        ), "url"
    if mode != "form":
        raise InputError(f"elicitation mode must be 'form' or 'url', got {mode!r}")
    schema = params.get("requestedSchema")
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise InputError(
            "a form elicitation needs requestedSchema, an object schema "
            f'({{"type": "object", ...}}), got {_json_type(schema)}'
        )
    shape = _shape_of_form(schema)
    if shape == "approval":
        return Request("approval", message, id=request_id, expires_at=expires_at), shape
    if shape == "answer":
        return Request("question", message, id=request_id, expires_at=expires_at), shape
    data = {"schema": _titled_enums(dict(thaw(schema)))}
    return Request("input", message, id=request_id, data=data, expires_at=expires_at), shape


def _shape_of_form(schema: Mapping[str, Any]) -> ElicitationShape:
    """The shape a form was asked in, read back from the form :func:`form_of` writes: one
    required boolean ``approved`` (an approval), one required text ``answer`` (a plain
    question), or a schema of the request's own."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or len(properties) != 1:
        return "schema"
    ((field, prop),) = properties.items()
    if schema.get("required") != [field] or not isinstance(prop, Mapping):
        return "schema"
    if field == APPROVAL_FIELD and prop.get("type") == "boolean":
        return "approval"
    if field == ANSWER_FIELD and prop.get("type") == "string" and len(prop.keys() - _PLAIN) == 0:
        return "answer"
    return "schema"


_PLAIN = frozenset({"type", "title", "description"})
"""The keywords of the one text field :func:`form_of` writes (a field with more — a
format, a length, choices — is a form of the tool's own)."""


def _titled_enums(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each legacy ``enum`` + ``enumNames`` field (a display annotation JSON
    Schema does not know) spelled as the ``oneOf`` of titled ``const`` values it stands for
    (SEP-1330): the same choices, in a form a validator can check and any client can show."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    changed = dict(properties)
    for key, prop in properties.items():
        if not isinstance(prop, dict) or "enumNames" not in prop:
            continue
        field = {name: value for name, value in prop.items() if name not in ("enum", "enumNames")}
        values, titles = prop.get("enum"), prop["enumNames"]
        if isinstance(values, list) and isinstance(titles, list) and len(values) == len(titles):
            field["oneOf"] = [
                {"const": value, "title": str(title)}
                for value, title in zip(values, titles, strict=True)
            ]
        elif isinstance(values, list):
            field["enum"] = values
        changed[key] = field
    return {**schema, "properties": changed}


def elicit_result(
    answer: Answer, shape: ElicitationShape, schema: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``ElicitResult`` that tells a server ``answer`` to a question asked in
    ``shape`` (what :func:`request_from_elicitation` returned) — the mirror of
    :func:`answer_from_elicitation`: an ok answer accepts (an approval with its one field
    true; a form with ``answer.data`` as its content, every field the answer leaves out but
    ``schema`` gives a ``default`` for filled with that default), ``"declined"`` declines,
    anything else cancels. An approval answered ok with ``approved`` set to anything but
    true declines, as :func:`~toolnexus.decline_reason` reads it.

    Example::

        >>> from toolnexus import Answer
        >>> elicit_result(Answer("pnd-1", True, {"name": "Ada"}), "schema")
        {'action': 'accept', 'content': {'name': 'Ada'}}
        >>> elicit_result(Answer("pnd-1", True), "approval")
        {'action': 'accept', 'content': {'approved': True}}
        >>> elicit_result(Answer("pnd-1", False, None, "declined"), "schema")
        {'action': 'decline'}
    """
    if not answer.ok:
        return {"action": "decline" if answer.reason == "declined" else "cancel"}
    if shape == "url":
        return {"action": "accept"}
    if shape == "approval":
        if answer.data is not None and answer.data.get(APPROVAL_FIELD, True) is not True:
            return {"action": "decline"}
        return {"action": "accept", "content": {APPROVAL_FIELD: True}}
    content: dict[str, Any] = {}
    properties = schema.get("properties") if schema is not None else None
    if isinstance(properties, Mapping):
        for key, prop in properties.items():
            if isinstance(prop, Mapping) and "default" in prop:
                content[key] = thaw(prop["default"])
    if answer.data is not None:
        content.update(thaw(answer.data))
    return {"action": "accept", "content": content}
