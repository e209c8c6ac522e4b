"""A gateway in a real process (``uvicorn app:asgi`` serving ``examples/gateway.py``): the remote child launched
once, its tool served beside the gateway's own, its health in ``/readyz`` and its requests in ``/metrics``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.docs_pages import STATELESS_META
from tests.support.http import ACCEPT_BOTH, UvicornProcess, run_uvicorn

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def gateway() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples/gateway.py") as process:
        yield process


def call(process: UvicornProcess, name: str, arguments: dict[str, object]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": STATELESS_META}}
    return httpx.post(process.url, json=body, timeout=10, headers={
        "Accept": ACCEPT_BOTH, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name})


def test_the_gateway_serves_the_childs_tool_beside_its_own_and_reports_the_upstream(gateway: UvicornProcess) -> None:
    counted = call(gateway, "wc_word_count", {"text": "one policy in front"})
    own = call(gateway, "shout", {"text": "hi"})
    assert counted.json()["result"]["structuredContent"] == {"words": 4, "chars": 19}
    assert own.json()["result"]["content"][0]["text"] == "HI"

    ready = httpx.get(f"{gateway.base_url}/readyz", timeout=10)
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "upstreams": {"word-count": {
        "status": "connected", "protocolVersion": "2026-07-28", "connections": 1}}}

    metrics = httpx.get(f"{gateway.base_url}/metrics", timeout=10).text
    assert 'wiremcp_upstream_up{upstream="word-count"} 1.0' in metrics
    assert 'wiremcp_upstream_connections_total{upstream="word-count"} 1.0' in metrics
    assert 'wiremcp_upstream_requests_total{method="tools/call",outcome="ok",upstream="word-count"} 1.0' in metrics
