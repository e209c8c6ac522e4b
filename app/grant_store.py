"""Where the OAuth server (``wiremcp.auth.oauth``) keeps what it grants: ``GrantStore``, and its in-memory implementation.

The OAuth server's state is records (JSON objects) filed by ``kind``, a short name it chooses ("client",
"code", "login", "consent", "family", "upstream", "key", "metadata"), and ``key``, any string (a client id
is a URL, a code a random token); each lives ``ttl`` seconds, and a record past its time is gone. Beside
the records, ``count`` keeps counters (registrations per source, calls of an endpoint), which are not
records: ``get`` does not see them and ``put`` under the same kind and key leaves them alone.

Every method is one atomic step: of two replicas taking one code, one gets it; of two rotating one refresh
token family, one succeeds (``replace``). A record is compared and returned as its canonical JSON (keys
sorted): what ``get`` answers is a copy, never the object given to ``put``. Kinds and keys come from
requests (a client id, a code): an implementation is safe for any string, however long, whatever it
holds. A store that cannot be reached raises ``StoreUnavailable`` (the request fails with 503).

``InMemoryGrantStore`` keeps one process's; ``wiremcp.transports.redis.grants.RedisGrantStore`` shares them
between replicas over Redis, so that a login started on one replica completes on another.
"""

from __future__ import annotations

import heapq
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from wiremcp.types import JSONObject

DEFAULT_MAX_RECORDS = 100_000
"""Records (and, apart, counters) ``InMemoryGrantStore`` keeps of each kind, at most."""


def canonical(record: JSONObject) -> bytes:
    """``record`` as the stores keep and compare it: JSON, keys sorted. Not a JSON object (or holding
    what JSON cannot say): ``TypeError``."""
    if not isinstance(record, dict):
        raise TypeError(f"a grant record must be a JSON object, got {type(record).__name__}")
    try:
        return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        raise TypeError(f"a grant record must be JSON: {exc}") from None


