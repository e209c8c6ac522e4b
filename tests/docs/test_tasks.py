"""``docs/tasks.md``, run: the page's two task tools through the in-memory client in both eras (the task created,
polled, answered, completed, cancelled; as an ordinary call for a client without tasks; refused where the page
says), and each JSON block the page shows being what the server answers (less the ids and times, which
differ every run). Nothing sleeps: the tests wait on the server's change bus, bounded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_pages import DOCS, block, exec_as_file
from tests.support.tasks import BOUND, asking, status, until
from wiremcp import MCPError, MCPServer
from wiremcp.protocol import TASKS_EXTENSION
from wiremcp.transports import Client
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "tasks.md"
CHECKED = {"tasks", "created", "waiting", "update", "completed", "created-2025"}
STATELESS = "2026-07-28"
WITH_TASKS: JSONObject = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
VARYING = {"taskId", "createdAt", "lastUpdatedAt"}
"""What differs every run: the page shows one run's."""


def shown(name: str) -> JSONObject:
    found: JSONObject = json.loads(block(PAGE, name).text)
    return found


def as_shown(answer: JSONObject) -> JSONObject:
    """An answer as the page shows it: without the server's ``_meta``, the varying fields as the page's."""
    return {k: v for k, v in answer.items() if k != "_meta" and k not in VARYING}


def the_page_less_varying(name: str) -> JSONObject:
    return {k: v for k, v in shown(name).items() if k not in VARYING}


def server_of(tmp_path: Path) -> MCPServer:
    found: MCPServer = exec_as_file(PAGE, "tasks", tmp_path / "server.py")["server"]
    return found


async def yes(params: JSONObject) -> JSONObject:
    return {"action": "accept", "content": {"go": True}}


async def no(params: JSONObject) -> JSONObject:
    return {"action": "decline"}


async def test_a_render_task_is_created_polled_answered_and_completed_as_the_page_shows(tmp_path: Path) -> None:
    server = server_of(tmp_path)
    async with Client(server, protocol_version=STATELESS, capabilities=WITH_TASKS) as client:
        discovered = await client.request("server/discover", {})
        created = await client.request("tools/call", {"name": "render", "arguments": {"scene": "intro", "frames": 3}})
        task_id = created["taskId"]
        waiting = await until(client, task_id, asking(1))
        update = shown("update")
        assert set(update) == {"taskId", "inputResponses"}
        acknowledged = await client.request("tasks/update", {**update, "taskId": task_id})
        completed = await until(client, task_id, status("completed", "failed", "cancelled"))
    assert TASKS_EXTENSION in discovered["capabilities"]["extensions"]
    assert set(created) - {"_meta"} == set(shown("created"))
    assert as_shown(created) == the_page_less_varying("created")
    assert set(waiting) - {"_meta"} == set(shown("waiting"))
    assert as_shown(waiting) == the_page_less_varying("waiting")
    assert set(acknowledged) == {"resultType", "_meta"}
    assert set(completed) - {"_meta"} == set(shown("completed"))
    assert as_shown(completed) == the_page_less_varying("completed")


async def test_a_task_tool_without_the_extension_is_an_ordinary_call_or_refused(tmp_path: Path) -> None:
    server = server_of(tmp_path)
    async with Client(server, protocol_version=STATELESS, elicitation=no) as client:
        plain = await client.call_tool("render", {"scene": "intro", "frames": 2})
        with pytest.raises(MCPError) as required:
            await client.call_tool("publish", {"scene": "intro"})
        with pytest.raises(MCPError) as polled:
            await client.request("tasks/get", {"taskId": "x"})
    assert plain["resultType"] == "complete"
    assert plain["content"][0]["text"] == "intro: 2 frames in HD"
    missing: JSONObject = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
    assert (required.value.code, required.value.data) == (-32021, missing)
    assert (polled.value.code, polled.value.data) == (-32021, missing)


