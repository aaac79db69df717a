"""Non-text tool output: :class:`Part`, one flat record for text, images, files and audio.

A part is **bytes or a URL, never a path**: a path does not survive a persisted transcript
or a process boundary, so the constructors read a path, ``os.PathLike``, raw bytes, a binary
file-like object or a ``data:`` URL at once and keep standard base64; an ``https:`` URL is
kept as a URL. Mime types come from one fixed extension table (never sniffed from content,
never from the platform's mime database, which differs between machines). Every rule about
a part's shape and size lives here; the provider and MCP renderings live with their styles.

A part's ``data`` never reaches a log, an event, a repr or an error message: what those show
is :meth:`Part.summary` (``{type, mimeType, bytes}``).
"""

from __future__ import annotations

import binascii
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from ._frozen import sealed
from .errors import InvalidTypeError, InvalidValueError, PartTooLargeError, WireFormatError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is not free
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_MAX_PART_BYTES",
    "EXTENSIONS",
    "Part",
    "get_max_part_bytes",
    "set_max_part_bytes",
]

EXTENSIONS: Mapping[str, tuple[str, str]] = {
    "png": ("image", "image/png"),
    "jpg": ("image", "image/jpeg"),
    "jpeg": ("image", "image/jpeg"),
    "gif": ("image", "image/gif"),
    "webp": ("image", "image/webp"),
    "pdf": ("file", "application/pdf"),
    "mp3": ("audio", "audio/mpeg"),
    "wav": ("audio", "audio/wav"),
}
"""The family's fixed extension table: lower-case extension -> (part type, mime type)."""

DEFAULT_MAX_PART_BYTES = 20 * 1024 * 1024
"""The process-wide ceiling on a part's decoded size until :func:`set_max_part_bytes`."""

_limit_lock = threading.Lock()
_max_part_bytes = DEFAULT_MAX_PART_BYTES

_PREFIX = {"image": "image/", "audio": "audio/"}


def get_max_part_bytes() -> int:
    """The process-wide ceiling on a part's decoded size, in bytes (maxPartBytes).

    Example::

        >>> from toolnexus._parts import get_max_part_bytes
        >>> get_max_part_bytes() == 20 * 1024 * 1024
        True
    """
    return _max_part_bytes


def set_max_part_bytes(limit: int) -> int:
    """Set the process-wide ceiling on a part's decoded size; return the previous one.

    It applies to every part built afterwards (constructors, ``Part(...)``, reading wire
    JSON); a constructor's ``max_bytes=`` overrides it for one call. Raises ``ValueError``
    for anything but an int >= 0.

    Example::

        >>> from toolnexus._parts import set_max_part_bytes
        >>> previous = set_max_part_bytes(1024)
        >>> _ = set_max_part_bytes(previous)      # restore it
    """
    global _max_part_bytes
    _check_limit(limit, "set_max_part_bytes()")
    with _limit_lock:
        previous, _max_part_bytes = _max_part_bytes, limit
    return previous


def _check_limit(limit: object, where: str) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise InvalidValueError(f"{where} takes an int >= 0 (bytes), got {limit!r}")
    return limit


