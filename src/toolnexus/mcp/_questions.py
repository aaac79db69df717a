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
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .._frozen import thaw
from .._log import LazyLogger
from ..errors import InputError
from ._codec import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_CLIENT_CAPABILITY,
    TOO_DEEP,
    nested_too_deep,
)
from ._protocol import META_ANSWER_UNUSED, describe
from ._server_types import (
    Action,
    Asking,
    Calls,
    CallState,
    ClientView,
    Reject,
    Send,
    StartCall,
    error,
    waits_on,
    who,
)

if TYPE_CHECKING:  # both load with the first question a server asks or a client reads
    from .._binding import Binder
    from .._result import ToolResult
    from .._suspension import Answer, Request

_log = LazyLogger()

__all__ = [
    "APPROVAL_FIELD",
    "ANSWER_FIELD",
    "ElicitationShape",
    "Planned",
    "Question",
    "ServerQuestions",
    "answer_from_elicitation",
    "answer_from_response",
    "arguments_digest",
    "content_problem",
    "elicit_result",
    "elicitation_mode",
    "elicitation_params",
    "form_of",
    "form_problem",
    "form_schema_problem",
    "input_requests",
    "missing_capability",
    "open_state",
    "plan",
    "question_params",
    "question_problem",
    "request_from_elicitation",
    "shapes_of",
    "sign_state",
    "whole_answer",
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
    from .._suspension import Answer, answer_problem

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
    from .._suspension import Answer

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
    from .._binding import arguments_digest as digest

    return digest(arguments)


def sign_state(payload: Mapping[str, Any], keys: Sequence[bytes]) -> str:
    """Encode ``payload`` (a JSON object) as an opaque string signed with ``keys[0]``:
    ``v1.<base64url payload>.<base64url HMAC-SHA256 tag>``."""
    from .._binding import sign

    return sign(payload, keys[0], _STATE_VERSION)


def open_state(text: str, keys: Sequence[bytes]) -> dict[str, Any] | None:
    """The payload :func:`sign_state` put in ``text``, or ``None`` when ``text`` was not
    signed with one of ``keys`` or was changed in any way."""
    from .._binding import open_signed

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
    from .._loop_rule import schema_problem
    from .._suspension import Answer, Request

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
    from .._wire import describe

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
    from .._suspension import Request

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


# ---------------------------------------------------------------------- the server's rules
# One rule for a question a server asks — of a call's client (the session) and of a task's
# (``mcp/_tasks.py``): how it is asked, what the client lacks, the answers read back.


class Planned(NamedTuple):
    """How a request (plain, or several) is asked of one client: each plain request's
    ``(method, params, shape)`` by its id — or what the client lacks (``missing``, the
    ``requiredCapabilities`` of a ``-32021``), or why MCP cannot ask it at all
    (``problem``)."""

    questions: dict[str, Question]
    missing: dict[str, Any]
    problem: str | None = None


def plan(request: Request, output: str, client: ClientView, *, can_ask: bool = True) -> Planned:
    """How to ask ``request`` of ``client``; ``output`` is the pending result's text (what a
    form shows for the request itself). The client's revision decides the fields: ``mode``
    from 2025-11-25 (every modern revision), ``elicitationId`` on legacy 2025-11-25 only —
    a task's client is a modern one, so a task asks as a modern call does. ``can_ask`` is
    False while a legacy client has not said it is initialized (nothing may be sent)."""
    from .._result import ToolResult

    questions: dict[str, Question] = {}
    missing: dict[str, Any] = {}
    plain = request.requests()
    for each in plain:
        problem = question_problem(each)
        if problem is not None:
            return Planned({}, {}, problem)
    for each in plain:
        message = output if each is request else ToolResult.pending(each).output
        asked = question_params(
            each,
            message,
            form=client.form and can_ask,
            url=client.url and can_ask,
            sampling=client.sampling and can_ask,
            roots=client.roots and can_ask,
            with_mode=client.at_least("2025-11-25"),
            with_elicitation_id=not client.modern and client.version == "2025-11-25",
        )
        if isinstance(asked, dict):
            for key, value in asked.items():
                missing.setdefault(key, {}).update(value)
        else:
            questions[each.id] = asked
    return Planned(questions, missing)


def missing_capability(missing: Mapping[str, Any], asker: str, output: str) -> tuple[str, Any]:
    """The ``-32021`` error's message and data for a question ``asker`` (``tool 'x'``, ``the
    task``) asks a modern client that lacks the ``missing`` capabilities."""
    words = []
    for key, value in missing.items():
        modes = f" ({', '.join(value)} mode)" if key == "elicitation" and value else ""
        words.append(key + modes)
    return (
        f"Missing required client capability: {', '.join(words)}; {asker} asks: {output}",
        {"requiredCapabilities": dict(missing)},
    )


def input_requests(planned: Planned) -> dict[str, Any]:
    """The ``inputRequests`` of an ``InputRequiredResult`` (or a task that waits)."""
    return {
        key: {"method": method, "params": params}
        for key, (method, params, _) in planned.questions.items()
    }


def shapes_of(planned: Planned) -> dict[str, ElicitationShape]:
    """How each request was asked, by its id: what reading its answer needs."""
    return {key: shape for key, (_, _, shape) in planned.questions.items()}


def form_problem(request: Request, shape: ElicitationShape, answer: Answer | None) -> str | None:
    """Why an accepted ``answer`` to one plain request does not fit the form it was asked
    with (``shape``), or None (no form: URL mode, sampling, roots; or a refusal). An
    approval's ``approved`` must be a boolean as its form says, even when it says no."""
    form = form_of(request, shape)
    if form is None or answer is None or not answer.ok:
        return None
    return content_problem(request, form, answer.data or {})


def whole_answer(request: Request, collected: Mapping[str, Answer]) -> Answer:
    """The one answer to ``request``: its own, or (several questions) all of them."""
    from .._suspension import SEVERAL, Answer

    if request.kind != SEVERAL:
        return collected[request.id]
    return Answer.several(request, [collected[each.id] for each in request.requests()])


_OUTGOING = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}
"""How the id of each request the server sends begins (``toolnexus-elicit-3``)."""


