"""``Connection``: requests run concurrently, reading waits when too many are in flight, and pacing never
holds reading up for long."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from wiremcp import MCPServer
from wiremcp.connection import Connection
from wiremcp.session import ServerSession
from wiremcp.types import JSONObject

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
BOUND = 20.0
"""Failure bound for anything awaited here; generous, for loaded machines."""


def _server(release: asyncio.Event) -> MCPServer:
    server = MCPServer("connection")

    @server.tool()
    async def wait() -> str:
        await release.wait()
        return "released"

    @server.tool()
    def double(n: int) -> int:
        return 2 * n

    return server


class _Wire:
    def __init__(self) -> None:
        self.answers: dict[Any, JSONObject] = {}
        self.changed = asyncio.Event()

    async def write(self, message: JSONObject | list[JSONObject]) -> None:
        for item in message if isinstance(message, list) else [message]:
            self.answers[item.get("id")] = item
        self.changed.set()

    async def answer(self, rid: Any) -> JSONObject:
        while rid not in self.answers:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), BOUND)
        return self.answers[rid]


def _line(rid: Any, method: str, params: JSONObject | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode()


async def _connect(release: asyncio.Event, **kwargs: Any) -> tuple[Connection, _Wire]:
    wire = _Wire()
    connection = Connection(ServerSession(_server(release)), wire.write, **kwargs)
    await connection.feed(_line("init", "initialize", INIT))
    await connection.feed(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return connection, wire


async def test_pacing_does_not_hold_reading_up_behind_slow_requests() -> None:
    """Reading waits ``pace_wait`` once, and not again while the requests in flight are stuck: the pings read
    after that are so many that each waiting ``pace_wait`` would take five times ``BOUND`` (no measurement:
    ``BOUND`` is a failure bound that only such waiting can reach)."""
    pace_wait = 0.5
    pings = range(6, 6 + int(5 * BOUND / pace_wait))
    release = asyncio.Event()
    connection, wire = await _connect(release, pace=4, pace_wait=pace_wait)
    for rid in range(1, 5):
        await connection.feed(_line(rid, "tools/call", {"name": "wait"}))
    try:
        async with asyncio.timeout(BOUND):
            await connection.feed(_line(5, "ping"))  # 4 in flight that will not finish: waits pace_wait, no more
            assert await wire.answer(5) == {"jsonrpc": "2.0", "id": 5, "result": {}}
            for rid in pings:
                await connection.feed(_line(rid, "ping"))
    except TimeoutError:
        pytest.fail(f"reading {len(pings)} pings behind stuck requests took over {BOUND}s: it waited pace_wait again")
    for rid in pings:
        assert (await wire.answer(rid))["result"] == {}
    release.set()
    for rid in range(1, 5):
        assert (await wire.answer(rid))["result"]["content"][0]["text"] == "released"
    await connection.close()


async def test_pipelined_requests_beyond_every_limit_all_get_answers() -> None:
    connection, wire = await _connect(asyncio.Event(), max_concurrent=16, pace=8)
    for rid in range(1, 501):
        await connection.feed(_line(rid, "tools/call", {"name": "double", "arguments": {"n": rid}}))
    for rid in range(1, 501):
        assert (await wire.answer(rid))["result"]["structuredContent"] == {"result": 2 * rid}
    await connection.close()


async def test_reading_waits_for_a_free_slot() -> None:
    release = asyncio.Event()
    connection, wire = await _connect(release, max_concurrent=2)
    await connection.feed(_line(1, "tools/call", {"name": "wait"}))
    await connection.feed(_line(2, "tools/call", {"name": "wait"}))
    third = asyncio.ensure_future(connection.feed(_line(3, "ping")))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not third.done()  # both slots taken: backpressure (only a finished request frees one)
    release.set()
    await asyncio.wait_for(third, BOUND)
    assert await wire.answer(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    await connection.close()