@sealed
@dataclass(frozen=True, slots=True, repr=False)
class Part:
    """One piece of a tool's output: text, an image, a file or an audio clip.

    A flat record with an open ``type``: a ``text`` part carries ``text``; every other part
    carries ``mime_type`` and exactly one of ``data`` (standard padded base64, no line
    breaks) or ``url``. Build parts with :meth:`image`, :meth:`file`, :meth:`audio` and
    :meth:`from_text`; ``Part(...)`` itself takes the fields as they are.

    Attributes:
        type: ``"text"``, ``"image"``, ``"file"``, ``"audio"`` (other types are carried
            as they are, and degrade to a placeholder where no block is defined).
        text: the text of a ``text`` part.
        mime_type: e.g. ``"image/png"`` (wire key ``mimeType``).
        data: the bytes, standard base64.
        url: where the content is, instead of ``data``.
        name: a file name (set from a path or a named file object), e.g. ``"report.pdf"``.

    Raises ``ValueError`` for a malformed record and
    :class:`~toolnexus.errors.PartTooLargeError` when its decoded size is over the
    process-wide :func:`get_max_part_bytes`.

    Example::

        >>> from toolnexus import Part
        >>> chart = Part.image(b"\\x89PNG...", "image/png")
        >>> chart
        <Part image image/png 7 bytes>
        >>> chart.to_dict()
        {'type': 'image', 'mimeType': 'image/png', 'data': 'iVBORy4uLg=='}
    """

    type: str
    text: str | None = None
    mime_type: str | None = None
    data: str | None = None
    url: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        _validate(self, _max_part_bytes, check_data=True)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_text(cls, text: str) -> Part:
        """A text part.

        Example::

            >>> Part.from_text("see the chart below").to_dict()
            {'type': 'text', 'text': 'see the chart below'}
        """
        if not isinstance(text, str):
            raise InvalidTypeError(f"Part.from_text() takes a str, got {type(text).__name__}")
        return cls("text", text=text)

    @classmethod
    def image(
        cls,
        source: Any,
        mime_type: str | None = None,
        *,
        name: str | None = None,
        max_bytes: int | None = None,
    ) -> Part:
        """An image part from a path, ``os.PathLike``, bytes, a binary file object, a
        ``data:`` URL or an ``https:`` URL.

        The mime type is ``mime_type`` when given (it must be ``image/...``), else the
        data URL's, else the one the extension table gives the file name or URL (png, jpg,
        jpeg, gif, webp). Bytes, files and data URLs are read at once (a file object is
        read to its end and not closed); an ``https:`` URL is kept as a URL. ``max_bytes``
        overrides the process-wide ceiling for this call.

        Raises ``ValueError`` when no mime type can be found or it is not an image's,
        :class:`~toolnexus.errors.PartTooLargeError` when the decoded bytes exceed the
        ceiling, ``TypeError`` for a source of another kind, and the ``OSError`` of a
        path that cannot be read.

        Example::

            >>> Part.image("https://example.test/chart.png")
            <Part image image/png url>
            >>> Part.image("data:image/gif;base64,R0lGODlh").size
            6
        """
        return _build("image", source, mime_type, name, max_bytes)

    @classmethod
    def file(
        cls,
        source: Any,
        mime_type: str | None = None,
        *,
        name: str | None = None,
        max_bytes: int | None = None,
    ) -> Part:
        """A file part (a PDF, a CSV, …); sources and rules as in :meth:`image`. The
        extension table knows only ``pdf``; any other file needs ``mime_type``.

        Example::

            >>> Part.file(b"a,b\\n1,2\\n", "text/csv", name="rows.csv")
            <Part file text/csv 8 bytes 'rows.csv'>
        """
        return _build("file", source, mime_type, name, max_bytes)

    @classmethod
    def audio(
        cls,
        source: Any,
        mime_type: str | None = None,
        *,
        name: str | None = None,
        max_bytes: int | None = None,
    ) -> Part:
        """An audio part; sources and rules as in :meth:`image` (the table knows ``mp3``
        and ``wav``; ``mime_type`` must be ``audio/...``).

        Example::

            >>> Part.audio(b"RIFF....WAVE", "audio/wav").mime_type
            'audio/wav'
        """
        return _build("audio", source, mime_type, name, max_bytes)

    # ------------------------------------------------------------------ views

    @property
    def size(self) -> int:
        """The decoded size in bytes: of ``data`` (0 for a URL part), of a text part's
        UTF-8.

        Example::

            >>> Part.file(b"12345", "text/plain").size
            5
        """
        if self.data is not None:
            return _decoded_length(self.data)
        if self.text is not None:
            return len(self.text.encode("utf-8"))
        return 0

    def to_bytes(self) -> bytes:
        """The content as bytes: ``data`` decoded, or a text part's UTF-8.

        Raises ``ValueError`` for a URL part (it holds no bytes: fetch its ``url``).

        Example::

            >>> Part.file(b"hello", "text/plain").to_bytes()
            b'hello'
        """
        if self.data is not None:
            return binascii.a2b_base64(self.data)
        if self.text is not None:
            return self.text.encode("utf-8")
        raise InvalidValueError(f"a URL {self.type} part holds no bytes; fetch its url instead")

    @property
    def data_url(self) -> str | None:
        """``data:<mime>;base64,<data>`` for a part with data, else None.

        Example::

            >>> Part.image(b"GIF89a", "image/gif").data_url
            'data:image/gif;base64,R0lGODlh'
        """
        if self.data is None:
            return None
        return f"data:{self.mime_type};base64,{self.data}"

    def summary(self) -> dict[str, Any]:
        """What a log or an event may show of a part: ``{type, mimeType, bytes}``.

        Example::

            >>> Part.image(b"GIF89a", "image/gif").summary()
            {'type': 'image', 'mimeType': 'image/gif', 'bytes': 6}
        """
        out: dict[str, Any] = {"type": self.type}
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        out["bytes"] = self.size
        return out

    def describe(self) -> str:
        """The family's prose form: ``<type> (<mimeType>, <bytes> bytes)``.

        Example::

            >>> Part.image("https://example.test/a.png").describe()
            'image (image/png, 0 bytes)'
        """
        return f"{self.type} ({self.mime_type or 'text/plain'}, {self.size} bytes)"

    def placeholder(self) -> str:
        """The text that stands in for a part a provider cannot carry:
        ``[unsupported <type> part (<mimeType>, <bytes> bytes)]``.

        Example::

            >>> Part.audio(b"ID3", "audio/mpeg").placeholder()
            '[unsupported audio part (audio/mpeg, 3 bytes)]'
        """
        return (
            f"[unsupported {self.type} part ({self.mime_type or 'text/plain'}, {self.size} bytes)]"
        )

    # ------------------------------------------------------------------ wire

    def to_dict(self) -> dict[str, Any]:
        """The wire form: keys ``type, text, mimeType, data, url, name`` in that order,
        unset ones omitted.

        Example::

            >>> Part.image("https://example.test/a.png").to_dict()
            {'type': 'image', 'mimeType': 'image/png', 'url': 'https://example.test/a.png'}
        """
        out: dict[str, Any] = {"type": self.type}
        if self.text is not None:
            out["text"] = self.text
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        if self.data is not None:
            out["data"] = self.data
        if self.url is not None:
            out["url"] = self.url
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, max_bytes: int | None = None) -> Part:
        """Rebuild a part from its wire form.

        Raises :class:`~toolnexus.errors.WireFormatError` (a ``ValueError``) naming the
        field at fault, and :class:`~toolnexus.errors.PartTooLargeError` over the ceiling
        (``max_bytes`` overrides the process-wide one).

        Example::

            >>> Part.from_dict({"type": "image", "mimeType": "image/gif", "data": "R0lGODlh"})
            <Part image image/gif 6 bytes>
        """
        if not isinstance(data, Mapping):
            from ._wire import describe

            raise WireFormatError("Part", None, f"must be a JSON object, got {describe(data)}")
        values: dict[str, Any] = {}
        for key, attr in _WIRE_KEYS:
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                from ._wire import describe

                raise WireFormatError("Part", key, f"must be a string, got {describe(value)}")
            values[attr] = value
        if values["type"] is None:
            raise WireFormatError("Part", "type", 'is missing; expected a string such as "image"')
        part = object.__new__(cls)
        for attr, value in values.items():
            object.__setattr__(part, attr, value)
        limit = _max_part_bytes if max_bytes is None else _check_limit(max_bytes, "max_bytes")
        try:
            _validate(part, limit, check_data=True)
        except _ShapeError as exc:
            raise WireFormatError("Part", exc.field, exc.problem) from None
        return part

    def __repr__(self) -> str:
        # Never the data: a repr ends up in logs and tracebacks.
        if self.type == "text" and self.text is not None:
            text = self.text if len(self.text) <= 40 else self.text[:37] + "..."
            return f"<Part text {text!r}>"
        where = "url" if self.url is not None else f"{self.size} bytes"
        name = f" {self.name!r}" if self.name is not None else ""
        return f"<Part {self.type} {self.mime_type} {where}{name}>"


