"""``SessionStore`` on Redis: any replica reads and writes any session; Redis ends idle ones.

A session is one key holding its state as JSON with its format's number (``formats.SESSION``), with the idle
timeout as its TTL (renewed when the session is written, or read for its owner: another principal's lookup,
refused by the manager, renews nothing and leaves no copy). Sorted sets (the index shards of ``Keys``) map
session ids to their expiry times, so that the live-session cap holds across replicas (see ``create``). The session's key and its
index entry are in different hash slots: each script touches one of them, so it runs in a Redis Cluster.

Given the link between replicas (``RedisReplicaLink``), each replica keeps a copy of the sessions it recently read
or wrote, so that most requests need no round trip to Redis. It is the scheme of Redis's own client-side
caching (``CLIENT TRACKING``), over the link's pub/sub:

- a copy is used for ``fresh_for`` seconds at most after it was read (or written) here; the next lookup
  reads the session again, and renews its expiry on the way: a session's expiry is renewed at most once
  per ``fresh_for`` on each replica instead of on every request, and its TTL is the idle timeout plus
  ``fresh_for`` to make up for that (a session never ends sooner than the idle timeout after its last
  request, and at most ``fresh_for`` later);
- every save and delete announces itself to the other replicas (``["u", sid, replica]``, published right
  after the write), which drop their copy on receipt (``session_changed``);
  a lookup under way when its session's announcement arrives answers its callers but fills no copy,
  since its answer may predate the change (the "caching-in-progress" race of Redis's client-side caching);
- while the link is down no copy is used, and once it is back every copy is dropped (announcements may
  have been lost meanwhile); a lost message or a link that died unnoticed leaves a copy stale for
  ``fresh_for`` at most;
- at most ``max_cached`` copies are kept, the oldest dropped first; those past their freshness go as new
  ones come, or all at once when the ``SessionManager`` gives back the memory of the sessions this replica
  stopped serving (``compact``, when the manager's count of the sessions it serves has fallen far enough:
  ``FallFromPeak``; the store has no rule of its own).

Without a link (or with ``fresh_for`` 0) every lookup reads Redis.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson
from redis.commands.core import AsyncScript

from wiremcp.replica_link import ClusterEvents
from wiremcp.session_store import SERVER, Asker, SessionStore, serves
from wiremcp.state import SessionState
from wiremcp.transports.redis.connection import Redis, publish, reachable, run_scripts
from wiremcp.transports.redis.formats import SESSION
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.replica_link import RedisReplicaLink
from wiremcp.unavailable import StoreUnavailable

log = logging.getLogger("wiremcp.redis.sessions")

_NOW_MS = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
"""
"""Redis's own clock in ms (replicas' clocks may differ), the start of every script here."""

