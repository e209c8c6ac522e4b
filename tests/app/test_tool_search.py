"""Tool search (``ToolSearch``): ``tools/list`` shows the search tool and the pinned tools; a search answers with
the best-matching definitions (structured and as text), filtered by the caller's scopes and views as lists are;
a tool found is called by its name; the index follows the catalog (tools added and removed, a mounted child's,
a remote child's); an embedder's ranking is fused in; mistakes are one line."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.support.gateways import FIXTURE_STDIO
from wiremcp import DefinitionError, MCPError, MCPServer, ToolSearch
from wiremcp.principal import Principal
from wiremcp.tool_search import document, words
from wiremcp.transports import Client, remote


def catalog(**options: Any) -> MCPServer:
    server = MCPServer("catalog", tool_search=ToolSearch(pinned=["whoami"], **options))

    @server.tool
    def whoami() -> str:
        """Who the caller is."""
        return "you"

    @server.tool(scopes=["issues:write"])
    def github_create_issue(repo: str, title: str) -> str:
        """Open a new issue in a GitHub repository."""
        return f"opened {title} in {repo}"

    @server.tool
    def github_list_pulls(repo: str) -> list[str]:
        """List the open pull requests of a repository."""
        return ["#1"]

    @server.tool
    def jira_search(jql: str) -> list[str]:
        """Search Jira tickets with a JQL query."""
        return ["PROJ-1"]

    @server.tool
    def getWeatherForecast(city: str) -> str:  # camelCase, as OpenAPI operation ids are
        """The forecast for the next days."""
        return "sunny"

    return server


def caller(scopes: Sequence[str] = (), groups: Sequence[str] | None = None) -> Principal:
    claims: dict[str, Any] = {"groups": list(groups)} if groups is not None else {}
    return Principal("https://issuer.test", "someone", scopes=frozenset(scopes), claims=claims)


async def found(client: Client, query: str, limit: int | None = None) -> list[str]:
    arguments: dict[str, Any] = {"query": query} if limit is None else {"query": query, "limit": limit}
    result = await client.call_tool("search_tools", arguments)
    assert not result.get("isError"), result
    tools = result["structuredContent"]["tools"]
    assert json.loads(result["content"][0]["text"]) == {"tools": tools}  # the text fallback: the same JSON
    return [t["name"] for t in tools]


def test_names_split_on_separators_and_camel_case() -> None:
    assert words("getWeatherForecast") == ["get", "weather", "forecast"]
    assert words("github_create-issue.v2") == ["github", "create", "issue", "v2"]
    assert words("List the pets of an HTTPServer") == ["list", "pet", "http", "server"]


def test_a_tool_is_found_by_its_parameters_too() -> None:
    server = catalog()
    assert "jql" in document(server.tools["jira_search"])


async def test_the_list_shows_the_search_tool_and_the_pinned_ones() -> None:
    async with Client(catalog()) as client:
        listed = {t["name"]: t for t in await client.list_tools()}
    assert sorted(listed) == ["search_tools", "whoami"]
    search = listed["search_tools"]
    assert search["inputSchema"]["required"] == ["query"]
    assert search["inputSchema"]["properties"]["limit"]["default"] == 5
    assert search["annotations"]["readOnlyHint"] is True
    assert "tools" in search["outputSchema"]["properties"]


async def test_a_search_answers_with_definitions_and_the_tool_found_is_called_by_name() -> None:
    async with Client(catalog()) as client:
        result = await client.call_tool("search_tools", {"query": "open an issue on github", "limit": 1})
        (definition,) = result["structuredContent"]["tools"]
        called = await client.call_tool(definition["name"], {"repo": "wiremcp", "title": "bug"})
        assert await found(client, "weather forecast") == ["getWeatherForecast"]
        assert set(await found(client, "repository")) == {"github_list_pulls", "github_create_issue"}
        assert await found(client, "jql") == ["jira_search"]
        assert await found(client, "nothing matches this") == []
    assert definition == {"name": "github_create_issue", "description": "Open a new issue in a GitHub repository.",
                          "inputSchema": catalog().tools["github_create_issue"].input_schema}
    assert called["content"][0]["text"] == "opened bug in wiremcp"


async def test_the_limit_defaults_to_the_search_s_and_bad_arguments_are_a_tool_error() -> None:
    server = catalog(limit=2)
    async with Client(server) as client:
        assert len(await found(client, "github repository issue pull forecast jql")) == 2
        assert len(await found(client, "github repository issue pull forecast jql", 3)) == 3
        refused = await client.call_tool("search_tools", {"query": "x", "limit": 0})
    assert refused["isError"] is True


async def test_scopes_filter_the_results_as_they_filter_lists() -> None:
    server = catalog()
    async with Client(server, principal=caller()) as client:
        assert "github_create_issue" not in await found(client, "create issue github")
    async with Client(server, principal=caller(["issues:write"])) as client:
        assert (await found(client, "create issue github"))[0] == "github_create_issue"


async def test_views_filter_the_results_and_the_search_tool_is_every_callers() -> None:
    server = catalog()
    server.view("support", tools=["jira_*"], groups=["support"])
    async with Client(server, principal=caller(groups=["support"])) as client:
        listed = sorted(t["name"] for t in await client.list_tools())
        assert await found(client, "github repository issue jira") == ["jira_search"]
        with pytest.raises(MCPError) as refused:
            await client.call_tool("github_list_pulls", {"repo": "x"})
    assert listed == ["search_tools"]  # whoami is pinned, but outside the view
    assert (refused.value.code, refused.value.message) == (-32602, "Unknown tool: github_list_pulls")


async def test_the_index_follows_tools_added_and_removed() -> None:
    server = catalog()
    async with Client(server) as client:
        assert await found(client, "invoice") == []

        @server.tool
        def billing_send_invoice(customer: str) -> str:
            """Send an invoice to a customer."""
            return "sent"

        assert await found(client, "invoice") == ["billing_send_invoice"]
        server.remove_tool("billing_send_invoice")
        assert await found(client, "invoice") == []
        assert sorted(t["name"] for t in await client.list_tools()) == ["search_tools", "whoami"]


async def test_a_mounts_tools_are_offered_through_its_own_search() -> None:
    parent = MCPServer("gateway")

    @parent.tool
    def ping() -> str:
        return "pong"

    child = MCPServer("github")

    @child.tool
    def create_issue(repo: str, title: str) -> str:
        """Open a new issue."""
        return "opened"

    @child.tool
    def list_pulls(repo: str) -> list[str]:
        """List pull requests."""
        return []

    parent.mount(child, "gh", tool_search=ToolSearch(pinned=["list_pulls"]))
    async with Client(parent) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == ["gh_list_pulls", "gh_search_tools", "ping"]
        result = await client.call_tool("gh_search_tools", {"query": "new issue"})
        names = [t["name"] for t in result["structuredContent"]["tools"]]
        assert names == ["gh_create_issue"]
        assert (await client.call_tool("gh_create_issue", {"repo": "r", "title": "t"}))["content"][0]["text"] == "opened"

        @child.tool
        def merge_pull(repo: str, number: int) -> str:
            """Merge a pull request."""
            return "merged"

        result = await client.call_tool("gh_search_tools", {"query": "merge"})
        assert [t["name"] for t in result["structuredContent"]["tools"]] == ["gh_merge_pull"]
        assert "gh_merge_pull" not in {t["name"] for t in await client.list_tools()}


async def test_a_child_with_its_own_search_keeps_it_when_mounted() -> None:
    parent = MCPServer("gateway")
    parent.mount(catalog(), "cat")
    async with Client(parent) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == ["cat_search_tools", "cat_whoami"]
        result = await client.call_tool("cat_search_tools", {"query": "forecast"})
    assert [t["name"] for t in result["structuredContent"]["tools"]] == ["cat_getWeatherForecast"]


async def test_a_search_over_everything_covers_mounted_children() -> None:
    parent = MCPServer("gateway", tool_search=ToolSearch())
    child = MCPServer("wx")

    @child.tool
    def forecast(city: str) -> str:
        """The weather forecast of a city."""
        return "sunny"

    parent.mount(child, "wx")
    async with Client(parent) as client:
        assert [t["name"] for t in await client.list_tools()] == ["search_tools"]
        assert await found(client, "weather") == ["wx_forecast"]


@pytest.mark.timeout(30)
async def test_the_index_follows_a_remote_childs_tools_as_its_list_changes() -> None:
    gateway = MCPServer("gateway", tool_search=ToolSearch())
    gateway.mount(remote(command=FIXTURE_STDIO), prefix="fx")
    async with Client(gateway) as client:
        assert [t["name"] for t in await client.list_tools()] == ["search_tools"]
        hits = await found(client, "simple text", 3)
        assert await found(client, "zebra crossing") == []
        version = gateway.tools_version
        await client.call_tool("fx_add_tool", {"name": "zebra_crossing"})  # the child adds a tool, and says so
        while gateway.tools_version == version:
            heard = sum(n["method"] == "notifications/tools/list_changed" for n in client.notifications)
            await client.wait_for_notification("notifications/tools/list_changed", count=heard + 1)
        assert await found(client, "zebra crossing") == ["fx_zebra_crossing"]
        assert (await client.call_tool("fx_zebra_crossing"))["content"][0]["text"] == "added at runtime"
    assert hits
    assert all(name.startswith("fx_") for name in hits)


class Letters:
    """A trivial embedder: how often each letter occurs."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(text.lower().count(c)) for c in "abcdefghijklmnopqrstuvwxyz"] for text in texts]


