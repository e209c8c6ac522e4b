"""``wiremcp.mount``: a server definition served inside another under a namespace: the names it gets, what is
refused, changes that reach the parent, the scopes and the middleware it keeps, in both eras."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from wiremcp import MCPServer, RateLimit, Runtime
from wiremcp.backend import Backend
from wiremcp.errors import RATE_LIMITED, DefinitionError, MCPError
from wiremcp.middleware import Call, CallNext
from wiremcp.principal import Principal
from wiremcp.rate_limits import InMemoryRateLimits
from wiremcp.transports.memory import Client

ERAS = ["2025-11-25", "2026-07-28"]
SKILL = "---\nname: packing\ndescription: How to pack for a trip\n---\n\n# Packing\n"


def weather() -> MCPServer:
    child = MCPServer("weather")

    @child.tool()
    async def forecast(city: str) -> str:
        return f"Sunny in {city}"

    @child.tool(scopes=["weather:admin"])
    async def reset() -> str:
        return "reset"

    @child.resource("weather://cities/{city}")
    async def city(city: str) -> str:
        return f"{city}: temperate"

    @child.resource("weather://about", mime_type="text/plain")
    async def about() -> str:
        return "about"

    @child.prompt()
    async def ask(city: str) -> str:
        return f"What is the weather in {city}?"

    @child.completion(argument="city", prompt="ask")
    async def cities(value: str, arguments: dict[str, str]) -> list[str]:
        return [c for c in ("Oslo", "Osaka", "Rome") if c.startswith(value)]

    @child.completion(argument="city", resource_template="weather://cities/{city}")
    async def template_cities(value: str, arguments: dict[str, str]) -> list[str]:
        return ["Oslo"]

    child.add_skill(SKILL)
    child.app("ui://weather/view.html", "<p>view</p>")

    @child.tool(ui="ui://weather/view.html")
    async def show() -> str:
        return "shown"

    return child


def hub(child: MCPServer, prefix: str | None = "wx") -> MCPServer:
    parent = MCPServer("hub")

    @parent.tool()
    async def hello() -> str:
        return "hi"

    parent.mount(child, prefix=prefix)
    return parent


@pytest.mark.parametrize("era", ERAS)
async def test_every_kind_of_component_is_served_under_the_prefix(era: str) -> None:
    parent = hub(weather())
    async with Client(parent, protocol_version=era) as client:
        assert [t["name"] for t in await client.list_tools()] == ["hello", "wx_forecast", "wx_reset", "wx_show"]
        assert (await client.call_tool("wx_forecast", {"city": "Oslo"}))["content"][0]["text"] == "Sunny in Oslo"
        templates = (await client.request("resources/templates/list"))["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == ["weather://wx/cities/{city}"]
        read = await client.request("resources/read", {"uri": "weather://wx/cities/Oslo"})
        assert read["contents"][0]["uri"] == "weather://wx/cities/Oslo"
        assert read["contents"][0]["text"] == "Oslo: temperate"
        listed = [r["uri"] for r in (await client.request("resources/list"))["resources"]]
        assert "weather://wx/about" in listed
        assert "ui://wx/weather/view.html" in listed
        assert "skill://wx/packing/SKILL.md" in listed
        prompts = (await client.request("prompts/list"))["prompts"]
        assert [p["name"] for p in prompts] == ["wx_ask"]
        got = await client.request("prompts/get", {"name": "wx_ask", "arguments": {"city": "Rome"}})
        assert got["messages"][0]["content"]["text"] == "What is the weather in Rome?"
        done = await client.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "wx_ask"},
                                                            "argument": {"name": "city", "value": "Os"}})
        assert done["completion"]["values"] == ["Oslo", "Osaka"]
        done = await client.request("completion/complete", {
            "ref": {"type": "ref/resource", "uri": "weather://wx/cities/{city}"},
            "argument": {"name": "city", "value": ""}})
        assert done["completion"]["values"] == ["Oslo"]
        skills = (await client.request("skills/list"))["skills"]
        assert [s["uri"] for s in skills] == ["skill://wx/packing/SKILL.md"]
        show = next(t for t in await client.list_tools() if t["name"] == "wx_show")
        assert show["_meta"]["ui"]["resourceUri"] == "ui://wx/weather/view.html"
    parent.check()  # the view of the mounted tool is served by the parent


async def test_without_a_prefix_the_child_keeps_its_names() -> None:
    parent = hub(weather(), prefix=None)
    async with Client(parent) as client:
        assert [t["name"] for t in await client.list_tools()] == ["hello", "forecast", "reset", "show"]
        read = await client.request("resources/read", {"uri": "weather://about"})
        assert read["contents"][0]["text"] == "about"


async def test_namespace_is_the_prefix_under_fastmcp_3s_name() -> None:
    parent = MCPServer("hub")
    parent.mount(weather(), namespace="wx")
    async with Client(parent) as client:
        assert [t["name"] for t in await client.list_tools()] == ["wx_forecast", "wx_reset", "wx_show"]
    with pytest.raises(DefinitionError, match=r"test_mount\.py:\d+: mount: give the prefix as prefix= "
                                              r"or as namespace=, not both"):
        MCPServer("hub").mount(weather(), prefix="wx", namespace="wx")


def test_names_the_parent_already_serves_are_refused_at_mount_time() -> None:
    parent = MCPServer("hub")

    @parent.tool(name="wx_forecast")
    async def mine() -> str:
        return ""

    with pytest.raises(DefinitionError, match="already serves tool wx_forecast"):
        parent.mount(weather(), prefix="wx")
    assert list(parent.tools) == ["wx_forecast"]


def test_a_second_child_under_the_same_prefix_a_server_in_itself_and_a_bad_prefix_are_refused() -> None:
    child = weather()
    parent = hub(child)
    with pytest.raises(DefinitionError, match="is mounted"):
        parent.mount(MCPServer("other"), prefix="wx")
    with pytest.raises(DefinitionError, match="in itself"):
        parent.mount(parent, prefix="me")
    with pytest.raises(DefinitionError, match="in itself"):
        child.mount(parent, prefix="up")
    with pytest.raises(DefinitionError, match="prefix"):
        parent.mount(MCPServer("other"), prefix="a b")


async def test_replace_takes_the_mount_at_that_prefix_away_and_mounts_the_new_server() -> None:
    """Everything the old child served under the prefix goes (its tools, prompts, resources, completions,
    skills); the new child's is served there; the clients hear that the lists changed."""
    parent = hub(weather())
    radar = MCPServer("radar")

    @radar.tool()
    async def forecast(city: str) -> str:
        return f"Rain over {city}"

    async with Client(parent) as client:
        parent.mount(radar, prefix="wx", replace=True)
        tools = [t["name"] for t in (await client.request("tools/list", {}))["tools"]]
        assert sorted(tools) == ["hello", "wx_forecast"]
        assert (await client.call_tool("wx_forecast", {"city": "Oslo"}))["content"][0]["text"] == "Rain over Oslo"
        methods = [n["method"] for n in client.notifications]
    assert "notifications/tools/list_changed" in methods
    assert (parent.prompts, parent.completers, parent.skill_set.skills) == ({}, {}, {})
    assert (parent.resources.static, parent.resources.templates) == ({}, {})


