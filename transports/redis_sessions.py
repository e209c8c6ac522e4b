"""``SessionStore`` on Redis: any replica reads and writes any session; Redis ends idle ones.

A session is one key holding its state as JSON, with the idle timeout as its TTL (renewed by
every request). A sorted set maps session ids to their expiry times, so that the live-session
cap holds across replicas: creation checks and inserts in one script.
"""

from __future__ import annotations

import orjson

from app.state import SessionState
from transports.redis_connection import Keys, Redis, reachable
from transports.sessions import SessionStore

_CREATE = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), ARGV[4])
return 1
"""

_TOUCH = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
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

_COUNT = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
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

    async def create(self, state: SessionState, limit: int | None = None) -> bool:
        assert state.id is not None
        with reachable("session store"):
            created = await self._create(
                keys=[self._keys.sessions, self._keys.session(state.id)],
                args=[orjson.dumps(state.to_dict()), self._ttl_ms, limit if limit is not None else 2**53, state.id])
        return bool(created)

    async def get(self, session_id: str) -> SessionState | None:
        """The state, restarting the session's idle clock (every request reads it)."""
        with reachable("session store"):
            raw = await self._touch(keys=[self._keys.sessions, self._keys.session(session_id)],
                                    args=[self._ttl_ms, session_id, ""])
        if raw is None:
            return None
        return SessionState.from_dict(orjson.loads(raw))

    async def save(self, state: SessionState) -> None:
        assert state.id is not None
        with reachable("session store"):
            await self._touch(keys=[self._keys.sessions, self._keys.session(state.id)],
                              args=[self._ttl_ms, state.id, orjson.dumps(state.to_dict())])

    async def touch(self, session_id: str) -> None:
        with reachable("session store"):
            await self._touch(keys=[self._keys.sessions, self._keys.session(session_id)],
                              args=[self._ttl_ms, session_id, ""])

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
