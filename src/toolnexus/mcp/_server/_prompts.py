"""Prompts: message templates an MCP server offers by name — :class:`Prompt` and :func:`prompt`.

A prompt is a plain function from its arguments to messages, in the style of a tool:
keyword style (one parameter per argument, described by the annotations and the
docstring, checked like a tool's) or the contract style ``fn(args, ctx=None)``. It returns
text (one user message), a :class:`~toolnexus.Part` (an image, audio, or a file embedded as
a resource), a message ``{"role": "user" | "assistant", "content": ...}`` or a list of any
of them; or it asks a question (``ToolResult.pending(request)``), answered before
``prompts/get`` completes.

``prompts/get`` is a call: it runs on the host like ``tools/call``, through the prompt's
inner tool, whose result carries ``{"description", "messages"}`` in
``metadata["prompt"]``. Arguments travel as strings (MCP's rule); a parameter annotated
``int``, ``float`` or ``bool`` gets the string read as that type before it is checked.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, overload

from ..._frozen import FrozenDict, FrozenList, sealed, thaw
from ..._result import ToolResult
from ..._schema import sanitize_name
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
    from ..._tools import Tool

__all__ = ["PROMPT_KEY", "Prompt", "prompt"]

PROMPT_KEY = "prompt"
"""The metadata key of a ``prompts/get`` result: ``{"description", "messages"}``."""

_ROLES = ("user", "assistant")
_BLOCK_TYPES = ("text", "image", "audio", "resource", "resource_link")


@sealed
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Prompt:
    """A message template offered by name, rendered by a function.

    Build one with :func:`prompt`. Prompts compare by identity.

    Attributes:
        fn: the function that renders it.
        name: the name clients ask for (default: the function's, sanitized like a tool's).
        title: a human-readable display name, or None.
        description: what it is for (default: the docstring's first paragraph).
        complete: completers for its arguments (see :func:`prompt`).
        arguments: read-only: each argument as MCP lists it, ``{"name", "description",
            "required"}``, from the function's parameters.

    Example::

        >>> @prompt
        ... def review(code: str, focus: str = "bugs") -> str:
        ...     '''Ask for a code review.
        ...
        ...     Args:
        ...         code: the code to review.
        ...         focus: what to look for.
        ...     '''
        ...     return f"Review this code for {focus}:\\n{code}"
        >>> review.arguments[0]
        {'name': 'code', 'description': 'the code to review.', 'required': True}
        >>> review.render({"code": "x = 1"}).metadata["prompt"]["messages"][0]["role"]
        'user'
    """

    # What a Toolkit reads to keep it (it imports nothing of MCP): its kind, and the calls
    # that run its function, by the name a host is given (``Toolkit.resolve``).
    _kit_kind: ClassVar[str] = "prompt"
    _kit_calls: ClassVar[Mapping[str, Callable[..., Any]]] = SERVED_CALLS

    fn: Callable[..., Any]
    name: str | None = None
    title: str | None = None
    description: str | None = None
    complete: Mapping[str, Any] | None = None
    _frame: Any = field(default=None, repr=False)
    # The arguments' schema when ``fn`` is contract style and does not say (a gateway's
    # prompt takes its upstream's arguments), or None.
    _given_schema: Mapping[str, Any] | None = field(default=None, repr=False)
    arguments: list[dict[str, Any]] = field(init=False)
    _tool: Tool = field(init=False, repr=False)
    _completion: Tool = field(init=False, repr=False)
    _schema: Mapping[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not callable(self.fn):
            raise InvalidTypeError(f"Prompt.fn must be callable, got {type(self.fn).__name__}")
        name = self.name
        if name is None:
            name = getattr(self.fn, "__name__", None)
        if not isinstance(name, str) or not name or name == "<lambda>":
            raise InvalidValueError(
                f"cannot name a prompt after {self.fn!r}: give it a name with @prompt(name='...')"
            )
        name = sanitize_name(name)
        set_(self, "name", name)
        if self.title is not None and (not isinstance(self.title, str) or not self.title):
            raise InvalidValueError("Prompt.title must be a non-empty str or None")
        owner = f"prompt {name!r}"
        description_holder: list[str] = []

        def finish(value: Any) -> ToolResult:
            return _rendered(owner, value, description_holder[0] if description_holder else "")

        tool, schema = inner_tool(
            self.fn,
            name=name,
            description=self.description or "",
            schema=self._given_schema,
            contract_names=("args",),
            finish=finish,
            frame=self._frame,
            owner=owner,
        )
        description = self.description
        if description is None:
            from ..._schema import parse_docstring

            description = parse_docstring(getattr(self.fn, "__doc__", None))[0]
        elif not isinstance(description, str):
            raise InvalidTypeError("Prompt.description must be a str or None")
        description_holder.append(description)
        set_(self, "description", description)
        set_(self, "_tool", tool)
        set_(self, "_schema", schema)
        set_(self, "arguments", FrozenList(_arguments(schema)))
        completers = check_completers(owner, self.complete, schema)
        set_(self, "complete", completers)
        set_(self, "_completion", completion_tool(name, completers, schema))

    def problem(self, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` (strings, as MCP sends them) cannot render this prompt, or
        ``None``: a missing required argument, an unknown one, one that does not read as
        its type.

        Example::

            >>> review.problem({})
            "invalid arguments for 'review': code: required property is missing"
        """
        args, refusal = self._tool._admit(read_strings(arguments, self._schema))
        del args
        return refusal.output if refusal is not None else None

    def render(
        self, arguments: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Render the prompt with ``arguments`` (strings, or values of their types), in
        this thread: the result ``prompts/get`` sends, ``metadata["prompt"]`` holding
        ``{"description", "messages"}`` and ``output`` the messages' text. Invalid
        arguments or a failing function give an error result.

        Example::

            >>> review.render({"code": "x = 1", "focus": "style"}).output
            'Review this code for style:\\nx = 1'
        """
        return self._tool(read_strings(arguments or {}, self._schema), ctx)

    def __repr__(self) -> str:
        return f"<Prompt {self.name!r}>"


def _arguments(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = set(schema.get("required") or ())
    listed = []
    for key, prop in properties.items():
        entry: dict[str, Any] = {"name": key}
        if isinstance(prop, Mapping):
            if isinstance(prop.get("title"), str):
                entry["title"] = prop["title"]
            if isinstance(prop.get("description"), str):
                entry["description"] = prop["description"]
        entry["required"] = key in required
        listed.append(entry)
    return listed


# --------------------------------------------------------------------------- messages


def _rendered(owner: str, value: Any, description: str) -> ToolResult:
    """What a prompt function returned, as a rendered prompt (or the error naming why not)."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if isinstance(value, ToolResult):
        items = ([value.output] if value.output or not value.parts else []) + list(value.parts)
    messages: list[dict[str, Any]] = []
    try:
        for index, item in enumerate(items):
            messages.append(_message(item, index))
    except _Refused as refused:
        return ToolResult.error(f"{owner} returned {refused}")
    if not messages:
        return ToolResult.error(f"{owner} returned no messages; return text, a Part or messages")
    texts = [m["content"]["text"] for m in messages if m["content"].get("type") == "text"]
    rendered: dict[str, Any] = {"messages": messages}
    if description:
        rendered = {"description": description, **rendered}
    from ..._frozen import freeze

    return ToolResult("\n".join(texts), False, FrozenDict({PROMPT_KEY: freeze(rendered)}))


class _Refused(Exception):
    """A value a prompt function returned that cannot be a message (the message says why)."""


def _message(item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, Mapping) and "role" in item:
        role = item.get("role")
        if role not in _ROLES:
            raise _Refused(
                f"a message with role {role!r} (item {index}); use 'user' or 'assistant'"
            )
        return {"role": role, "content": _block(item.get("content"), index)}
    return {"role": "user", "content": _block(item, index)}


def _block(content: Any, index: int) -> dict[str, Any]:
    from ..._parts import Part
    from .._shared._content import part_block

    if isinstance(content, str):
        return {"type": "text", "text": content}
    if isinstance(content, Part):
        return part_block(content, index)
    if isinstance(content, Mapping) and content.get("type") in _BLOCK_TYPES:
        return dict(thaw(content))
    raise _Refused(
        f"a {type(content).__name__} as a message's content (item {index}); give text, a "
        "Part, or an MCP content block"
    )


# --------------------------------------------------------------------------- the decorator

Function = Callable[..., Any]


@overload
def prompt(
    fn: Function,
    /,
    *,
    name: str | None = ...,
    title: str | None = ...,
    description: str | None = ...,
    complete: Mapping[str, Any] | None = ...,
) -> Prompt: ...


@overload
def prompt(
    fn: None = ...,
    /,
    *,
    name: str | None = ...,
    title: str | None = ...,
    description: str | None = ...,
    complete: Mapping[str, Any] | None = ...,
) -> Callable[[Function], Prompt]: ...


def prompt(
    fn: Function | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Mapping[str, Any] | None = None,
) -> Prompt | Callable[[Function], Prompt]:
    """Offer a function as a prompt: bare ``@prompt``, ``@prompt(...)`` or ``prompt(fn)``.

    The function's parameters are the prompt's arguments — described by their annotations
    and the docstring's ``Args:`` section, checked like a tool's arguments, so a missing or
    wrong one is refused (``-32602``) before the function runs. It returns text, a
    :class:`~toolnexus.Part`, a message ``{"role", "content"}`` (content: text, a Part or
    an MCP content block) or a list of those. ``complete`` maps an argument to its
    completer for ``completion/complete`` (a function ``(value)`` or ``(value,
    context)`` returning candidates, or a list of candidates); an argument annotated with
    a ``Literal`` or an ``Enum`` completes from its values without one.

    Raises ``TypeError`` at once for an annotation with no JSON Schema equivalent, and
    ``ValueError`` for a completer of an unknown argument.

    Example::

        >>> @prompt(description="Greet someone.")
        ... def greet(name: str) -> list[dict[str, str]]:
        ...     return [{"role": "user", "content": f"Say hello to {name}."}]
        >>> greet.render({"name": "Ada"}).output
        'Say hello to Ada.'
    """
    frame = sys._getframe(1)

    def make(function: Function) -> Prompt:
        if isinstance(function, Prompt):
            raise InvalidTypeError(f"{function!r} is a prompt already")
        return Prompt(function, name, title, description, complete, _frame=frame)

    if fn is None:
        return make
    return make(fn)
