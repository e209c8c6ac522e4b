"""Handing memory freed in bulk back to the operating system (after many sessions ended at once).

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
