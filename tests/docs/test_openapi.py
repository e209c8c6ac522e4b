"""``docs/openapi.md``, run: the page's server against the test API (a FastAPI app, ``tests/support/petstore.py``)
served by uvicorn on a free port (the page's 8000), its document fetched from the API as the page does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_pages import DOCS, block
from tests.support.http import run_uvicorn
from tests.support.petstore import APP
from wiremcp.principal import Principal
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "openapi.md"
CHECKED = {"openapi", "error-text", "caller-token"}


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with run_uvicorn("", app=APP) as running:
        yield running.base_url


def run_block(name: str, path: Path, api: str) -> dict[str, Any]:
    """The block run as the file ``path``, the page's API (port 8000) the test's."""
    text = block(PAGE, name).text.replace("http://127.0.0.1:8000", api)
    path.write_text(text)
    namespace: dict[str, Any] = {"__name__": f"docs_{name.replace('-', '_')}", "__file__": str(path)}
    exec(compile(text, str(path), "exec"), namespace)
    return namespace


async def test_the_pages_server_serves_the_apis_pet_tools_beside_its_own(tmp_path: Path, api: str) -> None:
    server = run_block("openapi", tmp_path / "server.py", api)["server"]
    async with Client(server) as client:
        names = sorted(t["name"] for t in await client.list_tools())
        pet = await client.call_tool("petstore_get_pet_pets__pet_id__get", {"pet_id": 1})
        missing = await client.call_tool("petstore_get_pet_pets__pet_id__get", {"pet_id": 99})
    assert names == ["hello", "petstore_create_pet_pets_post", "petstore_get_pet_pets__pet_id__get",
                     "petstore_list_pets_pets_get"]
    assert pet["structuredContent"] == {"id": 1, "name": "Rex", "tag": "dog", "owner": None}
    assert missing["isError"] is True
    assert missing["content"][0]["text"] == block(PAGE, "error-text").text.strip()


async def test_the_caller_token_example_asks_for_the_callers_token(tmp_path: Path, api: str) -> None:
    """No OAuth server of this process signed the caller in: ``upstream_token`` has no token, which the caller
    is told (``tests/transports/test_openapi.py`` calls with a caller's token)."""
    server = run_block("caller-token", tmp_path / "server.py", api)["server"]
    async with Client(server, principal=Principal("https://issuer.test", "alice")) as client:
        assert "me_me_get" in {t["name"] for t in await client.list_tools()}
        answer = await client.request_raw("tools/call", {"name": "me_me_get", "arguments": {}})
    assert answer["error"]["code"] == -32600
    assert "called with your own token, and there is none for you" in answer["error"]["message"]
