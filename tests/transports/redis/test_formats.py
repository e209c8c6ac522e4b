"""Record formats (``formats``): every format's fixtures kept (``tests/fixtures/store_formats/format<n>/``, records
as that release wrote them) are loaded into a real Redis and served by this release, which reads them and writes
back in the current format; a record of a newer format is refused as each kind's declaration says; and the
number is read alike in Python and in the scripts."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import httpx
import orjson
import pytest

from tests.support.cluster import until
from tests.support.http import RawSession, SSEReader, error_of, serve_in_process
from tests.support.redis_topologies import standalone_only
from wiremcp import Context, MCPServer
from wiremcp.auth.oauth.keys import SigningKeys
from wiremcp.auth.oauth.sealing import Seal, from_b64url
from wiremcp.auth.oauth.tokens import Tokens
from wiremcp.request_state import RequestStateSealer
from wiremcp.runtime import Runtime
from wiremcp.state import SessionState
from wiremcp.tasks import TaskRecord
from wiremcp.transports.redis.backend import RedisBackend
from wiremcp.transports.redis.connection import Redis
from wiremcp.transports.redis.events import RedisEventStore
from wiremcp.transports.redis.formats import (
    EVENT,
    FORMATS,
    GRANT,
    RATE_BUCKET,
    REQUEST_STATE_KEY,
    SESSION,
    TASK,
    RecordFormat,
)
from wiremcp.transports.redis.grants import RedisGrantStore
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.rate_limits import RedisRateLimits
from wiremcp.transports.redis.sessions import RedisSessionStore
from wiremcp.transports.redis.tasks import RedisTaskStore
from wiremcp.transports.sessions import SessionManager
from wiremcp.transports.streamable_http import HttpOptions, StreamableHTTPEndpoint
from wiremcp.types import JSONObject
from wiremcp.unavailable import StoreUnavailable

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "store_formats"
KEPT = sorted(FIXTURES.glob("format*/"), key=lambda path: int(path.name.removeprefix("format")))
"""Every format's fixtures, kept from release to release: this release serves each."""
PREFIX = "fixture"
"""The prefix the fixtures' keys were written under (``generate.py``)."""
_newer = itertools.count(1000)
"""Numbers of formats newer than any known, a new one for each use: each is refused (and logged) anew."""


def newer() -> int:
    return max(f.current for f in FORMATS) + next(_newer)


def test_every_set_of_fixtures_kept_has_every_kind_and_the_last_is_of_the_format_before_the_current() -> None:
    assert KEPT, "no fixtures kept"
    for kept in KEPT:
        assert sorted(p.stem for p in kept.glob("*.json")) == sorted(
            ("sessions", "events", "tasks", "grants", "rate_limits", "request_state")), kept
    assert int(KEPT[-1].name.removeprefix("format")) in {f.current - 1 for f in FORMATS} | {
        f.current for f in FORMATS}


# -- the number, in Python and in the scripts ---------------------------------------------------------------
FORMAT: RecordFormat[JSONObject] = RecordFormat("example", current=3, field="n", newer="absent", oldest=2,
                                  upgrades={2: lambda r: {("b" if k == "a" else k): v for k, v in r.items()}})


def test_a_number_names_a_format_when_it_is_a_whole_number_and_absence_is_format_1() -> None:
    assert [FORMAT.number(raw) for raw in (None, 2, 3.0, b"3", "12", 2.5, "2.0", "x", "", True, [2], -1)] == [
        1, 2, 3, 3, 12, None, None, None, None, None, None, -1]
    assert [FORMAT.readable(n) for n in (None, 1, 2, 3, 4)] == [False, False, True, True, False]


def test_a_record_is_written_with_its_number_and_read_upgraded_without_it(caplog: pytest.LogCaptureFixture) -> None:
    assert FORMAT.stamp({"b": 1}) == {"b": 1, "n": 3}
    assert FORMAT.unstamp({"b": 1, "n": 3}, "a record") == {"b": 1}
    assert FORMAT.unstamp({"a": 1, "n": 2}, "a record") == {"b": 1}  # format 2, brought up to 3
    with caplog.at_level(logging.DEBUG, "wiremcp.redis.formats"):
        assert FORMAT.unstamp({"a": 1}, "the record r1") is None  # format 1: too old here
        assert FORMAT.unstamp({"b": 1, "n": 7}, "the record r2") is None
        assert FORMAT.unstamp({"b": 1, "n": 7}, "the record r3") is None
        assert FORMAT.unstamp({"b": 1, "n": None}, "the record r4") is None  # a null is no number
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3, warnings  # format 7's refusal said once
    assert "the record r2 is in format 7, which this release does not read (formats 2 to 3): taken for absent" in (
        warnings[1])


