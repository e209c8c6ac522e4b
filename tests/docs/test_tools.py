"""``docs/tools.md``, run: each server block saved as the reader's ``server.py`` and exercised with the in-memory
``Client``; the JSON the page shows is what the client gets."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.docs_pages import DOCS, STATELESS_META, block, exec_as_file, stops_as_shown
from tests.support.http import ACCEPT_BOTH, serve_in_process
from wiremcp import MCPError
from wiremcp import threads as threads_module
from wiremcp.threads import SyncFunction
from wiremcp.transports import Client, MCPHttpApp

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "tools.md"
CHECKED = {"tools", "tools-listed", "tools-called", "tools-invalid", "sync-and-async", "held-the-loop", "input-schema",
           "results",
           "results-wire", "duplicate", "duplicate-error", "runtime", "param-header"}


def shown(name: str) -> object:
    """The JSON a block of the page shows."""
    return json.loads(block(PAGE, name).text)


async def test_the_example_lists_and_answers_as_the_page_shows(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "tools", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        (listed,) = await client.list_tools()
        called = await client.call_tool("stock", {"sku": "ABC-1"})
        invalid = await client.call_tool("stock", {"sku": "abc"})
        unknown_item = await client.call_tool("stock", {"sku": "QQQ-1"})
        missing = await client.call_tool("stock", {})
        with pytest.raises(MCPError) as unknown_tool:
            await client.call_tool("stocks", {"sku": "ABC-1"})
    assert listed == shown("tools-listed")
    assert called == shown("tools-called")
    assert invalid == shown("tools-invalid")
    assert unknown_item == {"content": [{"type": "text", "text": "no item QQQ-1"}], "isError": True}
    assert missing["isError"] is True
    assert missing["content"][0]["text"] == "Invalid arguments for tool stock: sku: Field required"
    assert (unknown_tool.value.code, unknown_tool.value.message) == (-32602, "Unknown tool: stocks")


async def test_a_sync_tool_reads_a_file_and_an_async_one_awaits(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "sync-and-async", tmp_path / "server.py")["server"]
    data = tmp_path / "data.bin"
    data.write_bytes(b"read the wire")
    threads: dict[str, threading.Thread] = {}
    for name in ("word_count", "checksum"):  # where each runs: as the page says

        def noted(*args: Any, name: str = name, fn: Any = server.tools[name]._fn, **kwargs: Any) -> Any:
            threads[name] = threading.current_thread()
            return fn(*args, **kwargs)

        sync = server.tools[name]._sync
        assert sync is not None
        server.tools[name]._fn = sync.fn = noted
    async with Client(server) as client:
        counted = await client.call_tool("word_count", {"text": "read the wire"})
        checksum = await client.call_tool("checksum", {"path": str(data)})
        paused = await client.call_tool("pause", {"seconds": 0})
        by_default = await client.call_tool("pause")
    assert threads["word_count"] is threading.current_thread()
    assert threads["checksum"] is not threading.current_thread()
    assert counted["structuredContent"] == {"result": 3}
    assert checksum == {"content": [{"type": "text", "text": hashlib.sha256(b"read the wire").hexdigest()}]}
    assert paused["content"] == [{"type": "text", "text": "waited 0.0s"}]
    assert by_default["content"] == [{"type": "text", "text": "waited 0.1s"}]


async def test_a_sync_tool_that_holds_the_loop_is_moved_to_a_worker_with_the_warning_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    server = exec_as_file(PAGE, "sync-and-async", tmp_path / "server.py")["server"]
    server.tools["checksum"]._sync = SyncFunction(server.tools["checksum"]._fn, None, "tool 'checksum'")  # unmarked
    data = tmp_path / "data.bin"
    data.write_bytes(b"read the wire")
    monkeypatch.setattr(threads_module, "HOLD_LIMIT", -1.0)  # any call holds the loop too long
    with caplog.at_level("WARNING", "wiremcp.threads"):
        async with Client(server) as client:
            await client.call_tool("checksum", {"path": str(data)})
            await client.call_tool("checksum", {"path": str(data)})
    (said,) = [r.getMessage() for r in caplog.records if r.name == "wiremcp.threads"]
    assert re.sub(r"for \d+ ms", "for 35 ms", said) == block(PAGE, "held-the-loop").text.strip()
    moved = server.tools["checksum"]._sync
    assert moved is not None
    assert moved.blocking


async def test_the_hand_written_schema_is_served_as_written_and_enforced(tmp_path: Path) -> None:
    namespace = exec_as_file(PAGE, "input-schema", tmp_path / "server.py")
    async with Client(namespace["server"]) as client:
        (listed,) = await client.list_tools()
        found = await client.call_tool("search", {"q": "lamp", "limit": 2})
        empty = await client.call_tool("search", {"q": ""})
        too_many = await client.call_tool("search", {"q": "lamp", "limit": 99})
        extra = await client.call_tool("search", {"q": "lamp", "sort": "price"})
    assert listed["inputSchema"] == namespace["QUERY"]
    assert found["structuredContent"] == {"result": ["lamp #1", "lamp #2"]}
    assert empty == {"content": [{"type": "text", "text": "Invalid arguments for tool search: q: '' should be "
                                                         "non-empty"}], "isError": True}
    assert too_many["isError"] is True
    assert too_many["content"][0]["text"] == "Invalid arguments for tool search: limit: 99 is greater than the maximum of 50"
    assert extra["isError"] is True
    assert "'sort' was unexpected" in extra["content"][0]["text"]


async def test_each_kind_of_result_is_what_the_page_shows(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "results", tmp_path / "server.py")["server"]
    arguments: dict[str, dict[str, Any]] = {"price": {"sku": "ABC-1"}, "total": {"amounts": [2.5, 9.5]}, "photo": {"sku": "ABC-1"},
                 "manuals": {"sku": "ABC-1"}, "restock": {"sku": "ABC-1", "count": 3}}
    got: dict[str, dict[str, object]] = {}
    async with Client(server) as client:
        for tool in await client.list_tools():
            got[tool["name"]] = {"outputSchema": tool["outputSchema"]} if "outputSchema" in tool else {}
        for name, given in arguments.items():
            got[name]["result"] = await client.call_tool(name, given)
    assert got == shown("results-wire")


def test_a_duplicate_tool_stops_the_server_with_the_line_the_page_shows(tmp_path: Path) -> None:
    stops_as_shown(PAGE, "duplicate", "duplicate-error", tmp_path, "/home/me/math")


async def test_tools_added_and_removed_at_runtime_are_announced(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "runtime", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["beta"]
        assert (await client.call_tool("beta", {"on": True}))["content"][0]["text"] == "beta on"
        await client.wait_for_notification("notifications/tools/list_changed")
        assert [t["name"] for t in await client.list_tools()] == ["beta", "beta_report"]
        report = await client.call_tool("beta_report", {"week": 3})
        await client.call_tool("beta", {"on": True})  # again: replaced, not refused
        await client.call_tool("beta", {"on": False})
        await client.wait_for_notification("notifications/tools/list_changed", 3)
        assert [t["name"] for t in await client.list_tools()] == ["beta"]
    assert client.initialize_result is not None
    assert client.initialize_result["capabilities"]["tools"] == {"listChanged": True}
    assert report["content"] == [{"type": "text", "text": "the report of week 3"}]
    assert len([n for n in client.notifications if n["method"] == "notifications/tools/list_changed"]) == 3


async def test_a_header_parameter_is_published_and_checked_against_the_body(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "param-header", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        (listed,) = await client.list_tools()
    assert listed["inputSchema"]["properties"]["region"] == {"type": "string", "x-mcp-header": "Region"}

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "forecast", "arguments": {"region": "eu", "city": "Oslo"}, "_meta": STATELESS_META}}
    headers = {"accept": ACCEPT_BOTH, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
               "mcp-name": "forecast"}
    async with serve_in_process(MCPHttpApp(server)) as base, httpx.AsyncClient(base_url=base) as http:
        matching = await http.post("/mcp", json=body, headers={**headers, "mcp-param-region": "eu"})
        other = await http.post("/mcp", json=body, headers={**headers, "mcp-param-region": "us"})
        missing = await http.post("/mcp", json=body, headers=headers)
    assert matching.status_code == 200, matching.text
    assert matching.json()["result"]["content"] == [{"type": "text", "text": "Sunny in Oslo (eu)"}]
    for refused in (other, missing):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == -32020
