"""``wiremcp.transports.live_session``: ``LiveSession``, a session as this process serves it: the protocol
runner beside its SSE streams (server-wide notifications on its GET stream), the version it speaks, when
it is busy and since when idle (an injected clock), and how it closes: for good, or its streams only,
resumably."""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.support.http import FakeClock
from wiremcp import MCPServer
from wiremcp.event_store import InMemoryEventStore
from wiremcp.state import SessionState
from wiremcp.tools import Tool
from wiremcp.transports.channels import EventChannel
from wiremcp.transports.live_session import DEFAULT_VERSION, LiveSession, new_stream_id
from wiremcp.transports.shared_streams import STANDALONE_STREAM

BOUND = 10.0
"""Failure bound for a read; nothing waits for it."""


def _noop() -> None:
    return None


async def wait_for(event: asyncio.Event) -> None:
    await event.wait()


def _live(server: MCPServer | None = None, clock: FakeClock | None = None, **state: object) -> LiveSession:
    return LiveSession(server or MCPServer("live"), SessionState(id="sid-1", **state),  # type: ignore[arg-type]
                       InMemoryEventStore(), clock=clock or FakeClock())


def test_stream_ids_are_unique_names() -> None:
    ids = {new_stream_id() for _ in range(1_000)}
    assert len(ids) == 1_000
    assert all(re.fullmatch(r"p[0-9a-f]{12}", i) for i in ids)


@pytest.mark.spec("2025-11-25/basic/transports#protocol-version-header")
def test_the_version_is_the_negotiated_one_or_what_a_client_without_the_header_speaks() -> None:
    live = _live()
    assert (live.id, live.version) == ("sid-1", DEFAULT_VERSION) == ("sid-1", "2025-03-26")
    assert _live(protocol_version="2025-06-18").version == "2025-06-18"
    live.close()


@pytest.mark.spec("2025-11-25/server/tools#list-changed-notification")
async def test_server_wide_notifications_go_out_on_the_sessions_get_stream() -> None:
    server = MCPServer("live")
    live = _live(server, initialized=True, ready=True, server_capabilities=["tools"])
    assert live.standalone.stream == STANDALONE_STREAM
    reader = live.standalone.attach()
    server.add_tool(Tool(_noop, name="added"))
    item = await asyncio.wait_for(reader.get(), BOUND)
    assert item == (0, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    live.close()


async def test_busy_while_working_and_idle_from_the_end_of_the_last_stream() -> None:
    clock = FakeClock()
    live = _live(clock=clock)
    assert not live.busy
    assert live.idle_since == clock()
    live.stream_opened()
    assert live.busy
    clock.advance(30)
    live.stream_closed()
    assert not live.busy
    assert live.idle_since == clock()  # the stream's end, not the request's arrival
    release = asyncio.Event()
    work = asyncio.create_task(wait_for(release))
    live.spawn(work)
    assert live.busy
    release.set()
    await asyncio.wait_for(work, BOUND)
    # The task leaves the session in its done-callback: callbacks run in the order they were scheduled,
    # so one scheduled now runs after it.
    loop = asyncio.get_running_loop()
    turned = loop.create_future()
    loop.call_soon(turned.set_result, None)
    await turned
    assert not live.busy
    live.close()


async def test_closing_for_good_ends_everything_the_session_had() -> None:
    server = MCPServer("live")
    live = _live(server, initialized=True, ready=True, server_capabilities=["tools"])
    channel = live.channels["p1"] = EventChannel("sid-1", "p1", None)
    post_reader, get_reader = channel.attach(), live.standalone.attach()
    pending = asyncio.create_task(wait_for(asyncio.Event()))
    live.spawn(pending)
    live.close()
    await asyncio.gather(pending, return_exceptions=True)
    assert pending.cancelled()
    assert (channel.finished, live.standalone.finished) == (True, True)
    assert (post_reader.get_nowait(), get_reader.get_nowait()) == (None, None)
    server.add_tool(Tool(_noop, name="after"))  # detached: nothing more reaches it
    assert get_reader.empty()


async def test_closing_the_streams_only_lets_the_client_resume_them() -> None:
    live = _live()
    channel = live.channels["p1"] = EventChannel("sid-1", "p1", None)
    post_reader, get_reader = channel.attach(), live.standalone.attach()
    live.close_streams()
    assert (post_reader.get_nowait(), get_reader.get_nowait()) == (None, None)
    assert (channel.finished, live.standalone.finished) == (False, False)
    live.close()
