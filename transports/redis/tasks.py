"""``TaskStore`` on Redis: every replica reads, lists, updates and cancels every task.

A task is one hash key, ``{v: version, json: the record, f: its format's number}`` (``formats.TASK``: a
task of a format this release does not read is unknown here, and never written over), expiring (PX) when its
TTL from creation has elapsed (``default_ttl`` when the task asks for no limit). Updates are compare-and-set
on the version in a Lua script: read, check the status, write back only if nobody wrote in between (else read
again), so concurrent transitions from any number of replicas have exactly one winner. A sorted set per
principal (score: creation time) lists its tasks; entries whose task has expired are pruned as listing
meets them, and every create drops the entries older than the longest TTL a task may have. The task and
its index entry are written one after the other (each in its own hash slot in a Redis Cluster): a
replica that dies in between leaves a task that ``tasks/get`` finds and ``tasks/list`` does not, until
it expires.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import Any, cast

import orjson

from wiremcp.tasks import (
    DuplicateTask,
    TaskRecord,
    TaskStore,
    decode_cursor,
    encode_cursor,
    may_transition,
    updated,
    validate_transition,
    with_answers,
    with_input_request,
)
from wiremcp.transports.redis.connection import Redis, reachable
from wiremcp.transports.redis.formats import TASK
from wiremcp.transports.redis.keys import Keys
from wiremcp.types import JSONObject

DEFAULT_TTL = 24 * 3600.0
"""How long a task that asked for no TTL is kept (seconds)."""

_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', '1', 'json', ARGV[1], FIELD, FORMAT)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
""".replace("FIELD", repr(TASK.field)).replace("FORMAT", repr(str(TASK.current)))

_INDEX = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""