@standalone_only
async def test_the_scripts_read_a_number_as_python_does(client: Redis) -> None:
    script = client.register_script(FORMAT.lua_readable("readable") + """
local out = {}
for i, raw in ipairs(ARGV) do
  if raw == 'absent' then out[i] = readable(nil)
  elseif string.sub(raw, 1, 1) == 'h' then out[i] = readable(string.sub(raw, 2))
  else out[i] = readable(cjson.decode(raw)['n']) end
  out[i] = out[i] and 1 or 0
end
return out
""")
    json_values: list[Any] = [1, 2, 3, 4, 2.0, 2.5, "3", "03", "x", "", True, None, [3], {"a": 3}, -3, 0]
    hash_values = ["1", "2", "3", "4", "3.0", "x", "", "-3"]
    args = ["absent", *(json.dumps({"n": v}) for v in json_values), *("h" + v for v in hash_values)]
    python = [FORMAT.readable(FORMAT.number(None))]
    python += [FORMAT.readable(FORMAT.number("null" if v is None else v)) for v in json_values]
    python += [FORMAT.readable(FORMAT.number(v)) for v in hash_values]
    assert [bool(n) for n in await script(args=args)] == python


# -- the fixtures ---------------------------------------------------------------------------------------------
class Fixtures:
    """One format's fixtures, loaded under a test's prefix."""

    def __init__(self, directory: Path, keys: Keys) -> None:
        self.format = int(directory.name.removeprefix("format"))
        self.files = {path.stem: json.loads(path.read_text()) for path in directory.glob("*.json")}
        self.keys = keys

    def notes(self, kind: str) -> Any:
        return self.files[kind]["notes"]

    def name(self, key: str) -> str:
        assert key.startswith(PREFIX + ":"), key
        return self.keys.prefix + key.removeprefix(PREFIX)

    def stored(self, kind: str, key: str) -> Any:
        """A key's value as the fixture holds it (``key`` under the fixture's prefix)."""
        return next(entry["value"] for entry in self.files[kind]["keys"] if entry["key"] == key)

    async def load(self, client: Redis) -> None:
        """Every key, as it was written; the live sessions' expiries moved on by the time since."""
        now_ms = int((await client.time())[0]) * 1000
        for document in self.files.values():
            for entry in document["keys"]:
                name, value, kind = self.name(entry["key"]), entry["value"], entry["type"]
                if kind == "string":
                    await client.set(name, _bytes(value))
                elif kind == "hash":
                    await client.hset(name, mapping={k: _bytes(v) for k, v in value.items()})
                elif kind == "set":
                    await client.sadd(name, *(_bytes(m) for m in value))
                elif kind == "zset":
                    shift = now_ms - document["dumped_at_ms"] if ":sessions:" in name else 0
                    await client.zadd(name, {_bytes(m): score + shift for m, score in value})
                elif kind == "stream":
                    for entry_id, fields in value:
                        await client.xadd(name, {k: _bytes(v) for k, v in fields.items()}, id=entry_id)
                else:
                    raise AssertionError(f"{name}: type {kind}")
                if entry["pttl"] > 0:
                    await client.pexpire(name, entry["pttl"])


async def stored_json(client: Redis, key: str) -> Any:
    """A string key's JSON."""
    stored = await client.get(key)
    assert stored is not None, key
    return json.loads(stored)


