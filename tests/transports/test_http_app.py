"""``wiremcp.transports.http_app``: ``MCPHttpApp``: routing, mounting the MCP endpoint inside a user's own
Starlette application, and the app's lifecycle with tasks, in process (uvicorn in the test's loop,
in-memory stores): a handshake-era session's own tasks are cancelled when the session ends (nobody can
reach them any more), and at shutdown a task still running after the drain window is failed, saying why.
(``http`` is the transport tests' shared client fixture, ``tests/transports/conftest.py``.)
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace

import httpx
import pytest
from sse_starlette.sse import AppStatus
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from examples.word_count import server
from tests.support.http import READ_BOUND, RawSession, error_of, initialize, serve_in_process
from wiremcp import MCPServer
from wiremcp.backend import Backend
from wiremcp.event_store import InMemoryEventStore
from wiremcp.runtime import Runtime
from wiremcp.task_runner import SHUT_DOWN
from wiremcp.transports.http_app import MCPHttpApp

# -- routing and mounting -------------------------------------------------------------------------------

async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the user's own route")


@pytest.mark.spec("2025-11-25/basic/transports#streamable-http")
async def test_the_endpoint_works_mounted_under_a_prefix_in_a_starlette_app() -> None:
    mcp = MCPHttpApp(server)
    app = Starlette(routes=[Route("/hello", hello), Mount("/api", app=mcp)])
    async with serve_in_process(app) as base, httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{base}/hello")).text == "the user's own route"
        session = await initialize(http, f"{base}/api/mcp")
        result = await session.request("tools/call", {"name": "word_count", "arguments": {"text": "read the wire"}})
        assert result.json()["result"]["structuredContent"] == {"words": 3, "chars": 13}
        assert (await http.post(f"{base}/api/elsewhere")).status_code == 404
        assert (await http.post(f"{base}/mcp")).status_code == 404  # only under the mount
    await mcp.manager.close()


async def test_a_custom_path_is_served_and_others_are_not() -> None:
    mcp = MCPHttpApp(server, path="/rpc/")
    async with serve_in_process(mcp) as base, httpx.AsyncClient(timeout=10) as http:
        await initialize(http, f"{base}/rpc")
        not_found = await http.post(f"{base}/mcp", json={})
        assert not_found.status_code == 404
        assert not_found.json()["error"]["code"] == -32600
    await mcp.manager.close()


# -- tasks and the app's lifecycle ----------------------------------------------------------------------



@dataclass
class Job:
    server: MCPServer = field(default_factory=lambda: MCPServer("http-tasks", "1.0.0"))
    running: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


def job_server() -> Job:
    job = Job()

    @job.server.tool(task_support="optional")
    async def wait_forever() -> str:
        """Run until cancelled."""
        job.running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            job.cancelled.set()
            raise
        return "never"

    return job


@pytest.fixture(autouse=True)
def _sse_exit_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lifespan shutdown sets sse-starlette's process-wide exit flag; put it back afterwards."""
    monkeypatch.setattr(AppStatus, "should_exit", False)


async def shut_down(app: MCPHttpApp) -> list[dict[str, object]]:
    """Run the app's lifespan shutdown (``serve_in_process`` answers the lifespan itself)."""
    messages: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    messages.put_nowait({"type": "lifespan.shutdown"})
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async with asyncio.timeout(READ_BOUND):
        await app({"type": "lifespan"}, messages.get, send)  # type: ignore[arg-type]
    return sent


async def start_task(session: RawSession) -> str:
    created = await session.call("tools/call", {"name": "wait_forever", "arguments": {}, "task": {}})
    task_id: str = created["task"]["taskId"]
    return task_id


@pytest.mark.timeout(30)
@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_deleting_a_session_cancels_the_tasks_it_owned(http: httpx.AsyncClient) -> None:
    job = job_server()
    app = MCPHttpApp(job.server)
    async with serve_in_process(app) as base:
        session = await initialize(http, base + "/mcp")
        task_id = await start_task(session)
        async with asyncio.timeout(READ_BOUND):
            await job.running.wait()
        assert (await session.delete()).status_code == 200
        async with asyncio.timeout(READ_BOUND):
            await job.cancelled.wait()
        other = await initialize(http, base + "/mcp")
        assert error_of(await other.request("tasks/get", {"taskId": task_id}))[0] == -32602
    assert job.server.runtime.task_runner.running == []


@pytest.mark.timeout(30)
@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_a_task_still_running_when_the_drain_is_over_is_failed_at_shutdown(http: httpx.AsyncClient) -> None:
    job = job_server()
    app = MCPHttpApp(job.server, drain_seconds=0.1)
    async with serve_in_process(app) as base:
        session = await initialize(http, base + "/mcp")
        task_id = await start_task(session)
        async with asyncio.timeout(READ_BOUND):
            await job.running.wait()
        sent = await shut_down(app)  # what uvicorn does on SIGTERM once it stops accepting requests
    assert sent == [{"type": "lifespan.shutdown.complete"}]
    # The drain gave the task its window, then the task was failed and its handler stopped.
    assert job.cancelled.is_set()
    record = await job.server.runtime.task_runner.store.get(task_id, f"session:{session.sid}")
    assert record is not None
    assert record.status == "failed"
    assert record.status_message == SHUT_DOWN
    assert record.error is not None
    assert record.error["data"]["retryable"] is True


class StuckEventStore(InMemoryEventStore):
    """An event store whose ``close`` never returns (a store whose server stopped answering)."""

    async def close(self) -> None:
        await asyncio.Event().wait()


async def test_a_closing_step_that_never_ends_does_not_keep_the_lifespan_from_completing(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The process exits all the same: the step is left behind after ``STEP_BOUND`` (shortened here), and the
    log says which step and where it waited."""
    monkeypatch.setattr("wiremcp.shutdown.STEP_BOUND", 0.1)
    stuck = MCPServer("stuck")
    Runtime(stuck, backend=replace(Backend.in_memory(), events=StuckEventStore()))
    app = MCPHttpApp(stuck, drain_seconds=0.0)
    with caplog.at_level(logging.WARNING, "wiremcp.shutdown"):
        sent = await shut_down(app)
    assert sent == [{"type": "lifespan.shutdown.complete"}]
    [warning] = [record.getMessage() for record in caplog.records]
    assert warning.startswith("closing the backend did not end within 0.1s"), warning
    assert "in close" in warning, warning
