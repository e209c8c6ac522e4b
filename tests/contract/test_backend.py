"""The contract of a backend (``wiremcp.backend``): one suite, run against every implementation side by side,
the in-memory one and Redis on one server, on a Redis Cluster and under Sentinel (each on Redis 7 and on
Valkey 8, ``redis_binary``). A new backend passes this suite by adding itself to ``BACKENDS``.

What a test here asserts is what the transports and the core rely on, whatever holds the state: sessions
found, saved, refused past the limit and deleted; events kept in order per stream and resumed after a
number; tasks visible to their principal only, paged, moved only between the statuses allowed, cancelled,
answered; change events delivered; buckets and counts of calls running; one holder of each session's GET
stream; the OAuth server's grants, taken once, replaced only from the state expected, counted, expired,
under any key; and, when more than one process serves, the link that names this one among the others.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from tests.support.cluster import TIMEOUT, until
from tests.support.redis_topologies import TOPOLOGIES
from wiremcp.backend import SERVER, Backend, DuplicateTask, TaskRecord, serves
from wiremcp.state import SessionState
from wiremcp.stream_holds import InMemoryStreamHolds
from wiremcp.transports.redis.backend import RedisBackend

BACKENDS = ("memory", *TOPOLOGIES)
"""Every implementation of the contract: in memory, and Redis on each topology."""
LEASE = 0.5
"""Seconds a replica's lease, and a GET stream's hold, last unrenewed (short: a lapse is waited for)."""
SID = "s-contract"


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, redis_binary: str) -> AsyncIterator[Backend]:
    """A started backend of the kind the test is run with, its keys under a prefix of this test's own."""
    made: Backend
    if request.param == "memory":
        made = dataclasses.replace(Backend.in_memory(), stream_holds=InMemoryStreamHolds(lease=LEASE))
    else:
        served = request.getfixturevalue(
            {"standalone": "redis_server", "cluster": "redis_cluster", "sentinel": "redis_sentinel"}[request.param])
        made = RedisBackend.connect(served.url, prefix=f"t{uuid.uuid4().hex[:12]}", replica="A", lease=LEASE,
                                    timeout=TIMEOUT)
    await made.start()
    try:
        yield made
    finally:
        await made.close()


def new_session(owner: str | None = "alice") -> SessionState:
    return SessionState(id=secrets.token_urlsafe(16), owner=owner)


# -- sessions --------------------------------------------------------------------------------------------------
async def test_a_session_is_found_saved_and_deleted(backend: Backend) -> None:
    sessions = backend.sessions
    state = new_session()
    assert state.id is not None
    assert await sessions.create(state)
    found = await sessions.get(state.id)
    assert found is not None
    assert (found.id, found.owner, found.log_level) == (state.id, "alice", None)
    found.log_level = "debug"
    found.subscriptions.add("file:///a")
    await sessions.save(found)
    again = await sessions.get(state.id, "alice")
    assert again is not None
    assert (again.log_level, again.subscriptions) == ("debug", {"file:///a"})
    assert await sessions.count() == 1
    assert await sessions.delete(state.id)
    assert await sessions.get(state.id) is None
    assert not await sessions.delete(state.id)
    assert await sessions.count() == 0


async def test_a_stranger_is_given_the_state_but_not_served(backend: Backend) -> None:
    """The store answers whoever asks; the caller decides who is served (``serves``): a session id is never
    a credential."""
    state = new_session("alice")
    assert state.id is not None
    await backend.sessions.create(state)
    seen = await backend.sessions.get(state.id, "mallory")
    assert seen is not None
    assert not serves(seen, "mallory")
    assert serves(seen, "alice")
    assert serves(seen, SERVER)


async def test_no_session_is_created_past_the_limit(backend: Backend) -> None:
    assert await backend.sessions.create(new_session(), limit=2)
    assert await backend.sessions.create(new_session(), limit=2)
    refused = new_session()
    assert not await backend.sessions.create(refused, limit=2)
    assert refused.id is not None
    assert await backend.sessions.get(refused.id) is None
    assert await backend.sessions.count() == 2


