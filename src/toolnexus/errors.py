"""Every exception toolnexus raises: one root, split by whose fault it is.

::

    ToolnexusError                  the root: ``except ToolnexusError`` catches all of ours
    ├── UsageError                  the calling code is wrong; raised at the line that did it
    │   ├── InvalidValueError       + ValueError: a value of the right type, but unusable
    │   │   ├── DuplicateToolError      a tool name registered twice
    │   │   ├── EcmaPatternError        a schema pattern that is not ECMA-262 (or too costly)
    │   │   ├── OpenApiError            an OpenAPI document that cannot be imported at all
    │   │   ├── PartTooLargeError       a content part over the maxPartBytes ceiling
    │   │   ├── SchemaError             a JSON Schema the validator cannot honour
    │   │   └── StrictSchemaError       a schema a provider's strict mode cannot express
    │   └── InvalidTypeError        + TypeError: a value of the wrong type
    │       └── SchemaInferenceError    a signature with no JSON Schema equivalent
    ├── InputError                  + ValueError: data from outside the program is malformed
    │   ├── ConversionError             a valid argument that does not read as its annotated type
    │   │   └── FormatError                 text that is not a date, a UUID, a duration, ...
    │   ├── WireFormatError             a Request/Answer/ToolResult document is malformed
    │   ├── SkillError                  a skill that cannot be read, served or verified
    │   └── RefError                    a command-line REF names no usable tools
    ├── NotFoundError               + LookupError: no prompt, resource or task by that key
    │   └── UnknownToolError            no tool of that name
    ├── WaitTimeoutError            + TimeoutError: Call.result(timeout=...) gave up waiting
    ├── StoreUnavailableError       + ConnectionError: the answer store cannot be used now
    ├── TimerStartError             + RuntimeError: the timer thread could not be started
    ├── McpError                    + ConnectionError: an MCP server could not be used
    ├── OAuthError                  + ConnectionError: an authorization server could not be used
    ├── TemporalUnavailableError    + ConnectionError: a worker cannot reach Temporal
    └── OperationCancelledError     a cancelled token was asked to raise

Each class also inherits the builtin a caller would catch without knowing toolnexus
(``ValueError``, ``TypeError``, ``LookupError``), so ``except ValueError`` keeps working.
Classes with structured fields (``exc.field``, ``exc.path``, ``exc.name``) carry them so no
layer parses a message, and survive pickling (errors cross process boundaries).

What a *model* gets wrong (unknown tool, bad arguments, a tool that throws) is never an
exception: it comes back as an error :class:`~toolnexus.ToolResult` the model can read.
These exceptions are for the program around the tools.

This module imports nothing: the contract layer imports it, and so does every other.
"""

from __future__ import annotations

__all__ = [
    "ConversionError",
    "DuplicateToolError",
    "EcmaPatternError",
    "FormatError",
    "InputError",
    "InvalidTypeError",
    "InvalidValueError",
    "McpError",
    "NotFoundError",
    "OAuthError",
    "OpenApiError",
    "OperationCancelledError",
    "PartTooLargeError",
    "RefError",
    "SchemaError",
    "SchemaInferenceError",
    "SkillError",
    "StoreUnavailableError",
    "StrictSchemaError",
    "TemporalUnavailableError",
    "TimerStartError",
    "ToolnexusError",
    "UnknownToolError",
    "UsageError",
    "WaitTimeoutError",
    "WireFormatError",
]

# Not `from typing import ...`: typing would cost as much as the contract layer itself.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ToolnexusError(Exception):
    """Root of every exception toolnexus raises.

    Example::

        try:
            Request.from_json("[]")
        except ToolnexusError as exc:
            print(exc)
    """


# --------------------------------------------------------------------------- the caller's code


class UsageError(ToolnexusError):
    """The calling code used toolnexus wrongly: fix the call that raised.

    Raised at once, at the line that did it (a negative timeout, a non-callable callback,
    a duplicate tool name). Catch its subclasses, or ``ValueError``/``TypeError``.

    Example::

        try:
            ToolContext(timeout_ms=-1)
        except UsageError as exc:
            print(exc)   # timeout_ms must be an int >= 0 (milliseconds), got -1
    """


