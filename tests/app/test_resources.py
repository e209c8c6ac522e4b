"""Resources: static URIs, templates, reading, errors."""

import base64
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from tests.support.failures import masked_error
from wiremcp import Context, MCPServer
from wiremcp.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, ResourceNotFound
from wiremcp.resources import Resource
from wiremcp.transports.memory import Client


class Settings(BaseModel):
    theme: str
    size: int


def _server() -> MCPServer:
    server = MCPServer("r")

    @server.resource("test://static-text", name="static", title="Static text", description="Some text",
                     mime_type="text/plain", size=5, annotations={"audience": ["user"]})
    def static_text() -> str:
        return "hello"

    @server.resource("test://static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        return b"\x89PNG\x00\xff"

    @server.resource("test://octets")
    async def octets() -> bytes:
        return b"\x00"

    @server.resource("test://settings")
    def settings() -> Settings:
        return Settings(theme="dark", size=3)

    @server.resource("test://raw.json")
    def raw() -> dict[str, Any]:
        return {"a": [1, 2]}

    @server.resource("test://template/{id}/data", description="Data by id")
    def template(id: str) -> str:
        return f"data for {id}"

    @server.resource("items://{item_id}", mime_type="application/json")
    async def item(item_id: int, ctx: Context) -> dict[str, Any]:
        if item_id > 100:
            raise ResourceNotFound(f"items://{item_id}")
        return {"id": item_id, "double": item_id * 2, "method": ctx.method}

    @server.resource("ranges://{low}/{high}")
    def ranges(low: Annotated[int, Field(ge=0)], high: float) -> str:
        return f"{low}..{high}"

    @server.resource("files:///{+path}")
    def files(path: str) -> list[Any]:
        return [f"first {path}", {"uri": f"files:///{path}#2", "mimeType": "text/markdown", "text": "second"}]

    @server.resource("empty://{name}")
    def empty(name: str) -> list[str]:
        return []

    @server.resource("broken://thing")
    def broken() -> str:
        raise RuntimeError("db password is hunter2")

    return server


@pytest.mark.spec("2025-11-25/server/resources#listing-resources")
async def test_list_static_resources() -> None:
    async with Client(_server()) as client:
        resources = await client.list_resources()
    by_uri = {r["uri"]: r for r in resources}
    assert list(by_uri) == ["test://static-text", "test://static-binary", "test://octets", "test://settings",
                            "test://raw.json", "broken://thing"]
    assert by_uri["test://static-text"] == {"uri": "test://static-text", "name": "static", "title": "Static text",
                                            "description": "Some text", "mimeType": "text/plain",
                                            "annotations": {"audience": ["user"]}, "size": 5}
    assert by_uri["test://octets"] == {"uri": "test://octets", "name": "octets"}


@pytest.mark.spec("2025-11-25/server/resources#resource-templates")
async def test_list_templates() -> None:
    async with Client(_server()) as client:
        templates = await client.list_resource_templates()
    by_template = {t["uriTemplate"]: t for t in templates}
    assert list(by_template) == ["test://template/{id}/data", "items://{item_id}", "ranges://{low}/{high}",
                                 "files:///{+path}", "empty://{name}"]
    assert by_template["test://template/{id}/data"] == {"uriTemplate": "test://template/{id}/data",
                                                        "name": "template", "description": "Data by id"}
    assert all("uri" not in t for t in templates)


@pytest.mark.spec("2025-11-25/server/resources#text-content")
async def test_read_static_text() -> None:
    async with Client(_server()) as client:
        result = await client.read_resource("test://static-text")
    assert result == {"contents": [{"uri": "test://static-text", "mimeType": "text/plain", "text": "hello"}]}


@pytest.mark.spec("2025-11-25/server/resources#binary-content")
async def test_binary_is_a_base64_blob() -> None:
    async with Client(_server()) as client:
        png = await client.read_resource("test://static-binary")
        octets = await client.read_resource("test://octets")
    assert png == {"contents": [{"uri": "test://static-binary", "mimeType": "image/png",
                                 "blob": base64.b64encode(b"\x89PNG\x00\xff").decode()}]}
    assert octets["contents"] == [{"uri": "test://octets", "mimeType": "application/octet-stream", "blob": "AA=="}]


async def test_structured_values_are_json_text() -> None:
    async with Client(_server()) as client:
        settings = await client.read_resource("test://settings")
        raw = await client.read_resource("test://raw.json")
    assert settings["contents"] == [{"uri": "test://settings", "mimeType": "application/json",
                                     "text": '{"theme":"dark","size":3}'}]
    assert raw["contents"] == [{"uri": "test://raw.json", "mimeType": "application/json", "text": '{"a":[1,2]}'}]


@pytest.mark.spec("2025-11-25/server/resources#resource-templates")
async def test_read_through_a_template() -> None:
    async with Client(_server()) as client:
        result = await client.read_resource("test://template/123/data")
        files = await client.read_resource("files:///docs/guide.md")
    assert result["contents"] == [{"uri": "test://template/123/data", "mimeType": "text/plain",
                                   "text": "data for 123"}]
    assert files["contents"] == [
        {"uri": "files:///docs/guide.md", "mimeType": "text/plain", "text": "first docs/guide.md"},
        {"uri": "files:///docs/guide.md#2", "mimeType": "text/markdown", "text": "second"},
    ]


async def test_typed_template_variables() -> None:
    async with Client(_server()) as client:
        item = await client.read_resource("items://21")
        ranges = await client.read_resource("ranges://3/4.5")
    assert item["contents"][0]["text"] == '{"id":21,"double":42,"method":"resources/read"}'
    assert item["contents"][0]["mimeType"] == "application/json"
    assert ranges["contents"][0]["text"] == "3..4.5"


@pytest.mark.spec("2025-11-25/server/resources#error-handling")
@pytest.mark.parametrize(
    "uri",
    [
        "test://nowhere",
        "test://template/1/other",
        "items://abc",  # not an int
        "items://101",  # the handler says so
        "ranges://-1/2",  # fails its constraint
        "empty://x",  # no contents is not an answer
    ],
)
async def test_not_found_is_32002_with_the_uri(uri: str) -> None:
    async with Client(_server()) as client:
        response = await client.request_raw("resources/read", {"uri": uri})
    assert "result" not in response
    assert response["error"]["code"] == RESOURCE_NOT_FOUND
    assert response["error"]["data"] == {"uri": uri}
    assert uri in response["error"]["message"]


@pytest.mark.parametrize("params", [{}, {"uri": ""}, {"uri": 5}])
async def test_read_needs_a_uri(params: dict[str, Any]) -> None:
    async with Client(_server()) as client:
        response = await client.request_raw("resources/read", params)
    assert response["error"]["code"] == INVALID_PARAMS


@pytest.mark.spec("2025-11-25/server/resources#error-handling")
async def test_a_failing_resource_is_an_internal_error_without_details() -> None:
    async with Client(_server()) as client:
        response = await client.request_raw("resources/read", {"uri": "broken://thing"})
    masked_error(response["error"], "Error reading resource broken://thing")


async def test_static_resource_wins_over_a_matching_template() -> None:
    server = MCPServer("r")

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.resource("notes://index")
    def index() -> str:
        return "index"

    async with Client(server) as client:
        assert (await client.read_resource("notes://index"))["contents"][0]["text"] == "index"
        assert (await client.read_resource("notes://other"))["contents"][0]["text"] == "note other"


async def test_context_can_read_own_resources() -> None:
    server = MCPServer("r")

    @server.resource("config://app")
    def config() -> str:
        return "debug=true"

    @server.tool()
    async def show(ctx: Context) -> str:
        contents = await ctx.read_resource("config://app")
        return str(contents[0]["text"])

    async with Client(server) as client:
        result = await client.call_tool("show")
    assert result["content"] == [{"type": "text", "text": "debug=true"}]


def test_parameters_must_match_template_variables() -> None:
    def wrong(other: str) -> str:
        return other

    def fine(ctx: Context, id: str) -> str:
        return id

    with pytest.raises(TypeError, match="template variables"):
        Resource("x://{id}", wrong)
    with pytest.raises(TypeError, match="template variables"):
        Resource("x://static", wrong)
    assert Resource("x://{id}", fine).template is not None


def test_remove_resource() -> None:
    server = _server()
    server.remove_resource("test://octets")
    server.remove_resource("items://{item_id}")
    assert "test://octets" not in server.resources.static
    assert "items://{item_id}" not in server.resources.templates
    with pytest.raises(KeyError):
        server.remove_resource("test://octets")


async def test_query_variables_are_optional_with_defaults() -> None:
    server = MCPServer("r")

    @server.resource("search://items{?q,limit}")
    def search(q: str = "", limit: int = 10) -> str:
        return f"q={q!r} limit={limit}"

    async with Client(server) as client:
        (template,) = await client.list_resource_templates()
        bare = await client.read_resource("search://items")
        full = await client.read_resource("search://items?q=red%20shoes&limit=3")
    assert template["uriTemplate"] == "search://items{?q,limit}"
    assert bare["contents"][0]["text"] == "q='' limit=10"
    assert full["contents"][0]["text"] == "q='red shoes' limit=3"


async def test_no_template_sees_a_uri_with_dot_segments_and_none_is_registered() -> None:
    server = MCPServer("dots")
    seen: list[str] = []

    @server.resource("files://{+path}")
    def file(path: str) -> str:
        seen.append(path)
        return path

    async with Client(server) as client:
        response = await client.request_raw("resources/read", {"uri": "files://a/%2e%2e/b"})
    assert response["error"] == ResourceNotFound("files://a/%2e%2e/b").to_error()
    assert seen == []
    with pytest.raises(ValueError, match=r"no '\.' or '\.\.' path segments"):
        Resource("files://a/../b", lambda: "x")


async def test_a_template_function_may_take_its_variables_as_keywords() -> None:
    server = MCPServer("t")

    @server.resource("items://{shelf}/{item}")
    def item(shelf: str, **rest: str) -> str:
        return f"{shelf}: {rest}"

    async with Client(server) as client:
        read = await client.read_resource("items://top/lamp")
    assert read["contents"][0]["text"] == "top: {'item': 'lamp'}"
    with pytest.raises(TypeError, match="must be the template variables"):
        server.resource("items://{shelf}")(lambda other, **rest: "")