# -- events ----------------------------------------------------------------------------------------------------
async def test_events_are_resumed_after_a_number_in_order(backend: Backend) -> None:
    events = backend.events
    for seq in range(3):
        await events.append(SID, "p1", seq, {"n": seq} if seq else None, request_id=7)
    assert await events.last(SID, "p1") == 2
    resumed = await events.after(SID, "p1", 0)
    assert resumed is not None
    assert [(e.stream, e.seq, e.message) for e in resumed] == [("p1", 1, {"n": 1}), ("p1", 2, {"n": 2})]
    assert await events.after(SID, "p1", 2) == []  # up to date
    assert await events.after(SID, "p1", 9) is None  # a number never given
    assert await events.after(SID, "p2", 0) is None  # a stream never written
    assert await events.last(SID, "p2") == -1


async def test_a_number_already_taken_keeps_its_first_event(backend: Backend) -> None:
    """Two writers of one number (replicas racing on a stream): the first one's event stays."""
    await backend.events.append(SID, "p1", 0, {"first": True})
    await backend.events.append(SID, "p1", 0, {"first": False})
    await backend.events.append(SID, "p1", 1, {"next": True})
    kept = await backend.events.after(SID, "p1", -1)
    assert kept is not None
    assert [(e.seq, e.message) for e in kept] == [(0, {"first": True}), (1, {"next": True})]


async def test_appending_next_numbers_a_stream_with_several_writers(backend: Backend) -> None:
    numbers = [await backend.events.append_next(SID, "get", {"n": n}) for n in range(3)]
    assert numbers == [0, 1, 2]
    assert await backend.events.last(SID, "get") == 2


async def test_a_dropped_session_has_no_events(backend: Backend) -> None:
    await backend.events.append(SID, "p1", 0, {"n": 0})
    await backend.events.append("s-other", "p1", 0, {"n": 0})
    await backend.events.drop_session(SID)
    assert await backend.events.after(SID, "p1", -1) is None
    assert await backend.events.last(SID, "p1") == -1
    assert await backend.events.after("s-other", "p1", -1) is not None  # another session's are kept


# -- tasks -----------------------------------------------------------------------------------------------------
async def test_a_task_is_its_principals_only(backend: Backend) -> None:
    record = TaskRecord.new("alice", ttl_ms=60_000, tool="slow")
    await backend.tasks.create(record)
    found = await backend.tasks.get(record.task_id, "alice")
    assert found is not None
    assert (found.task_id, found.status, found.tool, found.ttl_ms) == (record.task_id, "working", "slow", 60_000)
    assert await backend.tasks.get(record.task_id, "bob") is None
    assert await backend.tasks.get(record.task_id, None) is None
    assert await backend.tasks.request_cancel(record.task_id, "bob") is None
    assert await backend.tasks.answer_inputs(record.task_id, "bob", {"k": {}}) is None
    with pytest.raises(DuplicateTask):
        await backend.tasks.create(record)


async def test_tasks_are_listed_oldest_first_a_page_at_a_time(backend: Backend) -> None:
    now = time.time()
    mine = [TaskRecord.new("alice", ttl_ms=60_000, now=now + n) for n in range(3)]
    for record in [*mine, TaskRecord.new("bob", ttl_ms=60_000, now=now)]:
        await backend.tasks.create(record)
    page, cursor = await backend.tasks.list("alice", limit=2)
    assert [r.task_id for r in page] == [r.task_id for r in mine[:2]]
    assert cursor is not None
    rest, end = await backend.tasks.list("alice", cursor, limit=2)
    assert ([r.task_id for r in rest], end) == ([mine[2].task_id], None)
    theirs, _ = await backend.tasks.list("bob")
    assert len(theirs) == 1


async def test_a_task_moves_only_from_the_statuses_expected_and_never_out_of_a_final_one(backend: Backend) -> None:
    record = TaskRecord.new("alice", ttl_ms=60_000)
    await backend.tasks.create(record)
    assert await backend.tasks.transition(record.task_id, "completed", expect={"input_required"}) is None
    done = await backend.tasks.transition(record.task_id, "completed", expect={"working"},
                                          result={"content": []}, status_message="done")
    assert done is not None
    assert (done.status, done.result, done.status_message) == ("completed", {"content": []}, "done")
    assert await backend.tasks.transition(record.task_id, "working", expect={"completed"}) is None
    kept = await backend.tasks.get(record.task_id, "alice")
    assert kept is not None
    assert kept.status == "completed"
    cancelled = await backend.tasks.request_cancel(record.task_id, "alice")
    assert cancelled is not None
    assert not cancelled.cancel_requested  # a final task is not asked to stop
    assert await backend.tasks.transition("no-such-task", "failed", expect={"working"}) is None