class InvalidValueError(UsageError, ValueError):
    """A value of the right type that toolnexus cannot use (out of range, empty, unknown).

    Example::

        try:
            Host(toolkit, max_workers=0)
        except InvalidValueError as exc:   # also a ValueError
            print(exc)   # max_workers must be an int >= 1, got 0
    """


class InvalidTypeError(UsageError, TypeError):
    """A value of the wrong type (a non-callable callback, a str where a Request belongs).

    Example::

        try:
            ToolResult.pending("approve?")
        except InvalidTypeError as exc:    # also a TypeError
            print(exc)   # pending() takes a Request, got str
    """


class DuplicateToolError(InvalidValueError):
    """A tool of that name is already registered (pass ``replace=True`` to swap it).

    ``name`` is the tool's name.

    Example::

        try:
            toolkit.register(add)
        except DuplicateToolError as exc:
            assert exc.name == "add"
    """

    def __init__(self, name: str) -> None:
        super().__init__(
            f"a tool named {name!r} is already registered; pass replace=True to replace it, "
            "or register this one under another name with @tool(name=...)"
        )
        self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuild from the fields, not from the message: errors cross process boundaries.
        return (type(self), (self.name,))


class EcmaPatternError(InvalidValueError):
    """A ``pattern`` that is not a valid ECMA-262 regular expression, or one toolnexus
    refuses to run (it could stall a host, or it needs Unicode data Python lacks).

    ``pattern`` is the pattern, ``position`` the offset in it of the fault (``None`` when
    the whole pattern is at fault), ``reason`` the bare description with the fix.

    Example::

        try:
            compile_pattern("(?P<year>[0-9]{4})")
        except EcmaPatternError as exc:
            assert exc.position == 1  # the "?" of "(?P": Python syntax, not ECMA-262
    """

    def __init__(self, pattern: str, position: int | None, reason: str) -> None:
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"pattern {pattern!r}{where}: {reason}")
        self.pattern = pattern
        self.position = position
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.pattern, self.position, self.reason))


class PartTooLargeError(InvalidValueError):
    """A content part's decoded bytes exceed the ceiling (maxPartBytes).

    ``part_type`` is the part's type, ``size`` its decoded size and ``limit`` the ceiling,
    both in bytes. The message names both sizes, never the content.

    Example::

        try:
            Part.image("huge.png", max_bytes=1024)
        except PartTooLargeError as exc:
            print(exc.size, exc.limit)
    """

    def __init__(self, part_type: str, size: int, limit: int) -> None:
        super().__init__(
            f"the {part_type} part is {size} bytes, over the {limit}-byte limit "
            "(maxPartBytes); shrink it, or raise the limit with "
            "toolnexus.set_max_part_bytes(n) or max_bytes=n for this call"
        )
        self.part_type = part_type
        self.size = size
        self.limit = limit

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.part_type, self.size, self.limit))


class SchemaError(InvalidValueError):
    """A schema the validator cannot honour: an unsupported keyword, a bad value, a bad $ref.

    Raised when a :class:`~toolnexus.validation.Validator` is built, never while
    validating. ``path`` is a JSON pointer to the schema object at fault
    (``"#/properties/steps"``), ``keyword`` the keyword (``None`` when the whole schema
    object is wrong), ``problem`` the bare description.

    Example::

        try:
            Validator({"type": "object", "properties": {"n": {"minimun": 1}}})
        except SchemaError as exc:
            assert exc.path == "#/properties/n" and exc.keyword == "minimun"
    """

    def __init__(self, path: str, keyword: str | None, problem: str) -> None:
        super().__init__(f"invalid schema at {path}: {problem}")
        self.path = path
        self.keyword = keyword
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.keyword, self.problem))


class OpenApiError(InvalidValueError):
    """An OpenAPI document that cannot be imported as a whole (``Toolkit.from_openapi``):
    it cannot be read, it is not OpenAPI 3.0 or 3.1, it names no server. A problem with one
    operation is not raised: that operation is left out and named in the import's
    ``problems`` (``strict=True`` raises this error listing them).

    ``where`` is the document (its path or URL, or ``"the document"`` for a dict);
    ``problem`` says what is wrong and how to fix it.

    Example::

        try:
            Toolkit.from_openapi({"mcpServers": {}})
        except OpenApiError as exc:
            print(exc.problem)   # it is not an OpenAPI document: it has no 'openapi' field ...
    """

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"cannot import {where} as OpenAPI: {problem}")
        self.where = where
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.where, self.problem))


