"""``docs/rate-limits.md``, run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, exec_as_file, headings
from wiremcp import MCPError
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "rate-limits.md"
CHECKED = {"rate-limits"}



def test_the_rate_limits_page_is_found_by_its_words() -> None:
    """A reader searching the site for "rate limit" finds this page: its title and its text say it."""
    text = PAGE.read_text()
    assert headings(text)[0] == (1, "Rate limits")
    assert "rate limit" in text

async def test_the_rate_limits_page_refuses_the_sixth_reindex_with_retry_after(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "rate-limits", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        for _ in range(5):
            await client.call_tool("reindex")
        with pytest.raises(MCPError) as refused:
            await client.call_tool("reindex")
    assert refused.value.code == -32023
    assert 0 < refused.value.data["retryAfterMs"] <= 60_000
