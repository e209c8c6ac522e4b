"""What the examples of middleware, rate limits and composition must do, wherever a reader finds them (the
README and the documentation site show the same examples): each check exercises the example's server with
the in-memory ``Client`` and asserts what the text around it promises."""

from __future__ import annotations

import json

import pytest

from wiremcp import MCPError, MCPServer
from wiremcp.transports import Client


async def check_middleware_example(server: MCPServer, caplog: pytest.LogCaptureFixture) -> None:
    """The draft status is rewritten to open, the tool list is filtered, and every request is audited."""
    caplog.set_level("INFO", logger="wiremcp.audit")
    async with Client(server) as client:
        drafted = await client.call_tool("orders", {"status": "draft"})
        assert [t["name"] for t in await client.list_tools()] == ["orders"]
    assert drafted["structuredContent"] == {"result": ["order-1 (open)"]}
    audited = [json.loads(r.getMessage()) for r in caplog.records if r.name == "wiremcp.audit"]
    assert [(line["method"], line["component"], line["outcome"]) for line in audited] == [
        ("initialize", None, "ok"), ("tools/call", "orders", "ok"), ("tools/list", None, "ok")]


async def check_rate_limits_example(server: MCPServer) -> None:
    """The sixth ``reindex`` within a minute is refused with -32023 and the time to wait."""
    async with Client(server) as client:
        for _ in range(5):
            await client.call_tool("reindex")
        with pytest.raises(MCPError) as refused:
            await client.call_tool("reindex")
    assert refused.value.code == -32023
    assert 0 < refused.value.data["retryAfterMs"] <= 60_000


async def check_mount_example(server: MCPServer) -> None:
    """The mounted child's tool and resource are served under its prefix."""
    async with Client(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["weather_forecast"]
        called = await client.call_tool("weather_forecast", {"city": "Oslo"})
        read = await client.read_resource("weather://weather/cities/Oslo")
    assert called["content"][0]["text"] == "Sunny in Oslo"
    assert read["contents"][0]["text"] == "Oslo: temperate"
