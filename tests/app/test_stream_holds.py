"""``wiremcp.stream_holds``: the in-memory holds of sessions' GET streams, on a clock the test moves (the
contract every backend's holds keep is ``tests/contract/test_backend.py``'s)."""

from __future__ import annotations

from tests.support.http import FakeClock
from wiremcp.stream_holds import InMemoryStreamHolds


async def test_a_hold_lasts_one_lease_unless_renewed() -> None:
    clock = FakeClock()
    holds = InMemoryStreamHolds(lease=5.0, clock=clock)
    assert await holds.hold("s", "a", take_over=False)
    clock.advance(4.9)
    assert not await holds.hold("s", "b", take_over=False)
    assert await holds.renew("s", "a")  # another lease from now
    clock.advance(4.9)
    assert not await holds.hold("s", "b", take_over=False)
    clock.advance(0.2)
    assert not await holds.renew("s", "a")  # lapsed: the stream that held it learns so
    assert await holds.hold("s", "b", take_over=False)


async def test_releasing_a_hold_lapsed_or_taken_over_changes_nothing() -> None:
    clock = FakeClock()
    holds = InMemoryStreamHolds(lease=1.0, clock=clock)
    await holds.release("s", "nobody")  # never held: nothing to do, nothing raised
    assert await holds.hold("s", "a", take_over=False)
    assert await holds.hold("s", "b", take_over=True)
    await holds.release("s", "a")
    assert await holds.renew("s", "b")
