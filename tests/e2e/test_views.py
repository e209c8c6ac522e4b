"""Views in a real process (``uvicorn app:asgi`` serving ``tests/support/views_server.py``, a gateway with a remote
child) behind static bearer tokens: each token's scopes choose the catalog its caller lists and may call; a token
no view names gets the whole catalog, and no token is refused as before (401)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.docs_pages import STATELESS_META
from tests.support.http import ACCEPT_BOTH, UvicornProcess, run_uvicorn

pytestmark = pytest.mark.timeout(60)

TOKENS = "writer-token=writer:team:writers,ops-token=ops:team:ops,other-token=other:reports"


@pytest.fixture(scope="module")
def gateway() -> Iterator[UvicornProcess]:
    with run_uvicorn("tests.support.views_server:server", {"WIREMCP_AUTH_STATIC_TOKENS": TOKENS}) as process:
        yield process


def post(process: UvicornProcess, token: str | None, method: str, params: dict[str, Any]) -> httpx.Response:
    headers = {"Accept": ACCEPT_BOTH, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = str(params["name"])
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": STATELESS_META}}
    return httpx.post(process.url, json=body, headers=headers, timeout=10)


def names(process: UvicornProcess, token: str) -> list[str]:
    listed = post(process, token, "tools/list", {})
    assert listed.status_code == 200, listed.text
    return sorted(tool["name"] for tool in listed.json()["result"]["tools"])


def test_each_tokens_scopes_choose_its_catalog(gateway: UvicornProcess) -> None:
    assert names(gateway, "writer-token") == ["wc_word_count"]
    assert names(gateway, "ops-token") == ["shout"]
    assert names(gateway, "other-token") == ["shout", "wc_word_count"]  # no view is theirs


def test_a_tool_outside_the_callers_view_is_unknown_to_it(gateway: UvicornProcess) -> None:
    counted = post(gateway, "writer-token", "tools/call", {"name": "wc_word_count", "arguments": {"text": "a b"}})
    hidden = post(gateway, "writer-token", "tools/call", {"name": "shout", "arguments": {"text": "hi"}})
    assert counted.json()["result"]["structuredContent"] == {"words": 2, "chars": 3}
    assert hidden.json()["error"]["code"] == -32602
    assert hidden.json()["error"]["message"] == "Unknown tool: shout"
    assert post(gateway, None, "tools/list", {}).status_code == 401
