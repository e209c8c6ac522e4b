"""A resource URI with dot segments never reaches a template: through a parent that mounts a child under
``kid`` (the child's ``notes://{+path}`` served as ``notes://kid/{+path}``) and on the parent's own
``files://{+path}``, every spelling of ``.`` and ``..`` (raw, percent-encoded once or twice, with ``/`` or
``\\``) is answered exactly as an unknown resource is, under a real uvicorn in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.http import UvicornProcess, initialize, run_uvicorn
from tests.support.stateless_http import Call, post, with_meta

SERVER = "tests.support.notes_server:server"
DOTTED = [
    "notes://kid/../vault/doc",
    "notes://kid/%2e%2e/vault/doc",
    "notes://kid/.%2E/vault/doc",
    "notes://kid/..%2fvault/doc",
    "notes://kid/%252e%252e/vault/doc",
    "notes://kid/./doc",
    "notes://kid/a/b/../../../vault/doc",
    "notes://kid/..",
    "files://a/../../etc/passwd",
    "files://..%5csecret",
    "files://docs/..\\secret",
]
UNKNOWN = "nothing://here"

pytestmark = pytest.mark.timeout(60)

Read = Callable[[str], Awaitable[httpx.Response]]


@pytest.fixture(scope="module")
def served() -> Iterator[UvicornProcess]:
    with run_uvicorn(SERVER) as server:
        yield server


@pytest.fixture(params=["handshake", "stateless"])
async def read(request: pytest.FixtureRequest, served: UvicornProcess) -> AsyncIterator[Read]:
    async with httpx.AsyncClient(timeout=10) as http:
        if request.param == "handshake":
            session = await initialize(http, served.url, "2025-11-25")
            yield lambda uri: session.request("resources/read", {"uri": uri})
        else:
            yield lambda uri: post(http, served.url, Call("resources/read", with_meta({"uri": uri})))


def error_of(response: httpx.Response, uri: str) -> tuple[int, Any]:
    """The HTTP status and the JSON-RPC error, with ``uri`` written as ``URI``."""
    error = response.json()["error"]
    return response.status_code, {**error, "message": error["message"].replace(uri, "URI"),
                                  "data": {k: "URI" if v == uri else v for k, v in (error.get("data") or {}).items()}}


async def test_a_plain_path_reaches_the_templates(read: Read) -> None:
    for uri, text in (("notes://kid/vault/doc", "note at vault/doc"), ("files://a/b", "file at a/b"),
                      ("notes://kid/v1.2/..notes", "note at v1.2/..notes")):
        response = await read(uri)
        assert response.status_code == 200, response.text
        assert response.json()["result"]["contents"][0]["text"] == text


@pytest.mark.parametrize("uri", DOTTED)
async def test_a_uri_with_dot_segments_is_an_unknown_resource(read: Read, uri: str) -> None:
    unknown = error_of(await read(UNKNOWN), UNKNOWN)
    dotted = await read(uri)
    assert error_of(dotted, uri) == unknown
    assert "note at" not in dotted.text
    assert "file at" not in dotted.text
