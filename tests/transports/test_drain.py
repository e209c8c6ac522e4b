"""``Drain``, the graceful shutdown of HTTP at SIGTERM.

- In process (uvicorn in the test's loop, in-memory stores): while it runs, initialize (and a new HTTP+SSE
  stream) answers 503; the GET stream closes at once with a ``retry``; a call in flight may finish within
  ``drain_seconds``, and one that does not is cut off when they are up: its stream ends with the retryable
  error answering it.
- Real processes (``wiremcp http``, whose uvicorn waits for every connection at SIGTERM with no limit of its
  own), a real SIGTERM, raw HTTP, per transport (Streamable HTTP in the handshake era and in the stateless
  era, the 2024-11-05 HTTP+SSE transport): a short call finishes within ``WIREMCP_DRAIN_SECONDS`` with its
  result, a hung one is answered with the retryable error once they are up, and the process exits, with no
  traceback. That the process is gone is awaited with a generous deadline (``EXIT_BOUND``), never measured:
  a hung call that held it open would keep it alive for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sse_starlette.sse import AppStatus

from tests.support.cluster import until
from tests.support.held import held_server
from tests.support.http import (
    CLIENT_INFO,
    LATEST,
    READ_BOUND,
    RawSession,
    SSEReader,
    UvicornProcess,
    error_of,
    initialize,
    parse_sse,
    post_headers,
    request_body,
    run_uvicorn,
    run_wiremcp_http,
    serve_in_process,
)
from tests.support.legacy_sse import connect, handshake
from tests.support.settings_server import SETTINGS_SERVER
from tests.support.stateless_http import Call, post, with_meta
from wiremcp.shutdown import CUT_OFF
from wiremcp.transports.http_app import MCPHttpApp
from wiremcp.transports.streamable_http import HttpOptions

pytestmark = pytest.mark.timeout(30)


def cut_off(request_id: object) -> dict[str, object]:
    """The answer of a call the drain cut off (``wiremcp.shutdown.CUT_OFF``, retryable)."""
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": -32603, "message": CUT_OFF, "data": {"replica": None, "retryable": True}}}


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
                    await held.started.wait()

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
                legacy = await http.get(base + "/sse", headers={"accept": "text/event-stream"})
                assert legacy.status_code == 503, legacy.text  # no new HTTP+SSE session either
                assert error_of(legacy) == (-32603, None)
                assert legacy.headers["retry-after"] == "1"

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


async def test_a_call_still_running_when_the_drain_time_is_up_is_answered_with_the_retryable_error(
        http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    held = held_server()
    app = MCPHttpApp(held.server, drain_seconds=0.2, options=HttpOptions(sse_after=0.01))
    async with serve_in_process(app) as base:
        url = base + "/mcp"
        session = await initialize(http, url)
        call = hold_call(session)
        async with session.stream_post(call) as response:
            reader = SSEReader(response)
            primed = await reader.next()  # priming
            async with asyncio.timeout(READ_BOUND):
                await held.started.wait()
            async with asyncio.timeout(READ_BOUND):
                await app.drain.run()  # returns once drain_seconds are up
            assert app.drain.done.is_set()
            rest = await reader.rest()  # the stream ends with the call's answer: the retryable error
        assert [event.message for event in rest] == [cut_off(call["id"])], rest
        assert held.cancelled.is_set()  # and the handler was stopped
        # The answer is stored with the stream's events: a client that lost the stream reads it on resuming
        # (with Redis, on any replica). This process's SSE exit flag is set now (it would exit); resume as
        # on a process that is not.
        monkeypatch.setattr(AppStatus, "should_exit", False)
        assert primed.id is not None
        async with session.stream_get(primed.id) as resumed:
            assert await SSEReader(resumed).message() == cut_off(call["id"])
    await app.manager.close()


# == real processes ====================================================================================

DRAIN = 2.0
"""``WIREMCP_DRAIN_SECONDS`` of the real processes: ten times ``SHORT``, nothing beside ``HUNG``."""
SHORT = 0.2
"""Seconds a call the drain lets finish takes."""
HUNG = 3600.0
"""Seconds a call that the drain has to cut off would take."""
EXIT_BOUND = DRAIN + 20.0
"""Failure bound for a process to be gone after SIGTERM, and for the answers it sends on its way: the drain,
and a generous margin for loaded machines."""


def nap(seconds: float) -> dict[str, object]:
    """``tools/call`` params of the settings server's ``nap``, which answers after ``seconds`` without a word."""
    return {"name": "nap", "arguments": {"seconds": seconds}}


@pytest.fixture
async def patient() -> AsyncIterator[httpx.AsyncClient]:
    """A client that waits for an answer as long as the drain may take to send it."""
    async with httpx.AsyncClient(timeout=EXIT_BOUND) as client:
        yield client


