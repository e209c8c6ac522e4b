"""``RedisSubscriptionBus``: a change published on one replica reaches the listeners of every replica
(its own included, through Redis); ``end_all`` ends this replica's listeners only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.cluster import make_cluster, started
from tests.support.http import READ_BOUND
from wiremcp.subscriptions import Subscription
from wiremcp.transports.redis.bus import RedisSubscriptionBus
from wiremcp.transports.redis.keys import Keys
from wiremcp.types import JSONObject

pytestmark = pytest.mark.timeout(30)

CHANGED: JSONObject = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
UPDATED: JSONObject = {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                       "params": {"uri": "fixture://watched"}}


@pytest.fixture
async def buses(redis_url: str, redis_keys: Keys) -> AsyncIterator[tuple[RedisSubscriptionBus,
                                                                                  RedisSubscriptionBus]]:
    a = make_cluster(redis_url, redis_keys, "A")
    b = make_cluster(redis_url, redis_keys, "B")
    bus_a, bus_b = RedisSubscriptionBus(a), RedisSubscriptionBus(b)
    async with started(a, b):
        yield bus_a, bus_b


async def next_event(subscription: Subscription) -> JSONObject | None:
    """The subscription's next event; None once it has ended."""
    async with asyncio.timeout(READ_BOUND):
        return await anext(aiter(subscription), None)


async def test_a_change_published_on_one_replica_reaches_listeners_on_both(
        buses: tuple[RedisSubscriptionBus, RedisSubscriptionBus]) -> None:
    bus_a, bus_b = buses
    on_a, on_b, also_on_b = bus_a.subscribe(), bus_b.subscribe(), bus_b.subscribe()
    bus_a.publish(CHANGED)
    assert await next_event(on_b) == CHANGED
    assert await next_event(also_on_b) == CHANGED
    assert await next_event(on_a) == CHANGED  # A's own listener hears it once, back from Redis
    bus_b.publish(UPDATED)
    for subscription in (on_a, on_b, also_on_b):
        assert await next_event(subscription) == UPDATED
    removed: JSONObject = {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}
    bus_a.publish(removed)
    for subscription in (on_a, on_b, also_on_b):
        assert await next_event(subscription) == removed  # each event came exactly once


async def test_end_all_ends_this_replicas_listeners_only(
        buses: tuple[RedisSubscriptionBus, RedisSubscriptionBus]) -> None:
    bus_a, bus_b = buses
    on_a, on_b = bus_a.subscribe(), bus_b.subscribe()
    bus_b.end_all()
    assert bus_b.listeners == 0
    assert await next_event(on_b) is None  # its listen request answers and closes
    later = bus_b.subscribe()  # B takes new listeners again
    bus_b.publish(CHANGED)  # and its changes still reach the other replicas (and its own listeners)
    assert await next_event(on_a) == CHANGED
    assert await next_event(later) == CHANGED  # (subscribed first: B's own change, heard back, is not a race)
    assert bus_a.listeners == 1
    bus_a.publish(UPDATED)
    assert await next_event(later) == UPDATED
    assert await next_event(on_a) == UPDATED
