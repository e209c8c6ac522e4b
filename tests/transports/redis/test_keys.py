"""``Keys``: every name under the prefix, and a layout a Redis Cluster accepts (a session's keys and its
wake-up channel on one hash slot; the session index and broadcast channels spread over slots)."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from wiremcp.transports.redis.keys import CLUSTER_SHARDS, Keys


def slot(name: str) -> int:
    return key_slot(name.encode())


def test_every_name_is_under_the_prefix_and_names_what_it_holds() -> None:
    keys = Keys("app1")
    names = [keys.session("s1"), keys.sessions("s1"), keys.events("s1", "get"), keys.streams("s1"),
             keys.counters("s1"), keys.alive("A@1"), keys.get_stream("s1"), keys.wake("s1"), keys.task("t1"),
             keys.tasks_of("iss|alice"), keys.tasks_of(None), keys.broadcast("s1"), keys.inbox("A@1"),
             keys.request_state_key]
    assert all(name.startswith("app1:") for name in names)
    assert len(set(names)) == len(names)
    assert (keys.session("s1"), keys.events("s1", "get"), keys.inbox("A@1")) == (
        "app1:{s1}:s", "app1:{s1}:ev:get", "app1:to:{A@1}")
    assert Keys("app2").session("s1") != keys.session("s1")  # deployments sharing a Redis keep apart


def test_a_principal_is_hashed_into_its_task_list_name() -> None:
    keys = Keys("p")
    alice = keys.tasks_of("https://issuer.example|alice")
    assert alice == keys.tasks_of("https://issuer.example|alice")
    assert len(alice.removeprefix("p:tasks:")) == 32
    assert "alice" not in alice
    assert keys.tasks_of(None) == "p:tasks:-"
    assert keys.tasks_of("https://issuer.example|bob") != alice


@pytest.mark.parametrize("sid", ["a1b2c3", "0", "x" * 64, "with:colons", "ünï"])
def test_every_key_of_a_session_and_its_wake_up_channel_are_on_one_slot(sid: str) -> None:
    keys = Keys("wiremcp", session_shards=CLUSTER_SHARDS, broadcast_shards=CLUSTER_SHARDS)
    names = [keys.session(sid), keys.events(sid, "get"), keys.events(sid, "0"), keys.streams(sid),
             keys.counters(sid), keys.get_stream(sid), keys.wake(sid)]
    assert len({slot(name) for name in names}) == 1


def test_sessions_spread_over_the_index_shards_and_messages_over_the_broadcast_channels() -> None:
    keys = Keys("wiremcp", session_shards=CLUSTER_SHARDS, broadcast_shards=CLUSTER_SHARDS)
    sids = [f"session-{n}" for n in range(2000)]
    assert {keys.sessions(sid) for sid in sids} == set(keys.session_indexes)
    assert len({slot(index) for index in keys.session_indexes}) == CLUSTER_SHARDS  # each shard a slot of its own
    assert {keys.broadcast(sid) for sid in sids} == set(keys.broadcasts)
    assert len(keys.broadcasts) == CLUSTER_SHARDS
    assert keys.broadcast("sid-1") == keys.broadcast("sid-1")  # one subject's messages keep one channel


def test_one_server_has_one_shard_of_each() -> None:
    keys = Keys("p")
    assert keys.session_indexes == ["p:sessions:{0}"] == [keys.sessions("a"), keys.sessions("b")][:1]
    assert keys.broadcasts == ("p:all:{0}",)
    with pytest.raises(ValueError, match="at least 1"):
        Keys("p", session_shards=0)