def test_the_parent_cannot_register_a_name_a_mount_serves() -> None:
    parent = hub(weather())
    with pytest.raises(DefinitionError, match="mounted weather"):
        @parent.tool(name="wx_forecast")
        async def mine() -> str:
            return ""
    with pytest.raises(DefinitionError, match="mounted weather"):
        parent.resource("weather://wx/about")


async def test_what_the_child_adds_and_removes_later_reaches_the_parents_clients() -> None:
    child = weather()
    parent = hub(child)
    async with Client(parent) as client:
        @child.tool()
        async def alerts() -> str:
            return "none"

        await client.wait_for_notification("notifications/tools/list_changed")
        assert "wx_alerts" in [t["name"] for t in await client.list_tools()]
        assert (await client.call_tool("wx_alerts"))["content"][0]["text"] == "none"
        child.remove_tool("alerts")
        await client.wait_for_notification("notifications/tools/list_changed", 2)
        assert "wx_alerts" not in [t["name"] for t in await client.list_tools()]
        await client.request("resources/subscribe", {"uri": "weather://wx/about"})
        child.resource_updated("weather://about")
        (updated,) = await client.wait_for_notification("notifications/resources/updated")
        assert updated["params"]["uri"] == "weather://wx/about"


def test_a_later_name_that_collides_is_refused_too() -> None:
    child = weather()
    parent = hub(child)

    @parent.tool(name="wx_new")
    async def mine() -> str:
        return ""

    with pytest.raises(DefinitionError, match="already serves tool wx_new"):
        @child.tool(name="new")
        async def theirs() -> str:
            return ""


