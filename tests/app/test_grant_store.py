"""``InMemoryGrantStore`` on a clock of the test's own: records and counters expire by it, each kind holds at
most ``max_records`` of each (the expired swept first, then the one that would expire first dropped), and
what is not a record or a lifetime is refused before anything is kept. What every ``GrantStore`` does
is the contract suite's (``tests/contract/test_backend.py``)."""

from __future__ import annotations

import math

import pytest

from wiremcp.grant_store import DEFAULT_MAX_RECORDS, InMemoryGrantStore, canonical


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def test_a_record_lives_its_ttl_by_the_clock(clock: Clock) -> None:
    store = InMemoryGrantStore(clock=clock)
    await store.put("code", "c", {"v": 1}, 10)
    clock.now += 9.999
    assert await store.get("code", "c") == {"v": 1}
    clock.now += 0.001
    assert await store.get("code", "c") is None
    assert await store.take("code", "c") is None
    assert not await store.delete("code", "c")
    assert await store.add("code", "c", {"v": 2}, 10)
    assert await store.get("code", "c") == {"v": 2}


async def test_a_replacement_and_an_overwrite_start_the_record_s_ttl_again(clock: Clock) -> None:
    store = InMemoryGrantStore(clock=clock)
    await store.put("family", "f", {"g": 1}, 10)
    clock.now += 8
    assert await store.replace("family", "f", {"g": 1}, {"g": 2}, 10)
    clock.now += 8
    assert await store.get("family", "f") == {"g": 2}
    await store.put("family", "f", {"g": 3}, 1)
    clock.now += 1
    assert await store.get("family", "f") is None


async def test_a_counter_s_window_starts_at_its_first_count_and_is_not_extended(clock: Clock) -> None:
    store = InMemoryGrantStore(clock=clock)
    assert await store.count("calls", "k", 10) == 1
    clock.now += 9
    assert await store.count("calls", "k", 10) == 2
    clock.now += 1
    assert await store.count("calls", "k", 10) == 1


async def test_a_full_kind_drops_the_record_that_would_expire_first(clock: Clock) -> None:
    store = InMemoryGrantStore(max_records=3, clock=clock)
    await store.put("login", "a", {"n": "a"}, 30)
    await store.put("login", "b", {"n": "b"}, 5)
    await store.put("login", "c", {"n": "c"}, 20)
    await store.put("login", "a", {"n": "a2"}, 30)  # written again: no new record, nothing dropped
    assert store.held("login") == 3
    assert await store.get("login", "b") == {"n": "b"}
    assert await store.add("login", "d", {"n": "d"}, 10)
    assert store.held("login") == 3
    assert await store.get("login", "b") is None  # the soonest to expire made room
    assert [await store.get("login", k) for k in "acd"] == [{"n": "a2"}, {"n": "c"}, {"n": "d"}]


async def test_the_expired_are_swept_before_a_live_record_is_dropped(clock: Clock) -> None:
    store = InMemoryGrantStore(max_records=2, clock=clock)
    await store.put("code", "old", {}, 1)
    await store.put("code", "kept", {}, 100)
    clock.now += 2
    await store.put("code", "new", {}, 50)
    assert store.held("code") == 2
    assert await store.get("code", "kept") == {}
    assert await store.get("code", "new") == {}


async def test_one_kind_filling_up_costs_another_nothing(clock: Clock) -> None:
    store = InMemoryGrantStore(max_records=2, clock=clock)
    await store.put("key", "signing", {"jwk": "..."}, 1)  # expires soonest of all
    for n in range(10):
        await store.put("client", f"c{n}", {"n": n}, 100)
    assert store.held("client") == 2
    assert await store.get("key", "signing") == {"jwk": "..."}


async def test_counters_are_bounded_apart_from_records(clock: Clock) -> None:
    store = InMemoryGrantStore(max_records=2, clock=clock)
    await store.put("registrations", "r", {"kept": True}, 100)
    assert await store.count("registrations", "10.0.0.1", 5) == 1
    assert await store.count("registrations", "10.0.0.2", 50) == 1
    assert await store.count("registrations", "10.0.0.3", 50) == 1  # drops 10.0.0.1's, the soonest to expire
    assert await store.count("registrations", "10.0.0.2", 50) == 2
    assert await store.count("registrations", "10.0.0.1", 5) == 1
    assert await store.get("registrations", "r") == {"kept": True}


async def test_writing_one_key_again_and_again_keeps_memory_bounded(clock: Clock) -> None:
    store = InMemoryGrantStore(clock=clock)
    for n in range(10_000):
        await store.put("family", "f", {"n": n}, 100 + n)
    assert store.held("family") == 1
    table = store._records["family"]  # the bound is internal: its expiry heap is compacted as it grows
    assert len(table.expiries) <= 2 * len(table.entries) + 64
    assert await store.get("family", "f") == {"n": 9_999}


async def test_a_kind_left_empty_is_forgotten(clock: Clock) -> None:
    store = InMemoryGrantStore(clock=clock)
    await store.put("code", "c", {}, 1)
    await store.count("code", "c", 1)
    assert await store.take("code", "c") == {}
    clock.now += 1
    assert await store.count("code", "other", 1) == 1
    assert store._records == {}
    assert list(store._counters) == ["code"]
    assert store.held("code") == 0


async def test_what_is_not_a_record_or_a_lifetime_is_refused_and_nothing_kept(clock: Clock) -> None:
    store = InMemoryGrantStore(clock=clock)
    for ttl in (0, -1, math.inf, math.nan, True, "10"):
        with pytest.raises(ValueError, match=r"^a grant's ttl must be a positive, finite number of seconds"):
            await store.put("code", "c", {}, ttl)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="ttl must be"):
            await store.count("code", "c", ttl)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^a grant record must be a JSON object, got list$"):
        await store.put("code", "c", [1], 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^a grant record must be JSON: "):
        await store.add("code", "c", {"s": {1, 2}}, 10)
    with pytest.raises(TypeError, match=r"^a grant record must be JSON: "):
        await store.replace("code", "c", {}, {1: "not a string key"}, 10)  # type: ignore[dict-item]
    assert await store.get("code", "c") is None
    with pytest.raises(ValueError, match="max_records must be at least 1"):
        InMemoryGrantStore(max_records=0)
    assert InMemoryGrantStore().max_records == DEFAULT_MAX_RECORDS


def test_a_record_s_canonical_form_sorts_its_keys() -> None:
    assert canonical({"b": [2, {"d": 1, "c": 0}], "a": None}) == b'{"a":null,"b":[2,{"c":0,"d":1}]}'
