"""This replica's link to the others, over Redis: its lease, and the messages that cross replicas.

Replicas share sessions through the stores; what a store cannot carry goes over pub/sub:

- a wake-up when an event is appended to a session's stream, on the session's own channel, to the
  replicas following one of its streams (``watch`` subscribes while a stream is followed);
- a client's response to a server-to-client request, to the replica whose handler waits for it
  (server-to-client request ids name their replica: ``<replica>:<n>``);
- cancellations, deleted and changed sessions, cancelled and answered tasks, to every replica;
- the subscription bus's change events, to every replica.

What goes to every replica travels over the broadcast channels (one, or a cluster's shards: each message
on the channel its session, task or resource hashes to). ``Subscriber`` keeps the channels subscribed on
every topology (``transports.redis.pubsub``). The link is the same on one server, under Sentinel and on a
Redis Cluster.

It is the core's ``ReplicaLink`` over Redis, and hands what arrives to its listeners (``ClusterEvents``,
each registered once with ``listen``).

Every replica renews a lease key while it runs; a stream whose producer lost its lease is taken
for orphaned (see ``transports.shared_streams``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable, Iterator

import orjson
from redis.exceptions import RedisClusterException, RedisError

from wiremcp.replica_link import ClusterEvents, ReplicaLink
from wiremcp.shutdown import bounded
from wiremcp.transports.redis.connection import Redis, connect, prepare, publish, reachable
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.pubsub import Subscriber
from wiremcp.transports.redis.target import RedisTarget, parse_target
from wiremcp.types import JSONObject, RequestId

log = logging.getLogger("wiremcp.cluster")

SUBSCRIBE_BOUND = 5.0
"""How long ``start`` waits for the pub/sub subscription before going on (it keeps retrying)."""


class RedisReplicaLink(ReplicaLink):
    """One per process (a ``ReplicaLink``). ``start`` before serving, ``close`` after."""

    def __init__(self, client: Redis, listener: Redis, keys: Keys, *, target: RedisTarget, replica: str,
                 lease: float = 5.0, timeout: float = 2.0) -> None:
        """``listener``: the client whose connection carries the subscriptions on one server or under
        Sentinel (``connect(..., blocking=True)``); a cluster's subscriber opens one per node itself."""
        self.client = client
        self._listener_client = listener
        self.keys = keys
        self.replica = replica
        self.lease = lease
        self._listeners: list[ClusterEvents] = []
        self._watches: dict[str, set[asyncio.Event]] = {}
        self._wake_channels: dict[str, str] = {}
        """A followed session's wake-up channel -> the session."""
        self._subscriber = Subscriber(
            target, listener, (*keys.broadcasts, keys.inbox(replica)), timeout=timeout,
            on_message=self._dispatch, on_subscribed=self._subscribed, on_connected=self._connected)
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._starting: asyncio.Task[None] | None = None
        self._publishing: set[asyncio.Task[None]] = set()
        self._where = target.redacted
        self._unreachable = False
        """The last attempt to renew the lease failed: said once, and once again when Redis answers."""

    @classmethod
    def connect(cls, target: RedisTarget | str, keys: Keys, *, replica: str, lease: float = 5.0,
                timeout: float = 2.0, client: Redis | None = None) -> RedisReplicaLink:
        """The link over ``target``, sending with ``client`` (a new one if not given)."""
        target = parse_target(target) if isinstance(target, str) else target
        client = client if client is not None else connect(target, timeout=timeout)
        # A cluster's subscriber reads the slots again after a failure: with a client of its own, so that
        # commands under way on the others' are not disturbed.
        listener = connect(target, timeout=timeout, blocking=target.topology != "cluster")
        return cls(client, listener, keys, target=target, replica=replica, lease=lease, timeout=timeout)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._loop is not None:  # started, or starting: set before the first await, so it runs once
            return
        self._loop = asyncio.get_running_loop()
        try:  # alive for the others from the start
            await prepare(self.client)
            await self.client.set(self.keys.alive(self.replica), b"1", px=int(self.lease * 1000))
        except (RedisError, RedisClusterException, OSError) as exc:
            self._lost(exc)  # serving all the same: unready (``/readyz``) until Redis answers, then linked
        self._tasks = [self._loop.create_task(self._keep_lease()), self._loop.create_task(self._subscriber.run())]
        if not self._unreachable:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._subscriber.wait_connected(), SUBSCRIBE_BOUND)

    async def _give_up_lease(self) -> None:
        """The lease deleted, if Redis answers (if not, it lapses by itself: nothing to say)."""
        with contextlib.suppress(RedisError, RedisClusterException, OSError):
            await self.client.delete(self.keys.alive(self.replica))

    def ensure_started(self) -> None:
        """Start lazily (an app mounted without its lifespan)."""
        if self._loop is None and self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self.start())

    async def close(self) -> None:
        """Stop renewing the lease and listening, give the lease up and close the connections; each step
        bounded (``wiremcp.shutdown.bounded``: one that does not end is logged with where it waits and left)."""
        self._closing = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:  # the lease's renewal, the subscriber
            await bounded(f"the replica link's task {getattr(task.get_coro(), '__qualname__', task.get_name())}", task)
        await bounded("giving up the replica's lease", self._give_up_lease())
        for client in (self.client, self._listener_client):
            await bounded("closing a Redis connection pool", client.aclose())

    def listen(self, listener: ClusterEvents) -> None:
        """Hand the messages from other replicas to ``listener`` too (in the order listeners came)."""
        if any(known is listener for known in self._listeners):
            raise ValueError("this listener already listens")
        self._listeners.append(listener)

    @property
    def connected(self) -> bool:
        """Subscribed to the other replicas' messages right now."""
        return self._subscriber.connected

    async def ping(self) -> None:
        with reachable("ping"):
            await self.client.ping()

    # -- the lease -----------------------------------------------------------------------------
    async def _keep_lease(self) -> None:
        key, ttl_ms = self.keys.alive(self.replica), int(self.lease * 1000)
        while True:
            try:
                await self.client.set(key, b"1", px=ttl_ms)
            except (RedisError, RedisClusterException, OSError) as exc:
                self._lost(exc)
            else:
                if self._unreachable:
                    self._unreachable = False
                    log.info("Redis at %s answers again", self._where)
            await asyncio.sleep(self.lease / 3)  # the renewal period, not a wait for something

    def _lost(self, exc: BaseException) -> None:
        """Say once (not at each renewal) that Redis stopped answering: its URL without a password, why."""
        if not self._unreachable:
            self._unreachable = True
            log.warning("Redis at %s is unreachable (%s): this replica is not ready (/readyz answers 503) "
                        "and tries again until it answers", self._where, exc)

    async def alive(self, replica: str) -> bool:
        if replica == self.replica:
            return not self._closing
        with reachable("replica lease"):
            return bool(await self.client.exists(self.keys.alive(replica)))

    # -- receiving -----------------------------------------------------------------------------
    def _connected(self) -> None:
        """Subscribed (again): anything published while we were away was lost, so readers look again."""
        self._wake_all()
        self._deliver(lambda listener: listener.reconnected())

    def _subscribed(self, channel: str) -> None:
        """A session's wake-ups reach us from now on: its followers read once more, for what came before."""
        sid = self._wake_channels.get(channel)
        if sid is not None:
            for event in self._watches.get(sid, ()):
                event.set()

    def _dispatch(self, data: bytes) -> None:
        try:
            message = orjson.loads(data)
            match message:
                case ["w", sid, *_]:
                    for event in self._watches.get(sid, ()):
                        event.set()
                case ["b", event, *_]:
                    self._deliver(lambda listener: listener.bus_event(event))
                case ["r", sid, raw, *_]:
                    response = raw.encode()
                    self._deliver(lambda listener: listener.response_arrived(sid, response))
                case ["c", sid, params, *_]:
                    self._deliver(lambda listener: listener.request_cancelled(sid, params))
                case ["d", sid, sender, *_] if sender != self.replica:  # the sender has dropped it already
                    self._deliver(lambda listener: listener.session_deleted(sid))
                case ["u", sid, sender, *_] if sender != self.replica:
                    self._deliver(lambda listener: listener.session_changed(sid))
                case ["t", task_id, *_]:
                    self._deliver(lambda listener: listener.task_cancelled(task_id))
                case ["i", task_id, *_]:
                    self._deliver(lambda listener: listener.task_input_arrived(task_id))
        except Exception:
            log.exception("could not handle a message from another replica")

    def _deliver(self, event: Callable[[ClusterEvents], None]) -> None:
        """Hand one event to every listener; one that fails does not keep it from the others."""
        for listener in list(self._listeners):
            try:
                event(listener)
            except Exception:
                log.exception("a listener failed on a message from another replica")

    def _wake_all(self) -> None:
        for events in self._watches.values():
            for event in events:
                event.set()

    @contextlib.contextmanager
    def watch(self, sid: str, event: asyncio.Event | None = None) -> Iterator[asyncio.Event]:
        """An event set whenever something is appended to one of the session's streams, anywhere."""
        event = event or asyncio.Event()
        watchers = self._watches.setdefault(sid, set())
        if not watchers:
            channel = self.keys.wake(sid)
            self._wake_channels[channel] = sid
            self._subscriber.add(channel)
        watchers.add(event)
        try:
            yield event
        finally:
            left = self._watches.get(sid)
            if left is not None:
                left.discard(event)
                if not left:
                    del self._watches[sid]
                    channel = self.keys.wake(sid)
                    self._wake_channels.pop(channel, None)
                    self._subscriber.discard(channel)

    # -- sending -------------------------------------------------------------------------------
    def request_ids(self) -> Callable[[], RequestId]:
        """Ids for server-to-client requests that tell which replica waits for the answer."""
        counter = itertools.count(1)
        prefix = self.replica + ":"
        return lambda: prefix + str(next(counter))

    def owner_of(self, request_id: RequestId) -> str | None:
        """The replica that sent a server-to-client request with this id (None: not one of ours)."""
        if not isinstance(request_id, str):
            return None
        replica, sep, n = request_id.rpartition(":")
        return replica if sep and n.isdigit() else None

    async def forward_response(self, replica: str, sid: str, raw: bytes) -> None:
        with reachable("forwarding a response"):
            await publish(self.client, self.keys.inbox(replica), orjson.dumps(["r", sid, raw.decode()]))

    async def broadcast_cancel(self, sid: str, params: JSONObject) -> None:
        with reachable("forwarding a cancellation"):
            await publish(self.client, self.keys.broadcast(sid), orjson.dumps(["c", sid, params]))

    async def broadcast_delete(self, sid: str) -> None:
        with reachable("announcing a deleted session"):
            await publish(self.client, self.keys.broadcast(sid), orjson.dumps(["d", sid, self.replica]))

    async def broadcast_task_cancel(self, task_id: str) -> None:
        """A task was cancelled here: the replica running it stops it."""
        with reachable("forwarding a task cancellation"):
            await publish(self.client, self.keys.broadcast(task_id), orjson.dumps(["t", task_id]))

    async def broadcast_task_input(self, task_id: str) -> None:
        """The client answered a task's input requests here: the replica running it reads the answers."""
        with reachable("forwarding a task's input"):
            await publish(self.client, self.keys.broadcast(task_id), orjson.dumps(["i", task_id]))

    def changed_message(self, sid: str) -> bytes:
        """What announces a session saved or deleted here (``session_changed`` on every other replica); the
        session store publishes it right after every write."""
        return orjson.dumps(["u", sid, self.replica])

    def publish_bus(self, event: JSONObject) -> None:
        """Send a change event to every replica's bus; never blocks, safe from any thread."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # a worker thread (a sync tool)
            running = None
        loop = self._loop or running
        if loop is None:
            log.warning("dropped a change event published before the cluster started")
            return
        payload = orjson.dumps(["b", event])
        params = event.get("params")
        subject = str(params.get("uri", "")) if isinstance(params, dict) else ""
        channel = self.keys.broadcast(subject or str(event.get("method", "")))  # one resource's in order
        if running is loop:
            self._spawn_publish(channel, payload)
        else:
            loop.call_soon_threadsafe(self._spawn_publish, channel, payload)

    def _spawn_publish(self, channel: str, payload: bytes) -> None:
        task = asyncio.get_running_loop().create_task(self._publish(channel, payload))
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)

    async def _publish(self, channel: str, payload: bytes) -> None:
        try:
            await publish(self.client, channel, payload)
        except (RedisError, RedisClusterException, OSError) as exc:
            log.warning("could not publish a change event to the other replicas: %s", exc)
