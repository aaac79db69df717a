"""A tool result as MCP content blocks, and MCP content blocks read back as a result.

Everything that maps :class:`~toolnexus.Part` to MCP's content blocks lives here, both
ways: the server session writes ``tools/call`` results with :func:`content_blocks`, and
:func:`result_from_mcp` reads the ``CallToolResult`` of an MCP server used as a tool source.

The text block (``output``) comes first; each part follows as one block: a text part as
``text``, image bytes as ``image``, audio bytes as ``audio``, any other bytes (a file) as an
embedded ``resource`` with ``blob`` and ``mimeType``, and a part that is a URL as a
``resource_link``. A block the client's protocol revision does not know (``audio`` before
2025-03-26, ``resource_link`` before 2025-06-18) becomes the family's placeholder text,
never a block the client would drop.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._frozen import thaw
from ..._result import STRUCTURED_KEY, ToolResult
from ..._wire import describe
from ...errors import PartTooLargeError, WireFormatError

if TYPE_CHECKING:
    from ..._parts import Part

# Parts (and urllib.parse, for their URIs) load with the first result that has one: most
# results are text, and a server's start-up would pay a tenth more for them.

__all__ = ["content_blocks", "downgrade", "part_block", "result_from_mcp"]

_URI_SCHEME = "attachment://"
_NAMED_URI = r"[A-Za-z][A-Za-z0-9+.\-]*://"


def downgrade(block: dict[str, Any], *, audio: bool, resource_links: bool) -> dict[str, Any]:
    """``block`` as a client of an older revision reads it: an ``audio`` or
    ``resource_link`` block it does not know becomes the family's placeholder text."""
    kind = block.get("type")
    if (kind == "audio" and not audio) or (kind == "resource_link" and not resource_links):
        data = block.get("data")
        size = len(data) // 4 * 3 - data[-2:].count("=") if isinstance(data, str) else 0
        prefix = str(block.get("mimeType") or "").split("/", 1)[0]
        part_type = prefix if prefix in ("image", "audio") else "file"
        text = f"[unsupported {part_type} part ({block.get('mimeType')}, {size} bytes)]"
        return {"type": "text", "text": text}
    return block


def content_blocks(
    result: ToolResult, *, audio: bool = True, resource_links: bool = True
) -> list[dict[str, Any]]:
    """``result`` as MCP content: its text, then one block per part.

    ``audio`` / ``resource_links`` say whether the client's revision has those block types
    (else such parts become placeholder text). The text block is left out only when the
    output is empty and the first part is not text, so a tool that returns just an image
    sends just an image.
    """
    parts = result.parts
    if not parts:
        return [{"type": "text", "text": result.output}]
    blocks: list[dict[str, Any]] = []
    if result.output or parts[0].type == "text":
        blocks.append({"type": "text", "text": result.output})
    for index, part in enumerate(parts):
        blocks.append(part_block(part, index, audio=audio, resource_links=resource_links))
    return blocks


def part_block(
    part: Part, index: int, *, audio: bool = True, resource_links: bool = True
) -> dict[str, Any]:
    """One part as one MCP content block (``index`` names an unnamed file part). A file
    part named with a URI (``test://report``) is embedded under that URI."""
    if part.type == "text":
        return {"type": "text", "text": part.text}
    if part.url is not None:
        if not resource_links:
            return {"type": "text", "text": part.placeholder()}
        return {
            "type": "resource_link",
            "uri": part.url,
            "name": part.name or _name_of(part.url) or f"part-{index}",
            "mimeType": part.mime_type,
        }
    if part.type == "image":
        return {"type": "image", "data": part.data, "mimeType": part.mime_type}
    if part.type == "audio":
        if not audio:
            return {"type": "text", "text": part.placeholder()}
        return {"type": "audio", "data": part.data, "mimeType": part.mime_type}
    # A file (or a type MCP has no block for) travels as an embedded binary resource.
    from urllib.parse import quote

    name = part.name or f"part-{index}"
    return {
        "type": "resource",
        "resource": {
            "uri": name if re.match(_NAMED_URI, name) else _URI_SCHEME + quote(name),
            "mimeType": part.mime_type,
            "blob": part.data,
        },
    }


def _name_of(uri: str) -> str | None:
    from urllib.parse import unquote

    rest = uri.split("://", 1)[-1].split("?", 1)[0].split("#", 1)[0].rstrip("/")
    tail = unquote(rest.rsplit("/", 1)[-1]) if rest else ""
    return tail or None