class ServerQuestions:
    """One session's questions: a suspension asked of the client (as the server's own
    requests on the legacy era, in an ``InputRequiredResult`` on the modern one), the
    answers read back, and the modern era's signed ``requestState`` issued and spent.

    ``binder`` holds the keys that sign a state and the store that spends it once;
    ``state_ttl_s`` is how long a state stays valid, ``max_rounds`` how many answers a
    call may take; ``clock`` returns the time in seconds.
    """

    def __init__(
        self,
        binder: Binder,
        *,
        state_ttl_s: float,
        max_rounds: int,
        clock: Callable[[], float],
    ) -> None:
        self.binder = binder
        self._state_ttl_s = state_ttl_s
        self._max_rounds = max_rounds
        self._clock = clock
        self._asked: dict[str, CallState] = {}  # a legacy request of ours -> its call
        self._next_outgoing = 0

    def clear(self) -> None:
        """Forget every question asked (the session ended)."""
        self._asked.clear()

    def take(self, outgoing: Any) -> CallState | None:
        """The call that waits on the answer to our request ``outgoing``; None when
        nothing does. Its question then no longer waits on that answer's id."""
        call = self._asked.pop(outgoing, None) if isinstance(outgoing, str) else None
        if call is None or not waits_on(call, outgoing):
            return None
        return call

    def ask(
        self, calls: Calls, call: CallState, result: ToolResult, request: Request
    ) -> list[Action]:
        """``call`` ended asking ``request`` (its ``result``): ask the client — unless the
        loop rule says the call took its answers already."""
        from .._binding import BINDING_KEY
        from .._loop_rule import may_ask_again, unresolved_text

        if not may_ask_again(call.round, self._max_rounds):
            # The loop rule: one retry per answer (per round), never a loop.
            return calls.fail(call, unresolved_text(request))
        metadata = result.metadata
        binding = metadata.get(BINDING_KEY) if metadata is not None else None
        call.binding = binding if isinstance(binding, str) else None
        call.state_exp = None  # a new question: a new expiry
        try:
            return self._suspend(calls, call, request, result.output)
        except Reject as exc:
            return [error(call.request_id, exc.code, exc.message, exc.data)]
        except Exception as exc:
            # Never a lost response (and an id "in use" forever) for a question we could not
            # put on the wire.
            _log.exception("cannot ask the question of tool %r", call.name)
            calls.forget(call)
            return [
                error(
                    call.request_id,
                    INTERNAL_ERROR,
                    f"internal error: cannot ask the tool's question ({exc})",
                )
            ]

    def _suspend(
        self, calls: Calls, call: CallState, request: Request, output: str
    ) -> list[Action]:
        """Ask ``request``: in an ``InputRequiredResult`` for a modern client, as requests
        of the server's own for a legacy one; ``-32021`` (modern) or a text to relay
        (legacy) when the client did not declare what it takes."""
        client = call.client
        # A legacy server sends no requests before the client said it is initialized.
        can_ask = client.modern or calls.initialized
        planned = plan(request, output, client, can_ask=can_ask)
        if planned.problem is not None:
            return calls.fail(
                call, f"{who(call)} asked a question MCP cannot ask: {planned.problem}"
            )
        if planned.missing:
            if client.modern:
                # The 2026-07-28 revision names this error; legacy clients get the text.
                calls.forget(call)
                text, data = missing_capability(planned.missing, who(call), output)
                raise Reject(MISSING_CLIENT_CAPABILITY, text, data)
            # Nobody can be asked: what the model should tell the user, never a hang —
            # phrased as a question to relay, not as a failure.
            declared = client.form or client.url or client.sampling or client.roots
            why = (
                "it has not said it is initialized yet"
                if declared and not can_ask
                else f"it has no {' or '.join(planned.missing)} support"
            )
            return calls.fail(
                call,
                f"{who(call)} is waiting for an answer this client cannot collect "
                f"({why}); ask the user: {output}",
            )
        shapes = shapes_of(planned)
        if client.modern:
            body = {
                "resultType": "input_required",
                "inputRequests": input_requests(planned),
                "requestState": self._issue_state(call, request, shapes),
            }
            return calls.finish(call, body)
        asking = call.asking = Asking(request, shapes)
        sends: list[Action] = []
        for each in request.requests():
            method, params, shape = planned.questions[each.id]
            self._next_outgoing += 1
            outgoing = f"toolnexus-{_OUTGOING[method]}-{self._next_outgoing}"
            asking.asked[outgoing] = (each, shape)
            self._asked[outgoing] = call
            sends.append(
                Send({"jsonrpc": "2.0", "id": outgoing, "method": method, "params": params})
            )
        return sends

    def withdraw(self, call: CallState) -> list[Action]:
        """Stop waiting for the legacy answers ``call`` still waits for; the
        ``notifications/cancelled`` that tell the client, so it can close its dialogs."""
        withdrawn: list[Action] = []
        asking, call.asking = call.asking, None
        for outgoing in asking.asked if asking is not None else ():
            self._asked.pop(outgoing, None)
            withdrawn.append(
                Send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": outgoing, "reason": "the call no longer waits"},
                    }
                )
            )
        return withdrawn

    def answered(self, calls: Calls, message: Mapping[str, Any]) -> list[Action] | None:
        """A legacy client's response to one of our requests: the answer it carries, and —
        once every request of the question is answered — the call run again with them.
        None (the call withdrawn) for a result nested too deeply: the session answers the
        call ``-32602``, as for any message too deep to handle."""
        response_id = message.get("id")
        call = self._asked.pop(response_id, None) if isinstance(response_id, str) else None
        asking = call.asking if call is not None else None
        asked = asking.asked.pop(str(response_id), None) if asking is not None else None
        if call is None or asking is None or asked is None:
            _log.debug("ignoring a response to a request this server never sent: %r", response_id)
            return []
        request, shape = asked
        from .._suspension import Answer

        answer: Answer
        if "error" in message or message.get("jsonrpc") != "2.0":
            # A client that refuses to sample says so with an error: a decline.
            reason = "declined" if shape in ("sampling", "roots") else "cancelled"
            answer = Answer(request.id, False, None, reason)
        elif nested_too_deep(message.get("result")):
            # The same answer on every Python, whatever its recursion limits: the call is
            # answered -32602, as data too deep for the recursive code after this would be.
            self.withdraw(call)
            return None
        else:
            try:
                answer = answer_from_response(request, shape, message.get("result"))
            except ValueError as exc:
                if shape in ("sampling", "roots"):
                    withdrawn = self.withdraw(call)
                    return withdrawn + calls.fail(
                        call, f"{who(call)} got an answer it cannot use: {exc}", INVALID_PARAMS
                    )
                _log.warning("treating a malformed elicitation result as cancelled: %s", exc)
                answer = Answer(request.id, False, None, "cancelled")
        asking.collected[request.id] = answer
        if asking.asked:
            return []  # more answers to come (several questions asked at once)
        call.asking = None
        question = asking.question
        whole = whole_answer(question, asking.collected)
        return self._resume(calls, call, question, whole, asking.shapes)

    # -------------------------------------------------------------- requestState

    def _issue_state(
        self, call: CallState, request: Request, shapes: Mapping[str, ElicitationShape]
    ) -> str:
        if call.state_exp is None:
            call.state_exp = int(self._clock() + self._state_ttl_s)
        payload = {
            "method": call.method,
            "tool": call.name,
            "args": arguments_digest(call.arguments),
            "request": request.to_dict(),
            "shapes": dict(shapes),
            "exp": call.state_exp,  # a re-asked question keeps the first expiry
            "round": call.round,
            "binding": call.binding,
            "nonce": os.urandom(8).hex(),
        }
        return sign_state(payload, self.binder.keys)

    def retry(self, calls: Calls, call: CallState, state: Any, responses: Any) -> list[Action]:
        """A modern retry of ``call`` carrying ``requestState`` (and ``inputResponses``):
        the call run again with the answers, asked again, or refused (:class:`Reject`)."""
        if not isinstance(state, str):
            raise Reject(
                INVALID_PARAMS,
                f"invalid params: requestState must be a string, got {describe(state)}",
            )
        payload = open_state(state, self.binder.keys)
        if payload is None:
            hint = (
                ""
                if self.binder.is_configured
                else " (this server has no configured key: give it one with --secret-file or "
                "TOOLNEXUS_SECRET so states survive a restart)"
            )
            raise Reject(
                INVALID_PARAMS,
                "invalid params: requestState was not issued by this server (or under another "
                f"key) or was modified{hint}; call the tool again without requestState",
            )
        if (
            payload.get("method") != call.method
            or payload.get("tool") != call.name
            or payload.get("args") != arguments_digest(call.arguments)
        ):
            raise Reject(
                INVALID_PARAMS,
                "invalid params: requestState belongs to another call; retry with the same "
                "tool name and arguments as the call that returned it",
            )
        from .._result import ToolResult
        from .._suspension import Answer, Request

        try:
            request = Request.from_dict(payload["request"])
            plain = request.requests()
        except (KeyError, ValueError, TypeError):
            raise Reject(INVALID_PARAMS, "invalid params: requestState is unreadable") from None
        shapes = payload.get("shapes")
        if not isinstance(shapes, dict):  # a state from before several questions
            shapes = {request.id: payload.get("shape")}
        exp = payload.get("exp")
        expired = not isinstance(exp, int) or exp <= self._clock()
        if responses is not None and not isinstance(responses, dict):
            raise Reject(
                INVALID_PARAMS,
                f"invalid params: inputResponses must be an object, got {describe(responses)}",
            )
        given = responses if responses is not None else {}
        binding = payload.get("binding")
        call.binding = binding if isinstance(binding, str) else None
        answered = payload.get("round")
        call.round = answered if isinstance(answered, int) and answered >= 0 else 0

        def spend() -> list[Action] | None:
            """Use the state up (once, whether it carries an answer or asks again: the
            spec's "consumed at most once", enforced in the store the host shares); the
            error to send when it was used before."""
            if expired:
                return None
            assert isinstance(exp, int)
            try:
                first = self.binder.store.consume(state.rpartition(".")[2], float(exp))
            except Exception as exc:  # the store failed: refuse, and use nothing up
                from .._binding import store_failed

                refusal = store_failed(exc, f"the requestState for {request.prompt!r}")
                if call.method != "tools/call":  # an error response: nothing was used
                    return calls.fail(call, refusal.result.output)
                text = refusal.result.output
                refused = {
                    "content": [{"type": "text", "text": text}],
                    "isError": True,
                    "_meta": {META_ANSWER_UNUSED: True},  # the client may send it again
                }
                return calls.finish(call, refused)
            if first:
                call.state_exp = exp
                return None
            return calls.fail(
                call,
                f"already answered: this requestState for {request.prompt!r} was used "
                "before; call the tool again without requestState to ask anew",
                INVALID_PARAMS,
            )

        unanswered = [each for each in plain if given.get(each.id) is None]
        if unanswered and not expired:
            # A question went unanswered: ask again (a new state, the same expiry).
            return spend() or self._suspend(
                calls, call, request, ToolResult.pending(request).output
            )
        answer: Answer
        if expired:
            answer = Answer(request.id, False, None, "expired")
        else:
            # Built and checked before the state is used: an answer that cannot be read
            # (a bad response, data nested too deeply) uses nothing up, so the client can
            # send a correct one with the same requestState.
            collected: dict[str, Answer] = {}
            for each in plain:
                response = given[each.id]
                if nested_too_deep(response):
                    raise Reject(
                        INVALID_PARAMS,
                        f"invalid params: inputResponses[{each.id!r}] is nested too "
                        f"deeply ({TOO_DEEP}); send flatter data",
                    )
                try:
                    collected[each.id] = answer_from_response(
                        each, str(shapes.get(each.id)), response
                    )
                except ValueError as exc:
                    raise Reject(
                        INVALID_PARAMS, f"invalid params: inputResponses[{each.id!r}]: {exc}"
                    ) from None
            answer = whole_answer(request, collected)
        return self._resume(calls, call, request, answer, shapes, spend)

    def _resume(
        self,
        calls: Calls,
        call: CallState,
        request: Request,
        answer: Answer,
        shapes: Mapping[str, Any] | None = None,
        spend: Callable[[], list[Action] | None] | None = None,
    ) -> list[Action]:
        """Run the call again with ``answer``. ``spend`` (a modern retry) uses up its
        requestState once the answer passed its checks; a decline uses it up too."""
        from .._loop_rule import declined_text
        from .._suspension import decline_reason

        declined = answer.id != request.id or decline_reason(request, answer) is not None
        if not declined:
            for each in request.requests():
                shape = str((shapes or {}).get(each.id))
                problem = form_problem(each, shape, answer.answer_to(each))
                if problem is not None:
                    # A decline with the reason: the tool is not run with data it did not
                    # ask for, and the state stays usable for a corrected answer.
                    return calls.fail(call, problem, INVALID_PARAMS)
        if spend is not None:
            refused = spend()
            if refused is not None:
                return refused
        if declined:
            # The one meaning of "no" (also an approval's form with approved: false).
            return calls.fail(call, declined_text(request))
        call.running = True
        call.round += 1
        return [
            StartCall(
                call.call_id,
                call.name,
                call.arguments,
                request,
                answer,
                wants_progress=call.progress_token is not None,
                binding=call.binding,
                trace=call.trace,
                task_after_ms=call.task_after,
                wants_log=call.log_level is not None,
            )
        ]
