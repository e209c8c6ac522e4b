"""``wiremcp.transports.sse``: the SSE events every transport writes (a JSON-RPC message, the priming event,
a retry hint, HTTP+SSE's endpoint), and ``serve_sse`` streaming them through a real ASGI call while the
stream is counted open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sse_starlette.sse import AppStatus

from wiremcp import jsonrpc
from wiremcp.event_store import format_event_id, parse_event_id
from wiremcp.transports import sse
from wiremcp.transports.asgi import Message, Scope
from wiremcp.transports.sse import Event, endpoint_event, event, retry_hint, serve_sse

TRANSPORTS = "2025-11-25/basic/transports"
MODERN = "2026-07-28/basic/transports/streamable-http"


def wire(one: Event) -> bytes:
    """An event as it goes on the wire (it is encoded once, when it is made)."""
    assert isinstance(one, bytes)
    return one


def field(one: Event, name: bytes) -> bytes | None:
    """The value of one field of an event, or None."""
    return next((line[len(name) + 2:] for line in wire(one).split(b"\r\n") if line.startswith(name + b": ")), None)


# -- events -----------------------------------------------------------------------------------------------
@pytest.mark.spec(f"{TRANSPORTS}#sending-messages-to-the-server")
def test_a_message_is_a_message_event_of_compact_json() -> None:
    message = jsonrpc.result(1, {"content": [{"type": "text", "text": "héllo"}]})
    assert wire(event(message)) == (
        b"event: message\r\n"
        + b'data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"h\xc3\xa9llo"}]}}\r\n'
        + b"\r\n")


@pytest.mark.spec(f"{TRANSPORTS}#resumability-and-redelivery")
def test_a_message_on_a_resumable_stream_has_the_streams_event_id() -> None:
    one = event(jsonrpc.notification("notifications/progress", {"progress": 1}), "stream-a", 7)
    assert field(one, b"id") == format_event_id("stream-a", 7).encode()
    assert parse_event_id((field(one, b"id") or b"").decode()) == ("stream-a", 7)
    assert wire(one) == (b"id: stream-a_7\r\nevent: message\r\n"
                         b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\r\n\r\n')


@pytest.mark.spec("2025-03-26/basic/index#batching")
def test_a_batch_of_replies_is_one_message_event_of_a_json_array() -> None:
    one = event([jsonrpc.result(1, {}), jsonrpc.result(2, {})], "s", 3)
    assert wire(one) == (b'id: s_3\r\nevent: message\r\n'
                         b'data: [{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]\r\n\r\n')


def test_a_message_ignores_retry_and_has_no_id_without_a_stream() -> None:
    one = event(jsonrpc.result(1, {}), None, 5, retry=1000)
    assert field(one, b"id") is None
    assert field(one, b"retry") is None


def test_a_message_with_a_line_break_in_a_string_stays_one_data_line() -> None:
    one = event(jsonrpc.result(1, {"text": "a\nb\r\nc"}))
    lines = wire(one).split(b"\r\n")
    assert [line for line in lines if line.startswith(b"data:")] == [
        b'data: {"jsonrpc":"2.0","id":1,"result":{"text":"a\\nb\\r\\nc"}}']


@pytest.mark.spec(f"{TRANSPORTS}#sending-messages-to-the-server")
def test_the_priming_event_has_an_id_empty_data_and_retry() -> None:
    primer = event(None, "stream-a", 0, retry=2500)
    assert field(primer, b"id") == format_event_id("stream-a", 0).encode()
    assert (field(primer, b"data"), field(primer, b"event"), field(primer, b"retry")) == (b"", None, b"2500")
    assert wire(primer) == b"id: stream-a_0\r\ndata: \r\nretry: 2500\r\n\r\n"


def test_a_priming_event_without_a_stream_or_retry_is_an_empty_event() -> None:
    assert wire(event(None)) == b"data: \r\n\r\n"


@pytest.mark.spec(f"{TRANSPORTS}#sending-messages-to-the-server")
def test_a_retry_hint_carries_only_retry() -> None:
    hint = retry_hint(3000)
    assert [field(hint, name) for name in (b"id", b"event", b"data", b"retry")] == [None, None, None, b"3000"]
    assert wire(hint) == b"retry: 3000\r\n\r\n"


@pytest.mark.spec("2024-11-05/basic/transports#http-with-sse")
def test_the_endpoint_event_names_the_post_url() -> None:
    assert wire(endpoint_event("/messages/?session_id=abc")) == (
        b"event: endpoint\r\ndata: /messages/?session_id=abc\r\n\r\n")


def test_a_line_break_in_the_endpoint_url_cannot_end_the_event() -> None:
    assert wire(endpoint_event("/messages/?a=1\nevent: x")) == (
        b"event: endpoint\r\ndata: /messages/?a=1\r\ndata: event: x\r\n\r\n")


# -- sse-starlette's exit handling, left to the drain --------------------------------------------------------
def test_once_the_drain_owns_the_exit_sse_starlette_does_not_end_streams_at_the_signal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AppStatus, "enable_automatic_graceful_drain", True)
    monkeypatch.setattr(AppStatus, "should_exit", False)
    monkeypatch.setattr(AppStatus, "original_handler", None)  # uvicorn's own, not under test here
    monkeypatch.setattr(sse, "_drain_owns_exit", False)
    sse.leave_exit_to_drain()
    assert AppStatus.enable_automatic_graceful_drain is False
    AppStatus.handle_exit()  # type: ignore[no-untyped-call]  # what uvicorn's handler runs, sse-starlette's patch
    assert AppStatus.should_exit is False


def test_release_streams_ends_what_sse_starlette_still_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AppStatus, "should_exit", False)
    sse.release_streams()
    assert AppStatus.should_exit is True


# -- serve_sse --------------------------------------------------------------------------------------------
class Counter:
    """Counts the SSE streams open, as a session or the stateless handler does."""

    def __init__(self) -> None:
        self.open = 0
        self.opened = 0
        self.closed = 0

    def stream_opened(self) -> None:
        self.open += 1
        self.opened += 1

    def stream_closed(self) -> None:
        self.open -= 1
        self.closed += 1


class Peer:
    """The ASGI server's side of one response: what was sent, and a client that stays until told."""

    def __init__(self) -> None:
        self.sent: list[Message] = []
        self.leave = asyncio.Event()

    async def receive(self) -> Message:
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")

    @property
    def start(self) -> Message:
        assert self.sent[0]["type"] == "http.response.start"
        return self.sent[0]

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.start["headers"] if k.lower() == name), None)