async def stream_entries(client: Redis, key: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """A stream's entries."""
    return cast(list[tuple[bytes, dict[bytes, bytes]]], await client.xrange(key))


def _bytes(value: Any) -> bytes:
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return str(value).encode()


WATCHED = "fixture://watched"


def make_server() -> MCPServer:
    """The fixtures' server, as the next release serves it."""
    server = MCPServer("store-formats", "1.0.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        ctx.server.resource_updated(uri)
        return f"touched {uri}"

    @server.resource(WATCHED, name="watched", mime_type="text/plain")
    def watched() -> str:
        return "watched"

    @server.tool(task_support="optional")
    async def quick() -> str:
        return "done as a task"

    @server.tool(task_support="optional")
    async def wait_forever() -> str:
        await asyncio.Event().wait()
        return "never"

    @server.tool(task_support="optional")
    async def question(ctx: Context) -> str:
        result = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return str(result.action)

    return server


@pytest.fixture
async def served(redis_url: str, redis_keys: Keys) -> AsyncIterator[tuple[RedisBackend, SessionManager, str]]:
    """This release's replica "A" over the test's Redis and prefix, serving over HTTP: its backend, its session
    manager and its MCP endpoint's URL."""
    backend = RedisBackend.connect(redis_url, prefix=redis_keys.prefix, replica="A", lease=1.0)
    server = make_server()
    Runtime(server, backend=backend)
    manager = SessionManager(server, backend)
    try:
        await backend.link.start()
        async with serve_in_process(StreamableHTTPEndpoint(manager, HttpOptions(sse_after=60))) as base:
            yield backend, manager, base + "/mcp"
    finally:
        await manager.close()
        await backend.link.close()


@standalone_only
@pytest.mark.parametrize("kept", KEPT, ids=lambda path: path.name)
async def test_a_replica_serves_the_records_of_a_kept_format_and_writes_back_in_the_current_one(
        kept: Path, client: Redis, redis_keys: Keys, served: tuple[RedisBackend, SessionManager, str]) -> None:
    fixtures = Fixtures(kept, redis_keys)
    await fixtures.load(client)
    backend, manager, url = served
    sessions, tasks, events = fixtures.notes("sessions"), fixtures.notes("tasks"), fixtures.notes("events")
    sid = sessions["anonymous"]
    raw = await stored_json(client, redis_keys.session(sid))
    assert SESSION.number(raw.get(SESSION.field)) == fixtures.format  # as that release wrote it

    async with httpx.AsyncClient(timeout=10) as http:
        session = RawSession(http, url, sid, "2025-11-25")
        # The session is found, and its subscription honored: the change reaches its GET stream, numbered on from
        # the stream's events (whose replay is below).
        assert await session.tool("echo", text="still here") == "still here"
        async with session.stream_get() as get:
            reader = SSEReader(get)
            primed = await reader.next()
            assert (primed.id, primed.data) == (f"get_{len(events['get_events'])}", "")
            await session.tool("touch", uri=WATCHED)
            updated = await reader.next()
            assert updated.message == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                       "params": {"uri": WATCHED}}
        # Its state written back (a new log level): in the current format, and otherwise as it was.
        assert (await session.request("logging/setLevel", {"level": "error"})).status_code == 200
        rewritten = await stored_json(client, redis_keys.session(sid))
        assert rewritten == {**raw, "log_level": "error", SESSION.field: SESSION.current}

        # The events replay with their ids: the GET stream's after its first, a request's stream after its first.
        async with session.stream_get(events["get_events"][0]) as resumed:
            replayed = await SSEReader(resumed).next()
            assert replayed.id == events["get_events"][1]
            assert replayed.message == updated.message
        stream = events["request_streams"][0]
        async with session.stream_get(f"{stream}_0") as resumed:
            rest = await SSEReader(resumed).rest()
        stored = fixtures.stored("events", f"{PREFIX}:{{{sid}}}:ev:{stream}")
        assert [e.id for e in rest] == [f"{stream}_{n}" for n in range(1, len(stored))]
        assert [e.message for e in rest] == [json.loads(fields["m"]) for _, fields in stored[1:]]
        entries = await stream_entries(client, redis_keys.events(sid, "get"))
        assert [EVENT.number(fields.get(EVENT.field.encode())) for _, fields in entries] == [
            fixtures.format] * len(events["get_events"]) + [EVENT.current] * 2  # old ones as they were, new ones now

        # The tasks: read as they were (their replica still running), cancelled and answered.
        await client.set(redis_keys.alive(tasks["replica"]), b"1", px=60_000)
        ids = tasks["ids"]
        for status, task_id in ids.items():
            assert (await session.call("tasks/get", {"taskId": task_id}))["status"] == status
        listed = await session.call("tasks/list")
        assert sorted(t["taskId"] for t in listed["tasks"]) == sorted(ids.values())
        result = await session.call("tasks/result", {"taskId": ids["completed"]})
        assert result["content"] == [{"type": "text", "text": "done as a task"}]
        cancelled = await session.call("tasks/cancel", {"taskId": ids["working"]})
        assert cancelled["status"] == "cancelled"
        version, number = await client.hmget(redis_keys.task(ids["working"]), ["v", TASK.field])
        was = fixtures.stored("tasks", f"{PREFIX}:task:{ids['working']}")["v"]
        assert int(version or 0) > int(was)
        assert TASK.number(number) == TASK.current
        unwritten = await client.hget(redis_keys.task(ids["input_required"]), TASK.field)
        assert TASK.number(unwritten) == fixtures.format  # read only: as it was
        await client.delete(redis_keys.alive(tasks["replica"]))  # its replica gone: the task fails, written anew
        failed = await session.call("tasks/get", {"taskId": ids["input_required"]})
        assert failed["status"] == "failed"
        assert await client.hget(redis_keys.task(ids["input_required"]), TASK.field) == str(TASK.current).encode()
        code, _ = error_of(await session.request("tasks/cancel", {"taskId": ids["completed"]}))
        assert code == -32602  # ended already

    # The session bound to an owner: only its owner's, with its subscriptions.
    owned = sessions["owned"]
    assert await manager.get(owned["id"], "user:mallory") is None
    live = await manager.get(owned["id"], owned["owner"])
    assert live is not None
    assert sorted(live.session.state.subscriptions) == owned["subscriptions"]
    assert live.session.state.wants({"method": "notifications/resources/updated", "params": {"uri": WATCHED}})

    # The OAuth server's records: the signing keys read, the refresh token refreshed (its family compared and set),
    # the pending code redeemed, the counter counted on; what is written anew is in the current format.
    grants, notes = backend.grants, fixtures.notes("grants")
    assert isinstance(grants, RedisGrantStore)
    seal = Seal(from_b64url(notes["secret"]))
    keys = SigningKeys(grants, seal, clock=lambda: float(notes["created"]) + 1)
    tokens = Tokens(grants, keys, issuer="https://fixture.example")
    assert (await keys.signing()).kid == notes["kid"]
    family_key = grants.key_name("family", notes["refresh_token"].partition(".")[0])
    issued = await tokens.refresh(notes["refresh_token"], client_id=notes["client_id"])
    assert (await stored_json(client, family_key))[GRANT.field] == GRANT.current
    assert await tokens.refresh(issued.refresh_token, client_id=notes["client_id"])
    redeemed = await tokens.redeem(notes["pending_code"], client_id=notes["client_id"],
                                   redirect_uri=notes["redirect_uri"], check_verifier=lambda challenge: True)
    assert redeemed.refresh_token
    kind, key, count = notes["counter"]
    assert await grants.count(kind, key, 3600.0) == count + 1
    rotating = SigningKeys(grants, seal, clock=lambda: float(notes["created"]) + keys.rotate_after + 1)
    ring = await rotating.ring()
    assert [k.kid for k in ring][1:] == [notes["kid"]]  # a new key first: the ring compared and set
    assert (await stored_json(client, grants.key_name("key", "ring")))[GRANT.field] == GRANT.current

    # The rate limit's bucket goes on from where it was; the calls running are counted on.
    limits, notes = backend.rate_limits, fixtures.notes("rate_limits")
    assert isinstance(limits, RedisRateLimits)
    taken = await limits.take(notes["bucket"], notes["rate"], notes["burst"])
    assert (taken.allowed, taken.remaining) == (True, notes["left"] - 1)
    assert await client.hget(limits.bucket_key(notes["bucket"]), RATE_BUCKET.field) == str(RATE_BUCKET.current).encode()
    await limits.leave(notes["running"])
    assert await client.exists(limits.running_key(notes["running"])) == 0  # its one call has left

    # The replicas' requestState key is agreed on: a state sealed with it opens (it is never written again).
    notes = fixtures.notes("request_state")
    stored_key = await client.get(redis_keys.request_state_key)
    sealer = RequestStateSealer(clock=lambda: float(notes["sealed_at"]))
    await backend.share_request_state_key(sealer)
    assert await backend.request_state_key_shared()
    opened = sealer.open(notes["sealed"], owner=notes["owner"], method=notes["method"], params=notes["params"])
    assert (opened.answers, opened.app_state) == (notes["answers"], notes["app_state"])
    assert await client.get(redis_keys.request_state_key) == stored_key


# -- records of a newer format ------------------------------------------------------------------------------
def _refusals(caplog: pytest.LogCaptureFixture, number: int) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and f"in format {number}," in r.getMessage()]


