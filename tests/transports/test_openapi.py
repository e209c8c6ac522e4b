"""``from_openapi``: a real FastAPI app on a real uvicorn (127.0.0.1, a free port), its tools made from the OpenAPI
document FastAPI itself serves, listed and called with the in-memory ``Client``: path and query parameters, a JSON
body of a ``$ref``'d model, errors of the API as tool errors, the operator's token and the caller's, timeouts
and an API that is not there; a hand-written 3.0 document (``nullable``, a recursive ``$ref``) against it too."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.http import refusing_port, serve_in_process
from tests.support.petstore import MISDESCRIBED, TREE, TREE_DOCUMENT, app
from wiremcp import MCPServer
from wiremcp.context import Context
from wiremcp.errors import DefinitionError
from wiremcp.principal import Principal
from wiremcp.transports import Client, from_openapi
from wiremcp.transports.openapi import MAX_SAID, said

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def api() -> AsyncIterator[str]:
    async with serve_in_process(app) as url:
        yield url


@pytest.fixture
async def http(api: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api, timeout=10) as client:
        yield client


@pytest.fixture
async def document(http: httpx.AsyncClient) -> dict[str, Any]:
    found: dict[str, Any] = (await http.get("/openapi.json")).json()
    return found


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def test_the_apis_operations_are_tools_listed_and_called(http: httpx.AsyncClient,
                                                                 document: dict[str, Any]) -> None:
    server = from_openapi(document, client=http)
    assert server.name == "Petstore"
    async with Client(server) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert set(tools) == {"list_pets_pets_get", "get_pet_pets__pet_id__get", "create_pet_pets_post",
                              "delete_pet_pets__pet_id__delete", "me_me_get", "slow_slow_get", "boom_boom_get"}
        got = tools["get_pet_pets__pet_id__get"]
        assert got["description"] == "One pet"
        assert got["inputSchema"]["required"] == ["pet_id"]
        assert got["annotations"] == {"readOnlyHint": True}
        assert set(got["outputSchema"]["properties"]) == {"id", "name", "tag", "owner"}
        made = tools["create_pet_pets_post"]["inputSchema"]
        assert made["required"] == ["name"]
        assert set(made["properties"]) == {"x-request-id", "name", "tag", "owner"}  # the body's, spread
        assert "$ref" not in str(made)  # NewPet's Owner, inlined

        one = await client.call_tool("get_pet_pets__pet_id__get", {"pet_id": 1})
        assert one["structuredContent"] == {"id": 1, "name": "Rex", "tag": "dog", "owner": None}
        listed = await client.call_tool("list_pets_pets_get", {"limit": 5, "tag": "cat"})
        assert listed["structuredContent"] == {"result": [{"id": 2, "name": "Tom", "tag": "cat", "owner": None}]}
        added = await client.call_tool("create_pet_pets_post", {"name": "Bo", "owner": {"name": "Al"}})
        assert not added.get("isError"), added
        assert added["structuredContent"]["owner"] == {"name": "Al", "email": None}
        pet_id = added["structuredContent"]["id"]
        assert (await client.call_tool("delete_pet_pets__pet_id__delete", {"pet_id": pet_id}))["structuredContent"] \
            == {"result": None}

        missing = await client.call_tool("get_pet_pets__pet_id__get", {"pet_id": 99})
        assert missing["isError"] is True
        assert text(missing) == "GET /pets/{pet_id} failed: 404 Not Found: no pet 99"
        refused = await client.call_tool("get_pet_pets__pet_id__get", {"pet_id": "x"})
        assert refused["isError"] is True
        assert "Invalid arguments" in text(refused)  # checked before it is sent
        huge = await client.call_tool("boom_boom_get")
        assert text(huge).startswith("GET /boom failed: 500 Internal Server Error: xxx")
        assert len(text(huge)) < MAX_SAID + 60


async def test_mounted_under_a_prefix_and_filtered(http: httpx.AsyncClient, document: dict[str, Any]) -> None:
    hub = MCPServer("hub")
    hub.mount(from_openapi(document, client=http, include={"tags": ["pets"]},
                           exclude={"operations": ["create_*"]}), prefix="petstore")
    async with Client(hub) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == [
            "petstore_get_pet_pets__pet_id__get", "petstore_list_pets_pets_get"]
        called = await client.call_tool("petstore_get_pet_pets__pet_id__get", {"pet_id": 2})
    assert called["structuredContent"]["name"] == "Tom"


async def test_the_operators_token_or_the_callers(api: str, document: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=api, headers={"Authorization": "Bearer alice-token"}) as operator:
        async with Client(from_openapi(document, client=operator, include={"tags": ["account"]})) as client:
            assert (await client.call_tool("me_me_get"))["structuredContent"] == {"user": "alice"}

        async def token_of(ctx: Context) -> str:
            if ctx.principal is None:
                raise LookupError("no one signed in")
            return f"{ctx.principal.subject}-token"

        # the caller's token, instead of the client's own (its headers and its auth)
        operator.auth = httpx.BasicAuth("operator", "secret")
        server = from_openapi(document, client=operator, include={"tags": ["account"]}, caller_token=token_of)
        async with Client(server, principal=Principal("https://issuer.test", "bob")) as client:
            assert (await client.call_tool("me_me_get"))["structuredContent"] == {"user": "bob"}
        async with Client(server, principal=Principal("https://issuer.test", "mallory")) as client:
            wrong = await client.call_tool("me_me_get")
        assert text(wrong) == "GET /me failed: 401 Unauthorized: a valid bearer token is needed"
        async with Client(server) as client:
            answer = await client.request_raw("tools/call", {"name": "me_me_get", "arguments": {}})
        assert answer["error"]["code"] == -32600
        assert "Petstore is called with your own token, and there is none for you: no one signed in" \
            in answer["error"]["message"]


async def test_timeouts_and_an_api_that_is_not_there_are_tool_errors(api: str, document: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=api) as http, Client(
            from_openapi(document, client=http, include={"tags": ["misc"]}, timeout=0.2)) as client:
        slow = await client.call_tool("slow_slow_get", {"seconds": 2})
    assert slow["isError"] is True
    assert text(slow) == "GET /slow: the API did not answer in time (ReadTimeout)"
    with refusing_port() as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as gone, Client(
                from_openapi(document, client=gone)) as client:
            down = await client.call_tool("list_pets_pets_get")
    assert down["isError"] is True
    assert text(down).startswith("GET /pets: the API cannot be reached: ConnectError: ")
    assert "Traceback" not in text(down)


async def test_a_hand_written_30_document_with_nullable_and_a_recursive_ref(http: httpx.AsyncClient) -> None:
    async with Client(from_openapi(TREE_DOCUMENT, client=http)) as client:
        (tool,) = await client.list_tools()
        assert tool["inputSchema"]["properties"]["depth"] == {"type": ["integer", "null"]}
        assert tool["outputSchema"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
        tree = await client.call_tool("getTree", {"depth": None})
        flat = await client.call_tool("getTree", {"depth": 1})
    assert tree["structuredContent"] == TREE
    assert flat["structuredContent"]["children"] == []


async def test_arguments_and_answers_are_checked_against_refs_into_defs(http: httpx.AsyncClient) -> None:
    doc: dict[str, Any] = copy.deepcopy(TREE_DOCUMENT)
    depth = {"$ref": "#/components/schemas/Depth"}
    doc["paths"]["/tree"]["get"]["parameters"] = [{"name": "depth", "in": "query", "schema": depth},
                                                  {"name": "X-Depth", "in": "header", "schema": depth}]
    doc["components"]["schemas"]["Depth"] = {"type": "integer", "minimum": 0, "nullable": True}
    async with Client(from_openapi(doc, client=http)) as client:
        (tool,) = await client.list_tools()
        assert tool["inputSchema"]["$defs"] == {"Depth": {"type": ["integer", "null"], "minimum": 0}}
        assert tool["inputSchema"]["properties"]["depth"] == {"$ref": "#/$defs/Depth"}
        flat = await client.call_tool("getTree", {"depth": 1, "X-Depth": None})
        bad = await client.call_tool("getTree", {"depth": -1})
    assert flat["structuredContent"]["children"] == []
    assert bad["isError"] is True
    assert "depth" in text(bad)


async def test_an_answer_that_is_not_what_the_document_describes_is_a_tool_error(http: httpx.AsyncClient) -> None:
    async with Client(from_openapi(MISDESCRIBED, client=http)) as client:
        tree = await client.call_tool("tree")
        words = await client.call_tool("text")
    assert tree["isError"] is True
    assert "does not match its output schema" in text(tree)
    assert words["isError"] is True
    assert text(words) == ("GET /text: the API answered 200 OK with text/plain; charset=utf-8 where its document "
                           "describes JSON: plain words")


async def test_lists_in_the_query_exploded_or_not(http: httpx.AsyncClient) -> None:
    listed = {"type": "array", "items": {"type": "string"}}
    doc = {"openapi": "3.0.3", "info": {"title": "Q", "version": "1"}, "paths": {"/query": {"get": {
        "operationId": "query", "parameters": [
            {"name": "a", "in": "query", "schema": listed},
            {"name": "b", "in": "query", "explode": False, "schema": listed},
            {"name": "flag", "in": "query", "schema": {"type": "boolean"}}],
        "responses": {"200": {"description": "", "content": {"application/json": {"schema": {"type": "object"}}}}},
    }}}}
    async with Client(from_openapi(doc, client=http)) as client:
        sent = await client.call_tool("query", {"a": ["x", "y"], "b": ["x", "y z"], "flag": True})
    assert sent["structuredContent"] == {"query": "a=x&a=y&b=x%2Cy+z&flag=true"}


async def test_the_documents_server_url_when_the_client_has_no_base_url(api: str) -> None:
    doc = {**TREE_DOCUMENT, "servers": [{"url": "{scheme}://" + api.removeprefix("http://"),
                                         "variables": {"scheme": {"default": "http"}}}]}
    async with httpx.AsyncClient() as http, Client(from_openapi(doc, client=http)) as client:
        assert (await client.call_tool("getTree", {}))["structuredContent"] == TREE
    with pytest.raises(DefinitionError, match="give the client a base_url"):
        from_openapi(TREE_DOCUMENT, client=httpx.AsyncClient())


def test_a_bad_document_is_one_definition_error_naming_what_is_wrong() -> None:
    bad = {**TREE_DOCUMENT, "components": {"schemas": {}}}
    with pytest.raises(DefinitionError) as raised:
        from_openapi(bad, client=httpx.AsyncClient(base_url="http://127.0.0.1:1"))
    message = str(raised.value)
    assert "test_openapi.py:" in message
    assert "\n" not in message
    assert message.endswith("OpenAPI document: GET /tree response 200: $ref '#/components/schemas/Node' points at "
                            "nothing in the document")
    with pytest.raises(DefinitionError, match=r"takes an httpx\.AsyncClient"):
        from_openapi(TREE_DOCUMENT, client="http://api")  # type: ignore[arg-type]


@pytest.mark.parametrize(("status", "body", "expected"), [
    (400, {"type": "about:blank", "title": "Bad Request", "detail": "name is too long"}, "Bad Request: name is too long"),
    (409, {"message": "taken"}, "taken"),
    (403, {"error": {"code": 7, "message": "not yours"}}, "not yours"),
    (422, {"detail": [{"loc": ["body"], "msg": "missing"}]}, '[{"loc":["body"],"msg":"missing"}]'),
    (502, None, "upstream\nfailed"),
])
def test_what_an_api_said(status: int, body: Any, expected: str) -> None:
    response = httpx.Response(status, json=body) if body is not None else httpx.Response(status, text=expected)
    assert said(response) == expected.replace("\n", " ")
