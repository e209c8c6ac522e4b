"""``EventStore`` on Redis Streams: one stream per SSE stream, readable from every replica.

Entry ids are ``0-<seq + 1>``, and ``Last-Event-ID`` maps to a range read. A per-session hash keeps
each stream's newest number, so that appends with an explicit number are conditional (the first
writer of a number wins) and numbering goes on after a quiet stream's events expired. Each stream
is bounded in length (``MAXLEN ~``) and in age (its events expire ``max_age`` after the last one);
the numbers live as long as the session may (``counter_ttl``). Each append publishes a wake-up on the
session's channel, for whoever follows the stream. Every key of a session and its channel share the
session's hash slot, so that the append is one script in a Redis Cluster too. Each event carries its format's
number (``formats.EVENT``); a stream holding an event of a format this release does not read is not replayed
from before that event (its position is unknown here).

A request's stream (numbered by the replica running the request) goes to Redis through that replica's
outboxes (``transports.redis.outbox``): what Redis cannot take yet is kept and appended in order once it
can, and a gap Redis shows (events a dead primary took with it) or an overflow ends the stream with an
error answering its request. With ``wait_replicas`` (``WIREMCP_REDIS_WAIT_REPLICAS``) every append is
followed by ``WAIT`` on its connection, and an event stays kept until that many replicas have it.

A session's GET stream is numbered by the store (``append_next``: every replica writes it): an event that
cannot be appended there fails (``StoreUnavailable``), as before; ``WAIT`` follows it too, but an event it
does not confirm is not kept (another replica may take its number after a failover).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from wiremcp.event_store import MAX_SEQ, EventStore, StoredEvent
from wiremcp.transports.redis.connection import (
    Redis,
    publish_command,
    reachable,
    run_script_on_one_connection,
)
from wiremcp.transports.redis.formats import EVENT
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.outbox import GAP, MAX_KEPT_BYTES, TAKEN, KeptEvent, Key, Outboxes
from wiremcp.types import JSONObject, RequestId

log = logging.getLogger("wiremcp.events")

# KEYS: the stream, the session's stream index, the session's numbers.
# ARGV: 1 number ('' = the next), 2 message, 3 owner, 4 request id, 5 MAXLEN, 6 the stream's TTL (ms), 7 the
# wake-up channel, 8 the stream's name, 9 the wake-up, 10 the numbers' TTL (ms), 11 the publish command,
# 12 '1' for the stream's last event (nothing is stored after it), 13 the append's id ('' = none: see
# ``append_next``'s ``once``; an id among the stream's ONCE_WINDOW newest events means it is stored already).
# Each event carries its format's number (formats.EVENT).
# Returns the event's number; TAKEN if it was taken (then the numbers' TTL is renewed: a write, so that a WAIT after
# it covers what this primary holds); GAP - newest if it would leave a gap after the newest (a stream whose numbers
# Redis does not know, new or expired, takes any number).
ONCE_WINDOW = 64
"""The newest events of a stream an append with an id (``once``) looks among for one it stored already: those
appended while it was tried again (a few seconds of changes to one session) are far fewer."""

_APPEND = """
if ARGV[13] ~= '' then
  for _, entry in ipairs(redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', ONCE_WINDOW)) do
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'c' and fields[i + 1] == ARGV[13] then return TAKEN end
    end
  end
end
local known = redis.call('HGET', KEYS[3], ARGV[8])
local newest = tonumber(known or '-1')
local seq
if ARGV[1] == '' then seq = newest + 1 else seq = tonumber(ARGV[1]) end
if seq <= newest then
  redis.call('PEXPIRE', KEYS[3], ARGV[10])
  return TAKEN
end
if known and seq > newest + 1 then return GAP - newest end
if ARGV[13] ~= '' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '0-' .. (seq + 1), 'm', ARGV[2], 'o', ARGV[3], 'r', ARGV[4],
    FIELD, FORMAT, 'c', ARGV[13])
