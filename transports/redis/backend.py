"""Everything a replica keeps in Redis, built from one URL: the session store, the event store, the
cluster link (routing between replicas) and the subscription bus."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wiremcp.replica_link import ClusterEvents
from wiremcp.replicas import life_name
from wiremcp.request_state import RequestStateSealer
from wiremcp.server import MCPServer
from wiremcp.transports.redis.bus import RedisSubscriptionBus
from wiremcp.transports.redis.cluster import Cluster
from wiremcp.transports.redis.connection import Keys, connect, reachable
from wiremcp.transports.redis.events import RedisEventStore
from wiremcp.transports.redis.sessions import RedisSessionStore
from wiremcp.transports.redis.tasks import RedisTaskStore

if TYPE_CHECKING:
    from wiremcp.task_runner import TaskRunner


@dataclass(slots=True)
class RedisBackend:
    cluster: Cluster
    sessions: RedisSessionStore
    events: RedisEventStore
    bus: RedisSubscriptionBus
    tasks: RedisTaskStore

    @classmethod
    def connect(cls, url: str, *, prefix: str = "wiremcp", timeout: float = 2.0, replica: str = "",
                lease: float = 5.0, idle_timeout: float = 1800.0, max_events_per_stream: int = 10_000,
                max_event_age: float = 600.0) -> RedisBackend:
        """Nothing is sent before ``start``; a Redis that is down makes requests fail with 503, not startup."""
        client = connect(url, timeout=timeout)
        keys = Keys(prefix)
        name = life_name(replica)
        cluster = Cluster(client, connect(url, timeout=timeout, blocking=True), keys, replica=name, lease=lease)
        return cls(cluster=cluster,
                   sessions=RedisSessionStore(client, keys, idle_timeout=idle_timeout),
                   events=RedisEventStore(client, keys, replica=name, max_events_per_stream=max_events_per_stream,
                                          max_age=max_event_age, counter_ttl=max(idle_timeout, max_event_age)),
                   bus=RedisSubscriptionBus(cluster), tasks=RedisTaskStore(client, keys))

    def attach(self, server: MCPServer) -> None:
        """Make the server publish its change events to every replica, and keep its tasks in Redis: any
        replica answers for any task, cancels and input answers reach the replica running it, and a task
        whose replica stopped is failed instead of staying ``working``."""
        server.bus = self.bus
        runner = server.task_runner
        runner.store = self.tasks
        runner.replica = self.cluster.replica
        runner.cancel_elsewhere = self.cluster.broadcast_task_cancel
        runner.alive = self.cluster.alive
        runner.inputs.wake_elsewhere = self.cluster.broadcast_task_input
        self.cluster.listen(TaskEvents(runner))

    async def share_request_state_key(self, server: MCPServer, ttl: float) -> None:
        """Replicas without configured ``requestState`` keys agree on one kept in Redis (the first one
        to start makes it), so that a multi-round exchange may continue on any replica."""
        key = self.cluster.keys.prefix + ":request-state-key"
        fresh = base64.urlsafe_b64encode(os.urandom(32))
        with reachable("request-state key"):
            await self.cluster.client.set(key, fresh, nx=True)
            shared = await self.cluster.client.get(key)
        if shared:
            server.request_states = RequestStateSealer.from_strings(
                [shared.decode() if isinstance(shared, bytes) else shared], ttl=ttl)


class TaskEvents(ClusterEvents):
    """The task runner's side of the link: tasks cancelled or answered on another replica, run here."""

    __slots__ = ("_runner",)

    def __init__(self, runner: TaskRunner) -> None:
        self._runner = runner

    def task_cancelled(self, task_id: str) -> None:
        self._runner.cancel_local(task_id)

    def task_input_arrived(self, task_id: str) -> None:
        self._runner.inputs.wake_soon(task_id)
