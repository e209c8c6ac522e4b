"""The signing key ring: made once and shared by every replica through the store, sealed there, rotated by one
replica when its newest key is old, the old key still verifying for a while."""

from __future__ import annotations

import asyncio

import orjson

from wiremcp.auth.oauth.keys import RING, SigningKeys
from wiremcp.auth.oauth.sealing import Seal
from wiremcp.grant_store import InMemoryGrantStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_replicas_agree_on_one_key_kept_sealed() -> None:
    store, seal = InMemoryGrantStore(), Seal.generated()
    first, second = SigningKeys(store, seal), SigningKeys(store, seal)
    a, b = await asyncio.gather(first.signing(), second.signing())
    assert a.kid == b.kid
    ring = await store.get(*RING)
    assert ring is not None
    assert b'"d"' not in orjson.dumps(ring)  # no private key in the clear
    public = await first.jwks()
    assert [k["kid"] for k in public["keys"]] == [a.kid]
    assert "d" not in public["keys"][0]
    assert public["keys"][0]["alg"] == "ES256"


async def test_the_newest_key_is_rotated_when_old_and_the_previous_one_still_verifies() -> None:
    store, seal, clock = InMemoryGrantStore(), Seal.generated(), Clock()
    keys = SigningKeys(store, seal, rotate_after=100.0, verify_for=50.0, clock=clock)
    old = await keys.signing()
    clock.now += 101
    other_replica = SigningKeys(store, seal, rotate_after=100.0, verify_for=50.0, clock=clock)
    new = await other_replica.signing()
    assert new.kid != old.kid
    assert [k.kid for k in await other_replica.ring()] == [new.kid, old.kid]
    clock.now += 60  # old is past rotate_after + verify_for, but the ring is rotated only when the newest is old
    assert [k.kid for k in (await SigningKeys(store, seal, rotate_after=100.0, verify_for=50.0,
                                              clock=clock).ring())] == [new.kid, old.kid]
    clock.now += 50  # new is old now: rotated, and old is dropped
    ring = await SigningKeys(store, seal, rotate_after=100.0, verify_for=50.0, clock=clock).ring()
    assert len(ring) == 2
    assert ring[1].kid == new.kid


async def test_replicas_rotating_at_once_end_with_one_ring() -> None:
    store, seal, clock = InMemoryGrantStore(), Seal.generated(), Clock()
    await SigningKeys(store, seal, rotate_after=10.0, clock=clock).signing()
    clock.now += 11
    replicas = [SigningKeys(store, seal, rotate_after=10.0, clock=clock) for _ in range(5)]
    newest = {k.kid for k in await asyncio.gather(*(r.signing() for r in replicas))}
    assert len(newest) == 1