else
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '0-' .. (seq + 1), 'm', ARGV[2], 'o', ARGV[3], 'r', ARGV[4],
    FIELD, FORMAT)
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
if ARGV[12] == '1' then redis.call('HSET', KEYS[3], ARGV[8], 'MAX_SEQ') else
  redis.call('HSET', KEYS[3], ARGV[8], seq) end
redis.call('PEXPIRE', KEYS[3], ARGV[10])
redis.call('SADD', KEYS[2], ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[10])
redis.call(ARGV[11], ARGV[7], ARGV[9])
return seq
""".replace("ONCE_WINDOW", str(ONCE_WINDOW)).replace("TAKEN", str(TAKEN)).replace("GAP", str(GAP)).replace("MAX_SEQ", str(MAX_SEQ)).replace(
    "FIELD", repr(EVENT.field)).replace("FORMAT", repr(str(EVENT.current)))


_FORMAT = EVENT.field.encode()


def _seq(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[1]) - 1


class RedisEventStore(EventStore):
    shared = True

    def __init__(self, client: Redis, keys: Keys, *, replica: str, max_events_per_stream: int = 10_000,
                 max_age: float = 600.0, counter_ttl: float | None = None, wait_replicas: int = 0,
                 wait_timeout_ms: int = 100, max_kept_bytes: int = MAX_KEPT_BYTES) -> None:
        """``wait_replicas``: an event of a request's stream counts as stored once this many replicas have it
        (``WAIT``, each waiting at most ``wait_timeout_ms``); 0: once the primary took it. ``max_kept_bytes``:
        what the outboxes may keep (``Outboxes``)."""
        if wait_replicas < 0:
            raise ValueError(f"the replicas to wait for must be 0 or more, got {wait_replicas}")
        if wait_replicas and wait_timeout_ms < 1:
            raise ValueError(f"the wait must be at least 1 ms, got {wait_timeout_ms}")
        self._client = client
        self._keys = keys
        self.replica = replica
        self._max_events = max_events_per_stream
        self._ttl_ms = max(1, int(max_age * 1000))
        self._counter_ttl_ms = max(self._ttl_ms, int((counter_ttl or 0) * 1000))
        self._append = client.register_script(_APPEND)
        self._publish = publish_command(client)
        self._wait = (wait_replicas, wait_timeout_ms) if wait_replicas else None
        self._outboxes = Outboxes(self._send, send_one=self._send_one if self._wait is None else None,
                                  max_age=max_age, max_bytes=max_kept_bytes)

    @property
    def kept(self) -> int:
        """Events this process keeps for Redis now."""
        return self._outboxes.kept

    # -- appending -------------------------------------------------------------------------------------
    async def append(self, session_id: str, stream: str, seq: int, message: JSONObject | None,
                     request_id: RequestId | None = None) -> None:
        """Store one event, or keep it to store once Redis can take it (never raises ``StoreUnavailable``)."""
        await self._outboxes.put((session_id, stream), seq, b"" if message is None else orjson.dumps(message),
                                 request_id)

    async def append_next(self, session_id: str, stream: str, message: JSONObject | None, *,
                          once: str | None = None) -> int:
        payload = b"" if message is None else orjson.dumps(message)
        with reachable("event store"):
            results, replicas = await self._run([self._call(session_id, stream, None, payload, None, once=once)])
        if int(results[0]) == TAKEN:  # stored by an earlier try whose answer was lost
            return await self.last(session_id, stream)
        if self._wait is not None and replicas < self._wait[0]:
            log.warning("event %s_%d of session %s: %d of %d replicas have it", stream, results[0], session_id,
                        replicas, self._wait[0])
        return int(results[0])

    def _call(self, session_id: str, stream: str, seq: int | None, payload: bytes, request_id: RequestId | None,
              final: bool = False, once: str | None = None) -> tuple[list[str], list[Any]]:
        """The keys and arguments of one append (``_APPEND``)."""
        wake = orjson.dumps(["w", session_id, stream])
        return ([self._keys.events(session_id, stream), self._keys.streams(session_id), self._keys.counters(session_id)],
                ["" if seq is None else seq, payload, self.replica,
                 b"" if request_id is None else orjson.dumps(request_id), self._max_events, self._ttl_ms,
                 self._keys.wake(session_id), stream, wake, self._counter_ttl_ms, self._publish, "1" if final else "0",
                 once or ""])

    async def _run(self, calls: list[tuple[list[str], list[Any]]]) -> tuple[list[Any], int]:
        """The appends, in order on one connection, and the replicas that have them (``WAIT``; 0 without it)."""
        if self._wait is None and len(calls) == 1:  # the common case: as any other script call
            keys, args = calls[0]
            return [await self._append(keys=keys, args=args)], 0
        return await run_script_on_one_connection(self._client, self._append, calls, wait=self._wait)

    async def _send_one(self, key: Key, seq: int, payload: bytes, request_id: RequestId | None) -> int:
        """``SendOne`` for the outboxes."""
        keys, args = self._call(*key, seq, payload, request_id)
        with reachable("event store"):
            return int(await self._append(keys=keys, args=args))

    async def _send(self, key: Key, events: list[KeptEvent]) -> tuple[list[int], str | None]:
        """``Send`` for the outboxes."""
        calls = [self._call(*key, e.seq, e.payload, e.request_id, e.final) for e in events]
        with reachable("event store"):
            if self._wait is None and len(calls) == 1:  # the common case: as any other script call
                keys, args = calls[0]
                return [await self._append(keys=keys, args=args)], None
            results, replicas = await self._run(calls)
        short = None
        if self._wait is not None and replicas < self._wait[0]:
            short = f"{replicas} of {self._wait[0]} replicas have them"
        return [int(result) for result in results], short

    async def close(self) -> None:
        await self._outboxes.close()

    # -- reading -------------------------------------------------------------------------------------------
    async def last(self, session_id: str, stream: str) -> int:
        with reachable("event store"):
            newest = await self._client.hget(self._keys.counters(session_id), stream)
        return int(newest) if newest is not None else -1

    async def after(self, session_id: str, stream: str, seq: int) -> list[StoredEvent] | None:
        """Redis's events after ``seq``, then those this process keeps for the stream (not in Redis yet)."""
        key = self._keys.events(session_id, stream)
        with reachable("event store"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.xrange(key, count=1)
                pipe.xrevrange(key, count=1)
                pipe.xrange(key, min=f"(0-{seq + 1}")
                first, newest, entries = await pipe.execute()
        events: list[StoredEvent] = []
        for entry_id, stored in entries:
            number = EVENT.accept(stored.get(_FORMAT), f"event {_seq(entry_id)} of stream {stream} of session "
                                                      f"{session_id}")
            if number is None:
                return None  # a newer release's event: its stream cannot be replayed here
            fields = EVENT.upgrade(number, stored)
            raw, owner, request = fields.get(b"m", b""), fields.get(b"o", b""), fields.get(b"r", b"")
            events.append(StoredEvent(stream, _seq(entry_id), orjson.loads(raw) if raw else None,
                                      owner.decode() or None, orjson.loads(request) if request else None))
        oldest_seq = _seq(first[0][0]) if first else None
        newest_seq = _seq(newest[0][0]) if newest else None
        for kept in self._outboxes.waiting((session_id, stream)):  # on their way to Redis
            if kept.seq is None or (newest_seq is not None and kept.seq <= newest_seq):
                continue
            oldest_seq = kept.seq if oldest_seq is None else oldest_seq
            newest_seq = kept.seq
            if kept.seq > seq:
                events.append(StoredEvent(stream, kept.seq, orjson.loads(kept.payload) if kept.payload else None,
                                          self.replica, kept.request_id))
        if newest_seq is None or oldest_seq is None or seq > newest_seq or seq < oldest_seq - 1:
            return None  # unknown, or events after it already evicted
        return events

    async def drop_session(self, session_id: str) -> None:
        self._outboxes.drop(session_id)
        with reachable("event store"):
            streams = await self._client.smembers(self._keys.streams(session_id))
            keys = [self._keys.events(session_id, s.decode() if isinstance(s, bytes) else s) for s in streams]
            await self._client.delete(self._keys.streams(session_id), self._keys.counters(session_id), *keys)
