"""The HTTP client transport (``mcp/_client/_http.py``): a response's head, read without the
email parser, means what ``http.client`` makes of it, body framing included."""

from __future__ import annotations

import http.client
import io

import pytest

from toolnexus.mcp._client._http import _Response


class _Socket:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))  # type: ignore[arg-type]


JSON = b'{"jsonrpc":"2.0","id":1,"result":{}}'
RESPONSES = {
    "json": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    % (len(JSON), JSON),
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nContent-Type: text/event-stream"
    b"\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    "continue first": b"HTTP/1.1 100 Continue\r\nX-A: 1\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "1.0 until close": b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + JSON,
    "1.0 keep-alive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    "closing": b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 3\r\n\r\nno!",
    "no content": b"HTTP/1.1 204 No Content\r\nX-Thing: a\r\n\r\n",
    "repeated fields": b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n"
    b"Mcp-Session-Id:  abc \t\r\nContent-Length: 0\r\n\r\n",
    "negative length": b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nrest",
    "bad length": b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nrest",
    "folded": b"HTTP/1.1 200 OK\r\nX-Long: one\r\n two\r\nContent-Length: 2\r\n\r\nok",
    "broken line": b"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 2\r\n\r\nok",
    "bare newlines": b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    "latin-1": b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 2\r\n\r\nok",
}


def _read(kind: type[http.client.HTTPResponse], data: bytes) -> tuple[object, ...]:
    response = kind(_Socket(data), method="POST")  # type: ignore[arg-type]
    response.begin()
    return (
        response.version,
        response.status,
        response.reason,
        list(response.headers.items()),
        response.getheader("mcp-session-id"),
        response.chunked,
        response.length,
        response.will_close,
        response.read(),
    )


@pytest.mark.parametrize("data", RESPONSES.values(), ids=list(RESPONSES))
def test_a_response_reads_as_http_client_reads_it(data: bytes) -> None:
    assert _read(_Response, data) == _read(http.client.HTTPResponse, data)


def test_a_plain_head_is_read_without_the_email_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _read(_Response, RESPONSES["repeated fields"])

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the email parser was used")

    monkeypatch.setattr(http.client, "parse_headers", refuse)
    assert _read(_Response, RESPONSES["repeated fields"]) == expected


def test_every_interim_answer_is_skipped_not_only_100_continue() -> None:
    # RFC 9110 15.2: a client parses any 1xx before the final answer (http.client would
    # take the 103 for the answer).
    data = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    )
    version, status, reason, headers, *_, body = _read(_Response, data)
    assert (version, status, reason, headers, body) == (
        11,
        200,
        "OK",
        [("Content-Length", "2")],
        b"ok",
    )


@pytest.mark.parametrize(
    "data",
    [b"", b"HTTP/2 200 OK\r\n\r\n", b"garbage\r\n\r\n", b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101],
)
def test_a_response_http_client_refuses_is_refused_alike(data: bytes) -> None:
    with pytest.raises(http.client.HTTPException) as ours:
        _read(_Response, data)
    with pytest.raises(http.client.HTTPException) as theirs:
        _read(http.client.HTTPResponse, data)
    assert type(ours.value) is type(theirs.value)
