"""What a user writes, served as a user serves it: a server file in a folder of its own, run with ``wiremcp stdio
path/to/server.py`` (a real process, ``tests.support.stdio``). A bare ``@server.tool`` and ``@server.prompt`` are
served; a duplicate name or a misused decorator stops the process before it serves anything, with one line
naming the file and line (exit status 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.stdio import EXIT_BOUND, Spawn, spawn  # noqa: F401 - spawn: the fixture of the stdio tests

pytestmark = pytest.mark.timeout(60)

SERVED = '''\
from wiremcp import MCPServer

server = MCPServer("notes")


@server.tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.prompt
def review(topic: str) -> str:
    return f"Review {topic}"
'''

DUPLICATE = '''\
from wiremcp import MCPServer

server = MCPServer("notes")


@server.tool
def add(a: int, b: int) -> int:
    return a + b


@server.tool(name="add")
def plus(a: int, b: int) -> int:
    return a + b
'''

BARE_RESOURCE = '''\
from wiremcp import MCPServer

server = MCPServer("notes")


@server.resource
def notes() -> str:
    return ""
'''


async def test_a_bare_tool_and_prompt_in_a_users_file_are_served(tmp_path: Path, spawn: Spawn) -> None:  # noqa: F811
    path = tmp_path / "notes.py"
    path.write_text(SERVED)
    process = await spawn(str(path))
    await process.initialize()
    await process.request(1, "tools/list")
    tools = (await process.response(1))["result"]["tools"]
    assert [(t["name"], t["description"]) for t in tools] == [("add", "Add two numbers.")]
    await process.call_tool(2, "add", {"a": 2, "b": 3})
    assert (await process.response(2))["result"]["structuredContent"] == {"result": 5}
    await process.request(3, "prompts/get", {"name": "review", "arguments": {"topic": "wiremcp"}})
    messages = (await process.response(3))["result"]["messages"]
    assert messages == [{"role": "user", "content": {"type": "text", "text": "Review wiremcp"}}]


@pytest.mark.parametrize(("source", "says"), [
    (DUPLICATE, "{path}:11: tool add is already defined at {path}:6; give one another name, or pass replace=True "
                "to replace it"),
    (BARE_RESOURCE, '{path}:6: resource notes: a resource needs its URI, as in @server.resource("notes://{{name}}")'),
])
async def test_a_duplicate_or_a_misuse_stops_the_server_with_one_line_naming_the_file_and_line(
        tmp_path: Path, spawn: Spawn, source: str, says: str) -> None:  # noqa: F811
    path = tmp_path / "notes.py"
    path.write_text(source)
    process = await spawn(str(path))
    assert await process.wait_exit(EXIT_BOUND) == 2
    stderr = await process.stderr_to_eof()
    assert stderr.strip().splitlines() == ["wiremcp: error: " + says.format(path=path)], stderr
