"""The metadata cache: lifetimes from ``Cache-Control`` within bounds, the bounded in-memory cache, and the cache in
a ``GrantStore`` that replicas share."""

from __future__ import annotations

import pytest

from tests.support.http import FakeClock
from wiremcp.auth.oauth.metadata_cache import MemoryMetadataCache, StoreMetadataCache, cache_lifetime
from wiremcp.grant_store import InMemoryGrantStore


@pytest.mark.parametrize(("header", "seconds"), [
    (None, 300.0), ("", 300.0), ("public", 300.0), ("max-age=60", 60.0), ("public, max-age=60", 60.0),
    ('max-age="60"', 60.0), ("MAX-AGE=60", 60.0), ("max-age=0", 0.0), ("max-age=-5", 0.0), ("max-age=abc", 0.0),
    ("max-age=999999", 86400.0), ("no-store", 0.0), ("max-age=60, no-store", 0.0), ("no-cache", 0.0),
])
def test_cache_lifetimes(header: str | None, seconds: float) -> None:
    assert cache_lifetime(header) == seconds


def test_cache_lifetime_bounds() -> None:
    assert cache_lifetime("max-age=5", minimum=30, maximum=600) == 30
    assert cache_lifetime("max-age=6000", minimum=30, maximum=600) == 600
    assert cache_lifetime(None, default=1000, maximum=600) == 600
    assert cache_lifetime("no-store", minimum=30) == 0


async def test_the_memory_cache_expires_and_is_bounded() -> None:
    clock = FakeClock()
    cache = MemoryMetadataCache(max_entries=2, clock=clock)
    await cache.put("https://a.test/1", {"n": 1}, 10)
    await cache.put("https://a.test/2", {"n": 2}, 100)
    assert await cache.get("https://a.test/1") == {"n": 1}  # now the most recently used
    await cache.put("https://a.test/3", {"n": 3}, 100)
    assert await cache.get("https://a.test/2") is None  # the least recently used went
    assert len(cache) == 2
    clock.advance(10)
    assert await cache.get("https://a.test/1") is None
    assert await cache.get("https://a.test/3") == {"n": 3}
    assert len(cache) == 1


def test_the_memory_cache_is_bounded_by_a_positive_size() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        MemoryMetadataCache(max_entries=0)


async def test_the_store_cache_keeps_each_document_in_the_store_for_its_lifetime() -> None:
    clock = FakeClock()
    store = InMemoryGrantStore(clock=clock)
    one, other = StoreMetadataCache(store), StoreMetadataCache(store)  # two replicas on one store
    document = {"client_id": "https://a.test/1", "redirect_uris": ["https://a.test/cb"]}
    await one.put("https://a.test/1", document, 60)
    assert await other.get("https://a.test/1") == document
    assert await store.get("metadata", "https://a.test/1") == document
    assert await other.get("https://a.test/2") is None
    clock.advance(60)
    assert await one.get("https://a.test/1") is None


async def test_the_store_cache_keeps_a_copy() -> None:
    cache = StoreMetadataCache(InMemoryGrantStore())
    document = {"client_id": "https://a.test/1", "client_name": "A"}
    await cache.put("https://a.test/1", document, 60)
    document["client_name"] = "changed afterwards"
    assert await cache.get("https://a.test/1") == {"client_id": "https://a.test/1", "client_name": "A"}


async def test_the_store_cache_keeps_at_most_so_many_new_documents_a_window_each_for_at_most_the_window(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    store = InMemoryGrantStore(clock=clock)
    one, other = (StoreMetadataCache(store, max_documents=2, window=100) for _ in range(2))
    await one.put("https://a.test/1", {"n": 1}, 86400)
    await other.put("https://a.test/2", {"n": 2}, 50)
    with caplog.at_level("WARNING", logger="wiremcp.auth"):
        await one.put("https://a.test/3", {"n": 3}, 50)  # past the bound, counted across both replicas
        await other.put("https://a.test/4", {"n": 4}, 50)
    assert await store.get("metadata", "https://a.test/3") is None
    assert await store.get("metadata", "https://a.test/4") is None
    assert [r.message for r in caplog.records] == [
        "more than 2 client metadata documents to keep in 100 s: the next are fetched each time they are needed "
        "until then"]  # once a window
    clock.advance(50)
    assert await other.get("https://a.test/2") is None
    assert await other.get("https://a.test/1") == {"n": 1}
    clock.advance(50)  # a new window; and the day-long lifetime was cut to the window
    assert await other.get("https://a.test/1") is None
    await one.put("https://a.test/3", {"n": 3}, 50)
    assert await other.get("https://a.test/3") == {"n": 3}


def test_the_store_cache_is_bounded_by_a_positive_size_and_window() -> None:
    for bad in ({"max_documents": 0}, {"window": 0}):
        with pytest.raises(ValueError, match="max_documents must be at least 1 and window positive"):
            StoreMetadataCache(InMemoryGrantStore(), **bad)
