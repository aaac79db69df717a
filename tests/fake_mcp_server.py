"""A misbehaving MCP server over stdio, for the client's bad-input tests.

``python tests/fake_mcp_server.py MODE`` speaks just enough of the legacy protocol
(``server/discover`` is refused as unknown, so a client falls back to ``initialize``) to
list two tools and answer ``tools/call`` — each MODE breaks one rule:

- ``fine``: behaves;
- ``garbage``: prints lines that are not JSON-RPC before every answer;
- ``wrong-ids``: answers a call first with a wrong id, then a non-object result, then right;
- ``huge``: answers a call with a 2 MB text;
- ``deep``: answers a call with a result nested 10,000 levels deep;
- ``die``: exits (code 3, a word on stderr) in the middle of a call;
- ``silent``: never answers anything;
- ``bad-schema``: lists a tool whose schema the validator refuses, next to a good one;
- ``changes``: says its tool list changed after the first call (the list grows);
- ``linger``: behaves, but outlives the end of its stdin by a minute (only a signal ends it);
- ``unterminated``: answers a call without the line's newline, and exits.
- ``deaf``: stops reading its stdin once it listed its tools (only a signal ends it);
- ``flood``: answers a call after sending ``FLOOD`` pings, never reading their replies
  (nor anything else) again.
- ``ask``: a call of ``echo`` with the text ``ask`` asks a form question
  (``elicitation/create``) and ends when the client answers it; a later call with the
  text ``heard`` answers the action that answer carried (``decline``, ``cancel``, ...),
  once it came.
- ``resources``: also offers resources (``notes://same``, ``fake://doc``), the templates
  ``fake://items/{id}`` and ``{+base}/readme`` (no literal scheme), and the prompt
  ``greet``; a read answers the URI it was asked for.
- ``stale-resources``: as ``resources``, but its ``resources/list`` answers carry ``ttlMs``
  50, and the list grows (``fake://new``) after the first read, without a word.
- ``slow-read``: as ``resources``, but it never answers a ``resources/read`` (it counts the
  ``notifications/cancelled`` that give one up).
- ``ttl``: its ``tools/list`` answers carry the cache hints ``ttlMs`` (a minute) and
  ``cacheScope``.
- ``stale``: its ``tools/list`` answers carry ``ttlMs`` 50, and its list grows after the
  first call without a word (no ``list_changed``): only a client that lists again sees it.
- ``gather``: a call of ``echo`` with the text ``gather:N`` is answered only once N such
  calls wait at the same time (then all of them); one with the text ``never`` is never
  answered (only a cancel ends it: ``counts`` shows the ``notifications/cancelled``).

In every mode, a call of ``echo`` with the text ``counts`` answers how many requests of
each method the server has seen (a JSON object), so a test counts what reached it.
"""

from __future__ import annotations

import json
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "fine"
GOOD = {
    "name": "echo",
    "description": "Echoes.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
BAD = {
    "name": "broken",
    "description": "Bad schema.",
    "inputSchema": {
        "type": "object",
        "properties": {"x": {"type": "string", "pattern": "(unclosed"}},
    },
}
EXTRA = {"name": "extra", "description": "Appears later.", "inputSchema": {"type": "object"}}
calls = 0
seen: dict[str, int] = {}  # requests by method (``echo counts`` answers them)
RESOURCES = [
    {"uri": "notes://same", "name": "same", "mimeType": "text/plain"},
    {"uri": "fake://doc", "name": "doc", "mimeType": "text/plain"},
]
TEMPLATES = [
    {"uriTemplate": "fake://items/{id}", "name": "item"},
    {"uriTemplate": "{+base}/readme", "name": "readme anywhere"},
]
heard: list[str] = []  # ``ask``: the actions the client answered the question with
waiting: list[object] = []  # ``ask``: the ids of calls waiting for those
gathered: list[object] = []  # ``gather``: the ids of the calls held so far
FLOOD = 20_000  # pings: their replies fill a pipe many times over


def hang() -> None:
    """Read nothing more, ever: only the test's signal ends this process."""
    threading.Event().wait()


def send(message: object) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(request_id: object, value: str) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"content": [{"type": "text", "text": value}], "isError": False},
        }
    )


def listed_resources() -> object:
    if MODE != "stale-resources":
        return {"resources": RESOURCES}
    new = [{"uri": "fake://new", "name": "new"}] if seen.get("resources/read") else []
    return {"resources": RESOURCES + new, "ttlMs": 50}


def read(message: dict) -> object:
    uri = message["params"]["uri"]
    return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"read {uri}"}]}


