"""Pub/sub on every topology: what this replica hears, kept subscribed across reconnections, failovers and
slots moving between cluster nodes.

On one server and under Sentinel, channels are classic ones (``SUBSCRIBE``/``PUBLISH``) on one connection
to the primary. In a Redis Cluster they are shard channels (``SSUBSCRIBE``/``SPUBLISH``, Redis 7): a message
travels only to the node that owns the channel's slot, not to every node of the cluster, so that pub/sub
scales with the cluster instead of loading every node with every message. The subscriber holds one
connection per node that owns a channel it listens to.

Some channels are fixed (this replica's inbox, the broadcast channels) and some come and go (a session's
wake-up channel while a stream of that session is followed here). Each subscription is confirmed to
``on_subscribed``, so that a follower reads its stream once more when its wake-ups start to arrive.

Any failure (a connection lost, a node killed, a slot moved away: the node then ends the shard
subscriptions itself) ends the whole set of connections: the subscriber waits a moment, reads the
cluster's slots again and subscribes everything anew, then calls ``on_connected``, since messages may have
been lost meanwhile.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from wiremcp.shutdown import bounded
from wiremcp.transports.redis.target import RedisTarget

log = logging.getLogger("wiremcp.cluster")

MAX_BACKOFF = 2.0
"""Seconds between attempts to subscribe again, at most."""


class _Node:
    """One connection that carries subscriptions: to one cluster node, or to the one primary."""

    __slots__ = ("client", "pubsub", "reader")

    def __init__(self, client: Any) -> None:
        self.client = client
        self.pubsub: Any = client.pubsub()
        self.reader: asyncio.Task[None] | None = None

    async def close(self, own_client: bool) -> None:
        """Stop reading, then close the connection (and the client, if it is this node's own); each step
        bounded (``wiremcp.shutdown.bounded``), so that a read that does not take its cancellation cannot hold
        the replica's shutdown."""
        if self.reader is not None:
            self.reader.cancel()
            await bounded("a pub/sub reader", self.reader)
        await bounded("closing a pub/sub connection", self.pubsub.aclose())
        if own_client:
            await bounded("closing a pub/sub node's client", self.client.aclose())


class Subscriber:
    """Keeps the fixed channels and those asked for with ``add`` subscribed while ``run`` runs."""

    def __init__(self, target: RedisTarget, listener: Any, fixed: tuple[str, ...], *,
                 timeout: float, on_message: Callable[[bytes], None],
                 on_subscribed: Callable[[str], None] = lambda channel: None,
                 on_connected: Callable[[], None] = lambda: None) -> None:
        """``listener``: on one server or under Sentinel, the client whose connection carries the
        subscriptions (no read timeout); in a cluster, a client of the subscriber's own that tells which
        node owns a channel (the subscriber opens a connection to each node it needs)."""
        self.sharded = target.topology == "cluster"
        self._target = target
        self._listener = listener
        self._fixed = fixed
        self._timeout = timeout
        self._on_message = on_message
        self._on_subscribed = on_subscribed
        self._on_connected = on_connected
        self._wanted: collections.Counter[str] = collections.Counter()
        self._nodes: dict[str, _Node] = {}
        self._live: dict[str, _Node] = {}
        """Channel -> the connection its subscription was sent on (this round)."""
        self._leaving: collections.Counter[str] = collections.Counter()
        self._confirmed: set[str] = set()
        self._broken = asyncio.Event()
        self._failure: BaseException | None = None
        self._fixed_confirmed = asyncio.Event()
        self._ready = False
        self._connected = asyncio.Event()
        self._spawned: set[asyncio.Task[None]] = set()

    @property
    def connected(self) -> bool:
        """Every fixed channel subscribed, right now."""
        return self._connected.is_set()

    async def wait_connected(self) -> None:
        await self._connected.wait()

    # -- the channels that come and go ------------------------------------------------------------
    def add(self, channel: str) -> None:
        """Listen to ``channel`` too (counted: as many ``discard`` as ``add`` end it)."""
        self._wanted[channel] += 1
        if self._wanted[channel] == 1 and self._ready:
            self._spawn(self._subscribe(channel))

    def discard(self, channel: str) -> None:
        if self._wanted[channel] <= 0:
            return
        self._wanted[channel] -= 1
        if self._wanted[channel] == 0:
            del self._wanted[channel]
            node = self._live.pop(channel, None)
            self._confirmed.discard(channel)
            if node is not None and self._ready:
                self._leaving[channel] += 1
                self._spawn(self._unsubscribe(node, channel))

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    # -- one round: connect, subscribe everything, hear until something fails -------------------------
    async def run(self) -> None:
        backoff = 0.05
        try:
            while True:
                try:
                    await self._round()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if self._connected.is_set():
                        log.warning("lost the pub/sub connection to Redis: %s", exc)
                if self._connected.is_set():
                    backoff = 0.05
                await self._end_round()
                await asyncio.sleep(backoff)  # before trying again: Redis may be away, or failing over
                backoff = min(backoff * 2, MAX_BACKOFF)
        finally:
            await self._end_round()

    async def _round(self) -> None:
        """Subscribe every channel, then hear until something fails (raised)."""
        self._broken = asyncio.Event()
        self._failure = None
        if self.sharded:
            await self._listener.nodes_manager.initialize()  # the slots as the cluster has them now
        for channel in self._fixed:
            await self._subscribe(channel)
        while missing := [channel for channel in self._wanted if channel not in self._live]:
            for channel in missing:
                await self._subscribe(channel)
        self._ready = True  # from here on, ``add`` subscribes at once
        broken = asyncio.get_running_loop().create_task(self._broken.wait())
        confirmed = asyncio.get_running_loop().create_task(self._fixed_confirmed.wait())
        try:
            await asyncio.wait({broken, confirmed}, return_when=asyncio.FIRST_COMPLETED)
            if not self._broken.is_set():
                self._connected.set()
                self._on_connected()
            await broken
        finally:
            broken.cancel()
            confirmed.cancel()
        raise self._failure or RedisError("the pub/sub connection ended")

    async def _end_round(self) -> None:
        self._ready = False
        for task in self._spawned:  # a subscription sent in the round that ended has no connection left
            task.cancel()
        self._connected.clear()
        nodes, self._nodes = list(self._nodes.values()), {}
        self._live.clear()
        self._confirmed.clear()
        self._fixed_confirmed.clear()
        self._leaving.clear()
        for node in nodes:
            await node.close(own_client=self.sharded)

    def _node_for(self, channel: str) -> _Node:
        if not self.sharded:
            name, client = "", self._listener
        else:
            where = self._listener.get_node_from_key(channel)
            name = where.name
            client = self._nodes[name].client if name in self._nodes else redis.Redis(
                host=where.host, port=where.port, username=self._target.username, password=self._target.password,
                ssl=self._target.tls, socket_connect_timeout=self._timeout, socket_timeout=None,
                retry=Retry(NoBackoff(), 0), client_name="wiremcp")
        node = self._nodes.get(name)
        if node is None:
            node = self._nodes[name] = _Node(client)
        return node

    async def _subscribe(self, channel: str) -> None:
        try:
            node = self._node_for(channel)
            self._live[channel] = node
            if self.sharded:
                await node.pubsub.ssubscribe(channel)
            else:
                await node.pubsub.subscribe(channel)
            if node.reader is None:
                node.reader = asyncio.get_running_loop().create_task(self._read(node))
        except (RedisError, OSError) as exc:
            self._fail(exc)
            if not self._ready:
                raise

    async def _unsubscribe(self, node: _Node, channel: str) -> None:
        try:
            if self.sharded:
                await node.pubsub.sunsubscribe(channel)
            else:
                await node.pubsub.unsubscribe(channel)
        except (RedisError, OSError) as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
        self._broken.set()

    async def _read(self, node: _Node) -> None:
        try:
            while True:
                message = await node.pubsub.get_message(timeout=None)
                if message is None:
                    continue
                kind = message["type"]
                if kind in ("message", "smessage"):
                    self._on_message(message["data"])
                    continue
                channel = message["channel"]
                channel = channel.decode() if isinstance(channel, bytes) else channel
                if kind in ("subscribe", "ssubscribe"):
                    if self._live.get(channel) is node:
                        self._confirmed.add(channel)
                        if self._confirmed.issuperset(self._fixed):
                            self._fixed_confirmed.set()
                        self._on_subscribed(channel)
                elif kind in ("unsubscribe", "sunsubscribe"):
                    if self._leaving[channel] > 0:
                        self._leaving[channel] -= 1
                    elif channel in self._wanted or channel in self._fixed:
                        # The node ended it: its slot moved to another node (or a failover).
                        self._fail(RedisError(f"the subscription to {channel} was ended by Redis"))
                        return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail(exc)
