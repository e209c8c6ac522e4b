"""``wiremcp.transports.allocator``: handing memory freed in bulk back to the operating system, and when to.
The release empties the type attribute cache (the names it keeps), collects (cycles and free lists), then
trims the heap where the C library can (glibc's ``malloc_trim``); ``FallFromPeak`` says when it is due. What is
checked is the mechanism (references, calls, the rule's answers), never resident memory; the sweep that calls
it is ``test_sessions.py``'s.
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


# -- FallFromPeak: when the release is due -----------------------------------------------------------------
def falls(rule: allocator.FallFromPeak, counts: list[int]) -> list[int]:
    """The counts, checked one after the other, at which a release was due."""
    return [count for count in counts if rule.release_due(count)]


def test_a_fall_in_small_steps_is_due_once_it_reaches_a_quarter_of_the_peak_and_the_floor() -> None:
    rule = allocator.FallFromPeak(fraction=0.25, floor=256)
    rule.rose(10_000)
    # 100 at a time: no step is large, the fall from the peak is what counts.
    assert falls(rule, list(range(9_900, -1, -100))) == [7_500, 5_600, 4_200, 3_100, 2_300, 1_700, 1_200, 900,
                                                         600, 300, 0]
    assert rule.peak == 0


def test_the_floor_bounds_a_small_server() -> None:
    """Sessions coming and going by a few dozen: never due, even when all are gone, until 256 have gone."""
    rule = allocator.FallFromPeak(fraction=0.25, floor=256)
    for _ in range(100):
        rule.rose(200)
        assert not rule.release_due(0)
    rule.rose(300)
    assert rule.release_due(44)
    assert not rule.release_due(0)


def test_steady_churn_is_never_due() -> None:
    """A busy server whose live count holds (the ended sessions replaced by new ones, up to a fifth less
    between two sweeps) never releases, however many sweeps and sessions pass."""
    rule = allocator.FallFromPeak(fraction=0.25, floor=256)
    for sweep in range(10_000):
        rule.rose(10_000 + sweep % 7)  # the arrivals between two sweeps
        assert not rule.release_due(8_000 + sweep % 13)  # what each sweep leaves


def test_the_peak_is_followed_between_checks_and_reset_by_a_release() -> None:
    rule = allocator.FallFromPeak(fraction=0.5, floor=10)
    rule.rose(100)
    rule.rose(40)  # a count lower than the peak leaves it
    assert rule.peak == 100
    assert not rule.release_due(51)
    assert rule.release_due(50)
    assert rule.peak == 50
    assert not rule.release_due(26)  # the next fall counts from where the last release left off
    assert rule.release_due(20)
    rule.rose(400)
    assert not rule.release_due(201)
    assert rule.release_due(200)
