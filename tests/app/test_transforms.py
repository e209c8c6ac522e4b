"""``wiremcp.transforms``: a tool served in another shape (``MCPServer.transform``): renamed, redescribed, its
arguments renamed, redescribed, defaulted or hidden with a fixed or computed value, left out of lists; checked
against the new schema, called with the original's names; on local, mounted and remote tools, under the one
access gate; and the definition mistakes, each one line naming the line that made it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest

from tests.support.http import UvicornProcess, run_uvicorn
from tests.support.http_fixture_server import FIXTURE_SERVER
from wiremcp import Arg, AuditLog, Context, MCPServer, RateLimit
from wiremcp.errors import RATE_LIMITED, DefinitionError, MCPError
from wiremcp.middleware import Call, CallNext
from wiremcp.principal import Principal
from wiremcp.transforms import Transform, served
from wiremcp.transports.gateway import remote
from wiremcp.transports.memory import Client

ERAS = ["2025-11-25", "2026-07-28"]
HERE = __file__


class Found(TypedDict):
    q: str
    limit: int
    tenant: str
    key: str


def catalog() -> MCPServer:
    server = MCPServer("catalog")

    @server.tool(title="Search")
    async def search(q: str, limit: int = 5, tenant: str = "public", api_key: str = "") -> Found:
        """Search the index."""
        return {"q": q, "limit": limit, "tenant": tenant, "key": api_key}

    @server.tool(scopes=["admin"])
    def purge(older_than: int) -> str:
        return f"purged {older_than}"

    return server


async def tenant_of(ctx: Context) -> str:
    return "acme" if ctx.principal is None else ctx.principal.subject


def reshaped() -> MCPServer:
    server = catalog()
    server.transform("search", name="find", title="Find", description="Find documents.", arguments={
        "q": Arg(name="query", description="What to look for"), "limit": Arg(default=3),
        "tenant": Arg(compute=tenant_of), "api_key": Arg(value="s3cret")})
    return server


@pytest.mark.parametrize("era", ERAS)
async def test_the_tool_is_listed_and_called_in_its_new_shape(era: str) -> None:
    async with Client(reshaped(), protocol_version=era) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        answer = await client.call_tool("find", {"query": "wire"})
        more = await client.call_tool("find", {"query": "wire", "limit": 9})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("search", {"q": "wire"})
    assert sorted(tools) == ["find", "purge"]
    find = tools["find"]
    assert (find["title"], find["description"]) == ("Find", "Find documents.")
    assert find["inputSchema"]["properties"] == {
        "query": {"type": "string", "description": "What to look for"},
        "limit": {"type": "integer", "default": 3}}
    assert find["inputSchema"]["required"] == ["query"]
    assert find["outputSchema"]["required"] == ["q", "limit", "tenant", "key"]  # the original's
    # the original got its own names, the default and the hidden values; its structured result is kept
    assert answer["structuredContent"] == {"q": "wire", "limit": 3, "tenant": "acme", "key": "s3cret"}
    assert answer["content"] == [{"type": "text", "text": '{"q":"wire","limit":3,"tenant":"acme","key":"s3cret"}'}]
    assert more["structuredContent"]["limit"] == 9
    assert unknown.value.code == -32602  # the old name is not served


async def test_arguments_are_checked_against_the_new_schema() -> None:
    async with Client(reshaped()) as client:
        hidden = await client.call_tool("find", {"query": "wire", "api_key": "mine"})
        old_name = await client.call_tool("find", {"q": "wire"})
        wrong = await client.call_tool("find", {"query": 3})
        untransformed = await client.call_tool("purge", {"older_than": 1, "extra": 1})
    for refused in (hidden, old_name, wrong, untransformed):  # refused as any invalid arguments are
        assert refused["isError"] is True
        assert refused["content"][0]["text"].startswith("Invalid arguments for tool "), refused
    assert "'api_key' was unexpected" in hidden["content"][0]["text"]
    assert "'query' is a required property" in old_name["content"][0]["text"]


async def test_a_schema_that_allows_other_arguments_still_withholds_the_hidden_and_renamed_ones() -> None:
    server = MCPServer("open")

    @server.tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}, "tenant": {"type": "string"}},
                               "required": ["q"]})
    def search(**arguments: Any) -> str:
        return repr(sorted(arguments.items()))

    server.transform("search", arguments={"q": Arg(name="query"), "tenant": Arg(value="acme")})
    async with Client(server) as client:
        passed = await client.call_tool("search", {"query": "x", "extra": 1})
        hidden = await client.call_tool("search", {"query": "x", "tenant": "globex"})
        old_name = await client.call_tool("search", {"query": "x", "q": "y"})
    assert passed["content"][0]["text"] == "[('extra', 1), ('q', 'x'), ('tenant', 'acme')]"
    assert hidden["content"][0]["text"] == "Invalid arguments for tool search: arguments: 'tenant' was unexpected"
    assert old_name["content"][0]["text"] == "Invalid arguments for tool search: arguments: 'q' was unexpected"


async def test_a_computed_value_may_be_sync_of_nothing_and_its_failure_is_the_tools() -> None:
    server = catalog()
    server.transform("search", arguments={"tenant": Arg(compute=lambda: "fixed"), "api_key": Arg(compute=broken)})
    async with Client(server) as client:
        failed = await client.call_tool("search", {"q": "x"})
    assert failed["isError"] is True
    assert failed["content"][0]["text"].startswith("Error computing argument api_key of tool search")
    server.transform("search", arguments={"tenant": Arg(compute=lambda: "fixed")}, replace=True)
    async with Client(server) as client:
        answer = await client.call_tool("search", {"q": "x", "api_key": "k"})
    assert answer["structuredContent"] == {"q": "x", "limit": 5, "tenant": "fixed", "key": "k"}


def broken() -> str:
    raise RuntimeError("no key")


async def test_an_optional_argument_hidden_keeps_its_default() -> None:
    server = catalog()
    server.transform("search", arguments={"tenant": Arg(hide=True)})
    async with Client(server) as client:
        (tool,) = [t for t in await client.list_tools() if t["name"] == "search"]
        answer = await client.call_tool("search", {"q": "x"})
    assert "tenant" not in tool["inputSchema"]["properties"]
    assert answer["structuredContent"]["tenant"] == "public"


async def test_an_unlisted_tool_is_still_callable_and_a_transform_at_runtime_is_announced() -> None:
    server = catalog()
    async with Client(server) as client:
        assert len(await client.list_tools()) == 2
        server.transform("purge", listed=False)
        await client.wait_for_notification("notifications/tools/list_changed")
        listed = [tool["name"] for tool in await client.list_tools()]
        answer = await client.call_tool("purge", {"older_than": 3})
    assert listed == ["search"]
    assert answer["content"] == [{"type": "text", "text": "purged 3"}]
    server.remove_transform("purge")
    assert server.tools["purge"] is server.defined_tools["purge"]


async def test_a_transform_removed_at_runtime_serves_the_tool_as_it_was() -> None:
    server = reshaped()
    async with Client(server) as client:
        server.remove_transform("search")
        await client.wait_for_notification("notifications/tools/list_changed")
        names = sorted(tool["name"] for tool in await client.list_tools())
    assert names == ["purge", "search"]


def caller(scopes: list[str]) -> Principal:
    return Principal("https://issuer.test", "globex", scopes=frozenset(scopes), claims={"groups": ["ops"]})


async def test_scopes_views_middleware_and_rate_limits_apply_to_the_new_name() -> None:
    server = reshaped()
    server.transform("purge", name="clean")
    seen: list[Any] = []

    async def watch(call: Call, call_next: CallNext) -> Any:
        if call.method == "tools/call":
            seen.append((call.name, dict(call.params.get("arguments") or {})))
        return await call_next()

    server.add_middleware(watch)
    server.add_middleware(RateLimit(1, per=60, tools=["find"]))
    server.view("ops", tools=["find"], groups=["ops"])
    async with Client(server, principal=caller([])) as client:
        names = [tool["name"] for tool in await client.list_tools()]
        answer = await client.call_tool("find", {"query": "x"})
        with pytest.raises(MCPError) as limited:
            await client.call_tool("find", {"query": "y"})
        with pytest.raises(MCPError) as outside:
            await client.call_tool("clean", {"older_than": 1})
    assert names == ["find"]  # the view names the new name; clean is outside it
    assert answer["structuredContent"]["tenant"] == "globex"  # computed from the caller's context
    assert limited.value.code == RATE_LIMITED
    assert outside.value.code == -32602
    assert seen[0] == ("find", {"query": "x"})  # middleware sees what the client sent
    scoped = catalog()
    scoped.transform("purge", name="clean")
    async with Client(scoped, principal=caller(["other"])) as client:
        with pytest.raises(MCPError) as forbidden:
            await client.call_tool("clean", {"older_than": 1})
        assert [tool["name"] for tool in await client.list_tools()] == ["search"]
    assert forbidden.value.message == "Forbidden: this needs the scopes admin"  # the original's scopes


async def test_the_audit_log_names_the_transformed_tool_and_a_task_runs_it() -> None:
    server = MCPServer("s")
    lines: list[str] = []
    server.add_middleware(AuditLog(methods=["tools/call"], write=lines.append))

    @server.tool(task_support="optional")
    async def export(table: str, region: str = "eu") -> str:
        return f"{table} from {region}"

    server.transform("export", name="export_orders", arguments={"table": Arg(value="orders")})
    async with Client(server) as client:
        created = await client.request("tools/call", {"name": "export_orders", "arguments": {}, "task": {}})
        result = await client.request("tasks/result", {"taskId": created["task"]["taskId"]})
    assert result["content"] == [{"type": "text", "text": "orders from eu"}]
    assert json.loads(lines[0])["component"] == "export_orders"


def weather() -> MCPServer:
    child = MCPServer("weather")

    @child.tool
    async def forecast(city: str, units: str = "metric") -> str:
        return f"Sunny in {city} ({units})"

    return child


async def test_a_mounted_childs_tool_is_transformed_by_the_parent_or_the_child() -> None:
    parent = MCPServer("parent")
    parent.mount(weather(), prefix="wx")
    parent.transform("wx_forecast", name="weather", arguments={"units": Arg(value="imperial")})
    shaped = weather()
    shaped.transform("forecast", arguments={"city": Arg(name="town")})
    parent.mount(shaped, prefix="wx2")
    async with Client(parent) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        answer = await client.call_tool("weather", {"city": "Oslo"})
        child_shaped = await client.call_tool("wx2_forecast", {"town": "Rome"})
    assert sorted(tools) == ["weather", "wx2_forecast"]
    assert list(tools["weather"]["inputSchema"]["properties"]) == ["city"]
    assert answer["content"][0]["text"] == "Sunny in Oslo (imperial)"
    assert child_shaped["content"][0]["text"] == "Sunny in Rome (metric)"


async def test_the_childs_middleware_sees_a_transformed_call_in_the_childs_names() -> None:
    child = weather()
    seen: list[Any] = []

    async def shout(call: Call, call_next: CallNext) -> Any:
        if call.method == "tools/call":
            seen.append((call.name, call.params.get("arguments")))
            if call.params["arguments"].get("city") == "oslo":  # the hidden units it sets are the transform's
                call.params = {**call.params, "arguments": {"city": "OSLO", "units": "kelvin"}}
        return await call_next()

    child.add_middleware(shout)
    child.add_middleware(RateLimit(2, per=60, tools=["forecast"]))
    parent = MCPServer("parent")
    parent.mount(child, prefix="wx")
    parent.transform("wx_forecast", name="weather", arguments={"city": Arg(name="town"), "units": Arg(value="imperial")})
    async with Client(parent) as client:
        as_sent = await client.call_tool("weather", {"town": "Rome"})
        rewritten = await client.call_tool("weather", {"town": "oslo"})
        with pytest.raises(MCPError) as limited:
            await client.call_tool("weather", {"town": "Bergen"})
    assert seen == [("forecast", {"city": "Rome"}), ("forecast", {"city": "oslo"}), ("forecast", {"city": "Bergen"})]
    assert as_sent["content"][0]["text"] == "Sunny in Rome (imperial)"
    assert rewritten["content"][0]["text"] == "Sunny in OSLO (imperial)"  # back in the transform's names
    assert limited.value.code == RATE_LIMITED  # the child's own rate limit


async def test_a_mounted_tool_that_comes_later_is_transformed_as_it_comes() -> None:
    child = weather()
    parent = MCPServer("parent")
    parent.mount(child, prefix="wx")
    parent.transform("wx_forecast", name="weather")
    child.remove_tool("forecast")
    assert parent.tools == {}
    child.tool(name="forecast")(lambda city: f"Rain in {city}")
    assert list(parent.tools) == ["weather"]
    async with Client(parent) as client:
        answer = await client.call_tool("weather", {"city": "Bergen"})
    assert answer["content"][0]["text"] == "Rain in Bergen"


@pytest.fixture(scope="module")
def word_count() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.word_count:server") as process:
        yield process


@pytest.mark.timeout(60)
async def test_a_remote_tool_is_transformed_when_the_upstream_lists_it(word_count: UvicornProcess) -> None:
    gateway = MCPServer("gateway")
    gateway.mount(remote(word_count.url), prefix="wc")
    # the upstream is reached as the gateway starts: the transform waits for its tool
    gateway.transform("wc_word_count", name="count", description="Count words.",
                      arguments={"text": Arg(name="body", description="The text")})
    assert gateway.tools == {}
    async with Client(gateway) as client:
        (tool,) = await client.list_tools()
        answer = await client.call_tool("count", {"body": "read the wire"})
        refused = await client.call_tool("count", {"text": "read the wire"})
        gateway.transform("wc_word_count", name="count", listed=False, replace=True)
        await client.wait_for_notification("notifications/tools/list_changed")
        unlisted = await client.list_tools()
        called = await client.call_tool("count", {"text": "a b"})
    assert (tool["name"], tool["description"]) == ("count", "Count words.")
    assert tool["inputSchema"]["properties"]["body"]["description"] == "The text"
    assert tool["outputSchema"]["required"] == ["words", "chars"]
    assert answer["structuredContent"] == {"words": 3, "chars": 13}
    assert refused["isError"] is True
    assert unlisted == []
    assert called["structuredContent"] == {"words": 2, "chars": 3}


@pytest.fixture(scope="module")
def fixture_upstream() -> Iterator[UvicornProcess]:
    with run_uvicorn(FIXTURE_SERVER) as process:
        yield process


def changes(client: Client) -> int:
    return sum(n["method"] == "notifications/tools/list_changed" for n in client.notifications)


@pytest.mark.timeout(60)
async def test_a_remote_tools_transform_holds_through_the_upstreams_list_changes(
        fixture_upstream: UvicornProcess) -> None:
    gateway = MCPServer("gateway")
    gateway.mount(remote(fixture_upstream.url), prefix="up")
    gateway.transform("up_echo", name="say")
    async with Client(gateway) as client:
        assert "say" in {tool["name"] for tool in await client.list_tools()}
        # a tool the upstream does not have yet: accepted, applied once the upstream lists it
        gateway.transform("up_late_tool", name="late", description="Added later.")
        heard = changes(client)
        await client.call_tool("up_add_tool", {"name": "late_tool"})
        while "late" not in (names := {tool["name"] for tool in await client.list_tools()}):
            await client.wait_for_notification("notifications/tools/list_changed", count=heard + 1)
            heard = changes(client)
        said = await client.call_tool("say", {"text": "still here"})
        late = await client.call_tool("late")
    assert not {"up_echo", "up_late_tool"} & names
    assert said["content"][0]["text"].endswith("still here")
    assert late["content"] == [{"type": "text", "text": "added at runtime"}]


def test_only_a_name_under_a_remote_childs_prefix_may_wait_for_its_tool() -> None:
    gateway = MCPServer("gateway")
    gateway.mount(remote("http://127.0.0.1:9/mcp"), prefix="wc")
    gateway.mount(weather(), prefix="wx")
    gateway.transform("wc_anything", name="anything")  # the upstream lists its tools as the gateway starts
    with pytest.raises(DefinitionError) as local:
        gateway.transform("wx_nothing")
    with pytest.raises(DefinitionError) as elsewhere:
        gateway.transform("nothing")
    assert "transform wx_nothing: no tool wx_nothing here (its tools: wx_forecast)" in str(local.value)
    assert "transform nothing: no tool nothing here" in str(elsewhere.value)


def test_a_tool_that_comes_later_and_does_not_fit_is_not_served(caplog: pytest.LogCaptureFixture) -> None:
    transform = Transform("search", "x.py:1", name=None, title=None, description=None, listed=True,
                          arguments={"nothing": Arg(default=1)})
    defined = catalog().defined_tools
    with caplog.at_level(logging.ERROR, "wiremcp.transforms"):
        out = served(defined, {"search": transform})
        served(defined, {"search": transform})
    assert list(out) == ["purge"]
    assert [r.getMessage() for r in caplog.records] == [
        "x.py:1: transform search: tool search has no argument 'nothing' (its arguments: q, limit, tenant, "
        "api_key); the tool is not served"]  # once


def line_of(text: str) -> int:
    with open(HERE) as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


@pytest.mark.parametrize(("make", "says"), [
    (lambda s: s.transform("serch", name="x"),
     "transform serch: no tool serch here (its tools: purge, search); transform a tool after it is defined or mounted"),
    (lambda s: s.transform("search", arguments={"limt": Arg(default=1)}),
     "transform search: tool search has no argument 'limt' (its arguments: q, limit, tenant, api_key)"),
    (lambda s: s.transform("search", arguments={"q": Arg(hide=True)}),
     "transform search: argument 'q' is required: hiding it needs value= or compute="),
    (lambda s: s.transform("search", arguments={"q": "query"}),
     "transform search: arguments= maps argument names to Arg(...), as in arguments={\"limit\": Arg(default=10)}"),
    (lambda s: s.transform("search", name="purge"),
     "transform search: tool purge is served here already (defined at"),
    (lambda s: (s.transform("purge", title="Purge"), s.transform("search", name="purge")),
     "transform search: tool purge is served here already (defined at"),
    (lambda s: s.transform("search", listed="no"), "transform search: listed= is True or False, not 'no'"),
    (lambda s: s.transform(42), "transform: the tool to transform is named by a string, not 42"),
    (lambda s: s.transform("search", arguments={"q": Arg(value="x", default="y")}),
     "Arg: give one of value=, compute= (hidden from clients) or default= (clients may change it)"),
    (lambda s: s.transform("search", arguments={"limit": Arg(compute=lambda a, b: 1)}),
     "Arg(compute=...) is called with the Context or with nothing, not with 2 arguments"),
    (lambda s: s.transform("search", arguments={"limit": Arg(default=object())}),
     "Arg(default=...) must be JSON (what a client could send), not <object object at"),
])
def test_a_definition_mistake_is_one_line_naming_the_users_line(make: Any, says: str) -> None:
    server = catalog()
    with pytest.raises(DefinitionError) as refused:
        make(server)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{HERE}:"), message
    assert message.split(": ", 1)[1].startswith(says), message


def test_a_tool_under_the_name_a_transform_serves_is_refused() -> None:
    server = catalog()
    server.transform("search", name="find")  # then a tool of that name
    with pytest.raises(DefinitionError) as refused:
        @server.tool
        def find() -> None: ...
    transformed_at = line_of("# then a tool of that name")
    assert str(refused.value) == (f"{HERE}:{line_of('def find() -> None') - 1}: tool find is the name the transform of tool "
                                  f"search at {HERE}:{transformed_at} serves it under; give one another name")


def test_a_bare_decorator_and_a_second_transform_are_refused() -> None:
    server = catalog()
    with pytest.raises(DefinitionError) as bare:
        @server.transform  # type: ignore[arg-type]
        def search() -> None: ...
    assert str(bare.value) == (f"{HERE}:{line_of('@server.transform  #')}: transform is not a decorator: name the "
                               "tool to transform, as in server.transform(\"search\", name=\"find\")")
    server.transform("search", name="find")
    with pytest.raises(DefinitionError) as twice:
        server.transform("search", name="lookup")
    first, second = line_of('server.transform("search", name="find")\n'), line_of('name="lookup")')
    assert str(twice.value) == (f"{HERE}:{second}: tool search is transformed already at {HERE}:{first}; give one "
                                "transform, or pass replace=True to replace that one")
