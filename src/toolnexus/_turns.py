"""Provider-shaped turns: a model turn's tool calls in, balanced result messages out.

Everything that knows a provider's message shapes lives here, as one table keyed by style
(:data:`STYLES`): how to find the tool calls in what the provider returned, how to read one
call, and how to render the results as the messages to send back. Adding a style is adding
an entry to that table; :class:`~toolnexus.Host` runs the calls and never looks at
their shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import _wire
from ._frozen import sealed
from ._parts import EXTENSIONS, Part
from ._result import ToolResult
from ._suspension import Request
from ._tool_use import GRAMMAR_INPUT, caller_kind
from .errors import InvalidTypeError, InvalidValueError, WireFormatError

__all__ = [
    "KINDS",
    "STYLES",
    "Style",
    "TurnCall",
    "TurnInput",
    "TurnResult",
    "TurnStyle",
    "approval_request",
    "parse_calls",
    "responses_output",
    "style_of",
    "text_only",
]

Style = str
"""A key of :data:`STYLES`: ``"openai"``, ``"responses"``, ``"anthropic"`` or ``"gemini"``."""


class _HasToolCalls(Protocol):
    """An OpenAI Chat Completions message (``ChatCompletionMessage``)."""

    @property
    def tool_calls(self) -> object: ...


class _HasOutput(Protocol):
    """An OpenAI Responses API response (``Response``)."""

    @property
    def output(self) -> object: ...


class _HasContent(Protocol):
    """An Anthropic ``Message``, or a Gemini ``Content``'s holder."""

    @property
    def content(self) -> object: ...


class _HasParts(Protocol):
    """A Gemini ``Content``."""

    @property
    def parts(self) -> object: ...


class _HasCandidates(Protocol):
    """A Gemini ``GenerateContentResponse``."""

    @property
    def candidates(self) -> object: ...


TurnInput = (
    Sequence[object]
    | Mapping[str, Any]
    | _HasToolCalls
    | _HasOutput
    | _HasContent
    | _HasParts
    | _HasCandidates
)
"""What :meth:`Host.run_turn <toolnexus.Host.run_turn>` takes: a provider's list of tool calls
(content blocks, output items, parts — plain dicts or the SDK's own objects), or the whole
message or response that holds them, as a dict or the SDK's object.

Example::

    calls: TurnInput = reply["tool_calls"]
    turn = host.run_turn(calls, style="openai")
"""

ParsedCall = tuple[str, str, Any, dict[str, Any]]
"""``(call_id, name, arguments, extras)`` of one tool call, as the provider sent them;
``extras`` holds what the advanced tool use adds (``caller``, ``kind``, ``signature``:
:class:`TurnCall`'s fields of those names), empty for a plain call."""

KINDS = ("function", "custom", "mcp_approval")
"""What a :class:`TurnCall` is: a function call, an OpenAI custom (grammar) tool call, or a
hosted MCP server's approval request (a question for a human, not a call of ours)."""


def _get(obj: Any, key: str, *aliases: str) -> Any:
    """``obj[key]`` for a dict, ``obj.key`` for an SDK object; the first alias found else."""
    for name in (key, *aliases):
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


@dataclass(frozen=True, slots=True)
class TurnStyle:
    """How one provider shapes tool calls and their results.

    Attributes:
        unwrap: the provider's whole response message -> its list of tool calls, or the
            value unchanged when it already is that list.
        read_call: one item of that list and its index -> ``(id, name, arguments)`` (or
            ``(id, name, arguments, extras)``, see :data:`ParsedCall`) before checks, or
            ``None`` for an item that is not a tool call (skipped).
        render: the calls of a complete turn -> the messages to append to the conversation.
    """

    unwrap: Callable[[Any], Any]
    read_call: Callable[[Any, int], tuple[Any, ...] | None]
    render: Callable[[tuple[TurnCall, ...]], list[dict[str, Any]]]


# --------------------------------------------------------------------------- parts (§8A)
#
# A positive allowlist per (style, part type): a part gets the block its style defines for
# it, or the family's placeholder text ("[unsupported <type> part (<mime>, <n> bytes)]") in
# the style's text channel. A block off the list never reaches the wire: providers often
# accept an unknown block with HTTP 200 and silently drop it.

