"""What every bridge shares: the host a bridge runs on, the missing-framework error, the
answer a framework's reply stands for, and the schema a tool is advertised with."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._extras import install_hint
from .._result import ToolResult
from .._suspension import Answer, Request
from ..errors import InvalidTypeError, InvalidValueError

if TYPE_CHECKING:
    from .._host import Host
    from .._toolkit import Toolkit
    from .._tools import Tool


def require(module: str, framework: str, extra: str) -> ModuleType:
    """Import ``module`` or raise ``ImportError`` naming the packages that install it (the
    framework's own: this distribution is not on the package index yet)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise ImportError(
            f"the {framework} bridge needs {top!r}, which is not installed: "
            + install_hint(extra, top.replace("_", "-"))
        ) from exc


def host_of(source: Toolkit | Host) -> Host:
    """The host a bridge runs its calls on: ``source`` itself, or a new one for a toolkit."""
    from .._host import Host
    from .._toolkit import Toolkit

    if isinstance(source, Host):
        return source
    if isinstance(source, Toolkit):
        return Host(source)
    from .._views import ToolView

    if isinstance(source, ToolView):
        raise InvalidTypeError(
            "a bridge takes a Toolkit or a Host, got a ToolView; give it Host(view), "
            "which runs that view's tools only"
        )
    raise InvalidTypeError(
        f"a bridge takes a Toolkit or a Host, got {type(source).__name__}; "
        "build one with Toolkit([tool_a, tool_b])"
    )


def direct_tools(host: Host) -> list[Tool]:
    """The host's tools a framework's model may call: all but those only code may call
    (``allowed_callers=["programmatic"]``) — these frameworks' models call tools directly,
    and the adapters describe such a tool nowhere without programmatic calling. A host
    over a view (``Host(view)``) offers the view's tools alone."""
    from .._adapters import offered

    return offered(host.view.tools(), "openai")


def parameters(tool: Tool) -> dict[str, Any]:
    """The tool's parameters schema exactly as the OpenAI adapter advertises it."""
    from .._toolkit import Toolkit

    [definition] = Toolkit([tool]).to_openai()
    schema: dict[str, Any] = definition["function"]["parameters"]
    return schema


def answer_for(request: Request, reply: object) -> Answer:
    """The :class:`Answer` a framework's resume value stands for.

    ``reply`` may be an :class:`Answer`; a mapping in the wire shape (``ok``, ``data``,
    ``reason``; the ``id`` may be left out, and is always the request's); ``True``/``False``
    (accept without data / decline); or, for any other mapping, the data of an accepting
    answer (``{"env": "staging"}``).
    """
    if isinstance(reply, Answer):
        return Answer(request.id, reply.ok, reply.data, reply.reason)
    if isinstance(reply, bool):
        return Answer.accept(request) if reply else Answer.decline(request)
    if isinstance(reply, Mapping):
        if "ok" in reply:
            ok = reply["ok"]
            if not isinstance(ok, bool):
                raise InvalidValueError(f"an answer's 'ok' must be true or false, got {ok!r}")
            data = reply.get("data")
            if ok:
                return Answer.accept(request, data if isinstance(data, Mapping) else None)
            reason = reply.get("reason")
            return Answer.decline(request, reason if isinstance(reason, str) else "declined")
        return Answer.accept(request, reply)
    if reply is None:
        return Answer.decline(request)
    raise InvalidValueError(
        f"cannot answer {request.kind!r} request {request.id!r} with {type(reply).__name__}; "
        "resume with True/False, the answer's data as a dict, or {'ok': ..., 'data': ...}"
    )


def question(name: str, result: ToolResult) -> dict[str, Any]:
    """What a bridge shows the framework when a call asks: the tool, and the request as JSON."""
    request = ToolResult.pending_of(result)
    assert request is not None
    return {"tool": name, "request": request.to_dict()}
