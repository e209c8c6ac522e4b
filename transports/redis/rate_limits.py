"""``RateLimitStore`` on Redis: the replicas share every caller's buckets and counts of calls running, so
that a limit holds for the deployment, not for each replica.

A bucket is one hash, ``<prefix>:rl:<key>`` = ``{t: tokens, at: when they were counted (µs, Redis
time), f: its format's number}`` (``formats.RATE_BUCKET``). Taking a token is one script: refill by the time
elapsed times the rate (at most ``burst``), take one if there is one, write back, and expire the key when the
bucket would be full again (a full bucket and no bucket are the same: a new one is full). The script reads
Redis's own clock, so replicas whose clocks differ agree; two replicas cannot both take the last token. A
bucket of a format this release does not read is left as it is, and the call fails with 503
(``StoreUnavailable``) rather than pass uncounted.

A count of calls running is one integer, ``<prefix>:rlc:<key>``, raised by ``enter`` only while below the
limit and lowered by ``leave`` (deleted at 0), each in one script. Every ``enter`` and ``leave`` gives it
``running_ttl`` to live: the calls counted by a replica that crashed before they ended stop counting once
that long has passed without a call entering or leaving under the key.

Redis unreachable or failing: ``StoreUnavailable``, as with the other stores.
"""

from __future__ import annotations

import math

from wiremcp.rate_limits import RateLimitStore, Taken
from wiremcp.transports.redis.connection import Redis, reachable
from wiremcp.transports.redis.formats import RATE_BUCKET
from wiremcp.transports.redis.keys import Keys
from wiremcp.unavailable import StoreUnavailable

DEFAULT_RUNNING_TTL = 600.0
"""Seconds a count of calls running lives after its last ``enter`` or ``leave``."""

_TAKE = RATE_BUCKET.lua_readable("readable") + """
local now = redis.call('TIME')
local now_us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 't', 'at', FIELD)
if not readable(state[3] or nil) then return {-1, 0, '0', state[3]} end
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
elseif now_us > at then
  tokens = tokens + (now_us - at) / 1000000 * rate
end
if tokens > burst then tokens = burst end
local allowed = 0
local retry = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  retry = (1 - tokens) / rate
end
local full_ms = math.ceil((burst - tokens) / rate * 1000)
if full_ms < 1 then full_ms = 1 end
if full_ms > 1e15 then full_ms = 1e15 end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'at', string.format('%.0f', now_us),
  FIELD, FORMAT)
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', full_ms))
return {allowed, math.floor(tokens), string.format('%.17g', retry)}
""".replace("FIELD", repr(RATE_BUCKET.field)).replace("FORMAT", repr(str(RATE_BUCKET.current)))
"""Take one token from the bucket KEYS[1] (ARGV[1] tokens a second, at most ARGV[2]): {1 if taken, the
whole tokens left, the seconds until one is back (0 if taken)}; {-1, 0, '0', its number} for a bucket of a
format this release does not read, left as it is. The clock moving back (a failover to a Redis whose clock
is behind) refills nothing; the key lives until the bucket is full again (at least 1 ms, at most 10^15 ms)."""

_ENTER = """
local running = tonumber(redis.call('GET', KEYS[1]) or '0')
if running >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], running + 1, 'PX', ARGV[2])
return 1
"""
"""Count one more call under KEYS[1] if fewer than ARGV[1] are counted (and give the count ARGV[2] ms to
live): 1 if counted, else 0."""

_LEAVE = """
local running = redis.call('DECR', KEYS[1])
if running <= 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return running
"""
"""Count one call less under KEYS[1] (deleted at 0, or if it had expired meanwhile), giving what is left
ARGV[1] ms to live."""


class RedisRateLimits(RateLimitStore):
    """The buckets and counts of ``RateLimit`` in Redis, under ``keys``' prefix; every replica's instance on
    the same Redis and prefix shares them."""

    def __init__(self, client: Redis, keys: Keys, *, running_ttl: float = DEFAULT_RUNNING_TTL) -> None:
        if running_ttl <= 0:
            raise ValueError("RedisRateLimits: running_ttl must be positive")
        self._client = client
        self._prefix = keys.prefix
        self._running_ttl_ms = max(1, round(running_ttl * 1000))
        self._take = client.register_script(_TAKE)
        self._enter = client.register_script(_ENTER)
        self._leave = client.register_script(_LEAVE)

    def bucket_key(self, key: str) -> str:
        """The Redis key of the bucket ``key``."""
        return f"{self._prefix}:rl:{key}"

    def running_key(self, key: str) -> str:
        """The Redis key of the count of calls running under ``key``."""
        return f"{self._prefix}:rlc:{key}"

    async def take(self, key: str, rate: float, burst: int) -> Taken:
        if not 0 < rate < math.inf or burst < 1:
            raise ValueError("RedisRateLimits.take: rate must be positive and finite, burst at least 1")
        with reachable("rate limits"):
            allowed, remaining, retry, *number = await self._take(keys=[self.bucket_key(key)],
                                                                  args=[repr(float(rate)), burst])
        if allowed == -1:
            RATE_BUCKET.refuse(number[0] if number else None, f"the rate-limit bucket {key!r}")
            raise StoreUnavailable(f"rate limits: the bucket {key!r} was written by a newer release")
        return Taken(bool(allowed), int(remaining), float(retry))

    async def enter(self, key: str, limit: int) -> bool:
        with reachable("rate limits"):
            counted = await self._enter(keys=[self.running_key(key)], args=[limit, self._running_ttl_ms])
        return bool(counted)

    async def leave(self, key: str) -> None:
        with reachable("rate limits"):
            await self._leave(keys=[self.running_key(key)], args=[self._running_ttl_ms])
