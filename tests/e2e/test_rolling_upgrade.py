"""A rolling upgrade loses nothing: three replicas of ``uvicorn app:asgi`` (``tests.support.rolling_server``)
on one real Redis, behind the real nginx running the shipped ``deploy/nginx.conf`` (``deploy/local_cluster.py``),
under continuous load in both protocol eras (``bench/rolling_load.py``: four handshake-era sessions with their
GET streams, subscriptions, progress streams and tasks; four stateless clients with progress, tasks through
the extension and ``subscriptions/listen``). Each replica in turn gets SIGTERM and is replaced by a new
process (a new ``WIREMCP_REPLICA_ID``) on its port, for three rounds, each step once nginx uses the new one;
each SIGTERM comes in a burst of calls (many requests on nginx's kept-alive connections to the replicas).

Then, exactly: no request failed (a 503 with ``Retry-After`` retried successfully is no failure), no answer
is missing or came twice, no event or progress notification was lost or duplicated (a stream cut by the
drain is resumed with ``Last-Event-ID``), every touch acknowledged came out as exactly one
``notifications/resources/updated`` on its session's GET stream, every task finished, and every replaced
process drained to a clean exit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from bench.rolling_load import LoadOptions, RollingLoad
from bench.soak import exit_problems, log_problems, retired_summary
from deploy.local_cluster import LocalCluster
from tests.support.redis import RedisServer
from tests.support.rolling_server import SERVER

pytestmark = [pytest.mark.timeout(180), pytest.mark.spec("2025-11-25/basic/transports#resumability-and-redelivery")]

ROUNDS = 3
REPLICAS = 3
ENV = {"WIREMCP_DRAIN_SECONDS": "3", "WIREMCP_TASK_POLL_INTERVAL_MS": "200", "WIREMCP_LOG_LEVEL": "INFO",
       "PYTHONDONTWRITEBYTECODE": "1"}


async def get_streams(cluster: LocalCluster, load: RollingLoad, troubled: Collection[str]) -> list[str]:
    """Where nginx sent the GET streams of the sessions something went wrong for (replica index, status, in
    the order the streams ended)."""
    assert cluster.balancer is not None
    routed = await asyncio.to_thread(cluster.balancer.routed)
    return [f"{client.name}'s GET streams (replica, status): "
            f"{[(r.replica, r.status) for r in routed if r.method == 'GET' and r.session == client.sid]}"
            for client in load.handshake if client.name in troubled]


@pytest.fixture
def cluster(redis: RedisServer, tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(REPLICAS, server=SERVER, redis_url=redis.url, env=ENV, log_dir=tmp_path,
                      access_log=False) as running:
        yield running


async def test_a_rolling_upgrade_under_load_loses_nothing(cluster: LocalCluster, tmp_path: Path) -> None:
    load = RollingLoad(cluster.url, LoadOptions(handshake_clients=4, stateless_clients=4))
    await load.start()
    steps: list[str] = []
    try:
        for _ in range(ROUNDS):
            for index in range(REPLICAS):
                old = cluster.replicas[index].name
                burst = asyncio.create_task(load.burst())  # many requests on kept-alive connections at SIGTERM
                await load.progressed(16)
                in_flight = load.in_flight()  # what the drain has to finish or hand over
                new = await asyncio.to_thread(cluster.replace, index)
                await burst
                balanced = await asyncio.to_thread(cluster.wait_balanced, index)
                steps.append(f"{old} -> {new.name} (in flight at SIGTERM: {in_flight}; nginx uses it: {balanced})")
    finally:
        report = await load.stop()
    retired = await asyncio.to_thread(cluster.wait_retired)
    summary = "\n".join([*steps, retired_summary(retired), report.render(),
                          *await get_streams(cluster, load, report.histories), report.verdict])
    (tmp_path / "report.txt").write_text(summary)
    print(summary)

    assert len(retired) == ROUNDS * REPLICAS, summary
    assert exit_problems(retired) == [], summary
    assert log_problems(cluster.replicas) == [], summary
    assert all(new.process.poll() is None for new in cluster.replicas), summary
    assert report.failed == 0, summary
    assert report.missing_answers == 0, summary
    assert report.duplicated_answers == 0, summary
    assert (report.events_lost, report.events_duplicated) == (0, 0), summary
    assert (report.progress_lost, report.progress_duplicated) == (0, 0), summary
    assert report.notifications_sent > 0, summary
    assert (report.notifications_lost, report.notifications_duplicated) == (0, 0), summary
    assert report.tasks_created > 0, summary
    assert report.tasks_unfinished == 0, summary
    assert report.passed, summary
