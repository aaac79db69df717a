"""Resources: data an MCP server offers by URI — :class:`Resource` and :func:`resource`.

A resource is a plain function behind a fixed URI (``test://static-text``) or an RFC 6570
URI template (``test://template/{id}/data``, levels 1 to 3), in the style of a tool:
keyword style (one parameter per template variable) or the contract style
``fn(params, ctx=None)``. It returns text (a ``str``), bytes, a
:class:`~toolnexus.Part`, or a list of those (several contents), or asks a question
(``ToolResult.pending(request)``), which the client answers before the read completes.

Reading is a call: ``resources/read`` runs on the host like ``tools/call`` (deadline,
cancellation, questions), through the resource's inner tool. Its result carries the
contents, each ``{"uri", "mimeType", "text"}`` or ``{"uri", "mimeType", "blob"}``, in
``metadata["contents"]``; a content over the part ceiling
(:func:`~toolnexus.get_max_part_bytes`) is refused with an error naming both sizes.
"""

from __future__ import annotations

import binascii
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, overload

from ..._frozen import FrozenDict, FrozenList, freeze, sealed
from ..._result import ToolResult
from ..._schema import sanitize_name
from ..._uri_template import UriTemplate, is_template
from ...errors import InvalidTypeError, InvalidValueError
from ._served import (
    SERVED_CALLS,
    check_completers,
    completion_tool,
    inner_tool,
    read_strings,
)

if TYPE_CHECKING:
    from ..._context import ToolContext
    from ..._parts import Part
    from ..._tools import Tool

__all__ = ["CONTENTS_KEY", "Resource", "resource"]

CONTENTS_KEY = "contents"
"""The metadata key of a read's result: the list of resource contents, as MCP writes them."""

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:\S*")


