"""Closing the Streamable HTTP client transport ends every request it could still send:
one being sent as ``close`` runs is aborted once its socket exists, and none starts after.
Before, a request whose socket was not yet there when ``close`` aborted it read its answer
as if nothing had happened — a call through a closed client waited for a slow server.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

import mcp_client_tools as tools
from http_helpers import headers_for, modern_call
from timing import STALL, TIMEOUT
from toolnexus.mcp import HttpServer
from toolnexus.mcp._client._http import HttpTransport


def slow_call() -> tuple[bytes, dict[str, str]]:
    body = modern_call("wait", {"seconds": STALL})
    return json.dumps(body).encode(), headers_for(body)


@pytest.fixture
def server() -> Any:
    served = HttpServer(tools.toolkit, port=0)
    served.start()
    yield served
    served.shutdown()


def test_a_request_sent_while_the_transport_closes_ends_at_once(server: Any) -> None:
    transport = HttpTransport(server.url, {}, connect_timeout=TIMEOUT, max_message_bytes=1 << 20)
    send = transport._send

    def sent_then_closed(*args: Any, **kwargs: Any) -> Any:
        sent = send(*args, **kwargs)  # on the wire, its socket not yet the exchange's
        transport.close(TIMEOUT)
        return sent

    transport._send = sent_then_closed  # type: ignore[method-assign]
    body, headers = slow_call()
    exchange = transport.start(body, headers, None)
    ended = threading.Event()
    problems: list[str] = []

    def read() -> None:
        try:
            list(exchange.messages())
        except HttpTransport.Failure as exc:
            problems.append(exc.problem)
        ended.set()

    threading.Thread(target=read, daemon=True).start()
    # The server holds the call for STALL: only the abort ends the read before that.
    assert ended.wait(TIMEOUT)
    assert problems == ["aborted"]


def test_no_request_starts_once_the_transport_closed(server: Any) -> None:
    transport = HttpTransport(server.url, {}, connect_timeout=TIMEOUT, max_message_bytes=1 << 20)
    transport.close(TIMEOUT)
    body, headers = slow_call()
    with pytest.raises(HttpTransport.Failure, match="the client is closed"):
        transport.start(body, headers, None)