GREET = {"name": "greet", "arguments": [{"name": "who", "required": True}]}
ANSWERS = {
    "resources/list": lambda message: listed_resources(),
    "resources/templates/list": lambda message: {"resourceTemplates": TEMPLATES},
    "resources/read": read,
    "resources/subscribe": lambda message: {},
    "prompts/list": lambda message: {"prompts": [GREET]},
    "prompts/get": lambda message: {
        "messages": [
            {
                "role": "user",
                "content": {
                    "type": "text",
                    "text": f"Hello {message['params']['arguments']['who']}",
                },
            }
        ]
    },
}


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    request_id = message.get("id")
    if method is not None:
        seen[method] = seen.get(method, 0) + 1  # notifications too
    if MODE == "silent" or request_id is None:
        continue
    if method is None:  # the client's answer to a request of ours
        if MODE == "ask" and isinstance(message.get("result"), dict):
            heard.append(str(message["result"].get("action")))
            for waiter in waiting:
                text(waiter, heard[0])
            waiting.clear()
        continue
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "protocolVersion": "2025-06-18",
                    "serverInfo": {"name": "fake", "version": "0"},
                    "capabilities": {
                        "tools": {"listChanged": True},
                        **(
                            {"resources": {"subscribe": True}, "prompts": {}}
                            if MODE in ("resources", "stale-resources", "slow-read")
                            else {}
                        ),
                    },
                },
            }
        )
    elif method == "tools/list":
        tools = [GOOD, BAD] if MODE == "bad-schema" else [GOOD]
        if MODE == "changes" and calls:
            tools = [GOOD, EXTRA]
        listed: dict[str, object] = {"tools": tools}
        if MODE == "ttl":
            listed.update({"ttlMs": 60_000, "cacheScope": "public"})
        if MODE == "stale":
            listed.update({"tools": [GOOD, EXTRA] if calls else [GOOD], "ttlMs": 50})
        send({"jsonrpc": "2.0", "id": request_id, "result": listed})
        if MODE == "deaf":
            hang()
    elif MODE == "slow-read" and method == "resources/read":
        pass  # never answered: only a cancel ends it
    elif MODE in ("resources", "stale-resources", "slow-read") and method in ANSWERS:
        send({"jsonrpc": "2.0", "id": request_id, "result": ANSWERS[method](message)})
    elif method == "tools/call":
        calls += 1
        arguments = message["params"].get("arguments") or {}
        if arguments.get("text") == "counts":
            text(request_id, json.dumps(seen))
        elif MODE == "garbage":
            print("debug: this line is not JSON-RPC", flush=True)
            print("{not json either", flush=True)
            text(request_id, arguments.get("text", ""))
        elif MODE == "wrong-ids":
            send({"jsonrpc": "2.0", "id": 987654, "result": {"content": []}})
            send({"jsonrpc": "2.0", "id": "nobody", "result": {"content": []}})
            send({"jsonrpc": "2.0", "id": request_id, "result": "not an object"})
        elif MODE == "huge":
            text(request_id, "x" * 2_000_000)
        elif MODE == "deep":
            sys.stdout.write(
                f'{{"jsonrpc":"2.0","id":{request_id},"result":'
                + "[" * 10_000
                + "]" * 10_000
                + "}\n"
            )
            sys.stdout.flush()
        elif MODE == "die":
            sys.stderr.write("fake server: dying on purpose\n")
            sys.stderr.flush()
            sys.exit(3)
        elif MODE == "unterminated":
            answer = {"content": [{"type": "text", "text": arguments.get("text", "")}]}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": answer}))
            sys.stdout.flush()
            sys.exit(0)
        elif MODE == "flood":
            for ping in range(FLOOD):
                sys.stdout.write(
                    json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}) + "\n"
                )
            text(request_id, arguments.get("text", ""))
            hang()
        elif MODE == "changes":
            text(request_id, arguments.get("text", ""))
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif MODE == "ask" and arguments.get("text") == "ask":
            question = {"type": "object", "properties": {"name": {"type": "string"}}}
            params = {"message": "Your name?", "requestedSchema": question}
            send({"jsonrpc": "2.0", "id": "q1", "method": "elicitation/create", "params": params})
            waiting.append(request_id)  # this call ends with the answer, whatever it is
        elif MODE == "gather" and arguments.get("text") == "never":
            pass  # never answered: only a cancel ends it
        elif MODE == "gather" and str(arguments.get("text")).startswith("gather:"):
            gathered.append(request_id)
            if len(gathered) >= int(arguments["text"].split(":")[1]):
                for held in gathered:
                    text(held, f"{len(gathered)} waited together")
                gathered.clear()
        elif MODE == "ask" and arguments.get("text") == "heard":
            if heard:
                text(request_id, heard[0])
            else:
                waiting.append(request_id)
        else:
            text(request_id, arguments.get("text", ""))
    else:
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32601, "message": f"method not found: {method}"},
            }
        )

if MODE == "linger":
    time.sleep(60)