def check_ttl(ttl: float) -> None:
    """A lifetime is a positive, finite number of seconds; anything else is the caller's ``ValueError``."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf:
        raise ValueError(f"a grant's ttl must be a positive, finite number of seconds, got {ttl!r}")


class GrantStore(ABC):
    """Records by ``kind`` and ``key``, each living ``ttl`` seconds, and counters beside them; every method
    is atomic (replicas sharing a store see each step whole). A record is a JSON object (``TypeError``
    otherwise); a ``ttl`` is a positive, finite number of seconds (``ValueError`` otherwise); kinds and
    keys are any strings. ``StoreUnavailable``: the store cannot be reached."""

    @abstractmethod
    async def put(self, kind: str, key: str, record: JSONObject, ttl: float) -> None:
        """Keep ``record`` under ``kind`` and ``key`` for ``ttl`` seconds, in place of any record there."""

    @abstractmethod
    async def add(self, kind: str, key: str, record: JSONObject, ttl: float) -> bool:
        """Keep ``record`` for ``ttl`` seconds only if no record is under ``kind`` and ``key``: True if
        kept, False if one was there (it stays as it was)."""

    @abstractmethod
    async def get(self, kind: str, key: str) -> JSONObject | None:
        """The record under ``kind`` and ``key`` (a copy), or None if there is none (or its time passed)."""

    @abstractmethod
    async def take(self, kind: str, key: str) -> JSONObject | None:
        """The record under ``kind`` and ``key``, deleted in the same step: of concurrent takes (on any
        replicas), exactly one gets it and the others None. For what is used once: codes, pending logins."""

    @abstractmethod
    async def replace(self, kind: str, key: str, expected: JSONObject, record: JSONObject, ttl: float) -> bool:
        """Compare and set: keep ``record`` for ``ttl`` seconds in place of the record under ``kind`` and
        ``key`` only if that record equals ``expected`` (as canonical JSON); True if replaced, False if
        there is none or it differs (it stays as it was). For rotating a refresh token family: of two
        concurrent rotations from one state, one succeeds."""

    @abstractmethod
    async def delete(self, kind: str, key: str) -> bool:
        """Delete the record under ``kind`` and ``key``: True if there was one."""

    @abstractmethod
    async def count(self, kind: str, key: str, ttl: float) -> int:
        """Add one to the counter under ``kind`` and ``key`` and answer its new value. A counter starts at
        1 and lives ``ttl`` seconds from that first count (later counts do not extend it): a limit of so
        many per window. Counters are apart from records (``get``, ``put``, ``delete`` do not touch them)."""


@dataclass(slots=True)
class _Table:
    """One kind's entries: key -> (expiry, value), and a heap of (expiry, key) to find the expired and the
    soonest to expire (an entry written again leaves its old heap item behind, skipped when met)."""

    entries: dict[str, tuple[float, bytes | int]] = field(default_factory=dict)
    expiries: list[tuple[float, str]] = field(default_factory=list)

    def live(self, key: str, now: float) -> tuple[float, bytes | int] | None:
        entry = self.entries.get(key)
        if entry is not None and entry[0] <= now:
            del self.entries[key]
            return None
        return entry

    def set(self, key: str, expires: float, value: bytes | int) -> None:
        self.entries[key] = (expires, value)
        heapq.heappush(self.expiries, (expires, key))
        if len(self.expiries) > 2 * len(self.entries) + 64:  # items of entries written again or deleted
            self.expiries = [(at, k) for k, (at, _) in self.entries.items()]
            heapq.heapify(self.expiries)

    def sweep(self, now: float) -> None:
        """Forget the entries whose time has passed."""
        while self.expiries and self.expiries[0][0] <= now:
            at, key = heapq.heappop(self.expiries)
            entry = self.entries.get(key)
            if entry is not None and entry[0] == at:
                del self.entries[key]

    def drop_soonest(self) -> None:
        """Forget the entry that would expire first."""
        while self.expiries:
            at, key = heapq.heappop(self.expiries)
            entry = self.entries.get(key)
            if entry is not None and entry[0] == at:
                del self.entries[key]
                return


class InMemoryGrantStore(GrantStore):
    """One process's records and counters (one replica; gone with it). Every method runs without
    awaiting, hence atomically on the event loop.

    Bounded: at most ``max_records`` records of each kind, and as many counters of each kind. Records past
    their time are swept as a kind is written (and any is dropped when read); a new record (or counter)
    in a kind that is full even so makes room by dropping the one that would expire first, the one
    closest to being gone anyway. One kind filling up never costs another kind a record (a flood of
    registrations cannot push out a signing key); the kinds are the caller's few names, and a kind left
    with nothing is forgotten. Times are read from ``clock`` (seconds, monotonic)."""

    def __init__(self, *, max_records: int = DEFAULT_MAX_RECORDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_records < 1:
            raise ValueError("InMemoryGrantStore: max_records must be at least 1")
        self.max_records = max_records
        self._clock = clock
        self._records: dict[str, _Table] = {}
        self._counters: dict[str, _Table] = {}

    def _write(self, tables: dict[str, _Table], kind: str, key: str, ttl: float, value: bytes | int) -> None:
        now = self._clock()
        table = tables.setdefault(kind, _Table())
        table.sweep(now)
        if key not in table.entries and len(table.entries) >= self.max_records:
            table.drop_soonest()
        table.set(key, now + ttl, value)

    def _live(self, tables: dict[str, _Table], kind: str, key: str) -> tuple[float, bytes | int] | None:
        table = tables.get(kind)
        if table is None:
            return None
        entry = table.live(key, self._clock())
        if not table.entries:
            del tables[kind]
        return entry

    async def put(self, kind: str, key: str, record: JSONObject, ttl: float) -> None:
        check_ttl(ttl)
        self._write(self._records, kind, key, ttl, canonical(record))

    async def add(self, kind: str, key: str, record: JSONObject, ttl: float) -> bool:
        check_ttl(ttl)
        value = canonical(record)
        if self._live(self._records, kind, key) is not None:
            return False
        self._write(self._records, kind, key, ttl, value)
        return True

    async def get(self, kind: str, key: str) -> JSONObject | None:
        entry = self._live(self._records, kind, key)
        return None if entry is None else _parse(entry[1])

    async def take(self, kind: str, key: str) -> JSONObject | None:
        entry = self._live(self._records, kind, key)
        if entry is None:
            return None
        self._remove(self._records, kind, key)
        return _parse(entry[1])

    async def replace(self, kind: str, key: str, expected: JSONObject, record: JSONObject, ttl: float) -> bool:
        check_ttl(ttl)
        was, value = canonical(expected), canonical(record)
        entry = self._live(self._records, kind, key)
        if entry is None or entry[1] != was:
            return False
        self._write(self._records, kind, key, ttl, value)
        return True

    async def delete(self, kind: str, key: str) -> bool:
        if self._live(self._records, kind, key) is None:
            return False
        self._remove(self._records, kind, key)
        return True

    async def count(self, kind: str, key: str, ttl: float) -> int:
        check_ttl(ttl)
        entry = self._live(self._counters, kind, key)
        if entry is None:
            self._write(self._counters, kind, key, ttl, 1)
            return 1
        expires, counted = entry
        assert isinstance(counted, int)
        self._counters[kind].entries[key] = (expires, counted + 1)  # same expiry: its heap item stays right
        return counted + 1

    def held(self, kind: str) -> int:
        """Records of ``kind`` held now, their time passed or not (what the bound counts)."""
        table = self._records.get(kind)
        return 0 if table is None else len(table.entries)

    @staticmethod
    def _remove(tables: dict[str, _Table], kind: str, key: str) -> None:
        table = tables[kind]
        del table.entries[key]
        if not table.entries:
            del tables[kind]


def _parse(value: bytes | int) -> JSONObject:
    assert isinstance(value, bytes)
    parsed: JSONObject = orjson.loads(value)
    return parsed
