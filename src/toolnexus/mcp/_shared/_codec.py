"""JSON-RPC 2.0 on the wire: messages to bytes and bytes to messages, for both sides of MCP.

Everything that turns a message into bytes or bytes into a message lives here, for every
transport, the server and the client alike: the error codes, the decoder (with its depth
rule), the skimmer that still finds the ``id`` of a line nested too deeply to decode, and
the encoder. The per-message byte tricks live here too, each pinned by a test that it gives
the plain :mod:`json` module's bytes (tests/test_mcp_codec.py):

- a line that is one JSON value is decoded by the C scanner called directly (it skips
  ``JSONDecoder.decode``'s two whitespace regexes and two Python frames);
- messages are encoded by the C encoder built once, not once per message;
- a tool's text answer — the one message written per call — is written from a template
  (:func:`text_reply`), without building the message first;
- a page of a list (``tools/list``) is written from its entries' encodings
  (:func:`fragment`, kept per entry, joined once per page by :func:`listed_items`, the
  page's result encoded once by :func:`listed_result`, each response's line written around
  it by :func:`reply_line`): a list is asked for again and again, and its entries
  seldom change;
- a finished task's result is encoded once, as it ends (:func:`fragment`), and each
  ``tasks/get`` that shows it is written around that text (:func:`fragment_reply`);
- a client's request is written from a template (:func:`request_line`), the ``_meta``
  entries it shares with every other request of its connection from their encoding,
  done once: they are most of a modern request's bytes, and nested objects are what the
  encoder is slowest at.

No function here raises for a message a peer sent: decoding raises ``ValueError`` (not
JSON) or ``RecursionError`` (nested too deeply), which callers answer as the protocol says.
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..._wire import MAX_DEPTH, check_depth, refuse_json_constant
from ...errors import WireFormatError

__all__ = [
    "ABSENT",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "TOO_DEEP",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "decode",
    "encode",
    "error_message",
    "encode_shared",
    "fragment",
    "listed_items",
    "listed_result",
    "nested_too_deep",
    "reply_line",
    "request_line",
    "result_reply",
    "stand_in",
    "text_reply",
]

# JSON-RPC 2.0's own codes, then the ones MCP adds.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800  # as the Language Server Protocol names it; MCP names none
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

TOO_DEEP = f"more than {MAX_DEPTH} levels of arrays/objects"
"""What a value nested deeper than the wire allows is told."""

ABSENT: Any = object()
"""Stands for "no structuredContent" in :func:`text_reply`."""

# ------------------------------------------------------------------------------ decoding

# Built once: json.loads with options builds a new decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=refuse_json_constant)
_SCAN: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    _DECODER  # type: ignore[arg-type]  # typeshed types the argument as the scanner class
)


def decode(text: str) -> Any:
    """The JSON value ``text`` holds (already stripped of surrounding whitespace).

    Raises ``ValueError`` when it is not one JSON value (``NaN`` and ``Infinity``
    included: JSON has no such numbers) and ``RecursionError`` when it nests too deeply
    for the decoder (see :func:`stand_in`).
    """
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        value = _DECODER.decode(text)  # words the error (or takes trailing whitespace)
    return value


def stand_in(text: str) -> dict[str, Any] | None:
    """What a message nested too deeply to decode says at its top level: its ``id``,
    ``method``, ``result`` and ``error`` members (``None`` for one that is an object or an
    array), read by a scan without recursion — or ``None`` when ``text`` is not one object
    whose brackets balance, or a member cannot be read. So a request too deep to decode can
    still be answered with its own id."""
    members = _skim_top_level(text)
    if members is None:
        return None
    found: dict[str, Any] = {}
    for raw_name, raw_value in members.items():
        try:
            name = json.loads(raw_name)
            if name in ("id", "method", "result", "error"):
                found[name] = json.loads(raw_value) if raw_value else None
        except ValueError:
            return None
    return found


def nested_too_deep(value: Any) -> bool:
    """True when ``value`` nests deeper than the wire allows (checked without recursion)."""
    try:
        check_depth(value, "answer")
    except WireFormatError:
        return True
    return False


_STRUCTURE = re.compile(r'["{}\[\],:]')


def _string_end(text: str, start: int) -> int:
    """The index just past the JSON string opening at ``text[start]``, or -1 if unclosed."""
    at = start + 1
    while True:
        at = text.find('"', at)
        if at < 0:
            return -1
        back = at - 1
        while text[back] == "\\":
            back -= 1
        if (at - 1 - back) % 2 == 0:  # an even run of backslashes: the quote is real
            return at + 1
        at += 1


def _skim_top_level(text: str) -> dict[str, str] | None:
    """The raw JSON text of the scalar members of the object ``text`` holds (``""`` for an
    object or array member). Strings are skipped whole (escapes included); brackets only
    count depth. ``None`` unless ``text`` is one object whose brackets balance; raw member
    names keep their quotes."""
    if not text.startswith("{"):
        return None
    members: dict[str, str] = {}
    depth = 0
    key: str | None = None
    expect_key = False
    value_start = -1  # where the value of ``key`` begins, while it is a scalar
    pos = 0
    while True:
        found = _STRUCTURE.search(text, pos)
        if found is None:
            return None  # the object never closes
        at = found.start()
        char = text[at]
        if char == '"':
            end = _string_end(text, at)
            if end < 0:
                return None
            if depth == 1 and expect_key:
                key, expect_key = text[at:end], False
            pos = end
            continue
        if char in "{[":
            if depth == 1 and key is not None and value_start >= 0:
                members[key], value_start = "", -1
            depth += 1
            expect_key = depth == 1
        elif depth == 1 and char in ",}":
            if key is not None and value_start >= 0:
                members[key] = text[value_start:at].strip()
            key, value_start, expect_key = None, -1, char == ","
            if char == "}":
                return members if not text[at + 1 :].strip() else None
        elif char in "}]":
            depth -= 1
        elif char == ":" and depth == 1:
            value_start = at + 1
        pos = at + 1


# ------------------------------------------------------------------------------ encoding

_ENCODERS = {
    ascii_only: json.JSONEncoder(separators=(",", ":"), ensure_ascii=ascii_only, allow_nan=False)
    for ascii_only in (False, True)
}


def _c_encoder(ascii_only: bool) -> Callable[[Any, int], Any] | None:
    """The C encoder behind ``_ENCODERS[ascii_only].encode``, built once.

    ``JSONEncoder.encode`` builds this object anew for every message; reusing it saves
    about a tenth of an answer's cost. It runs without a circular-reference memo (a shared
    memo would not be thread-safe): a cyclic message raises ``RecursionError``, which
    callers treat like any other value JSON cannot carry.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return None
    encoder = _ENCODERS[ascii_only]
    string = json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    made: Callable[[Any, int], Any] = make(
        None, encoder.default, string, None, ":", ",", False, False, False
    )
    return made