_SWAP = TASK.lua_readable("readable") + """
local found = redis.call('HMGET', KEYS[1], 'v', FIELD)
local v = found[1]
if not v then return -1 end
if v ~= ARGV[1] then return 0 end
if not readable(found[2] or nil) then return -2 end
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(v) + 1), 'json', ARGV[2], FIELD, FORMAT)
return 1
""".replace("FIELD", repr(TASK.field)).replace("FORMAT", repr(str(TASK.current)))
"""Write the record ARGV[2] in place of the task's if its version is still ARGV[1] and its format one read here:
1 if written, 0 if the version changed, -1 if the task is gone, -2 if of another format (left as it is)."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _load(task_id: str, raw: bytes | str, number: bytes | str | None) -> TaskRecord | None:
    """A task as read, of any format this release reads; None (refused) if of another."""
    found = TASK.accept(number, f"task {task_id}")
    if found is None:
        return None
    return TaskRecord.from_dict(TASK.upgrade(found, orjson.loads(raw)))


class RedisTaskStore(TaskStore):
    def __init__(self, client: Redis, keys: Keys, *, default_ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._keys = keys
        self._default_ttl_ms = max(1, int(default_ttl * 1000))
        self._longest_ms = self._default_ttl_ms
        self._clock = clock
        self._create = client.register_script(_CREATE)
        self._index = client.register_script(_INDEX)
        self._swap = client.register_script(_SWAP)

    async def create(self, record: TaskRecord) -> None:
        ttl_ms = max(1, record.ttl_ms if record.ttl_ms is not None else self._default_ttl_ms)
        # The principal's index forgets entries older than any task lives: it cannot grow without bound.
        self._longest_ms = max(self._longest_ms, ttl_ms)
        horizon = record.created_at - self._longest_ms / 1000
        with reachable("task store"):
            created = await self._create(keys=[self._keys.task(record.task_id)],
                                         args=[orjson.dumps(record.to_dict()), ttl_ms])
            if not created:
                raise DuplicateTask(record.task_id)
            await self._index(keys=[self._keys.tasks_of(record.principal)],
                              args=[record.task_id, ttl_ms, repr(record.created_at), repr(horizon)])

    async def _read(self, task_id: str) -> tuple[bytes | str, TaskRecord] | None:
        with reachable("task store"):
            version, raw, number = await self._client.hmget(self._keys.task(task_id), ["v", "json", TASK.field])
        if version is None or raw is None:
            return None
        record = _load(task_id, raw, number)
        return None if record is None else (version, record)

    async def get(self, task_id: str, principal: str | None) -> TaskRecord | None:
        found = await self._read(task_id)
        if found is None or found[1].principal != principal:
            return None
        return found[1]

    async def list(self, principal: str | None, cursor: str | None = None,
                   limit: int = 50) -> tuple[Sequence[TaskRecord], str | None]:
        if limit < 1:
            raise ValueError("limit must be positive")
        after = None if cursor is None else decode_cursor(cursor)
        index = self._keys.tasks_of(principal)
        found: list[TaskRecord] = []
        offset, batch = 0, limit + 1
        with reachable("task store"):
            while len(found) <= limit:
                entries = cast(list[tuple[bytes | str, float]], await self._client.zrangebyscore(
                    index, "-inf" if after is None else repr(after[0]), "+inf", start=offset, num=batch,
                    withscores=True))
                offset += len(entries)
                wanted = [_text(member) for member, score in entries
                          if after is None or (float(score), _text(member)) > after]
                async with self._client.pipeline(transaction=False) as pipe:
                    for task_id in wanted:
                        pipe.hmget(self._keys.task(task_id), ["json", TASK.field])
                    raws = await pipe.execute() if wanted else []
                stale = [task_id for task_id, (raw, _) in zip(wanted, raws, strict=True) if raw is None]
                found.extend(record for task_id, (raw, number) in zip(wanted, raws, strict=True) if raw is not None
                             if (record := _load(task_id, raw, number)) is not None and record.principal == principal)
                if stale:
                    await self._client.zrem(index, *stale)
                    offset -= len(stale)
                if len(entries) < batch:
                    break
        chosen = found[:limit]
        return chosen, (encode_cursor(chosen[-1]) if len(found) > limit else None)

    async def _modify(self, task_id: str,
                      change: Callable[[TaskRecord], TaskRecord | None]) -> tuple[TaskRecord, bool] | None:
        """Compare-and-set: apply ``change`` to the current record and write the result back unless the
        task changed meanwhile (then start over). None: no such task; else the record as it now is, and
        whether it was written (``change`` returning None leaves the task as it is)."""
        while True:
            found = await self._read(task_id)
            if found is None:
                return None
            version, record = found
            new = change(record)
            if new is None:
                return record, False
            with reachable("task store"):
                swapped = await self._swap(keys=[self._keys.task(task_id)],
                                           args=[version, orjson.dumps(new.to_dict())])
            if swapped == 1:
                return new, True
            if swapped < 0:  # gone, or written by a newer release meanwhile
                return None

    async def transition(self, task_id: str, to_status: str, *, expect: Collection[str],
                         **fields: Any) -> TaskRecord | None:
        validate_transition(to_status, fields)

        def change(record: TaskRecord) -> TaskRecord | None:
            if not may_transition(record, expect):
                return None
            return updated(record, to_status, fields, self._clock())

        outcome = await self._modify(task_id, change)
        return outcome[0] if outcome is not None and outcome[1] else None

    async def request_cancel(self, task_id: str, principal: str | None) -> TaskRecord | None:
        def change(record: TaskRecord) -> TaskRecord | None:
            if record.principal != principal or record.terminal or record.cancel_requested:
                return None
            record.cancel_requested = True
            return record

        outcome = await self._modify(task_id, change)
        if outcome is None or outcome[0].principal != principal:
            return None
        return outcome[0]

    async def add_input_request(self, task_id: str, key: str, request: JSONObject) -> TaskRecord | None:
        outcome = await self._modify(task_id, lambda record: with_input_request(record, key, request, self._clock()))
        return outcome[0] if outcome is not None and outcome[1] else None

    async def answer_inputs(self, task_id: str, principal: str | None,
                            responses: JSONObject) -> tuple[TaskRecord, tuple[str, ...]] | None:
        taken: list[tuple[str, ...]] = [()]

        def change(record: TaskRecord) -> TaskRecord | None:
            if record.principal != principal:
                return None
            new, taken[0] = with_answers(record, responses, self._clock())
            return new

        outcome = await self._modify(task_id, change)
        if outcome is None or outcome[0].principal != principal:
            return None
        return outcome[0], (taken[0] if outcome[1] else ())