async def test_publish_asks_first_then_becomes_a_task_or_answers_as_an_ordinary_call(tmp_path: Path) -> None:
    server = server_of(tmp_path)
    async with Client(server, protocol_version=STATELESS, capabilities=WITH_TASKS, elicitation=yes) as client:
        created = await client.request("tools/call", {"name": "publish", "arguments": {"scene": "intro"}})
        done = await until(client, created["taskId"], status("completed", "failed"))
    assert created["resultType"] == "task"
    assert done["result"]["content"][0]["text"] == "intro published"
    async with Client(server, protocol_version=STATELESS, capabilities=WITH_TASKS, elicitation=no) as client:
        refused = await client.request("tools/call", {"name": "publish", "arguments": {"scene": "intro"}})
    assert refused["resultType"] == "complete"
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "intro was not published"


async def test_cancel_is_acknowledged_and_the_task_ends_cancelled(tmp_path: Path) -> None:
    server = server_of(tmp_path)
    async with Client(server, protocol_version=STATELESS, capabilities=WITH_TASKS) as client:
        created = await client.request("tools/call", {"name": "render", "arguments": {"scene": "intro", "frames": 3}})
        await until(client, created["taskId"], asking(1))
        ack = await client.request("tasks/cancel", {"taskId": created["taskId"]})
        ended = await until(client, created["taskId"], status("cancelled", "completed", "failed"))
        again = await client.request("tasks/cancel", {"taskId": created["taskId"]})
        with pytest.raises(MCPError) as gone:
            await client.request("tasks/result", {"taskId": created["taskId"]})
    assert set(ack) == set(again) == {"resultType", "_meta"}
    assert ended["status"] == "cancelled"
    assert gone.value.code == -32601


async def test_a_2025_11_25_client_asks_for_the_task_and_waits_for_its_result(tmp_path: Path) -> None:
    server = server_of(tmp_path)
    async with Client(server, elicitation=yes) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        created = await client.request("tools/call", {"name": "render", "task": {"ttl": 60000},
                                                      "arguments": {"scene": "intro", "frames": 2},
                                                      "_meta": {"progressToken": "p"}})
        task_id = created["task"]["taskId"]
        result = await asyncio.wait_for(client.request("tasks/result", {"taskId": task_id}), BOUND)
        listed = await client.request("tasks/list", {})
        with pytest.raises(MCPError) as untasked:
            await client.call_tool("publish", {"scene": "intro"})
    assert tools["render"]["execution"] == {"taskSupport": "optional"}
    assert tools["publish"]["execution"] == {"taskSupport": "required"}
    assert set(created) == set(shown("created-2025"))
    assert {k: v for k, v in created["task"].items() if k not in VARYING} == {
        k: v for k, v in shown("created-2025")["task"].items() if k not in VARYING}
    assert result["content"][0]["text"] == "intro: 2 frames in 4K"
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert [t["taskId"] for t in listed["tasks"]] == [task_id]
    assert untasked.value.code == -32601
    progress = [n["params"]["progress"] for n in client.notifications if n["method"] == "notifications/progress"]
    assert progress == [1, 2]


async def test_a_2025_11_25_tool_error_is_a_failed_task(tmp_path: Path) -> None:
    server = server_of(tmp_path)
    async with Client(server, elicitation=no) as client:
        created = await client.request("tools/call", {"name": "publish", "task": {}, "arguments": {"scene": "intro"}})
        result = await asyncio.wait_for(client.request("tasks/result", {"taskId": created["task"]["taskId"]}), BOUND)
        state = await client.request("tasks/get", {"taskId": created["task"]["taskId"]})
    assert result["isError"] is True
    assert state["status"] == "failed"


@pytest.mark.parametrize("version", ["2025-06-18", "2024-11-05"])
async def test_to_older_clients_a_task_tool_is_an_ordinary_tool(version: str, tmp_path: Path) -> None:
    server = server_of(tmp_path)
    async with Client(server, protocol_version=version, elicitation=yes) as client:
        tools = await client.list_tools()
        result = await client.call_tool("publish", {"scene": "intro"})
        capabilities: dict[str, Any] = client.initialize_result["capabilities"] if client.initialize_result else {}
    assert all("execution" not in t for t in tools)
    assert "tasks" not in capabilities
    assert result["content"][0]["text"] == "intro published"