@contextlib.contextmanager
def draining_server() -> Iterator[UvicornProcess]:
    """``wiremcp http`` serving the settings server with a ``DRAIN``-second drain."""
    with run_wiremcp_http(SETTINGS_SERVER, {"WIREMCP_DRAIN_SECONDS": str(DRAIN)}) as process:
        yield process


async def until_in_flight(http: httpx.AsyncClient, process: UvicornProcess, count: int) -> None:
    """Until the server's own metrics count ``count`` requests being answered: they have arrived and run."""
    seen: list[float] = []

    async def counted() -> bool:
        metrics = (await http.get(process.base_url + "/metrics")).text
        value = next(float(line.split()[1]) for line in metrics.splitlines()
                     if line.startswith("wiremcp_requests_in_flight "))
        seen.append(value)
        return value >= count

    await until(counted, what=lambda: f"{count} requests in flight (the metrics said {seen[-1:]})")


async def sigterm_and_wait_for_exit(process: UvicornProcess) -> None:
    """A real SIGTERM; the process must be gone within ``EXIT_BOUND``, by the signal or with status 0 (uvicorn
    re-raises the signal it caught), having written no traceback (waited for in a thread: the test's own
    streams go on being read meanwhile)."""
    await asyncio.to_thread(process.stop_and_wait, EXIT_BOUND)


def answer_of(response: httpx.Response) -> tuple[int, dict[str, Any]]:
    """The HTTP status and the JSON-RPC answer of a complete response, a JSON body or an SSE stream."""
    if response.headers["content-type"].startswith("text/event-stream"):
        answers = [event.message for event in parse_sse(response.text) if event.message is not None]
        return response.status_code, answers[-1]
    return response.status_code, response.json()


def assert_cut_off_as_json(response: httpx.Response, request_id: object) -> None:
    """The answer of a call cut off before its answer started: 503 with ``Retry-After``, the retryable error."""
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1", response.headers
    assert response.headers["content-type"] == "application/json", response.headers
    assert response.json() == cut_off(request_id), response.text


@pytest.mark.timeout(120)
@pytest.mark.setting("WIREMCP_DRAIN_SECONDS")
@pytest.mark.spec("2026-07-28/basic/transports/streamable-http")
async def test_sigterm_ends_a_hung_stateless_call_within_the_drain(patient: httpx.AsyncClient) -> None:
    """2026-07-28: a short call finishes with its result; hung calls are answered once the drain is up, one
    whose answer had not started with 503 and the error, one streaming (it logged) with the error as its
    stream's last event; then the process exits (it used to wait for the hung calls for good)."""
    short = Call("tools/call", with_meta(nap(SHORT)))
    hung = Call("tools/call", with_meta(nap(HUNG)))
    streaming = Call("tools/call", with_meta({"name": "pause", "arguments": {"seconds": HUNG}}, log_level="info"))
    with draining_server() as process:
        async with patient.stream("POST", process.url, content=json.dumps(streaming.body()),
                                  headers=streaming.all_headers()) as response:
            stream = SSEReader(response)
            started = await stream.message()
            assert started["params"]["data"] == "pause: started", started
            answers = [asyncio.create_task(post(patient, process.url, call)) for call in (short, hung)]
            await until_in_flight(patient, process, 3)
            await sigterm_and_wait_for_exit(process)
            rest = [event.message for event in await stream.rest(EXIT_BOUND)]
        finished, cut = await asyncio.gather(*answers)
    status, answer = answer_of(finished)
    assert status == 200, answer
    assert answer["id"] == short.rid, answer
    assert answer["result"]["content"] == [{"type": "text", "text": "rested"}], answer
    assert_cut_off_as_json(cut, hung.rid)
    assert rest == [cut_off(streaming.rid)], rest


@pytest.mark.timeout(120)
@pytest.mark.setting("WIREMCP_DRAIN_SECONDS")
@pytest.mark.spec("2025-11-25/basic/transports#streamable-http")
async def test_sigterm_ends_a_hung_handshake_era_call_within_the_drain(patient: httpx.AsyncClient) -> None:
    """2025-11-25: a short call finishes with its result; the hung call's stream ends with the retryable
    error once the drain is up; then the process exits."""
    with draining_server() as process:
        session = await initialize(patient, process.url)
        hung = request_body(session.next_id(), "tools/call", nap(HUNG))
        short = request_body(session.next_id(), "tools/call", nap(SHORT))
        async with session.stream_post(hung) as response:  # its headers come once it streams (SSE after 0.5 s)
            stream = SSEReader(response)
            finished = asyncio.create_task(session.post(short))
            await until_in_flight(patient, process, 2)
            await sigterm_and_wait_for_exit(process)
            rest = [event.message for event in await stream.rest(EXIT_BOUND) if event.message is not None]
        status, answer = answer_of(await finished)
    assert status == 200, answer
    assert answer["id"] == short["id"], answer
    assert answer["result"]["content"] == [{"type": "text", "text": "rested"}], answer
    assert rest == [cut_off(hung["id"])], rest


