"""MCP's protocol facts, shared by the server and the client: revisions, ``_meta`` keys,
capabilities, log levels, and the Streamable HTTP header rules.

Each rule both sides apply is written here once: which revisions exist and how they are
ordered, what an ``elicitation`` capability declares, how a value rides in an
``Mcp-Param-*`` / ``Mcp-Name`` header (the ``=?base64?…?=`` sentinel). Nothing here reads or
writes a stream.
"""

from __future__ import annotations

import binascii
import json
from typing import Any, TypeGuard

from ..._context import LOG_LEVELS

__all__ = [
    "FIELD_NAME",
    "LEGACY_PROTOCOL_VERSIONS",
    "META_CLIENT_CAPABILITIES",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "MODERN_PROTOCOL_VERSIONS",
    "NAMED_PARAM",
    "TASKS_EXTENSION",
    "at_least",
    "authority",
    "decode_header_value",
    "describe",
    "host_name",
    "elicitation_modes",
    "encode_header_value",
    "header_text",
    "is_request_id",
    "level_rank",
]

MODERN_PROTOCOL_VERSIONS: tuple[str, ...] = ("2026-07-28",)
"""Revisions spoken statelessly, with per-request ``_meta`` (newest last)."""

LEGACY_PROTOCOL_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Revisions negotiated with the ``initialize`` handshake (oldest first)."""

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_ANSWER_UNUSED = "dev.toolnexus/answerUnused"
"""In a ``CallToolResult``'s ``_meta`` (``true``): the server refused the retry's answer
without using it (its answer store was down): the same ``inputResponses`` may come again.
A toolnexus client then tells its host the answer was not used."""
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The tasks extension's id (SEP-2663), under ``capabilities.extensions``."""

NAMED_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
"""Methods whose ``params`` carry the name the ``Mcp-Name`` header repeats, and its key."""

FIELD_NAME = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
"""An HTTP field name (RFC 9110's token), as a regular expression: what a header's name
may be — the server's check of a request's, the client's of what it sends, an
``x-mcp-header``'s after ``Mcp-Param-``."""

_LEGACY_ORDER = {version: index for index, version in enumerate(LEGACY_PROTOCOL_VERSIONS)}
_LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}
_SENTINEL_OPEN, _SENTINEL_CLOSE = "=?base64?", "?="


def at_least(version: str, than: str) -> bool:
    """Whether revision ``version`` has what legacy revision ``than`` introduced (every
    modern revision does)."""
    if version in MODERN_PROTOCOL_VERSIONS:
        return True
    return _LEGACY_ORDER.get(version, -1) >= _LEGACY_ORDER[than]


def elicitation_modes(capability: Any) -> tuple[bool, bool]:
    """``(form, url)`` from an ``elicitation`` client capability; ``{}`` means form only."""
    if not isinstance(capability, dict):
        return False, False
    form = isinstance(capability.get("form"), dict)
    url = isinstance(capability.get("url"), dict)
    if not form and not url:
        return True, False
    return form, url


def level_rank(level: Any) -> int | None:
    """The rank of a log level name (``"debug"`` lowest), or ``None`` for anything else."""
    return _LEVEL_RANK.get(level) if isinstance(level, str) else None


def is_request_id(value: Any) -> TypeGuard[str | int]:
    """Whether ``value`` can be a JSON-RPC request id here: a string or an integer."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def describe(value: Any) -> str:
    """A short description of a value a peer sent, for an error message."""
    from ..._wire import describe as wire_describe

    return wire_describe(value)


# --------------------------------------------------------------------- Streamable HTTP headers


def header_text(value: Any) -> str:
    """The text a JSON value stands for in a header: strings as they are, ``true``/
    ``false``, integral numbers without a fraction, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, separators=(",", ":"))


def encode_header_value(text: str) -> str:
    """``text`` as a header value: as it is when it is visible ASCII without surrounding
    whitespace, else (or when it looks like the sentinel itself) ``=?base64?…?=`` of its
    UTF-8 bytes."""
    plain = (
        all(" " <= char <= "~" for char in text)
        and text.strip() == text
        and not (text.startswith(_SENTINEL_OPEN) and text.endswith(_SENTINEL_CLOSE))
    )
    if plain:
        return text
    import base64  # here: a stdio server never encodes a header

    return _SENTINEL_OPEN + base64.b64encode(text.encode("utf-8")).decode("ascii") + _SENTINEL_CLOSE


def decode_header_value(raw: str) -> str | None:
    """The text a header value carries (the sentinel decoded), or ``None`` when its
    ``=?base64?…?=`` payload is not valid base64 of UTF-8."""
    if not (raw.startswith(_SENTINEL_OPEN) and raw.endswith(_SENTINEL_CLOSE)):
        return raw
    encoded = raw[len(_SENTINEL_OPEN) : -len(_SENTINEL_CLOSE)]
    import base64

    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def authority(host: str, scheme: str = "http") -> str:
    """A ``Host`` value (or a URL's netloc) as ``name:port``: lower case, and the port the
    scheme implies when none is written.

    Example::

        >>> authority("LocalHost"), authority("[::1]:8000"), authority("x.dev", "https")
        ('localhost:80', '[::1]:8000', 'x.dev:443')
    """
    name = host_name(host)
    rest = host.strip().lower()[len(name) :]
    port = rest[1:] if rest.startswith(":") and rest[1:].isdigit() else ""
    return f"{name}:{int(port) if port else (443 if scheme == 'https' else 80)}"


def host_name(host: str) -> str:
    """A ``Host`` value's name: lower case, without its port (``[::1]`` keeps brackets)."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end > 0 else host
    name, _, port = host.rpartition(":")
    return name if name and port.isdigit() else host
