"""Views (``MCPServer.view``): a team's callers see their views' tools, prompts and resources only, and what is
outside them answers as unknown; a caller whom no view names, or an unauthenticated one, sees everything; a
mistake in a view is one line naming where it was written. The last test puts views over a gateway's remote
child (``tests/support/http_fixture_server.py`` launched on stdio)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tests.support.gateways import FIXTURE_STDIO
from wiremcp import MCPError, MCPServer
from wiremcp.errors import DefinitionError
from wiremcp.principal import Principal
from wiremcp.transports import Client, remote


def catalog() -> MCPServer:
    server = MCPServer("catalog")
    for name in ("github_issues", "github_prs", "jira_search"):
        server.tool(name=name)(lambda: "ok")
    server.prompt(name="github_review")(lambda: "review")
    server.prompt(name="jira_triage")(lambda: "triage")
    server.resource("docs://handbook", name="handbook")(lambda: "handbook")
    server.resource("code://repo", name="repo")(lambda: "repo")
    server.view("platform", tools=["github_*"], prompts=["github_*"], resources=["code://*"],
                scopes=["team:platform"])
    server.view("support", tools=["jira_*"], prompts=["jira_*"], resources=["docs://*"], groups=["support"])
    return server


def caller(scopes: Sequence[str] = (), groups: Sequence[str] | None = None) -> Principal:
    claims: dict[str, Any] = {"groups": list(groups)} if groups is not None else {}
    return Principal("https://issuer.test", "someone", scopes=frozenset(scopes), claims=claims)


async def seen(principal: Principal | None, server: MCPServer | None = None) -> dict[str, list[str]]:
    async with Client(server or catalog(), principal=principal) as client:
        return {"tools": sorted(t["name"] for t in await client.list_tools()),
                "prompts": sorted(p["name"] for p in await client.list_prompts()),
                "resources": sorted(r["uri"] for r in await client.list_resources())}


async def test_a_teams_caller_sees_its_views_catalog_only() -> None:
    assert await seen(caller(["team:platform"])) == {
        "tools": ["github_issues", "github_prs"], "prompts": ["github_review"], "resources": ["code://repo"]}
    assert await seen(caller(groups=["support"])) == {
        "tools": ["jira_search"], "prompts": ["jira_triage"], "resources": ["docs://handbook"]}


async def test_a_caller_of_two_teams_sees_both_views() -> None:
    assert (await seen(caller(["team:platform"], groups=["support"])))["tools"] == [
        "github_issues", "github_prs", "jira_search"]


async def test_a_caller_no_view_names_and_an_unauthenticated_one_see_everything() -> None:
    everything = {"tools": ["github_issues", "github_prs", "jira_search"],
                  "prompts": ["github_review", "jira_triage"], "resources": ["code://repo", "docs://handbook"]}
    assert await seen(caller(["other"], groups=["elsewhere"])) == everything
    assert await seen(None) == everything


async def test_what_is_outside_a_callers_views_answers_as_unknown() -> None:
    async with Client(catalog(), principal=caller(["team:platform"])) as client:
        assert (await client.call_tool("github_prs"))["content"][0]["text"] == "ok"
        with pytest.raises(MCPError) as tool:
            await client.call_tool("jira_search")
        with pytest.raises(MCPError) as prompt:
            await client.request("prompts/get", {"name": "jira_triage"})
        with pytest.raises(MCPError) as resource:
            await client.request("resources/read", {"uri": "docs://handbook"})
    assert (tool.value.code, tool.value.message) == (-32602, "Unknown tool: jira_search")
    assert (prompt.value.code, prompt.value.message) == (-32602, "Unknown prompt: jira_triage")
    assert resource.value.code in (-32002, -32602)  # the era's "resource not found"


@pytest.mark.parametrize(("given", "said"), [
    ({"tools": "github_*", "scopes": ["a"]}, "tools takes a list, e.g. ['github_*'], not a string"),
    ({"tools": ["github_*"]}, "view team is for nobody: give the scopes or groups of the callers it is for"),
    ({"scopes": ["a"]}, "view team shows nothing: give the tools, prompts or resources it shows"),
    ({"tools": [""], "scopes": ["a"]}, "view team: tools must be a list of non-empty strings"),
])
def test_a_mistake_in_a_view_is_one_line_naming_where_it_was_written(given: dict[str, Any], said: str) -> None:
    server = MCPServer("catalog")
    with pytest.raises(DefinitionError) as refused:
        server.view("team", **given)
    assert str(refused.value).startswith(f"{__file__}:")
    assert str(refused.value).endswith(said)


def test_a_view_needs_a_name_of_its_own() -> None:
    server = MCPServer("catalog")
    server.view("team", tools=["*"], scopes=["a"])
    with pytest.raises(DefinitionError, match=r"view team is already defined on catalog$"):
        server.view("team", tools=["*"], scopes=["b"])
    with pytest.raises(DefinitionError, match="view name 'a team' must be 1 to 64 letters"):
        server.view("a team", tools=["*"], scopes=["b"])


@pytest.mark.timeout(60)
async def test_views_over_a_gateways_remote_child_show_each_team_its_tools() -> None:
    gateway = MCPServer("gateway")
    gateway.mount(remote(command=FIXTURE_STDIO), prefix="fx")
    gateway.view("echoes", tools=["fx_echo", "fx_chatty"], scopes=["team:echo"])
    listed = (await seen(caller(["team:echo"]), gateway))["tools"]
    async with Client(gateway, principal=caller(["team:echo"])) as client:
        echoed = await client.call_tool("fx_echo", {"text": "hi"})
        with pytest.raises(MCPError) as hidden:
            await client.call_tool("fx_stepper", {"name": "x", "steps": 1})
    assert listed == ["fx_chatty", "fx_echo"]
    assert echoed["content"][0]["text"] == "hi"
    assert hidden.value.code == -32602