_C_ENCODERS = {ascii_only: _c_encoder(ascii_only) for ascii_only in (False, True)}
_C_ENCODE = _C_ENCODERS[False]
_ENCODE_STRING = json.encoder.encode_basestring


def _encode(message: Any, ascii_only: bool) -> bytes:
    fast = _C_ENCODERS[ascii_only]
    if fast is None or message.__class__ is not dict:
        return _ENCODERS[ascii_only].encode(message).encode("utf-8") + b"\n"
    return "".join(fast(message, 0)).encode("utf-8") + b"\n"


def encode(message: Mapping[str, Any] | list[Any]) -> bytes:
    """``message`` as one line of compact UTF-8 JSON ending in ``\\n``.

    JSON never needs a raw newline inside a message, so the line is the whole message.
    Text that is not valid Unicode (lone surrogates) is written escaped (``\\udc80``).
    Raises ``TypeError``/``ValueError`` for a value JSON has no form for (``NaN``, a
    ``set``), ``RecursionError`` for a cyclic or too deeply nested one, ``MemoryError``.
    """
    try:
        return _encode(message, False)
    except UnicodeEncodeError:
        return _encode(message, True)


def encode_shared(entries: Mapping[str, Any]) -> str | None:
    """The text :func:`request_line` writes ``entries`` with: the members of the object
    they make, without its braces (``"a":1,"b":{}``) — or ``None`` when there are none,
    or they cannot be written so (no C encoder, text that is not valid Unicode, a value
    JSON cannot carry): then encode each request whole."""
    if _C_ENCODE is None:
        return None
    try:
        text = "".join(_C_ENCODE(dict(entries), 0))
        text.encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return None
    return text[1:-1] or None


