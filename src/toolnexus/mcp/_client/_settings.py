"""What an :class:`~toolnexus.mcp.McpClient` was given, checked once: a frozen value.

:class:`ClientSettings` holds the server to reach (a command or a URL), the bounds and the
identity the client opens its connections with (each connection's
:class:`~toolnexus.mcp.ClientSession` comes from :meth:`ClientSettings.new_session`). It
checks every argument as the client is made — the revision, elicitation modes and log level
by making a session — so a mistake is an error at the line that made it, and keeps mapping
fields as read-only copies, so a caller's later change to a dict it passed changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..._frozen import FrozenDict, sealed
from ..._suspension import Answer
from ...errors import InvalidTypeError, InvalidValueError
from ._session import ClientSession

if TYPE_CHECKING:
    from ._oauth import OAuth

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_QUESTION_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "ClientSettings",
    "check_call",
    "default_name",
]

DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_QUESTION_TIMEOUT_MS = 5 * 60_000
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


@sealed
@dataclass(frozen=True, slots=True)
class ClientSettings:
    """An MCP client's arguments, checked (the fields are :class:`McpClient`'s own).

    ``args`` is kept as a tuple, ``headers`` and ``env`` as read-only copies, ``cwd`` as a
    str. What the client is called is its own (:func:`default_name`).

    Example::

        settings = ClientSettings(command="python", args=("-m", "server"))
        assert settings.args == ("-m", "server") and settings.timeout_s == 30.0
    """

    command: str | None = None
    args: Sequence[str] = ()
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=FrozenDict)  # 3.10: no dict default
    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    idle_timeout_ms: int | None = None
    question_timeout_ms: int = DEFAULT_QUESTION_TIMEOUT_MS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    auth: OAuth | None = None
    elicitation: bool = True
    protocol_version: str | None = None
    client_name: str = "toolnexus"
    log_level: str | None = None

    def __post_init__(self) -> None:
        command, args, url, headers = self.command, self.args, self.url, self.headers
        if (command is None) == (url is None):
            raise InvalidValueError(
                "McpClient needs exactly one of command (a stdio server) and url (an HTTP server)"
            )
        if command is not None and (not isinstance(command, str) or not command):
            raise InvalidTypeError(f"command must be a non-empty str, got {command!r}")
        if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
            raise InvalidTypeError(f"args must be a sequence of str, got {args!r}")
        for label, value, allow_none in (
            ("timeout_ms", self.timeout_ms, False),
            ("idle_timeout_ms", self.idle_timeout_ms, True),
            ("question_timeout_ms", self.question_timeout_ms, False),
            ("max_message_bytes", self.max_message_bytes, False),
        ):
            if value is None and allow_none:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidValueError(f"{label} must be an int > 0, got {value!r}")
        for label, mapping in (("headers", headers), ("env", self.env)):
            if mapping is not None and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
            ):
                raise InvalidTypeError(f"{label} must map str to str")
        if self.auth is not None:
            from ._oauth import OAuth

            if not isinstance(self.auth, OAuth):
                raise InvalidTypeError(
                    f"auth must be a toolnexus.mcp.OAuth, got {type(self.auth).__name__}"
                )
            if url is None:
                raise InvalidValueError("auth (OAuth) is for an HTTP server: give url")
            if any(key.lower() == "authorization" for key in headers or {}):
                raise InvalidValueError(
                    "give either an Authorization header or auth (OAuth gets the token)"
                )
        object.__setattr__(self, "args", tuple(args))
        object.__setattr__(self, "headers", FrozenDict(headers or {}))
        if self.env is not None:
            object.__setattr__(self, "env", FrozenDict(self.env))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", os.fspath(self.cwd))
        # The session checks the rest now, so a bad revision or level is a mistake here.
        self.new_session()

    def new_session(self) -> ClientSession:
        """A fresh :class:`~toolnexus.mcp.ClientSession` for one connection."""
        return ClientSession(
            name=self.client_name,
            elicitation=("form", "url") if self.elicitation else (),
            protocol_version=self.protocol_version,
            log_level=self.log_level,
        )

    @property
    def timeout_s(self) -> float:
        """``timeout_ms`` in seconds: the bound on each phase of opening."""
        return self.timeout_ms / 1000

    @property
    def idle_s(self) -> float | None:
        """``idle_timeout_ms`` in seconds (``None``: no idle bound)."""
        return self.idle_timeout_ms / 1000 if self.idle_timeout_ms is not None else None

    @property
    def question_s(self) -> float:
        """``question_timeout_ms`` in seconds: how long a parked question waits."""
        return self.question_timeout_ms / 1000


def check_call(timeout_ms: int | None, answer: Answer | None) -> None:
    """Check the arguments of one ``tools/call`` (the client's own budget, the answer)."""
    if timeout_ms is not None and (
        isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0
    ):
        raise InvalidValueError(f"timeout_ms must be None or an int >= 0, got {timeout_ms!r}")
    if answer is not None and not isinstance(answer, Answer):
        raise InvalidTypeError(f"answer must be an Answer, got {type(answer).__name__}")


def default_name(command: str | None, url: str | None) -> str:
    """What a client of ``command`` (its file name) or ``url`` (its host) is called."""
    from ..._schema import sanitize_name

    if command is not None:
        base = os.path.basename(command) or "mcp"
        return sanitize_name(base.rsplit(".", 1)[0] if base.endswith(".exe") else base)
    from urllib.parse import urlsplit

    host = urlsplit(url or "").hostname or "mcp"
    return sanitize_name(host)