async def test_an_embedder_ranking_is_fused_with_bm25s() -> None:
    async with Client(catalog(embedder=Letters())) as client:
        assert (await found(client, "forecast weather"))[0] == "getWeatherForecast"
        assert len(await found(client, "zzzz qqq", 5)) > 0  # no word matches, the vectors still do


@pytest.mark.parametrize(("options", "said"), [
    ({"pinned": "whoami"}, "pinned takes a list of tool names or patterns, e.g. ['whoami']"),
    ({"pinned": [""]}, "pinned must be a list of non-empty strings"),
    ({"name": "search tools"}, "name 'search tools' must be 1 to 64"),
    ({"limit": 0}, "limit must be a whole number from 1 to 50, not 0"),
    ({"embedder": object()}, "has no embed(texts) method"),
])
def test_a_mistake_is_one_line_naming_where(options: dict[str, Any], said: str) -> None:
    with pytest.raises(DefinitionError) as raised:
        ToolSearch(**options)
    message = str(raised.value)
    assert "\n" not in message
    assert said in message
    assert message.startswith(f"{__file__}:")


def test_a_server_or_mount_given_something_else_says_so() -> None:
    with pytest.raises(DefinitionError, match=r"tool_search takes a ToolSearch\(\.\.\.\), not True"):
        MCPServer("s", tool_search=True)  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="tool_search takes a ToolSearch"):
        MCPServer("p").mount(MCPServer("c"), "c", tool_search="yes")  # type: ignore[arg-type]


