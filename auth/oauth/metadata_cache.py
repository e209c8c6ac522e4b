"""Where fetched Client ID Metadata Documents are kept between fetches: the ``MetadataCache`` interface (by
URL, each document for its own lifetime), the bounded ``MemoryMetadataCache`` (one process's),
``StoreMetadataCache`` (the OAuth server's ``GrantStore``, so that every replica sharing the store shares the
documents too), and ``cache_lifetime``, how long an answer may be kept per its ``Cache-Control`` (RFC 9111)
within the authorization server's own bounds (the draft lets it have some).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from wiremcp.grant_store import GrantStore

DEFAULT_TTL = 300.0
"""How long a document whose answer carries no ``Cache-Control`` lifetime is cached."""
MAX_TTL = 24 * 3600.0
DEFAULT_MAX_DOCUMENTS = 10_000
"""How many new documents ``StoreMetadataCache`` keeps per window, by default (5 KiB each at most, by default)."""
DEFAULT_WINDOW = 3600.0

log = logging.getLogger("wiremcp.auth")


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
    as long as the document may be cached (at most ``window``), so that replicas sharing the store fetch a document
    once between them. What the store answers is only a candidate: the fetcher validates a cached document again
    before using it. ``StoreUnavailable`` from the store goes to the caller (the request answers 503).

    Bounded, since anyone can have the server fetch documents (a URL of their own for each sign-in they start): at
    most ``max_documents`` new documents are kept per ``window`` seconds, counted across the replicas in the store
    (so never more than twice that many at once); past it, documents are fetched each time they are needed until
    the window ends."""

    KIND = "metadata"
    COUNTER = "metadata documents kept"

    def __init__(self, store: GrantStore, *, max_documents: int = DEFAULT_MAX_DOCUMENTS,
                 window: float = DEFAULT_WINDOW) -> None:
        if max_documents < 1 or window <= 0:
            raise ValueError("max_documents must be at least 1 and window positive")
        self.store = store
        self.max_documents = max_documents
        self.window = window

    async def get(self, url: str) -> Mapping[str, Any] | None:
        return await self.store.get(self.KIND, url)

    async def put(self, url: str, document: Mapping[str, Any], ttl: float) -> None:
        kept = await self.store.count(self.COUNTER, "", self.window)
        if kept > self.max_documents:
            if kept == self.max_documents + 1:
                log.warning("more than %d client metadata documents to keep in %g s: the next are fetched each time "
                            "they are needed until then", self.max_documents, self.window)
            return
        await self.store.put(self.KIND, url, dict(document), min(ttl, self.window))


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
