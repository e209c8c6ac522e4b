"""A Redis primary killed (SIGKILL) while a call streams progress, on a real Redis Cluster and under a real
Sentinel: after the failover, the client resumes on the other replica of the server with ``Last-Event-ID`` and
receives every progress event exactly once, with event ids that follow one another without a gap, and the
call's answer; or, where events are lost, the documented error answering the call at the first missing id.

- Events the call produces while no primary answers (the stepper is advanced by stateless requests, which need
  no Redis) are kept by the replica running the call and appended once the new primary answers.
- Events the old primary acknowledged but never passed on (its replicas cut off: paused, their links closed)
  are lost with it in the default mode: the next event finds the gap, and the stream ends with a JSON-RPC error
  answering the call (``-32603``, ``data.eventsLost``). With ``WIREMCP_REDIS_WAIT_REPLICAS=1`` the replica running
  the call keeps them until a replica has them, appends them again to the new primary, and nothing is lost.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import pytest

from tests.support.http import (
    RawSession,
    SSEEvent,
    SSEReader,
    UvicornProcess,
    initialize,
    request_body,
    run_uvicorn,
)
from tests.support.redis_topologies import LocalRedisCluster, LocalRedisSentinel
from tests.support.replicas import replica_env
from tests.support.stateless_http import tool_text
from wiremcp.event_store import parse_event_id
from wiremcp.transports.redis.keys import Keys

SERVER = "tests.support.http_fixture_server:server"
LEASE = 15.0
"""Longer than a failover: the replica running the call stays alive for the others meanwhile."""
STEPS = 8
SSE_AFTER = 5.0
"""Far longer than a WAIT (0.1 s by default) or a failover holds a request up: the release steps answer with JSON."""

pytestmark = [pytest.mark.timeout(120), pytest.mark.spec("2025-11-25/basic/transports#resumability-and-redelivery")]

_names = itertools.count(1)

Topology = LocalRedisCluster | LocalRedisSentinel


def primary_of(served: Topology, sid: str) -> int:
    """The port of the primary holding the session's keys."""
    if isinstance(served, LocalRedisCluster):
        return served.primary_for(Keys("wiremcp").session(sid))
    return served.primary_port()


def kill(served: Topology, port: int) -> None:
    if isinstance(served, LocalRedisCluster):
        served.kill(port)
    else:
        assert served.kill_primary() == port


def fail_over(served: Topology, port: int) -> None:
    """Wait until a replica has taken over from the killed ``port``, then restart it (as a replica, for the
    tests after this one)."""
    served.wait_failover(port)
    served.restart(port)


def contiguous(events: list[SSEEvent], after: str) -> list[int]:
    """The events' numbers, checked to follow ``after`` one by one (no gap, nothing twice)."""
    stream, last = parse_event_id(after) or ("", -1)
    seqs = []
    for event in events:
        assert event.id is not None, event
        parsed = parse_event_id(event.id)
        assert parsed is not None, event.id
        assert parsed[0] == stream, (event.id, after)
        seqs.append(parsed[1])
    assert seqs == list(range(last + 1, last + 1 + len(seqs))), f"event ids after {after}: {seqs}"
    return seqs


def progress_of(events: list[SSEEvent]) -> list[int]:
    return [e.message["params"]["progress"] for e in events
            if e.data and e.message.get("method") == "notifications/progress"]


@pytest.fixture(params=["redis_cluster", "redis_sentinel"])
def served(request: pytest.FixtureRequest) -> Topology:
    topology: Topology = request.getfixturevalue(request.param)
    return topology


class Call:
    """A stepper call of ``STEPS`` steps on replica A, its first events read, its stream then closed."""

    def __init__(self, session: RawSession, a: UvicornProcess) -> None:
        self.session = session
        self.a = a
        self.name = f"failover{next(_names)}"
        self.body = request_body(session.next_id(), "tools/call", {
            "name": "stepper", "arguments": {"name": self.name, "steps": STEPS}, "_meta": {"progressToken": 9}})
        self.last_read = ""
        self.step = 0

    async def start(self, read_steps: int) -> None:
        async with self.session.stream_post(self.body) as response:
            reader = SSEReader(response)
            first = await reader.message()
            assert first["method"] == "notifications/progress", first
            for _ in range(read_steps):
                await self.release()
                assert (await reader.message())["params"]["progress"] == self.step
            assert reader.last_id is not None
            self.last_read = reader.last_id

    async def release(self) -> None:
        """The next step, through the call's session (which needs Redis)."""
        self.step += 1
        assert (await self.session.tool("release", name=self.name)).endswith(f"step {self.step}")

    async def release_stateless(self, http: httpx.AsyncClient) -> None:
        """The next step, through a stateless request to A (which needs no Redis)."""
        self.step += 1
        assert (await tool_text(http, self.a.url, "release", {"name": self.name})).endswith(f"step {self.step}")

    async def resume_on(self, b: UvicornProcess, *, release_rest: bool) -> list[SSEEvent]:
        """Resume on B from the last event read; release the remaining steps if asked; every event until the
        stream ends."""
        resumed = RawSession(self.session.client, b.url, self.session.sid, self.session.version)
        async with resumed.stream_get(self.last_read) as response:
            assert response.status_code == 200, await response.aread()
            while release_rest and self.step < STEPS:
                await self.release()
            return await SSEReader(response).rest()