_OPENAI_AUDIO_FORMATS = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
}
_ANTHROPIC_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
# Gemini's documented media for a multimodal function response.
_GEMINI_MEDIA = frozenset(
    {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
)
_FILE_EXTENSIONS = {mime: ext for ext, (_, mime) in EXTENSIONS.items()}


def _filename(part: Part) -> str:
    if part.name:
        return part.name
    extension = _FILE_EXTENSIONS.get(part.mime_type or "")
    return f"file.{extension}" if extension else "file"


def _openai_block(part: Part) -> dict[str, Any] | None:
    """A Chat Completions user content part for ``part``, or None (placeholder)."""
    if part.type == "image":
        return {"type": "image_url", "image_url": {"url": part.url or part.data_url}}
    if part.data is None:
        return None  # file and audio are bytes only: no URL form
    if part.type == "file":
        return {"type": "file", "file": {"filename": _filename(part), "file_data": part.data_url}}
    if part.type == "audio" and part.mime_type in _OPENAI_AUDIO_FORMATS:
        return {
            "type": "input_audio",
            "input_audio": {"data": part.data, "format": _OPENAI_AUDIO_FORMATS[part.mime_type]},
        }
    return None


def _responses_block(part: Part) -> dict[str, Any]:
    """A Responses ``function_call_output`` content item for ``part``."""
    if part.type == "text":
        return {"type": "input_text", "text": part.text}
    if part.type == "image":
        return {"type": "input_image", "image_url": part.url or part.data_url}
    if part.type == "file":
        if part.url is not None:
            return {"type": "input_file", "file_url": part.url}
        return {"type": "input_file", "filename": _filename(part), "file_data": part.data_url}
    return {"type": "input_text", "text": part.placeholder()}  # no audio in tool output


def _anthropic_block(part: Part) -> dict[str, Any]:
    """An Anthropic ``tool_result`` content block for ``part``."""
    if part.type == "text":
        return {"type": "text", "text": part.text}
    if part.url is not None:
        source: dict[str, Any] = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
    if part.type == "image" and (part.url is not None or part.mime_type in _ANTHROPIC_IMAGES):
        return {"type": "image", "source": source}
    if part.type == "file" and part.mime_type == "application/pdf":
        return {"type": "document", "source": source}
    if part.type == "file" and part.mime_type == "text/plain" and part.data is not None:
        text = part.to_bytes().decode("utf-8", errors="replace")
        return {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    # Anthropic defines no audio block; other media types are refused by the API.
    return {"type": "text", "text": part.placeholder()}


def _gemini_block(part: Part) -> dict[str, Any] | None:
    """A Gemini ``functionResponse.parts`` entry for ``part``, or None (placeholder)."""
    if part.data is not None and part.type in ("image", "file") and part.mime_type in _GEMINI_MEDIA:
        return {"inlineData": {"mimeType": part.mime_type, "data": part.data}}
    # The Gemini API takes no fileData (URL) in a function response, and no audio.
    return None


# --------------------------------------------------------------------------- openai


def _openai_unwrap(calls: Any) -> Any:
    tool_calls = _get(calls, "tool_calls")
    return calls if tool_calls is None else tool_calls


def _openai_read(item: Any, index: int) -> tuple[Any, ...]:
    if _get(item, "type") == "custom":
        return _openai_custom_read(item, index)
    function = _get(item, "function")
    if function is None:
        raise WireFormatError(
            f"tool call {index}",
            "function",
            'is missing; expected an object like {"name": ..., "arguments": "{...}"}',
        )
    return _get(item, "id"), _get(function, "name"), _get(function, "arguments")


def _openai_render(calls: tuple[TurnCall, ...]) -> list[dict[str, Any]]:
    # A tool message carries text only: the output, text parts and placeholders. Media go
    # in one user message after the tool messages, each call's introduced by its id.
    messages: list[dict[str, Any]] = []
    media: list[dict[str, Any]] = []
    for call in calls:
        result = call.result
        if not result.parts:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result.output})
            continue
        texts = [{"type": "text", "text": result.output}]
        blocks = []
        for part in result.parts:
            if part.type == "text":
                texts.append({"type": "text", "text": part.text or ""})
                continue
            block = _openai_block(part)
            if block is None:
                texts.append({"type": "text", "text": part.placeholder()})
            else:
                blocks.append(block)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": texts})
        if blocks:
            media.append({"type": "text", "text": f"Parts of tool call {call.id} ({call.name}):"})
            media.extend(blocks)
    if media:
        messages.append({"role": "user", "content": media})
    return messages


