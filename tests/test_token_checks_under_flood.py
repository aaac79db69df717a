"""A flood of made-up tokens against a slow verifier locks nobody out (issue 36, "Done
when": a fresh authenticated client is served during each HTTP attack).

The verifier stands in for introspection that hangs: a token it does not know waits at a
gate the test opens. One address may hold at most ``max_checks_per_peer`` waiting checks
(the rest of its flood is told 503 at once), so a new client of another address is checked
at once; a token accepted before is served from its last good check when its ``cache_ms``
runs out during a flood, and checked again ahead of every unknown token. On the embedded
server and the ASGI app.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import http.client
import json
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from timing import TIMEOUT, wait_until
from toolnexus import Principal, Toolkit, tool
from toolnexus.mcp import HttpServer, ProtectedResource, ServerOptions, asgi_app
from toolnexus.mcp._server import _auth

ISSUER = "https://login.example.com"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
LISTING = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/list",
}


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


TOOLKIT = Toolkit([add])


class Hanging:
    """A verifier that answers the tokens it knows at once and holds every other at
    ``gate`` (a semaphore: each permit lets one check end, refused); ``entered`` counts
    the checks that reached it, ``asked`` every token asked, in order."""

    def __init__(self) -> None:
        self.known: dict[str, Principal] = {}
        self.gate = threading.Semaphore(0)
        self.entered = threading.Semaphore(0)
        self.asked: list[str] = []
        self.asked_again = threading.Event()  # a known token was asked a second time
        self._lock = threading.Lock()

    def add(self, token: str, audience: str) -> str:
        self.known[token] = Principal(
            "alice",
            scopes="mcp",
            client_id="app",
            issuer=ISSUER,
            audience=(audience,),
            expires_at=time.time() + 3600,
        )
        return token

    def __call__(self, token: str) -> Principal | None:
        with self._lock:
            self.asked.append(token)
            if token in self.known and self.asked.count(token) > 1:
                self.asked_again.set()
        if token in self.known:
            return self.known[token]
        self.entered.release()
        self.gate.acquire(timeout=TIMEOUT)
        return None

    def open(self) -> None:
        self.gate.release(1000)


@pytest.fixture
def hanging() -> Iterator[Hanging]:
    verifier = Hanging()
    yield verifier
    verifier.open()


def options(verifier: Hanging, **extra: Any) -> ServerOptions:
    auth = ProtectedResource(
        authorization_servers=[ISSUER], verifier=verifier, required_scopes=["mcp"], **extra
    )
    return ServerOptions(auth=auth)


def listing(server: HttpServer, token: str, source: str = "127.0.0.1") -> int:
    """The status of a ``tools/list`` with ``token``, sent from the address ``source``."""
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT, source_address=(source, 0))
    try:
        headers = {**HEADERS, "Authorization": f"Bearer {token}"}
        connection.request("POST", "/mcp", json.dumps(LISTING).encode(), headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def flood(
    server: HttpServer, sources: list[str], each: int, answers: queue.Queue[int]
) -> list[threading.Thread]:
    """``each`` requests with made-up tokens (all different) from each address of
    ``sources``, at once; each status goes to ``answers``."""
    threads = []
    for number, source in enumerate(sources):
        for index in range(each):
            token = f"made-up-{number}-{index}"
            thread = threading.Thread(
                target=lambda t=token, s=source: answers.put(listing(server, t, s)), daemon=True
            )
            thread.start()
            threads.append(thread)
    return threads


def collect(answers: queue.Queue[int], count: int) -> collections.Counter[int]:
    return collections.Counter(answers.get(timeout=TIMEOUT) for _ in range(count))


def test_one_address_flooding_made_up_tokens_holds_no_more_than_its_share(
    hanging: Hanging,
) -> None:
    """40 made-up tokens from one address filled all 32 check slots: every client whose
    token was not in memory then got 503 for as long as the flood lasted."""
    with HttpServer(TOOLKIT, options(hanging), port=0) as server:
        server.start()
        fresh = hanging.add("fresh", server.url)
        answers: queue.Queue[int] = queue.Queue()
        threads = flood(server, ["127.0.0.1"], 40, answers)
        for _ in range(4):  # max_checks_per_peer: four of them wait for the verifier ...
            assert hanging.entered.acquire(timeout=TIMEOUT)
        refused = collect(answers, 36)  # ... and the rest is told at once to retry
        assert refused == {503: 36}
        # The four still hang; a new client of another address is checked at once.
        assert listing(server, fresh, "127.0.0.2") == 200
        hanging.open()
        assert collect(answers, 4) == {401: 4}
        for thread in threads:
            thread.join(TIMEOUT)


def test_an_accepted_token_whose_cache_ran_out_is_served_during_a_flood(
    hanging: Hanging, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks of 8 flooding addresses fill every slot and every checking thread; a
    token accepted before is still served when its cache_ms runs out, and its check runs
    again ahead of the tokens queued before it."""
    now = [time.time()]
    monkeypatch.setattr(_auth, "_clock", lambda: now[0])
    with HttpServer(TOOLKIT, options(hanging, cache_ms=10_000), port=0) as server:
        server.start()
        good = hanging.add("good", server.url)
        assert listing(server, good) == 200
        answers: queue.Queue[int] = queue.Queue()
        sources = [f"127.0.0.{n}" for n in range(1, 9)]
        threads = flood(server, sources, 5, answers)  # 40: 4 from each address wait
        assert collect(answers, 8) == {503: 8}  # 32 wait: the bound on all of them
        for _ in range(8):  # every checking thread hangs
            assert hanging.entered.acquire(timeout=TIMEOUT)
        now[0] += 12  # past its cache_ms: its last good check serves it
        assert listing(server, good) == 200
        assert hanging.asked.count("good") == 1
        hanging.gate.release()  # one thread comes free: it checks the known token first
        assert hanging.asked_again.wait(TIMEOUT)
        hanging.open()
        assert collect(answers, 32) == {401: 32}
        for thread in threads:
            thread.join(TIMEOUT)


