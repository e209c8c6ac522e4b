"""``wiremcp.transports.allocator``: handing memory freed in bulk back to the operating system. The release
empties the type attribute cache (the names it keeps), collects (cycles and free lists), then trims the
heap where the C library can (glibc's ``malloc_trim``). What is checked is the mechanism (references, calls),
never resident memory; the sweep that calls it is ``test_sessions.py``'s.
"""

from __future__ import annotations

import sys
import weakref

import pytest

from wiremcp.transports import allocator


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_release_freed_memory_collects_then_trims(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[int] = []

    def trim() -> bool:
        trims.append(1)
        return True

    monkeypatch.setattr(allocator, "trim_heap", trim)
    cycle = _Cycle()
    ref = weakref.ref(cycle)
    del cycle
    assert ref() is not None  # held by its own cycle until a collection
    allocator.release_freed_memory()
    assert ref() is None
    assert trims == [1]


def test_trim_heap_does_nothing_where_the_c_library_has_no_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_TRIM", None)
    assert allocator.trim_heap() is False


def test_trim_heap_calls_malloc_trim_where_there_is_one() -> None:
    if allocator._TRIM is None:
        pytest.skip("this C library has no malloc_trim")
    assert isinstance(allocator.trim_heap(), bool)


class _Looked:
    attribute_named_at_run_time = 1


def test_release_freed_memory_drops_the_names_the_type_cache_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name made at run time (``datetime.timetuple()``'s ``"struct_time"``) stays referenced by the type
    attribute cache after the lookup, and holds the arena it was made in, until the release empties the cache."""
    monkeypatch.setattr(allocator, "trim_heap", lambda: False)
    name = "".join(["attribute_named_", "at_run_time"])  # a new string, not interned
    alone = sys.getrefcount(name)
    assert getattr(_Looked(), name) == 1
    if sys.getrefcount(name) == alone:
        pytest.skip("this interpreter's type cache keeps no reference to names that are not interned")
    allocator.release_freed_memory()
    assert sys.getrefcount(name) == alone
