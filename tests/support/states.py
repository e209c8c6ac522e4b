"""A session state with every field set, for the tests of its round trip and of sessions restored from it."""

from __future__ import annotations

from wiremcp.state import SessionState


def full_state() -> SessionState:
    return SessionState(
        id="sess-1",
        protocol_version="2025-06-18",
        client_capabilities={"roots": {"listChanged": True}, "elicitation": {"form": {}}},
        client_info={"name": "client", "version": "1.2"},
        server_capabilities=["logging", "tools"],
        log_level="warning",
        subscriptions={"b://2", "a://1"},
        initialized=True,
        ready=True,
        owner="https://issuer.example|user-1",
    )
