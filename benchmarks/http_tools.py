"""What an HTTP tool costs over the request it makes, and what importing an OpenAPI
document costs.

1. One GET answered with a small JSON body by a stdlib server in this process:
   - baseline: a bare ``http.client`` request on a new connection, body read;
   - ``http_tool(...)(args)``: the same request through a tool (argument validation, the
     deadline timer, the result);
   - ``Toolkit.from_openapi(...)``'s tool for the same operation (parameter serialisation,
     structured output checked against the response schema).
   Rounds are interleaved; medians in microseconds, and each against the baseline.
2. ``load_openapi`` of a generated document of N operations (each with path, query and
   header parameters, a JSON body and a response schema), against ``json.loads`` of its
   text; or of a real one (``--document api.github.com.json``).

Nothing asserts: read the figures next to their baseline and the load average printed.

usage: python benchmarks/http_tools.py [--rounds 15] [--calls 200] [--operations 1000]
                                        [--document PATH]
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import statistics
import threading
import time
from typing import Any

from toolnexus import Toolkit, http_tool, load_openapi

BODY = json.dumps({"id": 7, "name": "rex"}).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def bare(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/pets/7?verbose=true", headers={"X-Trace": "t"})
        connection.getresponse().read()
    finally:
        connection.close()


def document(base: str, operations: int) -> dict[str, Any]:
    pet = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "id": {"type": "integer", "readOnly": True},
            "name": {"type": "string", "maxLength": 100},
            "tag": {"type": "string", "nullable": True},
        },
    }
    paths: dict[str, Any] = {}
    for index in range(operations):
        paths[f"/r{index}/{{petId}}"] = {
            "post": {
                "operationId": f"op{index}",
                "tags": [f"t{index % 20}"],
                "parameters": [
                    {"name": "petId", "in": "path", "required": True,
                     "schema": {"type": "integer"}},
                    {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                ],
                "requestBody": {"content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Pet"}}}},
                "responses": {"200": {"description": "ok", "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}},
            }
        }  # fmt: skip
    paths["/pets/{petId}"] = {
        "get": {
            "operationId": "getPet",
            "parameters": paths["/r0/{petId}"]["post"]["parameters"],
            "responses": paths["/r0/{petId}"]["post"]["responses"],
        }
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "bench", "version": "1"},
        "servers": [{"url": base}],
        "components": {"schemas": {"Pet": pet}},
        "paths": paths,
    }


def timed(fn: Any, calls: int) -> float:
    """Microseconds per call, over ``calls`` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--operations", type=int, default=1000)
    parser.add_argument("--document", help="a real OpenAPI document to import instead")
    options = parser.parse_args()
    print(f"load average: {os.getloadavg()}")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    base = f"http://127.0.0.1:{port}"
    tool = http_tool(
        name="get_pet",
        method="GET",
        url=base + "/pets/{id}",
        headers={"X-Trace": "t"},
        query=["verbose"],
        input_schema={
            "type": "object",
            "properties": {"id": {"type": "integer"}, "verbose": {"type": "boolean"}},
            "required": ["id"],
        },
    )
    small = Toolkit.from_openapi(document(base, 1))
    operation = small.get("getPet")
    targets = {
        "bare http.client": lambda: bare(port),
        "http_tool": lambda: tool({"id": 7, "verbose": True}),
        "from_openapi tool": lambda: operation({"petId": 7, "verbose": True, "X-Trace": "t"}),
    }
    figures: dict[str, list[float]] = {name: [] for name in targets}
    for _ in range(options.rounds):
        for name, fn in targets.items():
            figures[name].append(timed(fn, options.calls))
    floor = statistics.median(figures["bare http.client"])
    print(f"\n1. one GET, {options.calls} calls x {options.rounds} rounds (median us/call)")
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"   {name:<20} {median:9.1f}   x{median / floor:.2f}")

    if options.document:
        with open(options.document, encoding="utf-8") as handle:
            text = handle.read()
        label = os.path.basename(options.document)
    else:
        text = json.dumps(document(base, options.operations))
        label = f"a generated document of {options.operations} operations"
    parse = []
    load = []
    for _ in range(3):
        start = time.perf_counter()
        parsed = json.loads(text)
        parse.append(time.perf_counter() - start)
        start = time.perf_counter()
        imported = load_openapi(parsed, base_url=base)
        load.append(time.perf_counter() - start)
    print(f"\n2. load_openapi of {label}: {len(imported.tools)} tools")
    print(f"   json.loads     {statistics.median(parse) * 1000:9.1f} ms")
    print(f"   load_openapi   {statistics.median(load) * 1000:9.1f} ms   "
          f"({statistics.median(load) / len(imported.tools) * 1e6:.0f} us per tool)")  # fmt: skip
    server.shutdown()


if __name__ == "__main__":
    main()
