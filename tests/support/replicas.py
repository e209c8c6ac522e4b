"""Replicas of ``uvicorn app:asgi`` sharing one Redis, as the end-to-end tests run them: each one's
environment, with a short lease so that a killed replica is taken for dead quickly."""

from __future__ import annotations

from typing import Protocol

LEASE = 1.0
"""The replicas' lease: how soon a killed one is taken for dead."""
RESTART_LEASE = 4.0
"""Long enough for a killed replica to be restarted under its id while its lease still runs."""
TASKS = "tests.support.task_server:server"
"""The server of the task tests, as a spec."""


class Served(Protocol):
    """A Redis the tests run (one server, a cluster, Sentinel): what ``WIREMCP_REDIS_URL`` takes."""

    @property
    def url(self) -> str: ...


def replica_env(redis: Served, replica: str, *, lease: float = LEASE) -> dict[str, str]:
    return {"WIREMCP_REDIS_URL": redis.url, "WIREMCP_REPLICA_ID": replica,
            "WIREMCP_REPLICA_LEASE_SECONDS": str(lease), "WIREMCP_REDIS_TIMEOUT_SECONDS": "1",
            "WIREMCP_SSE_AFTER_SECONDS": "0.05"}
