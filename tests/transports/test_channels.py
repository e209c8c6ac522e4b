"""``wiremcp.transports.channels``: one SSE stream of a session: events numbered in order, stored for
replay, delivered to at most one live reader (a new reader ends the old one, a reader that does not keep
up is cut off and may resume from the store), and ``SharedChannel``, whose numbers the store gives (a
stream several replicas write)."""

from __future__ import annotations

import asyncio

import pytest

from wiremcp.event_store import InMemoryEventStore
from wiremcp.transports.channels import READER_QUEUE, EventChannel, Item, SharedChannel
from wiremcp.types import JSONObject
from wiremcp.unavailable import StoreUnavailable

RESUMABILITY = "2025-11-25/basic/transports#resumability-and-redelivery"


def note(n: int) -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": n}}


def queued(reader: asyncio.Queue[Item]) -> list[Item]:
    items = []
    while not reader.empty():
        items.append(reader.get_nowait())
    return items


class Away(InMemoryEventStore):
    """A store that cannot be reached."""

    async def append(self, *args: object, **kwargs: object) -> None:
        raise StoreUnavailable("the store is away")


@pytest.mark.spec(RESUMABILITY)
async def test_events_are_numbered_stored_and_delivered_in_order() -> None:
    store = InMemoryEventStore()
    channel = EventChannel("sid", "s1", store, request_id=7)
    reader = channel.attach()
    assert channel.attached
    assert [await channel.emit(None), await channel.emit(note(1))] == ["s1_0", "s1_1"]  # the priming event first
    await channel.send(note(2))
    assert queued(reader) == [(0, None), (1, note(1)), (2, note(2))]
    stored = await store.after("sid", "s1", 0)
    assert stored is not None
    assert [(e.seq, e.message) for e in stored] == [(1, note(1)), (2, note(2))]
    assert channel.seq == 3


async def test_the_final_event_ends_the_reader_and_a_later_reader_at_once() -> None:
    channel = EventChannel("sid", "s1", None)
    reader = channel.attach()
    await channel.emit({"jsonrpc": "2.0", "id": 1, "result": {}}, final=True)
    assert queued(reader) == [(0, {"jsonrpc": "2.0", "id": 1, "result": {}}), None]
    assert channel.finished
    assert queued(channel.attach()) == [None]  # a reader resuming a finished stream gets its end


async def test_a_new_reader_ends_the_one_before_and_only_the_current_one_detaches() -> None:
    channel = EventChannel("sid", "get", None)
    first = channel.attach()
    second = channel.attach(room=5)
    assert queued(first) == [None]
    assert second.maxsize == READER_QUEUE + 5
    channel.detach(first)  # no longer the reader: nothing happens
    assert channel.attached
    channel.detach(second)
    assert not channel.attached
    await channel.emit(note(1))  # no reader: stored (here: nowhere) only
    assert queued(second) == []


async def test_closing_ends_the_reader_and_final_closing_ends_the_stream() -> None:
    channel = EventChannel("sid", "s1", None)
    reader = channel.attach()
    channel.close()
    assert queued(reader) == [None]
    assert not channel.finished  # closed early: a client may resume it
    channel.close(final=True)
    assert channel.finished
    assert not channel.attached


@pytest.mark.spec(RESUMABILITY)
async def test_a_reader_that_does_not_keep_up_is_cut_off_and_the_store_keeps_everything(
        caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryEventStore()
    channel = EventChannel("sid", "s1", store)
    reader = channel.attach()
    with caplog.at_level("WARNING", logger="wiremcp.http"):
        for n in range(READER_QUEUE + 1):
            await channel.emit(note(n))
    assert not channel.attached
    items = queued(reader)
    assert items[-1] is None
    assert len(items) == READER_QUEUE
    assert "too slow" in caplog.text
    stored = await store.after("sid", "s1", -1)
    assert stored is not None
    assert len(stored) == READER_QUEUE + 1  # resumable from the store


async def test_events_are_delivered_live_while_the_store_is_away(caplog: pytest.LogCaptureFixture) -> None:
    channel = EventChannel("sid", "s1", Away())
    reader = channel.attach()
    with caplog.at_level("WARNING", logger="wiremcp.http"):
        assert await channel.emit(note(1)) == "s1_0"
        channel.emit_later(note(2))
        channel.emit_later(note(3))
        await asyncio.gather(*channel._tasks)
    assert queued(reader) == [(0, note(1)), (1, note(2)), (2, note(3))]  # in order
    assert caplog.text.count("was not stored") == 3


async def test_a_shared_stream_is_numbered_by_the_store_across_writers() -> None:
    store = InMemoryEventStore()
    here, there = SharedChannel("sid", "get", store), SharedChannel("sid", "get", store)
    assert [await here.emit(note(1)), await there.emit(note(2)), await here.emit(note(3))] == [
        "get_0", "get_1", "get_2"]
    stored = await store.after("sid", "get", 0)
    assert stored is not None
    assert [e.message for e in stored] == [note(2), note(3)]