_WIRE_KEYS = (
    ("type", "type"),
    ("text", "text"),
    ("mimeType", "mime_type"),
    ("data", "data"),
    ("url", "url"),
    ("name", "name"),
)
_ATTR_TO_WIRE = {attr: key for key, attr in _WIRE_KEYS}


class _ShapeError(ValueError):
    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(f"Part.{field}: {problem}" if field else f"Part {problem}")
        self.field = field
        self.problem = problem


def _validate(part: Part, limit: int, *, check_data: bool) -> None:
    """Check a part's shape (and its base64 when ``check_data``) and its decoded size."""
    if not isinstance(part.type, str) or not part.type:
        raise _ShapeError("type", f"must be a non-empty string such as 'image', got {part.type!r}")
    for attr in ("text", "mime_type", "data", "url", "name"):
        value = getattr(part, attr)
        if value is not None and not isinstance(value, str):
            raise _ShapeError(_ATTR_TO_WIRE[attr], f"must be a string, got {type(value).__name__}")
    if part.type == "text":
        if part.text is None:
            raise _ShapeError("text", "is missing; a text part carries its text")
        for attr in ("mime_type", "data", "url"):
            if getattr(part, attr) is not None:
                raise _ShapeError(_ATTR_TO_WIRE[attr], "must be unset on a text part")
        return
    if not part.mime_type or "/" not in part.mime_type:
        raise _ShapeError(
            "mimeType",
            f"must be a mime type such as 'image/png' (type is {part.type!r}), "
            f"got {part.mime_type!r}",
        )
    if (part.data is None) == (part.url is None):
        raise _ShapeError(
            "data",
            f"must be set, or url, but not both (type is {part.type!r}); "
            f"got {'both' if part.data is not None else 'neither'}",
        )
    if part.url is not None:
        if not part.url:
            raise _ShapeError("url", "must not be empty")
        return
    data = part.data
    assert data is not None
    if check_data and not _is_base64(data):
        raise _ShapeError("data", "must be standard base64 (padded, no line breaks)")
    size = _decoded_length(data)
    if size > limit:
        raise PartTooLargeError(part.type, size, limit)


