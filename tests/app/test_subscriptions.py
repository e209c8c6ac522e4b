"""``wiremcp.subscriptions``: the in-memory ``SubscriptionBus`` (every listener gets every change, in order;
a listener that does not keep up loses the oldest; a change published off the event loop still arrives;
``end_all`` ends the listeners), and the ``Filter`` of a ``subscriptions/listen`` request (what it asked
for, less what the server cannot deliver or the caller may not read)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest

from wiremcp.subscriptions import QUEUE, Filter, InMemorySubscriptionBus, Subscription
from wiremcp.types import JSONObject

SUBSCRIPTIONS = "2026-07-28/basic/patterns/subscriptions"
BOUND = 10.0
"""Failure bound for a read; nothing waits for it."""
TOOLS: JSONObject = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
PROMPTS: JSONObject = {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}
CAPABILITIES: JSONObject = {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                            "resources": {"subscribe": True, "listChanged": True}}


def updated(uri: str) -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}


def task_event(task_id: str) -> JSONObject:
    return {"jsonrpc": "2.0", "method": "notifications/tasks", "params": {"taskId": task_id, "status": "working"}}


async def take(events: AsyncIterator[JSONObject], count: int) -> list[JSONObject]:
    return [await asyncio.wait_for(anext(events), BOUND) for _ in range(count)]


# -- the bus --------------------------------------------------------------------------------------------------


async def test_every_listener_gets_every_change_in_order() -> None:
    bus = InMemorySubscriptionBus()
    with bus.subscribe() as first, bus.subscribe() as second:
        assert bus.listeners == 2
        for event in (TOOLS, PROMPTS, updated("r://a")):
            bus.publish(event)
        assert await take(aiter(first), 3) == [TOOLS, PROMPTS, updated("r://a")]
        assert await take(aiter(second), 3) == [TOOLS, PROMPTS, updated("r://a")]
    assert bus.listeners == 0
    bus.publish(TOOLS)  # nobody listens: nothing to do


async def test_end_all_ends_every_listener_and_later_ones_still_listen() -> None:
    bus = InMemorySubscriptionBus()
    ended: list[list[JSONObject]] = []

    async def listen(subscription: Subscription) -> None:
        ended.append([event async for event in subscription])

    subscriptions = [bus.subscribe() for _ in range(3)]
    listeners = [asyncio.create_task(listen(s)) for s in subscriptions]
    bus.publish(TOOLS)
    bus.end_all()
    await asyncio.wait_for(asyncio.gather(*listeners), BOUND)
    assert ended == [[TOOLS]] * 3
    assert bus.listeners == 0
    with bus.subscribe() as later:
        bus.publish(PROMPTS)
        assert await take(aiter(later), 1) == [PROMPTS]


async def test_a_change_published_on_another_thread_arrives_on_the_listeners_loop() -> None:
    bus = InMemorySubscriptionBus()
    with bus.subscribe() as subscription:
        publisher = threading.Thread(target=bus.publish, args=(TOOLS,))
        publisher.start()
        publisher.join()
        assert await take(aiter(subscription), 1) == [TOOLS]


async def test_a_listener_that_does_not_keep_up_loses_the_oldest_changes(caplog: pytest.LogCaptureFixture) -> None:
    bus = InMemorySubscriptionBus()
    with bus.subscribe() as subscription, caplog.at_level("WARNING", logger="wiremcp.subscriptions"):
        for i in range(QUEUE + 2):
            bus.publish(updated(f"r://{i}"))
        bus.end_all()
        kept = [event async for event in subscription]
    assert [e["params"]["uri"] for e in kept] == [f"r://{i}" for i in range(3, QUEUE + 2)]  # the end took a place
    assert "not keeping up" in caplog.text


# -- the listen filter ----------------------------------------------------------------------------------------


@pytest.mark.spec(f"{SUBSCRIPTIONS}#notification-filter")
def test_a_filter_honours_what_was_asked_for_and_the_server_can_deliver() -> None:
    requested = {"toolsListChanged": True, "promptsListChanged": False, "resourcesListChanged": True,
                 "resourceSubscriptions": ["r://a", "r://b", 7]}
    wanted = Filter(requested, {"tools": {"listChanged": True}, "resources": {"subscribe": True}})
    assert wanted.honoured == {"toolsListChanged": True, "resourceSubscriptions": ["r://a", "r://b"]}
    assert wanted.wants(TOOLS)
    assert not wanted.wants(PROMPTS)
    assert not wanted.wants({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
    assert wanted.wants(updated("r://b"))
    assert not wanted.wants(updated("r://c"))
    assert not wanted.wants({"jsonrpc": "2.0", "method": "notifications/resources/updated"})


@pytest.mark.spec(f"{SUBSCRIPTIONS}#notification-filter")
def test_resource_subscriptions_need_the_subscribe_capability_and_the_right_to_read() -> None:
    requested = {"resourceSubscriptions": ["r://open", "r://secret"]}
    assert Filter(requested, {"resources": {"listChanged": True}}).honoured == {}
    readable = Filter(requested, CAPABILITIES, readable=lambda uri: uri != "r://secret")
    assert readable.honoured == {"resourceSubscriptions": ["r://open"]}
    assert not readable.wants(updated("r://secret"))


@pytest.mark.parametrize("requested", [None, [], "everything", {"toolsListChanged": "yes"}])
def test_a_malformed_or_empty_request_asks_for_nothing(requested: object) -> None:
    nothing = Filter(requested, CAPABILITIES)
    assert nothing.honoured == {}
    assert not any(nothing.wants(e) for e in (TOOLS, PROMPTS, updated("r://a"), task_event("t1")))


@pytest.mark.spec("2026-07-28/extensions/tasks#task-status-notifications")
def test_tasks_are_followed_by_the_ids_the_caller_owns() -> None:
    followed = Filter({"taskIds": ["t1", "t2", "theirs"]}, CAPABILITIES, task_ids=["t1", "t2"])
    assert followed.honoured == {"taskIds": ["t1", "t2"]}
    assert followed.wants(task_event("t2"))
    assert not followed.wants(task_event("theirs"))
    assert Filter({"toolsListChanged": True}, CAPABILITIES, task_ids=[]).honoured == {"toolsListChanged": True}
