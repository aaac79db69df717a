"""HTTP tools (the family's SPEC §7): the request a call makes, the result a response
becomes, and the bounds that hold — deadline, cancellation, redirects, size."""

from __future__ import annotations

import base64
import logging
import socket
import threading
from collections.abc import Iterator

import pytest

from rest_server import PNG, RestServer
from timing import TIMEOUT
from toolnexus import CancellationTokenSource, Host, ToolContext, Toolkit, http_tool
from toolnexus.errors import InvalidValueError

# A deadline these tests wait out on purpose: the server never answers. Long enough for a
# connection on localhost to be made on a busy machine (the server must see the request,
# then see it closed), short enough to cost little.
HANG_MS = 1000


@pytest.fixture
def server() -> Iterator[RestServer]:
    running = RestServer()
    try:
        yield running
    finally:
        running.stop()


# ----------------------------------------------------------------- the family's fixtures


def test_family_fixture_placeholder_env_header_and_query(server, monkeypatch):
    # The family's own test: GET /posts/{id}, an env header, a leftover argument.
    monkeypatch.setenv("TN_HTTP_TOKEN", "tok")
    get_post = http_tool(
        name="get_post",
        method="GET",
        url=server.url + "/echo/posts/{id}",
        headers={"Authorization": "Bearer ${TN_HTTP_TOKEN}"},
        input_schema={
            "type": "object",
            "properties": {"id": {"type": "number"}, "q": {"type": "string"}},
            "required": ["id"],
        },
    )
    result = get_post({"id": 5, "q": "x"})
    assert not result.is_error, result.output
    seen = server.requests[-1]
    assert seen["raw_path"] == "/echo/posts/5?q=x"
    assert seen["headers"]["authorization"] == "Bearer tok"
    assert get_post.source == "http"
    assert result.metadata["status"] == 200


def test_family_fixture_non_2xx_is_an_error_naming_the_status(server):
    bad = http_tool(name="b", method="GET", url=server.url + "/missing")
    result = bad({})
    assert result.is_error
    assert result.output == "HTTP 404: nope"
    assert result.metadata["status"] == 404


def test_missing_env_variable_expands_to_nothing_and_is_named_not_shown(
    server, monkeypatch, caplog
):
    monkeypatch.delenv("TN_NOT_SET", raising=False)
    monkeypatch.setenv("TN_SECRET", "s3cr3t-value")
    probe = http_tool(
        name="probe",
        method="GET",
        url=server.url + "/echo",
        headers={"X-A": "a${TN_NOT_SET}b", "X-Key": "${TN_SECRET}"},
    )
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        result = probe({})
    assert not result.is_error
    assert server.requests[-1]["headers"]["x-a"] == "ab"
    assert "TN_NOT_SET" in caplog.text
    assert server.requests[-1]["headers"]["x-key"] == "s3cr3t-value"
    assert "s3cr3t-value" not in caplog.text  # sent, never logged


def test_json_form_and_raw_bodies_carry_the_arguments_left(server):
    for kind, expect in (
        ("json", '{"name": "rex", "age": 3}'),
        ("form", "name=rex&age=3"),
    ):
        post = http_tool(
            name="post", method="POST", url=server.url + "/echo/pets/{kind}", body=kind
        )
        assert not post({"kind": "dog", "name": "rex", "age": 3}).is_error
        seen = server.requests[-1]
        assert seen["path"] == "/echo/pets/dog"
        assert seen["body"] == expect
    raw = http_tool(name="raw", method="PUT", url=server.url + "/echo", body="raw")
    assert not raw({"body": "plain words"}).is_error
    assert server.requests[-1]["body"] == "plain words"


def test_named_query_arguments_go_to_the_query_on_a_post(server):
    post = http_tool(name="p", method="POST", url=server.url + "/echo", query=["page"])
    post({"page": 2, "title": "t", "flag": True})
    seen = server.requests[-1]
    assert seen["query"] == {"page": ["2"]}
    assert seen["json"] == {"title": "t", "flag": True}


def test_placeholders_are_percent_encoded(server):
    get = http_tool(name="g", method="GET", url=server.url + "/echo/{name}")
    get({"name": "a/b c?"})
    assert server.requests[-1]["raw_path"] == "/echo/a%2Fb%20c%3F"


def test_result_modes(server):
    for mode, check in (
        ("json", lambda out: out.startswith('{"method": "GET"')),
        ("status+text", lambda out: out.startswith("200\n{")),
    ):
        get = http_tool(name="g", method="GET", url=server.url + "/echo", result_mode=mode)
        assert check(get({}).output)


def test_with_an_output_schema_a_json_answer_is_structured_and_checked(server):
    schema = {"type": "object", "properties": {"method": {"type": "string"}}}
    get = http_tool(name="g", method="GET", url=server.url + "/echo", output_schema=schema)
    result = get({})
    assert result.metadata["structuredContent"]["method"] == "GET"
    strict = {"type": "object", "properties": {"method": {"type": "integer"}}}
    wrong = http_tool(name="w", method="GET", url=server.url + "/echo", output_schema=strict)
    refused = wrong({})
    assert refused.is_error and "does not match its output schema" in refused.output


def test_a_binary_response_becomes_a_part(server):
    get = http_tool(name="g", method="GET", url=server.url + "/png")
    result = get({})
    assert not result.is_error
    (part,) = result.parts
    assert part.type == "image" and part.mime_type == "image/png"
    assert base64.b64decode(part.data) == PNG
    assert result.output == f"image (image/png, {len(PNG)} bytes)"


def test_text_is_decoded_with_its_charset(server):
    assert http_tool(name="g", method="GET", url=server.url + "/text")({}).output == "héllo"


