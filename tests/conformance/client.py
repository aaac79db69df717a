"""The MCP conformance suite's client under test: ``python tests/conformance/client.py URL``.

Not part of the package: ``.ci/run`` has ``@modelcontextprotocol/conformance client`` run
this for each client scenario, with the scenario's name in ``MCP_CONFORMANCE_SCENARIO``
(and, when the run pins one, the revision in ``MCP_CONFORMANCE_PROTOCOL_VERSION``; extra
data in ``MCP_CONFORMANCE_CONTEXT``). It uses only the public client API: an
:class:`~toolnexus.mcp.McpClient` whose tools run on a :class:`~toolnexus.Host`, with a
``wait_for`` that accepts every question (the fields left out take the defaults the
server's schema gives).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from toolnexus import Answer, Host, Request, Toolkit
from toolnexus.mcp import McpClient


def accept(request: Request) -> Answer:
    """Accept every question: a form with nothing filled in (its defaults apply)."""
    if request.kind == "input":
        return Answer(request.id, True, {})
    return Answer(request.id, True)


def confirm(request: Request) -> Answer:
    """Accept a question that asks to confirm."""
    return Answer(request.id, True, {"confirmed": True})


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a simple schema: each required field a plain value."""
    samples = {"string": "x", "integer": 1, "number": 1.5, "boolean": True}
    properties = schema.get("properties") or {}
    return {
        key: samples.get(str((properties.get(key) or {}).get("type")), "x")
        for key in schema.get("required") or []
    }


def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    wait_for = confirm if scenario.startswith("sep-2322") else accept
    with McpClient(url=url, name="conformance", protocol_version=version) as client:
        tools = client.tools(prefix="")
        toolkit = Toolkit(tools)
        names = [tool.name for tool in tools]
        print(f"{scenario}: {client.era} {client.protocol_version}, tools: {names}")
        with Host(toolkit, wait_for=wait_for, timeout_ms=20_000) as host:
            calls: list[tuple[str, dict[str, Any]]] = []
            if scenario == "tools_call":
                calls = [("add_numbers", {"a": 2, "b": 3})]
            elif scenario == "json-schema-2020-12-preservation":
                focal = next(t for t in tools if t.name == "json_schema_2020_12_tool")
                schema = json.loads(json.dumps(focal.input_schema))
                calls = [("json_schema_echo", {"schema": schema})]
            elif scenario.startswith("sep-2322"):
                calls = [
                    ("test_mrtr_echo_state", {}),
                    ("test_mrtr_unrelated", {}),
                    ("test_mrtr_no_state", {}),
                    ("test_mrtr_no_result_type", {}),
                ]
            elif context.get("toolCalls"):
                calls = [(c["name"], c.get("arguments") or {}) for c in context["toolCalls"]]
            elif scenario not in ("initialize", "request-metadata", "json-schema-ref-no-deref"):
                # Every tool the client kept, with arguments its schema asks for.
                calls = [(t.name, sample_arguments(dict(t.input_schema))) for t in tools]
            for name, arguments in calls:
                if name not in toolkit:
                    print(f"  {name}: not offered")
                    continue
                result = host.call(name, arguments)
                print(f"  {name}: {'error' if result.is_error else 'ok'}: {result.output[:200]}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: client.py URL")
    raise SystemExit(main(sys.argv[1]))
