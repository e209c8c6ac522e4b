"""Who holds each session's GET stream, in Redis: the core's ``StreamHolds`` shared by every replica.

A hold is a key per session (in the session's hash slot) naming its holder's token, set for one lease and
renewed by the replica serving the stream; renewing and releasing check the token in one script, so a hold
taken over by a resumed GET on another replica is never renewed or released by the one it replaced.

The sessions that listen (``StreamHolds.listening``) are sets split like the session index (``Keys``): a
session is added to its shard with each hold, and removed when it ends, or found ended.
"""

from __future__ import annotations

import contextlib

from wiremcp.stream_holds import StreamHolds
from wiremcp.transports.redis.connection import Redis, reachable
from wiremcp.transports.redis.keys import Keys

_RENEW_IF_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE_IF_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisStreamHolds(StreamHolds):
    """The GET streams' holds of every replica sharing ``keys``' prefix; each lasts ``lease`` seconds."""

    def __init__(self, client: Redis, keys: Keys, *, lease: float = 5.0) -> None:
        self._client = client
        self._keys = keys
        self.lease = lease
        self._renew = client.register_script(_RENEW_IF_HELD)
        self._release = client.register_script(_RELEASE_IF_HELD)

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.lease * 1000))

    async def hold(self, session_id: str, token: str, *, take_over: bool) -> bool:
        with reachable("GET stream"):
            key = self._keys.get_stream(session_id)
            if take_over:
                await self._client.set(key, token, px=self._ttl_ms)
            elif not await self._client.set(key, token, px=self._ttl_ms, nx=True):
                return False
            await self._client.sadd(self._keys.listening(session_id), session_id)
            return True

    async def renew(self, session_id: str, token: str) -> bool:
        with reachable("GET stream"):
            return bool(await self._renew(keys=[self._keys.get_stream(session_id)], args=[token, self._ttl_ms]))

    async def release(self, session_id: str, token: str) -> None:
        with contextlib.suppress(Exception):  # the stream is ending: a hold left behind lapses within a lease
            await self._release(keys=[self._keys.get_stream(session_id)], args=[token])

    async def listening(self) -> list[str]:
        with reachable("the sessions that listen"):
            async with self._client.pipeline(transaction=False) as pipe:
                for index in self._keys.listening_indexes:
                    pipe.smembers(index)
                shards = await pipe.execute()
        return [member.decode() if isinstance(member, bytes) else str(member) for shard in shards for member in shard]

    async def forget(self, session_id: str) -> None:
        with contextlib.suppress(Exception):  # one left behind is dropped the next time it is found ended
            await self._client.srem(self._keys.listening(session_id), session_id)
