"""``RedisStreamHolds``: the one GET stream of a session across replicas, each replica with a client of its own
on the Redis under test (one server, a cluster, Sentinel); what every backend's holds keep is
``tests/contract/test_backend.py``'s."""

from __future__ import annotations

from tests.support.cluster import TIMEOUT, until
from wiremcp.transports.redis.connection import Redis
from wiremcp.transports.redis.keys import Keys
from wiremcp.transports.redis.stream_holds import RedisStreamHolds


async def test_a_get_stream_taken_over_on_another_replica_is_neither_renewed_nor_released_by_the_first(
        client: Redis, other_client: Redis, redis_keys: Keys) -> None:
    a = RedisStreamHolds(client, redis_keys, lease=TIMEOUT)
    b = RedisStreamHolds(other_client, redis_keys, lease=TIMEOUT)
    assert await a.hold("sid-g", "token-a", take_over=False)
    assert not await b.hold("sid-g", "token-b", take_over=False)  # a second GET, on B: 409
    assert await b.hold("sid-g", "token-b", take_over=True)  # the client resumed on B
    assert not await a.renew("sid-g", "token-a")  # A's stream learns it was taken over, and ends
    await a.release("sid-g", "token-a")
    assert await b.renew("sid-g", "token-b")
    assert await client.pttl(redis_keys.get_stream("sid-g")) > 0  # a hold always lapses in the end


async def test_a_hold_whose_replica_stopped_lapses_after_its_lease(client: Redis, other_client: Redis,
                                                                   redis_keys: Keys) -> None:
    stopped = RedisStreamHolds(client, redis_keys, lease=0.2)
    alive = RedisStreamHolds(other_client, redis_keys)
    assert await stopped.hold("sid-l", "token-a", take_over=False)
    assert not await alive.hold("sid-l", "token-b", take_over=False)
    await until(lambda: alive.hold("sid-l", "token-b", take_over=False), what="the stopped replica's hold to lapse")