def fragment(value: Mapping[str, Any]) -> str | None:
    """The text :func:`encode` writes for ``value`` inside a message (compact JSON, not
    yet UTF-8), to be written again by :func:`listed_items` — or ``None`` without the C
    encoder, or for a value JSON cannot carry.

    Example::

        >>> fragment({"name": "add", "inputSchema": {"type": "object"}})
        '{"name":"add","inputSchema":{"type":"object"}}'
    """
    if _C_ENCODE is None or value.__class__ is not dict:
        return None
    try:
        return "".join(_C_ENCODE(value, 0))
    except (TypeError, ValueError, RecursionError):
        return None


def listed_items(fragments: list[str | None]) -> bytes | None:
    """The items of a list, ``fragments`` (each item's :func:`fragment`, in order) joined
    as :func:`encode` writes them inside the list, in UTF-8: what :func:`listed_result`
    writes a page from — or ``None`` when one is ``None`` or holds text that is not valid
    Unicode (a lone surrogate, which :func:`encode` escapes).

    Example::

        >>> listed_items(['{"name":"a"}', '{"name":"b"}'])
        b'{"name":"a"},{"name":"b"}'
    """
    if None in fragments:
        return None
    try:
        return ",".join(fragments).encode("utf-8")  # type: ignore[arg-type]  # no None
    except UnicodeEncodeError:
        return None


def listed_result(result: Mapping[str, Any], key: str, items: bytes | None) -> bytes | None:
    """The encoding of ``result``, an object that starts with the list ``result[key]``,
    written from ``items`` (that list's :func:`listed_items`) — the bytes :func:`encode`
    writes for it — to be written into responses by :func:`reply_line`.

    Returns ``None`` when it cannot be written so (no C encoder, ``items`` that is
    ``None``, ``key`` not first in ``result``, text that is not valid Unicode, a value
    JSON cannot carry): then :func:`encode` the message, which words or escapes the
    problem.

    Example::

        >>> listed_result({"tools": [{}], "ttlMs": 5}, "tools", b"{}")
        b'{"tools":[{}],"ttlMs":5}'
    """
    if _C_ENCODE is None or items is None or next(iter(result), None) != key:
        return None
    rest = {name: value for name, value in result.items() if name != key}
    try:
        tail = "," + "".join(_C_ENCODE(rest, 0))[1:] if rest else "}"
        head = "{" + _ENCODE_STRING(key) + ":["
        return b"".join((head.encode("utf-8"), items, b"]", tail.encode("utf-8")))
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return None


def reply_line(request_id: Any, result: bytes | None) -> bytes | None:
    """The line of the response ``{"jsonrpc":"2.0","id":ID,"result":...}`` whose result
    is encoded already (``result``, from :func:`listed_result`): the bytes :func:`encode`
    writes for that message. ``None`` for an id that is not an exact ``int`` or ``str``,
    a ``result`` that is ``None``, or without the C encoder (then :func:`encode` it).

    Example::

        >>> reply_line(7, b'{"tools":[]}')
        b'{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}\\n'
    """
    head = _reply_head(request_id)
    if head is None or result is None:
        return None
    try:
        return b"".join((head.encode("utf-8"), result, b"}\n"))
    except UnicodeEncodeError:  # a lone surrogate in the id: encode escapes it instead
        return None


