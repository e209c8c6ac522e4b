"""``wiremcp.transports.shared_streams``: following a stream in a shared event store: the events after the
last one sent, to the request's answer; a request whose replica is gone answered with a retryable error
(never run again); the stop switch; a GET stream given up when another GET takes it over. The store is the
in-memory one, the holds of GET streams too, and the link between replicas a stand-in saying which replicas
are alive (the real one is ``tests/transports/redis/``'s)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import cast

import pytest

from wiremcp.errors import INTERNAL_ERROR
from wiremcp.event_store import InMemoryEventStore, StoredEvent
from wiremcp.replica_link import ReplicaLink
from wiremcp.stream_holds import InMemoryStreamHolds
from wiremcp.transports.shared_streams import (
    ORPHANED,
    STANDALONE_STREAM,
    Follower,
    follow,
    is_response,
    orphaned_answer,
)
from wiremcp.types import JSONObject

SID = "sid-1"
B = "B@0a1b2c3d"
"""The life of the replica that ran the request."""


def note(n: int) -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": n}}


ANSWER: JSONObject = {"jsonrpc": "2.0", "id": 5, "result": {"content": []}}


class Link:
    """The replicas as a follower sees them: which are alive."""

    def __init__(self, *, alive: bool = True) -> None:
        self.is_alive = alive

    @contextlib.contextmanager
    def watch(self, sid: str, event: object = None) -> Iterator[object]:
        yield event

    async def alive(self, replica: str) -> bool:
        return self.is_alive



async def stored(store: InMemoryEventStore, stream: str, *messages: JSONObject | None) -> list[StoredEvent]:
    for seq, message in enumerate(messages):
        await store.append(SID, stream, seq, message, 5)
    return [StoredEvent(stream, seq, message, owner=B, request_id=5) for seq, message in enumerate(messages)]


async def followed(store: InMemoryEventStore, link: Link, stream: str, first: list[StoredEvent], after: int,
                   follower: Follower | None = None, **options: object) -> list[tuple[int, JSONObject | None]]:
    return [item async for item in follow(store, cast(ReplicaLink, link), SID, stream, first, after,
                                          follower or Follower(), **options)]  # type: ignore[arg-type]


def test_what_answers_a_request() -> None:
    assert is_response(ANSWER)
    assert is_response({"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}})
    assert not is_response(note(1))
    assert not is_response({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create"})  # a request of ours
    assert not is_response(None)  # the priming event


def test_the_answer_of_a_request_whose_replica_stopped_is_retryable() -> None:
    assert orphaned_answer(5, B) == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": INTERNAL_ERROR, "message": ORPHANED, "data": {"replica": "B", "retryable": True}}}


async def test_a_request_stream_is_followed_to_its_answer() -> None:
    store = InMemoryEventStore()
    first = await stored(store, "p1", None, note(1), ANSWER)
    assert await followed(store, Link(), "p1", first, 0, request_stream=True) == [(1, note(1)), (2, ANSWER)]


async def test_a_stream_resumed_from_its_answer_ends_at_once() -> None:
    """The answer is the id the client resumes from (it had it, or it is the error that took the place of
    events it had received live before they were lost): nothing comes after it, whether or not its replica
    is alive (no second answer either)."""
    store = InMemoryEventStore()
    first = await stored(store, "p1", None, note(1), ANSWER)
    for alive in (True, False):
        assert await followed(store, Link(alive=alive), "p1", first[1:], 2, request_stream=True) == []
    assert [e.seq for e in await store.after(SID, "p1", -1) or []] == [0, 1, 2]


@pytest.mark.spec("2025-11-25/basic/transports#resumability-and-redelivery")
async def test_a_request_whose_replica_is_gone_is_answered_with_an_error_not_run_again() -> None:
    store = InMemoryEventStore()
    first = await stored(store, "p1", None, note(1))
    got = await followed(store, Link(alive=False), "p1", first, -1, request_stream=True)
    assert got == [(0, None), (1, note(1)), (2, orphaned_answer(5, B))]
    kept = await store.after(SID, "p1", 1)
    assert kept is not None
    assert [e.message for e in kept] == [orphaned_answer(5, B)]  # the next reader gets the same answer


async def test_the_stop_switch_ends_the_following() -> None:
    store = InMemoryEventStore()
    first = await stored(store, "p1", None, note(1))
    follower = Follower()
    follower.stop()
    assert follower.wake.is_set()
    assert await followed(store, Link(), "p1", first, 0, follower, request_stream=True) == [(1, note(1))]


async def test_a_get_stream_taken_over_by_another_get_ends_and_gives_its_hold_up() -> None:
    store = InMemoryEventStore()
    first = await stored(store, STANDALONE_STREAM, None, note(1))
    holds = InMemoryStreamHolds()
    assert await holds.hold(SID, "mine", take_over=False)
    assert await holds.hold(SID, "newer", take_over=True)  # a resumed GET, elsewhere
    got = await followed(store, Link(), STANDALONE_STREAM, first, -1, request_stream=False, holds=holds,
                         hold="mine")
    assert got == [(0, None), (1, note(1))]
    assert await holds.renew(SID, "newer")  # giving its hold up left the newer holder's alone
    await holds.release(SID, "newer")
    assert await holds.hold(SID, "next", take_over=False)
