"""``wiremcp.timing``: the ``Timing`` middleware measures the rest of the chain (the middleware inside it,
then the handler) for each request, whatever the outcome, logs it at DEBUG and hands it to the observers
that take times, in both eras; with a clock the handlers move, so that nothing waits."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from wiremcp import MCPServer, ToolError, jsonrpc
from wiremcp.errors import MCPError
from wiremcp.middleware import Call, CallNext
from wiremcp.outcome import Outcome
from wiremcp.timing import Timing
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"
ERAS = pytest.mark.parametrize("version", ["2025-11-25", STATELESS])


class Clock:
    """A clock that only moves when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Times:
    """An observer that takes times, and records them."""

    def __init__(self) -> None:
        self.times: list[tuple[str, str, str | None, float]] = []

    def started(self, request: jsonrpc.Request, session_id: str | None) -> Any:
        return None

    def finished(self, token: Any, answer: Outcome | None) -> None:
        return None

    def timed(self, name: str, method: str, component: str | None, seconds: float) -> None:
        self.times.append((name, method, component, seconds))


class Plain:
    """An observer that does not take times."""

    def __init__(self) -> None:
        self.finished_: list[Outcome | None] = []

    def started(self, request: jsonrpc.Request, session_id: str | None) -> Any:
        return None

    def finished(self, token: Any, answer: Outcome | None) -> None:
        self.finished_.append(answer)


def _server(clock: Clock) -> MCPServer:
    server = MCPServer("timed")

    @server.tool()
    def slow() -> str:
        clock.now += 0.25
        return "done"

    @server.tool()
    def fails() -> str:
        clock.now += 0.5
        raise ToolError("no")

    return server


def _slow_middleware(clock: Clock, seconds: float) -> Any:
    async def middleware(call: Call, call_next: CallNext) -> JSONObject | None:
        clock.now += seconds
        return await call_next()

    return middleware


@ERAS
async def test_it_times_the_handler_and_the_middleware_inside_it(version: str) -> None:
    clock = Clock()
    server = _server(clock)
    times = Times()
    server.runtime.observe(times)
    server.add_middleware(Timing("total", clock=clock))
    server.add_middleware(_slow_middleware(clock, 1.0))
    server.add_middleware(Timing(clock=clock))
    async with Client(server, protocol_version=version) as client:
        before = len(times.times)  # (initialize, in the handshake era)
        await client.call_tool("slow")
    assert times.times[before:] == [("handler", "tools/call", "slow", 0.25), ("total", "tools/call", "slow", 1.25)]


@ERAS
async def test_errors_and_tool_errors_are_timed_too(version: str) -> None:
    clock = Clock()
    server = _server(clock)
    times = Times()
    server.runtime.observe(times)
    server.add_middleware(Timing(clock=clock))

    @server.add_middleware
    async def refuse(call: Call, call_next: CallNext) -> JSONObject | None:
        if call.name == "refused":
            clock.now += 2.0
            raise MCPError(-32001, "no")
        return await call_next()

    async with Client(server, protocol_version=version) as client:
        await client.call_tool("fails")
        params: JSONObject = {"name": "refused", "arguments": {}}
        response = await client.request_raw("tools/call", client.with_meta(params) if client.stateless else params)
    assert response["error"]["code"] == -32001
    assert [(c, s) for _, m, c, s in times.times if m == "tools/call"] == [("fails", 0.5), ("refused", 2.0)]


async def test_only_the_methods_named_are_timed_and_notifications_never() -> None:
    clock = Clock()
    server = _server(clock)
    times = Times()
    server.runtime.observe(times)
    server.add_middleware(Timing(methods=["tools/call"], clock=clock))

    async def roots(params: JSONObject) -> JSONObject:
        return {"roots": []}

    async with Client(server, roots=roots) as client:
        await client.list_tools()
        await client.notify("notifications/roots/list_changed")
        await client.call_tool("slow")
    assert times.times == [("handler", "tools/call", "slow", 0.25)]


async def test_observers_without_timed_are_passed_over() -> None:
    clock = Clock()
    server = _server(clock)
    plain, times = Plain(), Times()
    server.runtime.observe(plain)
    server.add_middleware(Timing(clock=clock))
    async with Client(server) as client:
        await client.call_tool("slow")  # one observer, which does not take times
        server.runtime.observe(times)
        await client.call_tool("slow")  # two (``Observers``): only the one that takes times gets it
    assert len(plain.finished_) == 3
    assert times.times == [("handler", "tools/call", "slow", 0.25)]


async def test_with_no_observer_it_only_logs(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    server = _server(clock)
    server.add_middleware(Timing("tool_time", clock=clock))
    with caplog.at_level(logging.DEBUG, logger="wiremcp.timing"):
        async with Client(server) as client:
            await client.call_tool("slow")
            await client.list_tools()
    messages = [r.getMessage() for r in caplog.records if r.name == "wiremcp.timing"]
    assert "tool_time: tools/call slow took 250.000 ms" in messages
    assert "tool_time: tools/list took 0.000 ms" in messages
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "wiremcp.timing")


@pytest.mark.parametrize("name", ["", "two words", "dotted.name", "ünïcode"])
def test_a_timer_name_must_be_a_plain_identifier(name: str) -> None:
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        Timing(name)
