"""A server's lifespan: entered once per process by whichever way serves it, the mounted servers' first, left by
the last holder; what it yields is the handler's ``ctx.lifespan_state``; one that fails leaves nothing open."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from wiremcp import Context, DefinitionError, MCPServer
from wiremcp.lifespan import Lifespan
from wiremcp.transports import Client


def recording(events: list[str], fail: bool = False) -> Lifespan:
    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[dict[str, str]]:
        events.append(f"enter {server.name}")
        if fail:
            raise RuntimeError(f"{server.name} cannot open its pool")
        try:
            yield {"name": server.name}
        finally:
            events.append(f"exit {server.name}")

    return lifespan


async def test_a_handler_reads_what_the_lifespan_yielded_while_a_client_is_open() -> None:
    events: list[str] = []
    server = MCPServer("db", lifespan=recording(events))

    @server.tool
    async def name(ctx: Context) -> str:
        return str(ctx.lifespan_state["name"])

    assert server.lifespan_state is None
    async with Client(server) as client:
        assert (await client.call_tool("name"))["content"][0]["text"] == "db"
        assert events == ["enter db"]
    assert events == ["enter db", "exit db"]
    assert server.lifespan_state is None


async def test_two_clients_at_once_share_one_run_of_it() -> None:
    events: list[str] = []
    server = MCPServer("db", lifespan=recording(events))
    first = Client(server)
    await first.__aenter__()
    async with Client(server):
        assert events == ["enter db"]
    assert events == ["enter db"]  # the first client still holds it
    await first.__aexit__()
    assert events == ["enter db", "exit db"]
    async with Client(server):  # and again, from the start
        pass
    assert events == ["enter db", "exit db", "enter db", "exit db"]


async def test_mounted_servers_lifespans_run_first_and_end_last() -> None:
    events: list[str] = []
    child = MCPServer("child", lifespan=recording(events))
    grandchild = MCPServer("grandchild", lifespan=recording(events))
    child.mount(grandchild, "g")
    parent = MCPServer("parent", lifespan=recording(events))
    parent.mount(child, "c")

    @child.tool
    async def whose(ctx: Context) -> str:
        return f"{ctx.lifespan_state['name']} {child.lifespan_state['name']}"

    async with Client(parent) as client:
        answer = (await client.call_tool("c_whose"))["content"][0]["text"]
    assert answer == "parent child"  # ctx: the served server's; a mounted server's own: its attribute
    assert events == ["enter grandchild", "enter child", "enter parent", "exit parent", "exit child",
                      "exit grandchild"]


async def test_one_that_fails_to_start_closes_the_ones_started_before_it_and_holds_nothing() -> None:
    events: list[str] = []
    child = MCPServer("child", lifespan=recording(events))
    parent = MCPServer("parent", lifespan=recording(events, fail=True))
    parent.mount(child, "c")
    with pytest.raises(RuntimeError, match="parent cannot open its pool"):
        async with Client(parent):
            pass
    assert events == ["enter child", "enter parent", "exit child"]
    assert not parent.runtime.lifespans.running


async def test_concurrent_first_clients_enter_it_once() -> None:
    events: list[str] = []
    server = MCPServer("db", lifespan=recording(events))

    async def one() -> None:
        async with Client(server) as client:
            await client.request("ping")

    await asyncio.gather(*(one() for _ in range(5)))
    assert events.count("enter db") == events.count("exit db")
    assert events[0] == "enter db"
    assert events[-1] == "exit db"


def test_a_lifespan_that_is_not_a_function_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="lifespan is a function of the server"):
        MCPServer("db", lifespan="pool")  # type: ignore[arg-type]
