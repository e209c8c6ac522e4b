"""``Subscriber``: fixed channels and channels that come and go, each subscription confirmed, and all of
them subscribed again after the connection is lost (``on_connected`` says messages may have been lost)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from tests.support.cluster import TIMEOUT, next_item
from tests.support.redis import RedisServer
from wiremcp.transports.redis.connection import Redis, connect, publish
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.pubsub import Subscriber
from wiremcp.transports.redis.target import parse_target

pytestmark = pytest.mark.timeout(30)


class Heard:
    def __init__(self) -> None:
        self.messages: asyncio.Queue[bytes] = asyncio.Queue()
        self.subscribed: asyncio.Queue[str] = asyncio.Queue()
        self.connected: asyncio.Queue[None] = asyncio.Queue()


@contextlib.asynccontextmanager
async def running(url: str, fixed: tuple[str, ...]) -> AsyncIterator[tuple[Subscriber, Heard, Redis]]:
    target = parse_target(url)
    client = connect(target, timeout=TIMEOUT)
    listener = connect(target, timeout=TIMEOUT, blocking=target.topology != "cluster")
    heard = Heard()
    subscriber = Subscriber(target, listener, fixed, timeout=TIMEOUT, on_message=heard.messages.put_nowait,
                            on_subscribed=heard.subscribed.put_nowait,
                            on_connected=lambda: heard.connected.put_nowait(None))
    task = asyncio.get_running_loop().create_task(subscriber.run())
    try:
        async with asyncio.timeout(10):
            await subscriber.wait_connected()
        yield subscriber, heard, client
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.aclose()
        await listener.aclose()


async def test_fixed_channels_are_heard_once_connected(redis_url: str, redis_keys: Keys) -> None:
    fixed = (redis_keys.broadcast("a"), redis_keys.inbox("A"))
    async with running(redis_url, fixed) as (subscriber, heard, client):
        assert subscriber.connected
        assert {await next_item(heard.subscribed), await next_item(heard.subscribed)} == set(fixed)
        await next_item(heard.connected)
        for channel in fixed:
            await publish(client, channel, channel.encode())
            assert await next_item(heard.messages) == channel.encode()


async def test_a_channel_added_is_confirmed_then_heard_and_once_discarded_no_longer(
        redis_url: str, redis_keys: Keys) -> None:
    async with running(redis_url, (redis_keys.inbox("A"),)) as (subscriber, heard, client):
        await next_item(heard.subscribed)
        wake = redis_keys.wake("sid-1")
        subscriber.add(wake)
        subscriber.add(wake)  # counted: a second follower of the same session
        assert await next_item(heard.subscribed) == wake
        await publish(client, wake, b"w1")
        assert await next_item(heard.messages) == b"w1"
        subscriber.discard(wake)  # one follower left: still subscribed
        await publish(client, wake, b"w2")
        assert await next_item(heard.messages) == b"w2"
        subscriber.discard(wake)
        subscriber.discard(wake)  # one too many: nothing
        sentinel = redis_keys.inbox("A")
        await publish(client, wake, b"w3")
        await publish(client, sentinel, b"after")  # on the same connection, so heard after w3 if it were
        assert await next_item(heard.messages) == b"after"


async def test_after_the_connection_is_lost_everything_is_subscribed_again(
        redis_server: RedisServer, redis_keys: Keys) -> None:
    inbox = redis_keys.inbox("A")
    async with running(redis_server.url, (inbox,)) as (subscriber, heard, client):
        await next_item(heard.connected)
        wake = redis_keys.wake("sid-2")
        subscriber.add(wake)
        await next_item(heard.subscribed)
        await next_item(heard.subscribed)
        await cast(Any, client).execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        await next_item(heard.connected)  # subscribed again, and told so
        assert subscriber.connected
        for channel in (inbox, wake):
            await publish(client, channel, channel.encode())
            assert await next_item(heard.messages) == channel.encode()
