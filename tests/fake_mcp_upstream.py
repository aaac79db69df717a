"""An upstream MCP server over stdio (legacy era) whose offer a test changes as it runs.

``python tests/fake_mcp_upstream.py STATE`` reads the JSON file ``STATE`` at every
request, so a test rewrites it to change what the server offers — without a word, as a
server whose list went stale without a notification does. What the file may hold:

- ``tools``, ``resources``, ``resourceTemplates``, ``prompts``: the lists, as MCP writes
  them (``tools`` entries need only a ``name``);
- ``ttl``: ``{"tools": ms, "resources": ms, "prompts": ms}``, the ``ttlMs`` of those lists;
- ``readHints``: what every ``resources/read`` answer adds (``{"ttlMs": 5}``, say);
- ``results``: a tool's ``CallToolResult`` by tool name (else it echoes its name);
- ``refuse``: tool names it lists but refuses as unknown all the same.

A call of a tool it does not list is refused ``-32602`` ("Unknown tool: NAME"), as is a
read of a URI it does not list (no template matched by prefix either) or a prompt it
does not list. A read of a URI that starts with ``hang:`` and a ``prompts/get`` of a name
that starts with ``hang`` are never answered (only a cancel ends them). Each list
request it answers is appended to ``STATE.log`` (one method a line, before it is answered).
"""

from __future__ import annotations

import json
import sys

PATH = sys.argv[1]


def state() -> dict:
    with open(PATH, encoding="utf-8") as handle:
        return json.load(handle)


def send(message: object) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def refuse(request_id: object, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": text}})


LISTS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


def listed_uri(now: dict, uri: str) -> bool:
    if any(entry.get("uri") == uri for entry in now.get("resources", ())):
        return True
    for entry in now.get("resourceTemplates", ()):
        fixed = str(entry.get("uriTemplate", "")).split("{", 1)[0]
        if fixed and uri.startswith(fixed):
            return True
    return False


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    request_id = message.get("id")
    if request_id is None or method is None:
        continue
    params = message.get("params") or {}
    now = state()
    if method == "initialize":
        capabilities = {
            "tools": {"listChanged": True},
            "resources": {"listChanged": True, "subscribe": True},
            "prompts": {"listChanged": True},
        }
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": capabilities,
                    "serverInfo": {"name": "fake-upstream", "version": "0"},
                },
            }
        )
    elif method in LISTS:
        key = LISTS[method]
        entries = now.get(key, [])
        if key == "tools":
            entries = [{"inputSchema": {"type": "object"}, **entry} for entry in entries]
        result: dict = {key: entries}
        ttl = now.get("ttl", {}).get(key.replace("resourceTemplates", "resources"))
        if ttl is not None:
            result["ttlMs"] = ttl
        # (logged before it is answered: a test that reads the log after the answer
        # always finds it)
        with open(PATH + ".log", "a", encoding="utf-8") as log:
            log.write(method + "\n")
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif method == "tools/call":
        name = params.get("name")
        listed = any(entry.get("name") == name for entry in now.get("tools", ()))
        if not listed or name in now.get("refuse", ()):
            refuse(request_id, f"Unknown tool: {name}")
            continue
        answer = now.get("results", {}).get(name) or {
            "content": [{"type": "text", "text": f"called {name}"}]
        }
        send({"jsonrpc": "2.0", "id": request_id, "result": answer})
    elif method == "resources/read":
        uri = str(params.get("uri"))
        if uri.startswith("hang:"):
            continue  # never answered: only a cancel ends it
        if not listed_uri(now, uri):
            refuse(request_id, f"Resource not found: {uri}")
            continue
        contents = [{"uri": uri, "mimeType": "text/plain", "text": f"read {uri}"}]
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"contents": contents, **now.get("readHints", {})},
            }
        )
    elif method == "prompts/get":
        name = str(params.get("name"))
        if name.startswith("hang"):
            continue  # never answered: only a cancel ends it
        if not any(entry.get("name") == name for entry in now.get("prompts", ())):
            refuse(request_id, f"Unknown prompt: {name}")
            continue
        content = {"type": "text", "text": f"prompt {name}"}
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"messages": [{"role": "user", "content": content}]},
            }
        )
    elif method in ("ping", "resources/subscribe", "resources/unsubscribe"):
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    else:
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32601, "message": f"method not found: {method}"},
            }
        )
