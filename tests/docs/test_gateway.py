"""``docs/gateway.md``, run: the gateway of the page with server-memory from npm and an HTTP upstream that is not
there, ``wiremcp http -- COMMAND`` serving the word counter, and ``wiremcp bridge`` onto it as the page types
them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.docs_pages import DOCS, ENV, accepting, background, block, exec_as_file
from tests.support.http import free_port
from tests.support.node import node_bin, node_env
from wiremcp.mount import mounted_first
from wiremcp.principal import Principal
from wiremcp.transports import Client
from wiremcp.transports.gateway import is_remote, readiness_details

pytestmark = pytest.mark.timeout(180)

PAGE = DOCS / "gateway.md"
CHECKED = {"gateway", "readyz", "http-command", "bridge", "host-entry", "views", "caller-token"}


async def test_the_gateway_serves_its_upstreams_tools_beside_its_own_and_reports_the_one_that_is_down(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = node_bin("server-memory from npm")
    monkeypatch.setenv("PATH", node_env(node)["PATH"])
    monkeypatch.setenv("MEMORY_FILE_PATH", str(tmp_path / "memory.jsonl"))
    server = exec_as_file(PAGE, "gateway", tmp_path / "gateway.py")["server"]
    async with Client(server) as client:
        names = {tool["name"] for tool in await client.list_tools()}
        assert {"memory_create_entities", "memory_read_graph", "whoami"} <= names
        assert (await client.call_tool("whoami"))["content"][0]["text"] == "the gateway"
        graph = await client.call_tool("memory_read_graph", {})
        assert not graph.get("isError"), graph
        details = readiness_details(server)
        assert details is not None
        upstreams = details["upstreams"]()
        assert isinstance(upstreams, dict)
    assert upstreams["notes"] == {"status": "down", "reason": "Failed", "connections": 0}
    assert upstreams["npx -y @modelcontextprotocol/server-memory"]["status"] == "connected"
    shown = json.loads(block(PAGE, "readyz").text)
    assert shown["upstreams"]["notes"] == upstreams["notes"]
    assert shown["upstreams"]["npx -y @modelcontextprotocol/server-memory"].keys() == \
        upstreams["npx -y @modelcontextprotocol/server-memory"].keys()


async def test_each_team_sees_the_tools_of_its_view(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "views", tmp_path / "gateway.py")["server"]

    async def tools(scopes: frozenset[str] = frozenset(), groups: list[str] | None = None) -> set[str]:
        claims = {"groups": groups} if groups is not None else {}
        principal = Principal("https://issuer.test", "someone", scopes=scopes, claims=claims)
        async with Client(server, principal=principal) as client:
            return {tool["name"] for tool in await client.list_tools()}

    writers, lab, nobody = await tools(frozenset({"team:writers"})), await tools(groups=["lab"]), await tools()
    assert writers == {"words_word_count"}
    assert {"words_word_count", "lab_greet"} <= lab
    assert nobody == lab  # no view names them: the whole catalog


def test_the_caller_token_example_defines_a_gateway_that_calls_with_the_users_token(tmp_path: Path) -> None:
    """Defined only: serving it would call GitHub (``tests/transports/test_upstream_callers.py`` serves
    ``caller_token`` against a local upstream)."""
    server = exec_as_file(PAGE, "caller-token", tmp_path / "gateway.py")["server"]
    assert [is_remote(served) for served in mounted_first(server)] == [True, False]  # the child, then the gateway


def test_the_host_entry_launches_the_bridge() -> None:
    (entry,) = json.loads(block(PAGE, "host-entry").text)["mcpServers"].values()
    assert entry["command"] == "wiremcp"
    assert entry["args"][0] == "bridge"


def test_a_stdio_server_served_over_http_and_bridged_back_onto_stdio() -> None:
    port = free_port()
    serve = block(PAGE, "http-command").text.strip().replace("8000", str(port))
    with background(serve) as process:
        accepting(process, port)
        line = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "word_count", "arguments": {"text": "over the bridge"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}
        bridge = block(PAGE, "bridge").text.strip().replace("8000", str(port))
        done = subprocess.run(["bash", "-c", bridge], env={**ENV, "TOKEN": "not-checked-here"},
                              input=json.dumps(line) + "\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["result"]["structuredContent"] == {"words": 3, "chars": 15}
