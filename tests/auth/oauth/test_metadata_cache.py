"""The metadata cache: lifetimes from ``Cache-Control`` within bounds, and the bounded in-memory cache."""

from __future__ import annotations

import pytest

from tests.support.http import FakeClock
from wiremcp.auth.oauth.metadata_cache import MemoryMetadataCache, cache_lifetime


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