def request_line(
    request_id: int,
    method: str,
    params: Mapping[str, Any],
    shared_text: str,
    meta: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> bytes | None:
    """The line of the request ``{"jsonrpc":"2.0","id":ID,"method":M,"params":{...params,
    "_meta":{<shared>, ...meta, "progressToken":ID}}}`` (``progressToken`` only with
    ``progress``) — the bytes :func:`encode` writes for that message, in that key order —
    with the shared ``_meta`` entries written from ``shared_text`` (see
    :func:`encode_shared`). ``params`` holds no ``_meta`` of its own.

    Returns ``None`` without the C encoder, or when the message cannot be written so (a
    value JSON cannot carry, text that is not valid Unicode): then build the message and
    :func:`encode` it, which words or escapes the problem.
    """
    fast = _C_ENCODE
    if fast is None or request_id.__class__ is not int or not shared_text:
        return None
    try:
        head = "".join(fast(params, 0))[:-1] + "," if params else "{"
        tail = "," + "".join(fast(meta, 0))[1:-1] if meta else ""
        if progress:
            tail += ',"progressToken":' + int.__repr__(request_id)
        line = "".join(
            (
                '{"jsonrpc":"2.0","id":',
                int.__repr__(request_id),
                ',"method":',
                _ENCODE_STRING(method),
                ',"params":',
                head,
                '"_meta":{',
                shared_text,
                tail,
                "}}}\n",
            )
        )
        return line.encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return None


def _reply_head(request_id: Any) -> str | None:
    """How every response line written from a template starts,
    ``{"jsonrpc":"2.0","id":ID,"result":``, as :func:`encode` writes it — or ``None`` for
    an id that is not an exact ``int`` or ``str``, or without the C encoder."""
    kind = request_id.__class__
    if _C_ENCODE is None or (kind is not int and kind is not str):
        return None
    ident = int.__repr__(request_id) if kind is int else _ENCODE_STRING(request_id)
    return '{"jsonrpc":"2.0","id":' + ident + ',"result":'


def text_reply(
    request_id: Any, text: str, is_error: bool, structured: Any = ABSENT, members: str = ""
) -> bytes | None:
    """The line of a tool's text answer, written from a template:
    ``{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":T}],
    "isError":B}}``, with ``"structuredContent"`` next when ``structured`` is given, and
    ``members`` last (the result's other members as :func:`encode_shared` writes them: a
    modern answer's ``resultType`` and ``_meta``) — the same bytes :func:`encode` writes for
    that message, in that key order.

    ``request_id`` must be an exact ``int`` or ``str`` and ``structured`` a ``dict`` (a
    frozen one is written as it is) or :data:`ABSENT`; otherwise (or without the C
    encoder) returns ``None``. Raises what :func:`encode` raises for a value JSON cannot
    carry (``ValueError`` for a NaN or a lone surrogate, ``TypeError``, ...): then build
    the message and :func:`encode` it, which words or escapes the problem.
    """
    head = _reply_head(request_id)
    if head is None or _C_ENCODE is None:  # (the second: for the type checker)
        return None
    end = "," + members + "}}\n" if members else "}}\n"
    if structured is ABSENT:
        tail = end
    elif isinstance(structured, dict):
        tail = ',"structuredContent":' + "".join(_C_ENCODE(structured, 0)) + end
    else:
        return None
    line = "".join(
        (
            head,
            '{"content":[{"type":"text","text":',
            _ENCODE_STRING(text),
            '}],"isError":',
            "true" if is_error else "false",
            tail,
        )
    )
    return line.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate


def result_reply(
    request_id: Any,
    result: Mapping[str, Any],
    members: str = "",
    written: tuple[str, str] | None = None,
) -> bytes | None:
    """The line of the response ``{"jsonrpc":"2.0","id":ID,"result":R}``, where ``R`` is
    ``result``'s members followed by ``members`` (as :func:`encode_shared` wrote them: a
    modern answer's ``resultType`` and ``_meta``, encoded once per session) — with, given
    ``written = (key, text)``, the member ``result[key]`` written as ``text`` (its
    :func:`fragment`, kept), in its place. The same bytes :func:`encode` writes for that
    message, when no key of ``result`` is among ``members``.

    Returns ``None`` when it cannot be written so (no C encoder, an id that is not an exact
    ``int`` or ``str``, ``result`` not a ``dict``, no ``key`` in it, text that is not valid
    Unicode, a value JSON cannot carry): then :func:`encode` the message, which words or
    escapes the problem.

    Example::

        >>> result_reply(7, {"taskId": "t", "result": {}, "x": 1}, written=("result", '{"a":1}'))
        b'{"jsonrpc":"2.0","id":7,"result":{"taskId":"t","result":{"a":1},"x":1}}\\n'
        >>> result_reply(7, {"taskId": "t"}, '"resultType":"task"')
        b'{"jsonrpc":"2.0","id":7,"result":{"taskId":"t","resultType":"task"}}\\n'
    """
    start = _reply_head(request_id)
    if start is None or _C_ENCODE is None or result.__class__ is not dict:
        return None
    try:
        if written is None:
            body = "".join(_C_ENCODE(result, 0)) if result else "{}"
        else:
            key, text = written
            if key not in result:
                return None
            members_of = list(result.items())
            at = list(result).index(key)
            before, after = dict(members_of[:at]), dict(members_of[at + 1 :])
            head = "".join(_C_ENCODE(before, 0))[:-1] + "," if before else "{"
            tail = "," + "".join(_C_ENCODE(after, 0))[1:] if after else "}"
            body = "".join((head, _ENCODE_STRING(key), ":", text, tail))
        if members:
            body = (body[:-1] + "," if len(body) > 2 else "{") + members + "}"
        return (start + body + "}\n").encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return None


def error_message(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response: ``{"jsonrpc": "2.0", "id": ..., "error": {...}}``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
