"""``wiremcp.server``: ``MCPServer``, the definition API: who the server says it is, what its decorators
register, the capabilities it declares (only what is there, kept up to date), the change events every
definition change publishes, and its observers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from wiremcp import MCPServer
from wiremcp.prompts import Prompt
from wiremcp.resources import Resource
from wiremcp.tools import Tool
from wiremcp.types import JSONObject

BOUND = 10.0
"""Failure bound for a read; nothing waits for it."""


def _noop() -> None:
    return None


async def take(events: AsyncIterator[JSONObject], count: int) -> list[str]:
    return [(await asyncio.wait_for(anext(events), BOUND))["method"] for _ in range(count)]


# -- identity and options ---------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/basic/lifecycle#initialization")
def test_the_server_info_has_only_the_fields_given() -> None:
    assert MCPServer("bare").info() == {"name": "bare", "version": "0.1.0"}
    icons = [{"src": "https://example.com/icon.png"}]
    full = MCPServer("full", "2.0", title="Full", description="Does it all", icons=icons,
                     website_url="https://example.com")
    assert full.info() == {"name": "full", "version": "2.0", "title": "Full", "description": "Does it all",
                           "icons": icons, "websiteUrl": "https://example.com"}
    assert full.identity() == {"name": "full", "version": "2.0", "title": "Full"}
    assert MCPServer("bare").identity() == {"name": "bare", "version": "0.1.0"}


@pytest.mark.parametrize("options", [{"page_size": 0}, {"cache_ttl_ms": -1}, {"cache_scope": "shared"}])
def test_impossible_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        MCPServer("bad", **options)


# -- what the decorators register --------------------------------------------------------------------------------


def test_the_decorators_register_and_return_the_function_itself() -> None:
    server = MCPServer("s")

    def add(a: int, b: int) -> int:
        return a + b

    def readme() -> str:
        return "read me"

    def item(id: str) -> str:
        return id

    def greet(name: str) -> str:
        return f"Hello {name}"

    def names(value: str, arguments: dict[str, str]) -> list[str]:
        return []

    assert server.tool(title="Add")(add) is add
    assert server.resource("file:///readme.txt")(readme) is readme
    assert server.resource("test://item/{id}")(item) is item
    assert server.prompt("hello")(greet) is greet
    assert server.completion(prompt="hello", argument="name")(names) is names
    assert list(server.tools) == ["add"]
    assert server.tools["add"].title == "Add"
    assert list(server.resources.static) == ["file:///readme.txt"]
    assert list(server.resources.templates) == ["test://item/{id}"]
    assert list(server.prompts) == ["hello"]
    assert list(server.completers) == [("ref/prompt", "hello", "name")]


@pytest.mark.parametrize("refs", [{}, {"prompt": "p", "resource_template": "t://{x}"}])
def test_a_completion_completes_exactly_one_prompt_or_template(refs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        MCPServer("s").completion(argument="x", **refs)


# -- capabilities ---------------------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/basic/lifecycle#capability-negotiation")
def test_the_capabilities_follow_every_change() -> None:
    server = MCPServer("s")
    assert server.capabilities() == {"logging": {}}
    server.add_tool(Tool(_noop, name="t"))
    assert server.capabilities() == {"logging": {}, "tools": {"listChanged": True}}
    server.completion(resource_template="r://{x}", argument="x")(lambda value, arguments: [])
    server.add_prompt(Prompt(_noop, name="p"))
    server.resources.add(Resource("r://{x}", lambda x: x))
    assert server.capabilities() == {"logging": {}, "tools": {"listChanged": True}, "completions": {},
                                     "prompts": {"listChanged": True},
                                     "resources": {"subscribe": True, "listChanged": True}}
    server.add_tool(Tool(_noop, name="job", task_support="optional"))
    assert server.capabilities()["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    server.remove_tool("job")
    server.remove_tool("t")
    server.remove_prompt("p")
    server.remove_resource("r://{x}")
    assert server.capabilities() == {"logging": {}, "completions": {}}


# -- change events ------------------------------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/server/tools#list-changed-notification")
async def test_every_definition_change_is_published_on_the_bus() -> None:
    server = MCPServer("s")
    with server.runtime.backend.bus.subscribe() as changes:
        events = aiter(changes)
        server.add_tool(Tool(_noop, name="t"))
        server.remove_tool("t")
        server.add_prompt(Prompt(_noop, name="p"))
        server.remove_prompt("p")
        server.resources.add(Resource("r://a", _noop))
        server.remove_resource("r://a")
        server.resource_updated("r://a")
        assert await take(events, 7) == [
            "notifications/tools/list_changed", "notifications/tools/list_changed",
            "notifications/prompts/list_changed", "notifications/prompts/list_changed",
            "notifications/resources/list_changed", "notifications/resources/list_changed",
            "notifications/resources/updated"]
