"""Everything a replica keeps in Redis, built from one URL: the core's ``Backend`` (``wiremcp.backend``) over
Redis, one server, Sentinel or Redis Cluster. The session store, the event store, the task store, the
subscription bus, the rate limits' buckets, the GET streams' holds, the OAuth server's grants and the link between replicas; the
composition root hands it to the server's ``Runtime``, whose HTTP app serves from it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from dataclasses import dataclass

import orjson

from wiremcp.backend import Backend
from wiremcp.replicas import life_name
from wiremcp.request_state import RequestStateSealer, decode_key
from wiremcp.transports.redis.bus import RedisSubscriptionBus
from wiremcp.transports.redis.connection import connect, reachable
from wiremcp.transports.redis.events import RedisEventStore
from wiremcp.transports.redis.formats import REQUEST_STATE_KEY
from wiremcp.transports.redis.grants import RedisGrantStore
from wiremcp.transports.redis.keys import CLUSTER_SHARDS, Keys
from wiremcp.transports.redis.rate_limits import RedisRateLimits
from wiremcp.transports.redis.replica_link import RedisReplicaLink
from wiremcp.transports.redis.sessions import DEFAULT_FRESH_FOR, RedisSessionStore
from wiremcp.transports.redis.stream_holds import RedisStreamHolds
from wiremcp.transports.redis.target import RedisTarget, parse_target
from wiremcp.transports.redis.tasks import RedisTaskStore
from wiremcp.unavailable import StoreUnavailable


@dataclass(slots=True, kw_only=True)
class RedisBackend(Backend):
    """The ``Backend`` every replica shares through one Redis (``connect``)."""

    link: RedisReplicaLink
    _shared: bool = False
    _sharing: asyncio.Task[None] | None = None

    @classmethod
    def connect(cls, url: RedisTarget | str, *, prefix: str = "wiremcp", timeout: float = 2.0, replica: str = "",
                lease: float = 5.0, idle_timeout: float = 1800.0, max_events_per_stream: int = 10_000,
                max_event_age: float = 600.0, session_cache: float = DEFAULT_FRESH_FOR, wait_replicas: int = 0,
                wait_timeout_ms: int = 100) -> RedisBackend:
        """Nothing is sent before ``start``; a Redis that is down makes requests fail with 503, not startup.
        ``url``: one server, a cluster or Sentinel (``target``); a bad one is a ``ValueError``.
        ``session_cache``: seconds a replica uses its copy of a session (``RedisSessionStore``).
        ``wait_replicas``, ``wait_timeout_ms``: events count as stored once that many replicas have them
        (``RedisEventStore``)."""
        target = parse_target(url) if isinstance(url, str) else url
        client = connect(target, timeout=timeout)
        shards = CLUSTER_SHARDS if target.topology == "cluster" else 1
        keys = Keys(prefix, session_shards=shards, broadcast_shards=shards)
        name = life_name(replica)
        link = RedisReplicaLink.connect(target, keys, replica=name, lease=lease, timeout=timeout, client=client)
        sessions = RedisSessionStore(client, keys, idle_timeout=idle_timeout, link=link, fresh_for=session_cache)
        session_life = idle_timeout + sessions.fresh_for  # the longest a session lives after its last request
        return cls(link=link, sessions=sessions,
                   events=RedisEventStore(client, keys, replica=name, max_events_per_stream=max_events_per_stream,
                                          max_age=max_event_age, counter_ttl=max(session_life, max_event_age),
                                          wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms),
                   bus=RedisSubscriptionBus(link), tasks=RedisTaskStore(client, keys),
                   rate_limits=RedisRateLimits(client, keys),
                   stream_holds=RedisStreamHolds(client, keys, lease=lease), grants=RedisGrantStore(client, keys))

    async def share_request_state_key(self, sealer: RequestStateSealer) -> None:
        """Replicas without configured ``requestState`` keys agree on one kept in Redis (the first one
        to start makes it, in the current format; it is never written again), so that a multi-round exchange
        may continue on any replica. A Redis that does not answer yet does not stop the start: the key is asked
        for again every lease renewal period until it does, and ``request_state_key_shared`` (a readiness
        check) is False until then; so is a key of a format this release does not read (``formats``)."""
        try:
            await self._share_request_state_key(sealer)
        except StoreUnavailable:
            self._sharing = asyncio.get_running_loop().create_task(self._keep_sharing(sealer))

    async def request_state_key_shared(self) -> bool:
        """The replicas' ``requestState`` key is in use here (``share_request_state_key`` got it)."""
        return self._shared

    async def _keep_sharing(self, sealer: RequestStateSealer) -> None:
        while True:
            await asyncio.sleep(self.link.lease / 3)  # the retry period, not a wait for something
            with contextlib.suppress(StoreUnavailable):
                await self._share_request_state_key(sealer)
                return

    async def _share_request_state_key(self, sealer: RequestStateSealer) -> None:
        key = self.link.keys.request_state_key
        fresh = orjson.dumps(REQUEST_STATE_KEY.stamp({"key": base64.urlsafe_b64encode(os.urandom(32)).decode()}))
        with reachable("request-state key"):
            await self.link.client.set(key, fresh, nx=True)
            shared = await self.link.client.get(key)
        if shared:
            text = _shared_key(shared.decode() if isinstance(shared, bytes) else shared)
            if text is None:
                raise StoreUnavailable("request-state key: the one in Redis is of a format this release does not read")
            sealer.use_keys([decode_key(text)])
        self._shared = True


def _shared_key(stored: str) -> str | None:
    """The key's base64url text from the stored record: format 1 is the text alone, later ones JSON; None if of
    a format this release does not read (its refusal logged)."""
    record = orjson.loads(stored) if stored.startswith("{") else {"key": stored}
    read = REQUEST_STATE_KEY.unstamp(record, "the requestState key") if isinstance(record, dict) else None
    text = None if read is None else read.get("key")
    return text if isinstance(text, str) else None