def test_a_tool_named_as_the_search_tool_is_refused() -> None:
    server = catalog()
    with pytest.raises(DefinitionError, match="search_tools"):
        server.tool(name="search_tools")(lambda: "mine")


def answering(text: str) -> Callable[[], str]:
    return lambda: text


def catalog_listed() -> MCPServer:
    """The catalog without a search of its own: a view offers its tools through one."""
    server = MCPServer("catalog")
    for name, text in (("github_create_issue", "Open a new issue."), ("github_list_pulls", "List pull requests."),
                       ("jira_search", "Search tickets with JQL."), ("jira_whoami", "Who the Jira user is.")):
        server.tool(name=name, description=text)(answering(name))
    server.view("support", tools=["jira_*"], groups=["support"],
                tool_search=ToolSearch(pinned=["jira_whoami", "github_list_pulls"]))
    server.view("platform", tools=["github_*"], scopes=["team:platform"])
    return server


async def test_a_view_offers_its_tools_through_search_to_its_callers_only() -> None:
    server = catalog_listed()
    async with Client(server, principal=caller(groups=["support"])) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == ["jira_whoami", "search_tools"]
        assert await found(client, "search tickets issue pull") == ["jira_search"]  # not github's: outside the view
        assert (await client.call_tool("jira_search"))["content"][0]["text"] == "jira_search"
    async with Client(server, principal=caller(["team:platform"])) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == ["github_create_issue", "github_list_pulls"]
    async with Client(server) as client:  # no view applies: the whole catalog, listed
        assert "search_tools" not in {t["name"] for t in await client.list_tools()}


def test_a_view_given_something_else_says_so() -> None:
    with pytest.raises(DefinitionError, match=r"view v: tool_search takes a ToolSearch\(\.\.\.\), not 'yes'"):
        MCPServer("s").view("v", tools=["*"], scopes=["s"], tool_search="yes")  # type: ignore[arg-type]


async def test_a_mounts_search_tool_is_shown_as_the_mounts_tools_are() -> None:
    parent = MCPServer("gateway")
    parent.tool(name="jira_search", description="Search Jira tickets.")(answering("jira"))
    child = MCPServer("github")
    child.tool(name="search_code", description="Search code in repositories.")(answering("code"))
    parent.mount(child, "gh", tool_search=ToolSearch())
    parent.view("support", tools=["jira_*"], groups=["support"])
    parent.view("platform", tools=["gh_*"], groups=["platform"])
    async with Client(parent, principal=caller(groups=["support"])) as client:
        assert [t["name"] for t in await client.list_tools()] == ["jira_search"]
    async with Client(parent, principal=caller(groups=["platform"])) as client:
        assert [t["name"] for t in await client.list_tools()] == ["gh_search_tools"]
        result = await client.call_tool("gh_search_tools", {"query": "search"})
    assert [t["name"] for t in result["structuredContent"]["tools"]] == ["gh_search_code"]


async def test_taking_the_search_tool_away_lists_the_catalog_again() -> None:
    server = catalog()
    server.remove_tool("search_tools")
    async with Client(server) as client:
        assert len(await client.list_tools()) == 5


async def test_a_tool_a_transform_keeps_out_of_lists_is_not_found_by_search_and_still_called() -> None:
    server = catalog()
    server.transform("jira_search", listed=False)
    async with Client(server) as client:
        listed = [t["name"] for t in (await client.list_tools())]
        assert "jira_search" not in await found(client, "search Jira tickets with a JQL query")
        result = await client.call_tool("jira_search", {"jql": "project = PROJ"})
    assert "jira_search" not in listed
    assert result["structuredContent"] == {"result": ["PROJ-1"]}
