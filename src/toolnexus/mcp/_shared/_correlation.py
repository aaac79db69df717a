"""Request ids between two MCP peers: the two correlation rules, written once for the
server and the client.

Two correlation rules hold for both sides, each written once here:

- :class:`Pending` — *a request id we issued, and who waits for its answer*: the client's
  requests (the waiters of ``_peer.Peer``; the sans-IO ``ClientSession``'s methods) and the
  server's own
  requests (its legacy questions: ``elicitation/create``, ``sampling/createMessage``,
  ``roots/list``). A response is matched by id and JSON type (``true`` and ``1.0`` are not
  ``1``); it finds its waiter once — a replayed response, or one to an id never issued,
  finds nobody.
- :class:`InFlight` — *a request id the peer sent us, in flight until answered*: a second
  request with an id in flight is refused (:func:`reused_id`), ``notifications/cancelled``
  finds the request by its id (:meth:`InFlight.cancelled`), and the request leaves the
  table once, with its answer (:meth:`InFlight.end`). The server's calls (by the client's
  request id), its open subscriptions and the HTTP endpoint's response streams use it.

What is not here: tables keyed by ids no peer sends — the server's calls by the session's
own call id (``ServerContext.calls``, the call bridge's entries, where a cancel that comes
before the host made the call marks the entry) — and the legacy binding of a server's
question to the client's call (``_peer.Peer.bind_question``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from ._protocol import is_request_id

__all__ = ["InFlight", "Pending", "reused_id"]

W = TypeVar("W")  # who waits for an answer (a Waiter, a method name, a call, a stream)
R = TypeVar("R")  # what a request in flight is to its table (a call, a stream)


class Pending(dict[Any, W], Generic[W]):
    """Requests we issued that wait for their answer: who waits for each, by its id.

    A response finds its waiter by id *and* JSON type — the id we sent was an integer or
    a string, and ``true`` or ``1.0`` (equal to ``1`` in Python) names no request of ours —
    and finds it once: :meth:`answered` takes the waiter out, so a replayed response, or
    one to an id never issued, finds nobody (the caller ignores it). A dict, so that
    looking an id up costs a dict's lookup; write only through the methods.

    Example::

        pending: Pending[str] = Pending()
        pending.issue(1, "tools/call")
        assert pending.answered(True) is None          # not our id 1
        assert pending.answered(1) == "tools/call"
        assert pending.answered(1) is None             # a replayed response
    """

    __slots__ = ()

    def issue(self, request_id: int | str, waiter: W) -> None:
        """``waiter`` waits for the answer to our request ``request_id``."""
        self[request_id] = waiter

    def answered(self, response_id: Any) -> W | None:
        """Who waited for the response naming ``response_id`` — who waits no more; None
        for an id we did not issue, or whose answer came already."""
        kind = response_id.__class__
        return self.pop(response_id, None) if kind is int or kind is str else None

    def waiting(self, request_id: Any) -> W | None:
        """Who waits for request ``request_id`` (a ``progressToken`` names its request);
        None when nobody does."""
        kind = request_id.__class__
        return self.get(request_id) if kind is int or kind is str else None

    def withdraw(self, request_id: Any) -> W | None:
        """Nobody waits for request ``request_id`` any more (it was never sent, it was
        cancelled, or its answer is not awaited): a late answer finds nobody."""
        return self.pop(request_id, None)


def reused_id(request_id: str | int) -> str:
    """The refusal of a request whose id is in flight already (JSON-RPC ``-32600``)."""
    return (
        f"invalid request: id {request_id!r} is already in use by a request in progress; "
        "use a new id for each request"
    )


class InFlight(dict[Any, R], Generic[R]):
    """Requests the peer sent us that are still being answered, by their id.

    While a request is in flight its id is taken: a second request with it is refused
    (:meth:`in_use`, :func:`reused_id`); the first keeps the id and its answer.
    ``notifications/cancelled`` finds the request it names (:meth:`cancelled`); and the
    request leaves the table with its answer, once (:meth:`end` says whether this was
    it). A dict, so that looking an id up costs a dict's lookup; write only through the
    methods.

    Example::

        calls: InFlight[str] = InFlight()
        assert calls.begin(7, "add")
        assert not calls.begin(7, "other")           # the id is taken: refuse the second
        assert calls.cancelled({"requestId": 7}) == "add"
        assert calls.end(7, "add") and not calls.end(7, "add")   # answered once
    """

    __slots__ = ()

    def in_use(self, request_id: Any, also: Mapping[Any, Any] | None = None) -> bool:
        """Whether ``request_id`` is taken by a request in flight: here, or in ``also`` (a
        table of the same peer's requests kept apart, e.g. its open subscriptions)."""
        return request_id in self or (also is not None and request_id in also)

    def begin(self, request_id: Any, request: R) -> bool:
        """``request`` is in flight under ``request_id``; False (nothing changes) when the
        id is taken already — the first request keeps it."""
        if request_id in self:
            return False
        self[request_id] = request
        return True

    def cancelled(self, params: Any) -> R | None:
        """The request a ``notifications/cancelled`` (its ``params``) names, if it is in
        flight here; None for a malformed one or an id not in flight (ignored, as the
        specification says). It stays in the table: whoever ends it calls :meth:`end`."""
        if not isinstance(params, Mapping):
            return None
        request_id = params.get("requestId")
        return self.get(request_id) if is_request_id(request_id) else None

    def end(self, request_id: Any, request: R) -> bool:
        """``request`` (under ``request_id``) is answered: it leaves the table. False when
        it was not there — answered already, or the id belongs to another request."""
        if self.get(request_id) is request:
            del self[request_id]
            return True
        return False
