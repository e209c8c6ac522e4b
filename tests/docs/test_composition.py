"""``docs/composition.md``, run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, exec_as_file
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "composition.md"
CHECKED = {"mount"}


async def test_the_composition_page_serves_the_child_under_its_prefix(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "mount", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["weather_forecast"]
        called = await client.call_tool("weather_forecast", {"city": "Oslo"})
        read = await client.read_resource("weather://weather/cities/Oslo")
    assert called["content"][0]["text"] == "Sunny in Oslo"
    assert read["contents"][0]["text"] == "Oslo: temperate"
