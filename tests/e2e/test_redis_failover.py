"""A Redis primary killed (SIGKILL) while a call streams, on a real Redis Cluster and under a real
Sentinel: after the failover, the client resumes on the other replica of the server with ``Last-Event-ID``
and receives every event exactly once, the call's later events and its answer included.

"Written" is what the primary acknowledged and a replica holds: replication is asynchronous, so the test
waits until the replica has every write (``wait_replicated``) before it kills the primary, as a deployment
that needs it would with ``WAIT``. What a primary acknowledged and took with it is lost; nothing here
claims otherwise.
"""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from tests.support.http import RawSession, SSEReader, initialize, request_body, run_uvicorn
from tests.support.redis_topologies import LocalRedisCluster, LocalRedisSentinel
from tests.support.replicas import Served, replica_env
from wiremcp.transports.redis.keys import Keys

SERVER = "tests.support.http_fixture_server:server"
LEASE = 15.0
"""Longer than a failover: the replica running the call stays alive for the others meanwhile."""

pytestmark = [pytest.mark.timeout(90), pytest.mark.spec("2025-11-25/basic/transports#resumability-and-redelivery")]

_names = itertools.count(1)


def kill_the_primary_of(served: Served, sid: str) -> None:
    """SIGKILL the primary holding the session's keys, and wait until a replica has taken over."""
    if isinstance(served, LocalRedisCluster):
        port = served.primary_for(Keys("wiremcp").session(sid))
        served.wait_replicated()
        served.kill(port)
        served.wait_failover(port)
        served.restart(port)  # back as a replica, for the tests after this one
    else:
        assert isinstance(served, LocalRedisSentinel)
        served.wait_replicated()
        port = served.kill_primary()
        served.wait_failover(port)
        served.restart(port)


@pytest.mark.parametrize("topology", ["redis_cluster", "redis_sentinel"])
async def test_a_killed_primary_fails_over_and_the_stream_resumes_exactly_once(
        topology: str, request: pytest.FixtureRequest, http: httpx.AsyncClient) -> None:
    served: Served = request.getfixturevalue(topology)
    env = {name: replica_env(served, name, lease=LEASE) for name in ("RA", "RB")}
    with run_uvicorn(SERVER, env["RA"]) as a, run_uvicorn(SERVER, env["RB"]) as b:
        session = await initialize(http, a.url)
        assert session.sid is not None
        name = f"failover{next(_names)}"
        call = request_body(session.next_id(), "tools/call",
                            {"name": "stepper", "arguments": {"name": name, "steps": 4}, "_meta": {"progressToken": 9}})
        async with session.stream_post(call) as response:
            reader = SSEReader(response)
            first = await reader.message()
            assert first["method"] == "notifications/progress", first
            assert (await session.tool("release", name=name)).endswith("step 1")
            assert (await session.tool("release", name=name)).endswith("step 2")
            last_read = reader.last_id
        assert last_read is not None

        kill_the_primary_of(served, session.sid)

        resumed = RawSession(session.client, b.url, session.sid, session.version)
        async with resumed.stream_get(last_read) as response:
            assert response.status_code == 200, await response.aread()
            events = SSEReader(response)
            seen: list[Any] = [await events.message(), await events.message()]  # stored before the kill
            assert (await session.tool("release", name=name)).endswith("step 3")  # the call goes on, on A
            assert (await session.tool("release", name=name)).endswith("step 4")
            seen += [event.message for event in await events.rest() if event.message is not None]
    progress = [m["params"]["progress"] for m in seen if m.get("method") == "notifications/progress"]
    assert progress == [1, 2, 3, 4], seen  # every event after the one read, once, in order
    answer = seen[-1]
    assert answer["id"] == call["id"], seen
    assert "result" in answer, answer
