"""The floor for ``benchmarks/mcp_http.py``: a raw stdlib ``http.server`` JSON-RPC server.

``python benchmarks/mcp_http_floor_server.py PORT`` answers POSTs of ``tools/call`` (``add``),
``resources/read`` (``bench://note``), ``prompts/get`` (``greet``), ``tools/list`` and
anything else (an empty result) inline on the connection's thread, with HTTP/1.1 keep-alive:
no validation, no sessions, no security checks, no tool host — what any Python HTTP server
must at least pay per request.
"""

from __future__ import annotations

import http.server
import json
import socket
import sys
from typing import Any

from mcp_floor_server import other  # this script's folder is first on sys.path


def answer(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("method") == "tools/call":
        args = message["params"]["arguments"]
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}], "isError": False}
    return other(message.get("method"), message.get("params") or {})


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes: without this, Nagle and delayed ACKs
        # add ~40 ms per answer, which would flatter everyone measured against it.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps(
            {"jsonrpc": "2.0", "id": message.get("id"), "result": answer(message)},
            separators=(",", ":"),
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


if __name__ == "__main__":
    http.server.ThreadingHTTPServer.request_queue_size = 128  # 16 clients connect at once
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()