async def test_a_task_is_asked_to_stop(backend: Backend) -> None:
    record = TaskRecord.new("alice", ttl_ms=60_000)
    await backend.tasks.create(record)
    flagged = await backend.tasks.request_cancel(record.task_id, "alice")
    assert flagged is not None
    assert flagged.cancel_requested
    found = await backend.tasks.get(record.task_id, "alice")
    assert found is not None
    assert found.cancel_requested


async def test_a_task_waits_on_the_client_until_its_requests_are_answered(backend: Backend) -> None:
    record = TaskRecord.new("alice", ttl_ms=60_000)
    await backend.tasks.create(record)
    asking = {"jsonrpc": "2.0", "id": "k1", "method": "elicitation/create", "params": {}}
    waiting = await backend.tasks.add_input_request(record.task_id, "k1", asking)
    assert waiting is not None
    assert (waiting.status, waiting.input_requests) == ("input_required", {"k1": asking})
    answered = await backend.tasks.answer_inputs(record.task_id, "alice", {"k1": {"action": "accept"},
                                                                           "stale": {}})
    assert answered is not None
    now, taken = answered
    assert taken == ("k1",)
    assert (now.status, now.input_requests, now.input_responses) == ("working", {}, {"k1": {"action": "accept"}})
    assert await backend.tasks.add_input_request("no-such-task", "k2", asking) is None


async def test_a_task_is_gone_once_its_ttl_has_passed(backend: Backend) -> None:
    record = TaskRecord.new("alice", ttl_ms=50)
    await backend.tasks.create(record)

    async def gone() -> bool:
        await backend.tasks.delete_expired()
        return await backend.tasks.get(record.task_id, "alice") is None

    await until(gone, what="the task to expire")


# -- change events ---------------------------------------------------------------------------------------------
async def test_a_change_event_reaches_every_subscriber(backend: Backend) -> None:
    event = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///a"}}
    with backend.bus.subscribe() as first, backend.bus.subscribe() as second:
        backend.bus.publish(event)
        async with asyncio.timeout(TIMEOUT):
            assert await anext(aiter(first)) == event
            assert await anext(aiter(second)) == event


# -- rate limits -----------------------------------------------------------------------------------------------
async def test_a_bucket_lets_a_burst_through_then_says_when_to_come_back(backend: Backend) -> None:
    buckets = backend.rate_limits
    taken = [await buckets.take("alice", 1.0, 2) for _ in range(3)]
    assert [t.allowed for t in taken] == [True, True, False]
    assert 0.0 < taken[2].retry_after <= 1.0
    assert (await buckets.take("bob", 1.0, 2)).allowed  # each key has a bucket of its own


async def test_calls_running_are_counted_up_to_the_limit(backend: Backend) -> None:
    buckets = backend.rate_limits
    assert await buckets.enter("alice", 1)
    assert not await buckets.enter("alice", 1)
    assert await buckets.enter("bob", 1)
    await buckets.leave("alice")
    assert await buckets.enter("alice", 1)


# -- GET streams -----------------------------------------------------------------------------------------------
async def test_one_get_stream_holds_a_session_at_a_time(backend: Backend) -> None:
    holds = backend.stream_holds
    assert await holds.hold(SID, "a", take_over=False)
    assert await holds.renew(SID, "a")
    assert not await holds.hold(SID, "b", take_over=False)  # a second GET: 409
    assert await holds.hold(SID, "b", take_over=True)  # a resumed GET replaces the holder
    assert not await holds.renew(SID, "a")  # the first stream learns it was taken over
    await holds.release(SID, "a")  # giving up a lost hold leaves the new holder's alone
    assert await holds.renew(SID, "b")
    await holds.release(SID, "b")
    assert not await holds.renew(SID, "b")
    assert await holds.hold(SID, "c", take_over=False)  # free again
    assert await holds.hold("s-other", "d", take_over=False)  # one per session


async def test_a_hold_not_renewed_lapses_after_its_lease(backend: Backend) -> None:
    """A replica that stopped without releasing its GET stream frees the session's GET one lease later."""
    holds = backend.stream_holds
    assert holds.lease == LEASE
    assert await holds.hold(SID, "gone", take_over=False)

    async def free() -> bool:
        return await holds.hold(SID, "next", take_over=False)

    await until(free, what="the hold to lapse")