# --------------------------------------------------------------------------- responses


def _responses_unwrap(calls: Any) -> Any:
    if isinstance(calls, (list, tuple)):
        return calls
    output = _get(calls, "output")
    return calls if output is None else output


def _responses_read(item: Any, index: int) -> tuple[Any, ...] | None:
    kind = _get(item, "type")
    if kind == "function_call":
        extras = _caller_extras(item)
        return _get(item, "call_id"), _get(item, "name"), _get(item, "arguments"), extras
    if kind == "custom_tool_call":
        return _responses_custom_read(item)
    if kind == "mcp_approval_request":
        return _responses_approval_read(item)
    return None  # messages, reasoning, built-in tool calls


def responses_output(result: ToolResult) -> str | list[dict[str, Any]]:
    """A result as a Responses ``function_call_output``'s ``output``: its text, or with parts
    a list of ``input_text`` / ``input_image`` / ``input_file`` items (a part the API cannot
    carry in a tool output, audio, as its placeholder text). The openai-agents bridge sends
    the same items through that SDK's own tool output types."""
    if not result.parts:
        return result.output
    output = [{"type": "input_text", "text": result.output}]
    output.extend(_responses_block(part) for part in result.parts)
    return output


def _responses_render(calls: tuple[TurnCall, ...]) -> list[dict[str, Any]]:
    from ._turn_search import render_native

    items = []
    for call in calls:
        native = render_native(call, "responses")  # a client-executed tool_search
        if native is not None:
            items.append(native)
            continue
        if call.kind == "mcp_approval":
            items.append(_approval_response(call))
            continue
        if call.caller is not None and call.kind == "function":
            items.append(_responses_caller_output(call))
            continue
        if call.kind == "custom":
            items.append(_responses_custom_output(call))
            continue
        output = responses_output(call.result)
        items.append({"type": "function_call_output", "call_id": call.id, "output": output})
    return items


# --------------------------------------------------------------------------- anthropic


def _anthropic_unwrap(calls: Any) -> Any:
    if isinstance(calls, (list, tuple)):
        return calls
    content = _get(calls, "content")
    return calls if content is None else content


def _anthropic_read(item: Any, index: int) -> tuple[Any, ...] | None:
    if _get(item, "type") != "tool_use":
        return None
    return _get(item, "id"), _get(item, "name"), _get(item, "input"), _caller_extras(item)


def _anthropic_render(calls: tuple[TurnCall, ...]) -> list[dict[str, Any]]:
    from ._turn_search import render_native

    blocks = []
    for call in calls:
        native = render_native(call, "anthropic")  # a client-side search: tool_reference
        if native is not None:
            blocks.append(native)
            continue
        result = call.result
        content: Any = result.output
        if call.caller is not None and caller_kind(call.caller) == "programmatic":
            content = text_only(result)  # the code that called gets a string
        elif result.parts:
            # Anthropic refuses empty text blocks: an empty output is left out.
            content = [{"type": "text", "text": result.output}] if result.output else []
            for part in result.parts:
                block = _anthropic_block(part)
                if block.get("type") != "text" or block["text"]:
                    content.append(block)
        blocks.append(
            {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": content,
                "is_error": result.is_error,
            }
        )
    return [{"role": "user", "content": blocks}]


# --------------------------------------------------------------------------- gemini

_GEMINI_NO_ID = "#"


def _gemini_unwrap(calls: Any) -> Any:
    if isinstance(calls, (list, tuple)):
        return calls
    candidates = _get(calls, "candidates")
    if isinstance(candidates, (list, tuple)):
        if not candidates:
            return []
        calls = _get(candidates[0], "content")
    parts = _get(calls, "parts")
    return calls if parts is None else parts


