"""``wiremcp.backend``: one bundle of the shared-state interfaces, given to a server through one constructor
(``Runtime``), served from by the HTTP app; the in-memory backend by default. What every backend's stores
keep is the contract suite's (``tests/contract/test_backend.py``, run against each implementation)."""

from __future__ import annotations

import dataclasses

import pytest

import wiremcp
import wiremcp.backend
from tests.support.http import asgi_client, initialize
from wiremcp import Backend, MCPServer, Runtime
from wiremcp.event_store import InMemoryEventStore
from wiremcp.session_store import InMemorySessionStore
from wiremcp.transports.http_app import MCPHttpApp


def test_a_server_is_served_from_the_in_memory_backend_until_given_another() -> None:
    server = MCPServer("s")
    backend = server.runtime.backend
    assert isinstance(backend, Backend)
    assert (backend.link, backend.shared) == (None, False)
    given = Backend.in_memory(max_events=10)
    Runtime(server, backend=given)
    assert server.runtime.backend is given
    assert isinstance(given.events, InMemoryEventStore)
    assert given.events.max_events == 10


def test_the_bundle_names_every_interface_a_backend_implements() -> None:
    for name in wiremcp.backend.__all__:
        assert getattr(wiremcp.backend, name) is not None, name
    fields = {f.name for f in dataclasses.fields(Backend)}
    assert fields == {"sessions", "events", "tasks", "bus", "rate_limits", "stream_holds", "grants",
                      "link"}
    assert wiremcp.Backend is Backend


async def test_the_http_app_keeps_its_sessions_in_the_backend_of_the_servers_runtime() -> None:
    server = MCPServer("s")
    sessions = InMemorySessionStore()
    Runtime(server, backend=dataclasses.replace(Backend.in_memory(), sessions=sessions))
    app = MCPHttpApp(server)
    async with asgi_client(app) as client:
        session = await initialize(client, "/mcp")
        assert await sessions.count() == 1
        assert await sessions.get(session.sid) is not None
        deleted = await client.delete("/mcp", headers={"mcp-session-id": session.sid})
        assert deleted.status_code == 200
        assert await sessions.count() == 0
    await app.manager.close()


async def test_a_backend_alone_starts_and_closes_with_nothing_to_join() -> None:
    backend = Backend.in_memory()
    backend.ensure_started()
    await backend.start()
    await backend.close()


def test_a_part_of_the_wrong_kind_is_refused_where_it_is_given() -> None:
    with pytest.raises(TypeError, match=r"^Backend sessions must be a SessionStore instance, got the class "
                                        r"InMemorySessionStore itself$"):
        dataclasses.replace(Backend.in_memory(), sessions=InMemorySessionStore)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Backend grants must be a GrantStore instance, got dict$"):
        dataclasses.replace(Backend.in_memory(), grants={})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Backend link must be a ReplicaLink instance, got str$"):
        dataclasses.replace(Backend.in_memory(), link="redis://localhost")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Runtime backend must be a wiremcp\.Backend .* got InMemorySessionStore$"):
        Runtime(MCPServer("s"), backend=InMemorySessionStore())  # type: ignore[arg-type]