@sealed
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Resource:
    """Data offered at a URI (or at every URI a template matches), read by a function.

    Build one with :func:`resource`. Resources compare by identity.

    Attributes:
        uri: the fixed URI, or an RFC 6570 template (levels 1 to 3) whose variables are
            the function's parameters.
        fn: the function that reads it.
        name: the name clients show (default: the function's name).
        title: a human-readable display name, or None.
        description: what it holds (default: the docstring's first paragraph).
        mime_type: the type of its content, e.g. ``"text/plain"``; None: ``text/plain``
            for text, ``application/octet-stream`` for bytes (a part's own type wins).
        annotations: MCP hints (``audience``, ``priority``, ``lastModified``), or None.
        complete: completers for template variables (see :func:`resource`).

    Example::

        >>> @resource("test://greeting/{name}", mime_type="text/plain")
        ... def greeting(name: str) -> str:
        ...     '''A greeting for someone.'''
        ...     return f"Hello, {name}!"
        >>> greeting.read("test://greeting/Ada").output
        'Hello, Ada!'
    """

    # What a Toolkit reads to keep it (it imports nothing of MCP): its kind, and the calls
    # that run its function, by the name a host is given (``Toolkit.resolve``).
    _kit_kind: ClassVar[str] = "resource"
    _kit_calls: ClassVar[Mapping[str, Callable[..., Any]]] = SERVED_CALLS

    uri: str
    fn: Callable[..., Any]
    name: str | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Mapping[str, Any] | None = None
    complete: Mapping[str, Any] | None = None
    _frame: Any = field(default=None, repr=False)
    # Told each URI a client subscribes to (a gateway subscribes upstream), or None.
    _on_subscribe: Callable[[str], object] | None = field(default=None, repr=False)
    _template: UriTemplate | None = field(init=False, repr=False)
    _tool: Tool = field(init=False, repr=False)
    _completion: Tool = field(init=False, repr=False)
    _schema: Mapping[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        uri = self.uri
        if not isinstance(uri, str) or not _URI.fullmatch(uri.strip()):
            raise InvalidValueError(
                f"a resource's uri must be an absolute URI or URI template such as "
                f"'file:///notes.txt' or 'test://items/{{id}}', got {uri!r}"
            )
        if not callable(self.fn):
            raise InvalidTypeError(f"Resource.fn must be callable, got {type(self.fn).__name__}")
        template = UriTemplate(uri) if is_template(uri) else None
        set_(self, "_template", template)
        name = self.name
        if name is None:
            name = getattr(self.fn, "__name__", None) or uri
        if not isinstance(name, str) or not name or name == "<lambda>":
            raise InvalidValueError(
                f"cannot name the resource at {uri!r} after {self.fn!r}: give it a name with "
                "@resource(uri, name='...')"
            )
        set_(self, "name", name)
        for label in ("title", "mime_type"):
            value = getattr(self, label)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidValueError(f"Resource.{label} must be a non-empty str or None")
        if self.mime_type is not None and "/" not in self.mime_type:
            raise InvalidValueError(
                f"Resource.mime_type must be a mime type such as 'text/plain', got "
                f"{self.mime_type!r}"
            )
        if self.annotations is not None:
            if not isinstance(self.annotations, Mapping):
                raise InvalidTypeError("Resource.annotations must be a mapping or None")
            set_(self, "annotations", freeze(self.annotations))
        variables = template.variables if template is not None else ()
        # A contract-style function gets its variables as one object of strings.
        params_schema = {
            "type": "object",
            "properties": {variable: {"type": "string"} for variable in variables},
        }
        owner = f"resource {name!r}"
        tool, schema = inner_tool(
            self.fn,
            name=sanitize_name(name),
            description=self.description or "",
            schema=None,
            contract_names=("params", "args"),
            finish=lambda value: _read_result(owner, value, self.mime_type, None),
            frame=self._frame,
            owner=owner,
        )
        if schema == {"type": "object"} or schema.get("properties") is None:
            schema = params_schema  # contract style, unannotated: the template's variables
        _check_parameters(owner, uri, variables, schema)
        if self.description is None:
            described = tool.description or _doc(self.fn)
            set_(self, "description", described)
        elif not isinstance(self.description, str):
            raise InvalidTypeError("Resource.description must be a str or None")
        set_(self, "_tool", tool)
        set_(self, "_schema", schema)
        completers = check_completers(owner, self.complete, schema)
        set_(self, "complete", completers)
        set_(self, "_completion", completion_tool(sanitize_name(name), completers, schema))

    # ------------------------------------------------------------------ matching

    @property
    def is_template(self) -> bool:
        """True when :attr:`uri` is a template (it matches many URIs).

        Example::

            >>> greeting.is_template
            True
        """
        return self._template is not None

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables ``uri`` gives this resource (``{}`` for its fixed URI),
        or ``None`` when it is not this resource's.

        Example::

            >>> greeting.match("test://greeting/Ada")
            {'name': 'Ada'}
        """
        if self._template is None:
            return {} if uri == self.uri else None
        return self._template.match(uri)

    def uri_for(self, **params: Any) -> str:
        """The URI of this resource for ``params`` (the template expanded).

        Example::

            >>> greeting.uri_for(name="Ada Lovelace")
            'test://greeting/Ada%20Lovelace'
        """
        if self._template is None:
            return self.uri
        return self._template.expand(params)

    # ------------------------------------------------------------------ reading

    def refusal(self, params: Mapping[str, str]) -> str | None:
        """Why the template variables ``params`` (what :meth:`match` read) must not reach
        the function, or None: a ``{name}`` value that is not one path segment, a
        ``{+path}`` with a ``..`` segment or an absolute path, NUL or another control
        character (see :meth:`UriTemplate.refusal
        <toolnexus._uri_template.UriTemplate.refusal>`).

        Example::

            >>> greeting.refusal(greeting.match("test://greeting/..%2Fsecrets")) is None
            False
        """
        return None if self._template is None else self._template.refusal(params)

    def _arguments(self, uri: str, params: Mapping[str, str]) -> dict[str, Any]:
        """What the inner tool is called with: the variables, read by their types."""
        del uri
        return read_strings(params, self._schema)

    def problem(self, uri: str) -> str | None:
        """Why this resource cannot read ``uri``, or ``None``: the URI is not this
        resource's, or a template variable does not read as its parameter's type.

        Example::

            >>> greeting.problem("test://other") is None
            False
        """
        params = self.match(uri)
        if params is None:
            return f"resource {self.name!r} does not serve {uri!r}"
        unsafe = self.refusal(params)
        if unsafe is not None:
            return unsafe
        refusal = self._tool._admit(self._arguments(uri, params))[1]
        return None if refusal is None else refusal.output.partition(": ")[2]

    def read(self, uri: str | None = None, ctx: ToolContext | None = None) -> ToolResult:
        """Read the resource at ``uri`` (default: its fixed URI), in this thread.

        Returns the result a server sends: ``output`` the text of its contents,
        ``metadata["contents"]`` the MCP contents, and one part per content (text too,
        named after its URI), so it can be embedded in a tool's result as it is. A URI
        this resource does not serve, or a failure of its function, is an error result.

        Example::

            >>> result = greeting.read("test://greeting/Ada")
            >>> result.metadata["contents"][0]["text"]
            'Hello, Ada!'
        """
        target = self.uri if uri is None else uri
        params = self.match(target)
        if params is None:
            return ToolResult.error(f"resource {self.name!r} does not serve {target!r}")
        unsafe = self.refusal(params)
        if unsafe is not None:
            return ToolResult.error(f"resource not found: {target!r} ({unsafe})")
        result = self._tool(self._arguments(target, params), ctx)
        return _with_uri(result, target) if not result.is_error else result

    def __repr__(self) -> str:
        return f"<Resource {self.name!r} {self.uri}>"


def _doc(fn: Any) -> str:
    from ..._schema import parse_docstring

    return parse_docstring(getattr(fn, "__doc__", None))[0]


def _check_parameters(
    owner: str, uri: str, variables: tuple[str, ...], schema: Mapping[str, Any]
) -> None:
    """A keyword-style function's parameters must be the template's variables."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    names = set(properties)
    missing = [name for name in schema.get("required", ()) if name not in variables]
    if missing:
        raise InvalidValueError(
            f"{owner}: parameter {missing[0]!r} is not a variable of {uri!r}; add "
            f"{{{missing[0]}}} to the URI template, or give the parameter a default"
        )
    extra = [variable for variable in variables if variable not in names]
    if extra and schema.get("additionalProperties") is False:
        raise InvalidValueError(
            f"{owner}: the URI template {uri!r} has the variable {extra[0]!r}, which the "
            f"function does not take; add a parameter named {extra[0]}"
        )


# --------------------------------------------------------------------------- contents


def _with_uri(result: ToolResult, uri: str) -> ToolResult:
    """A read result whose contents (read without knowing the URI) name ``uri``."""
    contents = result.metadata.get(CONTENTS_KEY)
    if not isinstance(contents, list):
        return result
    fixed = [{**each, "uri": uri} if each.get("uri") is None else dict(each) for each in contents]
    return _result(fixed, with_parts=True)


def _read_result(owner: str, value: Any, mime_type: str | None, uri: str | None) -> ToolResult:
    """What a resource function returned, as a read result (or the error naming why not)."""
    from ..._parts import get_max_part_bytes

    limit = get_max_part_bytes()
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if isinstance(value, ToolResult):
        items = ([value.output] if value.output or not value.parts else []) + list(value.parts)
    contents: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        try:
            contents.append(_content(item, mime_type, uri, limit))
        except _Refused as refused:
            where = f" (item {index})" if len(items) > 1 else ""
            return ToolResult.error(f"{owner} returned {refused}{where}")
    if not contents:
        return ToolResult.error(f"{owner} returned no content; return text, bytes or a Part")
    return _result(contents, with_parts=False)


class _Refused(Exception):
    """A value a resource function returned that cannot be a content (the message says why)."""


def _content(item: Any, mime_type: str | None, uri: str | None, limit: int) -> dict[str, Any]:
    from ..._parts import Part

    if isinstance(item, str):
        if len(item) > limit or (len(item) * 4 > limit and len(item.encode("utf-8")) > limit):
            raise _Refused(
                f"{len(item.encode('utf-8'))} bytes of text, over the limit of {limit} bytes "
                "(set_max_part_bytes)"
            )
        return {"uri": uri, "mimeType": mime_type or "text/plain", "text": item}
    if isinstance(item, (bytes, bytearray, memoryview)):
        raw = bytes(item)
        if len(raw) > limit:
            raise _Refused(
                f"{len(raw)} bytes, over the limit of {limit} bytes (set_max_part_bytes)"
            )
        blob = binascii.b2a_base64(raw, newline=False).decode("ascii")
        return {"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}
    if isinstance(item, Part):
        named = item.name if item.name is not None and _URI.fullmatch(item.name) else uri
        if item.type == "text":
            return {"uri": named, "mimeType": mime_type or "text/plain", "text": item.text}
        if item.data is None:
            raise _Refused(
                f"a URL part ({item.url}); a resource's content is its bytes: fetch them, "
                "or return the text"
            )
        return {"uri": named, "mimeType": item.mime_type, "blob": item.data}
    if isinstance(item, Mapping):
        from ..._tools import encode_json

        try:
            text = encode_json(item)
        except (TypeError, ValueError) as exc:
            raise _Refused(f"a mapping that is not JSON ({exc})") from None
        return _content(text, mime_type or "application/json", uri, limit)
    raise _Refused(f"a {type(item).__name__}; return text (str), bytes, a Part, or a list of them")


def _result(contents: list[dict[str, Any]], *, with_parts: bool) -> ToolResult:
    texts = []
    parts = []
    for each in contents:
        if "text" in each:
            texts.append(each["text"])
        else:
            size = len(each["blob"]) // 4 * 3 - each["blob"][-2:].count("=")
            texts.append(f"[{each['mimeType']}, {size} bytes]")
        if with_parts:
            parts.append(_part_of(each))
    metadata = FrozenDict({CONTENTS_KEY: FrozenList(FrozenDict(each) for each in contents)})
    return ToolResult("\n".join(texts), False, metadata, parts)


def _part_of(content: Mapping[str, Any]) -> Part:
    from ..._parts import Part

    mime = content["mimeType"]
    name = content.get("uri")
    if "text" in content:
        data = binascii.b2a_base64(content["text"].encode("utf-8"), newline=False).decode("ascii")
    else:
        data = content["blob"]
    kind = mime.split("/", 1)[0]
    return Part(
        kind if kind in ("image", "audio") else "file", mime_type=mime, data=data, name=name
    )


# --------------------------------------------------------------------------- the decorator

Function = Callable[..., Any]


@overload
def resource(
    uri: str,
    fn: Function,
    /,
    *,
    name: str | None = ...,
    title: str | None = ...,
    description: str | None = ...,
    mime_type: str | None = ...,
    annotations: Mapping[str, Any] | None = ...,
    complete: Mapping[str, Any] | None = ...,
) -> Resource: ...


@overload
def resource(
    uri: str,
    fn: None = ...,
    /,
    *,
    name: str | None = ...,
    title: str | None = ...,
    description: str | None = ...,
    mime_type: str | None = ...,
    annotations: Mapping[str, Any] | None = ...,
    complete: Mapping[str, Any] | None = ...,
) -> Callable[[Function], Resource]: ...


def resource(
    uri: str,
    fn: Function | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    complete: Mapping[str, Any] | None = None,
) -> Resource | Callable[[Function], Resource]:
    """Offer a function's result as the resource at ``uri``: ``@resource(uri)`` or
    ``resource(uri, fn)``.

    ``uri`` is a fixed URI or an RFC 6570 template (levels 1 to 3); the template's
    variables are the function's parameters (keyword style), or the keys of the ``params``
    object it takes (contract style ``fn(params, ctx=None)``). Variables arrive as
    strings; a parameter annotated ``int``, ``float`` or ``bool`` gets the value read as
    that type. The function returns text, bytes, a :class:`~toolnexus.Part`, a JSON
    object (sent as ``application/json`` text) or a list of those; a question
    (``ToolResult.pending``) is asked before the read completes. ``complete`` maps a
    variable to its completer for ``completion/complete`` (a function ``(value)`` or
    ``(value, context)`` returning candidates, or a list of candidates); a variable
    annotated with a ``Literal`` or an ``Enum`` completes from its values without one.

    Raises ``ValueError`` at once for a URI that is not one, a template beyond level 3, a
    required parameter the template does not name, or a completer for an unknown variable.

    Example::

        >>> @resource("test://static-text", mime_type="text/plain")
        ... def static_text() -> str:
        ...     '''A fixed text.'''
        ...     return "This is the content of the static text resource."
        >>> static_text.read().output
        'This is the content of the static text resource.'
    """
    frame = sys._getframe(1)

    def make(function: Function) -> Resource:
        if isinstance(function, Resource):
            raise InvalidTypeError(f"{function!r} is a resource already")
        return Resource(
            uri,
            function,
            name,
            title,
            description,
            mime_type,
            annotations,
            complete,
            _frame=frame,
        )

    if fn is None:
        return make
    return make(fn)
