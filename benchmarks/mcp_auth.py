"""What checking a token costs the MCP HTTP endpoint, per request, against no check at all.

One modern ``tools/call`` (a tool that adds two numbers) through
``toolnexus.mcp._server._endpoint.Endpoint.handle`` — in process, no sockets, so the check is not
lost in network noise — with each kind of authentication, interleaved round by round:

- no authentication (the baseline);
- a static bearer token (``ServerOptions(token=...)``, compared in constant time);
- OAuth with a verifier function (``ProtectedResource(verifier=fn)``: expiry, audience
  and scopes checked, the principal bound for the tool);
- OAuth with ``JwtVerifier`` (an ES256 signature checked against keys fetched once; needs
  the ``jwt`` extra, else the row is skipped) — as a client uses it, the same token on
  every request (known by its digest after the first), and with the signature checked
  every time (what a token never seen before costs);
- OAuth with ``IntrospectionVerifier`` (the answer cached after the first request).

The authorization server is the tests' (``tests/oauth_server.py``), on a free port.

    python benchmarks/mcp_auth.py [--rounds 15] [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from oauth_server import AuthServer  # noqa: E402
from toolnexus import Principal, Toolkit, tool  # noqa: E402
from toolnexus.mcp import (  # noqa: E402
    IntrospectionVerifier,
    JwtVerifier,
    ProtectedResource,
    ServerOptions,
)
from toolnexus.mcp._server._endpoint import Endpoint  # noqa: E402


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": META},
    }
).encode()
HEADERS = {
    "host": "localhost:8000",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "add",
}
RESOURCE = "http://localhost:8000/mcp"


def answer(endpoint: Endpoint, headers: dict[str, str]) -> int:
    reply = endpoint.handle("POST", headers, BODY)
    if reply.exchange is not None:
        while True:
            item = reply.exchange.next(5)
            if item is None or item[1]:
                break
    return reply.status


def cases(
    auth: AuthServer | None, opaque: AuthServer
) -> dict[str, tuple[ServerOptions, str | None]]:
    principal = Principal(
        "alice", scopes=["mcp"], audience=[RESOURCE], expires_at=time.time() + 3600
    )

    def verify(token: str) -> Principal | None:
        return principal if token == "function-token" else None

    found: dict[str, tuple[ServerOptions, str | None]] = {
        "no authentication": (ServerOptions(), None),
        "static token": (ServerOptions(token="static-token-0123456789"), "static-token-0123456789"),
        "OAuth, a verifier function": (
            ServerOptions(
                auth=ProtectedResource(authorization_servers=[opaque.issuer], verifier=verify)
            ),
            "function-token",
        ),
        "OAuth, IntrospectionVerifier (cached)": (
            ServerOptions(
                auth=ProtectedResource(
                    authorization_servers=[opaque.issuer],
                    verifier=IntrospectionVerifier(f"{opaque.issuer}/introspect"),
                )
            ),
            opaque.mint(scopes=["mcp"], audience=RESOURCE),
        ),
    }
    if auth is not None:
        verifier = JwtVerifier(auth.issuer)
        token = auth.mint(scopes=["mcp"], audience=RESOURCE)
        found["OAuth, JwtVerifier (ES256)"] = (
            ServerOptions(
                auth=ProtectedResource(authorization_servers=[auth.issuer], verifier=verifier)
            ),
            token,
        )
        # The same check with the signature verified every time (a token never seen).
        found["OAuth, JwtVerifier, signature each time"] = (
            ServerOptions(
                auth=ProtectedResource(
                    authorization_servers=[auth.issuer], verifier=verifier._verify
                )
            ),
            token,
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    try:
        import jwt  # noqa: F401
    except ImportError:
        jwt_server: Any = None
        print("(PyJWT is not installed: the JwtVerifier row is skipped)")
    else:
        jwt_server = AuthServer()
    with AuthServer(tokens="opaque") as opaque:
        if jwt_server is not None:
            jwt_server.__enter__()
        try:
            endpoints = {}
            for name, (server_options, token) in cases(jwt_server, opaque).items():
                headers = dict(HEADERS)
                if token is not None:
                    headers["authorization"] = f"Bearer {token}"
                endpoint = Endpoint(Toolkit([add]), server_options)
                assert answer(endpoint, headers) == 200, name  # warm: the host, keys, cache
                endpoints[name] = (endpoint, headers)
            samples: dict[str, list[float]] = {name: [] for name in endpoints}
            order = list(endpoints)
            for round_ in range(options.rounds):
                # Each round in another order, each batch after a few untimed calls: the
                # first batch of a round would otherwise pay for waking the machine up.
                for name in order[round_ % len(order) :] + order[: round_ % len(order)]:
                    endpoint, headers = endpoints[name]
                    for _ in range(20):
                        answer(endpoint, headers)
                    started = time.perf_counter()
                    for _ in range(options.calls):
                        answer(endpoint, headers)
                    samples[name].append((time.perf_counter() - started) / options.calls * 1e6)
            baseline = statistics.median(samples["no authentication"])
            print(
                f"load average {os.getloadavg()[0]:.2f}; {options.rounds} rounds x {options.calls}"
            )
            print(f"{'authentication':40} {'median µs/request':>18} {'x none':>7}")
            for name, values in samples.items():
                median = statistics.median(values)
                print(f"{name:40} {median:18.1f} {median / baseline:7.2f}")
            for endpoint, _ in endpoints.values():
                endpoint.close()
        finally:
            if jwt_server is not None:
                jwt_server.__exit__(None, None, None)


if __name__ == "__main__":
    main()
