"""Scale-out on Redis: two real ``uvicorn app:asgi`` replicas sharing one real ``redis-server`` (the tests
on ``replicas``: also a real Redis Cluster and a real Sentinel setup), and a client that picks the replica
for every request, as a round-robin load balancer without affinity would. The requests go through the
real nginx running ``deploy/nginx.conf`` (``tests/support/balancer.py`` steers its round robin to the
replica each step names), except where a test addresses a replica's own process (Redis away, drain,
restarts); where a test needs the balancer's own behaviour (a dead replica skipped), nginx picks.

- every step of a handshake-era session alternates replicas: initialize on A, tools/call on B, an
  elicitation raised on B answered with a POST to A, a GET stream on A receiving a list_changed
  triggered on B, DELETE on B, then 404 on A;
- a replica killed (SIGKILL) while a call streams progress: the client resumes on the other replica
  with ``Last-Event-ID`` and receives every event exactly once, then the documented error answer;
- Redis stopped and restarted mid-test: 503 while it is away, served again after, no restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import signal
import time
from collections.abc import Iterator

import httpx
import pytest
import redis as redis_py

from deploy.nginx import Nginx
from tests.support.balancer import Balanced
from tests.support.http import (
    READ_BOUND,
    RawSession,
    SSEReader,
    UvicornProcess,
    error_of,
    initialize,
    request_body,
    run_replicas,
    run_uvicorn,
)
from tests.support.redis import RedisServer
from tests.support.redis_topologies import TOPOLOGIES
from tests.support.replicas import RESTART_LEASE, TASKS, Served, replica_env
from wiremcp.transports.redis.keys import Keys

SERVER = "tests.support.http_fixture_server:server"

pytestmark = [pytest.mark.timeout(60), pytest.mark.spec("2025-11-25/basic/transports#session-management")]

_names = itertools.count(1)


@pytest.fixture(scope="module", params=TOPOLOGIES)
def replicas(request: pytest.FixtureRequest) -> Iterator[tuple[UvicornProcess, UvicornProcess]]:
    """Two replicas on one server, on a cluster and under Sentinel in turn."""
    served: Served = request.getfixturevalue(
        {"standalone": "redis", "cluster": "redis_cluster", "sentinel": "redis_sentinel"}[request.param])
    with run_replicas(SERVER, {name: replica_env(served, name) for name in ("A", "B")}) as running:
        yield running["A"], running["B"]


def on(session: RawSession, replica: UvicornProcess) -> RawSession:
    """The same session, addressed to another replica."""
    return RawSession(session.client, replica.url, session.sid, session.version)


@pytest.fixture(scope="module")
def balanced(replicas: tuple[UvicornProcess, UvicornProcess]) -> Iterator[Balanced]:
    """The two replicas behind the real nginx; each test names the replica of every step (``to``)."""
    with Nginx([("127.0.0.1", r.port) for r in replicas]) as nginx:
        yield Balanced(nginx, replicas)


A, B = 0, 1


async def test_every_request_of_a_session_may_land_on_either_replica(
        balanced: Balanced, http: httpx.AsyncClient) -> None:
    """Through nginx, each step on the replica the test names: initialize on A, the rest alternating."""
    await balanced.to(A)
    session = await initialize(http, balanced.url, capabilities={"elicitation": {}}, initialized=False)
    await balanced.to(B)
    assert (await session.notify("notifications/initialized")).status_code == 202
    await balanced.to(B)
    assert await session.tool("echo", text="served by B") == "served by B"
    await balanced.to(A)
    assert await session.tool("echo", text="served by A") == "served by A"

    # An elicitation raised by the call running on B, answered with a POST to A.
    call = request_body(session.next_id(), "tools/call", {"name": "ask", "arguments": {"question": "Colour?"}})
    await balanced.to(B)
    async with session.stream_post(call) as response:
        reader = SSEReader(response)
        asked = await reader.message()
        assert asked["method"] == "elicitation/create", asked
        answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"answer": "teal"}}}
        await balanced.to(A)
        assert (await session.post(answer)).status_code == 202
        done = await reader.message()
    assert done["id"] == call["id"], done
    assert done["result"]["content"][0]["text"] == "accept: teal", done

    # The GET stream held by A carries a list_changed caused on B.
    await balanced.to(A)
    async with session.stream_get() as get:
        assert get.status_code == 200
        events = SSEReader(get)
        priming = await events.next()
        assert priming.data == ""
        assert priming.id is not None
        # One GET stream per session across replicas: a second one, on B, is refused.
        await balanced.to(B)
        second = await session.get()
        assert second.status_code == 409, second.text
        await balanced.to(B)
        assert (await session.tool("add_tool", name=f"extra{next(_names)}")).startswith("added")
        changed = await events.message()
        assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}

    # DELETE on B ends the session everywhere.
    await balanced.to(B)
    assert (await session.delete()).status_code == 200
    await balanced.to(A)
    gone = await session.request("tools/list")
    assert gone.status_code == 404, gone.text
    assert error_of(gone)[0] == -32600

    # nginx's log agrees (in the order the requests ended, which for the streams is not when they began).
    mine = [(r.method, r.replica, r.status) for r in await balanced.served() if r.session == session.sid]
    assert sorted(mine) == sorted([("POST", A, 200), ("POST", B, 202), ("POST", B, 200), ("POST", A, 200),
                                   ("POST", B, 200), ("POST", A, 202), ("GET", A, 200), ("GET", B, 409),
                                   ("POST", B, 200), ("DELETE", B, 200), ("POST", A, 404)]), mine


async def test_a_change_made_while_no_get_stream_is_open_is_read_when_the_stream_resumes_on_the_other_replica(
        balanced: Balanced, http: httpx.AsyncClient) -> None:
    """What the server tells a session outside any request is kept in its GET stream whether a stream is open
    or not: a resource update and a list change made on B while the client was between two connections (its
    replica drained, say) are replayed, in order, when it resumes with ``Last-Event-ID``, here on B."""
    await balanced.to(A)
    session = await initialize(http, balanced.url)
    uri = f"fixture://watched/{next(_names)}"
    await balanced.to(B)
    subscribed = await session.request("resources/subscribe", {"uri": uri})
    assert subscribed.status_code == 200, subscribed.text
    await balanced.to(A)
    async with session.stream_get() as get:
        assert get.status_code == 200
        priming = await SSEReader(get).next()
    assert priming.id is not None

    await balanced.to(B)
    assert await session.tool("touch", uri=uri) == f"touched {uri}"
    await balanced.to(A)
    assert (await session.tool("add_tool", name=f"extra{next(_names)}")).startswith("added")

    await balanced.to(B)
    async with session.stream_get(priming.id) as resumed:
        assert resumed.status_code == 200
        events = SSEReader(resumed)
        assert await events.message() == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                          "params": {"uri": uri}}
        assert await events.message() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


async def test_cancelling_on_one_replica_stops_the_call_running_on_the_other(
        balanced: Balanced, http: httpx.AsyncClient) -> None:
    await balanced.to(A)
    session = await initialize(http, balanced.url)
    name = f"cancel{next(_names)}"
    call = request_body(session.next_id(), "tools/call", {"name": "until_cancelled", "arguments": {"name": name}})
    await balanced.to(B)
    async with session.stream_post(call) as response:
        reader = SSEReader(response)
        await balanced.to(B)
        assert (await session.tool("until_cancelled_started", name=name)).endswith("started")  # it runs on B
        await balanced.to(A)
        cancel = await session.notify("notifications/cancelled", {"requestId": call["id"], "reason": "test"})
        assert cancel.status_code == 202
        rest = await reader.rest()
    assert not any(e.message and e.message.get("id") == call["id"] for e in rest), rest
    await balanced.to(B)
    assert (await session.tool("cancel_outcome", name=name)).endswith("CancelledError")


async def test_a_killed_replicas_stream_resumes_on_the_other_one_exactly_once(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    """Behind real nginx (``deploy/nginx.conf``): the client only knows nginx's address. The replica running
    the call is SIGKILLed; the client resumes through nginx, which finds the dead replica refusing and
    passes the GET to the other one."""
    with run_uvicorn(SERVER, replica_env(redis, "KD")) as doomed, run_uvicorn(SERVER, replica_env(redis, "KS")) as survivor, \
            Nginx([("127.0.0.1", doomed.port), ("127.0.0.1", survivor.port)]) as nginx:
        balanced = Balanced(nginx, (doomed, survivor))
        session = await initialize(http, balanced.url)
        name = f"steps{next(_names)}"
        call = request_body(session.next_id(), "tools/call",
                            {"name": "stepper", "arguments": {"name": name, "steps": 5}, "_meta": {"progressToken": 7}})
        await balanced.to(A)
        async with session.stream_post(call) as response:
            reader = SSEReader(response)
            first_event = await reader.message()
            assert first_event["method"] == "notifications/progress", first_event
            # Two more steps are produced (and stored) but not read before the replica dies. (The steps' gate
            # is in the doomed replica's memory: it is asked directly, with the session's own request ids.)
            direct = dataclasses.replace(session, url=doomed.url)
            assert (await direct.tool("release", name=name)).endswith("step 1")
            assert (await direct.tool("release", name=name)).endswith("step 2")
            reader_id = reader.last_id
            await balanced.to(A)  # the resume comes on the doomed replica's turn
            doomed.process.send_signal(signal.SIGKILL)
            doomed.process.wait(READ_BOUND)
        assert reader_id is not None
        async with session.stream_get(reader_id) as response:
            assert response.status_code == 200, await response.aread()
            replay = await SSEReader(response).rest()
        served = await balanced.served()
    posts = [r for r in served if r.method == "POST"]
    assert posts[-1].replica == A, served  # the stream, logged as it ended (cut), was the doomed replica's
    resumed = [r for r in served if r.method == "GET"]
    # Its turn, so nginx tried the dead replica first: refused, the GET passed to the other one.
    assert [(r.tried, r.status) for r in resumed] == [((A, B), 200)], served
    messages = [e.message for e in replay if e.message is not None]
    progress = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress == [1, 2], messages  # every event not yet read, once, in order
    final = messages[-1]
    assert final["id"] == call["id"], messages
    assert final["error"]["code"] == -32603, final
    assert final["error"]["data"] == {"replica": "KD", "retryable": True}, final
    ids = [e.id for e in replay if e.id is not None]
    assert len(ids) == len(set(ids)), ids


async def test_a_replica_restarted_under_its_id_does_not_revive_the_calls_of_its_earlier_life(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    """Kubernetes keeps a pod's name (WIREMCP_REPLICA_ID) across container restarts: the lease names the
    process life, so a call of the killed life ends with the documented error, never hangs."""
    env = {**replica_env(redis, "RK"), "WIREMCP_REPLICA_LEASE_SECONDS": str(RESTART_LEASE)}
    with run_uvicorn(SERVER, {**env, "WIREMCP_REPLICA_ID": "RS"}) as survivor:
        with run_uvicorn(SERVER, env) as doomed:
            session = await initialize(http, doomed.url)
            name = f"steps{next(_names)}"
            call = request_body(session.next_id(), "tools/call", {"name": "stepper", "arguments": {
                "name": name, "steps": 5}, "_meta": {"progressToken": 7}})
            async with session.stream_post(call) as response:
                reader = SSEReader(response)
                assert (await reader.message())["method"] == "notifications/progress"
                assert (await session.tool("release", name=name)).endswith("step 1")
                reader_id = reader.last_id
                doomed.process.send_signal(signal.SIGKILL)
                doomed.process.wait(READ_BOUND)
        assert reader_id is not None
        with run_uvicorn(SERVER, env) as reborn:  # the same replica id, within the old life's lease
            assert (await on(session, reborn).call("ping")) == {}  # the session lives on, in Redis
            async with on(session, survivor).stream_get(reader_id) as response:
                assert response.status_code == 200, await response.aread()
                replay = await SSEReader(response).rest(timeout=RESTART_LEASE + READ_BOUND)
    messages = [e.message for e in replay if e.message is not None]
    assert [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"] == [1]
    final = messages[-1]
    assert final["id"] == call["id"], messages
    assert final["error"]["code"] == -32603, final
    assert final["error"]["data"] == {"replica": "RK", "retryable": True}, final


@pytest.mark.spec("2025-11-25/basic/transports#resumability-and-redelivery")
@pytest.mark.parametrize("store", ["memory", "redis"])
async def test_an_out_of_range_last_event_id_is_400_with_either_backend(
        store: str, redis: RedisServer, http: httpx.AsyncClient) -> None:
    env = replica_env(redis, "LE") if store == "redis" else {}
    with run_uvicorn(SERVER, env) as replica:
        session = await initialize(http, replica.url)
        for bad in ("get_18446744073709551616", "p0a1b2c3d4e5f_99999999999999999999", "get_-1"):
            response = await session.get(bad)
            assert response.status_code == 400, (bad, response.text)
            assert error_of(response)[0] == -32600
        assert (await session.call("ping")) == {}  # and the session serves on
        output = replica.output()
    assert "Traceback" not in output, output
    assert "WARNING" not in output, output


@pytest.mark.parametrize("replicas", ["standalone"], indirect=True)  # it stops the one server
async def test_redis_away_means_503_and_its_return_means_service_without_a_restart(
        redis: RedisServer, replicas: tuple[UvicornProcess, UvicornProcess], http: httpx.AsyncClient) -> None:
    a, b = replicas
    session = await initialize(http, a.url)
    assert await on(session, b).tool("echo", text="before") == "before"
    redis.stop()
    try:
        for replica in (a, b):
            down = await on(session, replica).request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
            assert down.status_code == 503, down.text
            assert error_of(down)[0] == -32603
            assert down.headers.get("retry-after") == "1"
            fresh = await http.post(replica.url, content=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
                                    b'{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t",'
                                    b'"version":"0"}}}', headers={"accept": "application/json, text/event-stream",
                                                                  "content-type": "application/json"})
            assert fresh.status_code == 503, fresh.text
            ready = await http.get(replica.base_url + "/readyz")
            assert ready.status_code == 503, ready.text
            assert ready.json()["checks"]["redis"] != "ok", ready.text
            assert (await http.get(replica.base_url + "/healthz")).status_code == 200  # alive all the same
    finally:
        redis.start()
    # The same session (Redis kept it on disk), on both replicas, with no restart of either.
    assert await on(session, a).tool("echo", text="after") == "after"
    assert await on(session, b).tool("echo", text="after") == "after"
    # Both replicas subscribe again to what the others publish (after a back-off of up to two seconds).
    listening = redis_py.Redis(port=redis.port)
    deadline = time.monotonic() + READ_BOUND
    while listening.pubsub_numsub(Keys("wiremcp").broadcast(""))[0][1] < 2:
        assert time.monotonic() < deadline, "a replica did not subscribe again"
        await asyncio.sleep(0.02)  # the poll interval of a bounded wait
    listening.close()
    assert (await http.get(a.base_url + "/readyz")).status_code == 200


async def test_sigterm_drains_a_replica_without_losing_the_call_in_flight(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    """Graceful drain: the GET stream closes at once with a ``retry`` (the client reconnects elsewhere),
    the call in flight finishes (its elicitation answered through the other replica), then the process exits."""
    with run_uvicorn(SERVER, replica_env(redis, "D")) as draining, run_uvicorn(SERVER, replica_env(redis, "E")) as other:
        at_d = await initialize(http, draining.url, capabilities={"elicitation": {}})
        async with at_d.stream_get() as get:
            standalone = SSEReader(get)
            await standalone.next()  # priming
            call = request_body(at_d.next_id(), "tools/call", {"name": "ask", "arguments": {"question": "Stay?"}})
            async with at_d.stream_post(call) as response:
                reader = SSEReader(response)
                asked = await reader.message()
                draining.process.send_signal(signal.SIGTERM)
                closing = await standalone.rest()
                assert closing, closing
                assert closing[-1].retry is not None, closing  # told when to come back
                assert all(e.message is None for e in closing), closing
                answer = {"jsonrpc": "2.0", "id": asked["id"],
                          "result": {"action": "accept", "content": {"answer": "yes"}}}
                assert (await on(at_d, other).post(answer)).status_code == 202
                done = await reader.message()
        assert done["id"] == call["id"], done
        assert done["result"]["content"][0]["text"] == "accept: yes", done
        # uvicorn ends by re-raising the signal it caught; nothing was cut by its graceful-shutdown timeout.
        assert draining.process.wait(READ_BOUND) in (0, -signal.SIGTERM)
        assert "timeout graceful shutdown exceeded" not in draining.output()
        # The session lives on: the other replica serves it.
        assert await on(at_d, other).tool("echo", text="still here") == "still here"


async def test_a_listen_stream_on_one_replica_hears_a_change_made_on_the_other(
        balanced: Balanced, http: httpx.AsyncClient) -> None:
    """2026-07-28 ``subscriptions/listen`` on A; a tool list changed on B (by a handshake-era call there)."""
    from tests.support.stateless_http import ACK, listen_call, listening, tagged

    await balanced.to(A)
    call = listen_call({"toolsListChanged": True}, 77)
    async with listening(http, balanced.url, call) as stream:
        assert tagged(await stream.next(), 77)["method"] == ACK
        await balanced.to(B)
        at_b = await initialize(http, balanced.url)
        await balanced.to(B)
        assert (await at_b.tool("add_tool", name=f"extra{next(_names)}")).startswith("added")
        changed = tagged(await stream.next(), 77)
    assert changed["method"] == "notifications/tools/list_changed"


async def test_with_a_session_cache_a_replica_serves_from_its_copy_and_still_hears_of_a_delete(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    """``WIREMCP_SESSION_CACHE_SECONDS``: requests answered from the replica's copy ask Redis nothing;
    a DELETE on the other replica reaches the copy by pub/sub."""


    env = {"WIREMCP_SESSION_CACHE_SECONDS": "30"}
    with run_uvicorn(SERVER, {**replica_env(redis, "CA"), **env}) as a, run_uvicorn(SERVER, {**replica_env(redis, "CB"), **env}) as b:
        at_a = await initialize(http, a.url)
        at_b = on(at_a, b)
        assert await at_b.tool("echo", text="b") == "b"
        assert await at_a.tool("echo", text="warm") == "warm"
        stats = redis_py.Redis.from_url(redis.url)
        before = stats.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        for i in range(20):
            assert await at_a.tool("echo", text=str(i)) == str(i)
        after = stats.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        assert after - before <= 1, (before, after)  # at most one look at Redis for 20 requests
        assert (await at_b.delete()).status_code == 200
        deadline = time.monotonic() + READ_BOUND
        while (await at_a.request("tools/list")).status_code != 404:
            assert time.monotonic() < deadline, "the delete never reached replica A"
        stats.close()


async def _task(session: RawSession, name: str) -> str:
    created = await session.call("tools/call", {"name": "job", "arguments": {"name": name}, "task": {"ttl": 60_000}})
    assert created["task"]["status"] == "working", created
    task_id: str = created["task"]["taskId"]
    return task_id


async def test_a_task_created_on_one_replica_is_polled_and_cancelled_from_the_other(
        redis: RedisServer, http: httpx.AsyncClient) -> None:
    """2025-11-25 tasks on the Redis task store: any replica answers for any task; the cancel reaches the
    handler on the replica running it; another session cannot see the task."""
    with run_uvicorn(TASKS, replica_env(redis, "TA")) as a, run_uvicorn(TASKS, replica_env(redis, "TB")) as b, \
            Nginx([("127.0.0.1", a.port), ("127.0.0.1", b.port)]) as nginx:
        balanced = Balanced(nginx, (a, b))
        await balanced.to(A)
        session = await initialize(http, balanced.url)
        await balanced.to(A)
        task_id = await _task(session, "j1")
        await balanced.to(B)
        assert (await session.call("tasks/get", {"taskId": task_id}))["status"] == "working"
        await balanced.to(B)
        listed = await session.call("tasks/list", {})
        assert [t["taskId"] for t in listed["tasks"]] == [task_id]
        stranger = await initialize(http, b.url)
        hidden = await stranger.request("tasks/get", {"taskId": task_id})
        assert error_of(hidden)[0] == -32602
        await balanced.to(B)
        assert (await session.call("tasks/cancel", {"taskId": task_id}))["status"] == "cancelled"
        await balanced.to(A)
        assert await session.tool("outcome", name="j1") == "cancelled"  # the handler on A was stopped

        await balanced.to(B)
        done_id = await _task(session, "j2")
        await balanced.to(B)
        assert await session.tool("finish", name="j2") == "ok"
        await balanced.to(A)
        result = await session.call("tasks/result", {"taskId": done_id})  # waits, on A, for B's task
        assert result["content"][0]["text"] == "j2 done"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": done_id}


async def test_a_task_whose_replica_is_killed_ends_failed_not_working(
        redis: RedisServer, http: httpx.AsyncClient) -> None:

    with run_uvicorn(TASKS, replica_env(redis, "TK")) as doomed, run_uvicorn(TASKS, replica_env(redis, "TS")) as survivor:
        session = await initialize(http, doomed.url)
        task_id = await _task(session, "j3")
        doomed.process.send_signal(signal.SIGKILL)
        doomed.process.wait(READ_BOUND)
        elsewhere = on(session, survivor)
        deadline = time.monotonic() + READ_BOUND
        while (state := await elsewhere.call("tasks/get", {"taskId": task_id}))["status"] == "working":
            assert time.monotonic() < deadline, "the orphaned task stayed working"
        assert state["status"] == "failed", state
        assert "stopped before it finished" in state["statusMessage"]
        failed = await elsewhere.request("tasks/result", {"taskId": task_id})
        assert error_of(failed)[0] == -32603
