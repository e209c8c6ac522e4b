"""``InMemorySessionStore``: the default session store of one process (create under a limit, get, save,
delete, count, compact), and what ``SessionStore`` gives every store by default."""

from __future__ import annotations

from wiremcp.session_store import InMemorySessionStore, SessionStore
from wiremcp.state import SessionState


async def test_a_session_is_kept_from_create_to_delete() -> None:
    store = InMemorySessionStore()
    state = SessionState(id="s1", protocol_version="2025-11-25")
    assert await store.create(state)
    assert await store.get("s1") is state
    assert await store.get("unknown") is None
    assert await store.count() == 1
    assert await store.delete("s1")
    assert not await store.delete("s1")  # not there any more
    assert await store.get("s1") is None
    assert await store.count() == 0


async def test_create_refuses_a_session_past_the_limit() -> None:
    store = InMemorySessionStore()
    assert await store.create(SessionState(id="s1"), limit=2)
    assert await store.create(SessionState(id="s2"), limit=2)
    assert not await store.create(SessionState(id="s3"), limit=2)
    assert await store.get("s3") is None
    assert await store.create(SessionState(id="s3"))  # no limit
    assert await store.count() == 3


async def test_save_replaces_the_state() -> None:
    store = InMemorySessionStore()
    await store.create(SessionState(id="s1"))
    changed = SessionState(id="s1", log_level="warning")
    await store.save(changed)
    assert await store.get("s1") is changed


async def test_compact_keeps_the_sessions_left() -> None:
    store = InMemorySessionStore()
    for n in range(1000):
        await store.create(SessionState(id=f"s{n}"))
    for n in range(999):
        await store.delete(f"s{n}")
    store.compact()
    assert await store.count() == 1
    assert await store.get("s999") is not None


async def test_a_store_does_not_expire_sessions_itself_and_touch_is_optional() -> None:
    store: SessionStore = InMemorySessionStore()
    assert not store.self_expiring  # the session manager ends idle sessions
    await store.create(SessionState(id="s1"))
    await store.touch("s1")  # nothing to renew
    assert await store.get("s1") is not None