def http_scope() -> Scope:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
            "headers": [(b"accept", b"text/event-stream")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}


@pytest.mark.spec(f"{MODERN}#receiving-messages")
async def test_serve_sse_streams_every_event_and_counts_the_stream_open_while_it_lasts() -> None:
    counter = Counter()
    peer = Peer()
    open_during: list[int] = []

    async def events() -> AsyncIterator[Event]:
        open_during.append(counter.open)
        yield event(None, "s", 0, retry=1000)
        open_during.append(counter.open)
        yield event(jsonrpc.notification("notifications/progress", {"progress": 1}), "s", 1)
        yield event(jsonrpc.result(1, {}), "s", 2)

    await serve_sse(events(), http_scope(), peer.receive, peer.send, keepalive=15, counted=counter)

    assert open_during == [1, 1]
    assert (counter.open, counter.opened, counter.closed) == (0, 1, 1)
    assert peer.start["status"] == 200
    assert (peer.header(b"content-type") or b"").startswith(b"text/event-stream")
    assert peer.header(b"x-accel-buffering") == b"no"
    assert peer.body == (
        b"id: s_0\r\ndata: \r\nretry: 1000\r\n\r\n"
        b'id: s_1\r\nevent: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress",'
        b'"params":{"progress":1}}\r\n\r\n'
        b'id: s_2\r\nevent: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n')
    assert peer.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert all(m.get("more_body") for m in peer.sent[1:-1])


async def test_serve_sse_of_no_events_is_an_empty_stream_counted_once() -> None:
    counter = Counter()
    peer = Peer()

    async def events() -> AsyncIterator[Event]:
        return
        yield  # an async generator

    await serve_sse(events(), http_scope(), peer.receive, peer.send, keepalive=15, counted=counter)
    assert (counter.open, counter.opened, counter.closed) == (0, 1, 1)
    assert peer.body == b""
    assert peer.start["status"] == 200


@pytest.mark.spec(f"{MODERN}#cancellation")
async def test_a_client_that_goes_away_ends_the_stream_and_it_is_counted_closed() -> None:
    counter = Counter()
    peer = Peer()
    waiting = asyncio.Event()
    ended: list[str] = []

    async def events() -> AsyncIterator[Event]:
        try:
            yield event(jsonrpc.notification("notifications/progress", {"progress": 1}))
            waiting.set()
            await asyncio.Event().wait()  # never set: only the disconnect ends this stream
            yield event(jsonrpc.result(1, {}))
        finally:
            ended.append("closed")

    streaming = asyncio.create_task(
        serve_sse(events(), http_scope(), peer.receive, peer.send, keepalive=15, counted=counter))
    await waiting.wait()
    assert counter.open == 1
    peer.leave.set()
    await streaming
    assert ended == ["closed"]
    assert (counter.open, counter.closed) == (0, 1)
    assert b'"result"' not in peer.body


async def test_a_failing_event_source_still_closes_the_count() -> None:
    counter = Counter()
    peer = Peer()

    async def events() -> AsyncIterator[Event]:
        yield event(jsonrpc.result(1, {}))
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        await serve_sse(events(), http_scope(), peer.receive, peer.send, keepalive=15, counted=counter)
    assert (counter.open, counter.opened, counter.closed) == (0, 1, 1)


async def test_each_call_counts_its_own_stream() -> None:
    counter = Counter()
    first, second = Peer(), Peer()
    inside = asyncio.Event()
    release = asyncio.Event()
    during: list[int] = []

    async def held() -> AsyncIterator[Event]:
        inside.set()
        await release.wait()
        yield event(jsonrpc.result(1, {}))

    async def quick() -> AsyncIterator[Event]:
        during.append(counter.open)
        yield event(jsonrpc.result(2, {}))

    holding = asyncio.create_task(
        serve_sse(held(), http_scope(), first.receive, first.send, keepalive=15, counted=counter))
    await inside.wait()
    await serve_sse(quick(), http_scope(), second.receive, second.send, keepalive=15, counted=counter)
    assert during == [2]
    assert counter.open == 1
    release.set()
    await holding
    assert (counter.open, counter.opened, counter.closed) == (0, 2, 2)