@pytest.mark.timeout(120)
@pytest.mark.setting("WIREMCP_DRAIN_SECONDS")
@pytest.mark.spec("2024-11-05/basic/transports#http-with-sse")
async def test_sigterm_waits_for_a_legacy_sse_call_and_ends_a_hung_one_within_the_drain(
        patient: httpx.AsyncClient) -> None:
    """2024-11-05 HTTP+SSE: the drain sees this transport's calls too. The short call's result still comes on
    the stream (it used to be cut off at once), the hung call's answer is the retryable error once the drain
    is up, then the stream ends and the process exits."""
    with draining_server() as process:
        async with connect(patient, process.base_url) as client:
            await handshake(client)
            await client.send(request_body(2, "tools/call", nap(SHORT)))
            await client.send(request_body(3, "tools/call", nap(HUNG)))
            await until_in_flight(patient, process, 2)
            await sigterm_and_wait_for_exit(process)
            rest = [event.message for event in await client.events.rest(EXIT_BOUND) if event.message is not None]
    assert len(rest) == 2, rest
    answers = {message["id"]: message for message in rest}
    assert answers[2]["result"]["content"] == [{"type": "text", "text": "rested"}], rest
    assert answers[3] == cut_off(3), rest


# == behind a proxy that keeps its connections ==========================================================

class KeptConnection:
    """One HTTP/1.1 connection kept open between requests, as a proxy's pool keeps it (nginx ``keepalive``):
    the test decides which connection each request goes on."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> KeptConnection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def request(self, method: str, path: str, body: bytes = b"",
                      headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}",
                *(f"{name}: {value}" for name, value in (headers or {}).items())]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await self.writer.drain()
        raw = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), READ_BOUND)
        status_line, *lines = raw.decode("latin-1").split("\r\n")
        answer = {name.strip().lower(): value.strip()
                  for name, _, value in (line.partition(":") for line in lines if line)}
        content = await asyncio.wait_for(self.reader.readexactly(int(answer.get("content-length", "0"))), READ_BOUND)
        return int(status_line.split()[1]), answer, content

    async def post_echo(self, text: str) -> tuple[int, dict[str, str], bytes]:
        call = Call("tools/call", with_meta({"name": "echo", "arguments": {"text": text}}))
        return await self.request("POST", "/mcp", json.dumps(call.body()).encode(), call.all_headers())

    async def closed_by_server(self) -> bool:
        return await asyncio.wait_for(self.reader.read(1), READ_BOUND) == b""

    def close(self) -> None:
        self.writer.close()


async def refuses_connections(port: int) -> bool:
    try:
        connection = await KeptConnection.open(port)
    except OSError:
        return True
    connection.close()
    return False


@pytest.mark.timeout(120)
@pytest.mark.setting("WIREMCP_DRAIN_SETTLE_SECONDS")
async def test_after_sigterm_no_connection_a_proxy_keeps_is_closed_under_a_request() -> None:
    """What nginx in front of a replica relies on (it never sends a POST again once it went out, so a kept
    connection the replica closes just as a POST is written on it is a 502 for the client). After SIGTERM the
    replica is unready at once, goes on serving for ``WIREMCP_DRAIN_SETTLE_SECONDS`` with ``Connection: close``
    on every answer, then refuses new connections (the proxy tries another replica: safe). A connection kept
    idle since before the signal is never closed by the replica while the proxy may use it: a POST on it after
    the listening socket closed is answered, and only then does the connection close."""
    with run_uvicorn(SETTINGS_SERVER, {"WIREMCP_DRAIN_SECONDS": "1", "WIREMCP_DRAIN_SETTLE_SECONDS": "1"},
                     options=["--timeout-keep-alive", "60"]) as process:
        kept = await KeptConnection.open(process.port)
        status, headers, body = await kept.post_echo("before")
        assert status == 200, (status, headers)
        assert headers.get("connection") != "close", headers
        assert json.loads(body)["result"]["content"][0]["text"] == "before"

        process.process.send_signal(signal.SIGTERM)

        async def unready_and_closing() -> bool:
            probe = await KeptConnection.open(process.port)
            try:
                status, headers, _ = await probe.request("GET", "/readyz")
            finally:
                probe.close()
            assert status == 503 or headers.get("connection") != "close", "an answer closed its connection " \
                "while the replica still said it was ready"
            return status == 503 and headers.get("connection") == "close"

        await until(unready_and_closing, what="/readyz unready, its answer closing the connection")
        await until(lambda: refuses_connections(process.port), what="new connections refused after the settle delay")

        status, headers, body = await kept.post_echo("after")
        assert status == 200, (status, headers, body)
        assert headers.get("connection") == "close", headers
        assert json.loads(body)["result"]["content"][0]["text"] == "after"
        assert await kept.closed_by_server()
        kept.close()
        await asyncio.to_thread(process.process.wait, EXIT_BOUND)
        assert process.process.returncode in (0, -signal.SIGTERM), process.output()
        assert "Traceback" not in process.output(), process.output()
