"""RFC 6570 template matching for resource templates."""

import pytest

from wiremcp.uritemplate import UriTemplate, has_dot_segments, is_template


@pytest.mark.spec("2025-11-25/server/resources#resource-templates")
@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("users://{id}/profile", "users://42/profile", {"id": "42"}),
        ("users://{id}/profile", "users://a%20b/profile", {"id": "a b"}),
        # "." is unreserved: simple expansion leaves it as is, so it must match
        ("file:///{name}", "file:///readme.md", {"name": "readme.md"}),
        ("docs://{name}{.ext}", "docs://notes.v2.txt", {"name": "notes.v2", "ext": "txt"}),
        ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
        ("page://doc{#section}", "page://doc#intro", {"section": "intro"}),
        ("tree://root{/a}{/b}", "tree://root/x/y", {"a": "x", "b": "y"}),
        ("img://logo{.fmt}", "img://logo.png", {"fmt": "png"}),
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
    ],
)
def test_matching_extracts_variables(template: str, uri: str, expected: dict[str, str]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("users://{id}/profile", "users://42/settings"),
        ("users://{id}/profile", "users://a/b/profile"),  # a simple variable is one segment
        ("users://{id}/profile", "users:///profile"),  # and is not empty
        ("tree://root{/a}", "tree://root/x/y"),
        ("static://thing", "static://thing/else"),
        ("file:///{+path}", "file:///a?query"),
    ],
)
def test_non_matching_uris(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


def test_query_expression() -> None:
    template = UriTemplate("search://items{?q,lang}")
    assert template.variables == ["q", "lang"]
    assert template.match("search://items?q=red%20shoes&lang=en") == {"q": "red shoes", "lang": "en"}
    assert template.match("search://items?lang=fr") == {"lang": "fr"}
    assert template.match("search://items") == {}
    assert template.match("search://items?q=x&other=1") == {"q": "x"}


def test_variables_in_order_and_literal_templates() -> None:
    template = UriTemplate("repo://{owner}/{name}/blob/{+path}")
    assert template.variables == ["owner", "name", "path"]
    assert template.is_template
    literal = UriTemplate("config://app")
    assert not literal.is_template
    assert literal.variables == []
    assert literal.match("config://app") == {}
    # regex metacharacters in the literal parts are literal
    assert UriTemplate("a+b://x.y/{v}").match("a+b://x.y/1") == {"v": "1"}
    assert UriTemplate("a+b://x.y/{v}").match("aab://xzy/1") is None


@pytest.mark.parametrize(
    "template",
    [
        "bad://{a}/{a}",  # repeated
        "bad://{a,b}",  # several variables in a simple expression
        "bad://{?q}/{a}",  # query not last
        "bad://{a",  # unbalanced
        "bad://a}",
        "bad://{a-b}",  # invalid name
    ],
)
def test_invalid_templates_are_rejected(template: str) -> None:
    with pytest.raises(ValueError, match="bad://"):
        UriTemplate(template)


def test_is_template() -> None:
    assert is_template("x://{id}")
    assert is_template("x://y{?q}")
    assert not is_template("x://y")


@pytest.mark.parametrize("uri", [
    "notes://kid/../vault", "notes://kid/./x", "notes://..", "notes://a/..", "file:///a/%2e%2e/b", "file:///%2E./b",
    "file:///.%2e/b", "file:///a/..%2fb", "file:///a/%252e%252e/b", "file:///a/..\\b", "file:///a%5c..%5cb",
    "..", "a/./b", "file:///x/..?q=1", "file:///x/..#top",
])
def test_dot_segments_written_out_or_encoded_are_found(uri: str) -> None:
    assert has_dot_segments(uri)


@pytest.mark.parametrize("uri", [
    "notes://kid/vault", "file:///a/..b/c", "file:///a/b../c", "file:///v1.2/x", "file:///.hidden", "file:///...",
    "notes://kid/x?path=../y", "notes://kid/x#../y", "urn:isbn:0451450523", "file:///a/%2e%2e%2e",
])
def test_names_with_dots_that_are_no_segments_of_their_own_are_not(uri: str) -> None:
    assert not has_dot_segments(uri)


@pytest.mark.parametrize(("template", "uri"), [
    ("docs://{+path}", "docs:///etc/passwd"), ("docs://{+path}", "docs://%2Fetc/passwd"),
    ("docs://{+path}", "docs://%252Fetc/passwd"), ("docs://{+path}", "docs://C:/Windows/win.ini"),
    ("docs://{+path}", "docs://c:%5Cboot.ini"), ("docs://{+path}", "docs://\\\\server\\share"),
    ("notes://kid/{+path}", "notes://kid//etc/passwd"), ("users://{name}", "users://%2Fetc%2Fpasswd"),
    ("files{/path}", "files//etc"),
])
def test_a_variable_that_would_be_an_absolute_path_matches_nothing(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


@pytest.mark.parametrize(("template", "uri", "expected"), [
    ("docs://{+path}", "docs://guide/intro.md", {"path": "guide/intro.md"}),
    ("docs://{+path}", "docs://a:b/c", {"path": "a:b/c"}),  # a colon, but no drive
    ("users://{name}", "users://ada%20lovelace", {"name": "ada lovelace"}),
])
def test_relative_values_still_match(template: str, uri: str, expected: dict[str, str]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(("template", "uri"), [
    ("weather://forecast/{city}", "weather://forecast/New%20York"),
    ("file:///{+path}", "file:///docs/guide/intro.md"),
    ("x://a{/segment}{.ext}", "x://a/report.json"),
    ("x://search{?q,page}", "x://search?q=rain%20today&page=2"),
    ("x://matrix{;key}", "x://matrix;key=v"),
    ("x://page{#section}", "x://page#part/two"),
])
def test_expanding_what_a_match_took_apart_gives_the_uri_back(template: str, uri: str) -> None:
    parsed = UriTemplate(template)
    values = parsed.match(uri)
    assert values is not None
    assert parsed.expand(values) == uri


def test_expansion_encodes_what_each_operator_must_and_leaves_out_what_has_no_value() -> None:
    assert UriTemplate("users://{name}").expand({"name": "a/b c"}) == "users://a%2Fb%20c"
    assert UriTemplate("docs://{+path}").expand({"path": "a/b c"}) == "docs://a/b%20c"
    assert UriTemplate("x://search{?q,page}").expand({"q": "a&b"}) == "x://search?q=a%26b"
    assert UriTemplate("x://search{?q,page}").expand({}) == "x://search"