def _gemini_read(item: Any, index: int) -> tuple[Any, ...] | None:
    call = _get(item, "functionCall", "function_call")
    if call is None:
        if _get(item, "name") is None or _get(item, "text") is not None:
            return None  # a text or thought part, not a call
        call = item  # a bare FunctionCall (response.function_calls)
    call_id = _get(call, "id")
    if call_id is None:
        # The Gemini API may send no ids: it pairs responses by order and name. The turn
        # still needs one, so the call's position stands in, and is not sent back.
        call_id = f"{_GEMINI_NO_ID}{index}"
    arguments = _get(call, "args")
    extras = _gemini_signature(item, index)
    return call_id, _get(call, "name"), {} if arguments is None else arguments, extras


def _gemini_render(calls: tuple[TurnCall, ...]) -> list[dict[str, Any]]:
    parts = []
    for call in calls:
        result = call.result
        texts = [result.output]
        media = []
        for part in result.parts:
            if part.type == "text":
                texts.append(part.text or "")
                continue
            block = _gemini_block(part)
            if block is None:
                texts.append(part.placeholder())
            else:
                media.append(block)
        response: dict[str, Any] = {}
        if not call.id.startswith(_GEMINI_NO_ID):
            response["id"] = call.id
        response["name"] = call.name
        response["response"] = {"error" if result.is_error else "output": "\n".join(texts)}
        if media:
            response["parts"] = media
        parts.append({"functionResponse": response})
    return [{"role": "user", "parts": parts}]


# --------------------------------------------------------------------------- advanced tool use
#
# Callers (programmatic tool calling), OpenAI custom tool calls, hosted-MCP approval
# requests and Gemini thought signatures: read into a call's extras, written back here.


def _plain_object(value: Any) -> Any:
    """An SDK object (pydantic) or mapping as plain JSON values, unset fields left out."""
    if isinstance(value, Mapping):
        return {key: _plain_object(item) for key, item in value.items() if item is not None}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


def _caller_extras(item: Any) -> dict[str, Any]:
    """``{"caller": {...}}`` when the call says who made it, else ``{}``."""
    caller = _get(item, "caller")
    if caller is None:
        return {}
    plain = _plain_object(caller)
    if not isinstance(plain, Mapping) or not isinstance(plain.get("type"), str):
        raise WireFormatError(
            "tool call", "caller", f"must be an object with a type, got {plain!r}"
        )
    return {"caller": dict(plain)}


def text_only(result: ToolResult) -> str:
    """A result as one text, for code that called the tool (a programmatic caller gets a
    string): the output, then each part's text or placeholder on its own line."""
    texts = [result.output]
    texts.extend(
        part.text or "" if part.type == "text" else part.placeholder() for part in result.parts
    )
    return "\n".join(texts)


def _responses_caller_output(call: TurnCall) -> dict[str, Any]:
    """A ``function_call_output`` echoing the call's ``caller``; a programmatic caller's
    output is text (its code reads a string)."""
    programmatic = caller_kind(call.caller) == "programmatic"
    output = text_only(call.result) if programmatic else responses_output(call.result)
    return {
        "type": "function_call_output",
        "call_id": call.id,
        "output": output,
        "caller": dict(call.caller or {}),
    }


def _responses_custom_read(item: Any) -> tuple[Any, ...]:
    """A ``custom_tool_call``: its free-text ``input`` is the grammar tool's one parameter."""
    text = _get(item, "input")
    if not isinstance(text, str):
        raise WireFormatError("custom tool call", "input", f"must be a string, got {text!r}")
    extras = {"kind": "custom", **_caller_extras(item)}
    return _get(item, "call_id"), _get(item, "name"), {GRAMMAR_INPUT: text}, extras


def _openai_custom_read(item: Any, index: int) -> tuple[Any, ...]:
    """A Chat Completions custom tool call, ``{"id", "type": "custom", "custom": {"name",
    "input"}}``: its text is the grammar tool's one parameter (its result goes back as the
    usual tool message)."""
    custom = _get(item, "custom")
    text = _get(custom, "input") if custom is not None else None
    if not isinstance(text, str):
        raise WireFormatError(
            f"tool call {index}", "custom.input", f"must be a string, got {text!r}"
        )
    return _get(item, "id"), _get(custom, "name"), {GRAMMAR_INPUT: text}, {"kind": "custom"}


def _responses_custom_output(call: TurnCall) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "custom_tool_call_output",
        "call_id": call.id,
        "output": text_only(call.result),
    }
    if call.caller is not None:
        out["caller"] = dict(call.caller)
    return out


