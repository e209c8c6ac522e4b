"""``wiremcp.shutdown.shut_down``: the one shutdown sequence of every transport."""

from __future__ import annotations

import asyncio

from wiremcp import MCPServer
from wiremcp.shutdown import shut_down


async def test_listen_requests_end_and_the_transport_quiesces_before_the_grace() -> None:
    server = MCPServer("s")
    subscription = server.runtime.bus.subscribe()
    quiesced: list[bool] = []

    async def listened() -> list[object]:
        return [event async for event in subscription]

    listener = asyncio.ensure_future(listened())
    left = await shut_down(server, grace=30.0, running=lambda: [listener], quiesce=lambda: quiesced.append(True))
    assert quiesced == [True]
    assert listener.done()  # the bus ended: the subscription's stream closed, within the grace
    assert left == 0


async def test_what_is_still_running_after_the_grace_is_counted_not_awaited() -> None:
    server = MCPServer("s")
    never = asyncio.get_running_loop().create_future()
    assert await shut_down(server, grace=0.0, running=lambda: [never]) == 1
    assert not never.done()
    never.cancel()


async def test_requests_that_finish_in_the_grace_are_waited_for() -> None:
    server = MCPServer("s")
    release = asyncio.Event()

    async def request() -> None:
        await release.wait()

    running = asyncio.ensure_future(request())
    asyncio.get_running_loop().call_soon(release.set)
    assert await shut_down(server, grace=30.0, running=lambda: [t for t in [running] if not t.done()]) == 0
    assert running.done()


async def test_tasks_still_running_are_failed_saying_why() -> None:
    server = MCPServer("s")
    started = asyncio.Event()

    @server.tool(task_support="optional")
    async def slow() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    from wiremcp.transports.memory import Client

    async with Client(server) as client:
        created = await client.request("tools/call", {"name": "slow", "arguments": {}, "task": {}})
        await started.wait()
        await shut_down(server, grace=0.0, running=list)
        state = await client.request("tasks/get", {"taskId": created["task"]["taskId"]})
    assert state["status"] == "failed"
