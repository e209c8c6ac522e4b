"""Where fetched Client ID Metadata Documents are kept between fetches: the ``MetadataCache`` interface (by
URL, each document for its own lifetime), the bounded ``MemoryMetadataCache`` (one process's),
``StoreMetadataCache`` (the OAuth server's ``GrantStore``, so that every replica sharing the store shares the
documents too), and ``cache_lifetime``, how long an answer may be kept per its ``Cache-Control`` (RFC 9111)
within the authorization server's own bounds (the draft lets it have some).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from wiremcp.grant_store import GrantStore

DEFAULT_TTL = 300.0
"""How long a document whose answer carries no ``Cache-Control`` lifetime is cached."""
MAX_TTL = 24 * 3600.0


class MetadataCache(Protocol):
    """Where fetched documents are kept between fetches: by URL, each for its own lifetime."""

    async def get(self, url: str) -> Mapping[str, Any] | None:
        """The document cached for ``url``, or None when there is none or it has expired."""

    async def put(self, url: str, document: Mapping[str, Any], ttl: float) -> None:
        """Keep ``document`` for ``url`` for ``ttl`` seconds (more than 0)."""


class MemoryMetadataCache:
    """A ``MetadataCache`` in this process: at most ``max_entries`` documents, the least recently used
    going first."""

    def __init__(self, *, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, Mapping[str, Any]]] = OrderedDict()

    async def get(self, url: str) -> Mapping[str, Any] | None:
        entry = self._entries.get(url)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[url]
            return None
        self._entries.move_to_end(url)
        return entry[1]

    async def put(self, url: str, document: Mapping[str, Any], ttl: float) -> None:
        self._entries[url] = (self._clock() + ttl, document)
        self._entries.move_to_end(url)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class StoreMetadataCache:
    """A ``MetadataCache`` in a ``GrantStore``: each document a record of kind ``metadata`` under its URL, living
    as long as the document may be cached, so that replicas sharing the store fetch a document once between
    them. What the store answers is only a candidate: the fetcher validates a cached document again before
    using it. ``StoreUnavailable`` from the store goes to the caller (the request answers 503)."""

    KIND = "metadata"

    def __init__(self, store: GrantStore) -> None:
        self.store = store

    async def get(self, url: str) -> Mapping[str, Any] | None:
        return await self.store.get(self.KIND, url)

    async def put(self, url: str, document: Mapping[str, Any], ttl: float) -> None:
        await self.store.put(self.KIND, url, dict(document), ttl)


def cache_lifetime(cache_control: str | None, *, default: float = DEFAULT_TTL, minimum: float = 0.0,
                   maximum: float = MAX_TTL) -> float:
    """How many seconds an answer with this ``Cache-Control`` may be cached (RFC 9111): 0 for ``no-store`` or
    ``no-cache`` (this cache does not revalidate), else its ``max-age`` (a malformed one counts as 0), else
    ``default``, kept within [``minimum``, ``maximum``]."""
    directives: dict[str, str] = {}
    for part in (cache_control or "").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            directives[name.strip().lower()] = value.strip().strip('"')
    if "no-store" in directives or "no-cache" in directives:
        return 0.0
    lifetime = default
    if "max-age" in directives:
        value = directives["max-age"]
        lifetime = float(value) if value.isdigit() else 0.0
    return min(maximum, max(minimum, lifetime))