def _responses_approval_read(item: Any) -> tuple[Any, ...]:
    """An ``mcp_approval_request``: a question for a human, bound to its item (its id, the
    server, the tool and the arguments are what the answer is bound to)."""
    request_id = _get(item, "id")
    label = _get(item, "server_label")
    name = _get(item, "name")
    arguments = _get(item, "arguments")
    for key, value in (("server_label", label), ("arguments", arguments)):
        if not isinstance(value, str):
            raise WireFormatError("mcp_approval_request", key, f"must be a string, got {value!r}")
    bound = {
        "approval_request_id": request_id,
        "server_label": label,
        "name": name,
        "arguments": arguments,
    }
    return request_id, name, bound, {"kind": "mcp_approval"}


def approval_request(call_id: str, name: str, arguments: Mapping[str, Any]) -> Request:
    """The ``Request("approval")`` an ``mcp_approval_request`` item asks."""
    return Request(
        "approval",
        f"Allow the MCP server {arguments.get('server_label')!r} to run {name!r} "
        f"with {arguments.get('arguments')}?",
        data={"mcpApprovalRequest": dict(arguments)},
    )


_DECLINES = {
    "declined": "declined: the user refused this call",
    "cancelled": "cancelled: the approval was cancelled before anyone decided",
    "expired": "expired: nobody answered the approval in time",
}
"""The ``reason`` of an ``mcp_approval_response`` that says no, by why (the answer's
:attr:`~toolnexus.Answer.reason`): what the model reads, so it can tell a person's refusal
from a question nobody answered."""


def _approval_response(call: TurnCall) -> dict[str, Any]:
    """The ``mcp_approval_response`` for an answered approval: approved unless the answer
    declined (an error result, whose ``metadata["reason"]`` — ``"declined"``,
    ``"cancelled"`` or ``"expired"`` — says why; its text otherwise)."""
    result = call.result
    out: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": call.id,
        "approve": not result.is_error,
    }
    if result.is_error:
        why = result.metadata.get("reason")
        out["reason"] = _DECLINES.get(why, result.output) if isinstance(why, str) else result.output
    return out


def _gemini_signature(item: Any, index: int) -> dict[str, Any]:
    """``{"signature": ...}`` for a part that carries a thought signature (base64 text;
    the SDK's bytes are encoded), else ``{}``. A signature that is not base64 is refused:
    Gemini would refuse the conversation it goes back in."""
    signature = _get(item, "thoughtSignature", "thought_signature")
    if signature is None:
        return {}
    if isinstance(signature, (bytes, bytearray)):
        import base64

        signature = base64.b64encode(bytes(signature)).decode("ascii")
    problem = _signature_problem(signature)
    if problem is not None:
        raise WireFormatError(f"function call part {index}", "thoughtSignature", problem)
    return {"signature": signature}


