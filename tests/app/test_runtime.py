"""``wiremcp.runtime.Runtime``: what serves a server definition, built from its constructor arguments."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from wiremcp import MCPServer, Runtime, TaskSettings
from wiremcp.backend import Backend
from wiremcp.jsonrpc import Request
from wiremcp.request_state import RequestStateSealer
from wiremcp.runtime import TaskEvents
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.subscriptions import InMemorySubscriptionBus
from wiremcp.tasks import InMemoryTaskStore


def test_a_server_has_a_runtime_with_the_in_memory_defaults_until_one_is_made_for_it() -> None:
    server = MCPServer("s")
    runtime = server.runtime
    assert server.runtime is runtime
    assert isinstance(runtime.backend.bus, InMemorySubscriptionBus)
    assert runtime.dispatcher.server is server
    assert not runtime.has_task_runner  # made when a task first runs


def test_what_a_runtime_serves_with_comes_through_its_constructor() -> None:
    server = MCPServer("s")
    bus, store, sealer = InMemorySubscriptionBus(), InMemoryTaskStore(), RequestStateSealer(ttl=5.0)
    backend = replace(Backend.in_memory(), bus=bus, tasks=store)
    runtime = Runtime(server, backend=backend, request_states=sealer,
                      tasks=TaskSettings(default_ttl_ms=2_000, poll_interval_ms=50, max_running_per_owner=2))
    assert server.runtime is runtime
    assert (runtime.backend, runtime.request_states) == (backend, sealer)
    runner = runtime.task_runner
    assert runner.store is store
    assert runner.bus is bus
    assert (runner.default_ttl_ms, runner.poll_interval_ms, runner.max_running_per_owner) == (2_000, 50, 2)
    assert runtime.task_methods.runner is runner


@pytest.mark.spec("2025-11-25/server/tools#list-changed-notification")
async def test_a_list_change_reaches_the_sessions_that_want_it_and_the_bus() -> None:
    server = MCPServer("s")
    posted: list[Any] = []
    ready = ServerSession(server, SessionState(initialized=True, ready=True, server_capabilities=["tools"]),
                          post=posted.append)
    not_ready = ServerSession(server, SessionState(initialized=True, server_capabilities=["tools"]),
                              post=posted.append)
    with server.runtime.backend.bus.subscribe() as changes:

        @server.tool()
        def echo(text: str) -> str:
            return text

        published = await anext(aiter(changes))
    assert published == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert posted == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    ready.close()
    not_ready.close()


@pytest.mark.spec("2025-11-25/server/resources#subscriptions")
def test_a_resource_update_reaches_only_its_subscribers() -> None:
    server = MCPServer("s")
    posted: list[Any] = []
    subscribed = ServerSession(server, SessionState(initialized=True, ready=True, subscriptions={"r://a"}),
                               post=posted.append)
    ServerSession(server, SessionState(initialized=True, ready=True), post=posted.append)
    server.resource_updated("r://a")
    server.resource_updated("r://b")
    assert posted == [{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "r://a"}}]
    subscribed.close()


def test_a_runtime_made_for_a_server_replaces_its_default() -> None:
    server = MCPServer("s")
    default = server.runtime
    assert not server.has_own_runtime
    made = Runtime(server)
    assert server.runtime is made
    assert made is not default
    assert server.has_own_runtime


def test_task_events_from_other_replicas_reach_the_task_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = Runtime(MCPServer("s")).task_runner
    heard: list[str] = []
    monkeypatch.setattr(runner, "cancel_local", lambda task_id: heard.append(f"cancel {task_id}"))
    monkeypatch.setattr(runner.inputs, "wake_soon", lambda task_id: heard.append(f"input {task_id}"))
    events = TaskEvents(runner)
    events.task_cancelled("t1")
    events.task_input_arrived("t2")
    events.session_deleted("s1")  # not the runner's: nothing happens
    assert heard == ["cancel t1", "input t2"]


# -- observers ------------------------------------------------------------------------------------------------------------


class Named:
    """An observer that sees nothing, told apart by its name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def started(self, request: Request, session_id: str | None) -> Any:
        return None

    def finished(self, token: Any, answer: Any) -> None:
        return None


def test_observers_are_kept_in_order_once_each_and_can_be_removed() -> None:
    server = MCPServer("s")
    first, second = Named("first"), Named("second")
    assert not server.runtime.observers
    assert server.runtime.observer is None
    server.runtime.observe(first)
    server.runtime.observe(second)
    server.runtime.observe(first)
    assert list(server.runtime.observers) == [first, second]
    server.runtime.unobserve(first)
    assert list(server.runtime.observers) == [second]
    server.runtime.unobserve(second)
    assert not server.runtime.observers
