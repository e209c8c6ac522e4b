"""Handing memory freed in bulk back to the operating system (after many sessions ended), and when to.

Freed objects do not all go back at once. CPython keeps a few freed objects of the commonest types (floats,
tuples, lists, dicts, ...) on free lists for reuse, until the next full collection; its small-object
allocator returns an arena (1 MiB) to the system only once every block in it is free, so a handful of
such objects left among many freed ones hold every arena they sit in. glibc's ``free`` returns memory only
from the top of its heap (and whole ``mmap`` blocks); pages freed below a chunk still in use stay resident
until ``malloc_trim``. Other C libraries (musl, macOS, Windows) have no ``malloc_trim``: there only the
collection is done.

CPython 3.11's type attribute cache (4,096 entries) keeps a reference to the name of each attribute looked up,
interned or not, until another lookup takes its entry. Names made at run time are such names: ``datetime``'s
``timetuple()`` makes a new ``"struct_time"`` string each call (uvicorn formats its ``Date`` header with it once
a second), and each one kept holds the arena it was made in, an arena of the bulk otherwise emptied. The cache
is cleared before the collection (3.12 caches interned names only).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import sys
from collections.abc import Callable

log = logging.getLogger("wiremcp.memory")


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the process's C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library the interpreter itself runs on
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def _type_cache_clearer() -> Callable[[], None] | None:
    """The interpreter's own function that empties its type attribute cache, or None if it has none."""
    for name in ("_clear_internal_caches", "_clear_type_cache"):  # 3.13 deprecates the second for the first
        clear = getattr(sys, name, None)
        if callable(clear):
            return clear  # type: ignore[no-any-return]
    return None


_CLEAR_TYPE_CACHE = _type_cache_clearer()
_TRIM = _malloc_trim()
"""Looked up once, on import (at start-up): a lookup made later, after a bulk release, would leave its own
objects in the allocator's emptied areas and keep them."""


def trim_heap() -> bool:
    """Return the heap's free pages to the operating system; True if any were (glibc only).

    Walks glibc's free lists (a fraction of a millisecond for a heap of tens of MiB): for after a bulk
    release, never per request."""
    trim = _TRIM
    if trim is None:
        return False
    released = bool(trim(0))
    log.debug("malloc_trim: %s", "memory returned to the system" if released else "nothing to return")
    return released


def release_freed_memory() -> None:
    """After many objects were freed at once: the type attribute cache emptied (the names it keeps), a full
    collection, which also empties the interpreter's free lists (and with them the arenas they held), then
    ``trim_heap``.

    The collection costs O(objects the collector tracks, those frozen at start-up aside): for after a bulk
    release that leaves fewer objects than it freed, never per request; refilling the type cache costs a
    few microseconds per attribute looked up again."""
    if _CLEAR_TYPE_CACHE is not None:
        _CLEAR_TYPE_CACHE()
    gc.collect()
    trim_heap()


class FallFromPeak:
    """When the memory of things that ended (sessions) is worth giving back: once their count has fallen far
    enough below its highest since the last release, however many steps the fall took.

    "Far enough" is both a share of that peak (``fraction``) and a number (``floor``): a release is due when
    ``peak - count >= max(floor, fraction * peak)``, and the peak is then the count. What either bound buys:

    - ``fraction`` (1/4) bounds the cost. A release costs O(what is left): a full collection, 3-4 ms per 1,000
      sessions left, about as much per session left as the ending of one cost (about 5 ms per 1,000); with
      at least a quarter of the peak ended since the last one, and at most three quarters left, it costs at
      most about twice what ending those sessions did, spread over them. A server whose count holds steady
      (sessions ending as fast as others start, the steady churn of a busy server) never falls by a quarter
      and never releases: the memory the ended ones leave is what the new ones take. The price is memory
      kept: up to a quarter of the peak's sessions' worth, freed but not given back, while the count stays
      less than a quarter below its peak. (CPython's own collector runs a full collection by a like rule:
      when the objects that survived since the last one reach a quarter of those that survived it.)
    - ``floor`` (256 sessions, under 1 MiB of idle sessions) bounds how often: a small server, whose
      sessions come and go by a few dozen, would otherwise release for every few that ended, each time at
      the fixed cost of a collection (about half a millisecond with nothing left). Once the count has fallen
      to nothing, fewer than ``floor`` sessions have ended since the last release.

    Cheap to ask: ``rose`` (each time a session is added) and ``release_due`` (each sweep) compare integers.
    """

    __slots__ = ("floor", "fraction", "peak")

    def __init__(self, fraction: float = 0.25, floor: int = 256) -> None:
        self.fraction = fraction
        self.floor = floor
        self.peak = 0
        """The highest count since the last release (or since the start)."""

    def rose(self, count: int) -> None:
        """The count may have grown: keep the highest."""
        if count > self.peak:
            self.peak = count

    def release_due(self, count: int) -> bool:
        """True if ``count`` has fallen far enough below the peak to give the memory back now; the peak is then
        ``count`` (the caller releases: the next release is due after another such fall)."""
        self.rose(count)
        fall = self.peak - count
        if fall < self.floor or fall < self.fraction * self.peak:
            return False
        self.peak = count
        return True
