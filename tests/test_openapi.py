"""OpenAPI documents as tools (``Toolkit.from_openapi``, ``load_openapi``): what a document
becomes, what each call sends, and the bad input of issue 41 — each a clear problem
naming the operation while the others still load."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from rest_server import RestServer
from test_http_tools import HANG_MS
from timing import TIMEOUT
from toolnexus import Host, ToolContext, Toolkit, load_openapi
from toolnexus.errors import OpenApiError


@pytest.fixture
def server() -> Iterator[RestServer]:
    running = RestServer()
    try:
        yield running
    finally:
        running.stop()


def petstore(url: str, version: str = "3.0.3") -> dict[str, Any]:
    """A small document: path, query, header, cookie parameters, a JSON body, 3.0-isms,
    a cycle, responses with and without a schema, security schemes."""
    return {
        "openapi": version,
        "info": {"title": "Pets", "version": "1"},
        "servers": [
            {
                "url": "{scheme}://" + url.split("://")[1] + "/{base}",
                "variables": {"scheme": {"default": "http"}, "base": {"default": "echo"}},
            }
        ],
        "components": {
            "securitySchemes": {
                "key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                "qkey": {"type": "apiKey", "in": "query", "name": "api_key"},
                "ckey": {"type": "apiKey", "in": "cookie", "name": "session"},
                "bearer": {"type": "http", "scheme": "bearer"},
                "basic": {"type": "http", "scheme": "basic"},
            },
            "parameters": {
                "Limit": {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "exclusiveMinimum": True},
                },
            },
            "schemas": {
                "Pet": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "id": {"type": "integer", "readOnly": True},
                        "name": {"type": "string", "example": "rex"},
                        "tag": {"type": "string", "nullable": True},
                        "parent": {"$ref": "#/components/schemas/Pet"},
                    },
                },
            },
        },
        "paths": {
            "/pets/{petId}": {
                "parameters": [
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "get": {
                    "operationId": "getPet",
                    "tags": ["pets"],
                    "summary": "One pet",
                    "security": [{"key": []}],
                    "parameters": [
                        {"$ref": "#/components/parameters/Limit"},
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                        {"name": "theme", "in": "cookie", "schema": {"type": "string"}},
                        {
                            "name": "fields",
                            "in": "query",
                            "explode": False,
                            "schema": {"type": "array", "items": {"type": "string"}},
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"method": {"type": "string"}},
                                    }
                                }
                            },
                        }
                    },
                },
                "delete": {"tags": ["admin"], "responses": {"204": {"description": "gone"}}},
            },
            "/pets": {
                "post": {
                    "operationId": "addPet",
                    "tags": ["pets"],
                    "security": [{"bearer": []}, {"basic": []}],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                        },
                    },
                    "responses": {"201": {"description": "made"}},
                },
                "get": {
                    "operationId": "listPets",
                    "tags": ["pets"],
                    "security": [{"qkey": [], "ckey": []}],
                    "parameters": [
                        {
                            "name": "tags",
                            "in": "query",
                            "schema": {"type": "array", "items": {"type": "string"}},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
            },
        },
    }


def echo(result) -> dict[str, Any]:
    assert not result.is_error, result.output
    return json.loads(result.output)


# ----------------------------------------------------------------- what a document becomes


def test_one_tool_per_operation_named_by_operation_id_or_method_and_path(server):
    toolkit = Toolkit.from_openapi(petstore(server.url))
    assert [tool.name for tool in toolkit] == ["getPet", "delete_pets_petId", "addPet", "listPets"]
    get_pet = toolkit.get("getPet")
    assert get_pet.description == "One pet"
    assert toolkit.get("delete_pets_petId").description == "DELETE /pets/{petId}"
    assert get_pet.source == "http"
    assert get_pet.annotations["readOnlyHint"] is True


def test_input_schema_from_parameters_and_body_in_2020_12(server):
    toolkit = Toolkit.from_openapi(petstore(server.url))
    schema = toolkit.get("getPet").input_schema
    assert sorted(schema["properties"]) == ["X-Trace", "fields", "limit", "petId", "theme"]
    assert schema["required"] == ["petId"]
    # 3.0's boolean exclusiveMinimum became the 2020-12 number
    assert schema["properties"]["limit"] == {"type": "integer", "exclusiveMinimum": 1}
    body = toolkit.get("addPet").input_schema["properties"]["body"]
    assert toolkit.get("addPet").input_schema["required"] == ["body"]
    # nullable -> a type with null; example -> examples; readOnly left out of a request
    assert body["properties"]["tag"] == {"type": ["string", "null"]}
    assert body["properties"]["name"] == {"type": "string", "examples": ["rex"]}
    assert "id" not in body["properties"]


def test_nullable_beside_a_ref_admits_null(server):
    doc = petstore(server.url)
    doc["components"]["schemas"]["Pet"]["properties"]["buddy"] = {
        "$ref": "#/components/schemas/Tag",
        "nullable": True,
    }
    doc["components"]["schemas"]["Tag"] = {"type": "object", "properties": {}}
    body = Toolkit.from_openapi(doc).get("addPet").input_schema["properties"]["body"]
    assert body["properties"]["buddy"] == {"type": ["object", "null"], "properties": {}}


def test_a_cycle_stays_a_ref_into_defs(server):
    body = Toolkit.from_openapi(petstore(server.url)).get("addPet").input_schema
    assert body["properties"]["body"]["properties"]["parent"] == {"$ref": "#/$defs/Pet"}
    assert body["$defs"]["Pet"]["properties"]["parent"] == {"$ref": "#/$defs/Pet"}


def test_a_call_puts_each_argument_in_its_place(server):
    toolkit = Toolkit.from_openapi(petstore(server.url), credentials={"key": "k-1"})
    seen = echo(
        toolkit.execute(
            "getPet",
            {"petId": 7, "limit": 5, "X-Trace": "t-9", "theme": "dark", "fields": ["a", "b"]},
        )
    )
    assert seen["path"] == "/echo/pets/7"
    assert seen["query"] == {"limit": ["5"], "fields": ["a,b"]}
    assert seen["headers"]["x-trace"] == "t-9"
    assert seen["headers"]["cookie"] == "theme=dark"
    assert seen["headers"]["x-api-key"] == "k-1"
    listed = echo(
        Toolkit.from_openapi(petstore(server.url)).execute("listPets", {"tags": ["a", "b"]})
    )
    assert listed["query"] == {"tags": ["a", "b"]}  # form, exploded: the default


def test_a_cookie_value_cannot_add_a_cookie(server):
    toolkit = Toolkit.from_openapi(petstore(server.url), credentials={"key": "k"})
    seen = echo(toolkit.execute("getPet", {"petId": 1, "theme": "dark; session=forged"}))
    assert seen["headers"]["cookie"] == "theme=dark%3B%20session%3Dforged"


def test_a_json_body_is_sent_as_json(server):
    toolkit = Toolkit.from_openapi(petstore(server.url), credentials={"bearer": "tok"})
    seen = echo(toolkit.execute("addPet", {"body": {"name": "rex", "tag": None}}))
    assert seen["method"] == "POST"
    assert seen["json"] == {"name": "rex", "tag": None}
    assert seen["headers"]["content-type"] == "application/json"
    assert seen["headers"]["authorization"] == "Bearer tok"


def test_form_multipart_and_parametrised_json_bodies(server):
    def doc_with(media: str) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {"a": {"type": "string"}, "n": {"type": "integer"}},
        }
        return {"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
                "servers": [{"url": server.url + "/echo"}],
                "paths": {"/up": {"post": {"operationId": "up", "requestBody": {"content": {
                    media: {"schema": schema}}}, "responses": {}}}}}  # fmt: skip

    sent = {"body": {"a": "x y", "n": 2}}
    json_tool = Toolkit.from_openapi(doc_with("application/json; charset=utf-8"))
    assert json_tool.get("up").input_schema["properties"]["body"]["type"] == "object"
    assert echo(json_tool.execute("up", sent))["json"] == {"a": "x y", "n": 2}
    form = echo(
        Toolkit.from_openapi(doc_with("application/x-www-form-urlencoded")).execute("up", sent)
    )
    assert form["body"] == "a=x+y&n=2"
    multi = echo(Toolkit.from_openapi(doc_with("multipart/form-data")).execute("up", sent))
    boundary = multi["headers"]["content-type"].split("boundary=")[1]
    assert multi["headers"]["content-type"].startswith("multipart/form-data; boundary=")
    assert multi["body"] == (
        f'--{boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\nx y\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="n"\r\n\r\n2\r\n'
        f"--{boundary}--\r\n"
    )


def test_a_json_response_with_a_schema_is_structured_output(server):
    toolkit = Toolkit.from_openapi(petstore(server.url))
    tool = toolkit.get("getPet")
    assert tool.output_schema == {"type": "object", "properties": {"method": {"type": "string"}}}
    result = toolkit.execute("getPet", {"petId": 1})
    assert result.metadata["structuredContent"]["method"] == "GET"


def test_an_answer_outside_the_output_schema_is_an_error_unless_they_are_left_out(server):
    doc = petstore(server.url)
    response = doc["paths"]["/pets/{petId}"]["get"]["responses"]["200"]
    response["content"]["application/json"]["schema"]["required"] = ["color"]
    strict = Toolkit.from_openapi(doc, credentials={"key": "k"})
    refused = strict.execute("getPet", {"petId": 1})
    assert refused.is_error and "color: required property is missing" in refused.output
    lenient = Toolkit.from_openapi(doc, credentials={"key": "k"}, output_schemas=False)
    assert lenient.get("getPet").output_schema is None
    assert echo(lenient.execute("getPet", {"petId": 1}))["path"] == "/echo/pets/1"


def test_the_arguments_are_checked_before_any_request(server):
    toolkit = Toolkit.from_openapi(petstore(server.url))
    result = toolkit.execute("getPet", {"petId": "seven"})
    assert result.is_error and "petId" in result.output
    assert server.requests == []


# ----------------------------------------------------------------- auth


def test_credentials_from_env_and_callables_in_their_places(server, monkeypatch, caplog):
    monkeypatch.setenv("PETS_Q", "q-secret")
    toolkit = Toolkit.from_openapi(
        petstore(server.url),
        credentials={"qkey": "${PETS_Q}", "ckey": lambda: "c-secret", "basic": "u:p"},
    )
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        seen = echo(toolkit.execute("listPets", {}))
        basic = echo(toolkit.execute("addPet", {"body": {"name": "a"}}))
    assert seen["query"]["api_key"] == ["q-secret"]
    assert seen["headers"]["cookie"] == "session=c-secret"
    assert basic["headers"]["authorization"] == "Basic dTpw"  # base64("u:p")
    for tool in toolkit:
        assert "secret" not in json.dumps(tool.to_mcp())
    assert "q-secret" not in caplog.text and "c-secret" not in caplog.text


def test_a_credential_is_preferred_over_anonymous_access_and_a_failing_one_is_named(server):
    doc = petstore(server.url)
    doc["paths"]["/pets"]["get"]["security"] = [{}, {"bearer": []}]
    keyed = Toolkit.from_openapi(doc, credentials={"bearer": "tok"})
    assert echo(keyed.execute("listPets", {}))["headers"]["authorization"] == "Bearer tok"
    anonymous = Toolkit.from_openapi(doc)
    assert "authorization" not in echo(anonymous.execute("listPets", {}))["headers"]

    def broken() -> str:
        raise RuntimeError("vault sealed: token=abc")

    failing = Toolkit.from_openapi(doc, credentials={"bearer": broken})
    result = failing.execute("listPets", {})
    assert result.is_error
    assert "credentials callable for 'bearer' raised RuntimeError" in result.output
    assert "token=abc" not in result.output
    assert len(server.requests) == 2  # the failing one sent nothing


# ----------------------------------------------------------------- servers and filters


def test_servers_variables_and_base_url(server):
    doc = petstore(server.url)
    imported = load_openapi(doc, server_variables={"base": "echo/v2"})
    assert echo(imported.tools[0]({"petId": 1}))["path"] == "/echo/v2/pets/1"
    imported = load_openapi(doc, base_url=server.url + "/echo/other")
    assert echo(imported.tools[0]({"petId": 1}))["path"] == "/echo/other/pets/1"
    del doc["servers"]
    with pytest.raises(OpenApiError, match="names no server; pass base_url="):
        load_openapi(doc)


def test_filters_by_tag_path_and_method(server):
    doc = petstore(server.url)
    assert [t.name for t in load_openapi(doc, tags=["admin"]).tools] == ["delete_pets_petId"]
    assert [t.name for t in load_openapi(doc, paths=["/pets"]).tools] == ["addPet", "listPets"]
    assert [t.name for t in load_openapi(doc, methods=["GET"]).tools] == ["getPet", "listPets"]


def test_defer_is_automatic_above_30_operations_and_namespaces_follow_tags(server):
    doc = petstore(server.url)
    small = load_openapi(doc)
    assert small.defer is False
    assert small.namespaces == {
        "getPet": "pets",
        "delete_pets_petId": "admin",
        "addPet": "pets",
        "listPets": "pets",
    }
    doc["paths"].update(
        {f"/n{i}": {"get": {"responses": {"200": {"description": "ok"}}}} for i in range(30)}
    )
    big = load_openapi(doc)
    assert len(big.tools) == 34 and big.defer is True
    assert load_openapi(doc, defer=False).defer is False
    assert set(load_openapi(doc, namespace="pets_api").namespaces.values()) == {"pets_api"}


def test_from_openapi_makes_a_namespace_per_tag_described_by_the_documents_tags(server):
    doc = petstore(server.url)
    doc["tags"] = [{"name": "pets", "description": "Everything about your pets"}]
    doc["paths"]["/pets"]["post"]["tags"] = ["pet store!"]  # not a name: made one
    doc["paths"]["/untagged"] = {"get": {"responses": {"200": {"description": "ok"}}}}
    toolkit = Toolkit.from_openapi(doc)
    spaces = {each.name: each for each in toolkit.namespaces()}
    assert list(spaces) == ["pets", "admin", "pet_store"]
    assert spaces["pets"].description == "Everything about your pets"
    assert spaces["admin"].description == "The operations tagged 'admin' of Pets."
    assert [t.name for t in spaces["pets"].tools()] == ["getPet", "listPets"]
    assert [t.name for t in spaces["pet_store"].tools()] == ["addPet"]
    assert toolkit.namespace_of("get_untagged") is None
    # 5 operations: nothing held back, every definition sent as before
    assert all(each.defer is None for each in spaces.values())
    assert not any(toolkit.is_deferred(t.name) for t in toolkit)
    assert [e["function"]["name"] for e in toolkit.to_openai()] == [t.name for t in toolkit]
    grouped = toolkit.to_openai(api="responses", search="hosted")
    assert {
        "type": "namespace",
        "name": "pets",
        "description": "Everything about your pets",
    }.items() <= grouped[0].items()


def test_from_openapi_defers_above_30_operations_unless_told(server):
    doc = petstore(server.url)
    doc["paths"].update(
        {
            f"/n{i}": {"get": {"tags": ["numbers"], "responses": {"200": {"description": "ok"}}}}
            for i in range(29)
        }
    )
    doc["paths"]["/untagged"] = {"get": {"responses": {"200": {"description": "ok"}}}}
    toolkit = Toolkit.from_openapi(doc)  # 34 operations
    assert len(toolkit) == 34
    assert all(each.defer is True for each in toolkit.namespaces())
    assert all(toolkit.is_deferred(t.name) for t in toolkit)  # the untagged one too
    assert toolkit.get("get_untagged").defer is True
    sent = [e["function"]["name"] for e in toolkit.to_openai()]
    assert sent == ["search_tools", "call_tool"]
    assert toolkit.search("delete a pet", 1)[0].name == "delete_pets_petId"
    # the same document with defer=False: every namespace loaded, even in a deferred view
    loaded = Toolkit.from_openapi(doc, defer=False)
    assert all(each.defer is False for each in loaded.namespaces())
    assert not any(loaded.view(defer=True).is_deferred(t.name) for t in loaded)
    assert len(loaded.to_openai()) == 34
    # and a small one told to defer holds its operations back
    small = Toolkit.from_openapi(petstore(server.url), defer=True)
    assert [e["function"]["name"] for e in small.to_openai()] == ["search_tools", "call_tool"]
    # namespace=None: no namespaces; each tool carries the deferral itself
    flat = Toolkit.from_openapi(doc, namespace=None)
    assert flat.namespaces() == [] and all(t.defer is True for t in flat)


# ----------------------------------------------------------------- bad input


def test_a_document_that_is_not_openapi_is_refused_clearly():
    with pytest.raises(OpenApiError, match="no 'openapi' field"):
        Toolkit.from_openapi({"mcpServers": {}})
    with pytest.raises(OpenApiError, match=r"Swagger 2\.0"):
        Toolkit.from_openapi({"swagger": "2.0", "paths": {}})
    with pytest.raises(OpenApiError, match=r"version '4\.0\.0' is not supported"):
        Toolkit.from_openapi({"openapi": "4.0.0", "paths": {}})


def test_a_30_document_with_31_keywords_loads(server):
    doc = petstore(server.url)
    doc["paths"]["/pets"]["get"]["parameters"].append(
        {
            "name": "kind",
            "in": "query",
            "schema": {"type": ["string", "null"], "const": "dog", "exclusiveMinimum": 3},
        }
    )
    imported = load_openapi(doc)
    assert imported.problems == ()
    kind = imported.tools[3].input_schema["properties"]["kind"]
    assert kind == {"type": ["string", "null"], "const": "dog", "exclusiveMinimum": 3}


def test_an_unresolvable_ref_is_a_problem_naming_the_operation_others_load(server):
    doc = petstore(server.url)
    doc["paths"]["/pets"]["get"]["parameters"].append({"$ref": "#/components/parameters/Nope"})
    imported = load_openapi(doc)
    (problem,) = imported.problems
    assert "'listPets' (GET /pets)" in problem
    assert "#/components/parameters/Nope" in problem
    assert [t.name for t in imported.tools] == ["getPet", "delete_pets_petId", "addPet"]
    with pytest.raises(OpenApiError, match="listPets"):
        Toolkit.from_openapi(doc, strict=True)


def test_refs_into_relative_files_are_resolved(server, tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "pet.json").write_text(
        json.dumps(
            {
                "Pet": {"type": "object", "properties": {"name": {"$ref": "#/Name"}}},
                "Name": {"type": "string", "minLength": 1},
            }
        )
    )
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": server.url + "/echo"}],
        "paths": {
            "/p": {
                "post": {
                    "operationId": "add",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "schemas/pet.json#/Pet"}}
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    (tmp_path / "api.json").write_text(json.dumps(doc))
    toolkit = Toolkit.from_openapi(str(tmp_path / "api.json"))
    body = toolkit.get("add").input_schema["properties"]["body"]
    assert body == {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}}


def test_a_document_by_url_resolves_relative_servers_and_refs_against_it(server):
    server.documents["/specs/api.json"] = json.dumps(
        {
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "servers": [{"url": "/echo/v1"}],  # relative: to the document's URL
            "paths": {
                "/things": {
                    "post": {
                        "operationId": "add",
                        "requestBody": {
                            "content": {
                                "application/json": {"schema": {"$ref": "parts.json#/Thing"}}
                            }
                        },
                        "responses": {},
                    }
                }
            },
        }
    ).encode()
    server.documents["/specs/parts.json"] = json.dumps(
        {"Thing": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    ).encode()
    toolkit = Toolkit.from_openapi(server.url + "/specs/api.json")
    body = toolkit.get("add").input_schema["properties"]["body"]
    assert body == {"type": "object", "properties": {"n": {"type": "integer"}}}
    seen = echo(toolkit.execute("add", {"body": {"n": 1}}))
    assert seen["path"] == "/echo/v1/things" and seen["json"] == {"n": 1}


def test_a_ref_to_another_origin_is_not_followed(server):
    other = RestServer()
    try:
        other.documents["/parts.json"] = b'{"Thing": {"type": "object"}}'
        server.documents["/api.json"] = json.dumps(
            {
                "openapi": "3.1.0",
                "info": {"title": "t", "version": "1"},
                "servers": [{"url": "/echo"}],
                "paths": {
                    "/a": {
                        "post": {
                            "operationId": "add",
                            "requestBody": {
                                "content": {
                                    "application/json": {
                                        "schema": {"$ref": other.url + "/parts.json#/Thing"}
                                    }
                                }
                            },
                            "responses": {},
                        }
                    },
                    "/b": {"get": {"operationId": "ok", "responses": {}}},
                },
            }
        ).encode()
        imported = load_openapi(server.url + "/api.json")
    finally:
        other.stop()
    assert [tool.name for tool in imported.tools] == ["ok"]
    (problem,) = imported.problems
    assert "'add'" in problem and "another origin" in problem
    assert other.requests == []


def test_a_yaml_document_loads_with_pyyaml_or_says_how_to_get_it(server, tmp_path):
    path = tmp_path / "api.yaml"
    path.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n"
        f"servers: [{{url: '{server.url}/echo'}}]\n"
        "paths:\n  /a:\n    get: {operationId: getA, responses: {}}\n"
    )
    try:
        import yaml  # noqa: F401
    except ImportError:
        with pytest.raises(OpenApiError, match=r"to read YAML, pip install .*PyYAML"):
            Toolkit.from_openapi(str(path))
    else:
        assert [tool.name for tool in Toolkit.from_openapi(str(path))] == ["getA"]


def test_unknown_keywords_x_kept_bare_dropped_with_a_note(server):
    doc = petstore(server.url)
    doc["paths"]["/pets"]["get"]["parameters"].append(
        {
            "name": "q",
            "in": "query",
            "schema": {"type": "string", "x-internal": True, "name": "q", "regex": "^a"},
        }
    )
    imported = load_openapi(doc)
    assert imported.problems == ()
    q = imported.tools[3].input_schema["properties"]["q"]
    assert q == {"type": "string", "x-internal": True}
    assert any("'name'" in note and "'listPets'" in note for note in imported.notes)
    assert any("'regex'" in note for note in imported.notes)


def test_a_keyword_the_validator_refuses_is_dropped_with_a_note(server):
    doc = petstore(server.url)
    doc["paths"]["/pets"]["get"]["parameters"] += [
        {"name": "n", "in": "query", "schema": {"type": "string", "minLength": "three"}},
        # Python's inline flag: no ECMA-262 pattern
        {"name": "p", "in": "query", "schema": {"type": "string", "pattern": "(?i)^ab"}},
    ]
    imported = load_openapi(doc)
    assert imported.problems == ()
    properties = imported.tools[3].input_schema["properties"]
    assert properties["n"] == {"type": "string"}
    assert properties["p"] == {"type": "string"}
    assert any("'minLength'" in note and "listPets" in note for note in imported.notes)
    assert any("'pattern'" in note and "inline flags" in note for note in imported.notes)


def test_a_malformed_operation_is_a_problem_the_others_load(server):
    doc = petstore(server.url)
    # server variables are an object of name -> spec, not a list
    doc["paths"]["/pets"]["post"]["servers"] = [{"url": "http://{h}", "variables": ["h"]}]
    imported = load_openapi(doc)
    (problem,) = imported.problems
    assert "'addPet' (POST /pets)" in problem and "shape" in problem
    assert [t.name for t in imported.tools] == ["getPet", "delete_pets_petId", "listPets"]


def test_duplicate_operation_ids_are_a_problem_naming_both(server):
    doc = petstore(server.url)
    doc["paths"]["/pets"]["get"]["operationId"] = "addPet"
    imported = load_openapi(doc)
    (problem,) = imported.problems
    assert "GET /pets" in problem and "POST /pets" in problem and "'addPet'" in problem
    assert [t.name for t in imported.tools] == ["getPet", "delete_pets_petId", "addPet"]


@pytest.mark.parametrize(
    ("path", "expect"),
    [
        ("/fail", 'HTTP 500: {"message": "database on fire"}'),
        ("/html", "HTTP 502: Bad Gateway"),
    ],
)
def test_an_error_status_is_an_error_result(server, path, expect):
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": server.url}],
        "paths": {path: {"get": {"operationId": "op", "responses": {}}}},
    }
    result = Toolkit.from_openapi(doc).execute("op", {})
    assert result.is_error and result.output == expect


def test_a_huge_body_is_cut_naming_the_operation(server):
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": server.url}],
        "paths": {"/huge": {"get": {"operationId": "big", "responses": {}}}},
    }
    result = Toolkit.from_openapi(doc, max_response_bytes=200_000).execute("big", {})
    assert result.is_error
    assert "operation 'big' (GET /huge)" in result.output and "larger than" in result.output


def test_a_server_that_never_answers_ends_at_the_host_deadline(server):
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": server.url}],
        "paths": {"/hang": {"get": {"operationId": "slow", "responses": {}}}},
    }
    toolkit = Toolkit.from_openapi(doc)
    with Host(toolkit) as host:
        result = host.call("slow", {}, timeout_ms=HANG_MS)  # a deadline that must pass
    assert result.is_error
    assert server.closed.wait(TIMEOUT)  # the request was abandoned, its connection closed
    direct = toolkit.get("slow")({}, ToolContext(timeout_ms=HANG_MS))
    assert "operation 'slow' (GET /hang)" in direct.output and direct.metadata["timedOut"]
