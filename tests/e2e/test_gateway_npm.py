"""A gateway in front of the reference servers from npm, each a remote child: ``@modelcontextprotocol/server-everything``
launched on stdio and in its Streamable HTTP mode, ``server-memory`` and ``server-filesystem`` on stdio. Their
tools, resources, templates, prompts and completions are served under prefixes, and what they send about a call
(progress, log messages, elicitation, sampling) reaches the caller in the caller's era."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.http import START_BOUND, _wait_until_accepting, free_port, stop_process
from tests.support.node import node_bin, node_env, npx
from wiremcp import MCPServer
from wiremcp.transports import Client, remote
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(180)

VERSION = "2026.8.31"
"""The reference servers' release the tests pin."""


@pytest.fixture(scope="module")
def node() -> Path:
    return node_bin("the reference servers from npm")


def package(node: Path, name: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The command that runs the reference server ``name`` with ``args``, and the environment it needs."""
    return [npx(node), "-y", f"@modelcontextprotocol/{name}@{VERSION}", *args], {"PATH": node_env(node)["PATH"]}


@pytest.fixture(scope="module")
def everything_http(node: Path) -> Iterator[str]:
    """server-everything in its Streamable HTTP mode, on a free port."""
    command, _ = package(node, "server-everything", "streamableHttp")
    port = free_port()
    process = subprocess.Popen(command, env={**node_env(node), "PORT": str(port)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        assert _wait_until_accepting(process, "127.0.0.1", port, time.monotonic() + START_BOUND * 6)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


class Caller:
    """What the gateway's caller answers when asked, and keeps of what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, JSONObject]] = []

    async def elicit(self, params: JSONObject) -> JSONObject:
        self.asked.append(("elicitation", params))
        properties = params.get("requestedSchema", {}).get("properties", {})
        return {"action": "accept", "content": {name: _sample(prop) for name, prop in properties.items()
                                                if name in params.get("requestedSchema", {}).get("required", [])}}

    async def sample(self, params: JSONObject) -> JSONObject:
        self.asked.append(("sampling", params))
        return {"role": "assistant", "content": {"type": "text", "text": "a sampled answer"}, "model": "test-model"}

    async def roots(self, params: JSONObject) -> JSONObject:
        self.asked.append(("roots", params))
        return {"roots": [{"uri": "file:///work/caller", "name": "the caller's"}]}


def _sample(prop: Any) -> Any:
    kind = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(prop, dict) and prop.get("enum"):
        return prop["enum"][0]
    return {"string": "x", "number": 1, "integer": 1, "boolean": True}.get(str(kind), "x")


def text(result: JSONObject) -> str:
    return "\n".join(block["text"] for block in result["content"] if block.get("type") == "text")


@pytest.mark.parametrize("caller_era", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("over", ["stdio", "http"])
async def test_server_everything_through_the_gateway(node: Path, everything_http: str, over: str,
                                                     caller_era: str) -> None:
    if over == "stdio":
        command, env = package(node, "server-everything", "stdio")
        child = remote(command=command, env=env, name="everything")
    else:
        child = remote(everything_http, name="everything")
    gateway = MCPServer("gateway")
    gateway.mount(child, prefix="ev")
    caller = Caller()
    capabilities: JSONObject = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
    async with Client(gateway, protocol_version=caller_era, capabilities=capabilities, elicitation=caller.elicit,
                      sampling=caller.sample, roots=caller.roots, log_level="debug") as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        assert {"ev_echo", "ev_get-sum", "ev_trigger-long-running-operation", "ev_trigger-elicitation-request",
                "ev_trigger-sampling-request", "ev_get-roots-list"} <= set(tools)
        assert text(await client.call_tool("ev_echo", {"message": "through"})) == "Echo: through"
        summed = await client.call_tool("ev_get-sum", {"a": 2, "b": 3})
        assert "5" in text(summed)
        invalid = await client.call_tool("ev_get-sum", {"a": "two"})
        assert invalid["isError"] is True  # the gateway checks the upstream's own schema

        progressed = await client.call_tool("ev_trigger-long-running-operation", {"duration": 0.2, "steps": 2},
                                            progress_token="op")
        assert not progressed.get("isError"), progressed
        progress = [n["params"] for n in client.notifications if n["method"] == "notifications/progress"]
        assert [p["progress"] for p in progress] == [1, 2]
        assert {p["progressToken"] for p in progress} == {"op"}

        elicited = await client.call_tool("ev_trigger-elicitation-request", {})
        sampled = await client.call_tool("ev_trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 20})
        rooted = await client.call_tool("ev_get-roots-list", {})
        asked = [kind for kind, _ in caller.asked]
        assert asked[:2] == ["elicitation", "sampling"]
        assert not elicited.get("isError"), elicited
        assert "a sampled answer" in text(sampled)
        # It lists the roots it asked for after the handshake: asked while no call was in flight, they are
        # nobody's (the gateway's session upstream is every caller's), so none; asked during this call, they are
        # this caller's. Which of the two happens is the upstream's timing.
        if asked[2:] == ["roots"]:
            assert "file:///work/caller" in text(rooted)
        else:
            assert asked[2:] == []
            assert "no roots are currently configured" in text(rooted)

        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        assert resources
        assert all(r["uri"].startswith("demo://ev/") for r in resources), resources[:2]
        first = resources[0]
        read = await client.read_resource(first["uri"])
        assert read["contents"][0]["uri"] == first["uri"]
        assert templates

        prompts = {prompt["name"]: prompt for prompt in await client.list_prompts()}
        got = await client.get_prompt("ev_args-prompt", {"city": "Oslo"})
        assert "Oslo" in json.dumps(got["messages"])
        assert "ev_completable-prompt" in prompts
        completed = await client.complete({"type": "ref/prompt", "name": "ev_completable-prompt"}, "department", "E")
        assert completed["completion"]["values"]


async def test_server_memory_and_server_filesystem_behind_one_gateway(node: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("kept on disk\n")
    memory, memory_env = package(node, "server-memory")
    filesystem, filesystem_env = package(node, "server-filesystem", str(tmp_path))
    gateway = MCPServer("gateway")
    gateway.mount(remote(command=memory, env={**memory_env, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}),
                  prefix="memory")
    gateway.mount(remote(command=filesystem, env=filesystem_env), prefix="fs")
    async with Client(gateway) as client:
        names = {tool["name"] for tool in await client.list_tools()}
        assert {"memory_create_entities", "memory_read_graph", "fs_read_text_file", "fs_list_directory"} <= names
        created = await client.call_tool("memory_create_entities", {"entities": [
            {"name": "wiremcp", "entityType": "project", "observations": ["serves MCP"]}]})
        assert not created.get("isError"), created
        graph = await client.call_tool("memory_read_graph", {})
        assert "serves MCP" in json.dumps(graph)
        read = await client.call_tool("fs_read_text_file", {"path": str(tmp_path / "notes.txt")})
        assert text(read).strip() == "kept on disk"
        outside = await client.call_tool("fs_read_text_file", {"path": "/etc/hostname"})
        assert outside["isError"] is True  # the upstream's own refusal, as it gave it
