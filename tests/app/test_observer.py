"""Request observers: ``wiremcp.entry.serve`` tells ``server.runtime.observer`` when each request starts and how it ended,
in both eras, and sets the JSON-RPC request id that logs carry; the observers that take times get those of
``Timing`` middleware."""

from __future__ import annotations

import asyncio
from typing import Any

from wiremcp import MCPServer, ToolError
from wiremcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND
from wiremcp.jsonrpc import Request
from wiremcp.logs import REQUEST_ID
from wiremcp.observer import METHODS, Observers, method_label, outcome, takes_times
from wiremcp.outcome import Outcome
from wiremcp.transports.memory import Client

STATELESS = "2026-07-28"


class Recorder:
    """Records every start and end, and the request id in scope when a request starts."""

    def __init__(self) -> None:
        self.started_: list[tuple[str, Any, str | None]] = []
        self.finished_: list[tuple[str, str, int | None]] = []
        self.changed = asyncio.Event()

    def started(self, request: Request, session_id: str | None) -> Any:
        self.started_.append((request.method, request.id, session_id))
        return request.method

    def finished(self, token: Any, answer: Outcome | None) -> None:
        self.finished_.append((token, *outcome(answer)))
        self.changed.set()

    async def wait_for(self, entry: tuple[str, str, int | None]) -> None:
        while entry not in self.finished_:
            self.changed.clear()
            await self.changed.wait()


def _server() -> MCPServer:
    server = MCPServer("observed")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def request_id() -> str:
        return repr(REQUEST_ID.get())

    @server.tool()
    def fails() -> str:
        raise ToolError("no")

    return server


async def test_every_request_is_seen_with_its_outcome_in_the_handshake_era() -> None:
    server = _server()
    recorder = Recorder()
    server.runtime.observe(recorder)
    async with Client(server) as client:
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("fails")
        await client.request_raw("tools/call", {"name": "missing"})
        await client.request_raw("nope/nope")
    assert [m for m, _, _ in recorder.started_] == ["initialize", "tools/call", "tools/call", "tools/call", "nope/nope"]
    assert all(sid is None for _, _, sid in recorder.started_)  # in memory: no session id
    assert recorder.finished_ == [("initialize", "ok", None), ("tools/call", "ok", None),
                                  ("tools/call", "tool_error", None), ("tools/call", "error", INVALID_PARAMS),
                                  ("nope/nope", "error", METHOD_NOT_FOUND)]


async def test_stateless_requests_are_seen_too() -> None:
    server = _server()
    recorder = Recorder()
    server.runtime.observe(recorder)
    async with Client(server, protocol_version=STATELESS) as client:
        await client.call_tool("echo", {"text": "hi"})
    assert recorder.finished_ == [("tools/call", "ok", None)]


async def test_a_cancelled_request_ends_as_cancelled() -> None:
    server = MCPServer("cancel")
    recorder = Recorder()
    server.runtime.observe(recorder)
    started = asyncio.Event()

    @server.tool()
    async def wait_forever() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async with Client(server) as client:
        call = asyncio.ensure_future(client.request_raw("tools/call", {"name": "wait_forever"}, id="c1"))
        await started.wait()
        await client.notify("notifications/cancelled", {"requestId": "c1"})
        async with asyncio.timeout(10):
            await recorder.wait_for(("tools/call", "cancelled", None))
        call.cancel()


async def test_the_request_id_is_known_while_the_request_runs_and_only_then() -> None:
    server = _server()
    async with Client(server) as client:
        result = await client.request_raw("tools/call", {"name": "request_id"}, id="r-7")
    assert result["result"]["content"][0]["text"] == "'r-7'"
    assert REQUEST_ID.get() is None


async def test_observers_are_called_in_order_and_can_be_removed() -> None:
    server = _server()
    first, second = Recorder(), Recorder()
    assert server.runtime.observer is None
    server.runtime.observe(first)
    server.runtime.observe(second)
    server.runtime.observe(first)  # already observing: not twice
    assert server.runtime.observers == (first, second)
    assert isinstance(server.runtime.observer, Observers)
    async with Client(server) as client:
        await client.call_tool("echo", {"text": "a"})
        server.runtime.unobserve(first)
        assert server.runtime.observer is second
        await client.call_tool("echo", {"text": "b"})
        server.runtime.unobserve(second)
        assert server.runtime.observer is None
        await client.call_tool("echo", {"text": "c"})
    assert len(first.finished_) == 2  # initialize and the first call
    assert len(second.finished_) == 3


def test_outcomes() -> None:
    def answered(message: dict[str, Any]) -> Outcome:
        return Outcome({"jsonrpc": "2.0", "id": 1, **message})

    assert outcome(None) == ("cancelled", None)
    assert outcome(answered({"result": {}})) == ("ok", None)
    assert outcome(answered({"result": {"content": [], "isError": True}})) == ("tool_error", None)
    assert outcome(answered({"result": {"resultType": "input_required"}})) == ("input_required", None)
    assert outcome(answered({"error": {"code": -32602, "message": "bad"}})) == ("error", -32602)


def test_method_labels_are_the_methods_a_server_answers() -> None:
    dispatcher = MCPServer("all").runtime.dispatcher
    assert set(dispatcher._handlers) | set(dispatcher._stateless_handlers) == METHODS
    assert method_label("tools/call") == "tools/call"
    assert method_label("made/up") == "other"


class Timed(Recorder):
    """A recorder that also takes the times ``Timing`` measures."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[tuple[str, str, str | None, float]] = []

    def timed(self, name: str, method: str, component: str | None, seconds: float) -> None:
        self.times.append((name, method, component, seconds))


def test_times_go_to_the_observers_that_take_them() -> None:
    plain, first, second = Recorder(), Timed(), Timed()
    assert not takes_times(plain)
    assert takes_times(first)
    observers = Observers(first, plain, second)
    assert takes_times(observers)  # it forwards, to those that take them
    observers.timed("handler", "tools/call", "echo", 0.5)
    observers.timed("total", "tools/list", None, 0.25)
    assert first.times == second.times == [("handler", "tools/call", "echo", 0.5), ("total", "tools/list", None, 0.25)]
    Observers(plain).timed("handler", "ping", None, 0.1)  # none takes them: nothing happens
