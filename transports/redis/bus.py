"""``SubscriptionBus`` across replicas: a change published on any replica reaches every replica's
listeners (2026-07-28 ``subscriptions/listen`` streams, and handshake-era GET streams)."""

from __future__ import annotations

from wiremcp.subscriptions import InMemorySubscriptionBus
from wiremcp.transports.redis.cluster import Cluster
from wiremcp.types import JSONObject


class RedisSubscriptionBus(InMemorySubscriptionBus):
    """Publishes through Redis; delivers what arrives from Redis (its own events included) locally."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self._cluster = cluster
        cluster.bus_handlers.append(self.deliver_local)

    def publish(self, event: JSONObject) -> None:
        self._cluster.publish_bus(event)

    def deliver_local(self, event: JSONObject) -> None:
        super().publish(event)