def test_a_500_is_an_error_with_status_and_excerpt(server):
    result = http_tool(name="g", method="GET", url=server.url + "/fail")({})
    assert result.is_error
    assert result.output == 'HTTP 500: {"message": "database on fire"}'


def test_an_html_error_page_is_an_excerpt_of_its_text(server):
    result = http_tool(name="g", method="GET", url=server.url + "/html")({})
    assert result.output == "HTTP 502: Bad Gateway"


# ----------------------------------------------------------------- bounds


def test_a_response_larger_than_the_limit_is_an_error_and_reading_stops(server):
    get = http_tool(name="big", method="GET", url=server.url + "/huge", max_response_bytes=100_000)
    result = get({})
    assert result.is_error
    assert "larger than 100000 bytes" in result.output and "'big'" in result.output


def test_a_server_that_never_answers_is_cut_at_the_call_deadline(server):
    hang = http_tool(name="hang", method="GET", url=server.url + "/hang")
    result = hang({}, ToolContext(timeout_ms=HANG_MS))
    assert result.is_error
    assert result.metadata["timedOut"] is True
    assert "within the call's budget" in result.output and "'hang'" in result.output
    # the connection was closed, not left open behind the result
    assert server.closed.wait(TIMEOUT)


def test_a_server_that_trickles_bytes_cannot_stretch_the_deadline(server):
    # Each byte arrives well within any socket timeout; only the deadline ends the call.
    trickle = http_tool(name="trickle", method="GET", url=server.url + "/trickle")
    results = []
    worker = threading.Thread(
        target=lambda: results.append(trickle({}, ToolContext(timeout_ms=HANG_MS))),
        daemon=True,
    )
    worker.start()
    worker.join(TIMEOUT)
    assert not worker.is_alive(), "the call outlived its deadline"
    (result,) = results
    assert result.is_error and result.metadata["timedOut"] is True
    assert server.closed.wait(TIMEOUT)


def test_the_tool_timeout_bounds_a_call_without_a_deadline(server):
    hang = http_tool(name="hang", method="GET", url=server.url + "/hang", timeout_ms=HANG_MS)
    result = hang({})
    assert result.is_error and result.metadata["timedOut"] is True
    assert server.closed.wait(TIMEOUT)


def test_cancelling_the_call_closes_the_connection(server):
    hang = http_tool(name="hang", method="GET", url=server.url + "/hang")
    source = CancellationTokenSource()
    results = []
    worker = threading.Thread(
        target=lambda: results.append(hang({}, ToolContext(cancellation_token=source.token)))
    )
    worker.start()
    assert server.arrived.wait(TIMEOUT)
    source.cancel()
    worker.join(TIMEOUT)
    assert not worker.is_alive()
    (result,) = results
    assert result.is_error and "cancelled" in result.output
    assert server.closed.wait(TIMEOUT)


def test_host_deadline_reaches_the_request(server):
    hang = http_tool(name="hang", method="GET", url=server.url + "/hang")
    with Host(Toolkit([hang])) as host:
        result = host.call("hang", {}, timeout_ms=HANG_MS)
    assert result.is_error
    assert server.closed.wait(TIMEOUT)


def test_redirects_are_followed_up_to_the_limit(server):
    follow = http_tool(name="r", method="GET", url=server.url + "/redirect/1", max_redirects=2)
    assert not follow({}).is_error
    assert server.requests[-1]["path"] == "/echo"
    too_many = http_tool(name="r", method="GET", url=server.url + "/redirect/2", max_redirects=2)
    result = too_many({})
    assert result.is_error and "more than 2 redirects" in result.output


def test_credentials_are_not_sent_to_another_origin(server):
    other = RestServer()
    try:
        server.other = other
        get = http_tool(
            name="g",
            method="GET",
            url=server.url + "/elsewhere",
            headers={"Authorization": "Bearer secret", "X-Api-Key": "k", "Accept": "text/*"},
        )
        assert not get({}).is_error
        assert server.requests[-1]["headers"]["x-api-key"] == "k"  # to its own origin
        seen = other.requests[-1]
        assert "authorization" not in seen["headers"]
        assert "x-api-key" not in seen["headers"]  # an API key's own header name
        assert seen["headers"]["accept"] == "text/*"
    finally:
        other.stop()


def test_an_unreachable_server_is_an_error_result_not_an_exception():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    get = http_tool(name="g", method="GET", url=f"http://127.0.0.1:{port}/x")
    result = get({})
    assert result.is_error and "the request failed" in result.output


def test_a_header_http_refuses_is_an_error_that_does_not_show_the_secret(
    server, monkeypatch, caplog
):
    # http.client refuses a header value with a line break, quoting the value it refused
    monkeypatch.setenv("TN_BROKEN", "s3cr3t\nX-Injected: 1")
    probe = http_tool(
        name="probe", method="GET", url=server.url + "/echo", headers={"X-Key": "${TN_BROKEN}"}
    )
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        result = probe({})
    assert result.is_error and "'probe'" in result.output
    assert "header value or the URL" in result.output
    assert "s3cr3t" not in result.output and "s3cr3t" not in caplog.text
    assert server.requests == []


def test_bad_definitions_raise_at_once():
    with pytest.raises(InvalidValueError, match="body must be one of"):
        http_tool(name="x", method="GET", url="http://h/", body="xml")
    with pytest.raises(InvalidValueError, match="url must be an http"):
        http_tool(name="x", method="GET", url="ftp://h/")
    with pytest.raises(InvalidValueError, match="result_mode"):
        http_tool(name="x", method="GET", url="http://h/", result_mode="html")
    with pytest.raises(InvalidValueError, match="max_redirects"):
        http_tool(name="x", method="GET", url="http://h/", max_redirects=-1)