class StrictSchemaError(InvalidValueError):
    """A tool's schema cannot be expressed in a provider's strict mode.

    ``tool`` is the tool's name, ``path`` where in its schema the problem is, ``provider``
    whose strict mode refuses it (``"OpenAI"`` or ``"Anthropic"``).

    Example::

        try:
            toolkit.to_openai(strict=True)
        except StrictSchemaError as exc:
            print(exc.tool, exc.path)
    """

    def __init__(self, tool: str, path: str, problem: str, provider: str = "OpenAI") -> None:
        method = "to_openai()" if provider == "OpenAI" else f"to_{provider.lower()}()"
        super().__init__(
            f"tool {tool!r} cannot be offered in {provider} strict mode: "
            f"{path or 'its arguments'} {problem}; use {method} without strict=True for it, "
            "or give the tool a schema whose objects all list their properties"
        )
        self.tool = tool
        self.path = path
        self.problem = problem
        self.provider = provider

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.tool, self.path, self.problem, self.provider))


class SchemaInferenceError(InvalidTypeError):
    """A function's signature cannot be turned into a tool schema.

    Raised when the tool is defined (``@tool``, ``Toolkit.register``), never when it is
    called. ``function`` is the qualified name of the function, ``parameter`` the
    parameter at fault (``None`` when the problem is the function as a whole).

    Example::

        try:
            @tool
            def upload(data: bytes) -> str: ...
        except SchemaInferenceError as exc:
            assert exc.parameter == "data"
    """

    def __init__(self, function: str, parameter: str | None, problem: str) -> None:
        where = f"parameter {parameter!r} of {function}()" if parameter else f"{function}()"
        super().__init__(
            f"cannot infer a JSON Schema for {where}: {problem}; "
            "pass the schema yourself with @tool(input_schema={...}), "
            "or annotate it with a supported type"
        )
        self.function = function
        self.parameter = parameter
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.function, self.parameter, self.problem))


# --------------------------------------------------------------------------- data from outside


class InputError(ToolnexusError, ValueError):
    """Data from outside the program is malformed: fix the data, not the code.

    The data is JSON read from a file, a pipe or a peer (an MCP client's elicitation
    answer, a persisted request), or a command-line argument.

    Example::

        try:
            Answer.from_json("{not json")
        except InputError as exc:          # also a ValueError
            print(exc)
    """


class ConversionError(InputError):
    """An argument that passed validation but does not read as its annotated type.

    Raised by a converter while a call's arguments are prepared (internal to the tools
    layer, which turns it into an error result). ``problem`` says what was expected,
    ``path`` where in the arguments (keys and indices, outermost first).

    Example::

        >>> from toolnexus import tool
        >>> import datetime
        >>> @tool
        ... def remind(at: datetime.date) -> str:
        ...     return at.isoformat()
        >>> remind({"at": "soon"}).output.split(": ", 1)[1]
        'at: expected a date (YYYY-MM-DD, e.g. "2026-05-01"), got "soon"'
    """

    def __init__(self, problem: str, path: list[str | int] | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str | int] = path if path is not None else []

    def __str__(self) -> str:
        return self.problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problem, self.path))


class FormatError(ConversionError):
    """Text that does not read as the annotated type; ``str()`` says what was expected.

    Raised by the text readers of dates, times, durations, UUIDs and decimals; the tools
    layer adds the argument's path and turns it into an error result.

    Example::

        try:
            toolnexus._formats.parse_uuid("not-a-uuid")
        except FormatError as exc:
            print(exc)   # expected a UUID (...), got "not-a-uuid"
    """


class WireFormatError(InputError):
    """Malformed wire input: not JSON, not an object, or a missing or mistyped field.

    ``type_name`` is the type being read (``"Request"``), ``field`` the wire key at fault
    (``None`` when the whole document is wrong).

    Example::

        try:
            Answer.from_dict({"id": "pnd-1"})
        except WireFormatError as exc:
            assert exc.field == "ok"
    """

    def __init__(self, type_name: str, field: str | None, problem: str) -> None:
        where = f"field {field!r}" if field is not None else "input"
        super().__init__(f"invalid {type_name}: {where} {problem}")
        self.type_name = type_name
        self.field = field
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.type_name, self.field, self.problem))


