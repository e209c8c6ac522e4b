"""``wiremcp.state``: ``SessionState``, a session's plain data: its JSON round trip (what a session store
keeps), and which server-wide notifications a session wants."""

from __future__ import annotations

import orjson
import pytest

from tests.support.states import full_state
from wiremcp.state import SessionState


def test_round_trip_through_json() -> None:
    state = full_state()
    data = state.to_dict()
    assert data["subscriptions"] == ["a://1", "b://2"]
    restored = SessionState.from_dict(orjson.loads(orjson.dumps(data)))
    assert restored == state


def test_default_state_round_trips() -> None:
    state = SessionState()
    assert SessionState.from_dict(orjson.loads(orjson.dumps(state.to_dict()))) == state
    assert state.initialized is False
    assert state.ready is False
    assert state.subscriptions == set()


def test_to_dict_is_a_copy() -> None:
    state = full_state()
    data = state.to_dict()
    data["client_capabilities"]["sampling"] = {}
    assert "sampling" not in state.client_capabilities


def test_from_dict_ignores_unknown_keys_and_fills_defaults() -> None:
    restored = SessionState.from_dict({"id": "x", "initialized": True, "from_a_newer_version": 1,
                                       "subscriptions": None})
    assert restored == SessionState(id="x", initialized=True)


@pytest.mark.spec("2025-11-25/server/tools#list-changed-notification")
def test_a_session_wants_the_list_changes_it_negotiated_once_it_is_ready() -> None:
    ready = SessionState(initialized=True, ready=True, server_capabilities=["tools", "prompts"])
    assert ready.wants({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    assert ready.wants({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
    assert not ready.wants({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
    not_ready = SessionState(initialized=True, ready=False, server_capabilities=["tools"])
    assert not not_ready.wants({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


@pytest.mark.spec("2025-11-25/server/resources#subscriptions")
def test_a_session_wants_the_updates_of_the_resources_it_subscribed_to_only() -> None:
    state = SessionState(initialized=True, ready=True, server_capabilities=["resources"], subscriptions={"a://1"})
    updated = "notifications/resources/updated"
    assert state.wants({"jsonrpc": "2.0", "method": updated, "params": {"uri": "a://1"}})
    assert not state.wants({"jsonrpc": "2.0", "method": updated, "params": {"uri": "b://2"}})
    assert not state.wants({"jsonrpc": "2.0", "method": updated})
    assert not state.wants({"jsonrpc": "2.0", "method": updated, "params": ["a://1"]})
    assert not state.wants({"jsonrpc": "2.0", "method": "notifications/message", "params": {"uri": "a://1"}})