def _signature_problem(signature: object) -> str | None:
    """What is wrong with a Gemini thought signature as text, or None: it must be
    non-empty base64 (the standard or the URL-safe alphabet — the google-genai SDK's JSON
    writes the latter — with its padding)."""
    if not isinstance(signature, str):
        return f"must be base64 text, got {type(signature).__name__}"
    if not signature:
        return "is empty; send the part's signature as Gemini gave it, or leave the key out"
    import base64
    import binascii

    try:
        base64.b64decode(signature, altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        shown = signature if len(signature) <= 40 else signature[:40] + "…"
        return (
            f"is not base64 ({shown!r}); send the part's signature exactly as Gemini gave it "
            "(the SDK's bytes, or their base64 text)"
        )
    return None


STYLES: dict[str, TurnStyle] = {
    "openai": TurnStyle(_openai_unwrap, _openai_read, _openai_render),
    "responses": TurnStyle(_responses_unwrap, _responses_read, _responses_render),
    "anthropic": TurnStyle(_anthropic_unwrap, _anthropic_read, _anthropic_render),
    "gemini": TurnStyle(_gemini_unwrap, _gemini_read, _gemini_render),
}
"""Every turn style, by name.

- ``"openai"`` (Chat Completions): the message's ``tool_calls`` (``{"id", "type":
  "function", "function": {"name", "arguments"}}``) in; one ``{"role": "tool", ...}``
  message per call out (plus one ``user`` message carrying media parts).
- ``"responses"`` (OpenAI Responses API): the response's ``output`` items of type
  ``function_call`` (``{"call_id", "name", "arguments"}``; others skipped) in; one
  ``{"type": "function_call_output", "call_id", "output"}`` item per call out.
- ``"anthropic"``: the response's content blocks (``{"type": "tool_use", "id", "name",
  "input"}``; others skipped) in; one ``{"role": "user", "content": [tool_result, ...]}``
  message out.
- ``"gemini"``: the candidate's parts (``{"functionCall": {"name", "args", "id"?}}``;
  others skipped) in; one ``{"role": "user", "parts": [{"functionResponse": ...}]}``
  content out.
- Advanced tool use, in the styles that have it: a call's ``caller`` (Anthropic
  ``tool_use``, Responses ``function_call``: the styles with programmatic tool calling,
  :data:`~toolnexus._tool_use.PROGRAMMATIC_STYLES`; in the others every call is the
  model's own) is kept in :attr:`TurnCall.caller` and echoed
  in the Responses output (a programmatic caller's result is text); Responses
  ``custom_tool_call`` items and Chat Completions ``{"type": "custom"}`` calls run their
  grammar tool (``custom_tool_call_output`` / a tool message out); Responses
  ``mcp_approval_request`` items become approval questions (``mcp_approval_response``
  out); a Gemini part's ``thoughtSignature`` is kept in :attr:`TurnCall.signature`.
"""


def _style_names() -> str:
    names = [repr(name) for name in STYLES]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def style_of(style: object) -> TurnStyle:
    """The :class:`TurnStyle` named ``style``; ``ValueError`` naming the known ones."""
    found = STYLES.get(style) if isinstance(style, str) else None
    if found is None:
        raise InvalidValueError(f"style must be {_style_names()}, got {style!r}")
    return found


def parse_calls(calls: TurnInput, style: str) -> list[ParsedCall]:
    """Provider tool calls -> ``[(call_id, name, arguments)]``, in order.

    Raises ``ValueError`` for an unknown style, ``TypeError`` when ``calls`` is not a list
    of calls (or a message holding one), and :class:`~toolnexus.errors.WireFormatError`
    naming the call that lacks its id or name.
    """
    shape = style_of(style)
    # A whole assistant message is accepted as well as its list of calls.
    calls = shape.unwrap(calls)
    if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, Iterable):
        raise InvalidTypeError(
            f"run_turn() takes the provider's list of tool calls, got {type(calls).__name__}"
        )
    parsed: list[ParsedCall] = []
    for index, item in enumerate(calls):
        where = f"tool call {index}"
        read = shape.read_call(item, index)
        if read is None:
            continue
        call_id, name, arguments = read[:3]
        extras = dict(read[3]) if len(read) > 3 else {}
        if not isinstance(call_id, str) or not call_id:
            raise WireFormatError(where, "id", f"must be a non-empty string, got {call_id!r}")
        if not isinstance(name, str):
            raise WireFormatError(where, "name", f"must be a string, got {name!r}")
        if isinstance(arguments, str) and not arguments.strip():
            arguments = {}  # some models send "" for a tool without parameters
        parsed.append((call_id, name, arguments, extras))
    return parsed


# --------------------------------------------------------------------------- the values


@sealed
@dataclass(frozen=True, slots=True)
class TurnCall:
    """One tool call of a turn and its latest result.

    Attributes:
        id: the provider's call id (``tool_call_id``, ``call_id``, ``tool_use_id``, a Gemini
            ``functionCall.id``; ``"#<n>"``, the call's position, for a Gemini call that
            came without one — it is not sent back).
        name: the tool the model asked for.
        arguments: the arguments as the model sent them (OpenAI, Responses: JSON text;
            Anthropic, Gemini: an object), kept so a suspended call can run again with
            exactly the same input.
        result: the call's result; a pending result while it waits on a question.
        caller: who made the call, as the provider said it (Anthropic's ``{"type":
            "code_execution_20260120", "tool_id"}``, OpenAI's ``{"type": "program",
            "caller_id"}``, ``{"type": "direct"}``), or None when it did not say; sent back
            with the result where the provider expects it.
        kind: ``"function"``, ``"custom"`` (an OpenAI custom tool call) or
            ``"mcp_approval"`` (a hosted MCP server's approval request: its result is the
            human's answer, sent back as an ``mcp_approval_response``).
        signature: the Gemini thought signature of the call's part, kept with the turn.

    Example::

        call = turn.calls[0]
        print(call.id, call.name, call.result.output)
    """

    id: str
    name: str
    arguments: Any
    result: ToolResult
    caller: Mapping[str, Any] | None = None
    kind: str = "function"
    signature: str | None = None

    @property
    def is_pending(self) -> bool:
        """True while this call's result is a suspension."""
        return self.result.is_pending


