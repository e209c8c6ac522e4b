"""``wiremcp.shutdown.shut_down``: the one shutdown sequence of every transport, driven through the in-memory
client (a real ``Connection``, real JSON on the way) in both eras: it waits for every request ``serve`` is
answering, then cuts off those still running with the one retryable answer."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tests.support.held import Held, held_server
from wiremcp import MCPServer
from wiremcp.protocol import LATEST_HANDSHAKE_VERSION, LATEST_STATELESS_VERSION
from wiremcp.shutdown import CUT_OFF, bounded, shut_down
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

BOUND = 10.0
"""Failure bound for one expected answer."""
ERAS = [LATEST_HANDSHAKE_VERSION, LATEST_STATELESS_VERSION]


async def call_held(client: Client, held: Held) -> asyncio.Future[JSONObject]:
    """``hold`` called, and known to be running."""
    params: JSONObject = {"name": "hold", "arguments": {}}
    call = asyncio.ensure_future(client.request_raw("tools/call", client.with_meta(params) if client.stateless
                                                    else params, id="held"))
    async with asyncio.timeout(BOUND):
        await held.started.wait()
    return call


async def test_listen_requests_end_and_the_transport_quiesces_before_the_grace() -> None:
    server = MCPServer("s")
    quiesced: list[bool] = []
    async with Client(server, protocol_version=LATEST_STATELESS_VERSION) as client:
        listen = asyncio.ensure_future(client.request_raw("subscriptions/listen", client.with_meta(
            {"notifications": {"toolsListChanged": True}})))
        await asyncio.wait_for(client.wait_for_notification("notifications/subscriptions/acknowledged"), BOUND)
        left = await shut_down(server, grace=30.0, quiesce=lambda: quiesced.append(True))
        answer = await asyncio.wait_for(listen, BOUND)
    assert quiesced == [True]
    assert left == 0  # the bus ended: the listen request was answered within the grace, nothing was cut off
    assert answer["result"]["resultType"] == "complete", answer


@pytest.mark.parametrize("version", ERAS)
async def test_requests_that_finish_in_the_grace_are_waited_for_and_answered(version: str) -> None:
    held = held_server()
    async with Client(held.server, protocol_version=version) as client:
        call = await call_held(client, held)
        asyncio.get_running_loop().call_soon(held.release.set)
        assert await shut_down(held.server, grace=30.0) == 0
        answer = await asyncio.wait_for(call, BOUND)
    assert answer["result"]["content"] == [{"type": "text", "text": "released"}], answer


@pytest.mark.parametrize("version", ERAS)
async def test_a_request_still_running_after_the_grace_is_cut_off_with_a_retryable_answer(version: str) -> None:
    held = held_server()
    async with Client(held.server, protocol_version=version) as client:
        call = await call_held(client, held)
        assert await shut_down(held.server, grace=0.0) == 1
        answer = await asyncio.wait_for(call, BOUND)
        assert held.cancelled.is_set()  # its handler was stopped
        assert len(held.server.runtime.requests) == 0
    assert answer["error"] == {"code": -32603, "message": CUT_OFF, "data": {"replica": None, "retryable": True}}, answer


async def test_a_request_the_client_cancelled_is_not_answered_by_the_shutdown() -> None:
    held = held_server()
    async with Client(held.server) as client:
        call = await call_held(client, held)
        await client.notify("notifications/cancelled", {"requestId": "held"})
        async with asyncio.timeout(BOUND):
            await held.cancelled.wait()
        assert await shut_down(held.server, grace=0.0) == 0
        assert not call.done()  # no answer: the client cancelled it
        call.cancel()


async def test_tasks_still_running_are_failed_saying_why() -> None:
    server = MCPServer("s")
    started = asyncio.Event()

    @server.tool(task_support="optional")
    async def slow() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async with Client(server) as client:
        created = await client.request("tools/call", {"name": "slow", "arguments": {}, "task": {}})
        await started.wait()
        await shut_down(server, grace=0.0)
        state = await client.request("tasks/get", {"taskId": created["task"]["taskId"]})
    assert state["status"] == "failed"


async def test_a_task_whose_handler_holds_on_after_its_cancellation_does_not_hold_the_shutdown(
        caplog: pytest.LogCaptureFixture) -> None:
    """A handler that waits in its clean-up (here: for good) is left behind after ``STEP_BOUND`` (shortened):
    the task is failed all the same, the shutdown returns, and the warning says where the handler waits."""
    server = MCPServer("s")
    started, cleaning = asyncio.Event(), asyncio.Event()

    @server.tool(task_support="optional")
    async def stubborn() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await asyncio.Event().wait()  # a clean-up that never ends (until cancelled again)
        return "never"

    async with Client(server) as client:
        created = await client.request("tools/call", {"name": "stubborn", "arguments": {}, "task": {}})
        await started.wait()
        with caplog.at_level(logging.WARNING, "wiremcp.shutdown"):
            async with asyncio.timeout(BOUND):
                await shut_down(server, grace=0.0, step_bound=0.2)
        assert cleaning.is_set()
        state = await client.request("tasks/get", {"taskId": created["task"]["taskId"]})
    assert state["status"] == "failed"
    [warning] = [record.getMessage() for record in caplog.records if "left behind" in record.getMessage()]
    assert warning.startswith("failing the tasks still running did not end within 0.2s"), warning
    assert "in shutdown" in warning, warning  # where: the runner's wait for its handlers


async def test_bounded_says_whether_the_step_ended_and_logs_what_it_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def fails() -> None:
        raise RuntimeError("closing failed")

    async def never() -> None:
        await asyncio.Event().wait()

    with caplog.at_level(logging.WARNING, "wiremcp.shutdown"):
        assert await bounded("a quick step", asyncio.sleep(0)) is True
        assert await bounded("a failing step", fails()) is True
        assert await bounded("a stuck step", never(), 0.1) is False
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "a failing step failed: RuntimeError: closing failed", messages
    assert caplog.records[0].exc_info is None  # one line
    assert messages[1].startswith("a stuck step did not end within 0.1s and was left behind"), messages
    assert "in never" in messages[1], messages
