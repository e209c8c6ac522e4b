"""``wiremcp.transports.request_run``: ``RequestRun``, one handshake-era request answered over Streamable
HTTP: what the handler sends is buffered until the endpoint picks a JSON answer or an SSE stream, then goes
to that stream (primed, numbered, the answer last); messages for the GET stream go there; and the handler
may close its SSE stream early (resumably). Driven in process on a ``LiveSession``."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.http import FakeClock
from wiremcp import Context, MCPServer, jsonrpc
from wiremcp.event_store import InMemoryEventStore
from wiremcp.inbound import Inbound
from wiremcp.state import SessionState
from wiremcp.transports.channels import EventChannel, Item
from wiremcp.transports.live_session import LiveSession
from wiremcp.transports.request_run import RequestRun
from wiremcp.types import JSONObject

BOUND = 10.0
"""Failure bound for anything awaited here; nothing should come close."""


def log(data: str) -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": data}}


ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "done"}]}}


def _live(release: asyncio.Event) -> LiveSession:
    server = MCPServer("runs")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("before")
        await release.wait()
        await ctx.info("after")
        return "done"

    state = SessionState(id="sid-1", protocol_version="2025-11-25", initialized=True, ready=True,
                         server_capabilities=["logging", "tools"])
    return LiveSession(server, state, InMemoryEventStore(), clock=FakeClock())


def _run(live: LiveSession, *, to_standalone: bool = False) -> RequestRun:
    return RequestRun(live, Inbound(jsonrpc.Request(1, "tools/call", {"name": "chatty", "arguments": {}})),
                      to_standalone)


def queued(reader: asyncio.Queue[Item]) -> list[Item]:
    items = []
    while not reader.empty():
        items.append(reader.get_nowait())
    return items


async def test_what_the_handler_sends_is_buffered_until_the_answer() -> None:
    release = asyncio.Event()
    release.set()
    live = _live(release)
    run = _run(live)
    await asyncio.wait_for(run.execute(), BOUND)
    assert (run.done, run.changed) == (True, True)
    assert run.buffer == [log("before"), log("after")]
    assert run.response == ANSWER
    live.close()


@pytest.mark.spec("2025-11-25/basic/transports#sending-messages-to-the-server")
async def test_switched_to_sse_the_buffer_goes_first_then_the_rest_and_the_answer_last() -> None:
    release = asyncio.Event()
    live = _live(release)
    run = _run(live)
    execution = asyncio.create_task(run.execute())
    await asyncio.wait_for(run.wait(BOUND), BOUND)  # the handler sent its first message
    channel = live.channels["p1"] = EventChannel("sid-1", "p1", None)
    reader = channel.attach()
    await run.to_sse(channel, prime=True)
    release.set()
    await asyncio.wait_for(execution, BOUND)
    assert queued(reader) == [(0, None), (1, log("before")), (2, log("after")), (3, ANSWER), None]
    assert channel.finished
    assert "p1" not in live.channels  # the stream is done with
    live.close()


async def test_messages_for_the_get_stream_go_there() -> None:
    release = asyncio.Event()
    release.set()
    live = _live(release)
    reader = live.standalone.attach()
    run = _run(live, to_standalone=True)
    await asyncio.wait_for(run.execute(), BOUND)
    assert queued(reader) == [(0, log("before")), (1, log("after"))]
    assert run.buffer == []
    assert run.response == ANSWER
    live.close()


@pytest.mark.spec("2025-11-25/basic/transports#resumability-and-redelivery")
async def test_the_handler_may_close_its_stream_early_but_not_the_get_stream_nor_after_the_answer() -> None:
    release = asyncio.Event()
    live = _live(release)
    before = _run(live)
    assert before.close_stream()  # before any stream: the endpoint is woken to switch, then close
    assert (before.close_requested, before.changed) == (True, True)
    streaming = _run(live)
    channel = EventChannel("sid-1", "p2", None)
    reader = channel.attach()
    await streaming.to_sse(channel, prime=False)
    assert streaming.close_stream()
    assert queued(reader) == [None]
    assert not channel.finished  # resumable
    assert not _run(live, to_standalone=True).close_stream()
    release.set()
    finished = _run(live)
    await asyncio.wait_for(finished.execute(), BOUND)
    assert not finished.close_stream()
    live.close()
