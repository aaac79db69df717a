"""URI templates (RFC 6570 levels 1-3): what a resource template matches and writes."""

from __future__ import annotations

import pytest

from toolnexus._uri_template import UriTemplate, is_template


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("test://template/{id}/data", "test://template/a%20b/data", {"id": "a b"}),
        ("file:///{+path}", "file:///docs/a/b.md", {"path": "docs/a/b.md"}),
        ("x://{#section}", "x://#intro,2", {"section": "intro,2"}),
        ("x://h{.fmt}", "x://h.json", {"fmt": "json"}),
        ("x://h{/a,b}", "x://h/1/2", {"a": "1", "b": "2"}),
        ("x://m{;a,b}", "x://m;a=1;b", {"a": "1", "b": ""}),
        ("x://s{?q,page}", "x://s?page=2&q=a%20b", {"q": "a b", "page": "2"}),
        ("x://s{?q,page}", "x://s", {}),
        ("x://s?fixed=1{&q}", "x://s?fixed=1&q=z", {"q": "z"}),
        ("x://{a,b}", "x://1,2", {"a": "1", "b": "2"}),
    ],
)
def test_a_template_matches_the_uris_it_expands_to(
    template: str, uri: str, expected: dict[str, str]
) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("test://template/{id}/data", "test://template/1/2/data"),  # a simple value has no /
        ("test://template/{id}/data", "test://template//data"),  # nor is it empty
        ("test://template/{id}/data", "test://other/1/data"),
        ("test://static", "test://static/more"),
    ],
)
def test_a_uri_of_another_shape_does_not_match(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


@pytest.mark.parametrize(
    ("template", "values", "expected"),
    [
        ("test://t/{id}", {"id": "a b/c"}, "test://t/a%20b%2Fc"),
        ("file:///{+path}", {"path": "a b/c"}, "file:///a%20b/c"),
        ("x://s{?q,page}", {"q": "x", "page": 3}, "x://s?q=x&page=3"),
        ("x://s{?q,page}", {"page": 3}, "x://s?page=3"),
        ("x://h{/a,b}", {"a": 1, "b": 2}, "x://h/1/2"),
        ("x://h{.fmt}", {}, "x://h"),
    ],
)
def test_expanding_writes_each_operator_as_rfc_6570_says(
    template: str, values: dict[str, object], expected: str
) -> None:
    assert UriTemplate(template).expand(values) == expected


@pytest.mark.parametrize(
    ("template", "words"),
    [
        ("x://{a", "never closed"),
        ("x://a}", "closes no expression"),
        ("x://{list*}", "level-4 modifier"),
        ("x://{name:3}", "level-4 modifier"),
        ("x://{a}/{a}", "appears twice"),
        ("x://{}", "not a variable name"),
        ("x://{=a}", "reserved operator"),
    ],
)
def test_a_malformed_template_is_refused_naming_the_expression(template: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        UriTemplate(template)


def test_variables_are_listed_in_order_and_templates_told_from_uris() -> None:
    assert UriTemplate("x://{a}/{+b}{?c,d}").variables == ("a", "b", "c", "d")
    assert is_template("x://{a}") and not is_template("x://a")
    assert UriTemplate("x://{a}") == UriTemplate("x://{a}")
    assert repr(UriTemplate("x://{a}")) == "UriTemplate('x://{a}')"


@pytest.mark.parametrize(
    ("template", "uri", "words"),
    [
        ("docs://files/{name}", "docs://files/..%2F..%2Fetc%2Fhostname", "one path segment"),
        ("docs://files/{name}", "docs://files/%2Fetc%2Fhostname", "one path segment"),
        ("docs://files/{name}", "docs://files/..", "one path segment"),
        ("docs://files/{name}", "docs://files/a%5C..%5Cb", "one path segment"),
        ("docs://files/{name}", "docs://files/a%00", "control character"),
        ("docs://files/{name}", "docs://files/a%1Bb", "control character"),
        ("docs://h{.fmt}", "docs://h.%2F", "one path segment"),
        ("docs://h{/a,b}", "docs://h/x/..", "one path segment"),
        ("docs://{+path}", "docs://a/../../b", "'..' segment"),
        ("docs://{+path}", "docs://a%5C..%5Cb", "'..' segment"),
        ("docs://{+path}", "docs:///etc/hostname", "absolute path"),
        ("docs://{+path}", "docs://%5Cetc", "absolute path"),
        ("docs://{+path}", "docs://c:/x", "absolute path"),
        ("docs://s{?q}", "docs://s?q=..%2Fx", "'..' segment"),
        ("docs://s{?q}", "docs://s?q=%7F", "control character"),
    ],
)
def test_a_value_that_could_leave_its_folder_is_refused_naming_the_variable(
    template: str, uri: str, words: str
) -> None:
    parsed = UriTemplate(template)
    values = parsed.match(uri)
    assert values is not None  # it matches: only the refusal keeps it from a function
    refusal = parsed.refusal(values)
    assert refusal is not None and words in refusal and "variable '" in refusal


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("docs://files/{name}", "docs://files/a..b.md"),
        ("docs://files/{name}", "docs://files/.profile"),
        ("docs://files/{name}", "docs://files/caf%C3%A9%20menu.md"),
        ("docs://{+path}", "docs://guides/start/intro.md"),
        ("docs://s{?q}", "docs://s?q=a%2Fb"),
    ],
)
def test_a_name_a_path_under_a_reserved_variable_and_a_query_pass(template: str, uri: str) -> None:
    parsed = UriTemplate(template)
    values = parsed.match(uri)
    assert values is not None and parsed.refusal(values) is None


def test_the_refusal_says_how_to_take_a_path() -> None:
    parsed = UriTemplate("docs://files/{name}")
    refusal = parsed.refusal({"name": "a/b"})
    assert refusal is not None and "write {+name} in the template" in refusal
