"""The format of every record the replicas keep in Redis, declared in one place: each kind's current format, the
oldest one it still reads, where a record carries its format's number, how a record of each older format is
brought up to the current one, and what a record of a newer format is taken for.

Every record written carries its format's number: a member of a JSON record (a session, an OAuth grant, the
agreed ``requestState`` key), a field of a hash (a task, a rate limit's bucket) or of each event of a stream.
Records written before formats were numbered carry none: they are format 1, and read as such. A record is
always written in its kind's current format; it is read in any format from ``oldest`` to ``current``, brought
up to the current one by the upgrades (``RecordFormat.upgrade``). So a replica of the next release reads what
this one wrote, and the fixtures of each format (``tests/fixtures/store_formats``) are kept from release to
release to prove it.

Format 2 adds the number to format 1's layout and changes nothing else, so a format-1 release reads what
this one writes (it ignores a member or field it does not know): replicas of both releases serve one store
during a rolling upgrade. The ``requestState`` key is the exception: format 1 is the bare key, format 2 a JSON
record; it is written once (only where there is none) and never again, so a store upgraded in place keeps its
format-1 key, which both releases read.

A record of a format newer than ``current`` (or whose number is no format at all) was written by a newer
release (a rolling upgrade under way, or one rolled back): it is refused, never read as if it were of a known
format and never written over in an older one. Each refusal is logged the first time a kind meets a number
(``refuse``), and the record is taken for what ``newer`` says, the safest for its kind:

- a session, a task, an OAuth grant: absent (a session's client starts a new one, a task is unknown, a sign-in
  starts again); the record is left as it is (scripts that would update it check its format first; only a
  grant's ``put``, which replaces whatever is there, replaces it);
- an event stream with such an event: unknown from where it is asked (``Last-Event-ID`` is refused as for
  expired events);
- a rate limit's bucket: the call fails with 503 (``StoreUnavailable``) rather than pass uncounted, until the
  newer release's bucket is full again and expires;
- the ``requestState`` key: not used; the replica keeps asking (and is not ready) as while Redis is away.

Keys that hold no record carry no number: the indexes (the live sessions, a principal's tasks, a session's
streams and their newest numbers), counters (a grant's, calls running under a rate limit), a replica's lease
and a GET stream's hold. Each is a plain Redis type whose meaning is its name's: a change to one is a new name.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from wiremcp.types import JSONObject

log = logging.getLogger("wiremcp.redis.formats")

R = TypeVar("R")

_said: set[tuple[str, str]] = set()
"""The (kind, number) pairs whose refusal has been logged in this process."""


@dataclasses.dataclass(frozen=True, slots=True)
class RecordFormat(Generic[R]):
    """One kind of record's formats. ``R``: what the upgrades take and give (a JSON record, an event's fields)."""

    kind: str
    """What the record is, as logs name it."""
    current: int
    """The format written."""
    field: str
    """The member (of a JSON record) or field (of a hash, of a stream's event) holding the number."""
    newer: str
    """What a record of a newer format is taken for (logged with its refusal)."""
    oldest: int = 1
    """The oldest format read."""
    upgrades: Mapping[int, Callable[[R], R]] = dataclasses.field(default_factory=dict)
    """Format n's record -> format n + 1's; a format missing here changes nothing but the number."""

    def number(self, raw: object) -> int | None:
        """The format a record's number (as stored: absent, bytes, text or a JSON number) names: 1 when absent,
        None when it names no format (not a whole number)."""
        if raw is None:
            return 1
        if isinstance(raw, bytes | str):
            text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            return int(text) if text.isascii() and text.isdigit() else None
        if isinstance(raw, bool) or not isinstance(raw, int | float) or raw != int(raw):
            return None
        return int(raw)

    def readable(self, number: int | None) -> bool:
        return number is not None and self.oldest <= number <= self.current

    def accept(self, raw: object, what: str) -> int | None:
        """The format of a record whose number is ``raw`` if this release reads it; else None, the refusal
        logged (``what`` names the record)."""
        number = self.number(raw)
        if number is None or not self.readable(number):
            self.refuse(raw, what)
            return None
        return number

    def refuse(self, raw: object, what: str) -> None:
        """Log that a record was refused: a warning the first time this kind meets this number, then at debug."""
        shown = "1" if raw is None else raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        message = "%s is in format %s, which this release does not read (formats %d to %d): taken for %s"
        args = (what, shown, self.oldest, self.current, self.newer)
        if (self.kind, shown) in _said:
            log.debug(message, *args)
            return
        _said.add((self.kind, shown))
        log.warning(message + " (a newer release wrote it: a rolling upgrade under way, or one rolled back)", *args)

    def upgrade(self, number: int, record: R) -> R:
        """``record``, of format ``number`` (readable), as the current format has it."""
        for step in range(number, self.current):
            upgrade = self.upgrades.get(step)
            if upgrade is not None:
                record = upgrade(record)
        return record

    def stamp(self: RecordFormat[JSONObject], record: JSONObject) -> JSONObject:
        """A JSON record as written: ``record`` and its format's number."""
        return {**record, self.field: self.current}

    def unstamp(self: RecordFormat[JSONObject], record: JSONObject, what: str) -> JSONObject | None:
        """A JSON record as read, without its number and in the current format; None if refused."""
        raw = record.get(self.field)
        number = self.accept("null" if raw is None and self.field in record else raw, what)
        if number is None:
            return None
        return self.upgrade(number, {k: v for k, v in record.items() if k != self.field})

    def lua_readable(self, name: str) -> str:
        """A Lua function ``name(raw)``: whether a record whose number is ``raw`` (a decoded JSON value, or a
        hash field's string; nil when absent: a missing field, which Redis gives as false, is passed as
        ``field or nil``) is of a format read here, as ``readable(number(raw))`` says."""
        return f"""
local function {name}(raw)
  if raw == nil then raw = 1 end
  local n = tonumber(raw)
  if type(raw) == 'string' and not string.match(raw, '^%d+$') then n = nil end
  return type(raw) ~= 'boolean' and n ~= nil and n == math.floor(n) and n >= {self.oldest} and n <= {self.current}
end
"""


SESSION: RecordFormat[JSONObject] = RecordFormat(
    "session", current=2, field="fmt", newer="absent (the client starts a new session)")
"""A session: one string key, its ``SessionState`` as JSON with the number as ``fmt``. Format 1: without it."""

EVENT: RecordFormat[dict[bytes, bytes]] = RecordFormat(
    "event", current=2, field="f", newer="an unknown position in its stream (a resumption is refused)")
"""An event of a session's stream: a stream entry, ``{m: message, o: replica, r: request id, f: number}``.
Format 1: without ``f``."""

TASK: RecordFormat[JSONObject] = RecordFormat(
    "task", current=2, field="f", newer="absent (an unknown task)")
"""A task: a hash, ``{v: the version compared and set on update, json: its TaskRecord, f: number}``. Format 1:
without ``f``."""

GRANT: RecordFormat[JSONObject] = RecordFormat(
    "grant", current=2, field="~fmt", newer="absent")
"""An OAuth server's record: one string key, the caller's JSON object with the number as ``~fmt`` (a member no
record of the OAuth server has, last in its canonical JSON). Format 1: without it."""

RATE_BUCKET: RecordFormat[JSONObject] = RecordFormat(
    "rate-limit bucket", current=2, field="f", newer="unavailable (the call fails with 503)")
"""A rate limit's bucket: a hash, ``{t: tokens, at: when counted (µs, Redis time), f: number}``, read and
written by one script. Format 1: without ``f``."""

REQUEST_STATE_KEY: RecordFormat[JSONObject] = RecordFormat(
    "requestState key", current=2, field="fmt", newer="not agreed (the replica is not ready and keeps asking)")
"""The ``requestState`` key the replicas agree on: ``{"fmt": 2, "key": its base64url text}``. Format 1: the
base64url text alone (read as ``{"key": text}``)."""

FORMATS: tuple[RecordFormat[JSONObject] | RecordFormat[dict[bytes, bytes]], ...] = (
    SESSION, EVENT, TASK, GRANT, RATE_BUCKET, REQUEST_STATE_KEY)
"""Every kind of record, in the order of their fixtures' files."""
