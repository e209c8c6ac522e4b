"""``SubscriptionBus`` across replicas: a change published on any replica reaches every replica's
listeners (2026-07-28 ``subscriptions/listen`` streams, and handshake-era GET streams)."""

from __future__ import annotations

from wiremcp.replica_link import ClusterEvents
from wiremcp.subscriptions import InMemorySubscriptionBus
from wiremcp.transports.redis.replica_link import RedisReplicaLink
from wiremcp.types import JSONObject


class RedisSubscriptionBus(InMemorySubscriptionBus, ClusterEvents):
    """Publishes through Redis; delivers what arrives from Redis (its own events included) locally."""

    def __init__(self, cluster: RedisReplicaLink) -> None:
        super().__init__()
        self._cluster = cluster
        cluster.listen(self)

    def publish(self, event: JSONObject) -> None:
        self._cluster.publish_bus(event)

    def bus_event(self, event: JSONObject) -> None:
        """A change published on any replica, back from Redis: to this replica's listeners."""
        super().publish(event)
