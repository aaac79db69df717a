"""The floor for ``benchmarks/mcp_server.py``: a stdlib JSON-RPC server answering inline.

It speaks just enough of the legacy MCP handshake for the benchmark client (initialize,
tools/list, tools/call of ``add``, resources/read of ``bench://note``, prompts/get of
``greet``, ping) and computes every answer on the reading thread:
no validation, no threads, no cancellation — what any stdio server must at least pay.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
]


def answer(message: dict[str, Any]) -> dict[str, Any]:
    method = message.get("method")
    if method == "initialize":
        return {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "floor", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        args = message["params"]["arguments"]
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}], "isError": False}
    return other(method, message.get("params") or {})


def other(method: Any, params: dict[str, Any]) -> dict[str, Any]:
    """resources/read and prompts/get (shared with ``mcp_http_floor_server.py``)."""
    if method == "resources/read":
        text = "a short note"
        return {"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": text}]}
    if method == "prompts/get":
        text = f"Hello, {params['arguments']['name']}!"
        return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
    return {}


def main() -> None:
    out = sys.stdout.buffer
    for line in iter(sys.stdin.buffer.readline, b""):
        message = json.loads(line)
        if "id" not in message:
            continue
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
        out.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