# -- grants ----------------------------------------------------------------------------------------------------
GRANT_TTL = 60.0
"""Seconds a grant of these tests lives when it is not waited out."""
ODD_KEYS = ("https://client.example/oauth/metadata.json?x=1&y=%20#frag", "with spaces", "{tag}", "}{", "{", "",
            "a:b", ":", "clé ✓", "\x00\n\t", "\ud800", "k" * 2048, "{" + "x" * 2047)
"""Keys as requests make them: client ids that are URLs, spaces, braces (hash tags in a cluster), colons (the
separator of key names), control and non-ASCII characters, a lone surrogate, 2 KB."""


async def test_a_grant_is_put_got_overwritten_and_deleted(backend: Backend) -> None:
    grants = backend.grants
    assert await grants.get("code", "c1") is None
    await grants.put("code", "c1", {"client": "a", "scopes": ["x", "y"], "n": 1}, GRANT_TTL)
    found = await grants.get("code", "c1")
    assert found == {"client": "a", "scopes": ["x", "y"], "n": 1}
    found["client"] = "mallory"  # a copy: the store keeps what was put
    assert await grants.get("code", "c1") == {"client": "a", "scopes": ["x", "y"], "n": 1}
    await grants.put("code", "c1", {"client": "b"}, GRANT_TTL)
    assert await grants.get("code", "c1") == {"client": "b"}
    assert await grants.get("login", "c1") is None  # kinds are apart
    assert await grants.delete("code", "c1")
    assert await grants.get("code", "c1") is None
    assert not await grants.delete("code", "c1")


async def test_a_grant_is_added_only_once(backend: Backend) -> None:
    grants = backend.grants
    assert await grants.add("client", "https://a.example/cimd", {"v": 0}, GRANT_TTL)
    assert not await grants.add("client", "https://a.example/cimd", {"v": 1}, GRANT_TTL)
    assert await grants.get("client", "https://a.example/cimd") == {"v": 0}
    added = await asyncio.gather(*(grants.add("client", "raced", {"v": n}, GRANT_TTL) for n in range(20)))
    assert added.count(True) == 1
    assert await grants.get("client", "raced") == {"v": added.index(True)}
    assert await grants.delete("client", "raced")
    assert await grants.add("client", "raced", {"v": 99}, GRANT_TTL)


async def test_a_grant_is_taken_exactly_once(backend: Backend) -> None:
    grants = backend.grants
    await grants.put("code", "one-time", {"code": "one-time", "verifier": "v"}, GRANT_TTL)
    taken = await asyncio.gather(*(grants.take("code", "one-time") for _ in range(20)))
    assert [t for t in taken if t is not None] == [{"code": "one-time", "verifier": "v"}]
    assert await grants.get("code", "one-time") is None
    assert await grants.take("code", "one-time") is None
    assert await grants.take("code", "never") is None


async def test_a_grant_is_replaced_only_from_the_record_expected(backend: Backend) -> None:
    grants = backend.grants
    first = {"token": "r1", "generation": 1, "scopes": ["a"]}
    assert not await grants.replace("family", "f", first, {"token": "r2"}, GRANT_TTL)  # none there
    assert await grants.get("family", "f") is None
    await grants.put("family", "f", first, GRANT_TTL)
    reordered = {"scopes": ["a"], "generation": 1, "token": "r1"}  # the same record: keys in another order
    assert await grants.replace("family", "f", reordered, {"token": "r2", "generation": 2}, GRANT_TTL)
    assert await grants.get("family", "f") == {"token": "r2", "generation": 2}
    assert not await grants.replace("family", "f", first, {"token": "stale"}, GRANT_TTL)  # changed since
    assert not await grants.replace("family", "f", {"token": "r2", "generation": 2.5}, {"token": "x"}, GRANT_TTL)
    assert await grants.get("family", "f") == {"token": "r2", "generation": 2}
    current = {"token": "r2", "generation": 2}
    rotated = await asyncio.gather(*(grants.replace("family", "f", current, {"token": f"r3-{n}"}, GRANT_TTL)
                                     for n in range(20)))
    assert rotated.count(True) == 1  # of concurrent rotations from one state, one wins
    assert await grants.get("family", "f") == {"token": f"r3-{rotated.index(True)}"}


