"""The resources feature of a server session: ``resources/list``,
``resources/templates/list``, ``resources/read`` (run on the host as a call, as a tool
is) and, on the legacy era, ``resources/subscribe``/``resources/unsubscribe``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._frozen import thaw
from ..._log import LazyLogger
from .._shared._catalog import view
from .._shared._codec import INVALID_PARAMS
from .._shared._protocol import describe
from . import _feature_skills as skills
from ._context import BOTH, LEGACY, Feature, Method, ServerContext
from ._types import Action, CallState, ClientView, Reject, error, plain_result, who

if TYPE_CHECKING:
    from ..._result import ToolResult

__all__ = ["FEATURE", "subscribed"]

_log = LazyLogger()  # logging loads with the first record, not with the server


def subscribed(item: Any, uri: str) -> None:
    """Tell the resource ``item`` a client subscribed to ``uri`` (a gateway's resource
    subscribes upstream); a hook that fails is logged, never the client's error."""
    hook = getattr(item, "_on_subscribe", None)
    if hook is None:
        return
    try:
        hook(uri)
    except Exception:
        _log.exception("subscribing to %r failed", uri)


def _declare(context: ServerContext, modern: bool) -> dict[str, Any] | None:
    if not context.toolkit.resources() and not skills.has_skills(context):
        return None  # a skill's files are resources: the skills extension needs them
    # modern clients subscribe to a resource on subscriptions/listen
    return {"resources": {"subscribe": True, "listChanged": True}}


def _lister(templates: bool) -> Method:
    key = "resourceTemplates" if templates else "resources"

    def handle(
        context: ServerContext,
        request_id: str | int,
        params: dict[str, Any],
        meta: Mapping[str, Any],
        client: ClientView,
    ) -> list[Action]:
        shown = view(context.toolkit).resources()
        items: list[Any] = [item for item in shown if item.is_template == templates]
        if not templates and skills.has_skills(context):
            items += skills.listed_manifests(context)  # each served skill's SKILL.md

        def entries(page: list[Any]) -> list[Any]:
            return [item if isinstance(item, dict) else _describe(item, client) for item in page]

        return [
            context.reply(request_id, client, context.page(key, items, entries, params, client))
        ]

    return Method(handle)


def _describe(item: Any, client: ClientView) -> dict[str, Any]:
    entry: dict[str, Any] = {"uriTemplate" if item.is_template else "uri": item.uri}
    entry["name"] = item.name
    if item.title and client.at_least("2025-06-18"):
        entry["title"] = item.title
    if item.description:
        entry["description"] = item.description
    if item.mime_type:
        entry["mimeType"] = item.mime_type
    if item.annotations:
        entry["annotations"] = thaw(item.annotations)
    return entry


def _read(
    context: ServerContext,
    request_id: str | int,
    params: dict[str, Any],
    meta: Mapping[str, Any],
    client: ClientView,
) -> list[Action]:
    """A ``resources/read``: checked (``-32602`` before anything runs), then run as a call
    of the resource's inner tool (``Toolkit.resolve`` reads its arguments)."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise Reject(INVALID_PARAMS, f"invalid params: uri must be a string, got {describe(uri)}")
    if skills.has_skills(context) and skills.serves(context, uri):
        # a skill's file: read from its folder now, bounded (no user code runs), or from
        # the server of a re-exported skill (detached: it answers at its own pace),
        # verified against its entry

        def work() -> list[Action]:
            body = context.cache_hints({"contents": [skills.read(context, uri)]}, client)
            return [context.reply(request_id, client, body)]

        key = skills.remote(context, uri)
        return work() if key is None else context.detached(request_id, work, f"skill {key}")
    found = view(context.toolkit).find_resource(uri)
    if found is None:
        # SEP-2164: never an empty contents list; the URI rides in the error's data.
        raise Reject(
            INVALID_PARAMS,
            f"Resource not found: {uri!r}; resources/list and "
            "resources/templates/list say what this server offers",
            {"uri": uri},
        )
    problem = found[0].problem(uri)
    if problem is not None:  # a template variable that does not read as its type
        raise Reject(INVALID_PARAMS, f"Resource not found: {uri!r} ({problem})", {"uri": uri})
    method = "resources/read"
    return context.start(request_id, method, method, {"uri": uri}, params, meta, client)


def _read_finish(context: ServerContext, call: CallState, outcome: ToolResult) -> list[Action]:
    """The answer to a finished ``resources/read``: its contents, or the error."""
    if outcome.is_error:
        from ._served import NOT_FOUND_KEY

        if outcome.metadata.get(NOT_FOUND_KEY):
            # Its function says the URI names nothing: SEP-2164, as no match at all.
            uri = call.arguments.get("uri")
            context.forget(call)
            text = f"Resource not found: {uri!r} ({outcome.output})"
            return [error(call.request_id, INVALID_PARAMS, text, {"uri": uri})]
        return context.fail(call, f"{who(call)} failed: {outcome.output}")
    from ._resources import CONTENTS_KEY

    uri = call.arguments["uri"]
    contents = [
        {**thaw(each), "uri": each.get("uri") or uri}
        for each in outcome.metadata.get(CONTENTS_KEY) or ()
    ]
    if not contents:
        return context.fail(call, f"{who(call)} failed: it returned no contents")
    body = context.cache_hints({"contents": contents}, call.client)
    if "ttlMs" in body:
        _upstream_hints(context, uri, body)
    return context.finish(call, body)


def _upstream_hints(context: ServerContext, uri: str, body: dict[str, Any]) -> None:
    """A gateway's read of an upstream resource: its cache hints the stricter of the
    upstream's and this server's — the smaller ``ttlMs`` (``0``, the spec's default,
    when the upstream gave none: its content may change with each read), ``private``
    when either is."""
    found = view(context.toolkit).find_resource(uri)
    fn = found[0].fn if found is not None else None
    hints = getattr(fn, "cache_hints", None)
    if not callable(hints):
        return  # not a gateway's resource: this server's own hints hold
    given = hints(uri)
    ttl = given.get("ttlMs")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        ttl = 0
    body["ttlMs"] = min(ttl, body["ttlMs"])
    if given.get("cacheScope") == "private":
        body["cacheScope"] = "private"


def _subscriber(subscribe: bool) -> Method:
    def handle(
        context: ServerContext,
        request_id: str | int,
        params: dict[str, Any],
        meta: Mapping[str, Any],
        client: ClientView,
    ) -> list[Action]:
        """A legacy client's ``resources/subscribe`` or ``resources/unsubscribe``."""
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise Reject(
                INVALID_PARAMS, f"invalid params: uri must be a string, got {describe(uri)}"
            )
        if not subscribe:
            context.subscribed.discard(uri)
            return [plain_result(request_id, {})]
        found = view(context.toolkit).find_resource(uri)
        if found is None:
            raise Reject(
                INVALID_PARAMS,
                f"Resource not found: {uri!r}; subscribe to a URI this server serves",
                {"uri": uri},
            )
        context.subscribed.add(uri)
        subscribed(found[0], uri)
        return [plain_result(request_id, {})]

    return Method(handle, LEGACY)


FEATURE = Feature(
    "resources",
    _declare,
    {
        "resources/list": _lister(templates=False),
        "resources/templates/list": _lister(templates=True),
        "resources/read": Method(_read, BOTH, _read_finish),
        "resources/subscribe": _subscriber(subscribe=True),
        "resources/unsubscribe": _subscriber(subscribe=False),
    },
)
"""Resources: declared when the toolkit has any."""