async def test_the_childs_scopes_are_kept() -> None:
    parent = hub(weather())
    caller = Principal("https://issuer", "alice", scopes=frozenset({"weather:read"}))
    async with Client(parent, principal=caller) as client:
        assert "wx_reset" not in [t["name"] for t in await client.list_tools()]
        with pytest.raises(MCPError) as refused:
            await client.call_tool("wx_reset")
        assert refused.value.data == {"requiredScopes": ["weather:admin"]}


@pytest.mark.parametrize("era", ERAS)
async def test_the_childs_middleware_sees_its_own_names_inside_the_parents(era: str) -> None:
    child = weather()
    seen: list[tuple[str, str, str | None, Any]] = []

    @child.add_middleware
    async def child_log(call: Call, call_next: CallNext) -> Any:
        seen.append(("child", call.method, call.component_name, type(call.component).__name__))
        if call.name == "forecast":
            call.params = {**call.params, "arguments": {"city": call.arguments["city"].upper()}}
        return await call_next()

    parent = hub(child)

    @parent.add_middleware
    async def parent_log(call: Call, call_next: CallNext) -> Any:
        if not call.notification and call.method != "initialize":
            seen.append(("parent", call.method, call.component_name, type(call.component).__name__))
        return await call_next()

    async with Client(parent, protocol_version=era) as client:
        result = await client.call_tool("wx_forecast", {"city": "Oslo"})
        assert result["content"][0]["text"] == "Sunny in OSLO"  # the child's middleware changed the arguments
        await client.request("resources/read", {"uri": "weather://wx/about"})
        await client.call_tool("hello")
        await client.list_tools()
    assert seen == [
        ("parent", "tools/call", "wx_forecast", "Tool"), ("child", "tools/call", "forecast", "Tool"),
        ("parent", "resources/read", "weather://wx/about", "Resource"),
        ("child", "resources/read", "weather://about", "Resource"),
        ("parent", "tools/call", "hello", "Tool"), ("parent", "tools/list", None, "NoneType")]


async def test_mounts_nest() -> None:
    grandchild = MCPServer("leaf")

    @grandchild.tool()
    async def ping_leaf() -> str:
        return "leaf"

    child = MCPServer("branch")
    child.mount(grandchild, prefix="leaf")
    parent = MCPServer("root")
    parent.mount(child, prefix="branch")
    async with Client(parent) as client:
        assert [t["name"] for t in await client.list_tools()] == ["branch_leaf_ping_leaf"]
        assert (await client.call_tool("branch_leaf_ping_leaf"))["content"][0]["text"] == "leaf"


async def test_a_childs_rate_limit_keeps_its_buckets_in_the_runtime_that_serves_the_parent() -> None:
    child = weather()
    child.add_middleware(RateLimit(1, per=60, methods=["tools/call"]))
    parent = hub(child)
    Runtime(parent, backend=replace(Backend.in_memory(), rate_limits=(buckets := InMemoryRateLimits())))  # as Redis's
    async with Client(parent) as client:
        await client.call_tool("wx_forecast", {"city": "Oslo"})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("wx_forecast", {"city": "Oslo"})
    assert refused.value.code == RATE_LIMITED
    assert buckets._buckets  # the parent's store, not the child's own runtime's
    assert not child.runtime.backend.rate_limits._buckets  # type: ignore[attr-defined]
