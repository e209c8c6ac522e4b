"""``SessionStore`` on Redis: any replica reads and writes any session; Redis ends idle ones.

A session is one key holding its state as JSON, with the idle timeout as its TTL (renewed by
every request). A sorted set maps session ids to their expiry times, so that the live-session
cap holds across replicas: creation checks and inserts in one script.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from wiremcp.session_store import SessionStore
from wiremcp.state import SessionState
from wiremcp.transports.redis.connection import Keys, Redis, reachable
from wiremcp.unavailable import StoreUnavailable

_NOW_MS = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
"""
"""Redis's own clock in ms (replicas' clocks may differ), the start of every script here."""

_CREATE = _NOW_MS + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), ARGV[4])
return 1
"""

_TOUCH = _NOW_MS + """
local value
if ARGV[3] == '' then
  value = redis.call('GET', KEYS[2])
  if not value then return false end
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
else
  if redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[1], 'XX') == false then return false end
  value = ARGV[3]
end
redis.call('ZADD', KEYS[1], 'XX', now_ms + tonumber(ARGV[1]), ARGV[2])
return value
"""

_COUNT = _NOW_MS + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
return redis.call('ZCARD', KEYS[1])
"""


class RedisSessionStore(SessionStore):
    self_expiring = True

    def __init__(self, client: Redis, keys: Keys, *, idle_timeout: float) -> None:
        self._client = client
        self._keys = keys
        self._ttl_ms = max(1, int(idle_timeout * 1000))
        self._create = client.register_script(_CREATE)
        self._touch = client.register_script(_TOUCH)
        self._count = client.register_script(_COUNT)
        self._pending: list[tuple[str, asyncio.Future[bytes | None]]] | None = None
        self._lookups: set[asyncio.Task[None]] = set()

    async def create(self, state: SessionState, limit: int | None = None) -> bool:
        assert state.id is not None
        with reachable("session store"):
            created = await self._create(
                keys=[self._keys.sessions, self._keys.session(state.id)],
                args=[orjson.dumps(state.to_dict()), self._ttl_ms, limit if limit is not None else 2**53, state.id])
        return bool(created)

    async def get(self, session_id: str) -> SessionState | None:
        """The state, restarting the session's idle clock (every request reads it).

        Lookups made in the same turn of the event loop (concurrent requests) travel together, in one
        pipeline: one round trip for all of them."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bytes | None] = loop.create_future()
        if self._pending is None:
            self._pending = []
            loop.call_soon(self._send_lookups)
        self._pending.append((session_id, waiter))
        raw = await waiter
        if raw is None:
            return None
        return SessionState.from_dict(orjson.loads(raw))

    def _send_lookups(self) -> None:
        batch, self._pending = self._pending or [], None
        task = asyncio.get_running_loop().create_task(self._lookup(batch))
        self._lookups.add(task)
        task.add_done_callback(self._lookups.discard)

    async def _lookup(self, batch: list[tuple[str, asyncio.Future[bytes | None]]]) -> None:
        try:
            with reachable("session store"):
                if len(batch) == 1:
                    sid = batch[0][0]
                    results = [await self._renew(sid)]
                else:
                    async with self._client.pipeline(transaction=False) as pipe:
                        for sid, _ in batch:
                            await self._renew(sid, client=pipe)
                        results = await pipe.execute()
        except BaseException as exc:
            for _, waiter in batch:
                if not waiter.done():
                    waiter.set_exception(exc if isinstance(exc, Exception) else StoreUnavailable(str(exc)))
            if not isinstance(exc, Exception):
                raise
            return
        for (_, waiter), raw in zip(batch, results, strict=True):
            if not waiter.done():
                waiter.set_result(raw)

    async def _renew(self, session_id: str, state: bytes = b"", client: Any = None) -> Any:
        """The touch script: restart the session's idle clock, storing ``state`` if given; the stored state,
        or None if the session is gone. With a pipeline as ``client``, queued (the pipeline answers)."""
        return await self._touch(keys=[self._keys.sessions, self._keys.session(session_id)],
                                 args=[self._ttl_ms, session_id, state], client=client)

    async def save(self, state: SessionState) -> None:
        assert state.id is not None
        with reachable("session store"):
            await self._renew(state.id, orjson.dumps(state.to_dict()))

    async def touch(self, session_id: str) -> None:
        with reachable("session store"):
            await self._renew(session_id)

    async def delete(self, session_id: str) -> bool:
        with reachable("session store"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(self._keys.session(session_id))
                pipe.zrem(self._keys.sessions, session_id)
                deleted, _ = await pipe.execute()
        return bool(deleted)

    async def count(self) -> int:
        with reachable("session store"):
            return int(await self._count(keys=[self._keys.sessions]))