class RefError(InputError):
    """A tool reference (``REF``) that names no usable tools.

    The message is one line that says what was wrong and how to fix it. ``ref`` is the
    reference as given; the underlying exception, if any, is the ``__cause__``.

    Example::

        try:
            load_toolkit("no_such_module:tools")
        except RefError as exc:
            print(exc)   # cannot import 'no_such_module': no module named ...
    """

    def __init__(self, ref: str, message: str) -> None:
        super().__init__(message)
        self.ref = ref

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.ref, str(self.args[0])))


# --------------------------------------------------------------------------- the rest


class SkillError(InputError):
    """A skill that cannot be used: what is wrong, in which skill and which file.

    ``skill`` is the skill's name (its folder's name when the name is unknown), ``path``
    the file (a path, or a ``skill://`` URI for a remote skill), ``line`` the 1-based
    line in it when one is to blame (else None), ``problem`` what is wrong and how to
    fix it. A toolkit keeps the ones its skills folders gave in
    :attr:`Toolkit.skill_errors <toolnexus.Toolkit.skill_errors>`; the other skills keep
    working.

    Example::

        for problem in toolkit.skill_errors:
            print(problem.skill, problem.path, problem.line, problem.problem)
    """

    def __init__(self, skill: str, path: str, problem: str, line: int | None = None) -> None:
        where = f"{path}, line {line}" if line is not None else path
        super().__init__(f"skill {skill!r} ({where}): {problem}")
        self.skill = skill
        self.path = path
        self.line = line
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.skill, self.path, self.problem, self.line))


class NotFoundError(ToolnexusError, LookupError):
    """Nothing of that kind is known by that key: a prompt's name, a resource's URI, a
    call's or task's id.

    ``kind`` says what was looked up (``"prompt"``, ``"resource"``, ``"call"``, ...),
    ``name`` the key asked for, ``suggestions`` the closest known keys (best first).

    Example::

        try:
            toolkit.get_prompt("reviw")
        except NotFoundError as exc:
            print(exc)              # unknown prompt 'reviw'; did you mean 'review'?
            print(exc.kind)         # prompt
    """

    def __init__(
        self,
        kind: str,
        name: str,
        suggestions: list[str] | None = None,
        known: list[str] | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.suggestions = list(suggestions or ())
        self.known = list(known or ())
        super().__init__(_unknown_message(kind, name, self.suggestions, self.known))

    def __str__(self) -> str:
        # LookupError's KeyError cousin would quote the message; this one reads as a sentence.
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.kind, self.name, self.suggestions, self.known))


class UnknownToolError(NotFoundError):
    """No tool of that name is registered.

    ``name`` is the name asked for, ``suggestions`` the closest registered names (best
    first, possibly empty).

    Example::

        try:
            toolkit.get("serch")
        except UnknownToolError as exc:
            print(exc)              # unknown tool 'serch'; did you mean 'search'?
            print(exc.suggestions)  # ['search']
    """

    def __init__(self, name: str, suggestions: list[str], known: list[str]) -> None:
        super().__init__("tool", name, suggestions, known)
        self.suggestions = suggestions
        self.known = known

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name, self.suggestions, self.known))


