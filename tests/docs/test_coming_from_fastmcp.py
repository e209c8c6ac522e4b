"""``docs/coming-from-fastmcp.md``, run: each of our blocks saved as the reader's ``server.py`` and exercised."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.docs_pages import (
    DOCS,
    ENV,
    STATELESS_META,
    answered_on_a_free_port,
    block,
    exec_as_file,
    notifications,
)
from tests.support.http import ACCEPT_BOTH, START_BOUND, serve_in_process
from tests.support.users_project import run_pytest
from wiremcp import MCPError, Principal
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "coming-from-fastmcp.md"
CHECKED = {"quickstart", "context", "resources", "prompts", "run-http", "testing", "mount", "auth", "middleware"}



def test_python_server_py_serves_http_as_the_block_says(tmp_path: Path) -> None:
    """The block saved as server.py and run as ``python server.py``: its ``__main__`` serves HTTP (the fixed port
    replaced by a free one)."""
    text = block(PAGE, "run-http").text
    run_line = 'server.run(transport="http", host="127.0.0.1", port=8000)'
    assert run_line in text

    def saved_on(port: int) -> list[str]:
        (tmp_path / "server.py").write_text(text.replace(run_line, run_line.replace("port=8000", f"port={port}")))
        return [sys.executable, "server.py"]

    result = answered_on_a_free_port(saved_on, tmp_path, "add", {"a": 2, "b": 3})
    assert result["result"]["content"][0]["text"] == '{"result":5}', result

async def test_the_quickstart_adds(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "quickstart", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        (tool,) = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})
    assert tool["description"] == "Add two numbers."
    assert result == {"content": [{"type": "text", "text": '{"result":3}'}], "structuredContent": {"result": 3}}


async def test_the_context_example_logs_reports_progress_and_fails_with_its_words(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "context", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        done = await client.call_tool("check", {"paths": ["a.txt", "b.txt"]}, progress_token="t")
        failed = await client.call_tool("check", {"paths": ["a.txt", "b.md"]})
    assert done["structuredContent"] == {"result": 2}
    assert notifications(client, "notifications/message")[0] == {"level": "info", "data": "checking 2 paths",
                                                            "logger": "files"}
    assert [(p["progress"], p["total"]) for p in notifications(client, "notifications/progress")] == [(1, 2), (2, 2)]
    assert failed == {"content": [{"type": "text", "text": "b.md is not a text file"}], "isError": True}


async def test_the_resources_example_reads_a_resource_and_its_templates(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "resources", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        config = await client.read_resource("config://app")
        profile = await client.read_resource("users://7/profile")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("users://8/profile")
        file = await client.read_resource("files://notes/today.txt")
        templates = [t["uriTemplate"] for t in await client.list_resource_templates()]
    assert config["contents"] == [{"uri": "config://app", "mimeType": "application/json", "text": '{"theme":"dark"}'}]
    assert json.loads(profile["contents"][0]["text"]) == {"id": 7, "name": "Ada"}
    assert unknown.value.code == -32002
    assert file["contents"][0]["text"] == "the text of notes/today.txt"
    assert templates == ["users://{user_id}/profile", "files://{+path}"]


async def test_the_prompts_example_gets_a_string_andnotifications(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "prompts", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        prompts = {p["name"]: p for p in await client.list_prompts()}
        review = await client.get_prompt("review", {"code": "x = 1"})
        debug = await client.get_prompt("debug", {"error": "KeyError"})
    assert [a["required"] for a in prompts["review"]["arguments"]] == [True, False]
    assert review["messages"] == [{"role": "user", "content": {
        "type": "text", "text": "Review this code, in a kind tone:\n\nx = 1"}}]
    assert [(m["role"], m["content"]["text"]) for m in debug["messages"]] == [
        ("user", "I get this error: KeyError"), ("assistant", "What did you run before it?")]


def test_python_server_py_serves_the_quickstart_on_stdio(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(block(PAGE, "quickstart").text)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": STATELESS_META}}
    done = subprocess.run([sys.executable, "server.py"], cwd=tmp_path, env=ENV, input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=START_BOUND)
    assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": 3}, done.stderr


def test_the_testing_example_passes_with_the_quickstart_as_server_py(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"server.py": block(PAGE, "quickstart").text,
                                "test_server.py": block(PAGE, "testing").text,
                                "pyproject.toml": block(DOCS / "getting-started.md", "testing-config").text},
                     ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout


async def test_the_mount_example_serves_the_child_under_its_namespace(tmp_path: Path) -> None:
    main = exec_as_file(PAGE, "mount", tmp_path / "server.py")["main"]
    async with Client(main) as client:
        tools = [t["name"] for t in await client.list_tools()]
        forecast = await client.call_tool("weather_get_forecast", {"city": "Oslo"})
        cities = await client.read_resource("data://weather/cities")
    assert tools == ["weather_get_forecast"]
    assert forecast["content"][0]["text"] == "Sunny in Oslo"
    assert json.loads(cities["contents"][0]["text"]) == {"cities": ["London", "Paris", "Tokyo"]}


async def test_the_auth_example_needs_its_scope_names_the_caller_and_guards_http(tmp_path: Path) -> None:
    namespace = exec_as_file(PAGE, "auth", tmp_path / "server.py")
    server = namespace["server"]
    alice = Principal("static", "alice", scopes=frozenset({"notes:write"}))
    async with Client(server, principal=alice) as client:
        saved = await client.call_tool("add_note", {"text": "hi"})
    async with Client(server, principal=Principal("static", "bob")) as client:
        assert await client.list_tools() == []  # lists leave out what the caller may not use
        with pytest.raises(MCPError) as refused:
            await client.call_tool("add_note", {"text": "hi"})
    async with Client(server) as client:  # no authentication, as on stdio
        local = await client.call_tool("add_note", {"text": "hi"})
    assert saved["content"][0]["text"] == "saved for alice: hi"
    assert refused.value.data == {"requiredScopes": ["notes:write"]}
    assert local["content"][0]["text"] == "saved for a local user: hi"

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "docs", "version": "0"}}}
    async with serve_in_process(namespace["app"]) as base, httpx.AsyncClient(base_url=base) as http:
        anonymous = await http.post("/mcp", json=initialize, headers={"accept": ACCEPT_BOTH})
        with_token = await http.post("/mcp", json=initialize, headers={"accept": ACCEPT_BOTH,
                                                                        "authorization": "Bearer dev-token"})
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer ")
    assert with_token.status_code == 200, with_token.text
    assert with_token.json()["result"]["serverInfo"]["name"] == "notes"


async def test_the_middleware_example_records_calls_and_refuses_one(tmp_path: Path) -> None:
    namespace = exec_as_file(PAGE, "middleware", tmp_path / "server.py")
    async with Client(namespace["server"]) as client:
        await client.list_tools()
        added = await client.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("secrets")
    assert added["structuredContent"] == {"result": 2}
    assert namespace["calls"] == ["add", "secrets"]
    assert (refused.value.code, refused.value.message) == (-32602, "the secrets tool is not served here")
