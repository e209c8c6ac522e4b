"""``GrantStore`` on Redis: the OAuth server's records and counters, shared by every replica, so that a
login started on one replica completes on another and survives a restart of them all.

A record is one string key holding its canonical JSON (keys sorted) with its format's number as one more
member (``formats.GRANT``; a record's own member of that name is not kept), set with its lifetime in ms
(``PX``); a counter is one integer key, apart. A record of a format this release does not read is taken for
absent, and left as it is. Each operation touches one key, in one command or one script, so it is
atomic and runs on one server, under Sentinel and in a Redis Cluster alike:

- ``put``: ``SET PX``; ``add``: ``SET NX PX``; ``get``: ``GET``; ``delete``: ``DEL``;
- ``take``: a script, the read and the delete one step (one taker gets the record); a record of a format
  this release does not read is not deleted;
- ``replace``: a script that sets the new record only if the stored one is byte for byte the expected
  one's canonical JSON, in the current format or in format 1 (what the store wrote is canonical, so equal
  records are equal bytes);
- ``count``: a script that increments and, on the first count only, sets the lifetime.

Key names (``key_name``): ``<prefix>:g:<n>:<kind>:<key>`` for a record, ``<prefix>:gc:...`` for a counter,
where ``<n>`` is the length of the kind's part, so that no kind and key name another kind's key however
they are split by colons. A part that is short printable ASCII without braces is written as it is, after
``=`` (readable in ``redis-cli``); any other (long, braces, control or non-ASCII characters) is written as
``#`` and its SHA-256: names stay short, and no hash tag of a client's choosing gathers keys on one
cluster slot.

Redis unreachable or failing: ``StoreUnavailable``, as with the other stores.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson

from wiremcp.grant_store import GrantStore, canonical, check_ttl
from wiremcp.transports.redis.connection import Redis, reachable
from wiremcp.transports.redis.formats import GRANT
from wiremcp.transports.redis.keys import Keys
from wiremcp.types import JSONObject

MAX_PLAIN_PART = 200
"""Characters of a kind or key written as they are in a key name; a longer one is hashed."""
MAX_TTL_MS = 10**15
"""The longest lifetime set, in ms (some 31,000 years: Redis refuses expiries past its clock's range)."""

_REPLACE = """
local stored = redis.call('GET', KEYS[1])
if stored ~= ARGV[1] and stored ~= ARGV[4] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""
"""Set KEYS[1] to ARGV[2] for ARGV[3] ms only if it holds ARGV[1] or ARGV[4] (the expected record in the
current format and in format 1; absent: it holds neither): 1 if set."""

_TAKE = GRANT.lua_readable("readable") + """
local value = redis.call('GET', KEYS[1])
if not value then return false end
local decoded, record = pcall(cjson.decode, value)
if decoded and type(record) == 'table' and not readable(record[FIELD]) then return value end
redis.call('DEL', KEYS[1])
return value
""".replace("FIELD", repr(GRANT.field))
"""Answer KEYS[1]'s record and delete it, unless it is of a format this release does not read (then it is
answered, to be refused, and kept)."""

_COUNT = """
local counted = redis.call('INCR', KEYS[1])
if counted == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return counted
"""
"""Add one to the counter KEYS[1]; a new one (or one somehow without a lifetime) lives ARGV[1] ms. Its new
value."""


def _part(text: str) -> str:
    if len(text) <= MAX_PLAIN_PART and all(" " <= c <= "~" and c not in "{}" for c in text):
        return "=" + text
    return "#" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _ttl_ms(ttl: float) -> int:
    check_ttl(ttl)
    return min(MAX_TTL_MS, max(1, math.ceil(ttl * 1000)))


def _stored(record: JSONObject) -> bytes:
    """A record as stored: canonical JSON, in the current format."""
    if not isinstance(record, dict):
        canonical(record)  # its TypeError
    return canonical(GRANT.stamp(record))


def _parse(value: Any, kind: str, key: str) -> JSONObject | None:
    if value is None:
        return None
    parsed: JSONObject = orjson.loads(value)
    return GRANT.unstamp(parsed, f"the grant record {kind!r} {key!r}")


class RedisGrantStore(GrantStore):
    """The records and counters of every replica on the same Redis under ``keys``' prefix."""

    def __init__(self, client: Redis, keys: Keys) -> None:
        self._client = client
        self._prefix = keys.prefix
        self._replace = client.register_script(_REPLACE)
        self._take = client.register_script(_TAKE)
        self._count = client.register_script(_COUNT)

    def key_name(self, kind: str, key: str) -> str:
        """The Redis key of the record under ``kind`` and ``key``."""
        return self._name("g", kind, key)

    def counter_name(self, kind: str, key: str) -> str:
        """The Redis key of the counter under ``kind`` and ``key``."""
        return self._name("gc", kind, key)

    def _name(self, space: str, kind: str, key: str) -> str:
        kind_part = _part(kind)
        return f"{self._prefix}:{space}:{len(kind_part)}:{kind_part}:{_part(key)}"

    async def put(self, kind: str, key: str, record: JSONObject, ttl: float) -> None:
        value, ttl_ms = _stored(record), _ttl_ms(ttl)
        with reachable("grants"):
            await self._client.set(self.key_name(kind, key), value, px=ttl_ms)

    async def add(self, kind: str, key: str, record: JSONObject, ttl: float) -> bool:
        value, ttl_ms = _stored(record), _ttl_ms(ttl)
        with reachable("grants"):
            return bool(await self._client.set(self.key_name(kind, key), value, px=ttl_ms, nx=True))

    async def get(self, kind: str, key: str) -> JSONObject | None:
        with reachable("grants"):
            value = await self._client.get(self.key_name(kind, key))
        return _parse(value, kind, key)

    async def take(self, kind: str, key: str) -> JSONObject | None:
        with reachable("grants"):
            value = await self._take(keys=[self.key_name(kind, key)])
        return _parse(value, kind, key)

    async def replace(self, kind: str, key: str, expected: JSONObject, record: JSONObject, ttl: float) -> bool:
        was, value, ttl_ms = _stored(expected), _stored(record), _ttl_ms(ttl)
        with reachable("grants"):
            return bool(await self._replace(keys=[self.key_name(kind, key)],
                                            args=[was, value, ttl_ms, canonical(expected)]))

    async def delete(self, kind: str, key: str) -> bool:
        with reachable("grants"):
            return bool(await self._client.delete(self.key_name(kind, key)))

    async def count(self, kind: str, key: str, ttl: float) -> int:
        ttl_ms = _ttl_ms(ttl)
        with reachable("grants"):
            return int(await self._count(keys=[self.counter_name(kind, key)], args=[ttl_ms]))
