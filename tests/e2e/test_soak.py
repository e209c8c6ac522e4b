"""``bench/soak.py`` for a minute: the local cluster (three replicas, its own Redis kept on disk, the real
nginx with ``deploy/nginx.conf``) under load in both eras, a replica replaced every 15 s and Redis restarted
once; the soak's verdict must be PASS: no request failed (those answered 503 with ``Retry-After`` while Redis
was away are retried), no event or notification lost, every task finished, every replaced process drained
to a clean exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import SoakOptions, cluster_for, soak

pytestmark = [pytest.mark.timeout(240), pytest.mark.spec("2025-11-25/basic/transports#resumability-and-redelivery")]


async def test_a_minute_of_soak_with_rolling_replacements_and_a_redis_restart_passes(tmp_path: Path) -> None:
    options = SoakOptions(minutes=1.0, replicas=3, clients=8, restart_every=15.0, redis_restart_at=0.4,
                          redis_down=1.0, log_dir=tmp_path)
    with cluster_for(options) as cluster:
        result = await soak(cluster, options)
    summary = f"{result.render()}\n{result.verdict}"
    (tmp_path / "report.txt").write_text(summary)
    print(summary)
    assert len(result.retired) == 3, summary
    assert any("Redis restarted" in step for step in result.replacements), summary
    assert result.report.failed == 0, summary
    assert (result.report.events_lost, result.report.notifications_lost) == (0, 0), summary
    assert result.passed, summary
    assert result.verdict.startswith("PASS"), summary
