"""``docs/middleware.md``, run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, exec_as_file
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "middleware.md"
CHECKED = {"middleware"}


async def test_the_middleware_page_rewrites_filters_and_logs(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    server = exec_as_file(PAGE, "middleware", tmp_path / "server.py")["server"]
    caplog.set_level("INFO", logger="wiremcp.audit")
    async with Client(server) as client:
        drafted = await client.call_tool("orders", {"status": "draft"})
        assert [t["name"] for t in await client.list_tools()] == ["orders"]
    assert drafted["structuredContent"] == {"result": ["order-1 (open)"]}
    audited = [json.loads(r.getMessage()) for r in caplog.records if r.name == "wiremcp.audit"]
    assert [(line["method"], line["component"], line["outcome"]) for line in audited] == [
        ("initialize", None, "ok"), ("tools/call", "orders", "ok"), ("tools/list", None, "ok")]
