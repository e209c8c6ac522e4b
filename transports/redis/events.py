"""``EventStore`` on Redis Streams: one stream per SSE stream, readable from every replica.

Entry ids are ``0-<seq + 1>``, and ``Last-Event-ID`` maps to a range read. A per-session hash keeps
each stream's newest number, so that appends with an explicit number are conditional (the first
writer of a number wins) and numbering goes on after a quiet stream's events expired. Each stream
is bounded in length (``MAXLEN ~``) and in age (its events expire ``max_age`` after the last one);
the numbers live as long as the session may (``counter_ttl``). Each append publishes a wake-up on the
session's channel, for whoever follows the stream. Every key of a session and its channel share the
session's hash slot, so that the append is one script in a Redis Cluster too.
"""

from __future__ import annotations

import orjson

from wiremcp.event_store import EventStore, StoredEvent
from wiremcp.transports.redis.connection import Redis, publish_command, reachable
from wiremcp.transports.redis.keys import Keys
from wiremcp.types import JSONObject, RequestId

_APPEND = """
local newest = tonumber(redis.call('HGET', KEYS[3], ARGV[8]) or '-1')
local seq
if ARGV[1] == '' then seq = newest + 1 else seq = tonumber(ARGV[1]) end
if seq <= newest then return -1 end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '0-' .. (seq + 1), 'm', ARGV[2], 'o', ARGV[3], 'r', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('HSET', KEYS[3], ARGV[8], seq)
redis.call('PEXPIRE', KEYS[3], ARGV[10])
redis.call('SADD', KEYS[2], ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[10])
redis.call(ARGV[11], ARGV[7], ARGV[9])
return seq
"""


def _seq(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[1]) - 1


class RedisEventStore(EventStore):
    shared = True

    def __init__(self, client: Redis, keys: Keys, *, replica: str, max_events_per_stream: int = 10_000,
                 max_age: float = 600.0, counter_ttl: float | None = None) -> None:
        self._client = client
        self._keys = keys
        self.replica = replica
        self._max_events = max_events_per_stream
        self._ttl_ms = max(1, int(max_age * 1000))
        self._counter_ttl_ms = max(self._ttl_ms, int((counter_ttl or 0) * 1000))
        self._append = client.register_script(_APPEND)
        self._publish = publish_command(client)

    async def _add(self, session_id: str, stream: str, seq: int | None, message: JSONObject | None,
                   request_id: RequestId | None) -> int:
        payload = b"" if message is None else orjson.dumps(message)
        wake = orjson.dumps(["w", session_id, stream])
        with reachable("event store"):
            return int(await self._append(
                keys=[self._keys.events(session_id, stream), self._keys.streams(session_id),
                      self._keys.counters(session_id)],
                args=["" if seq is None else seq, payload, self.replica,
                      b"" if request_id is None else orjson.dumps(request_id), self._max_events, self._ttl_ms,
                      self._keys.wake(session_id), stream, wake, self._counter_ttl_ms, self._publish]))

    async def append(self, session_id: str, stream: str, seq: int, message: JSONObject | None,
                     request_id: RequestId | None = None) -> None:
        await self._add(session_id, stream, seq, message, request_id)

    async def append_next(self, session_id: str, stream: str, message: JSONObject | None) -> int:
        return await self._add(session_id, stream, None, message, None)

    async def last(self, session_id: str, stream: str) -> int:
        with reachable("event store"):
            newest = await self._client.hget(self._keys.counters(session_id), stream)
        return int(newest) if newest is not None else -1

    async def after(self, session_id: str, stream: str, seq: int) -> list[StoredEvent] | None:
        key = self._keys.events(session_id, stream)
        with reachable("event store"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.xrange(key, count=1)
                pipe.xrevrange(key, count=1)
                pipe.xrange(key, min=f"(0-{seq + 1}")
                first, newest, entries = await pipe.execute()
        if not newest or seq > _seq(newest[0][0]) or seq < _seq(first[0][0]) - 1:
            return None  # unknown, or events after it already evicted
        events: list[StoredEvent] = []
        for entry_id, fields in entries:
            raw, owner, request = fields.get(b"m", b""), fields.get(b"o", b""), fields.get(b"r", b"")
            events.append(StoredEvent(stream, _seq(entry_id), orjson.loads(raw) if raw else None,
                                      owner.decode() or None, orjson.loads(request) if request else None))
        return events

    async def drop_session(self, session_id: str) -> None:
        with reachable("event store"):
            streams = await self._client.smembers(self._keys.streams(session_id))
            keys = [self._keys.events(session_id, s.decode() if isinstance(s, bytes) else s) for s in streams]
            await self._client.delete(self._keys.streams(session_id), self._keys.counters(session_id), *keys)