def result_from_mcp(result: Any) -> ToolResult:
    """Read an MCP ``CallToolResult`` back as a :class:`~toolnexus.ToolResult`.

    ``result`` is the JSON object (a dict) or an SDK object with the same attributes
    (``content``, ``isError``/``is_error``, ``structuredContent``/``structured_content``).
    A leading text block becomes ``output``; every later block a part: ``image`` and
    ``audio`` by type, an embedded ``resource`` a file part (its ``blob``, or its ``text``
    as UTF-8 bytes; named after the URI's last segment), a ``resource_link`` a URL part
    typed by its mime type, a later text block a text part. A block of a type MCP may add
    later becomes the placeholder text ``[unsupported MCP <type> block]``, never dropped.
    ``structuredContent`` is kept in ``metadata["structuredContent"]``.

    Raises :class:`~toolnexus.errors.WireFormatError` naming the block and field at fault
    (``content[1].mimeType``).

    Example::

        >>> from toolnexus.mcp import result_from_mcp
        >>> result_from_mcp({"content": [
        ...     {"type": "text", "text": "a chart"},
        ...     {"type": "image", "data": "R0lGODlh", "mimeType": "image/gif"}]})
        <ToolResult ok 'a chart' +1 part>
    """
    if result.__class__ is dict and "structuredContent" not in result:
        # What a call answers most: one text block (tests/test_mcp_content.py pins that
        # this gives the general path's result).
        content = result.get("content")
        if content.__class__ is list and len(content) == 1:
            block = content[0]
            if block.__class__ is dict and block.get("type") == "text":
                text = block.get("text")
                is_error = result.get("isError", False)
                if text.__class__ is str and is_error.__class__ is bool:
                    return ToolResult(text, is_error)
    content = _attr(result, "content")
    if not isinstance(content, (list, tuple)):
        raise WireFormatError(
            "CallToolResult",
            "content",
            f"must be an array of content blocks, got {describe(content)}",
        )
    is_error = _attr(result, "isError", "is_error")
    if is_error is None:
        is_error = False
    if not isinstance(is_error, bool):
        raise WireFormatError(
            "CallToolResult", "isError", f"must be a boolean, got {describe(is_error)}"
        )
    blocks = [_plain_block(block) for block in content]
    output = ""
    start = 0
    if blocks and blocks[0].get("type") == "text":
        output = _text_of(blocks[0], 0)
        start = 1
    parts = [_part_of(blocks[i], i) for i in range(start, len(blocks))]
    structured = _attr(result, "structuredContent", "structured_content")
    metadata = None if structured is None else {STRUCTURED_KEY: thaw(structured)}
    return ToolResult(output, is_error, metadata, parts or ())


def _attr(obj: Any, key: str, snake: str | None = None) -> Any:
    if obj.__class__ is dict or isinstance(obj, Mapping):  # (a dict: no ABC check)
        return obj.get(key)
    value = getattr(obj, key, None)
    if value is None and snake is not None:
        value = getattr(obj, snake, None)
    return value


def _plain_block(block: Any) -> Mapping[str, Any]:
    if block.__class__ is dict or isinstance(block, Mapping):  # (a dict: no ABC check)
        return block
    dump = getattr(block, "model_dump", None)  # an SDK (pydantic) object
    if callable(dump):
        plain = dump(by_alias=True, exclude_none=True, mode="json")
        if isinstance(plain, Mapping):
            return plain
    raise WireFormatError(
        "CallToolResult", "content", f"holds a {type(block).__name__}, not a content block object"
    )


def _text_of(block: Mapping[str, Any], index: int) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise WireFormatError(
            "CallToolResult", f"content[{index}].text", f"must be a string, got {describe(text)}"
        )
    return text


def _part_of(block: Mapping[str, Any], index: int) -> Part:
    from ..._parts import Part

    where = f"content[{index}]"
    kind = block.get("type")
    try:
        if kind == "text":
            return Part("text", text=_text_of(block, index))
        if kind in ("image", "audio"):
            return Part(kind, mime_type=block.get("mimeType"), data=block.get("data"))
        if kind == "resource":
            resource = block.get("resource")
            if not isinstance(resource, Mapping):
                raise WireFormatError(
                    "CallToolResult",
                    f"{where}.resource",
                    f"must be an object, got {describe(resource)}",
                )
            where += ".resource"
            uri = resource.get("uri")
            name = _name_of(uri) if isinstance(uri, str) else None
            mime = resource.get("mimeType")
            blob = resource.get("blob")
            if blob is None and isinstance(resource.get("text"), str):
                raw = resource["text"].encode("utf-8")
                blob = binascii.b2a_base64(raw, newline=False).decode("ascii")
                mime = mime or "text/plain"
            return Part("file", mime_type=mime or "application/octet-stream", data=blob, name=name)
        if kind == "resource_link":
            mime = block.get("mimeType") or "application/octet-stream"
            prefix = mime.split("/", 1)[0] if isinstance(mime, str) else ""
            return Part(
                prefix if prefix in ("image", "audio") else "file",
                mime_type=mime,
                url=block.get("uri"),
                name=block.get("name"),
            )
    except (PartTooLargeError, WireFormatError):
        raise
    except ValueError as exc:
        # Point at the block's field (content[2].mimeType), not at the Part's.
        field = getattr(exc, "field", None)
        problem = getattr(exc, "problem", None) or str(exc)
        names = {"resource": {"data": "blob"}, "resource_link": {"data": "uri", "url": "uri"}}
        target = names.get(str(kind), {}).get(field or "", field)
        raise WireFormatError(
            "CallToolResult", f"{where}.{target}" if target else where, problem
        ) from None
    return Part("text", text=f"[unsupported MCP {kind} block]")
