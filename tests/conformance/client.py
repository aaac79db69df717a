"""The MCP conformance suite's client under test: ``python tests/conformance/client.py URL``.

Not part of the package: ``.ci/run`` has ``@modelcontextprotocol/conformance client`` run
this for each client scenario, with the scenario's name in ``MCP_CONFORMANCE_SCENARIO``
(and, when the run pins one, the revision in ``MCP_CONFORMANCE_PROTOCOL_VERSION``; extra
data in ``MCP_CONFORMANCE_CONTEXT``). It uses only the public client API: an
:class:`~toolnexus.mcp.McpClient` whose tools run on a :class:`~toolnexus.Host`, with a
``wait_for`` that accepts every question (the fields left out take the defaults the
server's schema gives). A server that asks for OAuth gets an :class:`~toolnexus.mcp.OAuth`
client whose ``ask`` plays the user: it opens the authorization URL and hands back the
redirect the authorization server answers with (the suite's approves at once).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from toolnexus import Answer, Host, McpError, Request, Toolkit
from toolnexus.mcp import McpClient, OAuth

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"  # nothing listens: the user step reads it


def accept(request: Request) -> Answer:
    """Accept every question: a form with nothing filled in (its defaults apply)."""
    if request.kind == "input":
        return Answer(request.id, True, {})
    return Answer(request.id, True)


def confirm(request: Request) -> Answer:
    """Accept a question that asks to confirm."""
    return Answer(request.id, True, {"confirmed": True})


def sign_in(request: Request) -> Answer:
    """The user: open the authorization URL and come back with where it redirects."""
    assert request.url is not None
    parts = urlsplit(request.url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        location = response.getheader("Location")
    finally:
        connection.close()
    if response.status not in (301, 302, 303, 307) or not location:
        return Answer(request.id, False, reason="declined")
    return Answer(request.id, True, {"url": location})


def oauth(scenario: str, context: dict[str, Any]) -> OAuth:
    """The OAuth client: pre-registered when the scenario says so, else discovering; the
    grant (and DPoP) the scenario's deployment would configure, from its context."""
    machine: dict[str, Any] = {}
    if scenario.startswith("auth/client-credentials-"):
        machine = {"grant": "client_credentials"}
        if context.get("private_key_pem"):
            pem = str(context["private_key_pem"])
            machine.update(
                private_key=lambda: pem, signing_algorithm=context.get("signing_algorithm")
            )
    elif scenario == "auth/wif-jwt-bearer":
        token = str(context["valid_jwt"])
        machine = {"grant": "jwt_bearer", "assertion": lambda: token}
    elif scenario == "auth/enterprise-managed-authorization":
        id_token = str(context["idp_id_token"])
        machine = {
            "grant": "id_jag",
            "assertion": lambda: id_token,
            "idp_token_endpoint": context["idp_token_endpoint"],
            "idp_client_id": context["idp_client_id"],
        }
    elif scenario.startswith("auth/dpop"):
        machine = {"dpop": True}
    return OAuth(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=CLIENT_METADATA_URL,
        redirect_uri=REDIRECT_URI,
        client_name="toolnexus-conformance",
        ask=sign_in,
        **machine,
    )


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a simple schema: each required field a plain value."""
    samples = {"string": "x", "integer": 1, "number": 1.5, "boolean": True}
    properties = schema.get("properties") or {}
    return {
        key: samples.get(str((properties.get(key) or {}).get("type")), "x")
        for key in schema.get("required") or []
    }


def use_skills(client: McpClient, scenario: str) -> int:
    """The skills extension's client scenarios: list the server's skills (reading no
    file), then — except where the scenario checks that nothing is fetched ahead of
    need — load each through the toolkit's ``skill`` tool, and read the files of a skill
    that loaded (a skill that fails verification is not used: its files are not read)."""
    skills = client.skills(prefix="")
    toolkit = Toolkit()
    toolkit.register(*skills)
    print(f"{scenario}: {client.era} {client.protocol_version}, skills: {[s.name for s in skills]}")
    if scenario == "sep-2640-client-no-prefetch":
        return 0  # listed, never loaded: nothing may be read
    with Host(toolkit, timeout_ms=20_000) as host:
        for skill in skills:
            result = host.call("skill", {"name": skill.name})
            print(f"  {skill.name}: {'error' if result.is_error else 'ok'}: {result.output[:200]}")
            if result.is_error:
                continue
            for file_uri in skill.files() or _listed_files(result.output):
                print(f"  read {file_uri}: {len(skill.read(file_uri))} bytes")
    return 0


def _listed_files(output: str) -> list[str]:
    """The file URIs a loaded skill's text lists (``<file>...</file>``)."""
    return [line[6:-7] for line in output.splitlines() if line.startswith("<file>")]


def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    wait_for = confirm if scenario.startswith("sep-2322") else accept
    auth = oauth(scenario, context) if scenario.startswith("auth/") else None
    with McpClient(url=url, name="conformance", protocol_version=version, auth=auth) as client:
        if scenario.startswith("sep-2640-"):
            return use_skills(client, scenario)
        try:
            tools = client.tools(prefix="")
        except McpError as exc:
            print(f"{scenario}: {exc}")
            return 1
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