def test_a_token_refused_when_checked_again_is_refused_from_then_on(
    hanging: Hanging, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served from its last good check only while that check runs again: once the
    verifier refuses it (revoked), it is refused; and never past another cache_ms."""
    now = [time.time()]
    monkeypatch.setattr(_auth, "_clock", lambda: now[0])
    with HttpServer(TOOLKIT, options(hanging, cache_ms=10_000), port=0) as server:
        server.start()
        good = hanging.add("good", server.url)
        assert listing(server, good) == 200
        del hanging.known[good]  # revoked: its next check hangs, then refuses it
        now[0] += 12
        assert listing(server, good) == 200  # its last good check, while it is checked
        assert hanging.entered.acquire(timeout=TIMEOUT)
        hanging.open()
        assert wait_until(lambda: listing(server, good) == 401)
        # Past the second cache_ms nothing is served from memory: it is checked (and
        # refused) before it is answered.
        hanging.add("again", server.url)
        assert listing(server, "again") == 200
        del hanging.known["again"]
        now[0] += 25
        assert listing(server, "again") == 401


def test_max_checks_per_peer_is_an_option_and_is_checked() -> None:
    auth = ProtectedResource(authorization_servers=[ISSUER], verifier=Hanging())
    assert auth.max_checks_per_peer == 4
    assert dataclasses.replace(auth, max_checks_per_peer=1).max_checks_per_peer == 1
    for bad in (0, -1, True, "4", 1.5):
        with pytest.raises((ValueError, TypeError), match="max_checks_per_peer"):
            ProtectedResource(
                authorization_servers=[ISSUER], verifier=Hanging(), max_checks_per_peer=bad
            )


# --------------------------------------------------------------------------- the ASGI app


async def asgi_listing(app: Any, token: str, client: str) -> int:
    """The status of a ``tools/list`` with ``token`` from the address ``client``."""
    headers = {k.lower(): v for k, v in HEADERS.items()}
    headers |= {"host": "localhost:8000", "authorization": f"Bearer {token}"}
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "scheme": "http",
        "client": (client, 50000),
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    body = json.dumps(LISTING).encode()
    delivered = False
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            statuses.append(event["status"])

    await app(scope, receive, send)
    return statuses[0]


def test_the_asgi_app_holds_one_address_to_its_share_of_checks(hanging: Hanging) -> None:
    resource = "http://localhost:8000/mcp"
    app = asgi_app(TOOLKIT, options(hanging, resource=resource))
    fresh = hanging.add("fresh", resource)

    async def main() -> tuple[collections.Counter[int], int, collections.Counter[int]]:
        loop = asyncio.get_running_loop()
        made_up = [
            asyncio.ensure_future(asgi_listing(app, f"made-up-{n}", "10.0.0.1")) for n in range(40)
        ]
        with concurrent.futures.ThreadPoolExecutor(1) as waiter:
            for _ in range(4):
                assert await loop.run_in_executor(waiter, hanging.entered.acquire, True, TIMEOUT)
        done: collections.Counter[int] = collections.Counter()
        pending = set(made_up)
        while sum(done.values()) < 36:
            finished, pending = await asyncio.wait(
                pending, timeout=TIMEOUT, return_when=asyncio.FIRST_COMPLETED
            )
            assert finished, "the flood beyond the address's share was not refused"
            done.update(task.result() for task in finished)
        status = await asyncio.wait_for(asgi_listing(app, fresh, "10.0.0.2"), TIMEOUT)
        hanging.open()
        rest = collections.Counter(await asyncio.gather(*pending))
        return done, status, rest

    try:
        refused, status, rest = asyncio.run(main())
    finally:
        app.close()
    assert refused == {503: 36}
    assert status == 200
    assert rest == {401: 4}
