"""``Drain``, in process (uvicorn in the test's loop, in-memory stores): while it runs, initialize answers
503; the GET stream closes at once with a ``retry``; a call in flight may finish within ``drain_seconds``,
and one that does not is cut off resumably when they are up."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from sse_starlette.sse import AppStatus

from tests.support.cluster import until
from tests.support.http import (
    CLIENT_INFO,
    LATEST,
    READ_BOUND,
    RawSession,
    SSEReader,
    error_of,
    initialize,
    post_headers,
    request_body,
    serve_in_process,
)
from wiremcp import MCPServer
from wiremcp.transports.http_app import MCPHttpApp
from wiremcp.transports.streamable_http import HttpOptions

pytestmark = pytest.mark.timeout(30)


@dataclass
class Held:
    """A server whose ``hold`` tool runs until ``release`` is set."""

    server: MCPServer
    running: asyncio.Event
    release: asyncio.Event


def held_server() -> Held:
    server = MCPServer("drain-test", "1.0.0")
    held = Held(server, asyncio.Event(), asyncio.Event())

    @server.tool()
    async def hold() -> str:
        """Run until released."""
        held.running.set()
        await held.release.wait()
        return "released"

    return held


@pytest.fixture(autouse=True)
def _sse_exit_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drain ends with sse-starlette's process-wide exit flag set (the process is going away);
    put it back for the tests that follow in this process."""
    monkeypatch.setattr(AppStatus, "should_exit", False)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=READ_BOUND) as client:
        yield client


def hold_call(session: RawSession) -> dict[str, object]:
    return request_body(session.next_id(), "tools/call", {"name": "hold", "arguments": {}})


async def fresh_initialize(http: httpx.AsyncClient, url: str) -> httpx.Response:
    params = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": CLIENT_INFO}
    return await http.post(url, content=json.dumps(request_body(1, "initialize", params)), headers=post_headers())


async def test_drain_refuses_new_sessions_closes_the_get_stream_and_lets_the_call_finish(
        http: httpx.AsyncClient) -> None:
    held = held_server()
    # the drain ends with the call, which the test releases; its time never runs out while the test looks at
    # the draining server, however loaded the machine (it is longer than the test may take)
    app = MCPHttpApp(held.server, drain_seconds=60.0, options=HttpOptions(sse_after=0.01))
    async with serve_in_process(app) as base:
        url = base + "/mcp"
        session = await initialize(http, url)
        async with session.stream_get() as get:
            standalone = SSEReader(get)
            assert (await standalone.next()).data == ""  # priming
            call = hold_call(session)
            async with session.stream_post(call) as response:
                reader = SSEReader(response)
                assert (await reader.next()).data == ""  # priming: the call streams
                async with asyncio.timeout(READ_BOUND):
                    await held.running.wait()

                draining = asyncio.create_task(app.drain.run())
                closing = await standalone.rest()  # the GET stream ends at once...
                assert closing, "the GET stream ended without telling the client when to come back"
                assert closing[-1].retry is not None  # ...with a retry: the client reconnects elsewhere
                assert all(event.message is None for event in closing), closing
                assert app.draining

                refused = await fresh_initialize(http, url)
                assert refused.status_code == 503, refused.text
                assert error_of(refused) == (-32603, 1)
                assert refused.headers["retry-after"] == "1"
                assert "mcp-session-id" not in refused.headers

                assert not app.drain.done.is_set()  # still waiting for the call in flight
                assert not draining.done()
                held.release.set()
                answer = await reader.message()
                assert answer["id"] == call["id"]
                assert answer["result"]["content"][0]["text"] == "released"
                async with asyncio.timeout(READ_BOUND):
                    await draining
        assert app.drain.done.is_set()
        await app.drain.run()  # a second run (the lifespan shutdown after SIGTERM) just waits for the first
    await app.manager.close()


async def test_a_call_still_running_when_the_drain_time_is_up_is_cut_off_resumably(
        http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    held = held_server()
    app = MCPHttpApp(held.server, drain_seconds=0.2, options=HttpOptions(sse_after=0.01))
    async with serve_in_process(app) as base:
        url = base + "/mcp"
        session = await initialize(http, url)
        call = hold_call(session)
        async with session.stream_post(call) as response:
            reader = SSEReader(response)
            await reader.next()  # priming
            async with asyncio.timeout(READ_BOUND):
                await held.running.wait()
            async with asyncio.timeout(READ_BOUND):
                await app.drain.run()  # returns once drain_seconds are up
            assert app.drain.done.is_set()
            rest = await reader.rest()  # the stream was closed early, with a retry, without the answer
            assert rest, "the stream ended without telling the client when to come back"
            assert rest[-1].retry is not None
            assert all(event.message is None for event in rest), rest
            resume_from = reader.last_id
        assert resume_from is not None
        # The call was left running; once it ends, its answer is there for the client that resumes.
        live = app.manager.live[session.sid]
        held.release.set()
        await until(lambda: not live.tasks, what="the held call's end")
        # This process's SSE exit flag is set now (it would exit); resume as on a process that is not.
        monkeypatch.setattr(AppStatus, "should_exit", False)
        async with session.stream_get(resume_from) as resumed:
            answer = await SSEReader(resumed).message()
        assert answer["id"] == call["id"]
        assert answer["result"]["content"][0]["text"] == "released"
    await app.manager.close()