def _quote_list(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _unknown_message(kind: str, name: str, suggestions: list[str], known: list[str]) -> str:
    if suggestions:
        return f"unknown {kind} {name!r}; did you mean {_quote_list(suggestions)}?"
    if not known:
        return f"unknown {kind} {name!r}; no {kind}s are registered"
    shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
    return f"unknown {kind} {name!r}; known {kind}s: {shown}"


class StoreUnavailableError(ToolnexusError, ConnectionError):
    """An answer store (or an MCP server's task store: ``kind``) could not be used: its
    server is down or unreachable, refused the credentials, or the file cannot be opened.

    ``store`` names the store (its URL without the password, or its file), ``reason`` says
    what went wrong and how to fix it. A host never lets it through to the model: the
    resume that needed the store is refused with an error result (the answer is not used
    up, so the same answer can be sent again once the store is back), and the details go
    to the ``toolnexus`` logger.

    Example::

        try:
            store = open_store("postgresql://app:secret@db.internal/app")
        except StoreUnavailableError as exc:
            print(exc.store)   # postgresql://app:***@db.internal/app
    """

    def __init__(self, store: str, reason: str, kind: str = "answer store") -> None:
        super().__init__(f"{kind} {store}: {reason}")
        self.store = store
        self.reason = reason
        self.kind = kind  # "answer store", or "task store" for an MCP server's tasks

    def __str__(self) -> str:
        # OSError's own __str__ would show the args tuple; this one reads as a sentence.
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.store, self.reason, self.kind))


class WaitTimeoutError(ToolnexusError, TimeoutError):
    """Raised by :meth:`Call.result` when its ``timeout`` passes before the call is done.

    Only the wait gave up: the call goes on, and a later ``result()`` still gets its answer.

    Example::

        try:
            result = call.result(timeout=0.5)
        except WaitTimeoutError:
            call.cancel()
    """


class TimerStartError(ToolnexusError, RuntimeError):
    """Raised by :meth:`CancellationTokenSource.cancel_after` when the package's timer
    thread cannot be started (the process is out of threads); the source is left without
    a timer and the next ``cancel_after`` tries again. A host call never raises it: its
    call is answered with an error result instead.

    Example::

        try:
            source.cancel_after(30)
        except TimerStartError:
            source.cancel()   # no thread to wait for the time: give up now
    """


class McpError(ToolnexusError, ConnectionError):
    """Raised when an MCP server cannot be used: it cannot be started or reached, does
    not answer the handshake in time, breaks the protocol, or the client was closed.

    ``server`` names the server (its ``mcp.json`` key, or its command or URL) and
    ``problem`` says what went wrong. A remote tool's *call* never raises it: a failed
    call is an error result, as for any tool.

    Example::

        try:
            client.connect()
        except McpError as exc:
            print(exc.server, exc.problem)
    """

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(f"MCP server {server!r}: {problem}")
        self.server = server
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.server, self.problem))


class OAuthError(ToolnexusError, ConnectionError):
    """Raised when an OAuth authorization server (or its metadata, keys, token or
    introspection endpoint) cannot be used: it cannot be reached, or answers with
    something unusable.

    ``url`` names what was asked (never with a query, which may carry a code) and
    ``problem`` says what went wrong. A token verifier raises it when it cannot tell
    whether a token is valid — a protected MCP server then answers ``503``, not ``401``;
    an :class:`~toolnexus.mcp.McpClient` reports it as an :class:`McpError` naming the
    server.

    Example::

        try:
            principal = verifier(token)
        except OAuthError as exc:
            print(exc.url, exc.problem)
    """

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(f"OAuth at {url}: {problem}")
        self.url = url
        self.problem = problem

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.url, self.problem))


class TemporalUnavailableError(ToolnexusError, ConnectionError):
    """Raised when a Temporal worker (:func:`toolnexus.temporal.run_worker`, ``toolnexus
    worker``) cannot reach its Temporal server.

    ``address`` is the ``HOST:PORT`` it tried, ``reason`` what went wrong. A host's *call*
    never raises it: a call that cannot reach Temporal is an error result, as for any
    tool.

    Example::

        try:
            serve_worker(toolkit, "temporal.internal:7233", task_queue="tools")
        except TemporalUnavailableError as exc:
            print(exc.address, exc.reason)
    """

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(f"cannot reach Temporal at {address}: {reason}")
        self.address = address
        self.reason = reason

    def __str__(self) -> str:
        return str(self.args[0])  # OSError's own __str__ would show the args tuple

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.address, self.reason))


class OperationCancelledError(ToolnexusError):
    """Raised by :meth:`CancellationToken.raise_if_cancellation_requested`.

    A tool may let it propagate: the toolkit turns it into an error result saying the
    call was cancelled.

    Example::

        token.raise_if_cancellation_requested()   # raises once the token is cancelled
    """

    def __init__(self, message: str = "the operation was cancelled") -> None:
        super().__init__(message)
