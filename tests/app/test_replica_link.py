"""``wiremcp.replica_link``: the link between replicas as the transports use it, and ``ClusterEvents``,
the one protocol of what a replica hears from the others."""

from __future__ import annotations

import inspect

from wiremcp.replica_link import ClusterEvents, ReplicaLink
from wiremcp.transports.redis.replica_link import RedisReplicaLink

EVENTS = ["response_arrived", "request_cancelled", "session_deleted", "session_changed", "reconnected",
          "task_cancelled", "task_input_arrived", "bus_event"]


def test_a_listener_hears_only_what_it_overrides() -> None:
    heard: list[str] = []

    class Deletions(ClusterEvents):
        def session_deleted(self, session_id: str) -> None:
            heard.append(session_id)

    listener = Deletions()
    listener.session_deleted("s1")
    listener.session_changed("s1")  # the others do nothing
    listener.task_cancelled("t1")
    listener.reconnected()
    assert heard == ["s1"]


def test_every_event_kind_is_one_method() -> None:
    assert sorted(name for name, _ in inspect.getmembers(ClusterEvents, inspect.isfunction)
                  if not name.startswith("_")) == sorted(EVENTS)


def test_the_redis_cluster_offers_everything_the_link_names() -> None:
    wanted = {name for name in dir(ReplicaLink) if not name.startswith("_")}
    made = inspect.getsource(RedisReplicaLink.__init__)  # attributes a RedisReplicaLink sets on itself
    missing = {name for name in wanted if not hasattr(RedisReplicaLink, name) and f"self.{name} =" not in made}
    assert not missing, missing