def _is_base64(text: str) -> bool:
    global _b64_pattern
    if len(text) % 4:
        return False
    if _b64_pattern is None:
        import re

        _b64_pattern = re.compile(r"[A-Za-z0-9+/]*={0,2}")
    return _b64_pattern.fullmatch(text) is not None


_b64_pattern: Any = None


def _decoded_length(data: str) -> int:
    return len(data) // 4 * 3 - (data[-2:].count("=") if data else 0)


# --------------------------------------------------------------------------- building


def _build(
    kind: str, source: Any, mime_type: str | None, name: str | None, max_bytes: int | None
) -> Part:
    limit = _max_part_bytes if max_bytes is None else _check_limit(max_bytes, "max_bytes")
    if mime_type is not None and (not isinstance(mime_type, str) or "/" not in mime_type):
        raise InvalidValueError(
            f"mime_type must be a mime type such as 'image/png', got {mime_type!r}"
        )
    if name is not None and not isinstance(name, str):
        raise InvalidTypeError(f"name must be a str or None, got {type(name).__name__}")
    url: str | None = None
    raw: bytes | None = None
    data: str | None = None
    label: str | None = None  # what the source is called, for mime lookup and messages
    if isinstance(source, str) and source[:5].lower() == "data:":
        declared, data = _parse_data_url(source, kind)
        mime_type = mime_type or declared
        label = "the data: URL"
    elif isinstance(source, str) and source[:6].lower() == "https:":
        url = source
        label = source
    elif isinstance(source, str) and source[:5].lower() == "http:":
        raise InvalidValueError(
            f"Part.{kind}() keeps only https: URLs; download {source!r} and pass the bytes"
        )
    elif isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not isinstance(path, str):
            path = os.fsdecode(path)
        label = path
        if mime_type is None:  # before reading: a wrong file fails fast
            mime_type = _mime_from_table(kind, path)
        size = os.stat(path).st_size
        if size > limit:  # refuse before reading a huge file into memory
            raise PartTooLargeError(kind, size, limit)
        with open(path, "rb") as handle:
            raw = handle.read()
        name = name if name is not None else os.path.basename(path)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
    elif callable(getattr(source, "read", None)):
        raw = source.read()
        if isinstance(raw, str):
            raise InvalidTypeError(
                f"Part.{kind}(): the file object returned text; open it in binary mode ('rb')"
            )
        if not isinstance(raw, (bytes, bytearray, memoryview)):
            raise InvalidTypeError(
                f"Part.{kind}(): the file object's read() returned {type(raw).__name__}, not bytes"
            )
        raw = bytes(raw)
        source_name = getattr(source, "name", None)
        if isinstance(source_name, str) and source_name:
            label = source_name
            name = name if name is not None else os.path.basename(source_name)
    else:
        raise InvalidTypeError(
            f"Part.{kind}() takes a path, os.PathLike, bytes, a binary file object, a data: "
            f"URL or an https: URL; got {type(source).__name__}"
        )
    if mime_type is None:
        mime_type = _mime_from_table(kind, label if label is not None else name)
    prefix = _PREFIX.get(kind)
    if prefix is not None and not mime_type.startswith(prefix):
        raise InvalidValueError(
            f"Part.{kind}() needs a {prefix}... mime type, got {mime_type!r}; "
            f"use Part.file() for other content"
        )
    if raw is not None:
        if len(raw) > limit:
            raise PartTooLargeError(kind, len(raw), limit)
        data = binascii.b2a_base64(raw, newline=False).decode("ascii")
    part = object.__new__(Part)
    for attr, value in (
        ("type", kind),
        ("text", None),
        ("mime_type", mime_type),
        ("data", data),
        ("url", url),
        ("name", name),
    ):
        object.__setattr__(part, attr, value)
    # Data we encoded ourselves is valid base64; a data: URL's was checked on parsing.
    _validate(part, limit, check_data=False)
    return part