_RESERVE = _NOW_MS + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), ARGV[1])
return 1
"""
"""Count a new session (ARGV[1], expiring in ARGV[2] ms) in its index shard, unless the shard already
holds ARGV[3] live sessions: 1 if counted."""

_TOUCH = SESSION.lua_readable("readable") + """
local value = redis.call('GET', KEYS[1])
if not value then return false end
if ARGV[2] == '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return value
end
local decoded, state = pcall(cjson.decode, value)
if decoded and type(state) == 'table' and not readable(state[FIELD]) then return value end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1], 'XX')
return ARGV[2]
""".replace("FIELD", repr(SESSION.field))
"""Restart a session's idle clock (ARGV[1] ms) and answer its state; with a state (ARGV[2]), store it
first, only if the session still exists and is of a format this release reads (else it is answered as it is,
unchanged: a newer release's session is never written over in an older format)."""

_LOOKUP = """
local value = redis.call('GET', KEYS[1])
if not value then return false end
if ARGV[2] ~= '1' then
  local owner = cjson.decode(value)['owner']
  if type(owner) ~= 'string' then owner = '' end
  local mine = false
  for i = 3, #ARGV do
    if ARGV[i] == owner then mine = true end
  end
  if not mine then return {value, 0} end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {value, 1}
"""
"""Answer a session's state and whether its idle clock (ARGV[1] ms) was restarted: always when the server asks
(ARGV[2] = '1'), else only if its owner is one of the askers (ARGV[3], ...; '' for an anonymous one). A
stranger's lookup leaves the session as it was."""

_RENEW = _NOW_MS + """
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expiry and tonumber(expiry) > now_ms then redis.call('ZADD', KEYS[1], 'XX', now_ms + tonumber(ARGV[2]), ARGV[1]) end
return 0
"""
"""Restart the session's (ARGV[1]) expiry in its index shard too, unless it has expired there already: the
session itself expired then, and a lookup of a session gone must not count it again."""

_COUNT = _NOW_MS + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
return redis.call('ZCARD', KEYS[1])
"""

DEFAULT_FRESH_FOR = 1.0
"""Seconds a replica uses its copy of a session without reading it again (``WIREMCP_SESSION_CACHE_SECONDS``)."""
MAX_CACHED = 10_000
"""Copies of sessions a replica keeps at most."""


def _load(stored: bytes, sid: str) -> SessionState | None:
    """A session as read, of any format this release reads; None (refused) if of another."""
    data = SESSION.unstamp(orjson.loads(stored), f"session {sid}")
    return None if data is None else SessionState.from_dict(data)


class _Lookup:
    """One read of a session from Redis and the callers waiting for its answer."""

    __slots__ = ("askers", "sid", "started", "waiters")

    def __init__(self, sid: str, started: float) -> None:
        self.sid = sid
        self.started = started
        self.waiters: list[asyncio.Future[SessionState | None]] = []
        self.askers: list[Asker] = []
        """Who asked, waiter by waiter: the session's idle clock restarts only for its owner (or the server)."""

    def script_args(self, ttl_ms: int) -> list[Any]:
        """``_LOOKUP``'s arguments: the TTL, whether the server asks, and the identities asking."""
        anyone = any(asker is SERVER for asker in self.askers)
        owners = dict.fromkeys("" if asker is None else asker for asker in self.askers if isinstance(asker, str | None))
        return [ttl_ms, "1" if anyone else "0", *owners]


class RedisSessionStore(SessionStore, ClusterEvents):
    self_expiring = True

    def __init__(self, client: Redis, keys: Keys, *, idle_timeout: float, link: RedisReplicaLink | None = None,
                 fresh_for: float = DEFAULT_FRESH_FOR, max_cached: int = MAX_CACHED,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._keys = keys
        self._link = link
        self.fresh_for = max(0.0, min(fresh_for, idle_timeout / 4)) if link is not None else 0.0
        """Seconds a copy is used without reading the session again (0: never); a quarter of the idle
        timeout at most."""
        self._ttl_ms = max(1, int((idle_timeout + self.fresh_for) * 1000))
        self._max_cached = max(1, max_cached)
        self._clock = clock
        self._reserve = client.register_script(_RESERVE)
        self._touch = client.register_script(_TOUCH)
        self._lookup = client.register_script(_LOOKUP)
        self._renew = client.register_script(_RENEW)
        self._count = client.register_script(_COUNT)
        self._cached: OrderedDict[str, tuple[SessionState, float]] = OrderedDict()
        """Session id -> (its state, used until then), the oldest first."""
        self._lookups: dict[str, _Lookup] = {}
        """The read of each session under way whose answer may still fill its copy (an announcement of
        the session's change takes it out: its callers get its answer, the cache does not)."""
        self._heard = 0
        """Announcements of changed sessions heard so far (and reconnections): a write during which one
        arrived keeps no copy, as the announced change may have come after it in Redis."""
        self._batch: list[_Lookup] | None = None
        self._sending: set[asyncio.Task[None]] = set()
        if link is not None:
            link.listen(self)

    async def create(self, state: SessionState, limit: int | None = None) -> bool:
        """Count the session in its index shard, then store it.

        The cap (``limit``) is never passed. With one shard (one server, Sentinel) the count and the check
        are one script: exact. With several (a cluster), the session is counted in its shard and then all
        shards are counted; over the cap, it is taken back and refused. So near the cap, creates racing on
        other replicas may all be refused while one of them would have fitted (the client tries again)."""
        sid = state.id
        assert sid is not None
        started = self._clock()
        mine = self._keys.sessions(sid)
        with reachable("session store"):
            if not await self._reserve(keys=[mine], args=[sid, self._ttl_ms, limit if limit is not None else 2**53]):
                return False
            if limit is not None and self._keys.session_shards > 1 and await self._live() > limit:
                await self._client.zrem(mine, sid)
                return False
            await self._client.set(self._keys.session(sid), orjson.dumps(SESSION.stamp(state.to_dict())),
                                   px=self._ttl_ms)
        self._keep(state, started)
        return True

    async def get(self, session_id: str, asker: Asker = SERVER) -> SessionState | None:
        """The state: this replica's copy while it is fresh (no round trip), else read from Redis, which
        restarts the session's idle clock if ``asker`` is its owner (or the server); a stranger's read renews
        nothing and leaves no copy.

        Lookups made in the same turn of the event loop (concurrent requests) travel together, in one
        pipeline: one round trip for all of them; concurrent lookups of one session share one read."""
        cached = self._cached.get(session_id)
        if cached is not None and cached[1] > self._clock() and self._linked():
            return cached[0]
        loop = asyncio.get_running_loop()
        lookup = self._lookups.get(session_id)
        if lookup is None:
            lookup = self._lookups[session_id] = _Lookup(session_id, self._clock())
            if self._batch is None:
                self._batch = []
                loop.call_soon(self._send_batch)
            self._batch.append(lookup)
        waiter: asyncio.Future[SessionState | None] = loop.create_future()
        lookup.waiters.append(waiter)
        lookup.askers.append(asker)
        return await waiter

    def _send_batch(self) -> None:
        batch, self._batch = self._batch or [], None
        task = asyncio.get_running_loop().create_task(self._read(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _read(self, batch: list[_Lookup]) -> None:
        """Read the batch's sessions, renewing each only for its owner, then the index entries of those renewed
        (another slot in a cluster: a second round trip, which only a read past its copy's freshness makes),
        then answer."""
        calls = []
        for lookup in batch:  # (an asker joining a lookup already sent is renewed after it, if it is the owner)
            calls.append((self._lookup, [self._keys.session(lookup.sid)], lookup.script_args(self._ttl_ms)))
        try:
            with reachable("session store"):
                results = await run_scripts(self._client, calls)
        except BaseException as exc:
            error = exc if isinstance(exc, Exception) else StoreUnavailable(str(exc))
            for lookup in batch:
                if self._lookups.get(lookup.sid) is lookup:
                    del self._lookups[lookup.sid]
                for waiter in lookup.waiters:
                    if not waiter.done():
                        waiter.set_exception(error)
            if not isinstance(exc, Exception):
                raise
            return
        renewals: list[tuple[AsyncScript, list[str], list[Any]]] = []
        answers: list[tuple[_Lookup, SessionState | None]] = []
        for lookup, answer in zip(batch, results, strict=True):
            state = None if answer is None else _load(answer[0], lookup.sid)
            renewed = state is not None and bool(answer[1])
            if self._lookups.get(lookup.sid) is lookup:  # no change announced meanwhile
                del self._lookups[lookup.sid]
                if state is None:
                    self._cached.pop(lookup.sid, None)
                elif renewed:  # a stranger's read leaves no copy: the owner's next lookup must renew
                    self._keep(state, lookup.started)
            answers.append((lookup, state))
            if renewed:
                renewals.append(self._index_renewal(lookup.sid))
            elif state is not None and any(serves(state, asker) for asker in lookup.askers):
                renewals.extend(self._renewal(lookup.sid))  # its owner asked after the read was sent
        try:
            if renewals:
                with reachable("session store"):
                    await run_scripts(self._client, renewals)
        except StoreUnavailable as exc:  # the next lookup renews them; until then the cap counts them less
            log.warning("could not renew %d sessions' index entries: %s", len(renewals), exc)
        finally:  # the sessions were read: answered even if this task is cancelled meanwhile
            for lookup, state in answers:
                for waiter in lookup.waiters:
                    if not waiter.done():
                        waiter.set_result(state)

    def _renewal(self, session_id: str, state: bytes = b"") -> list[tuple[AsyncScript, list[str], list[Any]]]:
        """The scripts that restart the session's idle clock, storing ``state`` if given: the first answers
        the stored state, or None if the session is gone."""
        return [(self._touch, [self._keys.session(session_id)], [self._ttl_ms, state]),
                self._index_renewal(session_id)]

    def _index_renewal(self, session_id: str) -> tuple[AsyncScript, list[str], list[Any]]:
        return self._renew, [self._keys.sessions(session_id)], [session_id, self._ttl_ms]

    async def save(self, state: SessionState) -> None:
        sid = state.id
        assert sid is not None
        self._lookups.pop(sid, None)  # a read under way may predate this write: it fills no copy
        started, heard = self._clock(), self._heard
        written = orjson.dumps(SESSION.stamp(state.to_dict()))
        try:
            with reachable("session store"):
                stored = (await run_scripts(self._client, self._renewal(sid, written)))[0]
                if stored is not None and stored != written:  # a newer release's session: left as it is
                    _load(stored, sid)  # (its refusal logged)
                    stored = None
                if stored is not None:
                    await self._announce(sid)
        except BaseException:
            self._forget(sid)  # written or not: unknown
            raise
        self._lookups.pop(sid, None)  # nor one sent while the write was on its way
        if stored is None or self._heard != heard:
            self._cached.pop(sid, None)  # gone (ended elsewhere), or maybe changed there since
        else:
            self._keep(state, started)

    async def touch(self, session_id: str) -> None:
        with reachable("session store"):
            if (await run_scripts(self._client, self._renewal(session_id)))[0] is None:
                self._forget(session_id)

    async def delete(self, session_id: str) -> bool:
        self._forget(session_id)
        with reachable("session store"):
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.delete(self._keys.session(session_id))
                pipe.zrem(self._keys.sessions(session_id), session_id)
                deleted, _ = await pipe.execute()
            await self._announce(session_id)
        self._forget(session_id)  # a read sent meanwhile may have found it still there
        return bool(deleted)

    async def count(self) -> int:
        with reachable("session store"):
            counts = await run_scripts(self._client, [(self._count, [index], []) for index in self._keys.session_indexes])
        return sum(int(count) for count in counts)

    async def _live(self) -> int:
        """The live sessions in every index shard, in one pipeline (a connection per node). Expiry is read
        against this replica's clock: off by the clocks' difference at most."""
        now_ms = int(time.time() * 1000)
        async with self._client.pipeline(transaction=False) as pipe:
            for index in self._keys.session_indexes:
                pipe.zcount(index, f"({now_ms}", "+inf")
            return sum(int(count) for count in await pipe.execute())

    async def _announce(self, session_id: str) -> None:
        """Tell the other replicas that the session changed (after the write: they drop their copies)."""
        if self._link is not None:
            await publish(self._client, self._keys.broadcast(session_id), self._link.changed_message(session_id))

    # -- the copies ------------------------------------------------------------------------------
    def _linked(self) -> bool:
        """Hearing the other replicas' announcements right now: only then is a copy used or kept."""
        return self._link is not None and self._link.connected

    def _keep(self, state: SessionState, since: float) -> None:
        """Keep ``state`` (read or written at ``since``) as this replica's copy for ``fresh_for``; drop the
        oldest copies past their freshness, or past the bound."""
        until = since + self.fresh_for
        now = self._clock()
        if until <= now or not self._linked():
            return
        assert state.id is not None
        cached = self._cached
        cached[state.id] = (state, until)
        cached.move_to_end(state.id)
        while len(cached) > self._max_cached or next(iter(cached.values()))[1] <= now:
            cached.popitem(last=False)

    @property
    def cached(self) -> int:
        """How many copies this replica holds (fresh or not yet dropped)."""
        return len(self._cached)

    def _forget(self, session_id: str) -> None:
        """Drop this replica's copy of a session and let no read under way fill it."""
        self._cached.pop(session_id, None)
        self._lookups.pop(session_id, None)

    def compact(self) -> None:
        """Drop the copies past their freshness, in a table sized for those left."""
        now = self._clock()
        left = [(sid, entry) for sid, entry in self._cached.items() if entry[1] > now]
        self._cached.clear()
        self._cached.update(left)

    # -- what the other replicas announce ----------------------------------------------------------
    def session_changed(self, session_id: str) -> None:
        """Saved or deleted on another replica: this copy is stale."""
        self._heard += 1
        self._forget(session_id)

    def session_deleted(self, session_id: str) -> None:
        self.session_changed(session_id)

    def reconnected(self) -> None:
        """The link was down: announcements may have been lost, so no copy is trusted."""
        self._heard += 1
        self._cached.clear()
        self._lookups.clear()