@standalone_only
async def test_a_session_of_a_newer_format_is_absent_and_never_written_over(
        client: Redis, redis_keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    store = RedisSessionStore(client, redis_keys, idle_timeout=60)
    state = SessionState(id="s1", protocol_version="2025-11-25", subscriptions={WATCHED})
    assert await store.create(state)
    number = newer()
    stored = orjson.dumps({**state.to_dict(), SESSION.field: number, "added": "by a newer release"})
    await client.set(redis_keys.session("s1"), stored, px=60_000)
    assert await store.get("s1") is None
    assert await store.get("s1") is None
    await store.save(state)  # a write racing the newer release's: it is not made
    assert await client.get(redis_keys.session("s1")) == stored
    assert len(_refusals(caplog, number)) == 1  # said once


@standalone_only
async def test_a_task_of_a_newer_format_is_unknown_and_never_written_over(
        client: Redis, redis_keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    store = RedisTaskStore(client, redis_keys)
    record, other = TaskRecord.new("alice"), TaskRecord.new("alice")
    await store.create(record)
    await store.create(other)
    number = newer()
    await client.hset(redis_keys.task(record.task_id), TASK.field, str(number))
    before = await client.hgetall(redis_keys.task(record.task_id))
    assert await store.get(record.task_id, "alice") is None
    assert await store.request_cancel(record.task_id, "alice") is None
    assert await store.transition(record.task_id, "completed", expect={"working"}, result={"content": []}) is None
    listed, _ = await store.list("alice")
    assert [t.task_id for t in listed] == [other.task_id]
    assert await client.zscore(redis_keys.tasks_of("alice"), record.task_id) is not None  # not pruned: it exists
    assert await client.hgetall(redis_keys.task(record.task_id)) == before
    assert len(_refusals(caplog, number)) == 1


@standalone_only
async def test_a_task_written_by_a_newer_release_during_an_update_is_not_written_over(
        client: Redis, redis_keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RedisTaskStore(client, redis_keys)
    record = TaskRecord.new("alice")
    await store.create(record)
    key = redis_keys.task(record.task_id)

    read = store._read

    async def newer_release_writes_on_read(task_id: str) -> Any:
        found = await read(task_id)
        await client.hset(key, TASK.field, str(newer()))  # between the read and the write, version kept
        return found

    monkeypatch.setattr(store, "_read", newer_release_writes_on_read)
    assert await store.transition(record.task_id, "completed", expect={"working"}, result={"content": []}) is None
    assert json.loads(await client.hget(key, "json") or b"{}")["status"] == "working"


@standalone_only
async def test_a_grant_of_a_newer_format_is_absent_and_kept(
        client: Redis, redis_keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    store = RedisGrantStore(client, redis_keys)
    number = newer()
    name = store.key_name("code", "c1")
    stored = orjson.dumps({"family": "f1", GRANT.field: number}, option=orjson.OPT_SORT_KEYS)
    await client.set(name, stored, px=60_000)
    assert await store.get("code", "c1") is None
    assert await store.take("code", "c1") is None
    assert not await store.replace("code", "c1", {"family": "f1"}, {"family": "f2"}, 60)
    assert not await store.add("code", "c1", {"family": "f2"}, 60)
    assert await client.get(name) == stored
    assert len(_refusals(caplog, number)) == 1
    await client.set(name, b'{"family":"f1"}')  # format 1 (as the fixtures have it)
    assert await store.replace("code", "c1", {"family": "f1"}, {"family": "f2"}, 60)
    assert await store.take("code", "c1") == {"family": "f2"}


@standalone_only
async def test_a_stream_with_an_event_of_a_newer_format_is_not_replayed_from_before_it(
        client: Redis, redis_keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    store = RedisEventStore(client, redis_keys, replica="A")
    for seq in range(2):
        assert await store.append_next("s1", "get", {"n": seq}) == seq
    number = newer()
    await client.xadd(redis_keys.events("s1", "get"), {"m": b"{}", "o": b"B", "r": b"", EVENT.field: str(number)},
                      id="0-3")
    await client.hset(redis_keys.counters("s1"), "get", 2)
    assert await store.after("s1", "get", 0) is None
    assert await store.after("s1", "get", 2) == []  # after it: known
    assert len(_refusals(caplog, number)) == 1


@standalone_only
async def test_a_rate_limit_bucket_of_a_newer_format_is_unavailable_and_kept(
        client: Redis, redis_keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    limits = RedisRateLimits(client, redis_keys)
    assert (await limits.take("k", 1.0, 5)).remaining == 4
    number = newer()
    await client.hset(limits.bucket_key("k"), RATE_BUCKET.field, str(number))
    before = await client.hgetall(limits.bucket_key("k"))
    for _ in range(2):
        with pytest.raises(StoreUnavailable, match="newer release"):
            await limits.take("k", 1.0, 5)
    assert await client.hgetall(limits.bucket_key("k")) == before
    assert len(_refusals(caplog, number)) == 1


@standalone_only
async def test_a_request_state_key_of_a_newer_format_is_not_used_and_the_replica_is_not_ready(
        redis_url: str, client: Redis, redis_keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    number = newer()
    stored = orjson.dumps({REQUEST_STATE_KEY.field: number, "key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"})
    await client.set(redis_keys.request_state_key, stored)
    backend = RedisBackend.connect(redis_url, prefix=redis_keys.prefix, replica="A", lease=0.3)
    sealer = RequestStateSealer([bytes(32)])
    token = sealer.seal(owner="o", method="m", params={}, answers={}, app_state=None)
    try:
        await backend.share_request_state_key(sealer)
        assert not await backend.request_state_key_shared()
        await asyncio.sleep(0.25)  # the replica asks again meanwhile (every lease / 3)
        assert not await backend.request_state_key_shared()
        assert sealer.open(token, owner="o", method="m", params={}).answers == {}  # its own key, still
        assert await client.get(redis_keys.request_state_key) == stored
        assert len(_refusals(caplog, number)) == 1
        await client.delete(redis_keys.request_state_key)  # gone: the next ask makes one, in the current format
        await until(backend.request_state_key_shared, what="the key agreed on")
        made = await stored_json(client, redis_keys.request_state_key)
        assert made[REQUEST_STATE_KEY.field] == REQUEST_STATE_KEY.current
    finally:
        await backend.link.close()


@standalone_only
async def test_a_new_replica_writes_every_kind_in_the_current_format(
        redis_url: str, client: Redis, redis_keys: Keys) -> None:
    backend = RedisBackend.connect(redis_url, prefix=redis_keys.prefix, replica="A", lease=1.0)
    try:
        assert await backend.sessions.create(SessionState(id="s1"))
        assert (await stored_json(client, redis_keys.session("s1")))[SESSION.field] == SESSION.current
        await backend.events.append_next("s1", "get", None)
        [(_, fields)] = await stream_entries(client, redis_keys.events("s1", "get"))
        assert fields[EVENT.field.encode()] == str(EVENT.current).encode()
        record = TaskRecord.new(None)
        await backend.tasks.create(record)
        assert await client.hget(redis_keys.task(record.task_id), TASK.field) == str(TASK.current).encode()
        grants = backend.grants
        assert isinstance(grants, RedisGrantStore)
        await grants.put("k", "1", {"a": 1}, 60)
        assert await stored_json(client, grants.key_name("k", "1")) == {"a": 1, GRANT.field: GRANT.current}
        limits = backend.rate_limits
        assert isinstance(limits, RedisRateLimits)
        await limits.take("b", 1.0, 2)
        assert await client.hget(limits.bucket_key("b"), RATE_BUCKET.field) == str(RATE_BUCKET.current).encode()
        await backend.share_request_state_key(RequestStateSealer())
        made = await stored_json(client, redis_keys.request_state_key)
        assert made[REQUEST_STATE_KEY.field] == REQUEST_STATE_KEY.current
    finally:
        await backend.link.close()
