"""Bad input to the OpenAPI import that used to load silently: a credential for a scheme
the document lacks, an unset ``${NAME}`` in a credential or a header, a path ``{name}``
with no path parameter (or a path parameter the path lacks), a server URL ``{variable}``
that is not defined, filters given as one string, an HTTP method that does not exist, and
problems that named ``openapi.json`` for a document given as a dict."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rest_server import RestServer
from toolnexus import Toolkit, load_openapi
from toolnexus.errors import InvalidTypeError, InvalidValueError, OpenApiError


@pytest.fixture
def server() -> Iterator[RestServer]:
    running = RestServer()
    try:
        yield running
    finally:
        running.stop()


def document(url: str) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Echo", "version": "1"},
        "servers": [{"url": url}],
        "components": {
            "securitySchemes": {
                "key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                "bearer": {"type": "http", "scheme": "bearer"},
            }
        },
        "security": [{"key": []}],
        "paths": {
            "/echo/{id}": {"get": {"operationId": "getOne", "tags": ["pets"], "responses": {}}},
            "/echo": {
                "get": {"operationId": "list", "tags": ["pets"], "responses": {}},
                "post": {"operationId": "add", "tags": ["admin"], "responses": {}},
            },
        },
    }


# ----------------------------------------------------------------- credentials


def test_a_credential_for_an_unknown_scheme_is_refused_at_load_naming_the_schemes(server):
    with pytest.raises(OpenApiError) as caught:
        load_openapi(document(server.url), credentials={"nokey": "abc"})
    problem = caught.value.problem
    assert "'nokey'" in problem
    assert "'key'" in problem and "'bearer'" in problem
    assert "abc" not in str(caught.value)


def test_a_credential_for_a_document_without_schemes_says_to_use_headers(server):
    doc = document(server.url)
    del doc["components"], doc["security"]
    with pytest.raises(OpenApiError, match=r"declares no security schemes.*headers="):
        load_openapi(doc, credentials={"key": "abc"})


def test_an_unset_variable_in_a_credential_is_an_error_naming_it_and_nothing_is_sent(
    server, monkeypatch
):
    monkeypatch.delenv("TN_UNSET_KEY", raising=False)
    toolkit = Toolkit.from_openapi(document(server.url), credentials={"key": "${TN_UNSET_KEY}"})
    result = toolkit.execute("list", {})
    assert result.is_error
    assert "${TN_UNSET_KEY}" in result.output
    assert "security scheme 'key'" in result.output
    assert "'list'" in result.output
    assert server.requests == []
    monkeypatch.setenv("TN_UNSET_KEY", "k-1")  # read at each call: set now, it is sent
    assert not toolkit.execute("list", {}).is_error
    assert server.requests[-1]["headers"]["x-api-key"] == "k-1"


def test_an_unset_variable_in_a_header_is_an_error_naming_it_and_the_header(server, monkeypatch):
    monkeypatch.delenv("TN_UNSET_HEADER", raising=False)
    toolkit = Toolkit.from_openapi(
        document(server.url), headers={"X-Tenant": "t-${TN_UNSET_HEADER}"}
    )
    result = toolkit.execute("list", {})
    assert result.is_error
    assert "${TN_UNSET_HEADER}" in result.output and "header 'X-Tenant'" in result.output
    assert server.requests == []


# ----------------------------------------------------------------- paths and servers


def test_a_path_name_without_a_parameter_is_a_required_string_with_a_note(server):
    imported = load_openapi(document(server.url))
    tool = next(t for t in imported.tools if t.name == "getOne")
    assert tool.input_schema["properties"] == {"id": {"type": "string"}}
    assert tool.input_schema["required"] == ["id"]
    assert any("getOne" in note and "'id'" in note for note in imported.notes)
    assert not tool({"id": "a b"}).is_error
    assert server.requests[-1]["raw_path"] == "/echo/a%20b"
    assert tool({}).is_error  # required: never sent as a literal "{id}"
    assert len(server.requests) == 1


def test_a_path_parameter_the_path_lacks_is_a_problem_naming_the_operation(server):
    doc = document(server.url)
    doc["paths"]["/echo"]["get"]["parameters"] = [
        {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}
    ]
    imported = load_openapi(doc)
    assert "list" not in [tool.name for tool in imported.tools]
    (problem,) = imported.problems
    assert problem.startswith("operation 'list' (GET /echo):") and "'petId'" in problem


def test_an_undefined_server_variable_is_a_problem_at_load(server):
    doc = document("http://{host}:18765")
    imported = load_openapi(doc)
    assert imported.tools == ()
    assert len(imported.problems) == 3
    for problem in imported.problems:
        assert "{host}" in problem and "server_variables=" in problem
    given = load_openapi(
        document("http://{host}:" + server.url.rsplit(":", 1)[1]),
        server_variables={"host": "127.0.0.1"},
    )
    assert given.problems == ()
    assert not next(t for t in given.tools if t.name == "list")({}).is_error


# ----------------------------------------------------------------- filters


def test_filters_take_one_string_as_one_item(server):
    doc = document(server.url)
    assert [t.name for t in load_openapi(doc, tags="pets").tools] == ["getOne", "list"]
    assert [t.name for t in load_openapi(doc, methods="POST").tools] == ["add"]
    assert [t.name for t in load_openapi(doc, methods="get").tools] == ["getOne", "list"]
    assert [t.name for t in load_openapi(doc, paths="/echo/*").tools] == ["getOne"]


def test_an_unknown_method_is_refused_naming_the_valid_ones(server):
    with pytest.raises(InvalidValueError) as caught:
        load_openapi(document(server.url), methods=["GET", "FETCH"])
    message = str(caught.value)
    assert "'FETCH'" in message and "methods=" in message
    assert "GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH, TRACE" in message


def test_a_filter_that_is_not_strings_is_refused_naming_the_argument(server):
    with pytest.raises(InvalidTypeError, match="tags="):
        load_openapi(document(server.url), tags=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="paths="):
        load_openapi(document(server.url), paths=["/echo", None])  # type: ignore[list-item]


# ----------------------------------------------------------------- wording


def test_problems_in_a_dict_document_do_not_name_a_file(server):
    doc = document(server.url)
    doc["paths"]["/echo"]["get"]["parameters"] = [{"$ref": "#/components/parameters/Missing"}]
    doc["paths"]["/echo"]["post"]["parameters"] = [
        {"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/Missing"}}
    ]
    problems = load_openapi(doc).problems
    assert len(problems) == 2
    for problem in problems:
        assert "in the document" in problem
        assert "openapi.json" not in problem and "(at #)" not in problem


def test_an_answer_outside_the_documents_schema_says_how_to_take_answers_as_text(server):
    described = document(server.url)
    described["security"] = []
    described["paths"] = {
        "/echo": {
            "get": {
                "operationId": "list",
                "responses": {
                    "200": {
                        "description": "the pets",
                        "content": {
                            "application/json": {"schema": {"type": "object", "required": ["pets"]}}
                        },
                    }
                },
            }
        }
    }
    refused = Toolkit(load_openapi(described).tools).execute("list", {})
    assert refused.is_error and "does not match its output schema" in refused.output
    assert "output_schemas=False" in refused.output and '"outputSchemas": false' in refused.output
    taken = Toolkit(load_openapi(described, output_schemas=False).tools).execute("list", {})
    assert not taken.is_error, taken.output


def test_a_credential_for_a_scheme_that_is_no_scheme_is_refused(server):
    # Declared by name, but not an object: it is never read as a scheme, so its
    # credential would never be sent.
    described = document(server.url)
    described["components"]["securitySchemes"]["key"] = "X-Api-Key"
    with pytest.raises(OpenApiError, match=r"credentials= names 'key'.*'bearer'"):
        load_openapi(described, credentials={"key": "abc"})