async def test_a_counter_counts_apart_from_the_records(backend: Backend) -> None:
    grants = backend.grants
    assert [await grants.count("registrations", "10.0.0.1", GRANT_TTL) for _ in range(3)] == [1, 2, 3]
    counted = await asyncio.gather(*(grants.count("registrations", "10.0.0.2", GRANT_TTL) for _ in range(20)))
    assert sorted(counted) == list(range(1, 21))
    await grants.put("registrations", "10.0.0.1", {"record": True}, GRANT_TTL)
    assert await grants.count("registrations", "10.0.0.1", GRANT_TTL) == 4
    assert await grants.get("registrations", "10.0.0.1") == {"record": True}
    assert await grants.delete("registrations", "10.0.0.1")
    assert await grants.count("registrations", "10.0.0.1", GRANT_TTL) == 5


async def test_a_counter_starts_again_once_its_window_has_passed(backend: Backend) -> None:
    """A counter lives from its first count: counting again does not extend it (were it extended, the counts
    of the wait below, every few ms, would keep it alive and the wait would fail)."""
    grants = backend.grants
    assert await grants.count("calls", "caller", 0.3) == 1

    async def started_again() -> bool:
        return await grants.count("calls", "caller", 0.3) == 1

    await until(started_again, what="the counter's window to pass")


async def test_a_grant_is_gone_once_its_ttl_has_passed(backend: Backend) -> None:
    grants = backend.grants
    await grants.put("login", "short", {"state": "s"}, 0.2)
    await grants.put("login", "long", {"state": "l"}, GRANT_TTL)

    async def gone() -> bool:
        return await grants.get("login", "short") is None

    await until(gone, what="the grant to expire")
    assert await grants.take("login", "short") is None
    assert not await grants.replace("login", "short", {"state": "s"}, {"state": "t"}, GRANT_TTL)
    assert await grants.add("login", "short", {"state": "again"}, GRANT_TTL)  # its place is free
    assert await grants.get("login", "long") == {"state": "l"}
    assert await grants.replace("login", "long", {"state": "l"}, {"state": "m"}, 0.2)  # a replacement's own ttl

    async def replaced_gone() -> bool:
        return await grants.get("login", "long") is None

    await until(replaced_gone, what="the replaced grant to expire")


async def test_grants_under_any_key_and_kind_are_kept_apart(backend: Backend) -> None:
    grants = backend.grants
    places = [("client", key) for key in ODD_KEYS] + [("a:b", "c"), ("a", "b:c"), ("{a}", "b"), ("k" * 300, "b")]
    for n, (kind, key) in enumerate(places):
        await grants.put(kind, key, {"n": n}, GRANT_TTL)
    for n, (kind, key) in enumerate(places):
        assert await grants.get(kind, key) == {"n": n}, (kind, key)
        assert await grants.count(kind, key, GRANT_TTL) == 1
        assert not await grants.add(kind, key, {"n": -1}, GRANT_TTL)
        assert await grants.replace(kind, key, {"n": n}, {"n": n, "rotated": True}, GRANT_TTL)
    for n, (kind, key) in enumerate(places):
        assert await grants.take(kind, key) == {"n": n, "rotated": True}, (kind, key)
        assert not await grants.delete(kind, key)


# -- the link --------------------------------------------------------------------------------------------------
async def test_the_link_names_this_process_among_the_replicas(backend: Backend) -> None:
    """One process alone has no link and shares nothing; with a link, this replica holds its lease and the
    ids of its requests to the client say they are its."""
    link = backend.link
    if link is None:
        assert not backend.shared
        return
    assert backend.shared
    assert link.lease == LEASE
    assert await link.alive(link.replica)
    assert not await link.alive("gone@0000")
    ids = link.request_ids()
    first, second = ids(), ids()
    assert first != second
    assert link.owner_of(first) == link.replica
    assert link.owner_of(7) is None


async def test_a_session_listens_from_its_first_get_stream_until_it_is_forgotten(backend: Backend) -> None:
    """Where a change is kept for a session whose GET stream is between two connections: every session that
    held one, the stream open or not, until the session ends."""
    holds = backend.stream_holds
    other = SID + "-other"
    assert await holds.listening() == []
    assert await holds.hold(SID, "a", take_over=False)
    await holds.release(SID, "a")
    assert await holds.hold(other, "b", take_over=False)
    assert sorted(await holds.listening()) == sorted({SID, other})
    await holds.forget(SID)
    assert await holds.listening() == [other]
    await holds.forget(SID)  # twice: nothing to do
    assert await holds.listening() == [other]