@sealed
@dataclass(frozen=True, slots=True)
class TurnResult:
    """The results of one model turn's tool calls — balanced, or halted on a question.

    Plain data: :meth:`to_json` / :meth:`from_json` let a durable host park a halted turn
    and resume it in another process with :meth:`Host.resume_turn`.

    Attributes:
        style: a key of :data:`STYLES` (``"openai"``, ``"responses"``, ``"anthropic"``,
            ``"gemini"``): the shape of :attr:`messages`.
        calls: every tool call of the turn, in call order, with its latest result.
        error: why the last :meth:`Host.resume_turn` changed nothing (an answer for another
            request, a complete turn), else ``None``.
        revealed: the deferred tools the conversation's searches have found so far
            (docs/tool-search.md): hand it to the next turn's ``run_turn(revealed=...)``
            and to the adapters' ``revealed=``. Kept in :meth:`to_json`, so a turn resumed
            in another process keeps it.

    Example::

        turn = host.run_turn(tool_calls)
        while turn.pending is not None:
            turn = host.resume_turn(turn, ask_a_human(turn.pending))
        messages.extend(turn.messages)
    """

    style: Style
    calls: tuple[TurnCall, ...]
    error: str | None = field(default=None)
    revealed: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        style_of(self.style)
        object.__setattr__(self, "calls", tuple(self.calls))
        object.__setattr__(self, "revealed", tuple(self.revealed))

    @property
    def pending_call(self) -> TurnCall | None:
        """The first call in call order still waiting on a question, or None."""
        for call in self.calls:
            if call.is_pending:
                return call
        return None

    @property
    def pending(self) -> Request | None:
        """The request to answer next: the first suspension in call order; None when the
        turn is complete."""
        call = self.pending_call
        return None if call is None else ToolResult.pending_of(call.result)

    @property
    def waiting(self) -> tuple[str, ...]:
        """The ids of the calls that still need a result, in call order."""
        return tuple(call.id for call in self.calls if call.is_pending)

    @property
    def is_complete(self) -> bool:
        """True when every call has its final result (no call is suspended)."""
        return self.pending_call is None

    @property
    def results(self) -> list[ToolResult]:
        """Each call's latest result, in call order."""
        return [call.result for call in self.calls]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The provider-shaped results to append to the conversation; ``[]`` until the
        turn is complete (so an unbalanced set can never be sent).

        OpenAI: one ``{"role": "tool", "tool_call_id", "content"}`` per call, then one
        ``user`` message with the media parts, if any. Responses: one ``{"type":
        "function_call_output", "call_id", "output"}`` item per call. Anthropic: one
        ``{"role": "user", "content": [{"type": "tool_result", "tool_use_id", "content",
        "is_error"}, ...]}``. Gemini: one ``{"role": "user", "parts": [{"functionResponse":
        {"id", "name", "response": {"output" | "error": text}, "parts"}}, ...]}``. Parts
        become the blocks each style defines for them, or the placeholder text
        ``[unsupported <type> part (<mimeType>, <bytes> bytes)]``. A fresh list each time:
        change it freely.
        """
        if not self.is_complete or not self.calls:
            return []
        return STYLES[self.style].render(self.calls)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: ``{"style", "calls": [{"id", "name", "arguments", "result"}],
        "pending", "error"}`` and ``"revealed"`` when a search revealed tools (``pending``
        is informative; it is derived again on load)."""
        pending = self.pending
        out: dict[str, Any] = {
            "style": self.style,
            "calls": [
                {
                    "id": call.id,
                    "name": call.name,
                    "arguments": _plain(call.arguments),
                    "result": call.result.to_dict(),
                    **_extras_dict(call),
                }
                for call in self.calls
            ],
            "pending": None if pending is None else pending.to_dict(),
            "error": self.error,
        }
        if self.revealed:
            out["revealed"] = list(self.revealed)
        return out

    def to_json(self) -> str:
        """Compact JSON of :meth:`to_dict`, to persist a halted turn."""
        return _wire.dumps(self.to_dict(), "TurnResult")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnResult:
        """Rebuild a turn from :meth:`to_dict` output.

        Raises :class:`~toolnexus.errors.WireFormatError` naming the field at fault.
        """
        data = _wire.require_object(data, "TurnResult")
        style = _wire.field(
            data, "style", str, "TurnResult", required=True, expected=_style_names()
        )
        if style not in STYLES:
            raise WireFormatError("TurnResult", "style", f"must be {_style_names()}, got {style!r}")
        raw_calls = _wire.field(
            data, "calls", list, "TurnResult", required=True, expected="an array"
        )
        error = _wire.field(data, "error", str, "TurnResult", required=False, expected="a string")
        revealed = _wire.field(
            data, "revealed", list, "TurnResult", required=False, expected="an array of names"
        )
        for index, name in enumerate(revealed or ()):
            if not isinstance(name, str):
                raise WireFormatError("TurnResult", f"revealed[{index}]", "must be a string")
        calls = []
        for index, raw in enumerate(raw_calls):
            where = f"calls[{index}]"
            if not isinstance(raw, Mapping):
                raise WireFormatError("TurnResult", where, "must be an object")
            call_id = raw.get("id")
            name = raw.get("name")
            if not isinstance(call_id, str) or not call_id:
                raise WireFormatError("TurnResult", f"{where}.id", "must be a non-empty string")
            if not isinstance(name, str):
                raise WireFormatError("TurnResult", f"{where}.name", "must be a string")
            if not isinstance(raw.get("result"), Mapping):
                raise WireFormatError("TurnResult", f"{where}.result", "must be an object")
            try:
                result = ToolResult.from_dict(raw["result"])
            except WireFormatError as exc:
                raise WireFormatError(
                    "TurnResult", f"{where}.result", f"is invalid: {exc}"
                ) from None
            extras = _extras_of(raw, where)
            calls.append(TurnCall(call_id, name, raw.get("arguments"), result, **extras))
        return cls(style, tuple(calls), error, tuple(revealed or ()))

    @classmethod
    def from_json(cls, text: str | bytes | bytearray) -> TurnResult:
        """Parse :meth:`to_json` output. Raises :class:`WireFormatError` when malformed."""
        return cls.from_dict(_wire.loads_object(text, "TurnResult"))

    def __repr__(self) -> str:
        if self.is_complete:
            state = "complete"
        else:
            pending = self.pending
            state = f"pending {pending.id if pending else '?'}"
        error = f" error={self.error!r}" if self.error else ""
        return f"<TurnResult {self.style} calls={len(self.calls)} {state}{error}>"


def _extras_dict(call: TurnCall) -> dict[str, Any]:
    """A call's advanced-tool-use fields for its wire form, the unset ones left out."""
    out: dict[str, Any] = {}
    if call.caller is not None:
        out["caller"] = _plain(call.caller)
    if call.kind != "function":
        out["kind"] = call.kind
    if call.signature is not None:
        out["signature"] = call.signature
    return out


def _extras_of(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The advanced-tool-use fields of a call's wire form, checked."""
    out: dict[str, Any] = {}
    caller = raw.get("caller")
    if caller is not None:
        if not isinstance(caller, Mapping) or not isinstance(caller.get("type"), str):
            raise WireFormatError("TurnResult", f"{where}.caller", "must be an object with a type")
        out["caller"] = dict(caller)
    kind = raw.get("kind", "function")
    if kind not in KINDS:
        raise WireFormatError(
            "TurnResult", f"{where}.kind", f"must be one of {KINDS}, got {kind!r}"
        )
    out["kind"] = kind
    signature = raw.get("signature")
    problem = None if signature is None else _signature_problem(signature)
    if problem is not None:
        raise WireFormatError("TurnResult", f"{where}.signature", problem)
    out["signature"] = signature
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", errors="replace")
    return value