@pytest.fixture
def replicas(served: Topology) -> Iterator[tuple[UvicornProcess, UvicornProcess]]:
    # the release steps are answered with application/json, however long a failover holds them up
    env = {name: {**replica_env(served, name, lease=LEASE), "WIREMCP_SSE_AFTER_SECONDS": str(SSE_AFTER)}
           for name in ("RA", "RB")}
    with run_uvicorn(SERVER, env["RA"]) as a, run_uvicorn(SERVER, env["RB"]) as b:
        yield a, b
        outputs = a.output() + b.output()
    assert "Traceback" not in outputs, outputs


async def test_events_produced_while_the_primary_is_down_are_appended_once_a_replica_takes_over(
        served: Topology, replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    a, b = replicas
    session = await initialize(http, a.url)
    call = Call(session, a)
    await call.start(read_steps=0)
    await call.release()  # steps 1 and 2: stored before the kill, not read yet
    await call.release()
    port = primary_of(served, session.sid)
    served.wait_replicated()  # (writes the primary acknowledged but never passed on: the next test)
    kill(served, port)
    for _ in range(3):  # steps 3 to 5: produced while no primary answers for the session's keys
        await call.release_stateless(http)
    assert primary_of(served, session.sid) == port, "the failover came before the events it should have followed"
    fail_over(served, port)

    events = await call.resume_on(b, release_rest=True)
    contiguous(events, call.last_read)
    assert progress_of(events) == list(range(1, STEPS + 1)), [e.message for e in events]
    answer = events[-1].message
    assert answer["id"] == call.body["id"], answer
    assert "result" in answer, answer


@pytest.mark.setting("WIREMCP_REDIS_WAIT_REPLICAS")
@pytest.mark.parametrize("wait_replicas", [0, 1], ids=["default", "wait-1"])
async def test_events_the_dead_primary_never_replicated_are_appended_again_with_wait_or_end_the_stream_with_an_error(
        served: Topology, wait_replicas: int, http: httpx.AsyncClient) -> None:
    # A step that WAIT holds up (its replicas cut off) is still answered with application/json.
    # A's call, whose stream ended with the error in the default mode, still waits for its last steps: the
    # drain (not under test here) lets it go at once when the test stops A.
    env = {name: {**replica_env(served, name, lease=LEASE), "WIREMCP_REDIS_WAIT_REPLICAS": str(wait_replicas),
                  "WIREMCP_SSE_AFTER_SECONDS": str(SSE_AFTER), "WIREMCP_DRAIN_SECONDS": "0.1"}
           for name in ("RA", "RB")}
    with run_uvicorn(SERVER, env["RA"]) as a, run_uvicorn(SERVER, env["RB"]) as b:
        session = await initialize(http, a.url)
        call = Call(session, a)
        await call.start(read_steps=2)  # steps 1 and 2 read live: the client resumes after them
        port = primary_of(served, session.sid)
        served.wait_replicated()
        served.cut_off_replicas(port)
        try:
            await call.release()  # steps 3 and 4: acknowledged by the primary alone
            await call.release()
            kill(served, port)
        finally:
            served.resume_replicas()
        fail_over(served, port)
        await call.release()  # step 5, on the new primary

        events = await call.resume_on(b, release_rest=wait_replicas > 0)
        outputs = a.output() + b.output()
    assert "Traceback" not in outputs, outputs
    contiguous(events, call.last_read)
    answer = events[-1].message
    assert answer["id"] == call.body["id"], answer
    if wait_replicas:
        assert progress_of(events) == list(range(3, STEPS + 1)), [e.message for e in events]
        assert "result" in answer, answer
    else:  # steps 3 and 4 went with the old primary: step 5 finds the gap, and the call is answered with an error
        assert progress_of(events) == [], [e.message for e in events]
        assert answer["error"]["code"] == -32603, answer
        assert answer["error"]["data"]["retryable"] is True, answer
        assert answer["error"]["data"]["eventsLost"] is True, answer