def _mime_from_table(kind: str, label: str | None) -> str:
    if label is None:
        raise InvalidValueError(
            f"Part.{kind}() cannot tell the mime type of raw bytes; pass mime_type= "
            f"(e.g. {_EXAMPLE_MIME[kind]!r})"
        )
    base = label.split("?", 1)[0].split("#", 1)[0] if "://" in label else label
    tail = base.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    extension = tail.rsplit(".", 1)[-1].lower() if "." in tail else ""
    found = EXTENSIONS.get(extension)
    if found is None:
        known = ", ".join(ext for ext, (k, _) in EXTENSIONS.items() if k == kind)
        raise InvalidValueError(
            f"Part.{kind}() cannot tell the mime type of {label!r} (extension "
            f"{'.' + extension if extension else 'missing'}; the table knows {known}); "
            f"pass mime_type= (e.g. {_EXAMPLE_MIME[kind]!r})"
        )
    found_kind, mime = found
    if found_kind != kind:
        raise InvalidValueError(
            f"{label!r} is {found_kind} content ({mime}), not {kind}; use "
            f"Part.{found_kind}() or pass mime_type="
        )
    return mime


_EXAMPLE_MIME = {"image": "image/png", "file": "text/csv", "audio": "audio/wav"}


def _parse_data_url(url: str, kind: str) -> tuple[str | None, str]:
    """``data:[<mime>][;param]*[;base64],<payload>`` -> (mime or None, standard base64)."""
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise InvalidValueError(f"Part.{kind}(): a data: URL needs a ',' before its payload")
    params = header.split(";")
    is_base64 = params[-1].strip().lower() == "base64"
    if is_base64:
        params = params[:-1]
    mime = params[0].strip() or None
    if is_base64:
        if not _is_base64(payload):
            raise InvalidValueError(
                f"Part.{kind}(): the data: URL's payload is not standard base64 "
                "(padded, no line breaks)"
            )
        return mime, payload
    from urllib.parse import unquote_to_bytes

    raw = unquote_to_bytes(payload)
    return mime, binascii.b2a_base64(raw, newline=False).decode("ascii")
